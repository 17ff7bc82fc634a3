//! End-to-end behaviour of the reliable transport on a misbehaving network.

mod support;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use sss_netsim::NetConfig;
use sss_proto::{Completion, Config, Notify, OpOptions, Status, TaskId};
use support::*;

const DATA_AREA: u64 = 48 << 10;
const WORDS: u64 = 48 << 10;
const NOTIFY_AT: u64 = 56 << 10;
const FIFO_AT: u64 = 60 << 10;

/// A deterministic mixed workload: every task sends `per_pair` operations
/// of every kind to every other task, into a region of the destination
/// reserved for the source, so the final memory does not depend on how
/// sources interleave.
fn workload(c: &mut Cluster, per_pair: usize, seed: u64) -> usize {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let tasks = c.tasks.clone();
    let mut applies = 0;
    for (s, &src) in tasks.iter().enumerate() {
        for &dst in &tasks {
            if dst == src {
                continue;
            }
            let region = BASE + src.rank as u64 * REGION;
            let key = key_of(dst);
            for _ in 0..per_pair {
                let sr = rng.random_bool(0.3);
                let word = region + WORDS + 8 * rng.random_range(0..64u64);
                let op = match rng.random_range(0..100) {
                    0..=29 => {
                        let len = if rng.random_bool(0.05) {
                            rng.random_range(1409..12_000)
                        } else {
                            rng.random_range(1..300)
                        };
                        let off = rng.random_range(0..=DATA_AREA - len);
                        let data: Vec<u8> = (0..len).map(|_| rng.random()).collect();
                        let notify = rng.random_bool(0.3).then_some(Notify {
                            key,
                            addr: region + NOTIFY_AT,
                            addend: 1,
                        });
                        applies += (len as usize).div_ceil(1408);
                        TestOp::Write {
                            key,
                            addr: region + off,
                            data,
                            notify,
                        }
                    }
                    30..=44 => {
                        let len = if rng.random_bool(0.05) {
                            rng.random_range(1409..8_000)
                        } else {
                            rng.random_range(1..300)
                        };
                        let off = rng.random_range(0..=DATA_AREA - len as u64);
                        applies += 1;
                        TestOp::Read {
                            key,
                            addr: region + off,
                            len,
                        }
                    }
                    45..=52 => {
                        applies += 1;
                        TestOp::Swap {
                            key,
                            addr: word,
                            operand: rng.random(),
                        }
                    }
                    53..=60 => {
                        applies += 1;
                        TestOp::Cas {
                            key,
                            addr: word,
                            expected: rng.random_range(0..3),
                            new: rng.random_range(0..3),
                        }
                    }
                    61..=74 => {
                        applies += 1;
                        TestOp::FetchAdd {
                            key,
                            addr: word,
                            operand: rng.random_range(1..5),
                        }
                    }
                    75..=86 => {
                        // Up to three packets: longer ones go in fragments.
                        let len = if rng.random_range(0..4) == 0 {
                            rng.random_range(0..4000)
                        } else {
                            rng.random_range(0..200)
                        };
                        applies += 1;
                        TestOp::Fifo {
                            key,
                            addr: region + FIFO_AT,
                            data: (0..len).map(|_| rng.random()).collect(),
                        }
                    }
                    87..=96 => {
                        let len = rng.random_range(0..200);
                        applies += 1;
                        TestOp::Signal {
                            key,
                            handler: rng.random_range(0..4),
                            data: (0..len).map(|_| rng.random()).collect(),
                        }
                    }
                    // Operations the receiver must refuse.
                    _ => {
                        applies += 1;
                        match rng.random_range(0..5) {
                            0 => TestOp::Write {
                                key: key ^ 1,
                                addr: region,
                                data: vec![9; 8],
                                notify: None,
                            },
                            1 => TestOp::Read {
                                key,
                                addr: BASE + SEG as u64 - 4,
                                len: 8,
                            },
                            2 => TestOp::FetchAdd {
                                key,
                                addr: word + 3,
                                operand: 1,
                            },
                            3 => TestOp::Signal {
                                key,
                                handler: 99,
                                data: vec![],
                            },
                            _ => TestOp::Write {
                                key: ro_key_of(dst),
                                addr: region,
                                data: vec![9; 8],
                                notify: None,
                            },
                        }
                    }
                };
                c.plan(
                    s,
                    Planned {
                        dst,
                        op,
                        opts: OpOptions {
                            status_return: sr,
                            nofc: false,
                        },
                    },
                );
            }
        }
    }
    applies
}

