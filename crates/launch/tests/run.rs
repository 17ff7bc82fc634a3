//! `sss-run` end to end, with `sss-test-task` as the program. Every test is
//! bounded in time, and checks that no task process and no shared-memory
//! file of its job is left behind.

use sss_testkit::node::TaskEnv;
use sss_testkit::process::shell_code;
use sss_testkit::{assert_clean, built, job_processes, job_shm_files};
use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// `sss-run`: where cargo built it, or beside `target/<profile>/deps` of
/// a copy of the build (`SSS_TEST_TREE`, see `scripts/test-as-user.sh`).
fn run_exe() -> std::path::PathBuf {
    built("sss-run", env!("CARGO_BIN_EXE_sss-run"))
}

/// `sss-test-task`, found as [`run_exe`] is.
fn task_exe() -> std::path::PathBuf {
    built("sss-test-task", env!("CARGO_BIN_EXE_sss-test-task"))
}

/// Hard limit for one launcher run in these tests.
const LIMIT: Duration = Duration::from_secs(25);

struct Out {
    status: i32,
    stdout: String,
    stderr: String,
}

/// Waits for `child` at most `LIMIT`, failing the test past that.
fn wait_bounded(child: Child) -> Out {
    let f = sss_testkit::wait_bounded(child, LIMIT);
    if f.status.is_none() {
        panic!("launcher did not finish within {LIMIT:?}");
    }
    Out {
        status: f.shell_code(),
        stdout: f.stdout,
        stderr: f.stderr,
    }
}

/// Runs `sss-run ARGS… sss-test-task STEPS…`.
fn run(args: &[&str], steps: &[&str]) -> Out {
    run_env(&[], args, steps)
}

/// [`run`] with `env` added to the launcher's environment.
fn run_env(env: &[(&str, &str)], args: &[&str], steps: &[&str]) -> Out {
    let child = Command::new(run_exe())
        .envs(env.iter().copied())
        .args(args)
        .arg(task_exe())
        .args(steps)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_bounded(child)
}

/// The `rank=…` lines of `info`, by rank, as key=value maps.
fn infos(stdout: &str) -> BTreeMap<u32, BTreeMap<String, String>> {
    let mut m = BTreeMap::new();
    for line in stdout.lines() {
        let line = line.split_once("] ").map_or(line, |(_, l)| l);
        if !line.starts_with("rank=") {
            continue;
        }
        let kv: BTreeMap<String, String> = line
            .split_whitespace()
            .filter_map(|w| w.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        m.insert(kv["rank"].parse().unwrap(), kv);
    }
    m
}

/// `(pid, job)` written by the `pids=DIR` step, by rank.
fn pids(dir: &Path) -> BTreeMap<u32, (u32, u32)> {
    let mut m = BTreeMap::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Ok(rank) = name.parse::<u32>() else {
            continue;
        };
        let text = std::fs::read_to_string(e.path()).unwrap();
        let (p, j) = text.trim().split_once(' ').unwrap();
        m.insert(rank, (p.parse().unwrap(), j.parse().unwrap()));
    }
    m
}

/// True if `text` has `line` as one of its lines.
fn has_line(text: &str, line: &str) -> bool {
    text.lines().any(|l| l == line)
}

/// The one job id the tasks reported.
fn one_job(p: &BTreeMap<u32, (u32, u32)>) -> u32 {
    let jobs: Vec<u32> = p.values().map(|(_, j)| *j).collect();
    assert!(jobs.windows(2).all(|w| w[0] == w[1]), "{jobs:?}");
    jobs[0]
}

#[test]
fn four_tasks_on_one_host_allgather() {
    let o = run(&["-n", "4"], &["info", "gather"]);
    assert_eq!(o.status, 0, "{}", o.stderr);
    assert_eq!(o.stdout.matches("gather ok").count(), 4);
    let info = infos(&o.stdout);
    assert_eq!(info.len(), 4);
    let job = &info[&0]["job"];
    for (rank, kv) in &info {
        assert_eq!(kv["size"], "4");
        assert_eq!(kv["node"], "127.0.0.1");
        assert_eq!(kv["node_id"], "0");
        assert_eq!(kv["local"], format!("{rank}/4"));
        assert_eq!(&kv["job"], job);
        assert_eq!(kv["launcher"], "Sss");
    }
}

