//! The schedules of nonblocking collectives: the blocking forms'
//! argument checks (`collarg`) and buffers, read at the call into
//! buffers the schedule owns (the send data packed then, as MPI lets a
//! send buffer be read any time before completion), and a finish that
//! unpacks the results into the receive buffers when it completes. On an
//! intercommunicator the schedules are `algo`'s `inter_` ones: the root
//! passes `MPI_ROOT`, the rest of its group `MPI_PROC_NULL` (an empty
//! schedule), the other group the root's rank there; `MPI_IN_PLACE` is
//! refused.

use super::collarg::{
    check_blocks, contribution, equal_blocks, reduce_input, reduction, scatter_counts, times, Shape,
};
use super::{blocks_w, lay, nbytes, recv_area, recv_v, send_data, send_v, Area, Handle};
use crate::coll::{Block, Reduction};
use crate::engine::MpiErr;
use crate::nbc::algo::{self, Role};
use crate::nbc::{pool, Finish, Sched};
use std::borrow::Cow;
use std::ffi::{c_int, c_void};

/// A schedule and what its completion writes.
pub(super) type Plan = (Sched, Finish);

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
        pool::caller_copy(n);
        sss_mbcf::copy_bytes(&mut b[..n], &bufs[buf][at..at + n]);
        a.finish();
    }
}

/// A copy of the caller's `d` in a buffer of ours (counted).
fn copied_in(d: &[u8]) -> Vec<u8> {
    pool::caller_copy(d.len());
    pool::copied(d)
}

fn write_back(area: Area<'static>, buf: usize) -> Finish {
    write_from(area, buf, 0)
}

fn write_from(area: Area<'static>, buf: usize, at: usize) -> Finish {
    let o = Out(area);
    Box::new(move |bufs| o.write(bufs, buf, at))
}

/// Makes buffer `buf` of `s` the caller's receive area: its memory
/// itself when its type is contiguous (messages leave from and land in
/// it, no copy in, none out, bytes between blocks untouched), otherwise
/// a packed copy, written back at the end when `back`.
fn area_buffer(s: &mut Sched, buf: usize, area: Area<'static>, back: bool) -> Finish {
    match area {
        Area::Direct(mem) => {
            s.on_caller_memory(buf, mem);
            nothing()
        }
        mut packed => {
            s.bufs[buf] = copied_in(packed.bytes());
            if back {
                write_back(packed, buf)
            } else {
                nothing()
            }
        }
    }
}

fn nothing() -> Finish {
    Box::new(|_| {})
}

/// The plan of a task with no part (`MPI_PROC_NULL`): done at once.
fn idle() -> Plan {
    (Sched::new(Vec::new(), None), nothing())
}

/// `dst[at..]` gets as much of `src` as fits in `len`.
fn place(dst: &mut [u8], (at, len): Block, src: &[u8]) {
    let n = len.min(src.len());
    sss_mbcf::copy_bytes(&mut dst[at..at + n], &src[..n]);
}

/// `count` elements of `dt` at `p`, packed into a buffer of ours.
///
/// # Safety
/// MPI's contract for the buffer.
unsafe fn owned(p: *const c_void, count: c_int, dt: Handle) -> Result<Vec<u8>, MpiErr> {
    // SAFETY: the caller's contract.
    Ok(copied_in(&unsafe { send_data(p, count, dt) }?))
}

/// What we send, read where it is (copied only when its type is not
/// contiguous), for a plan that copies it before it returns; None for
/// `MPI_IN_PLACE` where `sh` allows it.
///
/// # Safety
/// MPI's contract for the buffer, valid for `'a`.
unsafe fn sent_bytes<'a>(
    sh: &Shape,
    sendbuf: *const c_void,
    count: c_int,
    dt: Handle,
) -> Result<Option<Cow<'a, [u8]>>, MpiErr> {
    if sh.in_place(sendbuf)? {
        return Ok(None);
    }
    // SAFETY: the caller's contract.
    unsafe { send_data(sendbuf, count, dt) }.map(Some)
}

