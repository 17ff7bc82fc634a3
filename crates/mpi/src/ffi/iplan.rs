//! The schedules of nonblocking collectives on intracommunicators: the
//! blocking forms' argument checks and buffers, read at the call into
//! buffers the schedule owns (the send data packed then, as MPI lets a
//! send buffer be read any time before completion), and a finish that
//! unpacks the results into the receive buffers when it completes.

use super::coll::{reduction, times};
use super::{blocks_w, hv, lay, nbytes, recv_area, recv_v, send_data, send_v, Area, Handle};
use crate::coll::Block;
use crate::consts::{err, IN_PLACE};
use crate::engine::MpiErr;
use crate::nbc::{algo, Finish, Sched};
use crate::runtime::with;
use std::ffi::{c_int, c_void};

/// A schedule and what its completion writes.
pub(super) type Plan = (Sched, Finish);

fn in_place(p: *const c_void) -> bool {
    p as usize == IN_PLACE
}

fn rank_size(comm: Handle) -> Result<(u32, u32), MpiErr> {
    with(|e| {
        let c = e.comm(hv(comm))?;
        Ok((c.rank, c.size()))
    })
}

fn root_of(root: c_int, n: u32) -> Result<u32, MpiErr> {
    u32::try_from(root).ok().filter(|&r| r < n).ok_or_else(|| {
        MpiErr::new(
            err::ROOT,
            format!("invalid root {root} (communicator of {n} tasks)"),
        )
    })
}

/// A receive buffer kept until the collective completes.
struct Out(Area<'static>);

// SAFETY: MPI's contract keeps the receive buffer valid and the
// program's hands off it until the request completes, whichever thread
// completes it.
unsafe impl Send for Out {}

impl Out {
    /// Copies `bufs[buf]` from `at` into the area and unpacks it.
    fn write(self, bufs: &[Vec<u8>], buf: usize, at: usize) {
        let mut a = self.0;
        let b = a.bytes();
        let n = b.len().min(bufs[buf].len().saturating_sub(at));
        b[..n].copy_from_slice(&bufs[buf][at..at + n]);
        a.finish();
    }
}

fn write_back(area: Area<'static>, buf: usize) -> Finish {
    let o = Out(area);
    Box::new(move |bufs| o.write(bufs, buf, 0))
}

fn nothing() -> Finish {
    Box::new(|_| {})
}

/// `dst[at..]` gets as much of `src` as fits in `len`.
fn place(dst: &mut [u8], (at, len): Block, src: &[u8]) {
    let n = len.min(src.len());
    dst[at..at + n].copy_from_slice(&src[..n]);
}

fn check_blocks(len: usize, blocks: &[Block]) -> Result<(), MpiErr> {
    if blocks
        .iter()
        .any(|&(o, l)| o.checked_add(l).is_none_or(|e| e > len))
    {
        return Err(MpiErr::new(err::BUFFER, "a block lies outside the buffer"));
    }
    Ok(())
}

fn equal_blocks(chunk: usize, n: u32) -> Vec<Block> {
    (0..n as usize).map(|p| (p * chunk, chunk)).collect()
}

pub(super) fn ibarrier(comm: Handle) -> Result<Plan, MpiErr> {
    let (rank, n) = rank_size(comm)?;
    let mut s = Sched::new(vec![Vec::new()], None);
    algo::barrier(&mut s, n, rank);
    Ok((s, nothing()))
}

/// # Safety
/// MPI's contract for the buffer until completion.
pub(super) unsafe fn ibcast(
    buf: *mut c_void,
    count: c_int,
    dt: Handle,
    root: c_int,
    comm: Handle,
) -> Result<Plan, MpiErr> {
    let (rank, n) = rank_size(comm)?;
    let root = root_of(root, n)?;
    // SAFETY: the caller's contract.
    let mut area = unsafe { recv_area(buf, count, dt) }?;
    let mut s = Sched::new(vec![area.bytes().to_vec()], None);
    algo::bcast(&mut s, n, rank, 0, root);
    let fin = if rank == root {
        nothing()
    } else {
        write_back(area, 0)
    };
    Ok((s, fin))
}

/// Our contribution: `sendbuf`, or `recvbuf` in place.
///
/// # Safety
/// MPI's contract for the buffers.
unsafe fn contribution(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    dt: Handle,
) -> Result<Vec<u8>, MpiErr> {
    if in_place(sendbuf) {
        // SAFETY: the caller's contract.
        Ok(unsafe { recv_area(recvbuf, count, dt) }?.bytes().to_vec())
    } else {
        // SAFETY: the caller's contract.
        Ok(unsafe { send_data(sendbuf, count, dt) }?.into_owned())
    }
}

/// # Safety
/// MPI's contract for the buffers until completion.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn ireduce(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    dt: Handle,
    o: Handle,
    root: c_int,
    comm: Handle,
) -> Result<Plan, MpiErr> {
    let red = reduction(dt, o)?;
    let (rank, n) = rank_size(comm)?;
    let root = root_of(root, n)?;
    let commute = red.commute();
    let acc = if rank == root {
        // SAFETY: the caller's contract.
        unsafe { contribution(sendbuf, recvbuf, count, dt) }?
    } else {
        // SAFETY: the caller's contract.
        unsafe { send_data(sendbuf, count, dt) }?.into_owned()
    };
    let tmp = vec![0; acc.len()];
    let mut s = Sched::new(vec![acc, tmp], Some(red));
    algo::reduce(&mut s, n, rank, root, commute);
    let fin = if rank == root {
        // SAFETY: the caller's contract.
        write_back(unsafe { recv_area(recvbuf, count, dt) }?, 0)
    } else {
        nothing()
    };
    Ok((s, fin))
}

