//! General active target synchronization: `MPI_Win_post`/`Win_wait`
//! open and close an exposure epoch for a group of origins,
//! `MPI_Win_start`/`Win_complete` an access epoch to a group of targets.
//! Post sends each origin an empty message, start waits for one from
//! each target; complete finishes the epoch's operations and sends each
//! target an empty message, wait waits for one from each origin (on the
//! window's own communicator, with tags of their own).

use super::{call, hv, Handle};
use crate::coll::{await_all, notify_all, TAG_WIN_DONE, TAG_WIN_POST};
use crate::consts::{err, h};
use crate::engine::MpiErr;
use crate::handles::reg;
use crate::win::with_win;
use std::ffi::c_int;

/// The communicator whose error handler a window's errors go to.
fn errcomm(w: Handle) -> usize {
    with_win(hv(w), |w, _| Ok(w.comm)).unwrap_or(h::COMM_WORLD)
}

/// The window ranks of `group`'s members.
fn members(win: Handle, group: Handle, what: &str) -> Result<(usize, Vec<u32>), MpiErr> {
    let world = reg().group(hv(group))?;
    with_win(hv(win), |w, _| Ok((w.comm, w.ranks_of(&world, what)?)))
}

fn sync_err(what: &str, why: &str) -> MpiErr {
    MpiErr::new(err::RMA_SYNC, format!("{what}: {why}"))
}

/// `MPI_Win_post`: exposes the window to `group` until `MPI_Win_wait`.
#[no_mangle]
pub extern "C" fn MPI_Win_post(group: Handle, _assert: c_int, win: Handle) -> c_int {
    call("MPI_Win_post", errcomm(win), || {
        let (comm, origins) = members(win, group, "MPI_Win_post")?;
        with_win(hv(win), |w, _| {
            if w.exposure.is_some() {
                return Err(sync_err(
                    "MPI_Win_post",
                    "an exposure epoch is open already",
                ));
            }
            w.exposure = Some(origins.clone());
            Ok(())
        })?;
        notify_all(comm, &origins, TAG_WIN_POST)
    })
}

/// `MPI_Win_start`: an access epoch to `group`, once each has posted.
#[no_mangle]
pub extern "C" fn MPI_Win_start(group: Handle, _assert: c_int, win: Handle) -> c_int {
    call("MPI_Win_start", errcomm(win), || {
        let (comm, targets) = members(win, group, "MPI_Win_start")?;
        with_win(hv(win), |w, _| {
            if w.access.is_some() {
                return Err(sync_err("MPI_Win_start", "an access epoch is open already"));
            }
            w.access = Some(targets.clone());
            Ok(())
        })?;
        await_all(comm, &targets, TAG_WIN_POST)
    })
}

/// `MPI_Win_complete`: finishes the access epoch's operations and tells
/// each target.
#[no_mangle]
pub extern "C" fn MPI_Win_complete(win: Handle) -> c_int {
    call("MPI_Win_complete", errcomm(win), || {
        let (comm, targets) = with_win(hv(win), |w, task| {
            let t = w
                .access
                .take()
                .ok_or_else(|| sync_err("MPI_Win_complete", "no MPI_Win_start before"))?;
            for &r in &t {
                w.complete(task, Some(r))?;
            }
            Ok((w.comm, t))
        })?;
        notify_all(comm, &targets, TAG_WIN_DONE)
    })
}

/// `MPI_Win_wait`: waits until every origin of the exposure epoch
/// completed.
#[no_mangle]
pub extern "C" fn MPI_Win_wait(win: Handle) -> c_int {
    call("MPI_Win_wait", errcomm(win), || {
        let (comm, origins) = with_win(hv(win), |w, _| {
            let o = w
                .exposure
                .take()
                .ok_or_else(|| sync_err("MPI_Win_wait", "no MPI_Win_post before"))?;
            Ok((w.comm, o))
        })?;
        await_all(comm, &origins, TAG_WIN_DONE)
    })
}

// The profiling interface (`PMPI_…`) of the functions above (build.rs).
include!(concat!(env!("OUT_DIR"), "/pmpi_pscw.rs"));
