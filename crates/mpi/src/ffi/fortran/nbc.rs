//! Fortran names of the nonblocking collectives, the `some`/`any`
//! request calls, user operations, intercommunicators, graph
//! topologies, neighbourhood collectives and the small calls.

use super::super::graph::*;
use super::super::group::{MPI_Op_commutative, MPI_Op_create, MPI_Op_free};
use super::super::icoll::*;
use super::super::intercomm::*;
use super::super::misc::*;
use super::super::requests::{MPI_Testany, MPI_Testsome, MPI_Waitsome};
use super::{
    fortran, get, get_aint, handle, set, status, statuses, with_handle, with_handles, Fint,
};
use crate::handles::UserFn;
use std::ffi::{c_int, c_void};

/// `MPI_IALLTOALLW`.
///
/// # Safety
/// As `mpi_alltoallw_`; `req` is writable.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn mpi_ialltoallw_(
    sb: *mut c_void,
    scs: *mut Fint,
    sds: *mut Fint,
    sts: *mut Fint,
    rb: *mut c_void,
    rcs: *mut Fint,
    rds: *mut Fint,
    rts: *mut Fint,
    comm: *const Fint,
    req: *mut Fint,
    ierr: *mut Fint,
) {
    // SAFETY: Fortran references, per the contract.
    unsafe {
        let (c, st, rt) = match super::alltoallw_types(comm, sts, rts) {
            Ok(t) => t,
            Err(e) => return set(ierr, e),
        };
        let (sb, rb) = (super::buf(sb), super::buf(rb));
        // The converted datatypes must outlive this call: the collective
        // runs when the request is waited on.
        let r = with_handle(req, |q| {
            super::super::icoll::ialltoallw_owned(sb, scs, sds, st, rb, rcs, rds, rt, c, q)
        });
        set(ierr, r);
    }
}

fortran!(
    /// `MPI_IBARRIER`.
    mpi_ibarrier_ => MPI_Ibarrier; comm: h, req: o);
fortran!(
    /// `MPI_IBCAST`.
    mpi_ibcast_ => MPI_Ibcast; b: b, count: v, dt: h, root: v, comm: h, req: o);
fortran!(
    /// `MPI_IREDUCE`.
    mpi_ireduce_ => MPI_Ireduce; sb: b, rb: b, count: v, dt: h, op: h, root: v, comm: h, req: o);
fortran!(
    /// `MPI_IALLREDUCE`.
    mpi_iallreduce_ => MPI_Iallreduce; sb: b, rb: b, count: v, dt: h, op: h, comm: h, req: o);
fortran!(
    /// `MPI_IGATHER`.
    mpi_igather_ => MPI_Igather;
    sb: b, sc: v, st: h, rb: b, rc: v, rt: h, root: v, comm: h, req: o);
fortran!(
    /// `MPI_IGATHERV`.
    mpi_igatherv_ => MPI_Igatherv;
    sb: b, sc: v, st: h, rb: b, rcs: p, ds: p, rt: h, root: v, comm: h, req: o);
fortran!(
    /// `MPI_ISCATTER`.
    mpi_iscatter_ => MPI_Iscatter;
    sb: b, sc: v, st: h, rb: b, rc: v, rt: h, root: v, comm: h, req: o);
fortran!(
    /// `MPI_ISCATTERV`.
    mpi_iscatterv_ => MPI_Iscatterv;
    sb: b, scs: p, ds: p, st: h, rb: b, rc: v, rt: h, root: v, comm: h, req: o);
fortran!(
    /// `MPI_IALLGATHER`.
    mpi_iallgather_ => MPI_Iallgather; sb: b, sc: v, st: h, rb: b, rc: v, rt: h, comm: h, req: o);
fortran!(
    /// `MPI_IALLGATHERV`.
    mpi_iallgatherv_ => MPI_Iallgatherv;
    sb: b, sc: v, st: h, rb: b, rcs: p, ds: p, rt: h, comm: h, req: o);
