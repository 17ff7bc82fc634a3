//! Collectives on an intercommunicator: each group works on its hidden
//! local communicator and the two leaders (local rank 0) exchange on
//! the intercommunicator's collective context.

use super::{inter, lead, share, xfer, Inter};
use crate::coll::{Block, Reduction};
use crate::consts::{err, PROC_NULL};
use crate::engine::Comm;
use crate::objects::MpiErr;
use crate::runtime::with;

/// `MPI_ROOT`.
const ROOT: i32 = -4;
const TAG_BARRIER: i32 = 31;
const TAG_BCAST: i32 = 32;
const TAG_ALLREDUCE: i32 = 33;
const TAG_REDUCE: i32 = 34;
const TAG_GATHER: i32 = 35;
const TAG_SCATTER: i32 = 36;
const TAG_ALLGATHER: i32 = 37;
const TAG_ALLTOALL: i32 = 38;
const TAG_GATHERV: i32 = 39;
const TAG_SCATTERV: i32 = 40;
const TAG_ALLGATHERV: i32 = 41;
const TAG_ALLTOALLV: i32 = 42;

fn parts(comm: usize) -> Result<(Comm, Inter), MpiErr> {
    let x = inter(comm)
        .ok_or_else(|| MpiErr::new(err::COMM, format!("{comm:#x} is not an intercommunicator")))?;
    let c = with(|e| Ok(e.comm(comm)?.clone()))?;
    Ok((c, x))
}

fn leader_failed() -> MpiErr {
    MpiErr::new(err::OTHER, "the local leader failed (see its error)")
}

/// The leaders swap `data` (not empty) and every local member gets the
/// remote leader's bytes (at most `cap`).
fn via_leaders(
    comm: usize,
    c: &Comm,
    x: &Inter,
    tag: i32,
    data: &[u8],
    cap: usize,
) -> Result<Vec<u8>, MpiErr> {
    let got = if c.rank == 0 {
        let w = c.group[0];
        let r = xfer(comm, c.ctx + 1, tag, Some((w, data)), Some((w, cap)));
        Some(lead(x.local_comm, 0, r, cap)?)
    } else {
        None
    };
    let got = share(x.local_comm, 0, got, cap)?;
    if got.is_empty() {
        return Err(leader_failed());
    }
    Ok(got)
}

/// The world rank of `root`, a rank of the remote group (the root's own
/// group passes `MPI_ROOT` or `MPI_PROC_NULL`).
fn remote_root(c: &Comm, r: i32) -> Result<u32, MpiErr> {
    usize::try_from(r)
        .ok()
        .and_then(|r| c.group.get(r).copied())
        .ok_or_else(|| {
            MpiErr::new(
                err::ROOT,
                format!(
                    "invalid root {r} (remote group of {} tasks; MPI_ROOT or MPI_PROC_NULL \
                     in the root's group)",
                    c.group.len()
                ),
            )
        })
}

/// Tasks in our own group.
fn local_size(x: &Inter) -> Result<usize, MpiErr> {
    with(|e| Ok(e.comm(x.local_comm)?.size() as usize))
}

/// The local leader's receive of `cap` bytes from `from`, then a local
/// scatter of `chunk` bytes each into `mine`; on a failed receive the
/// members still take part (with zeros) and the leader reports it.
fn receive_and_scatter(
    comm: usize,
    c: &Comm,
    x: &Inter,
    tag: i32,
    from: u32,
    chunk: usize,
    mine: &mut [u8],
) -> Result<(), MpiErr> {
    let n = local_size(x)?;
    let mut failed = None;
    let all = if c.rank == 0 {
        let cap = n * chunk;
        match xfer(comm, c.ctx + 1, tag, None, Some((from, cap))) {
            Ok(mut d) => {
                d.resize(cap, 0);
                d
            }
            Err(e) => {
                failed = Some(e);
                vec![0; cap]
            }
        }
    } else {
        Vec::new()
    };
    crate::coll::scatter(x.local_comm, &all, Some(mine), chunk, 0)?;
    failed.map_or(Ok(()), Err)
}

/// The local leader's gather of every member's `mine` (`chunk` bytes
/// each): the whole at the leader, empty elsewhere.
fn gather_at_leader(x: &Inter, c: &Comm, mine: &[u8]) -> Result<Vec<u8>, MpiErr> {
    let n = local_size(x)?;
    let mut all = if c.rank == 0 {
        vec![0; n * mine.len()]
    } else {
        Vec::new()
    };
    crate::coll::gather(x.local_comm, Some(mine), &mut all, mine.len(), 0)?;
    Ok(all)
}

