//! Latency of a READ of SIZE bytes from a task on another node (two
//! tasks, threads of this process, on 127.0.0.2 and 127.0.0.3): what a
//! DSM page fault across hosts waits for. The serving task either spins
//! in a wait that never blocks (`spin`, as a task at a barrier: it serves
//! the READs itself) or sleeps (`sleep`: its progress thread serves). Prints min / median / 90th percentile /
//! max of the rounds.
//! `cargo run --release -p sss-mbcf --example read_latency -- [ROUNDS] [SIZE] [spin|sleep]`

use sss_mbcf::{Options, Perm, Task, TaskConfig, ThreadBoot};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

fn main() {
    let mut args = std::env::args().skip(1);
    let rounds: usize = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or(3000)
        .max(1);
    let size: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(4096);
    let sleep = args.next().as_deref() == Some("sleep");
    let cfg = TaskConfig::from_env().expect("settings");
    let hs: Vec<_> = ThreadBoot::group(2, &["127.0.0.2", "127.0.0.3"])
        .into_iter()
        .map(|b| {
            let cfg = cfg.clone();
            std::thread::spawn(move || {
                let t = Task::join(Box::new(b), cfg).expect("join");
                let seg = t.alloc(size.max(4096) + 64, Perm::ALL).expect("segment");
                let all = t.exchange(&seg).expect("exchange");
                let done = seg.word(size.max(4096)).expect("word");
                t.barrier().expect("barrier");
                if t.rank() == 0 {
                    let mut us: Vec<f64> = (0..rounds)
                        .map(|_| {
                            let a = Instant::now();
                            let d = t
                                .read(all[1].at(0), size, Options::default())
                                .expect("read")
                                .wait_data()
                                .expect("data");
                            assert_eq!(d.len(), size);
                            a.elapsed().as_secs_f64() * 1e6
                        })
                        .collect();
                    t.write(
                        all[1].at(size.max(4096) as u64),
                        &1u64.to_le_bytes(),
                        Options::default(),
                    )
                    .expect("write");
                    t.fence(1).expect("fence");
                    us.sort_by(f64::total_cmp);
                    println!(
                        "{size} B READ over udp, server {}, {rounds} rounds, us: min {:.1} median {:.1} p90 {:.1} max {:.1}",
                        if sleep { "sleeping" } else { "spinning" },
                        us[0],
                        us[rounds / 2],
                        us[rounds * 9 / 10],
                        us[rounds - 1]
                    );
                    println!("{:?}", t.stats());
                } else if sleep {
                    while done.load(Ordering::Acquire) == 0 {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                } else {
                    // SS-Wait's spin, renewed: never blocks.
                    while t
                        .wait_word_partner_timeout(done, 0, |v| v != 0, Duration::from_millis(1))
                        .is_none()
                    {}
                }
                t.barrier().expect("barrier");
            })
        })
        .collect();
    for h in hs {
        h.join().expect("task thread");
    }
}
