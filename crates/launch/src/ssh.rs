//! Command lines for the ssh spawner.
//!
//! ssh hands the remote side one string that the remote login shell
//! parses, so every word is quoted for a POSIX shell. The task runs under
//! a small `sh` wrapper that kills it when the ssh connection's stdin
//! reaches end of file: the launcher keeps that pipe open for the task's
//! life and closes it (or dies) to end it, so no task outlives its
//! launcher even though ssh itself does not forward signals.

use std::ffi::OsString;

/// The remote wrapper. `"$@"` is the task (`env VAR=… PROGRAM ARGS`). The
/// first line of the connection's stdin is the job's secret, put in the
/// task's environment as `SSS_JOB_SECRET` (a command line is visible to
/// every user of the remote host, an environment only to its owner); the
/// watcher in the background then waits for end of file on the stdin,
/// then sends SIGTERM and, 2 s later, SIGKILL. The wrapper exits
/// with the task's status (128+S for a task killed by signal S, as sh
/// reports it). A shell without job control gives background jobs
/// `/dev/null` as stdin, so the watcher reads a copy of stdin on fd 3.
pub(crate) const REMOTE_WRAPPER: &str = "exec 3<&0; \
IFS= read -r SSS_JOB_SECRET <&3; export SSS_JOB_SECRET; \
\"$@\" </dev/null 3<&- & p=$!; \
(cat <&3 >/dev/null; kill -TERM $p; sleep 2; kill -KILL $p) >/dev/null 2>&1 & w=$!; \
exec 3<&-; wait $p; s=$?; kill $w 2>/dev/null; exit $s";

/// The ssh program and its options: `SSS_SSH` split into words, else
/// plain `ssh`. `BatchMode` is always added so a missing key fails at once
/// instead of prompting for a password on a terminal that is not there.
pub(crate) fn ssh_program(sss_ssh: Option<&str>) -> Result<Vec<String>, crate::RunError> {
    let mut words = match sss_ssh.map(str::trim).filter(|s| !s.is_empty()) {
        Some(s) => shell_words::split(s).map_err(|_| crate::RunError::BadSshCommand(s.into()))?,
        None => vec!["ssh".to_string()],
    };
    if words.is_empty() {
        words.push("ssh".into());
    }
    words.extend(["-o".into(), "BatchMode=yes".into()]);
    Ok(words)
}

/// The full argv that starts one task on `host`: `ssh -o BatchMode=yes
/// HOST 'cd DIR 2>/dev/null; sh -c WRAPPER sss-task env VAR=… PROGRAM ARGS'`.
pub(crate) fn task_argv(
    ssh: &[String],
    host: &str,
    cwd: Option<&str>,
    env: &[(String, String)],
    program: &str,
    args: &[String],
) -> Vec<OsString> {
    let mut words: Vec<String> = vec![
        "sh".into(),
        "-c".into(),
        REMOTE_WRAPPER.into(),
        "sss-task".into(),
        "env".into(),
    ];
    words.extend(env.iter().map(|(k, v)| format!("{k}={v}")));
    words.push(program.into());
    words.extend(args.iter().cloned());
    let mut remote = String::new();
    if let Some(dir) = cwd {
        // Like mpirun: start in the same directory when the remote host has it.
        remote.push_str(&format!("cd {} 2>/dev/null; ", shell_words::quote(dir)));
    }
    remote.push_str(&shell_words::join(&words));
    argv(ssh, host, remote)
}

/// The argv that removes job `job`'s shared-memory files on `host`.
pub(crate) fn cleanup_argv(ssh: &[String], host: &str, job: u32) -> Vec<OsString> {
    argv(
        ssh,
        host,
        format!("rm -f /dev/shm/{}*", sss_boot::shm_prefix(job)),
    )
}

