//! IDM, the information disclosure mechanism: every node's status page,
//! readable by every task at the cost of a load.
//!
//! The node daemon (`sssd`) of host `H` keeps the file `/dev/shm/sss-idm-H`:
//! a header and [`IDM_NODES`] slots, one per known node — its own page,
//! sampled from `/proc` every few milliseconds, and the pages of other
//! nodes, which arrive by gossip (no-flow-control MBCF writes). Tasks map
//! the file read-only ([`Idm`]); only the daemon holds an [`IdmWriter`].
//! Each slot is a sequence lock over a plain
//! [`NodeData`]: the daemon makes `seq` odd, rewrites the data, makes it
//! even; a reader copies the data and retries if `seq` was odd or moved.
//! No system call is on the read path.
//!
//! Layout of the file (native endianness, `#[repr(C)]`):
//!
//! ```text
//! offset      size   field
//!      0        64   IdmHeader
//!     64  64 × 1024  NodeSlot[IDM_NODES]: seq (8), padding (56), NodeData
//! ```

use crate::seqlock::Stale;
use crate::sys::{self, Mapping};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// Magic of an IDM file ("SSID").
pub const IDM_MAGIC: u32 = 0x5353_4944;
/// Node slots per file.
pub const IDM_NODES: usize = 64;
/// Task entries per node page.
pub const IDM_TASKS: usize = 32;
/// Bytes of a node slot.
pub const SLOT_BYTES: usize = 1024;

/// A task's scheduling state as the daemon sampled it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum TaskState {
    /// Not known (no entry, or not sampled yet).
    Unknown = 0,
    /// On a CPU (state `R` while the node has no more runnable threads
    /// than CPUs).
    Running = 1,
    /// Ready but possibly waiting for a CPU (state `R` on an
    /// oversubscribed node).
    Runnable = 2,
    /// Blocked (`S` or `D`).
    Sleeping = 3,
    /// Stopped, zombie, or gone.
    Gone = 4,
}

impl TaskState {
    /// Decodes the stored value.
    pub fn from_u32(v: u32) -> Self {
        match v {
            1 => Self::Running,
            2 => Self::Runnable,
            3 => Self::Sleeping,
            4 => Self::Gone,
            _ => Self::Unknown,
        }
    }
}

/// One local task on a node page.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(C)]
pub struct TaskEntry {
    /// Job id (0 for an empty entry).
    pub job: u32,
    /// Rank in the job.
    pub rank: u32,
    /// Process id on its node.
    pub pid: u32,
    /// A [`TaskState`] value.
    pub state: u32,
    /// The task's progress counter ([`crate::Task::bump_progress`]).
    pub progress: u64,
}

/// A node's status page. Plain data: copied whole under the slot's
/// sequence lock, and gossiped byte for byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C)]
pub struct NodeData {
    /// Bit 0: slot in use; bit 1: node down (no gossip within the bound).
    pub flags: u32,
    /// CPUs of the node.
    pub ncpus: u32,
    /// Node name (its host address), NUL-padded.
    pub name: [u8; 32],
    /// When the owning daemon published it (CLOCK_REALTIME, ns).
    pub updated_ns: u64,
    /// When this file's daemon last heard of it (its own clock, ns);
    /// staleness is `now - received_ns`.
    pub received_ns: u64,
    /// Runnable threads on the node (`procs_running` of /proc/stat).
    pub runnable: u32,
    /// Local SSS tasks listed in `tasks`.
    pub ntasks: u32,
    /// Load averages over 1, 5 and 15 minutes, times 1000.
    pub load: [u32; 3],
    /// Datagrams the node's tasks refused before parsing them (forged,
    /// modified, replayed, another job's), modulo 2^32.
    pub refused: u32,
    /// Memory in total, KiB.
    pub mem_total_kb: u64,
    /// Memory available, KiB.
    pub mem_free_kb: u64,
    /// MBCF datagrams sent by the node's tasks.
    pub packets: u64,
    /// MBCF bytes sent by the node's tasks.
    pub bytes: u64,
    /// MBCF retransmissions of the node's tasks.
    pub retransmissions: u64,
    /// Operations the node's tasks refused.
    pub rejected: u64,
    /// The node's SSS tasks.
    pub tasks: [TaskEntry; IDM_TASKS],
}

