//! Groups, communicators made from groups, and user-defined operations.

use super::{call, hv, mk, out, ucount, Handle};
use crate::consts::{err, h, PROC_NULL, UNDEFINED};
use crate::engine::MpiErr;
use crate::handles::{reg, UserFn, UserOp, GROUP_EMPTY, GROUP_NULL, OP_NULL};
use crate::runtime::with;
use std::ffi::c_int;
use std::sync::Arc;

/// `MPI_IDENT`, `MPI_SIMILAR`, `MPI_UNEQUAL`.
const IDENT: c_int = 201;
const SIMILAR: c_int = 203;
const UNEQUAL: c_int = 204;

fn group(g: Handle) -> Result<Arc<Vec<u32>>, MpiErr> {
    reg().group(hv(g))
}

/// Stores a new group's handle.
///
/// # Safety
/// `new` is a writable handle.
unsafe fn put_group(members: Vec<u32>, new: *mut Handle) -> Result<(), MpiErr> {
    let id = reg().add_group(members);
    // SAFETY: the caller's contract.
    unsafe { out(new, mk(id), "newgroup") }
}

/// `n` ints at `p`.
///
/// # Safety
/// `p` holds `n` readable ints when `n > 0`.
unsafe fn ints(p: *const c_int, n: c_int, what: &str) -> Result<Vec<c_int>, MpiErr> {
    let n = ucount(n)?;
    if n == 0 {
        return Ok(Vec::new());
    }
    if p.is_null() {
        return Err(MpiErr::new(err::ARG, format!("{what} is NULL")));
    }
    // SAFETY: the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(p, n) }.to_vec())
}

/// Ranks of `g` named by `ranks`, each valid and named once.
fn pick(g: &[u32], ranks: &[c_int]) -> Result<Vec<usize>, MpiErr> {
    let mut seen = vec![false; g.len()];
    ranks
        .iter()
        .map(|&r| {
            let i = usize::try_from(r)
                .ok()
                .filter(|&i| i < g.len() && !seen[i])
                .ok_or_else(|| {
                    MpiErr::new(
                        err::RANK,
                        format!("rank {r} invalid or repeated (group of {})", g.len()),
                    )
                })?;
            seen[i] = true;
            Ok(i)
        })
        .collect()
}

/// The ranks of `n` (first, last, stride) triples.
///
/// # Safety
/// `ranges` holds `n` triples of ints.
unsafe fn ranges(g: &[u32], n: c_int, ranges: *const [c_int; 3]) -> Result<Vec<c_int>, MpiErr> {
    let n = ucount(n)?;
    if n > 0 && ranges.is_null() {
        return Err(MpiErr::new(err::ARG, "ranges is NULL"));
    }
    let mut out = Vec::new();
    for i in 0..n {
        // SAFETY: the caller's contract: i < n triples.
        let [first, last, stride] = unsafe { ranges.add(i).read() };
        if stride == 0 {
            return Err(MpiErr::new(err::ARG, "a range with stride 0"));
        }
        let mut r = first;
        while (stride > 0 && r <= last) || (stride < 0 && r >= last) {
            if out.len() >= g.len() {
                return Err(MpiErr::new(
                    err::RANK,
                    "ranges name more ranks than the group has",
                ));
            }
            out.push(r);
            r = match r.checked_add(stride) {
                Some(x) => x,
                None => break,
            };
        }
    }
    Ok(out)
}

/// `MPI_Comm_group`.
///
/// # Safety
/// `g` is a writable handle.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_group(comm: Handle, g: *mut Handle) -> c_int {
    call("MPI_Comm_group", hv(comm), || {
        let m = crate::inter::local_group(hv(comm))?.to_vec();
        // SAFETY: the caller's contract.
        unsafe { put_group(m, g) }
    })
}