fortran!(
    /// `MPI_IALLTOALL`.
    mpi_ialltoall_ => MPI_Ialltoall; sb: b, sc: v, st: h, rb: b, rc: v, rt: h, comm: h, req: o);
fortran!(
    /// `MPI_IALLTOALLV`.
    mpi_ialltoallv_ => MPI_Ialltoallv;
    sb: b, scs: p, sds: p, st: h, rb: b, rcs: p, rds: p, rt: h, comm: h, req: o);
fortran!(
    /// `MPI_IREDUCE_SCATTER_BLOCK`.
    mpi_ireduce_scatter_block_ => MPI_Ireduce_scatter_block;
    sb: b, rb: b, rc: v, dt: h, op: h, comm: h, req: o);
fortran!(
    /// `MPI_IREDUCE_SCATTER`.
    mpi_ireduce_scatter_ => MPI_Ireduce_scatter; sb: b, rb: b, rcs: p, dt: h, op: h, comm: h, req: o);
fortran!(
    /// `MPI_ISCAN`.
    mpi_iscan_ => MPI_Iscan; sb: b, rb: b, count: v, dt: h, op: h, comm: h, req: o);
fortran!(
    /// `MPI_IEXSCAN`.
    mpi_iexscan_ => MPI_Iexscan; sb: b, rb: b, count: v, dt: h, op: h, comm: h, req: o);

/// Makes the first `n` indices count from 1, as Fortran's do.
///
/// # Safety
/// `idx` is null or holds `n` writable ints.
unsafe fn one_based(idx: *mut Fint, n: Fint) {
    if idx.is_null() {
        return;
    }
    for i in 0..usize::try_from(n).unwrap_or(0) {
        // SAFETY: the caller's contract.
        unsafe { *idx.add(i) += 1 };
    }
}

/// `MPI_Waitsome` or `MPI_Testsome`.
type SomeFn = unsafe extern "C" fn(
    c_int,
    *mut super::super::Handle,
    *mut c_int,
    *mut c_int,
    *mut super::super::MpiStatus,
) -> c_int;

/// The Fortran `WAITSOME`/`TESTSOME`: `f` on the requests, indices made
/// to count from 1.
///
/// # Safety
/// Fortran references; `reqs`, `idx` and `sts` have `count` entries.
unsafe fn some(
    f: SomeFn,
    count: *const Fint,
    reqs: *mut Fint,
    outcount: *mut Fint,
    idx: *mut Fint,
    sts: *mut Fint,
    ierr: *mut Fint,
) {
    // SAFETY: the caller's contract.
    unsafe {
        let n = get(count);
        let mut out: c_int = 0;
        let r = with_handles(n, reqs, |q| f(n, q, &mut out, idx, statuses(sts)));
        if r == 0 && out > 0 {
            one_based(idx, out);
        }
        if !outcount.is_null() {
            outcount.write(out);
        }
        set(ierr, r);
    }
}

/// `MPI_WAITSOME`: indices count from 1.
///
/// # Safety
/// Fortran references; `reqs`, `idx` and `sts` have `count` entries.
#[no_mangle]
pub unsafe extern "C" fn mpi_waitsome_(
    count: *const Fint,
    reqs: *mut Fint,
    outcount: *mut Fint,
    idx: *mut Fint,
    sts: *mut Fint,
    ierr: *mut Fint,
) {
    // SAFETY: Fortran references, as `some` needs.
    unsafe { some(MPI_Waitsome, count, reqs, outcount, idx, sts, ierr) }
}

/// `MPI_TESTSOME`: indices count from 1.
///
/// # Safety
/// As `mpi_waitsome_`.
#[no_mangle]
pub unsafe extern "C" fn mpi_testsome_(
    count: *const Fint,
    reqs: *mut Fint,
    outcount: *mut Fint,
    idx: *mut Fint,
    sts: *mut Fint,
    ierr: *mut Fint,
) {
    // SAFETY: Fortran references, as `some` needs.
    unsafe { some(MPI_Testsome, count, reqs, outcount, idx, sts, ierr) }
}

