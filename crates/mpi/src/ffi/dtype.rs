//! Datatypes: constructors, queries, names, pack/unpack and addresses.

use super::{call, hv, mk, out, ucount, Handle};
use crate::consts::{err, h};
use crate::dtype::{self, combiner, Envelope, Layout};
use crate::engine::MpiErr;
use crate::handles::{any_layout, reg, DATATYPE_NULL};
use std::ffi::{c_char, c_int, c_void};
use std::sync::Arc;

/// `n` values from the C array `p`.
///
/// # Safety
/// `p` holds `n` readable values when `n > 0`.
unsafe fn arr<T: Copy>(p: *const T, n: usize, what: &str) -> Result<Vec<T>, MpiErr> {
    if n == 0 {
        return Ok(Vec::new());
    }
    if p.is_null() {
        return Err(MpiErr::new(err::ARG, format!("{what} is NULL")));
    }
    // SAFETY: the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(p, n) }.to_vec())
}

fn wide(v: &[c_int]) -> Vec<i64> {
    v.iter().map(|&x| i64::from(x)).collect()
}

fn env(combiner: i32, ints: Vec<i32>, aints: Vec<isize>, types: Vec<usize>) -> Envelope {
    Envelope {
        combiner,
        ints,
        aints,
        types,
    }
}

/// Registers `l` and stores its handle in `new`.
///
/// # Safety
/// `new` is a writable handle.
unsafe fn create(l: Result<Layout, MpiErr>, new: *mut Handle) -> Result<(), MpiErr> {
    if new.is_null() {
        return Err(MpiErr::new(err::ARG, "newtype is NULL"));
    }
    let id = reg().add_type(l?);
    // SAFETY: the caller's contract.
    unsafe { out(new, mk(id), "newtype") }
}

/// `MPI_Type_contiguous`.
///
/// # Safety
/// `new` is a writable handle.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_contiguous(count: c_int, old: Handle, new: *mut Handle) -> c_int {
    call("MPI_Type_contiguous", h::COMM_WORLD, || {
        let o = any_layout(hv(old))?;
        let e = env(combiner::CONTIGUOUS, vec![count], vec![], vec![hv(old)]);
        let l = dtype::hvector(1, i64::from(count), 0, &o, e);
        // SAFETY: the caller's contract.
        unsafe { create(l, new) }
    })
}

/// `MPI_Type_vector`: a stride in elements of `old`.
///
/// # Safety
/// `new` is a writable handle.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_vector(
    count: c_int,
    bl: c_int,
    stride: c_int,
    old: Handle,
    new: *mut Handle,
) -> c_int {
    call("MPI_Type_vector", h::COMM_WORLD, || {
        let o = any_layout(hv(old))?;
        let e = env(
            combiner::VECTOR,
            vec![count, bl, stride],
            vec![],
            vec![hv(old)],
        );
        let s = (stride as isize).saturating_mul(o.extent);
        let l = dtype::hvector(i64::from(count), i64::from(bl), s, &o, e);
        // SAFETY: the caller's contract.
        unsafe { create(l, new) }
    })
}

/// `MPI_Type_create_hvector`: a stride in bytes.
///
/// # Safety
/// `new` is a writable handle.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_hvector(
    count: c_int,
    bl: c_int,
    stride: isize,
    old: Handle,
    new: *mut Handle,
) -> c_int {
    call("MPI_Type_create_hvector", h::COMM_WORLD, || {
        let o = any_layout(hv(old))?;
        let e = env(
            combiner::HVECTOR,
            vec![count, bl],
            vec![stride],
            vec![hv(old)],
        );
        let l = dtype::hvector(i64::from(count), i64::from(bl), stride, &o, e);
        // SAFETY: the caller's contract.
        unsafe { create(l, new) }
    })
}

