//! The envelope in front of every message in a receiver's FIFO.
//!
//! Fixed 48 bytes, little-endian: kind (1), flags (1), 2 zero bytes,
//! context (4), tag (4), 4 zero bytes, length (8), the sender's request
//! (8), and for a rendezvous the key (8) and address (8) of the staged
//! data in the sender (for a message in the receiver's ring, the end
//! and the offset of its place there). An eager message carries its
//! data after it.

/// Bytes of the envelope.
pub(crate) const ENV_LEN: usize = 48;

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
}

/// Flag: the sender waits for a [`Kind::SyncAck`].
pub(crate) const FLAG_SYNC: u8 = 1;

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
    pub(crate) fn encode_into(&self, data: &[u8], b: &mut Vec<u8>) {
        b.clear();
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
}
