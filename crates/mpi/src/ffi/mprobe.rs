//! Matched probes: `MPI_Mprobe`/`Improbe` take a message out of
//! matching, `MPI_Mrecv`/`Imrecv` receive it by its handle.

use super::p2p::{finish, recv_dest, status_error};
use super::{call, hv, mk, out, put_status, Handle, MpiStatus};
use crate::consts::{err, h, PROC_NULL};
use crate::engine::{Dest, MpiErr, St};
use crate::runtime::{wait_until, with};
use std::ffi::{c_int, c_void};

/// `MPI_MESSAGE_NULL`, `MPI_MESSAGE_NO_PROC`.
const MESSAGE_NULL: usize = 0x128;
const MESSAGE_NO_PROC: usize = 0x129;

/// A matched probe: the message's status and handle, if one matched.
fn mprobe_once(source: c_int, tag: c_int, comm: Handle) -> Result<Option<(St, usize)>, MpiErr> {
    if source == PROC_NULL {
        let st = St {
            source: PROC_NULL,
            tag: crate::consts::ANY_TAG,
            ..St::default()
        };
        return Ok(Some((st, MESSAGE_NO_PROC)));
    }
    with(|e| e.mprobe(hv(comm), source, tag))
}

/// `MPI_Improbe`.
///
/// # Safety
/// `flag`, `msg` writable; `status` writable or ignored.
#[no_mangle]
pub unsafe extern "C" fn MPI_Improbe(
    source: c_int,
    tag: c_int,
    comm: Handle,
    flag: *mut c_int,
    msg: *mut Handle,
    status: *mut MpiStatus,
) -> c_int {
    call("MPI_Improbe", hv(comm), || {
        // Nonblocking collectives move on in every polling call.
        crate::nbc::progress();
        let got = mprobe_once(source, tag, comm)?;
        // SAFETY: the caller's contract.
        unsafe {
            out(flag, got.is_some() as c_int, "flag")?;
            if let Some((st, m)) = got {
                out(msg, mk(m), "message")?;
                put_status(status, &st);
            }
        }
        Ok(())
    })
}

/// `MPI_Mprobe`.
///
/// # Safety
/// `msg` writable; `status` writable or ignored.
#[no_mangle]
pub unsafe extern "C" fn MPI_Mprobe(
    source: c_int,
    tag: c_int,
    comm: Handle,
    msg: *mut Handle,
    status: *mut MpiStatus,
) -> c_int {
    call("MPI_Mprobe", hv(comm), || {
        let partner = with(|e| {
            let c = e.comm(hv(comm))?;
            e.check_source(c, source)
        })?;
        let got = loop {
            if let Some(g) = mprobe_once(source, tag, comm)? {
                break g;
            }
            wait_until(partner, |e| Ok(e.probe(hv(comm), source, tag)?.is_some()))?;
        };
        let (st, m) = got;
        // SAFETY: the caller's contract.
        unsafe {
            out(msg, mk(m), "message")?;
            put_status(status, &st);
        }
        Ok(())
    })
}

/// Starts the receive of matched message `*msg`; the message handle
/// becomes `MPI_MESSAGE_NULL`.
///
/// # Safety
/// `msg` is a readable and writable handle; MPI's contract for the buffer.
unsafe fn mrecv_start(
    buf: *mut c_void,
    count: c_int,
    dt: Handle,
    msg: *mut Handle,
) -> Result<usize, MpiErr> {
    if msg.is_null() {
        return Err(MpiErr::new(err::REQUEST, "message is NULL"));
    }
    // SAFETY: non-null; the caller's contract.
    let m = hv(unsafe { msg.read() });
    let id = if m == MESSAGE_NO_PROC {
        with(|e| {
            e.irecv(
                h::COMM_WORLD,
                PROC_NULL,
                crate::consts::ANY_TAG,
                Dest::Own {
                    cap: 0,
                    data: Vec::new(),
                },
            )
        })?
    } else {
        // SAFETY: the caller's contract.
        let dest = unsafe { recv_dest(buf, count, dt) }?;
        with(|e| e.mrecv(m, dest))?
    };
    // SAFETY: the caller's contract.
    unsafe { out(msg, mk(MESSAGE_NULL), "message")? };
    Ok(id)
}

/// `MPI_Mrecv`.
///
/// # Safety
/// MPI's contract for the buffer; `msg` a writable handle; `status`
/// writable or ignored.
#[no_mangle]
pub unsafe extern "C" fn MPI_Mrecv(
    buf: *mut c_void,
    count: c_int,
    dt: Handle,
    msg: *mut Handle,
    status: *mut MpiStatus,
) -> c_int {
    call("MPI_Mrecv", h::COMM_WORLD, || {
        // SAFETY: the caller's contract.
        let id = unsafe { mrecv_start(buf, count, dt, msg) }?;
        let st = finish(id)?;
        // SAFETY: the caller's contract.
        unsafe { put_status(status, &st) };
        status_error(&st, "MPI_Mrecv")
    })
}

/// `MPI_Imrecv`.
///
/// # Safety
/// MPI's contract for the buffer; `msg` and `req` writable handles.
#[no_mangle]
pub unsafe extern "C" fn MPI_Imrecv(
    buf: *mut c_void,
    count: c_int,
    dt: Handle,
    msg: *mut Handle,
    req: *mut Handle,
) -> c_int {
    call("MPI_Imrecv", h::COMM_WORLD, || {
        // SAFETY: the caller's contract.
        let id = unsafe { mrecv_start(buf, count, dt, msg) }?;
        // SAFETY: the caller's contract.
        unsafe { out(req, mk(id), "request") }
    })
}

// The profiling interface (`PMPI_…`) of the functions above (build.rs).
include!(concat!(env!("OUT_DIR"), "/pmpi_mprobe.rs"));
