//! The envelope in front of every message in a receiver's FIFO.
//!
//! Fixed 48 bytes, little-endian: kind (1), flags (1), 2 zero bytes,
//! context (4), tag (4), 4 zero bytes, length (8), the sender's request
//! (8), and for a rendezvous the key (8) and address (8) of the staged
//! data in the sender (for a message in the receiver's ring, the end
//! and the offset of its place there). An eager message carries its
//! data after it.
//!
//! An eager message that asks for no answer (not synchronous) goes with
//! a short envelope of 12 bytes instead: kind 8 (1), flags 0 (1), 2 zero
//! bytes, context (4), tag (4); its length is the rest of the message.
//! Behind the FIFO slot's 16-byte header, a message of up to 36 bytes
//! then fills one cache line where the long envelope took two: one line
//! for the sender to own and the receiver to fetch, not two in turn.

/// Bytes of the envelope.
pub(crate) const ENV_LEN: usize = 48;
/// Bytes of the short envelope of an eager message.
pub(crate) const SHORT_LEN: usize = 12;
/// The short envelope's kind byte.
const SHORT: u8 = 8;
// Behind MBCF's 16-byte slot header, a message of up to 36 bytes fills
// one 64-byte line of the receiver's FIFO.
const _: () = assert!(16 + SHORT_LEN + 36 <= 64);

/// What a FIFO message is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Envelope and data.
    Eager = 1,
    /// Request to send: the receiver READs the staged data.
    Rts = 2,
    /// Receiver to sender: the staged data was read, release it.
    Fin = 3,
    /// Receiver to sender: a synchronous send was matched.
    SyncAck = 4,
    /// The data waits in the receiver's ring (`engine/ring.rs`): at
    /// offset `addr` of the sender's region, which holds `key` bytes
    /// placed once it is there.
    Ring = 5,
    /// Receiver to sender, for a rendezvous across the network: write
    /// `len` bytes at `key`/`addr` (the receive buffer, registered),
    /// then send DONE naming `key`.
    Cts = 6,
    /// Sender to receiver: the data was written at `key` (after the WRITE,
    /// in order).
    Done = 7,
    /// Receiver to sender: receive `sreq` was posted with `ctx` and `tag`
    /// (or `ANY_TAG`) when `seq` (the 8 bytes after the envelope) of the
    /// sender's messages had been taken; `len` bytes at `key`/`addr` are
    /// registered for the sender's WRITE (`key` 0: none). See
    /// `engine/direct.rs`.
    Notice = 9,
    /// Sender to receiver: a message (`ctx`, `tag`, `len`; `sreq` the
    /// sender's request, for a synchronous send) was written into the
    /// registered buffer of noticed receive `key`, after the WRITE in
    /// order; it is the sender's message number `addr`.
    Direct = 10,
    /// Receiver to sender: noticed receive `sreq` is being cancelled.
    Revoke = 11,
    /// Sender to receiver: no message of the sender goes to noticed
    /// receive `sreq` after this one.
    Revoked = 12,
    /// Sender to receiver: the sender writes no more receives posted
    /// first directly; send no more notices.
    NoDirect = 13,
}

/// Flag: the sender waits for a [`Kind::SyncAck`].
pub(crate) const FLAG_SYNC: u8 = 1;
/// Flag of a [`Kind::Rts`] to a task on the same node: the data was not
/// staged; it stays in the sender's own memory at `addr` (`key` 0) until
/// the receiver, reading it from there, answers [`Kind::Fin`].
pub(crate) const FLAG_PEER_READ: u8 = 2;

/// A decoded envelope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Env {
    pub kind: Kind,
    pub flags: u8,
    pub ctx: u32,
    pub tag: i32,
    pub len: u64,
    pub sreq: u64,
    pub key: u64,
    pub addr: u64,
}

impl Env {
    /// A control message (FIN, SyncAck) naming the sender's request.
    pub(crate) fn control(kind: Kind, sreq: u64) -> Env {
        Env {
            kind,
            flags: 0,
            ctx: 0,
            tag: 0,
            len: 0,
            sreq,
            key: 0,
            addr: 0,
        }
    }

    /// The envelope followed by `data`.
    pub(crate) fn encode(&self, data: &[u8]) -> Vec<u8> {
        let mut b = Vec::with_capacity(ENV_LEN + data.len());
        self.encode_into(data, &mut b);
        b
    }

    /// [`Env::encode`] into `b` (cleared first), reusing its allocation.
    /// Encodes into `b` (cleared first): the short envelope for an eager
    /// message without flags (nothing but its context and tag matter to
    /// the receiver), the long one otherwise.
    pub(crate) fn encode_into(&self, data: &[u8], b: &mut Vec<u8>) {
        b.clear();
        if self.kind == Kind::Eager && self.flags == 0 {
            b.reserve(SHORT_LEN + data.len());
            b.extend_from_slice(&[SHORT, 0, 0, 0]);
            b.extend_from_slice(&self.ctx.to_le_bytes());
            b.extend_from_slice(&self.tag.to_le_bytes());
            b.extend_from_slice(data);
            return;
        }
        b.extend_from_slice(&[self.kind as u8, self.flags, 0, 0]);
        b.extend_from_slice(&self.ctx.to_le_bytes());
        b.extend_from_slice(&self.tag.to_le_bytes());
        b.extend_from_slice(&[0; 4]);
        b.extend_from_slice(&self.len.to_le_bytes());
        b.extend_from_slice(&self.sreq.to_le_bytes());
        b.extend_from_slice(&self.key.to_le_bytes());
        b.extend_from_slice(&self.addr.to_le_bytes());
        b.extend_from_slice(data);
    }

