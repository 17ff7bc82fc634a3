//! Dynamic windows: `MPI_Win_create_dynamic`, `MPI_Win_attach`,
//! `MPI_Win_detach` (see `crate::win_dyn`).

use super::{call, hv, mk, out, Handle};
use crate::consts::{err, h};
use crate::engine::MpiErr;
use crate::win::with_win;
use crate::win_dyn::Dyn;
use sss_mbcf::{Perm, SegmentInfo};
use std::ffi::{c_int, c_void};

/// Bytes of a segment description in the exchange.
const INFO: usize = 37;

/// `MPI_Win_create_dynamic`: a window without memory; collective.
///
/// # Safety
/// `win` is a writable handle.
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_create_dynamic(
    _info: Handle,
    comm: Handle,
    win: *mut Handle,
) -> c_int {
    call("MPI_Win_create_dynamic", hv(comm), || {
        let task = crate::runtime::with(|e| Ok(e.task.clone()))?;
        let hd = crate::win::create(hv(comm), None, 0, 0, 1, false)?;
        let d = Dyn::new(&task)?;
        let wcomm = with_win(hd, |w, _| Ok(w.comm))?;
        let n = crate::runtime::with(|e| Ok(e.comm(wcomm)?.size()))? as usize;
        let mut all = vec![0u8; INFO * n];
        crate::coll::allgather(wcomm, Some(&d.table_info().to_bytes()), &mut all, INFO)?;
        let tables = all
            .chunks_exact(INFO)
            .map(|r| {
                SegmentInfo::from_bytes(r)
                    .ok_or_else(|| MpiErr::new(err::INTERN, "dynamic window table record"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut d = d;
        d.set_tables(tables);
        with_win(hd, |w, _| {
            w.dynamic = Some(d);
            Ok(())
        })?;
        // SAFETY: the caller's contract.
        unsafe { out(win, mk(hd), "win") }
    })
}

/// `MPI_Win_attach`: `size` bytes at `base` become addressable by their
/// address in a dynamic window.
///
/// # Safety
/// `base` points to `size` bytes that stay valid until detached.
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_attach(win: Handle, base: *mut c_void, size: isize) -> c_int {
    call("MPI_Win_attach", h::COMM_WORLD, || {
        let len = u64::try_from(size)
            .map_err(|_| MpiErr::new(err::SIZE, format!("MPI_Win_attach: size {size}")))?;
        if len == 0 {
            return Ok(());
        }
        if base.is_null() {
            return Err(MpiErr::new(err::ARG, "MPI_Win_attach: base is NULL"));
        }
        with_win(hv(win), |w, task| {
            let d = w
                .dynamic
                .as_mut()
                .ok_or_else(|| MpiErr::new(err::WIN, "MPI_Win_attach: not a dynamic window"))?;
            let slot = d.slot_for(base as u64, len)?;
            // SAFETY: the caller's contract: the memory stays valid until
            // MPI_Win_detach (which frees the registration) or Win_free.
            let seg = unsafe { task.register(base.cast(), len as usize, Perm::ALL) }
                .map_err(|e| MpiErr::new(err::ARG, format!("MPI_Win_attach: {e}")))?;
            d.attach(slot, seg)
        })
    })
}

/// `MPI_Win_detach` of the region attached at `base`.
#[no_mangle]
pub extern "C" fn MPI_Win_detach(win: Handle, base: *const c_void) -> c_int {
    call("MPI_Win_detach", h::COMM_WORLD, || {
        with_win(hv(win), |w, task| {
            let d = w
                .dynamic
                .as_mut()
                .ok_or_else(|| MpiErr::new(err::WIN, "MPI_Win_detach: not a dynamic window"))?;
            d.detach(task, base.cast())
        })
    })
}

// The profiling interface (`PMPI_…`) of the functions above (build.rs).
include!(concat!(env!("OUT_DIR"), "/pmpi_windyn.rs"));
