//! Task entry points: joining and leaving the job, rank/size/job, the
//! task's counters, the launcher's collectives, fence and quiet.

use super::{bytes, bytes_mut, fill, guard, guard_value, null, obj, out, put_handle};
use crate::handle::{not_in_handler, TaskObj};
use crate::status::{Failure, Status};
use crate::types::Stats;
use std::ffi::c_void;

/// See `sss_init` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_init(task_p: *mut *mut TaskObj) -> Status {
    guard(|| {
        let p = out(task_p, "task_p")?;
        let t = TaskObj::init()?;
        // SAFETY: checked non-null and aligned.
        unsafe { put_handle(p, t) };
        Ok(())
    })
}

/// See `sss_finalize` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_finalize(task: *mut TaskObj) -> Status {
    guard(|| {
        // SAFETY: header contract for handles.
        let t = unsafe { obj(task, "task") }?;
        if !t.is_owned() {
            return Err(Failure::invalid(
                "a signal handler's task handle cannot be finalized",
            ));
        }
        not_in_handler()?;
        // SAFETY: an owned handle comes from Box::into_raw in sss_init and
        // the caller gives it up here.
        drop(unsafe { Box::from_raw(task) });
        Ok(())
    })
}

/// See `sss_task_rank` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_task_rank(task: *const TaskObj) -> u32 {
    guard_value(u32::MAX, || {
        // SAFETY: header contract for handles.
        unsafe { task.as_ref() }.map(|t| t.task().rank())
    })
}

/// See `sss_task_size` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_task_size(task: *const TaskObj) -> u32 {
    guard_value(0, || {
        // SAFETY: header contract for handles.
        unsafe { task.as_ref() }.map(|t| t.task().size())
    })
}

/// See `sss_task_job` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_task_job(task: *const TaskObj) -> u32 {
    guard_value(0, || {
        // SAFETY: header contract for handles.
        unsafe { task.as_ref() }.map(|t| t.task().job())
    })
}

/// See `sss_task_stats` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_task_stats(task: *const TaskObj, stats: *mut Stats) -> Status {
    guard(|| {
        // SAFETY: header contract for handles.
        let t = unsafe { obj(task, "task") }?;
        // SAFETY: null or the caller's struct holding the fields its mask
        // names (header contract).
        unsafe { fill(stats, "stats", || Ok(Stats::from(t.task().stats()))) }
    })
}

/// See `sss_barrier` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_barrier(task: *const TaskObj) -> Status {
    guard(|| {
        // SAFETY: header contract for handles.
        let t = unsafe { obj(task, "task") }?;
        not_in_handler()?;
        Ok(t.task().barrier()?)
    })
}

/// See `sss_allgather` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_allgather(
    task: *const TaskObj,
    send: *const c_void,
    len: usize,
    recv: *mut c_void,
) -> Status {
    guard(|| {
        // SAFETY: header contract for handles.
        let t = unsafe { obj(task, "task") }?;
        not_in_handler()?;
        // SAFETY: `send` holds `len` readable bytes (header contract).
        let mine = unsafe { bytes(send, len) }?;
        let total = len
            .checked_mul(t.task().size() as usize)
            .ok_or_else(|| Failure::invalid("len * size overflows"))?;
        if recv.is_null() && total > 0 {
            return Err(null("recv"));
        }
        let all = t.task().allgather(mine)?;
        if all.iter().any(|b| b.len() != len) {
            return Err(Failure::invalid("tasks passed different lengths"));
        }
        // SAFETY: `recv` holds len * size writable bytes (header contract).
        let dst = unsafe { bytes_mut(recv, total) }?;
        for (chunk, b) in dst.chunks_exact_mut(len.max(1)).zip(&all) {
            chunk.copy_from_slice(b);
        }
        Ok(())
    })
}

/// See `sss_fence` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_fence(task: *const TaskObj, rank: u32) -> Status {
    guard(|| {
        // SAFETY: header contract for handles.
        unsafe { obj(task, "task") }?.fence(rank)
    })
}

/// See `sss_quiet` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_quiet(task: *const TaskObj) -> Status {
    guard(|| {
        // SAFETY: header contract for handles.
        unsafe { obj(task, "task") }?.quiet()
    })
}