/// The indexed constructors: block lengths (one for all when `bl` is
/// Some), displacements in elements (`scale` = extent) or bytes.
///
/// # Safety
/// The arrays hold `count` values; `new` is a writable handle.
#[allow(clippy::too_many_arguments)]
unsafe fn indexed(
    count: c_int,
    bls: *const c_int,
    bl: Option<c_int>,
    displs: Vec<isize>,
    elems: bool,
    old: Handle,
    comb: i32,
    new: *mut Handle,
) -> Result<(), MpiErr> {
    let n = ucount(count)?;
    let o = any_layout(hv(old))?;
    let lens = match bl {
        Some(b) => vec![b; n],
        // SAFETY: the caller's contract.
        None => unsafe { arr(bls, n, "array_of_blocklengths") }?,
    };
    let bytes: Vec<isize> = displs
        .iter()
        .map(|&d| if elems { d.saturating_mul(o.extent) } else { d })
        .collect();
    let mut ints = vec![count];
    match bl {
        Some(b) => ints.push(b),
        None => ints.extend_from_slice(&lens),
    }
    let aints = if elems {
        ints.extend(displs.iter().map(|&d| d as i32));
        vec![]
    } else {
        displs
    };
    let e = env(comb, ints, aints, vec![hv(old)]);
    let l = dtype::hindexed(&wide(&lens), &bytes, &o, e);
    // SAFETY: the caller's contract.
    unsafe { create(l, new) }
}

/// `n` int displacements as `isize`.
///
/// # Safety
/// `p` holds `n` ints.
unsafe fn int_displs(p: *const c_int, n: c_int) -> Result<Vec<isize>, MpiErr> {
    // SAFETY: the caller's contract.
    let v = unsafe { arr(p, ucount(n)?, "array_of_displacements") }?;
    Ok(v.iter().map(|&d| d as isize).collect())
}

/// `MPI_Type_indexed`.
///
/// # Safety
/// The arrays hold `count` ints; `new` is a writable handle.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_indexed(
    count: c_int,
    bls: *const c_int,
    displs: *const c_int,
    old: Handle,
    new: *mut Handle,
) -> c_int {
    call("MPI_Type_indexed", h::COMM_WORLD, || {
        // SAFETY: the caller's contract.
        unsafe {
            let d = int_displs(displs, count)?;
            indexed(count, bls, None, d, true, old, combiner::INDEXED, new)
        }
    })
}

/// `MPI_Type_create_hindexed`.
///
/// # Safety
/// The arrays hold `count` values; `new` is a writable handle.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_hindexed(
    count: c_int,
    bls: *const c_int,
    displs: *const isize,
    old: Handle,
    new: *mut Handle,
) -> c_int {
    call("MPI_Type_create_hindexed", h::COMM_WORLD, || {
        // SAFETY: the caller's contract.
        unsafe {
            let d = arr(displs, ucount(count)?, "array_of_displacements")?;
            indexed(count, bls, None, d, false, old, combiner::HINDEXED, new)
        }
    })
}

/// `MPI_Type_create_indexed_block`.
///
/// # Safety
/// `displs` holds `count` ints; `new` is a writable handle.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_indexed_block(
    count: c_int,
    bl: c_int,
    displs: *const c_int,
    old: Handle,
    new: *mut Handle,
) -> c_int {
    call("MPI_Type_create_indexed_block", h::COMM_WORLD, || {
        // SAFETY: the caller's contract.
        unsafe {
            let d = int_displs(displs, count)?;
            let c = combiner::INDEXED_BLOCK;
            indexed(count, std::ptr::null(), Some(bl), d, true, old, c, new)
        }
    })
}

/// `MPI_Type_create_hindexed_block`.
///
/// # Safety
/// `displs` holds `count` values; `new` is a writable handle.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_hindexed_block(
    count: c_int,
    bl: c_int,
    displs: *const isize,
    old: Handle,
    new: *mut Handle,
) -> c_int {
    call("MPI_Type_create_hindexed_block", h::COMM_WORLD, || {
        // SAFETY: the caller's contract.
        unsafe {
            let d = arr(displs, ucount(count)?, "array_of_displacements")?;
            let c = combiner::HINDEXED_BLOCK;
            indexed(count, std::ptr::null(), Some(bl), d, false, old, c, new)
        }
    })
}

