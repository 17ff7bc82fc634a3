//! SS-Wait benchmark task: a ring pass, a barrier and pairs ping-ponging
//! among the tasks of a job on one node, waiting by spinning, blocking,
//! SS-Wait, or the default wait (`Task::wait_word`, no partner named).
//! `sss run -n N sss-sswait-bench spin|block|sswait|default|yield [ROUNDS]`;
//! rank 0 prints `ring <policy> <n> <us per hop>`, `barrier <policy> <n>
//! <us>` and `pairs <policy> <n> <us per round trip>` (ranks 2k and 2k+1
//! ping-pong, all pairs at once, timed until the last is done). `yield` is a bare `sched_yield` loop on
//! the flag, a floor to compare SS-Wait's bookkeeping against (its barrier
//! uses SS-Wait).

use sss_mbcf::{Error, Options, Perm, Task, WaitPolicy};
use std::time::Instant;

fn main() -> std::process::ExitCode {
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_else(|| "sswait".into());
    if !["spin", "block", "sswait", "default", "yield"].contains(&mode.as_str()) {
        eprintln!("sswait: the policy is spin, block, sswait, default or yield, not {mode:?}");
        return std::process::ExitCode::from(2);
    }
    let rounds: u64 = match args.next().map(|a| a.parse()) {
        None => 2000,
        Some(Ok(r)) if r > 0 => r,
        Some(_) => {
            eprintln!("sswait: ROUNDS must be a positive number");
            return std::process::ExitCode::from(2);
        }
    };
    match run(&mode, rounds) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sswait: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run(mode: &str, rounds: u64) -> Result<(), Error> {
    let t = Task::init()?;
    let (me, n) = (t.rank(), t.size());
    let seg = t.alloc(4096, Perm::ALL)?;
    let all = t.exchange(&seg)?;
    let policy = |partner: u32| match mode {
        "spin" => WaitPolicy::Spin,
        "block" => WaitPolicy::Block,
        _ => WaitPolicy::SsWait(partner),
    };
    let wait = |w: &std::sync::atomic::AtomicU64, r: u64, partner: u32| {
        if mode == "default" {
            t.wait_word(w, |v| v >= r);
        } else if mode == "yield" {
            while w.load(std::sync::atomic::Ordering::Acquire) < r {
                std::thread::yield_now();
            }
        } else {
            t.wait_word_with(w, |v| v >= r, policy(partner));
        }
    };
    let next = (me + 1) % n;
    let prev = (me + n - 1) % n;
    // Ring: flag word 0 counts tokens received.
    let flag = seg.word(0)?;
    let start = Instant::now();
    for r in 1..=rounds {
        if me == 0 {
            t.write(
                all[next as usize].at(64),
                &r.to_le_bytes(),
                Options::notify(all[next as usize].at(0)),
            )?;
            wait(flag, r, prev);
        } else {
            wait(flag, r, prev);
            t.write(
                all[next as usize].at(64),
                &r.to_le_bytes(),
                Options::notify(all[next as usize].at(0)),
            )?;
        }
    }
    let ring_us = start.elapsed().as_secs_f64() * 1e6 / (rounds * n as u64) as f64;
    t.barrier()?;
    // Barrier: arrivals counted at rank 0 (word 8); rank 0 releases
    // everyone by bumping their word 16.
    let brounds = rounds / 4;
    let arrived = seg.word(8)?;
    let release = seg.word(16)?;
    let start = Instant::now();
    for b in 1..=brounds {
        if me == 0 {
            if mode == "default" {
                t.wait_word(arrived, |v| v >= b * (n as u64 - 1));
            } else {
                t.wait_word_with(arrived, |v| v >= b * (n as u64 - 1), policy(n - 1));
            }
            for r in 1..n {
                let d = &all[r as usize];
                t.write(d.at(24), &b.to_le_bytes(), Options::notify(d.at(16)))?;
            }
        } else {
            t.fetch_add(all[0].at(8), 1, Options::default())?;
            if mode == "default" {
                t.wait_word(release, |v| v >= b);
            } else {
                t.wait_word_with(release, |v| v >= b, policy(0));
            }
        }
    }
    let bar_us = start.elapsed().as_secs_f64() * 1e6 / brounds.max(1) as f64;
    t.quiet()?;
    t.barrier()?;
    // Pairs: word 32 counts the pings (odd rank) or pongs (even rank).
    let mate = me ^ 1;
    let got = seg.word(32)?;
    let start = Instant::now();
    if mate < n {
        let d = &all[mate as usize];
        for r in 1..=rounds {
            if me % 2 == 0 {
                t.write(d.at(40), &r.to_le_bytes(), Options::notify(d.at(32)))?;
                wait(got, r, mate);
            } else {
                wait(got, r, mate);
                t.write(d.at(40), &r.to_le_bytes(), Options::notify(d.at(32)))?;
            }
        }
    }
    // Until every pair is done: one pair alone on the CPUs is fast.
    t.quiet()?;
    t.barrier()?;
    let pairs_us = start.elapsed().as_secs_f64() * 1e6 / rounds as f64;
    if me == 0 {
        println!("ring {mode} {n} {ring_us:.2}");
        println!("barrier {mode} {n} {bar_us:.2}");
        println!("pairs {mode} {n} {pairs_us:.2}");
    }
    Ok(())
}