/// `MPI_TESTANY`: the index counts from 1.
///
/// # Safety
/// Fortran references; `reqs` has `count` handles; `flag` a `LOGICAL`.
#[no_mangle]
pub unsafe extern "C" fn mpi_testany_(
    count: *const Fint,
    reqs: *mut Fint,
    index: *mut Fint,
    flag: *mut Fint,
    st: *mut Fint,
    ierr: *mut Fint,
) {
    // SAFETY: Fortran references.
    unsafe {
        let n = get(count);
        let mut i: c_int = 0;
        let r = with_handles(n, reqs, |q| MPI_Testany(n, q, &mut i, flag, status(st)));
        if !index.is_null() {
            index.write(if i >= 0 { i + 1 } else { i });
        }
        set(ierr, r);
    }
}

/// `MPI_OP_CREATE`: the function is called as a C one (arguments by
/// reference; the datatype argument's first 4 bytes are the Fortran
/// handle on a little-endian machine).
///
/// # Safety
/// `f` is the address of a Fortran `MPI_User_function`; the others
/// Fortran references.
#[no_mangle]
pub unsafe extern "C" fn mpi_op_create_(
    f: *mut c_void,
    commute: *const Fint,
    op: *mut Fint,
    ierr: *mut Fint,
) {
    // SAFETY: a function address (or null, refused as a C null).
    let func = unsafe { std::mem::transmute::<*mut c_void, Option<UserFn>>(f) };
    // SAFETY: Fortran references.
    unsafe {
        let c = get(commute);
        let r = with_handle(op, |h| MPI_Op_create(func, c, h));
        set(ierr, r);
    }
}

fortran!(
    /// `MPI_OP_FREE`.
    mpi_op_free_ => MPI_Op_free; op: i);
fortran!(
    /// `MPI_OP_COMMUTATIVE`.
    mpi_op_commutative_ => MPI_Op_commutative; op: h, commute: p);
fortran!(
    /// `MPI_INTERCOMM_CREATE`.
    mpi_intercomm_create_ => MPI_Intercomm_create;
    local: h, lleader: v, peer: h, rleader: v, tag: v, new: o);
fortran!(
    /// `MPI_INTERCOMM_MERGE`.
    mpi_intercomm_merge_ => MPI_Intercomm_merge; comm: h, high: v, new: o);
fortran!(
    /// `MPI_COMM_TEST_INTER`.
    mpi_comm_test_inter_ => MPI_Comm_test_inter; comm: h, flag: p);
fortran!(
    /// `MPI_COMM_REMOTE_SIZE`.
    mpi_comm_remote_size_ => MPI_Comm_remote_size; comm: h, size: p);
fortran!(
    /// `MPI_COMM_REMOTE_GROUP`.
    mpi_comm_remote_group_ => MPI_Comm_remote_group; comm: h, g: o);
fortran!(
    /// `MPI_GRAPH_CREATE`.
    mpi_graph_create_ => MPI_Graph_create;
    comm: h, nnodes: v, index: p, edges: p, reorder: v, new: o);
fortran!(
    /// `MPI_GRAPHDIMS_GET`.
    mpi_graphdims_get_ => MPI_Graphdims_get; comm: h, nnodes: p, nedges: p);
fortran!(
    /// `MPI_GRAPH_GET`.
    mpi_graph_get_ => MPI_Graph_get; comm: h, maxi: v, maxe: v, index: p, edges: p);
fortran!(
    /// `MPI_GRAPH_NEIGHBORS_COUNT`.
    mpi_graph_neighbors_count_ => MPI_Graph_neighbors_count; comm: h, rank: v, n: p);
fortran!(
    /// `MPI_GRAPH_NEIGHBORS`.
    mpi_graph_neighbors_ => MPI_Graph_neighbors; comm: h, rank: v, maxn: v, nb: p);