pub(super) fn ibarrier(comm: Handle) -> Result<Plan, MpiErr> {
    let sh = Shape::of(comm)?;
    let mut s = Sched::new(vec![Vec::new()], None);
    match sh.inter() {
        Some(x) => algo::inter_barrier(&mut s, x),
        None => algo::barrier(&mut s, sh.local, sh.rank),
    }
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
    let Some((sh, role)) = Shape::rooted(comm, root)? else {
        return Ok(idle());
    };
    // SAFETY: the caller's contract.
    let area = unsafe { recv_area(buf, count, dt) }?;
    let mut s = Sched::new(vec![Vec::new()], None);
    let fin = area_buffer(&mut s, 0, area, role != Role::Root);
    match sh.inter() {
        Some(x) => algo::inter_bcast(&mut s, x, 0, role),
        None => algo::bcast(&mut s, sh.local, sh.rank, 0, sh.root_rank(role)),
    }
    Ok((s, fin))
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
    let Some((sh, role)) = Shape::rooted(comm, root)? else {
        return Ok(idle());
    };
    let commute = red.commute();
    // SAFETY: the caller's contract.
    let acc = unsafe { reduce_input(&sh, role, sendbuf, recvbuf, count, dt) }?;
    let tmp = pool::zeroed(acc.len());
    let mut s = Sched::new(vec![acc, tmp], Some(red));
    match sh.inter() {
        Some(x) => algo::inter_reduce(&mut s, x, role, commute),
        None => algo::reduce(&mut s, sh.local, sh.rank, sh.root_rank(role), commute),
    }
    let fin = if role == Role::Root {
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
    let sh = Shape::of(comm)?;
    // SAFETY: the caller's contract.
    let acc = unsafe { contribution(&sh, sendbuf, recvbuf, count, dt) }?;
    let (s, result) = allreduce_sched(&sh, acc, red);
    // SAFETY: the caller's contract.
    let area = unsafe { recv_area(recvbuf, count, dt) }?;
    Ok((s, write_back(area, result)))
}

/// An allreduce of `acc`, and the buffer its result ends in (on an
/// intercommunicator the other group's).
fn allreduce_sched(sh: &Shape, acc: Vec<u8>, red: Reduction) -> (Sched, usize) {
    let commute = red.commute();
    let len = acc.len();
    let mut s = Sched::new(vec![acc, pool::zeroed(len), pool::zeroed(len)], Some(red));
    match sh.inter() {
        Some(x) => {
            algo::inter_allreduce(&mut s, x, commute);
            (s, 2)
        }
        None => {
            algo::allreduce(&mut s, sh.local, sh.rank, commute);
            (s, 0)
        }
    }
}

/// Gather (`v`: gatherv) of `mine` (None: nothing of ours to send) into
/// `area`, split into `blocks`, at the root. On an intracommunicator
/// `mine` leaves from where it lies when it is the caller's.
fn gather_plan(
    sh: &Shape,
    role: Role,
    mine: Option<Cow<'static, [u8]>>,
    area: Option<(Area<'static>, Vec<Block>)>,
    v: bool,
) -> Result<Plan, MpiErr> {
    // Never read through one slice what another writes.
    let mine = match (&area, mine) {
        (Some((a, _)), Some(m)) => Some(a.apart(m)),
        (_, m) => m,
    };
    // Buffer 0 of `s`: what we send.
    let sending = |s: &mut Sched, m: Cow<'static, [u8]>| match (m, sh.inter()) {
        (Cow::Borrowed(b), None) => s.sends_caller_memory(0, b),
        (Cow::Borrowed(b), Some(_)) => s.bufs[0] = copied_in(b),
        (Cow::Owned(v), _) => s.bufs[0] = v,
    };
    let (all, blocks, fin) = match (area, sh.inter()) {
        // The root's receive buffer itself when its type is contiguous:
        // the blocks land in it, nothing is copied in or out.
        (Some((Area::Direct(mem), b)), None) => {
            check_blocks(mem.len(), &b)?;
            let mut s = Sched::new(vec![Vec::new(), Vec::new()], None);
            if let Some(m) = mine {
                if let Some(&at) = b.get(sh.rank as usize) {
                    place(mem, at, &m);
                }
                sending(&mut s, m);
            }
            s.on_caller_memory(1, mem);
            algo::gatherv(&mut s, sh.local, sh.rank, 0, 1, &b, sh.root_rank(role));
            return Ok((s, nothing()));
        }
        (Some((mut a, b)), _) => {
            let all = copied_in(a.bytes());
            check_blocks(all.len(), &b)?;
            (all, b, write_back(a, 1))
        }
        // An intercommunicator's leader gathers its group's blocks first.
        (None, Some(x)) if x.rank == 0 && !v => {
            let chunk = mine.as_ref().map_or(0, |m| m.len());
            let b = equal_blocks(chunk, sh.local);
            (pool::zeroed(chunk * sh.local as usize), b, nothing())
        }
        (None, _) => (Vec::new(), Vec::new(), nothing()),
    };
    let mut s = Sched::new(vec![Vec::new(), all], None);
    if let Some(m) = mine {
        if let Some(&b) = blocks.get(sh.rank as usize) {
            place(&mut s.bufs[1], b, &m);
        }
        sending(&mut s, m);
    }
    match sh.inter() {
        Some(x) if v => algo::inter_rooted_v(&mut s, x, role, &blocks, true),
        Some(x) => algo::inter_gather(&mut s, x, role, &blocks),
        None => algo::gatherv(&mut s, sh.local, sh.rank, 0, 1, &blocks, sh.root_rank(role)),
    }
    Ok((s, fin))
}

/// What a gather sends from `sendbuf`, where it lies when its type is
/// contiguous: None where `Shape::own_part` says nothing.
///
/// # Safety
/// MPI's contract for the buffer, unchanged until completion.
unsafe fn gathered(
    sh: &Shape,
    role: Role,
    sendbuf: *const c_void,
    count: c_int,
    dt: Handle,
) -> Result<Option<Cow<'static, [u8]>>, MpiErr> {
    if !sh.own_part(role, sendbuf)? {
        return Ok(None);
    }
    // SAFETY: the caller's contract.
    unsafe { send_data(sendbuf, count, dt) }.map(Some)
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
    let Some((sh, role)) = Shape::rooted(comm, root)? else {
        return Ok(idle());
    };
    // SAFETY: the caller's contract.
    let mine = unsafe { gathered(&sh, role, sendbuf, sendcount, sendtype) }?;
    let area = if role == Role::Root {
        let n = sh.peers();
        let chunk = nbytes(recvcount, recvtype)?;
        // SAFETY: the caller's contract: `n * recvcount` elements.
        let a = unsafe { recv_area(recvbuf, times(recvcount, n)?, recvtype) }?;
        Some((a, equal_blocks(chunk, n)))
    } else {
        None
    };
    gather_plan(&sh, role, mine, area, false)
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
    let Some((sh, role)) = Shape::rooted(comm, root)? else {
        return Ok(idle());
    };
    // SAFETY: the caller's contract.
    let mine = unsafe { gathered(&sh, role, sendbuf, sendcount, sendtype) }?;
    let area = if role == Role::Root {
        // SAFETY: the caller's contract: one int per task.
        Some(unsafe { recv_v(recvbuf, recvcounts, displs, sh.peers(), recvtype) }?)
    } else {
        None
    };
    gather_plan(&sh, role, mine, area, true)
}

