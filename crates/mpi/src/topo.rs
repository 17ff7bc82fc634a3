//! Cartesian topologies: `Dims_create`, `Cart_create` and the queries on
//! a Cartesian communicator. A topology is kept beside the communicator
//! (by handle), since nothing else in the library looks at it.

use crate::consts::{err, h, PROC_NULL, UNDEFINED};
use crate::engine::MpiErr;
use std::collections::HashMap;
use std::sync::Mutex;

/// `MPI_CART` of `MPI_Topo_test`.
pub(crate) const CART: i32 = 211;

/// A Cartesian grid: extent and periodicity per dimension, row-major
/// ranks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Cart {
    pub dims: Vec<i32>,
    pub periods: Vec<bool>,
}

static CARTS: Mutex<Option<HashMap<usize, Cart>>> = Mutex::new(None);

fn carts() -> std::sync::MutexGuard<'static, Option<HashMap<usize, Cart>>> {
    CARTS.lock().unwrap_or_else(|e| e.into_inner())
}

/// The topology of `comm`, if it has one.
pub(crate) fn cart(comm: usize) -> Option<Cart> {
    carts().as_ref().and_then(|m| m.get(&comm).cloned())
}

fn need_cart(comm: usize) -> Result<Cart, MpiErr> {
    cart(comm).ok_or_else(|| {
        MpiErr::new(
            err::TOPOLOGY,
            format!("communicator {comm:#x} has no Cartesian topology"),
        )
    })
}

fn product(dims: &[i32]) -> Result<u64, MpiErr> {
    dims.iter().try_fold(1u64, |p, &d| {
        u64::try_from(d)
            .ok()
            .filter(|&d| d > 0)
            .and_then(|d| p.checked_mul(d))
            .ok_or_else(|| MpiErr::new(err::DIMS, format!("invalid dimension {d}")))
    })
}

/// `MPI_Dims_create`: fills the zero entries of `dims` so that their
/// product with the fixed ones is `nnodes`, as close to each other as
/// possible and in non-increasing order.
pub(crate) fn dims_create(nnodes: i32, dims: &mut [i32]) -> Result<(), MpiErr> {
    if nnodes < 1 {
        return Err(MpiErr::new(
            err::ARG,
            format!("invalid node count {nnodes}"),
        ));
    }
    if dims.iter().any(|&d| d < 0) {
        return Err(MpiErr::new(err::DIMS, "negative dimension"));
    }
    let fixed: i64 = dims
        .iter()
        .filter(|&&d| d > 0)
        .map(|&d| i64::from(d))
        .product();
    let free = dims.iter().filter(|&&d| d == 0).count();
    if i64::from(nnodes) % fixed != 0 {
        return Err(MpiErr::new(
            err::DIMS,
            format!("{nnodes} nodes do not divide into the given dimensions"),
        ));
    }
    if free == 0 {
        return if fixed == i64::from(nnodes) {
            Ok(())
        } else {
            Err(MpiErr::new(
                err::DIMS,
                format!("dimensions do not multiply to {nnodes}"),
            ))
        };
    }
    // Prime factors, largest first, each to the currently smallest part.
    let mut rest = i64::from(nnodes) / fixed;
    let mut factors = Vec::new();
    let mut f = 2;
    while f * f <= rest {
        while rest % f == 0 {
            factors.push(f);
            rest /= f;
        }
        f += 1;
    }
    if rest > 1 {
        factors.push(rest);
    }
    let mut parts = vec![1i64; free];
    for f in factors.into_iter().rev() {
        if let Some(p) = parts.iter_mut().min() {
            *p *= f;
        }
    }
    parts.sort_unstable_by(|a, b| b.cmp(a));
    let mut it = parts.into_iter();
    for d in dims.iter_mut().filter(|d| **d == 0) {
        *d = it.next().unwrap_or(1) as i32;
    }
    Ok(())
}

/// `MPI_Cart_create` (ranks are kept: `reorder` is allowed to do
/// nothing): members past the grid get `MPI_COMM_NULL`.
pub(crate) fn cart_create(comm: usize, dims: &[i32], periods: &[bool]) -> Result<usize, MpiErr> {
    let n = product(dims)?;
    let (rank, size) = crate::runtime::with(|e| {
        let c = e.comm(comm)?;
        Ok((c.rank, c.size()))
    })?;
    if n > u64::from(size) {
        return Err(MpiErr::new(
            err::DIMS,
            format!("a grid of {n} does not fit {size} processes"),
        ));
    }
    let color = if u64::from(rank) < n { 0 } else { UNDEFINED };
    let new = crate::coll::comm_split(comm, color, rank as i32)?;
    if new != h::COMM_NULL {
        carts().get_or_insert_with(HashMap::new).insert(
            new,
            Cart {
                dims: dims.to_vec(),
                periods: periods.to_vec(),
            },
        );
    }
    Ok(new)
}

impl Cart {
    /// The coordinates of `rank`.
    pub(crate) fn coords(&self, rank: i32) -> Result<Vec<i32>, MpiErr> {
        let n = product(&self.dims)?;
        if rank < 0 || rank as u64 >= n {
            return Err(MpiErr::new(err::RANK, format!("invalid rank {rank}")));
        }
        let mut r = rank;
        let mut c = vec![0; self.dims.len()];
        for (i, &d) in self.dims.iter().enumerate().rev() {
            c[i] = r % d;
            r /= d;
        }
        Ok(c)
    }

    /// The rank at `coords` (periodic dimensions wrap); `None` when a
    /// non-periodic coordinate is outside the grid.
    pub(crate) fn rank(&self, coords: &[i32]) -> Option<i32> {
        let mut r: i32 = 0;
        for ((&c, &d), &p) in coords.iter().zip(&self.dims).zip(&self.periods) {
            let c = if p {
                c.rem_euclid(d)
            } else if (0..d).contains(&c) {
                c
            } else {
                return None;
            };
            r = r * d + c;
        }
        Some(r)
    }

