//! The objects behind the C handles, in safe Rust. The FFI module only
//! checks and converts pointers and forwards here.
//!
//! C callers may drop a request (pass no `sss_request_h`), but MBCF
//! reports the errors of requests that track a result (READ, atomics,
//! status return) through the request only. A task therefore keeps such
//! detached requests and hands their errors to the next `sss_fence` or
//! `sss_quiet`, the way MBCF does for untracked operations.

use crate::status::{Failure, Status};
use sss_mbcf::{Error, Fifo, RemoteAddr, Request, Segment, SignalContext, Task};
use std::cell::Cell;
use std::ops::DerefMut;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

/// Errors kept at most per task between two fences; later ones are
/// counted only, the first are what fence/quiet report.
const MAX_ERRORS: usize = 64;
/// Detached requests kept before completed ones are swept out.
const SWEEP_MIN: usize = 64;

/// True while this process has a task from `sss_init`: tasks join the job
/// through process-wide launcher variables, so there is one per process.
static LIVE: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// True on a thread while it runs a C signal handler.
    static IN_HANDLER: Cell<bool> = const { Cell::new(false) };
}

/// Refuses calls a signal handler must not make: collectives (they block
/// the progress thread until every other task arrives, stalling what they
/// send us) and `sss_finalize` (it joins the progress thread). Waiting for
/// operations is fine there: MBCF makes progress inline.
pub(crate) fn not_in_handler() -> Result<(), Failure> {
    if IN_HANDLER.with(Cell::get) {
        return Err(Failure::new(
            Status::InHandler,
            "collective or sss_finalize inside a signal handler",
        ));
    }
    Ok(())
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // The protected state stays consistent across a panic (every update is
    // a single push or take), so a poisoned lock is still usable.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[derive(Default)]
struct Detached {
    /// Pending requests nobody holds, with their target rank.
    reqs: Vec<(u32, Request)>,
    /// Errors of completed detached requests, oldest first.
    errors: Vec<(u32, Failure)>,
    /// Errors dropped because `errors` was full.
    dropped: u64,
    /// Sweep when `reqs` reaches this length.
    limit: usize,
}

impl Detached {
    fn record(&mut self, rank: u32, r: Result<sss_mbcf::Reply, Error>) {
        if let Err(e) = r {
            if self.errors.len() < MAX_ERRORS {
                self.errors.push((rank, e.into()));
            } else {
                self.dropped += 1;
            }
        }
    }

    /// Moves completed requests (of `rank`, or all) into `errors`.
    fn sweep(&mut self, rank: Option<u32>) {
        for (r, req) in std::mem::take(&mut self.reqs) {
            if req.is_done() && rank.is_none_or(|x| x == r) {
                self.record(r, req.wait());
            } else {
                self.reqs.push((r, req));
            }
        }
        // Amortized: sweep again only after the pending set doubled.
        self.limit = (self.reqs.len() * 2).max(SWEEP_MIN);
    }

    /// The oldest recorded error (for `rank`, or any).
    fn take(&mut self, rank: Option<u32>) -> Option<Failure> {
        let i = self
            .errors
            .iter()
            .position(|(r, _)| rank.is_none_or(|x| x == *r))?;
        Some(self.errors.remove(i).1)
    }
}

/// State shared by a task's handle and the handles its signal handlers
/// get.
#[derive(Default)]
pub(crate) struct Shared {
    detached: Mutex<Detached>,
}

impl Shared {
    /// Keeps a request nobody holds until fence or quiet collects it.
    fn detach(&self, rank: u32, req: Request) {
        let mut d = lock(&self.detached);
        if req.is_done() {
            d.record(rank, req.wait());
        } else {
            d.reqs.push((rank, req));
            if d.reqs.len() >= d.limit.max(SWEEP_MIN) {
                d.sweep(None);
            }
        }
    }
}

/// `sss_task_h`.
pub(crate) struct TaskObj {
    task: Task,
    shared: Arc<Shared>,
    /// False for the temporary handle a signal handler gets: it must not be
    /// finalized.
    owned: bool,
}

impl Drop for TaskObj {
    fn drop(&mut self) {
        if self.owned {
            LIVE.store(false, Ordering::SeqCst);
        }
    }
}

impl TaskObj {
    /// Joins the job from the launcher's environment.
    pub fn init() -> Result<TaskObj, Failure> {
        if LIVE.swap(true, Ordering::SeqCst) {
            return Err(Failure::invalid(
                "this process already has a task (one sss_init per process)",
            ));
        }
        match Task::init() {
            Ok(task) => Ok(TaskObj {
                task,
                shared: Arc::default(),
                owned: true,
            }),
            Err(e) => {
                LIVE.store(false, Ordering::SeqCst);
                Err(e.into())
            }
        }
    }

    /// The MBCF task.
    pub fn task(&self) -> &Task {
        &self.task
    }

    /// True for a handle from `sss_init` (not a handler's).
    pub fn is_owned(&self) -> bool {
        self.owned
    }

    /// Hands a submitted operation to the caller as a request object, or
    /// keeps it (when the caller wants none) so its error reaches the next
    /// fence or quiet.
    pub fn finish(
        &self,
        rank: u32,
        r: Result<Request, Error>,
        want: bool,
    ) -> Result<Option<ReqObj>, Failure> {
        let req = r?;
        if want {
            return Ok(Some(ReqObj {
                state: Mutex::new(ReqState::Pending(req)),
                rank,
                shared: Arc::downgrade(&self.shared),
            }));
        }
        self.shared.detach(rank, req);
        Ok(None)
    }

    /// `sss_fence`: earlier operations to `rank` acknowledged, first error.
    pub fn fence(&self, rank: u32) -> Result<(), Failure> {
        if rank >= self.task.size() {
            return Err(Failure::new(Status::NoSuchTask, "no such rank"));
        }
        let first = self.task.fence(rank);
        let mut d = lock(&self.shared.detached);
        d.sweep(Some(rank));
        first?;
        d.take(Some(rank)).map_or(Ok(()), Err)
    }

    /// `sss_quiet`: every earlier operation acknowledged, first error.
    pub fn quiet(&self) -> Result<(), Failure> {
        let first = self.task.quiet();
        let mut d = lock(&self.shared.detached);
        d.sweep(None);
        first?;
        d.take(None).map_or(Ok(()), Err)
    }

    /// Installs handler `index`; `f` gets a temporary task handle valid for
    /// the call, the sender's rank and the payload.
    pub fn set_handler<F>(&self, index: u32, f: F) -> Result<(), Failure>
    where
        F: Fn(&TaskObj, u32, &[u8]) + Send + Sync + 'static,
    {
        // Weak: the handler lives in the task, and the shared state holds
        // requests that point at the task; a strong reference would leak
        // both.
        let shared: Weak<Shared> = Arc::downgrade(&self.shared);
        let h: sss_mbcf::Handler = Arc::new(move |ctx: &SignalContext<'_>, payload: &[u8]| {
            let Some(shared) = shared.upgrade() else {
                return;
            };
            let handle = TaskObj {
                task: ctx.task.clone(),
                shared,
                owned: false,
            };
            let was = IN_HANDLER.with(|c| c.replace(true));
            f(&handle, ctx.from, payload);
            IN_HANDLER.with(|c| c.set(was));
        });
        Ok(self.task.set_handler(index, h)?)
    }
}

