//! Graph and distributed graph topologies and the neighbourhood
//! collectives (see `crate::graph`).

use super::topo::{ints, ints_mut};
use super::{bytes_of, call, hv, lay, mk, out, recv_area, send_data, ucount, Handle};
use crate::engine::MpiErr;
use crate::graph::{self, Topo};
use std::ffi::{c_int, c_void};

/// `MPI_UNWEIGHTED` and `MPI_WEIGHTS_EMPTY` of the header.
const UNWEIGHTED: usize = 10;
const WEIGHTS_EMPTY: usize = 11;

/// `n` weights at `p`: `None` for `MPI_UNWEIGHTED` (or null with no
/// edges).
///
/// # Safety
/// `p` is one of the sentinels, null, or holds `n` ints.
unsafe fn weights(p: *const c_int, n: usize, what: &str) -> Result<Option<Vec<c_int>>, MpiErr> {
    match p as usize {
        UNWEIGHTED => Ok(None),
        WEIGHTS_EMPTY | 0 if n == 0 => Ok(Some(Vec::new())),
        WEIGHTS_EMPTY => Err(MpiErr::new(
            crate::consts::err::ARG,
            format!("{what} is MPI_WEIGHTS_EMPTY for {n} edges"),
        )),
        // SAFETY: the caller's contract.
        _ => Ok(Some(unsafe { ints(p, n, what) }?.to_vec())),
    }
}

/// `MPI_Graph_create`.
///
/// # Safety
/// `index` holds `nnodes` ints, `edges` as many as `index` says.
#[no_mangle]
pub unsafe extern "C" fn MPI_Graph_create(
    comm: Handle,
    nnodes: c_int,
    index: *const c_int,
    edges: *const c_int,
    _reorder: c_int,
    new: *mut Handle,
) -> c_int {
    call("MPI_Graph_create", hv(comm), || {
        // SAFETY: the caller's contract.
        let ix = unsafe { ints(index, ucount(nnodes)?, "index") }?;
        let ne = ix.last().map_or(0, |&x| x.max(0) as usize);
        // SAFETY: the caller's contract.
        let ed = unsafe { ints(edges, ne, "edges") }?;
        let c = graph::graph_create(hv(comm), ix, ed)?;
        // SAFETY: the caller's contract.
        unsafe { out(new, mk(c), "comm_graph") }
    })
}

/// `MPI_Graphdims_get`.
///
/// # Safety
/// Both outputs are writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Graphdims_get(
    comm: Handle,
    nnodes: *mut c_int,
    nedges: *mut c_int,
) -> c_int {
    call("MPI_Graphdims_get", hv(comm), || {
        let (ix, ed) = graph::need_graph(hv(comm))?;
        // SAFETY: the caller's contract.
        unsafe {
            out(nnodes, ix.len() as c_int, "nnodes")?;
            out(nedges, ed.len() as c_int, "nedges")
        }
    })
}

/// `MPI_Graph_get`.
///
/// # Safety
/// `index` has `maxindex` writable ints, `edges` `maxedges`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Graph_get(
    comm: Handle,
    maxindex: c_int,
    maxedges: c_int,
    index: *mut c_int,
    edges: *mut c_int,
) -> c_int {
    call("MPI_Graph_get", hv(comm), || {
        let (ix, ed) = graph::need_graph(hv(comm))?;
        let (ni, ne) = (
            ix.len().min(ucount(maxindex)?),
            ed.len().min(ucount(maxedges)?),
        );
        // SAFETY: the caller's contract.
        unsafe {
            ints_mut(index, ni, "index")?.copy_from_slice(&ix[..ni]);
            ints_mut(edges, ne, "edges")?.copy_from_slice(&ed[..ne]);
        }
        Ok(())
    })
}

/// `MPI_Graph_neighbors_count`.
///
/// # Safety
/// `n` is writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Graph_neighbors_count(
    comm: Handle,
    rank: c_int,
    n: *mut c_int,
) -> c_int {
    call("MPI_Graph_neighbors_count", hv(comm), || {
        let v = graph::graph_neighbors(hv(comm), rank)?;
        // SAFETY: the caller's contract.
        unsafe { out(n, v.len() as c_int, "nneighbors") }
    })
}

/// `MPI_Graph_neighbors`.
///
/// # Safety
/// `neighbors` has `maxn` writable ints.
#[no_mangle]
pub unsafe extern "C" fn MPI_Graph_neighbors(
    comm: Handle,
    rank: c_int,
    maxn: c_int,
    neighbors: *mut c_int,
) -> c_int {
    call("MPI_Graph_neighbors", hv(comm), || {
        let v = graph::graph_neighbors(hv(comm), rank)?;
        let n = v.len().min(ucount(maxn)?);
        // SAFETY: the caller's contract.
        unsafe { ints_mut(neighbors, n, "neighbors") }?.copy_from_slice(&v[..n]);
        Ok(())
    })
}

