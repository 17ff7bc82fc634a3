//! Bugs the `endpoint` fuzz target (fuzz/) found, as plain tests.

mod support;

use sss_proto::{Config, Endpoint, Event, Op, OpOptions, TaskId};
use support::{Mem, BASE};

/// A duplicated NACK of a no-flow-control operation that asked for no
/// reply was reported twice.
#[test]
fn a_duplicated_nofc_nack_completes_the_operation_once() {
    let (a, b) = (TaskId::new(7, 0), TaskId::new(7, 1));
    let mut ea = Endpoint::new(a, Config::default());
    let mut eb = Endpoint::new(b, Config::default());
    let (mut ma, mut mb) = (Mem::new(a), Mem::new(b));
    let bad_key = 0xbad;
    let op = Op::Write {
        key: bad_key,
        addr: BASE,
        data: b"x",
        notify: None,
    };
    let opts = OpOptions {
        nofc: true,
        status_return: false,
    };
    ea.submit(0, b, op, opts).unwrap();
    let mut out = Vec::new();
    assert_eq!(ea.poll_transmit(0, &mut out), Some(b));
    eb.handle_datagram(1, &out, &mut mb);
    assert_eq!(eb.poll_transmit(1, &mut out), Some(a));
    // The network delivers the NACK twice.
    ea.handle_datagram(2, &out, &mut ma);
    ea.handle_datagram(3, &out, &mut ma);
    let mut completions = 0;
    while let Some(ev) = ea.poll_event() {
        if let Event::Completed { result, .. } = ev {
            assert!(result.is_err());
            completions += 1;
        }
    }
    assert_eq!(completions, 1);
}