/// Flag: the slot holds a node.
pub const NODE_VALID: u32 = 1;
/// Flag: the node stopped gossiping and is considered down.
pub const NODE_DOWN: u32 = 2;

const _: () = assert!(std::mem::size_of::<NodeData>() + 64 <= SLOT_BYTES);

impl Default for NodeData {
    fn default() -> Self {
        Self {
            flags: 0,
            ncpus: 0,
            name: [0; 32],
            updated_ns: 0,
            received_ns: 0,
            runnable: 0,
            ntasks: 0,
            load: [0; 3],
            refused: 0,
            mem_total_kb: 0,
            mem_free_kb: 0,
            packets: 0,
            bytes: 0,
            retransmissions: 0,
            rejected: 0,
            tasks: [TaskEntry::default(); IDM_TASKS],
        }
    }
}

impl NodeData {
    /// The node's name.
    pub fn name(&self) -> &str {
        let end = self.name.iter().position(|&b| b == 0).unwrap_or(32);
        std::str::from_utf8(&self.name[..end]).unwrap_or("")
    }

    /// Sets the name (truncated to 32 bytes).
    pub fn set_name(&mut self, n: &str) {
        self.name = [0; 32];
        let b = n.as_bytes();
        let k = b.len().min(32);
        self.name[..k].copy_from_slice(&b[..k]);
    }

    /// True when the slot holds a node that is not down.
    pub fn is_up(&self) -> bool {
        self.flags & NODE_VALID != 0 && self.flags & NODE_DOWN == 0
    }

    /// True when more threads want to run than the node has CPUs.
    pub fn oversubscribed(&self) -> bool {
        self.runnable > self.ncpus.max(1)
    }

    /// The entry of task (job, rank), if listed.
    pub fn task(&self, job: u32, rank: u32) -> Option<TaskEntry> {
        self.tasks[..(self.ntasks as usize).min(IDM_TASKS)]
            .iter()
            .find(|t| t.job == job && t.rank == rank)
            .copied()
    }

    /// The bytes gossiped for this page.
    pub fn to_bytes(&self) -> Vec<u8> {
        crate::mem::pod_bytes(self).to_vec()
    }

    /// A page from gossiped bytes; `None` when the length is wrong.
    pub fn from_bytes(b: &[u8]) -> Option<Self> {
        crate::mem::pod_from_bytes(b)
    }
}

/// The header of an IDM file.
#[repr(C)]
pub struct IdmHeader {
    /// [`IDM_MAGIC`] once the file is ready.
    pub magic: AtomicU32,
    /// Layout version, 1.
    pub version: AtomicU32,
    /// Process id of the daemon that owns the file.
    pub daemon_pid: AtomicU32,
    /// Slot of the daemon's own node.
    pub self_slot: AtomicU32,
    /// Padding.
    pub _pad: [u8; 48],
}

/// Bytes of an IDM file.
pub const IDM_BYTES: usize = 64 + IDM_NODES * SLOT_BYTES;

/// Path name (under /dev/shm) of host `node`'s IDM file.
pub fn idm_name(node: &str) -> String {
    let safe: String = node
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("sss-idm-{safe}")
}

/// A mapped IDM file, read-only: what tasks and observers hold.
pub struct Idm {
    map: Mapping,
}

/// The daemon's handle of its IDM file: a writable mapping, and every
/// reader method through `Deref`.
pub struct IdmWriter {
    idm: Idm,
}

impl std::fmt::Debug for IdmWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IdmWriter").finish_non_exhaustive()
    }
}

impl std::ops::Deref for IdmWriter {
    type Target = Idm;

    fn deref(&self) -> &Idm {
        &self.idm
    }
}

