//! MBCF packet formats.
//!
//! Every MBCF operation travels as one datagram: a fixed 64-byte header, a
//! kind-specific extension of fixed size, then the payload. The format is
//! the same over every transport that carries datagrams (UDP today, raw
//! Ethernet later). This crate only parses and emits: no I/O, no clocks, and
//! [`Packet::parse`] never panics on any input.
//!
//! # Header layout (version 1)
//!
//! All multi-byte integers are big-endian (network order). Offsets are in
//! bytes from the start of the datagram.
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |         magic 0x5353          |  version = 1  |     kind      |  0
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |     flags     |    status     |         payload length        |  4
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                        source job id                          |  8
//! |                        source rank                            | 12
//! |                     destination job id                        | 16
//! |                     destination rank                          | 20
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                  epoch (sender incarnation)                   | 24
//! |                     sequence number                           | 28
//! |                  acknowledgement number                       | 32
//! |                         operation id                          | 36
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                                                               | 40
//! +                      segment key (64 bits)                    +
//! |                                                               | 44
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                                                               | 48
//! +                   remote address (64 bits)                    +
//! |                                                               | 52
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |        fragment index         |        fragment count         | 56
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                   checksum (CRC-32C)                          | 60
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |            extension (size fixed by kind and flags)           | 64
//! |                            ...                                |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                    payload (payload length bytes)             |
//! |                            ...                                |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! Fields:
//!
//! - **magic** (0–1): `0x5353` ("SS"). Anything else is not MBCF.
//! - **version** (2): the [`Format`]: 1 checksummed, 2 authenticated,
//!   3 encrypted. A receiver takes only the format its job uses; others
//!   are rejected, not guessed at.
//! - **kind** (3): the packet kind, see [`Kind`] for the values.
//! - **flags** (4): bit 0 `ACK` — the acknowledgement number is valid
//!   (piggybacked ack); bit 1 `NOFC` — no flow control: the packet is not
//!   sequenced, never retransmitted, never ordered; bit 2 `STATUS_RETURN`
//!   — the origin asks for a completion reply; bit 3 `NOTIFY` — a WRITE
//!   carries a notify extension (bump a flag/counter after the data). Bits
//!   4–7 are reserved and must be zero.
//! - **status** (5): a [`Status`] code. Zero in requests; the outcome in
//!   replies (STATUS, READ_REPLY, ATOMIC_REPLY, MCAST_ACK).
//! - **payload length** (6–7): bytes of payload after the extension. The
//!   datagram must be exactly header + extension + payload long.
//! - **source / destination** (8–23): logical task ids (job, rank). They
//!   never name a host: a directory above this layer maps them to places.
//! - **epoch** (24–27): the sender's incarnation; a peer that sees a new
//!   epoch knows the sender restarted and resets its receive state.
//! - **sequence number** (28–31): position of this packet in the reliable
//!   stream from source to destination; zero in NOFC and ACK packets,
//!   except in a filler: an ACK with a sequence number takes that place in
//!   the stream and carries nothing (it replaces a request that failed
//!   while its destination was down, so the destination does not wait for
//!   it forever when it answers again).
//! - **acknowledgement number** (32–35): with flag `ACK`, every sequence
//!   number below this one from the destination has been received
//!   (cumulative ack). Zero otherwise.
//! - **operation id** (36–39): in requests, the sequence number of the
//!   operation's first fragment (a per-origin counter for NOFC requests);
//!   in replies, the id of the request answered; in a plain ACK, the
//!   sender's next sequence number — everything it queued before the ACK
//!   (a NACK, say) is below it, so the receiver of the ACK knows what to
//!   wait for (zero: not said).
//! - **segment key** (40–47): the capability of the target segment (or
//!   FIFO, or signal table), checked by the receiver before touching memory.
//! - **remote address** (48–55): the virtual address in the destination
//!   task that this packet's bytes go to (WRITE, FIFO, atomics) or come from
//!   (READ). In READ_REPLY it is the byte offset of this fragment in the
//!   read. In MULTICAST it is a byte offset into the segment the key names
//!   at each member (members share the key, not the address). In SIGNAL it
//!   is unused (zero).
//! - **fragment index / count** (56–59): a large WRITE or READ_REPLY is cut
//!   into `count` packets, each with consecutive sequence numbers; index
//!   runs from 0 to count − 1. Unfragmented packets carry 0 / 1.
//! - **checksum** (60–63): in format 1, CRC-32C (Castagnoli) over the
//!   whole datagram with these four bytes taken as zero. It catches every
//!   burst error up to 32 bits and all odd numbers of bit flips; a
//!   mismatch drops the packet. In formats 2 and 3, the low 32 bits of the
//!   sender's transmission counter toward this destination (the AEAD
//!   nonce; the receiver infers the high bits), and a 16-byte tag follows
//!   the payload (see `sss-seal`).
//!
//! # Extensions
//!
//! | kind | extension (bytes) |
//! |---|---|
//! | WRITE with `NOTIFY` | notify key u64, notify address u64, notify addend u64 (24) |
//! | READ | length u32, reserved u32 = 0 (8) |
//! | SWAP, FETCH_ADD | operand u64 (8) |
//! | CAS | expected u64, new u64 (16) |
//! | ATOMIC_REPLY | old value u64 (8) |
//! | SIGNAL | handler index u32, reserved u32 = 0 (8) |
//! | MULTICAST | group u32, multicast id u32, origin job u32, origin rank u32, arity u8, 3 reserved bytes = 0 (20) |
//! | MCAST_ACK | group u32, multicast id u32, origin job u32, origin rank u32, members acknowledged u32, reserved u32 = 0 (24) |
//! | others | none |
//!
//! The payload of an ACK packet is a list of selective-ack blocks, each
//! `start u32, end u32`: sequence numbers in `[start, end)` were received
//! beyond the cumulative ack; a first block below the cumulative ack
//! reports a packet received twice (D-SACK, RFC 2883). At most
//! [`MAX_SACK_BLOCKS`] blocks.
//!
//! # Status codes
//!
//! See [`Status`]; an operation answered with OK is an ACK at operation
//! level, anything else a NACK.

