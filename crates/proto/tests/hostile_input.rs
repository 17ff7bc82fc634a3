//! The endpoint must survive any well-formed packet a peer can send:
//! acknowledgements for data never sent, selective acks out of range,
//! replies to nothing, sequence numbers anywhere, absurd READ lengths.

mod support;

use proptest::prelude::*;
use sss_proto::{Body, Config, Endpoint, Frag, Op, OpOptions, Packet, Status, TaskId};
use sss_wire::{encode_sack, Flags, Notify};
use support::{key_of, Mem, BASE};

fn body() -> impl Strategy<Value = Body> {
    prop_oneof![
        any::<bool>().prop_map(|n| Body::Write {
            notify: n.then_some(Notify {
                key: 1,
                addr: BASE,
                addend: 1
            })
        }),
        any::<u32>().prop_map(|len| Body::Read { len }),
        Just(Body::ReadReply),
        any::<u64>().prop_map(|operand| Body::Swap { operand }),
        any::<u64>().prop_map(|old| Body::AtomicReply { old }),
        Just(Body::Fifo),
        (0u32..6).prop_map(|handler| Body::Signal { handler }),
        (0u32..3, any::<u32>(), 0u32..4, 1u8..4).prop_map(|(group, mcast, r, arity)| {
            Body::Multicast {
                group,
                mcast,
                origin: TaskId::new(7, r),
                arity,
            }
        }),
        (0u32..3, any::<u32>(), 0u32..4, any::<u32>()).prop_map(|(group, mcast, r, count)| {
            Body::McastAck {
                group,
                mcast,
                origin: TaskId::new(7, r),
                count,
            }
        }),
        Just(Body::Status),
        Just(Body::Ack),
    ]
}

#[derive(Debug, Clone)]
struct Input {
    src: u32,
    epoch: u32,
    seq: u32,
    ack: Option<u32>,
    op: u32,
    nofc: bool,
    sr: bool,
    status: u8,
    addr_off: u64,
    frag: (u16, u16),
    body: Body,
    payload: Vec<u8>,
    sack: Vec<(u32, u32)>,
}

fn input() -> impl Strategy<Value = Input> {
    (
        (1u32..4, 1u32..3, 0u32..40, proptest::option::of(0u32..40)),
        (0u32..40, any::<bool>(), any::<bool>(), 0u8..=12),
        (0u64..5000, (1u16..4).prop_flat_map(|c| (0..c, Just(c)))),
        body(),
        proptest::collection::vec(any::<u8>(), 0..64),
        proptest::collection::vec((0u32..50, 0u32..50), 0..4),
    )
        .prop_map(
            |(
                (src, epoch, seq, ack),
                (op, nofc, sr, status),
                (addr_off, frag),
                body,
                payload,
                sack,
            )| {
                Input {
                    src,
                    epoch,
                    seq,
                    ack,
                    op,
                    nofc,
                    sr,
                    status,
                    addr_off,
                    frag,
                    body,
                    payload,
                    sack,
                }
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]
    #[test]
    fn endpoint_survives_any_well_formed_packet(inputs in proptest::collection::vec(input(), 1..80)) {
        let me = TaskId::new(7, 0);
        let mut ep = Endpoint::new(me, Config { window: 16, ..Config::default() });
        ep.add_group(1, (0..4).map(|r| TaskId::new(7, r)).collect());
        let mut mem = Mem::new(me);
        let mut out = Vec::new();
        let mut now = 0;
        for (i, inp) in inputs.iter().enumerate() {
            now += 1_000_000;
            // Keep some of our own traffic outstanding toward the peers.
            let peer = TaskId::new(7, 1 + (i as u32 % 3));
            let _ = ep.submit(now, peer, Op::Write { key: key_of(peer), addr: BASE, data: &[1; 3000], notify: None }, OpOptions { status_return: true, nofc: false });
            let _ = ep.submit(now, peer, Op::Read { key: key_of(peer), addr: BASE, len: 2000 }, OpOptions::default());
            let payload = if inp.body == Body::Ack {
                let mut p = Vec::new();
                encode_sack(&inp.sack, &mut p);
                p
            } else {
                inp.payload.clone()
            };
            let p = Packet {
                src: TaskId::new(7, inp.src),
                dst: me,
                epoch: inp.epoch,
                seq: inp.seq,
                ack: inp.ack,
                op: inp.op,
                flags: Flags { nofc: inp.nofc, status_return: inp.sr },
                status: Status::from_u8(inp.status).unwrap(),
                key: key_of(me),
                addr: BASE + inp.addr_off,
                frag: Frag { index: inp.frag.0, count: inp.frag.1 },
                body: inp.body,
                payload: &payload,
            };
            let bytes = p.to_vec().unwrap();
            ep.handle_datagram(now, &bytes, &mut mem);
            while ep.poll_transmit(now, &mut out).is_some() {
                prop_assert!(Packet::parse(&out).is_ok(), "emitted an invalid packet");
            }
            while ep.poll_event().is_some() {}
            if ep.poll_timeout().is_some_and(|t| t <= now) {
                ep.handle_timeout(now);
            }
        }
    }
}

/// A peer that sends the fragments of a FIFO message out of place, or
/// more bytes than the limit, gets it refused: nothing reaches the queue.
#[test]
fn fifo_fragments_out_of_place_or_too_many_are_refused() {
    let me = TaskId::new(7, 0);
    let peer = TaskId::new(7, 1);
    let max = 4000;
    let mut ep = Endpoint::new(
        me,
        Config {
            max_fifo: max,
            ..Config::default()
        },
    );
    let mut mem = Mem::new(me);
    let mut seq = 1;
    let mut send =
        |ep: &mut Endpoint, mem: &mut Mem, op: u32, index: u16, count: u16, len: usize| {
            let payload = vec![op as u8; len];
            let p = Packet {
                src: peer,
                dst: me,
                epoch: 1,
                seq,
                ack: None,
                op,
                flags: Flags::default(),
                status: Status::Ok,
                key: key_of(me),
                addr: BASE + 64,
                frag: Frag { index, count },
                body: Body::Fifo,
                payload: &payload,
            };
            seq += 1;
            ep.handle_datagram(0, &p.to_vec().unwrap(), mem);
        };
    // Fragment 1 of 3 missing: spoilt.
    send(&mut ep, &mut mem, 1, 0, 3, 1000);
    send(&mut ep, &mut mem, 1, 2, 3, 1000);
    // Four fragments of 1400 bytes against a limit of 4000: spoilt.
    for i in 0..4 {
        send(&mut ep, &mut mem, 2, i, 4, 1400);
    }
    // A good one after them still arrives.
    send(&mut ep, &mut mem, 3, 0, 2, 1400);
    send(&mut ep, &mut mem, 3, 1, 2, 100);
    let q = &mem.fifos[&(BASE + 64)];
    assert_eq!(q.len(), 1);
    assert_eq!(q[0].len(), 1500);
    assert!(q[0].iter().all(|&b| b == 3));
    assert_eq!(ep.stats().rejected, 2);
}
