//! A stall is not a death: a peer that stops answering long enough to be
//! declared down (a stopped process, a paused machine, a partition) and then
//! answers again gets its channel back. What failed stays failed and is
//! applied at most once; what is submitted afterwards succeeds, in both
//! directions.

mod support;

use sss_netsim::NetConfig;
use sss_proto::{Config, OpOptions, Status, TaskId};
use support::*;

fn cfg() -> Config {
    Config {
        initial_rto: 1_000_000,
        min_rto: 1_000_000,
        max_rto: 4_000_000,
        max_retries: 4,
        window: 16,
        down_probe: 50_000_000,
        down_probe_max: 400_000_000,
        ..Config::default()
    }
}

fn clean() -> NetConfig {
    NetConfig {
        latency: 50_000,
        jitter: 0,
        loss: 0.0,
        duplicate: 0.0,
        reorder: 0.0,
        corrupt: 0.0,
        ..NetConfig::default()
    }
}

/// A counter bump at `dst`, with a completion reply.
fn bump(dst: TaskId) -> Planned {
    Planned {
        dst,
        op: TestOp::FetchAdd {
            key: key_of(dst),
            addr: BASE,
            operand: 1,
        },
        opts: OpOptions::default(),
    }
}

/// A 3000-byte write (three fragments) at `dst`, with a completion reply.
fn write(dst: TaskId, i: u64) -> Planned {
    let opts = OpOptions {
        status_return: true,
        nofc: false,
    };
    write_3000(dst, i, opts)
}

/// Runs in small steps until task `s` has `n` results.
fn run_until_results(c: &mut Cluster, s: usize, n: usize) {
    while c.results[s].len() < n {
        assert!(!c.run(c.now + 100_000), "finished before {n} results");
    }
}

fn counter(c: &Cluster, i: usize) -> u64 {
    u64::from_le_bytes(c.mems[i].seg[..8].try_into().unwrap())
}

/// Results of task `s` from index `from` on: (ok, node down).
fn tally(c: &Cluster, s: usize, from: usize) -> (usize, usize) {
    let r = c.results[s].range(from..);
    let mut ok = 0;
    let mut down = 0;
    for (_, v) in r {
        match v {
            Ok(_) => ok += 1,
            Err(Status::NodeDown) => down += 1,
            Err(e) => panic!("unexpected {e:?}"),
        }
    }
    (ok, down)
}

/// Every counter bump reported done was applied once; one reported failed
/// was applied at most once.
fn check_counter(c: &Cluster, s: usize, d: usize, bumps: &[usize]) {
    let ok = bumps
        .iter()
        .filter(|i| c.results[s].get(i).is_some_and(|r| r.is_ok()))
        .count() as u64;
    let v = counter(c, d);
    assert!(
        v >= ok && v <= bumps.len() as u64,
        "counter {v}, {ok} reported done of {}",
        bumps.len()
    );
}

#[test]
fn a_stalled_peer_is_declared_down_and_comes_back() {
    let mut c = Cluster::new(2, cfg(), clean());
    let (a, b) = (c.tasks[0], c.tasks[1]);
    let mut bumps = Vec::new();
    for i in 0..200u64 {
        if i % 2 == 0 {
            bumps.push(i as usize);
            c.plan(0, bump(b));
        } else {
            c.plan(0, write(b, i));
        }
        c.plan(1, bump(a));
    }
    // Part of it gets through, then task 1 stops for 5 s (virtual).
    run_until_results(&mut c, 0, 20);
    c.stall(1, true);
    c.run(c.now + 5_000_000_000);
    assert_eq!(c.peer_down[0], vec![b], "task 0 never gave up on task 1");
    assert!(c.eps[0].is_down(b));
    assert_eq!(c.results[0].len(), 200, "every operation of task 0 ended");
    let (ok0, down0) = tally(&c, 0, 0);
    assert!(ok0 > 0 && down0 > 0, "ok {ok0}, down {down0}");
    // While down, a submit fails at once, and task 0 only probes.
    assert!(c.eps[0].probing_only());
    // Task 1 wakes with its own operations still pending.
    c.stall(1, false);
    c.advance(c.now + 1_000_000_000);
    for (i, e) in c.eps.iter().enumerate() {
        eprintln!(
            "{i}: {:?} in flight {} probing {}",
            e.stats(),
            e.total_in_flight(),
            e.probing_only()
        );
    }
    assert!(c.run(c.now + 10_000_000_000), "the run did not settle");
    assert_eq!(c.peer_up[0], vec![b], "task 0 never saw task 1 again");
    assert!(!c.eps[0].is_down(b) && !c.eps[1].is_down(a));
    check_counter(&c, 0, 1, &bumps);
    // New work in both directions succeeds.
    let before = (c.submitted[0], c.submitted[1]);
    for i in 0..50u64 {
        c.plan(0, bump(b));
        c.plan(0, write(b, i));
        c.plan(1, bump(a));
    }
    assert!(c.run(c.now + 10_000_000_000), "new work did not finish");
    assert_eq!(tally(&c, 0, before.0), (100, 0));
    assert_eq!(tally(&c, 1, before.1), (50, 0));
    assert_eq!(c.eps[0].stats().recoveries, 1);
}

