//! One-sided communication: windows, `Put`, `Get`, accumulates, fences,
//! locks and flushes (see `crate::win`).

use super::collarg::reduction;
use super::{call, dst, hv, mk, nbytes, out, src, Handle};
use crate::buf::UserBuf;
use crate::consts::{err, h};
use crate::engine::MpiErr;
use crate::win::{self, combine, with_win};
use std::ffi::{c_int, c_void};

/// The communicator whose error handler a window's errors go to.
fn errcomm(w: Handle) -> usize {
    with_win(hv(w), |w, _| Ok(w.comm)).unwrap_or(h::COMM_WORLD)
}

/// The operation of an accumulate: predefined only (MPI forbids user
/// operations in one-sided communication).
fn rma_op(dt: Handle, o: Handle) -> Result<(crate::types::Op, crate::types::Num, usize), MpiErr> {
    match reduction(dt, o)? {
        crate::coll::Reduction::Pre { op, num, size } => Ok((op, num, size)),
        _ => Err(MpiErr::new(
            err::OP,
            "one-sided accumulates take predefined operations only",
        )),
    }
}

/// Bytes of `count` elements of `dt`, which must be contiguous (derived
/// types with gaps are not supported by one-sided operations yet).
fn rma_bytes(count: c_int, dt: Handle) -> Result<usize, MpiErr> {
    if !super::lay(dt)?.contiguous() {
        return Err(MpiErr::new(
            err::TYPE,
            "this one-sided call takes contiguous datatypes only (Put, Get, Accumulate and \
             Get_accumulate take any)",
        ));
    }
    nbytes(count, dt)
}

/// A window's size and displacement unit as the C call gives them.
fn window_args(size: isize, disp_unit: c_int) -> Result<(usize, u64), MpiErr> {
    let len = usize::try_from(size)
        .map_err(|_| MpiErr::new(err::SIZE, format!("invalid size {size}")))?;
    let unit = u64::try_from(disp_unit)
        .map_err(|_| MpiErr::new(err::DISP, format!("invalid disp_unit {disp_unit}")))?;
    Ok((len, unit))
}

/// What a `Put`, `Get` or `Accumulate` moves: the bytes, and with a
/// non-contiguous datatype on either side the pieces contiguous on both
/// (origin offset, target offset from the displacement, length). One
/// lookup of each datatype, also for the contiguous case.
fn rma_shape(
    ocount: c_int,
    otype: Handle,
    tcount: c_int,
    ttype: Handle,
) -> Result<(usize, Option<Vec<crate::rma_blocks::Piece>>), MpiErr> {
    let (o, t) = (super::lay(otype)?, super::lay(ttype)?);
    let n = super::bytes_of(ocount, &o)?;
    same_size(n, super::bytes_of(tcount, &t)?)?;
    if o.contiguous() && t.contiguous() {
        return Ok((n, None));
    }
    let (oc, tc) = (super::ucount(ocount)?, super::ucount(tcount)?);
    Ok((n, Some(crate::rma_blocks::pieces(&o, oc, &t, tc)?)))
}

/// Refuses a NULL buffer behind a non-zero byte count.
fn not_null(n: usize, null: bool) -> Result<(), MpiErr> {
    if n > 0 && null {
        return Err(MpiErr::new(
            err::BUFFER,
            "NULL buffer with a non-zero count",
        ));
    }
    Ok(())
}

fn same_size(a: usize, b: usize) -> Result<(), MpiErr> {
    if a != b {
        return Err(MpiErr::new(
            err::TYPE,
            format!("origin ({a} bytes) and target ({b} bytes) differ in size"),
        ));
    }
    Ok(())
}

