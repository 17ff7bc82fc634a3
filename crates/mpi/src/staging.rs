//! Staging memory of rendezvous sends: the data a receiver READs.
//!
//! Messages are carved from a few large segments (bump allocation, a
//! segment is reset once every message in it was read), not one segment
//! each: same-node peers reach only the first segments of a task's
//! published table directly, beyond that READs fall back to udp.

use crate::consts::err;
use crate::engine::MpiErr;
use sss_mbcf::{Perm, RemoteAddr, Segment, Task};
use std::time::{Duration, Instant};

/// Smallest staging segment.
const CHUNK: usize = 8 << 20;
/// Idle segments kept beyond this many bytes are freed once they sat
/// idle for [`IDLE_FREE`].
const KEEP: usize = 64 << 20;
/// How long a segment beyond [`KEEP`] stays idle before it is freed: a
/// window of large sends reuses its segments from one round to the next
/// instead of freeing and faulting them in again (both here and in the
/// receiver's mapping) every round.
const IDLE_FREE: Duration = Duration::from_secs(1);

struct Chunk {
    seg: Segment,
    used: usize,
    live: usize,
    /// Since when no message lives in it.
    idle_since: Option<Instant>,
}

/// Where a staged message is: chunk index, offset and length.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Slot {
    chunk: usize,
    off: usize,
    len: usize,
}

/// The staging segments of one task.
#[derive(Default)]
pub(crate) struct Staging {
    chunks: Vec<Option<Chunk>>,
    /// Segments allocated so far.
    made: u64,
}

impl Slot {
    /// The staged message's length in bytes.
    pub(crate) fn len(&self) -> usize {
        self.len
    }
}

impl Staging {
    /// Copies `data` into staging memory; where peers READ it, and the
    /// slot to release once they did.
    pub(crate) fn stage(&mut self, task: &Task, data: &[u8]) -> Result<(RemoteAddr, Slot), MpiErr> {
        let len = data.len().next_multiple_of(64);
        let fits = |c: &Chunk| c.seg.len() - c.used >= len;
        let i = match self
            .chunks
            .iter()
            .position(|c| c.as_ref().is_some_and(fits))
        {
            Some(i) => i,
            None => {
                let size = len.max(CHUNK).next_power_of_two();
                let seg = task.alloc(size, Perm::READ).map_err(|e| {
                    MpiErr::new(err::NO_MEM, format!("staging {} bytes: {e}", data.len()))
                })?;
                self.made += 1;
                let c = Some(Chunk {
                    seg,
                    used: 0,
                    live: 0,
                    idle_since: None,
                });
                match self.chunks.iter().position(Option::is_none) {
                    Some(free) => {
                        self.chunks[free] = c;
                        free
                    }
                    None => {
                        self.chunks.push(c);
                        self.chunks.len() - 1
                    }
                }
            }
        };
        let Some(c) = self.chunks[i].as_mut() else {
            return Err(MpiErr::new(err::INTERN, "staging chunk vanished"));
        };
        let off = c.used;
        c.seg
            .write_bytes(off, data)
            .map_err(|e| MpiErr::new(err::INTERN, format!("staging: {e}")))?;
        c.used += len;
        c.live += 1;
        c.idle_since = None;
        Ok((
            c.seg.info().at(off as u64),
            Slot {
                chunk: i,
                off,
                len: data.len(),
            },
        ))
    }

    /// Segments allocated so far.
    pub(crate) fn segments_made(&self) -> u64 {
        self.made
    }

    /// The staged bytes of `slot` (until it is released).
    pub(crate) fn bytes(&self, slot: &Slot) -> Option<&[u8]> {
        let c = self.chunks.get(slot.chunk)?.as_ref()?;
        crate::buf::segment_bytes(&c.seg, slot.off, slot.len)
    }

    /// The message in `slot` was read: its chunk is reused once empty,
    /// and freed once it sat idle for [`IDLE_FREE`] while more than
    /// [`KEEP`] bytes are idle.
    pub(crate) fn release(&mut self, task: &Task, slot: Slot) {
        let Some(Some(c)) = self.chunks.get_mut(slot.chunk) else {
            return;
        };
        c.live = c.live.saturating_sub(1);
        if c.live > 0 {
            return;
        }
        c.used = 0;
        let now = Instant::now();
        c.idle_since = Some(now);
        let mut idle: usize = self
            .chunks
            .iter()
            .flatten()
            .filter(|c| c.live == 0)
            .map(|c| c.seg.len())
            .sum();
        for slot in &mut self.chunks {
            if idle <= KEEP {
                break;
            }
            let old = slot
                .as_ref()
                .and_then(|c| c.idle_since)
                .is_some_and(|t| now.duration_since(t) >= IDLE_FREE);
            if let Some(c) = slot.take_if(|_| old) {
                idle -= c.seg.len();
                let _ = task.free(c.seg);
            }
        }
    }
}
