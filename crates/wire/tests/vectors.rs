//! Checks the committed test vectors (`testdata/vectors-v1.json`) against
//! the code: every valid vector parses to exactly its `decoded` fields and
//! re-emits byte for byte; every invalid vector fails with its named error.
//!
//! The file is read, never regenerated here, so a change to the wire format
//! fails this test until the vectors are regenerated on purpose (and the
//! version bumped if old bytes no longer parse). The schema is reimplemented
//! from `testdata/README.md` rather than shared with the generator, as a
//! client in another language would.

use serde::Deserialize;
use serde_json::{Map, Value};
use sss_wire::{
    Body, Flags, Frag, Notify, Packet, ParseError, Status, TaskId, MAGIC, MAX_SACK_BLOCKS, VERSION,
};
use std::collections::BTreeSet;

const VECTORS: &str = include_str!("../testdata/vectors-v1.json");

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Vector {
    name: String,
    hex: String,
    valid: bool,
    decoded: Option<Decoded>,
    error: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Decoded {
    magic: u16,
    version: u8,
    kind: String,
    kind_code: u8,
    flags: FlagBits,
    status: String,
    status_code: u8,
    payload_len: u16,
    src: Task,
    dst: Task,
    epoch: u32,
    seq: u32,
    ack: Option<u32>,
    op: u32,
    key: String,
    addr: String,
    frag: FragJson,
    checksum: u32,
    body: Map<String, Value>,
    payload: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FlagBits {
    raw: u8,
    ack: bool,
    nofc: bool,
    status_return: bool,
    notify: bool,
}

#[derive(Deserialize, Clone, Copy)]
#[serde(deny_unknown_fields)]
struct Task {
    job: u32,
    rank: u32,
}

impl From<Task> for TaskId {
    fn from(t: Task) -> Self {
        TaskId::new(t.job, t.rank)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FragJson {
    index: u16,
    count: u16,
}

fn vectors() -> Vec<Vector> {
    serde_json::from_str(VECTORS).expect("vectors-v1.json does not match the schema")
}

/// Decodes `hex`, insisting on the lowercase form the schema promises.
fn bytes_of(name: &str, hex_str: &str) -> Vec<u8> {
    let b = hex::decode(hex_str).unwrap_or_else(|e| panic!("{name}: bad hex: {e}"));
    assert_eq!(hex::encode(&b), hex_str, "{name}: hex is not lowercase");
    b
}

/// A 64-bit field: a canonical decimal string.
fn u64_of(name: &str, s: &str) -> u64 {
    let v: u64 = s
        .parse()
        .unwrap_or_else(|e| panic!("{name}: bad u64 {s:?}: {e}"));
    assert_eq!(v.to_string(), s, "{name}: u64 {s:?} is not canonical");
    v
}

/// Checks that an object has exactly `keys` and returns it for lookups.
fn exact<'a>(name: &str, obj: &'a Map<String, Value>, keys: &[&str]) -> &'a Map<String, Value> {
    let have: BTreeSet<&str> = obj.keys().map(String::as_str).collect();
    let want: BTreeSet<&str> = keys.iter().copied().collect();
    assert_eq!(have, want, "{name}: body fields");
    obj
}

fn u32_field(name: &str, obj: &Map<String, Value>, k: &str) -> u32 {
    obj[k]
        .as_u64()
        .and_then(|v| u32::try_from(v).ok())
        .unwrap_or_else(|| panic!("{name}: body.{k} is not a u32"))
}

fn u64_field(name: &str, obj: &Map<String, Value>, k: &str) -> u64 {
    let s = obj[k]
        .as_str()
        .unwrap_or_else(|| panic!("{name}: body.{k} is not a string"));
    u64_of(name, s)
}

fn task_field(name: &str, obj: &Map<String, Value>, k: &str) -> TaskId {
    let t: Task =
        serde_json::from_value(obj[k].clone()).unwrap_or_else(|e| panic!("{name}: body.{k}: {e}"));
    t.into()
}

/// Builds the body from the kind name and the extension fields, and
/// returns the sack blocks an ACK lists.
fn body_of(name: &str, kind: &str, b: &Map<String, Value>) -> (Body, Vec<(u32, u32)>) {
    let body = match kind {
        "Write" => {
            let b = exact(name, b, &["notify"]);
            let notify = match &b["notify"] {
                Value::Null => None,
                Value::Object(n) => {
                    let n = exact(name, n, &["key", "addr", "addend"]);
                    Some(Notify {
                        key: u64_field(name, n, "key"),
                        addr: u64_field(name, n, "addr"),
                        addend: u64_field(name, n, "addend"),
                    })
                }
                other => panic!("{name}: notify is {other}"),
            };
            Body::Write { notify }
        }
        "Read" => Body::Read {
            len: u32_field(name, exact(name, b, &["len"]), "len"),
        },
        "ReadReply" => {
            exact(name, b, &[]);
            Body::ReadReply
        }
        "Swap" => Body::Swap {
            operand: u64_field(name, exact(name, b, &["operand"]), "operand"),
        },
        "Cas" => {
            let b = exact(name, b, &["expected", "new"]);
            Body::Cas {
                expected: u64_field(name, b, "expected"),
                new: u64_field(name, b, "new"),
            }
        }
        "FetchAdd" => Body::FetchAdd {
            operand: u64_field(name, exact(name, b, &["operand"]), "operand"),
        },
        "AtomicReply" => Body::AtomicReply {
            old: u64_field(name, exact(name, b, &["old"]), "old"),
        },
        "Fifo" => {
            exact(name, b, &[]);
            Body::Fifo
        }
        "Signal" => Body::Signal {
            handler: u32_field(name, exact(name, b, &["handler"]), "handler"),
        },
        "Multicast" => {
            let b = exact(name, b, &["group", "mcast", "origin", "arity"]);
            Body::Multicast {
                group: u32_field(name, b, "group"),
                mcast: u32_field(name, b, "mcast"),
                origin: task_field(name, b, "origin"),
                arity: u8::try_from(u32_field(name, b, "arity"))
                    .unwrap_or_else(|_| panic!("{name}: arity is not a u8")),
            }
        }
        "McastAck" => {
            let b = exact(name, b, &["group", "mcast", "origin", "count"]);
            Body::McastAck {
                group: u32_field(name, b, "group"),
                mcast: u32_field(name, b, "mcast"),
                origin: task_field(name, b, "origin"),
                count: u32_field(name, b, "count"),
            }
        }
        "Status" => {
            exact(name, b, &[]);
            Body::Status
        }
        "Ack" => {
            let b = exact(name, b, &["sack_blocks"]);
            let blocks: Vec<(u32, u32)> = serde_json::from_value(b["sack_blocks"].clone())
                .unwrap_or_else(|e| panic!("{name}: sack_blocks: {e}"));
            return (Body::Ack, blocks);
        }
        other => panic!("{name}: unknown kind {other:?}"),
    };
    (body, Vec::new())
}

/// The status with this wire code, checked against the name in the file.
fn status_of(name: &str, code: u8, status: &str) -> Status {
    let s = Status::from_u8(code).unwrap_or_else(|| panic!("{name}: unknown status {code}"));
    assert_eq!(format!("{s:?}"), status, "{name}: status name vs code");
    s
}

/// The variant name of a parse error. Exhaustive, so a new variant fails
/// to compile here until it gets a vector.
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

const ALL_ERRORS: [&str; 9] = [
    "Truncated",
    "Trailing",
    "BadMagic",
    "BadVersion",
    "BadKind",
    "BadFlags",
    "BadStatus",
    "Malformed",
    "BadChecksum",
];

fn check_valid(v: &Vector, d: &Decoded) {
    let name = v.name.as_str();
    let bytes = bytes_of(name, &v.hex);
    let payload = bytes_of(name, &d.payload);
    let (body, blocks) = body_of(name, &d.kind, &d.body);

    // Fields that Packet does not carry are checked against the bytes.
    assert_eq!(d.magic, MAGIC, "{name}: magic");
    assert_eq!(d.version, VERSION, "{name}: version");
    assert_eq!(d.kind_code, body.kind() as u8, "{name}: kind code");
    assert_eq!(format!("{:?}", body.kind()), d.kind, "{name}: kind name");
    let f = &d.flags;
    let raw = u8::from(f.ack)
        | u8::from(f.nofc) << 1
        | u8::from(f.status_return) << 2
        | u8::from(f.notify) << 3;
    assert_eq!(f.raw, raw, "{name}: flags.raw vs flag bits");
    assert_eq!(f.ack, d.ack.is_some(), "{name}: ACK flag vs ack");
    assert_eq!(
        f.notify,
        matches!(body, Body::Write { notify: Some(_) }),
        "{name}: NOTIFY flag vs notify"
    );
    assert_eq!(
        usize::from(d.payload_len),
        payload.len(),
        "{name}: payload_len"
    );
    assert!(bytes.len() >= 64, "{name}: shorter than a header");
    assert_eq!(
        d.checksum,
        u32::from_be_bytes([bytes[60], bytes[61], bytes[62], bytes[63]]),
        "{name}: checksum"
    );

    let want = Packet {
        src: d.src.into(),
        dst: d.dst.into(),
        epoch: d.epoch,
        seq: d.seq,
        ack: d.ack,
        op: d.op,
        flags: Flags {
            nofc: f.nofc,
            status_return: f.status_return,
        },
        status: status_of(name, d.status_code, &d.status),
        key: u64_of(name, &d.key),
        addr: u64_of(name, &d.addr),
        frag: Frag {
            index: d.frag.index,
            count: d.frag.count,
        },
        body,
        payload: &payload,
    };

    let got = Packet::parse(&bytes).unwrap_or_else(|e| panic!("{name}: parse failed: {e:?}"));
    assert_eq!(got, want, "{name}: parse vs decoded");
    assert_eq!(
        got.sack_blocks().collect::<Vec<_>>(),
        blocks,
        "{name}: sack blocks"
    );
    assert_eq!(want.buffer_len(), bytes.len(), "{name}: buffer_len");
    let out = want
        .to_vec()
        .unwrap_or_else(|e| panic!("{name}: emit failed: {e:?}"));
    assert_eq!(hex::encode(out), v.hex, "{name}: emit vs hex");
}

#[test]
fn valid_vectors_parse_to_decoded_and_emit_to_hex() {
    let mut n = 0;
    for v in vectors().iter().filter(|v| v.valid) {
        assert!(v.error.is_none(), "{}: valid vector with an error", v.name);
        let d = v
            .decoded
            .as_ref()
            .unwrap_or_else(|| panic!("{}: valid vector without decoded", v.name));
        check_valid(v, d);
        n += 1;
    }
    assert!(n >= 20, "only {n} valid vectors");
}

#[test]
fn invalid_vectors_fail_with_the_named_error() {
    let mut seen = BTreeSet::new();
    for v in vectors().iter().filter(|v| !v.valid) {
        let name = v.name.as_str();
        assert!(v.decoded.is_none(), "{name}: invalid vector with decoded");
        let want = v
            .error
            .as_deref()
            .unwrap_or_else(|| panic!("{name}: invalid vector without error"));
        let bytes = bytes_of(name, &v.hex);
        let got = Packet::parse(&bytes).expect_err(name);
        assert_eq!(variant(got), want, "{name}: got {got:?}");
        // The schema promises one defect per vector: the CRC is right
        // unless the checksum is what the vector is about.
        if bytes.len() >= 64 && want != "BadChecksum" {
            let mut zeroed = bytes.clone();
            zeroed[60..64].fill(0);
            let stored = u32::from_be_bytes([bytes[60], bytes[61], bytes[62], bytes[63]]);
            assert_eq!(stored, crc32c::crc32c(&zeroed), "{name}: checksum");
        }
        seen.insert(want.to_string());
    }
    let all: BTreeSet<String> = ALL_ERRORS.iter().map(|s| s.to_string()).collect();
    assert_eq!(seen, all, "every ParseError variant has a vector");
}

#[test]
fn vectors_cover_every_kind_status_and_option() {
    let vs = vectors();
    let mut names = BTreeSet::new();
    let mut kinds = BTreeSet::new();
    let mut statuses = BTreeSet::new();
    let (mut ack, mut nofc, mut sr, mut notify, mut write_plain, mut frag) =
        (false, false, false, false, false, false);
    let mut sack = 0;
    for v in &vs {
        assert!(names.insert(v.name.as_str()), "duplicate name {}", v.name);
        assert!(
            v.name
                .bytes()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-'),
            "{}: names are kebab-case (they become file names)",
            v.name
        );
        let Some(d) = &v.decoded else { continue };
        kinds.insert(d.kind_code);
        statuses.insert(d.status_code);
        ack |= d.flags.ack;
        nofc |= d.flags.nofc;
        sr |= d.flags.status_return;
        notify |= d.flags.notify;
        write_plain |= d.kind == "Write" && !d.flags.notify;
        frag |= d.frag.count > 1;
        if d.kind == "Ack" {
            sack = sack.max(d.body["sack_blocks"].as_array().map_or(0, Vec::len));
        }
    }
    assert_eq!(kinds, (1..=13).collect(), "every kind has a vector");
    assert_eq!(
        statuses,
        (0..=u8::MAX)
            .filter(|&c| Status::from_u8(c).is_some())
            .collect(),
        "every status has a vector"
    );
    assert!(ack && nofc && sr && notify && write_plain && frag);
    assert_eq!(sack, MAX_SACK_BLOCKS, "an ACK with the most blocks");
}