/// `MPI_Group_size`.
///
/// # Safety
/// `size` is writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Group_size(g: Handle, size: *mut c_int) -> c_int {
    call("MPI_Group_size", h::COMM_WORLD, || {
        let n = group(g)?.len() as c_int;
        // SAFETY: the caller's contract.
        unsafe { out(size, n, "size") }
    })
}

/// `MPI_Group_rank`: `MPI_UNDEFINED` when the caller is not a member.
///
/// # Safety
/// `rank` is writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Group_rank(g: Handle, rank: *mut c_int) -> c_int {
    call("MPI_Group_rank", h::COMM_WORLD, || {
        let m = group(g)?;
        let me = with(|e| Ok(e.rank))?;
        let r = m
            .iter()
            .position(|&w| w == me)
            .map_or(UNDEFINED, |r| r as c_int);
        // SAFETY: the caller's contract.
        unsafe { out(rank, r, "rank") }
    })
}

/// `MPI_Group_incl`.
///
/// # Safety
/// `ranks` holds `n` ints; `new` is writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Group_incl(
    g: Handle,
    n: c_int,
    ranks: *const c_int,
    new: *mut Handle,
) -> c_int {
    call("MPI_Group_incl", h::COMM_WORLD, || {
        let m = group(g)?;
        // SAFETY: the caller's contract.
        let rs = unsafe { ints(ranks, n, "ranks") }?;
        let sel = pick(&m, &rs)?.into_iter().map(|i| m[i]).collect();
        // SAFETY: the caller's contract.
        unsafe { put_group(sel, new) }
    })
}

fn excl(m: &[u32], rs: &[c_int]) -> Result<Vec<u32>, MpiErr> {
    let out = pick(m, rs)?;
    Ok(m.iter()
        .enumerate()
        .filter(|(i, _)| !out.contains(i))
        .map(|(_, &w)| w)
        .collect())
}

/// `MPI_Group_excl`.
///
/// # Safety
/// `ranks` holds `n` ints; `new` is writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Group_excl(
    g: Handle,
    n: c_int,
    ranks: *const c_int,
    new: *mut Handle,
) -> c_int {
    call("MPI_Group_excl", h::COMM_WORLD, || {
        let m = group(g)?;
        // SAFETY: the caller's contract.
        let rs = unsafe { ints(ranks, n, "ranks") }?;
        let sel = excl(&m, &rs)?;
        // SAFETY: the caller's contract.
        unsafe { put_group(sel, new) }
    })
}

/// `MPI_Group_range_incl`.
///
/// # Safety
/// `r` holds `n` triples; `new` is writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Group_range_incl(
    g: Handle,
    n: c_int,
    r: *const [c_int; 3],
    new: *mut Handle,
) -> c_int {
    call("MPI_Group_range_incl", h::COMM_WORLD, || {
        let m = group(g)?;
        // SAFETY: the caller's contract.
        let rs = unsafe { ranges(&m, n, r) }?;
        let sel = pick(&m, &rs)?.into_iter().map(|i| m[i]).collect();
        // SAFETY: the caller's contract.
        unsafe { put_group(sel, new) }
    })
}

/// `MPI_Group_range_excl`.
///
/// # Safety
/// `r` holds `n` triples; `new` is writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Group_range_excl(
    g: Handle,
    n: c_int,
    r: *const [c_int; 3],
    new: *mut Handle,
) -> c_int {
    call("MPI_Group_range_excl", h::COMM_WORLD, || {
        let m = group(g)?;
        // SAFETY: the caller's contract.
        let rs = unsafe { ranges(&m, n, r) }?;
        let sel = excl(&m, &rs)?;
        // SAFETY: the caller's contract.
        unsafe { put_group(sel, new) }
    })
}