/// `MPI_Type_create_struct`.
///
/// # Safety
/// The arrays hold `count` values; `new` is a writable handle.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_struct(
    count: c_int,
    bls: *const c_int,
    displs: *const isize,
    types: *const Handle,
    new: *mut Handle,
) -> c_int {
    call("MPI_Type_create_struct", h::COMM_WORLD, || {
        let n = ucount(count)?;
        // SAFETY: the caller's contract.
        let (lens, ds, ts) = unsafe {
            (
                arr(bls, n, "array_of_blocklengths")?,
                arr(displs, n, "array_of_displacements")?,
                arr(types, n, "array_of_types")?,
            )
        };
        let olds = ts
            .iter()
            .map(|&t| any_layout(hv(t)))
            .collect::<Result<Vec<Arc<Layout>>, _>>()?;
        let mut ints = vec![count];
        ints.extend_from_slice(&lens);
        let e = env(
            combiner::STRUCT,
            ints,
            ds.clone(),
            ts.iter().map(|&t| hv(t)).collect(),
        );
        let l = dtype::structure(&wide(&lens), &ds, &olds, e);
        // SAFETY: the caller's contract.
        unsafe { create(l, new) }
    })
}

/// `MPI_Type_create_subarray` (`MPI_ORDER_C` or `MPI_ORDER_FORTRAN`).
///
/// # Safety
/// The arrays hold `ndims` ints; `new` is a writable handle.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_subarray(
    ndims: c_int,
    sizes: *const c_int,
    subsizes: *const c_int,
    starts: *const c_int,
    order: c_int,
    old: Handle,
    new: *mut Handle,
) -> c_int {
    call("MPI_Type_create_subarray", h::COMM_WORLD, || {
        let n = ucount(ndims)?;
        // SAFETY: the caller's contract.
        let (a, b, c) = unsafe {
            (
                arr(sizes, n, "array_of_sizes")?,
                arr(subsizes, n, "array_of_subsizes")?,
                arr(starts, n, "array_of_starts")?,
            )
        };
        let o = any_layout(hv(old))?;
        let mut ints = vec![ndims];
        ints.extend(a.iter().chain(&b).chain(&c));
        ints.push(order);
        let e = env(combiner::SUBARRAY, ints, vec![], vec![hv(old)]);
        let l = dtype::subarray(&wide(&a), &wide(&b), &wide(&c), order, &o, e);
        // SAFETY: the caller's contract.
        unsafe { create(l, new) }
    })
}

/// `MPI_Type_create_resized`.
///
/// # Safety
/// `new` is a writable handle.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_resized(
    old: Handle,
    lb: isize,
    extent: isize,
    new: *mut Handle,
) -> c_int {
    call("MPI_Type_create_resized", h::COMM_WORLD, || {
        let o = any_layout(hv(old))?;
        let e = env(combiner::RESIZED, vec![], vec![lb, extent], vec![hv(old)]);
        // SAFETY: the caller's contract.
        unsafe { create(Ok(dtype::resized(&o, lb, extent, e)), new) }
    })
}

/// `MPI_Type_dup`: the same layout (committed if the original is).
///
/// # Safety
/// `new` is a writable handle.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_dup(old: Handle, new: *mut Handle) -> c_int {
    call("MPI_Type_dup", h::COMM_WORLD, || {
        let mut l = (*any_layout(hv(old))?).clone();
        l.env = env(combiner::DUP, vec![], vec![], vec![hv(old)]);
        // SAFETY: the caller's contract.
        unsafe { create(Ok(l), new) }?;
        // SAFETY: `create` wrote the handle.
        super::attr::copy_attrs(crate::attr::Obj::Type, hv(old), hv(unsafe { new.read() }))
    })
}

/// The handle at `dt`, which must be a created datatype.
///
/// # Safety
/// `dt` is null or a readable handle.
unsafe fn created(dt: *const Handle) -> Result<usize, MpiErr> {
    if dt.is_null() {
        return Err(MpiErr::new(err::ARG, "datatype pointer is NULL"));
    }
    // SAFETY: the caller's contract.
    let v = hv(unsafe { dt.read() });
    if !reg().types.contains_key(&v) {
        let what = if dtype::predefined(v).is_some() {
            "a predefined datatype"
        } else {
            "an invalid datatype"
        };
        return Err(MpiErr::new(err::TYPE, format!("{v:#x} is {what}")));
    }
    Ok(v)
}

