//! Dynamic windows (`MPI_Win_create_dynamic`, `MPI_Win_attach`,
//! `MPI_Win_detach`): memory is attached after creation, without the
//! others taking part, and addressed by its absolute address. Each task
//! keeps a table of what it attached (base, length, the MBCF segment
//! registered over it) in a segment of its own, whose address every
//! member learnt at creation; an origin reads a target's table with an
//! MBCF READ when an address is not in its copy, and keeps the copy (the
//! program orders attach before any access, so a copy can only miss).

use crate::consts::err;
use crate::engine::MpiErr;
use sss_mbcf::{Options, Perm, RemoteAddr, Segment, SegmentInfo, Task};
use std::collections::HashMap;

/// Attachments a task may have at once.
pub(crate) const SLOTS: usize = 64;
/// One table entry: base (8 bytes), length (8), segment (37), padding.
const ENTRY: usize = 64;

/// An attachment as a table holds it.
#[derive(Clone, Copy)]
struct Attached {
    base: u64,
    len: u64,
    seg: SegmentInfo,
}

/// What a dynamic window keeps besides a window's own state.
pub(crate) struct Dyn {
    /// Our table, `SLOTS` entries.
    table: Segment,
    /// Every member's table, by window rank.
    tables: Vec<SegmentInfo>,
    /// What we attached: slot, and the segment over the memory.
    mine: Vec<(usize, Segment)>,
    /// Targets' tables as last read, by window rank.
    seen: HashMap<u32, Vec<Attached>>,
}

fn encode(a: &Attached) -> [u8; ENTRY] {
    let mut e = [0u8; ENTRY];
    e[0..8].copy_from_slice(&a.base.to_le_bytes());
    e[8..16].copy_from_slice(&a.len.to_le_bytes());
    e[16..53].copy_from_slice(&a.seg.to_bytes());
    e
}

/// The entries of a table read from a peer; malformed ones are skipped.
fn decode(table: &[u8]) -> Vec<Attached> {
    table
        .chunks_exact(ENTRY)
        .filter_map(|e| {
            let base = u64::from_le_bytes(e[0..8].try_into().ok()?);
            let len = u64::from_le_bytes(e[8..16].try_into().ok()?);
            (len > 0).then_some(())?;
            Some(Attached {
                base,
                len,
                seg: SegmentInfo::from_bytes(&e[16..53])?,
            })
        })
        .collect()
}

fn covering(list: &[Attached], addr: u64, len: usize) -> Option<RemoteAddr> {
    list.iter()
        .find(|a| {
            addr >= a.base
                && addr
                    .checked_add(len as u64)
                    .is_some_and(|e| e <= a.base + a.len)
        })
        .map(|a| a.seg.at(addr - a.base))
}

impl Dyn {
    /// Our empty table; `tables` is filled by [`Dyn::set_tables`].
    pub(crate) fn new(task: &Task) -> Result<Dyn, MpiErr> {
        let table = task
            .alloc(SLOTS * ENTRY, Perm::ALL)
            .map_err(|e| MpiErr::new(err::NO_MEM, format!("dynamic window table: {e}")))?;
        table
            .write_bytes(0, &[0u8; SLOTS * ENTRY])
            .map_err(|e| MpiErr::new(err::INTERN, format!("dynamic window table: {e}")))?;
        Ok(Dyn {
            table,
            tables: Vec::new(),
            mine: Vec::new(),
            seen: HashMap::new(),
        })
    }

    /// What the others need to read our table.
    pub(crate) fn table_info(&self) -> SegmentInfo {
        self.table.info()
    }

    pub(crate) fn set_tables(&mut self, tables: Vec<SegmentInfo>) {
        self.tables = tables;
    }

