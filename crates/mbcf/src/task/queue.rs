//! FIFO queues a task created in its own segments ([`Fifo`]): where
//! peers push and where the owner pops.

use super::Task;
use crate::fifo::Ring;
use crate::segment::Segment;
use crate::{Error, RemoteAddr};
use std::sync::atomic::Ordering;

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

    /// A handle that tells whether a message waits, without the
    /// [`Fifo`] itself: for a wait predicate that must not take the lock
    /// the owner keeps the FIFO under.
    pub fn probe(&self) -> FifoProbe {
        FifoProbe {
            ring: self.ring,
            _seg: self._seg.clone(),
        }
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

/// Whether a [`Fifo`] has a whole message waiting (see [`Fifo::probe`]);
/// keeps the queue's memory mapped while it exists.
pub struct FifoProbe {
    ring: Ring,
    _seg: Segment,
}

impl FifoProbe {
    /// As [`Fifo::is_empty`], negated.
    pub fn ready(&self) -> bool {
        self.ring.ready()
    }
}

/// A same-node task's FIFO queue opened for pushes straight into its
/// slots ([`Task::fifo_sender`]): what [`Task::fifo_push`] does there,
/// without finding the queue's segment in the owner's table, mapping it
/// and reading its geometry again on every push. One entry of the
/// owner's table is still read per push: a queue its owner freed, moved
/// or made read-only since is pushed through [`Task::fifo_push`], which
/// reports it.
pub struct FifoSender {
    fifo: crate::shm::OpenFifo,
    at: RemoteAddr,
    task: Task,
}

impl FifoSender {
    /// Pushes `msg`, as [`Task::fifo_push`] to the queue would, complete
    /// on return; a refusal (`FifoFull`, a freed queue) comes back here,
    /// where `fifo_push` without status return leaves it to
    /// [`Task::fence`].
    pub fn push(&self, msg: &[u8]) -> Result<(), Error> {
        let inner = &self.task.inner;
        let rank = self.at.rank;
        let behind_udp = inner.udp_used[rank as usize].load(Ordering::Acquire)
            && inner
                .lock_net()
                .ep
                .in_flight(sss_wire::TaskId::new(inner.job, rank))
                > 0;
        if behind_udp || inner.shutdown.load(Ordering::Relaxed) {
            // Earlier operations to it still travel over udp: the
            // operation path waits for them (issue order); its errors
            // surface as `Task::fifo_push`'s do.
            return self
                .task
                .fifo_push(self.at, msg, crate::Options::default())
                .map(drop);
        }
        if !self.fifo.current() {
            // Freed, moved or no longer writable: what the operation path
            // says of it, at once (it completes before returning here).
            let opts = crate::Options {
                status_return: true,
                ..crate::Options::default()
            };
            return self
                .task
                .fifo_push(self.at, msg, opts)
                .and_then(crate::Request::wait)
                .map(drop);
        }
        let r = self.fifo.landed(
            self.fifo
                .ring
                .push_parts(inner.rank, &[msg], &self.fifo.seen),
        );
        if r.is_ok() {
            inner.prewake(rank);
        }
        r.map_err(|s| super::status_error(s, rank))
    }

    /// The queue.
    pub fn addr(&self) -> RemoteAddr {
        self.at
    }
}

impl Task {
    /// Opens `queue`, a FIFO queue of a task on this node in shared
    /// memory, for pushes straight into its slots; `Ok(None)` for any
    /// other queue (push those with [`Task::fifo_push`]). Refused as a
    /// push would be: no WRITE permission, out of bounds, not a queue.
    pub fn fifo_sender(&self, queue: RemoteAddr) -> Result<Option<FifoSender>, Error> {
        let Some(super::transport::Route::Shm(lane)) = self.inner.routes.get(queue.rank as usize)
        else {
            return Ok(None);
        };
        match lane.open_fifo(queue.key, queue.addr) {
            Ok(Some(fifo)) => Ok(Some(FifoSender {
                fifo,
                at: queue,
                task: self.clone(),
            })),
            Ok(None) => Ok(None),
            Err(s) => Err(super::status_error(s, queue.rank)),
        }
    }

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
