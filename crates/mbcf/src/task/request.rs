//! Operation options and completions: [`Options`], [`Sink`], [`Reply`]
//! and the [`Request`] an application waits on, and the bounded list
//! of asynchronous errors kept for FENCE and QUIET.

use super::Inner;
use crate::{Error, RemoteAddr};
use sss_wire::{Notify, Status};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Options of one operation.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// Complete the returned [`Request`] when the target applied the
    /// operation (status return). Without it a WRITE, FIFO push or SIGNAL
    /// completes locally at once; errors still surface in
    /// [`Task::fence`](super::Task::fence) / [`Task::quiet`](super::Task::quiet).
    pub status_return: bool,
    /// No flow control: sent once, unordered, never retransmitted.
    pub nofc: bool,
    /// WRITE only: after the data, add `addend` to the 8-byte counter at
    /// (`key`, `addr`) in the same target.
    pub notify: Option<Notify>,
    /// Local memory the completion is delivered into (C-style APIs): see
    /// [`Sink`]. Implies status return.
    pub sink: Option<Sink>,
}

/// Where a completion lands in local memory, for callers that poll memory
/// rather than hold a [`Request`] (the C API). On completion, successful or
/// not, the result is stored first — READ data copied to `data` (at most
/// `data_len` bytes), an atomic's old value written to `data` as a u64 —
/// then `counter`, if set, is incremented with release order, and waiters
/// are woken.
#[derive(Debug, Clone, Copy, Default)]
pub struct Sink {
    counter: usize,
    data: usize,
    data_len: usize,
}

impl Sink {
    /// A sink bumping `counter` and storing results at `data`.
    ///
    /// # Safety
    /// `counter` (if not null) must point to an 8-byte aligned u64 and
    /// `data` (if not null) to `data_len` writable bytes (8-byte aligned
    /// when it receives an atomic's value), both valid until the operation
    /// completes, and not accessed non-atomically by others meanwhile.
    #[allow(unsafe_code)]
    pub unsafe fn new(counter: *const AtomicU64, data: *mut u8, data_len: usize) -> Self {
        Self {
            counter: counter as usize,
            data: data as usize,
            data_len,
        }
    }

    // SAFETY (every block below): Sink::new's contract — the locations
    // are valid, writable and ours until the operation completes, which is
    // now.
    #[allow(unsafe_code)]
    fn deliver(&self, r: &Result<Reply, Error>) {
        if self.data != 0 {
            match r {
                // SAFETY: see above.
                Ok(Reply::Data(d)) => unsafe {
                    crate::mem::sink_bytes(self.data, self.data_len, d)
                },
                Ok(Reply::Value(v)) if self.data_len >= 8 => {
                    // SAFETY: see above; data_len >= 8.
                    unsafe { crate::mem::sink_bytes(self.data, 8, &v.to_ne_bytes()) }
                }
                _ => {}
            }
        }
        if self.counter != 0 {
            // SAFETY: see above.
            unsafe { crate::mem::sink_counter(self.counter) }.fetch_add(1, Ordering::Release);
        }
    }
}

impl Options {
    /// Status return on.
    pub fn status() -> Self {
        Self {
            status_return: true,
            ..Self::default()
        }
    }

    /// Bump the target counter at `at` by one after the data.
    pub fn notify(at: RemoteAddr) -> Self {
        Self {
            notify: Some(Notify {
                key: at.key,
                addr: at.addr,
                addend: 1,
            }),
            ..Self::default()
        }
    }
}

/// What a completed operation returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// Applied.
    Done,
    /// The old value of an atomic.
    Value(u64),
    /// The bytes of a READ.
    Data(Vec<u8>),
    /// Members of a multicast group that applied the write.
    Members(u32),
}

pub(super) struct ReqState {
    done: AtomicBool,
    result: Mutex<Option<Result<Reply, Error>>>,
    sink: Option<Sink>,
    /// The application dropped its Request: an error must go to the
    /// task's error list, for fence/quiet to report.
    abandoned: AtomicBool,
}