fn hostile() -> NetConfig {
    NetConfig {
        latency: 20_000,
        jitter: 30_000,
        reorder: 0.05,
        reorder_delay: 200_000,
        loss: 0.20,
        duplicate: 0.10,
        corrupt: 0.02,
        mtu: 1500,
        seed: 0xdead_beef,
    }
}

fn clean() -> NetConfig {
    NetConfig {
        mtu: 1500,
        ..NetConfig::default()
    }
}

#[test]
fn hundred_thousand_ops_exactly_once_in_order_under_loss() {
    const TASKS: u32 = 4;
    let per_pair = 100_000 / (TASKS as usize * (TASKS as usize - 1)) + 1;

    let mut a = Cluster::new(TASKS, lossy_config(), clean());
    let applies = workload(&mut a, per_pair, 42);
    assert!(a.run(u64::MAX), "loss-free run did not finish");

    let mut b = Cluster::new(TASKS, lossy_config(), hostile());
    workload(&mut b, per_pair, 42);
    assert!(b.run(u64::MAX), "lossy run did not finish");

    let total: usize = b.submitted.iter().sum();
    assert!(total >= 100_000, "only {total} operations");

    // Exactly once, in order: every receiver applied, per source, the same
    // sequence as on the perfect network, which applied each op once.
    let logged: usize = a
        .mems
        .iter()
        .map(|m| m.log.values().map(|l| l.len()).sum::<usize>())
        .sum();
    assert_eq!(logged, applies);
    for (ma, mb) in a.mems.iter().zip(&b.mems) {
        assert_eq!(ma.log, mb.log, "apply log of {} differs", ma.me);
        assert!(ma.seg == mb.seg, "memory image of {} differs", ma.me);
        assert_eq!(ma.fifos, mb.fifos);
        assert_eq!(ma.signals, mb.signals);
    }
    // The same completions (values, data, errors) at every origin.
    assert_eq!(a.results, b.results);
    let errors = a
        .results
        .iter()
        .flat_map(|r| r.values())
        .filter(|r| r.is_err())
        .count();
    assert!(errors > 100, "the workload should include refused ops");
    assert!(a
        .results
        .iter()
        .flat_map(|r| r.values())
        .all(|r| !matches!(r, Err(Status::NodeDown) | Err(Status::TimedOut))));

    let net = b.net.stats();
    let retx: u64 = b.eps.iter().map(|e| e.stats().retransmissions).sum();
    let dups: u64 = b.eps.iter().map(|e| e.stats().duplicates).sum();
    let bad: u64 = b.eps.iter().map(|e| e.stats().bad_packets).sum();
    assert!(net.lost > 10_000 && net.duplicated > 5_000 && net.corrupted > 1_000);
    assert!(retx > 0 && dups > 0 && bad > 0);
    // Every corrupted packet reaches its receiver at least once (a
    // duplicate of a corrupted packet is corrupted too) and is caught.
    assert!(bad >= net.corrupted);
    eprintln!(
        "ops {total}, sent {} packets, lost {}, duplicated {}, corrupted {}, retransmitted {retx}, virtual time {} ms",
        net.sent, net.lost, net.duplicated, net.corrupted, b.now / 1_000_000
    );
}

