//! Faults resolved in the thread that took them. With
//! `UFFD_FEATURE_SIGBUS` a fault on the heap raises SIGBUS in the
//! faulting thread instead of queuing an event; the handler here resolves
//! it on that thread (fetch, map or twin, as the fault thread would) and
//! returns, and the access runs again. That saves the hand-off to the
//! fault thread and back: two wake-ups, each tens of microseconds on a
//! node whose CPUs are busy (`docs/dsm-performance.md`, "Where a read
//! fault across hosts goes").
//!
//! The handler finds the heap (its view or adopted window) by the
//! address among the heaps registered in this process (tasks may be
//! threads of one process), chains any other SIGBUS to the handler
//! installed before (Rust's stack-overflow check, a program's own) or to
//! the default action, and keeps `errno`.
//! A heap is unregistered before it goes away: the slot is cleared, then
//! its handlers in flight are waited for.

#![allow(unsafe_code)]

use crate::shared::Shared;
use crate::stats::bump;
use crate::sys::Fault;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// Whether faults can be resolved in the faulting thread here: the
/// handler reads the kind of access from x86-64's page-fault error code.
pub(crate) const SUPPORTED: bool = cfg!(target_arch = "x86_64");

/// Heaps of this process at once, at most (more use the fault thread).
const SLOTS: usize = 64;

/// The registered heaps; null for a free slot.
static HEAPS: [AtomicPtr<Shared>; SLOTS] = [const { AtomicPtr::new(std::ptr::null_mut()) }; SLOTS];
/// Handlers running on each slot's heap (see [`Registration`]'s drop).
static ACTIVE: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(0) }; SLOTS];
/// Slots below this were ever used: the handler looks no further.
static USED: AtomicUsize = AtomicUsize::new(0);
/// The SIGBUS action before ours, once ours is installed.
static PREVIOUS: OnceLock<libc::sigaction> = OnceLock::new();
/// Serializes installing and taking slots.
static SETUP: Mutex<()> = Mutex::new(());

/// A heap registered for faults by signal; dropping it unregisters the
/// heap and waits for the handlers still resolving faults on it.
pub(crate) struct Registration {
    slot: usize,
    _shared: Arc<Shared>,
}

impl Drop for Registration {
    fn drop(&mut self) {
        HEAPS[self.slot].store(std::ptr::null_mut(), Ordering::SeqCst);
        // Pairs with the handler's count before its look at the slot:
        // either it saw null, or it is counted here.
        while ACTIVE[self.slot].load(Ordering::SeqCst) != 0 {
            std::thread::yield_now();
        }
    }
}

/// Installs the handler (once per process) and registers `shared`, whose
/// userfaultfd raises SIGBUS. `None` when every slot is taken or the
/// handler could not be installed (the caller then uses the fault thread).
pub(crate) fn register(shared: &Arc<Shared>) -> Option<Registration> {
    let _g = SETUP.lock().unwrap_or_else(|e| e.into_inner());
    if PREVIOUS.get().is_none() {
        let previous = install()?;
        let _ = PREVIOUS.set(previous);
    }
    let ptr = Arc::as_ptr(shared).cast_mut();
    let slot = (0..SLOTS).find(|&i| HEAPS[i].load(Ordering::SeqCst).is_null())?;
    HEAPS[slot].store(ptr, Ordering::SeqCst);
    USED.fetch_max(slot + 1, Ordering::SeqCst);
    Some(Registration {
        slot,
        _shared: shared.clone(),
    })
}

/// Installs [`on_sigbus`]; the action it replaced.
fn install() -> Option<libc::sigaction> {
    // SAFETY: an all-zero sigaction is valid (no handler, empty mask);
    // the fields set below make it ours.
    let mut act: libc::sigaction = unsafe { std::mem::zeroed() };
    act.sa_sigaction = on_sigbus as *const () as libc::sighandler_t;
    // SA_NODEFER: a fault while resolving one (a signal handler of the
    // runtime run inline touching the heap) is resolved too, not fatal.
    // No SA_ONSTACK: resolving needs more stack than an alternate one.
    act.sa_flags = libc::SA_SIGINFO | libc::SA_NODEFER | libc::SA_RESTART;
    // SAFETY: sa_mask is ours to initialize.
    unsafe { libc::sigemptyset(&mut act.sa_mask) };
    // SAFETY: as above; filled by sigaction.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: both structs are valid for the call; SIGBUS is a catchable
    // signal.
    if unsafe { libc::sigaction(libc::SIGBUS, &act, &mut old) } != 0 {
        return None;
    }
    Some(old)
}

/// What a SIGBUS was.
enum Outcome {
    /// Not a fault on a registered heap.
    Foreign,
    /// Resolved: the access may run again.
    Resolved,
    /// A heap fault that could not be resolved.
    Failed,
}

