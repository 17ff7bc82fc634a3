//! What code compiled by `sss cc` (the RCOP pass) calls: after every
//! store that may reach the DSM heap it tests the address against
//! [`sss_rcop_lo`] / [`sss_rcop_span`] inline and, inside, calls
//! [`sss_rcop_note`]. The range is the heap of the DSM handle opened
//! last in note mode; in trap mode (write protection records stores) and
//! before any heap exists the span is 0, so no store calls out.
//!
//! UDSM (`sss cc --udsm`): a constructor in every object so compiled calls
//! [`sss_rcop_udsm`], and the heap is then opened without userfaultfd;
//! before each load or store inside the range the code reads the page's
//! byte in [`sss_rcop_map`] and calls [`sss_rcop_fetch`] (or, once for a
//! loop, [`sss_rcop_fetch_range`]) when it is absent.

use super::dsm::{sss_dsm_note_write, DsmObj};
use sss_dsm::PAGE;
use sss_mbcf::node::TaskView;
use sss_mbcf::Task;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// First byte of the heap stores are noted for.
#[no_mangle]
pub static sss_rcop_lo: AtomicU64 = AtomicU64::new(0);

/// Bytes of that heap (0: nothing is noted).
#[no_mangle]
pub static sss_rcop_span: AtomicU64 = AtomicU64::new(0);

/// UDSM: the presence map of that heap, one byte per page from
/// [`sss_rcop_lo`], non-zero while the page is present (0: no map, the
/// heap uses userfaultfd).
#[no_mangle]
pub static sss_rcop_map: AtomicU64 = AtomicU64::new(0);

static CURRENT: AtomicPtr<DsmObj> = AtomicPtr::new(std::ptr::null_mut());

/// Whether an object compiled with `sss cc --udsm` is in the program.
static UDSM: AtomicBool = AtomicBool::new(false);

/// Whether an object compiled without combining (`-fsss-opt=no` or `ia`)
/// is in the program.
static SEPARATE: AtomicBool = AtomicBool::new(false);

/// Called before `main` by a constructor in every object `sss cc`
/// compiled without `mb` (`-fsss-opt=no`, `-fsss-opt=ia`: the seeds' NO
/// and IA rows): heaps opened from now on send each note as a WRITE of
/// its own (`Config::combine`).
#[no_mangle]
pub extern "C" fn sss_rcop_separate() {
    SEPARATE.store(true, Ordering::Release);
}

/// Whether the program was built without combining.
pub(crate) fn separate_binary() -> bool {
    SEPARATE.load(Ordering::Acquire)
}

/// Called before `main` by a constructor in every object `sss cc --udsm`
/// compiled: heaps opened from now on do without userfaultfd (their
/// pages are made present by the compiled checks' fetches).
#[no_mangle]
pub extern "C" fn sss_rcop_udsm() {
    UDSM.store(true, Ordering::Release);
}

/// Whether the program was built with `sss cc --udsm`.
pub(crate) fn udsm_binary() -> bool {
    UDSM.load(Ordering::Acquire)
}

/// `dsm` (note mode, on `task`) now receives the notes of instrumented
/// stores, and (`presence`, UDSM) their fetches; back-off watches
/// `task`'s retransmissions.
pub(crate) fn register(
    dsm: *mut DsmObj,
    base: usize,
    len: usize,
    presence: Option<*const u8>,
    task: &Task,
) {
    CURRENT.store(dsm, Ordering::Release);
    sss_rcop_map.store(presence.map_or(0, |p| p as u64), Ordering::Release);
    sss_rcop_lo.store(base as u64, Ordering::Release);
    sss_rcop_span.store(len as u64, Ordering::Release);
    // The task's control block as the IDM reads it (no lock of the task,
    // no reference that would keep it alive); none: no back-off.
    let view = task
        .ctl_tag(task.rank())
        .and_then(|tag| TaskView::open(task.job(), task.rank(), tag).ok());
    if let Some(v) = &view {
        SEEN.store(v.retransmissions(), Ordering::Relaxed);
    }
    *VIEW.lock().unwrap_or_else(|e| e.into_inner()) = view;
}

/// `dsm` is going away: stores are no longer noted through it.
pub(crate) fn unregister(dsm: *mut DsmObj) {
    if CURRENT
        .compare_exchange(
            dsm,
            std::ptr::null_mut(),
            Ordering::AcqRel,
            Ordering::Acquire,
        )
        .is_ok()
    {
        sss_rcop_span.store(0, Ordering::Release);
        sss_rcop_map.store(0, Ordering::Release);
        let view = VIEW.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(v) = view {
            RETRANSMISSIONS.store(v.retransmissions(), Ordering::Relaxed);
        }
    }
}

