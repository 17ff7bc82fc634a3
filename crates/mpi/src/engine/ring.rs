//! Eager messages over udp above the FIFO's slot: a landing ring per
//! sender in every receiver.
//!
//! A message to a task across the network larger than the FIFO carries
//! eagerly (8 KiB) took the rendezvous: RTS, READ, reply, FIN, three
//! one-way trips before the receiver has it, where TCP transports send
//! it at once. Up to [`RING_MAX`] bytes it now goes in one: the sender
//! WRITEs the data into its region of the receiver's ring and pushes the
//! envelope (kind `Ring`, offset and end) into the FIFO after it. MBCF
//! applies one sender's operations in order, so the data has landed when
//! the envelope pops. The receiver copies it out (into the posted receive
//! or an unexpected message's own buffer), frees the space in order and
//! tells the sender how far it freed now and then ([`RETURN_EVERY`]),
//! with an 8-byte WRITE into the sender's segment. A sender that finds
//! no room takes the rendezvous: nothing waits for ring space.
//!
//! Each task's ring holds [`RING`] bytes per task of the job, in private
//! memory registered as a segment (no shared-memory space reserved);
//! pages are only backed where senders write. Jobs of more than
//! [`RING_TASKS`] tasks, and peers on the same node, have no ring.

use crate::envelope::Env;
use sss_mbcf::{RemoteAddr, Segment, Task};

/// Bytes of a sender's region in a receiver's ring.
pub(crate) const RING: u64 = 256 << 10;
/// Largest message sent through a ring.
pub(crate) const RING_MAX: usize = 64 << 10;
/// Largest job with rings (their memory grows with the job).
pub(crate) const RING_TASKS: u32 = 256;
/// Freed bytes that make the receiver tell the sender.
const RETURN_EVERY: u64 = RING / 4;

/// Where a message goes in a peer's ring.
pub(super) struct Place {
    /// Where its bytes are written.
    pub at: RemoteAddr,
    /// Its offset in our region of the peer's ring.
    pub off: u64,
    /// Bytes placed in that region once it is (its end, never wrapping).
    pub end: u64,
}

/// Both sides of the rings of one task.
pub(super) struct Rings {
    /// Our ring: one region of [`RING`] bytes per sender.
    seg: Option<Segment>,
    /// Per peer: the start of our region in its ring, or `None`.
    remote: Vec<Option<RemoteAddr>>,
    /// Per peer: bytes placed so far in our region of its ring.
    head: Vec<u64>,
    /// Per sender: bytes of its region freed here, in order.
    freed: Vec<u64>,
    /// Per sender: the last `freed` told it.
    returned: Vec<u64>,
}

impl Rings {
    /// Our ring for a job of `size` tasks, or `None` when the job has
    /// none (too large, or nobody across the network).
    pub(super) fn alloc(task: &Task, size: u32, any_udp: bool) -> Option<Segment> {
        if !any_udp || size > RING_TASKS {
            return None;
        }
        crate::buf::ring_segment(task, (u64::from(size) * RING) as usize).ok()
    }

    /// Rings with `seg` ours and `remote` the start of our region in
    /// each peer's (`None` for peers without one).
    pub(super) fn new(seg: Option<Segment>, remote: Vec<Option<RemoteAddr>>) -> Rings {
        let n = remote.len();
        Rings {
            seg,
            remote,
            head: vec![0; n],
            freed: vec![0; n],
            returned: vec![0; n],
        }
    }

    /// Room for `len` bytes in our region of `w`'s ring, given that `w`
    /// freed `freed` bytes of it; `None` when there is no ring or no room.
    pub(super) fn place(&mut self, w: u32, len: usize, freed: u64) -> Option<Place> {
        let base = (*self.remote.get(w as usize)?)?;
        if len > RING_MAX {
            return None;
        }
        let head = self.head[w as usize];
        let len = len as u64;
        // A message never wraps: skip the region's tail when it would.
        let start = if head % RING + len > RING {
            head.next_multiple_of(RING)
        } else {
            head
        };
        let end = start + len;
        if end.saturating_sub(freed) > RING {
            return None;
        }
        self.head[w as usize] = end;
        let off = start % RING;
        Some(Place {
            at: RemoteAddr {
                addr: base.addr + off,
                ..base
            },
            off,
            end,
        })
    }

