//! The rounds of each nonblocking collective: the algorithms of the
//! blocking ones (`crate::coll`), cut where those wait. `n` tasks, this
//! one `rank`; buffer indices into the schedule's buffers.

use super::{Act, Sched};
use crate::coll::Block;

/// Dissemination barrier.
pub(crate) fn barrier(s: &mut Sched, n: u32, rank: u32) {
    let mut k = 1;
    while k < n {
        s.add(vec![
            Act::msg(true, (rank + k) % n, 0, 0, 0),
            Act::msg(false, (rank + n - k) % n, 0, 0, 0),
        ]);
        k *= 2;
    }
}

/// Binomial broadcast of buffer `buf` from `root`.
pub(crate) fn bcast(s: &mut Sched, n: u32, rank: u32, buf: usize, root: u32) {
    let len = s.len(buf);
    let vr = (rank + n - root) % n;
    let real = |v: u32| (v + root) % n;
    let mut mask = 1;
    while mask < n {
        if vr & mask != 0 {
            s.add(vec![Act::msg(false, real(vr - mask), buf, 0, len)]);
            break;
        }
        mask <<= 1;
    }
    mask >>= 1;
    let mut sends = Vec::new();
    while mask > 0 {
        if vr + mask < n {
            sends.push(Act::msg(true, real(vr + mask), buf, 0, len));
        }
        mask >>= 1;
    }
    s.add(sends);
}

/// Binomial reduction of buffer `acc` to `root` (`tmp`: as long, for
/// what arrives); combines in rank order only from root 0 when the
/// operation does not commute.
fn reduce_tree(s: &mut Sched, n: u32, rank: u32, acc: usize, tmp: usize, root: u32, commute: bool) {
    let len = s.len(acc);
    let vr = (rank + n - root) % n;
    let real = |v: u32| (v + root) % n;
    let mut mask = 1;
    while mask < n {
        if vr & mask == 0 {
            let src = vr | mask;
            if src < n {
                let fold = if commute {
                    Act::Fold {
                        inv: tmp,
                        inout: acc,
                    }
                } else {
                    Act::FoldBack {
                        inv: tmp,
                        inout: acc,
                    }
                };
                s.add(vec![Act::msg(false, real(src), tmp, 0, len), fold]);
            }
        } else {
            s.add(vec![Act::msg(true, real(vr & !mask), acc, 0, len)]);
            break;
        }
        mask <<= 1;
    }
}

/// Reduction of buffer 0 to `root` (buffer 1 as long, scratch); the
/// result in buffer 0 at the root.
pub(crate) fn reduce(s: &mut Sched, n: u32, rank: u32, root: u32, commute: bool) {
    if commute || root == 0 {
        return reduce_tree(s, n, rank, 0, 1, root, commute);
    }
    // The tree keeps rank order only from task 0: reduce there, then
    // move the result to the root.
    reduce_tree(s, n, rank, 0, 1, 0, commute);
    let len = s.len(0);
    if rank == 0 {
        s.add(vec![Act::msg(true, root, 0, 0, len)]);
    } else if rank == root {
        s.add(vec![Act::msg(false, 0, 0, 0, len)]);
    }
}

/// Reduction of buffer 0 (buffer 1 scratch), the result in buffer 0
/// everywhere.
pub(crate) fn allreduce(s: &mut Sched, n: u32, rank: u32, commute: bool) {
    reduce_tree(s, n, rank, 0, 1, 0, commute);
    bcast(s, n, rank, 0, 0);
}

/// Each task's buffer `mine` into block p of buffer `all` at `root`
/// (the root's own block already in place).
pub(crate) fn gatherv(
    s: &mut Sched,
    n: u32,
    rank: u32,
    mine: usize,
    all: usize,
    blocks: &[Block],
    root: u32,
) {
    linear(s, (n, rank, root), mine, all, blocks, true);
}

