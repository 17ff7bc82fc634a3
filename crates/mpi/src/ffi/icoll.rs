//! Nonblocking collectives: each is a schedule (`crate::nbc`, planned
//! by `iplan`) that every progressing MPI call advances, on intra- and
//! intercommunicators alike.

use super::{call, hv, mk, out, Handle};
use std::ffi::{c_int, c_void};

/// Starts the schedule `plan` made as the collective on `comm`; the
/// request in `req`.
///
/// # Safety
/// `req` is a writable handle.
unsafe fn schedule(
    name: &str,
    comm: Handle,
    req: *mut Handle,
    plan: impl FnOnce() -> Result<super::iplan::Plan, crate::engine::MpiErr>,
) -> c_int {
    call(name, hv(comm), || {
        // Refused before anything starts (the others' schedules would
        // wait for this one's messages).
        if req.is_null() {
            return Err(crate::engine::MpiErr::new(
                crate::consts::err::ARG,
                "request is NULL",
            ));
        }
        let (sched, finish) = plan()?;
        let id = crate::nbc::start(hv(comm), sched, finish)?;
        // SAFETY: the caller's contract.
        unsafe { out(req, mk(id), "request") }
    })
}

macro_rules! nonblocking {
    ($(#[$doc:meta])* $name:ident / $pname:ident => $blocking:ident ($($arg:ident : $ty:ty),*) on $comm:ident
        by $plan:ident $(($($extra:expr),*))?) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// MPI's contract for the buffers and arrays until completion;
        /// `req` is writable.
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty,)* req: *mut Handle) -> c_int {
            // SAFETY: the caller's contract.
            unsafe {
                schedule(stringify!($name), $comm, req, || {
                    super::iplan::$plan($($arg,)* $($($extra),*)?)
                })
            }
        }
        super::pmpi!(unsafe $pname => $name($($arg: $ty,)* req: *mut Handle) -> c_int);
    };
}

