//! One-sided operations on remote memory: WRITE, READ and the 8-byte
//! atomics (SWAP, CAS, FETCH_ADD).

use super::{aligned_u64, bytes, guard, null, obj, req_slot, setup, submit};
use crate::handle::{ReqObj, TaskObj};
use crate::status::{Failure, Status};
use crate::types::{OpParams, RAddr};
use sss_mbcf::RemoteAddr;
use std::ffi::c_void;

/// See `sss_write` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_write(
    task: *const TaskObj,
    dst: RAddr,
    buf: *const c_void,
    len: usize,
    params: *const OpParams,
    req: *mut *mut ReqObj,
) -> Status {
    guard(|| {
        // SAFETY: header contract for handles.
        let t = unsafe { obj(task, "task") }?;
        // SAFETY: `buf` holds `len` readable bytes during the call.
        let data = unsafe { bytes(buf, len) }?;
        let req = req_slot(req)?;
        // SAFETY: params null or readable; its counter valid until
        // completion (header contract).
        let opts = unsafe { setup(params, true, std::ptr::null_mut(), 0) }?;
        let r = t.task().write(RemoteAddr::from(dst), data, opts);
        // SAFETY: `req` checked by req_slot.
        unsafe { submit(t, dst.rank, r, req) }
    })
}

/// See `sss_read` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_read(
    task: *const TaskObj,
    src: RAddr,
    len: usize,
    params: *const OpParams,
    buf: *mut c_void,
    req: *mut *mut ReqObj,
) -> Status {
    guard(|| {
        // SAFETY: header contract for handles.
        let t = unsafe { obj(task, "task") }?;
        if buf.is_null() && len > 0 {
            return Err(null("buf"));
        }
        let req = req_slot(req)?;
        // SAFETY: `buf` holds `len` writable bytes valid until completion,
        // and params as for sss_write (header contract).
        let opts = unsafe { setup(params, false, buf.cast(), len) }?;
        let r = t.task().read(RemoteAddr::from(src), len, opts);
        // SAFETY: `req` checked by req_slot.
        unsafe { submit(t, src.rank, r, req) }
    })
}

/// Which 8-byte atomic.
enum Atomic {
    Swap(u64),
    Cas(u64, u64),
    FetchAdd(u64),
}

/// Shared body of the atomics.
///
/// # Safety
/// As `sss_swap` in the header.
unsafe fn atomic(
    task: *const TaskObj,
    dst: RAddr,
    op: Atomic,
    params: *const OpParams,
    result: *mut u64,
    req: *mut *mut ReqObj,
) -> Result<(), Failure> {
    // SAFETY: header contract for handles.
    let t = unsafe { obj(task, "task") }?;
    aligned_u64(result, "result must be 8-byte aligned")?;
    let req = req_slot(req)?;
    // SAFETY: `result` null or an aligned u64 valid until completion, and
    // params as for sss_write (header contract).
    let opts = unsafe { setup(params, false, result.cast(), 8) }?;
    let at = RemoteAddr::from(dst);
    let r = match op {
        Atomic::Swap(v) => t.task().swap(at, v, opts),
        Atomic::Cas(e, n) => t.task().cas(at, e, n, opts),
        Atomic::FetchAdd(v) => t.task().fetch_add(at, v, opts),
    };
    // SAFETY: `req` checked by req_slot.
    unsafe { submit(t, dst.rank, r, req) }
}

/// See `sss_swap` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_swap(
    task: *const TaskObj,
    dst: RAddr,
    value: u64,
    params: *const OpParams,
    result: *mut u64,
    req: *mut *mut ReqObj,
) -> Status {
    // SAFETY: forwarded contract.
    guard(|| unsafe { atomic(task, dst, Atomic::Swap(value), params, result, req) })
}

/// See `sss_cas` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_cas(
    task: *const TaskObj,
    dst: RAddr,
    expected: u64,
    desired: u64,
    params: *const OpParams,
    result: *mut u64,
    req: *mut *mut ReqObj,
) -> Status {
    let op = Atomic::Cas(expected, desired);
    // SAFETY: forwarded contract.
    guard(|| unsafe { atomic(task, dst, op, params, result, req) })
}

/// See `sss_fetch_add` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_fetch_add(
    task: *const TaskObj,
    dst: RAddr,
    value: u64,
    params: *const OpParams,
    result: *mut u64,
    req: *mut *mut ReqObj,
) -> Status {
    // SAFETY: forwarded contract.
    guard(|| unsafe { atomic(task, dst, Atomic::FetchAdd(value), params, result, req) })
}