#[test]
fn dead_peer_fails_every_pending_operation_within_the_budget() {
    let cfg = Config {
        initial_rto: 1_000_000,
        min_rto: 1_000_000,
        max_rto: 8_000_000,
        max_retries: 6,
        window: 16,
        ..Config::default()
    };
    let mut c = Cluster::new(3, cfg.clone(), clean());
    let victim = c.tasks[1];
    let key = key_of(victim);
    for i in 0..500u64 {
        let op = match i % 4 {
            0 => TestOp::Write {
                key,
                addr: BASE + i * 16,
                data: vec![1; 3000],
                notify: None,
            },
            1 => TestOp::Read {
                key,
                addr: BASE,
                len: 5000,
            },
            2 => TestOp::FetchAdd {
                key,
                addr: BASE + 8 * i,
                operand: 1,
            },
            _ => TestOp::Fifo {
                key,
                addr: BASE + 4096,
                data: vec![2; 100],
            },
        };
        c.plan(
            0,
            Planned {
                dst: victim,
                op,
                opts: OpOptions {
                    status_return: true,
                    nofc: false,
                },
            },
        );
    }
    // Let a part of it through, then kill the peer.
    assert!(!c.run(40_000));
    let killed_at = c.now;
    c.kill(1);
    assert!(c.run(u64::MAX), "the run hung");
    // Budget: the back-off series capped at max_rto, plus one rto of slack.
    let mut bound = 0;
    let mut rto = cfg.max_rto.min(cfg.initial_rto.max(cfg.min_rto));
    for _ in 0..=cfg.max_retries + 1 {
        bound += rto;
        rto = (rto * 2).min(cfg.max_rto);
    }
    assert!(
        c.now - killed_at <= bound,
        "failure took {} ns, budget {bound} ns",
        c.now - killed_at
    );
    assert_eq!(c.peer_down[0], vec![victim]);
    // Every operation completed, the unfinished ones with NodeDown.
    assert_eq!(c.results[0].len(), 500);
    let down = c.results[0]
        .values()
        .filter(|r| **r == Err(Status::NodeDown))
        .count();
    let ok = c.results[0].values().filter(|r| r.is_ok()).count();
    assert!(down > 0 && ok > 0, "down {down}, ok {ok}");
    assert_eq!(down + ok, 500);
    // Later submits fail at once.
    let e = c.eps[0].submit(
        c.now,
        victim,
        sss_proto::Op::Read {
            key,
            addr: BASE,
            len: 8,
        },
        OpOptions::default(),
    );
    assert_eq!(e, Err(sss_proto::SubmitError::PeerDown));
    assert_eq!(c.eps[0].total_in_flight(), 0);
}

#[test]
fn dead_peer_with_only_replies_outstanding_is_detected() {
    let cfg = Config {
        initial_rto: 1_000_000,
        min_rto: 1_000_000,
        max_rto: 4_000_000,
        max_retries: 4,
        ..Config::default()
    };
    // Requests arrive, but every reply is lost: the origin must probe and
    // give up rather than wait for ever.
    let mut c = Cluster::new(2, cfg, clean());
    let victim = c.tasks[1];
    c.plan(
        0,
        Planned {
            dst: victim,
            op: TestOp::Read {
                key: key_of(victim),
                addr: BASE,
                len: 64,
            },
            opts: OpOptions::default(),
        },
    );
    // Deliver the request (and its ack), then cut the victim off.
    assert!(!c.run(15_000));
    c.kill(1);
    assert!(c.run(u64::MAX));
    assert_eq!(c.results[0].get(&0), Some(&Err(Status::NodeDown)));
}