/// `MPI_Type_commit`.
///
/// # Safety
/// `dt` is a readable handle.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_commit(dt: *mut Handle) -> c_int {
    call("MPI_Type_commit", h::COMM_WORLD, || {
        // A predefined type is committed already.
        // SAFETY: the caller's contract (checked for null first).
        if !dt.is_null() && dtype::predefined(hv(unsafe { dt.read() })).is_some() {
            return Ok(());
        }
        // SAFETY: the caller's contract.
        let v = unsafe { created(dt) }?;
        if let Some(l) = reg().types.get_mut(&v) {
            Arc::make_mut(l).committed = true;
        }
        Ok(())
    })
}

/// `MPI_Type_free`: operations using the type go on; the handle becomes
/// `MPI_DATATYPE_NULL`.
///
/// # Safety
/// `dt` is a writable handle.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_free(dt: *mut Handle) -> c_int {
    call("MPI_Type_free", h::COMM_WORLD, || {
        // SAFETY: the caller's contract.
        let v = unsafe { created(dt) }?;
        let deleted = super::attr::forget(crate::attr::Obj::Type, v);
        let busy = super::handles_in_use();
        reg().retire(v, busy);
        // SAFETY: the caller's contract.
        unsafe { out(dt, mk(DATATYPE_NULL), "datatype") }?;
        deleted
    })
}

/// `MPI_Type_size`.
///
/// # Safety
/// `size` is a writable int.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_size(dt: Handle, size: *mut c_int) -> c_int {
    call("MPI_Type_size", h::COMM_WORLD, || {
        let n = c_int::try_from(any_layout(hv(dt))?.size).unwrap_or(crate::consts::UNDEFINED);
        // SAFETY: the caller's contract.
        unsafe { out(size, n, "size") }
    })
}

/// `MPI_Type_size_x` and `MPI_Type_size_c`.
///
/// # Safety
/// `size` is a writable `MPI_Count`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_size_x(dt: Handle, size: *mut i64) -> c_int {
    call("MPI_Type_size_x", h::COMM_WORLD, || {
        let n = any_layout(hv(dt))?.size as i64;
        // SAFETY: the caller's contract.
        unsafe { out(size, n, "size") }
    })
}

/// Stores two values of `dt`'s layout chosen by `f`.
///
/// # Safety
/// `a` and `b` are writable.
unsafe fn pair<T>(
    name: &str,
    dt: Handle,
    a: *mut T,
    b: *mut T,
    f: impl Fn(&Layout) -> (T, T),
) -> c_int {
    call(name, h::COMM_WORLD, || {
        let (x, y) = f(&*any_layout(hv(dt))?);
        // SAFETY: the caller's contract.
        unsafe {
            out(a, x, "lb")?;
            out(b, y, "extent")
        }
    })
}

/// `MPI_Type_get_extent`.
///
/// # Safety
/// `lb` and `extent` are writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_extent(
    dt: Handle,
    lb: *mut isize,
    extent: *mut isize,
) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { pair("MPI_Type_get_extent", dt, lb, extent, |l| (l.lb, l.extent)) }
}

/// `MPI_Type_get_extent_x`.
///
/// # Safety
/// `lb` and `extent` are writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_extent_x(
    dt: Handle,
    lb: *mut i64,
    extent: *mut i64,
) -> c_int {
    // SAFETY: the caller's contract.
    unsafe {
        pair("MPI_Type_get_extent_x", dt, lb, extent, |l| {
            (l.lb as i64, l.extent as i64)
        })
    }
}

/// `MPI_Type_get_true_extent`: the span of the data itself.
///
/// # Safety
/// `lb` and `extent` are writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_true_extent(
    dt: Handle,
    lb: *mut isize,
    extent: *mut isize,
) -> c_int {
    // SAFETY: the caller's contract.
    unsafe {
        pair("MPI_Type_get_true_extent", dt, lb, extent, |l| {
            (l.true_lb, l.true_ub - l.true_lb)
        })
    }
}

/// `MPI_Type_get_true_extent_x`.
///
/// # Safety
/// `lb` and `extent` are writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_true_extent_x(
    dt: Handle,
    lb: *mut i64,
    extent: *mut i64,
) -> c_int {
    // SAFETY: the caller's contract.
    unsafe {
        pair("MPI_Type_get_true_extent_x", dt, lb, extent, |l| {
            (l.true_lb as i64, (l.true_ub - l.true_lb) as i64)
        })
    }
}

