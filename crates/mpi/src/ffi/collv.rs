//! The `v` collectives (per-task counts and displacements) and scans.

use super::coll::reduce_area;
use super::collarg::{contribution, reduction, scatter_counts, Shape};
use super::{call, hv, recv_area, recv_v, send_v, Area, Handle};
use crate::coll;
use crate::consts::err;
use crate::engine::MpiErr;
use crate::nbc::algo::Role;
use std::borrow::Cow;
use std::ffi::{c_int, c_void};

/// `MPI_Gatherv`.
///
/// # Safety
/// MPI's contract for the buffers and arrays.
#[no_mangle]
pub unsafe extern "C" fn MPI_Gatherv(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    displs: *const c_int,
    recvtype: Handle,
    root: c_int,
    comm: Handle,
) -> c_int {
    call("MPI_Gatherv", hv(comm), || {
        let Some((sh, role)) = Shape::rooted(comm, root)? else {
            return Ok(());
        };
        let mine = if sh.own_part(role, sendbuf)? {
            // SAFETY: MPI's contract for sendbuf.
            Some(unsafe { super::send_data(sendbuf, sendcount, sendtype) }?)
        } else {
            None
        };
        if role != Role::Root {
            return coll::gatherv(hv(comm), mine.as_deref(), &mut [], &[], root);
        }
        // SAFETY: MPI's contract: one int per task; recvbuf spans every block.
        let (mut all, b) = unsafe { recv_v(recvbuf, recvcounts, displs, sh.peers(), recvtype) }?;
        coll::gatherv(hv(comm), mine.as_deref(), all.bytes(), &b, root)?;
        all.finish();
        Ok(())
    })
}

/// `MPI_Scatterv`.
///
/// # Safety
/// MPI's contract for the buffers and arrays.
#[no_mangle]
pub unsafe extern "C" fn MPI_Scatterv(
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    displs: *const c_int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: Handle,
    root: c_int,
    comm: Handle,
) -> c_int {
    call("MPI_Scatterv", hv(comm), || {
        let Some((sh, role)) = Shape::rooted(comm, root)? else {
            return Ok(());
        };
        let mut mine = if sh.own_part(role, recvbuf)? {
            // SAFETY: MPI's contract for recvbuf.
            Some(unsafe { recv_area(recvbuf, recvcount, recvtype) }?)
        } else {
            None
        };
        let (all, b) = if role == Role::Root {
            // SAFETY: MPI's contract: one int per task; sendbuf spans every block.
            unsafe { send_v(sendbuf, sendcounts, displs, sh.peers(), sendtype) }?
        } else {
            Default::default()
        };
        coll::scatterv(hv(comm), &all, &b, mine.as_mut().map(Area::bytes), root)?;
        if let Some(m) = mine {
            m.finish();
        }
        Ok(())
    })
}

/// `MPI_Allgatherv`.
///
/// # Safety
/// MPI's contract for the buffers and arrays.
#[no_mangle]
pub unsafe extern "C" fn MPI_Allgatherv(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    displs: *const c_int,
    recvtype: Handle,
    comm: Handle,
) -> c_int {
    call("MPI_Allgatherv", hv(comm), || {
        let sh = Shape::of(comm)?;
        let mine = if sh.in_place(sendbuf)? {
            None
        } else {
            // SAFETY: MPI's contract for sendbuf; copied as it may alias.
            Some(unsafe { super::send_data(sendbuf, sendcount, sendtype) }?.into_owned())
        };
        // SAFETY: MPI's contract: one int per task; recvbuf spans every block.
        let (mut all, b) = unsafe { recv_v(recvbuf, recvcounts, displs, sh.peers(), recvtype) }?;
        coll::allgatherv(hv(comm), mine.as_deref(), all.bytes(), &b)?;
        all.finish();
        Ok(())
    })
}

/// `MPI_Alltoallv`.
///
/// # Safety
/// MPI's contract for the buffers and arrays.
#[no_mangle]
pub unsafe extern "C" fn MPI_Alltoallv(
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    sdispls: *const c_int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    rdispls: *const c_int,
    recvtype: Handle,
    comm: Handle,
) -> c_int {
    call("MPI_Alltoallv", hv(comm), || {
        let sh = Shape::of(comm)?;
        let n = sh.peers();
        // SAFETY: MPI's contract: one int per task; recvbuf spans every block.
        let (all, rb) = unsafe { recv_v(recvbuf, recvcounts, rdispls, n, recvtype) }?;
        let send = if sh.in_place(sendbuf)? {
            None
        } else {
            // SAFETY: MPI's contract: one int per task, sendbuf spans every
            // block (copied only if it overlaps the receive buffer).
            let (s, sb) = unsafe { send_v(sendbuf, sendcounts, sdispls, n, sendtype) }?;
            Some((all.apart(s), sb))
        };
        all_to_all(comm, send, all, &rb)
    })
}

/// The exchange of `MPI_Alltoallv` and `MPI_Alltoallw` into `all`.
fn all_to_all(
    comm: Handle,
    send: Option<(Cow<'_, [u8]>, Vec<coll::Block>)>,
    mut all: Area<'_>,
    rb: &[coll::Block],
) -> Result<(), MpiErr> {
    coll::alltoallv(
        hv(comm),
        send.as_ref().map(|(s, b)| (&s[..], &b[..])),
        all.bytes(),
        rb,
    )?;
    all.finish();
    Ok(())
}

/// `MPI_Scan` or `MPI_Exscan`.
///
/// # Safety
/// MPI's contract for the buffers.
unsafe fn scan(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    dt: Handle,
    o: Handle,
    comm: Handle,
    exclusive: bool,
) -> c_int {
    let name = if exclusive { "MPI_Exscan" } else { "MPI_Scan" };
    call(name, hv(comm), || {
        let red = reduction(dt, o)?;
        // SAFETY: MPI's contract for the buffers.
        let mut acc = unsafe { reduce_area(comm, sendbuf, recvbuf, count, dt) }?;
        coll::scan(hv(comm), acc.bytes(), &red, exclusive)?;
        acc.finish();
        Ok(())
    })
}

/// `MPI_Scan`.
///
/// # Safety
/// MPI's contract for the buffers.
#[no_mangle]
pub unsafe extern "C" fn MPI_Scan(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    dt: Handle,
    o: Handle,
    comm: Handle,
) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { scan(sendbuf, recvbuf, count, dt, o, comm, false) }
}

