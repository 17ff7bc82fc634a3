//! The `v` collectives (per-task counts and displacements) and scans.

use super::{call, hv, recv_area, recv_v, send_data, send_v, Area, Handle};
use crate::coll;
use crate::consts::{err, IN_PLACE};
use crate::engine::MpiErr;
use crate::runtime::with;
use std::ffi::{c_int, c_void};

fn in_place(p: *const c_void) -> bool {
    p as usize == IN_PLACE
}

fn rank_size(comm: Handle) -> Result<(u32, u32), MpiErr> {
    with(|e| {
        let c = e.comm(hv(comm))?;
        Ok((c.rank, c.size()))
    })
}

/// `MPI_Gatherv`.
///
/// # Safety
/// MPI's contract for the buffers and arrays.
#[no_mangle]
pub unsafe extern "C" fn MPI_Gatherv(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    displs: *const c_int,
    recvtype: Handle,
    root: c_int,
    comm: Handle,
) -> c_int {
    call("MPI_Gatherv", hv(comm), || {
        let (me, n) = rank_size(comm)?;
        let (at_root, idle) = super::coll::role(comm, me, root);
        if idle {
            return Ok(());
        }
        // An intercommunicator's root (`MPI_ROOT`) sends nothing.
        let mine = if at_root && (in_place(sendbuf) || crate::inter::is_inter(hv(comm))) {
            None
        } else {
            // SAFETY: MPI's contract for sendbuf.
            Some(unsafe { send_data(sendbuf, sendcount, sendtype) }?)
        };
        if !at_root {
            return coll::gatherv(hv(comm), mine.as_deref(), &mut [], &[], root);
        }
        // SAFETY: MPI's contract: one int per task; recvbuf spans every block.
        let (mut all, b) = unsafe { recv_v(recvbuf, recvcounts, displs, n, recvtype) }?;
        coll::gatherv(hv(comm), mine.as_deref(), all.bytes(), &b, root)?;
        all.finish();
        Ok(())
    })
}

/// `MPI_Scatterv`.
///
/// # Safety
/// MPI's contract for the buffers and arrays.
#[no_mangle]
pub unsafe extern "C" fn MPI_Scatterv(
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    displs: *const c_int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: Handle,
    root: c_int,
    comm: Handle,
) -> c_int {
    call("MPI_Scatterv", hv(comm), || {
        let (me, n) = rank_size(comm)?;
        let (at_root, idle) = super::coll::role(comm, me, root);
        if idle {
            return Ok(());
        }
        // An intercommunicator's root (`MPI_ROOT`) receives nothing.
        let mut mine = if at_root && (in_place(recvbuf) || crate::inter::is_inter(hv(comm))) {
            None
        } else {
            // SAFETY: MPI's contract for recvbuf.
            Some(unsafe { recv_area(recvbuf, recvcount, recvtype) }?)
        };
        if at_root {
            // SAFETY: MPI's contract: one int per task; sendbuf spans every block.
            let (all, b) = unsafe { send_v(sendbuf, sendcounts, displs, n, sendtype) }?;
            coll::scatterv(hv(comm), &all, &b, mine.as_mut().map(Area::bytes), root)?;
        } else {
            coll::scatterv(hv(comm), &[], &[], mine.as_mut().map(Area::bytes), root)?;
        }
        if let Some(m) = mine {
            m.finish();
        }
        Ok(())
    })
}

/// `MPI_Allgatherv`.
///
/// # Safety
/// MPI's contract for the buffers and arrays.
#[no_mangle]
pub unsafe extern "C" fn MPI_Allgatherv(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    displs: *const c_int,
    recvtype: Handle,
    comm: Handle,
) -> c_int {
    call("MPI_Allgatherv", hv(comm), || {
        let (_, n) = rank_size(comm)?;
        let mine = if in_place(sendbuf) {
            None
        } else {
            // SAFETY: MPI's contract for sendbuf; copied as it may alias.
            Some(unsafe { send_data(sendbuf, sendcount, sendtype) }?.into_owned())
        };
        // SAFETY: MPI's contract: one int per task; recvbuf spans every block.
        let (mut all, b) = unsafe { recv_v(recvbuf, recvcounts, displs, n, recvtype) }?;
        coll::allgatherv(hv(comm), mine.as_deref(), all.bytes(), &b)?;
        all.finish();
        Ok(())
    })
}