#[test]
fn multicast_to_64_members_under_loss_ends_in_one_combined_ack() {
    let mut c = Cluster::new(65, lossy_config(), hostile());
    let members: Vec<TaskId> = c.tasks.clone();
    for e in &mut c.eps {
        e.add_group(5, members.clone());
    }
    // The same key at every member, as a multicast segment would have.
    let shared_key = key_of(c.tasks[0]);
    for m in &mut c.mems {
        m.me = c.tasks[0];
    }
    const ROUNDS: u32 = 10;
    for round in 0..ROUNDS {
        let data = vec![round as u8 + 1; 1000];
        c.eps[0]
            .multicast(c.now, 5, shared_key, BASE + 4096 * round as u64, &data)
            .unwrap();
    }
    assert!(c.run(u64::MAX));
    assert_eq!(c.mcasts[0].len(), ROUNDS as usize);
    for (_, members, status) in &c.mcasts[0] {
        assert_eq!((*members, *status), (64, Status::Ok));
    }
    // Exactly one combined ack per multicast reached the origin.
    assert_eq!(c.eps[0].stats().mcast_acks, ROUNDS as u64);
    for m in &c.mems[1..] {
        for round in 0..ROUNDS as usize {
            let at = 4096 * round;
            assert!(m.seg[at..at + 1000].iter().all(|&b| b == round as u8 + 1));
        }
    }
    assert!(c.net.stats().lost > 0);
}

#[test]
fn small_groups_use_a_chain_and_dead_members_are_reported() {
    let mut c = Cluster::new(5, Config::default(), clean());
    let members: Vec<TaskId> = c.tasks.clone();
    for e in &mut c.eps {
        e.add_group(1, members.clone());
    }
    for m in &mut c.mems {
        m.me = c.tasks[0];
    }
    let key = key_of(c.tasks[0]);
    c.eps[0].multicast(0, 1, key, BASE, &[7; 10]).unwrap();
    assert!(c.run(u64::MAX));
    assert_eq!(c.mcasts[0], vec![(c.mcasts[0][0].0, 4, Status::Ok)]);
    // Four receivers, a chain: each forwards once, so the origin sends one
    // multicast packet and task 4 (the tail) forwards none.
    let mcast_sent = |i: usize| c.eps[i].stats().packets_sent;
    assert!(mcast_sent(0) >= 1);

    // Kill the third receiver: the chain breaks there.
    c.kill(3);
    c.eps[0].multicast(c.now, 1, key, BASE, &[8; 10]).unwrap();
    let cfg_budget = 400_000_000_000;
    assert!(c.run(cfg_budget));
    let (_, members, status) = c.mcasts[0][1];
    assert_eq!(status, Status::NodeDown);
    assert_eq!(members, 2);
}

#[test]
fn no_flow_control_messages_are_never_retransmitted() {
    let net = NetConfig {
        loss: 0.2,
        ..clean()
    };
    let mut c = Cluster::new(2, Config::default(), net);
    let dst = c.tasks[1];
    for i in 0..1000u64 {
        c.plan(
            0,
            Planned {
                dst,
                op: TestOp::Write {
                    key: key_of(dst),
                    addr: BASE + 8 * i,
                    data: i.to_le_bytes().to_vec(),
                    notify: None,
                },
                opts: OpOptions {
                    status_return: false,
                    nofc: true,
                },
            },
        );
    }
    assert!(c.run(u64::MAX));
    let st = c.eps[0].stats();
    assert_eq!(st.retransmissions, 0);
    assert_eq!(st.nofc_sent, 1000);
    assert_eq!(st.packets_sent, 1000);
    let applied = c.mems[1].log.values().map(|l| l.len()).sum::<usize>() as u64;
    assert_eq!(applied, 1000 - c.net.stats().lost);
    // Nothing waits and nothing is acknowledged.
    assert_eq!(c.eps[1].stats().packets_sent, 0);
}

#[test]
fn no_flow_control_replies_time_out_instead_of_hanging() {
    let net = NetConfig {
        loss: 1.0,
        ..clean()
    };
    let mut c = Cluster::new(2, Config::default(), net);
    let dst = c.tasks[1];
    c.plan(
        0,
        Planned {
            dst,
            op: TestOp::FetchAdd {
                key: key_of(dst),
                addr: BASE,
                operand: 1,
            },
            opts: OpOptions {
                status_return: false,
                nofc: true,
            },
        },
    );
    assert!(c.run(u64::MAX));
    assert_eq!(c.results[0].get(&0), Some(&Err(Status::TimedOut)));
}

