//! What code compiled by `sss cc` (the RCOP pass) calls: after every
//! store that may reach the DSM heap it tests the address against
//! [`sss_rcop_lo`] / [`sss_rcop_span`] inline and, inside, calls
//! [`sss_rcop_note`]. The range is the heap of the DSM handle opened
//! last in note mode; in trap mode (write protection records stores) and
//! before any heap exists the span is 0, so no store calls out.

use super::dsm::{sss_dsm_note_write, DsmObj};
use std::ffi::c_void;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};

/// First byte of the heap stores are noted for.
#[no_mangle]
pub static sss_rcop_lo: AtomicU64 = AtomicU64::new(0);

/// Bytes of that heap (0: nothing is noted).
#[no_mangle]
pub static sss_rcop_span: AtomicU64 = AtomicU64::new(0);

static CURRENT: AtomicPtr<DsmObj> = AtomicPtr::new(std::ptr::null_mut());

/// `dsm` (note mode) now receives the notes of instrumented stores.
pub(crate) fn register(dsm: *mut DsmObj, base: usize, len: usize) {
    CURRENT.store(dsm, Ordering::Release);
    sss_rcop_lo.store(base as u64, Ordering::Release);
    sss_rcop_span.store(len as u64, Ordering::Release);
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
    }
}

/// Notes `len` bytes written at `addr` (a store the inline test placed in
/// the heap). Errors (a range past the heap's end) are dropped: the
/// store itself already happened, as in the uninstrumented program.
///
/// # Safety
/// None beyond the heap's: `addr` is only compared with the heap.
#[no_mangle]
pub unsafe extern "C" fn sss_rcop_note(addr: *const c_void, len: usize) {
    let d = CURRENT.load(Ordering::Acquire);
    if !d.is_null() {
        // SAFETY: `d` is a live handle until `unregister` (called by
        // sss_dsm_finalize before it frees the handle).
        let _ = unsafe { sss_dsm_note_write(d, addr, len) };
    }
}