/// Scatter (`v`: scatterv) of `all` (split into `blocks`) at the root
/// into `out` (None: nothing of ours to receive). The root sends from
/// `all` where it lies when it is the caller's (on an
/// intracommunicator), and a contiguous `out` receives in place.
fn scatter_plan(
    sh: &Shape,
    role: Role,
    all: Option<(Cow<'static, [u8]>, Vec<Block>)>,
    out: Option<Area<'static>>,
    v: bool,
) -> Result<Plan, MpiErr> {
    let (all, mut blocks) = all.unwrap_or_default();
    if role == Role::Root {
        check_blocks(all.len(), &blocks)?;
    }
    // Never read through one slice what another writes.
    let all = match &out {
        Some(o) => o.apart(all),
        None => all,
    };
    let intra = sh.inter().is_none();
    let own = |mem: &mut [u8]| {
        if role == Role::Root && intra {
            let (at, l) = blocks[sh.rank as usize];
            let len = mem.len();
            place(mem, (0, len), &all[at..at + l]);
        }
    };
    let (mine, direct, fin) = match (out, intra) {
        // Bytes past a short block stay as they were.
        (Some(Area::Direct(mem)), true) => {
            own(mem);
            (Vec::new(), Some(mem), nothing())
        }
        (Some(mut a), _) => {
            let mut mine = pool::zeroed(a.bytes().len());
            own(&mut mine);
            (mine, None, write_back(a, 1))
        }
        (None, _) => (Vec::new(), None, nothing()),
    };
    let mut s = match (all, sh.inter()) {
        (Cow::Borrowed(b), None) => {
            let mut s = Sched::new(vec![Vec::new(), mine], None);
            s.sends_caller_memory(0, b);
            s
        }
        // An intercommunicator's leader receives its group's blocks.
        (_, Some(x)) if role != Role::Root && !v => {
            blocks = equal_blocks(mine.len(), sh.local);
            let all = if x.rank == 0 {
                pool::zeroed(mine.len() * sh.local as usize)
            } else {
                Vec::new()
            };
            Sched::new(vec![all, mine], None)
        }
        (Cow::Borrowed(b), _) => Sched::new(vec![copied_in(b), mine], None),
        (Cow::Owned(a), _) => Sched::new(vec![a, mine], None),
    };
    if let Some(mem) = direct {
        s.on_caller_memory(1, mem);
    }
    match sh.inter() {
        Some(x) if v => algo::inter_rooted_v(&mut s, x, role, &blocks, false),
        Some(x) => algo::inter_scatter(&mut s, x, role, &blocks),
        None => algo::scatterv(&mut s, sh.local, sh.rank, 0, &blocks, 1, sh.root_rank(role)),
    }
    Ok((s, fin))
}

/// Where a scatter receives: None where `Shape::own_part` says nothing.
///
/// # Safety
/// MPI's contract for the buffer until completion.
unsafe fn scattered(
    sh: &Shape,
    role: Role,
    recvbuf: *mut c_void,
    count: c_int,
    dt: Handle,
) -> Result<Option<Area<'static>>, MpiErr> {
    if !sh.own_part(role, recvbuf)? {
        return Ok(None);
    }
    // SAFETY: the caller's contract.
    unsafe { recv_area(recvbuf, count, dt) }.map(Some)
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
    let Some((sh, role)) = Shape::rooted(comm, root)? else {
        return Ok(idle());
    };
    let all = if role == Role::Root {
        let n = sh.peers();
        let chunk = nbytes(sendcount, sendtype)?;
        // SAFETY: the caller's contract: `n * sendcount` elements, left
        // unchanged until completion.
        let a = unsafe { send_data(sendbuf, times(sendcount, n)?, sendtype) }?;
        Some((a, equal_blocks(chunk, n)))
    } else {
        None
    };
    // SAFETY: the caller's contract.
    let out = unsafe { scattered(&sh, role, recvbuf, recvcount, recvtype) }?;
    scatter_plan(&sh, role, all, out, false)
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
    let Some((sh, role)) = Shape::rooted(comm, root)? else {
        return Ok(idle());
    };
    let all = if role == Role::Root {
        // SAFETY: the caller's contract: one int per task.
        Some(unsafe { send_v(sendbuf, sendcounts, displs, sh.peers(), sendtype) }?)
    } else {
        None
    };
    // SAFETY: the caller's contract.
    let out = unsafe { scattered(&sh, role, recvbuf, recvcount, recvtype) }?;
    scatter_plan(&sh, role, all, out, true)
}

