//! Collectives over point-to-point messages on a communicator's
//! collective context (so they never match user receives): dissemination
//! barrier, binomial-tree broadcast and reduce, allreduce by recursive
//! doubling (reduce+broadcast when the size is not a power of two),
//! linear gather and scatter, allgather by recursive doubling or a ring,
//! pairwise all-to-all; and the communicator constructors that need an
//! agreement (dup, split). Data a task keeps is received straight into
//! the caller's buffer; a reduction's operand into a reused buffer.
//!
//! Buffers are byte slices the caller made from the C arguments for the
//! duration of the call; counts are already in bytes (packed). Reductions
//! combine in rank order when the operation is not commutative.

use crate::buf::Lent;
use crate::consts::{err, h, UNDEFINED};
use crate::dtype::Layout;
use crate::engine::{Comm, Dest, Engine, MpiErr};
use crate::handles::UserOp;
use crate::runtime::{wait_until, with};
use crate::types::{reduce as apply, Num, Op};
use std::cell::Cell;
use std::sync::Arc;

mod ctx;
mod scratch;
use ctx::agree_ctx;
use scratch::Scratch;

const TAG_BARRIER: i32 = 1;
const TAG_BCAST: i32 = 2;
const TAG_REDUCE: i32 = 3;
const TAG_GATHER: i32 = 4;
const TAG_SCATTER: i32 = 5;
const TAG_ALLTOALL: i32 = 6;

/// Largest exchange of recursive doubling sent to a partner on another
/// CPU rather than to one sharing ours (see `Coll::partner`).
const SMALL_EXCHANGE: usize = 8192;

/// A communicator as a collective sees it.
struct Coll {
    comm: usize,
    ctx: u32,
    group: Arc<Vec<u32>>,
    rank: u32,
    n: u32,
    /// Every task of the communicator on this node: looked up at the
    /// first use (`Coll::one_node`), not by every collective.
    one_node: Cell<Option<bool>>,
}

fn coll(comm: usize) -> Result<Coll, MpiErr> {
    crate::inter::no_collectives(comm)?;
    with(|e| {
        let c = e.comm(comm)?;
        Ok(Coll {
            comm,
            ctx: c.ctx + 1,
            group: c.group.clone(),
            rank: c.rank,
            n: c.size(),
            one_node: Cell::new(None),
        })
    })
}

impl Coll {
    /// Whether every task of the group is on this node (the same answer
    /// in every task: being on one node is mutual). Under the library's
    /// lock, so not from inside `with`.
    fn one_node(&self) -> Result<bool, MpiErr> {
        if let Some(b) = self.one_node.get() {
            return Ok(b);
        }
        let b = with(|e| {
            Ok(self.group.iter().all(|&w| {
                w == e.rank || e.task.transport_to(w) == Some(sss_mbcf::TransportKind::Shm)
            }))
        })?;
        self.one_node.set(Some(b));
        Ok(b)
    }

    /// Our partner in the step of recursive doubling that joins halves
    /// of `2 * mask` tasks, exchanging `len` bytes each way: any rank of
    /// the other half will do, as long as every task picks by the same
    /// rule (`len` is the same everywhere). `rank ^ mask` by default,
    /// which keeps the later steps of a job dealt round robin over two
    /// hosts on one node. A small exchange on one node goes to
    /// `rank ^ (2 * mask - 1)`, whose rank always differs in parity: with
    /// tasks bound to CPUs round robin it runs on the other CPU, where
    /// `rank ^ 2` put both partners of an oversubscribed node on one CPU
    /// and each way took a switch of tasks (4 tasks on 2 CPUs, 8 B
    /// allreduce: median 6.6 us against 7.4). Larger exchanges keep the
    /// partner on the same CPU, whose caches hold what it sends (64 KiB
    /// allgather: 23-26 us against 32-33 across CPUs).
    fn partner(&self, mask: u32, len: usize) -> Result<u32, MpiErr> {
        Ok(if len <= SMALL_EXCHANGE && self.one_node()? {
            self.rank ^ (2 * mask - 1)
        } else {
            self.rank ^ mask
        })
    }

    fn send(&self, to: u32, tag: i32, data: &[u8]) -> Result<usize, MpiErr> {
        let w = self.group[to as usize];
        with(|e| {
            let id = e.handle();
            e.send_ctx(self.comm, self.ctx, w, tag, data, false, id)?;
            e.stats.coll_msgs += 1;
            e.stats.coll_bytes += data.len() as u64;
            Ok(id)
        })
    }

    /// [`Coll::send`], without a request (None) when the message leaves
    /// at once (eager, a credit free).
    fn send_at_once(&self, to: u32, tag: i32, data: &[u8]) -> Result<Option<usize>, MpiErr> {
        let w = self.group[to as usize];
        with(|e| {
            let id = if e.send_now_ctx(self.ctx, w, tag, data)? {
                None
            } else {
                let id = e.handle();
                e.send_ctx(self.comm, self.ctx, w, tag, data, false, id)?;
                Some(id)
            };
            e.stats.coll_msgs += 1;
            e.stats.coll_bytes += data.len() as u64;
            Ok(id)
        })
    }