/// `MPI_Reduce`: the root (`MPI_ROOT`) gets in `acc` the reduction of the
/// other group's contributions; that group passes the root's rank.
pub(crate) fn reduce(
    comm: usize,
    acc: &mut [u8],
    red: &Reduction,
    root: i32,
) -> Result<(), MpiErr> {
    let (c, x) = parts(comm)?;
    match root {
        PROC_NULL => Ok(()),
        ROOT => {
            let d = xfer(
                comm,
                c.ctx + 1,
                TAG_REDUCE,
                None,
                Some((c.group[0], acc.len())),
            )?;
            let n = d.len().min(acc.len());
            acc[..n].copy_from_slice(&d[..n]);
            Ok(())
        }
        r => {
            let w = remote_root(&c, r)?;
            let mut mine = acc.to_vec();
            crate::coll::reduce(x.local_comm, &mut mine, red, 0)?;
            if c.rank == 0 {
                xfer(comm, c.ctx + 1, TAG_REDUCE, Some((w, &mine)), None)?;
            }
            Ok(())
        }
    }
}

/// `MPI_Gather`: the root (`MPI_ROOT`) gets `chunk` bytes from each task
/// of the other group, in rank order; that group passes the root's rank.
pub(crate) fn gather(
    comm: usize,
    mine: Option<&[u8]>,
    all: &mut [u8],
    chunk: usize,
    root: i32,
) -> Result<(), MpiErr> {
    let (c, x) = parts(comm)?;
    match root {
        PROC_NULL => Ok(()),
        ROOT => {
            let cap = c.group.len() * chunk;
            if all.len() < cap {
                return Err(MpiErr::new(
                    err::BUFFER,
                    "receive buffer smaller than count times remote tasks",
                ));
            }
            let d = xfer(comm, c.ctx + 1, TAG_GATHER, None, Some((c.group[0], cap)))?;
            all[..d.len()].copy_from_slice(&d);
            Ok(())
        }
        r => {
            let w = remote_root(&c, r)?;
            let part = gather_at_leader(&x, &c, mine.unwrap_or(&[]))?;
            if c.rank == 0 {
                xfer(comm, c.ctx + 1, TAG_GATHER, Some((w, &part)), None)?;
            }
            Ok(())
        }
    }
}

/// `MPI_Scatter`: the root (`MPI_ROOT`) sends `chunk` bytes to each task
/// of the other group, in rank order; that group passes the root's rank.
pub(crate) fn scatter(
    comm: usize,
    all: &[u8],
    mine: Option<&mut [u8]>,
    chunk: usize,
    root: i32,
) -> Result<(), MpiErr> {
    let (c, x) = parts(comm)?;
    match root {
        PROC_NULL => Ok(()),
        ROOT => {
            let n = c.group.len() * chunk;
            let part = all.get(..n).ok_or_else(|| {
                MpiErr::new(
                    err::BUFFER,
                    "send buffer smaller than count times remote tasks",
                )
            })?;
            xfer(comm, c.ctx + 1, TAG_SCATTER, Some((c.group[0], part)), None).map(|_| ())
        }
        r => {
            let w = remote_root(&c, r)?;
            let mut none = Vec::new();
            let mine = mine.unwrap_or(&mut none);
            receive_and_scatter(comm, &c, &x, TAG_SCATTER, w, chunk, mine)
        }
    }
}

/// `MPI_Allgather`: each task gets, in `all`, `chunk` bytes from every
/// task of the other group, in rank order.
pub(crate) fn allgather(
    comm: usize,
    mine: &[u8],
    all: &mut [u8],
    chunk: usize,
) -> Result<(), MpiErr> {
    let (c, x) = parts(comm)?;
    let cap = c.group.len() * chunk;
    if all.len() < cap {
        return Err(MpiErr::new(
            err::BUFFER,
            "receive buffer smaller than count times remote tasks",
        ));
    }
    if cap == 0 && mine.is_empty() {
        return barrier(comm);
    }
    let part = gather_at_leader(&x, &c, mine)?;
    // An empty part would read as a failed leader: mark it.
    let mut msg = vec![1u8];
    msg.extend_from_slice(&part);
    let got = via_leaders(comm, &c, &x, TAG_ALLGATHER, &msg, cap + 1)?;
    let n = (got.len() - 1).min(cap);
    all[..n].copy_from_slice(&got[1..1 + n]);
    Ok(())
}

