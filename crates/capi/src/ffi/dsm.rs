//! `sss_dsm_*`: the shared heap (ADSM) for C, over the `sss-dsm` crate.
//! Same conventions as the other entry points: pointers checked, panics
//! caught, outputs written only on success.

use super::{fill, guard, guard_value, obj, out, put, put_handle};
use crate::handle::{not_in_handler, TaskObj};
use crate::status::{Failure, Status};
use crate::types::DsmStats;
use sss_dsm::{Config, Dsm, Placement, Protocol, WriteMode};
use std::borrow::Cow;
use std::ffi::c_void;
use std::sync::Mutex;

/// The object behind `sss_dsm_h`. The heap lives in `Option` so
/// `sss_dsm_finalize` can run the collective finalize by value.
pub struct DsmObj {
    dsm: Mutex<Option<Dsm>>,
    writes: WriteMode,
    /// `Dsm::can_adopt`, fixed when the heap opens.
    can_adopt: bool,
}

fn failure(e: sss_dsm::Error) -> Failure {
    let status = match &e {
        sss_dsm::Error::Mbcf(m) => return Failure::from(clone_mbcf(m)),
        sss_dsm::Error::Io(_) => Status::Io,
        sss_dsm::Error::OutOfMemory(_) | sss_dsm::Error::NoAddress => Status::NoMemory,
        sss_dsm::Error::Invalid(_) | sss_dsm::Error::Setting(_) | sss_dsm::Error::Mismatch(_) => {
            Status::InvalidParam
        }
        sss_dsm::Error::Stalled(_) => Status::TimedOut,
        // Creating the heap is part of joining the job's shared memory.
        sss_dsm::Error::PeerFailed(_) => Status::Boot,
    };
    Failure {
        status,
        detail: Cow::Owned(e.to_string()),
    }
}

/// The MBCF error's status and text (MBCF errors are not Clone).
fn clone_mbcf(e: &sss_mbcf::Error) -> sss_mbcf::Error {
    match e {
        sss_mbcf::Error::Remote(s) => sss_mbcf::Error::Remote(*s),
        sss_mbcf::Error::PeerDown(r) => sss_mbcf::Error::PeerDown(*r),
        sss_mbcf::Error::NoSuchTask(r) => sss_mbcf::Error::NoSuchTask(*r),
        sss_mbcf::Error::Invalid(m) => sss_mbcf::Error::Invalid(m),
        sss_mbcf::Error::Shutdown => sss_mbcf::Error::Shutdown,
        sss_mbcf::Error::Setting(s) => sss_mbcf::Error::Setting(s.clone()),
        other => sss_mbcf::Error::Boot(other.to_string()),
    }
}

fn with<T>(d: &DsmObj, f: impl FnOnce(&Dsm) -> Result<T, sss_dsm::Error>) -> Result<T, Failure> {
    with_failure(d, |h| f(h).map_err(failure))
}

/// Like `with`, for closures that build their own failures.
fn with_failure<T>(d: &DsmObj, f: impl FnOnce(&Dsm) -> Result<T, Failure>) -> Result<T, Failure> {
    let g = d.dsm.lock().unwrap_or_else(|e| e.into_inner());
    let dsm = g
        .as_ref()
        .ok_or_else(|| Failure::new(Status::Shutdown, "heap finalized"))?;
    // Notes the header logged go in before anything else happens.
    super::notelog::drain(d, dsm).map_err(failure)?;
    f(dsm)
}

fn placement(kind: u32, param: u32) -> Result<Placement, Failure> {
    Ok(match kind {
        0 => Placement::Block,
        1 => Placement::Cyclic(param.max(1)),
        2 => Placement::FirstTouch,
        3 => Placement::Explicit(param),
        _ => return Err(Failure::invalid("unknown placement")),
    })
}

/// A protocol code of the header (1..=6; 0 is handled by the caller).
fn protocol_of(code: u32) -> Result<Protocol, Failure> {
    Protocol::from_code(code).ok_or_else(|| Failure::invalid("unknown protocol"))
}

