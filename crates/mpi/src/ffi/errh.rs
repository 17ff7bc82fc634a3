//! User-defined error handlers and error classes, codes and strings.

use super::{call, hv, mk, out, Handle};
use crate::consts::{err, h};
use crate::engine::MpiErr;
use crate::errh::{Kind, Lang, UserHandler};
use std::ffi::{c_char, c_int, c_void};

/// A C handler: `void f(MPI_Comm *, int *, ...)` (`MPI_Win *` for windows).
type CHandler = unsafe extern "C" fn(*mut Handle, *mut c_int, ...);
/// A Fortran handler: `SUBROUTINE F(OBJ, CODE)`.
type FHandler = unsafe extern "C" fn(*mut super::fortran::Fint, *mut super::fortran::Fint);

/// Calls user handler `u` for an error of class `code` raised on
/// communicator `comm` (for a window handler: the window whose
/// communicator it is).
pub(super) fn invoke(u: UserHandler, comm: usize, code: c_int) {
    let obj = match u.kind {
        Kind::Comm => comm,
        Kind::Win => match crate::win::of_comm(comm) {
            Some(w) => w,
            None => return,
        },
    };
    let mut code = code;
    match u.lang {
        Lang::C => {
            // SAFETY: `u.f` is the non-null function the program gave as
            // an `MPI_*_errhandler_function` (errh::create checked null).
            let f: CHandler = unsafe { std::mem::transmute::<usize, CHandler>(u.f) };
            let mut obj = mk(obj);
            // SAFETY: a handler takes the object and the code by pointer;
            // both live across the call.
            unsafe { f(&mut obj, &mut code) };
        }
        Lang::Fortran => {
            let Ok(mut fobj) = super::fortran::Fint::try_from(obj) else {
                return;
            };
            // SAFETY: as above, a Fortran subroutine of two INTEGERs.
            let f: FHandler = unsafe { std::mem::transmute::<usize, FHandler>(u.f) };
            // SAFETY: Fortran takes both arguments by reference.
            unsafe { f(&mut fobj, &mut code) };
        }
    }
}

/// Registers `f` and writes its handle.
///
/// # Safety
/// `errh` is a writable handle.
pub(super) unsafe fn create(
    name: &str,
    kind: Kind,
    lang: Lang,
    f: *const c_void,
    errh: *mut Handle,
) -> c_int {
    call(name, h::COMM_WORLD, || {
        if errh.is_null() {
            return Err(MpiErr::new(err::ARG, "errhandler is NULL"));
        }
        let e = crate::errh::create(kind, lang, f as usize)?;
        // SAFETY: the caller's contract.
        unsafe { out(errh, mk(e), "errhandler") }
    })
}

/// `MPI_Comm_create_errhandler`.
///
/// # Safety
/// `f` is an `MPI_Comm_errhandler_function`; `errh` is writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_create_errhandler(f: *const c_void, errh: *mut Handle) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { create("MPI_Comm_create_errhandler", Kind::Comm, Lang::C, f, errh) }
}

/// `MPI_Win_create_errhandler`.
///
/// # Safety
/// `f` is an `MPI_Win_errhandler_function`; `errh` is writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_create_errhandler(f: *const c_void, errh: *mut Handle) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { create("MPI_Win_create_errhandler", Kind::Win, Lang::C, f, errh) }
}

/// Calls the handler of communicator `comm` (a window's own for a
/// window) with `code`, as if a call on it had failed with it:
/// `MPI_SUCCESS` when the handler returns.
fn call_on(name: &str, comm: usize, code: c_int) -> c_int {
    let errh = match crate::runtime::with(|g| Ok(g.comm(comm)?.errh)) {
        Ok(e) => e,
        Err(e) => return super::fail(name, comm, e),
    };
    if errh == h::ERRORS_RETURN {
        return err::SUCCESS;
    }
    if let Some(u) = crate::errh::get(errh) {
        invoke(u, comm, code);
        return err::SUCCESS;
    }
    super::fail(
        name,
        comm,
        MpiErr::new(code, format!("error code {code} raised by the program")),
    )
}

/// `MPI_Comm_call_errhandler`.
#[no_mangle]
pub extern "C" fn MPI_Comm_call_errhandler(comm: Handle, code: c_int) -> c_int {
    call_on("MPI_Comm_call_errhandler", hv(comm), code)
}

/// `MPI_Win_call_errhandler`.
#[no_mangle]
pub extern "C" fn MPI_Win_call_errhandler(win: Handle, code: c_int) -> c_int {
    match crate::win::with_win(hv(win), |w, _| Ok(w.comm)) {
        Ok(c) => call_on("MPI_Win_call_errhandler", c, code),
        Err(e) => super::fail("MPI_Win_call_errhandler", h::COMM_WORLD, e),
    }
}

/// `MPI_Add_error_class`.
///
/// # Safety
/// `class` is a writable int.
#[no_mangle]
pub unsafe extern "C" fn MPI_Add_error_class(class: *mut c_int) -> c_int {
    call("MPI_Add_error_class", h::COMM_WORLD, || {
        if class.is_null() {
            return Err(MpiErr::new(err::ARG, "errorclass is NULL"));
        }
        let c = crate::errh::add_class()?;
        // SAFETY: the caller's contract.
        unsafe { out(class, c, "errorclass") }
    })
}

/// `MPI_Add_error_code`.
///
/// # Safety
/// `code` is a writable int.
#[no_mangle]
pub unsafe extern "C" fn MPI_Add_error_code(class: c_int, code: *mut c_int) -> c_int {
    call("MPI_Add_error_code", h::COMM_WORLD, || {
        if code.is_null() {
            return Err(MpiErr::new(err::ARG, "errorcode is NULL"));
        }
        let c = crate::errh::add_code(class)?;
        // SAFETY: the caller's contract.
        unsafe { out(code, c, "errorcode") }
    })
}

/// `MPI_Add_error_string`: at most `MPI_MAX_ERROR_STRING - 1` bytes are
/// read and kept.
///
/// # Safety
/// `s` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn MPI_Add_error_string(code: c_int, s: *const c_char) -> c_int {
    call("MPI_Add_error_string", h::COMM_WORLD, || {
        if s.is_null() {
            return Err(MpiErr::new(err::ARG, "string is NULL"));
        }
        // SAFETY: the caller's contract; strnlen stops at the NUL or the
        // bound.
        let n = unsafe { libc::strnlen(s, crate::errh::MAX_STRING) };
        // SAFETY: `n` readable bytes before the NUL or the bound.
        let b = unsafe { std::slice::from_raw_parts(s.cast::<u8>(), n) };
        crate::errh::set_string(code, String::from_utf8_lossy(b).into_owned())
    })
}

include!(concat!(env!("OUT_DIR"), "/pmpi_errh.rs"));