#![forbid(unsafe_code)]

use thiserror::Error;

/// The magic number at offset 0.
pub const MAGIC: u16 = 0x5353;
/// The format version of checksummed datagrams ([`Format::Checksummed`]).
pub const VERSION: u8 = 1;

/// How a datagram is protected, written in its version byte (offset 2).
///
/// A checksummed datagram carries a CRC-32C at offset 60. A sealed one
/// (authenticated or encrypted) carries instead the low 32 bits of its
/// transmission counter there and is followed by a 16-byte AEAD tag,
/// which `sss-seal` checks and removes before [`Packet::parse_as`] sees
/// it; the tag replaces the checksum, so none is computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[repr(u8)]
pub enum Format {
    /// Version 1: CRC-32C at offset 60, no authentication.
    #[default]
    Checksummed = 1,
    /// Version 2: header, extension and payload authenticated.
    Authenticated = 2,
    /// Version 3: as 2, and extension and payload encrypted.
    Encrypted = 3,
}

impl Format {
    /// The format a version byte names.
    pub fn from_u8(v: u8) -> Option<Format> {
        match v {
            1 => Some(Format::Checksummed),
            2 => Some(Format::Authenticated),
            3 => Some(Format::Encrypted),
            _ => None,
        }
    }
}

/// Offset of the checksum field, which carries the low 32 bits of the
/// transmission counter in sealed formats.
pub const CHECK_FIELD: usize = 60;
/// Size of the fixed header.
pub const HEADER_LEN: usize = 64;
/// Length of the AEAD tag that follows a sealed datagram.
pub const SEAL_TAG_LEN: usize = 16;
/// Largest datagram this format describes (payload length is 16 bits).
pub const MAX_PACKET_LEN: usize = HEADER_LEN + 24 + u16::MAX as usize;
/// Most selective-ack blocks one ACK packet may carry.
pub const MAX_SACK_BLOCKS: usize = 32;
/// Default payload per packet: a 1500-byte Ethernet MTU less IP/UDP
/// headers and ours, rounded as in the seeds.
pub const DEFAULT_PAYLOAD: usize = 1408;

const FLAG_ACK: u8 = 0x01;
const FLAG_NOFC: u8 = 0x02;
const FLAG_STATUS_RETURN: u8 = 0x04;
const FLAG_NOTIFY: u8 = 0x08;
const FLAGS_KNOWN: u8 = FLAG_ACK | FLAG_NOFC | FLAG_STATUS_RETURN | FLAG_NOTIFY;

/// A logical task id: (job, rank).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct TaskId {
    /// The job the task belongs to.
    pub job: u32,
    /// The task's rank within its job.
    pub rank: u32,
}