/// `sss_request_h`.
pub(crate) struct ReqObj {
    state: Mutex<ReqState>,
    /// Target rank, for filing the error of a request freed early.
    rank: u32,
    shared: Weak<Shared>,
}

impl Drop for ReqObj {
    fn drop(&mut self) {
        // Freed before completion: the operation goes on, and its error
        // must still reach fence/quiet.
        let st = std::mem::replace(lock(&self.state).deref_mut(), ReqState::Done(Ok(())));
        if let (ReqState::Pending(r), Some(shared)) = (st, self.shared.upgrade()) {
            shared.detach(self.rank, r);
        }
    }
}

enum ReqState {
    Pending(Request),
    Done(Result<(), Failure>),
}

impl ReqObj {
    /// `Ok(true)` when completed successfully, `Ok(false)` while in
    /// progress, the operation's failure once it failed.
    pub fn test(&self) -> Result<bool, Failure> {
        let mut st = lock(&self.state);
        if let ReqState::Pending(r) = &*st {
            if !r.is_done() {
                return Ok(false);
            }
        }
        Self::settle(&mut st).map(|()| true)
    }

    /// Waits for completion; the operation's result.
    pub fn wait(&self) -> Result<(), Failure> {
        Self::settle(&mut lock(&self.state))
    }