impl IdmWriter {
    /// Creates (or takes over) host `node`'s IDM file, for its daemon.
    /// The file is built under a private name and renamed into place, so
    /// nobody ever opens it unsized or uninitialized.
    pub fn create(node: &str) -> std::io::Result<IdmWriter> {
        let name = idm_name(node);
        let tmp = format!("{name}.new-{}", std::process::id());
        sys::shm_unlink(&tmp);
        let fd = sys::shm_file(&tmp, IDM_BYTES, true)?;
        let map = Mapping::shared(fd.as_raw_fd(), IDM_BYTES);
        let map = match map {
            Ok(m) => m,
            Err(e) => {
                sys::shm_unlink(&tmp);
                return Err(e);
            }
        };
        let w = IdmWriter { idm: Idm { map } };
        let h = w.header();
        h.version.store(1, Ordering::Relaxed);
        h.daemon_pid.store(std::process::id(), Ordering::Relaxed);
        h.magic.store(IDM_MAGIC, Ordering::Release);
        if let Err(e) = sys::shm_rename(&tmp, &name) {
            sys::shm_unlink(&tmp);
            return Err(e);
        }
        Ok(w)
    }

    /// Removes host `node`'s IDM file.
    pub fn unlink(node: &str) {
        sys::shm_unlink(&idm_name(node));
    }

    /// Sets the daemon's own slot.
    pub fn set_self_slot(&self, i: usize) {
        self.header().self_slot.store(i as u32, Ordering::Relaxed);
    }

    /// Rewrites slot `i` (one writer per file: the daemon).
    #[allow(unsafe_code)]
    pub fn write(&self, i: usize, d: &NodeData) {
        if i >= IDM_NODES {
            return;
        }
        let page = 64 + i * SLOT_BYTES + 64;
        // SAFETY: the page lies inside the IDM_BYTES mapping (i checked),
        // which is writable (created here), 64-byte aligned; we are its
        // only writer, readers retry.
        crate::seqlock::write(self.seq(i), || unsafe {
            crate::mem::idm_write(self.map.ptr(), page, d)
        });
    }
}

impl std::fmt::Debug for Idm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Idm").finish_non_exhaustive()
    }
}

impl Idm {
    /// Maps host `node`'s IDM file, read-only, if its daemon published
    /// one.
    pub fn open(node: &str) -> std::io::Result<Idm> {
        let fd = sys::shm_file_read(&idm_name(node))?;
        let map = Mapping::read_only(fd.as_raw_fd(), IDM_BYTES)?;
        let idm = Idm { map };
        if idm.header().magic.load(Ordering::Acquire) != IDM_MAGIC {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "IDM file not initialized",
            ));
        }
        Ok(idm)
    }

    #[allow(unsafe_code)]
    fn header(&self) -> &IdmHeader {
        // SAFETY: the mapping is IDM_BYTES long (checked against the file
        // when mapped), page aligned, and lives as long as `self`.
        unsafe { crate::mem::idm_header(self.map.ptr()) }
    }

    /// Process id of the owning daemon.
    pub fn daemon_pid(&self) -> u32 {
        self.header().daemon_pid.load(Ordering::Relaxed)
    }

    /// The daemon's own slot.
    pub fn self_slot(&self) -> usize {
        self.header().self_slot.load(Ordering::Relaxed) as usize
    }

    /// Slot `i`'s sequence word; `i < IDM_NODES`.
    #[allow(unsafe_code)]
    fn seq(&self, i: usize) -> &AtomicU64 {
        let i = i.min(IDM_NODES - 1);
        // SAFETY: the slot lies inside the IDM_BYTES mapping (i clamped),
        // 64-byte aligned; the mapping lives as long as `self`.
        unsafe { crate::mem::idm_seq(self.map.ptr(), 64 + i * SLOT_BYTES) }
    }

    /// A consistent copy of slot `i`; `None` when `i` is out of range or
    /// the slot is stale (see [`Idm::read_slot`]).
    pub fn read(&self, i: usize) -> Option<NodeData> {
        self.read_slot(i).ok().flatten()
    }

    /// A consistent copy of slot `i` (`None` when out of range), or
    /// [`Stale`] when its writer stays mid-update (a daemon killed while
    /// rewriting it): the page is then unknown, not waited for.
    #[allow(unsafe_code)]
    pub fn read_slot(&self, i: usize) -> Result<Option<NodeData>, Stale> {
        if i >= IDM_NODES {
            return Ok(None);
        }
        let page = 64 + i * SLOT_BYTES + 64;
        // SAFETY: the page lies inside the IDM_BYTES mapping (i checked),
        // 64-byte aligned; a torn copy is discarded by the sequence check.
        crate::seqlock::read(self.seq(i), || unsafe {
            crate::mem::idm_read(self.map.ptr(), page)
        })
        .map(Some)
    }

    /// Runnable threads and CPUs of the daemon's own node, read in place
    /// (two loads, no copy, so possibly from two samples): `None` until
    /// the daemon published its page.
    #[allow(unsafe_code)]
    pub fn own_load(&self) -> Option<(u32, u32)> {
        let i = self.self_slot();
        if i >= IDM_NODES {
            return None;
        }
        let page = 64 + i * SLOT_BYTES + 64;
        // SAFETY: the field lies inside the page, inside the mapping (i
        // checked), 4-byte aligned (repr(C) u32 fields of a 64-byte
        // aligned page).
        let field = |off: usize| unsafe { crate::mem::idm_u32(self.map.ptr(), page + off) };
        if field(std::mem::offset_of!(NodeData, flags)) & NODE_VALID == 0 {
            return None;
        }
        Some((
            field(std::mem::offset_of!(NodeData, runnable)),
            field(std::mem::offset_of!(NodeData, ncpus)),
        ))
    }

    /// Every node in use.
    pub fn nodes(&self) -> Vec<NodeData> {
        (0..IDM_NODES)
            .filter_map(|i| self.read(i))
            .filter(|d| d.flags & NODE_VALID != 0)
            .collect()
    }

    /// The slot holding node `name`.
    pub fn find(&self, name: &str) -> Option<(usize, NodeData)> {
        (0..IDM_NODES)
            .filter_map(|i| self.read(i).map(|d| (i, d)))
            .find(|(_, d)| d.flags & NODE_VALID != 0 && d.name() == name)
    }
}