/// `MPI_Alltoallv`.
///
/// # Safety
/// MPI's contract for the buffers and arrays.
#[no_mangle]
pub unsafe extern "C" fn MPI_Alltoallv(
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    sdispls: *const c_int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    rdispls: *const c_int,
    recvtype: Handle,
    comm: Handle,
) -> c_int {
    call("MPI_Alltoallv", hv(comm), || {
        let (_, n) = rank_size(comm)?;
        let send = if in_place(sendbuf) {
            None
        } else {
            // SAFETY: MPI's contract: one int per task, sendbuf spans every
            // block; copied as it may alias recvbuf.
            let (s, sb) = unsafe { send_v(sendbuf, sendcounts, sdispls, n, sendtype) }?;
            Some((s.into_owned(), sb))
        };
        // SAFETY: MPI's contract: one int per task; recvbuf spans every block.
        let (mut all, rb) = unsafe { recv_v(recvbuf, recvcounts, rdispls, n, recvtype) }?;
        coll::alltoallv(
            hv(comm),
            send.as_ref().map(|(s, b)| (&s[..], &b[..])),
            all.bytes(),
            &rb,
        )?;
        all.finish();
        Ok(())
    })
}

/// `MPI_Scan` or `MPI_Exscan`.
///
/// # Safety
/// MPI's contract for the buffers.
unsafe fn scan(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    dt: Handle,
    o: Handle,
    comm: Handle,
    exclusive: bool,
) -> c_int {
    let name = if exclusive { "MPI_Exscan" } else { "MPI_Scan" };
    call(name, hv(comm), || {
        let red = super::coll::reduction(dt, o)?;
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
        coll::scan(hv(comm), acc.bytes(), &red, exclusive)?;
        acc.finish();
        Ok(())
    })
}

/// `MPI_Scan`.
///
/// # Safety
/// MPI's contract for the buffers.
#[no_mangle]
pub unsafe extern "C" fn MPI_Scan(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    dt: Handle,
    o: Handle,
    comm: Handle,
) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { scan(sendbuf, recvbuf, count, dt, o, comm, false) }
}

/// `MPI_Exscan` (rank 0's receive buffer is left as it was).
///
/// # Safety
/// MPI's contract for the buffers.
#[no_mangle]
pub unsafe extern "C" fn MPI_Exscan(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    dt: Handle,
    o: Handle,
    comm: Handle,
) -> c_int {
    let keep = rank_size(comm).map(|(r, _)| r == 0).unwrap_or(false);
    if keep {
        // Rank 0 takes part (it starts the chain) without changing recvbuf.
        return call("MPI_Exscan", hv(comm), || {
            let red = super::coll::reduction(dt, o)?;
            let mut acc = if in_place(sendbuf) {
                // SAFETY: MPI's contract for recvbuf.
                unsafe { recv_area(recvbuf, count, dt) }?.bytes().to_vec()
            } else {
                // SAFETY: MPI's contract for sendbuf.
                unsafe { send_data(sendbuf, count, dt) }?.into_owned()
            };
            coll::scan(hv(comm), &mut acc, &red, true)
        });
    }
    // SAFETY: the caller's contract.
    unsafe { scan(sendbuf, recvbuf, count, dt, o, comm, true) }
}

/// `MPI_Reduce_scatter`: the reduction of every task's `sum(recvcounts)`
/// elements, task p getting `recvcounts[p]` of them (reduced at task 0,
/// then scattered).
///
/// # Safety
/// MPI's contract for the buffers and the array.
#[no_mangle]
pub unsafe extern "C" fn MPI_Reduce_scatter(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    dt: Handle,
    o: Handle,
    comm: Handle,
) -> c_int {
    call("MPI_Reduce_scatter", hv(comm), || {
        if crate::inter::is_inter(hv(comm)) {
            // SAFETY: the caller's contract.
            return unsafe { inter_reduce_scatter(sendbuf, recvbuf, recvcounts, dt, o, comm) };
        }
        // Built on an intracommunicator's reduce and scatter.
        let (me, n) = rank_size(comm)?;
        let red = super::coll::reduction(dt, o)?;
        if recvcounts.is_null() {
            return Err(MpiErr::new(err::ARG, "recvcounts is NULL"));
        }
        // SAFETY: MPI's contract: one int per task.
        let counts = unsafe { std::slice::from_raw_parts(recvcounts, n as usize) };
        let mut displs = Vec::with_capacity(counts.len());
        let mut total: c_int = 0;
        for &c in counts {
            if c < 0 {
                return Err(MpiErr::new(err::COUNT, format!("negative count {c}")));
            }
            displs.push(total);
            total = total
                .checked_add(c)
                .ok_or_else(|| MpiErr::new(err::COUNT, "counts too large"))?;
        }
        let sum = total;
        let mut acc = if in_place(sendbuf) {
            // SAFETY: MPI's contract: in place, recvbuf holds the whole input.
            unsafe { recv_area(recvbuf, sum, dt) }?.bytes().to_vec()
        } else {
            // SAFETY: MPI's contract for sendbuf.
            unsafe { send_data(sendbuf, sum, dt) }?.into_owned()
        };
        coll::reduce(hv(comm), &mut acc, &red, 0)?;
        let size = super::lay(dt)?.size;
        let b: Vec<coll::Block> = counts
            .iter()
            .zip(&displs)
            .map(|(&c, &d)| (d as usize * size, c.max(0) as usize * size))
            .collect();
        // SAFETY: MPI's contract for recvbuf.
        let mut out = unsafe { recv_area(recvbuf, counts[me as usize], dt) }?;
        coll::scatterv(hv(comm), &acc, &b, Some(out.bytes()), 0)?;
        out.finish();
        Ok(())
    })
}