/// Block p of buffer `all` at `root` into buffer `mine` of task p (the
/// root's own block copied by the caller).
pub(crate) fn scatterv(
    s: &mut Sched,
    n: u32,
    rank: u32,
    all: usize,
    blocks: &[Block],
    mine: usize,
    root: u32,
) {
    linear(s, (n, rank, root), mine, all, blocks, false);
}

/// Linear gather (`gather`) or scatter between buffer `mine` of every
/// task and block p of buffer `all` at the root, of `(n, rank, root)`.
fn linear(
    s: &mut Sched,
    (n, rank, root): (u32, u32, u32),
    mine: usize,
    all: usize,
    blocks: &[Block],
    gather: bool,
) {
    if rank != root {
        let len = s.len(mine);
        s.add(vec![Act::msg(gather, root, mine, 0, len)]);
        return;
    }
    let peers: Vec<u32> = (0..n).filter(|&p| p != root).collect();
    s.add(blocks_with(&peers, |p| p, all, blocks, !gather));
}

/// A message with each of `peers` (`to` gives its address): block p of
/// buffer `buf`, sent (`send`) or received.
fn blocks_with(
    peers: &[u32],
    to: impl Fn(u32) -> u32,
    buf: usize,
    blocks: &[Block],
    send: bool,
) -> Vec<Act> {
    peers
        .iter()
        .map(|&p| {
            let (at, len) = blocks[p as usize];
            Act::msg(send, to(p), buf, at, len)
        })
        .collect()
}

/// Allgather(v) in place: every task's block of buffer `all` (its own
/// already there) into the same block everywhere, bytes between the
/// blocks untouched, each block received straight where it belongs.
/// Recursive doubling when `n` is a power of two and the blocks lie back
/// to back in rank order (log n rounds, each one message each way, as
/// the blocking allgather), otherwise a ring (n - 1 rounds).
pub(crate) fn allgatherv(s: &mut Sched, n: u32, rank: u32, all: usize, blocks: &[Block]) {
    let packed = blocks.windows(2).all(|w| w[0].0 + w[0].1 == w[1].0);
    if n.is_power_of_two() && packed {
        let span = |first: u32, count: u32| {
            let (at, _) = blocks[first as usize];
            let (o, l) = blocks[(first + count - 1) as usize];
            (at, o + l - at)
        };
        let mut mask = 1;
        while mask < n {
            let p = rank ^ mask;
            let (sa, sl) = span(rank & !(mask - 1), mask);
            let (ra, rl) = span(p & !(mask - 1), mask);
            s.add(vec![
                Act::msg(false, p, all, ra, rl),
                Act::msg(true, p, all, sa, sl),
            ]);
            mask <<= 1;
        }
        return;
    }
    let (right, left) = ((rank + 1) % n, (rank + n - 1) % n);
    for k in 0..n.saturating_sub(1) {
        let (out, inc) = ((rank + n - k) % n, (rank + 2 * n - k - 1) % n);
        let (sa, sl) = blocks[out as usize];
        let (ra, rl) = blocks[inc as usize];
        s.add(vec![
            Act::msg(false, left, all, ra, rl),
            Act::msg(true, right, all, sa, sl),
        ]);
    }
}

/// Pairwise all-to-all: block p of buffer 0 to task p, its block into
/// block p of buffer 1 (our own block copied by the caller).
pub(crate) fn alltoallv(s: &mut Sched, n: u32, rank: u32, sblocks: &[Block], rblocks: &[Block]) {
    let peers: Vec<u32> = (1..n).map(|k| (rank + k) % n).collect();
    let mut acts = blocks_with(&peers, |p| p, 1, rblocks, false);
    acts.extend(blocks_with(&peers, |p| p, 0, sblocks, true));
    s.add(acts);
}

