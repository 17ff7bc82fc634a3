//! What peers can make an endpoint hold is bounded: datagrams from
//! strangers create no state, and out-of-order buffering stays within its
//! byte budgets however many datagrams arrive past a hole.

mod support;

use sss_netsim::NetConfig;
use sss_proto::{Body, Config, Endpoint, Frag, OpOptions, Packet, Status, TaskId};
use sss_wire::Flags;
use support::{key_of, Cluster, Mem, Planned, TestOp, BASE};

const JOB: u32 = 7;
const MEMBERS: u32 = 4;

fn config() -> Config {
    Config {
        members: Some(MEMBERS),
        ..Config::default()
    }
}

/// A well-formed WRITE from `src` to `dst` with sequence number `seq`.
fn write(src: TaskId, dst: TaskId, seq: u32, payload: &[u8]) -> Vec<u8> {
    Packet {
        src,
        dst,
        epoch: 1,
        seq,
        ack: None,
        op: seq,
        flags: Flags::default(),
        status: Status::Ok,
        key: key_of(dst),
        addr: BASE,
        frag: Frag::SINGLE,
        body: Body::Write { notify: None },
        payload,
    }
    .to_vec()
    .expect("valid packet")
}

#[test]
fn strangers_create_no_state_and_are_counted() {
    let me = TaskId::new(JOB, 0);
    let mut ep = Endpoint::new(me, config());
    let mut mem = Mem::new(me);
    let payload = vec![0xab; 1400];
    let mut sent = 0u64;
    // Other jobs, ranks past the job, and 70 000 one-packet fake sources,
    // each with a datagram far past the hole so it would be buffered.
    for src in [
        TaskId::new(JOB + 1, 1),
        TaskId::new(0, 0),
        TaskId::new(JOB, MEMBERS),
    ] {
        for seq in 2..1024 {
            ep.handle_datagram(0, &write(src, me, seq, &payload), &mut mem);
            sent += 1;
        }
    }
    for r in 0..70_000 {
        let src = TaskId::new(JOB, MEMBERS + r);
        ep.handle_datagram(0, &write(src, me, 5, &payload), &mut mem);
        sent += 1;
    }
    assert_eq!(ep.channels(), 0, "a channel was made for a stranger");
    assert_eq!(ep.reorder_bytes(), 0);
    assert_eq!(ep.stats().not_member, sent);
    assert_eq!(ep.stats().applied, 0);

    // A member whose datagram arrives from another member's address (the
    // caller knows the source) is a stranger too.
    let m1 = TaskId::new(JOB, 1);
    let m2 = TaskId::new(JOB, 2);
    ep.handle_datagram_from(0, Some(m2), &write(m1, me, 1, b"spoofed!"), &mut mem);
    assert_eq!(ep.channels(), 0);
    assert_eq!(ep.stats().not_member, sent + 1);

    // Members still get through.
    ep.handle_datagram_from(0, Some(m1), &write(m1, me, 1, b"member!!"), &mut mem);
    assert_eq!(ep.channels(), 1);
    assert_eq!(ep.stats().applied, 1);
    assert_eq!(&mem.seg[..8], b"member!!");
}

#[test]
fn out_of_order_buffering_stays_within_its_budgets() {
    let me = TaskId::new(JOB, 0);
    let cfg = Config {
        members: Some(64),
        ooo_bytes: 256 << 10,
        ooo_total: 4 << 20,
        ..Config::default()
    };
    let (per_peer, total) = (cfg.ooo_bytes, cfg.ooo_total);
    let mut ep = Endpoint::new(me, cfg);
    let mut mem = Mem::new(me);
    let payload = vec![0xcd; 1400];
    // 63 members each send a whole window past a hole (sequence 1 never
    // comes): without a budget that is 63 x 1023 x 1.4 kB = 90 MB.
    for r in 1..64 {
        let src = TaskId::new(JOB, r);
        for seq in 2..1025 {
            ep.handle_datagram(0, &write(src, me, seq, &payload), &mut mem);
            assert!(ep.reorder_bytes_of(src) <= per_peer);
            assert!(ep.reorder_bytes() <= total);
        }
    }
    assert!(ep.reorder_bytes() > total - 2 * per_peer, "budget unused");
    assert!(ep.stats().reorder_dropped > 0);
    assert_eq!(ep.stats().applied, 0);
    // The hole filled: what was held is applied and released.
    let src = TaskId::new(JOB, 1);
    let held = ep.reorder_bytes_of(src);
    ep.handle_datagram(0, &write(src, me, 1, &payload), &mut mem);
    assert_eq!(ep.reorder_bytes_of(src), 0);
    // Each held datagram counts its bytes and some overhead.
    assert!(ep.stats().applied as usize >= held / 1600);
    assert!(ep.reorder_bytes() <= total - held);
}

#[test]
fn a_tiny_reorder_budget_limits_what_is_in_flight_and_delivers_everything() {
    let cfg = Config {
        members: Some(3),
        ooo_bytes: 8 << 10,
        ..support::lossy_config()
    };
    let net = NetConfig {
        latency: 20_000,
        jitter: 40_000,
        reorder: 0.2,
        reorder_delay: 300_000,
        loss: 0.1,
        mtu: 1500,
        seed: 99,
        ..NetConfig::default()
    };
    let mut c = Cluster::new(3, cfg, net);
    for s in 0..3usize {
        for d in 0..3usize {
            if s == d {
                continue;
            }
            for i in 0..300u64 {
                let dst = c.tasks[d];
                c.plan(
                    s,
                    Planned {
                        dst,
                        op: TestOp::FetchAdd {
                            key: key_of(dst),
                            addr: BASE + 8 * s as u64,
                            operand: 1,
                        },
                        opts: OpOptions::default(),
                    },
                );
                c.plan(
                    s,
                    Planned {
                        dst,
                        op: TestOp::Write {
                            key: key_of(dst),
                            addr: BASE + 4096 + 8192 * s as u64,
                            data: vec![i as u8; 3000],
                            notify: None,
                        },
                        opts: OpOptions::default(),
                    },
                );
            }
        }
    }
    assert!(c.run(u64::MAX), "did not finish");
    // Senders keep what is in flight within the peer's budget, so nothing
    // behind a hole is dropped and loss recovery stays proportionate
    // (without the cap: 800 000 retransmissions of 9 000 packets).
    for e in &c.eps {
        assert_eq!(e.stats().reorder_dropped, 0);
        assert!(
            e.stats().retransmissions * 2 < e.stats().packets_sent,
            "{:?}",
            e.stats()
        );
    }
    for s in 0..3usize {
        // Every FETCH_ADD came back with the count of the ones before it.
        for d in 0..3usize {
            if s == d {
                continue;
            }
            let word = BASE + 8 * s as u64 - BASE;
            let v = u64::from_le_bytes(
                c.mems[d].seg[word as usize..word as usize + 8]
                    .try_into()
                    .unwrap(),
            );
            assert_eq!(v, 300, "{s} -> {d}");
        }
        for r in c.results[s].values() {
            assert!(r.is_ok(), "{r:?}");
        }
        assert!(c.eps[s].reorder_bytes() == 0);
    }
}
