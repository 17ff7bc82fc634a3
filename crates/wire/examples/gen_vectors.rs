//! Writes the MBCF v1 test vectors (`testdata/vectors-v1.json`) to stdout.
//!
//! ```text
//! cargo run -p sss-wire --example gen_vectors --features serde \
//!     > crates/wire/testdata/vectors-v1.json
//! ```
//!
//! Every valid vector is emitted by [`Packet::emit`] and parsed back before
//! it is written; every invalid one is checked to fail with the error it is
//! named for. The schema is described in `testdata/README.md`; `tests/vectors.rs`
//! checks the committed file against the code without regenerating it.

use serde::Serialize;
use serde_json::{json, Value};
use sss_wire::{
    encode_sack, Body, Flags, Frag, Kind, Notify, Packet, ParseError, Status, TaskId, HEADER_LEN,
    MAX_SACK_BLOCKS,
};

/// One entry of the vector file. `decoded` is set for valid vectors,
/// `error` for invalid ones.
#[derive(Serialize)]
struct Vector {
    name: String,
    hex: String,
    valid: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    decoded: Option<Decoded>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'static str>,
}

/// Every header field in wire order, then the extension and the payload.
/// Kind, status, task ids and fragment use the crate's serde names.
#[derive(Serialize)]
struct Decoded {
    magic: u16,
    version: u8,
    kind: Kind,
    kind_code: u8,
    flags: FlagBits,
    status: Status,
    status_code: u8,
    payload_len: u16,
    src: TaskId,
    dst: TaskId,
    epoch: u32,
    seq: u32,
    ack: Option<u32>,
    op: u32,
    key: String,
    addr: String,
    frag: Frag,
    checksum: u32,
    body: Value,
    payload: String,
}

/// The flags byte and its bits spelled out.
#[derive(Serialize)]
struct FlagBits {
    raw: u8,
    ack: bool,
    nofc: bool,
    status_return: bool,
    notify: bool,
}

/// 64-bit values travel as decimal strings: JSON parsers that read numbers
/// as doubles (JavaScript's) would round anything above 2^53.
fn u64s(v: u64) -> Value {
    Value::String(v.to_string())
}

fn task(t: TaskId) -> Value {
    json!({ "job": t.job, "rank": t.rank })
}

