//! Intercommunicators (see `crate::inter`).

use super::{call, hv, mk, out, Handle};
use crate::inter;
use std::ffi::c_int;

/// `MPI_Intercomm_create`.
///
/// # Safety
/// `new` is writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Intercomm_create(
    local_comm: Handle,
    local_leader: c_int,
    peer_comm: Handle,
    remote_leader: c_int,
    tag: c_int,
    new: *mut Handle,
) -> c_int {
    call("MPI_Intercomm_create", hv(local_comm), || {
        let c = inter::create(
            hv(local_comm),
            local_leader,
            hv(peer_comm),
            remote_leader,
            tag,
        )?;
        // SAFETY: the caller's contract.
        unsafe { out(new, mk(c), "newintercomm") }
    })
}

/// `MPI_Intercomm_merge`.
///
/// # Safety
/// `new` is writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Intercomm_merge(comm: Handle, high: c_int, new: *mut Handle) -> c_int {
    call("MPI_Intercomm_merge", hv(comm), || {
        let c = inter::merge(hv(comm), high != 0)?;
        // SAFETY: the caller's contract.
        unsafe { out(new, mk(c), "newintracomm") }
    })
}

/// `MPI_Comm_test_inter`.
///
/// # Safety
/// `flag` is writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_test_inter(comm: Handle, flag: *mut c_int) -> c_int {
    call("MPI_Comm_test_inter", hv(comm), || {
        crate::runtime::with(|e| e.comm(hv(comm)).map(|_| ()))?;
        // SAFETY: the caller's contract.
        unsafe { out(flag, c_int::from(inter::is_inter(hv(comm))), "flag") }
    })
}

/// `MPI_Comm_remote_size`.
///
/// # Safety
/// `size` is writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_remote_size(comm: Handle, size: *mut c_int) -> c_int {
    call("MPI_Comm_remote_size", hv(comm), || {
        let n = inter::remote_group(hv(comm))?.len();
        // SAFETY: the caller's contract.
        unsafe { out(size, n as c_int, "size") }
    })
}

/// `MPI_Comm_remote_group`.
///
/// # Safety
/// `g` is writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_remote_group(comm: Handle, g: *mut Handle) -> c_int {
    call("MPI_Comm_remote_group", hv(comm), || {
        let m = inter::remote_group(hv(comm))?.to_vec();
        let id = crate::handles::reg().add_group(m);
        // SAFETY: the caller's contract.
        unsafe { out(g, mk(id), "group") }
    })
}

// The profiling interface (`PMPI_…`) of the functions above (build.rs).
include!(concat!(env!("OUT_DIR"), "/pmpi_intercomm.rs"));
