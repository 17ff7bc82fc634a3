//! A task for the launcher's tests: it boots, then runs the steps given as
//! arguments, in order. `R:step` runs a step on rank R only.
//!
//! | step | effect |
//! |---|---|
//! | `info` | print `rank=R size=S node=N node_id=I local=L/LS job=J launcher=…` |
//! | `gather` | allgather `v<rank>`, check every value, print `gather ok` |
//! | `barrier` | wait for every task |
//! | `pids=DIR` | write `<pid> <job>` to `DIR/<rank>` |
//! | `shm` | create `/dev/shm/sss-<job>-test-<rank>` |
//! | `echo=TEXT` | print TEXT |
//! | `lines=N` | print N numbered lines on stdout and on stderr |
//! | `exit=C` | exit with status C |
//! | `segv` | die of SIGSEGV (without a core file) |
//! | `sigkill` | die of SIGKILL |
//! | `ignore-term` | ignore SIGTERM from now on |
//! | `spawn-child` | start `sleep 1000` as a child (same process group) |
//! | `escape-child` | start `setsid sleep 1000`: a descendant in a session of its own |
//! | `sleep=MS` | sleep |
//! | `forever` | sleep until killed |
//!
//! With `SSS_TEST_TASK_NO_FDS` set, the task uses up its file descriptors
//! before it boots.

use std::io::Write;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use nix::sys::resource::{getrlimit, setrlimit, Resource};
use nix::sys::signal::{raise, signal, SigHandler, Signal};
use sss_boot::Boot;

fn main() {
    if std::env::var_os("SSS_TEST_TASK_NO_FDS").is_some() {
        use_up_fds();
    }
    let mut boot = match Boot::from_env() {
        Ok(b) => b,
        Err(e) => {
            eprintln!("sss-test-task: boot failed: {e}");
            std::process::exit(70);
        }
    };
    let rank = boot.rank();
    let job = boot.job();
    // Kept alive so an ignored SIGTERM stays ignored.
    let mut _term_flag: Option<Arc<AtomicBool>> = None;
    for arg in std::env::args().skip(1) {
        let step = match arg.split_once(':') {
            Some((r, step)) if r.chars().all(|c| c.is_ascii_digit()) => {
                if r.parse::<u32>().ok() != Some(rank) {
                    continue;
                }
                step.to_string()
            }
            _ => arg.clone(),
        };
        let (name, val) = step.split_once('=').unwrap_or((step.as_str(), ""));
        match name {
            "info" => println!(
                "rank={rank} size={} node={} node_id={} local={}/{} job={job} launcher={:?}",
                boot.size(),
                boot.node(),
                boot.node_id(),
                boot.local_rank(),
                boot.local_size(),
                boot.launcher()
            ),
            "gather" => {
                let all = boot
                    .allgather(format!("v{rank}").as_bytes())
                    .unwrap_or_else(|e| fail(&format!("allgather: {e}")));
                for (r, v) in all.iter().enumerate() {
                    if *v != format!("v{r}").into_bytes() {
                        fail(&format!("allgather: rank {r} sent {v:?}"));
                    }
                }
                println!("gather ok");
            }
            "barrier" => boot
                .barrier()
                .unwrap_or_else(|e| fail(&format!("barrier: {e}"))),
            "pids" => {
                let path = std::path::Path::new(val).join(rank.to_string());
                let tmp = path.with_extension("tmp");
                std::fs::write(&tmp, format!("{} {job}", std::process::id()))
                    .and_then(|_| std::fs::rename(&tmp, &path))
                    .unwrap_or_else(|e| fail(&format!("pids: {e}")));
            }
            "shm" => {
                let p = format!("/dev/shm/{}test-{rank}", boot.shm_prefix());
                std::fs::write(&p, b"x").unwrap_or_else(|e| fail(&format!("shm {p}: {e}")));
            }
            "echo" => println!("{val}"),
            "stdin" => {
                let mut text = String::new();
                let _ = std::io::Read::read_to_string(&mut std::io::stdin(), &mut text);
                println!("stdin rank={rank} bytes={} text={:?}", text.len(), text);
            }
            "lines" => {
                let n: u32 = val.parse().unwrap_or(10);
                let out = std::io::stdout();
                let err = std::io::stderr();
                for i in 0..n {
                    // Written in two pieces to tempt a mid-line interleave.
                    let _ = write!(out.lock(), "out {i} of ");
                    let _ = out.lock().flush();
                    let _ = writeln!(out.lock(), "rank {rank}");
                    let _ = writeln!(err.lock(), "err {i} of rank {rank}");
                }
            }
            "exit" => std::process::exit(val.parse().unwrap_or(1)),
            "segv" => segv(),
            "sigkill" => {
                let _ = std::io::stdout().flush();
                let _ = raise(Signal::SIGKILL);
            }
            "ignore-term" => {
                let flag = Arc::new(AtomicBool::new(false));
                signal_hook::flag::register(signal_hook::consts::SIGTERM, Arc::clone(&flag))
                    .unwrap_or_else(|e| fail(&format!("ignore-term: {e}")));
                _term_flag = Some(flag);
            }
            "spawn-child" => {
                let child = std::process::Command::new("sleep")
                    .arg("1000")
                    .spawn()
                    .unwrap_or_else(|e| fail(&format!("spawn-child: {e}")));
                // Deliberately not waited for: the launcher must kill it.
                std::mem::forget(child);
            }
            "escape-child" => {
                let child = std::process::Command::new("setsid")
                    .args(["sleep", "1000"])
                    .spawn()
                    .unwrap_or_else(|e| fail(&format!("escape-child: {e}")));
                std::mem::forget(child);
            }
            "sleep" => std::thread::sleep(Duration::from_millis(val.parse().unwrap_or(100))),
            "forever" => loop {
                std::thread::sleep(Duration::from_secs(3600));
            },
            other => fail(&format!("unknown step {other:?}")),
        }
    }
}

/// Dies of SIGSEGV. Rust's runtime has a SIGSEGV handler (it tells stack
/// overflows from other faults) that would swallow a raised signal, so the
/// default action is restored first.
/// Lowers the descriptor limit, then opens files until it is reached.
fn use_up_fds() {
    let (_, hard) = getrlimit(Resource::RLIMIT_NOFILE).expect("getrlimit");
    setrlimit(Resource::RLIMIT_NOFILE, 64.min(hard), hard).expect("setrlimit");
    while let Ok(f) = std::fs::File::open("/dev/null") {
        std::mem::forget(f);
    }
}

#[allow(unsafe_code)]
fn segv() {
    // No core file in the test's working directory.
    let _ = setrlimit(Resource::RLIMIT_CORE, 0, 0);
    let _ = std::io::stdout().flush();
    // SAFETY: installing SIG_DFL runs no code of ours in signal context;
    // nothing in this process relies on the runtime's SIGSEGV handler
    // after this point, since the process is about to die.
    let _ = unsafe { signal(Signal::SIGSEGV, SigHandler::SigDfl) };
    let _ = raise(Signal::SIGSEGV);
}

fn fail(msg: &str) -> ! {
    eprintln!("sss-test-task: {msg}");
    std::process::exit(71);
}
