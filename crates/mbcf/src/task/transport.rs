//! The transport seam: the [`Lane`] trait every transport implements, the
//! per-peer [`Route`] that `submit` goes through, and `submit` itself.
//!
//! In UCX terms a lane is a UCT transport below the protocol layer: it
//! carries one operation to one peer and says how it completes. A task
//! picks a route per peer when it joins (`shm` for a same-node peer
//! unless `SSS_TRANSPORT=udp`, `udp` otherwise) and every operation to
//! that peer goes through it. New transports (MPI, XDP) and
//! authentication plug in here: a lane, a [`TransportKind`], and a
//! [`Route`] variant.
//!
//! Dispatch is static: [`Route`] is an enum matched per operation, with
//! no allocation, lock or virtual call of its own.

use super::shm::ShmLane;
use super::udp::UdpLane;
use super::{keep_error, Inner, Options, Reply, ReqState, Request, Sink};
use crate::Error;
use sss_proto::{Op, OpOptions};
use sss_wire::TaskId;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// The transports a task can use, one per implementation of the crate's
/// internal `Lane` trait. [`crate::Task::transport_to`] tells which one
/// carries operations to a peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TransportKind {
    /// The protocol endpoint over the task's udp socket: reliable,
    /// ordered, retransmitted; any peer.
    Udp,
    /// Direct application into a same-node peer's memory; what it cannot
    /// apply (see `shm.rs`) goes over `udp`.
    Shm,
}

impl TransportKind {
    /// Every transport, for running something over each.
    pub const ALL: [TransportKind; 2] = [TransportKind::Udp, TransportKind::Shm];
}

/// One operation on its way to a peer, as a lane sees it.
pub(super) struct Submission<'a> {
    /// The target's rank, checked against the job.
    pub rank: u32,
    /// The target task.
    pub dst: TaskId,
    /// The operation; borrowed data is copied (or applied) before
    /// `submit` returns.
    pub op: Op<'a>,
    /// Status return and flow control, as the protocol sees them.
    pub opts: OpOptions,
    /// The application learns the outcome (a READ, an atomic, status
    /// return or a sink); otherwise only errors matter, and they go to
    /// FENCE/QUIET.
    pub tracked: bool,
    /// Where a tracked completion is delivered in local memory.
    pub sink: Option<Sink>,
}

/// What a lane did with an operation.
pub(super) enum Carried {
    /// Applied or refused before `submit` returned: the final outcome.
    Done(Result<Reply, Error>),
    /// On its way. A tracked operation's state is completed later by the
    /// progress engine, from the lane's completion events; `None` when the
    /// operation is not tracked (a failure then reaches FENCE/QUIET).
    Pending(Option<Arc<ReqState>>),
    /// This lane cannot carry this operation (a kind of memory or an
    /// operation it does not handle, a full queue it may not wait on):
    /// nothing was done, the caller tries the next lane.
    Declined,
}

/// A transport: carries one operation to one peer.
///
/// Promises of every lane:
/// - `submit` either carried the operation (`Done`, `Pending`), or did
///   nothing (`Declined`, `Err`); it never carries it twice.
/// - Operations from this task to one peer are applied in the order they
///   were submitted, exactly once, also across lanes: a lane that would
///   overtake operations another lane still has in flight waits for them
///   first.
/// - `submit` may block while the lane has no room (flow control), and
///   returns `Err` only for operations that can never be carried (a
///   down peer, a malformed operation).
pub(super) trait Lane {
    /// Which transport this is.
    fn kind(&self) -> TransportKind;

    /// Carries `sub` for `task`.
    fn submit(&self, task: &Inner, sub: &Submission<'_>) -> Result<Carried, Error>;
}

/// How a task reaches one peer: its first-choice lane, falling back to
/// `udp` for what it declines.
pub(super) enum Route {
    /// The protocol endpoint over udp.
    Udp(UdpLane),
    /// Same-node shared memory, with `udp` behind it.
    Shm(ShmLane),
}

impl Lane for Route {
    fn kind(&self) -> TransportKind {
        match self {
            Route::Udp(l) => l.kind(),
            Route::Shm(l) => l.kind(),
        }
    }

    /// Never `Declined`: `udp` carries whatever `shm` does not.
    #[inline]
    fn submit(&self, task: &Inner, sub: &Submission<'_>) -> Result<Carried, Error> {
        match self {
            Route::Udp(l) => l.submit(task, sub),
            Route::Shm(l) => match l.submit(task, sub)? {
                Carried::Declined => UdpLane.submit(task, sub),
                c => Ok(c),
            },
        }
    }
}

impl Inner {
    pub(super) fn submit(
        self: &Arc<Self>,
        rank: u32,
        op: Op<'_>,
        opts: Options,
    ) -> Result<Request, Error> {
        if self.shutdown.load(Ordering::Relaxed) {
            return Err(Error::Shutdown);
        }
        if rank >= self.size {
            return Err(Error::NoSuchTask(rank));
        }
        let status_return = opts.status_return || opts.sink.is_some();
        let tracked = status_return
            || matches!(
                op,
                Op::Read { .. } | Op::Swap { .. } | Op::Cas { .. } | Op::FetchAdd { .. }
            );
        let sub = Submission {
            rank,
            dst: TaskId::new(self.job, rank),
            op,
            opts: OpOptions {
                status_return,
                nofc: opts.nofc,
            },
            tracked,
            sink: opts.sink,
        };
        let state = match self.routes[rank as usize].submit(self, &sub)? {
            Carried::Pending(state) => state,
            Carried::Done(Ok(Reply::Done)) if !tracked => None,
            Carried::Done(Err(e)) if !tracked => {
                // Like a NACK for an operation without status return:
                // reported by fence/quiet.
                if let Ok(mut errs) = self.errors.lock() {
                    keep_error(&mut errs, e);
                }
                None
            }
            Carried::Done(r) => {
                let st = ReqState::new(sub.sink);
                st.complete(r, &self.errors);
                Some(st)
            }
            Carried::Declined => return Err(Error::Invalid("no transport reaches this task")),
        };
        Ok(Request {
            state: state.map(|st| (st, self.clone())),
        })
    }
}