    /// [`Coll::send`] of data the caller leaves in place until the send
    /// completes: a large message to a task on this node is then read
    /// from it by the receiver instead of staged (`engine/peer_read.rs`).
    fn send_lent(&self, to: u32, tag: i32, data: &[u8]) -> Result<usize, MpiErr> {
        let w = self.group[to as usize];
        with(|e| {
            let id = e.handle();
            if !e.send_lent(self.comm, self.ctx, w, tag, data, id) {
                e.send_ctx(self.comm, self.ctx, w, tag, data, false, id)?;
            }
            e.stats.coll_msgs += 1;
            e.stats.coll_bytes += data.len() as u64;
            Ok(id)
        })
    }

    fn recv(&self, from: u32, tag: i32, cap: usize) -> Result<usize, MpiErr> {
        let w = self.group[from as usize];
        with(|e| {
            let id = e.handle();
            let dest = Dest::Own {
                cap,
                data: Vec::new(),
            };
            e.recv_ctx(
                self.comm,
                self.ctx,
                self.group.clone(),
                Some(w),
                Some(tag),
                dest,
                id,
            );
            Ok(id)
        })
    }

    /// Posts a receive from `from` straight into block `(off, len)` of
    /// `lent` (no copy of the library's own, no allocation).
    fn recv_into(
        &self,
        lent: &mut Lent<'_>,
        from: u32,
        tag: i32,
        (off, len): Block,
    ) -> Result<(), MpiErr> {
        let w = self.group[from as usize];
        let inside = lent.post(off, len, |u| {
            with(|e| {
                let id = e.handle();
                e.recv_ctx(
                    self.comm,
                    self.ctx,
                    self.group.clone(),
                    Some(w),
                    Some(tag),
                    Dest::User(u),
                    id,
                );
                Ok(id)
            })
        })?;
        if !inside {
            return Err(MpiErr::new(err::BUFFER, "a block lies outside the buffer"));
        }
        Ok(())
    }

    /// Waits for `ids`; the data each received (empty for sends), taken
    /// in the look that finds them all done.
    fn wait(&self, ids: &[usize], partner: Option<u32>) -> Result<Vec<Vec<u8>>, MpiErr> {
        let partner = partner.map(|p| self.group[p as usize]);
        let mut out = Vec::with_capacity(ids.len());
        let mut first_err = None;
        wait_until(partner, |e| {
            if !ids.iter().all(|id| e.reqs.get(id).is_none_or(|r| r.done)) {
                return Ok(false);
            }
            for &id in ids {
                let data = e.take_data(id);
                let st = e.take(id).unwrap_or_default();
                if st.error != 0 && first_err.is_none() {
                    first_err = Some(st.error);
                }
                out.push(data);
            }
            Ok(true)
        })?;
        match first_err {
            Some(c) => Err(MpiErr::new(c, "a message of the collective failed")),
            None => Ok(out),
        }
    }

    /// Receives from `from` straight into `buf` (a shorter message
    /// leaves the rest as it was) and waits.
    fn recv_in(&self, from: u32, tag: i32, buf: &mut [u8]) -> Result<(), MpiErr> {
        let n = buf.len();
        let mut lent = Lent::new(buf, settle);
        self.recv_into(&mut lent, from, tag, (0, n))?;
        lent.settled(|ids| self.wait(ids, Some(from))).map(|_| ())
    }

    /// `to` gets `data` while we receive from `from` straight into `buf`;
    /// both waited for. The send copies or stages `data` before it
    /// returns (it is not lent), so `data` may be changed afterwards.
    fn exchange_in(
        &self,
        to: u32,
        data: &[u8],
        from: u32,
        tag: i32,
        buf: &mut [u8],
    ) -> Result<(), MpiErr> {
        let n = buf.len();
        let mut lent = Lent::new(buf, settle);
        self.recv_into(&mut lent, from, tag, (0, n))?;
        let s = self.send_at_once(to, tag, data)?;
        // One wait for both: it returns once both are done, failed or
        // not, so the loan ends after the receive either way.
        lent.settled(|ids| match s {
            None => self.wait(ids, Some(from)),
            Some(s) => self.wait(&[ids, &[s]].concat(), Some(from)),
        })
        .map(|_| ())
    }
}

/// What ends the receives of a collective's [`Lent`] buffer that an
/// error cut short: cancelled where still unmatched, waited for
/// otherwise, so that no later delivery writes into memory the caller
/// got back.
fn settle(ids: &[usize]) {
    let _ = with(|e| {
        for &id in ids {
            e.cancel_recv(id);
        }
        Ok(())
    });
    let _ = wait_until(None, |e| {
        Ok(ids.iter().all(|id| e.reqs.get(id).is_none_or(|r| r.done)))
    });
    let _ = with(|e| {
        for &id in ids {
            e.take(id);
        }
        Ok(())
    });
}

fn check_root(c: &Coll, root: i32) -> Result<u32, MpiErr> {
    u32::try_from(root)
        .ok()
        .filter(|&r| r < c.n)
        .ok_or_else(|| {
            MpiErr::new(
                err::ROOT,
                format!("invalid root {root} (communicator of {} tasks)", c.n),
            )
        })
}

/// Tags of general active target synchronization (`MPI_Win_post` and
/// `MPI_Win_complete`) on a window's own communicator, apart from the
/// collectives' tags.
pub(crate) const TAG_WIN_POST: i32 = 20;
pub(crate) const TAG_WIN_DONE: i32 = 21;

