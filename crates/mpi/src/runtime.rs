//! The process-wide library state and waiting.
//!
//! One [`Engine`] per process, behind a mutex every call takes. Waits
//! release it: they make progress under the lock, then wait with MBCF's
//! helpers (SS-Wait naming the partner when there is one) until the
//! FIFO, a READ or a returned credit gives progress something to do.
//!
//! Under `MPI_THREAD_MULTIPLE` several threads may wait at once, and any
//! of them may complete another's request while it progresses. One
//! thread at a time (the leader) waits in MBCF; the others sleep on a
//! condition variable until a call completes something (the engine's
//! event count moved) or the leader leaves, and then look again under
//! the lock. With a lower thread level the path is the one-thread path
//! (a relaxed load of the level is all it adds).

use crate::consts::err;
use crate::engine::{Engine, MpiErr};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

static STATE: Mutex<Option<Engine>> = Mutex::new(None);

/// 0 before `MPI_Init`, 1 initialized, 2 finalized.
static PHASE: AtomicU8 = AtomicU8::new(0);

/// The word MBCF's waits watch; the predicate decides, not its value.
static WAKE: AtomicU64 = AtomicU64::new(0);

/// `MPI_THREAD_MULTIPLE` was provided.
static MULTIPLE: AtomicBool = AtomicBool::new(false);
/// A thread waits in MBCF for everyone.
static LEADER: AtomicBool = AtomicBool::new(false);
/// Moves when a call completed something another thread may wait for,
/// or the leader left.
static GEN: AtomicU64 = AtomicU64::new(0);
/// Threads asleep on [`NEWS`].
static SLEEPERS: AtomicUsize = AtomicUsize::new(0);
static NEWS_LOCK: Mutex<()> = Mutex::new(());
static NEWS: Condvar = Condvar::new();
/// How long a waiting thread sleeps without news before looking again
/// (a safety net: news wakes it).
const NAP: Duration = Duration::from_millis(10);

/// Provides `MPI_THREAD_MULTIPLE` (before init: no thread waits yet).
pub(crate) fn set_multiple() {
    MULTIPLE.store(true, Ordering::Release);
}

pub(crate) fn multiple() -> bool {
    MULTIPLE.load(Ordering::Relaxed)
}

/// Tells waiting threads that something happened.
fn news() {
    GEN.fetch_add(1, Ordering::SeqCst);
    if SLEEPERS.load(Ordering::SeqCst) > 0 {
        let _g = NEWS_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        NEWS.notify_all();
    }
}

/// Sleeps until [`news`] after `seen`, a vacant leader seat, or [`NAP`].
fn sleep_for_news(seen: u64) {
    SLEEPERS.fetch_add(1, Ordering::SeqCst);
    let g = NEWS_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    if GEN.load(Ordering::SeqCst) == seen && LEADER.load(Ordering::SeqCst) {
        let _ = NEWS.wait_timeout(g, NAP);
    }
    SLEEPERS.fetch_sub(1, Ordering::SeqCst);
}

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
    crate::stats::init_from_env()?;
    crate::nbc::init_from_env()?;
    let joining =
        |e: &dyn std::fmt::Display| MpiErr::new(err::OTHER, format!("joining the job: {e}"));
    // The same settings Task::init reads: the largest FIFO message MBCF
    // carries over udp bounds eager messages there.
    let max_fifo = sss_mbcf::TaskConfig::from_env()
        .map_err(|e| joining(&e))?
        .proto
        .max_fifo;
    let task = sss_mbcf::Task::init().map_err(|e| joining(&e))?;
    // Schedules advance between MPI calls on the signal that follows
    // each message while they run (see `nbc`).
    task.set_handler(
        crate::nbc::SIGNAL,
        std::sync::Arc::new(|_, _| crate::nbc::on_signal()),
    )
    .map_err(|e| joining(&e))?;
    *g = Some(Engine::new(task, max_fifo)?);
    PHASE.store(1, Ordering::Release);
    Ok(())
}