impl TaskId {
    /// A task id from its parts.
    pub const fn new(job: u32, rank: u32) -> Self {
        Self { job, rank }
    }
}

impl std::fmt::Display for TaskId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.job, self.rank)
    }
}

/// Outcome of an operation, carried in replies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[repr(u8)]
pub enum Status {
    /// Applied.
    #[default]
    Ok = 0,
    /// The key does not match the target segment.
    BadKey = 1,
    /// The range is not inside the segment.
    OutOfBounds = 2,
    /// The segment does not allow this kind of access.
    NoPermission = 3,
    /// The FIFO queue is full; the message was not stored, retry later.
    FifoFull = 4,
    /// No signal handler is registered at that index.
    NoSuchHandler = 5,
    /// The destination's node is down or did not answer within the retry
    /// budget.
    NodeDown = 6,
    /// No task with that id at the destination.
    NoSuchTask = 7,
    /// An atomic on an address that is not 8-byte aligned.
    Misaligned = 8,
    /// The multicast group is unknown to the receiver.
    NoSuchGroup = 9,
    /// The operation is larger than the receiver accepts.
    TooLarge = 10,
    /// The receiver does not implement this operation.
    Unsupported = 11,
    /// No reply arrived within the deadline. Only no-flow-control
    /// operations that expect a reply end this way; reliable ones end with
    /// [`Status::NodeDown`] when the retry budget runs out.
    TimedOut = 12,
}

impl Status {
    /// Decodes a status byte.
    pub fn from_u8(v: u8) -> Option<Self> {
        Some(match v {
            0 => Self::Ok,
            1 => Self::BadKey,
            2 => Self::OutOfBounds,
            3 => Self::NoPermission,
            4 => Self::FifoFull,
            5 => Self::NoSuchHandler,
            6 => Self::NodeDown,
            7 => Self::NoSuchTask,
            8 => Self::Misaligned,
            9 => Self::NoSuchGroup,
            10 => Self::TooLarge,
            11 => Self::Unsupported,
            12 => Self::TimedOut,
            _ => return None,
        })
    }

    /// True for [`Status::Ok`].
    pub fn is_ok(self) -> bool {
        self == Self::Ok
    }

    /// The more severe of two statuses, for combining acks: any error beats
    /// OK, and among errors the lower code wins so the result is stable.
    pub fn combine(self, other: Self) -> Self {
        match (self, other) {
            (Self::Ok, o) => o,
            (s, Self::Ok) => s,
            (a, b) => {
                if (a as u8) <= (b as u8) {
                    a
                } else {
                    b
                }
            }
        }
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Ok => "ok",
            Self::BadKey => "bad key",
            Self::OutOfBounds => "out of bounds",
            Self::NoPermission => "no permission",
            Self::FifoFull => "FIFO full",
            Self::NoSuchHandler => "no such handler",
            Self::NodeDown => "node down",
            Self::NoSuchTask => "no such task",
            Self::Misaligned => "misaligned atomic",
            Self::NoSuchGroup => "no such multicast group",
            Self::TooLarge => "too large",
            Self::Unsupported => "unsupported operation",
            Self::TimedOut => "timed out",
        })
    }
}

/// Packet kinds (header byte 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[repr(u8)]
pub enum Kind {
    /// Store the payload at the remote address.
    Write = 1,
    /// Fetch bytes from the remote address.
    Read = 2,
    /// A fragment of the data answering a READ.
    ReadReply = 3,
    /// Atomic exchange of 8 bytes.
    Swap = 4,
    /// Atomic compare-and-swap of 8 bytes.
    Cas = 5,
    /// Atomic fetch-and-add of 8 bytes.
    FetchAdd = 6,
    /// The old value answering an atomic.
    AtomicReply = 7,
    /// Push the payload into a FIFO queue at the remote address.
    Fifo = 8,
    /// Run a registered handler with the payload.
    Signal = 9,
    /// A WRITE to every member of a group, forwarded down a tree.
    Multicast = 10,
    /// The combined acknowledgement of a multicast subtree.
    McastAck = 11,
    /// Operation-level completion: ACK (status OK) or NACK (an error).
    Status = 12,
    /// Transport acknowledgement with selective-ack blocks.
    Ack = 13,
}