/// Sends an empty message with `tag` to each of `to` (ranks of `comm`,
/// on its collective context) and waits until they are sent.
pub(crate) fn notify_all(comm: usize, to: &[u32], tag: i32) -> Result<(), MpiErr> {
    let c = coll(comm)?;
    let ids = to
        .iter()
        .map(|&t| c.send(t, tag, &[]))
        .collect::<Result<Vec<_>, _>>()?;
    c.wait(&ids, None).map(|_| ())
}

/// Waits for an empty message with `tag` from each of `from`.
pub(crate) fn await_all(comm: usize, from: &[u32], tag: i32) -> Result<(), MpiErr> {
    let c = coll(comm)?;
    let ids = from
        .iter()
        .map(|&f| c.recv(f, tag, 0))
        .collect::<Result<Vec<_>, _>>()?;
    c.wait(&ids, from.first().copied()).map(|_| ())
}

/// `MPI_Barrier`.
pub(crate) fn barrier(comm: usize) -> Result<(), MpiErr> {
    if crate::inter::is_inter(comm) {
        return crate::inter::barrier(comm);
    }
    let c = coll(comm)?;
    let mut k = 1;
    while k < c.n {
        let to = (c.rank + k) % c.n;
        let from = (c.rank + c.n - k) % c.n;
        c.exchange_in(to, &[], from, TAG_BARRIER, &mut [])?;
        k *= 2;
    }
    Ok(())
}

/// `MPI_Bcast` of `buf` from `root`.
pub(crate) fn bcast(comm: usize, buf: &mut [u8], root: i32) -> Result<(), MpiErr> {
    if crate::inter::is_inter(comm) {
        return crate::inter::bcast(comm, buf, root);
    }
    let c = coll(comm)?;
    let root = check_root(&c, root)?;
    bcast_in(&c, buf, root)
}

fn bcast_in(c: &Coll, buf: &mut [u8], root: u32) -> Result<(), MpiErr> {
    let vr = (c.rank + c.n - root) % c.n;
    let real = |v: u32| (v + root) % c.n;
    let mut mask = 1;
    while mask < c.n {
        if vr & mask != 0 {
            c.recv_in(real(vr - mask), TAG_BCAST, buf)?;
            break;
        }
        mask <<= 1;
    }
    mask >>= 1;
    let mut sends = Vec::new();
    while mask > 0 {
        if vr + mask < c.n {
            sends.push(c.send(real(vr + mask), TAG_BCAST, buf)?);
        }
        mask >>= 1;
    }
    c.wait(&sends, None).map(|_| ())
}

/// An operation on a datatype, for reductions.
#[derive(Debug, Clone)]
pub(crate) enum Reduction {
    /// A predefined operation on elements of one predefined type.
    Pre { op: Op, num: Num, size: usize },
    /// A user function on elements of datatype `dt`.
    User {
        op: UserOp,
        dt: usize,
        layout: Arc<Layout>,
    },
}

impl Reduction {
    pub(crate) fn commute(&self) -> bool {
        match self {
            Reduction::Pre { .. } => true,
            Reduction::User { op, .. } => op.commute,
        }
    }

    /// `inout = inv (op) inout`, element-wise on packed bytes.
    pub(crate) fn apply(&self, inv: &[u8], inout: &mut [u8]) -> Result<(), MpiErr> {
        match self {
            Reduction::Pre { op, num, size } => {
                apply(*op, *num, *size, inv, inout).map_err(|class| {
                    MpiErr::new(class, format!("{op:?} is not defined on this datatype"))
                })
            }
            Reduction::User { op, dt, layout } => {
                crate::ffi::user_op(op.func, *dt, layout, inv, inout);
                Ok(())
            }
        }
    }
}

/// `MPI_Reduce`: `acc` holds our contribution and, at `root`, ends with
/// the result.
pub(crate) fn reduce(
    comm: usize,
    acc: &mut [u8],
    red: &Reduction,
    root: i32,
) -> Result<(), MpiErr> {
    if crate::inter::is_inter(comm) {
        return crate::inter::reduce(comm, acc, red, root);
    }
    let c = coll(comm)?;
    let root = check_root(&c, root)?;
    if red.commute() || root == 0 {
        return reduce_in(&c, acc, red, root);
    }
    // The tree keeps rank order only from task 0: reduce there, then move
    // the result to the root.
    reduce_in(&c, acc, red, 0)?;
    if c.rank == 0 {
        let id = c.send(root, TAG_REDUCE, acc)?;
        c.wait(&[id], None)?;
    } else if c.rank == root {
        c.recv_in(0, TAG_REDUCE, acc)?;
    }
    Ok(())
}

/// Binomial tree rooted at `root`: a task combines its own (lower
/// ranks) then what the subtree above it sent, in that order.
fn reduce_in(c: &Coll, acc: &mut [u8], red: &Reduction, root: u32) -> Result<(), MpiErr> {
    let vr = (c.rank + c.n - root) % c.n;
    let real = |v: u32| (v + root) % c.n;
    let mut mask = 1;
    // Taken at the first receive: a leaf of the tree only sends.
    let mut got: Option<Scratch> = None;
    while mask < c.n {
        if vr & mask == 0 {
            let src = vr | mask;
            if src < c.n {
                let got = got.get_or_insert_with(|| Scratch::take(acc.len()));
                c.recv_in(real(src), TAG_REDUCE, got)?;
                combine(red, acc, got, false)?;
            }
        } else {
            let id = c.send(real(vr & !mask), TAG_REDUCE, acc)?;
            c.wait(&[id], None)?;
            break;
        }
        mask <<= 1;
    }
    Ok(())
}

