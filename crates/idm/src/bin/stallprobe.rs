//! Test task for stalls: every task FETCH_ADDs on the next task's segment
//! every 10 ms for `SSS_STALL_PROBE_SECS` seconds and reports each outcome
//! (`OK <rank> <unix ns>` or `ERR <rank> <unix ns> <error>`), then
//! `DONE <rank> <ok> <err>`. Run under a launcher's environment.

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
            eprintln!("stall probe: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let secs: u64 = std::env::var("SSS_STALL_PROBE_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(30);
    let seg = t.alloc(4096, Perm::ALL).expect("alloc");
    let all = t.exchange(&seg).expect("exchange");
    let next = (t.rank() + 1) % t.size();
    let at = all[next as usize].at(0);
    let end = Instant::now() + Duration::from_secs(secs);
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
    std::process::ExitCode::SUCCESS
}