/// # Safety
/// MPI's contract for the buffers until completion.
pub(super) unsafe fn iallreduce(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    dt: Handle,
    o: Handle,
    comm: Handle,
) -> Result<Plan, MpiErr> {
    let red = reduction(dt, o)?;
    let (rank, n) = rank_size(comm)?;
    let commute = red.commute();
    // SAFETY: the caller's contract.
    let acc = unsafe { contribution(sendbuf, recvbuf, count, dt) }?;
    let tmp = vec![0; acc.len()];
    let mut s = Sched::new(vec![acc, tmp], Some(red));
    algo::allreduce(&mut s, n, rank, commute);
    // SAFETY: the caller's contract.
    let fin = write_back(unsafe { recv_area(recvbuf, count, dt) }?, 0);
    Ok((s, fin))
}

/// Gather into `area` (split into `blocks`) at the root; `mine` None in
/// place.
fn gather_plan(
    rank: u32,
    n: u32,
    root: u32,
    mine: Option<Vec<u8>>,
    area: Option<(Area<'static>, Vec<Block>)>,
) -> Result<Plan, MpiErr> {
    let Some((mut area, blocks)) = area else {
        let mut s = Sched::new(vec![mine.unwrap_or_default(), Vec::new()], None);
        algo::gatherv(&mut s, n, rank, 0, 1, &[], root);
        return Ok((s, nothing()));
    };
    let mut all = area.bytes().to_vec();
    check_blocks(all.len(), &blocks)?;
    if let Some(m) = &mine {
        place(&mut all, blocks[rank as usize], m);
    }
    let mut s = Sched::new(vec![Vec::new(), all], None);
    algo::gatherv(&mut s, n, rank, 0, 1, &blocks, root);
    Ok((s, write_back(area, 1)))
}

/// # Safety
/// MPI's contract for the buffers until completion.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn igather(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: Handle,
    root: c_int,
    comm: Handle,
) -> Result<Plan, MpiErr> {
    let (rank, n) = rank_size(comm)?;
    let root = root_of(root, n)?;
    let mine = if rank == root && in_place(sendbuf) {
        None
    } else {
        // SAFETY: the caller's contract.
        Some(unsafe { send_data(sendbuf, sendcount, sendtype) }?.into_owned())
    };
    let area = if rank == root {
        let chunk = nbytes(recvcount, recvtype)?;
        // SAFETY: the caller's contract: `n * recvcount` elements.
        let a = unsafe { recv_area(recvbuf, times(recvcount, n)?, recvtype) }?;
        Some((a, equal_blocks(chunk, n)))
    } else {
        None
    };
    gather_plan(rank, n, root, mine, area)
}

