//! SIGNAL: registering C handlers (run on the progress thread) and
//! sending signals.

use super::{bytes, guard, null, obj, req_slot, setup, submit};
use crate::handle::{ReqObj, TaskObj};
use crate::status::Status;
use crate::types::OpParams;
use std::ffi::c_void;

/// `sss_signal_handler_t`.
pub type SignalHandlerFn = unsafe extern "C" fn(
    arg: *mut c_void,
    task: *const TaskObj,
    from: u32,
    payload: *const c_void,
    len: usize,
);

/// See `sss_signal_set_handler` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_signal_set_handler(
    task: *const TaskObj,
    index: u32,
    handler: Option<SignalHandlerFn>,
    arg: *mut c_void,
) -> Status {
    guard(|| {
        // SAFETY: header contract for handles.
        let t = unsafe { obj(task, "task") }?;
        let cb = handler.ok_or_else(|| null("handler"))?;
        // A raw pointer is not Send; the header makes `arg` the caller's
        // to keep valid and thread-safe for as long as the task lives.
        let arg = arg as usize;
        t.set_handler(index, move |h: &TaskObj, from: u32, payload: &[u8]| {
            // SAFETY: `cb` is a C function with the handler signature; the
            // handle and payload are valid for the call, as the header
            // tells the handler.
            unsafe {
                cb(
                    arg as *mut c_void,
                    h,
                    from,
                    payload.as_ptr().cast(),
                    payload.len(),
                )
            }
        })
    })
}

/// See `sss_signal` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_signal(
    task: *const TaskObj,
    rank: u32,
    index: u32,
    payload: *const c_void,
    len: usize,
    params: *const OpParams,
    req: *mut *mut ReqObj,
) -> Status {
    guard(|| {
        // SAFETY: header contract for handles.
        let t = unsafe { obj(task, "task") }?;
        // SAFETY: `payload` holds `len` readable bytes during the call.
        let data = unsafe { bytes(payload, len) }?;
        let req = req_slot(req)?;
        // SAFETY: as for sss_write.
        let opts = unsafe { setup(params, false, std::ptr::null_mut(), 0) }?;
        let r = t.task().signal(rank, index, data, opts);
        // SAFETY: `req` checked by req_slot.
        unsafe { submit(t, rank, r, req) }
    })
}
