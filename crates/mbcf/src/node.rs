//! What a node-local observer — the node daemon's sampler, `sss status`, a
//! test — may read about the tasks of this node: their pid, node, traffic
//! and progress counters and wait state, through a read-only mapping of
//! each task's control block (`sss-<job>-<rank>-ctl` in
//! [`crate::shm_dir`]).
//!
//! The control block's layout stays private to this crate (same-node
//! peers write into it, and the layout may change); a [`TaskView`] is
//! checked once when opened (size, magic, layout version) and then read
//! with loads only. The counters are the task's own and may be written by
//! a hostile local process: treat them as reports, not as facts.

use crate::shm::{self, Ctl, CTL_MAGIC};
use crate::sys::{self, Mapping};
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;

/// A read-only view of one local task's control block.
pub struct TaskView {
    job: u32,
    rank: u32,
    pid: u32,
    node: String,
    map: Mapping,
}

impl std::fmt::Debug for TaskView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskView")
            .field("job", &self.job)
            .field("rank", &self.rank)
            .field("pid", &self.pid)
            .field("node", &self.node)
            .finish_non_exhaustive()
    }
}

impl TaskView {
    /// Maps the control block of task (`job`, `rank`) in the incarnation
    /// named by `tag` (see [`tasks`], [`crate::Task::ctl_tag`]). Fails when there is
    /// none, or it is too short, not initialized or of another layout.
    pub fn open(job: u32, rank: u32, tag: u64) -> std::io::Result<Self> {
        let fd = sys::shm_file_read(&shm::ctl_name(job, rank, tag))?;
        let map = Mapping::read_only(fd.as_raw_fd(), std::mem::size_of::<Ctl>())?;
        let bad = |m: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, m.to_string());
        let mut v = TaskView {
            job,
            rank,
            pid: 0,
            node: String::new(),
            map,
        };
        let c = v.ctl();
        if c.magic.load(Ordering::Acquire) != CTL_MAGIC {
            return Err(bad("control block not initialized"));
        }
        if c.version != crate::shm::CTL_VERSION {
            return Err(bad("control block of another layout version"));
        }
        let n = c.node;
        let end = n.iter().position(|&b| b == 0).unwrap_or(n.len());
        v.pid = c.pid;
        v.node = String::from_utf8_lossy(&n[..end]).into_owned();
        Ok(v)
    }

    #[allow(unsafe_code)]
    fn ctl(&self) -> &Ctl {
        // SAFETY: the mapping holds size_of::<Ctl>() bytes (checked against
        // the file when mapped), is page aligned and lives as long as
        // `self`; it is read-only and only loaded from.
        unsafe { crate::mem::ctl_at(self.map.ptr()) }
    }

    /// The task's job.
    pub fn job(&self) -> u32 {
        self.job
    }

    /// The task's rank.
    pub fn rank(&self) -> u32 {
        self.rank
    }

    /// The task's process id, as it recorded it.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The node name the task recorded.
    pub fn node(&self) -> &str {
        &self.node
    }

    /// The progress counter the application bumps.
    pub fn progress(&self) -> u64 {
        self.ctl().progress.load(Ordering::Relaxed)
    }

    /// Datagrams the task sent.
    pub fn packets(&self) -> u64 {
        self.ctl().packets.load(Ordering::Relaxed)
    }

    /// Bytes the task sent.
    pub fn bytes(&self) -> u64 {
        self.ctl().bytes.load(Ordering::Relaxed)
    }

    /// Retransmissions of the task.
    pub fn retransmissions(&self) -> u64 {
        self.ctl().retransmissions.load(Ordering::Relaxed)
    }

    /// Operations refused: by the task's udp receive path, and by
    /// same-node senders' checks on its behalf.
    pub fn rejected(&self) -> u64 {
        let c = self.ctl();
        c.udp_rejected
            .load(Ordering::Relaxed)
            .wrapping_add(c.rejected.load(Ordering::Relaxed))
    }

    /// Datagrams the task refused before parsing them (see
    /// [`crate::TaskStats::refused`]).
    pub fn refused(&self) -> u64 {
        self.ctl().refused.load(Ordering::Relaxed)
    }

    /// Operations same-node senders applied to the task's memory.
    pub fn applied_by_peers(&self) -> u64 {
        self.ctl().applied.load(Ordering::Relaxed)
    }

    /// Threads of the task blocked in a wait right now.
    pub fn blocked(&self) -> u32 {
        self.ctl().blocked.load(Ordering::SeqCst)
    }

    /// The task's event word: bumped when something lands in its memory
    /// while a thread of it blocks (see `Ctl::waiters`).
    pub fn events(&self) -> u32 {
        self.ctl().events.load(Ordering::SeqCst)
    }

    /// The partner rank a thread of the task is SS-Waiting for, if any.
    pub fn waiting_for(&self) -> Option<u32> {
        self.ctl().waiting_for.load(Ordering::SeqCst).checked_sub(1)
    }
}