#[test]
fn both_sides_of_a_partition_give_up_and_resynchronize() {
    let mut c = Cluster::new(2, cfg(), clean());
    let (a, b) = (c.tasks[0], c.tasks[1]);
    for i in 0..300u64 {
        c.plan(0, write(b, i));
        c.plan(1, write(a, i));
    }
    run_until_results(&mut c, 0, 20);
    // Cut the link both ways; both endpoints keep running.
    c.net.set_down(b, true);
    c.run(c.now + 3_000_000_000);
    assert_eq!(c.peer_down[0], vec![b]);
    assert_eq!(c.peer_down[1], vec![a]);
    // Both abandoned packets the other side may wait for.
    assert!(c.results[0].values().any(|r| *r == Err(Status::NodeDown)));
    assert!(c.results[1].values().any(|r| *r == Err(Status::NodeDown)));
    c.net.set_down(b, false);
    // The probes find each side again; each receives in the place of what
    // the other failed a filler, and nothing waits forever.
    c.advance(c.now + 1_000_000_000);
    assert!(c.run(c.now + 10_000_000_000), "never resynchronized");
    assert_eq!(c.peer_up[0], vec![b]);
    assert_eq!(c.peer_up[1], vec![a]);
    let before = (c.submitted[0], c.submitted[1]);
    let mut bumps = Vec::new();
    for i in 0..40u64 {
        bumps.push(c.submitted[0] + 2 * i as usize);
        c.plan(0, bump(b));
        c.plan(0, write(b, i));
        c.plan(1, write(a, i));
    }
    assert!(c.run(c.now + 10_000_000_000), "new work did not finish");
    assert_eq!(tally(&c, 0, before.0), (80, 0));
    assert_eq!(tally(&c, 1, before.1), (40, 0));
    assert_eq!(counter(&c, 1), 40);
    assert_eq!(c.eps[0].stats().recoveries, 1);
    assert_eq!(c.eps[1].stats().recoveries, 1);
}

#[test]
fn a_resumed_peer_is_probed_at_once() {
    let mut c = Cluster::new(2, cfg(), clean());
    let b = c.tasks[1];
    c.eps[0].declare_down(b);
    assert!(c.eps[0].is_down(b));
    c.eps[0].resume_peer(b);
    assert!(!c.eps[0].is_down(b));
    c.plan(0, bump(b));
    assert!(c.run(1_000_000_000));
    assert_eq!(tally(&c, 0, 0), (1, 0));
    assert_eq!(counter(&c, 1), 1);
}

#[test]
fn probes_of_a_dead_peer_back_off() {
    let mut c = Cluster::new(2, cfg(), clean());
    let b = c.tasks[1];
    c.plan(0, bump(b));
    c.kill(1);
    assert!(c.run(u64::MAX), "the run hung");
    assert_eq!(c.peer_down[0], vec![b]);
    let sent = c.eps[0].stats().packets_sent;
    // 60 s of virtual time: probes at 50, 100, 200, 400, 400, … ms.
    let until = c.now + 60_000_000_000;
    while let Some(t) = c.eps[0].poll_timeout().filter(|&t| t <= until) {
        c.now = t;
        c.eps[0].handle_timeout(t);
        let mut buf = Vec::new();
        while c.eps[0].poll_transmit(t, &mut buf).is_some() {}
    }
    let probes = c.eps[0].stats().packets_sent - sent;
    assert!((140..=160).contains(&probes), "{probes} probes in 60 s");
}

/// Regression (found by the endpoint fuzz target): an operation failed when
/// its peer was declared down, answered later by a NACK from the peer that
/// came back, completed twice.
#[test]
fn a_late_nack_of_an_operation_failed_while_down_is_not_a_second_completion() {
    let mut c = Cluster::new(2, cfg(), clean());
    let b = c.tasks[1];
    c.plan(
        0,
        Planned {
            dst: b,
            op: TestOp::Write {
                key: ro_key_of(b),
                addr: BASE,
                data: vec![1; 8],
                notify: None,
            },
            opts: OpOptions::default(),
        },
    );
    // The write reaches task 1 (50 µs), whose NACK is on its way back when
    // task 0 declares task 1 down.
    assert!(!c.run(70_000));
    c.eps[0].declare_down(b);
    // The harness panics on a second completion.
    assert!(c.run(c.now + 1_000_000_000));
    assert_eq!(c.results[0].get(&0), Some(&Err(Status::NodeDown)));
    assert_eq!(c.peer_up[0], vec![b]);
}