#[test]
fn refused_operations_are_answered_counted_and_not_applied() {
    let mut c = Cluster::new(2, Config::default(), clean());
    let dst = c.tasks[1];
    let key = key_of(dst);
    c.mems[1].fifo_cap = 1;
    let cases = vec![
        (
            TestOp::Write {
                key: key ^ 5,
                addr: BASE,
                data: vec![1; 8],
                notify: None,
            },
            Status::BadKey,
        ),
        (
            TestOp::Write {
                key,
                addr: BASE + SEG as u64 - 4,
                data: vec![1; 8],
                notify: None,
            },
            Status::OutOfBounds,
        ),
        (
            TestOp::Write {
                key: ro_key_of(dst),
                addr: BASE,
                data: vec![1; 8],
                notify: None,
            },
            Status::NoPermission,
        ),
        (
            TestOp::Swap {
                key,
                addr: BASE + 4,
                operand: 1,
            },
            Status::Misaligned,
        ),
        (
            TestOp::Signal {
                key,
                handler: 17,
                data: vec![],
            },
            Status::NoSuchHandler,
        ),
        (
            TestOp::Fifo {
                key,
                addr: BASE + 64,
                data: vec![1],
            },
            Status::Ok,
        ),
        (
            TestOp::Fifo {
                key,
                addr: BASE + 64,
                data: vec![2],
            },
            Status::FifoFull,
        ),
    ];
    let n = cases.len();
    for (op, _) in &cases {
        c.plan(
            0,
            Planned {
                dst,
                op: op.clone(),
                opts: OpOptions::default(),
            },
        );
    }
    assert!(c.run(u64::MAX));
    for (i, (_, want)) in cases.iter().enumerate() {
        let got = c.results[0].get(&i).cloned();
        if *want == Status::Ok {
            assert_eq!(
                got, None,
                "case {i}: success without status return is silent"
            );
        } else {
            assert_eq!(got, Some(Err(*want)), "case {i}");
        }
    }
    assert_eq!(c.eps[1].stats().rejected, n as u64 - 1);
    assert!(c.mems[1].seg.iter().all(|&b| b == 0), "nothing was applied");
    assert_eq!(c.mems[1].fifos[&(BASE + 64)].len(), 1);
}

#[test]
fn large_write_and_read_are_fragmented_and_reassembled() {
    let mut c = Cluster::new(2, Config::default(), clean());
    let dst = c.tasks[1];
    let key = key_of(dst);
    let data: Vec<u8> = (0..200_000u32).map(|i| (i * 7 % 251) as u8).collect();
    c.plan(
        0,
        Planned {
            dst,
            op: TestOp::Write {
                key,
                addr: BASE,
                data: data.clone(),
                notify: Some(Notify {
                    key,
                    addr: BASE + 300_000,
                    addend: 1,
                }),
            },
            opts: OpOptions {
                status_return: true,
                nofc: false,
            },
        },
    );
    c.plan(
        0,
        Planned {
            dst,
            op: TestOp::Read {
                key,
                addr: BASE,
                len: 200_000,
            },
            opts: OpOptions::default(),
        },
    );
    assert!(c.run(u64::MAX));
    assert_eq!(c.results[0][&0], Ok(Completion::Done));
    assert_eq!(c.results[0][&1], Ok(Completion::Data(data.clone())));
    assert_eq!(&c.mems[1].seg[..200_000], &data[..]);
    assert_eq!(c.mems[1].seg[300_000], 1, "notify after the data");
    let frags = 200_000usize.div_ceil(1408);
    assert_eq!(c.mems[1].log[&c.tasks[0]].len(), frags + 1);
    // Every packet fits the 1500-byte MTU: none was dropped for size.
    assert_eq!(c.net.stats().too_big, 0);
}

