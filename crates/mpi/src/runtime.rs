//! The process-wide library state and waiting.
//!
//! One [`Engine`] per process, behind a mutex every call takes. Waits
//! release it: they make progress under the lock, then wait with MBCF's
//! helpers (SS-Wait naming the partner when there is one) until the
//! FIFO, a READ or a returned credit gives progress something to do.

use crate::consts::err;
use crate::engine::{Engine, MpiErr};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Mutex, MutexGuard};

static STATE: Mutex<Option<Engine>> = Mutex::new(None);

/// 0 before `MPI_Init`, 1 initialized, 2 finalized.
static PHASE: AtomicU8 = AtomicU8::new(0);

/// The word MBCF's waits watch; the predicate decides, not its value.
static WAKE: AtomicU64 = AtomicU64::new(0);

pub(crate) fn initialized() -> bool {
    PHASE.load(Ordering::Acquire) >= 1
}

pub(crate) fn finalized() -> bool {
    PHASE.load(Ordering::Acquire) == 2
}

fn lock() -> MutexGuard<'static, Option<Engine>> {
    // A panic under the lock is caught at the C boundary; the state it
    // left is still the best we have.
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Joins the job (`MPI_Init`).
pub(crate) fn init() -> Result<(), MpiErr> {
    let mut g = lock();
    if PHASE.load(Ordering::Acquire) != 0 {
        return Err(MpiErr::new(err::OTHER, "MPI_Init called twice"));
    }
    let joining =
        |e: &dyn std::fmt::Display| MpiErr::new(err::OTHER, format!("joining the job: {e}"));
    // The same settings Task::init reads: the datagram payload bounds
    // eager messages over udp.
    let payload = sss_mbcf::TaskConfig::from_env()
        .map_err(|e| joining(&e))?
        .proto
        .payload_size;
    let task = sss_mbcf::Task::init().map_err(|e| joining(&e))?;
    *g = Some(Engine::new(task, payload)?);
    PHASE.store(1, Ordering::Release);
    Ok(())
}

/// Runs `f` on the engine; `MPI_ERR_OTHER` before init or after finalize.
pub(crate) fn with<T>(f: impl FnOnce(&mut Engine) -> Result<T, MpiErr>) -> Result<T, MpiErr> {
    let mut g = lock();
    match g.as_mut() {
        Some(e) => f(e),
        None => Err(MpiErr::new(
            err::OTHER,
            if finalized() {
                "called after MPI_Finalize"
            } else {
                "called before MPI_Init"
            },
        )),
    }
}

/// Makes progress until `cond` holds, waiting (lock released) while
/// nothing can be done; `partner` is the task expected to answer.
pub(crate) fn wait_until(
    partner: Option<u32>,
    mut cond: impl FnMut(&mut Engine) -> Result<bool, MpiErr>,
) -> Result<(), MpiErr> {
    loop {
        let step = with(|e| {
            e.progress();
            Ok((!cond(e)?).then(|| e.task.clone()))
        })?;
        let Some(task) = step else {
            return Ok(());
        };
        let me = task.rank();
        let pred = |_| {
            STATE
                .try_lock()
                .map_or(true, |g| g.as_ref().is_none_or(Engine::has_work))
        };
        // SS-Wait on a partner on this node. For one elsewhere the
        // default wait (SS-Wait's policy without a partner) is used: it
        // first sends what MBCF held back for batching (a READ or FIN just
        // issued), which SS-Wait's yield and block phases do not.
        let local = |p: u32| task.transport_to(p) == Some(sss_mbcf::TransportKind::Shm);
        match partner {
            Some(p) if p != me && local(p) => {
                task.sswait(&WAKE, p, pred);
            }
            _ => {
                task.wait_word(&WAKE, pred);
            }
        }
    }
}

/// Leaves the job (`MPI_Finalize`): everything queued goes out, every
/// operation is acknowledged, then the task shuts down.
pub(crate) fn finalize() -> Result<(), MpiErr> {
    // Everything queued leaves before the barrier: a peer past it may be
    // gone.
    wait_until(None, |e| Ok(e.unsent() == 0))?;
    with(|e| {
        e.closing = true;
        Ok(())
    })?;
    crate::coll::barrier(crate::consts::h::COMM_WORLD)?;
    wait_until(None, |e| Ok(e.unsent() == 0))?;
    let engine = lock().take();
    PHASE.store(2, Ordering::Release);
    if let Some(e) = engine {
        // Every MPI operation completed; what MBCF still reports (a late
        // WRITE to a peer that left first) is worth a line, not a failed
        // finalize.
        if let Err(x) = e.task.quiet() {
            eprintln!("MPI_Finalize: task {}: {x}", e.rank);
        }
    }
    Ok(())
}