/// The (job, rank, tag) of every task with a control block in the
/// shared-memory directory, whatever its node (see [`TaskView::node`]).
pub fn tasks() -> std::io::Result<Vec<(u32, u32, u64)>> {
    let mut v: Vec<(u32, u32, u64)> = std::fs::read_dir(sys::shm_dir()?)?
        .flatten()
        .filter_map(|e| shm::parse_ctl_name(e.file_name().to_str()?))
        .collect();
    v.sort_unstable();
    Ok(v)
}

/// For this crate's integration tests, which play a hostile local process
/// writing into a task's control block; not an interface.
#[doc(hidden)]
pub mod testing {
    use crate::shm::{Ctl, SegEntry};

    /// Path of task (`job`, `rank`)'s control block.
    pub fn ctl_path(job: u32, rank: u32, tag: u64) -> std::io::Result<std::path::PathBuf> {
        Ok(crate::shm_dir()?.join(crate::shm::ctl_name(job, rank, tag)))
    }

    /// Offset of the published segment table in the control block.
    pub const SEG_TABLE_AT: usize = std::mem::offset_of!(Ctl, segs);
    /// Entries of the segment table.
    pub const SEG_ENTRIES: usize = crate::shm::CTL_SEGMENTS;
    /// Bytes of one entry; its sequence word (8 bytes) comes first.
    pub const SEG_ENTRY_BYTES: usize = std::mem::size_of::<SegEntry>();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_block_names_parse_strictly() {
        let tag = 0x0123_4567_89ab_cdef;
        assert_eq!(
            shm::parse_ctl_name(&shm::ctl_name(7, 3, tag)),
            Some((7, 3, tag))
        );
        for bad in [
            "sss-7-ctl",
            "sss-7-3-ctl",
            "sss-7-3-4-ctl",
            "sss-7-3-0123456789abcdeg-ctl",
            "sss-7-3-0123456789abcdef-1-ctl",
            "sss-x-3-ctl",
            "sss-7-3-seg",
            "sss--3-ctl",
        ] {
            assert_eq!(shm::parse_ctl_name(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_missing_or_short_control_block_does_not_open() {
        let job = 0x7000_0000 | std::process::id();
        assert!(TaskView::open(job, 0, 5).is_err());
        let path = testing::ctl_path(job, 1, 5).unwrap();
        std::fs::write(&path, [0u8; 64]).unwrap();
        let short = TaskView::open(job, 1, 5);
        std::fs::write(&path, vec![0u8; shm::ctl_bytes()]).unwrap();
        let unset = TaskView::open(job, 1, 5);
        let _ = std::fs::remove_file(&path);
        assert_eq!(short.unwrap_err().kind(), std::io::ErrorKind::UnexpectedEof);
        assert_eq!(unset.unwrap_err().kind(), std::io::ErrorKind::InvalidData);
    }
}
