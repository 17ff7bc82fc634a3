//! Environment, communicators and errors for Fortran.

use super::super::comm::*;
use super::super::dtype::MPI_Type_size;
use super::super::errh::{
    create as create_errh, MPI_Add_error_class, MPI_Add_error_code, MPI_Add_error_string,
    MPI_Comm_call_errhandler, MPI_Win_call_errhandler,
};
use super::super::init::*;
use super::{fortran, get, handle, put_fstr, set, with_handle, Fint};
use crate::errh::{Kind, Lang};
use std::ffi::{c_char, c_int, c_void};

/// `MPI_INIT`.
///
/// # Safety
/// `ierr` is Fortran's error argument.
#[no_mangle]
pub unsafe extern "C" fn mpi_init_(ierr: *mut Fint) {
    // SAFETY: null argc/argv are allowed.
    let r = unsafe { MPI_Init(std::ptr::null_mut(), std::ptr::null_mut()) };
    // SAFETY: as documented.
    unsafe { set(ierr, r) };
}

/// `MPI_INIT_THREAD`.
///
/// # Safety
/// Fortran references.
#[no_mangle]
pub unsafe extern "C" fn mpi_init_thread_(
    required: *const Fint,
    provided: *mut Fint,
    ierr: *mut Fint,
) {
    // SAFETY: Fortran references; null argc/argv are allowed.
    unsafe {
        let r = MPI_Init_thread(
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            get(required),
            provided,
        );
        set(ierr, r);
    }
}

fortran!(
    /// `MPI_QUERY_THREAD`.
    mpi_query_thread_ => MPI_Query_thread; provided: p);
fortran!(
    /// `MPI_INITIALIZED`.
    mpi_initialized_ => MPI_Initialized; flag: p);
fortran!(
    /// `MPI_FINALIZED`.
    mpi_finalized_ => MPI_Finalized; flag: p);
fortran!(
    /// `MPI_COMM_RANK`.
    mpi_comm_rank_ => MPI_Comm_rank; comm: h, rank: p);
fortran!(
    /// `MPI_COMM_SIZE`.
    mpi_comm_size_ => MPI_Comm_size; comm: h, size: p);
fortran!(
    /// `MPI_GET_VERSION`.
    mpi_get_version_ => MPI_Get_version; version: p, subversion: p);
fortran!(
    /// `MPI_ERROR_CLASS`.
    mpi_error_class_ => MPI_Error_class; code: v, class: p);
fortran!(
    /// `MPI_COMM_SET_ERRHANDLER`.
    mpi_comm_set_errhandler_ => MPI_Comm_set_errhandler; comm: h, errh: h);
fortran!(
    /// `MPI_COMM_GET_ERRHANDLER`.
    mpi_comm_get_errhandler_ => MPI_Comm_get_errhandler; comm: h, errh: o);
fortran!(
    /// `MPI_COMM_DUP`.
    mpi_comm_dup_ => MPI_Comm_dup; comm: h, newcomm: o);
fortran!(
    /// `MPI_COMM_SPLIT`.
    mpi_comm_split_ => MPI_Comm_split; comm: h, color: v, key: v, newcomm: o);
fortran!(
    /// `MPI_TYPE_SIZE`.
    mpi_type_size_ => MPI_Type_size; dt: h, size: p);
fortran!(
    /// `MPI_COMM_COMPARE`.
    mpi_comm_compare_ => MPI_Comm_compare; a: h, b: h, result: p);

/// `MPI_FINALIZE`.
///
/// # Safety
/// `ierr` is Fortran's error argument.
#[no_mangle]
pub unsafe extern "C" fn mpi_finalize_(ierr: *mut Fint) {
    // SAFETY: as documented.
    unsafe { set(ierr, MPI_Finalize()) };
}

/// `MPI_ABORT`.
///
/// # Safety
/// Fortran references.
#[no_mangle]
pub unsafe extern "C" fn mpi_abort_(comm: *const Fint, code: *const Fint, ierr: *mut Fint) {
    // SAFETY: Fortran references.
    unsafe { set(ierr, MPI_Abort(handle(get(comm)), get(code))) };
}

/// `MPI_WTIME`.
#[no_mangle]
pub extern "C" fn mpi_wtime_() -> f64 {
    MPI_Wtime()
}

/// `MPI_WTICK`.
#[no_mangle]
pub extern "C" fn mpi_wtick_() -> f64 {
    MPI_Wtick()
}

/// A C string call into a blank-padded Fortran `CHARACTER*(flen)`.
///
/// # Safety
/// `name` has `flen` writable bytes, `len` and `ierr` are Fortran
/// references; `f` writes at most `max` bytes and the length.
pub(super) unsafe fn fstring(
    name: *mut u8,
    len: *mut Fint,
    ierr: *mut Fint,
    flen: usize,
    max: usize,
    f: impl FnOnce(*mut c_char, *mut c_int) -> c_int,
) {
    let mut tmp = vec![0u8; max];
    let mut n: c_int = 0;
    let r = f(tmp.as_mut_ptr().cast(), &mut n);
    let n = usize::try_from(n).unwrap_or(0).min(max);
    // SAFETY: the caller's contract.
    unsafe {
        put_fstr(&tmp[..n], name, flen);
        if !len.is_null() {
            len.write(n.min(flen) as Fint);
        }
        set(ierr, r);
    }
}

/// `MPI_GET_PROCESSOR_NAME` (gfortran passes the length of `name` last).
///
/// # Safety
/// Fortran references; `name` has `flen` bytes.
#[no_mangle]
pub unsafe extern "C" fn mpi_get_processor_name_(
    name: *mut u8,
    len: *mut Fint,
    ierr: *mut Fint,
    flen: usize,
) {
    // SAFETY: the caller's contract; the buffer is MPI_MAX_PROCESSOR_NAME.
    unsafe {
        fstring(name, len, ierr, flen, 256, |p, n| {
            MPI_Get_processor_name(p, n)
        })
    };
}

