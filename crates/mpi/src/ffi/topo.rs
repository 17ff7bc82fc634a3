//! Cartesian topologies (see `crate::topo`).

use super::{call, hv, mk, out, Handle};
use crate::consts::{err, h};
use crate::engine::MpiErr;
use crate::topo;
use std::ffi::c_int;

/// `n` ints at `p`, read.
///
/// # Safety
/// `p` points to `n` readable ints when `n > 0`.
pub(super) unsafe fn ints<'a>(
    p: *const c_int,
    n: usize,
    what: &str,
) -> Result<&'a [c_int], MpiErr> {
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(MpiErr::new(err::ARG, format!("{what} is NULL")));
    }
    // SAFETY: the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

/// `n` ints at `p`, written.
///
/// # Safety
/// `p` points to `n` writable ints when `n > 0`.
pub(super) unsafe fn ints_mut<'a>(
    p: *mut c_int,
    n: usize,
    what: &str,
) -> Result<&'a mut [c_int], MpiErr> {
    if n == 0 {
        return Ok(&mut []);
    }
    if p.is_null() {
        return Err(MpiErr::new(err::ARG, format!("{what} is NULL")));
    }
    // SAFETY: the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts_mut(p, n) })
}

fn ndims(n: c_int) -> Result<usize, MpiErr> {
    usize::try_from(n)
        .ok()
        .filter(|&n| n <= 64)
        .ok_or_else(|| MpiErr::new(err::DIMS, format!("invalid number of dimensions {n}")))
}

/// `MPI_Dims_create`.
///
/// # Safety
/// `dims` holds `ndims` ints.
#[no_mangle]
pub unsafe extern "C" fn MPI_Dims_create(nnodes: c_int, nd: c_int, dims: *mut c_int) -> c_int {
    call("MPI_Dims_create", h::COMM_WORLD, || {
        // SAFETY: the caller's contract.
        let d = unsafe { ints_mut(dims, ndims(nd)?, "dims")? };
        topo::dims_create(nnodes, d)
    })
}

/// `MPI_Cart_create`.
///
/// # Safety
/// `dims` and `periods` hold `ndims` ints; `comm_cart` is writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Cart_create(
    comm: Handle,
    nd: c_int,
    dims: *const c_int,
    periods: *const c_int,
    _reorder: c_int,
    comm_cart: *mut Handle,
) -> c_int {
    call("MPI_Cart_create", hv(comm), || {
        let n = ndims(nd)?;
        // SAFETY: the caller's contract.
        let (d, p) = unsafe { (ints(dims, n, "dims")?, ints(periods, n, "periods")?) };
        let p: Vec<bool> = p.iter().map(|&x| x != 0).collect();
        let new = topo::cart_create(hv(comm), d, &p)?;
        // SAFETY: the caller's contract.
        unsafe { out(comm_cart, mk(new), "comm_cart") }
    })
}

/// The rank a task would have in a topology of `nodes` tasks built on
/// `comm` without reordering (`MPI_Cart_map`, `MPI_Graph_map`): its own,
/// or `MPI_UNDEFINED` past the topology's size.
fn map_rank(comm: Handle, nodes: i64) -> Result<c_int, MpiErr> {
    let (rank, size) = crate::runtime::with(|e| {
        let c = e.comm(hv(comm))?;
        Ok((c.rank, c.group.len()))
    })?;
    if nodes < 1 || nodes > size as i64 {
        return Err(MpiErr::new(
            err::DIMS,
            format!("a topology of {nodes} tasks on a communicator of {size}"),
        ));
    }
    Ok(if i64::from(rank) < nodes {
        rank as c_int
    } else {
        crate::consts::UNDEFINED
    })
}

/// `MPI_Cart_map`: the rank `MPI_Cart_create` would give (no reordering).
///
/// # Safety
/// `dims` and `periods` hold `ndims` ints; `newrank` is writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Cart_map(
    comm: Handle,
    nd: c_int,
    dims: *const c_int,
    periods: *const c_int,
    newrank: *mut c_int,
) -> c_int {
    call("MPI_Cart_map", hv(comm), || {
        let n = ndims(nd)?;
        // SAFETY: the caller's contract.
        let (d, _) = unsafe { (ints(dims, n, "dims")?, ints(periods, n, "periods")?) };
        let mut nodes = 1i64;
        for &x in d {
            if x < 1 {
                return Err(MpiErr::new(err::DIMS, format!("dimension {x}")));
            }
            nodes = nodes.saturating_mul(i64::from(x));
        }
        let r = map_rank(comm, nodes)?;
        // SAFETY: the caller's contract.
        unsafe { out(newrank, r, "newrank") }
    })
}

