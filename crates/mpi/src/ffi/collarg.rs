//! The argument checks the collectives share, blocking and nonblocking
//! (`coll`, `collv`, `iplan`): who the root is, `MPI_IN_PLACE`, the
//! reduction, counts and blocks. Each check exists once, here.

use super::{hv, lay, nbytes, recv_area, send_data, Handle};
use crate::coll::{Block, Reduction};
use crate::consts::{err, IN_PLACE, PROC_NULL};
use crate::engine::MpiErr;
use crate::handles::reg;
use crate::nbc::algo::{Inter, Role};
use crate::runtime::with;
use crate::types::op;
use std::ffi::{c_int, c_void};

/// `MPI_ROOT`: the root of a rooted collective on an intercommunicator.
const MPI_ROOT: c_int = -4;

/// Whether `p` is `MPI_IN_PLACE`.
pub(super) fn in_place(p: *const c_void) -> bool {
    p as usize == IN_PLACE
}

/// A communicator as a collective's arguments see it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Shape {
    /// Ours, in the local group.
    pub(super) rank: u32,
    /// Tasks of the local group (of the communicator, for an
    /// intracommunicator).
    pub(super) local: u32,
    /// Tasks of an intercommunicator's remote group.
    pub(super) remote: Option<u32>,
}

impl Shape {
    pub(super) fn of(comm: Handle) -> Result<Shape, MpiErr> {
        let (rank, n) = with(|e| {
            let c = e.comm(hv(comm))?;
            Ok((c.rank, c.size()))
        })?;
        if crate::inter::is_inter(hv(comm)) {
            let local = crate::inter::size(hv(comm))?;
            return Ok(Shape {
                rank,
                local,
                remote: Some(n),
            });
        }
        Ok(Shape {
            rank,
            local: n,
            remote: None,
        })
    }

    /// The communicator and this task's part in a collective rooted at
    /// `root`; None for a task with no part (`Role::Idle`).
    pub(super) fn rooted(comm: Handle, root: c_int) -> Result<Option<(Shape, Role)>, MpiErr> {
        let sh = Shape::of(comm)?;
        let role = sh.role(root)?;
        Ok((role != Role::Idle).then_some((sh, role)))
    }

    /// How many blocks a buffer with one block per task holds: one per
    /// task of the remote group on an intercommunicator.
    pub(super) fn peers(&self) -> u32 {
        self.remote.unwrap_or(self.local)
    }

    /// How an intercommunicator's schedules address its tasks.
    pub(super) fn inter(&self) -> Option<Inter> {
        self.remote.map(|_| Inter {
            l: self.local,
            rank: self.rank,
        })
    }

    /// This task's part in a collective rooted at `root`: on an
    /// intercommunicator the root passes `MPI_ROOT`, the rest of its
    /// group `MPI_PROC_NULL`, the other group the root's rank there.
    pub(super) fn role(&self, root: c_int) -> Result<Role, MpiErr> {
        let n = self.peers();
        let valid = u32::try_from(root).ok().filter(|&r| r < n);
        match (self.remote, valid) {
            (None, Some(r)) if r == self.rank => Ok(Role::Root),
            (_, Some(r)) => Ok(Role::Leaf(r)),
            (Some(_), None) if root == MPI_ROOT => Ok(Role::Root),
            (Some(_), None) if root == PROC_NULL => Ok(Role::Idle),
            (None, None) => Err(MpiErr::new(
                err::ROOT,
                format!("invalid root {root} (communicator of {n} tasks)"),
            )),
            (Some(_), None) => Err(MpiErr::new(
                err::ROOT,
                format!(
                    "invalid root {root} (remote group of {n} tasks; MPI_ROOT or \
                     MPI_PROC_NULL in the root's group)"
                ),
            )),
        }
    }

    /// The root's rank in an intracommunicator.
    pub(super) fn root_rank(&self, role: Role) -> u32 {
        match role {
            Role::Leaf(r) => r,
            Role::Root | Role::Idle => self.rank,
        }
    }

    /// Whether this task's own buffer `p` takes part in a gather (its
    /// send buffer) or a scatter (its receive buffer) where it is
    /// `role`: not at an intercommunicator's root, nor at an
    /// intracommunicator's root passing `MPI_IN_PLACE` (only a root may).
    pub(super) fn own_part(&self, role: Role, p: *const c_void) -> Result<bool, MpiErr> {
        match role {
            Role::Idle => Ok(false),
            Role::Root if self.remote.is_some() => Ok(false),
            Role::Root => Ok(!in_place(p)),
            Role::Leaf(_) if in_place(p) => Err(MpiErr::new(
                err::ARG,
                "MPI_IN_PLACE is only the root's (and not on an intercommunicator)",
            )),
            Role::Leaf(_) => Ok(true),
        }
    }

