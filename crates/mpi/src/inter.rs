//! Intercommunicators and `MPI_Comm_split_type`.
//!
//! An intercommunicator is a [`Comm`] whose group is the remote group
//! (so point-to-point ranks name remote tasks, as MPI wants) and whose
//! rank is ours in the local group; the local group and a hidden
//! intracommunicator over it (for agreeing with the local members) are
//! kept here beside it. The two groups agree on a context through their
//! leaders: the largest next context of every member of both groups.
//! The blocking collectives MPI defines on an intercommunicator are in
//! `inter/coll.rs` (the nonblocking ones are schedules, `crate::nbc`);
//! `Scan` and `Exscan` fail with `MPI_ERR_COMM`.

use crate::coll::Reduction;
use crate::consts::{err, UNDEFINED};
use crate::engine::{Comm, Dest};
use crate::objects::MpiErr;
use crate::runtime::{wait_until, with};
use crate::types::{Num, Op};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

mod coll;
pub(crate) use coll::{
    allgather, allgatherv, allreduce, alltoall, alltoallv, barrier, bcast, gather, gatherv, reduce,
    scatter, scatterv,
};

/// `MPI_COMM_TYPE_SHARED` and the hardware split types of the header.
const COMM_TYPE_SHARED: i32 = 221;
const COMM_TYPE_HW_UNGUIDED: i32 = 222;
const COMM_TYPE_HW_GUIDED: i32 = 223;
const COMM_TYPE_RESOURCE_GUIDED: i32 = 224;
/// Tag of the leaders' exchanges on an intercommunicator's collective
/// context.
const TAG_LEADERS: i32 = 30;

/// What an intercommunicator keeps beside its [`Comm`].
#[derive(Debug, Clone)]
struct Inter {
    local: Arc<Vec<u32>>,
    /// Hidden intracommunicator over the local group.
    local_comm: usize,
}

static INTERS: Mutex<Option<HashMap<usize, Inter>>> = Mutex::new(None);

/// Set once the first intercommunicator exists: until then every
/// collective learns that its communicator is not one without taking
/// [`INTERS`]' lock (two lookups a call showed in a small allreduce).
static ANY: AtomicBool = AtomicBool::new(false);

fn inters() -> MutexGuard<'static, Option<HashMap<usize, Inter>>> {
    INTERS.lock().unwrap_or_else(|e| e.into_inner())
}

fn insert(id: usize, x: Inter) {
    let mut m = inters();
    // Set under the lock, before the id is handed out.
    ANY.store(true, Ordering::Release);
    m.get_or_insert_with(HashMap::new).insert(id, x);
}

fn inter(comm: usize) -> Option<Inter> {
    inters().as_ref().and_then(|m| m.get(&comm).cloned())
}

/// Whether `comm` is an intercommunicator.
pub(crate) fn is_inter(comm: usize) -> bool {
    ANY.load(Ordering::Acquire) && inters().as_ref().is_some_and(|m| m.contains_key(&comm))
}

/// Fails for an intercommunicator: what collectives call first.
pub(crate) fn no_collectives(comm: usize) -> Result<(), MpiErr> {
    if is_inter(comm) {
        return Err(MpiErr::new(
            err::COMM,
            format!(
                "this collective operation is not defined on intercommunicator {comm:#x} \
                 (Barrier, Bcast, Reduce, Allreduce, Gather(v), Scatter(v), Allgather(v), \
                 Alltoall(v,w) and Reduce_scatter(_block) are; merge it with \
                 MPI_Intercomm_merge)"
            ),
        ));
    }
    Ok(())
}

/// `MPI_Comm_size`: the local group's size.
pub(crate) fn size(comm: usize) -> Result<u32, MpiErr> {
    let n = with(|e| Ok(e.comm(comm)?.size()))?;
    Ok(inter(comm).map_or(n, |i| i.local.len() as u32))
}

/// The local group of `comm` (world ranks).
pub(crate) fn local_group(comm: usize) -> Result<Arc<Vec<u32>>, MpiErr> {
    let g = with(|e| Ok(e.comm(comm)?.group.clone()))?;
    Ok(inter(comm).map_or(g, |i| i.local))
}