/// Runs `f` on the engine; `MPI_ERR_OTHER` before init or after finalize.
/// Then advances the schedules if a signal's handler found the lock
/// taken meanwhile.
pub(crate) fn with<T>(f: impl FnOnce(&mut Engine) -> Result<T, MpiErr>) -> Result<T, MpiErr> {
    let r = with_only(f);
    // A signal's handler may have found the lock taken.
    crate::nbc::after_release();
    r
}

/// [`with`] without advancing the schedules after: what a wait uses for
/// its look before it sleeps, which must stay the last look (a pass run
/// after it could take from the FIFO the message the wait then sleeps
/// for). The wait's predicate watches the handler's flag instead.
fn with_only<T>(f: impl FnOnce(&mut Engine) -> Result<T, MpiErr>) -> Result<T, MpiErr> {
    let mut g = lock();
    let r = match g.as_mut() {
        Some(e) if !multiple() => {
            e.stats.library_locks += 1;
            let r = f(e);
            drop(g);
            r
        }
        Some(e) => {
            e.stats.library_locks += 1;
            let before = e.events;
            let r = f(e);
            let moved = e.events != before;
            drop(g);
            if moved {
                news();
            }
            r
        }
        None => {
            return Err(MpiErr::new(
                err::OTHER,
                if finalized() {
                    "called after MPI_Finalize"
                } else {
                    "called before MPI_Init"
                },
            ))
        }
    };
    r
}

/// Runs `f` on the engine if its lock is free at once (a signal
/// handler's access: it must never wait for a thread of ours); `None`
/// when taken, before init or after finalize.
pub(crate) fn try_with<T>(f: impl FnOnce(&mut Engine) -> T) -> Option<T> {
    let mut g = match STATE.try_lock() {
        Ok(g) => g,
        Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
        Err(std::sync::TryLockError::WouldBlock) => return None,
    };
    let e = g.as_mut()?;
    e.stats.library_locks += 1;
    let before = e.events;
    let r = f(e);
    let moved = e.events != before;
    drop(g);
    if moved && multiple() {
        news();
    }
    Some(r)
}

/// Makes progress until `cond` holds, waiting (lock released) while
/// nothing can be done; `partner` is the task expected to answer.
pub(crate) fn wait_until(
    partner: Option<u32>,
    mut cond: impl FnMut(&mut Engine) -> Result<bool, MpiErr>,
) -> Result<(), MpiErr> {
    wait_looking(|e| {
        e.progress();
        Ok((!cond(e)?).then_some(partner))
    })
}

/// Waits with `look`, run under the lock as each look of the wait: it
/// makes what progress it needs and returns `None` when the wait is
/// over, or the task expected to answer (if any) to wait for. Its first
/// run may be the call's own first look (`MPI_Recv` posts its receive
/// there): no look of the wait comes before it.
pub(crate) fn wait_looking(
    look: impl FnMut(&mut Engine) -> Result<Option<Option<u32>>, MpiErr>,
) -> Result<(), MpiErr> {
    // Signals of schedules leave them to this thread meanwhile. With
    // one thread in MPI and no schedule running, none can start before
    // this wait ends: a signal's handler then has nothing to do.
    let _waiting = (multiple() || crate::nbc::active()).then(crate::nbc::waiting);
    if multiple() {
        return wait_shared(look);
    }
    let mut look = look;
    loop {
        crate::nbc::progress();
        // MBCF's event count before the look: what completes after it
        // moves the count, and the wait below looks at it in full.
        let step = with_only(|e| {
            let before = e.waiter.task.events();
            Ok(look(e)?.map(|partner| (partner, e.waiter.clone(), e.events, before)))
        })?;
        let Some((partner, waiter, events, before)) = step else {
            return Ok(());
        };
        // What completed since the schedules last looked may let one of
        // them move: it would wait for no further message.
        if !crate::nbc::settled(events) {
            continue;
        }
        let (task, probe) = (&waiter.task, &waiter.probe);
        let me = task.rank();
        // A message in the FIFO is what most waits wait for: looked at
        // without the lock on every turn; the rest `progress` may act on
        // (READs and WRITEs done, credits back) on every 16th turn, and
        // on every turn after MBCF's event count moved: a wait woken from
        // a block by a completion must see it, or it blocks again until
        // enough turns pass (a WRITE done then waited 50–100 ms).
        let turns = std::cell::Cell::new(0u32);
        let seen = std::cell::Cell::new(before);
        let pred = |_| {
            // A signal's handler left the schedules to us.
            if probe.ready() || crate::nbc::wanted() {
                return true;
            }
            turns.set(turns.get().wrapping_add(1));
            let ev = task.events();
            let moved = ev != seen.get();
            seen.set(ev);
            (moved || turns.get() % 16 == 0)
                && STATE
                    .try_lock()
                    .map_or(true, |g| g.as_ref().is_none_or(Engine::has_work))
        };
        // SS-Wait on the partner: on this node by its control block;
        // across the network it spins for SS-Wait's spin while the node
        // has a CPU for it (a rendezvous of 1 MiB takes longer than the
        // default wait's spin, and every blocked wait costs two wake-ups),
        // then blocks. Without one, the default wait.
        match partner {
            Some(p) if p != me => {
                task.sswait(&WAKE, p, pred);
            }
            _ => {
                task.wait_word(&WAKE, pred);
            }
        }
    }
}