/// Scan over buffer 0 (buffers 1 and 2 as long, scratch): a chain, each
/// task passing its inclusive prefix on; buffer 0 ends with the
/// inclusive (or, `exclusive`, the exclusive) prefix, unchanged at task 0.
pub(crate) fn scan(s: &mut Sched, n: u32, rank: u32, exclusive: bool) {
    let len = s.len(0);
    let copy = |from, to| Act::Copy {
        from,
        at: 0,
        to,
        to_at: 0,
        len,
    };
    if rank > 0 {
        s.add(vec![
            Act::msg(false, rank - 1, 1, 0, len),
            copy(0, 2),
            // Prefix first: inclusive = prefix (op) ours.
            Act::Fold { inv: 1, inout: 2 },
            copy(if exclusive { 1 } else { 2 }, 0),
        ]);
        if rank + 1 < n {
            s.add(vec![Act::msg(true, rank + 1, 2, 0, len)]);
        }
    } else if n > 1 {
        s.add(vec![Act::msg(true, 1, 0, 0, len)]);
    }
}

/// Reduce-scatter: buffer 0 reduced at task 0 (buffer 1 scratch), then
/// block p of it into buffer 2 of task p.
pub(crate) fn reduce_scatter(s: &mut Sched, n: u32, rank: u32, blocks: &[Block], commute: bool) {
    reduce_tree(s, n, rank, 0, 1, 0, commute);
    scatterv(s, n, rank, 0, blocks, 2, 0);
    if rank == 0 {
        own_block(s, 0, blocks[0], 2);
    }
}

/// After the rounds so far: block `(at, len)` of buffer `from` to the
/// start of buffer `to` (as much as it holds), the root's own part of
/// a scatter.
fn own_block(s: &mut Sched, from: usize, (at, len): Block, to: usize) {
    let len = len.min(s.len(to));
    s.add(vec![Act::Copy {
        from,
        at,
        to,
        to_at: 0,
        len,
    }]);
}

/// Who a rooted collective makes this task: the root, a task that
/// sends to or receives from the root (its rank: in the communicator,
/// or in the remote group of an intercommunicator), or, in an
/// intercommunicator root's group, a task with no part (`MPI_PROC_NULL`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    Root,
    Leaf(u32),
    Idle,
}

/// An intercommunicator as its schedules address it: the local group's
/// `l` tasks as 0..l, remote task q as `l + q`; this task `rank` of the
/// local group. Each group works among itself with the algorithms
/// above, its leader (local rank 0) exchanging with the other group's.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Inter {
    pub(crate) l: u32,
    pub(crate) rank: u32,
}

impl Inter {
    fn remote(self, q: u32) -> u32 {
        self.l + q
    }

    fn leader(self) -> bool {
        self.rank == 0
    }

    /// The leaders send buffer `send` to each other and receive it into
    /// buffer `recv` (as long as it is).
    fn swap(self, s: &mut Sched, send: usize, recv: usize) {
        if self.leader() {
            let (sl, rl) = (s.len(send), s.len(recv));
            s.add(vec![
                Act::msg(true, self.remote(0), send, 0, sl),
                Act::msg(false, self.remote(0), recv, 0, rl),
            ]);
        }
    }

    /// One round: whole buffer `buf` to (`send`) or from remote task `q`.
    fn one(self, s: &mut Sched, q: u32, buf: usize, send: bool) {
        let len = s.len(buf);
        s.add(vec![Act::msg(send, self.remote(q), buf, 0, len)]);
    }

    /// Every remote task, by its rank in the remote group.
    fn all_remote(n: usize) -> Vec<u32> {
        (0..n as u32).collect()
    }
}

/// Intercommunicator barrier: each group's barrier, the leaders'
/// exchange, each leader's word to its group (buffer 0 empty).
pub(crate) fn inter_barrier(s: &mut Sched, x: Inter) {
    barrier(s, x.l, x.rank);
    x.swap(s, 0, 0);
    bcast(s, x.l, x.rank, 0, 0);
}