/// The task's retransmissions when its heap went away (`retransmissions`
/// in the `{"rcop":...}` line): what back-off looked at, so a back-off is
/// right only where they are not 0.
static RETRANSMISSIONS: AtomicU64 = AtomicU64::new(0);

/// Calls of [`sss_rcop_note`], [`sss_rcop_twin_range`],
/// [`sss_rcop_cursor_twin`], [`sss_rcop_cursor_begin`] and
/// [`sss_rcop_cursor_end`]: how often the consistency code `sss cc`
/// inserted ran (the #CM of seed Tables 7-8), whatever the note log then
/// merged and however many ranges one call noted.
static CALLS: AtomicU64 = AtomicU64::new(0);

/// Ranges [`sss_rcop_cursor_end`] noted (`cursor_ranges` in the
/// `{"rcop":...}` line): a cursor loop's calls are two #CM, its notes one
/// a cursor that moved, which this counts.
static CURSOR_RANGES: AtomicU64 = AtomicU64::new(0);

/// Calls of [`sss_rcop_twin_range`] and [`sss_rcop_cursor_twin`] (part
/// of [`CALLS`]), and of those the ones the heap diffs (`twin_ranges`,
/// `diffed` in the `{"rcop":...}` line).
static TWIN_RANGES: AtomicU64 = AtomicU64::new(0);
static TWIN_DIFFED: AtomicU64 = AtomicU64::new(0);

/// With `SSS_STATS=json`, one line for this task's #CM beside the heap's
/// statistics, when compiled code noted anything.
pub(crate) fn report(rank: u32) {
    let n = CALLS.swap(0, Ordering::Relaxed);
    let b = BACKOFFS.swap(0, Ordering::Relaxed);
    let f = FETCHES.swap(0, Ordering::Relaxed);
    let t = TWIN_RANGES.swap(0, Ordering::Relaxed);
    let td = TWIN_DIFFED.swap(0, Ordering::Relaxed);
    let r = RETRANSMISSIONS.swap(0, Ordering::Relaxed);
    let cr = CURSOR_RANGES.swap(0, Ordering::Relaxed);
    if (n > 0 || b > 0 || f > 0) && std::env::var("SSS_STATS").is_ok_and(|v| v == "json") {
        eprintln!(
            "{{\"rcop\":{{\"rank\":{rank},\"notes\":{n},\"backoffs\":{b},\"retransmissions\":{r},\"fetches\":{f},\"twin_ranges\":{t},\"diffed\":{td},\"cursor_ranges\":{cr}}}}}"
        );
    }
}

/// Iterations of loops that note, ticked by code compiled with
/// `-fsss-opt=bo`, which calls [`sss_rcop_backoff`] every 256th.
#[no_mangle]
pub static sss_rcop_ticks: AtomicU64 = AtomicU64::new(0);

/// This task's control block, whose retransmission counter its progress
/// thread keeps (what the node's IDM page shows).
static VIEW: Mutex<Option<TaskView>> = Mutex::new(None);

/// Retransmissions at the last look.
static SEEN: AtomicU64 = AtomicU64::new(0);

/// Growth of the retransmissions between two looks that means the
/// network is saturated (0: every look; see `sss_rcop_backoff_threshold`).
static THRESHOLD: AtomicU64 = AtomicU64::new(1);

/// When the next look is due, in ns since [`epoch`].
static NEXT_LOOK: AtomicU64 = AtomicU64::new(0);

/// Times [`sss_rcop_backoff`] yielded or slept (`backoffs` in the
/// `{"rcop":...}` line).
static BACKOFFS: AtomicU64 = AtomicU64::new(0);

/// Looks at the counter at most this often: a look is a few loads, but
/// the progress thread updates the counter once per round anyway.
const LOOK_EVERY: Duration = Duration::from_micros(200);

/// Naps of one back-off beyond its first yield, while retransmissions
/// still grow, and their length: at most about 0.7 ms away.
const NAPS: u32 = 7;
const NAP: Duration = Duration::from_micros(100);