/// `MPI_Win_create`.
///
/// # Safety
/// `base` points to `size` bytes that stay valid until the window is
/// freed; `win` is writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_create(
    base: *mut c_void,
    size: isize,
    disp_unit: c_int,
    _info: Handle,
    comm: Handle,
    win: *mut Handle,
) -> c_int {
    call("MPI_Win_create", hv(comm), || {
        let (len, unit) = window_args(size, disp_unit)?;
        let seg = if len == 0 {
            None
        } else {
            if base.is_null() {
                return Err(MpiErr::new(err::BASE, "NULL base with a non-zero size"));
            }
            let task = crate::runtime::with(|e| Ok(e.task.clone()))?;
            // SAFETY: the caller lends `len` bytes at `base` for the
            // window's life (MPI's contract); MBCF checks they are mapped.
            let seg =
                unsafe { task.register(base.cast(), len, sss_mbcf::Perm::ALL) }.map_err(|e| {
                    MpiErr::new(err::BASE, format!("registering the window memory: {e}"))
                })?;
            Some(seg)
        };
        let hd = win::create(hv(comm), seg, base as usize, len as u64, unit, false)?;
        // SAFETY: the caller's contract.
        unsafe { out(win, mk(hd), "win") }
    })
}

/// `MPI_Win_allocate`: the memory is shared memory MBCF reaches
/// directly from the same node.
///
/// # Safety
/// `baseptr` points to a writable `void *`; `win` is writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_allocate(
    size: isize,
    disp_unit: c_int,
    _info: Handle,
    comm: Handle,
    baseptr: *mut c_void,
    win: *mut Handle,
) -> c_int {
    call("MPI_Win_allocate", hv(comm), || {
        let (len, unit) = window_args(size, disp_unit)?;
        let task = crate::runtime::with(|e| Ok(e.task.clone()))?;
        let seg = (len > 0)
            .then(|| task.alloc(len, sss_mbcf::Perm::ALL))
            .transpose()
            .map_err(|e| MpiErr::new(err::NO_MEM, format!("window of {len} bytes: {e}")))?;
        let base = seg.as_ref().map_or(std::ptr::null_mut(), |s| s.as_ptr());
        let hd = win::create(hv(comm), seg, base as usize, len as u64, unit, true)?;
        // SAFETY: the caller's contract.
        unsafe {
            out(baseptr.cast::<*mut c_void>(), base.cast(), "baseptr")?;
            out(win, mk(hd), "win")
        }
    })
}

/// `MPI_Win_allocate_shared`: the members, tasks of one node, share one
/// segment, each its part of it, contiguous in rank order; every member
/// can load and store any part (`MPI_Win_shared_query`).
///
/// # Safety
/// `baseptr` points to a writable `void *`; `win` is writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_allocate_shared(
    size: isize,
    disp_unit: c_int,
    _info: Handle,
    comm: Handle,
    baseptr: *mut c_void,
    win: *mut Handle,
) -> c_int {
    call("MPI_Win_allocate_shared", hv(comm), || {
        let (len, unit) = window_args(size, disp_unit)?;
        let len = len as u64;
        let (hd, base) = crate::win_shared::allocate(hv(comm), len, unit)?;
        // SAFETY: the caller's contract.
        unsafe {
            out(
                baseptr.cast::<*mut c_void>(),
                base as *mut c_void,
                "baseptr",
            )?;
            out(win, mk(hd), "win")
        }
    })
}

/// `MPI_Win_shared_query`: size, displacement unit and local address of
/// a member's part of a shared-memory window.
///
/// # Safety
/// `size`, `disp_unit` and `baseptr` (a `void **`) are writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_shared_query(
    win: Handle,
    rank: c_int,
    size: *mut isize,
    disp_unit: *mut c_int,
    baseptr: *mut c_void,
) -> c_int {
    call("MPI_Win_shared_query", errcomm(win), || {
        let (len, unit, base) = crate::win_shared::query(hv(win), rank)?;
        let len = isize::try_from(len).map_err(|_| MpiErr::new(err::SIZE, "window size"))?;
        let unit = c_int::try_from(unit).map_err(|_| MpiErr::new(err::DISP, "disp_unit"))?;
        // SAFETY: the caller's contract.
        unsafe {
            out(size, len, "size")?;
            out(disp_unit, unit, "disp_unit")?;
            out(
                baseptr.cast::<*mut c_void>(),
                base as *mut c_void,
                "baseptr",
            )
        }
    })
}

/// `MPI_Win_set_errhandler`: the handler of errors raised on the window
/// (kept on the window's own communicator, which reports them): a
/// predefined one or one from `MPI_Win_create_errhandler`.
#[no_mangle]
pub extern "C" fn MPI_Win_set_errhandler(win: Handle, errh: Handle) -> c_int {
    call("MPI_Win_set_errhandler", errcomm(win), || {
        let c = with_win(hv(win), |w, _| Ok(w.comm))?;
        super::init::settable_errh(hv(errh), crate::errh::Kind::Win)?;
        crate::runtime::with(|g| {
            g.comms
                .get_mut(&c)
                .ok_or_else(|| MpiErr::new(err::WIN, "window without its communicator"))?
                .errh = hv(errh);
            Ok(())
        })
    })
}

