//! The Fortran bindings (`include/mpif.h`, `use mpi`): the F77 names
//! gfortran calls (`mpi_send_` …), each converting its arguments and
//! calling the C entry point.
//!
//! Every argument comes by reference. Handles are default `INTEGER`s
//! with the same values as the C handles (predefined ones are the
//! standard ABI's constants, created ones are ids below 2^31), so
//! conversion is a widening. The sentinels (`MPI_IN_PLACE`,
//! `MPI_BOTTOM`, `MPI_STATUS_IGNORE`, `MPI_STATUSES_IGNORE`) are common
//! blocks: the library recognises them by address. A Fortran status is
//! `INTEGER(MPI_STATUS_SIZE)` = 8, laid out as the C `MPI_Status`.
//!
//! Submodules: `env` (environment, communicators, errors), `more`
//! (datatypes, groups, the other sends and receives), `p2p`
//! (point-to-point), `coll` (collectives), `topo` (Cartesian topologies), `win`
//! (one-sided), `api` (names, attributes, info, sessions: the calls with
//! strings or attribute values), `nbc` (nonblocking collectives, the
//! `some`/`any` calls, user operations, intercommunicators, graphs and
//! the small calls), `extra` (group set operations, persistent sends,
//! matched probes, packing and the rest).

mod api;
mod coll;
mod env;
mod extra;
mod more;
mod nbc;
mod p2p;
mod topo;
mod win;

use super::{mk, Handle, MpiStatus};
use crate::consts::err;
use std::cell::UnsafeCell;
use std::ffi::{c_int, c_void, CStr};
use std::sync::OnceLock;

/// A default Fortran `INTEGER`.
pub type Fint = c_int;

/// A Fortran common block the library defines, so that a program has one
/// even when it links statically.
#[repr(C)]
pub struct Common<const N: usize>(UnsafeCell<[Fint; N]>);

// SAFETY: the library only takes the block's address; Fortran code may
// write it, which is no concern of the library's.
unsafe impl<const N: usize> Sync for Common<N> {}

#[no_mangle]
static sss_mpi_bottom_: Common<1> = Common(UnsafeCell::new([0]));
#[no_mangle]
static sss_mpi_in_place_: Common<1> = Common(UnsafeCell::new([0]));
#[no_mangle]
static sss_mpi_status_ignore_: Common<8> = Common(UnsafeCell::new([0; 8]));
#[no_mangle]
static sss_mpi_statuses_ignore_: Common<8> = Common(UnsafeCell::new([0; 8]));
#[no_mangle]
static sss_mpi_errcodes_ignore_: Common<1> = Common(UnsafeCell::new([0]));
#[no_mangle]
static sss_mpi_unweighted_: Common<1> = Common(UnsafeCell::new([0]));
#[no_mangle]
static sss_mpi_weights_empty_: Common<1> = Common(UnsafeCell::new([0]));

/// Where a sentinel block is: the program's copy (found by name, for a
/// program that defines its common block itself) and the library's.
struct Sentinel {
    found: usize,
    own: usize,
}

impl Sentinel {
    fn new<const N: usize>(name: &CStr, own: &Common<N>) -> Sentinel {
        // SAFETY: dlsym with a NUL-terminated name only looks the symbol up.
        let found = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) } as usize;
        Sentinel {
            found,
            own: own.0.get() as usize,
        }
    }

    fn is(&self, p: usize) -> bool {
        p != 0 && (p == self.found || p == self.own)
    }
}

struct Sentinels {
    bottom: Sentinel,
    in_place: Sentinel,
    status: Sentinel,
    statuses: Sentinel,
    unweighted: Sentinel,
    weights_empty: Sentinel,
}

