//! Latency of an 8-byte WRITE followed by a FENCE toward a task on
//! another node (two tasks, threads of this process, on 127.0.0.2 and
//! 127.0.0.3): what a DSM release or an `sss_fence` after a lone write
//! costs. Prints min / median / 90th percentile / max of the rounds.
//! `cargo run --release -p sss-mbcf --example fence_latency -- [ROUNDS]`

use sss_mbcf::{Options, Perm, Task, TaskConfig, ThreadBoot};
use std::time::Instant;

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(3000)
        .max(1);
    let cfg = TaskConfig::from_env().expect("settings");
    let hs: Vec<_> = ThreadBoot::group(2, &["127.0.0.2", "127.0.0.3"])
        .into_iter()
        .map(|b| {
            let cfg = cfg.clone();
            std::thread::spawn(move || {
                let t = Task::join(Box::new(b), cfg).expect("join");
                let seg = t.alloc(4096, Perm::ALL).expect("segment");
                let all = t.exchange(&seg).expect("exchange");
                t.barrier().expect("barrier");
                if t.rank() == 0 {
                    let mut us: Vec<f64> = (0..rounds as u64)
                        .map(|i| {
                            let a = Instant::now();
                            t.write(all[1].at(64), &i.to_le_bytes(), Options::default())
                                .expect("write");
                            t.fence(1).expect("fence");
                            a.elapsed().as_secs_f64() * 1e6
                        })
                        .collect();
                    us.sort_by(f64::total_cmp);
                    println!(
                        "8 B WRITE + FENCE over udp, {rounds} rounds, us: min {:.1} median {:.1} p90 {:.1} max {:.1}",
                        us[0],
                        us[rounds / 2],
                        us[rounds * 9 / 10],
                        us[rounds - 1]
                    );
                    println!("{:?}", t.stats());
                }
                t.barrier().expect("barrier");
            })
        })
        .collect();
    for h in hs {
        h.join().expect("task thread");
    }
}