impl Kind {
    fn from_u8(v: u8) -> Option<Self> {
        Some(match v {
            1 => Self::Write,
            2 => Self::Read,
            3 => Self::ReadReply,
            4 => Self::Swap,
            5 => Self::Cas,
            6 => Self::FetchAdd,
            7 => Self::AtomicReply,
            8 => Self::Fifo,
            9 => Self::Signal,
            10 => Self::Multicast,
            11 => Self::McastAck,
            12 => Self::Status,
            13 => Self::Ack,
            _ => return None,
        })
    }
}

/// The notify extension of a WRITE: after the data is stored, add `addend`
/// to the 8-byte counter at `addr` (checked against `key` like the data).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Notify {
    /// Key of the segment holding the counter.
    pub key: u64,
    /// Address of the 8-byte counter.
    pub addr: u64,
    /// Amount added (1 for a counter, or a flag value on a zeroed flag).
    pub addend: u64,
}

/// The kind of a packet with its kind-specific extension fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Body {
    /// WRITE, optionally bumping a counter after the data.
    Write {
        /// Present on the last fragment only when a notify was asked for.
        notify: Option<Notify>,
    },
    /// READ of `len` bytes.
    Read {
        /// Bytes to read.
        len: u32,
    },
    /// One fragment of READ data.
    ReadReply,
    /// SWAP: store `operand`, return the old value.
    Swap {
        /// New value.
        operand: u64,
    },
    /// CAS: if the value equals `expected`, store `new`; return the old value.
    Cas {
        /// Value compared against.
        expected: u64,
        /// Value stored on a match.
        new: u64,
    },
    /// FETCH_ADD: add `operand` (wrapping), return the old value.
    FetchAdd {
        /// Addend.
        operand: u64,
    },
    /// The old value of an atomic.
    AtomicReply {
        /// Value before the operation.
        old: u64,
    },
    /// FIFO push of the payload.
    Fifo,
    /// SIGNAL: run handler `handler` with the payload.
    Signal {
        /// Handler index registered by the receiver.
        handler: u32,
    },
    /// MULTICAST write forwarded down the group's tree.
    Multicast {
        /// Group id, known to every member.
        group: u32,
        /// Multicast id assigned by the origin.
        mcast: u32,
        /// The task that started the multicast.
        origin: TaskId,
        /// Fan-out of the tree (1 = chain).
        arity: u8,
    },
    /// Combined ack of a multicast subtree.
    McastAck {
        /// Group id.
        group: u32,
        /// Multicast id assigned by the origin.
        mcast: u32,
        /// The task that started the multicast.
        origin: TaskId,
        /// Members of the subtree that applied the write.
        count: u32,
    },
    /// Operation-level ACK/NACK.
    Status,
    /// Transport ack; the payload holds selective-ack blocks.
    Ack,
}

impl Body {
    /// The packet kind of this body.
    pub fn kind(&self) -> Kind {
        match self {
            Body::Write { .. } => Kind::Write,
            Body::Read { .. } => Kind::Read,
            Body::ReadReply => Kind::ReadReply,
            Body::Swap { .. } => Kind::Swap,
            Body::Cas { .. } => Kind::Cas,
            Body::FetchAdd { .. } => Kind::FetchAdd,
            Body::AtomicReply { .. } => Kind::AtomicReply,
            Body::Fifo => Kind::Fifo,
            Body::Signal { .. } => Kind::Signal,
            Body::Multicast { .. } => Kind::Multicast,
            Body::McastAck { .. } => Kind::McastAck,
            Body::Status => Kind::Status,
            Body::Ack => Kind::Ack,
        }
    }

    /// Bytes of extension this body occupies after the header.
    pub fn ext_len(&self) -> usize {
        match self {
            Body::Write { notify: Some(_) } => 24,
            Body::Write { notify: None } => 0,
            Body::Read { .. } | Body::Swap { .. } | Body::FetchAdd { .. } => 8,
            Body::AtomicReply { .. } | Body::Signal { .. } => 8,
            Body::Cas { .. } => 16,
            Body::Multicast { .. } => 20,
            Body::McastAck { .. } => 24,
            Body::ReadReply | Body::Fifo | Body::Status | Body::Ack => 0,
        }
    }

    /// True for request kinds that a receiver applies (as opposed to
    /// replies and acks).
    pub fn is_request(&self) -> bool {
        matches!(
            self,
            Body::Write { .. }
                | Body::Read { .. }
                | Body::Swap { .. }
                | Body::Cas { .. }
                | Body::FetchAdd { .. }
                | Body::Fifo
                | Body::Signal { .. }
                | Body::Multicast { .. }
        )
    }
}