nonblocking!(
    /// `MPI_Ibarrier`.
    MPI_Ibarrier / PMPI_Ibarrier => MPI_Barrier(comm: Handle) on comm by ibarrier
);
nonblocking!(
    /// `MPI_Ibcast`.
    MPI_Ibcast / PMPI_Ibcast => MPI_Bcast(buf: *mut c_void, count: c_int, dt: Handle, root: c_int, comm: Handle) on comm by ibcast
);
nonblocking!(
    /// `MPI_Ireduce`.
    MPI_Ireduce / PMPI_Ireduce => MPI_Reduce(s: *const c_void, r: *mut c_void, count: c_int, dt: Handle, op: Handle,
        root: c_int, comm: Handle) on comm by ireduce
);
nonblocking!(
    /// `MPI_Iallreduce`.
    MPI_Iallreduce / PMPI_Iallreduce => MPI_Allreduce(s: *const c_void, r: *mut c_void, count: c_int, dt: Handle, op: Handle,
        comm: Handle) on comm by iallreduce
);
nonblocking!(
    /// `MPI_Igather`.
    MPI_Igather / PMPI_Igather => MPI_Gather(s: *const c_void, sc: c_int, st: Handle, r: *mut c_void, rc: c_int,
        rt: Handle, root: c_int, comm: Handle) on comm by igather
);
nonblocking!(
    /// `MPI_Igatherv`.
    MPI_Igatherv / PMPI_Igatherv => MPI_Gatherv(s: *const c_void, sc: c_int, st: Handle, r: *mut c_void,
        rcs: *const c_int, ds: *const c_int, rt: Handle, root: c_int, comm: Handle) on comm by igatherv
);
nonblocking!(
    /// `MPI_Iscatter`.
    MPI_Iscatter / PMPI_Iscatter => MPI_Scatter(s: *const c_void, sc: c_int, st: Handle, r: *mut c_void, rc: c_int,
        rt: Handle, root: c_int, comm: Handle) on comm by iscatter
);
nonblocking!(
    /// `MPI_Iscatterv`.
    MPI_Iscatterv / PMPI_Iscatterv => MPI_Scatterv(s: *const c_void, scs: *const c_int, ds: *const c_int, st: Handle,
        r: *mut c_void, rc: c_int, rt: Handle, root: c_int, comm: Handle) on comm by iscatterv
);
nonblocking!(
    /// `MPI_Iallgather`.
    MPI_Iallgather / PMPI_Iallgather => MPI_Allgather(s: *const c_void, sc: c_int, st: Handle, r: *mut c_void, rc: c_int,
        rt: Handle, comm: Handle) on comm by iallgather
);
nonblocking!(
    /// `MPI_Iallgatherv`.
    MPI_Iallgatherv / PMPI_Iallgatherv => MPI_Allgatherv(s: *const c_void, sc: c_int, st: Handle, r: *mut c_void,
        rcs: *const c_int, ds: *const c_int, rt: Handle, comm: Handle) on comm by iallgatherv
);
nonblocking!(
    /// `MPI_Ialltoall`.
    MPI_Ialltoall / PMPI_Ialltoall => MPI_Alltoall(s: *const c_void, sc: c_int, st: Handle, r: *mut c_void, rc: c_int,
        rt: Handle, comm: Handle) on comm by ialltoall
);
nonblocking!(
    /// `MPI_Ialltoallv`.
    MPI_Ialltoallv / PMPI_Ialltoallv => MPI_Alltoallv(s: *const c_void, scs: *const c_int, sds: *const c_int, st: Handle,
        r: *mut c_void, rcs: *const c_int, rds: *const c_int, rt: Handle, comm: Handle) on comm by ialltoallv
);
nonblocking!(
    /// `MPI_Ireduce_scatter_block`.
    MPI_Ireduce_scatter_block / PMPI_Ireduce_scatter_block => MPI_Reduce_scatter_block(s: *const c_void, r: *mut c_void, rc: c_int,
        dt: Handle, op: Handle, comm: Handle) on comm by ireduce_scatter_block
);
nonblocking!(
    /// `MPI_Ireduce_scatter`.
    MPI_Ireduce_scatter / PMPI_Ireduce_scatter => MPI_Reduce_scatter(s: *const c_void, r: *mut c_void, rcs: *const c_int,
        dt: Handle, op: Handle, comm: Handle) on comm by ireduce_scatter
);
nonblocking!(
    /// `MPI_Iscan`.
    MPI_Iscan / PMPI_Iscan => MPI_Scan(s: *const c_void, r: *mut c_void, count: c_int, dt: Handle, op: Handle,
        comm: Handle) on comm by iscan(false)
);
nonblocking!(
    /// `MPI_Iexscan`.
    MPI_Iexscan / PMPI_Iexscan => MPI_Exscan(s: *const c_void, r: *mut c_void, count: c_int, dt: Handle, op: Handle,
        comm: Handle) on comm by iscan(true)
);
nonblocking!(
    /// `MPI_Ialltoallw`.
    MPI_Ialltoallw / PMPI_Ialltoallw => MPI_Alltoallw(s: *const c_void, scs: *const c_int, sds: *const c_int,
        sts: *const Handle, r: *mut c_void, rcs: *const c_int, rds: *const c_int, rts: *const Handle,
        comm: Handle) on comm by ialltoallw
);

/// `MPI_Ialltoallw` with datatype arrays the caller owns: for callers
/// whose arrays are converted copies (the Fortran binding); the schedule
/// reads the datatypes at the call.
///
/// # Safety
/// As `MPI_Ialltoallw` for the buffers and the count and displacement
/// arrays; `sts` and `rts` hold one datatype per task of `comm`.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn ialltoallw_owned(
    s: *const c_void,
    scs: *const c_int,
    sds: *const c_int,
    sts: Vec<Handle>,
    r: *mut c_void,
    rcs: *const c_int,
    rds: *const c_int,
    rts: Vec<Handle>,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    // SAFETY: the caller's contract.
    unsafe {
        schedule("MPI_Ialltoallw", comm, req, || {
            super::iplan::ialltoallw(s, scs, sds, sts.as_ptr(), r, rcs, rds, rts.as_ptr(), comm)
        })
    }
}
