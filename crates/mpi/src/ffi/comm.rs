//! Communicator management that involves attributes and names:
//! `Comm_dup` (copy callbacks), `Comm_free` (delete callbacks),
//! `Comm_get_attr` (predefined and user keys), and the names of
//! communicators and windows.

use super::attr::{copy_attrs, forget, put_attr, user_attr};
use super::init::{not_initialized, put_str};
use super::{call, hv, mk, out, Handle};
use crate::attr::{with_attrs, Obj, MAX_OBJECT_NAME};
use crate::consts::{err, h};
use crate::engine::MpiErr;
use crate::runtime::with;
use std::ffi::{c_char, c_int, c_void};
use std::sync::OnceLock;

/// `MPI_Comm_dup`: attributes are copied through their copy callbacks.
///
/// # Safety
/// `newcomm` is a writable handle.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_dup(comm: Handle, newcomm: *mut Handle) -> c_int {
    call("MPI_Comm_dup", hv(comm), || {
        not_initialized()?;
        let c = dup(hv(comm))?;
        // SAFETY: the caller's contract.
        unsafe { out(newcomm, mk(c), "newcomm") }
    })
}

/// A duplicate of `comm` (intra- or intercommunicator) with its
/// attributes copied.
pub(super) fn dup(comm: usize) -> Result<usize, MpiErr> {
    let c = crate::inter::comm_dup(comm)?;
    crate::info::copy_hints(comm, c);
    copy_attrs(Obj::Comm, comm, c)?;
    Ok(c)
}

/// `MPI_Comm_free`: the delete callbacks run first; the handle becomes
/// `MPI_COMM_NULL`.
///
/// # Safety
/// `comm` is a writable handle.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_free(comm: *mut Handle) -> c_int {
    call("MPI_Comm_free", h::COMM_WORLD, || {
        if comm.is_null() {
            return Err(MpiErr::new(err::ARG, "comm is NULL"));
        }
        // SAFETY: non-null; the caller's contract.
        let c = hv(unsafe { comm.read() });
        if c == h::COMM_WORLD || c == h::COMM_SELF {
            return Err(MpiErr::new(
                err::COMM,
                "a predefined communicator cannot be freed",
            ));
        }
        with(|g| g.comm(c).map(|_| ()))?;
        let deleted = forget(Obj::Comm, c);
        crate::info::forget(Obj::Comm, c);
        crate::graph::forget(c);
        crate::inter::free(c)?;
        with(|g| {
            g.comms
                .remove(&c)
                .map(|_| ())
                .ok_or_else(|| MpiErr::new(err::COMM, format!("invalid communicator {c:#x}")))
        })?;
        // SAFETY: the caller's contract.
        unsafe { out(comm, mk(h::COMM_NULL), "comm") }?;
        deleted
    })
}

/// Values of the predefined communicator attributes: `MPI_TAG_UB`,
/// `MPI_HOST`, `MPI_IO`, `MPI_WTIME_IS_GLOBAL`, `MPI_APPNUM`,
/// and `MPI_LASTUSEDCODE` (`errh::LASTUSED`); the universe size is the job's.
static TAG_UB: c_int = c_int::MAX;
static HOST: c_int = crate::consts::PROC_NULL;
static IO: c_int = crate::consts::ANY_SOURCE;
static ZERO: c_int = 0;
static UNIVERSE: OnceLock<c_int> = OnceLock::new();

/// `MPI_Comm_get_attr`: the predefined keys on every communicator, and
/// the program's.
///
/// # Safety
/// `value` is a writable pointer; `flag` a writable int.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_get_attr(
    comm: Handle,
    key: c_int,
    value: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    call("MPI_Comm_get_attr", hv(comm), || {
        let size = with(|e| {
            e.comm(hv(comm))?;
            Ok(e.size)
        })?;
        let pre: Option<&'static c_int> = match key {
            501 => Some(&TAG_UB),
            502 => Some(&IO),
            503 => Some(&HOST),
            504 | 505 => Some(&ZERO),
            507 => Some(UNIVERSE.get_or_init(|| size as c_int)),
            _ => None,
        };
        let v = match pre {
            Some(p) => Some(p as *const c_int as usize),
            // Read in place: classes the program adds move it.
            None if key == 506 => Some(crate::errh::LASTUSED.as_ptr() as usize),
            None => user_attr(Obj::Comm, hv(comm), key)?,
        };
        // SAFETY: the caller's contract.
        unsafe { put_attr(v, value, flag) }
    })
}

/// A name from C: at most `MPI_MAX_OBJECT_NAME - 1` bytes are read
/// (a longer name is cut).
///
/// # Safety
/// `name` is null or a NUL-terminated string.
pub(super) unsafe fn c_name(name: *const c_char) -> Result<String, MpiErr> {
    if name.is_null() {
        return Err(MpiErr::new(err::ARG, "name is NULL"));
    }
    // SAFETY: the caller's contract; strnlen stops at the NUL or the bound.
    let n = unsafe { libc::strnlen(name, MAX_OBJECT_NAME - 1) };
    // SAFETY: `n` readable bytes before the NUL or the bound.
    let b = unsafe { std::slice::from_raw_parts(name.cast::<u8>(), n) };
    Ok(String::from_utf8_lossy(b).into_owned())
}