/// `acc = got (op) acc` when `got` came from lower ranks
/// (`got_first`), else `acc = acc (op) got` (`got` is overwritten).
fn combine(red: &Reduction, acc: &mut [u8], got: &mut [u8], got_first: bool) -> Result<(), MpiErr> {
    if got_first || red.commute() {
        red.apply(got, acc)
    } else {
        red.apply(acc, got)?;
        acc.copy_from_slice(got);
        Ok(())
    }
}

/// `MPI_Reduce_scatter` on an intracommunicator: every task's `acc`,
/// cut into `blocks` by rank (back to back), reduced; ours ends in
/// `out`. A commutative operation on a power-of-two group goes by
/// recursive halving: log2(n) exchanges, each of the half of what is
/// left that the partner keeps (the reduce and scatter it replaces took
/// twice as many steps, and the root sent n - 1 blocks at the end).
/// Otherwise reduced at task 0, then scattered.
pub(crate) fn reduce_scatter(
    comm: usize,
    acc: &mut [u8],
    red: &Reduction,
    blocks: &[Block],
    out: &mut [u8],
) -> Result<(), MpiErr> {
    let c = coll(comm)?;
    if !c.n.is_power_of_two() || !red.commute() || blocks.len() != c.n as usize {
        reduce_in(&c, acc, red, 0)?;
        return scatterv(comm, acc, blocks, Some(out), 0);
    }
    // Bytes of the blocks of ranks `lo..hi`.
    let span = |(lo, hi): (u32, u32)| {
        let (first, last) = (blocks[lo as usize], blocks[hi as usize - 1]);
        (first.0, last.0 + last.1)
    };
    if span((0, c.n)).1 > acc.len() {
        return Err(MpiErr::new(
            err::BUFFER,
            "reduction shorter than the counts",
        ));
    }
    let mut got = Scratch::take(acc.len());
    let (mut lo, mut hi) = (0, c.n);
    let mut mask = c.n / 2;
    while mask >= 1 {
        let mid = lo + mask;
        let (keep, give) = if c.rank < mid {
            ((lo, mid), (mid, hi))
        } else {
            ((mid, hi), (lo, mid))
        };
        let p = c.rank ^ mask;
        let ((ka, ke), (ga, ge)) = (span(keep), span(give));
        let got = &mut got[..ke - ka];
        c.exchange_in(p, &acc[ga..ge], p, TAG_REDUCE, got)?;
        red.apply(got, &mut acc[ka..ke])?;
        (lo, hi) = keep;
        mask /= 2;
    }
    let (at, len) = blocks[c.rank as usize];
    let n = len.min(out.len());
    out[..n].copy_from_slice(&acc[at..at + n]);
    Ok(())
}

/// `MPI_Allreduce`: `acc` holds our contribution and ends with the result.
pub(crate) fn allreduce(comm: usize, acc: &mut [u8], red: &Reduction) -> Result<(), MpiErr> {
    if crate::inter::is_inter(comm) {
        return crate::inter::allreduce(comm, acc, red);
    }
    let c = coll(comm)?;
    if !c.n.is_power_of_two() {
        reduce_in(&c, acc, red, 0)?;
        return bcast_in(&c, acc, 0);
    }
    // Recursive doubling: log2(n) exchanges of the whole vector instead
    // of a reduce and a broadcast one after the other. Both partners
    // combine the lower half's value with the upper's in that order, so
    // every task ends with the same bytes, in rank order for an
    // operation that does not commute.
    let mut got = Scratch::take(acc.len());
    let mut mask = 1;
    while mask < c.n {
        let p = c.partner(mask, acc.len())?;
        c.exchange_in(p, acc, p, TAG_REDUCE, &mut got)?;
        combine(red, acc, &mut got, p < c.rank)?;
        mask <<= 1;
    }
    Ok(())
}

/// `MPI_Gather` of `chunk` bytes per task into `all` at `root` (`mine`
/// `None`: in place, our part is already in `all`).
pub(crate) fn gather(
    comm: usize,
    mine: Option<&[u8]>,
    all: &mut [u8],
    chunk: usize,
    root: i32,
) -> Result<(), MpiErr> {
    if crate::inter::is_inter(comm) {
        return crate::inter::gather(comm, mine, all, chunk, root);
    }
    let c = coll(comm)?;
    let root = check_root(&c, root)?;
    gather_in(&c, mine, all, chunk, root)
}

fn gather_in(
    c: &Coll,
    mine: Option<&[u8]>,
    all: &mut [u8],
    chunk: usize,
    root: u32,
) -> Result<(), MpiErr> {
    if c.rank != root {
        // Only the root places blocks.
        return gatherv_in(c, mine, all, &[], root);
    }
    check_len(all, chunk, c.n)?;
    let blocks: Vec<Block> = (0..c.n as usize).map(|p| (p * chunk, chunk)).collect();
    gatherv_in(c, mine, all, &blocks, root)
}