#[cfg(test)]
mod file_tests {
    use super::*;

    /// Regression: a daemon killed between creating its IDM file and
    /// sizing it left an empty file, and opening it killed the launcher
    /// with SIGBUS.
    #[test]
    fn an_unsized_idm_file_is_an_error_not_a_crash() {
        let node = format!("test-unsized-{}", std::process::id());
        let path = format!("/dev/shm/{}", idm_name(&node));
        std::fs::write(&path, b"").expect("create an empty IDM file");
        let r = Idm::open(&node);
        let _ = std::fs::remove_file(&path);
        let e = r.expect_err("an empty file must not open");
        assert_eq!(e.kind(), std::io::ErrorKind::UnexpectedEof);
    }

    #[test]
    fn create_takes_over_an_unsized_file_and_leaves_no_temporary() {
        let node = format!("test-takeover-{}", std::process::id());
        let path = format!("/dev/shm/{}", idm_name(&node));
        std::fs::write(&path, b"").expect("create an empty IDM file");
        let created = IdmWriter::create(&node).expect("create");
        let opened = Idm::open(&node).expect("open after create");
        assert_eq!(opened.daemon_pid(), std::process::id());
        drop((created, opened));
        IdmWriter::unlink(&node);
        let left: Vec<String> = std::fs::read_dir("/dev/shm")
            .expect("list /dev/shm")
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.contains(&format!("test-takeover-{}", std::process::id())))
            .collect();
        assert!(left.is_empty(), "left behind: {left:?}");
    }

    /// Regression: `Idm::open` mapped the file writable and `Idm` had
    /// `write`, so any task could rewrite its node's pages. Now a reader's
    /// mapping is read-only and only the daemon's `IdmWriter` writes.
    #[test]
    fn an_opened_idm_is_mapped_read_only() {
        let node = format!("test-readonly-{}", std::process::id());
        let daemon = IdmWriter::create(&node).expect("create");
        let reader = Idm::open(&node).expect("open");
        let at = |i: &Idm| i.map.ptr() as u64;
        let mapped = |i: &Idm, write| sys::range_mapped(at(i), IDM_BYTES as u64, write).unwrap();
        let r = (
            mapped(&reader, false),
            mapped(&reader, true),
            mapped(&daemon, true),
        );
        let mut d = NodeData::default();
        d.set_name(&node);
        daemon.write(1, &d);
        let seen = reader.read(1);
        IdmWriter::unlink(&node);
        assert_eq!(
            r,
            (true, false, true),
            "(readable, writable, daemon's writable)"
        );
        assert_eq!(seen, Some(d));
    }
}