    /// Whether buffer `p` is `MPI_IN_PLACE`, which an intercommunicator
    /// refuses.
    pub(super) fn in_place(&self, p: *const c_void) -> Result<bool, MpiErr> {
        if !in_place(p) {
            return Ok(false);
        }
        if self.remote.is_some() {
            return Err(MpiErr::new(
                err::ARG,
                "MPI_IN_PLACE is not allowed on an intercommunicator",
            ));
        }
        Ok(true)
    }
}

/// The reduction of operation `o` on datatype `dt`.
pub(super) fn reduction(dt: Handle, o: Handle) -> Result<Reduction, MpiErr> {
    let l = lay(dt)?;
    if let Some(op) = op(hv(o)) {
        let t = l.base.ok_or_else(|| {
            MpiErr::new(
                err::OP,
                "a predefined operation needs a datatype of one predefined type",
            )
        })?;
        return Ok(Reduction::Pre {
            op,
            num: t.num,
            size: t.size,
        });
    }
    let u = reg()
        .ops
        .get(&hv(o))
        .copied()
        .ok_or_else(|| MpiErr::new(err::OP, format!("invalid operation {:#x}", hv(o))))?;
    Ok(Reduction::User {
        op: u,
        dt: hv(dt),
        layout: l,
    })
}

/// `count * tasks` as a count.
pub(super) fn times(count: c_int, tasks: u32) -> Result<c_int, MpiErr> {
    count
        .checked_mul(tasks as c_int)
        .ok_or_else(|| MpiErr::new(err::COUNT, format!("count {count} too large")))
}

/// `n` blocks of `chunk` bytes, one after the other.
pub(super) fn equal_blocks(chunk: usize, n: u32) -> Vec<Block> {
    (0..n as usize).map(|p| (p * chunk, chunk)).collect()
}

/// Every block lies inside `len` bytes.
pub(super) fn check_blocks(len: usize, blocks: &[Block]) -> Result<(), MpiErr> {
    if blocks
        .iter()
        .any(|&(o, l)| o.checked_add(l).is_none_or(|e| e > len))
    {
        return Err(MpiErr::new(err::BUFFER, "a block lies outside the buffer"));
    }
    Ok(())
}

/// The counts of a reduce-scatter, one per task of the local group:
/// their blocks of `size`-byte elements one after the other, and their
/// sum.
///
/// # Safety
/// `counts` is null or holds `n` readable ints.
pub(super) unsafe fn scatter_counts(
    counts: *const c_int,
    n: u32,
    size: usize,
) -> Result<(Vec<Block>, c_int), MpiErr> {
    if counts.is_null() {
        return Err(MpiErr::new(err::ARG, "recvcounts is NULL"));
    }
    // SAFETY: the caller's contract.
    let counts = unsafe { std::slice::from_raw_parts(counts, n as usize) };
    let mut blocks = Vec::with_capacity(counts.len());
    let mut total: c_int = 0;
    for &c in counts {
        if c < 0 {
            return Err(MpiErr::new(err::COUNT, format!("negative count {c}")));
        }
        blocks.push((total as usize * size, c as usize * size));
        total = total
            .checked_add(c)
            .ok_or_else(|| MpiErr::new(err::COUNT, "counts too large"))?;
    }
    Ok((blocks, total))
}

/// Our contribution to a reduction: `sendbuf`, or `recvbuf` for
/// `MPI_IN_PLACE` (refused on an intercommunicator).
///
/// # Safety
/// MPI's contract for the buffers.
pub(super) unsafe fn contribution(
    sh: &Shape,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    dt: Handle,
) -> Result<Vec<u8>, MpiErr> {
    if sh.in_place(sendbuf)? {
        // SAFETY: the caller's contract.
        return Ok(crate::nbc::pool::copied(
            unsafe { recv_area(recvbuf, count, dt) }?.bytes(),
        ));
    }
    // SAFETY: the caller's contract.
    Ok(crate::nbc::pool::copied(&unsafe {
        send_data(sendbuf, count, dt)
    }?))
}

/// What a reduction to a root starts from here, as `role`: the root's
/// contribution (an intercommunicator's root only receives: zeros), or
/// the send buffer.
///
/// # Safety
/// MPI's contract for the buffers.
pub(super) unsafe fn reduce_input(
    sh: &Shape,
    role: Role,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    dt: Handle,
) -> Result<Vec<u8>, MpiErr> {
    match role {
        Role::Root if sh.remote.is_some() => Ok(crate::nbc::pool::zeroed(nbytes(count, dt)?)),
        // SAFETY: the caller's contract.
        Role::Root => unsafe { contribution(sh, sendbuf, recvbuf, count, dt) },
        // SAFETY: the caller's contract.
        Role::Leaf(_) | Role::Idle => Ok(crate::nbc::pool::copied(&unsafe {
            send_data(sendbuf, count, dt)
        }?)),
    }
}