/// # Safety
/// MPI's contract for the buffers and arrays until completion.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn igatherv(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    displs: *const c_int,
    recvtype: Handle,
    root: c_int,
    comm: Handle,
) -> Result<Plan, MpiErr> {
    let (rank, n) = rank_size(comm)?;
    let root = root_of(root, n)?;
    let mine = if rank == root && in_place(sendbuf) {
        None
    } else {
        // SAFETY: the caller's contract.
        Some(unsafe { send_data(sendbuf, sendcount, sendtype) }?.into_owned())
    };
    let area = if rank == root {
        // SAFETY: the caller's contract: one int per task.
        Some(unsafe { recv_v(recvbuf, recvcounts, displs, n, recvtype) }?)
    } else {
        None
    };
    gather_plan(rank, n, root, mine, area)
}

/// Scatter of `all` (split into `blocks`) at the root into `out` (None:
/// in place at the root).
fn scatter_plan(
    rank: u32,
    n: u32,
    root: u32,
    all: Option<(Vec<u8>, Vec<Block>)>,
    out: Option<Area<'static>>,
) -> Result<Plan, MpiErr> {
    let mut out = out;
    let len = out.as_mut().map_or(0, |a| a.bytes().len());
    let mut mine = vec![0; len];
    let (all, blocks) = all.unwrap_or_default();
    if rank == root {
        check_blocks(all.len(), &blocks)?;
        let (at, l) = blocks[root as usize];
        place(&mut mine, (0, len), &all[at..at + l]);
    }
    let mut s = Sched::new(vec![all, mine], None);
    algo::scatterv(&mut s, n, rank, 0, &blocks, 1, root);
    let fin = match out {
        Some(a) => write_back(a, 1),
        None => nothing(),
    };
    Ok((s, fin))
}

/// # Safety
/// MPI's contract for the buffers until completion.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn iscatter(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: Handle,
    root: c_int,
    comm: Handle,
) -> Result<Plan, MpiErr> {
    let (rank, n) = rank_size(comm)?;
    let root = root_of(root, n)?;
    let all = if rank == root {
        let chunk = nbytes(sendcount, sendtype)?;
        // SAFETY: the caller's contract: `n * sendcount` elements.
        let a = unsafe { send_data(sendbuf, times(sendcount, n)?, sendtype) }?.into_owned();
        Some((a, equal_blocks(chunk, n)))
    } else {
        None
    };
    let out = if rank == root && in_place(recvbuf) {
        None
    } else {
        // SAFETY: the caller's contract.
        Some(unsafe { recv_area(recvbuf, recvcount, recvtype) }?)
    };
    scatter_plan(rank, n, root, all, out)
}

/// # Safety
/// MPI's contract for the buffers and arrays until completion.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn iscatterv(
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    displs: *const c_int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: Handle,
    root: c_int,
    comm: Handle,
) -> Result<Plan, MpiErr> {
    let (rank, n) = rank_size(comm)?;
    let root = root_of(root, n)?;
    let all = if rank == root {
        // SAFETY: the caller's contract: one int per task.
        let (a, b) = unsafe { send_v(sendbuf, sendcounts, displs, n, sendtype) }?;
        Some((a.into_owned(), b))
    } else {
        None
    };
    let out = if rank == root && in_place(recvbuf) {
        None
    } else {
        // SAFETY: the caller's contract.
        Some(unsafe { recv_area(recvbuf, recvcount, recvtype) }?)
    };
    scatter_plan(rank, n, root, all, out)
}

/// Allgather(v) into `area` split into `blocks`; `mine` None in place.
fn allgather_plan(
    rank: u32,
    n: u32,
    mine: Option<Vec<u8>>,
    mut area: Area<'static>,
    blocks: Vec<Block>,
) -> Result<Plan, MpiErr> {
    let mut all = area.bytes().to_vec();
    check_blocks(all.len(), &blocks)?;
    let (at, len) = blocks[rank as usize];
    let mine = match mine {
        Some(m) => {
            place(&mut all, (at, len), &m);
            m
        }
        None => all[at..at + len].to_vec(),
    };
    let packed = vec![0; blocks.iter().map(|b| b.1).sum()];
    let mut s = Sched::new(vec![mine, all, packed], None);
    algo::allgatherv(&mut s, n, rank, &blocks);
    Ok((s, write_back(area, 1)))
}