/// The remote group of intercommunicator `comm`.
pub(crate) fn remote_group(comm: usize) -> Result<Arc<Vec<u32>>, MpiErr> {
    let g = with(|e| Ok(e.comm(comm)?.group.clone()))?;
    if !is_inter(comm) {
        return Err(MpiErr::new(
            err::COMM,
            format!("{comm:#x} is not an intercommunicator"),
        ));
    }
    Ok(g)
}

/// `MPI_Comm_split_type`: `MPI_COMM_TYPE_SHARED` groups the members on
/// one node (the same node in the job's host list), ordered by `key`;
/// the hardware types name no finer resource here, so they give
/// `MPI_COMM_NULL`, as does `MPI_UNDEFINED`.
pub(crate) fn comm_split_type(comm: usize, split_type: i32, key: i32) -> Result<usize, MpiErr> {
    let color = match split_type {
        UNDEFINED | COMM_TYPE_HW_UNGUIDED | COMM_TYPE_HW_GUIDED | COMM_TYPE_RESOURCE_GUIDED => {
            UNDEFINED
        }
        COMM_TYPE_SHARED => with(|e| {
            e.comm(comm)?;
            let me = e.task.node().to_string();
            // The first task of the job on this node names it.
            let first = (0..e.size)
                .find(|&r| e.task.node_of(r) == Some(me.as_str()))
                .unwrap_or(e.rank);
            Ok(first as i32)
        })?,
        t => return Err(MpiErr::new(err::ARG, format!("invalid split_type {t}"))),
    };
    crate::coll::comm_split(comm, color, key)
}

/// The largest next context of the members of intracommunicator `comm`.
fn local_max_ctx(comm: usize) -> Result<u64, MpiErr> {
    let mut acc = u64::from(with(|e| Ok(e.next_ctx))?).to_ne_bytes();
    let red = Reduction::Pre {
        op: Op::Max,
        num: Num::U64,
        size: 8,
    };
    crate::coll::allreduce(comm, &mut acc, &red)?;
    Ok(u64::from_ne_bytes(acc))
}

/// Sends `data` to and receives at most `cap` bytes from world rank `w`
/// on context `ctx` of `comm`, with `tag`.
fn swap(
    comm: usize,
    ctx: u32,
    w: u32,
    tag: i32,
    data: &[u8],
    cap: usize,
) -> Result<Vec<u8>, MpiErr> {
    xfer(comm, ctx, tag, Some((w, data)), Some((w, cap)))
}

/// Sends `send` (world rank, bytes) and receives at most `cap` bytes
/// from `recv` (world rank, cap) on context `ctx` of `comm` with `tag`;
/// the bytes received.
fn xfer(
    comm: usize,
    ctx: u32,
    tag: i32,
    send: Option<(u32, &[u8])>,
    recv: Option<(u32, usize)>,
) -> Result<Vec<u8>, MpiErr> {
    let (r, s) = with(|e| {
        let r = recv.map(|(w, cap)| {
            let id = e.handle();
            let dest = Dest::Own {
                cap,
                data: Vec::new(),
            };
            e.recv_ctx(comm, ctx, Arc::new(vec![w]), Some(w), Some(tag), dest, id);
            id
        });
        let s = match send {
            Some((w, data)) => {
                let id = e.handle();
                e.send_ctx(comm, ctx, w, tag, data, false, id)?;
                Some(id)
            }
            None => None,
        };
        Ok((r, s))
    })?;
    let partner = recv.map(|x| x.0).or(send.map(|x| x.0));
    let ids: Vec<usize> = r.iter().chain(&s).copied().collect();
    wait_until(partner, |e| {
        Ok(ids.iter().all(|id| e.reqs.get(id).is_none_or(|q| q.done)))
    })?;
    with(|e| {
        let d = r.map(|r| e.take_data(r)).unwrap_or_default();
        let mut failed = 0;
        for id in &ids {
            failed = failed.max(e.take(*id).unwrap_or_default().error);
        }
        match failed {
            0 => Ok(d),
            c => Err(MpiErr::new(c, "a message between the groups failed")),
        }
    })
}