    /// Waits if needed and records the outcome; later calls return it.
    fn settle(st: &mut ReqState) -> Result<(), Failure> {
        if matches!(st, ReqState::Pending(_)) {
            // Request::wait consumes the request: take it out, leaving a
            // placeholder that the outcome then replaces.
            let placeholder = ReqState::Done(Err(Failure::new(Status::Internal, "request lost")));
            if let ReqState::Pending(r) = std::mem::replace(st, placeholder) {
                *st = ReqState::Done(r.wait().map(|_| ()).map_err(Failure::from));
            }
        }
        match st {
            ReqState::Done(r) => r.clone(),
            ReqState::Pending(_) => Err(Failure::new(Status::Internal, "request lost")),
        }
    }
}

/// `sss_seg_h`.
pub(crate) struct SegObj {
    /// The segment.
    pub seg: Segment,
}

/// `sss_fifo_h`.
pub(crate) struct FifoObj {
    addr: RemoteAddr,
    state: Mutex<FifoState>,
}

struct FifoState {
    fifo: Fifo,
    /// A popped message that did not fit the caller's buffer, handed out
    /// first next time so nothing is lost.
    stash: Option<u32>,
    buf: Vec<u8>,
}

impl FifoObj {
    /// Wraps a queue this task created.
    pub fn new(fifo: Fifo) -> Self {
        Self {
            addr: fifo.addr(),
            state: Mutex::new(FifoState {
                fifo,
                stash: None,
                buf: Vec::new(),
            }),
        }
    }

    /// Where peers push.
    pub fn addr(&self) -> RemoteAddr {
        self.addr
    }

    /// Pops into `out`: (bytes, sender).
    pub fn pop(&self, out: &mut [u8]) -> Result<(usize, u32), Failure> {
        let mut st = lock(&self.state);
        if st.stash.is_none() {
            let s = &mut *st;
            s.stash = s.fifo.pop(&mut s.buf);
        }
        Self::deliver(&mut st, out)
    }

    /// Waits for a message, then pops it into `out`: (bytes, sender).
    pub fn wait_pop(&self, task: &Task, out: &mut [u8]) -> Result<(usize, u32), Failure> {
        let mut st = lock(&self.state);
        if st.stash.is_none() {
            let s = &mut *st;
            s.stash = Some(s.fifo.wait_pop(task, &mut s.buf));
        }
        Self::deliver(&mut st, out)
    }

    fn deliver(st: &mut FifoState, out: &mut [u8]) -> Result<(usize, u32), Failure> {
        let Some(from) = st.stash else {
            return Err(Failure::new(Status::NoMessage, "the queue is empty"));
        };
        let n = st.buf.len();
        let Some(dst) = out.get_mut(..n) else {
            return Err(Failure::new(
                Status::Truncated,
                "message larger than the buffer; it stays queued",
            ));
        };
        dst.copy_from_slice(&st.buf);
        st.stash = None;
        Ok((n, from))
    }
}
