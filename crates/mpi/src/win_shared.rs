//! Shared-memory windows (`MPI_Win_allocate_shared`,
//! `MPI_Win_shared_query`): the members, all on one node, get one
//! segment of the first member's, each its part of it, contiguous in rank
//! order as MPI asks by default; every member maps the whole segment
//! (MBCF's `Task::map_peer`), so loads and stores reach any part
//! directly. RMA calls on the window work as on any other: an operation
//! on a part goes to the first member's segment at that part.

use crate::consts::err;
use crate::engine::MpiErr;
use sss_mbcf::{PeerMap, Perm, SegmentInfo, TransportKind};

/// Bytes of a member's record: size, displacement unit.
const SIZES: usize = 16;

/// The shared segment as this member sees it.
pub(crate) struct Shared {
    /// Where the segment starts in this process (0 for an empty window).
    pub base: usize,
    /// The first member's mapping kept for the window's life (not kept
    /// by the first member itself, whose segment is the window's own).
    _map: Option<PeerMap>,
}

/// `MPI_Win_allocate_shared` on `comm`: our part of `size` bytes; the
/// window's handle and where our part starts.
pub(crate) fn allocate(comm: usize, size: u64, disp_unit: u64) -> Result<(usize, usize), MpiErr> {
    if disp_unit == 0 {
        return Err(MpiErr::new(err::DISP, "disp_unit must be positive"));
    }
    crate::inter::no_collectives(comm)?;
    let (task, group, rank) = crate::runtime::with(|e| {
        let c = e.comm(comm)?;
        Ok((e.task.clone(), c.group.to_vec(), c.rank))
    })?;
    let me = task.rank();
    if let Some(&far) = group
        .iter()
        .find(|&&w| w != me && task.transport_to(w) != Some(TransportKind::Shm))
    {
        return Err(MpiErr::new(
            err::COMM,
            format!(
                "MPI_Win_allocate_shared needs tasks of one node, and task {far} is on another \
                 (split the communicator with MPI_Comm_split_type(MPI_COMM_TYPE_SHARED))"
            ),
        ));
    }
    let mut mine = [0u8; SIZES];
    mine[..8].copy_from_slice(&size.to_le_bytes());
    mine[8..].copy_from_slice(&disp_unit.to_le_bytes());
    let mut all = vec![0u8; SIZES * group.len()];
    crate::coll::allgather(comm, Some(&mine), &mut all, SIZES)?;
    let sizes: Vec<u64> = all
        .chunks_exact(SIZES)
        .map(|r| u64::from_le_bytes(r[..8].try_into().unwrap_or([0; 8])))
        .collect();
    let total = sizes
        .iter()
        .try_fold(0u64, |a, &s| a.checked_add(s))
        .ok_or_else(|| MpiErr::new(err::SIZE, "window sizes overflow"))?;
    let off: u64 = sizes[..rank as usize].iter().sum();
    // The first member allocates the whole and tells the others where.
    let seg = if rank == 0 && total > 0 {
        let len = usize::try_from(total)
            .map_err(|_| MpiErr::new(err::SIZE, format!("window of {total} bytes")))?;
        Some(task.alloc(len, Perm::ALL).map_err(|e| {
            MpiErr::new(err::NO_MEM, format!("shared window of {total} bytes: {e}"))
        })?)
    } else {
        None
    };
    let mut info = [0u8; 37];
    if let Some(s) = &seg {
        info.copy_from_slice(&s.info().to_bytes());
    }
    crate::coll::bcast(comm, &mut info, 0)?;
    let whole = (total > 0)
        .then(|| SegmentInfo::from_bytes(&info))
        .flatten()
        .filter(|s| s.len == total && s.rank == group[0]);
    if total > 0 && whole.is_none() {
        return Err(MpiErr::new(err::INTERN, "shared window segment record"));
    }
    let (base, map) = match (&seg, &whole) {
        (Some(s), _) => (s.as_ptr() as usize, None),
        (None, Some(w)) => {
            let m = task
                .map_peer(w)
                .map_err(|e| MpiErr::new(err::NO_MEM, format!("mapping the shared window: {e}")))?;
            (m.as_ptr() as usize, Some(m))
        }
        (None, None) => (0, None),
    };
    let part = whole.map(|w| SegmentInfo {
        base: w.base.wrapping_add(off),
        len: size,
        ..w
    });
    let ours = if base == 0 { 0 } else { base + off as usize };
    let shared = Shared { base, _map: map };
    let allocated = seg.is_some();
    let h = crate::win::create_in(
        comm,
        seg,
        part,
        ours,
        size,
        disp_unit,
        allocated,
        Some(shared),
    )?;
    Ok((h, ours))
}

/// `MPI_Win_shared_query`: size, displacement unit and address here of
/// `rank`'s part (`MPI_PROC_NULL`: the first part with a non-zero size).
pub(crate) fn query(h: usize, rank: i32) -> Result<(u64, u64, usize), MpiErr> {
    crate::win::with_win(h, |w, _| {
        let base = w
            .shared
            .as_ref()
            .map(|s| s.base)
            .ok_or_else(|| MpiErr::new(err::WIN, "not a shared-memory window"))?;
        let t = if rank == crate::consts::PROC_NULL {
            (0..w.len() as u32)
                .find(|&t| w.part(t).is_some_and(|p| p.0 > 0))
                .unwrap_or(0)
        } else {
            u32::try_from(rank)
                .ok()
                .filter(|&t| (t as usize) < w.len())
                .ok_or_else(|| MpiErr::new(err::RANK, format!("invalid rank {rank}")))?
        };
        match w.part(t) {
            // `off` comes from the part's record; a bad one gives a bad
            // pointer to the caller, never a panic here.
            Some((size, unit, off)) if base != 0 => {
                Ok((size, unit, base.wrapping_add(off as usize)))
            }
            Some((size, unit, _)) => Ok((size, unit, 0)),
            None => Ok((0, 1, 0)),
        }
    })
}