#[test]
fn hosts_and_per_host_set_each_ranks_node() {
    let o = run(
        &[
            "-n",
            "4",
            "--hosts",
            "127.0.0.2,127.0.0.3",
            "--per-host",
            "2",
        ],
        &["info", "gather"],
    );
    assert_eq!(o.status, 0, "{}", o.stderr);
    let info = infos(&o.stdout);
    let got: Vec<(&str, &str, &str)> = info
        .values()
        .map(|kv| {
            (
                kv["node"].as_str(),
                kv["node_id"].as_str(),
                kv["local"].as_str(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("127.0.0.2", "0", "0/2"),
            ("127.0.0.2", "0", "1/2"),
            ("127.0.0.3", "1", "0/2"),
            ("127.0.0.3", "1", "1/2"),
        ]
    );
}

#[test]
fn hostfile_slots_place_ranks() {
    let dir = tempfile::tempdir().unwrap();
    let hf = dir.path().join("hosts");
    std::fs::write(
        &hf,
        "# two nodes\n127.0.0.2 slots=1\n127.0.0.3 slots=2  # bigger\n",
    )
    .unwrap();
    let o = run(&["-n", "3", "--hostfile", hf.to_str().unwrap()], &["info"]);
    assert_eq!(o.status, 0, "{}", o.stderr);
    let nodes: Vec<(String, String)> = infos(&o.stdout)
        .values()
        .map(|kv| (kv["node"].clone(), kv["local"].clone()))
        .collect();
    assert_eq!(
        nodes,
        [
            ("127.0.0.2".to_string(), "0/1".to_string()),
            ("127.0.0.3".to_string(), "0/2".to_string()),
            ("127.0.0.3".to_string(), "1/2".to_string()),
        ]
    );
}

#[test]
fn tag_output_prefixes_whole_lines_on_both_streams() {
    let o = run(&["-n", "3", "--tag-output"], &["lines=200"]);
    assert_eq!(o.status, 0, "{}", o.stderr);
    let check = |text: &str, word: &str| {
        let mut n = 0;
        for line in text.lines() {
            let (tag, rest) = line.split_once(' ').unwrap();
            let rank = tag.trim_start_matches('[').trim_end_matches(']');
            assert!(
                rest.starts_with(word) && rest.ends_with(&format!(" of rank {rank}")),
                "mixed or untagged line: {line:?}"
            );
            n += 1;
        }
        assert_eq!(n, 600);
    };
    check(&o.stdout, "out ");
    check(&o.stderr, "err ");
}

/// `sss run … PROG < file`: rank 0 reads the launcher's stdin, the other
/// tasks read nothing (on one host and on two).
#[test]
fn stdin_goes_to_rank_0() {
    for hosts in [
        &["-n", "3"][..],
        &["-n", "3", "--hosts", "127.0.0.2,127.0.0.3"],
    ] {
        let mut child = Command::new(run_exe())
            .args(hosts)
            .arg(task_exe())
            .arg("stdin")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut input = child.stdin.take().unwrap();
        std::io::Write::write_all(&mut input, b"hello\n").unwrap();
        drop(input);
        let o = wait_bounded(child);
        assert_eq!(o.status, 0, "{hosts:?}: {}", o.stderr);
        for want in [
            "stdin rank=0 bytes=6 text=\"hello\\n\"",
            "stdin rank=1 bytes=0 text=\"\"",
            "stdin rank=2 bytes=0 text=\"\"",
        ] {
            assert!(
                has_line(&o.stdout, want),
                "{hosts:?}: {want} in\n{}",
                o.stdout
            );
        }
    }
}

#[test]
fn exit_status_of_a_clean_job_is_zero() {
    let o = run(&["-n", "3"], &["barrier", "exit=0"]);
    assert_eq!(o.status, 0, "{}", o.stderr);
    assert_eq!(o.stderr, "");
}

#[test]
fn task_out_of_file_descriptors_fails_at_boot_at_once() {
    let t = Instant::now();
    let child = Command::new(run_exe())
        .args(["-n", "2"])
        .arg(task_exe())
        .arg("info")
        .env("SSS_TEST_TASK_NO_FDS", "1")
        .env_remove("SSS_BOOT_TIMEOUT")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let o = wait_bounded(child);
    assert_eq!(o.status, 70, "{}", o.stderr);
    assert!(o.stderr.contains("out of file descriptors"), "{}", o.stderr);
    // Not the 120 s boot timeout: the cause is known at the first attempt.
    assert!(t.elapsed() < Duration::from_secs(15), "{:?}", t.elapsed());
}

#[test]
fn failing_task_sets_the_status_and_ends_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let pdir = format!("pids={}", dir.path().display());
    let t = Instant::now();
    let o = run(
        &["-n", "3"],
        &[&pdir, "shm", "barrier", "1:exit=3", "forever"],
    );
    assert_eq!(o.status, 3, "{}", o.stderr);
    let p = pids(dir.path());
    let msg = format!(
        "sss run: task 1 (pid {} on 127.0.0.1) exited with status 3; terminating the other 2 tasks",
        p[&1].0
    );
    assert!(has_line(&o.stderr, &msg), "{}", o.stderr);
    // The others obeyed SIGTERM, so no SIGKILL grace was needed.
    assert!(t.elapsed() < Duration::from_secs(10));
    assert_clean(one_job(&p), Duration::from_secs(2));
}

#[test]
fn segfault_ends_the_job_with_139_and_no_leftovers() {
    let dir = tempfile::tempdir().unwrap();
    let pdir = format!("pids={}", dir.path().display());
    // Task 1 also starts a child of its own, which must not survive.
    let o = run(
        &["-n", "4"],
        &[
            &pdir,
            "shm",
            "1:spawn-child",
            "barrier",
            "3:segv",
            "forever",
        ],
    );
    assert_eq!(o.status, 139, "{}", o.stderr);
    let p = pids(dir.path());
    assert_eq!(p.len(), 4);
    let msg = format!(
        "sss run: task 3 (pid {} on 127.0.0.1) was killed by signal 11 (SIGSEGV); \
         terminating the other 3 tasks",
        p[&3].0
    );
    assert!(has_line(&o.stderr, &msg), "{}", o.stderr);
    assert_clean(one_job(&p), Duration::from_secs(2));
}

#[test]
fn sigkilled_task_ends_the_job_with_137_even_if_others_ignore_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let pdir = format!("pids={}", dir.path().display());
    let o = run(
        &["-n", "3", "--hosts", "127.0.0.2,127.0.0.3"],
        &[
            &pdir,
            "shm",
            "2:ignore-term",
            "barrier",
            "0:sigkill",
            "forever",
        ],
    );
    assert_eq!(o.status, 137, "{}", o.stderr);
    let p = pids(dir.path());
    let msg = format!(
        "sss run: task 0 (pid {} on 127.0.0.2) was killed by signal 9 (SIGKILL); \
         terminating the other 2 tasks",
        p[&0].0
    );
    assert!(has_line(&o.stderr, &msg), "{}", o.stderr);
    // Task 2 ignored SIGTERM and needed SIGKILL after the grace period.
    assert!(
        has_line(
            &o.stderr,
            "sss run: 1 task still running 2 s after SIGTERM; sending SIGKILL"
        ),
        "{}",
        o.stderr
    );
    assert_clean(one_job(&p), Duration::from_secs(2));
}