/// `MPI_Alltoall`: task i of one group sends block j of `send` (`send`
/// holds one block per task of the other group) to task j of the other,
/// and gets in `recv` block i of each of them (`chunk` bytes), in rank
/// order.
pub(crate) fn alltoall(
    comm: usize,
    send: &[u8],
    recv: &mut [u8],
    chunk: usize,
) -> Result<(), MpiErr> {
    let (c, x) = parts(comm)?;
    let remote = c.group.len();
    if recv.len() < remote * chunk {
        return Err(MpiErr::new(
            err::BUFFER,
            "receive buffer smaller than count times remote tasks",
        ));
    }
    let local = local_size(&x)?;
    // Every local task's whole send buffer at our leader; the leaders
    // swap them; ours hands each local task its blocks.
    let rows = gather_at_leader(&x, &c, send)?;
    let mut failed = None;
    let got = if c.rank == 0 {
        let w = c.group[0];
        match xfer(
            comm,
            c.ctx + 1,
            TAG_ALLTOALL,
            Some((w, &rows)),
            Some((w, remote * local * chunk)),
        ) {
            Ok(d) => d,
            Err(e) => {
                failed = Some(e);
                Vec::new()
            }
        }
    } else {
        Vec::new()
    };
    // `got` holds the remote tasks' send buffers, `local` blocks each:
    // local task i gets block i of every one of them.
    let mut out = vec![
        0u8;
        if c.rank == 0 {
            local * remote * chunk
        } else {
            0
        }
    ];
    if c.rank == 0 && got.len() == remote * local * chunk {
        for i in 0..local {
            for j in 0..remote {
                let from = (j * local + i) * chunk;
                let to = (i * remote + j) * chunk;
                out[to..to + chunk].copy_from_slice(&got[from..from + chunk]);
            }
        }
    }
    crate::coll::scatter(
        x.local_comm,
        &out,
        Some(&mut recv[..remote * chunk]),
        remote * chunk,
        0,
    )?;
    failed.map_or(Ok(()), Err)
}

/// `MPI_Barrier`: every member of both groups has entered when any
/// leaves.
pub(crate) fn barrier(comm: usize) -> Result<(), MpiErr> {
    let (c, x) = parts(comm)?;
    crate::coll::barrier(x.local_comm)?;
    via_leaders(comm, &c, &x, TAG_BARRIER, &[1], 1).map(|_| ())
}

/// `MPI_Bcast`: the root passes `MPI_ROOT`, the rest of its group
/// `MPI_PROC_NULL`, the other group the root's rank there.
pub(crate) fn bcast(comm: usize, buf: &mut [u8], root: i32) -> Result<(), MpiErr> {
    let (c, x) = parts(comm)?;
    match root {
        PROC_NULL => Ok(()),
        ROOT => {
            xfer(comm, c.ctx + 1, TAG_BCAST, Some((c.group[0], buf)), None)?;
            Ok(())
        }
        r => {
            let w = remote_root(&c, r)?;
            let mut failed = None;
            if c.rank == 0 {
                match xfer(comm, c.ctx + 1, TAG_BCAST, None, Some((w, buf.len()))) {
                    Ok(d) => {
                        let n = d.len().min(buf.len());
                        buf[..n].copy_from_slice(&d[..n]);
                    }
                    // The members still take part in the broadcast below.
                    Err(e) => failed = Some(e),
                }
            }
            crate::coll::bcast(x.local_comm, buf, 0)?;
            failed.map_or(Ok(()), Err)
        }
    }
}

/// `MPI_Allreduce`: each group gets the reduction of the other group's
/// contributions.
pub(crate) fn allreduce(comm: usize, acc: &mut [u8], red: &Reduction) -> Result<(), MpiErr> {
    let (c, x) = parts(comm)?;
    if acc.is_empty() {
        return barrier(comm);
    }
    let mut mine = acc.to_vec();
    crate::coll::reduce(x.local_comm, &mut mine, red, 0)?;
    let got = via_leaders(comm, &c, &x, TAG_ALLREDUCE, &mine, acc.len())?;
    let n = got.len().min(acc.len());
    acc[..n].copy_from_slice(&got[..n]);
    Ok(())
}

/// `blocks` has one block per task of the other group, each inside
/// `len` bytes.
fn check_remote_blocks(c: &Comm, blocks: &[Block], len: usize) -> Result<(), MpiErr> {
    if blocks.len() != c.group.len() {
        return Err(MpiErr::new(
            err::ARG,
            format!(
                "{} counts for a remote group of {} tasks",
                blocks.len(),
                c.group.len()
            ),
        ));
    }
    if blocks
        .iter()
        .any(|&(off, n)| off.checked_add(n).is_none_or(|end| end > len))
    {
        return Err(MpiErr::new(err::BUFFER, "a block lies outside the buffer"));
    }
    Ok(())
}

