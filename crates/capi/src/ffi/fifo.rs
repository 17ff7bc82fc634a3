//! FIFO queue entry points: sizing, creation in a segment, the address
//! peers push to, pushes and (waiting) pops.

use super::{
    bytes, bytes_mut, guard, guard_value, obj, out, put, put_handle, req_slot, setup, submit,
};
use crate::handle::{FifoObj, ReqObj, SegObj, TaskObj};
use crate::status::{Failure, Status};
use crate::types::{OpParams, RAddr};
use sss_mbcf::RemoteAddr;
use std::ffi::c_void;

/// See `sss_fifo_bytes` in `include/sss.h`.
#[no_mangle]
pub extern "C" fn sss_fifo_bytes(slots: u32, max_msg: usize) -> usize {
    guard_value(0, || {
        max_msg
            .checked_add(64)
            .filter(|_| slots.is_power_of_two())
            .map(|_| sss_mbcf::fifo_bytes(slots, max_msg))
    })
}

/// See `sss_fifo_create` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_fifo_create(
    task: *const TaskObj,
    seg: *const SegObj,
    offset: usize,
    slots: u32,
    max_msg: usize,
    fifo_p: *mut *mut FifoObj,
) -> Status {
    guard(|| {
        // SAFETY: header contract for handles.
        let t = unsafe { obj(task, "task") }?;
        // SAFETY: header contract for handles.
        let s = unsafe { obj(seg, "seg") }?;
        let p = out(fifo_p, "fifo_p")?;
        if max_msg > u32::MAX as usize {
            return Err(Failure::new(Status::TooLarge, "max_msg too large"));
        }
        let f = t.task().fifo_create(&s.seg, offset, slots, max_msg)?;
        // SAFETY: checked non-null and aligned.
        unsafe { put_handle(p, FifoObj::new(f)) };
        Ok(())
    })
}

/// See `sss_fifo_addr` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_fifo_addr(fifo: *const FifoObj, addr: *mut RAddr) -> Status {
    guard(|| {
        // SAFETY: header contract for handles.
        let f = unsafe { obj(fifo, "fifo") }?;
        let p = out(addr, "addr")?;
        // SAFETY: checked non-null and aligned.
        unsafe { put(p, RAddr::from(f.addr())) };
        Ok(())
    })
}

/// See `sss_fifo_destroy` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_fifo_destroy(fifo: *mut FifoObj) -> Status {
    guard(|| {
        // SAFETY: header contract for handles.
        unsafe { obj(fifo, "fifo") }?;
        // SAFETY: created by Box::into_raw in sss_fifo_create; the caller
        // gives it up here.
        drop(unsafe { Box::from_raw(fifo) });
        Ok(())
    })
}

/// See `sss_fifo_push` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_fifo_push(
    task: *const TaskObj,
    queue: RAddr,
    msg: *const c_void,
    len: usize,
    params: *const OpParams,
    req: *mut *mut ReqObj,
) -> Status {
    guard(|| {
        // SAFETY: header contract for handles.
        let t = unsafe { obj(task, "task") }?;
        // SAFETY: `msg` holds `len` readable bytes during the call.
        let data = unsafe { bytes(msg, len) }?;
        let req = req_slot(req)?;
        // SAFETY: as for sss_write.
        let opts = unsafe { setup(params, false, std::ptr::null_mut(), 0) }?;
        let r = t.task().fifo_push(RemoteAddr::from(queue), data, opts);
        // SAFETY: `req` checked by req_slot.
        unsafe { submit(t, queue.rank, r, req) }
    })
}

/// Shared body of the pops.
///
/// # Safety
/// As `sss_fifo_pop` in the header; `task` null unless waiting.
unsafe fn fifo_pop(
    task: *const TaskObj,
    wait: bool,
    fifo: *const FifoObj,
    buf: *mut c_void,
    cap: usize,
    len_p: *mut usize,
    from_p: *mut u32,
) -> Result<(), Failure> {
    // SAFETY: header contract for handles.
    let f = unsafe { obj(fifo, "fifo") }?;
    let lp = out(len_p, "len_p")?;
    let fp = if from_p.is_null() {
        from_p
    } else {
        out(from_p, "from_p")?
    };
    // SAFETY: `buf` holds `cap` writable bytes during the call.
    let dst = unsafe { bytes_mut(buf, cap) }?;
    let (n, from) = if wait {
        // SAFETY: header contract for handles.
        let t = unsafe { obj(task, "task") }?;
        f.wait_pop(t.task(), dst)?
    } else {
        f.pop(dst)?
    };
    // SAFETY: checked non-null and aligned.
    unsafe { put(lp, n) };
    if !fp.is_null() {
        // SAFETY: checked aligned, non-null here.
        unsafe { put(fp, from) };
    }
    Ok(())
}

/// See `sss_fifo_pop` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_fifo_pop(
    fifo: *const FifoObj,
    buf: *mut c_void,
    capacity: usize,
    len_p: *mut usize,
    from_p: *mut u32,
) -> Status {
    let none = std::ptr::null();
    // SAFETY: forwarded contract.
    guard(|| unsafe { fifo_pop(none, false, fifo, buf, capacity, len_p, from_p) })
}

/// See `sss_fifo_wait_pop` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_fifo_wait_pop(
    task: *const TaskObj,
    fifo: *const FifoObj,
    buf: *mut c_void,
    capacity: usize,
    len_p: *mut usize,
    from_p: *mut u32,
) -> Status {
    // SAFETY: forwarded contract.
    guard(|| unsafe { fifo_pop(task, true, fifo, buf, capacity, len_p, from_p) })
}