/// Why a datagram was not accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum ParseError {
    /// Shorter than the header, or than header + extension + payload.
    #[error("truncated packet")]
    Truncated,
    /// Longer than header + extension + payload.
    #[error("trailing bytes after payload")]
    Trailing,
    /// Not an MBCF packet.
    #[error("bad magic")]
    BadMagic,
    /// A version this crate does not speak.
    #[error("unsupported version {0}")]
    BadVersion(u8),
    /// Unknown kind byte.
    #[error("unknown kind {0}")]
    BadKind(u8),
    /// Reserved flag bits set, or flags that make no sense for the kind.
    #[error("bad flags {0:#04x}")]
    BadFlags(u8),
    /// Unknown status byte.
    #[error("unknown status {0}")]
    BadStatus(u8),
    /// Reserved bytes not zero, fragment fields inconsistent, or a
    /// malformed ack block list.
    #[error("malformed field")]
    Malformed,
    /// The checksum does not match: the packet was corrupted.
    #[error("checksum mismatch")]
    BadChecksum,
}

/// Why a packet could not be emitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum EmitError {
    /// The buffer is shorter than [`Packet::buffer_len`].
    #[error("buffer too small")]
    BufferTooSmall,
    /// The payload does not fit in 16 bits of length.
    #[error("payload too large")]
    PayloadTooLarge,
    /// A field value the format cannot carry (zero fragment count, index
    /// past count, zero multicast arity, malformed ack blocks).
    #[error("invalid field value")]
    Invalid,
}

/// Header flag bits other than those implied by the body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Flags {
    /// No flow control: unsequenced, never retransmitted, not ordered.
    pub nofc: bool,
    /// The origin asks for a completion reply.
    pub status_return: bool,
}

/// Fragment position of a packet within its operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Frag {
    /// Index of this fragment, from 0.
    pub index: u16,
    /// Number of fragments, at least 1.
    pub count: u16,
}

impl Frag {
    /// An unfragmented packet.
    pub const SINGLE: Frag = Frag { index: 0, count: 1 };

    /// True for the last fragment of an operation.
    pub fn is_last(&self) -> bool {
        self.index + 1 == self.count
    }
}

impl Default for Frag {
    fn default() -> Self {
        Self::SINGLE
    }
}

/// A decoded MBCF packet borrowing its payload from the datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Packet<'a> {
    /// Sending task.
    pub src: TaskId,
    /// Receiving task.
    pub dst: TaskId,
    /// Sender incarnation.
    pub epoch: u32,
    /// Sequence number in the reliable stream (0 when unsequenced).
    pub seq: u32,
    /// Piggybacked cumulative ack: every sequence below it was received.
    pub ack: Option<u32>,
    /// Operation id (see the module docs).
    pub op: u32,
    /// Header flags not implied by the body.
    pub flags: Flags,
    /// Outcome, in replies.
    pub status: Status,
    /// Capability key of the target.
    pub key: u64,
    /// Remote address (or fragment offset in READ_REPLY).
    pub addr: u64,
    /// Fragment position.
    pub frag: Frag,
    /// Kind and extension.
    pub body: Body,
    /// Payload bytes.
    pub payload: &'a [u8],
}

#[inline]
fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}
#[inline]
fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}
#[inline]
fn be64(b: &[u8], at: usize) -> u64 {
    let mut x = [0u8; 8];
    x.copy_from_slice(&b[at..at + 8]);
    u64::from_be_bytes(x)
}
#[inline]
fn put16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_be_bytes());
}
#[inline]
fn put32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_be_bytes());
}
#[inline]
fn put64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_be_bytes());
}

/// CRC-32C of a datagram with the checksum field taken as zero.
fn checksum(buf: &[u8]) -> u32 {
    // Callers have checked buf.len() >= HEADER_LEN.
    let c = crc32c::crc32c(&buf[..60]);
    let c = crc32c::crc32c_append(c, &[0; 4]);
    crc32c::crc32c_append(c, &buf[HEADER_LEN..])
}

impl<'a> Packet<'a> {
    /// Decodes a checksummed datagram ([`Format::Checksummed`]). Checks the
    /// length once against the header's claims, then every field; never
    /// panics.
    pub fn parse(buf: &'a [u8]) -> Result<Self, ParseError> {
        Self::parse_as(buf, Format::Checksummed)
    }