fn epoch() -> u64 {
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

/// Back-off (seed 000 §4.3), called by code compiled with `-fsss-opt=bo`
/// now and then from loops that note: when this task's retransmissions
/// grew by the threshold since the last look (the network drops what it
/// sends), steps aside, a yield and then naps of 0.1 ms, while they keep
/// growing, so that the retransmissions and other tasks' traffic get
/// through. Cheap when nothing is due: a clock read.
#[no_mangle]
pub extern "C" fn sss_rcop_backoff() {
    let now = epoch();
    if now < NEXT_LOOK.load(Ordering::Relaxed) {
        return;
    }
    NEXT_LOOK.store(now + LOOK_EVERY.as_nanos() as u64, Ordering::Relaxed);
    // Another thread looking decides for both.
    let Ok(view) = VIEW.try_lock() else {
        return;
    };
    let Some(v) = view.as_ref() else {
        return;
    };
    let grew = || {
        let r = v.retransmissions();
        r.wrapping_sub(SEEN.swap(r, Ordering::Relaxed))
    };
    let threshold = THRESHOLD.load(Ordering::Relaxed);
    if grew() < threshold {
        return;
    }
    for nap in 0..=NAPS {
        BACKOFFS.fetch_add(1, Ordering::Relaxed);
        if nap == 0 {
            std::thread::yield_now();
        } else {
            std::thread::sleep(NAP);
        }
        if grew() < threshold.max(1) {
            break;
        }
    }
}

/// Sets how many retransmissions between two looks (0.2 ms or more
/// apart) make [`sss_rcop_backoff`] back off; 0: at every look (a test
/// of the mechanism). The default is 1.
#[no_mangle]
pub extern "C" fn sss_rcop_backoff_threshold(retransmissions: u64) {
    THRESHOLD.store(retransmissions, Ordering::Relaxed);
}

/// Notes `len` bytes written at `addr` (a store the inline test placed in
/// the heap). Errors (a range past the heap's end) are dropped: the
/// store itself already happened, as in the uninstrumented program.
///
/// # Safety
/// None beyond the heap's: `addr` is only compared with the heap.
#[no_mangle]
pub unsafe extern "C" fn sss_rcop_note(addr: *const c_void, len: usize) {
    CALLS.fetch_add(1, Ordering::Relaxed);
    note(addr as u64, len);
}

/// [`sss_rcop_note`] for the runtime's own notes (not a #CM of their own).
fn note(addr: u64, len: usize) {
    let addr = addr as *const c_void;
    let d = CURRENT.load(Ordering::Acquire);
    if !d.is_null() && !super::notelog::fast(d, addr as u64, len as u64) {
        // SAFETY: `d` is a live handle until `unregister` (called by
        // sss_dsm_finalize before it frees the handle).
        let _ = unsafe { sss_dsm_note_write(d, addr, len) };
    }
}

/// Calls of [`sss_rcop_fetch`] and [`sss_rcop_fetch_range`] (UDSM): how
/// often a compiled presence check found a page absent, or a loop asked
/// for its range.
static FETCHES: AtomicU64 = AtomicU64::new(0);

/// Makes `[addr, addr + len)` present (UDSM), for a compiled check that
/// found its page absent. A failure (the home unreachable) ends the
/// program: the load would read a page that is not there.
///
/// # Safety
/// None beyond the heap's: `addr` is only compared with the heap, whose
/// pages the heap itself installs.
#[no_mangle]
pub unsafe extern "C" fn sss_rcop_fetch(addr: *const c_void, len: usize) {
    let d = CURRENT.load(Ordering::Acquire);
    let map = sss_rcop_map.load(Ordering::Acquire);
    if d.is_null() || map == 0 {
        return;
    }
    let (lo, span) = (
        sss_rcop_lo.load(Ordering::Acquire),
        sss_rcop_span.load(Ordering::Acquire),
    );
    // The inline test placed the first byte in the heap; an access
    // straddling its end is cut there.
    let off = (addr as u64).wrapping_sub(lo);
    if off >= span {
        return;
    }
    let len = (len.max(1) as u64).min(span - off);
    let page = PAGE as u64;
    // SAFETY: the map holds a byte for every page of the span, and lives
    // while the handle is registered; its bytes are only accessed
    // atomically.
    let present = |p: u64| unsafe {
        (*((map + p) as *const std::sync::atomic::AtomicU8)).load(Ordering::Acquire) != 0
    };
    if (off / page..=(off + len - 1) / page).all(present) {
        return;
    }
    FETCHES.fetch_add(1, Ordering::Relaxed);
    // SAFETY: `d` is a live handle until `unregister` (called by
    // sss_dsm_finalize before it frees the handle).
    if let Err(e) = unsafe { super::dsm::fetch(d, addr, len as usize, false) } {
        eprintln!("sss: UDSM fetch of {addr:p} ({len} bytes) failed: {e}");
        std::process::exit(1);
    }
}

/// Makes the heap pages of `[lo, hi)` present (UDSM): a loop's whole
/// range at its entry, so its accesses need no check of their own. Bytes
/// outside the heap are ignored (the range may be wider than what the
/// loop touches).
///
/// # Safety
/// As [`sss_rcop_fetch`].
#[no_mangle]
pub unsafe extern "C" fn sss_rcop_fetch_range(lo: *const c_void, hi: *const c_void) {
    let (base, span) = (
        sss_rcop_lo.load(Ordering::Acquire),
        sss_rcop_span.load(Ordering::Acquire),
    );
    let (a, b) = (
        (lo as u64).max(base),
        (hi as u64).min(base.saturating_add(span)),
    );
    if a < b {
        // SAFETY: only compared with the heap, as above.
        unsafe { sss_rcop_fetch(a as *const c_void, (b - a) as usize) };
    }
}

/// Most cursors a loop may have for [`sss_rcop_cursor_begin`] to copy:
/// above this the pass's bound (a mask) is implausible for an array, and
/// each store is noted by itself instead.
const MAX_CURSORS: u64 = 1 << 24;

/// Whether `[addr, addr + len)` lies in the noted heap.
fn in_heap(addr: u64, len: u64) -> bool {
    let (lo, span) = (
        sss_rcop_lo.load(Ordering::Acquire),
        sss_rcop_span.load(Ordering::Acquire),
    );
    addr.wrapping_sub(lo) < span && len <= span - addr.wrapping_sub(lo)
}

/// Reads cursor `i` of `width` bytes at `p`, sign-extended.
///
/// # Safety
/// `p` is valid for reads of `(i + 1) * width` bytes.
unsafe fn cursor_at(p: *const u8, i: u64, width: u64) -> i64 {
    // SAFETY: in bounds by the caller's contract; unaligned reads are fine.
    unsafe {
        if width == 4 {
            i64::from(std::ptr::read_unaligned(
                p.add((i * 4) as usize) as *const i32
            ))
        } else {
            std::ptr::read_unaligned(p.add((i * 8) as usize) as *const i64)
        }
    }
}

/// The bytes of the `n` cursors of `width` bytes at `p`, made present
/// (UDSM: the cursors are read here, not by compiled code), or None when
/// no heap is open or the cursors are not ones the runtime reads.
///
/// # Safety
/// As [`sss_rcop_cursor_begin`].
unsafe fn cursors_present(p: *const c_void, n: u64, width: u64) -> Option<usize> {
    if CURRENT.load(Ordering::Acquire).is_null()
        || sss_rcop_span.load(Ordering::Acquire) == 0
        || n == 0
        || n > MAX_CURSORS
        || !(width == 4 || width == 8)
        || p.is_null()
    {
        return None;
    }
    let len = (n * width) as usize;
    // SAFETY: only compared with the heap, as for any fetch.
    unsafe { sss_rcop_fetch_range(p, (p as *const u8).wrapping_add(len).cast()) };
    Some(len)
}

/// A copy of the `n` cursors of `width` bytes at `p` (see `sss.h`), or
/// null: then the loop notes each store itself. One #CM.
///
/// # Safety
/// `p` is valid for reads of `n * width` bytes (the pass's bound of the
/// loop's cursor index).
#[no_mangle]
pub unsafe extern "C" fn sss_rcop_cursor_begin(
    p: *const c_void,
    n: u64,
    width: u64,
) -> *mut c_void {
    CALLS.fetch_add(1, Ordering::Relaxed);
    // SAFETY: the caller's contract is this function's.
    unsafe { snapshot(p, n, width) }
}

/// [`sss_rcop_cursor_begin`] without its #CM.
///
/// # Safety
/// As [`sss_rcop_cursor_begin`].
unsafe fn snapshot(p: *const c_void, n: u64, width: u64) -> *mut c_void {
    // SAFETY: the caller's contract is this function's.
    let Some(len) = (unsafe { cursors_present(p, n, width) }) else {
        return std::ptr::null_mut();
    };
    let mut copy = Vec::new();
    if copy.try_reserve_exact(len).is_err() {
        return std::ptr::null_mut();
    }
    // SAFETY: `p` is valid for `len` bytes by the contract.
    copy.extend_from_slice(unsafe { std::slice::from_raw_parts(p as *const u8, len) });
    Box::into_raw(copy.into_boxed_slice()) as *mut c_void
}

/// Notes what the cursors at `p` moved over since `snap` (see `sss.h`)
/// and frees `snap`; adjacent ranges go as one note. One #CM, whatever
/// it notes (counted in [`CURSOR_RANGES`]).
///
/// # Safety
/// `snap` is null or what [`sss_rcop_cursor_begin`] returned for the
/// same `p`, `n` and `width`, not freed yet; `p` as there.
#[no_mangle]
pub unsafe extern "C" fn sss_rcop_cursor_end(
    snap: *mut c_void,
    p: *const c_void,
    n: u64,
    width: u64,
    dst: *const c_void,
    elem: u64,
) {
    if snap.is_null() || snap == DIFFED {
        return;
    }
    CALLS.fetch_add(1, Ordering::Relaxed);
    let len = (n * width) as usize;
    // SAFETY: `snap` is the boxed slice of `len` bytes made by
    // sss_rcop_cursor_begin for these arguments, freed only here.
    let copy = unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(snap as *mut u8, len)) };
    let (dst, slots) = (dst as u64, p as u64);
    let mut run: Option<(u64, u64)> = None; // pending note: start, bytes
    let flush = |run: &mut Option<(u64, u64)>| {
        if let Some((a, l)) = run.take() {
            if l > 0 && in_heap(a, l) {
                CURSOR_RANGES.fetch_add(1, Ordering::Relaxed);
                note(a, l as usize);
            }
        }
    };
    let mut moved: Option<(u64, u64)> = None; // changed cursors in the heap
    for i in 0..n {
        // SAFETY: `copy` and `p` both hold `n` cursors.
        let (was, now) = unsafe {
            (
                cursor_at(copy.as_ptr(), i, width),
                cursor_at(p as *const u8, i, width),
            )
        };
        // Cursors only move forward; one that went back wrapped round and
        // its range is unknown (the stores were still made).
        if now <= was || was < 0 {
            continue;
        }
        let (a, l) = (
            dst.wrapping_add((was as u64).wrapping_mul(elem)),
            ((now - was) as u64).saturating_mul(elem),
        );
        match &mut run {
            Some((s, rl)) if s.wrapping_add(*rl) == a => *rl += l,
            _ => {
                flush(&mut run);
                run = Some((a, l));
            }
        }
        let c = slots + i * width;
        match &mut moved {
            Some((s, ml)) if *s + *ml == c => *ml += width,
            _ => {
                flush(&mut moved);
                moved = Some((c, width));
            }
        }
    }
    flush(&mut run);
    flush(&mut moved);
}

