//! Request handles: testing, waiting for and freeing an operation's
//! completion.

use super::{guard, obj};
use crate::handle::ReqObj;
use crate::status::Status;

/// See `sss_request_test` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_request_test(req: *const ReqObj) -> Status {
    let mut done = false;
    let s = guard(|| {
        // SAFETY: header contract for handles.
        done = unsafe { obj(req, "req") }?.test()?;
        Ok(())
    });
    if s == Status::Ok && !done {
        Status::InProgress
    } else {
        s
    }
}

/// See `sss_request_wait` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_request_wait(req: *const ReqObj) -> Status {
    guard(|| {
        // SAFETY: header contract for handles.
        unsafe { obj(req, "req") }?.wait()
    })
}

/// See `sss_request_free` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_request_free(req: *mut ReqObj) {
    let _ = guard(|| {
        if !req.is_null() {
            // SAFETY: created by Box::into_raw in an operation entry point;
            // the caller gives it up here. Dropping does not cancel the
            // operation.
            drop(unsafe { Box::from_raw(req) });
        }
        Ok(())
    });
}