/// Intercommunicator broadcast of buffer `buf` from the root to the
/// other group: its leader receives and broadcasts.
pub(crate) fn inter_bcast(s: &mut Sched, x: Inter, buf: usize, role: Role) {
    match role {
        Role::Root => x.one(s, 0, buf, true),
        Role::Idle => {}
        Role::Leaf(q) => {
            if x.leader() {
                x.one(s, q, buf, false);
            }
            bcast(s, x.l, x.rank, buf, 0);
        }
    }
}

/// Intercommunicator reduction of buffer 0 (buffer 1 scratch) to the
/// root, which gets the other group's result in its buffer 0 from that
/// group's leader.
pub(crate) fn inter_reduce(s: &mut Sched, x: Inter, role: Role, commute: bool) {
    match role {
        Role::Root => x.one(s, 0, 0, false),
        Role::Idle => {}
        Role::Leaf(q) => {
            reduce_tree(s, x.l, x.rank, 0, 1, 0, commute);
            if x.leader() {
                x.one(s, q, 0, true);
            }
        }
    }
}

/// Intercommunicator allreduce: buffer 0 reduced in each group (buffer
/// 1 scratch), the leaders swap, and each group gets the other's result
/// in buffer 2 (as long as buffer 0).
pub(crate) fn inter_allreduce(s: &mut Sched, x: Inter, commute: bool) {
    reduce_tree(s, x.l, x.rank, 0, 1, 0, commute);
    x.swap(s, 0, 2);
    bcast(s, x.l, x.rank, 2, 0);
}

/// Intercommunicator gather into buffer 1 of the root: the other group
/// gathers its buffers 0 at its leader (into its buffer 1, split into
/// `blocks`, the leader's own block already in place), which sends the
/// whole to the root.
pub(crate) fn inter_gather(s: &mut Sched, x: Inter, role: Role, blocks: &[Block]) {
    match role {
        Role::Root => x.one(s, 0, 1, false),
        Role::Idle => {}
        Role::Leaf(q) => {
            gatherv(s, x.l, x.rank, 0, 1, blocks, 0);
            if x.leader() {
                x.one(s, q, 1, true);
            }
        }
    }
}

/// Intercommunicator scatter from buffer 0 of the root: the other
/// group's leader receives the whole into its buffer 0 (split into
/// `blocks`) and scatters it into the buffers 1 of its group.
pub(crate) fn inter_scatter(s: &mut Sched, x: Inter, role: Role, blocks: &[Block]) {
    match role {
        Role::Root => x.one(s, 0, 0, true),
        Role::Idle => {}
        Role::Leaf(q) => {
            if x.leader() {
                x.one(s, q, 0, false);
                own_block(s, 0, blocks[0], 1);
            }
            scatterv(s, x.l, x.rank, 0, blocks, 1, 0);
        }
    }
}

/// Intercommunicator gatherv and scatterv: the root receives block i of
/// buffer 1 from (gather) or sends block i of buffer 0 to remote task i;
/// the other group sends its buffer 0 to or receives its buffer 1 from
/// the root.
pub(crate) fn inter_rooted_v(s: &mut Sched, x: Inter, role: Role, blocks: &[Block], gather: bool) {
    let (root_buf, leaf_buf) = if gather { (1, 0) } else { (0, 1) };
    match role {
        Role::Root => {
            let remote = Inter::all_remote(blocks.len());
            s.add(blocks_with(
                &remote,
                |i| x.remote(i),
                root_buf,
                blocks,
                !gather,
            ));
        }
        Role::Idle => {}
        Role::Leaf(q) => x.one(s, q, leaf_buf, gather),
    }
}

/// Intercommunicator allgather: each group gathers its buffers 0 at its
/// leader (into buffer 1, split into `blocks`, the leader's own block in
/// place), the leaders swap, and each group gets the other's in buffer 2.
pub(crate) fn inter_allgather(s: &mut Sched, x: Inter, blocks: &[Block]) {
    gatherv(s, x.l, x.rank, 0, 1, blocks, 0);
    x.swap(s, 1, 2);
    bcast(s, x.l, x.rank, 2, 0);
}