/// `MPI_Dist_graph_create_adjacent` (ranks kept; the info is not read).
///
/// # Safety
/// The arrays hold their degree's ints (weights may be the sentinels).
#[no_mangle]
pub unsafe extern "C" fn MPI_Dist_graph_create_adjacent(
    comm: Handle,
    indegree: c_int,
    sources: *const c_int,
    sweights: *const c_int,
    outdegree: c_int,
    dests: *const c_int,
    dweights: *const c_int,
    _info: Handle,
    _reorder: c_int,
    new: *mut Handle,
) -> c_int {
    call("MPI_Dist_graph_create_adjacent", hv(comm), || {
        let (ni, no) = (ucount(indegree)?, ucount(outdegree)?);
        // SAFETY: the caller's contract.
        let t = unsafe {
            let (sw, dw) = (
                weights(sweights, ni, "sourceweights")?,
                weights(dweights, no, "destweights")?,
            );
            let weighted = sw.is_some() && dw.is_some();
            Topo::Dist {
                sources: ints(sources, ni, "sources")?.to_vec(),
                sweights: sw.unwrap_or_else(|| vec![1; ni]),
                dests: ints(dests, no, "destinations")?.to_vec(),
                dweights: dw.unwrap_or_else(|| vec![1; no]),
                weighted,
            }
        };
        let c = graph::dist_adjacent(hv(comm), t)?;
        // SAFETY: the caller's contract.
        unsafe { out(new, mk(c), "comm_dist_graph") }
    })
}

/// `MPI_Dist_graph_create` (ranks kept; the info is not read).
///
/// # Safety
/// `sources` and `degrees` hold `n` ints; `dests` and `weights` as many
/// as the degrees add up to (weights may be the sentinels).
#[no_mangle]
pub unsafe extern "C" fn MPI_Dist_graph_create(
    comm: Handle,
    n: c_int,
    sources: *const c_int,
    degrees: *const c_int,
    dests: *const c_int,
    wts: *const c_int,
    _info: Handle,
    _reorder: c_int,
    new: *mut Handle,
) -> c_int {
    call("MPI_Dist_graph_create", hv(comm), || {
        let n = ucount(n)?;
        // SAFETY: the caller's contract.
        let (src, deg) = unsafe { (ints(sources, n, "sources")?, ints(degrees, n, "degrees")?) };
        let total = deg
            .iter()
            .try_fold(0usize, |a, &d| a.checked_add(ucount(d).ok()?));
        let total =
            total.ok_or_else(|| MpiErr::new(crate::consts::err::COUNT, "invalid degrees"))?;
        // SAFETY: the caller's contract.
        let (dst, w) = unsafe {
            (
                ints(dests, total, "destinations")?,
                weights(wts, total, "weights")?,
            )
        };
        let mut edges = Vec::with_capacity(total);
        let mut at = 0;
        for (&s, &d) in src.iter().zip(deg) {
            for k in 0..d as usize {
                let wt = w.as_ref().map_or(1, |w| w[at + k]);
                edges.push((s, dst[at + k], wt));
            }
            at += d as usize;
        }
        let c = graph::dist_create(hv(comm), &edges, w.is_some())?;
        // SAFETY: the caller's contract.
        unsafe { out(new, mk(c), "comm_dist_graph") }
    })
}

fn dist(comm: Handle) -> Result<Topo, MpiErr> {
    match graph::topo(hv(comm)) {
        Some(t @ Topo::Dist { .. }) => Ok(t),
        _ => Err(MpiErr::new(
            crate::consts::err::TOPOLOGY,
            format!(
                "communicator {:#x} has no distributed graph topology",
                hv(comm)
            ),
        )),
    }
}

/// `MPI_Dist_graph_neighbors_count`.
///
/// # Safety
/// The outputs are writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Dist_graph_neighbors_count(
    comm: Handle,
    indegree: *mut c_int,
    outdegree: *mut c_int,
    weighted: *mut c_int,
) -> c_int {
    call("MPI_Dist_graph_neighbors_count", hv(comm), || {
        let Topo::Dist {
            sources,
            dests,
            weighted: w,
            ..
        } = dist(comm)?
        else {
            unreachable!("dist() returns a distributed graph")
        };
        // SAFETY: the caller's contract.
        unsafe {
            out(indegree, sources.len() as c_int, "indegree")?;
            out(outdegree, dests.len() as c_int, "outdegree")?;
            out(weighted, c_int::from(w), "weighted")
        }
    })
}