/// Copies received `d` into `block` of `buf`, as far as both go
/// (`check_remote_blocks` put the block inside `buf`).
fn place(buf: &mut [u8], (off, n): Block, d: &[u8]) {
    let k = d.len().min(n);
    buf[off..off + k].copy_from_slice(&d[..k]);
}

/// `MPI_Gatherv`: the root (`MPI_ROOT`) gets block i from task i of the
/// other group, straight from it; that group passes the root's rank.
pub(crate) fn gatherv(
    comm: usize,
    mine: Option<&[u8]>,
    all: &mut [u8],
    blocks: &[Block],
    root: i32,
) -> Result<(), MpiErr> {
    let (c, _) = parts(comm)?;
    match root {
        PROC_NULL => Ok(()),
        ROOT => {
            check_remote_blocks(&c, blocks, all.len())?;
            for (i, &b) in blocks.iter().enumerate() {
                let d = xfer(comm, c.ctx + 1, TAG_GATHERV, None, Some((c.group[i], b.1)))?;
                place(all, b, &d);
            }
            Ok(())
        }
        r => {
            let w = remote_root(&c, r)?;
            let mine = mine.unwrap_or(&[]);
            xfer(comm, c.ctx + 1, TAG_GATHERV, Some((w, mine)), None).map(|_| ())
        }
    }
}

/// `MPI_Scatterv`: the root (`MPI_ROOT`) sends block i to task i of the
/// other group; that group passes the root's rank.
pub(crate) fn scatterv(
    comm: usize,
    all: &[u8],
    blocks: &[Block],
    mine: Option<&mut [u8]>,
    root: i32,
) -> Result<(), MpiErr> {
    let (c, _) = parts(comm)?;
    match root {
        PROC_NULL => Ok(()),
        ROOT => {
            check_remote_blocks(&c, blocks, all.len())?;
            for (i, &(off, n)) in blocks.iter().enumerate() {
                let part = &all[off..off + n];
                xfer(
                    comm,
                    c.ctx + 1,
                    TAG_SCATTERV,
                    Some((c.group[i], part)),
                    None,
                )?;
            }
            Ok(())
        }
        r => {
            let w = remote_root(&c, r)?;
            let mut none = Vec::new();
            let mine = mine.unwrap_or(&mut none);
            let d = xfer(comm, c.ctx + 1, TAG_SCATTERV, None, Some((w, mine.len())))?;
            let len = mine.len();
            place(mine, (0, len), &d);
            Ok(())
        }
    }
}

/// One exchange with every task of the other group, in its rank order:
/// `send(j)` goes to task j, and what it sends back (at most `cap(j)`
/// bytes) to `got`. Task i of one group meets task j of the other at
/// step j of its loop and step i of the other's: each exchange waits
/// only for exchanges of smaller i + j, so the loops cannot deadlock.
fn pairwise<'a>(
    comm: usize,
    c: &Comm,
    tag: i32,
    send: impl Fn(usize) -> &'a [u8],
    cap: impl Fn(usize) -> usize,
    mut got: impl FnMut(usize, Vec<u8>),
) -> Result<(), MpiErr> {
    for j in 0..c.group.len() {
        let w = c.group[j];
        let d = xfer(comm, c.ctx + 1, tag, Some((w, send(j))), Some((w, cap(j))))?;
        got(j, d);
    }
    Ok(())
}

/// `MPI_Allgatherv`: each task gets block j of `all` from task j of the
/// other group, and sends `mine` to every one of them.
pub(crate) fn allgatherv(
    comm: usize,
    mine: &[u8],
    all: &mut [u8],
    blocks: &[Block],
) -> Result<(), MpiErr> {
    let (c, _) = parts(comm)?;
    check_remote_blocks(&c, blocks, all.len())?;
    pairwise(
        comm,
        &c,
        TAG_ALLGATHERV,
        |_| mine,
        |j| blocks[j].1,
        |j, d| place(all, blocks[j], &d),
    )
}

/// `MPI_Alltoallv` (and `Alltoallw`): send block j to task j of the other
/// group, receive block j from it.
pub(crate) fn alltoallv(
    comm: usize,
    send: &[u8],
    sblocks: &[Block],
    recv: &mut [u8],
    rblocks: &[Block],
) -> Result<(), MpiErr> {
    let (c, _) = parts(comm)?;
    check_remote_blocks(&c, sblocks, send.len())?;
    check_remote_blocks(&c, rblocks, recv.len())?;
    pairwise(
        comm,
        &c,
        TAG_ALLTOALLV,
        |j| &send[sblocks[j].0..sblocks[j].0 + sblocks[j].1],
        |j| rblocks[j].1,
        |j, d| place(recv, rblocks[j], &d),
    )
}
