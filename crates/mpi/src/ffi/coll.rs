//! Collectives: argument checks and buffers, then `crate::coll`.

use super::collarg::{contribution, reduce_input, reduction, times, Shape};
use super::{call, hv, recv_area, send_data, Area, Handle};
use crate::coll;
use crate::nbc::algo::Role;
use std::ffi::{c_int, c_void};

/// `MPI_Barrier`.
#[no_mangle]
pub extern "C" fn MPI_Barrier(comm: Handle) -> c_int {
    call("MPI_Barrier", hv(comm), || coll::barrier(hv(comm)))
}

/// `MPI_Bcast`.
///
/// # Safety
/// MPI's contract for the buffer.
#[no_mangle]
pub unsafe extern "C" fn MPI_Bcast(
    buf: *mut c_void,
    count: c_int,
    dt: Handle,
    root: c_int,
    comm: Handle,
) -> c_int {
    call("MPI_Bcast", hv(comm), || {
        // SAFETY: MPI's contract: `count` elements, ours during the call.
        let mut b = unsafe { recv_area(buf, count, dt) }?;
        coll::bcast(hv(comm), b.bytes(), root)?;
        b.finish();
        Ok(())
    })
}

/// `MPI_Reduce` (`MPI_IN_PLACE` as the root's send buffer).
///
/// # Safety
/// MPI's contract for the buffers.
#[no_mangle]
pub unsafe extern "C" fn MPI_Reduce(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    dt: Handle,
    o: Handle,
    root: c_int,
    comm: Handle,
) -> c_int {
    call("MPI_Reduce", hv(comm), || {
        let red = reduction(dt, o)?;
        let Some((sh, role)) = Shape::rooted(comm, root)? else {
            return Ok(());
        };
        // SAFETY: MPI's contract for the buffers.
        let mut acc = unsafe { reduce_input(&sh, role, sendbuf, recvbuf, count, dt) }?;
        coll::reduce(hv(comm), &mut acc, &red, root)?;
        if role == Role::Root {
            // SAFETY: MPI's contract for the root's recvbuf.
            let mut r = unsafe { recv_area(recvbuf, count, dt) }?;
            r.bytes().copy_from_slice(&acc);
            r.finish();
        }
        crate::nbc::pool::give(acc);
        Ok(())
    })
}

/// `MPI_Allreduce` (`MPI_IN_PLACE` as the send buffer).
///
/// # Safety
/// MPI's contract for the buffers.
#[no_mangle]
pub unsafe extern "C" fn MPI_Allreduce(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    dt: Handle,
    o: Handle,
    comm: Handle,
) -> c_int {
    call("MPI_Allreduce", hv(comm), || {
        let red = reduction(dt, o)?;
        // SAFETY: MPI's contract for the buffers.
        let mut acc = unsafe { reduce_area(comm, sendbuf, recvbuf, count, dt) }?;
        coll::allreduce(hv(comm), acc.bytes(), &red)?;
        acc.finish();
        Ok(())
    })
}

/// The receive buffer of a reduction every task gets, holding our
/// contribution (copied first: the buffers may alias).
///
/// # Safety
/// MPI's contract for the buffers.
pub(super) unsafe fn reduce_area<'a>(
    comm: Handle,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    dt: Handle,
) -> Result<Area<'a>, crate::engine::MpiErr> {
    // SAFETY: the caller's contract.
    let mine = unsafe { contribution(&Shape::of(comm)?, sendbuf, recvbuf, count, dt) }?;
    // SAFETY: the caller's contract.
    let mut acc = unsafe { recv_area(recvbuf, count, dt) }?;
    acc.bytes().copy_from_slice(&mine);
    crate::nbc::pool::give(mine);
    Ok(acc)
}

