//! SS-Wait benchmark task: a ring pass and a barrier among the tasks of a
//! job on one node, waiting by spinning, blocking, or SS-Wait.
//! `sss run -n N sss-sswait-bench spin|block|sswait [ROUNDS]`; rank 0
//! prints `ring <policy> <n> <us per hop>` and `barrier <policy> <n> <us>`.

use sss_mbcf::{Options, Perm, Task, WaitPolicy};
use std::time::Instant;

fn main() -> std::process::ExitCode {
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_else(|| "sswait".into());
    let rounds: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(2000);
    let t = match Task::init() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("sswait: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let (me, n) = (t.rank(), t.size());
    let seg = t.alloc(4096, Perm::ALL).expect("alloc");
    let all = t.exchange(&seg).expect("exchange");
    let policy = |partner: u32| match mode.as_str() {
        "spin" => WaitPolicy::Spin,
        "block" => WaitPolicy::Block,
        _ => WaitPolicy::SsWait(partner),
    };
    let next = (me + 1) % n;
    let prev = (me + n - 1) % n;
    // Ring: flag word 0 counts tokens received.
    let flag = seg.word(0).expect("word");
    let start = Instant::now();
    for r in 1..=rounds {
        if me == 0 {
            t.write(
                all[next as usize].at(64),
                &r.to_le_bytes(),
                Options::notify(all[next as usize].at(0)),
            )
            .expect("write");
            t.wait_word_with(flag, |v| v >= r, policy(prev));
        } else {
            t.wait_word_with(flag, |v| v >= r, policy(prev));
            t.write(
                all[next as usize].at(64),
                &r.to_le_bytes(),
                Options::notify(all[next as usize].at(0)),
            )
            .expect("write");
        }
    }
    let ring_us = start.elapsed().as_secs_f64() * 1e6 / (rounds * n as u64) as f64;
    t.barrier().expect("barrier");
    // Barrier: arrivals counted at rank 0 (word 8); rank 0 releases
    // everyone by bumping their word 16.
    let brounds = rounds / 4;
    let arrived = seg.word(8).expect("word");
    let release = seg.word(16).expect("word");
    let start = Instant::now();
    for b in 1..=brounds {
        if me == 0 {
            t.wait_word_with(arrived, |v| v >= b * (n as u64 - 1), policy(n - 1));
            for r in 1..n {
                let d = &all[r as usize];
                t.write(d.at(24), &b.to_le_bytes(), Options::notify(d.at(16)))
                    .expect("write");
            }
        } else {
            t.fetch_add(all[0].at(8), 1, Options::default())
                .expect("add");
            t.wait_word_with(release, |v| v >= b, policy(0));
        }
    }
    let bar_us = start.elapsed().as_secs_f64() * 1e6 / brounds.max(1) as f64;
    t.quiet().expect("quiet");
    t.barrier().expect("barrier");
    if me == 0 {
        println!("ring {mode} {n} {ring_us:.2}");
        println!("barrier {mode} {n} {bar_us:.2}");
    }
    std::process::ExitCode::SUCCESS
}