/// Whether the stores into `[lo, hi)` until the next release (at most
/// `written` bytes, 0: unknown) are covered without notes: the heap diffs
/// the part inside it (`sss_dsm::Dsm::twin_range`), and the rest needs no
/// notes. False without a heap that takes notes (trap mode, none yet: the
/// stores' own inline tests then fail too) or when the heap refuses the
/// range.
fn twin(lo: u64, hi: u64, written: u64) -> bool {
    let d = CURRENT.load(Ordering::Acquire);
    let (base, span) = (
        sss_rcop_lo.load(Ordering::Acquire),
        sss_rcop_span.load(Ordering::Acquire),
    );
    if d.is_null() || span == 0 {
        return false;
    }
    let (a, b) = (lo.max(base), hi.min(base.saturating_add(span)));
    if a >= b {
        return true;
    }
    // SAFETY: `d` is a live handle until `unregister`; the range is
    // only compared with the heap.
    unsafe { super::dsm::twin_range(d, a as *const c_void, (b - a) as usize, written as usize) }
}

/// A diffed range (see `sss.h`): code compiled by `sss cc` calls this
/// once before a loop nest whose stores it bounds to `[lo, hi)` (at most
/// `written` bytes of them, 0: unknown) but cannot note as one range;
/// non-zero: the stores need no notes until the next release (the heap
/// sends what differs from the pages' twins), zero: each store is noted
/// as usual. One #CM.
///
/// # Safety
/// None: the range is only compared with the heap, whose pages the heap
/// itself copies.
#[no_mangle]
pub unsafe extern "C" fn sss_rcop_twin_range(
    lo: *const c_void,
    hi: *const c_void,
    written: u64,
) -> i32 {
    CALLS.fetch_add(1, Ordering::Relaxed);
    TWIN_RANGES.fetch_add(1, Ordering::Relaxed);
    let ok = twin(lo as u64, hi as u64, written);
    if ok {
        TWIN_DIFFED.fetch_add(1, Ordering::Relaxed);
    }
    i32::from(ok)
}