fn argv(ssh: &[String], host: &str, remote: String) -> Vec<OsString> {
    let mut v: Vec<OsString> = ssh.iter().map(OsString::from).collect();
    // `--` would be nicer, but a host name starting with `-` is refused
    // earlier; ssh takes the first non-option word as the host.
    v.push(host.into());
    v.push(remote.into());
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strs(v: &[OsString]) -> Vec<&str> {
        v.iter().map(|s| s.to_str().unwrap()).collect()
    }

    #[test]
    fn builds_the_task_command() {
        let ssh = ssh_program(None).unwrap();
        let env = vec![
            ("SSS_RANK".to_string(), "3".to_string()),
            ("SSS_BOOT".to_string(), "tcp:10.0.0.1:4000".to_string()),
        ];
        let argv = task_argv(
            &ssh,
            "node7",
            Some("/home/me/my dir"),
            &env,
            "./ray",
            &["--out".into(), "it's.png".into()],
        );
        let v = strs(&argv);
        assert_eq!(&v[..4], ["ssh", "-o", "BatchMode=yes", "node7"]);
        assert_eq!(v.len(), 5);
        let remote = v[4];
        assert!(
            remote.starts_with("cd '/home/me/my dir' 2>/dev/null; sh -c '"),
            "{remote}"
        );
        // The remote shell must split it back into exactly our words.
        let after_cd = remote.split_once("; ").unwrap().1;
        let words = shell_words::split(after_cd).unwrap();
        assert_eq!(
            words,
            [
                "sh",
                "-c",
                REMOTE_WRAPPER,
                "sss-task",
                "env",
                "SSS_RANK=3",
                "SSS_BOOT=tcp:10.0.0.1:4000",
                "./ray",
                "--out",
                "it's.png"
            ]
        );
    }

    #[test]
    fn wrapper_runs_the_task_and_passes_its_status() {
        use std::io::{Read, Write};
        // The wrapper itself, run by the local sh: the task's words arrive
        // as "$@", the secret on the first line of stdin, and its status
        // comes back. Stdin stays open, as the launcher keeps it, so the
        // watcher does not fire.
        let mut child = std::process::Command::new("sh")
            .args([
                "-c",
                REMOTE_WRAPPER,
                "sss-task",
                "sh",
                "-c",
                "echo hi $SSS_JOB_SECRET; exit 7",
            ])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(b"5ec7e7\n").unwrap();
        let mut out = String::new();
        child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut out)
            .unwrap();
        let status = child.wait().unwrap();
        drop(stdin);
        assert_eq!(out, "hi 5ec7e7\n");
        assert_eq!(status.code(), Some(7));
    }

    #[test]
    fn wrapper_kills_the_task_when_stdin_closes() {
        use std::io::Write;
        let mut child = std::process::Command::new("sh")
            .args(["-c", REMOTE_WRAPPER, "sss-task", "sleep", "30"])
            .stdin(std::process::Stdio::piped())
            // sh reports the killed job ("Terminated") on stderr.
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(300));
        assert!(
            child.try_wait().unwrap().is_none(),
            "task ended with stdin open"
        );
        let mut stdin = child.stdin.take().unwrap();
        let _ = stdin.write_all(b"");
        drop(stdin);
        let t = std::time::Instant::now();
        let status = child.wait().unwrap();
        assert!(t.elapsed() < std::time::Duration::from_secs(10));
        // sh reports a task killed by SIGTERM as 128+15.
        assert_eq!(status.code(), Some(143));
    }

    #[test]
    fn custom_ssh_and_cleanup() {
        let ssh = ssh_program(Some("ssh -p 2222 -i '/k ey'")).unwrap();
        assert_eq!(
            ssh,
            ["ssh", "-p", "2222", "-i", "/k ey", "-o", "BatchMode=yes"]
        );
        let argv = cleanup_argv(&ssh, "n1", 42);
        assert_eq!(strs(&argv)[7..], ["n1", "rm -f /dev/shm/sss-42-*"]);
        assert!(ssh_program(Some("ssh 'unclosed")).is_err());
    }
}
