//! Datatypes, groups and the other sends and receives for Fortran.

use super::super::dtype::*;
use super::super::group::*;
use super::super::mprobe::*;
use super::super::requests::*;
use super::super::Handle;
use super::{fortran, get, handle, handles_in, set, with_handle, with_handles, Fint};
use std::ffi::{c_int, c_void};

fortran!(
    /// `MPI_TYPE_CONTIGUOUS`.
    mpi_type_contiguous_ => MPI_Type_contiguous; count: v, old: h, new: o);
fortran!(
    /// `MPI_TYPE_VECTOR`.
    mpi_type_vector_ => MPI_Type_vector; count: v, bl: v, stride: v, old: h, new: o);
fortran!(
    /// `MPI_TYPE_CREATE_HVECTOR`.
    mpi_type_create_hvector_ => MPI_Type_create_hvector; count: v, bl: v, stride: a, old: h, new: o);
fortran!(
    /// `MPI_TYPE_INDEXED`.
    mpi_type_indexed_ => MPI_Type_indexed; count: v, bls: p, displs: p, old: h, new: o);
fortran!(
    /// `MPI_TYPE_CREATE_HINDEXED`.
    mpi_type_create_hindexed_ => MPI_Type_create_hindexed;
    count: v, bls: p, displs: q, old: h, new: o);
fortran!(
    /// `MPI_TYPE_CREATE_HINDEXED_BLOCK`.
    mpi_type_create_hindexed_block_ => MPI_Type_create_hindexed_block;
    count: v, bl: v, displs: q, old: h, new: o);

/// `MPI_TYPE_CREATE_STRUCT`.
///
/// # Safety
/// Fortran references; the three arrays have `count` entries (the
/// displacements `INTEGER(KIND=MPI_ADDRESS_KIND)`).
#[no_mangle]
pub unsafe extern "C" fn mpi_type_create_struct_(
    count: *const Fint,
    bls: *mut Fint,
    displs: *mut i64,
    types: *mut Fint,
    new: *mut Fint,
    ierr: *mut Fint,
) {
    // SAFETY: Fortran references, per the contract.
    unsafe {
        let n = get(count);
        let ts = handles_in(n, types);
        let r = with_handle(new, |t| {
            MPI_Type_create_struct(n, bls, displs.cast::<isize>(), ts.as_ptr(), t)
        });
        set(ierr, r);
    }
}

/// `MPI_GROUP_RANGE_INCL`/`EXCL` through `f`: `RANGES(3, N)`, one triple
/// per column, is C's `int ranges[n][3]`.
///
/// # Safety
/// Fortran references; `ranges` has `3 * n` entries.
unsafe fn group_ranges(
    g: *const Fint,
    n: *const Fint,
    ranges: *mut Fint,
    new: *mut Fint,
    ierr: *mut Fint,
    f: unsafe extern "C" fn(Handle, c_int, *const [c_int; 3], *mut Handle) -> c_int,
) {
    // SAFETY: Fortran references, per the contract.
    unsafe {
        let (g, n) = (handle(get(g)), get(n));
        let r = with_handle(new, |h| f(g, n, ranges.cast(), h));
        set(ierr, r);
    }
}

/// `MPI_GROUP_RANGE_INCL`.
///
/// # Safety
/// Fortran references; `ranges` has `3 * n` entries.
#[no_mangle]
pub unsafe extern "C" fn mpi_group_range_incl_(
    g: *const Fint,
    n: *const Fint,
    ranges: *mut Fint,
    new: *mut Fint,
    ierr: *mut Fint,
) {
    // SAFETY: the caller's contract, passed on.
    unsafe { group_ranges(g, n, ranges, new, ierr, MPI_Group_range_incl) }
}

/// `MPI_GROUP_RANGE_EXCL`.
///
/// # Safety
/// Fortran references; `ranges` has `3 * n` entries.
#[no_mangle]
pub unsafe extern "C" fn mpi_group_range_excl_(
    g: *const Fint,
    n: *const Fint,
    ranges: *mut Fint,
    new: *mut Fint,
    ierr: *mut Fint,
) {
    // SAFETY: the caller's contract, passed on.
    unsafe { group_ranges(g, n, ranges, new, ierr, MPI_Group_range_excl) }
}

