//! A child process waited for with a deadline: its output drained on
//! threads (so a full pipe never blocks it), killed past the deadline.

use std::io::Read;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// How a child ended and what it printed.
pub struct Finished {
    /// Its status; `None` when it was killed at the deadline.
    pub status: Option<ExitStatus>,
    /// Its standard output (empty unless piped).
    pub stdout: String,
    /// Its standard error (empty unless piped).
    pub stderr: String,
}

impl Finished {
    /// Its exit code, `None` when killed by a signal or at the deadline.
    pub fn code(&self) -> Option<i32> {
        self.status.and_then(|s| s.code())
    }

    /// Its exit status as a shell shows it (128 + signal); panics if it
    /// was killed at the deadline.
    pub fn shell_code(&self) -> i32 {
        shell_code(self.status.expect("finished before the deadline"))
    }
}

/// An exit status as a shell shows it: the code, or 128 + the signal.
pub fn shell_code(st: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    st.code().unwrap_or_else(|| 128 + st.signal().unwrap_or(0))
}

/// Waits for `child` at most `limit`, killing (and reaping) it past that,
/// with its piped stdout and stderr read to the end.
pub fn wait_bounded(mut child: Child, limit: Duration) -> Finished {
    let drain = |r: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut s = Vec::new();
            if let Some(mut r) = r {
                let _ = r.read_to_end(&mut s);
            }
            String::from_utf8_lossy(&s).into_owned()
        })
    };
    let out = drain(child.stdout.take().map(|r| Box::new(r) as _));
    let err = drain(child.stderr.take().map(|r| Box::new(r) as _));
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait for a child") {
            break Some(s);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Finished {
        status,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    }
}

/// Starts `cmd` with stdin closed and stdout and stderr piped, and waits
/// for it as [`wait_bounded`] does.
pub fn run_bounded(cmd: &mut Command, limit: Duration) -> std::io::Result<Finished> {
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    Ok(wait_bounded(child, limit))
}

/// Sends signal `sig` (a name for kill(1): `STOP`, `CONT`, …) to `pid`,
/// ignoring failure (the process may be gone).
pub fn signal(pid: u32, sig: &str) {
    let _ = Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(pid.to_string())
        .status();
}

/// Sends each line of `out` (a child's piped output), made a message by
/// `f`, to `tx` from a thread of its own, until the pipe closes.
pub fn forward_lines<T: Send + 'static>(
    out: impl Read + Send + 'static,
    tx: std::sync::mpsc::Sender<T>,
    f: impl Fn(String) -> T + Send + 'static,
) {
    std::thread::spawn(move || {
        for l in std::io::BufRead::lines(std::io::BufReader::new(out)).map_while(Result::ok) {
            let _ = tx.send(f(l));
        }
    });
}