fortran!(
    /// `MPI_DIST_GRAPH_NEIGHBORS_COUNT`.
    mpi_dist_graph_neighbors_count_ => MPI_Dist_graph_neighbors_count;
    comm: h, indeg: p, outdeg: p, weighted: p);
fortran!(
    /// `MPI_DIST_GRAPH_CREATE_ADJACENT`.
    mpi_dist_graph_create_adjacent_ => MPI_Dist_graph_create_adjacent;
    comm: h, indeg: v, sources: p, sw: w, outdeg: v, dests: p, dw: w, info: h, reorder: v,
    new: o);
fortran!(
    /// `MPI_DIST_GRAPH_CREATE`.
    mpi_dist_graph_create_ => MPI_Dist_graph_create;
    comm: h, n: v, sources: p, degrees: p, dests: p, wts: w, info: h, reorder: v, new: o);
fortran!(
    /// `MPI_DIST_GRAPH_NEIGHBORS`.
    mpi_dist_graph_neighbors_ => MPI_Dist_graph_neighbors;
    comm: h, maxin: v, sources: p, sw: w, maxout: v, dests: p, dw: w);
fortran!(
    /// `MPI_NEIGHBOR_ALLGATHER`.
    mpi_neighbor_allgather_ => MPI_Neighbor_allgather;
    sb: b, sc: v, st: h, rb: b, rc: v, rt: h, comm: h);
fortran!(
    /// `MPI_NEIGHBOR_ALLTOALL`.
    mpi_neighbor_alltoall_ => MPI_Neighbor_alltoall;
    sb: b, sc: v, st: h, rb: b, rc: v, rt: h, comm: h);
fortran!(
    /// `MPI_IS_THREAD_MAIN`.
    mpi_is_thread_main_ => MPI_Is_thread_main; flag: p);
/// `MPI_ALLOC_MEM`: the address goes to `base`, an
/// `INTEGER(KIND=MPI_ADDRESS_KIND)` (or `TYPE(C_PTR)`).
///
/// # Safety
/// Fortran references.
#[no_mangle]
pub unsafe extern "C" fn mpi_alloc_mem_(
    size: *const i64,
    info: *const Fint,
    base: *mut i64,
    ierr: *mut Fint,
) {
    // SAFETY: Fortran references; `base` has room for an address.
    unsafe {
        let r = MPI_Alloc_mem(get_aint(size), handle(get(info)), base.cast());
        set(ierr, r);
    }
}

fortran!(
    /// `MPI_REDUCE_LOCAL`.
    mpi_reduce_local_ => MPI_Reduce_local; sb: b, rb: b, count: v, dt: h, op: h);
fortran!(
    /// `MPI_TYPE_CREATE_F90_REAL`.
    mpi_type_create_f90_real_ => MPI_Type_create_f90_real; p: v, r: v, new: o);
fortran!(
    /// `MPI_TYPE_CREATE_F90_COMPLEX`.
    mpi_type_create_f90_complex_ => MPI_Type_create_f90_complex; p: v, r: v, new: o);
fortran!(
    /// `MPI_TYPE_CREATE_F90_INTEGER`.
    mpi_type_create_f90_integer_ => MPI_Type_create_f90_integer; r: v, new: o);

/// `MPI_FREE_MEM`: `base` is the memory itself (a choice argument).
///
/// # Safety
/// `base` came from `MPI_ALLOC_MEM`.
#[no_mangle]
pub unsafe extern "C" fn mpi_free_mem_(base: *mut c_void, ierr: *mut Fint) {
    // SAFETY: the caller's contract.
    unsafe { set(ierr, MPI_Free_mem(base)) };
}

// The profiling interface (`pmpi_…_`) of the functions above (build.rs).
include!(concat!(env!("OUT_DIR"), "/pmpi_fortran_nbc.rs"));
