use super::*;
use proptest::prelude::*;

fn task() -> impl Strategy<Value = TaskId> {
    (any::<u32>(), any::<u32>()).prop_map(|(j, r)| TaskId::new(j, r))
}

fn status() -> impl Strategy<Value = Status> {
    (0u8..=12).prop_map(|v| Status::from_u8(v).unwrap())
}

fn body() -> impl Strategy<Value = Body> {
    prop_oneof![
        proptest::option::of((any::<u64>(), any::<u64>(), any::<u64>())).prop_map(|n| {
            Body::Write {
                notify: n.map(|(key, addr, addend)| Notify { key, addr, addend }),
            }
        }),
        any::<u32>().prop_map(|len| Body::Read { len }),
        Just(Body::ReadReply),
        any::<u64>().prop_map(|operand| Body::Swap { operand }),
        (any::<u64>(), any::<u64>()).prop_map(|(expected, new)| Body::Cas { expected, new }),
        any::<u64>().prop_map(|operand| Body::FetchAdd { operand }),
        any::<u64>().prop_map(|old| Body::AtomicReply { old }),
        Just(Body::Fifo),
        any::<u32>().prop_map(|handler| Body::Signal { handler }),
        (any::<u32>(), any::<u32>(), task(), 1u8..=255).prop_map(
            |(group, mcast, origin, arity)| {
                Body::Multicast {
                    group,
                    mcast,
                    origin,
                    arity,
                }
            }
        ),
        (any::<u32>(), any::<u32>(), task(), any::<u32>()).prop_map(
            |(group, mcast, origin, count)| Body::McastAck {
                group,
                mcast,
                origin,
                count
            }
        ),
        Just(Body::Status),
        Just(Body::Ack),
    ]
}

#[derive(Debug, Clone)]
struct Owned {
    src: TaskId,
    dst: TaskId,
    epoch: u32,
    seq: u32,
    ack: Option<u32>,
    op: u32,
    flags: Flags,
    status: Status,
    key: u64,
    addr: u64,
    frag: Frag,
    body: Body,
    payload: Vec<u8>,
}

impl Owned {
    fn packet(&self) -> Packet<'_> {
        Packet {
            src: self.src,
            dst: self.dst,
            epoch: self.epoch,
            seq: self.seq,
            ack: self.ack,
            op: self.op,
            flags: self.flags,
            status: self.status,
            key: self.key,
            addr: self.addr,
            frag: self.frag,
            body: self.body,
            payload: &self.payload,
        }
    }
}

fn packet() -> impl Strategy<Value = Owned> {
    (
        (task(), task(), any::<u32>(), any::<u32>()),
        (proptest::option::of(any::<u32>()), any::<u32>()),
        (any::<bool>(), any::<bool>(), status()),
        (any::<u64>(), any::<u64>()),
        (1u16..=u16::MAX).prop_flat_map(|count| (0..count, Just(count))),
        body(),
        proptest::collection::vec(any::<u8>(), 0..1500),
    )
        .prop_map(
            |(
                (src, dst, epoch, seq),
                (ack, op),
                (nofc, sr, status),
                (key, addr),
                (index, count),
                body,
                mut payload,
            )| {
                if body == Body::Ack {
                    let n = (payload.len() / 8).min(MAX_SACK_BLOCKS);
                    payload.truncate(n * 8);
                }
                Owned {
                    src,
                    dst,
                    epoch,
                    seq,
                    ack,
                    op,
                    flags: Flags {
                        nofc,
                        status_return: sr,
                    },
                    status,
                    key,
                    addr,
                    frag: Frag { index, count },
                    body,
                    payload,
                }
            },
        )
}

proptest! {
    #[test]
    fn parse_emit_roundtrip(o in packet()) {
        let p = o.packet();
        let bytes = p.to_vec().unwrap();
        prop_assert_eq!(bytes.len(), p.buffer_len());
        let q = Packet::parse(&bytes).unwrap();
        prop_assert_eq!(q, p);
    }

    #[test]
    fn parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let _ = Packet::parse(&bytes);
        let _ = datagram_len(&bytes);
    }

    /// A receiver cuts coalesced datagrams by the length the first one
    /// declares: every packet declares its own, plus the tag when sealed.
    #[test]
    fn every_packet_declares_its_length(o in packet(), sealed in any::<bool>(), more in 0usize..100) {
        let mut bytes = o.packet().to_vec().unwrap();
        let len = bytes.len();
        prop_assert_eq!(datagram_len(&bytes), Some(len));
        if sealed {
            bytes[2] = Format::Authenticated as u8;
            prop_assert_eq!(datagram_len(&bytes), Some(len + SEAL_TAG_LEN));
            bytes[2] = Format::Encrypted as u8;
            prop_assert_eq!(datagram_len(&bytes), Some(len + SEAL_TAG_LEN));
        }
        // What follows the first datagram does not change its length.
        bytes.resize(bytes.len() + more, 0xa5);
        prop_assert!(datagram_len(&bytes).is_some());
        prop_assert!(datagram_len(&bytes[..HEADER_LEN - 1]).is_none());
    }

    #[test]
    fn any_single_bit_flip_is_caught(o in packet(), bit in any::<prop::sample::Index>()) {
        let mut bytes = o.packet().to_vec().unwrap();
        let i = bit.index(bytes.len() * 8);
        bytes[i / 8] ^= 1 << (i % 8);
        prop_assert!(Packet::parse(&bytes).is_err());
    }

    #[test]
    fn truncation_and_extension_are_rejected(o in packet(), cut in 1usize..64) {
        let bytes = o.packet().to_vec().unwrap();
        let short = &bytes[..bytes.len().saturating_sub(cut)];
        prop_assert!(Packet::parse(short).is_err());
        let mut long = bytes.clone();
        long.push(0);
        prop_assert_eq!(Packet::parse(&long), Err(ParseError::Trailing));
    }
}

