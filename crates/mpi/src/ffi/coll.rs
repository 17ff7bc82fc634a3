//! Collectives: argument checks and buffers, then `crate::coll`.

use super::{call, dst, dtype, hv, nbytes, src, Handle};
use crate::coll::{self, Reduction};
use crate::consts::{err, IN_PLACE};
use crate::engine::MpiErr;
use crate::runtime::with;
use crate::types::op;
use std::ffi::{c_int, c_void};

fn in_place(p: *const c_void) -> bool {
    p as usize == IN_PLACE
}

fn my_rank(comm: Handle) -> Result<(u32, u32), MpiErr> {
    with(|e| {
        let c = e.comm(hv(comm))?;
        Ok((c.rank, c.size()))
    })
}

pub(super) fn reduction(dt: Handle, o: Handle) -> Result<Reduction, MpiErr> {
    let t = dtype(dt)?;
    let op =
        op(hv(o)).ok_or_else(|| MpiErr::new(err::OP, format!("invalid operation {:#x}", hv(o))))?;
    Ok(Reduction {
        op,
        num: t.num,
        size: t.size,
    })
}

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
        let n = nbytes(count, dt)?;
        // SAFETY: MPI's contract: `count` elements, ours during the call.
        let b = unsafe { dst(buf, n) }?;
        coll::bcast(hv(comm), b, root)
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
        let n = nbytes(count, dt)?;
        let red = reduction(dt, o)?;
        let (me, _) = my_rank(comm)?;
        let at_root = i64::from(me) == i64::from(root);
        let mut acc = if at_root && in_place(sendbuf) {
            // SAFETY: MPI's contract: the root's recvbuf holds `count` elements.
            unsafe { dst(recvbuf, n) }?.to_vec()
        } else {
            // SAFETY: MPI's contract for sendbuf.
            unsafe { src(sendbuf, n) }?.to_vec()
        };
        coll::reduce(hv(comm), &mut acc, red, root)?;
        if at_root {
            // SAFETY: MPI's contract for the root's recvbuf.
            unsafe { dst(recvbuf, n) }?.copy_from_slice(&acc);
        }
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
        let n = nbytes(count, dt)?;
        let red = reduction(dt, o)?;
        if !in_place(sendbuf) {
            // SAFETY: MPI's contract; the buffers do not overlap.
            let s = unsafe { src(sendbuf, n) }?.to_vec();
            // SAFETY: MPI's contract for recvbuf.
            unsafe { dst(recvbuf, n) }?.copy_from_slice(&s);
        }
        // SAFETY: MPI's contract for recvbuf.
        let acc = unsafe { dst(recvbuf, n) }?;
        coll::allreduce(hv(comm), acc, red)
    })
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
        let (me, size) = my_rank(comm)?;
        let at_root = i64::from(me) == i64::from(root);
        let mine = if at_root && in_place(sendbuf) {
            None
        } else {
            // SAFETY: MPI's contract for sendbuf.
            Some(unsafe { src(sendbuf, nbytes(sendcount, sendtype)?) }?)
        };
        let (chunk, all) = if at_root {
            let chunk = nbytes(recvcount, recvtype)?;
            // SAFETY: MPI's contract: `size * recvcount` elements at the root.
            (chunk, unsafe { dst(recvbuf, chunk * size as usize) }?)
        } else {
            (mine.map_or(0, <[u8]>::len), &mut [][..])
        };
        coll::gather(hv(comm), mine, all, chunk, root)
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
        let (me, size) = my_rank(comm)?;
        let at_root = i64::from(me) == i64::from(root);
        let (chunk, all) = if at_root {
            let chunk = nbytes(sendcount, sendtype)?;
            // SAFETY: MPI's contract: `size * sendcount` elements at the root.
            (chunk, unsafe { src(sendbuf, chunk * size as usize) }?)
        } else {
            (nbytes(recvcount, recvtype)?, &[][..])
        };
        let mine = if at_root && in_place(recvbuf) {
            None
        } else {
            // SAFETY: MPI's contract for recvbuf.
            Some(unsafe { dst(recvbuf, nbytes(recvcount, recvtype)?) }?)
        };
        coll::scatter(hv(comm), all, mine, chunk, root)
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
        let (_, size) = my_rank(comm)?;
        let chunk = nbytes(recvcount, recvtype)?;
        let mine = if in_place(sendbuf) {
            None
        } else {
            // SAFETY: MPI's contract for sendbuf; copied as it may alias.
            Some(unsafe { src(sendbuf, nbytes(sendcount, sendtype)?) }?.to_vec())
        };
        // SAFETY: MPI's contract: `size * recvcount` elements.
        let all = unsafe { dst(recvbuf, chunk * size as usize) }?;
        coll::allgather(hv(comm), mine.as_deref(), all, chunk)
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
        let (_, size) = my_rank(comm)?;
        let chunk = nbytes(recvcount, recvtype)?;
        let send = if in_place(sendbuf) {
            None
        } else {
            let sc = nbytes(sendcount, sendtype)?;
            // SAFETY: MPI's contract: `size * sendcount` elements.
            Some(unsafe { src(sendbuf, sc * size as usize) }?.to_vec())
        };
        // SAFETY: MPI's contract: `size * recvcount` elements.
        let all = unsafe { dst(recvbuf, chunk * size as usize) }?;
        coll::alltoall(hv(comm), send.as_deref(), all, chunk)
    })
}
