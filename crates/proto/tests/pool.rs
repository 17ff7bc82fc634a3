//! Large copies reuse pooled buffers: a sequence of 256 KiB READs is
//! answered from one buffer the server fills again (its fragments share
//! it), and a sequence of 128 KiB WRITEs is copied into one buffer the
//! writer fills again; the data stays right.

mod support;

use sss_netsim::NetConfig;
use sss_proto::{Completion, Config, OpOptions};
use support::{key_of, Cluster, Planned, TestOp, BASE};

const ROUNDS: usize = 10;

fn cluster() -> Cluster {
    let net = NetConfig {
        mtu: 65535,
        ..NetConfig::default()
    };
    Cluster::new(2, Config::default(), net)
}

#[test]
fn read_replies_and_writes_fill_pooled_buffers_again() {
    let mut c = cluster();
    let (a, b) = (c.tasks[0], c.tasks[1]);
    let len = 256 << 10;
    for (i, x) in c.mems[1].seg[..len].iter_mut().enumerate() {
        *x = (i * 7 % 251) as u8;
    }
    for _ in 0..ROUNDS {
        c.plan(
            0,
            Planned {
                dst: b,
                op: TestOp::Read {
                    key: key_of(b),
                    addr: BASE,
                    len: len as u32,
                },
                opts: OpOptions::default(),
            },
        );
        assert!(c.run(u64::MAX));
    }
    assert_eq!(c.results[0].len(), ROUNDS);
    for r in c.results[0].values() {
        match r {
            Ok(Completion::Data(d)) => {
                assert_eq!(d.len(), len);
                assert!(d.iter().enumerate().all(|(i, &x)| x == (i * 7 % 251) as u8));
            }
            other => panic!("{other:?}"),
        }
    }
    // The first reply takes a buffer; every later one fills it again.
    assert_eq!(c.eps[1].stats().pooled_reuses, ROUNDS as u64 - 1);

    let wlen = 128 << 10;
    for round in 0..ROUNDS {
        c.plan(
            1,
            Planned {
                dst: a,
                op: TestOp::Write {
                    key: key_of(a),
                    addr: BASE,
                    data: vec![round as u8 + 1; wlen],
                    notify: None,
                },
                opts: OpOptions::default(),
            },
        );
        assert!(c.run(u64::MAX));
        assert!(c.mems[0].seg[..wlen].iter().all(|&x| x == round as u8 + 1));
    }
    assert_eq!(
        c.eps[1].stats().pooled_reuses,
        2 * (ROUNDS as u64 - 1),
        "each WRITE after the first fills the same buffer again"
    );
}