/// What [`sss_rcop_cursor_twin`] returns when the heap diffs the loop's
/// stores: not a copy; [`sss_rcop_cursor_end`] ignores it. The header's
/// `SSS_RCOP_DIFFED ((void *)1)`, never dereferenced.
#[allow(clippy::manual_dangling_ptr)]
pub const DIFFED: *mut c_void = 1 as *mut c_void;

/// For a cursor loop that takes its back edge at most `backs` times
/// (see `sss.h`): each of its `backs + 1` iterations at most moves one
/// cursor below `n` by one, so the stores through them lie in
/// `[dst + min * elem, dst + (max + backs + 1) * elem)` for the least and
/// greatest cursors at entry. With more than [`CURSORS_PER_PAGE`]
/// cursors a page of that range, when the heap diffs it (and the
/// cursors, if they are in the heap), returns [`DIFFED`]; otherwise what
/// [`sss_rcop_cursor_begin`] returns, and the loop's exit notes what each
/// cursor moved over. One #CM.
///
/// # Safety
/// As [`sss_rcop_cursor_begin`].
#[no_mangle]
pub unsafe extern "C" fn sss_rcop_cursor_twin(
    p: *const c_void,
    n: u64,
    width: u64,
    dst: *const c_void,
    elem: u64,
    backs: u64,
) -> *mut c_void {
    CALLS.fetch_add(1, Ordering::Relaxed);
    TWIN_RANGES.fetch_add(1, Ordering::Relaxed);
    // SAFETY: the caller's contract is this function's.
    let Some(len) = (unsafe { cursors_present(p, n, width) }) else {
        return std::ptr::null_mut();
    };
    let (mut lo, mut hi) = (i64::MAX, i64::MIN);
    for i in 0..n {
        // SAFETY: `p` holds `n` cursors by the contract.
        let c = unsafe { cursor_at(p as *const u8, i, width) };
        lo = lo.min(c);
        hi = hi.max(c);
    }
    let (d, e, trips) = (dst as u64 as i128, elem as i128, backs as i128 + 1);
    let (mut a, mut b) = (d + lo as i128 * e, d + (hi as i128 + trips) * e);
    // Every cursor may move by all the trips: the bound reaches far past
    // the array (Radix's last bucket starts near its end). Stores through
    // `dst` stay in the allocation that holds their first one (C's
    // pointer arithmetic), which cuts the range to the array.
    if a >= 0 && a <= u64::MAX as i128 {
        let h = CURRENT.load(Ordering::Acquire);
        if in_heap(a as u64, 1) && !h.is_null() {
            // SAFETY: `h` is a live handle until `unregister`.
            if let Some((s, t)) = unsafe { super::dsm::allocation(h, a as u64 as *const c_void) } {
                a = a.max(s as i128);
                b = b.min(t as i128);
            }
        }
    }
    let written = (trips * e).min(u64::MAX as i128) as u64;
    // Fewer cursors than that: a note each at the exit costs less than
    // twinning and diffing the range's pages (a twin is a fresh page:
    // Radix's permutation took 25 % longer on one node diffed).
    let pages = ((b - a).max(0) / PAGE as i128).max(1);
    if (n as i128) <= CURSORS_PER_PAGE as i128 * pages {
        // SAFETY: the caller's contract, passed on.
        return unsafe { snapshot(p, n, width) };
    }
    // The increments of cursors in the heap are stores too: diffed only
    // when they are whole words (see `Dsm::twin_range`).
    let cursors_in_heap = {
        let (base, span) = (
            sss_rcop_lo.load(Ordering::Acquire),
            sss_rcop_span.load(Ordering::Acquire),
        );
        (p as u64) < base.saturating_add(span) && (p as u64).saturating_add(len as u64) > base
    };
    if a >= 0
        && (!cursors_in_heap || (width == 8 && p as u64 % 8 == 0))
        && b <= u64::MAX as i128
        && twin(a as u64, b as u64, written)
        && twin(p as u64, (p as u64).saturating_add(len as u64), len as u64)
    {
        TWIN_DIFFED.fetch_add(1, Ordering::Relaxed);
        return DIFFED;
    }
    // SAFETY: the caller's contract, passed on.
    unsafe { snapshot(p, n, width) }
}

/// Cursors a page of a cursor loop's range above which the heap diffs
/// the range instead of noting at the exit what each cursor moved over.
const CURSORS_PER_PAGE: u64 = 64;