fn check_len(buf: &[u8], chunk: usize, n: u32) -> Result<(), MpiErr> {
    if chunk.checked_mul(n as usize).is_none_or(|t| t > buf.len()) {
        return Err(MpiErr::new(
            err::BUFFER,
            "receive buffer smaller than count times tasks",
        ));
    }
    Ok(())
}

/// `MPI_Scatter` of `chunk` bytes per task from `all` at `root` into
/// `mine` (`None` at the root: in place).
pub(crate) fn scatter(
    comm: usize,
    all: &[u8],
    mine: Option<&mut [u8]>,
    chunk: usize,
    root: i32,
) -> Result<(), MpiErr> {
    if crate::inter::is_inter(comm) {
        return crate::inter::scatter(comm, all, mine, chunk, root);
    }
    let c = coll(comm)?;
    let root = check_root(&c, root)?;
    if c.rank != root {
        if let Some(m) = mine {
            let n = chunk.min(m.len());
            return c.recv_in(root, TAG_SCATTER, &mut m[..n]);
        }
        let id = c.recv(root, TAG_SCATTER, chunk)?;
        return c.wait(&[id], Some(root)).map(|_| ());
    }
    check_len(all, chunk, c.n)?;
    let mut ids = Vec::new();
    for p in (0..c.n).filter(|&p| p != root) {
        let p0 = p as usize * chunk;
        ids.push(c.send(p, TAG_SCATTER, &all[p0..p0 + chunk])?);
    }
    if let Some(m) = mine {
        let r0 = root as usize * chunk;
        let n = chunk.min(m.len());
        m[..n].copy_from_slice(&all[r0..r0 + n]);
    }
    c.wait(&ids, None).map(|_| ())
}

/// `MPI_Allgather` (`mine` `None`: in place).
pub(crate) fn allgather(
    comm: usize,
    mine: Option<&[u8]>,
    all: &mut [u8],
    chunk: usize,
) -> Result<(), MpiErr> {
    if crate::inter::is_inter(comm) {
        let mine = mine.ok_or_else(|| {
            MpiErr::new(
                err::BUFFER,
                "MPI_IN_PLACE is not valid on an intercommunicator",
            )
        })?;
        return crate::inter::allgather(comm, mine, all, chunk);
    }
    let c = coll(comm)?;
    check_len(all, chunk, c.n)?;
    // In place, our part is already in `all`.
    let r0 = c.rank as usize * chunk;
    if let Some(m) = mine {
        let n = chunk.min(m.len());
        all[r0..r0 + n].copy_from_slice(&m[..n]);
    }
    let n = c.n as usize;
    let block = |p: usize, count: usize| (p * chunk, count * chunk);
    if c.n.is_power_of_two() {
        // Recursive doubling: after the exchange with its partner in the
        // other half, a task holds the 2 * mask blocks of its aligned group.
        let mut mask = 1;
        while mask < n {
            let r = c.rank as usize;
            let p = c.partner(mask as u32, mask * chunk)? as usize;
            let (send, recv) = disjoint(
                all,
                block(r & !(mask - 1), mask),
                block(p & !(mask - 1), mask),
            )?;
            c.exchange_in(p as u32, send, p as u32, TAG_GATHER, recv)?;
            mask <<= 1;
        }
        return Ok(());
    }
    ring_allgather(&c, all, |p| block(p, 1))
}

/// Allgather around a ring, every task's block already in place in
/// `all`: in step k, block rank - k goes right and rank - k - 1 comes
/// from the left, received in place.
fn ring_allgather(c: &Coll, all: &mut [u8], block: impl Fn(usize) -> Block) -> Result<(), MpiErr> {
    let n = c.n as usize;
    let (right, left) = ((c.rank + 1) % c.n, (c.rank + c.n - 1) % c.n);
    for k in 0..n.saturating_sub(1) {
        let r = c.rank as usize;
        let (s, g) = ((r + n - k) % n, (r + 2 * n - k - 1) % n);
        let (send, recv) = disjoint(all, block(s), block(g))?;
        c.exchange_in(right, send, left, TAG_GATHER, recv)?;
    }
    Ok(())
}

/// Block `send` of `buf` to read and block `recv` to write; both inside
/// `buf`. Overlapping blocks (which MPI forbids of a receive buffer)
/// are refused.
fn disjoint(
    buf: &mut [u8],
    (so, sl): Block,
    (ro, rl): Block,
) -> Result<(&[u8], &mut [u8]), MpiErr> {
    let inside = |o: usize, l: usize| o.checked_add(l).is_some_and(|e| e <= buf.len());
    if !inside(so, sl) || !inside(ro, rl) {
        return Err(MpiErr::new(err::BUFFER, "a block lies outside the buffer"));
    }
    // An empty block may sit anywhere (a count of 0 at any displacement).
    if sl == 0 {
        return Ok((&[], &mut buf[ro..ro + rl]));
    }
    if rl == 0 {
        return Ok((&buf[so..so + sl], &mut []));
    }
    if so + sl <= ro {
        let (a, b) = buf.split_at_mut(ro);
        Ok((&a[so..so + sl], &mut b[..rl]))
    } else if ro + rl <= so {
        let (a, b) = buf.split_at_mut(so);
        Ok((&b[..sl], &mut a[ro..ro + rl]))
    } else {
        Err(MpiErr::new(
            err::BUFFER,
            "blocks of the receive buffer overlap",
        ))
    }
}