/// `MPI_Win_get_errhandler`.
///
/// # Safety
/// `errh` is writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_get_errhandler(win: Handle, errh: *mut Handle) -> c_int {
    call("MPI_Win_get_errhandler", errcomm(win), || {
        let c = with_win(hv(win), |w, _| Ok(w.comm))?;
        let e = crate::runtime::with(|g| Ok(g.comm(c)?.errh))?;
        // SAFETY: the caller's contract.
        unsafe { out(errh, mk(e), "errhandler") }
    })
}

/// `MPI_Win_free`: completes everything, waits for every member, frees.
///
/// # Safety
/// `win` is a writable handle.
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_free(win: *mut Handle) -> c_int {
    // SAFETY: null-checked here; the caller's contract otherwise.
    let Some(w) = (unsafe { win.as_mut() }) else {
        return call("MPI_Win_free", h::COMM_WORLD, || {
            Err(MpiErr::new(err::ARG, "win is NULL"))
        });
    };
    call("MPI_Win_free", errcomm(*w), || {
        let hd = hv(*w);
        let comm = with_win(hd, |w, task| {
            if !w.held().is_empty() {
                return Err(MpiErr::new(
                    err::RMA_SYNC,
                    "freeing a window while holding a lock",
                ));
            }
            w.complete(task, None)?;
            Ok(w.comm)
        })?;
        crate::coll::barrier(comm)?;
        let deleted = super::attr::forget(crate::attr::Obj::Win, hd);
        crate::info::forget(crate::attr::Obj::Win, hd);
        let x = win::take(hd)?;
        let task = crate::runtime::with(|e| Ok(e.task.clone()))?;
        if let Some(seg) = x.release(&task) {
            let _ = task.free(seg);
        }
        let _ = crate::runtime::with(|e| Ok(e.comms.remove(&comm)));
        *w = mk(h::WIN_NULL);
        deleted
    })
}

/// `MPI_Win_fence`: completes every operation of the epoch, then waits
/// for every member.
#[no_mangle]
pub extern "C" fn MPI_Win_fence(_assert: c_int, win: Handle) -> c_int {
    call("MPI_Win_fence", errcomm(win), || {
        let comm = with_win(hv(win), |w, task| {
            w.complete(task, None)?;
            Ok(w.comm)
        })?;
        crate::coll::barrier(comm)
    })
}

/// `MPI_Win_lock`.
#[no_mangle]
pub extern "C" fn MPI_Win_lock(kind: c_int, rank: c_int, _assert: c_int, win: Handle) -> c_int {
    call("MPI_Win_lock", errcomm(win), || {
        win::lock(hv(win), kind, rank)
    })
}

/// `MPI_Win_unlock`.
#[no_mangle]
pub extern "C" fn MPI_Win_unlock(rank: c_int, win: Handle) -> c_int {
    call("MPI_Win_unlock", errcomm(win), || {
        with_win(hv(win), |w, t| w.unlock(t, rank))
    })
}

/// `MPI_Win_lock_all`: a shared lock on every member.
#[no_mangle]
pub extern "C" fn MPI_Win_lock_all(_assert: c_int, win: Handle) -> c_int {
    call("MPI_Win_lock_all", errcomm(win), || {
        let n = with_win(hv(win), |w, _| Ok(w.size()))?;
        (0..n as i32).try_for_each(|r| win::lock(hv(win), win::LOCK_SHARED, r))
    })
}

/// `MPI_Win_unlock_all`.
#[no_mangle]
pub extern "C" fn MPI_Win_unlock_all(win: Handle) -> c_int {
    call("MPI_Win_unlock_all", errcomm(win), || {
        with_win(hv(win), |w, t| {
            let mut held = w.held();
            held.sort_unstable();
            held.into_iter().try_for_each(|r| w.unlock(t, r as i32))
        })
    })
}