/// `MPI_Dist_graph_neighbors`.
///
/// # Safety
/// `sources` (and `sweights`, unless `MPI_UNWEIGHTED`) have `maxin`
/// writable ints, `dests` and `dweights` `maxout`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Dist_graph_neighbors(
    comm: Handle,
    maxin: c_int,
    sources: *mut c_int,
    sweights: *mut c_int,
    maxout: c_int,
    dests: *mut c_int,
    dweights: *mut c_int,
) -> c_int {
    call("MPI_Dist_graph_neighbors", hv(comm), || {
        let Topo::Dist {
            sources: s,
            sweights: sw,
            dests: d,
            dweights: dw,
            ..
        } = dist(comm)?
        else {
            unreachable!("dist() returns a distributed graph")
        };
        let (ni, no) = (s.len().min(ucount(maxin)?), d.len().min(ucount(maxout)?));
        let given = |p: *mut c_int| !matches!(p as usize, 0 | UNWEIGHTED | WEIGHTS_EMPTY);
        // SAFETY: the caller's contract.
        unsafe {
            ints_mut(sources, ni, "sources")?.copy_from_slice(&s[..ni]);
            ints_mut(dests, no, "destinations")?.copy_from_slice(&d[..no]);
            if given(sweights) {
                ints_mut(sweights, ni, "sourceweights")?.copy_from_slice(&sw[..ni]);
            }
            if given(dweights) {
                ints_mut(dweights, no, "destweights")?.copy_from_slice(&dw[..no]);
            }
        }
        Ok(())
    })
}

/// A neighbourhood collective: `per_dest` true sends block i of the
/// send buffer to out-neighbour i (alltoall), false the whole buffer to
/// each (allgather).
///
/// # Safety
/// MPI's contract for the buffers.
#[allow(clippy::too_many_arguments)]
unsafe fn neighbor(
    sbuf: *const c_void,
    scount: c_int,
    stype: Handle,
    rbuf: *mut c_void,
    rcount: c_int,
    rtype: Handle,
    comm: Handle,
    per_dest: bool,
) -> Result<(), MpiErr> {
    let (ins, outs) = graph::neighbors(hv(comm))?;
    let schunk = bytes_of(scount, &*lay(stype)?)?;
    let rchunk = bytes_of(rcount, &*lay(rtype)?)?;
    let sblocks = if per_dest { outs.len() } else { 1 };
    let total = c_int::try_from(sblocks)
        .ok()
        .and_then(|b| scount.checked_mul(b))
        .ok_or_else(|| MpiErr::new(crate::consts::err::COUNT, "send count too large"))?;
    // SAFETY: the caller's contract.
    let data = unsafe { send_data(sbuf, total, stype) }?;
    let sends: Vec<&[u8]> = (0..outs.len())
        .map(|i| {
            let at = if per_dest { i * schunk } else { 0 };
            &data[at..at + schunk]
        })
        .collect();
    let got = graph::exchange(hv(comm), &ins, &outs, &sends, rchunk)?;
    let rtotal = c_int::try_from(ins.len())
        .ok()
        .and_then(|n| rcount.checked_mul(n))
        .ok_or_else(|| MpiErr::new(crate::consts::err::COUNT, "receive count too large"))?;
    // SAFETY: the caller's contract.
    let mut area = unsafe { recv_area(rbuf, rtotal, rtype) }?;
    let b = area.bytes();
    for (i, d) in got.iter().enumerate() {
        if let Some(d) = d {
            let n = d.len().min(rchunk);
            b[i * rchunk..i * rchunk + n].copy_from_slice(&d[..n]);
        }
    }
    area.finish();
    Ok(())
}

/// `MPI_Neighbor_allgather`.
///
/// # Safety
/// MPI's contract for the buffers.
#[no_mangle]
pub unsafe extern "C" fn MPI_Neighbor_allgather(
    sbuf: *const c_void,
    scount: c_int,
    stype: Handle,
    rbuf: *mut c_void,
    rcount: c_int,
    rtype: Handle,
    comm: Handle,
) -> c_int {
    call("MPI_Neighbor_allgather", hv(comm), || {
        // SAFETY: the caller's contract.
        unsafe { neighbor(sbuf, scount, stype, rbuf, rcount, rtype, comm, false) }
    })
}

/// `MPI_Neighbor_alltoall`.
///
/// # Safety
/// MPI's contract for the buffers.
#[no_mangle]
pub unsafe extern "C" fn MPI_Neighbor_alltoall(
    sbuf: *const c_void,
    scount: c_int,
    stype: Handle,
    rbuf: *mut c_void,
    rcount: c_int,
    rtype: Handle,
    comm: Handle,
) -> c_int {
    call("MPI_Neighbor_alltoall", hv(comm), || {
        // SAFETY: the caller's contract.
        unsafe { neighbor(sbuf, scount, stype, rbuf, rcount, rtype, comm, true) }
    })
}

// The profiling interface (`PMPI_…`) of the functions above (build.rs).
include!(concat!(env!("OUT_DIR"), "/pmpi_graph.rs"));
