//! QUIET (nothing in flight toward a peer) must not come before the NACK
//! of a request that asked for no reply: such a NACK is the only way its
//! failure is ever reported.

mod support;

use sss_proto::{Config, Endpoint, Event, Op, OpOptions, Status, TaskId};
use support::{Mem, BASE};

/// Regression: the NACK was lost, a duplicate of the request made the
/// receiver send a bare ACK, and that ACK emptied the sender's view of
/// what was in flight: QUIET returned OK and the failure vanished.
#[test]
fn a_lost_nack_keeps_its_request_in_flight_until_it_arrives() {
    let (a, b) = (TaskId::new(7, 0), TaskId::new(7, 1));
    let mut ea = Endpoint::new(a, Config::default());
    let mut eb = Endpoint::new(b, Config::default());
    let (mut ma, mut mb) = (Mem::new(a), Mem::new(b));
    let op = Op::Write {
        key: 0xbad,
        addr: BASE,
        data: b"x",
        notify: None,
    };
    ea.submit(0, b, op, OpOptions::default()).unwrap();
    let mut req = Vec::new();
    assert_eq!(ea.poll_transmit(0, &mut req), Some(b));
    // The receiver answers with its NACK, which is lost; then a duplicate
    // of the request arrives and it answers that with a bare ACK.
    eb.handle_datagram(1, &req, &mut mb);
    let mut nack = Vec::new();
    assert_eq!(eb.poll_transmit(1, &mut nack), Some(a));
    let p = sss_wire::Packet::parse(&nack).unwrap();
    assert_eq!((p.body, p.status), (sss_wire::Body::Status, Status::BadKey));
    eb.handle_datagram(2, &req, &mut mb);
    let mut ack = Vec::new();
    assert_eq!(eb.poll_transmit(2, &mut ack), Some(a));
    assert_eq!(
        sss_wire::Packet::parse(&ack).unwrap().body,
        sss_wire::Body::Ack
    );
    let acks = [ack];
    let nack = [nack];
    ea.handle_datagram(4, &acks[0], &mut ma);
    assert!(
        ea.in_flight(b) > 0,
        "the request counts as done while its NACK is still lost"
    );
    ea.handle_datagram(5, &nack[0], &mut ma);
    let mut got = Vec::new();
    while let Some(ev) = ea.poll_event() {
        if let Event::Completed { result, .. } = ev {
            got.push(result);
        }
    }
    assert_eq!(got, vec![Err(Status::BadKey)]);
    assert_eq!(ea.in_flight(b), 0);
}