/// The protocol for `code`, 0 meaning the heap's default.
fn protocol_or_default(h: &Dsm, code: u32) -> Result<Protocol, Failure> {
    if code == 0 {
        Ok(h.config().protocol)
    } else {
        protocol_of(code)
    }
}

/// See `sss_dsm_init` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_dsm_init(
    task: *const TaskObj,
    protocol: u32,
    writes: u32,
    dsm_p: *mut *mut DsmObj,
) -> Status {
    guard(|| {
        // SAFETY: header contract for handles.
        let t = unsafe { obj(task, "task") }?;
        not_in_handler()?;
        let p = out(dsm_p, "dsm_p")?;
        let mut cfg = Config::from_env().map_err(|e| failure(e.into()))?;
        if protocol != 0 {
            cfg.protocol = protocol_of(protocol)?;
        }
        match writes {
            0 => {}
            1 => cfg.writes = WriteMode::Note,
            2 => cfg.writes = WriteMode::Trap,
            3 => {
                cfg.writes = WriteMode::Note;
                cfg.userfaultfd = false;
            }
            _ => return Err(Failure::invalid("unknown write mode")),
        }
        if super::rcop::udsm_binary() {
            // Built with `sss cc --udsm`: its loads and stores check the
            // presence map, so nothing needs userfaultfd.
            if cfg.writes == WriteMode::Trap {
                return Err(Failure::invalid(
                    "a program built with `sss cc --udsm` runs the DSM in note mode \
                     (trap mode needs userfaultfd)",
                ));
            }
            cfg.userfaultfd = false;
        }
        // Built with `sss cc -fsss-opt=no` or `ia` (no `mb`): a packet a
        // note, for the seeds' tables (notes are no-ops in trap mode).
        cfg.combine = !(super::rcop::separate_binary() && cfg.writes == WriteMode::Note);
        let dsm = Dsm::new(t.task(), cfg).map_err(failure)?;
        let (base, len) = (dsm.base() as usize, dsm.len());
        let presence = dsm.presence();
        let obj = DsmObj {
            writes: dsm.config().writes,
            can_adopt: dsm.can_adopt(),
            dsm: Mutex::new(Some(dsm)),
        };
        let note = obj.writes == WriteMode::Note;
        // SAFETY: checked non-null and aligned.
        unsafe { put_handle(p, obj) };
        // SAFETY: put_handle just stored a live handle there.
        let h = unsafe { *p };
        // SAFETY: the handle is live (just made) and not yet shared.
        let o = unsafe { &*h };
        if let Some(dsm) = o.dsm.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
            super::notelog::register(h, dsm);
        }
        if note {
            // SAFETY: put_handle just stored the handle there.
            super::rcop::register(unsafe { *p }, base, len, presence, t.task());
        }
        Ok(())
    })
}

/// See `sss_dsm_finalize` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_dsm_finalize(dsm: *mut DsmObj) -> Status {
    guard(|| {
        // SAFETY: header contract for handles.
        let d = unsafe { obj(dsm, "dsm") }?;
        not_in_handler()?;
        super::rcop::unregister(dsm);
        let heap = d.dsm.lock().unwrap_or_else(|e| e.into_inner()).take();
        // Logged notes belong to the last release.
        let drained = heap
            .as_ref()
            .map_or(Ok(()), |h| super::notelog::drain(dsm, h));
        super::notelog::unregister(dsm);
        let rank = heap.as_ref().map(|h| h.rank());
        let r = heap.map(|h| h.finalize());
        if let Some(rank) = rank {
            super::rcop::report(rank);
        }
        // SAFETY: the handle came from Box::into_raw in sss_dsm_init and
        // the caller gives it up here.
        drop(unsafe { Box::from_raw(dsm) });
        match (drained, r) {
            (Err(e), _) | (_, Some(Err(e))) => Err(failure(e)),
            _ => Ok(()),
        }
    })
}