    /// The slot for attaching `len` bytes at `base` (`MPI_Win_attach`,
    /// before the memory is registered).
    pub(crate) fn slot_for(&self, base: u64, len: u64) -> Result<usize, MpiErr> {
        let end = base
            .checked_add(len)
            .ok_or_else(|| MpiErr::new(err::ARG, "MPI_Win_attach: the region wraps round"))?;
        if self.mine.iter().any(|(_, s)| {
            let (sb, sl) = (s.as_ptr() as u64, s.len() as u64);
            base < sb + sl && sb < end
        }) {
            return Err(MpiErr::new(
                err::ARG,
                "MPI_Win_attach: the region overlaps one attached already",
            ));
        }
        (0..SLOTS)
            .find(|i| self.mine.iter().all(|(s, _)| s != i))
            .ok_or_else(|| {
                MpiErr::new(
                    err::NO_MEM,
                    format!("MPI_Win_attach: at most {SLOTS} regions at once"),
                )
            })
    }

    /// Publishes `seg` (the attached memory, registered) in `slot`.
    pub(crate) fn attach(&mut self, slot: usize, seg: Segment) -> Result<(), MpiErr> {
        let entry = encode(&Attached {
            base: seg.as_ptr() as u64,
            len: seg.len() as u64,
            seg: seg.info(),
        });
        self.table
            .write_bytes(slot * ENTRY, &entry)
            .map_err(|e| MpiErr::new(err::INTERN, format!("MPI_Win_attach: {e}")))?;
        self.mine.push((slot, seg));
        Ok(())
    }

    /// `MPI_Win_detach` of the region attached at `base`.
    pub(crate) fn detach(&mut self, task: &Task, base: *const u8) -> Result<(), MpiErr> {
        let i = self
            .mine
            .iter()
            .position(|(_, s)| s.as_ptr() as u64 == base as u64)
            .ok_or_else(|| {
                MpiErr::new(
                    err::ARG,
                    format!("MPI_Win_detach: nothing attached at {base:p}"),
                )
            })?;
        let (slot, seg) = self.mine.swap_remove(i);
        let _ = self.table.write_bytes(slot * ENTRY, &[0u8; ENTRY]);
        let _ = task.free(seg);
        Ok(())
    }

    /// The remote address of `len` bytes at `addr` attached at window
    /// rank `t` (world rank `world`; `me` is our window rank).
    pub(crate) fn resolve(
        &mut self,
        task: &Task,
        t: u32,
        world: u32,
        me: u32,
        addr: u64,
        len: usize,
    ) -> Result<RemoteAddr, MpiErr> {
        if t == me {
            let list: Vec<Attached> = self
                .mine
                .iter()
                .map(|(_, s)| Attached {
                    base: s.as_ptr() as u64,
                    len: s.len() as u64,
                    seg: s.info(),
                })
                .collect();
            return covering(&list, addr, len).ok_or_else(|| unattached(t, addr, len));
        }
        if let Some(hit) = self.seen.get(&t).and_then(|l| covering(l, addr, len)) {
            return Ok(hit);
        }
        let table = self
            .tables
            .get(t as usize)
            .ok_or_else(|| MpiErr::new(err::RANK, format!("invalid target rank {t}")))?;
        let at = RemoteAddr {
            rank: world,
            ..table.at(0)
        };
        let bytes = task
            .read(at, SLOTS * ENTRY, Options::default())
            .and_then(|r| r.wait_data())
            .map_err(|e| MpiErr::new(err::OTHER, format!("reading rank {t}'s attachments: {e}")))?;
        let list = decode(&bytes);
        let hit = covering(&list, addr, len);
        self.seen.insert(t, list);
        hit.ok_or_else(|| unattached(t, addr, len))
    }

    /// Frees our table and what is still attached.
    pub(crate) fn release(self, task: &Task) {
        let _ = task.free(self.table);
        for (_, s) in self.mine {
            let _ = task.free(s);
        }
    }
}

fn unattached(t: u32, addr: u64, len: usize) -> MpiErr {
    MpiErr::new(
        err::RMA_RANGE,
        format!("{len} bytes at {addr:#x} are in no region rank {t} attached to the window"),
    )
}