/// The extension fields of a body (plus the sack blocks of an ACK, which
/// live in the payload but are what a client checks).
fn body_json(p: &Packet<'_>) -> Value {
    match p.body {
        Body::Write { notify } => json!({
            "notify": notify.map(|n| json!({
                "key": u64s(n.key),
                "addr": u64s(n.addr),
                "addend": u64s(n.addend),
            })),
        }),
        Body::Read { len } => json!({ "len": len }),
        Body::Swap { operand } | Body::FetchAdd { operand } => json!({ "operand": u64s(operand) }),
        Body::Cas { expected, new } => json!({ "expected": u64s(expected), "new": u64s(new) }),
        Body::AtomicReply { old } => json!({ "old": u64s(old) }),
        Body::Signal { handler } => json!({ "handler": handler }),
        Body::Multicast {
            group,
            mcast,
            origin,
            arity,
        } => json!({ "group": group, "mcast": mcast, "origin": task(origin), "arity": arity }),
        Body::McastAck {
            group,
            mcast,
            origin,
            count,
        } => json!({ "group": group, "mcast": mcast, "origin": task(origin), "count": count }),
        Body::Ack => json!({
            "sack_blocks": p.sack_blocks().map(|(s, e)| json!([s, e])).collect::<Vec<_>>(),
        }),
        Body::ReadReply | Body::Fifo | Body::Status => json!({}),
    }
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn decoded(bytes: &[u8], p: &Packet<'_>) -> Decoded {
    let raw = bytes[4];
    Decoded {
        magic: be16(bytes, 0),
        version: bytes[2],
        kind: p.body.kind(),
        kind_code: bytes[3],
        flags: FlagBits {
            raw,
            ack: raw & 0x01 != 0,
            nofc: raw & 0x02 != 0,
            status_return: raw & 0x04 != 0,
            notify: raw & 0x08 != 0,
        },
        status: p.status,
        status_code: bytes[5],
        payload_len: be16(bytes, 6),
        src: p.src,
        dst: p.dst,
        epoch: p.epoch,
        seq: p.seq,
        ack: p.ack,
        op: p.op,
        key: p.key.to_string(),
        addr: p.addr.to_string(),
        frag: p.frag,
        checksum: be32(bytes, 60),
        body: body_json(p),
        payload: hex::encode(p.payload),
    }
}

/// An owned packet description, so vectors can be built by small edits of
/// a base packet.
#[derive(Clone)]
struct Spec {
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

impl Spec {
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

    fn bytes(&self) -> Vec<u8> {
        self.packet().to_vec().expect("vector packet must emit")
    }
}

/// A request from task 3.1 to task 3.2 with values large enough that a
/// byte-order or width mistake shows.
fn base(body: Body) -> Spec {
    Spec {
        src: TaskId::new(3, 1),
        dst: TaskId::new(3, 2),
        epoch: 0x0000_0102,
        seq: 1000,
        ack: None,
        op: 1000,
        flags: Flags::default(),
        status: Status::Ok,
        key: 0xfedc_ba98_7654_3210,
        addr: 0x0000_7f12_3456_7000,
        frag: Frag::SINGLE,
        body,
        payload: Vec::new(),
    }
}

/// A reply: the base packet with source and destination swapped.
fn reply(body: Body) -> Spec {
    let mut s = base(body);
    std::mem::swap(&mut s.src, &mut s.dst);
    s.seq = 500;
    s
}

fn valid(name: &str, s: &Spec) -> Vector {
    let bytes = s.bytes();
    let p = Packet::parse(&bytes).expect("vector packet must parse");
    assert_eq!(p, s.packet(), "{name}: parse(emit(p)) != p");
    Vector {
        name: name.to_string(),
        hex: hex::encode(&bytes),
        valid: true,
        decoded: Some(decoded(&bytes, &p)),
        error: None,
    }
}

/// The variant name of a parse error, as written in the file. The match
/// is exhaustive so a new variant cannot be forgotten here.
fn variant(e: ParseError) -> &'static str {
    match e {
        ParseError::Truncated => "Truncated",
        ParseError::Trailing => "Trailing",
        ParseError::BadMagic => "BadMagic",
        ParseError::BadVersion(_) => "BadVersion",
        ParseError::BadKind(_) => "BadKind",
        ParseError::BadFlags(_) => "BadFlags",
        ParseError::BadStatus(_) => "BadStatus",
        ParseError::Malformed => "Malformed",
        ParseError::BadChecksum => "BadChecksum",
    }
}

/// Recomputes the CRC-32C so that a mutated packet is rejected for the
/// mutation and not for its checksum.
fn fix_checksum(b: &mut [u8]) {
    if b.len() >= HEADER_LEN {
        b[60..64].fill(0);
        let c = crc32c::crc32c(b);
        b[60..64].copy_from_slice(&c.to_be_bytes());
    }
}

fn invalid(name: &str, bytes: Vec<u8>, want: ParseError) -> Vector {
    let got = Packet::parse(&bytes).expect_err(name);
    assert_eq!(got, want, "{name}");
    Vector {
        name: name.to_string(),
        hex: hex::encode(&bytes),
        valid: false,
        decoded: None,
        error: Some(variant(got)),
    }
}

/// Takes valid bytes, applies `edit`, fixes the checksum and expects `want`.
/// Length errors get a fixed checksum too, so that every invalid vector of
/// 64 bytes or more except the `BadChecksum` ones has a correct CRC.
fn mutated(name: &str, s: &Spec, want: ParseError, edit: impl FnOnce(&mut Vec<u8>)) -> Vector {
    let mut b = s.bytes();
    edit(&mut b);
    fix_checksum(&mut b);
    invalid(name, b, want)
}

fn valid_vectors() -> Vec<Vector> {
    let mut v = Vec::new();
    let hello = b"hello, mbcf".to_vec();
    let notify = Notify {
        key: 0x0123_4567_89ab_cdef,
        addr: 0x0000_7f12_3456_8000,
        addend: 1,
    };

    let mut s = base(Body::Write { notify: None });
    s.payload = hello.clone();
    v.push(valid("write", &s));

    let mut w = s.clone();
    w.payload.clear();
    v.push(valid("write-empty", &w));

    let mut w = s.clone();
    w.body = Body::Write {
        notify: Some(notify),
    };
    v.push(valid("write-notify", &w));

    let mut w = s.clone();
    w.ack = Some(77);
    v.push(valid("write-ack", &w));

    let mut w = s.clone();
    w.flags.status_return = true;
    v.push(valid("write-status-return", &w));

    // NOFC packets are unsequenced: seq 0, op from a per-origin counter.
    let mut w = s.clone();
    w.flags.nofc = true;
    w.seq = 0;
    w.op = 9;
    v.push(valid("write-nofc", &w));

    let mut w = s.clone();
    w.flags = Flags {
        nofc: true,
        status_return: true,
    };
    w.seq = 0;
    w.op = 10;
    w.ack = Some(0xffff_fff0);
    w.body = Body::Write {
        notify: Some(Notify {
            key: u64::MAX,
            addr: 0,
            addend: u64::MAX,
        }),
    };
    v.push(valid("write-all-flags", &w));

    // A three-fragment WRITE: consecutive seqs, op = first seq, notify on
    // the last fragment only.
    for index in 0..3u16 {
        let mut w = s.clone();
        w.frag = Frag { index, count: 3 };
        w.seq = 1000 + u32::from(index);
        w.addr = s.addr + 11 * u64::from(index);
        if index == 2 {
            w.body = Body::Write {
                notify: Some(notify),
            };
        }
        v.push(valid(&format!("write-frag-{index}-of-3"), &w));
    }

    let mut r = base(Body::Read { len: 4096 });
    r.flags.status_return = true;
    v.push(valid("read", &r));

    let mut rr = reply(Body::ReadReply);
    rr.op = 1000;
    rr.addr = 1408;
    rr.frag = Frag { index: 1, count: 3 };
    rr.payload = (0..=255u8).collect();
    v.push(valid("read-reply", &rr));

    let mut rr = reply(Body::ReadReply);
    rr.status = Status::OutOfBounds;
    rr.addr = 0;
    v.push(valid("read-reply-out-of-bounds", &rr));

    v.push(valid(
        "swap",
        &base(Body::Swap {
            operand: 0x8000_0000_0000_0001,
        }),
    ));
    v.push(valid(
        "cas",
        &base(Body::Cas {
            expected: 0,
            new: 0xdead_beef_cafe_f00d,
        }),
    ));
    v.push(valid("fetch-add", &base(Body::FetchAdd { operand: 1 })));

    let mut fa = base(Body::FetchAdd { operand: u64::MAX });
    fa.flags = Flags {
        nofc: true,
        status_return: true,
    };
    fa.seq = 0;
    fa.op = 3;
    v.push(valid("fetch-add-nofc-status-return", &fa));

    v.push(valid(
        "atomic-reply",
        &reply(Body::AtomicReply {
            old: 0x0011_2233_4455_6677,
        }),
    ));
    let mut ar = reply(Body::AtomicReply { old: 0 });
    ar.status = Status::Misaligned;
    v.push(valid("atomic-reply-misaligned", &ar));

    let mut f = base(Body::Fifo);
    f.payload = hello.clone();
    v.push(valid("fifo", &f));

    let mut sg = base(Body::Signal { handler: 7 });
    sg.addr = 0;
    sg.payload = vec![0, 1, 2, 3];
    v.push(valid("signal", &sg));

    let mut m = base(Body::Multicast {
        group: 5,
        mcast: 12,
        origin: TaskId::new(3, 0),
        arity: 2,
    });
    m.payload = hello.clone();
    v.push(valid("multicast", &m));

    let mut ma = reply(Body::McastAck {
        group: 5,
        mcast: 12,
        origin: TaskId::new(3, 0),
        count: 4,
    });
    ma.status = Status::NodeDown;
    v.push(valid("mcast-ack", &ma));

    // One STATUS per status code, so every code has a vector.
    for code in 0..=u8::MAX {
        let Some(st) = Status::from_u8(code) else {
            continue;
        };
        let mut r = reply(Body::Status);
        r.status = st;
        r.ack = Some(1001);
        let name = serde_json::to_value(st).expect("status name");
        let name = kebab(name.as_str().expect("status serializes as a string"));
        v.push(valid(&format!("status-{name}"), &r));
    }

    let mut a = reply(Body::Ack);
    a.seq = 0;
    a.op = 0;
    a.key = 0;
    a.addr = 0;
    a.ack = Some(1001);
    v.push(valid("ack", &a));

    let mut a2 = a.clone();
    encode_sack(&[(1003, 1005), (1010, 1011)], &mut a2.payload);
    v.push(valid("ack-sack", &a2));

    let mut a3 = a.clone();
    let blocks: Vec<(u32, u32)> = (0..MAX_SACK_BLOCKS as u32)
        .map(|i| (1002 + 3 * i, 1003 + 3 * i))
        .collect();
    encode_sack(&blocks, &mut a3.payload);
    v.push(valid("ack-sack-max", &a3));
    v
}

/// `NoSuchHandler` -> `no-such-handler`.
fn kebab(s: &str) -> String {
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('-');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

fn invalid_vectors() -> Vec<Vector> {
    use ParseError::*;
    let mut v = Vec::new();
    let mut w = base(Body::Write { notify: None });
    w.payload = b"hello, mbcf".to_vec();
    let good = w.bytes();

    v.push(invalid("empty", Vec::new(), Truncated));
    v.push(invalid(
        "short-header",
        good[..HEADER_LEN - 1].to_vec(),
        Truncated,
    ));
    v.push(mutated("short-payload", &w, Truncated, |b| {
        b.pop();
    }));
    let n = base(Body::Write {
        notify: Some(Notify::default()),
    });
    v.push(mutated("short-extension", &n, Truncated, |b| {
        b.truncate(HEADER_LEN + 16)
    }));
    v.push(mutated("trailing-byte", &w, Trailing, |b| b.push(0)));

    v.push(mutated("bad-magic", &w, BadMagic, |b| b[1] = 0x54));
    v.push(mutated("bad-version-0", &w, BadVersion(0), |b| b[2] = 0));
    v.push(mutated("bad-version-2", &w, BadVersion(2), |b| b[2] = 2));
    v.push(mutated("bad-kind-0", &w, BadKind(0), |b| b[3] = 0));
    v.push(mutated("bad-kind-14", &w, BadKind(14), |b| b[3] = 14));
    v.push(mutated("bad-flags-reserved", &w, BadFlags(0x10), |b| {
        b[4] = 0x10
    }));
    let r = base(Body::Read { len: 64 });
    v.push(mutated(
        "bad-flags-notify-on-read",
        &r,
        BadFlags(0x08),
        |b| b[4] = 0x08,
    ));
    v.push(mutated("bad-status-13", &w, BadStatus(13), |b| b[5] = 13));
    v.push(mutated("bad-status-255", &w, BadStatus(255), |b| {
        b[5] = 255
    }));

    v.push(mutated("frag-count-zero", &w, Malformed, |b| {
        b[56..60].copy_from_slice(&[0, 0, 0, 0])
    }));
    v.push(mutated("frag-index-past-count", &w, Malformed, |b| {
        b[56..60].copy_from_slice(&[0, 2, 0, 2])
    }));
    v.push(mutated("ack-field-without-ack-flag", &w, Malformed, |b| {
        b[35] = 1
    }));
    v.push(mutated("read-reserved-nonzero", &r, Malformed, |b| {
        b[HEADER_LEN + 7] = 1
    }));
    let sg = base(Body::Signal { handler: 1 });
    v.push(mutated("signal-reserved-nonzero", &sg, Malformed, |b| {
        b[HEADER_LEN + 4] = 0x80
    }));
    let m = base(Body::Multicast {
        group: 5,
        mcast: 1,
        origin: TaskId::new(3, 0),
        arity: 2,
    });
    v.push(mutated("multicast-arity-zero", &m, Malformed, |b| {
        b[HEADER_LEN + 16] = 0
    }));
    v.push(mutated("multicast-reserved-nonzero", &m, Malformed, |b| {
        b[HEADER_LEN + 19] = 1
    }));
    let ma = base(Body::McastAck {
        group: 5,
        mcast: 1,
        origin: TaskId::new(3, 0),
        count: 1,
    });
    v.push(mutated("mcast-ack-reserved-nonzero", &ma, Malformed, |b| {
        b[HEADER_LEN + 20] = 1
    }));
    // ACK payloads must be whole blocks, at most MAX_SACK_BLOCKS of them;
    // emit refuses both, so the payload is appended by hand.
    let a = base(Body::Ack);
    v.push(mutated("ack-partial-block", &a, Malformed, |b| {
        b.extend_from_slice(&[0; 4]);
        b[6..8].copy_from_slice(&4u16.to_be_bytes());
    }));
    v.push(mutated("ack-too-many-blocks", &a, Malformed, |b| {
        let n = 8 * (MAX_SACK_BLOCKS + 1);
        b.resize(HEADER_LEN + n, 0);
        b[6..8].copy_from_slice(&(n as u16).to_be_bytes());
    }));

    let mut c = good.clone();
    c[HEADER_LEN] ^= 0x01;
    v.push(invalid("bad-checksum-payload-bit", c, BadChecksum));
    let mut c = good.clone();
    c[63] ^= 0x80;
    v.push(invalid("bad-checksum-field-bit", c, BadChecksum));
    let mut c = good;
    c[9] ^= 0xff;
    v.push(invalid("bad-checksum-header-byte", c, BadChecksum));
    v
}

fn main() {
    let mut all = valid_vectors();
    all.extend(invalid_vectors());
    let mut names = std::collections::HashSet::new();
    for x in &all {
        assert!(names.insert(x.name.clone()), "duplicate name {}", x.name);
    }
    let out = serde_json::to_string_pretty(&all).expect("vectors serialize");
    println!("{out}");
}
