//! Test task for liveness, run under a launcher's environment. Every task
//! exchanges a segment; then, by default, the last rank idles and the
//! others FETCH_ADD on it until that fails, and report when (`DOWN <unix
//! ns> <error>`). With `SSS_STALL_PROBE_SECS` set, every task FETCH_ADDs on
//! the next one every 10 ms for that many seconds and reports each outcome
//! (`OK <rank> <unix ns>` or `ERR <rank> <unix ns> <error>`), then `DONE
//! <rank> <ok> <err>`: the stall test's mode.

use sss_mbcf::RemoteAddr;
use sss_mbcf::{Options, Perm, Task};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

fn now_ns() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

fn main() -> std::process::ExitCode {
    let t = match Task::init() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("probe: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let seg = t.alloc(4096, Perm::ALL).expect("alloc");
    let all = t.exchange(&seg).expect("exchange");
    if let Some(secs) = std::env::var("SSS_STALL_PROBE_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        let next = (t.rank() + 1) % t.size();
        stall_mode(&t, all[next as usize].at(0), Duration::from_secs(secs));
        return std::process::ExitCode::SUCCESS;
    }
    let victim = t.size() - 1;
    if t.rank() == victim {
        println!("READY {}", t.rank());
        loop {
            std::thread::sleep(Duration::from_secs(1));
        }
    }
    let at = all[victim as usize].at(0);
    let mut ok = 0u64;
    loop {
        match t
            .fetch_add(at, 1, Options::default())
            .and_then(|r| r.wait_value())
        {
            Ok(_) => {
                ok += 1;
                if ok == 5 {
                    println!("READY {}", t.rank());
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => {
                println!("DOWN {} {e}", now_ns());
                // New operations to it must fail at once, too.
                let again = t
                    .fetch_add(at, 1, Options::default())
                    .and_then(|r| r.wait_value());
                println!("AGAIN {}", again.is_err());
                return std::process::ExitCode::SUCCESS;
            }
        }
    }
}

/// The stall test's mode: FETCH_ADD on `at` every 10 ms for `len`,
/// reporting every outcome.
fn stall_mode(t: &Task, at: RemoteAddr, len: Duration) {
    let end = Instant::now() + len;
    let (mut ok, mut err) = (0u64, 0u64);
    while Instant::now() < end {
        match t
            .fetch_add(at, 1, Options::default())
            .and_then(|r| r.wait_value())
        {
            Ok(_) => {
                ok += 1;
                println!("OK {} {}", t.rank(), now_ns());
            }
            Err(e) => {
                err += 1;
                println!("ERR {} {} {e}", t.rank(), now_ns());
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    println!("DONE {} {ok} {err}", t.rank());
}