/// The SIGBUS handler.
extern "C" fn on_sigbus(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // SAFETY: errno is this thread's; kept for the interrupted code.
    let errno = unsafe { *libc::__errno_location() };
    // SAFETY: the kernel passes a valid siginfo and ucontext to an
    // SA_SIGINFO handler.
    let outcome = unsafe { resolve(info, ctx) };
    match outcome {
        Outcome::Resolved => {}
        Outcome::Foreign => {
            // SAFETY: as above, forwarded unchanged.
            unsafe { chain(sig, info, ctx) }
        }
        Outcome::Failed => {
            // Returning would fault again for ever: the default action
            // (the error was printed).
            // SAFETY: restoring the default action of SIGBUS.
            unsafe { libc::signal(libc::SIGBUS, libc::SIG_DFL) };
        }
    }
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = errno };
}

/// Resolves the fault `info` reports, when it is one on a registered
/// heap.
///
/// # Safety
/// `info` and `ctx` are the arguments of an SA_SIGINFO handler of SIGBUS.
unsafe fn resolve(info: *mut libc::siginfo_t, ctx: *mut libc::c_void) -> Outcome {
    // SAFETY: the caller passes the kernel's siginfo.
    let (code, addr) = unsafe { ((*info).si_code, (*info).si_addr() as usize) };
    if code != libc::BUS_ADRERR {
        return Outcome::Foreign;
    }
    let Some((write, wp)) = access(ctx) else {
        return Outcome::Foreign;
    };
    for slot in 0..USED.load(Ordering::SeqCst).min(SLOTS) {
        ACTIVE[slot].fetch_add(1, Ordering::SeqCst);
        let p = HEAPS[slot].load(Ordering::SeqCst);
        // SAFETY: a non-null slot seen while counted in ACTIVE stays
        // alive until the count drops (Registration::drop waits for it).
        let shared = unsafe { p.as_ref() };
        let outcome = match shared {
            Some(s) if s.offset(addr, 1).is_ok() => {
                let f = Fault { addr, write, wp };
                // A panic must not unwind through the signal frame.
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    let _one = crate::shared::lock(&s.fault_serial);
                    bump(&s.stats.fault_signals, 1);
                    s.handle_fault(f)
                }));
                match r {
                    Ok(Ok(())) => Some(Outcome::Resolved),
                    Ok(Err(e)) => {
                        bump(&s.stats.fault_errors, 1);
                        eprintln!("sss-dsm: fault at {addr:#x}: {e}");
                        Some(Outcome::Failed)
                    }
                    Err(_) => {
                        eprintln!("sss-dsm: fault at {addr:#x}: panic while resolving it");
                        Some(Outcome::Failed)
                    }
                }
            }
            _ => None,
        };
        ACTIVE[slot].fetch_sub(1, Ordering::SeqCst);
        if let Some(o) = outcome {
            return o;
        }
    }
    Outcome::Foreign
}

/// Whether the faulting access was a write, and whether the page was
/// present (a write-protect fault), from the page-fault error code the
/// kernel puts in the signal frame (x86-64: bit 0 present, bit 1 write).
fn access(ctx: *mut libc::c_void) -> Option<(bool, bool)> {
    #[cfg(target_arch = "x86_64")]
    {
        let uc = ctx.cast::<libc::ucontext_t>();
        if uc.is_null() {
            return None;
        }
        // SAFETY: the kernel's ucontext of this signal, read only.
        let err = unsafe { (*uc).uc_mcontext.gregs[libc::REG_ERR as usize] };
        Some((err & 2 != 0, err & 1 != 0))
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = ctx;
        None
    }
}

/// Hands a SIGBUS that is not ours to the action installed before ours.
///
/// # Safety
/// The arguments of an SA_SIGINFO handler of SIGBUS.
unsafe fn chain(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    let Some(prev) = PREVIOUS.get() else {
        return;
    };
    let h = prev.sa_sigaction;
    if h == libc::SIG_DFL || h == libc::SIG_IGN {
        // The default action once the access runs again (a synchronous
        // SIGBUS cannot be ignored).
        // SAFETY: restoring the action that was there before ours.
        unsafe { libc::sigaction(libc::SIGBUS, prev, std::ptr::null_mut()) };
        return;
    }
    if prev.sa_flags & libc::SA_SIGINFO != 0 {
        // SAFETY: an SA_SIGINFO handler has this signature; the pointer
        // came from the kernel's record of it.
        let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
            unsafe { std::mem::transmute(h) };
        f(sig, info, ctx);
    } else {
        // SAFETY: a plain handler takes the signal number only.
        let f: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute(h) };
        f(sig);
    }
}