fn sentinels() -> &'static Sentinels {
    static S: OnceLock<Sentinels> = OnceLock::new();
    S.get_or_init(|| Sentinels {
        bottom: Sentinel::new(c"sss_mpi_bottom_", &sss_mpi_bottom_),
        in_place: Sentinel::new(c"sss_mpi_in_place_", &sss_mpi_in_place_),
        status: Sentinel::new(c"sss_mpi_status_ignore_", &sss_mpi_status_ignore_),
        statuses: Sentinel::new(c"sss_mpi_statuses_ignore_", &sss_mpi_statuses_ignore_),
        unweighted: Sentinel::new(c"sss_mpi_unweighted_", &sss_mpi_unweighted_),
        weights_empty: Sentinel::new(c"sss_mpi_weights_empty_", &sss_mpi_weights_empty_),
    })
}

/// A choice buffer: `MPI_BOTTOM` becomes the null address, `MPI_IN_PLACE`
/// the C `MPI_IN_PLACE`.
fn buf(p: *mut c_void) -> *mut c_void {
    let s = sentinels();
    let a = p as usize;
    if s.bottom.is(a) {
        std::ptr::null_mut()
    } else if s.in_place.is(a) {
        mk(crate::consts::IN_PLACE)
    } else {
        p
    }
}

/// A status argument: `MPI_STATUS_IGNORE` becomes null.
fn status(p: *mut Fint) -> *mut MpiStatus {
    if sentinels().status.is(p as usize) {
        std::ptr::null_mut()
    } else {
        p.cast()
    }
}

/// An array-of-statuses argument: `MPI_STATUSES_IGNORE` becomes null.
fn statuses(p: *mut Fint) -> *mut MpiStatus {
    if sentinels().statuses.is(p as usize) || sentinels().status.is(p as usize) {
        std::ptr::null_mut()
    } else {
        p.cast()
    }
}

/// A weights argument: `MPI_UNWEIGHTED` and `MPI_WEIGHTS_EMPTY` become
/// the C sentinels.
fn weights(p: *mut Fint) -> *mut Fint {
    let s = sentinels();
    if s.unweighted.is(p as usize) {
        mk(10).cast()
    } else if s.weights_empty.is(p as usize) {
        mk(11).cast()
    } else {
        p
    }
}

/// The C handle of a Fortran handle.
fn handle(v: Fint) -> Handle {
    // A negative value is no handle; usize::MAX is refused by every call.
    mk(usize::try_from(v).unwrap_or(usize::MAX))
}

/// The Fortran handle of a C handle, or `MPI_ERR_INTERN` when it does not
/// fit (the library's ids stay far below 2^31).
fn fhandle(h: Handle) -> Result<Fint, c_int> {
    Fint::try_from(h as usize).map_err(|_| err::INTERN)
}

/// Reads an input argument.
///
/// # Safety
/// `p` points to a readable `Fint`.
unsafe fn get(p: *const Fint) -> Fint {
    if p.is_null() {
        // gfortran never passes null for an argument; a C caller might.
        return 0;
    }
    // SAFETY: the caller's contract.
    unsafe { p.read() }
}

/// Reads an `INTEGER(KIND=MPI_ADDRESS_KIND)` argument.
///
/// # Safety
/// `p` points to a readable `i64`.
unsafe fn get_aint(p: *const i64) -> isize {
    if p.is_null() {
        return 0;
    }
    // SAFETY: the caller's contract.
    unsafe { p.read() as isize }
}

/// Stores the error code, when the caller gave somewhere to store it.
///
/// # Safety
/// `ierr` is null or points to a writable `Fint`.
unsafe fn set(ierr: *mut Fint, code: c_int) {
    if !ierr.is_null() {
        // SAFETY: the caller's contract.
        unsafe { ierr.write(code) }
    }
}

/// Runs a C call that sets handle `*h` (in and out), converting.
///
/// # Safety
/// `h` points to a readable and writable `Fint`; `f` is a C entry point
/// whose handle argument may be the pointer it is given.
unsafe fn with_handle(h: *mut Fint, f: impl FnOnce(*mut Handle) -> c_int) -> c_int {
    if h.is_null() {
        return f(std::ptr::null_mut());
    }
    // SAFETY: the caller's contract.
    let mut c = handle(unsafe { h.read() });
    let r = f(&mut c);
    match fhandle(c) {
        // SAFETY: as above.
        Ok(v) => unsafe { h.write(v) },
        Err(e) => return e,
    }
    r
}

