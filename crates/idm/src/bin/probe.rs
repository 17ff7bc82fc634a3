//! Test task for liveness: every task exchanges a segment; the last rank
//! then idles, the others FETCH_ADD on it until that fails, and report
//! when (`DOWN <unix ns> <error>`). Run under a launcher's environment.

use sss_mbcf::{Options, Perm, Task};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

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