/// `MPI_BUFFER_DETACH`: waits for the buffered sends and detaches; the
/// address is C's business (Fortran gets the size back).
///
/// # Safety
/// Fortran references.
#[no_mangle]
pub unsafe extern "C" fn mpi_buffer_detach_(
    _buffer: *mut c_void,
    size: *mut Fint,
    ierr: *mut Fint,
) {
    let mut addr: *mut c_void = std::ptr::null_mut();
    // SAFETY: `addr` receives the attached buffer's address; `size` is
    // a Fortran reference.
    let r = unsafe { MPI_Buffer_detach((&raw mut addr).cast(), size) };
    // SAFETY: as above.
    unsafe { set(ierr, r) };
}

fortran!(
    /// `MPI_TYPE_CREATE_SUBARRAY`.
    mpi_type_create_subarray_ => MPI_Type_create_subarray;
    nd: v, sizes: p, subsizes: p, starts: p, order: v, old: h, new: o);
fortran!(
    /// `MPI_TYPE_CREATE_RESIZED`.
    mpi_type_create_resized_ => MPI_Type_create_resized; old: h, lb: a, extent: a, new: o);
fortran!(
    /// `MPI_TYPE_GET_EXTENT`.
    mpi_type_get_extent_ => MPI_Type_get_extent; dt: h, lb: q, extent: q);
fortran!(
    /// `MPI_TYPE_DUP`.
    mpi_type_dup_ => MPI_Type_dup; old: h, new: o);
fortran!(
    /// `MPI_GET_ADDRESS`.
    mpi_get_address_ => MPI_Get_address; loc: b, addr: q);
fortran!(
    /// `MPI_COMM_GROUP`.
    mpi_comm_group_ => MPI_Comm_group; comm: h, g: o);
fortran!(
    /// `MPI_GROUP_SIZE`.
    mpi_group_size_ => MPI_Group_size; g: h, size: p);
fortran!(
    /// `MPI_GROUP_RANK`.
    mpi_group_rank_ => MPI_Group_rank; g: h, rank: p);
fortran!(
    /// `MPI_GROUP_INCL`.
    mpi_group_incl_ => MPI_Group_incl; g: h, n: v, ranks: p, new: o);
fortran!(
    /// `MPI_GROUP_EXCL`.
    mpi_group_excl_ => MPI_Group_excl; g: h, n: v, ranks: p, new: o);
fortran!(
    /// `MPI_COMM_CREATE`.
    mpi_comm_create_ => MPI_Comm_create; comm: h, g: h, new: o);
fortran!(
    /// `MPI_BSEND`.
    mpi_bsend_ => MPI_Bsend; b: b, count: v, dt: h, dest: v, tag: v, comm: h);
fortran!(
    /// `MPI_RSEND`.
    mpi_rsend_ => MPI_Rsend; b: b, count: v, dt: h, dest: v, tag: v, comm: h);
fortran!(
    /// `MPI_BUFFER_ATTACH`.
    mpi_buffer_attach_ => MPI_Buffer_attach; b: b, size: v);
fortran!(
    /// `MPI_SENDRECV_REPLACE`.
    mpi_sendrecv_replace_ => MPI_Sendrecv_replace;
    b: b, count: v, dt: h, dest: v, stag: v, source: v, rtag: v, comm: h, st: s);
fortran!(
    /// `MPI_RECV_INIT`.
    mpi_recv_init_ => MPI_Recv_init; b: b, count: v, dt: h, source: v, tag: v, comm: h, req: o);
fortran!(
    /// `MPI_MPROBE`.
    mpi_mprobe_ => MPI_Mprobe; source: v, tag: v, comm: h, msg: o, st: s);

/// `MPI_STARTALL`.
///
/// # Safety
/// Fortran references; `reqs` has `count` handles.
#[no_mangle]
pub unsafe extern "C" fn mpi_startall_(count: *const Fint, reqs: *mut Fint, ierr: *mut Fint) {
    // SAFETY: Fortran references.
    unsafe {
        let n = get(count);
        set(ierr, with_handles(n, reqs, |r| MPI_Startall(n, r)));
    }
}

fortran!(
    /// `MPI_TYPE_COMMIT`.
    mpi_type_commit_ => MPI_Type_commit; dt: i);

fortran!(
    /// `MPI_TYPE_FREE`.
    mpi_type_free_ => MPI_Type_free; dt: i);

fortran!(
    /// `MPI_GROUP_FREE`.
    mpi_group_free_ => MPI_Group_free; g: i);

fortran!(
    /// `MPI_START`.
    mpi_start_ => MPI_Start; req: i);

fortran!(
    /// `MPI_MRECV`.
    mpi_mrecv_ => MPI_Mrecv; b: b, count: v, dt: h, msg: i, st: s);

// The profiling interface (`pmpi_…_`) of the functions above (build.rs).
include!(concat!(env!("OUT_DIR"), "/pmpi_fortran_more.rs"));