/// # Safety
/// MPI's contract for the buffers until completion.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn iallgather(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: Handle,
    comm: Handle,
) -> Result<Plan, MpiErr> {
    let (rank, n) = rank_size(comm)?;
    let chunk = nbytes(recvcount, recvtype)?;
    let mine = if in_place(sendbuf) {
        None
    } else {
        // SAFETY: the caller's contract.
        Some(unsafe { send_data(sendbuf, sendcount, sendtype) }?.into_owned())
    };
    // SAFETY: the caller's contract: `n * recvcount` elements.
    let area = unsafe { recv_area(recvbuf, times(recvcount, n)?, recvtype) }?;
    allgather_plan(rank, n, mine, area, equal_blocks(chunk, n))
}

/// # Safety
/// MPI's contract for the buffers and arrays until completion.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn iallgatherv(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    displs: *const c_int,
    recvtype: Handle,
    comm: Handle,
) -> Result<Plan, MpiErr> {
    let (rank, n) = rank_size(comm)?;
    let mine = if in_place(sendbuf) {
        None
    } else {
        // SAFETY: the caller's contract.
        Some(unsafe { send_data(sendbuf, sendcount, sendtype) }?.into_owned())
    };
    // SAFETY: the caller's contract: one int per task.
    let (area, blocks) = unsafe { recv_v(recvbuf, recvcounts, displs, n, recvtype) }?;
    allgather_plan(rank, n, mine, area, blocks)
}

/// All-to-all from `send` (None: in place, from a copy of the receive
/// buffer with its blocks) into `area`.
fn alltoall_plan(
    rank: u32,
    n: u32,
    send: Option<(Vec<u8>, Vec<Block>)>,
    mut area: Area<'static>,
    rblocks: Vec<Block>,
) -> Result<Plan, MpiErr> {
    let mut recv = area.bytes().to_vec();
    check_blocks(recv.len(), &rblocks)?;
    let (send, sblocks) = send.unwrap_or_else(|| (recv.clone(), rblocks.clone()));
    check_blocks(send.len(), &sblocks)?;
    let (so, sl) = sblocks[rank as usize];
    place(&mut recv, rblocks[rank as usize], &send[so..so + sl]);
    let mut s = Sched::new(vec![send, recv], None);
    algo::alltoallv(&mut s, n, rank, &sblocks, &rblocks);
    Ok((s, write_back(area, 1)))
}

/// # Safety
/// MPI's contract for the buffers until completion.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn ialltoall(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: Handle,
    comm: Handle,
) -> Result<Plan, MpiErr> {
    let (rank, n) = rank_size(comm)?;
    let chunk = nbytes(recvcount, recvtype)?;
    let send = if in_place(sendbuf) {
        None
    } else {
        let sc = nbytes(sendcount, sendtype)?;
        // SAFETY: the caller's contract: `n * sendcount` elements.
        let s = unsafe { send_data(sendbuf, times(sendcount, n)?, sendtype) }?.into_owned();
        Some((s, equal_blocks(sc, n)))
    };
    // SAFETY: the caller's contract: `n * recvcount` elements.
    let area = unsafe { recv_area(recvbuf, times(recvcount, n)?, recvtype) }?;
    alltoall_plan(rank, n, send, area, equal_blocks(chunk, n))
}

/// # Safety
/// MPI's contract for the buffers and arrays until completion.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn ialltoallv(
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    sdispls: *const c_int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    rdispls: *const c_int,
    recvtype: Handle,
    comm: Handle,
) -> Result<Plan, MpiErr> {
    let (rank, n) = rank_size(comm)?;
    let send = if in_place(sendbuf) {
        None
    } else {
        // SAFETY: the caller's contract: one int per task.
        let (s, b) = unsafe { send_v(sendbuf, sendcounts, sdispls, n, sendtype) }?;
        Some((s.into_owned(), b))
    };
    // SAFETY: the caller's contract: one int per task.
    let (area, rb) = unsafe { recv_v(recvbuf, recvcounts, rdispls, n, recvtype) }?;
    alltoall_plan(rank, n, send, area, rb)
}

