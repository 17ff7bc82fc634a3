//! A path that reorders by far more than its round trip (a machine that
//! time-shares its CPUs delays a packet by a scheduler's time slice)
//! must not make the sender resend everything that is only late: the
//! receiver reports each duplicate (D-SACK), and RACK's reordering
//! allowance widens until late packets are waited for.

mod support;

use sss_netsim::NetConfig;
use sss_proto::{Config, OpOptions, TaskId};
use support::*;

fn write(dst: TaskId, i: u64) -> Planned {
    write_3000(dst, i, OpOptions::default())
}

/// 20 µs one way; 3 % of packets 400 µs late (the minimum timeout is 2 ms).
fn reordering(seed: u64) -> NetConfig {
    NetConfig {
        latency: 20_000,
        reorder: 0.03,
        reorder_delay: 400_000,
        mtu: 1500,
        seed,
        ..NetConfig::default()
    }
}

#[test]
fn late_packets_stop_being_resent() {
    for seed in 1..=3 {
        let mut c = Cluster::new(2, Config::default(), reordering(seed));
        let b = c.tasks[1];
        for i in 0..3000u64 {
            c.plan(0, write(b, i));
        }
        assert!(c.run(60_000_000_000), "seed {seed}: did not finish");
        let (s, r) = (c.eps[0].stats(), c.eps[1].stats());
        // About 3 % of 9000 data packets are late; with the allowance
        // fixed at a quarter of the round trip, every one of them was
        // resent (264 of 272 with seed 1; 86 with it widening).
        let late = s.packets_sent * 3 / 100;
        assert!(s.dsacks > 0, "seed {seed}: {s:?}");
        assert!(s.retransmissions * 2 < late, "seed {seed}: {s:?}");
        assert_eq!(r.duplicates, s.retransmissions, "seed {seed}: {r:?}");
    }
}

/// Every packet of a stream delayed by more than the minimum timeout, in
/// order (a receiver descheduled for a scheduler's time slice: its
/// datagrams wait in its socket): the timeout fires and resends the
/// oldest packet, but the first ack after it covers packets sent only
/// once, before it. The timeout is taken for spurious, and nothing else
/// is resent.
#[test]
fn a_delay_spike_costs_one_packet_per_timeout() {
    let normal = NetConfig {
        latency: 20_000,
        mtu: 1500,
        ..NetConfig::default()
    };
    let spike = NetConfig {
        latency: 3_000_000,
        ..normal.clone()
    };
    let mut c = Cluster::new(2, Config::default(), normal.clone());
    let b = c.tasks[1];
    for i in 0..20_000u64 {
        c.plan(0, write(b, i));
    }
    c.advance(200_000);
    // Sent from now on, for 2.5 ms: 3 ms on the way, and not overtaken by
    // what is sent after.
    c.net.set_config(spike);
    c.advance(2_700_000);
    c.net.set_config(normal);
    assert!(c.run(60_000_000_000), "did not finish");
    let (s, r) = (c.eps[0].stats(), c.eps[1].stats());
    assert!(s.timeouts >= 1, "{s:?}");
    assert_eq!(s.spurious_timeouts, s.timeouts, "{s:?}");
    assert_eq!(s.timeout_lost, 0, "{s:?}");
    assert!(r.duplicates <= s.timeouts, "{r:?}");
}