/// `MPI_GET_LIBRARY_VERSION`.
///
/// # Safety
/// Fortran references; `s` has `flen` bytes.
#[no_mangle]
pub unsafe extern "C" fn mpi_get_library_version_(
    s: *mut u8,
    len: *mut Fint,
    ierr: *mut Fint,
    flen: usize,
) {
    // SAFETY: the caller's contract; MPI_MAX_LIBRARY_VERSION_STRING.
    unsafe {
        fstring(s, len, ierr, flen, 8192, |p, n| {
            MPI_Get_library_version(p, n)
        })
    };
}

/// `MPI_ERROR_STRING`.
///
/// # Safety
/// Fortran references; `s` has `flen` bytes.
#[no_mangle]
pub unsafe extern "C" fn mpi_error_string_(
    code: *const Fint,
    s: *mut u8,
    len: *mut Fint,
    ierr: *mut Fint,
    flen: usize,
) {
    // SAFETY: the caller's contract; MPI_MAX_ERROR_STRING.
    unsafe {
        let code = get(code);
        fstring(s, len, ierr, flen, 512, |p, n| MPI_Error_string(code, p, n));
    }
}

/// `MPI_COMM_GET_ATTR`: Fortran gets the attribute's value
/// (`INTEGER(KIND=MPI_ADDRESS_KIND)`), not a pointer to a predefined
/// one.
///
/// # Safety
/// Fortran references.
#[no_mangle]
pub unsafe extern "C" fn mpi_comm_get_attr_(
    comm: *const Fint,
    key: *const Fint,
    value: *mut i64,
    flag: *mut Fint,
    ierr: *mut Fint,
) {
    let mut p: *const c_int = std::ptr::null();
    let mut f: c_int = 0;
    // SAFETY: Fortran references; the C call stores a pointer to a
    // static int of the library.
    unsafe {
        let r = MPI_Comm_get_attr(
            handle(get(comm)),
            get(key),
            (&mut p as *mut *const c_int).cast::<c_void>(),
            &mut f,
        );
        // Predefined keys point to an int; the program's hold the
        // value Fortran set.
        if f != 0 && !value.is_null() {
            let pre = (501..=507).contains(&get(key));
            value.write(if pre && !p.is_null() {
                i64::from(p.read())
            } else {
                p as i64
            });
        }
        if !flag.is_null() {
            flag.write(f);
        }
        set(ierr, r);
    }
}

fortran!(
    /// `MPI_COMM_FREE`.
    mpi_comm_free_ => MPI_Comm_free; comm: i);

fortran!(
    /// `MPI_ERRHANDLER_FREE`.
    mpi_errhandler_free_ => MPI_Errhandler_free; errh: i);

/// `MPI_COMM_CREATE_ERRHANDLER`: `f` is a subroutine of the
/// communicator and the error code.
///
/// # Safety
/// Fortran references; `f` is a subroutine's address.
#[no_mangle]
pub unsafe extern "C" fn mpi_comm_create_errhandler_(
    f: *const c_void,
    errh: *mut Fint,
    ierr: *mut Fint,
) {
    // SAFETY: Fortran references.
    unsafe {
        let r = with_handle(errh, |h| {
            create_errh(
                "MPI_Comm_create_errhandler",
                Kind::Comm,
                Lang::Fortran,
                f,
                h,
            )
        });
        set(ierr, r);
    }
}

/// `MPI_WIN_CREATE_ERRHANDLER`: `f` is a subroutine of the window and
/// the error code.
///
/// # Safety
/// Fortran references; `f` is a subroutine's address.
#[no_mangle]
pub unsafe extern "C" fn mpi_win_create_errhandler_(
    f: *const c_void,
    errh: *mut Fint,
    ierr: *mut Fint,
) {
    // SAFETY: Fortran references.
    unsafe {
        let r = with_handle(errh, |h| {
            create_errh("MPI_Win_create_errhandler", Kind::Win, Lang::Fortran, f, h)
        });
        set(ierr, r);
    }
}

fortran!(
    /// `MPI_COMM_CALL_ERRHANDLER`.
    mpi_comm_call_errhandler_ => MPI_Comm_call_errhandler; comm: h, code: v);
fortran!(
    /// `MPI_WIN_CALL_ERRHANDLER`.
    mpi_win_call_errhandler_ => MPI_Win_call_errhandler; win: h, code: v);
fortran!(
    /// `MPI_ADD_ERROR_CLASS`.
    mpi_add_error_class_ => MPI_Add_error_class; class: p);
fortran!(
    /// `MPI_ADD_ERROR_CODE`.
    mpi_add_error_code_ => MPI_Add_error_code; class: v, code: p);

/// `MPI_ADD_ERROR_STRING` (trailing blanks dropped).
///
/// # Safety
/// Fortran references; `s` has `flen` bytes.
#[no_mangle]
pub unsafe extern "C" fn mpi_add_error_string_(
    code: *const Fint,
    s: *const u8,
    ierr: *mut Fint,
    flen: usize,
) {
    // SAFETY: Fortran references.
    unsafe {
        let c = super::api::cstring(s, flen);
        set(ierr, MPI_Add_error_string(get(code), c.as_ptr()));
    }
}

// The profiling interface (`pmpi_…_`) of the functions above (build.rs).
include!(concat!(env!("OUT_DIR"), "/pmpi_fortran_env.rs"));
