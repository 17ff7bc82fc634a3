//! The note log behind the header's inline `sss_dsm_note_write`: stores
//! into the heap are noted without a call into the runtime when the heap
//! needs no notes ([`NotePolicy::Drop`]: a task alone, or trap mode), or
//! appended to this log ([`NotePolicy::Log`]: every range known is ulrc,
//! whose notes wait for the release), which the next call on the handle
//! hands to the heap. Any other case, another handle, a range outside the
//! heap, another thread or a full log calls `sss_dsm_note_write`.
//!
//! The layout is `sss_note_log_t` in `include/sss.h`. The log belongs to
//! the DSM handle opened last in note or trap mode; only the thread that
//! opened it appends (the header compares `pthread_self()`), and it is
//! drained by any call on the handle (the program's synchronization
//! orders other threads' calls after the appends they must see).

use super::dsm::DsmObj;
use sss_dsm::{Dsm, NotePolicy};
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};

/// Entries of the log (`SSS_NOTE_LOG_CAP` in the header).
pub const CAP: usize = 256;

/// `sss_note_log_t`.
#[repr(C)]
pub struct NoteLog {
    dsm: AtomicPtr<DsmObj>,
    lo: AtomicU64,
    span: AtomicU64,
    /// Always [`MODE`]: the policy word lives in libsss, never in the
    /// program's copy of this struct, so that the heap's fault and
    /// progress threads can switch it without touching the program's
    /// memory (adopted globals fault, and those threads must not).
    mode: AtomicPtr<AtomicU64>,
    owner: AtomicU64,
    n: AtomicU64,
    ent: [[AtomicU64; 2]; CAP],
}

// The header's struct: a pointer, five words, the entries.
const _: () = assert!(std::mem::size_of::<NoteLog>() == 48 + CAP * 16);

/// The log's policy word (`NotePolicy`), which the log points at.
static MODE: AtomicU64 = AtomicU64::new(0);

/// The log the header's inline note writes to (`sss_note_log2`: the
/// layout with `mode` a pointer; the symbol changed with the layout so
/// that a program and a libsss of different layouts do not link).
#[no_mangle]
pub static sss_note_log2: NoteLog = NoteLog {
    dsm: AtomicPtr::new(std::ptr::null_mut()),
    lo: AtomicU64::new(0),
    span: AtomicU64::new(0),
    mode: AtomicPtr::new(&MODE as *const AtomicU64 as *mut AtomicU64),
    owner: AtomicU64::new(0),
    n: AtomicU64::new(0),
    ent: [const { [AtomicU64::new(0), AtomicU64::new(0)] }; CAP],
};

extern "C" {
    fn pthread_self() -> usize;
}

fn me() -> u64 {
    // SAFETY: pthread_self has no preconditions.
    unsafe { pthread_self() as u64 }
}

/// `dsm`, just opened on this thread, now owns the log.
pub(crate) fn register(dsm: *mut DsmObj, h: &Dsm) {
    let l = &sss_note_log2;
    l.dsm.store(std::ptr::null_mut(), Ordering::Release);
    l.n.store(0, Ordering::Relaxed);
    l.lo.store(h.base() as u64, Ordering::Relaxed);
    l.span.store(h.len() as u64, Ordering::Relaxed);
    l.owner.store(me(), Ordering::Relaxed);
    MODE.store(h.note_policy() as u64, Ordering::Relaxed);
    h.watch_notes(&MODE);
    l.dsm.store(dsm, Ordering::Release);
}

/// `dsm` is going away: notes no longer go to the log.
pub(crate) fn unregister(dsm: *const DsmObj) {
    let l = &sss_note_log2;
    if std::ptr::eq(l.dsm.load(Ordering::Acquire), dsm) {
        l.dsm.store(std::ptr::null_mut(), Ordering::Release);
        l.span.store(0, Ordering::Relaxed);
        MODE.store(NotePolicy::Call as u64, Ordering::Relaxed);
        l.n.store(0, Ordering::Relaxed);
    }
}

/// Hands the log's notes to `h` (the heap of `dsm`) and refreshes the
/// mode. Called at the start of every call on the handle.
pub(crate) fn drain(dsm: *const DsmObj, h: &Dsm) -> Result<(), sss_dsm::Error> {
    let l = &sss_note_log2;
    if !std::ptr::eq(l.dsm.load(Ordering::Acquire), dsm) {
        return Ok(());
    }
    // The C side writes entries before the count, on one thread.
    let n = (l.n.load(Ordering::Acquire) as usize).min(CAP);
    let r = if n > 0 {
        let ranges: Vec<(usize, usize)> = l.ent[..n]
            .iter()
            .map(|e| {
                (
                    e[0].load(Ordering::Relaxed) as usize,
                    e[1].load(Ordering::Relaxed) as usize,
                )
            })
            .collect();
        l.n.store(0, Ordering::Release);
        h.note_writes(&ranges)
    } else {
        Ok(())
    };
    MODE.store(h.note_policy() as u64, Ordering::Release);
    r
}

/// The inline note in Rust, for `sss_rcop_note`: true when the note was
/// logged or not needed.
pub(crate) fn fast(dsm: *const DsmObj, addr: u64, len: u64) -> bool {
    let l = &sss_note_log2;
    if !std::ptr::eq(l.dsm.load(Ordering::Acquire), dsm) {
        return false;
    }
    let (lo, span) = (l.lo.load(Ordering::Relaxed), l.span.load(Ordering::Relaxed));
    let rel = addr.wrapping_sub(lo);
    if rel >= span || len > span - rel {
        return false;
    }
    match MODE.load(Ordering::Acquire) {
        m if m == NotePolicy::Drop as u64 => true,
        m if m == NotePolicy::Log as u64 && l.owner.load(Ordering::Relaxed) == me() => {
            let n = l.n.load(Ordering::Relaxed) as usize;
            if n > 0 && n <= CAP {
                let last = &l.ent[n - 1];
                let (a, b) = (
                    last[0].load(Ordering::Relaxed),
                    last[1].load(Ordering::Relaxed),
                );
                if a.wrapping_add(b) == addr {
                    last[1].store(b + len, Ordering::Relaxed);
                    return true;
                }
            }
            if n >= CAP {
                return false;
            }
            l.ent[n][0].store(addr, Ordering::Relaxed);
            l.ent[n][1].store(len, Ordering::Relaxed);
            l.n.store(n as u64 + 1, Ordering::Release);
            true
        }
        _ => false,
    }
}