/// Allgather (`v`: allgatherv) into `area` split into `blocks`; `mine`
/// None in place.
fn allgather_plan(
    sh: &Shape,
    mine: Option<Cow<'_, [u8]>>,
    mut area: Area<'static>,
    blocks: Vec<Block>,
    v: bool,
) -> Result<Plan, MpiErr> {
    check_blocks(area.bytes().len(), &blocks)?;
    let Some(x) = sh.inter() else {
        let (at, len) = blocks[sh.rank as usize];
        let mine = mine.map(|m| area.apart(m));
        // The caller's buffer itself when its type is contiguous.
        let mut area = match area {
            Area::Direct(mem) => {
                if let Some(m) = mine {
                    place(mem, (at, len), &m);
                }
                let mut s = Sched::new(vec![Vec::new()], None);
                s.on_caller_memory(0, mem);
                algo::allgatherv(&mut s, sh.local, sh.rank, 0, &blocks);
                return Ok((s, nothing()));
            }
            packed => packed,
        };
        // Equal blocks back to back cover the area: each of its bytes is
        // ours or received, and nothing of the caller's is copied in
        // first; blocks of allgatherv may leave bytes between them.
        let mut all = if v {
            copied_in(area.bytes())
        } else {
            let mut all = pool::overwritten(area.bytes().len());
            if mine.is_none() {
                all[at..at + len].copy_from_slice(&area.bytes()[at..at + len]);
            }
            all
        };
        if let Some(m) = mine {
            place(&mut all, (at, len), &m);
        }
        let mut s = Sched::new(vec![all], None);
        algo::allgatherv(&mut s, sh.local, sh.rank, 0, &blocks);
        return Ok((s, write_back(area, 0)));
    };
    let all = copied_in(area.bytes());
    // An intercommunicator refused MPI_IN_PLACE.
    let mine = copied_in(&mine.unwrap_or_default());
    let chunk = mine.len();
    if v {
        let mut s = Sched::new(vec![mine, all], None);
        algo::inter_pairwise(&mut s, x, &vec![(0, chunk); blocks.len()], &blocks);
        return Ok((s, write_back(area, 1)));
    }
    let lblocks = equal_blocks(chunk, sh.local);
    let mut local = vec![
        0;
        if x.rank == 0 {
            chunk * sh.local as usize
        } else {
            0
        }
    ];
    if let Some(&b) = lblocks.first().filter(|_| x.rank == 0) {
        place(&mut local, b, &mine);
    }
    let mut s = Sched::new(vec![mine, local, all], None);
    algo::inter_allgather(&mut s, x, &lblocks);
    Ok((s, write_back(area, 2)))
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
    let sh = Shape::of(comm)?;
    let n = sh.peers();
    let chunk = nbytes(recvcount, recvtype)?;
    // SAFETY: the caller's contract.
    let mine = unsafe { sent_bytes(&sh, sendbuf, sendcount, sendtype) }?;
    // SAFETY: the caller's contract: `n * recvcount` elements.
    let area = unsafe { recv_area(recvbuf, times(recvcount, n)?, recvtype) }?;
    allgather_plan(&sh, mine, area, equal_blocks(chunk, n), false)
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
    let sh = Shape::of(comm)?;
    // SAFETY: the caller's contract.
    let mine = unsafe { sent_bytes(&sh, sendbuf, sendcount, sendtype) }?;
    // SAFETY: the caller's contract: one int per task.
    let (area, blocks) = unsafe { recv_v(recvbuf, recvcounts, displs, sh.peers(), recvtype) }?;
    allgather_plan(&sh, mine, area, blocks, true)
}

