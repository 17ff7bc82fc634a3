//! A watchdog that cleans up after a launcher that died without doing so.
//!
//! Tasks die with the launcher through their parent-death signal, but a
//! launcher killed with SIGKILL cannot remove the job's shared-memory
//! files, and a task's own children have no such signal. So the launcher
//! starts this small `sh` script first, in a process group of its own, and
//! feeds it the process group of every task through a pipe. A launcher that
//! ends normally cleans up itself and says `done`; if the pipe reaches end
//! of file without `done`, the launcher died: the guardian kills the task
//! groups and every process with `SSS_JOB=<job>` in its environment, waits
//! (at most 5 s) for the groups to go, and removes `/dev/shm/sss-<job>-*`.

use std::io::Write;
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, Command, Stdio};

/// The guardian script; `$1` is the job id.
const SCRIPT: &str = r#"trap '' INT HUP
pids=
while read -r line; do
  case $line in
    done) exit 0 ;;
    *) pids="$pids $line" ;;
  esac
done
for p in $pids; do kill -KILL -$p 2>/dev/null; done
for f in $(grep -lzx "SSS_JOB=$1" /proc/[0-9]*/environ 2>/dev/null); do
  p=${f#/proc/}; kill -KILL ${p%/environ} 2>/dev/null
done
n=0
while [ $n -lt 100 ]; do
  alive=
  for p in $pids; do kill -0 -$p 2>/dev/null && alive=1; done
  [ -z "$alive" ] && break
  sleep 0.05
  n=$((n+1))
done
rm -f "${SSS_SHM_DIR:-/dev/shm}"/sss-"$1"-*
"#;

/// The running guardian.
pub(crate) struct Guardian {
    child: Child,
    stdin: Option<ChildStdin>,
}

impl Guardian {
    /// Starts the guardian for `job`.
    pub(crate) fn start(job: u32) -> std::io::Result<Guardian> {
        let mut child = Command::new("/bin/sh")
            .args(["-c", SCRIPT, "sss-guardian", &job.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            // Its own group: the terminal's ^C and our group signals pass
            // it by; and no parent-death signal, since it must outlive us.
            .process_group(0)
            .spawn()?;
        let stdin = child.stdin.take();
        Ok(Guardian { child, stdin })
    }

    /// Registers a task's process group.
    pub(crate) fn watch(&mut self, pgid: u32) {
        if let Some(s) = &mut self.stdin {
            // If the guardian is gone, the launcher still cleans up itself.
            let _ = writeln!(s, "{pgid}");
        }
    }

    /// The launcher has cleaned up: dismiss the guardian.
    pub(crate) fn dismiss(mut self) {
        if let Some(mut s) = self.stdin.take() {
            let _ = s.write_all(b"done\n");
        }
        let _ = self.child.wait();
    }
}