/// `MPI_Type_get_name`: a created type without a name has "".
///
/// # Safety
/// `name` holds `MPI_MAX_OBJECT_NAME` bytes; `len` is writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_name(
    dt: Handle,
    name: *mut c_char,
    len: *mut c_int,
) -> c_int {
    call("MPI_Type_get_name", h::COMM_WORLD, || {
        let l = any_layout(hv(dt))?;
        // SAFETY: the caller's contract.
        unsafe { super::init::put_str(&l.name, name, MAX_OBJECT_NAME, len, "type_name") }
    })
}

/// `MPI_MAX_OBJECT_NAME` of the header.
const MAX_OBJECT_NAME: usize = 128;

/// `MPI_Type_set_name` (created types; a name is cut to 127 bytes).
///
/// # Safety
/// `name` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_set_name(dt: Handle, name: *const c_char) -> c_int {
    call("MPI_Type_set_name", h::COMM_WORLD, || {
        // SAFETY: the caller's contract; at most 127 bytes are read.
        let s = unsafe { super::comm::c_name(name) }?;
        let mut r = reg();
        let l = r.types.get_mut(&hv(dt)).ok_or_else(|| {
            MpiErr::new(
                err::TYPE,
                format!("{:#x} is not a created datatype", hv(dt)),
            )
        })?;
        Arc::make_mut(l).name = s;
        Ok(())
    })
}

/// `MPI_Type_get_envelope`.
///
/// # Safety
/// The four outputs are writable ints.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_envelope(
    dt: Handle,
    ni: *mut c_int,
    na: *mut c_int,
    nd: *mut c_int,
    comb: *mut c_int,
) -> c_int {
    call("MPI_Type_get_envelope", h::COMM_WORLD, || {
        let l = any_layout(hv(dt))?;
        let e = &l.env;
        // SAFETY: the caller's contract.
        unsafe {
            out(ni, e.ints.len() as c_int, "num_integers")?;
            out(na, e.aints.len() as c_int, "num_addresses")?;
            out(nd, e.types.len() as c_int, "num_datatypes")?;
            out(comb, e.combiner, "combiner")
        }
    })
}

/// `MPI_Type_get_contents` (the datatypes returned are the ones the type
/// was made from).
///
/// # Safety
/// The arrays hold as many writable values as their maxima say.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_contents(
    dt: Handle,
    maxi: c_int,
    maxa: c_int,
    maxd: c_int,
    ints: *mut c_int,
    aints: *mut isize,
    types: *mut Handle,
) -> c_int {
    call("MPI_Type_get_contents", h::COMM_WORLD, || {
        let l = any_layout(hv(dt))?;
        let e = &l.env;
        if e.combiner == combiner::NAMED {
            return Err(MpiErr::new(
                err::TYPE,
                "a predefined datatype has no contents",
            ));
        }
        let fits = |n: usize, max: c_int| usize::try_from(max).is_ok_and(|m| m >= n);
        if !fits(e.ints.len(), maxi) || !fits(e.aints.len(), maxa) || !fits(e.types.len(), maxd) {
            return Err(MpiErr::new(err::ARG, "arrays too small for the contents"));
        }
        // SAFETY: the caller's contract; each length is within its maximum.
        unsafe {
            for (i, &v) in e.ints.iter().enumerate() {
                ints.add(i).write(v);
            }
            for (i, &v) in e.aints.iter().enumerate() {
                aints.add(i).write(v);
            }
            for (i, &v) in e.types.iter().enumerate() {
                types.add(i).write(mk(v));
            }
        }
        Ok(())
    })
}

/// `MPI_Get_address`.
///
/// # Safety
/// `addr` is writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Get_address(p: *const c_void, addr: *mut isize) -> c_int {
    // SAFETY: the caller's contract.
    call("MPI_Get_address", h::COMM_WORLD, || unsafe {
        out(addr, p as isize, "address")
    })
}

/// `MPI_Aint_add`.
#[no_mangle]
pub extern "C" fn MPI_Aint_add(base: isize, disp: isize) -> isize {
    base.wrapping_add(disp)
}

/// `MPI_Aint_diff`.
#[no_mangle]
pub extern "C" fn MPI_Aint_diff(a: isize, b: isize) -> isize {
    a.wrapping_sub(b)
}

