//! Waiting on a local word: `sss_wait_u64` (with and without a timeout),
//! SS-Wait (`sss_sswait_u64`) and the progress counter SS-Wait peers see.

use super::{aligned_u64, guard, null, obj};
use crate::handle::TaskObj;
use crate::status::{Failure, Status};
use crate::types::Cmp;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

/// Shared body of `sss_wait_u64` and `sss_wait_u64_timeout`.
///
/// # Safety
/// `addr` is null or an aligned u64 valid during the call that others
/// change only atomically (remote operations, atomics).
unsafe fn wait_u64(
    task: *const TaskObj,
    addr: *const u64,
    cmp: u32,
    value: u64,
    timeout: Option<Duration>,
) -> Result<(), Failure> {
    // SAFETY: header contract for handles.
    let t = unsafe { obj(task, "task") }?;
    if addr.is_null() {
        return Err(null("addr"));
    }
    aligned_u64(addr, "addr must be 8-byte aligned")?;
    let cmp = Cmp::from_raw(cmp).ok_or_else(|| Failure::invalid("unknown sss_cmp_t"))?;
    // SAFETY: non-null and aligned (checked), valid during the call and
    // only changed atomically meanwhile (contract above); we only load.
    let word = unsafe { AtomicU64::from_ptr(addr.cast_mut()) };
    let pred = |v: u64| cmp.holds(v, value);
    match timeout {
        None => {
            t.task().wait_word(word, pred);
            Ok(())
        }
        Some(d) => t
            .task()
            .wait_word_timeout(word, pred, d)
            .map(|_| ())
            .ok_or_else(|| Failure::new(Status::TimedOut, "the word did not change in time")),
    }
}

/// See `sss_wait_u64` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_wait_u64(
    task: *const TaskObj,
    addr: *const u64,
    cmp: u32,
    value: u64,
) -> Status {
    // SAFETY: forwarded contract.
    guard(|| unsafe { wait_u64(task, addr, cmp, value, None) })
}

/// See `sss_wait_u64_timeout` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_wait_u64_timeout(
    task: *const TaskObj,
    addr: *const u64,
    cmp: u32,
    value: u64,
    timeout_us: u64,
) -> Status {
    let d = Duration::from_micros(timeout_us);
    // SAFETY: forwarded contract.
    guard(|| unsafe { wait_u64(task, addr, cmp, value, Some(d)) })
}

/// See `sss_sswait_u64` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_sswait_u64(
    task: *const TaskObj,
    addr: *const u64,
    cmp: u32,
    value: u64,
    partner: u32,
) -> Status {
    guard(|| {
        // SAFETY: header contract for handles.
        let t = unsafe { obj(task, "task") }?;
        if addr.is_null() {
            return Err(null("addr"));
        }
        aligned_u64(addr, "addr must be 8-byte aligned")?;
        let cmp = Cmp::from_raw(cmp).ok_or_else(|| Failure::invalid("unknown sss_cmp_t"))?;
        if partner >= t.task().size() {
            return Err(Failure::new(Status::NoSuchTask, "partner outside the job"));
        }
        // SAFETY: non-null and aligned (checked), valid during the call
        // and only changed atomically meanwhile (header contract).
        let word = unsafe { AtomicU64::from_ptr(addr.cast_mut()) };
        t.task().sswait(word, partner, |v| cmp.holds(v, value));
        Ok(())
    })
}

/// See `sss_progress_bump` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_progress_bump(task: *const TaskObj) {
    let _ = guard(|| {
        // SAFETY: header contract for handles.
        let t = unsafe { obj(task, "task") }?;
        t.task().bump_progress();
        Ok(())
    });
}