/// `MPI_Exscan` (rank 0's receive buffer is left as it was).
///
/// # Safety
/// MPI's contract for the buffers.
#[no_mangle]
pub unsafe extern "C" fn MPI_Exscan(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    dt: Handle,
    o: Handle,
    comm: Handle,
) -> c_int {
    let keep = Shape::of(comm).is_ok_and(|sh| sh.rank == 0);
    if keep {
        // Rank 0 takes part (it starts the chain) without changing recvbuf.
        return call("MPI_Exscan", hv(comm), || {
            let red = reduction(dt, o)?;
            // SAFETY: MPI's contract for the buffers.
            let mut acc = unsafe { contribution(&Shape::of(comm)?, sendbuf, recvbuf, count, dt) }?;
            let r = coll::scan(hv(comm), &mut acc, &red, true);
            crate::nbc::pool::give(acc);
            r
        });
    }
    // SAFETY: the caller's contract.
    unsafe { scan(sendbuf, recvbuf, count, dt, o, comm, true) }
}

/// `MPI_Reduce_scatter`: the reduction of every task's `sum(recvcounts)`
/// elements, task p getting `recvcounts[p]` of them
/// (`coll::reduce_scatter`); on an intercommunicator each group's tasks get, cut
/// by their own counts, the reduction of the other group's vectors.
///
/// # Safety
/// MPI's contract for the buffers and the array.
#[no_mangle]
pub unsafe extern "C" fn MPI_Reduce_scatter(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    dt: Handle,
    o: Handle,
    comm: Handle,
) -> c_int {
    call("MPI_Reduce_scatter", hv(comm), || {
        let sh = Shape::of(comm)?;
        let red = reduction(dt, o)?;
        let size = super::lay(dt)?.size;
        // SAFETY: MPI's contract: one int per task of the local group.
        let (b, total) = unsafe { scatter_counts(recvcounts, sh.local, size) }?;
        // SAFETY: MPI's contract (in place, recvbuf holds the whole input).
        let mut acc = unsafe { contribution(&sh, sendbuf, recvbuf, total, dt) }?;
        let (at, len) = b[sh.rank as usize];
        // SAFETY: MPI's contract for recvbuf.
        let mut out = unsafe { recv_area(recvbuf, (len / size.max(1)) as c_int, dt) }?;
        if sh.remote.is_some() {
            // Across the groups: an allreduce, each task keeping its part.
            crate::inter::allreduce(hv(comm), &mut acc, &red)?;
            let got = acc
                .get(at..at + len)
                .ok_or_else(|| MpiErr::new(err::INTERN, "reduction shorter than the counts"))?;
            out.bytes().copy_from_slice(got);
        } else {
            coll::reduce_scatter(hv(comm), &mut acc, &red, &b, out.bytes())?;
        }
        crate::nbc::pool::give(acc);
        out.finish();
        Ok(())
    })
}

/// `MPI_Reduce_scatter_block`: `MPI_Reduce_scatter` with equal counts.
///
/// # Safety
/// MPI's contract for the buffers.
#[no_mangle]
pub unsafe extern "C" fn MPI_Reduce_scatter_block(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcount: c_int,
    dt: Handle,
    o: Handle,
    comm: Handle,
) -> c_int {
    // The local group's size (an intercommunicator's remote group is
    // what its `Comm` holds).
    let n = crate::inter::size(hv(comm)).map_or(0, |n| n as usize);
    let counts = vec![recvcount; n.max(1)];
    // SAFETY: `counts` holds one int per task; the rest is the caller's.
    unsafe { MPI_Reduce_scatter(sendbuf, recvbuf, counts.as_ptr(), dt, o, comm) }
}

/// `MPI_Alltoallw`: per task a count, a byte displacement and a
/// datatype, on both sides.
///
/// # Safety
/// MPI's contract for the buffers and arrays.
#[no_mangle]
pub unsafe extern "C" fn MPI_Alltoallw(
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    sdispls: *const c_int,
    sendtypes: *const Handle,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    rdispls: *const c_int,
    recvtypes: *const Handle,
    comm: Handle,
) -> c_int {
    call("MPI_Alltoallw", hv(comm), || {
        let sh = Shape::of(comm)?;
        let n = sh.peers();
        let send = if sh.in_place(sendbuf)? {
            None
        } else {
            // SAFETY: MPI's contract; the send blocks are only read (and
            // copied, as they may alias the receive blocks).
            let (mut s, sb) =
                unsafe { super::blocks_w(sendbuf.cast_mut(), sendcounts, sdispls, sendtypes, n) }?;
            Some((Cow::Owned(s.bytes().to_vec()), sb))
        };
        // SAFETY: MPI's contract for recvbuf and the arrays.
        let (all, rb) = unsafe { super::blocks_w(recvbuf, recvcounts, rdispls, recvtypes, n) }?;
        all_to_all(comm, send, all, &rb)
    })
}

// The profiling interface (`PMPI_…`) of the functions above (build.rs).
include!(concat!(env!("OUT_DIR"), "/pmpi_collv.rs"));
