//! Collectives on an intercommunicator: each group works on its hidden
//! local communicator and the two leaders (local rank 0) exchange on
//! the intercommunicator's collective context.

use super::{inter, lead, share, xfer, Inter};
use crate::coll::Reduction;
use crate::consts::{err, PROC_NULL};
use crate::engine::Comm;
use crate::objects::MpiErr;
use crate::runtime::with;

/// `MPI_ROOT`.
const ROOT: i32 = -4;
const TAG_BARRIER: i32 = 31;
const TAG_BCAST: i32 = 32;
const TAG_ALLREDUCE: i32 = 33;

fn parts(comm: usize) -> Result<(Comm, Inter), MpiErr> {
    let x = inter(comm)
        .ok_or_else(|| MpiErr::new(err::COMM, format!("{comm:#x} is not an intercommunicator")))?;
    let c = with(|e| Ok(e.comm(comm)?.clone()))?;
    Ok((c, x))
}

fn leader_failed() -> MpiErr {
    MpiErr::new(err::OTHER, "the local leader failed (see its error)")
}

/// The leaders swap `data` (not empty) and every local member gets the
/// remote leader's bytes (at most `cap`).
fn via_leaders(
    comm: usize,
    c: &Comm,
    x: &Inter,
    tag: i32,
    data: &[u8],
    cap: usize,
) -> Result<Vec<u8>, MpiErr> {
    let got = if c.rank == 0 {
        let w = c.group[0];
        let r = xfer(comm, c.ctx + 1, tag, Some((w, data)), Some((w, cap)));
        Some(lead(x.local_comm, 0, r, cap)?)
    } else {
        None
    };
    let got = share(x.local_comm, 0, got, cap)?;
    if got.is_empty() {
        return Err(leader_failed());
    }
    Ok(got)
}

/// `MPI_Barrier`: every member of both groups has entered when any
/// leaves.
pub(crate) fn barrier(comm: usize) -> Result<(), MpiErr> {
    let (c, x) = parts(comm)?;
    crate::coll::barrier(x.local_comm)?;
    via_leaders(comm, &c, &x, TAG_BARRIER, &[1], 1).map(|_| ())
}

/// `MPI_Bcast`: the root passes `MPI_ROOT`, the rest of its group
/// `MPI_PROC_NULL`, the other group the root's rank there.
pub(crate) fn bcast(comm: usize, buf: &mut [u8], root: i32) -> Result<(), MpiErr> {
    let (c, x) = parts(comm)?;
    match root {
        PROC_NULL => Ok(()),
        ROOT => {
            xfer(comm, c.ctx + 1, TAG_BCAST, Some((c.group[0], buf)), None)?;
            Ok(())
        }
        r => {
            let w = usize::try_from(r)
                .ok()
                .and_then(|r| c.group.get(r).copied())
                .ok_or_else(|| {
                    MpiErr::new(
                        err::ROOT,
                        format!(
                            "invalid root {r} (remote group of {} tasks; MPI_ROOT or \
                             MPI_PROC_NULL in the root's group)",
                            c.group.len()
                        ),
                    )
                })?;
            let mut failed = None;
            if c.rank == 0 {
                match xfer(comm, c.ctx + 1, TAG_BCAST, None, Some((w, buf.len()))) {
                    Ok(d) => {
                        let n = d.len().min(buf.len());
                        buf[..n].copy_from_slice(&d[..n]);
                    }
                    // The members still take part in the broadcast below.
                    Err(e) => failed = Some(e),
                }
            }
            crate::coll::bcast(x.local_comm, buf, 0)?;
            failed.map_or(Ok(()), Err)
        }
    }
}

/// `MPI_Allreduce`: each group gets the reduction of the other group's
/// contributions.
pub(crate) fn allreduce(comm: usize, acc: &mut [u8], red: &Reduction) -> Result<(), MpiErr> {
    let (c, x) = parts(comm)?;
    if acc.is_empty() {
        return barrier(comm);
    }
    let mut mine = acc.to_vec();
    crate::coll::reduce(x.local_comm, &mut mine, red, 0)?;
    let got = via_leaders(comm, &c, &x, TAG_ALLREDUCE, &mine, acc.len())?;
    let n = got.len().min(acc.len());
    acc[..n].copy_from_slice(&got[..n]);
    Ok(())
}