#[test]
fn timeout_ends_the_job_with_124() {
    let dir = tempfile::tempdir().unwrap();
    let pdir = format!("pids={}", dir.path().display());
    let o = run(&["-n", "2", "--timeout", "1"], &[&pdir, "shm", "forever"]);
    assert_eq!(o.status, 124, "{}", o.stderr);
    assert!(
        has_line(
            &o.stderr,
            "sss run: job timed out after 1 s; terminating 2 tasks"
        ),
        "{}",
        o.stderr
    );
    assert_clean(one_job(&pids(dir.path())), Duration::from_secs(2));
}

/// Starts a launcher whose tasks record their pids and then wait forever;
/// returns it once every task is up, with the job id.
fn start_long_job(np: u32, dir: &Path) -> (Child, u32) {
    let pdir = format!("pids={}", dir.display());
    let mut child = Command::new(run_exe())
        .arg("-n")
        .arg(np.to_string())
        .arg(task_exe())
        .args(["shm", "0:escape-child", &pdir, "forever"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t = Instant::now();
    while pids(dir).len() < np as usize {
        if t.elapsed() > LIMIT {
            let _ = child.kill();
            panic!("tasks did not start");
        }
        thread::sleep(Duration::from_millis(20));
    }
    let job = one_job(&pids(dir));
    // shm comes before pids, so the files exist now.
    assert_eq!(job_shm_files(job).len(), np as usize);
    (child, job)
}

#[test]
fn sigkilled_launcher_takes_its_tasks_and_files_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let (mut launcher, job) = start_long_job(3, dir.path());
    assert_eq!(job_processes(job).len(), 4, "3 tasks and an escaped child");
    launcher.kill().unwrap(); // SIGKILL
    launcher.wait().unwrap();
    // Parent-death signals end the tasks; the guardian removes the files.
    assert_clean(job, Duration::from_secs(10));
}

#[test]
fn sigterm_to_the_launcher_is_forwarded() {
    let dir = tempfile::tempdir().unwrap();
    let (launcher, job) = start_long_job(2, dir.path());
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(launcher.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let mut launcher = launcher;
    let t = Instant::now();
    let status = loop {
        if let Some(st) = launcher.try_wait().unwrap() {
            break st;
        }
        assert!(t.elapsed() < LIMIT, "launcher ignored SIGTERM");
        thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    launcher
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert_eq!(shell_code(status), 143, "{err}");
    assert!(
        has_line(&err, "sss run: received SIGTERM; terminating 2 tasks"),
        "{err}"
    );
    assert_clean(job, Duration::from_secs(2));
}

#[test]
fn missing_program_is_reported_with_127() {
    let child = Command::new(run_exe())
        .args(["-n", "2", "/nonexistent/program"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let o = wait_bounded(child);
    assert_eq!(o.status, 127);
    assert!(
        o.stderr
            .lines()
            .any(|l| l.starts_with("sss run: cannot start task 0 (/nonexistent/program): ")),
        "{}",
        o.stderr
    );
}

/// Regression (issue 12): `-n 4294967295` aborted the launcher with
/// "memory allocation of 68719476720 bytes failed".
#[test]
fn too_many_tasks_is_a_usage_error() {
    for n in ["4294967295", "65537"] {
        let o = run(&["-n", n], &["info"]);
        assert_eq!(o.status, 2, "{}", o.stderr);
        assert!(
            o.stderr
                .contains(&format!("-n {n} is more than 65536 tasks")),
            "{}",
            o.stderr
        );
    }
}

#[test]
fn bad_placement_is_a_usage_error() {
    let o = run(&["-n", "2", "--hosts", "192.0.2.1"], &["info"]);
    assert_eq!(o.status, 2);
    assert!(o.stderr.contains("not a loopback address"), "{}", o.stderr);
    let o = run(
        &[
            "-n",
            "5",
            "--hosts",
            "127.0.0.2,127.0.0.3",
            "--per-host",
            "2",
        ],
        &["info"],
    );
    assert_eq!(o.status, 2);
    assert!(
        o.stderr.contains("5 tasks do not fit in the 4 slots"),
        "{}",
        o.stderr
    );
}

/// Tasks started by hand with Slurm's variables, as `srun` would: no
/// `sss run`, the rendezvous goes through files.
#[test]
fn slurm_environment_bootstraps_through_files() {
    let boot_dir = tempfile::tempdir().unwrap();
    let n = 3;
    // A job id of our own, so concurrent runs of this test do not meet.
    let slurm_job = format!("{}", std::process::id());
    let children: Vec<Child> = (0..n)
        .map(|rank| {
            let mut c = Command::new(task_exe());
            for (k, _) in std::env::vars() {
                if k.starts_with("SSS_")
                    || k.starts_with("SLURM_")
                    || k.starts_with("PMI_")
                    || k.starts_with("OMPI_")
                {
                    c.env_remove(k);
                }
            }
            c.env("SLURM_PROCID", rank.to_string())
                .env("SLURM_NTASKS", n.to_string())
                .env("SLURM_LOCALID", rank.to_string())
                .env("SLURM_JOB_ID", &slurm_job)
                .env("SLURM_STEP_ID", "0")
                .env("SSS_BOOT_DIR", boot_dir.path())
                .env("SSS_BOOT_TIMEOUT", "20")
                .args(["info", "gather", "barrier", "gather"])
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let outs: Vec<Out> = children.into_iter().map(wait_bounded).collect();
    let mut jobs = Vec::new();
    for (rank, o) in outs.iter().enumerate() {
        assert_eq!(o.status, 0, "task {rank}: {}", o.stderr);
        assert_eq!(o.stdout.matches("gather ok").count(), 2);
        let info = infos(&o.stdout);
        let kv = &info[&(rank as u32)];
        assert_eq!(kv["size"], "3");
        assert_eq!(kv["launcher"], "Slurm");
        assert_eq!(kv["local"], format!("{rank}/3"));
        jobs.push(kv["job"].clone());
    }
    assert!(jobs.iter().all(|j| *j == jobs[0]));
    // The rendezvous directory was removed by the last task out.
    let left: Vec<_> = std::fs::read_dir(boot_dir.path())
        .unwrap()
        .flatten()
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// Rank 0 of a hand-made job 99 of 2 tasks on 127.0.0.1, booting from
/// `boot` with `SSS_BOOT_TIMEOUT` of `timeout_s`, in an allgather.
fn gather_task(boot: std::net::SocketAddr, timeout_s: &str) -> Child {
    let task = TaskEnv {
        job: 99,
        rank: 0,
        size: 2,
        node: "127.0.0.1",
        node_id: 0,
        local_rank: 0,
        local_size: 2,
        boot,
    };
    task.apply(&mut Command::new(task_exe()))
        .env("SSS_BOOT_TIMEOUT", timeout_s)
        .arg("gather")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// A task whose launcher's rendezvous server disappears fails at once with
/// a clear message instead of hanging.
#[test]
fn task_fails_cleanly_when_the_boot_server_vanishes() {
    let server = sss_boot::BootServer::bind("127.0.0.1:0", 99, 2).unwrap();
    let addr = server.addr();
    let handle = server.spawn().unwrap();
    let child = gather_task(addr, "60");
    // Let the task connect and block in the allgather, then vanish.
    let t = Instant::now();
    while handle.report().joined < 1 {
        assert!(t.elapsed() < LIMIT, "task never connected");
        thread::sleep(Duration::from_millis(10));
    }
    thread::sleep(Duration::from_millis(100));
    handle.shutdown();
    let o = wait_bounded(child);
    assert_eq!(o.status, 71, "{}", o.stderr);
    assert!(o.stderr.contains("went away"), "{}", o.stderr);
    assert!(t.elapsed() < Duration::from_secs(10));

    // And with nobody there at all, the task gives up after its timeout.
    let free = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let t = Instant::now();
    let child = gather_task(free, "1");
    let o = wait_bounded(child);
    assert_eq!(o.status, 70, "{}", o.stderr);
    assert!(o.stderr.contains("timed out after 1.0 s"), "{}", o.stderr);
    assert!(t.elapsed() < Duration::from_secs(10));
}

/// A stand-in for ssh: skips options, takes the host, and runs the remote
/// command with `sh` in a session of its own, as a remote sshd would (so
/// the launcher's signals to its process group do not reach the task).
const FAKE_SSH: &str = r#"#!/bin/sh
while [ $# -gt 0 ]; do
  case $1 in
    -o|-p|-i|-l) shift 2 ;;
    -*) shift ;;
    *) break ;;
  esac
done
echo "$1" >> "$(dirname "$0")/hosts.log"
shift
echo "$*" >> "$(dirname "$0")/commands.log"
exec setsid -w sh -c "$*"
"#;

fn fake_ssh(dir: &Path) -> String {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join("fake-ssh");
    std::fs::write(&path, FAKE_SSH).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.display().to_string()
}

fn run_ssh(ssh: &str, args: &[&str], steps: &[&str]) -> Out {
    let mut all = vec!["--spawner", "ssh"];
    all.extend_from_slice(args);
    run_env(&[("SSS_SSH", ssh)], &all, steps)
}

#[test]
fn ssh_spawner_runs_tasks_through_the_remote_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let ssh = fake_ssh(dir.path());
    let o = run_env(
        &[
            ("SSS_SSH", ssh.as_str()),
            ("SSS_SECURITY", "encrypt"),
            ("SSS_CLUSTER_SECRET", &"5a".repeat(32)),
        ],
        &[
            "--spawner",
            "ssh",
            "-n",
            "4",
            "--hosts",
            "127.0.0.2,127.0.0.3",
            "--tag-output",
        ],
        &["info", "gather", "echo=it's a \"quoted\" $HOME"],
    );
    assert_eq!(o.status, 0, "{}", o.stderr);
    let info = infos(&o.stdout);
    let nodes: Vec<&str> = info.values().map(|kv| kv["node"].as_str()).collect();
    assert_eq!(nodes, ["127.0.0.2", "127.0.0.2", "127.0.0.3", "127.0.0.3"]);
    assert_eq!(o.stdout.matches("gather ok").count(), 4);
    // Arguments arrive intact through the remote shell.
    assert_eq!(
        o.stdout.matches("it's a \"quoted\" $HOME").count(),
        4,
        "{}",
        o.stdout
    );
    // The job's secret reached the tasks (they joined) but never a remote
    // command line, which every user of the remote host can read.
    let commands = std::fs::read_to_string(dir.path().join("commands.log")).unwrap();
    assert!(!commands.contains("SSS_JOB_SECRET="), "{commands}");
    // Settings go along (all tasks must seal alike); no secret does.
    assert!(commands.contains("SSS_SECURITY=encrypt"), "{commands}");
    assert!(!commands.contains("5a5a5a"), "{commands}");
    // Four tasks, then one shared-memory cleanup per host.
    let log = std::fs::read_to_string(dir.path().join("hosts.log")).unwrap();
    let mut hosts: Vec<&str> = log.lines().collect();
    hosts.sort();
    assert_eq!(
        hosts,
        ["127.0.0.2"; 3]
            .iter()
            .chain(&["127.0.0.3"; 3])
            .copied()
            .collect::<Vec<_>>()
    );
}

#[test]
fn ssh_spawner_ends_remote_tasks_and_cleans_up_after_a_failure() {
    let dir = tempfile::tempdir().unwrap();
    let ssh = fake_ssh(dir.path());
    let pdir = tempfile::tempdir().unwrap();
    let pids_step = format!("pids={}", pdir.path().display());
    let o = run_ssh(
        &ssh,
        &["-n", "3", "--hosts", "127.0.0.2,127.0.0.3"],
        &[&pids_step, "shm", "barrier", "2:segv", "forever"],
    );
    // Over ssh the remote shell reports the signal as 128+11.
    assert_eq!(o.status, 139, "{}", o.stderr);
    assert!(
        o.stderr
            .lines()
            .any(|l| l.starts_with("sss run: task 2 (pid ")
                && l.ends_with(
                    " on 127.0.0.3) exited with status 139; terminating the other 2 tasks"
                )),
        "{}",
        o.stderr
    );
    assert!(
        o.stderr.contains("on 127.0.0.3) exited with status 139"),
        "{}",
        o.stderr
    );
    // The remote wrappers end their tasks when the connections close, and
    // the per-host cleanup removed the files.
    assert_clean(one_job(&pids(pdir.path())), Duration::from_secs(6));
}