    /// Decodes a datagram of format `format`, refusing any other. A sealed
    /// datagram comes here opened (tag checked and removed, payload
    /// decrypted): its checksum field is not checked.
    pub fn parse_as(buf: &'a [u8], format: Format) -> Result<Self, ParseError> {
        if buf.len() < HEADER_LEN {
            return Err(ParseError::Truncated);
        }
        if be16(buf, 0) != MAGIC {
            return Err(ParseError::BadMagic);
        }
        if buf[2] != format as u8 {
            return Err(ParseError::BadVersion(buf[2]));
        }
        let kind = Kind::from_u8(buf[3]).ok_or(ParseError::BadKind(buf[3]))?;
        let flags = buf[4];
        if flags & !FLAGS_KNOWN != 0 {
            return Err(ParseError::BadFlags(flags));
        }
        if flags & FLAG_NOTIFY != 0 && kind != Kind::Write {
            return Err(ParseError::BadFlags(flags));
        }
        let status = Status::from_u8(buf[5]).ok_or(ParseError::BadStatus(buf[5]))?;
        let payload_len = be16(buf, 6) as usize;
        let ext_len = ext_len_of(kind, flags);
        let total = HEADER_LEN + ext_len + payload_len;
        if buf.len() < total {
            return Err(ParseError::Truncated);
        }
        if buf.len() > total {
            return Err(ParseError::Trailing);
        }
        if format == Format::Checksummed && be32(buf, CHECK_FIELD) != checksum(buf) {
            return Err(ParseError::BadChecksum);
        }
        let frag = Frag {
            index: be16(buf, 56),
            count: be16(buf, 58),
        };
        if frag.count == 0 || frag.index >= frag.count {
            return Err(ParseError::Malformed);
        }
        let e = HEADER_LEN;
        let body = match kind {
            Kind::Write => Body::Write {
                notify: (flags & FLAG_NOTIFY != 0).then(|| Notify {
                    key: be64(buf, e),
                    addr: be64(buf, e + 8),
                    addend: be64(buf, e + 16),
                }),
            },
            Kind::Read => {
                if be32(buf, e + 4) != 0 {
                    return Err(ParseError::Malformed);
                }
                Body::Read { len: be32(buf, e) }
            }
            Kind::ReadReply => Body::ReadReply,
            Kind::Swap => Body::Swap {
                operand: be64(buf, e),
            },
            Kind::Cas => Body::Cas {
                expected: be64(buf, e),
                new: be64(buf, e + 8),
            },
            Kind::FetchAdd => Body::FetchAdd {
                operand: be64(buf, e),
            },
            Kind::AtomicReply => Body::AtomicReply { old: be64(buf, e) },
            Kind::Fifo => Body::Fifo,
            Kind::Signal => {
                if be32(buf, e + 4) != 0 {
                    return Err(ParseError::Malformed);
                }
                Body::Signal {
                    handler: be32(buf, e),
                }
            }
            Kind::Multicast => {
                if buf[e + 17..e + 20] != [0, 0, 0] || buf[e + 16] == 0 {
                    return Err(ParseError::Malformed);
                }
                Body::Multicast {
                    group: be32(buf, e),
                    mcast: be32(buf, e + 4),
                    origin: TaskId::new(be32(buf, e + 8), be32(buf, e + 12)),
                    arity: buf[e + 16],
                }
            }
            Kind::McastAck => {
                if be32(buf, e + 20) != 0 {
                    return Err(ParseError::Malformed);
                }
                Body::McastAck {
                    group: be32(buf, e),
                    mcast: be32(buf, e + 4),
                    origin: TaskId::new(be32(buf, e + 8), be32(buf, e + 12)),
                    count: be32(buf, e + 16),
                }
            }
            Kind::Status => Body::Status,
            Kind::Ack => {
                if payload_len % 8 != 0 || payload_len / 8 > MAX_SACK_BLOCKS {
                    return Err(ParseError::Malformed);
                }
                Body::Ack
            }
        };
        let ack = if flags & FLAG_ACK != 0 {
            Some(be32(buf, 32))
        } else {
            if be32(buf, 32) != 0 {
                return Err(ParseError::Malformed);
            }
            None
        };
        Ok(Packet {
            src: TaskId::new(be32(buf, 8), be32(buf, 12)),
            dst: TaskId::new(be32(buf, 16), be32(buf, 20)),
            epoch: be32(buf, 24),
            seq: be32(buf, 28),
            ack,
            op: be32(buf, 36),
            flags: Flags {
                nofc: flags & FLAG_NOFC != 0,
                status_return: flags & FLAG_STATUS_RETURN != 0,
            },
            status,
            key: be64(buf, 40),
            addr: be64(buf, 48),
            frag,
            body,
            payload: &buf[HEADER_LEN + ext_len..],
        })
    }

