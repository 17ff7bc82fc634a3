//! SIGNAL ping-pong between the tasks of a job launched by `sss run`
//! (separate processes, as the bench runs them), in samples of 3 000
//! round trips, each with the counts that tell where its handlers ran:
//! `sss run -n 2 target/release/examples/signal_samples [BYTES] [write]`
//! (`write`: a WRITE + notify ping-pong instead, for comparison).
//!
//! A sample whose handlers ran inline in the waiter takes about one
//! ring transfer a way; one where waiters blocked (a CPU taken by
//! another process) pays a doorbell and a wake-up a way.

use sss_mbcf::{Options, Perm, Task};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

const SAMPLES: u32 = 20;
const ROUNDS: u64 = 3_000;

fn main() {
    let t = Task::init().expect("run me with `sss run -n 2`");
    let size: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(16);
    let write = std::env::args().nth(2).as_deref() == Some("write");
    let seg = t.alloc(4096, Perm::ALL).expect("segment");
    let all = t.exchange(&seg).expect("exchange");
    let peer = &all[1 - t.rank() as usize];
    let flag = seg.word(0).expect("word");
    let got = Arc::new(AtomicU64::new(0));
    let (g, echo) = (got.clone(), t.rank() == 1);
    t.set_handler(
        0,
        Arc::new(move |ctx, data| {
            if echo {
                let _ = ctx.task.signal(ctx.from, 0, data, Options::default());
            }
            g.fetch_add(1, Ordering::Release);
        }),
    )
    .expect("handler");
    t.barrier().expect("barrier");
    let data = vec![1u8; size];
    let mut seen = 0u64;
    for s in 0..SAMPLES {
        let before = t.stats();
        let start = Instant::now();
        for _ in 0..ROUNDS {
            seen += 1;
            if write {
                let ping = || {
                    t.write(peer.at(64), &data, Options::notify(peer.at(0)))
                        .expect("write")
                };
                if t.rank() == 0 {
                    ping();
                    t.wait_word(flag, |v| v >= seen);
                } else {
                    t.wait_word(flag, |v| v >= seen);
                    ping();
                }
                continue;
            }
            if t.rank() == 0 {
                t.signal(1, 0, &data, Options::default()).expect("signal");
            }
            t.wait_word(&got, |v| v >= seen);
        }
        let one_way = start.elapsed().as_secs_f64() * 1e6 / ROUNDS as f64 / 2.0;
        let after = t.stats();
        println!(
            "rank {} sample {s}: {one_way:.3} us one way; handlers inline {}, progress wake-ups {}, blocked waits {}",
            t.rank(),
            after.signals_inline - before.signals_inline,
            after.progress_wakeups - before.progress_wakeups,
            after.blocked_waits - before.blocked_waits,
        );
    }
    t.barrier().expect("barrier");
}
