//! The `extern "C"` entry points of `include/sss.h`: the only module of
//! this crate with unsafe code.
//!
//! Every entry point
//! - checks each pointer it dereferences for null (and alignment where the
//!   runtime needs it) and answers `SSS_ERR_INVALID_PARAM` otherwise;
//! - runs its body under `catch_unwind`, so no panic crosses into C: a
//!   panic becomes `SSS_ERR_INTERNAL`;
//! - writes its outputs only on success;
//! - records the detail of a failure for `sss_last_error` on the calling
//!   thread.
//!
//! The header documents the contracts callers promise (handles valid from
//! creation to destruction, buffers valid for their stated lifetimes);
//! the SAFETY comments below rely on them.

#![allow(unsafe_code)]
#![deny(unsafe_op_in_unsafe_fn)]

use crate::handle::{not_in_handler, FifoObj, ReqObj, SegObj, TaskObj};
use crate::status::{Failure, Status};
use crate::types::{
    perm_from_raw, Cmp, OpParams, RAddr, SegInfo, Stats, OP_FLAGS_ALL, OP_FLAG_NOFC,
    OP_FLAG_NOTIFY, OP_FLAG_STATUS_RETURN,
};
use sss_mbcf::{Notify, Options, RemoteAddr, Sink};
use std::cell::RefCell;
use std::ffi::{c_char, c_void, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::AtomicU64;
use std::time::Duration;

/// `sss_signal_handler_t`.
pub type SignalHandlerFn = unsafe extern "C" fn(
    arg: *mut c_void,
    task: *const TaskObj,
    from: u32,
    payload: *const c_void,
    len: usize,
);

thread_local! {
    /// Detail of the last failure on this thread, for `sss_last_error`.
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

fn set_last_error(detail: &str) {
    // Interior NULs cannot occur in our messages; strip them if they do.
    let c = CString::new(detail.replace('\0', " ")).unwrap_or_default();
    LAST_ERROR.with(|l| *l.borrow_mut() = c);
}

/// Runs an entry point's body: panics and failures become statuses.
pub(crate) fn guard(body: impl FnOnce() -> Result<(), Failure>) -> Status {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => Status::Ok,
        Ok(Err(f)) => {
            set_last_error(&f.detail);
            f.status
        }
        Err(_) => {
            set_last_error("internal error: a panic was caught at the C boundary");
            Status::Internal
        }
    }
}

/// Like [`guard`] for accessors that return a value: `fallback` on a null
/// handle or a panic.
pub(crate) fn guard_value<T>(fallback: T, body: impl FnOnce() -> Option<T>) -> T {
    catch_unwind(AssertUnwindSafe(body))
        .ok()
        .flatten()
        .unwrap_or(fallback)
}

fn null(what: &'static str) -> Failure {
    Failure::invalid(what)
}

/// The object behind a handle.
///
/// # Safety
/// `p` is null or a handle this library created and not yet destroyed
/// (the header's contract for every handle argument).
pub(crate) unsafe fn obj<'a, T>(p: *const T, what: &'static str) -> Result<&'a T, Failure> {
    // SAFETY: by the contract above, a non-null `p` points to a live
    // object created by Box::into_raw, only ever accessed through shared
    // references.
    unsafe { p.as_ref() }.ok_or_else(|| null(what))
}

/// `len` bytes at `p` as a slice; null is fine for zero bytes.
///
/// # Safety
/// `p` is null or points to `len` readable bytes valid for `'a`.
unsafe fn bytes<'a>(p: *const c_void, len: usize) -> Result<&'a [u8], Failure> {
    if len == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(null("null buffer with a non-zero length"));
    }
    if len > isize::MAX as usize {
        return Err(Failure::invalid("length too large"));
    }
    // SAFETY: non-null, `len` readable bytes by the caller's contract,
    // and the length fits an allocation.
    Ok(unsafe { std::slice::from_raw_parts(p.cast::<u8>(), len) })
}

/// `len` writable bytes at `p`; null is fine for zero bytes.
///
/// # Safety
/// `p` is null or points to `len` writable bytes, not otherwise accessed
/// during `'a`.
unsafe fn bytes_mut<'a>(p: *mut c_void, len: usize) -> Result<&'a mut [u8], Failure> {
    if len == 0 {
        return Ok(&mut []);
    }
    if p.is_null() {
        return Err(null("null buffer with a non-zero length"));
    }
    if len > isize::MAX as usize {
        return Err(Failure::invalid("length too large"));
    }
    // SAFETY: non-null, `len` writable bytes not aliased meanwhile, by the
    // caller's contract.
    Ok(unsafe { std::slice::from_raw_parts_mut(p.cast::<u8>(), len) })
}

