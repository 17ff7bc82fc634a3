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
//! threads of one process), hands any other SIGBUS to the action
//! installed before (Rust's stack-overflow check, a program's own, or
//! the default), and keeps `errno`. A slot is reserved before the heap's
//! userfaultfd asks for SIGBUS (no slot: the fault thread, decided before
//! any collective step), and a heap is unregistered before it goes away:
//! the slot is cleared, then its handlers in flight are waited for.

#![allow(unsafe_code)]

use crate::shared::{lock, page_of, Shared};
use crate::stats::bump;
use crate::sys::Fault;
use std::cell::Cell;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// Whether faults can be resolved in the faulting thread here: the
/// handler reads the kind of access from x86-64's page-fault error code.
pub(crate) const SUPPORTED: bool = cfg!(target_arch = "x86_64");

/// Heaps of this process at once resolving faults by signal, at most
/// (further ones use the fault thread).
const SLOTS: usize = 64;

/// Faults of one thread on one page with nothing in between (no
/// synchronization, no page dropped) after which the fault is taken as
/// one that resolving does not cure (a bus error on a page the heap
/// holds) and fails, instead of being retried for ever.
const MAX_REPEATS: u32 = 1000;

/// The registered heaps; null for a free or reserved slot.
static HEAPS: [AtomicPtr<Shared>; SLOTS] = [const { AtomicPtr::new(std::ptr::null_mut()) }; SLOTS];
/// Slots reserved or registered.
static TAKEN: [AtomicBool; SLOTS] = [const { AtomicBool::new(false) }; SLOTS];
/// Handlers running on each slot's heap (see [`Registration`]'s drop).
static ACTIVE: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(0) }; SLOTS];
/// Slots below this were ever used: the handler looks no further.
static USED: AtomicUsize = AtomicUsize::new(0);
/// The SIGBUS action before ours, read before ours is installed.
static PREVIOUS: OnceLock<libc::sigaction> = OnceLock::new();
/// Whether ours is installed.
static INSTALLED: AtomicBool = AtomicBool::new(false);
/// Serializes installing and reserving slots.
static SETUP: Mutex<()> = Mutex::new(());

thread_local! {
    /// This thread's last fault: page address, the heap's progress key
    /// then, and how many times in a row.
    static LAST: Cell<(usize, u64, u32)> = const { Cell::new((0, 0, 0)) };
    /// Faults being resolved on this thread (a nested one, from a handler
    /// run inline while the outer one waits, does not take the lock the
    /// outer one holds).
    static DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// A slot reserved for a heap about to ask for SIGBUS faults.
pub(crate) struct Slot {
    slot: usize,
}

impl Drop for Slot {
    fn drop(&mut self) {
        TAKEN[self.slot].store(false, Ordering::SeqCst);
    }
}

/// Installs the handler (once per process) and reserves a slot. `None`
/// when every slot is taken or the handler could not be installed: the
/// heap then uses the fault thread.
pub(crate) fn reserve() -> Option<Slot> {
    let _g = SETUP.lock().unwrap_or_else(|e| e.into_inner());
    if !INSTALLED.load(Ordering::SeqCst) {
        install()?;
        INSTALLED.store(true, Ordering::SeqCst);
    }
    let slot = (0..SLOTS).find(|&i| {
        TAKEN[i]
            .compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
    })?;
    USED.fetch_max(slot + 1, Ordering::SeqCst);
    Some(Slot { slot })
}

impl Slot {
    /// Registers `shared`, whose userfaultfd raises SIGBUS, in this slot.
    pub(crate) fn activate(self, shared: &Arc<Shared>) -> Registration {
        let slot = self.slot;
        std::mem::forget(self);
        HEAPS[slot].store(Arc::as_ptr(shared).cast_mut(), Ordering::SeqCst);
        Registration {
            slot,
            _shared: shared.clone(),
        }
    }
}

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
        TAKEN[self.slot].store(false, Ordering::SeqCst);
    }
}

/// Installs [`on_sigbus`], the action before it kept in [`PREVIOUS`]
/// first (a SIGBUS between the two finds it).
fn install() -> Option<()> {
    // SAFETY: filled by sigaction; an all-zero sigaction is valid.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: reads the current action into our struct.
    if unsafe { libc::sigaction(libc::SIGBUS, std::ptr::null(), &mut old) } != 0 {
        return None;
    }
    let _ = PREVIOUS.set(old);
    // SAFETY: an all-zero sigaction is valid (no handler, empty mask);
    // the fields set below make it ours.
    let mut act: libc::sigaction = unsafe { std::mem::zeroed() };
    act.sa_sigaction = on_sigbus as *const () as libc::sighandler_t;
    // SA_NODEFER: a fault while resolving one (a handler run inline
    // during the outer one's wait, touching the heap) is resolved too,
    // not fatal. No SA_ONSTACK: resolving needs more stack than an
    // alternate one.
    act.sa_flags = libc::SA_SIGINFO | libc::SA_NODEFER | libc::SA_RESTART;
    // SAFETY: sa_mask is ours to initialize.
    unsafe { libc::sigemptyset(&mut act.sa_mask) };
    // SAFETY: the struct is valid for the call; SIGBUS is catchable.
    if unsafe { libc::sigaction(libc::SIGBUS, &act, std::ptr::null_mut()) } != 0 {
        return None;
    }
    Some(())
}