fn u64_at(b: &[u8], i: usize) -> Result<u64, MpiErr> {
    b.get(i..i + 8)
        .and_then(|s| s.try_into().ok())
        .map(u64::from_ne_bytes)
        .ok_or_else(|| MpiErr::new(err::INTERN, "short message between the leaders"))
}

/// Bytes of a group and a context, as the leaders exchange them.
fn encode(ctx: u64, extra: u64, group: &[u32]) -> Vec<u8> {
    let mut v = ctx.to_ne_bytes().to_vec();
    v.extend_from_slice(&extra.to_ne_bytes());
    for w in group {
        v.extend_from_slice(&w.to_ne_bytes());
    }
    v
}

fn decode(b: &[u8], size: u32) -> Result<(u64, u64, Vec<u32>), MpiErr> {
    if b.is_empty() {
        return Err(MpiErr::new(
            err::OTHER,
            "the local leader failed (see its error)",
        ));
    }
    let (ctx, extra) = (u64_at(b, 0)?, u64_at(b, 8)?);
    let group: Vec<u32> = b[16..]
        .chunks_exact(4)
        .map(|c| u32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    if group.is_empty() || group.iter().any(|&w| w >= size) {
        return Err(MpiErr::new(err::INTERN, "malformed group from the leaders"));
    }
    Ok((ctx, extra, group))
}

/// The leader's side of [`share`] after its exchange: on failure the
/// members learn it (an empty message) instead of waiting for ever.
fn lead(lc: usize, root: i32, r: Result<Vec<u8>, MpiErr>, cap: usize) -> Result<Vec<u8>, MpiErr> {
    match r {
        Ok(b) => Ok(b),
        Err(e) => {
            let _ = share(lc, root, Some(Vec::new()), cap);
            Err(e)
        }
    }
}

/// Every local member learns what the leader got: `b` from the local
/// leader (`root` of intracommunicator `lc`), of at most `cap` bytes.
fn share(lc: usize, root: i32, b: Option<Vec<u8>>, cap: usize) -> Result<Vec<u8>, MpiErr> {
    let mut len = (b.as_ref().map_or(0, Vec::len) as u64).to_ne_bytes();
    crate::coll::bcast(lc, &mut len, root)?;
    let n = usize::try_from(u64::from_ne_bytes(len))
        .ok()
        .filter(|&n| n <= cap)
        .ok_or_else(|| MpiErr::new(err::INTERN, "oversized group from the leaders"))?;
    let mut buf = b.unwrap_or_else(|| vec![0; n]);
    crate::coll::bcast(lc, &mut buf, root)?;
    Ok(buf)
}

/// Adds communicator `c` with context `ctx`, reserving it.
fn add(c: Comm) -> Result<usize, MpiErr> {
    with(|e| {
        e.next_ctx = e.next_ctx.max(c.ctx + 2);
        let id = e.handle();
        e.comms.insert(id, c);
        Ok(id)
    })
}

fn ctx_of(x: u64) -> Result<u32, MpiErr> {
    u32::try_from(x)
        .ok()
        .filter(|&c| c < u32::MAX - 4)
        .ok_or_else(|| MpiErr::new(err::INTERN, "out of communicator contexts"))
}

/// `MPI_Intercomm_create`.
pub(crate) fn create(
    local_comm: usize,
    local_leader: i32,
    peer_comm: usize,
    remote_leader: i32,
    tag: i32,
) -> Result<usize, MpiErr> {
    no_collectives(local_comm)?;
    let (me, local, errh, size) = with(|e| {
        let c = e.comm(local_comm)?;
        Ok((c.rank, c.group.clone(), c.errh, e.size))
    })?;
    let leader = u32::try_from(local_leader)
        .ok()
        .filter(|&l| (l as usize) < local.len())
        .ok_or_else(|| MpiErr::new(err::RANK, format!("invalid local_leader {local_leader}")))?;
    let lc = crate::coll::comm_dup(local_comm)?;
    let mine = local_max_ctx(lc)?;
    let cap = 16 + 4 * size as usize;
    let got = if me == leader {
        let mine_b = encode(mine, 0, &local);
        let r = with(|e| {
            let p = e.comm(peer_comm)?;
            let w = usize::try_from(remote_leader)
                .ok()
                .and_then(|r| p.group.get(r).copied())
                .ok_or_else(|| {
                    MpiErr::new(err::RANK, format!("invalid remote_leader {remote_leader}"))
                })?;
            if tag < 0 {
                return Err(MpiErr::new(err::TAG, format!("invalid tag {tag}")));
            }
            Ok((p.ctx, w))
        })
        .and_then(|(pctx, w)| swap(peer_comm, pctx, w, tag, &mine_b, cap));
        Some(lead(lc, local_leader, r, cap)?)
    } else {
        None
    };
    let got = share(lc, local_leader, got, cap)?;
    let (theirs, _, remote) = decode(&got, size)?;
    if remote.iter().any(|w| local.contains(w)) {
        return Err(MpiErr::new(
            err::GROUP,
            "the local and remote groups of an intercommunicator overlap",
        ));
    }
    let ctx = ctx_of(mine.max(theirs))?;
    let id = add(Comm {
        ctx,
        group: Arc::new(remote),
        rank: me,
        errh,
    })?;
    insert(
        id,
        Inter {
            local,
            local_comm: lc,
        },
    );
    Ok(id)
}

/// The leaders of intercommunicator `comm` swap `extra` and the largest
/// next context of their groups; every member gets the remote values.
/// Returns (remote extra, context both groups may use, remote group,
/// the intercommunicator's own Comm, what is kept beside it).
fn agree(comm: usize, extra: u64) -> Result<(u64, u32, Comm, Inter), MpiErr> {
    let x = inter(comm)
        .ok_or_else(|| MpiErr::new(err::COMM, format!("{comm:#x} is not an intercommunicator")))?;
    let (c, size) = with(|e| Ok((e.comm(comm)?.clone(), e.size)))?;
    let mine = local_max_ctx(x.local_comm)?;
    let cap = 16 + 4 * size as usize;
    let got = if c.rank == 0 {
        let w = c.group[0];
        let r = swap(
            comm,
            c.ctx + 1,
            w,
            TAG_LEADERS,
            &encode(mine, extra, &[0]),
            cap,
        );
        Some(lead(x.local_comm, 0, r, cap)?)
    } else {
        None
    };
    let got = share(x.local_comm, 0, got, cap)?;
    let (theirs, rextra, _) = decode(&got, size.max(1))?;
    Ok((rextra, ctx_of(mine.max(theirs))?, c, x))
}

/// `MPI_Comm_dup` of an intra- or intercommunicator.
pub(crate) fn comm_dup(comm: usize) -> Result<usize, MpiErr> {
    if !is_inter(comm) {
        return crate::coll::comm_dup(comm);
    }
    let (_, ctx, c, x) = agree(comm, 0)?;
    let lc = crate::coll::comm_dup(x.local_comm)?;
    let id = add(Comm { ctx, ..c })?;
    insert(
        id,
        Inter {
            local: x.local,
            local_comm: lc,
        },
    );
    Ok(id)
}

/// `MPI_Intercomm_merge`: the group that passed `high` false comes
/// first (on a tie, the group whose leader has the smaller world rank).
pub(crate) fn merge(comm: usize, high: bool) -> Result<usize, MpiErr> {
    let (rhigh, ctx, c, x) = agree(comm, u64::from(high))?;
    let remote = c.group.to_vec();
    let we_first = if high != (rhigh != 0) {
        !high
    } else {
        x.local[0] < remote[0]
    };
    let group: Vec<u32> = if we_first {
        x.local.iter().chain(&remote).copied().collect()
    } else {
        remote.iter().chain(x.local.iter()).copied().collect()
    };
    let me = x.local[c.rank as usize];
    let rank = group.iter().position(|&w| w == me).unwrap_or(0) as u32;
    add(Comm {
        ctx,
        group: Arc::new(group),
        rank,
        errh: c.errh,
    })
}

/// Forgets what is kept beside communicator `c`, being freed.
pub(crate) fn free(c: usize) -> Result<(), MpiErr> {
    let x = inters().as_mut().and_then(|m| m.remove(&c));
    if let Some(x) = x {
        with(|e| {
            e.comms.remove(&x.local_comm);
            Ok(())
        })?;
    }
    Ok(())
}