    /// Bytes [`Packet::emit`] writes.
    pub fn buffer_len(&self) -> usize {
        HEADER_LEN + self.body.ext_len() + self.payload.len()
    }

    /// Encodes into the front of `buf` as a checksummed datagram and
    /// returns the bytes written.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, EmitError> {
        self.emit_as(buf, Format::Checksummed)
    }

    /// Encodes into the front of `buf` in `format` and returns the bytes
    /// written. A sealed format leaves the checksum field zero and no room
    /// for the tag: the sealer fills both.
    pub fn emit_as(&self, buf: &mut [u8], format: Format) -> Result<usize, EmitError> {
        let payload_len =
            u16::try_from(self.payload.len()).map_err(|_| EmitError::PayloadTooLarge)?;
        if self.frag.count == 0
            || self.frag.index >= self.frag.count
            || matches!(self.body, Body::Multicast { arity: 0, .. })
            || (self.body == Body::Ack
                && (self.payload.len() % 8 != 0 || self.payload.len() / 8 > MAX_SACK_BLOCKS))
        {
            return Err(EmitError::Invalid);
        }
        let total = self.buffer_len();
        let buf = buf.get_mut(..total).ok_or(EmitError::BufferTooSmall)?;
        put16(buf, 0, MAGIC);
        buf[2] = format as u8;
        buf[3] = self.body.kind() as u8;
        let mut flags = 0;
        if self.ack.is_some() {
            flags |= FLAG_ACK;
        }
        if self.flags.nofc {
            flags |= FLAG_NOFC;
        }
        if self.flags.status_return {
            flags |= FLAG_STATUS_RETURN;
        }
        if matches!(self.body, Body::Write { notify: Some(_) }) {
            flags |= FLAG_NOTIFY;
        }
        buf[4] = flags;
        buf[5] = self.status as u8;
        put16(buf, 6, payload_len);
        put32(buf, 8, self.src.job);
        put32(buf, 12, self.src.rank);
        put32(buf, 16, self.dst.job);
        put32(buf, 20, self.dst.rank);
        put32(buf, 24, self.epoch);
        put32(buf, 28, self.seq);
        put32(buf, 32, self.ack.unwrap_or(0));
        put32(buf, 36, self.op);
        put64(buf, 40, self.key);
        put64(buf, 48, self.addr);
        put16(buf, 56, self.frag.index);
        put16(buf, 58, self.frag.count);
        let e = HEADER_LEN;
        match self.body {
            Body::Write { notify: Some(n) } => {
                put64(buf, e, n.key);
                put64(buf, e + 8, n.addr);
                put64(buf, e + 16, n.addend);
            }
            Body::Read { len } => {
                put32(buf, e, len);
                put32(buf, e + 4, 0);
            }
            Body::Swap { operand } | Body::FetchAdd { operand } => put64(buf, e, operand),
            Body::AtomicReply { old } => put64(buf, e, old),
            Body::Cas { expected, new } => {
                put64(buf, e, expected);
                put64(buf, e + 8, new);
            }
            Body::Signal { handler } => {
                put32(buf, e, handler);
                put32(buf, e + 4, 0);
            }
            Body::Multicast {
                group,
                mcast,
                origin,
                arity,
            } => {
                put32(buf, e, group);
                put32(buf, e + 4, mcast);
                put32(buf, e + 8, origin.job);
                put32(buf, e + 12, origin.rank);
                buf[e + 16] = arity;
                buf[e + 17..e + 20].fill(0);
            }
            Body::McastAck {
                group,
                mcast,
                origin,
                count,
            } => {
                put32(buf, e, group);
                put32(buf, e + 4, mcast);
                put32(buf, e + 8, origin.job);
                put32(buf, e + 12, origin.rank);
                put32(buf, e + 16, count);
                put32(buf, e + 20, 0);
            }
            Body::Write { notify: None }
            | Body::ReadReply
            | Body::Fifo
            | Body::Status
            | Body::Ack => {}
        }
        let pe = e + self.body.ext_len();
        buf[pe..].copy_from_slice(self.payload);
        put32(buf, CHECK_FIELD, 0);
        if format == Format::Checksummed {
            let c = checksum(buf);
            put32(buf, CHECK_FIELD, c);
        }
        Ok(total)
    }

    /// Encodes into a new vector of exactly [`Packet::buffer_len`] bytes.
    pub fn to_vec(&self) -> Result<Vec<u8>, EmitError> {
        let mut v = vec![0; self.buffer_len()];
        self.emit(&mut v)?;
        Ok(v)
    }

    /// The selective-ack blocks of an ACK packet (empty for other kinds).
    pub fn sack_blocks(&self) -> impl Iterator<Item = (u32, u32)> + 'a {
        let p: &'a [u8] = if self.body == Body::Ack {
            self.payload
        } else {
            &[]
        };
        p.chunks_exact(8).map(|c| (be32(c, 0), be32(c, 4)))
    }
}

