//! Multicast: declaring groups and WRITEs to every member through the
//! tree.

use super::{bytes, guard, obj, req_slot, submit};
use crate::handle::{ReqObj, TaskObj};
use crate::status::{Failure, Status};
use std::ffi::c_void;

/// See `sss_group_create` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_group_create(
    task: *const TaskObj,
    group: u32,
    ranks: *const u32,
    count: usize,
) -> Status {
    guard(|| {
        // SAFETY: header contract for handles.
        let t = unsafe { obj(task, "task") }?;
        if count == 0 || ranks.is_null() || !ranks.is_aligned() {
            return Err(Failure::invalid("ranks must be a non-empty, aligned array"));
        }
        if count > u32::MAX as usize {
            return Err(Failure::invalid("too many ranks"));
        }
        // SAFETY: `ranks` holds `count` readable u32 (header contract),
        // non-null and aligned (checked).
        let r = unsafe { std::slice::from_raw_parts(ranks, count) };
        Ok(t.task().group_create(group, r)?)
    })
}

/// See `sss_multicast` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_multicast(
    task: *const TaskObj,
    group: u32,
    key: u64,
    offset: u64,
    buf: *const c_void,
    len: usize,
    req: *mut *mut ReqObj,
) -> Status {
    guard(|| {
        // SAFETY: header contract for handles.
        let t = unsafe { obj(task, "task") }?;
        // SAFETY: `buf` holds `len` readable bytes during the call.
        let data = unsafe { bytes(buf, len) }?;
        let req = req_slot(req)?;
        let r = t.task().multicast(group, key, offset, data);
        // Errors of a detached multicast are filed under the caller's rank.
        // SAFETY: `req` checked by req_slot.
        unsafe { submit(t, t.task().rank(), r, req) }
    })
}