/// `MPI_Alltoall` of `chunk` bytes per pair (`send` `None`: in place).
pub(crate) fn alltoall(
    comm: usize,
    send: Option<&[u8]>,
    recv: &mut [u8],
    chunk: usize,
) -> Result<(), MpiErr> {
    if crate::inter::is_inter(comm) {
        let send = send.ok_or_else(|| {
            MpiErr::new(
                err::BUFFER,
                "MPI_IN_PLACE is not valid on an intercommunicator",
            )
        })?;
        return crate::inter::alltoall(comm, send, recv, chunk);
    }
    let c = coll(comm)?;
    check_len(recv, chunk, c.n)?;
    let copy;
    let send = match send {
        Some(s) => {
            check_len(s, chunk, c.n)?;
            s
        }
        None => {
            copy = recv.to_vec();
            &copy
        }
    };
    let blocks: Vec<Block> = (0..c.n as usize).map(|p| (p * chunk, chunk)).collect();
    exchange_all(&c, send, &blocks, recv, &blocks)
}

/// The pairwise exchange of all-to-all: `send[sblocks[p]]` to task p,
/// its message received straight into `recv[rblocks[p]]` (checked to
/// lie within `recv`); our own block copied. Large blocks to tasks on
/// this node are read by their receivers from `send` itself, so every
/// send started is waited for before returning, error or not.
fn exchange_all(
    c: &Coll,
    send: &[u8],
    sblocks: &[Block],
    recv: &mut [u8],
    rblocks: &[Block],
) -> Result<(), MpiErr> {
    let peers: Vec<u32> = (1..c.n).map(|k| (c.rank + k) % c.n).collect();
    let mut lent = Lent::new(recv, settle);
    for &p in &peers {
        c.recv_into(&mut lent, p, TAG_ALLTOALL, rblocks[p as usize])?;
    }
    let mut sends = Vec::new();
    let mut started = Ok(());
    for &p in &peers {
        let (o, l) = sblocks[p as usize];
        match c.send_lent(p, TAG_ALLTOALL, &send[o..o + l]) {
            Ok(id) => sends.push(id),
            Err(e) => {
                started = Err(e);
                break;
            }
        }
    }
    if started.is_ok() {
        let ((so, sl), (ro, rl)) = (sblocks[c.rank as usize], rblocks[c.rank as usize]);
        lent.copy_in(ro, &send[so..so + sl.min(rl)]);
    }
    let received = lent.settled(|ids| c.wait(ids, None));
    let sent = c.wait(&sends, None);
    started?;
    received?;
    sent.map(|_| ())
}

fn add_comm(e: &mut Engine, comm: Comm) -> usize {
    let id = e.handle();
    e.comms.insert(id, comm);
    id
}

/// `MPI_Comm_dup`: the new communicator's handle.
pub(crate) fn comm_dup(comm: usize) -> Result<usize, MpiErr> {
    let c = coll(comm)?;
    let ctx = agree_ctx(&c)?;
    with(|e| {
        let old = e.comm(comm)?.clone();
        Ok(add_comm(e, Comm { ctx, ..old }))
    })
}

/// `MPI_Comm_split`: the new communicator's handle, or `MPI_COMM_NULL`
/// for `MPI_UNDEFINED` colour.
pub(crate) fn comm_split(comm: usize, color: i32, key: i32) -> Result<usize, MpiErr> {
    let c = coll(comm)?;
    if color < 0 && color != UNDEFINED {
        return Err(MpiErr::new(err::ARG, format!("invalid colour {color}")));
    }
    let mut all = vec![0u8; 8 * c.n as usize];
    let mut mine = color.to_ne_bytes().to_vec();
    mine.extend_from_slice(&key.to_ne_bytes());
    gather_in(&c, Some(&mine), &mut all, 8, 0)?;
    bcast_in(&c, &mut all, 0)?;
    let ctx = agree_ctx(&c)?;
    if color == UNDEFINED {
        return Ok(h::COMM_NULL);
    }
    let int = |b: &[u8]| i32::from_ne_bytes([b[0], b[1], b[2], b[3]]);
    let mut members: Vec<(i32, u32)> = all
        .chunks_exact(8)
        .enumerate()
        .filter(|(_, b)| int(b) == color)
        .map(|(r, b)| (int(&b[4..]), r as u32))
        .collect();
    members.sort();
    let group: Vec<u32> = members.iter().map(|&(_, r)| c.group[r as usize]).collect();
    let rank = members.iter().position(|&(_, r)| r == c.rank).unwrap_or(0) as u32;
    with(|e| {
        let errh = e.comm(comm)?.errh;
        Ok(add_comm(
            e,
            Comm {
                ctx,
                group: Arc::new(group),
                rank,
                errh,
            },
        ))
    })
}

/// A block of a `v` collective: byte offset and length in a buffer.
pub(crate) type Block = (usize, usize);

/// `MPI_Gatherv`: `mine` to the root, which places task p's bytes at
/// `blocks[p]` of `all` (`mine` `None` at the root: in place).
pub(crate) fn gatherv(
    comm: usize,
    mine: Option<&[u8]>,
    all: &mut [u8],
    blocks: &[Block],
    root: i32,
) -> Result<(), MpiErr> {
    if crate::inter::is_inter(comm) {
        return crate::inter::gatherv(comm, mine, all, blocks, root);
    }
    let c = coll(comm)?;
    let root = check_root(&c, root)?;
    gatherv_in(&c, mine, all, blocks, root)
}