/// Length of the extension a packet of `kind` with `flags` carries.
fn ext_len_of(kind: Kind, flags: u8) -> usize {
    match kind {
        Kind::Write if flags & FLAG_NOTIFY != 0 => 24,
        Kind::Write => 0,
        Kind::Read | Kind::Swap | Kind::FetchAdd | Kind::AtomicReply | Kind::Signal => 8,
        Kind::Cas => 16,
        Kind::Multicast => 20,
        Kind::McastAck => 24,
        Kind::ReadReply | Kind::Fifo | Kind::Status | Kind::Ack => 0,
    }
}

/// The length the datagram at the front of `buf` declares in its header
/// (header, extension, payload and, when sealed, the [`SEAL_TAG_LEN`]-byte
/// tag), read without checking anything else; `None` when `buf` does not
/// start with a header of ours. How a receiver cuts what one `recvfrom`
/// returned, when the kernel coalesced several datagrams of one sender
/// (GRO), into those datagrams: all as long as the first but the last.
/// A lie only cuts the sender's own batch wrongly; every piece is then
/// refused by the checks each datagram passes anyway.
pub fn datagram_len(buf: &[u8]) -> Option<usize> {
    if buf.len() < HEADER_LEN || be16(buf, 0) != MAGIC {
        return None;
    }
    let tag = match Format::from_u8(buf[2])? {
        Format::Checksummed => 0,
        Format::Authenticated | Format::Encrypted => SEAL_TAG_LEN,
    };
    let kind = Kind::from_u8(buf[3])?;
    Some(HEADER_LEN + ext_len_of(kind, buf[4]) + be16(buf, 6) as usize + tag)
}

/// Rewrites the piggybacked acknowledgement of an encoded packet in place
/// and refreshes its checksum (checksummed format only: a sealed one is
/// sealed afresh when sent), so a stored packet can be retransmitted with
/// the current ack without re-encoding. Returns false (leaving `buf` alone)
/// when `buf` is shorter than a header.
pub fn patch_ack(buf: &mut [u8], ack: Option<u32>) -> bool {
    if buf.len() < HEADER_LEN {
        return false;
    }
    match ack {
        Some(a) => {
            buf[4] |= FLAG_ACK;
            put32(buf, 32, a);
        }
        None => {
            buf[4] &= !FLAG_ACK;
            put32(buf, 32, 0);
        }
    }
    if buf[2] == Format::Checksummed as u8 {
        let c = checksum(buf);
        put32(buf, CHECK_FIELD, c);
    }
    true
}

/// Reads the kind, sequence number and source of an encoded packet without
/// verifying it; `None` when `buf` is shorter than a header. For
/// bookkeeping of packets this side emitted itself.
pub fn peek_seq(buf: &[u8]) -> Option<u32> {
    (buf.len() >= HEADER_LEN).then(|| be32(buf, 28))
}

/// Encodes selective-ack blocks as an ACK payload. Extra blocks beyond
/// [`MAX_SACK_BLOCKS`] are dropped (the sender's timer covers them).
pub fn encode_sack(blocks: &[(u32, u32)], out: &mut Vec<u8>) {
    out.clear();
    for &(s, e) in blocks.iter().take(MAX_SACK_BLOCKS) {
        out.extend_from_slice(&s.to_be_bytes());
        out.extend_from_slice(&e.to_be_bytes());
    }
}

#[cfg(test)]
mod tests;