/// `MPI_Pack_size`: an upper bound of the bytes `MPI_Pack` needs.
///
/// # Safety
/// `size` is writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Pack_size(
    count: c_int,
    dt: Handle,
    _comm: Handle,
    size: *mut c_int,
) -> c_int {
    call("MPI_Pack_size", h::COMM_WORLD, || {
        let n = c_int::try_from(super::nbytes(count, dt)?)
            .map_err(|_| MpiErr::new(err::COUNT, "packed size above INT_MAX"))?;
        // SAFETY: the caller's contract.
        unsafe { out(size, n, "size") }
    })
}

/// The position at `pos` as an offset of a buffer of `len` bytes.
///
/// # Safety
/// `pos` is null or a readable int.
unsafe fn position(pos: *const c_int, len: c_int) -> Result<(usize, usize), MpiErr> {
    if pos.is_null() {
        return Err(MpiErr::new(err::ARG, "position is NULL"));
    }
    // SAFETY: the caller's contract.
    let p = unsafe { pos.read() };
    let (Ok(p), Ok(l)) = (usize::try_from(p), usize::try_from(len)) else {
        return Err(MpiErr::new(
            err::ARG,
            format!("invalid position {p} or size {len}"),
        ));
    };
    if p > l {
        return Err(MpiErr::new(
            err::ARG,
            format!("position {p} past the buffer's {l} bytes"),
        ));
    }
    Ok((p, l))
}

/// `MPI_Pack`.
///
/// # Safety
/// MPI's contract: `inbuf` holds `incount` elements of `dt`, `outbuf`
/// `outsize` writable bytes; `position` is a writable int.
#[no_mangle]
pub unsafe extern "C" fn MPI_Pack(
    inbuf: *const c_void,
    incount: c_int,
    dt: Handle,
    outbuf: *mut c_void,
    outsize: c_int,
    pos: *mut c_int,
    _comm: Handle,
) -> c_int {
    call("MPI_Pack", h::COMM_WORLD, || {
        // SAFETY: the caller's contract.
        let (p, l) = unsafe { position(pos, outsize) }?;
        // SAFETY: the caller's contract for inbuf.
        let data = unsafe { super::send_data(inbuf, incount, dt) }?;
        if data.len() > l - p {
            return Err(MpiErr::new(
                err::TRUNCATE,
                format!("{} bytes do not fit the {} left", data.len(), l - p),
            ));
        }
        // SAFETY: the caller's contract: `outsize` bytes at outbuf.
        let o = unsafe { super::dst(outbuf, l) }?;
        o[p..p + data.len()].copy_from_slice(&data);
        // SAFETY: the caller's contract.
        unsafe { out(pos, (p + data.len()) as c_int, "position") }
    })
}

/// `MPI_Unpack`.
///
/// # Safety
/// MPI's contract: `inbuf` holds `insize` bytes, `outbuf` `outcount`
/// elements of `dt`; `position` is a writable int.
#[no_mangle]
pub unsafe extern "C" fn MPI_Unpack(
    inbuf: *const c_void,
    insize: c_int,
    pos: *mut c_int,
    outbuf: *mut c_void,
    outcount: c_int,
    dt: Handle,
    _comm: Handle,
) -> c_int {
    call("MPI_Unpack", h::COMM_WORLD, || {
        // SAFETY: the caller's contract.
        let (p, l) = unsafe { position(pos, insize) }?;
        let n = super::nbytes(outcount, dt)?;
        if n > l - p {
            return Err(MpiErr::new(
                err::TRUNCATE,
                format!("{n} bytes wanted, {} left", l - p),
            ));
        }
        // SAFETY: the caller's contract: `insize` bytes at inbuf; copied as
        // the buffers may not overlap but the area borrows outbuf.
        let data = unsafe { super::src(inbuf, l) }?[p..p + n].to_vec();
        // SAFETY: the caller's contract for outbuf.
        let mut a = unsafe { super::recv_area(outbuf, outcount, dt) }?;
        a.bytes().copy_from_slice(&data);
        a.finish();
        // SAFETY: the caller's contract.
        unsafe { out(pos, (p + n) as c_int, "position") }
    })
}

// The profiling interface (`PMPI_…`) of the functions above (build.rs).
include!(concat!(env!("OUT_DIR"), "/pmpi_dtype.rs"));