/// # Safety
/// MPI's contract for the buffers and arrays (the datatype arrays only
/// during the call).
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn ialltoallw(
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    sdispls: *const c_int,
    sendtypes: *const Handle,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    rdispls: *const c_int,
    recvtypes: *const Handle,
    comm: Handle,
) -> Result<Plan, MpiErr> {
    let (rank, n) = rank_size(comm)?;
    let send = if in_place(sendbuf) {
        None
    } else {
        // SAFETY: the caller's contract; the send blocks are only read.
        let (mut s, b) =
            unsafe { blocks_w(sendbuf.cast_mut(), sendcounts, sdispls, sendtypes, n) }?;
        Some((s.bytes().to_vec(), b))
    };
    // SAFETY: the caller's contract.
    let (area, rb) = unsafe { blocks_w(recvbuf, recvcounts, rdispls, recvtypes, n) }?;
    alltoall_plan(rank, n, send, area, rb)
}

/// # Safety
/// MPI's contract for the buffers and the array until completion.
pub(super) unsafe fn ireduce_scatter(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    dt: Handle,
    o: Handle,
    comm: Handle,
) -> Result<Plan, MpiErr> {
    let (_, n) = rank_size(comm)?;
    if recvcounts.is_null() {
        return Err(MpiErr::new(err::ARG, "recvcounts is NULL"));
    }
    // SAFETY: MPI's contract: one int per task.
    let counts = unsafe { std::slice::from_raw_parts(recvcounts, n as usize) };
    // SAFETY: the caller's contract.
    unsafe { reduce_scatter(sendbuf, recvbuf, counts, dt, o, comm) }
}

/// # Safety
/// MPI's contract for the buffers until completion.
pub(super) unsafe fn ireduce_scatter_block(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcount: c_int,
    dt: Handle,
    o: Handle,
    comm: Handle,
) -> Result<Plan, MpiErr> {
    let (_, n) = rank_size(comm)?;
    let counts = vec![recvcount; n as usize];
    // SAFETY: the caller's contract.
    unsafe { reduce_scatter(sendbuf, recvbuf, &counts, dt, o, comm) }
}

/// Reduce-scatter with task p getting `counts[p]` elements.
///
/// # Safety
/// MPI's contract for the buffers until completion.
unsafe fn reduce_scatter(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    counts: &[c_int],
    dt: Handle,
    o: Handle,
    comm: Handle,
) -> Result<Plan, MpiErr> {
    let red = reduction(dt, o)?;
    let (rank, n) = rank_size(comm)?;
    if counts.len() != n as usize {
        return Err(MpiErr::new(err::ARG, "one count per task expected"));
    }
    let size = lay(dt)?.size;
    let mut blocks = Vec::with_capacity(counts.len());
    let mut total: c_int = 0;
    for &c in counts {
        if c < 0 {
            return Err(MpiErr::new(err::COUNT, format!("negative count {c}")));
        }
        blocks.push((total as usize * size, c as usize * size));
        total = total
            .checked_add(c)
            .ok_or_else(|| MpiErr::new(err::COUNT, "counts too large"))?;
    }
    let commute = red.commute();
    // SAFETY: the caller's contract (in place, recvbuf holds the whole
    // input).
    let acc = unsafe { contribution(sendbuf, recvbuf, total, dt) }?;
    let tmp = vec![0; acc.len()];
    let mine = vec![0; blocks[rank as usize].1];
    let mut s = Sched::new(vec![acc, tmp, mine], Some(red));
    algo::reduce_scatter(&mut s, n, rank, &blocks, commute);
    // SAFETY: the caller's contract.
    let area = unsafe { recv_area(recvbuf, counts[rank as usize], dt) }?;
    Ok((s, write_back(area, 2)))
}

/// # Safety
/// MPI's contract for the buffers until completion.
pub(super) unsafe fn iscan(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    dt: Handle,
    o: Handle,
    comm: Handle,
    exclusive: bool,
) -> Result<Plan, MpiErr> {
    let red = reduction(dt, o)?;
    let (rank, n) = rank_size(comm)?;
    // SAFETY: the caller's contract.
    let acc = unsafe { contribution(sendbuf, recvbuf, count, dt) }?;
    let len = acc.len();
    let mut s = Sched::new(vec![acc, vec![0; len], vec![0; len]], Some(red));
    algo::scan(&mut s, n, rank, exclusive);
    // Exscan leaves task 0's receive buffer as it was.
    let fin = if exclusive && rank == 0 {
        nothing()
    } else {
        // SAFETY: the caller's contract.
        write_back(unsafe { recv_area(recvbuf, count, dt) }?, 0)
    };
    Ok((s, fin))
}
