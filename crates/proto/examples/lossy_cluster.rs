//! A small cluster of MBCF endpoints on a simulated network that loses,
//! duplicates, reorders and corrupts packets: every task hammers every
//! other with atomics and writes, and the result is checked against the
//! arithmetic it must equal.
//!
//! `cargo run --release -p sss-proto --example lossy_cluster -- [TASKS] [OPS] [LOSS%]`

#[path = "../tests/support/mod.rs"]
mod support;

use sss_netsim::NetConfig;
use sss_proto::{Notify, OpOptions};
use support::*;

fn main() {
    let mut args = std::env::args().skip(1);
    let tasks: u32 = args.next().and_then(|a| a.parse().ok()).unwrap_or(4);
    let ops: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(20_000);
    let loss: f64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(20.0);
    let net = NetConfig {
        latency: 20_000,
        jitter: 20_000,
        loss: loss / 100.0,
        duplicate: 0.05,
        reorder: 0.05,
        reorder_delay: 100_000,
        corrupt: 0.01,
        mtu: 1500,
        seed: 7,
    };
    let mut c = Cluster::new(tasks.max(2), lossy_config(), net);
    let all = c.tasks.clone();
    let per_pair = ops / (all.len() as u64 * (all.len() as u64 - 1)).max(1);
    for (s, &src) in all.iter().enumerate() {
        for &dst in &all {
            if dst == src {
                continue;
            }
            let key = key_of(dst);
            for i in 0..per_pair {
                let op = if i % 2 == 0 {
                    TestOp::FetchAdd {
                        key,
                        addr: BASE,
                        operand: 1,
                    }
                } else {
                    TestOp::Write {
                        key,
                        addr: BASE + 64 + 8 * src.rank as u64,
                        data: i.to_le_bytes().to_vec(),
                        notify: Some(Notify {
                            key,
                            addr: BASE + 8,
                            addend: 1,
                        }),
                    }
                };
                c.plan(
                    s,
                    Planned {
                        dst,
                        op,
                        opts: OpOptions::default(),
                    },
                );
            }
        }
    }
    let finished = c.run(u64::MAX);
    println!(
        "{} tasks, {} operations, {loss}% loss: {}",
        all.len(),
        c.submitted.iter().sum::<usize>(),
        if finished {
            "all completed"
        } else {
            "DID NOT FINISH"
        }
    );
    println!();
    println!("| task | counter | notifies | packets sent | bytes sent | retransmissions | duplicates dropped | corrupt dropped |");
    println!("|---|---|---|---|---|---|---|---|");
    let mut ok = finished;
    let expect_adds = (per_pair.div_ceil(2)) * (all.len() as u64 - 1);
    let expect_writes = (per_pair / 2) * (all.len() as u64 - 1);
    for (i, (e, m)) in c.eps.iter().zip(&c.mems).enumerate() {
        let counter = u64::from_le_bytes(m.seg[0..8].try_into().unwrap());
        let notifies = u64::from_le_bytes(m.seg[8..16].try_into().unwrap());
        ok &= counter == expect_adds && notifies == expect_writes;
        let s = e.stats();
        println!(
            "| {i} | {counter} | {notifies} | {} | {} | {} | {} | {} |",
            s.packets_sent, s.bytes_sent, s.retransmissions, s.duplicates, s.bad_packets
        );
    }
    let n = c.net.stats();
    println!();
    println!(
        "network: {} sent, {} lost, {} duplicated, {} corrupted, {} reordered; {:.1} ms of virtual time",
        n.sent,
        n.lost,
        n.duplicated,
        n.corrupted,
        n.reordered,
        c.now as f64 / 1e6
    );
    println!(
        "every counter = {expect_adds} and every notify = {expect_writes} (exactly once): {}",
        if ok { "yes" } else { "NO" }
    );
    if !ok {
        std::process::exit(1);
    }
}