impl ReqState {
    pub(super) fn new(sink: Option<Sink>) -> Arc<Self> {
        Arc::new(Self {
            done: AtomicBool::new(false),
            result: Mutex::new(None),
            sink,
            abandoned: AtomicBool::new(false),
        })
    }

    /// Records the outcome; an error nobody will collect goes to `errors`.
    pub(super) fn complete(&self, r: Result<Reply, Error>, errors: &Mutex<Vec<Error>>) {
        if let Some(s) = &self.sink {
            s.deliver(&r);
        }
        if let Ok(mut g) = self.result.lock() {
            if self.abandoned.load(Ordering::Acquire) {
                if let Err(e) = r {
                    if let Ok(mut errs) = errors.lock() {
                        keep_error(&mut errs, e);
                    }
                }
            } else {
                *g = Some(r);
            }
        }
        self.done.store(true, Ordering::Release);
    }
}

/// A pending operation. Dropping it does not cancel the operation.
pub struct Request {
    /// The operation's state and its task; `None` when it completed
    /// locally or is not tracked (most WRITEs): then no reference to the
    /// task is taken either, two atomic operations less on every one.
    pub(super) state: Option<(Arc<ReqState>, Arc<Inner>)>,
}

impl std::fmt::Debug for Request {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Request")
            .field("done", &self.is_done())
            .finish()
    }
}

impl Drop for Request {
    fn drop(&mut self) {
        let Some((st, inner)) = self.state.take() else {
            return;
        };
        // Under the result lock, so a completion racing with us either sees
        // the flag or leaves its result for us to move.
        if let Ok(mut g) = st.result.lock() {
            st.abandoned.store(true, Ordering::Release);
            if let Some(Err(e)) = g.take() {
                if let Ok(mut errs) = inner.errors.lock() {
                    keep_error(&mut errs, e);
                }
            }
        };
    }
}

impl Request {
    /// True once the operation completed (or when it completes locally).
    pub fn is_done(&self) -> bool {
        self.state
            .as_ref()
            .is_none_or(|(s, _)| s.done.load(Ordering::Acquire))
    }

    /// Waits for completion.
    pub fn wait(mut self) -> Result<Reply, Error> {
        let Some((st, inner)) = self.state.take() else {
            return Ok(Reply::Done);
        };
        inner.wait_until(|| st.done.load(Ordering::Acquire), None);
        let r = st
            .result
            .lock()
            .ok()
            .and_then(|mut g| g.take())
            .unwrap_or(Err(Error::Shutdown));
        r
    }

    /// Waits for the old value of an atomic.
    pub fn wait_value(self) -> Result<u64, Error> {
        match self.wait()? {
            Reply::Value(v) => Ok(v),
            _ => Err(Error::Invalid("not an atomic")),
        }
    }

    /// Waits for the bytes of a READ.
    pub fn wait_data(self) -> Result<Vec<u8>, Error> {
        match self.wait()? {
            Reply::Data(v) => Ok(v),
            _ => Err(Error::Invalid("not a read")),
        }
    }
}

/// Asynchronous errors kept for FENCE and QUIET; a program that never
/// collects them must not grow without bound.
pub(super) const ERRORS_KEPT: usize = 1024;

pub(super) fn keep_error(errs: &mut Vec<Error>, e: Error) {
    if errs.len() < ERRORS_KEPT {
        errs.push(e);
    }
}

pub(super) fn status_error(s: Status, rank: u32) -> Error {
    if s == Status::NodeDown {
        Error::PeerDown(rank)
    } else {
        Error::Remote(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uncollected_errors_are_kept_up_to_a_bound() {
        let mut errs = Vec::new();
        for _ in 0..3 * ERRORS_KEPT {
            keep_error(&mut errs, Error::PeerDown(1));
        }
        assert_eq!(errs.len(), ERRORS_KEPT);
    }
}
