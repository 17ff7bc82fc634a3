//! Graph and distributed graph topologies, kept beside the communicator
//! (by handle) as Cartesian ones are, and the neighbourhood collectives
//! on every kind of topology.

use crate::consts::{err, h, PROC_NULL, UNDEFINED};
use crate::engine::Dest;
use crate::objects::MpiErr;
use crate::runtime::{wait_until, with};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

/// `MPI_GRAPH` and `MPI_DIST_GRAPH` of `MPI_Topo_test`.
pub(crate) const GRAPH: i32 = 212;
pub(crate) const DIST_GRAPH: i32 = 213;
/// Tags of the neighbourhood collectives on the collective context.
const TAG_NEIGHBOR: i32 = 40;
/// Bound on the edges `MPI_Dist_graph_create` gathers (12 bytes each).
const MAX_EDGE_BYTES: usize = 12 << 24;

/// A topology other than a Cartesian one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Topo {
    /// `MPI_Graph_create`: node i's neighbours are
    /// `edges[index[i-1]..index[i]]`.
    Graph { index: Vec<i32>, edges: Vec<i32> },
    /// A distributed graph: this task's in- and out-neighbours.
    Dist {
        sources: Vec<i32>,
        sweights: Vec<i32>,
        dests: Vec<i32>,
        dweights: Vec<i32>,
        weighted: bool,
    },
}

static GRAPHS: Mutex<Option<HashMap<usize, Topo>>> = Mutex::new(None);

fn graphs() -> MutexGuard<'static, Option<HashMap<usize, Topo>>> {
    GRAPHS.lock().unwrap_or_else(|e| e.into_inner())
}

/// The graph topology of `comm`, if it has one.
pub(crate) fn topo(comm: usize) -> Option<Topo> {
    graphs().as_ref().and_then(|m| m.get(&comm).cloned())
}

/// Forgets the topology of communicator `c`, being freed.
pub(crate) fn forget(c: usize) {
    if let Some(m) = graphs().as_mut() {
        m.remove(&c);
    }
}

fn keep(comm: usize, t: Topo) {
    graphs().get_or_insert_with(HashMap::new).insert(comm, t);
}

fn comm_size(comm: usize) -> Result<(u32, u32), MpiErr> {
    with(|e| {
        let c = e.comm(comm)?;
        Ok((c.rank, c.size()))
    })
}

/// `MPI_Graph_create` (ranks kept; members past the graph get
/// `MPI_COMM_NULL`).
pub(crate) fn graph_create(comm: usize, index: &[i32], edges: &[i32]) -> Result<usize, MpiErr> {
    let (rank, size) = comm_size(comm)?;
    let n = index.len();
    if n > size as usize {
        return Err(MpiErr::new(
            err::ARG,
            format!("a graph of {n} nodes does not fit {size} processes"),
        ));
    }
    let mut prev = 0;
    for &x in index {
        if x < prev {
            return Err(MpiErr::new(
                err::ARG,
                format!("index is not non-decreasing at {x}"),
            ));
        }
        prev = x;
    }
    if prev as usize != edges.len() {
        return Err(MpiErr::new(
            err::ARG,
            format!("index ends at {prev}, but {} edges were given", edges.len()),
        ));
    }
    if let Some(&e) = edges.iter().find(|&&e| e < 0 || e as usize >= n) {
        return Err(MpiErr::new(
            err::RANK,
            format!("edge to {e} outside a graph of {n} nodes"),
        ));
    }
    let color = if (rank as usize) < n { 0 } else { UNDEFINED };
    let new = crate::coll::comm_split(comm, color, rank as i32)?;
    if new != h::COMM_NULL {
        keep(
            new,
            Topo::Graph {
                index: index.to_vec(),
                edges: edges.to_vec(),
            },
        );
    }
    Ok(new)
}

/// The graph of `comm`, or `MPI_ERR_TOPOLOGY`.
pub(crate) fn need_graph(comm: usize) -> Result<(Vec<i32>, Vec<i32>), MpiErr> {
    match topo(comm) {
        Some(Topo::Graph { index, edges }) => Ok((index, edges)),
        _ => Err(MpiErr::new(
            err::TOPOLOGY,
            format!("communicator {comm:#x} has no graph topology"),
        )),
    }
}