/// Writes an output parameter (already checked non-null).
///
/// # Safety
/// `p` is non-null, aligned and writable.
pub(crate) unsafe fn put<T>(p: *mut T, v: T) {
    // SAFETY: the caller checked `p`; `write` does not drop the old
    // (possibly uninitialized) value.
    unsafe { p.write(v) }
}

pub(crate) fn out<T>(p: *mut T, what: &'static str) -> Result<*mut T, Failure> {
    if p.is_null() {
        return Err(null(what));
    }
    if !p.is_aligned() {
        return Err(Failure::invalid("misaligned output pointer"));
    }
    Ok(p)
}

fn aligned_u64(p: *const u64, what: &'static str) -> Result<(), Failure> {
    if !p.is_null() && !p.is_aligned() {
        return Err(Failure::invalid(what));
    }
    Ok(())
}

/// Options from `params` (may be null), with a completion sink when a
/// counter or a result location is given.
///
/// # Safety
/// `params` is null or points to a readable `sss_op_params_t`; its
/// `counter` and `data` (if not null) stay valid until the operation
/// completes, as the header requires.
unsafe fn setup(
    params: *const OpParams,
    notify_allowed: bool,
    data: *mut u8,
    data_len: usize,
) -> Result<Options, Failure> {
    // SAFETY: null or a readable params struct, by the contract above.
    let p = unsafe { params.as_ref() };
    let mut opts = Options::default();
    let mut counter: *mut u64 = std::ptr::null_mut();
    if let Some(p) = p {
        if p.flags & !OP_FLAGS_ALL != 0 {
            return Err(Failure::invalid("unknown SSS_OP_FLAG bits"));
        }
        opts.status_return = p.flags & OP_FLAG_STATUS_RETURN != 0;
        opts.nofc = p.flags & OP_FLAG_NOFC != 0;
        if p.flags & OP_FLAG_NOTIFY != 0 {
            if !notify_allowed {
                return Err(Failure::invalid(
                    "SSS_OP_FLAG_NOTIFY applies to sss_write only",
                ));
            }
            opts.notify = Some(Notify {
                key: p.notify_key,
                addr: p.notify_addr,
                addend: p.notify_addend,
            });
        }
        aligned_u64(p.counter, "params->counter must be 8-byte aligned")?;
        counter = p.counter;
    }
    if !counter.is_null() || !data.is_null() {
        // SAFETY: `counter` is null or an aligned u64 and `data` null or
        // `data_len` writable bytes (aligned for atomics' results, checked
        // by the callers), both valid until completion by the header's
        // contract; the caller must not touch them meanwhile.
        opts.sink = Some(unsafe { Sink::new(counter.cast::<AtomicU64>(), data, data_len) });
    }
    Ok(opts)
}

/// Boxes `v` into a handle and writes it to `p` (checked non-null).
///
/// # Safety
/// `p` is non-null, aligned and writable.
pub(crate) unsafe fn put_handle<T>(p: *mut *mut T, v: T) {
    // SAFETY: as for `put`.
    unsafe { put(p, Box::into_raw(Box::new(v))) }
}

/// Completes an operation entry point: the request handle if wanted.
///
/// # Safety
/// `req` is null or an aligned, writable `sss_request_h` slot.
unsafe fn submit(
    t: &TaskObj,
    rank: u32,
    r: Result<sss_mbcf::Request, sss_mbcf::Error>,
    req: *mut *mut ReqObj,
) -> Result<(), Failure> {
    if let Some(ro) = t.finish(rank, r, !req.is_null())? {
        // SAFETY: `req` non-null here (a request was wanted) and checked
        // aligned by the caller.
        unsafe { put_handle(req, ro) };
    }
    Ok(())
}

fn req_slot(req: *mut *mut ReqObj) -> Result<*mut *mut ReqObj, Failure> {
    if req.is_null() {
        return Ok(req);
    }
    out(req, "request slot")
}

// ---------------------------------------------------------------- status

/// See `sss_status_string` in `include/sss.h`.
#[no_mangle]
pub extern "C" fn sss_status_string(status: i32) -> *const c_char {
    Status::from_i32(status).map_or(c"unknown status".as_ptr(), |s| s.message().as_ptr())
}

/// See `sss_last_error` in `include/sss.h`.
#[no_mangle]
pub extern "C" fn sss_last_error() -> *const c_char {
    // The pointer stays valid until this thread's next failing call
    // replaces the thread-local string.
    LAST_ERROR.with(|l| l.borrow().as_ptr())
}