fn gatherv_in(
    c: &Coll,
    mine: Option<&[u8]>,
    all: &mut [u8],
    blocks: &[Block],
    root: u32,
) -> Result<(), MpiErr> {
    if c.rank != root {
        let id = c.send(root, TAG_GATHER, mine.unwrap_or(&[]))?;
        return c.wait(&[id], None).map(|_| ());
    }
    check_blocks(all, blocks, c.n)?;
    let mut lent = Lent::new(all, settle);
    for p in (0..c.n).filter(|&p| p != root) {
        c.recv_into(&mut lent, p, TAG_GATHER, blocks[p as usize])?;
    }
    if let Some(m) = mine {
        let (off, len) = blocks[c.rank as usize];
        lent.copy_in(off, &m[..len.min(m.len())]);
    }
    lent.settled(|ids| c.wait(ids, None)).map(|_| ())
}

fn check_blocks(buf: &[u8], blocks: &[Block], n: u32) -> Result<(), MpiErr> {
    if blocks.len() != n as usize
        || blocks
            .iter()
            .any(|&(o, l)| o.checked_add(l).is_none_or(|e| e > buf.len()))
    {
        return Err(MpiErr::new(err::BUFFER, "a block lies outside the buffer"));
    }
    Ok(())
}

/// `MPI_Scatterv`: the root sends `blocks[p]` of `all` to task p, which
/// receives it into `mine` (`None` at the root: in place).
pub(crate) fn scatterv(
    comm: usize,
    all: &[u8],
    blocks: &[Block],
    mine: Option<&mut [u8]>,
    root: i32,
) -> Result<(), MpiErr> {
    if crate::inter::is_inter(comm) {
        return crate::inter::scatterv(comm, all, blocks, mine, root);
    }
    let c = coll(comm)?;
    let root = check_root(&c, root)?;
    if c.rank != root {
        let cap = mine.as_ref().map_or(0, |m| m.len());
        let id = c.recv(root, TAG_SCATTER, cap)?;
        let d = c.wait(&[id], Some(root))?;
        if let Some(m) = mine {
            m[..d[0].len()].copy_from_slice(&d[0]);
        }
        return Ok(());
    }
    check_blocks(all, blocks, c.n)?;
    let mut ids = Vec::new();
    for p in (0..c.n).filter(|&p| p != root) {
        let (off, len) = blocks[p as usize];
        ids.push(c.send(p, TAG_SCATTER, &all[off..off + len])?);
    }
    if let Some(m) = mine {
        let (off, len) = blocks[root as usize];
        let n = len.min(m.len());
        m[..n].copy_from_slice(&all[off..off + n]);
    }
    c.wait(&ids, None).map(|_| ())
}

/// `MPI_Allgatherv` (`mine` `None`: in place): around a ring, each
/// block received in place, so bytes between the blocks stay as they
/// were.
pub(crate) fn allgatherv(
    comm: usize,
    mine: Option<&[u8]>,
    all: &mut [u8],
    blocks: &[Block],
) -> Result<(), MpiErr> {
    if crate::inter::is_inter(comm) {
        let mine =
            mine.ok_or_else(|| MpiErr::new(err::BUFFER, "MPI_IN_PLACE on an intercommunicator"))?;
        return crate::inter::allgatherv(comm, mine, all, blocks);
    }
    let c = coll(comm)?;
    check_blocks(all, blocks, c.n)?;
    // Every task has the same blocks, so every task refuses them alike
    // before sending anything (a refusal mid-ring would leave the others
    // waiting).
    let mut sorted: Vec<Block> = blocks.iter().copied().filter(|b| b.1 > 0).collect();
    sorted.sort_unstable();
    if sorted.windows(2).any(|w| w[0].0 + w[0].1 > w[1].0) {
        return Err(MpiErr::new(
            err::BUFFER,
            "blocks of the receive buffer overlap (displacements and counts)",
        ));
    }
    let (off, len) = blocks[c.rank as usize];
    if let Some(m) = mine {
        let n = len.min(m.len());
        all[off..off + n].copy_from_slice(&m[..n]);
    }
    ring_allgather(&c, all, |p| blocks[p])
}

/// `MPI_Alltoallv`: `send[sblocks[p]]` to task p, its bytes into
/// `recv[rblocks[p]]` (`send` `None`: in place, with `rblocks` for both).
pub(crate) fn alltoallv(
    comm: usize,
    send: Option<(&[u8], &[Block])>,
    recv: &mut [u8],
    rblocks: &[Block],
) -> Result<(), MpiErr> {
    if crate::inter::is_inter(comm) {
        let (send, sblocks) =
            send.ok_or_else(|| MpiErr::new(err::BUFFER, "MPI_IN_PLACE on an intercommunicator"))?;
        return crate::inter::alltoallv(comm, send, sblocks, recv, rblocks);
    }
    let c = coll(comm)?;
    check_blocks(recv, rblocks, c.n)?;
    let copy;
    let (send, sblocks) = match send {
        Some((s, b)) => {
            check_blocks(s, b, c.n)?;
            (s, b)
        }
        None => {
            copy = recv.to_vec();
            (&copy[..], rblocks)
        }
    };
    exchange_all(&c, send, sblocks, recv, rblocks)
}

