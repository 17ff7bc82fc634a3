//! FIFO queues a task created in its own segments ([`Fifo`]): where
//! peers push and where the owner pops.

use super::Task;
use crate::fifo::Ring;
use crate::segment::Segment;
use crate::{Error, RemoteAddr};

/// A FIFO queue this task created; pop messages from it here.
pub struct Fifo {
    /// Geometry fixed at creation: the header in segment memory is not
    /// trusted again, peers with WRITE may have changed it.
    ring: Ring,
    at: RemoteAddr,
    _seg: Segment,
}

impl Fifo {
    /// Where peers push.
    pub fn addr(&self) -> RemoteAddr {
        self.at
    }

    fn ring(&self) -> Ring {
        self.ring
    }

    /// Pops the oldest message into `out`; returns the sender's rank.
    pub fn pop(&mut self, out: &mut Vec<u8>) -> Option<u32> {
        self.ring().pop(out)
    }

    /// Messages waiting.
    pub fn len(&self) -> usize {
        self.ring().len()
    }

    /// True when no whole message waits (one being pushed right now
    /// counts once its pusher is done, before the pusher wakes anyone).
    pub fn is_empty(&self) -> bool {
        !self.ring().ready()
    }

    /// Waits for a message and pops it.
    pub fn wait_pop(&mut self, task: &Task, out: &mut Vec<u8>) -> u32 {
        let mut from = None;
        task.inner.wait_until(
            || {
                from = self.ring().pop(out);
                from.is_some()
            },
            None,
        );
        from.unwrap_or(u32::MAX)
    }
}

impl Task {
    /// Creates a FIFO queue of `slots` (a power of two) messages of at
    /// most `max_msg` bytes at `offset` (64-byte aligned) in `seg`.
    pub fn fifo_create(
        &self,
        seg: &Segment,
        offset: usize,
        slots: u32,
        max_msg: usize,
    ) -> Result<Fifo, Error> {
        let bytes = crate::fifo::fifo_bytes(slots, max_msg);
        if offset.checked_add(bytes).is_none_or(|e| e > seg.len()) {
            return Err(Error::Invalid("queue does not fit in the segment"));
        }
        let mem = seg.check(offset, bytes)?;
        let ring = Ring::create(mem, slots, max_msg).map_err(Error::Invalid)?;
        Ok(Fifo {
            ring,
            at: seg.info.at(offset as u64),
            _seg: seg.clone(),
        })
    }
}
