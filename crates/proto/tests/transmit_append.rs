//! `poll_transmit_append` builds datagrams in place at the end of a
//! caller's buffer (for GSO batches): the same bytes `poll_transmit`
//! would give, back to back, and the receiver applies them all.

mod support;

use sss_proto::{Config, Endpoint, Op, OpOptions, TaskId};
use support::{key_of, Mem, BASE};

#[test]
fn appended_datagrams_equal_the_ones_polled_one_by_one() {
    let (a, b) = (TaskId::new(3, 0), TaskId::new(3, 1));
    let data = vec![0x5a; 5000];
    let op = Op::Write {
        key: key_of(b),
        addr: BASE,
        data: &data,
        notify: None,
    };
    // The same stream from two identical senders: one polled, one appended.
    let mut one = Endpoint::new(a, Config::default());
    let mut two = Endpoint::new(a, Config::default());
    one.submit(0, b, op, OpOptions::default()).unwrap();
    two.submit(0, b, op, OpOptions::default()).unwrap();
    let mut singles = Vec::new();
    let mut out = Vec::new();
    while let Some(dst) = one.poll_transmit(0, &mut out) {
        assert_eq!(dst, b);
        singles.push(out.clone());
    }
    assert!(singles.len() > 1, "a 5000 B write is several packets");
    let mut batch = vec![0xee; 3]; // what was there stays
    let mut lens = Vec::new();
    loop {
        let start = batch.len();
        let Some(dst) = two.poll_transmit_append(0, &mut batch) else {
            break;
        };
        assert_eq!(dst, b);
        lens.push(batch.len() - start);
    }
    assert_eq!(&batch[..3], &[0xee; 3]);
    let mut at = 3;
    let mut rx = Endpoint::new(b, Config::default());
    let mut mem = Mem::new(b);
    for (single, len) in singles.iter().zip(&lens) {
        assert_eq!(&batch[at..at + len], &single[..]);
        rx.handle_datagram(1, &batch[at..at + len], &mut mem);
        at += len;
    }
    assert_eq!(at, batch.len());
    assert_eq!(lens.len(), singles.len());
    assert_eq!(
        rx.stats().applied,
        lens.len() as u64,
        "every fragment applied"
    );
    assert_eq!(one.stats().bytes_sent, two.stats().bytes_sent);
}