/// All-to-all from `send` (None: in place, from a copy of the receive
/// buffer with its blocks) into `area`.
fn alltoall_plan(
    sh: &Shape,
    send: Option<(Vec<u8>, Vec<Block>)>,
    mut area: Area<'static>,
    rblocks: Vec<Block>,
) -> Result<Plan, MpiErr> {
    check_blocks(area.bytes().len(), &rblocks)?;
    // In place: the blocks leave from a copy of the receive buffer.
    let (send, sblocks) = match send {
        Some(s) => s,
        None => (copied_in(area.bytes()), rblocks.clone()),
    };
    check_blocks(send.len(), &sblocks)?;
    let x = sh.inter();
    if x.is_none() {
        let (so, sl) = sblocks[sh.rank as usize];
        place(area.bytes(), rblocks[sh.rank as usize], &send[so..so + sl]);
    }
    let mut s = Sched::new(vec![send, Vec::new()], None);
    let fin = area_buffer(&mut s, 1, area, true);
    match x {
        Some(x) => algo::inter_pairwise(&mut s, x, &sblocks, &rblocks),
        None => algo::alltoallv(&mut s, sh.local, sh.rank, &sblocks, &rblocks),
    }
    Ok((s, fin))
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
    let sh = Shape::of(comm)?;
    let n = sh.peers();
    let chunk = nbytes(recvcount, recvtype)?;
    let send = if sh.in_place(sendbuf)? {
        None
    } else {
        let sc = nbytes(sendcount, sendtype)?;
        // SAFETY: the caller's contract: `n * sendcount` elements.
        let s = unsafe { owned(sendbuf, times(sendcount, n)?, sendtype) }?;
        Some((s, equal_blocks(sc, n)))
    };
    // SAFETY: the caller's contract: `n * recvcount` elements.
    let area = unsafe { recv_area(recvbuf, times(recvcount, n)?, recvtype) }?;
    alltoall_plan(&sh, send, area, equal_blocks(chunk, n))
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
    let sh = Shape::of(comm)?;
    let n = sh.peers();
    let send = if sh.in_place(sendbuf)? {
        None
    } else {
        // SAFETY: the caller's contract: one int per task.
        let (s, b) = unsafe { send_v(sendbuf, sendcounts, sdispls, n, sendtype) }?;
        Some((copied_in(&s), b))
    };
    // SAFETY: the caller's contract: one int per task.
    let (area, rb) = unsafe { recv_v(recvbuf, recvcounts, rdispls, n, recvtype) }?;
    alltoall_plan(&sh, send, area, rb)
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
    let sh = Shape::of(comm)?;
    let n = sh.peers();
    let send = if sh.in_place(sendbuf)? {
        None
    } else {
        // SAFETY: the caller's contract; the send blocks are only read.
        let (mut s, b) =
            unsafe { blocks_w(sendbuf.cast_mut(), sendcounts, sdispls, sendtypes, n) }?;
        Some((copied_in(s.bytes()), b))
    };
    // SAFETY: the caller's contract.
    let (area, rb) = unsafe { blocks_w(recvbuf, recvcounts, rdispls, recvtypes, n) }?;
    alltoall_plan(&sh, send, area, rb)
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
    let sh = Shape::of(comm)?;
    let size = lay(dt)?.size;
    // SAFETY: MPI's contract: one int per task of the local group.
    let (blocks, total) = unsafe { scatter_counts(recvcounts, sh.local, size) }?;
    // SAFETY: the caller's contract.
    unsafe { reduce_scatter(&sh, sendbuf, recvbuf, &blocks, total, dt, o) }
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
    let sh = Shape::of(comm)?;
    let size = lay(dt)?.size;
    let counts = vec![recvcount; sh.local as usize];
    // SAFETY: `counts` holds one int per task of the local group.
    let (blocks, total) = unsafe { scatter_counts(counts.as_ptr(), sh.local, size) }?;
    // SAFETY: the caller's contract.
    unsafe { reduce_scatter(&sh, sendbuf, recvbuf, &blocks, total, dt, o) }
}