/// A set operation on two groups, keeping the first group's order then
/// the second's.
///
/// # Safety
/// `new` is writable.
unsafe fn set_op(
    name: &str,
    a: Handle,
    b: Handle,
    new: *mut Handle,
    f: fn(&[u32], &[u32]) -> Vec<u32>,
) -> c_int {
    call(name, h::COMM_WORLD, || {
        let (x, y) = (group(a)?, group(b)?);
        // SAFETY: the caller's contract.
        unsafe { put_group(f(&x, &y), new) }
    })
}

/// `MPI_Group_union`.
///
/// # Safety
/// `new` is writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Group_union(a: Handle, b: Handle, new: *mut Handle) -> c_int {
    // SAFETY: the caller's contract.
    unsafe {
        set_op("MPI_Group_union", a, b, new, |x, y| {
            let mut v = x.to_vec();
            v.extend(y.iter().filter(|w| !x.contains(w)));
            v
        })
    }
}

/// `MPI_Group_intersection`.
///
/// # Safety
/// `new` is writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Group_intersection(a: Handle, b: Handle, new: *mut Handle) -> c_int {
    // SAFETY: the caller's contract.
    unsafe {
        set_op("MPI_Group_intersection", a, b, new, |x, y| {
            x.iter().copied().filter(|w| y.contains(w)).collect()
        })
    }
}

/// `MPI_Group_difference`.
///
/// # Safety
/// `new` is writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Group_difference(a: Handle, b: Handle, new: *mut Handle) -> c_int {
    // SAFETY: the caller's contract.
    unsafe {
        set_op("MPI_Group_difference", a, b, new, |x, y| {
            x.iter().copied().filter(|w| !y.contains(w)).collect()
        })
    }
}

/// `MPI_Group_translate_ranks`: `MPI_UNDEFINED` for a task not in the
/// second group, `MPI_PROC_NULL` for `MPI_PROC_NULL`.
///
/// # Safety
/// `r1` holds `n` ints, `r2` room for `n`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Group_translate_ranks(
    a: Handle,
    n: c_int,
    r1: *const c_int,
    b: Handle,
    r2: *mut c_int,
) -> c_int {
    call("MPI_Group_translate_ranks", h::COMM_WORLD, || {
        let (x, y) = (group(a)?, group(b)?);
        // SAFETY: the caller's contract.
        let rs = unsafe { ints(r1, n, "ranks1") }?;
        if !rs.is_empty() && r2.is_null() {
            return Err(MpiErr::new(err::ARG, "ranks2 is NULL"));
        }
        for (i, &r) in rs.iter().enumerate() {
            let t = if r == PROC_NULL {
                PROC_NULL
            } else {
                let w = usize::try_from(r)
                    .ok()
                    .and_then(|r| x.get(r))
                    .ok_or_else(|| MpiErr::new(err::RANK, format!("invalid rank {r}")))?;
                y.iter()
                    .position(|v| v == w)
                    .map_or(UNDEFINED, |p| p as c_int)
            };
            // SAFETY: the caller's contract: i < n.
            unsafe { r2.add(i).write(t) };
        }
        Ok(())
    })
}

/// `MPI_Group_compare`.
///
/// # Safety
/// `result` is writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Group_compare(a: Handle, b: Handle, result: *mut c_int) -> c_int {
    call("MPI_Group_compare", h::COMM_WORLD, || {
        let (x, y) = (group(a)?, group(b)?);
        let r = if x == y {
            IDENT
        } else {
            let (mut p, mut q) = (x.to_vec(), y.to_vec());
            p.sort_unstable();
            q.sort_unstable();
            if p == q {
                SIMILAR
            } else {
                UNEQUAL
            }
        };
        // SAFETY: the caller's contract.
        unsafe { out(result, r, "result") }
    })
}