    /// Copies the message `env` announces from `src`'s region into `out`
    /// and frees its space; false (nothing freed) when the envelope does
    /// not describe the next message of that region: another task wrote
    /// it, so nothing in it is trusted.
    pub(super) fn take(&mut self, src: u32, env: &Env, out: &mut Vec<u8>) -> bool {
        let (Some(seg), Some(freed)) = (&self.seg, self.freed.get(src as usize).copied()) else {
            return false;
        };
        if !next_in_region(freed, env) {
            return false;
        }
        let (len, off, end) = (env.len, env.addr, env.key);
        out.clear();
        out.resize(len as usize, 0);
        let at = u64::from(src) * RING + off;
        if seg.read_bytes(at as usize, out).is_err() {
            return false;
        }
        self.freed[src as usize] = end;
        true
    }

    /// Senders due to hear how far we freed their region: (rank, value).
    pub(super) fn returns(&mut self) -> Vec<(u32, u64)> {
        let mut due = Vec::new();
        for (r, (f, back)) in self.freed.iter().zip(&mut self.returned).enumerate() {
            if *f - *back >= RETURN_EVERY {
                *back = *f;
                due.push((r as u32, *f));
            }
        }
        due
    }
}

/// Whether `env` describes a message a sender could have placed next in
/// a region of which `freed` bytes were freed: within [`RING_MAX`], not
/// wrapping, ending past `freed` and at most a region ahead of it.
fn next_in_region(freed: u64, env: &Env) -> bool {
    let (len, off, end) = (env.len, env.addr, env.key);
    len <= RING_MAX as u64
        && off.checked_add(len).is_some_and(|e| e <= RING)
        && end > freed
        && end - freed <= RING
        && end.checked_sub(len).is_some_and(|s| s % RING == off)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::envelope::Kind;

    fn rings() -> Rings {
        let base = RemoteAddr {
            rank: 1,
            key: 9,
            addr: 1 << 20,
        };
        Rings::new(None, vec![None, Some(base)])
    }

    #[test]
    fn messages_never_wrap_and_never_overrun_what_was_freed() {
        let mut r = rings();
        assert!(r.place(0, 10, 0).is_none(), "no ring to that peer");
        assert!(r.place(1, RING_MAX + 1, 0).is_none(), "too large");
        let a = r.place(1, 60 << 10, 0).unwrap();
        assert_eq!((a.off, a.end, a.at.addr), (0, 60 << 10, 1 << 20));
        let b = r.place(1, 60 << 10, 0).unwrap();
        let c = r.place(1, 60 << 10, 0).unwrap();
        let d = r.place(1, 60 << 10, 0).unwrap();
        assert_eq!((b.off, c.off, d.off), (60 << 10, 120 << 10, 180 << 10));
        // 240 KiB placed: the next 64 KiB would wrap, so it skips to the
        // region's start, and needs the first 64 KiB freed.
        assert!(r.place(1, 64 << 10, 0).is_none());
        assert!(r.place(1, 64 << 10, 60 << 10).is_none());
        let e = r.place(1, 64 << 10, 64 << 10).unwrap();
        assert_eq!((e.off, e.end), (0, RING + (64 << 10)));
        // Small ones fill on from there.
        assert!(r.place(1, 100, 64 << 10).is_none(), "full");
        let f = r.place(1, 100, 120 << 10).unwrap();
        assert_eq!((f.off, f.end), (64 << 10, RING + (64 << 10) + 100));
    }

    #[test]
    fn a_receiver_takes_only_the_next_message_of_a_region() {
        let mut r = rings();
        let env = |len: u64, off: u64, end: u64| Env {
            kind: Kind::Ring,
            flags: 0,
            ctx: 0,
            tag: 0,
            len,
            sreq: 0,
            key: end,
            addr: off,
        };
        assert!(next_in_region(0, &env(10, 0, 10)));
        assert!(next_in_region(
            64 << 10,
            &env(64 << 10, 0, RING + (64 << 10))
        ));
        assert!(!next_in_region(100, &env(64 << 10, 0, RING + (64 << 10))));
        for (freed, bad) in [
            (0, env(RING_MAX as u64 + 1, 0, RING_MAX as u64 + 1)),
            (0, env(100, RING - 50, RING + 50)),
            (10, env(10, 0, 10)),
            (0, env(10, 5, 10)),
            (0, env(10, 0, RING + 10)),
            (0, env(u64::MAX, 0, 10)),
            (0, env(10, u64::MAX, 10)),
            (u64::MAX - 5, env(10, 0, u64::MAX)),
        ] {
            assert!(!next_in_region(freed, &bad), "{freed} {bad:?}");
        }
        // No segment here: refused, whatever the envelope says.
        let mut out = Vec::new();
        assert!(!r.take(1, &env(10, 0, 10), &mut out));
        assert!(!r.take(7, &env(10, 0, 10), &mut out));
        assert_eq!(r.freed, [0, 0]);
        assert!(r.returns().is_empty());
    }
}
