//! The `v` collectives (per-task counts and displacements) and scans.

use super::{call, dst, dtype, hv, nbytes, src, Handle};
use crate::coll::{self, Block};
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

/// The byte blocks of `n` tasks from `counts` and `displs` (in elements
/// of `dt`), and the bytes they span.
///
/// # Safety
/// `counts` and `displs` hold `n` readable ints each (MPI's contract).
unsafe fn blocks(
    counts: *const c_int,
    displs: *const c_int,
    n: u32,
    dt: Handle,
) -> Result<(Vec<Block>, usize), MpiErr> {
    let size = dtype(dt)?.size;
    if counts.is_null() || displs.is_null() {
        return Err(MpiErr::new(err::ARG, "counts or displacements are NULL"));
    }
    // SAFETY: the caller's contract: `n` ints each.
    let (cs, ds) = unsafe {
        (
            std::slice::from_raw_parts(counts, n as usize),
            std::slice::from_raw_parts(displs, n as usize),
        )
    };
    let mut out = Vec::with_capacity(n as usize);
    let mut end = 0usize;
    for (&c, &d) in cs.iter().zip(ds) {
        let (Ok(c), Ok(d)) = (usize::try_from(c), usize::try_from(d)) else {
            return Err(MpiErr::new(
                err::COUNT,
                format!("negative count {c} or displacement {d}"),
            ));
        };
        let (Some(off), Some(len)) = (d.checked_mul(size), c.checked_mul(size)) else {
            return Err(MpiErr::new(err::COUNT, "count or displacement too large"));
        };
        let e = off.checked_add(len).filter(|&e| e <= isize::MAX as usize);
        end = end.max(e.ok_or_else(|| MpiErr::new(err::COUNT, "count or displacement too large"))?);
        out.push((off, len));
    }
    Ok((out, end))
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
        let at_root = i64::from(me) == i64::from(root);
        let mine = if at_root && in_place(sendbuf) {
            None
        } else {
            // SAFETY: MPI's contract for sendbuf.
            Some(unsafe { src(sendbuf, nbytes(sendcount, sendtype)?) }?)
        };
        if !at_root {
            return coll::gatherv(hv(comm), mine, &mut [], &[], root);
        }
        // SAFETY: MPI's contract: the root's arrays hold one int per task.
        let (b, end) = unsafe { blocks(recvcounts, displs, n, recvtype) }?;
        // SAFETY: MPI's contract: recvbuf spans every block.
        let all = unsafe { dst(recvbuf, end) }?;
        coll::gatherv(hv(comm), mine, all, &b, root)
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
        let at_root = i64::from(me) == i64::from(root);
        let mine = if at_root && in_place(recvbuf) {
            None
        } else {
            // SAFETY: MPI's contract for recvbuf.
            Some(unsafe { dst(recvbuf, nbytes(recvcount, recvtype)?) }?)
        };
        if !at_root {
            return coll::scatterv(hv(comm), &[], &[], mine, root);
        }
        // SAFETY: MPI's contract: the root's arrays hold one int per task.
        let (b, end) = unsafe { blocks(sendcounts, displs, n, sendtype) }?;
        // SAFETY: MPI's contract: sendbuf spans every block.
        let all = unsafe { src(sendbuf, end) }?;
        coll::scatterv(hv(comm), all, &b, mine, root)
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
            Some(unsafe { src(sendbuf, nbytes(sendcount, sendtype)?) }?.to_vec())
        };
        // SAFETY: MPI's contract: one int per task.
        let (b, end) = unsafe { blocks(recvcounts, displs, n, recvtype) }?;
        // SAFETY: MPI's contract: recvbuf spans every block.
        let all = unsafe { dst(recvbuf, end) }?;
        coll::allgatherv(hv(comm), mine.as_deref(), all, &b)
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
        // SAFETY: MPI's contract: one int per task.
        let (rb, rend) = unsafe { blocks(recvcounts, rdispls, n, recvtype) }?;
        let send = if in_place(sendbuf) {
            None
        } else {
            // SAFETY: MPI's contract: one int per task.
            let (sb, send) = unsafe { blocks(sendcounts, sdispls, n, sendtype) }?;
            // SAFETY: MPI's contract: sendbuf spans every block; copied as
            // it may alias recvbuf.
            Some((unsafe { src(sendbuf, send) }?.to_vec(), sb))
        };
        // SAFETY: MPI's contract: recvbuf spans every block.
        let all = unsafe { dst(recvbuf, rend) }?;
        coll::alltoallv(
            hv(comm),
            send.as_ref().map(|(s, b)| (&s[..], &b[..])),
            all,
            &rb,
        )
    })
}

fn scan(
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
        let n = nbytes(count, dt)?;
        let red = super::coll::reduction(dt, o)?;
        if !in_place(sendbuf) {
            // SAFETY: MPI's contract; copied as the buffers may alias.
            let s = unsafe { src(sendbuf, n) }?.to_vec();
            // SAFETY: MPI's contract for recvbuf.
            unsafe { dst(recvbuf, n) }?.copy_from_slice(&s);
        }
        // SAFETY: MPI's contract for recvbuf.
        let acc = unsafe { dst(recvbuf, n) }?;
        coll::scan(hv(comm), acc, red, exclusive)
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
    scan(sendbuf, recvbuf, count, dt, o, comm, false)
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
            let n = nbytes(count, dt)?;
            let red = super::coll::reduction(dt, o)?;
            let mut acc = if in_place(sendbuf) {
                // SAFETY: MPI's contract for recvbuf.
                unsafe { dst(recvbuf, n) }?.to_vec()
            } else {
                // SAFETY: MPI's contract for sendbuf.
                unsafe { src(sendbuf, n) }?.to_vec()
            };
            coll::scan(hv(comm), &mut acc, red, true)
        });
    }
    scan(sendbuf, recvbuf, count, dt, o, comm, true)
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
            displs.push(total);
            total = total
                .checked_add(c.max(0))
                .ok_or_else(|| MpiErr::new(err::COUNT, "counts too large"))?;
        }
        // SAFETY: counts and displs hold one int per task.
        let (b, end) = unsafe { blocks(recvcounts, displs.as_ptr(), n, dt) }?;
        let mine_len = b[me as usize].1;
        let mut acc = if in_place(sendbuf) {
            // SAFETY: MPI's contract: in place, recvbuf holds the whole input.
            unsafe { dst(recvbuf, end) }?.to_vec()
        } else {
            // SAFETY: MPI's contract for sendbuf.
            unsafe { src(sendbuf, end) }?.to_vec()
        };
        coll::reduce(hv(comm), &mut acc, red, 0)?;
        // SAFETY: MPI's contract for recvbuf.
        let out = unsafe { dst(recvbuf, mine_len) }?;
        coll::scatterv(hv(comm), &acc, &b, Some(out), 0)
    })
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
    let n = rank_size(comm).map_or(0, |(_, n)| n as usize);
    let counts = vec![recvcount; n.max(1)];
    // SAFETY: `counts` holds one int per task; the rest is the caller's.
    unsafe { MPI_Reduce_scatter(sendbuf, recvbuf, counts.as_ptr(), dt, o, comm) }
}