/// What a SIGBUS was.
enum Outcome {
    /// Not a fault on a registered heap.
    Foreign,
    /// Resolved: the access may run again.
    Resolved,
    /// A heap fault that could not be resolved (said on stderr).
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
        // SAFETY: as above, forwarded unchanged.
        Outcome::Foreign => unsafe { chain(sig, info, ctx) },
        Outcome::Failed => {
            // Returning would fault again: end the task by SIGBUS now,
            // whatever another thread does meanwhile.
            // SAFETY: the default action, then the signal to ourselves;
            // SIGBUS is not blocked here (SA_NODEFER).
            unsafe {
                libc::signal(libc::SIGBUS, libc::SIG_DFL);
                libc::raise(libc::SIGBUS);
            }
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
    // A fault's SIGBUS says BUS_ADRERR; one sent by kill or raise has a
    // code of zero or below.
    if code != libc::BUS_ADRERR {
        return Outcome::Foreign;
    }
    let Some((write, present)) = access(ctx) else {
        return Outcome::Foreign;
    };
    for slot in 0..USED.load(Ordering::SeqCst).min(SLOTS) {
        ACTIVE[slot].fetch_add(1, Ordering::SeqCst);
        let p = HEAPS[slot].load(Ordering::SeqCst);
        // SAFETY: a non-null slot seen while counted in ACTIVE stays
        // alive until the count drops (Registration::drop waits for it).
        let shared = unsafe { p.as_ref() };
        let outcome = match shared {
            Some(s) => s
                .offset(addr, 1)
                .ok()
                .map(|off| resolve_on(s, addr, page_of(off), write, present)),
            _ => None,
        };
        ACTIVE[slot].fetch_sub(1, Ordering::SeqCst);
        if let Some(o) = outcome {
            return o;
        }
    }
    Outcome::Foreign
}

/// Resolves a fault at `addr` (heap page `page`) on heap `s`: `write` and
/// `present` from the error code.
fn resolve_on(s: &Shared, addr: usize, page: u64, write: bool, present: bool) -> Outcome {
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // Synchronizations and drops: a fault after one of them is new.
        let key = s.stats.barriers.load(Ordering::Relaxed)
            + s.stats.locks.load(Ordering::Relaxed)
            + s.epoch.load(Ordering::Relaxed);
        let at = addr & !(crate::sys::PAGE - 1);
        let n = LAST.with(|l| {
            let (a, k, n) = l.get();
            let n = if a == at && k == key { n + 1 } else { 1 };
            l.set((at, key, n));
            n
        });
        if n > MAX_REPEATS {
            return Err(format!(
                "{n} faults in a row on heap page {page} without progress: a bus error \
                 the DSM cannot cure (is /dev/shm full?)"
            ));
        }
        let held = s.is_mapped(page) || lock(&s.state).present.contains(&page);
        if held && !present && (!write || n == 1) {
            // Absent when it faulted, held now: another thread made it
            // present meanwhile; the access runs again. A write that
            // faults so again finds a write-protected page the error code
            // calls absent (swapped out) and is taken as such below.
            return Ok(());
        }
        let wp = present || (write && held);
        let depth = DEPTH.with(|d| {
            d.set(d.get() + 1);
            d.get()
        });
        let r = {
            let _one = (depth == 1).then(|| lock(&s.fault_serial));
            bump(&s.stats.fault_signals, 1);
            s.handle_fault(Fault { addr, write, wp })
        };
        DEPTH.with(|d| d.set(d.get() - 1));
        r.map_err(|e| e.to_string())
    }));
    let msg = match r {
        Ok(Ok(())) => return Outcome::Resolved,
        Ok(Err(e)) => e,
        Err(_) => "panic while resolving it".to_string(),
    };
    bump(&s.stats.fault_errors, 1);
    let _ = writeln!(std::io::stderr(), "sss-dsm: fault at {addr:#x}: {msg}");
    Outcome::Failed
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
    // SAFETY: the caller passes the kernel's siginfo.
    let sent = unsafe { (*info).si_code } <= 0;
    if h == libc::SIG_IGN && sent {
        // Ignored before ours: still ignored (ours stays for the heap).
        return;
    }
    if h == libc::SIG_DFL || h == libc::SIG_IGN {
        // The default action: a fault's SIGBUS cannot be ignored, and one
        // sent would end the task. Ours goes, as after any default
        // SIGBUS there is nothing left to handle.
        // SAFETY: the default action, then the signal again (not blocked
        // here: SA_NODEFER) where it was sent rather than raised by an
        // access that runs again.
        unsafe {
            libc::signal(libc::SIGBUS, libc::SIG_DFL);
            if sent {
                libc::raise(libc::SIGBUS);
            }
        }
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