/// `MPI_Graph_map`: the rank `MPI_Graph_create` would give (no
/// reordering).
///
/// # Safety
/// `index` holds `nnodes` ints, `edges` as many as its last; `newrank`
/// is writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Graph_map(
    comm: Handle,
    nnodes: c_int,
    _index: *const c_int,
    _edges: *const c_int,
    newrank: *mut c_int,
) -> c_int {
    call("MPI_Graph_map", hv(comm), || {
        let r = map_rank(comm, i64::from(nnodes))?;
        // SAFETY: the caller's contract.
        unsafe { out(newrank, r, "newrank") }
    })
}

/// `MPI_Cart_get`.
///
/// # Safety
/// The three arrays hold `maxdims` ints.
#[no_mangle]
pub unsafe extern "C" fn MPI_Cart_get(
    comm: Handle,
    maxdims: c_int,
    dims: *mut c_int,
    periods: *mut c_int,
    coords: *mut c_int,
) -> c_int {
    call("MPI_Cart_get", hv(comm), || {
        let (c, me) = topo::cart_get(hv(comm))?;
        let n = c.dims.len().min(ndims(maxdims)?);
        // SAFETY: the caller's contract.
        unsafe {
            ints_mut(dims, n, "dims")?.copy_from_slice(&c.dims[..n]);
            for (o, &p) in ints_mut(periods, n, "periods")?.iter_mut().zip(&c.periods) {
                *o = c_int::from(p);
            }
            ints_mut(coords, n, "coords")?.copy_from_slice(&me[..n]);
        }
        Ok(())
    })
}

/// `MPI_Cartdim_get`.
///
/// # Safety
/// `nd` is writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Cartdim_get(comm: Handle, nd: *mut c_int) -> c_int {
    call("MPI_Cartdim_get", hv(comm), || {
        let n = topo::cartdim(hv(comm))?;
        // SAFETY: the caller's contract.
        unsafe { out(nd, n, "ndims") }
    })
}

/// `MPI_Cart_rank`.
///
/// # Safety
/// `coords` holds as many ints as the grid has dimensions.
#[no_mangle]
pub unsafe extern "C" fn MPI_Cart_rank(
    comm: Handle,
    coords: *const c_int,
    rank: *mut c_int,
) -> c_int {
    call("MPI_Cart_rank", hv(comm), || {
        let n = topo::cartdim(hv(comm))? as usize;
        // SAFETY: the caller's contract.
        let r = topo::cart_rank(hv(comm), unsafe { ints(coords, n, "coords")? })?;
        // SAFETY: the caller's contract.
        unsafe { out(rank, r, "rank") }
    })
}

/// `MPI_Cart_coords`.
///
/// # Safety
/// `coords` holds `maxdims` ints.
#[no_mangle]
pub unsafe extern "C" fn MPI_Cart_coords(
    comm: Handle,
    rank: c_int,
    maxdims: c_int,
    coords: *mut c_int,
) -> c_int {
    call("MPI_Cart_coords", hv(comm), || {
        let c = topo::cart_coords(hv(comm), rank)?;
        let n = c.len().min(ndims(maxdims)?);
        // SAFETY: the caller's contract.
        unsafe { ints_mut(coords, n, "coords")? }.copy_from_slice(&c[..n]);
        Ok(())
    })
}

/// `MPI_Cart_shift`.
///
/// # Safety
/// `source` and `dest` are writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Cart_shift(
    comm: Handle,
    direction: c_int,
    disp: c_int,
    source: *mut c_int,
    dest: *mut c_int,
) -> c_int {
    call("MPI_Cart_shift", hv(comm), || {
        let (s, d) = topo::cart_shift(hv(comm), direction, disp)?;
        // SAFETY: the caller's contract.
        unsafe {
            out(source, s, "rank_source")?;
            out(dest, d, "rank_dest")
        }
    })
}

/// `MPI_Cart_sub`.
///
/// # Safety
/// `remain_dims` holds as many ints as the grid has dimensions;
/// `newcomm` is writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Cart_sub(
    comm: Handle,
    remain_dims: *const c_int,
    newcomm: *mut Handle,
) -> c_int {
    call("MPI_Cart_sub", hv(comm), || {
        let n = topo::cartdim(hv(comm))? as usize;
        // SAFETY: the caller's contract.
        let keep: Vec<bool> = unsafe { ints(remain_dims, n, "remain_dims")? }
            .iter()
            .map(|&x| x != 0)
            .collect();
        let new = topo::cart_sub(hv(comm), &keep)?;
        // SAFETY: the caller's contract.
        unsafe { out(newcomm, mk(new), "newcomm") }
    })
}

/// `MPI_Topo_test`.
///
/// # Safety
/// `status` is writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Topo_test(comm: Handle, status: *mut c_int) -> c_int {
    call("MPI_Topo_test", hv(comm), || {
        crate::runtime::with(|e| e.comm(hv(comm)).map(|_| ()))?;
        // SAFETY: the caller's contract.
        unsafe { out(status, topo::topo_test(hv(comm)), "status") }
    })
}

// The profiling interface (`PMPI_…`) of the functions above (build.rs).
include!(concat!(env!("OUT_DIR"), "/pmpi_topo.rs"));