fn flush(name: &str, win: Handle, rank: Option<c_int>) -> c_int {
    call(name, errcomm(win), || {
        with_win(hv(win), |w, task| {
            let t =
                match rank {
                    Some(r) => Some(u32::try_from(r).ok().filter(|&t| t < w.size()).ok_or_else(
                        || MpiErr::new(err::RANK, format!("invalid target rank {r}")),
                    )?),
                    None => None,
                };
            w.complete(task, t)
        })
    })
}

/// `MPI_Win_flush`.
#[no_mangle]
pub extern "C" fn MPI_Win_flush(rank: c_int, win: Handle) -> c_int {
    flush("MPI_Win_flush", win, Some(rank))
}

/// `MPI_Win_flush_all`.
#[no_mangle]
pub extern "C" fn MPI_Win_flush_all(win: Handle) -> c_int {
    flush("MPI_Win_flush_all", win, None)
}

/// `MPI_Win_flush_local` (remote completion, which implies local).
#[no_mangle]
pub extern "C" fn MPI_Win_flush_local(rank: c_int, win: Handle) -> c_int {
    flush("MPI_Win_flush_local", win, Some(rank))
}

/// `MPI_Win_flush_local_all`.
#[no_mangle]
pub extern "C" fn MPI_Win_flush_local_all(win: Handle) -> c_int {
    flush("MPI_Win_flush_local_all", win, None)
}

/// `MPI_Win_sync`: windows are unified (one copy), so only a fence of
/// this process's memory accesses.
#[no_mangle]
pub extern "C" fn MPI_Win_sync(win: Handle) -> c_int {
    call("MPI_Win_sync", errcomm(win), || {
        with_win(hv(win), |_, _| {
            std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
            Ok(())
        })
    })
}

/// `MPI_Win_get_attr`: base, size, displacement unit, flavor, model,
/// and the program's keys.
///
/// # Safety
/// `value` points to a writable pointer, `flag` to a writable int.
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_get_attr(
    win: Handle,
    key: c_int,
    value: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    call("MPI_Win_get_attr", errcomm(win), || {
        let (base, size, unit, flavor) = with_win(hv(win), |w, _| {
            // MPI_WIN_FLAVOR_SHARED, _DYNAMIC, _ALLOCATE, _CREATE.
            let flavor: isize = if w.shared.is_some() {
                314
            } else if w.dynamic.is_some() {
                313
            } else if w.allocated {
                312
            } else {
                311
            };
            Ok((w.base, w.size as isize, w.disp_unit as isize, flavor))
        })?;
        // Attribute values are returned by address and must outlive the
        // call: each distinct value is kept once for the process.
        static VALUES: std::sync::Mutex<Vec<&'static isize>> = std::sync::Mutex::new(Vec::new());
        let keep = |v: isize| -> *const isize {
            let mut g = VALUES.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(b) = g.iter().find(|b| ***b == v) {
                return *b;
            }
            let b: &'static isize = Box::leak(Box::new(v));
            g.push(b);
            b
        };
        let v: Option<*mut c_void> = match key {
            601 => Some(base as *mut c_void),
            602 => Some(keep(unit).cast_mut().cast()),
            603 => Some(keep(size).cast_mut().cast()),
            604 => Some(keep(flavor).cast_mut().cast()),
            605 => Some(keep(321).cast_mut().cast()),
            k => super::attr::user_attr(crate::attr::Obj::Win, hv(win), k)?.map(mk),
        };
        // SAFETY: the caller's contract.
        unsafe {
            if let Some(v) = v {
                out(value.cast::<*mut c_void>(), v, "attribute_val")?;
            }
            out(flag, c_int::from(v.is_some()), "flag")
        }
    })
}