/// See `sss_dsm_malloc` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_dsm_malloc(
    dsm: *const DsmObj,
    len: usize,
    placement_kind: u32,
    param: u32,
    addr_p: *mut *mut c_void,
) -> Status {
    guard(|| {
        // SAFETY: header contract for handles.
        let d = unsafe { obj(dsm, "dsm") }?;
        let p = out(addr_p, "addr_p")?;
        let pl = placement(placement_kind, param)?;
        let a = with(d, |h| h.malloc(len, pl))?;
        // SAFETY: checked non-null and aligned.
        unsafe { put(p, a.cast::<c_void>()) };
        Ok(())
    })
}

/// See `sss_dsm_malloc_all` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_dsm_malloc_all(
    dsm: *const DsmObj,
    len: usize,
    placement_kind: u32,
    param: u32,
    addr_p: *mut *mut c_void,
) -> Status {
    guard(|| {
        // SAFETY: header contract for handles.
        let d = unsafe { obj(dsm, "dsm") }?;
        not_in_handler()?;
        let p = out(addr_p, "addr_p")?;
        let pl = placement(placement_kind, param)?;
        let a = with(d, |h| h.malloc_all(len, pl))?;
        // SAFETY: checked non-null and aligned.
        unsafe { put(p, a.cast::<c_void>()) };
        Ok(())
    })
}

/// See `sss_dsm_malloc_with` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_dsm_malloc_with(
    dsm: *const DsmObj,
    len: usize,
    placement_kind: u32,
    param: u32,
    protocol: u32,
    addr_p: *mut *mut c_void,
) -> Status {
    guard(|| {
        // SAFETY: header contract for handles.
        let d = unsafe { obj(dsm, "dsm") }?;
        let p = out(addr_p, "addr_p")?;
        let pl = placement(placement_kind, param)?;
        let a = with_failure(d, |h| {
            let proto = protocol_or_default(h, protocol)?;
            h.malloc_with(len, pl, proto).map_err(failure)
        })?;
        // SAFETY: checked non-null and aligned.
        unsafe { put(p, a.cast::<c_void>()) };
        Ok(())
    })
}

/// See `sss_dsm_malloc_all_with` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_dsm_malloc_all_with(
    dsm: *const DsmObj,
    len: usize,
    placement_kind: u32,
    param: u32,
    protocol: u32,
    addr_p: *mut *mut c_void,
) -> Status {
    guard(|| {
        // SAFETY: header contract for handles.
        let d = unsafe { obj(dsm, "dsm") }?;
        not_in_handler()?;
        let p = out(addr_p, "addr_p")?;
        let pl = placement(placement_kind, param)?;
        let a = with_failure(d, |h| {
            let proto = protocol_or_default(h, protocol)?;
            h.malloc_all_with(len, pl, proto).map_err(failure)
        })?;
        // SAFETY: checked non-null and aligned.
        unsafe { put(p, a.cast::<c_void>()) };
        Ok(())
    })
}

/// See `sss_dsm_set_protocol` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_dsm_set_protocol(
    dsm: *const DsmObj,
    addr: *const c_void,
    protocol: u32,
) -> Status {
    guard(|| {
        // SAFETY: header contract for handles.
        let d = unsafe { obj(dsm, "dsm") }?;
        not_in_handler()?;
        with_failure(d, |h| {
            let proto = protocol_or_default(h, protocol)?;
            h.set_protocol(addr.cast::<u8>(), proto).map_err(failure)
        })
    })
}

/// See `sss_dsm_read` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_dsm_read(
    dsm: *const DsmObj,
    addr: *const c_void,
    buf: *mut c_void,
    len: usize,
) -> Status {
    guard(|| {
        // SAFETY: header contract for handles.
        let d = unsafe { obj(dsm, "dsm") }?;
        if len == 0 {
            return Ok(());
        }
        if buf.is_null() {
            return Err(Failure::invalid("buf is NULL"));
        }
        // SAFETY: the header requires `buf` to be writable for `len`
        // bytes and outside the shared heap.
        let b = unsafe { std::slice::from_raw_parts_mut(buf.cast::<u8>(), len) };
        with(d, |h| h.read(addr.cast::<u8>(), b))
    })
}