/// `MPI_Scan` (`exclusive`: `MPI_Exscan`): `acc` holds our contribution
/// and ends with the reduction over ranks 0..=r (0..r); a chain, each
/// task passing its inclusive prefix on.
pub(crate) fn scan(
    comm: usize,
    acc: &mut [u8],
    red: &Reduction,
    exclusive: bool,
) -> Result<(), MpiErr> {
    let c = coll(comm)?;
    const TAG_SCAN: i32 = 7;
    let mine = acc.to_vec();
    if c.rank > 0 {
        let id = c.recv(c.rank - 1, TAG_SCAN, acc.len())?;
        let d = c.wait(&[id], Some(c.rank - 1))?;
        // Prefix first: inout = prefix (op) ours.
        let mut inc = mine.clone();
        red.apply(&d[0], &mut inc)?;
        if exclusive {
            acc.copy_from_slice(&d[0][..acc.len().min(d[0].len())]);
        } else {
            acc.copy_from_slice(&inc);
        }
        if c.rank + 1 < c.n {
            let id = c.send(c.rank + 1, TAG_SCAN, &inc)?;
            c.wait(&[id], None)?;
        }
    } else if c.n > 1 {
        let id = c.send(1, TAG_SCAN, &mine)?;
        c.wait(&[id], None)?;
    }
    Ok(())
}

/// The communicator rank of each member of `group` (world ranks) in
/// `c`; an error if one is not in `c`.
fn members_in(c: &Coll, group: &[u32]) -> Result<Vec<u32>, MpiErr> {
    group
        .iter()
        .map(|w| {
            c.group
                .iter()
                .position(|g| g == w)
                .map(|r| r as u32)
                .ok_or_else(|| {
                    MpiErr::new(err::GROUP, "the group is not a subset of the communicator")
                })
        })
        .collect()
}

fn new_comm(comm: usize, ctx: u32, group: &[u32], me: u32) -> Result<usize, MpiErr> {
    let Some(rank) = group.iter().position(|&w| w == me) else {
        return Ok(h::COMM_NULL);
    };
    with(|e| {
        let errh = e.comm(comm)?.errh;
        Ok(add_comm(
            e,
            Comm {
                ctx,
                group: Arc::new(group.to_vec()),
                rank: rank as u32,
                errh,
            },
        ))
    })
}

/// `MPI_Comm_create`: every task of `comm` calls it with the same
/// `group` (world ranks); members get the new communicator, the others
/// `MPI_COMM_NULL`.
pub(crate) fn comm_create(comm: usize, group: &[u32]) -> Result<usize, MpiErr> {
    let c = coll(comm)?;
    members_in(&c, group)?;
    let ctx = agree_ctx(&c)?;
    new_comm(comm, ctx, group, c.group[c.rank as usize])
}

/// `MPI_Comm_create_group`: only the members of `group` call it.
pub(crate) fn comm_create_group(comm: usize, group: &[u32]) -> Result<usize, MpiErr> {
    let c = coll(comm)?;
    members_in(&c, group)?;
    let me = c.group[c.rank as usize];
    let rank = group
        .iter()
        .position(|&w| w == me)
        .ok_or_else(|| MpiErr::new(err::GROUP, "the calling task is not a member of the group"))?;
    // The members agree among themselves, over the communicator's
    // collective context.
    let sub = Coll {
        comm,
        ctx: c.ctx,
        group: Arc::new(group.to_vec()),
        rank: rank as u32,
        n: group.len() as u32,
        one_node: Cell::new(None),
    };
    let ctx = agree_ctx(&sub)?;
    new_comm(comm, ctx, group, me)
}

#[cfg(test)]
mod tests {
    use super::Coll;
    use std::cell::Cell;
    use std::sync::Arc;

    fn at(rank: u32, n: u32, one_node: bool) -> Coll {
        Coll {
            comm: 0,
            ctx: 0,
            group: Arc::new((0..n).collect()),
            rank,
            n,
            one_node: Cell::new(Some(one_node)),
        }
    }

    /// Recursive doubling's partners pair every task with one of the other
    /// half of its group, both ways; on one node, for a small exchange,
    /// always of the other parity (another CPU under round-robin binding).
    #[test]
    fn partners_pair_the_halves_and_on_one_node_differ_in_parity() {
        for n in [2u32, 4, 8, 16] {
            for one_node in [false, true] {
                let mut mask = 1;
                while mask < n {
                    for r in 0..n {
                        let p = at(r, n, one_node).partner(mask, 8).unwrap();
                        assert!(p < n, "n {n} mask {mask}: {r} -> {p}");
                        assert_eq!(at(p, n, one_node).partner(mask, 8).unwrap(), r);
                        assert_eq!(at(r, n, one_node).partner(mask, 1 << 20).unwrap(), r ^ mask);
                        assert_eq!(r / (2 * mask), p / (2 * mask), "same group");
                        assert_ne!(r & mask, p & mask, "other half");
                        if one_node {
                            assert_ne!(r % 2, p % 2, "n {n} mask {mask}: {r} and {p}");
                        } else {
                            assert_eq!(p, r ^ mask);
                        }
                    }
                    mask <<= 1;
                }
            }
        }
    }
}