/// `MPI_Put`.
///
/// # Safety
/// MPI's contract for the origin buffer.
#[no_mangle]
pub unsafe extern "C" fn MPI_Put(
    origin: *const c_void,
    ocount: c_int,
    otype: Handle,
    target: c_int,
    disp: isize,
    tcount: c_int,
    ttype: Handle,
    win: Handle,
) -> c_int {
    call("MPI_Put", errcomm(win), || {
        let (n, pieces) = rma_shape(ocount, otype, tcount, ttype)?;
        if let Some(pieces) = pieces {
            not_null(n, origin.is_null())?;
            return with_win(hv(win), |w, t| {
                for (o, x, len) in pieces {
                    // SAFETY: the caller's contract: the origin's type map
                    // lies in its buffer; MBCF copies the bytes before
                    // returning.
                    let data = unsafe { src(origin.cast::<u8>().offset(o as isize).cast(), len)? };
                    w.put_plus(t, data, target, disp as i64, x)?;
                }
                Ok(())
            });
        }
        // SAFETY: the caller's contract; MBCF copies the bytes before
        // returning, so the buffer is free again at once.
        let data = unsafe { src(origin, n)? };
        with_win(hv(win), |w, t| w.put(t, data, target, disp as i64))
    })
}

/// `MPI_Get`.
///
/// # Safety
/// MPI's contract: the origin buffer stays valid until the operation
/// completes (fence, flush, unlock).
#[no_mangle]
pub unsafe extern "C" fn MPI_Get(
    origin: *mut c_void,
    ocount: c_int,
    otype: Handle,
    target: c_int,
    disp: isize,
    tcount: c_int,
    ttype: Handle,
    win: Handle,
) -> c_int {
    call("MPI_Get", errcomm(win), || {
        let (n, pieces) = rma_shape(ocount, otype, tcount, ttype)?;
        if let Some(pieces) = pieces {
            not_null(n, origin.is_null())?;
            return with_win(hv(win), |w, t| {
                for (o, x, len) in pieces {
                    // SAFETY: the caller's contract: the origin's type map
                    // lies in its buffer, which stays valid until the
                    // operation completes.
                    let dest = unsafe { UserBuf::new(origin.cast::<u8>().offset(o as isize), len) };
                    w.get_plus(t, dest, target, disp as i64, x)?;
                }
                Ok(())
            });
        }
        not_null(n, origin.is_null())?;
        // SAFETY: the caller's contract.
        let dest = unsafe { UserBuf::new(origin.cast(), n) };
        with_win(hv(win), |w, t| w.get(t, dest, target, disp as i64))
    })
}

/// `MPI_Accumulate`.
///
/// # Safety
/// MPI's contract for the origin buffer.
#[no_mangle]
pub unsafe extern "C" fn MPI_Accumulate(
    origin: *const c_void,
    ocount: c_int,
    otype: Handle,
    target: c_int,
    disp: isize,
    tcount: c_int,
    ttype: Handle,
    op: Handle,
    win: Handle,
) -> c_int {
    call("MPI_Accumulate", errcomm(win), || {
        let (n, pieces) = rma_shape(ocount, otype, tcount, ttype)?;
        if let Some(pieces) = pieces {
            // Both type maps of one basic type (MPI's rule); each piece
            // is atomic on its own, as MPI asks of every basic element.
            let (rop, rnum, rsize) = rma_op(ttype, op)?;
            rma_op(otype, op)?;
            not_null(n, origin.is_null())?;
            return with_win(hv(win), |w, t| {
                for (o, x, len) in pieces {
                    // SAFETY: the caller's contract: the origin's type map
                    // lies in its buffer.
                    let data = unsafe { src(origin.cast::<u8>().offset(o as isize).cast(), len)? };
                    w.atomic_plus(t, target, disp as i64, x, len, |old| {
                        combine(rop, rnum, rsize, data, old)
                    })?;
                }
                Ok(())
            });
        }
        let (rop, rnum, rsize) = rma_op(ttype, op)?;
        // SAFETY: the caller's contract.
        let data = unsafe { src(origin, n)? };
        with_win(hv(win), |w, t| {
            w.atomic(t, target, disp as i64, n, |old| {
                combine(rop, rnum, rsize, data, old)
            })
            .map(|_| ())
        })
    })
}

