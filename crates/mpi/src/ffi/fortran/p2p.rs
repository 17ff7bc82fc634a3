//! Point-to-point and requests for Fortran.

use super::super::p2p::*;
use super::{fortran, get, set, status, statuses, with_handles, Fint};

fortran!(
    /// `MPI_SEND`.
    mpi_send_ => MPI_Send; b: b, count: v, dt: h, dest: v, tag: v, comm: h);
fortran!(
    /// `MPI_SSEND`.
    mpi_ssend_ => MPI_Ssend; b: b, count: v, dt: h, dest: v, tag: v, comm: h);
fortran!(
    /// `MPI_RECV`.
    mpi_recv_ => MPI_Recv; b: b, count: v, dt: h, source: v, tag: v, comm: h, st: s);
fortran!(
    /// `MPI_ISEND`.
    mpi_isend_ => MPI_Isend; b: b, count: v, dt: h, dest: v, tag: v, comm: h, req: o);
fortran!(
    /// `MPI_ISSEND`.
    mpi_issend_ => MPI_Issend; b: b, count: v, dt: h, dest: v, tag: v, comm: h, req: o);
fortran!(
    /// `MPI_IRECV`.
    mpi_irecv_ => MPI_Irecv; b: b, count: v, dt: h, source: v, tag: v, comm: h, req: o);
fortran!(
    /// `MPI_SENDRECV`.
    mpi_sendrecv_ => MPI_Sendrecv;
    sb: b, sc: v, st: h, dest: v, stag: v, rb: b, rc: v, rt: h, source: v, rtag: v,
    comm: h, status_: s);
fortran!(
    /// `MPI_IPROBE`.
    mpi_iprobe_ => MPI_Iprobe; source: v, tag: v, comm: h, flag: p, st: s);
fortran!(
    /// `MPI_PROBE`.
    mpi_probe_ => MPI_Probe; source: v, tag: v, comm: h, st: s);
fortran!(
    /// `MPI_GET_COUNT`.
    mpi_get_count_ => MPI_Get_count; st: s, dt: h, count: p);
fortran!(
    /// `MPI_TEST_CANCELLED`.
    mpi_test_cancelled_ => MPI_Test_cancelled; st: s, flag: p);

/// `MPI_WAITALL`.
///
/// # Safety
/// Fortran references; `reqs` has `count` handles, `sts` as many
/// statuses or is `MPI_STATUSES_IGNORE`.
#[no_mangle]
pub unsafe extern "C" fn mpi_waitall_(
    count: *const Fint,
    reqs: *mut Fint,
    sts: *mut Fint,
    ierr: *mut Fint,
) {
    // SAFETY: Fortran references.
    unsafe {
        let n = get(count);
        set(
            ierr,
            with_handles(n, reqs, |r| MPI_Waitall(n, r, statuses(sts))),
        );
    }
}

/// `MPI_TESTALL`.
///
/// # Safety
/// As `mpi_waitall_`; `flag` is a `LOGICAL`.
#[no_mangle]
pub unsafe extern "C" fn mpi_testall_(
    count: *const Fint,
    reqs: *mut Fint,
    flag: *mut Fint,
    sts: *mut Fint,
    ierr: *mut Fint,
) {
    // SAFETY: Fortran references.
    unsafe {
        let n = get(count);
        set(
            ierr,
            with_handles(n, reqs, |r| MPI_Testall(n, r, flag, statuses(sts))),
        );
    }
}

/// `MPI_WAITANY`: Fortran's index counts from 1.
///
/// # Safety
/// Fortran references; `reqs` has `count` handles.
#[no_mangle]
pub unsafe extern "C" fn mpi_waitany_(
    count: *const Fint,
    reqs: *mut Fint,
    index: *mut Fint,
    st: *mut Fint,
    ierr: *mut Fint,
) {
    // SAFETY: Fortran references.
    unsafe {
        let n = get(count);
        let mut i: Fint = 0;
        let r = with_handles(n, reqs, |r| MPI_Waitany(n, r, &mut i, status(st)));
        if !index.is_null() {
            // MPI_UNDEFINED stays as it is.
            index.write(if i >= 0 { i + 1 } else { i });
        }
        set(ierr, r);
    }
}

fortran!(
    /// `MPI_WAIT`.
    mpi_wait_ => MPI_Wait; req: i, st: s);

fortran!(
    /// `MPI_TEST`.
    mpi_test_ => MPI_Test; req: i, flag: p, st: s);

fortran!(
    /// `MPI_CANCEL`.
    mpi_cancel_ => MPI_Cancel; req: i);

fortran!(
    /// `MPI_REQUEST_FREE`.
    mpi_request_free_ => MPI_Request_free; req: i);

// The profiling interface (`pmpi_…_`) of the functions above (build.rs).
include!(concat!(env!("OUT_DIR"), "/pmpi_fortran_p2p.rs"));