/// The neighbours of `rank` in a graph.
pub(crate) fn graph_neighbors(comm: usize, rank: i32) -> Result<Vec<i32>, MpiErr> {
    let (index, edges) = need_graph(comm)?;
    let r = usize::try_from(rank)
        .ok()
        .filter(|&r| r < index.len())
        .ok_or_else(|| MpiErr::new(err::RANK, format!("invalid rank {rank}")))?;
    let lo = if r == 0 { 0 } else { index[r - 1] as usize };
    Ok(edges[lo..index[r] as usize].to_vec())
}

fn check_ranks(what: &str, v: &[i32], size: u32) -> Result<(), MpiErr> {
    if let Some(&r) = v.iter().find(|&&r| r < 0 || r as u32 >= size) {
        return Err(MpiErr::new(
            err::RANK,
            format!("{what}: rank {r} outside a communicator of {size}"),
        ));
    }
    Ok(())
}

/// `MPI_Dist_graph_create_adjacent`.
pub(crate) fn dist_adjacent(comm: usize, t: Topo) -> Result<usize, MpiErr> {
    let (_, size) = comm_size(comm)?;
    if let Topo::Dist { sources, dests, .. } = &t {
        check_ranks("sources", sources, size)?;
        check_ranks("destinations", dests, size)?;
    }
    let new = crate::coll::comm_dup(comm)?;
    keep(new, t);
    Ok(new)
}

/// `MPI_Dist_graph_create`: each task gives some edges (source,
/// destination, weight); every task learns its in- and out-edges, in
/// the order of the giving tasks' ranks and of their arrays.
pub(crate) fn dist_create(
    comm: usize,
    edges: &[(i32, i32, i32)],
    weighted: bool,
) -> Result<usize, MpiErr> {
    // Its all-gathers are an intracommunicator's.
    crate::inter::no_collectives(comm)?;
    let (rank, size) = comm_size(comm)?;
    for &(s, d, _) in edges {
        check_ranks("sources", &[s], size)?;
        check_ranks("destinations", &[d], size)?;
    }
    let mine: Vec<u8> = edges
        .iter()
        .flat_map(|&(s, d, w)| [s, d, w])
        .flat_map(i32::to_ne_bytes)
        .collect();
    let mut lens = vec![0u8; 8 * size as usize];
    crate::coll::allgather(comm, Some(&(mine.len() as u64).to_ne_bytes()), &mut lens, 8)?;
    let mut blocks = Vec::with_capacity(size as usize);
    let mut at = 0usize;
    for c in lens.chunks_exact(8) {
        let n = usize::try_from(u64::from_ne_bytes(c.try_into().unwrap_or([0; 8])))
            .ok()
            .filter(|&n| n % 12 == 0 && n <= MAX_EDGE_BYTES)
            .ok_or_else(|| MpiErr::new(err::INTERN, "malformed edge count"))?;
        blocks.push((at, n));
        at = at
            .checked_add(n)
            .ok_or_else(|| MpiErr::new(err::COUNT, "too many edges"))?;
    }
    if at > MAX_EDGE_BYTES {
        return Err(MpiErr::new(
            err::COUNT,
            format!(
                "{} edges in all, more than {}",
                at / 12,
                MAX_EDGE_BYTES / 12
            ),
        ));
    }
    let mut all = vec![0u8; at];
    crate::coll::allgatherv(comm, Some(&mine), &mut all, &blocks)?;
    let (mut sources, mut sweights, mut dests, mut dweights) = (vec![], vec![], vec![], vec![]);
    let int = |b: &[u8]| i32::from_ne_bytes([b[0], b[1], b[2], b[3]]);
    let me = rank as i32;
    for e in all.chunks_exact(12) {
        let (s, d, w) = (int(e), int(&e[4..]), int(&e[8..]));
        if s == me {
            dests.push(d);
            dweights.push(w);
        }
        if d == me {
            sources.push(s);
            sweights.push(w);
        }
    }
    let new = crate::coll::comm_dup(comm)?;
    keep(
        new,
        Topo::Dist {
            sources,
            sweights,
            dests,
            dweights,
            weighted,
        },
    );
    Ok(new)
}