/// Runs a C call on an array of `n` request handles (in and out).
///
/// # Safety
/// `reqs` points to `n` readable and writable `Fint`s.
unsafe fn with_handles(n: Fint, reqs: *mut Fint, f: impl FnOnce(*mut Handle) -> c_int) -> c_int {
    let n = usize::try_from(n).unwrap_or(0);
    if reqs.is_null() || n == 0 {
        return f(std::ptr::null_mut());
    }
    // SAFETY: the caller's contract.
    let fs = unsafe { std::slice::from_raw_parts_mut(reqs, n) };
    let mut cs: Vec<Handle> = fs.iter().map(|&v| handle(v)).collect();
    let r = f(cs.as_mut_ptr());
    for (fv, c) in fs.iter_mut().zip(cs) {
        match fhandle(c) {
            Ok(v) => *fv = v,
            Err(e) => return e,
        }
    }
    r
}

/// The C handles of an array of `n` Fortran handles read only (the
/// datatypes of `Alltoallw`, `Type_create_struct`).
///
/// # Safety
/// `p` is null or points to `n` readable `Fint`s.
unsafe fn handles_in(n: Fint, p: *const Fint) -> Vec<Handle> {
    let n = usize::try_from(n).unwrap_or(0);
    if p.is_null() || n == 0 {
        return Vec::new();
    }
    // SAFETY: the caller's contract.
    unsafe { std::slice::from_raw_parts(p, n) }
        .iter()
        .map(|&v| handle(v))
        .collect()
}

/// The communicator and the send and receive datatypes (one per task of
/// it) of an `MPI_(I)ALLTOALLW`, or the error of asking its size.
///
/// # Safety
/// Fortran references; `sts` and `rts` hold one handle per task.
unsafe fn alltoallw_types(
    comm: *const Fint,
    sts: *const Fint,
    rts: *const Fint,
) -> Result<(Handle, Vec<Handle>, Vec<Handle>), c_int> {
    // SAFETY: Fortran references, per the contract.
    unsafe {
        let c = handle(get(comm));
        let mut n = 0;
        match super::init::MPI_Comm_size(c, &mut n) {
            0 => Ok((c, handles_in(n, sts), handles_in(n, rts))),
            e => Err(e),
        }
    }
}

/// `pmpi_x_` calling `mpi_x_`, for Fortran functions other macros make
/// (`build.rs` writes those of `fortran!` and the written-out ones).
macro_rules! fpmpi {
    ($($pname:ident => $name:ident ($($arg:ident : $ty:ty),* $(,)?);)*) => {$(
        #[doc = concat!("The profiling interface's name of [`", stringify!($name), "`].")]
        ///
        /// # Safety
        /// As the function it names.
        #[no_mangle]
        pub unsafe extern "C" fn $pname($($arg: $ty),*) {
            // SAFETY: the caller's contract, which is the named function's.
            unsafe { $name($($arg),*) }
        }
    )*};
}
use fpmpi;

