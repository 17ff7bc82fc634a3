//! The `shm` lane: operations applied by the sender straight into a
//! same-node peer's memory (the mechanics are in the crate's `shm.rs`).
//!
//! Reliable and synchronous: an operation it carries is applied (or
//! refused) before `submit` returns, so it completes with
//! [`Carried::Done`] and never needs the progress engine. What it cannot
//! apply — atomics, notifies or FIFOs in registered memory, segments
//! beyond the published table, large SIGNALs, a full signal ring — it
//! declines, and the route sends it over `udp`.

use super::transport::{Carried, Lane, Submission, TransportKind};
use super::{status_error, Inner};
use crate::shm::{Direct, Peer, SignalWake};
use crate::spin::SpinMutex;
use crate::sys::Mapping;
use crate::Error;
use sss_proto::Op;
use sss_wire::Status;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// The `shm` lane to one peer: its control block and mapped segments.
pub(super) struct ShmLane {
    peer: SpinMutex<Peer>,
}

impl ShmLane {
    pub(super) fn new(peer: Peer) -> Self {
        Self {
            peer: SpinMutex::new(peer),
        }
    }
}

impl ShmLane {
    /// The peer's shared-memory segment `key`, mapped here (see
    /// [`crate::Task::map_peer`]).
    pub(super) fn map_segment(
        &self,
        key: u64,
        need: crate::Perm,
    ) -> Result<Option<(Arc<Mapping>, u64)>, Status> {
        self.peer.lock().map_segment(key, need)
    }

    /// The peer's FIFO queue at (`key`, `addr`), opened for pushes
    /// straight into its slots (see [`crate::Task::fifo_sender`]).
    pub(super) fn open_fifo(
        &self,
        key: u64,
        addr: u64,
    ) -> Result<Option<crate::shm::OpenFifo>, Status> {
        self.peer.lock().open_fifo(key, addr)
    }
}

impl Lane for ShmLane {
    fn kind(&self) -> TransportKind {
        TransportKind::Shm
    }

    #[inline]
    fn submit(&self, task: &Inner, sub: &Submission<'_>) -> Result<Carried, Error> {
        let (rank, dst) = (sub.rank, sub.dst);
        // Keep issue order with earlier operations that went over udp.
        if task.udp_used[rank as usize].load(Ordering::Acquire)
            && task.lock_net().ep.in_flight(dst) > 0
        {
            task.wait_until(|| task.lock_net().ep.in_flight(dst) == 0, None);
        }
        let mut p = self.peer.lock();
        let Direct::Done(r) = p.apply(task.rank, &sub.op) else {
            return Ok(Carried::Declined);
        };
        if matches!(sub.op, Op::Signal { .. }) && p.signal_wake() == SignalWake::Doorbell {
            // Doorbell: a one-byte datagram wakes its poll.
            let _ = task
                .sock
                .send_to(&crate::shm::DOORBELL, task.peers[rank as usize].addr);
        }
        drop(p);
        if r.is_ok() {
            task.prewake(rank);
        }
        Ok(Carried::Done(r.map_err(|s| status_error(s, rank))))
    }
}
