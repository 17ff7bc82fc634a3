//! The endpoint's timers cost what is due, not what is idle: with ten
//! thousand quiet peers and one busy one, a timeout visits only the busy
//! channel, and the next deadline is the busy channel's.

use sss_proto::{Config, Endpoint, Op, OpOptions, Outcome, Packet, Target, TaskId, Time};

struct Sink;

impl Target for Sink {
    fn apply(&mut self, _: &Packet<'_>) -> Outcome {
        Outcome::Done
    }
}

const IDLE: u32 = 10_000;

fn write() -> Op<'static> {
    Op::Write {
        key: 1,
        addr: 0,
        data: &[1],
        notify: None,
    }
}

/// Drains every datagram of `e`, dropping them; returns how many.
fn drain(e: &mut Endpoint, now: Time) -> usize {
    let mut out = Vec::new();
    let mut n = 0;
    while e.poll_transmit(now, &mut out).is_some() {
        n += 1;
    }
    n
}

#[test]
fn a_timeout_visits_only_the_channels_due() {
    let cfg = Config::default();
    let me = TaskId::new(1, 0);
    let mut a = Endpoint::new(me, cfg.clone());
    let mut out = Vec::new();

    // Ten thousand peers each send one WRITE: a channel each, and a
    // delayed ack each.
    for r in 1..=IDLE {
        let mut b = Endpoint::new(TaskId::new(1, r), cfg.clone());
        b.submit(0, me, write(), OpOptions::default()).unwrap();
        assert_eq!(b.poll_transmit(0, &mut out), Some(me));
        a.handle_datagram(0, &out, &mut Sink);
    }
    assert_eq!(a.channels(), IDLE as usize);
    assert_eq!(a.poll_timeout(), Some(cfg.ack_delay));
    a.handle_timeout(cfg.ack_delay);
    assert_eq!(a.stats().timer_visits, u64::from(IDLE));
    assert_eq!(drain(&mut a, cfg.ack_delay), IDLE as usize);
    // Acked, owing nothing: no deadline is left.
    assert_eq!(a.poll_timeout(), None);

    // One busy peer that never answers: each timeout resends its packet
    // and visits its channel alone.
    let busy = TaskId::new(1, IDLE + 1);
    let mut now = cfg.ack_delay;
    a.submit(now, busy, write(), OpOptions::default()).unwrap();
    assert_eq!(drain(&mut a, now), 1);
    let before = a.stats().timer_visits;
    for k in 1..=5u64 {
        let due = a.poll_timeout().expect("the busy channel's timer");
        assert!(due > now);
        now = due;
        a.handle_timeout(now);
        assert_eq!(a.stats().timer_visits, before + k);
        assert_eq!(drain(&mut a, now), 1);
        assert_eq!(a.stats().retransmissions, k);
        assert_eq!(a.stats().timeouts, k);
    }
    assert_eq!(a.channels(), IDLE as usize + 1);

    // Nothing is due before the next deadline: a call then visits nothing.
    let visits = a.stats().timer_visits;
    let next = a.poll_timeout().unwrap();
    a.handle_timeout(next - 1);
    assert_eq!(a.stats().timer_visits, visits);
    assert_eq!(drain(&mut a, next - 1), 0);
}