/// `MPI_Reduce_scatter` on an intercommunicator: each group's tasks get,
/// cut by their `recvcounts` (one per task of their group), the
/// reduction of the other group's vectors (as long as the sum of the
/// counts, in both groups).
///
/// # Safety
/// MPI's contract for the buffers and the array.
unsafe fn inter_reduce_scatter(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    dt: Handle,
    o: Handle,
    comm: Handle,
) -> Result<(), MpiErr> {
    let n = crate::inter::size(hv(comm))? as usize;
    let me = with(|e| Ok(e.comm(hv(comm))?.rank as usize))?;
    let red = super::coll::reduction(dt, o)?;
    if recvcounts.is_null() {
        return Err(MpiErr::new(err::ARG, "recvcounts is NULL"));
    }
    if in_place(sendbuf) {
        return Err(MpiErr::new(
            err::ARG,
            "MPI_IN_PLACE is not allowed on an intercommunicator",
        ));
    }
    // SAFETY: MPI's contract: one int per task of the local group.
    let counts = unsafe { std::slice::from_raw_parts(recvcounts, n) };
    let mut total: c_int = 0;
    let mut mine = (0, 0);
    for (i, &c) in counts.iter().enumerate() {
        if c < 0 {
            return Err(MpiErr::new(err::COUNT, format!("negative count {c}")));
        }
        if i == me {
            mine = (total, c);
        }
        total = total
            .checked_add(c)
            .ok_or_else(|| MpiErr::new(err::COUNT, "counts too large"))?;
    }
    // SAFETY: MPI's contract for sendbuf.
    let mut acc = unsafe { send_data(sendbuf, total, dt) }?.into_owned();
    crate::inter::allreduce(hv(comm), &mut acc, &red)?;
    let size = super::lay(dt)?.size;
    let (at, len) = (mine.0 as usize * size, mine.1 as usize * size);
    // SAFETY: MPI's contract for recvbuf.
    let mut out = unsafe { recv_area(recvbuf, mine.1, dt) }?;
    let got = acc
        .get(at..at + len)
        .ok_or_else(|| MpiErr::new(err::INTERN, "reduction shorter than the counts"))?;
    out.bytes().copy_from_slice(got);
    out.finish();
    Ok(())
}

/// `MPI_Reduce_scatter_block`: `MPI_Reduce_scatter` with equal counts.
///
/// # Safety
/// MPI's contract for the buffers.
#[no_mangle]
pub unsafe extern "C" fn MPI_Reduce_scatter_block(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcount: c_int,
    dt: Handle,
    o: Handle,
    comm: Handle,
) -> c_int {
    // The local group's size (an intercommunicator's remote group is
    // what its `Comm` holds).
    let n = crate::inter::size(hv(comm)).map_or(0, |n| n as usize);
    let counts = vec![recvcount; n.max(1)];
    // SAFETY: `counts` holds one int per task; the rest is the caller's.
    unsafe { MPI_Reduce_scatter(sendbuf, recvbuf, counts.as_ptr(), dt, o, comm) }
}

/// `MPI_Alltoallw`: per task a count, a byte displacement and a
/// datatype, on both sides.
///
/// # Safety
/// MPI's contract for the buffers and arrays.
#[no_mangle]
pub unsafe extern "C" fn MPI_Alltoallw(
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    sdispls: *const c_int,
    sendtypes: *const Handle,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    rdispls: *const c_int,
    recvtypes: *const Handle,
    comm: Handle,
) -> c_int {
    call("MPI_Alltoallw", hv(comm), || {
        let (_, n) = rank_size(comm)?;
        let send = if in_place(sendbuf) {
            None
        } else {
            // SAFETY: MPI's contract; the send blocks are only read (and
            // copied, as they may alias the receive blocks).
            let (mut s, sb) =
                unsafe { super::blocks_w(sendbuf.cast_mut(), sendcounts, sdispls, sendtypes, n) }?;
            Some((s.bytes().to_vec(), sb))
        };
        // SAFETY: MPI's contract for recvbuf and the arrays.
        let (mut all, rb) = unsafe { super::blocks_w(recvbuf, recvcounts, rdispls, recvtypes, n) }?;
        coll::alltoallv(
            hv(comm),
            send.as_ref().map(|(s, b)| (&s[..], &b[..])),
            all.bytes(),
            &rb,
        )?;
        all.finish();
        Ok(())
    })
}

// The profiling interface (`PMPI_…`) of the functions above (build.rs).
include!(concat!(env!("OUT_DIR"), "/pmpi_collv.rs"));