    /// The envelope of `msg` and its data; `None` for anything malformed
    /// (another task wrote it: nothing in it is trusted).
    pub(crate) fn decode(msg: &[u8]) -> Option<(Env, &[u8])> {
        if msg.first() == Some(&SHORT) {
            let h = msg.get(..SHORT_LEN)?;
            let word = |i: usize| u32::from_le_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]);
            if h[1..4] != [0, 0, 0] {
                return None;
            }
            let data = &msg[SHORT_LEN..];
            let env = Env {
                kind: Kind::Eager,
                flags: 0,
                ctx: word(4),
                tag: word(8) as i32,
                len: data.len() as u64,
                sreq: 0,
                key: 0,
                addr: 0,
            };
            return Some((env, data));
        }
        let h = msg.get(..ENV_LEN)?;
        let u32_at = |i: usize| u32::from_le_bytes(h[i..i + 4].try_into().unwrap_or([0; 4]));
        let u64_at = |i: usize| u64::from_le_bytes(h[i..i + 8].try_into().unwrap_or([0; 8]));
        let kind = match h[0] {
            1 => Kind::Eager,
            2 => Kind::Rts,
            3 => Kind::Fin,
            4 => Kind::SyncAck,
            5 => Kind::Ring,
            6 => Kind::Cts,
            7 => Kind::Done,
            9 => Kind::Notice,
            10 => Kind::Direct,
            11 => Kind::Revoke,
            12 => Kind::Revoked,
            13 => Kind::NoDirect,
            _ => return None,
        };
        let env = Env {
            kind,
            flags: h[1],
            ctx: u32_at(4),
            tag: u32_at(8) as i32,
            len: u64_at(16),
            sreq: u64_at(24),
            key: u64_at(32),
            addr: u64_at(40),
        };
        let data = &msg[ENV_LEN..];
        // An eager envelope states exactly the data that follows it.
        let ok = match kind {
            Kind::Eager => env.len == data.len() as u64,
            Kind::Notice => data.len() == 8,
            _ => data.is_empty(),
        };
        ok.then_some((env, data))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_refuses_malformed() {
        let e = Env {
            kind: Kind::Eager,
            flags: FLAG_SYNC,
            ctx: 7,
            tag: -2,
            len: 3,
            sreq: 99,
            key: 1,
            addr: 2,
        };
        let b = e.encode(b"abc");
        assert_eq!(Env::decode(&b), Some((e, &b"abc"[..])));
        assert_eq!(Env::decode(&b[..b.len() - 1]), None, "length disagrees");
        assert_eq!(Env::decode(&b[..10]), None, "short");
        let mut bad = b.clone();
        bad[0] = 9;
        assert_eq!(Env::decode(&bad), None, "unknown kind");
    }

    #[test]
    fn every_kind_decodes_and_garbage_does_not_panic() {
        let base = Env {
            kind: Kind::Eager,
            flags: FLAG_SYNC,
            ctx: 3,
            tag: 5,
            len: 0,
            sreq: 9,
            key: 11,
            addr: 13,
        };
        for kind in [
            Kind::Eager,
            Kind::Rts,
            Kind::Fin,
            Kind::SyncAck,
            Kind::Ring,
            Kind::Cts,
            Kind::Done,
            Kind::Notice,
            Kind::Direct,
            Kind::Revoke,
            Kind::Revoked,
            Kind::NoDirect,
        ] {
            let data: &[u8] = match kind {
                Kind::Eager => b"xyz",
                Kind::Notice => &[1, 0, 0, 0, 0, 0, 0, 0],
                _ => &[],
            };
            let e = Env {
                kind,
                len: if kind == Kind::Eager { 3 } else { 40 },
                ..base
            };
            assert!(crate::fuzz_envelope(&e.encode(data)), "{kind:?}");
            // A NOTICE without its count, or anything else with bytes
            // after it, is refused.
            if kind != Kind::Eager {
                let mut more = e.encode(data);
                more.push(0);
                assert!(!crate::fuzz_envelope(&more), "{kind:?}");
            }
        }
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        for n in 0..20_000 {
            let mut b = vec![0u8; n % 80];
            for x in &mut b {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                *x = seed as u8;
            }
            if let Some(k) = b.first_mut() {
                *k %= 16;
            }
            crate::fuzz_envelope(&b);
        }
    }

    #[test]
    fn plain_eager_messages_take_the_short_envelope() {
        let e = Env {
            kind: Kind::Eager,
            flags: 0,
            ctx: 0x0102_0304,
            tag: -7,
            len: 8,
            sreq: 0,
            key: 0,
            addr: 0,
        };
        let b = e.encode(&[9; 8]);
        assert_eq!(b.len(), SHORT_LEN + 8);
        assert_eq!(Env::decode(&b), Some((e, &[9u8; 8][..])));
        // The sender's request is not sent: only a synchronous message's
        // answer needs it, and that one keeps the long envelope.
        let with_req = Env { sreq: 42, ..e };
        assert_eq!(with_req.encode(&[9; 8]), b);
        let sync = Env {
            flags: FLAG_SYNC,
            sreq: 42,
            ..e
        };
        let long = sync.encode(&[9; 8]);
        assert_eq!(long.len(), ENV_LEN + 8);
        assert_eq!(Env::decode(&long), Some((sync, &[9u8; 8][..])));
        // Empty, and malformed: short, or flags where none may be.
        let empty = Env { len: 0, ..e };
        assert_eq!(Env::decode(&empty.encode(&[])), Some((empty, &[][..])));
        assert_eq!(Env::decode(&b[..SHORT_LEN - 1]), None);
        let mut bad = b.clone();
        bad[1] = FLAG_SYNC;
        assert_eq!(Env::decode(&bad), None);
    }
}