/// `MPI_Gather` (`MPI_IN_PLACE` as the root's send buffer).
///
/// # Safety
/// MPI's contract for the buffers.
#[no_mangle]
pub unsafe extern "C" fn MPI_Gather(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: Handle,
    root: c_int,
    comm: Handle,
) -> c_int {
    call("MPI_Gather", hv(comm), || {
        let Some((sh, role)) = Shape::rooted(comm, root)? else {
            return Ok(());
        };
        let mine = if sh.own_part(role, sendbuf)? {
            // SAFETY: MPI's contract for sendbuf.
            Some(unsafe { send_data(sendbuf, sendcount, sendtype) }?)
        } else {
            None
        };
        if role != Role::Root {
            let chunk = mine.as_ref().map_or(0, |m| m.len());
            return coll::gather(hv(comm), mine.as_deref(), &mut [], chunk, root);
        }
        let chunk = super::nbytes(recvcount, recvtype)?;
        // SAFETY: MPI's contract: a block per task at the root.
        let mut all = unsafe { recv_area(recvbuf, times(recvcount, sh.peers())?, recvtype) }?;
        coll::gather(hv(comm), mine.as_deref(), all.bytes(), chunk, root)?;
        all.finish();
        Ok(())
    })
}

/// `MPI_Scatter` (`MPI_IN_PLACE` as the root's receive buffer).
///
/// # Safety
/// MPI's contract for the buffers.
#[no_mangle]
pub unsafe extern "C" fn MPI_Scatter(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: Handle,
    root: c_int,
    comm: Handle,
) -> c_int {
    call("MPI_Scatter", hv(comm), || {
        let Some((sh, role)) = Shape::rooted(comm, root)? else {
            return Ok(());
        };
        let (chunk, all) = if role == Role::Root {
            let chunk = super::nbytes(sendcount, sendtype)?;
            // SAFETY: MPI's contract: a block per task at the root.
            let all = unsafe { send_data(sendbuf, times(sendcount, sh.peers())?, sendtype) }?;
            (chunk, all)
        } else {
            (super::nbytes(recvcount, recvtype)?, Default::default())
        };
        let mut mine = if sh.own_part(role, recvbuf)? {
            // SAFETY: MPI's contract for recvbuf.
            Some(unsafe { recv_area(recvbuf, recvcount, recvtype) }?)
        } else {
            None
        };
        coll::scatter(hv(comm), &all, mine.as_mut().map(Area::bytes), chunk, root)?;
        if let Some(m) = mine {
            m.finish();
        }
        Ok(())
    })
}

/// `MPI_Allgather` (`MPI_IN_PLACE` as the send buffer).
///
/// # Safety
/// MPI's contract for the buffers.
#[no_mangle]
pub unsafe extern "C" fn MPI_Allgather(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: Handle,
    comm: Handle,
) -> c_int {
    call("MPI_Allgather", hv(comm), || {
        let sh = Shape::of(comm)?;
        let chunk = super::nbytes(recvcount, recvtype)?;
        let mine = if sh.in_place(sendbuf)? {
            None
        } else {
            // SAFETY: MPI's contract for sendbuf; copied as it may alias.
            Some(unsafe { send_data(sendbuf, sendcount, sendtype) }?.into_owned())
        };
        // SAFETY: MPI's contract: a block per task.
        let mut all = unsafe { recv_area(recvbuf, times(recvcount, sh.peers())?, recvtype) }?;
        coll::allgather(hv(comm), mine.as_deref(), all.bytes(), chunk)?;
        all.finish();
        Ok(())
    })
}

/// `MPI_Alltoall` (`MPI_IN_PLACE` as the send buffer).
///
/// # Safety
/// MPI's contract for the buffers.
#[no_mangle]
pub unsafe extern "C" fn MPI_Alltoall(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: Handle,
    comm: Handle,
) -> c_int {
    call("MPI_Alltoall", hv(comm), || {
        let sh = Shape::of(comm)?;
        let n = sh.peers();
        let chunk = super::nbytes(recvcount, recvtype)?;
        // SAFETY: MPI's contract: a block per task.
        let mut all = unsafe { recv_area(recvbuf, times(recvcount, n)?, recvtype) }?;
        let send = if sh.in_place(sendbuf)? {
            None
        } else {
            // SAFETY: MPI's contract: a block per task (copied only if it
            // overlaps the receive buffer).
            Some(all.apart(unsafe { send_data(sendbuf, times(sendcount, n)?, sendtype) }?))
        };
        coll::alltoall(hv(comm), send.as_deref(), all.bytes(), chunk)?;
        all.finish();
        Ok(())
    })
}

// The profiling interface (`PMPI_…`) of the functions above (build.rs).
include!(concat!(env!("OUT_DIR"), "/pmpi_coll.rs"));
