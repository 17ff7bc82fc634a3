//! Collectives: argument checks and buffers, then `crate::coll`.

use super::{call, hv, lay, recv_area, send_data, Area, Handle};
use crate::coll::{self, Reduction};
use crate::consts::{err, IN_PLACE};
use crate::engine::MpiErr;
use crate::handles::reg;
use crate::runtime::with;
use crate::types::op;
use std::ffi::{c_int, c_void};

fn in_place(p: *const c_void) -> bool {
    p as usize == IN_PLACE
}

/// `MPI_ROOT`: the root of a rooted collective on an intercommunicator.
const MPI_ROOT: c_int = -4;

/// Whether this task is the root of a rooted collective on `comm`, and
/// whether it takes no part (`MPI_PROC_NULL`, the rest of an
/// intercommunicator root's group).
/// Whether this task is the root of a rooted collective, and whether it
/// takes no part (`MPI_PROC_NULL` in an intercommunicator root's group).
pub(super) fn role(comm: Handle, me: u32, root: c_int) -> (bool, bool) {
    if crate::inter::is_inter(hv(comm)) {
        (root == MPI_ROOT, root == crate::consts::PROC_NULL)
    } else {
        (i64::from(me) == i64::from(root), false)
    }
}

fn my_rank(comm: Handle) -> Result<(u32, u32), MpiErr> {
    with(|e| {
        let c = e.comm(hv(comm))?;
        Ok((c.rank, c.size()))
    })
}

pub(super) fn reduction(dt: Handle, o: Handle) -> Result<Reduction, MpiErr> {
    let l = lay(dt)?;
    if let Some(op) = op(hv(o)) {
        let t = l.base.ok_or_else(|| {
            MpiErr::new(
                err::OP,
                "a predefined operation needs a datatype of one predefined type",
            )
        })?;
        return Ok(Reduction::Pre {
            op,
            num: t.num,
            size: t.size,
        });
    }
    let u = reg()
        .ops
        .get(&hv(o))
        .copied()
        .ok_or_else(|| MpiErr::new(err::OP, format!("invalid operation {:#x}", hv(o))))?;
    Ok(Reduction::User {
        op: u,
        dt: hv(dt),
        layout: l,
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
        let (me, _) = my_rank(comm)?;
        let (at_root, idle) = role(comm, me, root);
        if idle {
            return Ok(());
        }
        // An intercommunicator's root sends nothing: its buffer only
        // receives.
        let mut acc = if at_root && (in_place(sendbuf) || crate::inter::is_inter(hv(comm))) {
            // SAFETY: MPI's contract: the root's recvbuf holds `count` elements.
            unsafe { recv_area(recvbuf, count, dt) }?.bytes().to_vec()
        } else {
            // SAFETY: MPI's contract for sendbuf.
            unsafe { send_data(sendbuf, count, dt) }?.into_owned()
        };
        coll::reduce(hv(comm), &mut acc, &red, root)?;
        if at_root {
            // SAFETY: MPI's contract for the root's recvbuf.
            let mut r = unsafe { recv_area(recvbuf, count, dt) }?;
            r.bytes().copy_from_slice(&acc);
            r.finish();
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
        let red = reduction(dt, o)?;
        let s = if in_place(sendbuf) {
            None
        } else {
            // SAFETY: MPI's contract; copied as the buffers may alias.
            Some(unsafe { send_data(sendbuf, count, dt) }?.into_owned())
        };
        // SAFETY: MPI's contract for recvbuf.
        let mut acc = unsafe { recv_area(recvbuf, count, dt) }?;
        if let Some(s) = s {
            acc.bytes().copy_from_slice(&s);
        }
        coll::allreduce(hv(comm), acc.bytes(), &red)?;
        acc.finish();
        Ok(())
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
        let (at_root, idle) = role(comm, me, root);
        if idle {
            return Ok(());
        }
        let mine = if at_root && (in_place(sendbuf) || crate::inter::is_inter(hv(comm))) {
            None
        } else {
            // SAFETY: MPI's contract for sendbuf.
            Some(unsafe { send_data(sendbuf, sendcount, sendtype) }?)
        };
        if !at_root {
            let chunk = mine.as_ref().map_or(0, |m| m.len());
            return coll::gather(hv(comm), mine.as_deref(), &mut [], chunk, root);
        }
        let chunk = super::nbytes(recvcount, recvtype)?;
        // SAFETY: MPI's contract: `size * recvcount` elements at the root.
        let mut all = unsafe { recv_area(recvbuf, times(recvcount, size)?, recvtype) }?;
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
        let (me, size) = my_rank(comm)?;
        let (at_root, idle) = role(comm, me, root);
        if idle {
            return Ok(());
        }
        let (chunk, all) = if at_root {
            let chunk = super::nbytes(sendcount, sendtype)?;
            // SAFETY: MPI's contract: `size * sendcount` elements at the root.
            let all = unsafe { send_data(sendbuf, times(sendcount, size)?, sendtype) }?;
            (chunk, all)
        } else {
            (super::nbytes(recvcount, recvtype)?, Default::default())
        };
        let mut mine = if at_root && (in_place(recvbuf) || crate::inter::is_inter(hv(comm))) {
            None
        } else {
            // SAFETY: MPI's contract for recvbuf.
            Some(unsafe { recv_area(recvbuf, recvcount, recvtype) }?)
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
        let (_, size) = my_rank(comm)?;
        let chunk = super::nbytes(recvcount, recvtype)?;
        let mine = if in_place(sendbuf) {
            None
        } else {
            // SAFETY: MPI's contract for sendbuf; copied as it may alias.
            Some(unsafe { send_data(sendbuf, sendcount, sendtype) }?.into_owned())
        };
        // SAFETY: MPI's contract: `size * recvcount` elements.
        let mut all = unsafe { recv_area(recvbuf, times(recvcount, size)?, recvtype) }?;
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
        let (_, size) = my_rank(comm)?;
        let chunk = super::nbytes(recvcount, recvtype)?;
        let send = if in_place(sendbuf) {
            None
        } else {
            // SAFETY: MPI's contract: `size * sendcount` elements; copied
            // as it may alias.
            Some(unsafe { send_data(sendbuf, times(sendcount, size)?, sendtype) }?.into_owned())
        };
        // SAFETY: MPI's contract: `size * recvcount` elements.
        let mut all = unsafe { recv_area(recvbuf, times(recvcount, size)?, recvtype) }?;
        coll::alltoall(hv(comm), send.as_deref(), all.bytes(), chunk)?;
        all.finish();
        Ok(())
    })
}

/// `count * tasks` as a count.
pub(super) fn times(count: c_int, tasks: u32) -> Result<c_int, MpiErr> {
    count
        .checked_mul(tasks as c_int)
        .ok_or_else(|| MpiErr::new(err::COUNT, format!("count {count} too large")))
}

// The profiling interface (`PMPI_…`) of the functions above (build.rs).
include!(concat!(env!("OUT_DIR"), "/pmpi_coll.rs"));
