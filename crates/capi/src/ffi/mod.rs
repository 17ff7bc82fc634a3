//! The `extern "C"` entry points of `include/sss.h` — one submodule per
//! object family — and the marshalling they share: the only module of this
//! crate with unsafe code.
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
//!
//! Submodules: `task` (lifecycle, counters, collectives, fence/quiet),
//! `wait` (waiting on words, SS-Wait), `idm` (node and task status), `seg`
//! (segments), `rma` (WRITE, READ, atomics), `fifo`, `signal`, `multicast`,
//! `request`, `dsm` (the shared heap). This file holds the helpers and the
//! status/version functions.

#![allow(unsafe_code)]
#![deny(unsafe_op_in_unsafe_fn)]

mod dsm;
mod fifo;
mod idm;
mod multicast;
mod notelog;
mod rcop;
mod request;
mod rma;
mod seg;
mod signal;
mod task;
mod wait;

use crate::handle::{ReqObj, TaskObj};
use crate::status::{Failure, Status};
use crate::types::{
    Masked, OpParams, OP_FLAGS_ALL, OP_FLAG_NOFC, OP_FLAG_NOTIFY, OP_FLAG_STATUS_RETURN,
};
use sss_mbcf::{Notify, Options, Sink};
use std::cell::RefCell;
use std::ffi::{c_char, c_void, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::AtomicU64;

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

/// The caller's `field_mask`: the first 8 bytes of `p`, any alignment.
/// Bits `T` does not know are refused, as unknown flag bits are.
///
/// # Safety
/// `p` is non-null and its first 8 bytes are readable.
unsafe fn mask_of<T: Masked>(p: *const T) -> Result<u64, Failure> {
    // SAFETY: 8 readable bytes by the contract above; read unaligned, so
    // any address will do.
    let mask = unsafe { p.cast::<u64>().read_unaligned() };
    if mask & !T::ALL != 0 {
        return Err(Failure::invalid("unknown field_mask bits"));
    }
    Ok(mask)
}

/// The fields of `T` whose bits are set in `mask`.
fn masked<T: Masked>(mask: u64) -> impl Iterator<Item = crate::types::Field> {
    (T::FIELDS.iter().enumerate())
        .filter(move |(i, _)| mask & (1 << i) != 0)
        .map(|(_, f)| *f)
}

/// A caller's input struct (null: `None`): the fields its `field_mask`
/// names, the others zero. Nothing past those fields is read, so a
/// caller's shorter, older struct is fine.
///
/// # Safety
/// `p` is null or points to a readable struct holding at least the mask
/// and every field it names. `T` is one of the header's masked structs,
/// whose fields take any bytes (integers and raw pointers).
pub(crate) unsafe fn read_in<T: Masked>(p: *const T) -> Result<Option<T>, Failure> {
    if p.is_null() {
        return Ok(None);
    }
    // SAFETY: non-null; the mask is readable by the contract above.
    let mask = unsafe { mask_of(p) }?;
    let mut v = T::default();
    let dst = (&mut v as *mut T).cast::<u8>();
    for f in masked::<T>(mask) {
        // SAFETY: the field's bytes are readable in the caller's struct
        // (its bit is set) and lie inside `v` (offsets from `T`'s own
        // layout); bytes need no alignment and any bytes are valid there.
        unsafe {
            std::ptr::copy_nonoverlapping(p.cast::<u8>().add(f.offset), dst.add(f.offset), f.len)
        };
    }
    Ok(Some(v))
}

/// Fills a caller's output struct: checks `p` and its `field_mask`, then
/// writes the fields the mask names from `make()`, and nothing else (not
/// the mask, not fields past them).
///
/// # Safety
/// `p` is null or points to a writable struct holding at least the mask
/// and every field it names; `T` as for [`read_in`].
pub(crate) unsafe fn fill<T: Masked>(
    p: *mut T,
    what: &'static str,
    make: impl FnOnce() -> Result<T, Failure>,
) -> Result<(), Failure> {
    let p = out(p, what)?;
    // SAFETY: non-null; the mask is readable by the contract above.
    let mask = unsafe { mask_of(p) }?;
    let v = make()?;
    let src = (&v as *const T).cast::<u8>();
    for f in masked::<T>(mask) {
        // SAFETY: the field's bytes lie inside `v` and, its bit being set,
        // inside the caller's writable struct; byte copies need no
        // alignment.
        unsafe {
            std::ptr::copy_nonoverlapping(src.add(f.offset), p.cast::<u8>().add(f.offset), f.len)
        };
    }
    Ok(())
}

/// Options from `params` (may be null), with a completion sink when a
/// counter or a result location is given.
///
/// # Safety
/// `params` is null or points to a readable `sss_op_params_t` holding
/// the fields its mask names; its `counter` and `data` (if not null) stay
/// valid until the operation completes, as the header requires.
unsafe fn setup(
    params: *const OpParams,
    notify_allowed: bool,
    data: *mut u8,
    data_len: usize,
) -> Result<Options, Failure> {
    // SAFETY: null or a readable params struct, by the contract above.
    let p = unsafe { read_in(params) }?;
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
