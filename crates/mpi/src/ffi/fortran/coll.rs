//! Collectives for Fortran.

use super::super::coll::*;
use super::super::collv::*;
use super::{alltoallw_types, buf, fortran, set, Fint};
use std::ffi::c_void;

fortran!(
    /// `MPI_BARRIER`.
    mpi_barrier_ => MPI_Barrier; comm: h);
fortran!(
    /// `MPI_BCAST`.
    mpi_bcast_ => MPI_Bcast; b: b, count: v, dt: h, root: v, comm: h);
fortran!(
    /// `MPI_REDUCE`.
    mpi_reduce_ => MPI_Reduce; sb: b, rb: b, count: v, dt: h, op: h, root: v, comm: h);
fortran!(
    /// `MPI_ALLREDUCE`.
    mpi_allreduce_ => MPI_Allreduce; sb: b, rb: b, count: v, dt: h, op: h, comm: h);
fortran!(
    /// `MPI_GATHER`.
    mpi_gather_ => MPI_Gather; sb: b, sc: v, st: h, rb: b, rc: v, rt: h, root: v, comm: h);
fortran!(
    /// `MPI_SCATTER`.
    mpi_scatter_ => MPI_Scatter; sb: b, sc: v, st: h, rb: b, rc: v, rt: h, root: v, comm: h);
fortran!(
    /// `MPI_ALLGATHER`.
    mpi_allgather_ => MPI_Allgather; sb: b, sc: v, st: h, rb: b, rc: v, rt: h, comm: h);
fortran!(
    /// `MPI_ALLTOALL`.
    mpi_alltoall_ => MPI_Alltoall; sb: b, sc: v, st: h, rb: b, rc: v, rt: h, comm: h);
fortran!(
    /// `MPI_GATHERV`.
    mpi_gatherv_ => MPI_Gatherv;
    sb: b, sc: v, st: h, rb: b, rcs: p, displs: p, rt: h, root: v, comm: h);
fortran!(
    /// `MPI_SCATTERV`.
    mpi_scatterv_ => MPI_Scatterv;
    sb: b, scs: p, displs: p, st: h, rb: b, rc: v, rt: h, root: v, comm: h);
fortran!(
    /// `MPI_ALLGATHERV`.
    mpi_allgatherv_ => MPI_Allgatherv;
    sb: b, sc: v, st: h, rb: b, rcs: p, displs: p, rt: h, comm: h);
fortran!(
    /// `MPI_ALLTOALLV`.
    mpi_alltoallv_ => MPI_Alltoallv;
    sb: b, scs: p, sd: p, st: h, rb: b, rcs: p, rd: p, rt: h, comm: h);
fortran!(
    /// `MPI_SCAN`.
    mpi_scan_ => MPI_Scan; sb: b, rb: b, count: v, dt: h, op: h, comm: h);
fortran!(
    /// `MPI_EXSCAN`.
    mpi_exscan_ => MPI_Exscan; sb: b, rb: b, count: v, dt: h, op: h, comm: h);
fortran!(
    /// `MPI_REDUCE_SCATTER`.
    mpi_reduce_scatter_ => MPI_Reduce_scatter; sb: b, rb: b, rcs: p, dt: h, op: h, comm: h);
fortran!(
    /// `MPI_REDUCE_SCATTER_BLOCK`.
    mpi_reduce_scatter_block_ => MPI_Reduce_scatter_block;
    sb: b, rb: b, rc: v, dt: h, op: h, comm: h);

/// `MPI_ALLTOALLW`: as `MPI_ALLTOALLV`, with a datatype per peer.
///
/// # Safety
/// Fortran references; the count, displacement and datatype arrays have
/// one entry per task of `comm`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn mpi_alltoallw_(
    sb: *mut c_void,
    scs: *mut Fint,
    sds: *mut Fint,
    sts: *mut Fint,
    rb: *mut c_void,
    rcs: *mut Fint,
    rds: *mut Fint,
    rts: *mut Fint,
    comm: *const Fint,
    ierr: *mut Fint,
) {
    // SAFETY: Fortran references, per the contract.
    unsafe {
        let (c, st, rt) = match alltoallw_types(comm, sts, rts) {
            Ok(t) => t,
            Err(e) => return set(ierr, e),
        };
        set(
            ierr,
            MPI_Alltoallw(
                buf(sb),
                scs,
                sds,
                st.as_ptr(),
                buf(rb),
                rcs,
                rds,
                rt.as_ptr(),
                c,
            ),
        );
    }
}

// The profiling interface (`pmpi_…_`) of the functions above (build.rs).
include!(concat!(env!("OUT_DIR"), "/pmpi_fortran_coll.rs"));
