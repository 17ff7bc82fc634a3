//! The ssh spawner against a real OpenSSH server: `sshd` from Debian's
//! openssh-server (the README's test command installs it), listening on
//! 127.0.0.2 and 127.0.0.3 with a host key and a user key the test makes.
//! Four tasks on two "hosts" join, gather and end; the job's secret never
//! appears on a command line sshd saw. Needs root (sshd runs as root and
//! logs in as the test's user); skipped with a message otherwise.

use sss_testkit::{assert_clean, built, job_shm_files};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const SSHD: &str = "/usr/sbin/sshd";

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|u| u == "0"))
        })
        .unwrap_or(false)
}

/// sshd, killed when dropped.
struct Sshd(Child, PathBuf);

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
        let _ = std::fs::remove_dir_all(&self.1);
    }
}

fn keygen(path: &Path) {
    let st = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(path)
        .status()
        .expect("ssh-keygen");
    assert!(st.success());
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.2:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn ssh_spawner_runs_a_job_through_a_real_sshd() {
    if !is_root() || !Path::new(SSHD).exists() || Command::new("ssh").arg("-V").output().is_err() {
        eprintln!("skipped: needs root, {SSHD} (openssh-server) and ssh");
        return;
    }
    let dir = std::env::temp_dir().join(format!("sss-real-ssh-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let (host_key, user_key) = (dir.join("host_key"), dir.join("user_key"));
    keygen(&host_key);
    keygen(&user_key);
    std::fs::copy(dir.join("user_key.pub"), dir.join("authorized_keys")).unwrap();
    let port = free_port();
    let log = dir.join("sshd.log");
    std::fs::write(
        dir.join("sshd_config"),
        format!(
            "Port {port}\nListenAddress 127.0.0.2\nListenAddress 127.0.0.3\n\
             HostKey {}\nAuthorizedKeysFile {}\nPermitRootLogin prohibit-password\n\
             PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n\
             StrictModes no\nPidFile {}\nLogLevel VERBOSE\n",
            host_key.display(),
            dir.join("authorized_keys").display(),
            dir.join("sshd.pid").display()
        ),
    )
    .unwrap();
    // Privilege separation needs this directory (systemd makes it).
    let _ = std::fs::create_dir_all("/run/sshd");
    let child = Command::new(SSHD)
        .args(["-D", "-e", "-f"])
        .arg(dir.join("sshd_config"))
        .arg("-E")
        .arg(&log)
        .stdin(Stdio::null())
        .spawn()
        .expect("start sshd");
    let _sshd = Sshd(child, dir.clone());
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.3", port)).is_err() {
        assert!(Instant::now() < deadline, "sshd did not listen");
        std::thread::sleep(Duration::from_millis(20));
    }

    let ssh = format!(
        "ssh -p {port} -i {} -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR",
        user_key.display()
    );
    let run = built("sss-run", env!("CARGO_BIN_EXE_sss-run"));
    let task = built("sss-test-task", env!("CARGO_BIN_EXE_sss-test-task"));
    let child = Command::new(&run)
        .args([
            "--spawner",
            "ssh",
            "-n",
            "4",
            "--hosts",
            "127.0.0.2,127.0.0.3",
            "--timeout",
            "60",
        ])
        .arg(&task)
        .args(["info", "gather"])
        .env("SSS_SSH", &ssh)
        .env("SSS_NO_DAEMON", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start sss-run");
    let out = sss_testkit::wait_bounded(child, Duration::from_secs(90));
    assert_eq!(
        out.status.and_then(|s| s.code()),
        Some(0),
        "{}{}",
        out.stdout,
        out.stderr
    );
    assert_eq!(out.stdout.matches("gather ok").count(), 4, "{}", out.stdout);
    for node in ["node=127.0.0.2", "node=127.0.0.3"] {
        assert_eq!(out.stdout.matches(node).count(), 2, "{}", out.stdout);
    }
    let job: u32 = out
        .stdout
        .lines()
        .find_map(|l| l.split_whitespace().find_map(|kv| kv.strip_prefix("job=")))
        .and_then(|j| j.parse().ok())
        .expect("job id in the tasks' output");
    assert_clean(job, Duration::from_secs(10));
    assert!(job_shm_files(job).is_empty());
    // sshd logged each command it ran; none carried the secret.
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(!text.contains("SSS_JOB_SECRET="), "{text}");
}