/// `MPI_Group_free`: the handle becomes `MPI_GROUP_NULL`.
///
/// # Safety
/// `g` is a writable handle.
#[no_mangle]
pub unsafe extern "C" fn MPI_Group_free(g: *mut Handle) -> c_int {
    call("MPI_Group_free", h::COMM_WORLD, || {
        if g.is_null() {
            return Err(MpiErr::new(err::ARG, "group is NULL"));
        }
        // SAFETY: non-null; the caller's contract.
        let v = hv(unsafe { g.read() });
        if v != GROUP_EMPTY && reg().groups.remove(&v).is_none() {
            return Err(MpiErr::new(err::GROUP, format!("invalid group {v:#x}")));
        }
        // SAFETY: the caller's contract.
        unsafe { out(g, mk(GROUP_NULL), "group") }
    })
}

/// `MPI_Comm_create`.
///
/// # Safety
/// `new` is a writable handle.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_create(comm: Handle, g: Handle, new: *mut Handle) -> c_int {
    call("MPI_Comm_create", hv(comm), || {
        let m = group(g)?;
        let c = crate::coll::comm_create(hv(comm), &m)?;
        // SAFETY: the caller's contract.
        unsafe { out(new, mk(c), "newcomm") }
    })
}

/// `MPI_Comm_create_group` (the tag is not needed: the members agree on
/// the communicator's collective context).
///
/// # Safety
/// `new` is a writable handle.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_create_group(
    comm: Handle,
    g: Handle,
    _tag: c_int,
    new: *mut Handle,
) -> c_int {
    call("MPI_Comm_create_group", hv(comm), || {
        let m = group(g)?;
        let c = crate::coll::comm_create_group(hv(comm), &m)?;
        // SAFETY: the caller's contract.
        unsafe { out(new, mk(c), "newcomm") }
    })
}

/// `MPI_Op_create`.
///
/// # Safety
/// `f` is an `MPI_User_function`; `op` is writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Op_create(
    f: Option<UserFn>,
    commute: c_int,
    op: *mut Handle,
) -> c_int {
    call("MPI_Op_create", h::COMM_WORLD, || {
        let func = f.ok_or_else(|| MpiErr::new(err::ARG, "user_fn is NULL"))?;
        let mut r = reg();
        let id = r.handle();
        r.ops.insert(
            id,
            UserOp {
                func,
                commute: commute != 0,
            },
        );
        drop(r);
        // SAFETY: the caller's contract.
        unsafe { out(op, mk(id), "op") }
    })
}

/// `MPI_Op_free`: the handle becomes `MPI_OP_NULL`.
///
/// # Safety
/// `op` is a writable handle.
#[no_mangle]
pub unsafe extern "C" fn MPI_Op_free(op: *mut Handle) -> c_int {
    call("MPI_Op_free", h::COMM_WORLD, || {
        if op.is_null() {
            return Err(MpiErr::new(err::ARG, "op is NULL"));
        }
        // SAFETY: non-null; the caller's contract.
        let v = hv(unsafe { op.read() });
        let busy = super::handles_in_use();
        let mut r = reg();
        if !r.ops.contains_key(&v) {
            return Err(MpiErr::new(
                err::OP,
                format!("{v:#x} is not a user-defined operation"),
            ));
        }
        r.retire(v, busy);
        drop(r);
        // SAFETY: the caller's contract.
        unsafe { out(op, mk(OP_NULL), "op") }
    })
}

/// `MPI_Op_commutative`.
///
/// # Safety
/// `commute` is writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Op_commutative(op: Handle, commute: *mut c_int) -> c_int {
    call("MPI_Op_commutative", h::COMM_WORLD, || {
        let c =
            if crate::types::op(hv(op)).is_some() {
                true
            } else {
                reg().ops.get(&hv(op)).map(|u| u.commute).ok_or_else(|| {
                    MpiErr::new(err::OP, format!("invalid operation {:#x}", hv(op)))
                })?
            };
        // SAFETY: the caller's contract.
        unsafe { out(commute, c as c_int, "commute") }
    })
}

// The profiling interface (`PMPI_…`) of the functions above (build.rs).
include!(concat!(env!("OUT_DIR"), "/pmpi_group.rs"));