/// [`wait_looking`] when several threads may wait: the leader waits in
/// MBCF until progress has work or news came, the others sleep for news.
fn wait_shared(
    mut look: impl FnMut(&mut Engine) -> Result<Option<Option<u32>>, MpiErr>,
) -> Result<(), MpiErr> {
    let mut seat = Seat(false);
    loop {
        // News (an event moved) wakes this loop to advance them again.
        crate::nbc::progress();
        let step = with_only(|e| {
            let wait = look(e)?;
            // Read under the lock: news of what completes after this
            // look moves it.
            let seen = GEN.load(Ordering::SeqCst);
            Ok(wait.map(|partner| (partner, e.task.clone(), seen, e.events)))
        })?;
        let Some((partner, task, seen, events)) = step else {
            return Ok(());
        };
        // A schedule may wait on what completed since the last pass over
        // them (another thread's pass may have been under way when this
        // one found their lock taken): no message would wake us for it.
        if !crate::nbc::settled(events) {
            std::thread::yield_now();
            continue;
        }
        if !seat.0 {
            seat.0 = !LEADER.swap(true, Ordering::AcqRel);
        }
        if !seat.0 {
            sleep_for_news(seen);
            continue;
        }
        let me = task.rank();
        let pred = |_| {
            GEN.load(Ordering::SeqCst) != seen
                || crate::nbc::wanted()
                || STATE
                    .try_lock()
                    .map_or(true, |g| g.as_ref().is_none_or(Engine::has_work))
        };
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

/// The leader's seat while held: given up (and a sleeper told to take
/// it) when the wait ends, by return or error.
struct Seat(bool);

impl Drop for Seat {
    fn drop(&mut self) {
        if self.0 {
            LEADER.store(false, Ordering::SeqCst);
            news();
        }
    }
}

/// Leaves the job (`MPI_Finalize`): everything queued goes out, every
/// operation is acknowledged, then the task shuts down.
pub(crate) fn finalize() -> Result<(), MpiErr> {
    // What the program did, without the final barrier.
    let (counters, secs) = with(|e| Ok((e.stats, e.started.elapsed().as_secs_f64())))?;
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
        let counters = crate::stats::Counters {
            bad_msgs: e.bad_msgs,
            ..counters
        };
        if let Some(line) = crate::stats::report(e.rank, e.size, secs, &counters, &e.task.stats()) {
            eprintln!("{line}");
        }
        // Every MPI operation completed; what MBCF still reports (a late
        // WRITE to a peer that left first) is worth a line, not a failed
        // finalize.
        if let Err(x) = e.task.quiet() {
            eprintln!("MPI_Finalize: task {}: {x}", e.rank);
        }
    }
    Ok(())
}