/// Reduce-scatter of `total` elements, task p getting `blocks[p]` (bytes)
/// of the result: on an intracommunicator reduced at task 0 and
/// scattered, on an intercommunicator an allreduce across the groups,
/// each task keeping its part.
///
/// # Safety
/// MPI's contract for the buffers until completion.
#[allow(clippy::too_many_arguments)]
unsafe fn reduce_scatter(
    sh: &Shape,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    blocks: &[Block],
    total: c_int,
    dt: Handle,
    o: Handle,
) -> Result<Plan, MpiErr> {
    let red = reduction(dt, o)?;
    let (at, len) = blocks[sh.rank as usize];
    let count = (len / lay(dt)?.size.max(1)) as c_int;
    // SAFETY: the caller's contract (in place, recvbuf holds the whole
    // input).
    let acc = unsafe { contribution(sh, sendbuf, recvbuf, total, dt) }?;
    // SAFETY: the caller's contract.
    let area = unsafe { recv_area(recvbuf, count, dt) }?;
    if sh.inter().is_some() {
        let (s, result) = allreduce_sched(sh, acc, red);
        return Ok((s, write_from(area, result, at)));
    }
    let commute = red.commute();
    let tmp = pool::zeroed(acc.len());
    let mut s = Sched::new(vec![acc, tmp, pool::zeroed(len)], Some(red));
    algo::reduce_scatter(&mut s, sh.local, sh.rank, blocks, commute);
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
    crate::inter::no_collectives(super::hv(comm))?;
    let red = reduction(dt, o)?;
    let sh = Shape::of(comm)?;
    // SAFETY: the caller's contract.
    let acc = unsafe { contribution(&sh, sendbuf, recvbuf, count, dt) }?;
    let len = acc.len();
    let mut s = Sched::new(vec![acc, pool::zeroed(len), pool::zeroed(len)], Some(red));
    algo::scan(&mut s, sh.local, sh.rank, exclusive);
    // Exscan leaves task 0's receive buffer as it was.
    let fin = if exclusive && sh.rank == 0 {
        nothing()
    } else {
        // SAFETY: the caller's contract.
        write_back(unsafe { recv_area(recvbuf, count, dt) }?, 0)
    };
    Ok((s, fin))
}