#[test]
fn a_fifo_message_longer_than_a_packet_arrives_whole_or_not_at_all() {
    let mut c = Cluster::new(2, Config::default(), clean());
    let dst = c.tasks[1];
    let key = key_of(dst);
    let long: Vec<u8> = (0..10_000u32).map(|i| (i * 13 % 251) as u8).collect();
    let max = Config::default().max_fifo;
    for data in [long.clone(), vec![5; 1408], vec![6; max]] {
        c.plan(
            0,
            Planned {
                dst,
                op: TestOp::Fifo {
                    key,
                    addr: BASE + 64,
                    data,
                },
                opts: OpOptions {
                    status_return: true,
                    nofc: false,
                },
            },
        );
    }
    assert!(c.run(u64::MAX));
    for i in 0..3 {
        assert_eq!(c.results[0][&i], Ok(Completion::Done), "message {i}");
    }
    let q = &c.mems[1].fifos[&(BASE + 64)];
    assert_eq!(q.len(), 3);
    assert_eq!(q[0], long);
    assert_eq!(q[1], vec![5; 1408]);
    assert_eq!(q[2].len(), max);
    // 10 000 bytes in 8 packets, one in one, the largest in 48.
    let packets = c.mems[1].log[&c.tasks[0]].len();
    assert_eq!(packets, 3, "the target sees whole messages only");
    // Past the limit: refused at submission, nothing sent.
    let big = vec![0u8; max + 1];
    let op = sss_proto::Op::Fifo {
        key,
        addr: BASE + 64,
        data: &big,
    };
    assert_eq!(
        c.eps[0]
            .submit(0, dst, op, OpOptions::default())
            .unwrap_err(),
        sss_proto::SubmitError::Invalid
    );
}

#[test]
fn back_pressure_is_explicit_and_clears() {
    let cfg = Config {
        send_buffer: 10_000,
        ..Config::default()
    };
    let mut c = Cluster::new(2, cfg, clean());
    let dst = c.tasks[1];
    let key = key_of(dst);
    let op = sss_proto::Op::Write {
        key,
        addr: BASE,
        data: &[0; 1000],
        notify: None,
    };
    let mut accepted = 0;
    let err = loop {
        match c.eps[0].submit(0, dst, op, OpOptions::default()) {
            Ok(_) => accepted += 1,
            Err(e) => break e,
        }
    };
    assert_eq!(err, sss_proto::SubmitError::WouldBlock);
    assert_eq!(accepted, 9);
    assert!(c.run(u64::MAX));
    assert!(c.eps[0]
        .submit(c.now, dst, op, OpOptions::default())
        .is_ok());
}

#[test]
fn packet_counts_of_a_small_write_are_exact() {
    let mut c = Cluster::new(2, Config::default(), clean());
    let dst = c.tasks[1];
    c.plan(
        0,
        Planned {
            dst,
            op: TestOp::Write {
                key: key_of(dst),
                addr: BASE,
                data: vec![1; 8],
                notify: None,
            },
            opts: OpOptions {
                status_return: true,
                nofc: false,
            },
        },
    );
    assert!(c.run(u64::MAX));
    // WRITE out; STATUS back with the ack piggybacked; a delayed ACK for
    // the STATUS.
    assert_eq!(c.eps[0].stats().packets_sent, 2);
    assert_eq!(c.eps[1].stats().packets_sent, 1);
    assert_eq!(c.eps[0].stats().acks_sent, 1);
    assert_eq!(c.eps[0].stats().bytes_sent, (64 + 8) + 64);
}

#[test]
fn declared_down_peers_fail_at_once_and_can_come_back() {
    let mut c = Cluster::new(2, Config::default(), clean());
    let dst = c.tasks[1];
    c.kill(1);
    c.plan(
        0,
        Planned {
            dst,
            op: TestOp::Read {
                key: key_of(dst),
                addr: BASE,
                len: 8,
            },
            opts: OpOptions::default(),
        },
    );
    assert!(!c.run(1_000_000));
    c.eps[0].declare_down(dst);
    assert!(c.run(u64::MAX));
    assert_eq!(c.results[0].get(&0), Some(&Err(Status::NodeDown)));
    assert_eq!(c.peer_down[0], vec![dst]);
    assert!(c.eps[0].is_down(dst));
    c.eps[0].resume_peer(dst);
    assert!(!c.eps[0].is_down(dst));
}