/// Intercommunicator allgatherv and all-to-all(v,w): block j of buffer 0
/// (`sblocks`) to remote task j, and block j of buffer 1 (`rblocks`)
/// from it, all in one round.
pub(crate) fn inter_pairwise(s: &mut Sched, x: Inter, sblocks: &[Block], rblocks: &[Block]) {
    let remote = |b: &[Block]| Inter::all_remote(b.len());
    let mut acts = blocks_with(&remote(rblocks), |j| x.remote(j), 1, rblocks, false);
    acts.extend(blocks_with(
        &remote(sblocks),
        |j| x.remote(j),
        0,
        sblocks,
        true,
    ));
    s.add(acts);
}

#[cfg(test)]
mod tests {
    //! Every task's schedule run against the others in one process:
    //! sends land in a queue per (sender, receiver) pair, a round ends
    //! when its receives found their messages.

    use super::super::{Act, Sched};
    use super::*;
    use crate::coll::Reduction;
    use crate::types::{Num, Op};
    use std::collections::{HashMap, VecDeque};

    fn sum() -> Option<Reduction> {
        Some(Reduction::Pre {
            op: Op::Sum,
            num: Num::I64,
            size: 8,
        })
    }

    fn words(v: &[i64]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_ne_bytes()).collect()
    }

    fn ints(b: &[u8]) -> Vec<i64> {
        b.chunks_exact(8)
            .map(|c| i64::from_ne_bytes(c.try_into().unwrap()))
            .collect()
    }

    /// Runs the schedules to the end, in an order where each task moves
    /// as far as it can before the next: a deadlock fails.
    fn run(mut s: Vec<Sched>) -> Vec<Sched> {
        let mut q: HashMap<(u32, u32), VecDeque<Vec<u8>>> = HashMap::new();
        let mut sent = vec![false; s.len()];
        loop {
            let mut moved = false;
            for (me, sc) in s.iter_mut().enumerate() {
                let me = me as u32;
                while let Some(round) = sc.rounds.front().cloned() {
                    if !sent[me as usize] {
                        // Receives land in place (`Lender`): no block of
                        // a round's receive is another message's.
                        let blocks: Vec<(bool, usize, usize, usize)> = round
                            .iter()
                            .filter_map(|a| match *a {
                                Act::Send { buf, at, len, .. } => Some((false, buf, at, len)),
                                Act::Recv { buf, at, len, .. } => Some((true, buf, at, len)),
                                _ => None,
                            })
                            .collect();
                        for (i, x) in blocks.iter().enumerate() {
                            for y in &blocks[i + 1..] {
                                let overlap = x.1 == y.1 && x.2 < y.2 + y.3 && y.2 < x.2 + x.3;
                                assert!(!(overlap && (x.0 || y.0)), "round {round:?} overlaps");
                            }
                        }
                        for a in &round {
                            if let Act::Send { to, buf, at, len } = *a {
                                let d = sc.bufs[buf][at..at + len].to_vec();
                                q.entry((me, to)).or_default().push_back(d);
                            }
                        }
                        sent[me as usize] = true;
                        moved = true;
                    }
                    let ready = round.iter().all(|a| match *a {
                        Act::Recv { from, .. } => q.get(&(from, me)).is_some_and(|m| !m.is_empty()),
                        _ => true,
                    });
                    if !ready {
                        break;
                    }
                    for a in &round {
                        if let Act::Recv { from, buf, at, len } = *a {
                            let d = q.get_mut(&(from, me)).unwrap().pop_front().unwrap();
                            assert_eq!(d.len(), len, "message length");
                            sc.bufs[buf][at..at + len].copy_from_slice(&d);
                        }
                    }
                    sc.local(&round).unwrap();
                    sc.rounds.pop_front();
                    sent[me as usize] = false;
                    moved = true;
                }
            }
            if s.iter().all(|sc| sc.rounds.is_empty()) {
                assert!(q.values().all(VecDeque::is_empty), "messages left over");
                return s;
            }
            assert!(moved, "the schedules wait for each other");
        }
    }

    #[test]
    fn barrier_bcast_reduce_allreduce_scan_on_1_to_9_tasks() {
        for n in 1..=9u32 {
            let mut b = Vec::new();
            for r in 0..n {
                let mut s = Sched::new(vec![Vec::new()], None);
                barrier(&mut s, n, r);
                b.push(s);
            }
            run(b);
            for root in 0..n {
                let mut v = Vec::new();
                for r in 0..n {
                    let mut s = Sched::new(vec![words(&[r as i64 * 10, 1])], None);
                    bcast(&mut s, n, r, 0, root);
                    v.push(s);
                }
                for s in run(v) {
                    assert_eq!(ints(&s.bufs[0]), [root as i64 * 10, 1]);
                }
                let mut v = Vec::new();
                for r in 0..n {
                    let mut s = Sched::new(vec![words(&[r as i64, 2]), vec![0; 16]], sum());
                    reduce(&mut s, n, r, root, root % 2 == 0);
                    v.push(s);
                }
                let out = run(v);
                let want = i64::from(n * (n - 1) / 2);
                assert_eq!(ints(&out[root as usize].bufs[0]), [want, 2 * i64::from(n)]);
            }
            let mut v = Vec::new();
            let mut w = Vec::new();
            for r in 0..n {
                let mut s = Sched::new(vec![words(&[r as i64 + 1]), vec![0; 8]], sum());
                allreduce(&mut s, n, r, false);
                v.push(s);
                let mut s = Sched::new(vec![words(&[r as i64 + 1]), vec![0; 8], vec![0; 8]], sum());
                scan(&mut s, n, r, r % 2 == 1);
                w.push(s);
            }
            for s in run(v) {
                assert_eq!(ints(&s.bufs[0]), [i64::from(n * (n + 1) / 2)]);
            }
            for (r, s) in run(w).iter().enumerate() {
                let r = r as i64;
                let want = if r % 2 == 1 {
                    r * (r + 1) / 2
                } else {
                    (r + 1) * (r + 2) / 2
                };
                assert_eq!(ints(&s.bufs[0]), [want]);
            }
        }
    }

    #[test]
    fn gathers_scatters_all_to_all_and_reduce_scatter_on_1_to_7_tasks() {
        for n in 1..=7u32 {
            // Task p's block: p + 1 words at 8 * (p * (p + 1) / 2 + p).
            let blocks: Vec<(usize, usize)> = (0..n as usize)
                .map(|p| (8 * (p * (p + 1) / 2 + p), 8 * (p + 1)))
                .collect();
            let total = blocks.last().map_or(0, |b| b.0 + b.1);
            let mut v = Vec::new();
            for r in 0..n {
                let mine = words(&vec![r as i64; r as usize + 1]);
                let mut all = vec![0xee; total];
                let (o, l) = blocks[r as usize];
                all[o..o + l].copy_from_slice(&mine);
                let mut s = Sched::new(vec![all], None);
                allgatherv(&mut s, n, r, 0, &blocks);
                v.push(s);
            }
            for s in run(v) {
                for (p, &(o, l)) in blocks.iter().enumerate() {
                    assert_eq!(ints(&s.bufs[0][o..o + l]), vec![p as i64; p + 1]);
                }
                // Bytes between the blocks stay.
                assert!(blocks
                    .iter()
                    .all(|&(o, _)| o == 0 || s.bufs[0][o - 1] == 0xee));
            }
            // Equal blocks back to back: recursive doubling on 1, 2, 4 tasks.
            let mut v = Vec::new();
            for r in 0..n {
                let mut all = vec![0xee; 16 * n as usize];
                all[16 * r as usize..16 * r as usize + 16].copy_from_slice(&words(&[r.into(), 7]));
                let mut s = Sched::new(vec![all], None);
                let eq: Vec<Block> = (0..n as usize).map(|p| (16 * p, 16)).collect();
                allgatherv(&mut s, n, r, 0, &eq);
                v.push(s);
            }
            for s in run(v) {
                let want: Vec<i64> = (0..n).flat_map(|p| [i64::from(p), 7]).collect();
                assert_eq!(ints(&s.bufs[0]), want);
            }
            // All-to-all: task r sends r * 100 + p to task p.
            let eq: Vec<(usize, usize)> = (0..n as usize).map(|p| (8 * p, 8)).collect();
            let mut v = Vec::new();
            for r in 0..n {
                let send: Vec<i64> = (0..n).map(|p| i64::from(r * 100 + p)).collect();
                let mut recv = vec![0; 8 * n as usize];
                recv[8 * r as usize..8 * r as usize + 8]
                    .copy_from_slice(&words(&[i64::from(r * 101)]));
                let mut s = Sched::new(vec![words(&send), recv], None);
                alltoallv(&mut s, n, r, &eq, &eq);
                v.push(s);
            }
            for (r, s) in run(v).iter().enumerate() {
                let want: Vec<i64> = (0..n as usize).map(|p| (p * 100 + r) as i64).collect();
                assert_eq!(ints(&s.bufs[1]), want);
            }
            // Reduce-scatter of n words, one each.
            let mut v = Vec::new();
            for r in 0..n {
                let c: Vec<i64> = (0..n).map(|p| i64::from(r + p)).collect();
                let mut s = Sched::new(vec![words(&c), vec![0; 8 * n as usize], vec![0; 8]], sum());
                reduce_scatter(&mut s, n, r, &eq, true);
                v.push(s);
            }
            for (r, s) in run(v).iter().enumerate() {
                let n = i64::from(n);
                assert_eq!(ints(&s.bufs[2]), [n * r as i64 + n * (n - 1) / 2]);
            }
        }
    }

    /// Intercommunicator schedules of groups of `a` and `b` tasks as one
    /// job: task i of the first group is i, task i of the second `a + i`.
    fn inter_job(a: u32, b: u32, mut mk: impl FnMut(bool, Inter) -> Sched) -> Vec<Sched> {
        let mut v = Vec::new();
        for (first, l, base, rbase) in [(true, a, 0, a), (false, b, a, 0)] {
            for rank in 0..l {
                let mut s = mk(first, Inter { l, rank });
                let map = |t: u32| if t < l { base + t } else { rbase + t - l };
                for act in s.rounds.iter_mut().flatten() {
                    match act {
                        Act::Send { to, .. } => *to = map(*to),
                        Act::Recv { from, .. } => *from = map(*from),
                        _ => {}
                    }
                }
                v.push(s);
            }
        }
        v
    }

    #[test]
    fn intercommunicator_schedules_on_groups_of_1_to_4() {
        for a in 1..=4u32 {
            for b in 1..=4u32 {
                // World rank of local rank r in the first (or second) group.
                let w = |first: bool, r: u32| i64::from(if first { r } else { a + r });
                let total = |first: bool| {
                    let n = if first { a } else { b };
                    (0..n).map(|r| w(first, r)).sum::<i64>()
                };
                run(inter_job(a, b, |_, x| {
                    let mut s = Sched::new(vec![Vec::new()], None);
                    inter_barrier(&mut s, x);
                    s
                }));
                // Root: the first group's last task.
                let role = |first: bool, x: Inter| match (first, x.rank + 1 == a) {
                    (true, true) => Role::Root,
                    (true, false) => Role::Idle,
                    (false, _) => Role::Leaf(a - 1),
                };
                let out = run(inter_job(a, b, |first, x| {
                    let mut s = Sched::new(vec![words(&[w(first, x.rank), 7])], None);
                    inter_bcast(&mut s, x, 0, role(first, x));
                    s
                }));
                for s in &out[a as usize..] {
                    assert_eq!(ints(&s.bufs[0]), [i64::from(a - 1), 7]);
                }
                let out = run(inter_job(a, b, |first, x| {
                    let mut s = Sched::new(vec![words(&[w(first, x.rank)]), vec![0; 8]], sum());
                    inter_reduce(&mut s, x, role(first, x), a % 2 == 0);
                    s
                }));
                assert_eq!(ints(&out[a as usize - 1].bufs[0]), [total(false)]);
                let out = run(inter_job(a, b, |first, x| {
                    let mut s = Sched::new(
                        vec![words(&[w(first, x.rank)]), vec![0; 8], vec![0; 8]],
                        sum(),
                    );
                    inter_allreduce(&mut s, x, true);
                    s
                }));
                for (i, s) in out.iter().enumerate() {
                    assert_eq!(ints(&s.bufs[2]), [total(i >= a as usize)]);
                }
                // Gather at the root of the second group's ranks, scatter
                // back 100 + rank, allgather of every world rank.
                let out = run(inter_job(a, b, |first, x| {
                    let r = role(first, x);
                    let n = if first { b } else { x.l };
                    let blocks: Vec<Block> = (0..n as usize).map(|p| (8 * p, 8)).collect();
                    let all = if r == Role::Root || (!first && x.rank == 0) {
                        let mut v = vec![0; 8 * n as usize];
                        v[..8].copy_from_slice(&words(&[w(first, 0)]));
                        v
                    } else {
                        Vec::new()
                    };
                    let mut s = Sched::new(vec![words(&[w(first, x.rank)]), all], None);
                    inter_gather(&mut s, x, r, &blocks);
                    s
                }));
                let want: Vec<i64> = (0..b).map(|r| w(false, r)).collect();
                assert_eq!(ints(&out[a as usize - 1].bufs[1]), want);
                let out = run(inter_job(a, b, |first, x| {
                    let r = role(first, x);
                    let n = if first { b } else { x.l };
                    let blocks: Vec<Block> = (0..n as usize).map(|p| (8 * p, 8)).collect();
                    let all = match (r, first) {
                        (Role::Root, _) => {
                            words(&(0..i64::from(b)).map(|p| 100 + p).collect::<Vec<_>>())
                        }
                        (_, false) if x.rank == 0 => vec![0; 8 * n as usize],
                        _ => Vec::new(),
                    };
                    let mut s = Sched::new(vec![all, vec![0; 8]], None);
                    inter_scatter(&mut s, x, r, &blocks);
                    s
                }));
                for (r, s) in out[a as usize..].iter().enumerate() {
                    assert_eq!(ints(&s.bufs[1]), [100 + r as i64]);
                }
                let out = run(inter_job(a, b, |first, x| {
                    let (n, rn) = (x.l, if first { b } else { a });
                    let blocks: Vec<Block> = (0..n as usize).map(|p| (8 * p, 8)).collect();
                    let mine = words(&[w(first, x.rank)]);
                    let mut local = vec![0; if x.rank == 0 { 8 * n as usize } else { 0 }];
                    if x.rank == 0 {
                        local[..8].copy_from_slice(&mine);
                    }
                    let mut s = Sched::new(vec![mine, local, vec![0; 8 * rn as usize]], None);
                    inter_allgather(&mut s, x, &blocks);
                    s
                }));
                for (i, s) in out.iter().enumerate() {
                    let first = i < a as usize;
                    let rn = if first { b } else { a };
                    let want: Vec<i64> = (0..rn).map(|r| w(!first, r)).collect();
                    assert_eq!(ints(&s.bufs[2]), want);
                }
            }
        }
    }
}