/// The in- and out-neighbours of this task in `comm`'s topology, in
/// the order of the neighbourhood collectives (`MPI_PROC_NULL` for a
/// Cartesian neighbour off a non-periodic edge).
pub(crate) fn neighbors(comm: usize) -> Result<(Vec<i32>, Vec<i32>), MpiErr> {
    let (rank, _) = comm_size(comm)?;
    if let Some(c) = crate::topo::cart(comm) {
        let mut v = Vec::with_capacity(2 * c.dims.len());
        for d in 0..c.dims.len() {
            let (src, dst) = c.shift(rank as i32, d as i32, 1)?;
            v.push(src);
            v.push(dst);
        }
        return Ok((v.clone(), v));
    }
    match topo(comm) {
        Some(Topo::Graph { .. }) => {
            let v = graph_neighbors(comm, rank as i32)?;
            Ok((v.clone(), v))
        }
        Some(Topo::Dist { sources, dests, .. }) => Ok((sources, dests)),
        None => Err(MpiErr::new(
            err::TOPOLOGY,
            format!("communicator {comm:#x} has no topology"),
        )),
    }
}

/// A neighbourhood exchange: `sends[i]` goes to out-neighbour i, and
/// in-neighbour i's bytes (at most `cap`) come back as element i
/// (`None` for `MPI_PROC_NULL`).
pub(crate) fn exchange(
    comm: usize,
    ins: &[i32],
    outs: &[i32],
    sends: &[&[u8]],
    cap: usize,
) -> Result<Vec<Option<Vec<u8>>>, MpiErr> {
    crate::inter::no_collectives(comm)?;
    let (recvs, sent) = with(|e| {
        let c = e.comm(comm)?.clone();
        let ctx = c.ctx + 1;
        let world = |r: i32| c.group[r as usize];
        let mut recvs = Vec::with_capacity(ins.len());
        for &r in ins {
            if r == PROC_NULL {
                recvs.push(None);
                continue;
            }
            let id = e.handle();
            let dest = Dest::Own {
                cap,
                data: Vec::new(),
            };
            let group: Arc<Vec<u32>> = c.group.clone();
            e.recv_ctx(
                comm,
                ctx,
                group,
                Some(world(r)),
                Some(TAG_NEIGHBOR),
                dest,
                id,
            );
            recvs.push(Some(id));
        }
        let mut sent = Vec::with_capacity(outs.len());
        for (&r, d) in outs.iter().zip(sends) {
            if r == PROC_NULL {
                continue;
            }
            let id = e.handle();
            e.send_ctx(comm, ctx, world(r), TAG_NEIGHBOR, d, false, id)?;
            sent.push(id);
        }
        Ok((recvs, sent))
    })?;
    let ids: Vec<usize> = recvs.iter().flatten().chain(&sent).copied().collect();
    wait_until(None, |e| {
        Ok(ids.iter().all(|id| e.reqs.get(id).is_none_or(|q| q.done)))
    })?;
    with(|e| {
        let mut failed = 0;
        let out = recvs
            .iter()
            .map(|r| {
                r.map(|id| {
                    let d = e.take_data(id);
                    failed = failed.max(e.take(id).unwrap_or_default().error);
                    d
                })
            })
            .collect();
        for id in &sent {
            failed = failed.max(e.take(*id).unwrap_or_default().error);
        }
        if failed != 0 {
            return Err(MpiErr::new(
                failed,
                "a message of the neighbourhood collective failed",
            ));
        }
        Ok(out)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_checks() {
        assert!(check_ranks("x", &[0, 3], 4).is_ok());
        assert_eq!(check_ranks("x", &[4], 4).unwrap_err().class, err::RANK);
        assert_eq!(check_ranks("x", &[-1], 4).unwrap_err().class, err::RANK);
    }
}