/// See `sss_version` in `include/sss.h`.
#[no_mangle]
pub extern "C" fn sss_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

// ------------------------------------------------------------------ task

/// See `sss_init` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_init(task_p: *mut *mut TaskObj) -> Status {
    guard(|| {
        let p = out(task_p, "task_p")?;
        let t = TaskObj::init()?;
        // SAFETY: checked non-null and aligned.
        unsafe { put_handle(p, t) };
        Ok(())
    })
}

/// See `sss_finalize` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_finalize(task: *mut TaskObj) -> Status {
    guard(|| {
        // SAFETY: header contract for handles.
        let t = unsafe { obj(task, "task") }?;
        if !t.is_owned() {
            return Err(Failure::invalid(
                "a signal handler's task handle cannot be finalized",
            ));
        }
        not_in_handler()?;
        // SAFETY: an owned handle comes from Box::into_raw in sss_init and
        // the caller gives it up here.
        drop(unsafe { Box::from_raw(task) });
        Ok(())
    })
}

/// See `sss_task_rank` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_task_rank(task: *const TaskObj) -> u32 {
    guard_value(u32::MAX, || {
        // SAFETY: header contract for handles.
        unsafe { task.as_ref() }.map(|t| t.task().rank())
    })
}

/// See `sss_task_size` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_task_size(task: *const TaskObj) -> u32 {
    guard_value(0, || {
        // SAFETY: header contract for handles.
        unsafe { task.as_ref() }.map(|t| t.task().size())
    })
}

/// See `sss_task_job` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_task_job(task: *const TaskObj) -> u32 {
    guard_value(0, || {
        // SAFETY: header contract for handles.
        unsafe { task.as_ref() }.map(|t| t.task().job())
    })
}

/// See `sss_task_stats` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_task_stats(task: *const TaskObj, stats: *mut Stats) -> Status {
    guard(|| {
        // SAFETY: header contract for handles.
        let t = unsafe { obj(task, "task") }?;
        let p = out(stats, "stats")?;
        let s = Stats::from(t.task().stats());
        // SAFETY: checked non-null and aligned.
        unsafe { put(p, s) };
        Ok(())
    })
}

/// See `sss_barrier` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_barrier(task: *const TaskObj) -> Status {
    guard(|| {
        // SAFETY: header contract for handles.
        let t = unsafe { obj(task, "task") }?;
        not_in_handler()?;
        Ok(t.task().barrier()?)
    })
}

/// See `sss_allgather` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_allgather(
    task: *const TaskObj,
    send: *const c_void,
    len: usize,
    recv: *mut c_void,
) -> Status {
    guard(|| {
        // SAFETY: header contract for handles.
        let t = unsafe { obj(task, "task") }?;
        not_in_handler()?;
        // SAFETY: `send` holds `len` readable bytes (header contract).
        let mine = unsafe { bytes(send, len) }?;
        let total = len
            .checked_mul(t.task().size() as usize)
            .ok_or_else(|| Failure::invalid("len * size overflows"))?;
        if recv.is_null() && total > 0 {
            return Err(null("recv"));
        }
        let all = t.task().allgather(mine)?;
        if all.iter().any(|b| b.len() != len) {
            return Err(Failure::invalid("tasks passed different lengths"));
        }
        // SAFETY: `recv` holds len * size writable bytes (header contract).
        let dst = unsafe { bytes_mut(recv, total) }?;
        for (chunk, b) in dst.chunks_exact_mut(len.max(1)).zip(&all) {
            chunk.copy_from_slice(b);
        }
        Ok(())
    })
}

/// See `sss_fence` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_fence(task: *const TaskObj, rank: u32) -> Status {
    guard(|| {
        // SAFETY: header contract for handles.
        unsafe { obj(task, "task") }?.fence(rank)
    })
}

/// See `sss_quiet` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_quiet(task: *const TaskObj) -> Status {
    guard(|| {
        // SAFETY: header contract for handles.
        unsafe { obj(task, "task") }?.quiet()
    })
}

/// Shared body of `sss_wait_u64` and `sss_wait_u64_timeout`.
///
/// # Safety
/// `addr` is null or an aligned u64 valid during the call that others
/// change only atomically (remote operations, atomics).
unsafe fn wait_u64(
    task: *const TaskObj,
    addr: *const u64,
    cmp: u32,
    value: u64,
    timeout: Option<Duration>,
) -> Result<(), Failure> {
    // SAFETY: header contract for handles.
    let t = unsafe { obj(task, "task") }?;
    if addr.is_null() {
        return Err(null("addr"));
    }
    aligned_u64(addr, "addr must be 8-byte aligned")?;
    let cmp = Cmp::from_raw(cmp).ok_or_else(|| Failure::invalid("unknown sss_cmp_t"))?;
    // SAFETY: non-null and aligned (checked), valid during the call and
    // only changed atomically meanwhile (contract above); we only load.
    let word = unsafe { AtomicU64::from_ptr(addr.cast_mut()) };
    let pred = |v: u64| cmp.holds(v, value);
    match timeout {
        None => {
            t.task().wait_word(word, pred);
            Ok(())
        }
        Some(d) => t
            .task()
            .wait_word_timeout(word, pred, d)
            .map(|_| ())
            .ok_or_else(|| Failure::new(Status::TimedOut, "the word did not change in time")),
    }
}