/// Declares `mpi_name_` for a C entry point whose arguments are all
/// plain: `int` values (`v`), handles (`h`), choice buffers (`b`),
/// pointers passed through (`p`: int outputs, int arrays, logical
/// flags), statuses (`s`), handle outputs (`o`), handles read and
/// written back (`i`: requests, freed objects), graph weights (`w`:
/// `MPI_UNWEIGHTED` and `MPI_WEIGHTS_EMPTY` recognised) and
/// `INTEGER(KIND=MPI_ADDRESS_KIND)` values (`a`) and outputs (`q`).
macro_rules! fortran {
    ($(#[$doc:meta])* $f:ident => $c:path; $($a:ident : $k:ident),* $(,)?) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// Fortran's contract: every argument is a valid reference of the
        /// kind the MPI standard gives it.
        #[no_mangle]
        pub unsafe extern "C" fn $f($($a: fortran!(@ty $k),)* ierr: *mut $crate::ffi::fortran::Fint) {
            $(fortran!(@pre $k $a);)*
            // SAFETY: the arguments were converted as the C call expects
            // and keep Fortran's validity.
            let r = unsafe { $c($(fortran!(@arg $k $a)),*) };
            $(fortran!(@post $k $a ierr);)*
            // SAFETY: `ierr` is Fortran's error argument.
            unsafe { $crate::ffi::fortran::set(ierr, r) };
        }
    };
    (@ty v) => { *const $crate::ffi::fortran::Fint };
    (@ty h) => { *const $crate::ffi::fortran::Fint };
    (@ty b) => { *mut std::ffi::c_void };
    (@ty p) => { *mut $crate::ffi::fortran::Fint };
    (@ty s) => { *mut $crate::ffi::fortran::Fint };
    (@ty o) => { *mut $crate::ffi::fortran::Fint };
    (@ty i) => { *mut $crate::ffi::fortran::Fint };
    (@ty w) => { *mut $crate::ffi::fortran::Fint };
    (@ty a) => { *const i64 };
    (@ty q) => { *mut i64 };
    (@ty c) => { *mut i64 };
    (@ty x) => { *const i64 };
    (@pre o $a:ident) => { let mut $a = ($a, $crate::ffi::mk(0)); };
    (@pre i $a:ident) => {
        // SAFETY: a Fortran reference (a C caller's null reads as no handle).
        let mut $a = ($a, $crate::ffi::fortran::handle(unsafe { $crate::ffi::fortran::get($a) }));
    };
    (@pre $k:ident $a:ident) => {};
    // SAFETY (all arms): the pointers are Fortran references.
    (@arg v $a:ident) => { $crate::ffi::fortran::get($a) };
    (@arg h $a:ident) => { $crate::ffi::fortran::handle($crate::ffi::fortran::get($a)) };
    (@arg b $a:ident) => { $crate::ffi::fortran::buf($a) };
    (@arg p $a:ident) => { $a };
    (@arg s $a:ident) => { $crate::ffi::fortran::status($a) };
    (@arg o $a:ident) => { &mut $a.1 };
    (@arg i $a:ident) => { &mut $a.1 };
    (@arg w $a:ident) => { $crate::ffi::fortran::weights($a) };
    (@arg a $a:ident) => { $crate::ffi::fortran::get_aint($a) };
    (@arg q $a:ident) => { $a.cast::<isize>() };
    (@arg c $a:ident) => { $a };
    (@arg x $a:ident) => { $crate::ffi::fortran::get_aint($a) as i64 };
    (@post i $a:ident $ierr:ident) => { $crate::ffi::fortran::fortran!(@post o $a $ierr) };
    (@post o $a:ident $ierr:ident) => {
        if !$a.0.is_null() {
            match $crate::ffi::fortran::fhandle($a.1) {
                // SAFETY: a Fortran output argument.
                Ok(v) => unsafe { $a.0.write(v) },
                Err(e) => {
                    // SAFETY: `ierr` is Fortran's error argument.
                    unsafe { $crate::ffi::fortran::set($ierr, e) };
                    return;
                }
            }
        }
    };
    (@post $k:ident $a:ident $ierr:ident) => {};
}
pub(crate) use fortran;

/// Copies `s` into a Fortran `CHARACTER*(flen)` (blank-padded).
///
/// # Safety
/// `dst` points to `flen` writable bytes.
unsafe fn put_fstr(s: &[u8], dst: *mut u8, flen: usize) {
    if dst.is_null() {
        return;
    }
    // SAFETY: the caller's contract.
    let d = unsafe { std::slice::from_raw_parts_mut(dst, flen) };
    let n = s.len().min(flen);
    d[..n].copy_from_slice(&s[..n]);
    d[n..].fill(b' ');
}

// The profiling interface (`pmpi_…_`) of the functions above (build.rs).
include!(concat!(env!("OUT_DIR"), "/pmpi_fortran_mod.rs"));