/// See `sss_dsm_write` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_dsm_write(
    dsm: *const DsmObj,
    addr: *mut c_void,
    buf: *const c_void,
    len: usize,
) -> Status {
    guard(|| {
        // SAFETY: header contract for handles.
        let d = unsafe { obj(dsm, "dsm") }?;
        if len == 0 {
            return Ok(());
        }
        if buf.is_null() {
            return Err(Failure::invalid("buf is NULL"));
        }
        // SAFETY: the header requires `buf` to be readable for `len`
        // bytes and outside the shared heap.
        let b = unsafe { std::slice::from_raw_parts(buf.cast::<u8>(), len) };
        with(d, |h| h.write(addr.cast::<u8>(), b))
    })
}

/// See `sss_dsm_protocol` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_dsm_protocol(
    dsm: *const DsmObj,
    addr: *const c_void,
    protocol_p: *mut u32,
) -> Status {
    guard(|| {
        // SAFETY: header contract for handles.
        let d = unsafe { obj(dsm, "dsm") }?;
        let p = out(protocol_p, "protocol_p")?;
        let proto = with(d, |h| h.protocol_of(addr.cast::<u8>()))?;
        // SAFETY: checked non-null and aligned.
        unsafe { put(p, proto.code()) };
        Ok(())
    })
}

/// See `sss_dsm_note_write` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_dsm_note_write(
    dsm: *const DsmObj,
    addr: *const c_void,
    len: usize,
) -> Status {
    guard(|| {
        // SAFETY: header contract for handles.
        let d = unsafe { obj(dsm, "dsm") }?;
        if d.writes == WriteMode::Trap {
            // Write protection records the stores already.
            return Ok(());
        }
        // The range is only checked against the heap, never dereferenced
        // here beyond it.
        with(d, |h| h.note_write(addr.cast::<u8>(), len))
    })
}

/// See `sss_dsm_fetch` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_dsm_fetch(
    dsm: *const DsmObj,
    addr: *const c_void,
    len: usize,
    write: i32,
) -> Status {
    guard(|| {
        // SAFETY: header contract for handles.
        let d = unsafe { obj(dsm, "dsm") }?;
        // The range is checked against the heap; its pages are installed
        // by the heap itself.
        with(d, |h| h.fetch(addr.cast::<u8>(), len, write != 0)).map(|_| ())
    })
}

/// Fetch for code compiled by `sss cc --udsm` (`sss_rcop_fetch`): as
/// [`sss_dsm_fetch`], errors returned to the caller to report.
///
/// # Safety
/// `dsm` is a live handle.
pub(crate) unsafe fn fetch(
    dsm: *const DsmObj,
    addr: *const c_void,
    len: usize,
    write: bool,
) -> Result<u64, String> {
    // SAFETY: the caller's contract.
    let d = unsafe { obj(dsm, "dsm") }.map_err(|f| f.detail.to_string())?;
    with(d, |h| h.fetch(addr.cast::<u8>(), len, write)).map_err(|f| f.detail.to_string())
}

/// A diffed range for code compiled by `sss cc` (`sss_rcop_twin_range`):
/// [`Dsm::twin_range`]; an error (a range outside the heap) is `false`,
/// so the caller notes its stores.
///
/// # Safety
/// `dsm` is a live handle.
pub(crate) unsafe fn twin_range(
    dsm: *const DsmObj,
    addr: *const c_void,
    len: usize,
    written: usize,
) -> bool {
    // SAFETY: the caller's contract.
    let Ok(d) = (unsafe { obj(dsm, "dsm") }) else {
        return false;
    };
    with(d, |h| h.twin_range(addr.cast::<u8>(), len, written)).unwrap_or(false)
}