fn sample() -> Owned {
    Owned {
        src: TaskId::new(1, 0),
        dst: TaskId::new(1, 1),
        epoch: 7,
        seq: 42,
        ack: Some(17),
        op: 42,
        flags: Flags::default(),
        status: Status::Ok,
        key: 0x0123_4567_89ab_cdef,
        addr: 0x7f00_0000_1000,
        frag: Frag::SINGLE,
        body: Body::Write { notify: None },
        payload: vec![1, 2, 3, 4, 5, 6, 7, 8],
    }
}

#[test]
fn header_is_64_bytes_and_fields_sit_where_documented() {
    let b = sample().packet().to_vec().unwrap();
    assert_eq!(b.len(), 64 + 8);
    assert_eq!(&b[0..4], &[0x53, 0x53, 1, Kind::Write as u8]);
    assert_eq!(b[4], FLAG_ACK);
    assert_eq!(&b[6..8], &[0, 8]);
    assert_eq!(&b[28..32], &42u32.to_be_bytes());
    assert_eq!(&b[32..36], &17u32.to_be_bytes());
    assert_eq!(&b[40..48], &0x0123_4567_89ab_cdefu64.to_be_bytes());
    assert_eq!(&b[56..60], &[0, 0, 0, 1]);
    assert_eq!(&b[64..], &[1, 2, 3, 4, 5, 6, 7, 8]);
}

#[test]
fn reserved_flags_and_fields_are_rejected() {
    let mut b = sample().packet().to_vec().unwrap();
    b[4] |= 0x80;
    let c = checksum(&b);
    b[60..64].copy_from_slice(&c.to_be_bytes());
    assert_eq!(Packet::parse(&b), Err(ParseError::BadFlags(0x81)));
}

#[test]
fn emit_rejects_what_parse_would() {
    let mut o = sample();
    o.frag = Frag { index: 1, count: 1 };
    assert_eq!(o.packet().to_vec(), Err(EmitError::Invalid));
    let mut o = sample();
    o.body = Body::Ack;
    o.payload = vec![0; 7];
    assert_eq!(o.packet().to_vec(), Err(EmitError::Invalid));
    let mut o = sample();
    o.payload = vec![0; 70_000];
    assert_eq!(o.packet().to_vec(), Err(EmitError::PayloadTooLarge));
    let mut small = [0u8; 10];
    assert_eq!(
        sample().packet().emit(&mut small),
        Err(EmitError::BufferTooSmall)
    );
}

#[test]
fn sack_blocks_roundtrip() {
    let mut payload = Vec::new();
    encode_sack(&[(5, 9), (12, 13)], &mut payload);
    let mut o = sample();
    o.body = Body::Ack;
    o.payload = payload;
    let b = o.packet().to_vec().unwrap();
    let p = Packet::parse(&b).unwrap();
    assert_eq!(p.sack_blocks().collect::<Vec<_>>(), vec![(5, 9), (12, 13)]);
}

#[test]
fn status_combine_prefers_errors() {
    assert_eq!(Status::Ok.combine(Status::Ok), Status::Ok);
    assert_eq!(Status::Ok.combine(Status::NodeDown), Status::NodeDown);
    assert_eq!(Status::NodeDown.combine(Status::BadKey), Status::BadKey);
}

#[test]
fn patch_ack_keeps_packet_valid() {
    let mut o = sample();
    o.ack = None;
    let mut b = o.packet().to_vec().unwrap();
    assert!(patch_ack(&mut b, Some(99)));
    assert_eq!(Packet::parse(&b).unwrap().ack, Some(99));
    assert!(patch_ack(&mut b, None));
    assert_eq!(Packet::parse(&b).unwrap().ack, None);
    assert!(!patch_ack(&mut [0u8; 3], None));
}
