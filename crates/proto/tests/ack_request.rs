//! A fence asks the peer for its ACK at once (`Endpoint::request_ack`):
//! without it the ACK of a lone WRITE waits for the peer's ack delay,
//! and so does every fence after it.

mod support;

use sss_proto::{Config, Endpoint, Op, OpOptions, TaskId};
use support::{key_of, Mem, BASE};

/// A WRITE into task (3, 1)'s segment.
fn write(data: &[u8]) -> Op<'_> {
    Op::Write {
        key: key_of(TaskId::new(3, 1)),
        addr: BASE,
        data,
        notify: None,
    }
}

/// Moves every datagram both ways at time `now` (no timer runs); returns
/// the datagrams each side sent.
fn exchange(
    ea: &mut Endpoint,
    eb: &mut Endpoint,
    ma: &mut Mem,
    mb: &mut Mem,
    now: u64,
) -> (u64, u64) {
    let (mut sa, mut sb) = (0, 0);
    let mut buf = Vec::new();
    loop {
        let mut moved = false;
        while ea.poll_transmit(now, &mut buf).is_some() {
            eb.handle_datagram(now, &buf, mb);
            sa += 1;
            moved = true;
        }
        while eb.poll_transmit(now, &mut buf).is_some() {
            ea.handle_datagram(now, &buf, ma);
            sb += 1;
            moved = true;
        }
        if !moved {
            return (sa, sb);
        }
    }
}

fn pair() -> (Endpoint, Endpoint, Mem, Mem, TaskId) {
    let (a, b) = (TaskId::new(3, 0), TaskId::new(3, 1));
    (
        Endpoint::new(a, Config::default()),
        Endpoint::new(b, Config::default()),
        Mem::new(a),
        Mem::new(b),
        b,
    )
}

#[test]
fn a_lone_write_is_acknowledged_only_after_the_ack_delay() {
    let (mut ea, mut eb, mut ma, mut mb, b) = pair();
    ea.submit(0, b, write(&[1; 8]), OpOptions::default())
        .unwrap();
    assert_eq!(exchange(&mut ea, &mut eb, &mut ma, &mut mb, 0), (1, 0));
    assert_eq!(ea.in_flight(b), 1, "the ACK is held for the ack delay");
}

#[test]
fn a_requested_ack_comes_at_once_and_once() {
    let (mut ea, mut eb, mut ma, mut mb, b) = pair();
    ea.submit(0, b, write(&[1; 8]), OpOptions::default())
        .unwrap();
    assert!(ea.request_ack(b));
    // The WRITE, the request for an ACK; the ACK back.
    assert_eq!(exchange(&mut ea, &mut eb, &mut ma, &mut mb, 0), (2, 1));
    assert_eq!(ea.in_flight(b), 0);
    // Nothing unacknowledged: no request.
    assert!(!ea.request_ack(b));
    assert_eq!(exchange(&mut ea, &mut eb, &mut ma, &mut mb, 1), (0, 0));
    // Later WRITEs, not waited for, ask for nothing.
    ea.submit(2, b, write(&[2; 8]), OpOptions::default())
        .unwrap();
    assert_eq!(exchange(&mut ea, &mut eb, &mut ma, &mut mb, 2), (1, 0));
    assert_eq!(ea.in_flight(b), 1);
}

#[test]
fn a_request_before_a_burst_goes_after_its_last_packet() {
    let (mut ea, mut eb, mut ma, mut mb, b) = pair();
    for i in 0..5u8 {
        ea.submit(0, b, write(&[i; 8]), OpOptions::default())
            .unwrap();
    }
    assert!(ea.request_ack(b));
    // Five WRITEs, one request (not one per WRITE); one ACK.
    assert_eq!(exchange(&mut ea, &mut eb, &mut ma, &mut mb, 0), (6, 1));
    assert_eq!(ea.in_flight(b), 0);
}

#[test]
fn a_request_waits_for_what_the_window_holds_back() {
    let cfg = Config {
        window: 4,
        ..Config::default()
    };
    let (a, b) = (TaskId::new(3, 0), TaskId::new(3, 1));
    let (mut ea, mut eb) = (Endpoint::new(a, cfg.clone()), Endpoint::new(b, cfg));
    let (mut ma, mut mb) = (Mem::new(a), Mem::new(b));
    for i in 0..10u8 {
        ea.submit(0, b, write(&[i; 8]), OpOptions::default())
            .unwrap();
    }
    assert!(ea.request_ack(b));
    // Every window's worth is asked for as soon as it went, so the whole
    // burst is acknowledged without any timer.
    exchange(&mut ea, &mut eb, &mut ma, &mut mb, 0);
    assert_eq!(ea.in_flight(b), 0);
}

#[test]
fn unknown_peers_and_idle_channels_ask_for_nothing() {
    let (mut ea, _, _, _, b) = pair();
    assert!(!ea.request_ack(b));
    assert!(!ea.request_ack(TaskId::new(9, 9)));
    assert!(!ea.request_acks());
    let mut buf = Vec::new();
    assert_eq!(ea.poll_transmit(0, &mut buf), None);
}
