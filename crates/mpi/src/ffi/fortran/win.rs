//! One-sided communication for Fortran.

use super::super::win::*;
use super::{fortran, get, get_aint, handle, set, with_handle, Fint};
use std::ffi::c_void;

fortran!(
    /// `MPI_WIN_FENCE`.
    mpi_win_fence_ => MPI_Win_fence; assert: v, win: h);
fortran!(
    /// `MPI_WIN_LOCK`.
    mpi_win_lock_ => MPI_Win_lock; kind: v, rank: v, assert: v, win: h);
fortran!(
    /// `MPI_WIN_UNLOCK`.
    mpi_win_unlock_ => MPI_Win_unlock; rank: v, win: h);
fortran!(
    /// `MPI_WIN_LOCK_ALL`.
    mpi_win_lock_all_ => MPI_Win_lock_all; assert: v, win: h);
fortran!(
    /// `MPI_WIN_UNLOCK_ALL`.
    mpi_win_unlock_all_ => MPI_Win_unlock_all; win: h);
fortran!(
    /// `MPI_WIN_FLUSH`.
    mpi_win_flush_ => MPI_Win_flush; rank: v, win: h);
fortran!(
    /// `MPI_WIN_FLUSH_ALL`.
    mpi_win_flush_all_ => MPI_Win_flush_all; win: h);
fortran!(
    /// `MPI_WIN_FLUSH_LOCAL`.
    mpi_win_flush_local_ => MPI_Win_flush_local; rank: v, win: h);
fortran!(
    /// `MPI_WIN_FLUSH_LOCAL_ALL`.
    mpi_win_flush_local_all_ => MPI_Win_flush_local_all; win: h);
fortran!(
    /// `MPI_WIN_SYNC`.
    mpi_win_sync_ => MPI_Win_sync; win: h);
fortran!(
    /// `MPI_WIN_CREATE`.
    mpi_win_create_ => MPI_Win_create; base: b, size: a, unit: v, info: h, comm: h, win: o);
fortran!(
    /// `MPI_PUT`.
    mpi_put_ => MPI_Put; o: b, oc: v, ot: h, target: v, disp: a, tc: v, tt: h, win: h);
fortran!(
    /// `MPI_GET`.
    mpi_get_ => MPI_Get; o: b, oc: v, ot: h, target: v, disp: a, tc: v, tt: h, win: h);
fortran!(
    /// `MPI_ACCUMULATE`.
    mpi_accumulate_ => MPI_Accumulate;
    o: b, oc: v, ot: h, target: v, disp: a, tc: v, tt: h, op: h, win: h);
fortran!(
    /// `MPI_GET_ACCUMULATE`.
    mpi_get_accumulate_ => MPI_Get_accumulate;
    o: b, oc: v, ot: h, r: b, rc: v, rt: h, target: v, disp: a, tc: v, tt: h, op: h, win: h);
fortran!(
    /// `MPI_FETCH_AND_OP`.
    mpi_fetch_and_op_ => MPI_Fetch_and_op; o: b, r: b, dt: h, target: v, disp: a, op: h, win: h);
fortran!(
    /// `MPI_COMPARE_AND_SWAP`.
    mpi_compare_and_swap_ => MPI_Compare_and_swap;
    o: b, c: b, r: b, dt: h, target: v, disp: a, win: h);

/// `MPI_WIN_ALLOCATE`: `baseptr` is an `INTEGER(KIND=MPI_ADDRESS_KIND)`
/// receiving the address (for `c_f_pointer` or a Cray pointer).
///
/// # Safety
/// Fortran references.
#[no_mangle]
pub unsafe extern "C" fn mpi_win_allocate_(
    size: *const i64,
    unit: *const Fint,
    info: *const Fint,
    comm: *const Fint,
    baseptr: *mut i64,
    win: *mut Fint,
    ierr: *mut Fint,
) {
    // SAFETY: Fortran references; the C call stores a pointer, eight
    // bytes, into `baseptr`.
    unsafe {
        let r = with_handle(win, |w| {
            MPI_Win_allocate(
                get_aint(size),
                get(unit),
                handle(get(info)),
                handle(get(comm)),
                baseptr.cast::<c_void>(),
                w,
            )
        });
        set(ierr, r);
    }
}

/// `MPI_WIN_ALLOCATE_SHARED`: `baseptr` as for `MPI_WIN_ALLOCATE`.
///
/// # Safety
/// Fortran references.
#[no_mangle]
pub unsafe extern "C" fn mpi_win_allocate_shared_(
    size: *const i64,
    unit: *const Fint,
    info: *const Fint,
    comm: *const Fint,
    baseptr: *mut i64,
    win: *mut Fint,
    ierr: *mut Fint,
) {
    // SAFETY: Fortran references; the C call stores a pointer, eight
    // bytes, into `baseptr`.
    unsafe {
        let r = with_handle(win, |w| {
            MPI_Win_allocate_shared(
                get_aint(size),
                get(unit),
                handle(get(info)),
                handle(get(comm)),
                baseptr.cast::<c_void>(),
                w,
            )
        });
        set(ierr, r);
    }
}

/// `MPI_WIN_SHARED_QUERY`: `size` and `baseptr` are
/// `INTEGER(KIND=MPI_ADDRESS_KIND)`.
///
/// # Safety
/// Fortran references.
#[no_mangle]
pub unsafe extern "C" fn mpi_win_shared_query_(
    win: *const Fint,
    rank: *const Fint,
    size: *mut i64,
    unit: *mut Fint,
    baseptr: *mut i64,
    ierr: *mut Fint,
) {
    // SAFETY: Fortran references; the C call stores an MPI_Aint (eight
    // bytes) into `size` and a pointer into `baseptr`.
    unsafe {
        let r = MPI_Win_shared_query(
            handle(get(win)),
            get(rank),
            size.cast::<isize>(),
            unit,
            baseptr.cast::<c_void>(),
        );
        set(ierr, r);
    }
}

fortran!(
    /// `MPI_WIN_FREE`.
    mpi_win_free_ => MPI_Win_free; win: i);

// The profiling interface (`pmpi_…_`) of the functions above (build.rs).
include!(concat!(env!("OUT_DIR"), "/pmpi_fortran_win.rs"));
