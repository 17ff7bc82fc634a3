//! The `extern "C"` functions of `include/mpi.h` and the marshalling
//! they share: with `buf`, the only modules of this crate with unsafe
//! code.
//!
//! Every entry point
//! - checks the pointers it dereferences for null and answers the MPI
//!   error class of the bad argument otherwise;
//! - runs its body under `catch_unwind`, so no panic crosses into C (a
//!   panic becomes `MPI_ERR_INTERN`);
//! - hands a failure to the communicator's error handler: with
//!   `MPI_ERRORS_RETURN` the class is returned, otherwise the message
//!   (naming the call) is printed and the job ends with the class as
//!   exit status.
//!
//! Handles are opaque pointer-sized values: predefined ones are the
//! standard ABI's small constants, created ones are ids from the engine.
//! The SAFETY comments rely on MPI's contract that a buffer holds
//! `count` elements of its datatype and stays valid while an operation
//! on it is pending.
//!
//! Submodules: `init` (environment, communicators, errors), `p2p`
//! (point-to-point and requests), `coll` (collectives), `collv` (the `v`
//! collectives and scans).

#![allow(unsafe_code)]
#![deny(unsafe_op_in_unsafe_fn)]

mod coll;
mod collv;
mod fortran;
mod init;
mod p2p;
mod topo;
mod win;

use crate::consts::{err, h};
use crate::engine::{MpiErr, St};
use crate::types::{datatype, Datatype};
use std::ffi::{c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// A handle as C passes it.
pub type Handle = *mut c_void;

fn hv(x: Handle) -> usize {
    x as usize
}

fn mk(v: usize) -> Handle {
    std::ptr::without_provenance_mut(v)
}

/// `MPI_Status` of the standard ABI. The library keeps the received
/// byte count in the first two internal words (low, high) and the
/// cancelled flag in the third.
#[repr(C)]
pub struct MpiStatus {
    source: c_int,
    tag: c_int,
    error: c_int,
    internal: [c_int; 5],
}

impl MpiStatus {
    fn count(&self) -> u64 {
        u64::from(self.internal[0] as u32) | (u64::from(self.internal[1] as u32) << 32)
    }
}

/// Writes `st` to `status` unless it is `MPI_STATUS_IGNORE`.
///
/// # Safety
/// `status` is null or points to a writable `MPI_Status`.
unsafe fn put_status(status: *mut MpiStatus, st: &St) {
    // SAFETY: the caller's contract.
    if let Some(s) = unsafe { status.as_mut() } {
        s.source = st.source;
        s.tag = st.tag;
        s.error = st.error;
        s.internal = [
            st.count as u32 as c_int,
            (st.count >> 32) as u32 as c_int,
            st.cancelled as c_int,
            0,
            0,
        ];
    }
}

/// The status of an empty or null request.
fn empty_status() -> St {
    St {
        source: crate::consts::ANY_SOURCE,
        tag: crate::consts::ANY_TAG,
        ..St::default()
    }
}

/// Stores `v` at `p`.
///
/// # Safety
/// `p` is null or points to a writable, aligned `T`.
unsafe fn out<T>(p: *mut T, v: T, what: &str) -> Result<(), MpiErr> {
    if p.is_null() {
        return Err(MpiErr::new(err::ARG, format!("{what} is NULL")));
    }
    // SAFETY: non-null; the caller's contract.
    unsafe { p.write(v) };
    Ok(())
}

/// Runs an entry point: failures and panics go to the error handler of
/// communicator `comm`.
fn call(name: &str, comm: usize, body: impl FnOnce() -> Result<(), MpiErr>) -> c_int {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => err::SUCCESS,
        Ok(Err(e)) => fail(name, comm, e),
        Err(_) => fail(
            name,
            comm,
            MpiErr::new(err::INTERN, "internal error (a panic was caught)"),
        ),
    }
}

/// Applies `comm`'s error handler to `e`.
fn fail(name: &str, comm: usize, e: MpiErr) -> c_int {
    let errh = crate::runtime::with(|g| Ok(g.comms.get(&comm).map(|c| c.errh)))
        .ok()
        .flatten()
        .unwrap_or_else(|| {
            // Not a communicator (or none yet): MPI_COMM_WORLD's handler.
            crate::runtime::with(|g| Ok(g.comms.get(&h::COMM_WORLD).map(|c| c.errh)))
                .ok()
                .flatten()
                .unwrap_or(h::ERRORS_ARE_FATAL)
        });
    if errh == h::ERRORS_RETURN {
        return e.class;
    }
    let class = crate::consts::error_string(e.class).unwrap_or("unknown error class");
    eprintln!("MPI error in {name}: {} ({class}); ending the job", e.msg);
    std::process::exit(e.class.clamp(1, 255));
}

/// The predefined datatype `dt`.
fn dtype(dt: Handle) -> Result<Datatype, MpiErr> {
    datatype(hv(dt))
        .ok_or_else(|| MpiErr::new(err::TYPE, format!("invalid datatype {:#x}", hv(dt))))
}

/// Bytes of `count` elements of `dt`.
fn nbytes(count: c_int, dt: Handle) -> Result<usize, MpiErr> {
    let t = dtype(dt)?;
    let c = usize::try_from(count)
        .map_err(|_| MpiErr::new(err::COUNT, format!("invalid count {count}")))?;
    c.checked_mul(t.size)
        .filter(|&n| n <= isize::MAX as usize)
        .ok_or_else(|| MpiErr::new(err::COUNT, format!("count {count} too large")))
}

/// `len` bytes at `p` (null only for zero bytes).
///
/// # Safety
/// `p` points to `len` readable bytes valid for `'a` when not null.
unsafe fn src<'a>(p: *const c_void, len: usize) -> Result<&'a [u8], MpiErr> {
    if len == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(MpiErr::new(
            err::BUFFER,
            "NULL buffer with a non-zero count",
        ));
    }
    // SAFETY: the caller's contract; len fits isize (nbytes).
    Ok(unsafe { std::slice::from_raw_parts(p.cast::<u8>(), len) })
}

/// `len` writable bytes at `p` (null only for zero bytes).
///
/// # Safety
/// `p` points to `len` writable bytes valid for `'a`, not otherwise
/// accessed meanwhile, when not null.
unsafe fn dst<'a>(p: *mut c_void, len: usize) -> Result<&'a mut [u8], MpiErr> {
    if len == 0 {
        return Ok(&mut []);
    }
    if p.is_null() {
        return Err(MpiErr::new(
            err::BUFFER,
            "NULL buffer with a non-zero count",
        ));
    }
    // SAFETY: the caller's contract; len fits isize (nbytes).
    Ok(unsafe { std::slice::from_raw_parts_mut(p.cast::<u8>(), len) })
}
