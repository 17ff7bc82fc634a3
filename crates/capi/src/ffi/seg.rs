//! Segment entry points: allocation (plain, shared-key, symmetric),
//! registration of existing memory, freeing, description and exchange.

use super::{guard, guard_value, null, obj, out, put, put_handle};
use crate::handle::{not_in_handler, SegObj, TaskObj};
use crate::status::{Failure, Status};
use crate::types::{perm_from_raw, SegInfo};
use std::ffi::c_void;

/// See `sss_seg_alloc` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_seg_alloc(
    task: *const TaskObj,
    len: usize,
    perm: u32,
    seg_p: *mut *mut SegObj,
) -> Status {
    guard(|| {
        // SAFETY: header contract for handles.
        let t = unsafe { obj(task, "task") }?;
        let p = out(seg_p, "seg_p")?;
        let perm = perm_from_raw(perm).ok_or_else(|| Failure::invalid("unknown SSS_PERM bits"))?;
        let seg = t.task().alloc(len, perm)?;
        // SAFETY: checked non-null and aligned.
        unsafe { put_handle(p, SegObj { seg }) };
        Ok(())
    })
}

/// Shared body of the collective allocations.
///
/// # Safety
/// `task` is a valid handle or null.
unsafe fn seg_alloc_collective(
    task: *const TaskObj,
    len: usize,
    perm: u32,
    seg_p: *mut *mut SegObj,
    symmetric: bool,
) -> Result<(), Failure> {
    // SAFETY: header contract for handles.
    let t = unsafe { obj(task, "task") }?;
    let p = out(seg_p, "seg_p")?;
    not_in_handler()?;
    let perm = perm_from_raw(perm).ok_or_else(|| Failure::invalid("unknown SSS_PERM bits"))?;
    let seg = if symmetric {
        t.task().alloc_symmetric(len, perm)?
    } else {
        t.task().alloc_shared_key(len, perm)?
    };
    // SAFETY: checked non-null and aligned.
    unsafe { put_handle(p, SegObj { seg }) };
    Ok(())
}

/// See `sss_seg_alloc_shared_key` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_seg_alloc_shared_key(
    task: *const TaskObj,
    len: usize,
    perm: u32,
    seg_p: *mut *mut SegObj,
) -> Status {
    // SAFETY: forwarded contract.
    guard(|| unsafe { seg_alloc_collective(task, len, perm, seg_p, false) })
}

/// See `sss_seg_alloc_symmetric` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_seg_alloc_symmetric(
    task: *const TaskObj,
    len: usize,
    perm: u32,
    seg_p: *mut *mut SegObj,
) -> Status {
    // SAFETY: forwarded contract.
    guard(|| unsafe { seg_alloc_collective(task, len, perm, seg_p, true) })
}

/// See `sss_seg_register` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_seg_register(
    task: *const TaskObj,
    addr: *mut c_void,
    len: usize,
    perm: u32,
    seg_p: *mut *mut SegObj,
) -> Status {
    guard(|| {
        // SAFETY: header contract for handles.
        let t = unsafe { obj(task, "task") }?;
        let p = out(seg_p, "seg_p")?;
        if addr.is_null() {
            return Err(null("addr"));
        }
        let perm = perm_from_raw(perm).ok_or_else(|| Failure::invalid("unknown SSS_PERM bits"))?;
        // SAFETY: the header requires `addr .. addr + len` to stay valid,
        // writable memory until sss_seg_free, open to remote access.
        let seg = unsafe { t.task().register(addr.cast(), len, perm) }?;
        // SAFETY: checked non-null and aligned.
        unsafe { put_handle(p, SegObj { seg }) };
        Ok(())
    })
}

/// See `sss_seg_free` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_seg_free(task: *const TaskObj, seg: *mut SegObj) -> Status {
    guard(|| {
        // SAFETY: header contract for handles.
        let t = unsafe { obj(task, "task") }?;
        // SAFETY: header contract for handles.
        let s = unsafe { obj(seg, "seg") }?;
        t.task().free(s.seg.clone())?;
        // SAFETY: created by Box::into_raw in an allocation entry point;
        // the caller gives it up here.
        drop(unsafe { Box::from_raw(seg) });
        Ok(())
    })
}

/// See `sss_seg_info` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_seg_info(seg: *const SegObj, info: *mut SegInfo) -> Status {
    guard(|| {
        // SAFETY: header contract for handles.
        let s = unsafe { obj(seg, "seg") }?;
        let p = out(info, "info")?;
        // SAFETY: checked non-null and aligned.
        unsafe { put(p, SegInfo::from(s.seg.info())) };
        Ok(())
    })
}

/// See `sss_seg_ptr` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_seg_ptr(seg: *const SegObj) -> *mut c_void {
    guard_value(std::ptr::null_mut(), || {
        // SAFETY: header contract for handles.
        unsafe { seg.as_ref() }.map(|s| s.seg.as_ptr().cast())
    })
}

/// See `sss_seg_exchange` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_seg_exchange(
    task: *const TaskObj,
    seg: *const SegObj,
    infos: *mut SegInfo,
) -> Status {
    guard(|| {
        // SAFETY: header contract for handles.
        let t = unsafe { obj(task, "task") }?;
        // SAFETY: header contract for handles.
        let s = unsafe { obj(seg, "seg") }?;
        let p = out(infos, "infos")?;
        not_in_handler()?;
        let all = t.task().exchange(&s.seg)?;
        if all.len() != t.task().size() as usize {
            return Err(Failure::new(
                Status::Boot,
                "exchange returned a short table",
            ));
        }
        for (i, info) in all.into_iter().enumerate() {
            // SAFETY: `infos` holds sss_task_size() entries (header
            // contract), checked non-null and aligned; i < size.
            unsafe { put(p.add(i), SegInfo::from(info)) };
        }
        Ok(())
    })
}