/// See `sss_wait_u64` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_wait_u64(
    task: *const TaskObj,
    addr: *const u64,
    cmp: u32,
    value: u64,
) -> Status {
    // SAFETY: forwarded contract.
    guard(|| unsafe { wait_u64(task, addr, cmp, value, None) })
}

/// See `sss_wait_u64_timeout` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_wait_u64_timeout(
    task: *const TaskObj,
    addr: *const u64,
    cmp: u32,
    value: u64,
    timeout_us: u64,
) -> Status {
    let d = Duration::from_micros(timeout_us);
    // SAFETY: forwarded contract.
    guard(|| unsafe { wait_u64(task, addr, cmp, value, Some(d)) })
}

/// See `sss_sswait_u64` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_sswait_u64(
    task: *const TaskObj,
    addr: *const u64,
    cmp: u32,
    value: u64,
    partner: u32,
) -> Status {
    guard(|| {
        // SAFETY: header contract for handles.
        let t = unsafe { obj(task, "task") }?;
        if addr.is_null() {
            return Err(null("addr"));
        }
        aligned_u64(addr, "addr must be 8-byte aligned")?;
        let cmp = Cmp::from_raw(cmp).ok_or_else(|| Failure::invalid("unknown sss_cmp_t"))?;
        if partner >= t.task().size() {
            return Err(Failure::new(Status::NoSuchTask, "partner outside the job"));
        }
        // SAFETY: non-null and aligned (checked), valid during the call
        // and only changed atomically meanwhile (header contract).
        let word = unsafe { AtomicU64::from_ptr(addr.cast_mut()) };
        t.task().sswait(word, partner, |v| cmp.holds(v, value));
        Ok(())
    })
}

/// See `sss_progress_bump` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_progress_bump(task: *const TaskObj) {
    let _ = guard(|| {
        // SAFETY: header contract for handles.
        let t = unsafe { obj(task, "task") }?;
        t.task().bump_progress();
        Ok(())
    });
}

/// See `sss_idm_node` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_idm_node(
    task: *const TaskObj,
    node: *const std::ffi::c_char,
    info: *mut crate::types::NodeInfo,
) -> Status {
    guard(|| {
        // SAFETY: header contract for handles.
        let t = unsafe { obj(task, "task") }?;
        if node.is_null() {
            return Err(null("node"));
        }
        let p = out(info, "info")?;
        // SAFETY: a NUL-terminated string per the header.
        let name = unsafe { std::ffi::CStr::from_ptr(node) }
            .to_str()
            .map_err(|_| Failure::invalid("node name is not UTF-8"))?;
        let d = t
            .task()
            .node_page(name)
            .ok_or_else(|| Failure::new(Status::NoMessage, "no daemon here, or unknown node"))?;
        let v = crate::types::NodeInfo {
            name: d.name,
            up: d.is_up() as u32,
            ncpus: d.ncpus,
            runnable: d.runnable,
            ntasks: d.ntasks,
            load1000: d.load,
            reserved: 0,
            mem_total_kb: d.mem_total_kb,
            mem_free_kb: d.mem_free_kb,
            packets: d.packets,
            bytes: d.bytes,
            retransmissions: d.retransmissions,
            rejected: d.rejected,
            updated_ns: d.updated_ns,
        };
        // SAFETY: checked non-null and aligned.
        unsafe { put(p, v) };
        Ok(())
    })
}

/// See `sss_idm_task_state` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_idm_task_state(task: *const TaskObj, rank: u32) -> u32 {
    guard_value(0, || {
        // SAFETY: header contract for handles.
        let t = unsafe { obj(task, "task") }.ok()?;
        Some(t.task().task_state(rank) as u32)
    })
}

// -------------------------------------------------------------- segments

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

// ------------------------------------------------------------ operations

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

// ----------------------------------------------------------------- FIFOs

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

// --------------------------------------------------------------- signals

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

// ------------------------------------------------------------- multicast

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

// -------------------------------------------------------------- requests

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