/// The allocation holding `addr` ([`Dsm::allocation`]) as `[lo, hi)`;
/// None outside every allocation or on an error.
///
/// # Safety
/// `dsm` is a live handle.
pub(crate) unsafe fn allocation(dsm: *const DsmObj, addr: *const c_void) -> Option<(u64, u64)> {
    // SAFETY: the caller's contract.
    let d = unsafe { obj(dsm, "dsm") }.ok()?;
    let (p, len) = with(d, |h| h.allocation(addr.cast::<u8>())).ok()??;
    Some((p as u64, p as u64 + len as u64))
}

/// See `sss_dsm_lock` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_dsm_lock(dsm: *const DsmObj, id: u32) -> Status {
    guard(|| {
        // SAFETY: header contract for handles.
        let d = unsafe { obj(dsm, "dsm") }?;
        not_in_handler()?;
        with(d, |h| h.lock(id))
    })
}

/// See `sss_dsm_unlock` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_dsm_unlock(dsm: *const DsmObj, id: u32) -> Status {
    guard(|| {
        // SAFETY: header contract for handles.
        let d = unsafe { obj(dsm, "dsm") }?;
        not_in_handler()?;
        with(d, |h| h.unlock(id))
    })
}

/// See `sss_dsm_barrier` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_dsm_barrier(dsm: *const DsmObj) -> Status {
    guard(|| {
        // SAFETY: header contract for handles.
        let d = unsafe { obj(dsm, "dsm") }?;
        not_in_handler()?;
        with(d, |h| h.barrier())
    })
}

/// See `sss_dsm_stats` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_dsm_stats(dsm: *const DsmObj, stats_p: *mut DsmStats) -> Status {
    guard(|| {
        // SAFETY: header contract for handles.
        let d = unsafe { obj(dsm, "dsm") }?;
        // SAFETY: null or the caller's struct holding the fields its mask
        // names (header contract).
        unsafe {
            fill(stats_p, "stats_p", || {
                with(d, |h| Ok(DsmStats::from(h.stats())))
            })
        }
    })
}

/// See `sss_dsm_is_trap` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_dsm_is_trap(dsm: *const DsmObj) -> i32 {
    guard_value(0, || {
        // SAFETY: header contract for handles.
        unsafe { dsm.as_ref() }.map(|d| (d.writes == WriteMode::Trap) as i32)
    })
}

/// See `sss_dsm_can_adopt` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_dsm_can_adopt(dsm: *const DsmObj) -> i32 {
    guard_value(0, || {
        // SAFETY: header contract for handles.
        unsafe { dsm.as_ref() }.map(|d| d.can_adopt as i32)
    })
}

/// See `sss_dsm_adopt` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_dsm_adopt(
    dsm: *const DsmObj,
    addr: *mut c_void,
    len: usize,
    keep: *const usize,
    nkeep: usize,
) -> Status {
    guard(|| {
        // SAFETY: header contract for handles.
        let d = unsafe { obj(dsm, "dsm") }?;
        not_in_handler()?;
        if nkeep > 0 && keep.is_null() {
            return Err(Failure::invalid("keep is NULL"));
        }
        if nkeep > 256 {
            return Err(Failure::invalid("more than 256 private ranges"));
        }
        let pairs = if nkeep == 0 {
            Vec::new()
        } else {
            // SAFETY: the header requires `keep` to hold 2 * nkeep words
            // (checked non-null; nkeep bounded above).
            let k = unsafe { std::slice::from_raw_parts(keep, 2 * nkeep) };
            k.chunks_exact(2).map(|c| (c[0], c[1])).collect()
        };
        // SAFETY: the header's contract for the adopted memory is the one
        // `Dsm::adopt` requires.
        with(d, |h| unsafe { h.adopt(addr.cast::<u8>(), len, &pairs) })
    })
}