    /// `MPI_Cart_shift`: (source, dest) of a shift by `disp` along
    /// `direction`, `MPI_PROC_NULL` off a non-periodic edge.
    pub(crate) fn shift(&self, me: i32, direction: i32, disp: i32) -> Result<(i32, i32), MpiErr> {
        let d = usize::try_from(direction)
            .ok()
            .filter(|&d| d < self.dims.len())
            .ok_or_else(|| MpiErr::new(err::ARG, format!("invalid direction {direction}")))?;
        let c = self.coords(me)?;
        let at = |delta: i32| {
            let mut x = c.clone();
            x[d] = x[d].saturating_add(delta);
            self.rank(&x).unwrap_or(PROC_NULL)
        };
        Ok((at(disp.saturating_neg()), at(disp)))
    }
}

/// `MPI_Cart_rank`: a non-periodic coordinate outside the grid is an
/// error.
pub(crate) fn cart_rank(comm: usize, coords: &[i32]) -> Result<i32, MpiErr> {
    need_cart(comm)?
        .rank(coords)
        .ok_or_else(|| MpiErr::new(err::ARG, "coordinates outside a non-periodic grid"))
}

/// `MPI_Cart_coords`.
pub(crate) fn cart_coords(comm: usize, rank: i32) -> Result<Vec<i32>, MpiErr> {
    need_cart(comm)?.coords(rank)
}

/// `MPI_Cart_shift` for the calling process.
pub(crate) fn cart_shift(comm: usize, direction: i32, disp: i32) -> Result<(i32, i32), MpiErr> {
    let c = need_cart(comm)?;
    let me = crate::runtime::with(|e| Ok(e.comm(comm)?.rank as i32))?;
    c.shift(me, direction, disp)
}

/// `MPI_Cart_get`: dims, periods, our coordinates.
pub(crate) fn cart_get(comm: usize) -> Result<(Cart, Vec<i32>), MpiErr> {
    let c = need_cart(comm)?;
    let me = crate::runtime::with(|e| Ok(e.comm(comm)?.rank as i32))?;
    let coords = c.coords(me)?;
    Ok((c, coords))
}

/// `MPI_Cartdim_get`.
pub(crate) fn cartdim(comm: usize) -> Result<i32, MpiErr> {
    Ok(need_cart(comm)?.dims.len() as i32)
}

/// `MPI_Cart_sub`: the sub-grid of the kept dimensions through us.
pub(crate) fn cart_sub(comm: usize, remain: &[bool]) -> Result<usize, MpiErr> {
    let (c, coords) = cart_get(comm)?;
    if remain.len() != c.dims.len() {
        return Err(MpiErr::new(err::ARG, "remain_dims has the wrong length"));
    }
    // Processes agreeing on every dropped coordinate share a sub-grid;
    // the key orders them by their kept coordinates.
    let (mut color, mut key) = (0i64, 0i64);
    for ((&x, &d), &keep) in coords.iter().zip(&c.dims).zip(remain) {
        if keep {
            key = key * i64::from(d) + i64::from(x);
        } else {
            color = color * i64::from(d) + i64::from(x);
        }
    }
    let new = crate::coll::comm_split(comm, color as i32, key as i32)?;
    let sub = Cart {
        dims: c
            .dims
            .iter()
            .zip(remain)
            .filter(|(_, &k)| k)
            .map(|(&d, _)| d)
            .collect(),
        periods: c
            .periods
            .iter()
            .zip(remain)
            .filter(|(_, &k)| k)
            .map(|(&p, _)| p)
            .collect(),
    };
    carts().get_or_insert_with(HashMap::new).insert(new, sub);
    Ok(new)
}

/// `MPI_Topo_test`.
pub(crate) fn topo_test(comm: usize) -> i32 {
    use crate::graph::{Topo, DIST_GRAPH, GRAPH};
    if cart(comm).is_some() {
        CART
    } else {
        match crate::graph::topo(comm) {
            Some(Topo::Graph { .. }) => GRAPH,
            Some(Topo::Dist { .. }) => DIST_GRAPH,
            None => UNDEFINED,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dims_are_balanced_and_non_increasing() {
        let run = |n, d: &[i32]| {
            let mut d = d.to_vec();
            dims_create(n, &mut d).map(|_| d)
        };
        assert_eq!(run(6, &[0, 0]).unwrap(), [3, 2]);
        assert_eq!(run(7, &[0, 0]).unwrap(), [7, 1]);
        assert_eq!(run(24, &[0, 3, 0]).unwrap(), [4, 3, 2]);
        assert_eq!(run(16, &[0, 0, 0, 0]).unwrap(), [2, 2, 2, 2]);
        assert_eq!(run(12, &[0, 0, 0]).unwrap(), [3, 2, 2]);
        assert!(run(10, &[3, 0]).is_err());
        assert!(run(4, &[2, 3]).is_err());
    }

    #[test]
    fn coordinates_ranks_and_shifts() {
        let c = Cart {
            dims: vec![2, 3],
            periods: vec![false, true],
        };
        assert_eq!(c.coords(4).unwrap(), [1, 1]);
        assert_eq!(c.rank(&[1, -1]), Some(5));
        assert_eq!(c.rank(&[2, 0]), None);
        assert_eq!(c.shift(4, 1, 1).unwrap(), (3, 5));
        assert_eq!(c.shift(5, 1, 1).unwrap(), (4, 3));
        assert_eq!(c.shift(4, 0, 1).unwrap(), (1, PROC_NULL));
        assert!(c.shift(4, 2, 1).is_err());
    }
}
