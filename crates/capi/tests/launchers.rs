//! Real launchers start an SSS C program (`examples/c/counter.c`): Open
//! MPI's `mpirun`, MPICH's `mpiexec.hydra` (PMI) and Slurm's `srun` on a
//! one-node Slurm the test starts (munged, slurmctld, slurmd on loopback
//! with ports and a key of its own). The tasks find their ranks in the
//! launcher's variables, meet through the file rendezvous and share a job
//! secret rank 0 drew. Each test says why it skips where its launcher is
//! not installed (the README's test command installs them).

use sss_testkit::cc::cc_libsss;
use sss_testkit::{root, wait_bounded};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .is_ok_and(|s| s.lines().any(|l| l.starts_with("Uid:\t0\t")))
}

/// A scratch directory with the counter example built in it.
struct Scratch {
    dir: tempfile::TempDir,
    exe: PathBuf,
}

fn scratch() -> Scratch {
    let dir = tempfile::Builder::new()
        .prefix("sss-launchers-")
        .tempdir()
        .expect("temp dir");
    let exe = dir.path().join("counter");
    let src = root().join("examples/c/counter.c");
    cc_libsss(&["-std=c11", "-O1"], &exe, &[&src]);
    std::fs::create_dir(dir.path().join("boot")).unwrap();
    Scratch { dir, exe }
}

/// Runs `cmd` (a launcher of `tasks` counters) and checks their answer.
fn check(mut cmd: Command, s: &Scratch, tasks: u32) {
    let child = cmd
        .arg(&s.exe)
        .arg("100")
        .env("SSS_BOOT_DIR", s.dir.path().join("boot"))
        .env("SSS_NO_DAEMON", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    let out = wait_bounded(child, Duration::from_secs(60));
    let want = format!("counter: {tasks} tasks x 100 adds = {}", tasks * 100);
    assert!(
        out.status.is_some_and(|s| s.success()) && out.stdout.contains(&want),
        "{:?}\n{}{}",
        out.status,
        out.stdout,
        out.stderr
    );
}

#[test]
fn open_mpi_mpirun_launches_an_sss_program() {
    let Ok(v) = Command::new("mpirun").arg("--version").output() else {
        eprintln!("skipped: no mpirun (package openmpi-bin)");
        return;
    };
    if !String::from_utf8_lossy(&v.stdout).contains("Open MPI") {
        eprintln!("skipped: mpirun is not Open MPI's");
        return;
    }
    let s = scratch();
    let mut cmd = Command::new("mpirun");
    // Open MPI refuses root unless told; our users are not root.
    if is_root() {
        cmd.arg("--allow-run-as-root");
    }
    cmd.args([
        "--oversubscribe",
        "-np",
        "3",
        "-x",
        "SSS_BOOT_DIR",
        "-x",
        "SSS_NO_DAEMON",
    ]);
    check(cmd, &s, 3);
}

#[test]
fn mpich_hydra_launches_an_sss_program() {
    let hydra = Path::new("/usr/bin/mpiexec.hydra");
    if !hydra.exists() {
        eprintln!("skipped: no mpiexec.hydra (package mpich)");
        return;
    }
    let s = scratch();
    let mut cmd = Command::new(hydra);
    cmd.args(["-n", "3"]);
    check(cmd, &s, 3);
}

/// Slurm's and munge's daemons, killed when dropped.
struct Daemons(Vec<Child>);

impl Drop for Daemons {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn daemon(exe: &str, args: &[&str], log: &Path) -> Child {
    let f = std::fs::File::create(log).unwrap();
    Command::new(exe)
        .args(args)
        .stdin(Stdio::null())
        .stderr(f.try_clone().unwrap())
        .stdout(f)
        .spawn()
        .unwrap_or_else(|e| panic!("{exe}: {e}"))
}

#[test]
fn slurm_srun_launches_an_sss_program() {
    let bins = [
        "/usr/sbin/munged",
        "/usr/sbin/slurmctld",
        "/usr/sbin/slurmd",
    ];
    if !is_root() || bins.iter().any(|b| !Path::new(b).exists()) {
        eprintln!("skipped: needs root, munge and slurm-wlm (a one-node Slurm runs as root)");
        return;
    }
    let s = scratch();
    let d = s.dir.path().join("slurm");
    for sub in ["", "state", "spool"] {
        std::fs::create_dir_all(d.join(sub)).unwrap();
    }
    let key = d.join("munge.key");
    let mut k = vec![0u8; 1024];
    getrandom_fill(&mut k);
    std::fs::write(&key, &k).unwrap();
    std::fs::set_permissions(
        &key,
        <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o400),
    )
    .unwrap();
    let sock = d.join("munge.sock");
    let p = |name: &str| d.join(name).display().to_string();
    let mut daemons = Daemons(vec![daemon(
        "/usr/sbin/munged",
        &[
            "-F",
            "-f",
            &format!("--key-file={}", key.display()),
            &format!("--socket={}", sock.display()),
            &format!("--pid-file={}", p("munged.pid")),
            &format!("--log-file={}", p("munged.log")),
            &format!("--seed-file={}", p("munge.seed")),
        ],
        &d.join("munged.out"),
    )]);
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .to_string();
    let conf = d.join("slurm.conf");
    std::fs::write(
        &conf,
        format!(
            "ClusterName=ssstest\nSlurmctldHost={host}(127.0.0.1)\nSlurmctldPort={}\n\
             SlurmdPort={}\nSlurmUser=root\nAuthType=auth/munge\nAuthInfo=socket={}\n\
             CredType=cred/munge\nStateSaveLocation={}\nSlurmdSpoolDir={}\n\
             SlurmctldPidFile={}\nSlurmdPidFile={}\nSlurmctldLogFile={}\nSlurmdLogFile={}\n\
             ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\nMpiDefault=none\n\
             ReturnToService=2\nSchedulerType=sched/builtin\nSelectType=select/cons_tres\n\
             SelectTypeParameters=CR_Core\nJobCompType=jobcomp/none\n\
             AccountingStorageType=accounting_storage/none\n\
             NodeName={host} NodeAddr=127.0.0.1 CPUs=2 State=UNKNOWN\n\
             PartitionName=debug Nodes=ALL Default=YES State=UP OverSubscribe=FORCE\n",
            free_port(),
            free_port(),
            sock.display(),
            p("state"),
            p("spool"),
            p("slurmctld.pid"),
            p("slurmd.pid"),
            p("slurmctld.log"),
            p("slurmd.log"),
        ),
    )
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !sock.exists() {
        assert!(Instant::now() < deadline, "munged did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    let conf_s = conf.display().to_string();
    daemons.0.push(daemon(
        "/usr/sbin/slurmctld",
        &["-D", "-f", &conf_s],
        &d.join("slurmctld.out"),
    ));
    daemons.0.push(daemon(
        "/usr/sbin/slurmd",
        &["-D", "-f", &conf_s],
        &d.join("slurmd.out"),
    ));
    loop {
        let out = Command::new("sinfo")
            .args(["-h", "-o", "%t"])
            .env("SLURM_CONF", &conf)
            .output();
        if out.is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "idle") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "slurm never became idle:\n{}",
            std::fs::read_to_string(d.join("slurmctld.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let mut cmd = Command::new("srun");
    cmd.args(["-n", "4", "--overcommit"])
        .env("SLURM_CONF", &conf);
    check(cmd, &s, 4);
    drop(daemons);
}

fn getrandom_fill(b: &mut [u8]) {
    use std::io::Read;
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(b))
        .expect("/dev/urandom");
}