/// `MPI_Get_accumulate`.
///
/// # Safety
/// MPI's contract for the origin and result buffers.
#[no_mangle]
pub unsafe extern "C" fn MPI_Get_accumulate(
    origin: *const c_void,
    ocount: c_int,
    otype: Handle,
    result: *mut c_void,
    rcount: c_int,
    rtype: Handle,
    target: c_int,
    disp: isize,
    tcount: c_int,
    ttype: Handle,
    op: Handle,
    win: Handle,
) -> c_int {
    call("MPI_Get_accumulate", errcomm(win), || {
        let (rop, rnum, rsize) = rma_op(ttype, op)?;
        let (o, r, t) = (super::lay(otype)?, super::lay(rtype)?, super::lay(ttype)?);
        let nothing = rop == crate::types::Op::Nothing;
        let n = super::bytes_of(tcount, &t)?;
        if !nothing {
            rma_op(otype, op)?;
            same_size(super::bytes_of(ocount, &o)?, n)?;
        }
        same_size(super::bytes_of(rcount, &r)?, n)?;
        if !(t.contiguous() && r.contiguous() && (nothing || o.contiguous())) {
            // Derived datatypes: the origin packed, the target cut into
            // its blocks (each an atomic read-modify-write, as MPI asks
            // of every basic element), the old values unpacked into the
            // result's type map.
            not_null(n, result.is_null() || (!nothing && origin.is_null()))?;
            let mut packed = Vec::new();
            if !nothing {
                // SAFETY: the caller's contract: the origin's type map
                // lies in its buffer.
                unsafe { crate::buf::pack(origin.cast(), super::ucount(ocount)?, &o, &mut packed) };
            }
            // `MPI_BYTE` (0x247 in the standard ABI): the packed side.
            let byte = super::lay(super::mk(0x247))?;
            let pieces = crate::rma_blocks::pieces(&byte, n, &t, super::ucount(tcount)?)?;
            let mut old = vec![0u8; n];
            with_win(hv(win), |w, task| {
                for &(po, x, len) in &pieces {
                    let po = po as usize;
                    let data = packed.get(po..po + len).unwrap_or(&[]);
                    let got = w.atomic_plus(task, target, disp as i64, x, len, |cur| {
                        combine(rop, rnum, rsize, data, cur)
                    })?;
                    let k = got.len().min(len);
                    old[po..po + k].copy_from_slice(&got[..k]);
                }
                Ok(())
            })?;
            // SAFETY: the caller's contract: the result's type map lies
            // in its buffer, apart from `old`.
            unsafe { crate::buf::unpack(result.cast(), super::ucount(rcount)?, &r, &old) };
            return Ok(());
        }
        // SAFETY: the caller's contract (the origin is not read for NO_OP).
        let data = if rop == crate::types::Op::Nothing {
            &[][..]
        } else {
            unsafe { src(origin, n)? }
        };
        let old = with_win(hv(win), |w, t| {
            w.atomic(t, target, disp as i64, n, |old| {
                combine(rop, rnum, rsize, data, old)
            })
        })?;
        // SAFETY: the caller's contract.
        unsafe { dst(result, n)? }.copy_from_slice(&old[..n]);
        Ok(())
    })
}

/// `MPI_Fetch_and_op`: one element.
///
/// # Safety
/// MPI's contract for the origin and result buffers.
#[no_mangle]
pub unsafe extern "C" fn MPI_Fetch_and_op(
    origin: *const c_void,
    result: *mut c_void,
    dt: Handle,
    target: c_int,
    disp: isize,
    op: Handle,
    win: Handle,
) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { MPI_Get_accumulate(origin, 1, dt, result, 1, dt, target, disp, 1, dt, op, win) }
}

/// `MPI_Compare_and_swap`: one element.
///
/// # Safety
/// MPI's contract for the three buffers.
#[no_mangle]
pub unsafe extern "C" fn MPI_Compare_and_swap(
    origin: *const c_void,
    compare: *const c_void,
    result: *mut c_void,
    dt: Handle,
    target: c_int,
    disp: isize,
    win: Handle,
) -> c_int {
    call("MPI_Compare_and_swap", errcomm(win), || {
        let n = rma_bytes(1, dt)?;
        // SAFETY: the caller's contract.
        let (new, cmp) = unsafe { (src(origin, n)?, src(compare, n)?) };
        let old = with_win(hv(win), |w, t| {
            w.atomic(t, target, disp as i64, n, |old| {
                Ok((old == cmp).then(|| new.to_vec()))
            })
        })?;
        // SAFETY: the caller's contract.
        unsafe { dst(result, n)? }.copy_from_slice(&old[..n]);
        Ok(())
    })
}

// The profiling interface (`PMPI_…`) of the functions above (build.rs).
include!(concat!(env!("OUT_DIR"), "/pmpi_win.rs"));