/// `MPI_Comm_set_name` (cut to `MPI_MAX_OBJECT_NAME - 1` bytes).
///
/// # Safety
/// `name` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_set_name(comm: Handle, name: *const c_char) -> c_int {
    call("MPI_Comm_set_name", hv(comm), || {
        with(|e| e.comm(hv(comm)).map(|_| ()))?;
        // SAFETY: the caller's contract.
        let n = unsafe { c_name(name) }?;
        with_attrs(|a| a.set_name(Obj::Comm, hv(comm), &n));
        Ok(())
    })
}

/// `MPI_Comm_get_name`: "MPI_COMM_WORLD" and "MPI_COMM_SELF" for the
/// predefined ones, "" for a communicator never named.
///
/// # Safety
/// `name` has `MPI_MAX_OBJECT_NAME` writable bytes; `len` is writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_get_name(
    comm: Handle,
    name: *mut c_char,
    len: *mut c_int,
) -> c_int {
    call("MPI_Comm_get_name", hv(comm), || {
        with(|e| e.comm(hv(comm)).map(|_| ()))?;
        let n =
            with_attrs(|a| a.name(Obj::Comm, hv(comm)).map(String::from)).unwrap_or_else(|| {
                match hv(comm) {
                    h::COMM_WORLD => "MPI_COMM_WORLD",
                    h::COMM_SELF => "MPI_COMM_SELF",
                    _ => "",
                }
                .into()
            });
        // SAFETY: the caller's contract.
        unsafe { put_str(&n, name, MAX_OBJECT_NAME, len, "comm_name") }
    })
}

fn win_comm(win: Handle) -> usize {
    crate::win::with_win(hv(win), |w, _| Ok(w.comm)).unwrap_or(h::COMM_WORLD)
}

/// `MPI_Win_set_name`.
///
/// # Safety
/// `name` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_set_name(win: Handle, name: *const c_char) -> c_int {
    call("MPI_Win_set_name", win_comm(win), || {
        crate::win::with_win(hv(win), |_, _| Ok(()))?;
        // SAFETY: the caller's contract.
        let n = unsafe { c_name(name) }?;
        with_attrs(|a| a.set_name(Obj::Win, hv(win), &n));
        Ok(())
    })
}

/// `MPI_Win_get_name` ("" for a window never named).
///
/// # Safety
/// `name` has `MPI_MAX_OBJECT_NAME` writable bytes; `len` is writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_get_name(
    win: Handle,
    name: *mut c_char,
    len: *mut c_int,
) -> c_int {
    call("MPI_Win_get_name", win_comm(win), || {
        crate::win::with_win(hv(win), |_, _| Ok(()))?;
        let n = with_attrs(|a| a.name(Obj::Win, hv(win)).map(String::from)).unwrap_or_default();
        // SAFETY: the caller's contract.
        unsafe { put_str(&n, name, MAX_OBJECT_NAME, len, "win_name") }
    })
}

/// `MPI_Comm_split_type` (see `crate::inter::comm_split_type`; the info
/// is not read).
///
/// # Safety
/// `newcomm` is writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_split_type(
    comm: Handle,
    split_type: c_int,
    key: c_int,
    _info: Handle,
    newcomm: *mut Handle,
) -> c_int {
    call("MPI_Comm_split_type", hv(comm), || {
        not_initialized()?;
        let c = crate::inter::comm_split_type(hv(comm), split_type, key)?;
        // SAFETY: the caller's contract.
        unsafe { out(newcomm, mk(c), "newcomm") }
    })
}

/// `MPI_Comm_idup`: the duplicate is made at once (as `MPI_Comm_dup`,
/// so every member must call it before any waits for another), and the
/// request is complete.
///
/// # Safety
/// `newcomm` and `request` are writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_idup(
    comm: Handle,
    newcomm: *mut Handle,
    request: *mut Handle,
) -> c_int {
    call("MPI_Comm_idup", hv(comm), || {
        not_initialized()?;
        if request.is_null() {
            return Err(MpiErr::new(err::ARG, "request is NULL"));
        }
        let c = dup(hv(comm))?;
        // A request already complete: a send to MPI_PROC_NULL.
        let r = with(|e| {
            e.isend(
                h::COMM_SELF,
                crate::consts::PROC_NULL,
                0,
                crate::engine::SendSrc::Copy(&[]),
                false,
            )
        })?;
        // SAFETY: the caller's contract.
        unsafe {
            out(newcomm, mk(c), "newcomm")?;
            out(request, mk(r), "request")
        }
    })
}

/// `MPI_Comm_idup_with_info`.
///
/// # Safety
/// `newcomm` and `request` are writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_idup_with_info(
    comm: Handle,
    info: Handle,
    newcomm: *mut Handle,
    request: *mut Handle,
) -> c_int {
    // SAFETY: the caller's contract.
    let r = unsafe { MPI_Comm_idup(comm, newcomm, request) };
    if r != 0 {
        return r;
    }
    call("MPI_Comm_idup_with_info", hv(comm), || {
        // SAFETY: written by MPI_Comm_idup.
        let c = hv(unsafe { newcomm.read() });
        crate::info::set_hints(Obj::Comm, c, hv(info))
    })
}

// The profiling interface (`PMPI_…`) of the functions above (build.rs).
include!(concat!(env!("OUT_DIR"), "/pmpi_comm.rs"));
