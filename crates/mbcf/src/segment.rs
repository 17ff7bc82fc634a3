//! Segments: address ranges a task exposes to MBCF, each with a random
//! capability key and permissions. The receiver-side checks of every
//! incoming operation live here.

use crate::mem::Checked;
use crate::sys::{self, Mapping};
use crate::Error;
use foldhash::{HashMap, HashMapExt};
use sss_wire::Status;
use std::os::fd::AsRawFd;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

/// Access rights of a segment, as a bit set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Perm(pub u8);

impl Perm {
    /// Remote READ allowed.
    pub const READ: Perm = Perm(1);
    /// Remote WRITE, FIFO push and MULTICAST allowed.
    pub const WRITE: Perm = Perm(2);
    /// Remote SWAP, CAS and FETCH_ADD allowed.
    pub const ATOMIC: Perm = Perm(4);
    /// Everything.
    pub const ALL: Perm = Perm(7);

    /// True when every right of `other` is in `self`.
    pub fn contains(self, other: Perm) -> bool {
        self.0 & other.0 == other.0
    }
}

impl std::ops::BitOr for Perm {
    type Output = Perm;
    fn bitor(self, o: Perm) -> Perm {
        Perm(self.0 | o.0)
    }
}

/// What peers need to address a segment: pass it to them (for example with
/// [`crate::Task::exchange`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SegmentInfo {
    /// Owner rank.
    pub rank: u32,
    /// Segment number within the owner.
    pub id: u32,
    /// Capability key.
    pub key: u64,
    /// Base virtual address in the owner.
    pub base: u64,
    /// Length in bytes.
    pub len: u64,
    /// Access rights.
    pub perm: Perm,
    /// True when the segment lives in shared memory (`/dev/shm`), so a
    /// task on the same node can map it.
    pub shared: bool,
}

impl SegmentInfo {
    /// Encodes for exchange.
    pub fn to_bytes(&self) -> [u8; 37] {
        let mut b = [0u8; 37];
        b[0..4].copy_from_slice(&self.rank.to_le_bytes());
        b[4..8].copy_from_slice(&self.id.to_le_bytes());
        b[8..16].copy_from_slice(&self.key.to_le_bytes());
        b[16..24].copy_from_slice(&self.base.to_le_bytes());
        b[24..32].copy_from_slice(&self.len.to_le_bytes());
        b[32] = self.perm.0;
        b[33] = self.shared as u8;
        b
    }

    /// Decodes what [`SegmentInfo::to_bytes`] made.
    pub fn from_bytes(b: &[u8]) -> Option<Self> {
        if b.len() < 37 {
            return None;
        }
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap_or([0; 4]));
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap_or([0; 8]));
        Some(Self {
            rank: u32_at(0),
            id: u32_at(4),
            key: u64_at(8),
            base: u64_at(16),
            len: u64_at(24),
            perm: Perm(b[32] & 7),
            shared: b[33] != 0,
        })
    }

    /// The address `offset` bytes into the segment.
    pub fn at(&self, offset: u64) -> crate::RemoteAddr {
        crate::RemoteAddr {
            rank: self.rank,
            key: self.key,
            addr: self.base.wrapping_add(offset),
        }
    }
}

pub(crate) enum Backing {
    /// The mapping is held so it outlives every use through the table.
    Shared {
        _map: Arc<Mapping>,
        name: String,
    },
    Registered,
}

pub(crate) struct Seg {
    pub info: SegmentInfo,
    pub backing: Backing,
}

/// A segment of this task. Dropping the handle does not free the segment;
/// [`crate::Task::free`] does.
#[derive(Clone)]
pub struct Segment {
    pub(crate) info: SegmentInfo,
    /// Keeps a shared mapping alive while any handle exists.
    pub(crate) _map: Option<Arc<Mapping>>,
}

impl std::fmt::Debug for Segment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Segment").field("info", &self.info).finish()
    }
}

impl Segment {
    /// What peers need to address it.
    pub fn info(&self) -> SegmentInfo {
        self.info
    }

    /// Base address.
    pub fn as_ptr(&self) -> *mut u8 {
        self.info.base as *mut u8
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.info.len as usize
    }

    /// True for an empty segment.
    pub fn is_empty(&self) -> bool {
        self.info.len == 0
    }

    /// `len` bytes at `off`, if inside the segment.
    #[allow(unsafe_code)]
    pub(crate) fn check(&self, off: usize, len: usize) -> Result<Checked, Error> {
        if off.checked_add(len).is_none_or(|e| e > self.len()) {
            return Err(Error::Invalid("range outside the segment"));
        }
        // SAFETY: the range lies inside the segment, whose memory the
        // handle keeps mapped (shared memory: through its Arc) or the
        // registrant keeps valid (Task::register's contract).
        Ok(unsafe { Checked::new(self.as_ptr().wrapping_add(off), len) })
    }

    /// The 8-byte word at `off` (8-byte aligned), for flags and counters
    /// that remote operations bump.
    pub fn word(&self, off: usize) -> Result<&AtomicU64, Error> {
        if off % 8 != 0 {
            return Err(Error::Invalid("unaligned word"));
        }
        // The returned reference is bound to `self`, which keeps a shared
        // mapping alive through its Arc; registered memory is the
        // registrant's to keep alive.
        Ok(self.check(off, 8)?.word())
    }

    /// Copies `data` into the segment at `off`.
    pub fn write_bytes(&self, off: usize, data: &[u8]) -> Result<(), Error> {
        self.check(off, data.len())?.write(data);
        Ok(())
    }

    /// Copies bytes out of the segment at `off`.
    pub fn read_bytes(&self, off: usize, out: &mut [u8]) -> Result<(), Error> {
        self.check(off, out.len())?.read(out);
        Ok(())
    }
}

/// All segments of a task, by key.
pub(crate) struct SegTable {
    segs: Vec<Seg>,
    by_key: HashMap<u64, usize>,
    next_id: u32,
    job: u32,
    rank: u32,
}

impl SegTable {
    pub fn new(job: u32, rank: u32) -> Self {
        Self {
            segs: Vec::new(),
            by_key: HashMap::new(),
            next_id: 1,
            job,
            rank,
        }
    }

    fn new_key(&self) -> u64 {
        loop {
            let k = sys::random_u64();
            if k != 0 && !self.by_key.contains_key(&k) {
                return k;
            }
        }
    }

    pub fn shm_name(job: u32, rank: u32, id: u32) -> String {
        format!("sss-{job}-{rank}-seg{id}")
    }

    /// Allocates `len` bytes of zeroed shared memory.
    pub fn alloc(&mut self, len: usize, perm: Perm) -> Result<Segment, Error> {
        self.alloc_with(len, perm, None, None)
    }

    /// Allocates `len` bytes of zeroed shared memory without reserving
    /// them (see `Task::alloc_sparse`).
    pub fn alloc_sparse(&mut self, len: usize, perm: Perm) -> Result<Segment, Error> {
        self.alloc_inner(len, perm, None, None, false)
    }

    /// Allocates shared memory, optionally at a fixed address and with a
    /// given key (symmetric segments).
    pub fn alloc_with(
        &mut self,
        len: usize,
        perm: Perm,
        at: Option<u64>,
        key: Option<u64>,
    ) -> Result<Segment, Error> {
        self.alloc_inner(len, perm, at, key, true)
    }

    fn alloc_inner(
        &mut self,
        len: usize,
        perm: Perm,
        at: Option<u64>,
        key: Option<u64>,
        reserve: bool,
    ) -> Result<Segment, Error> {
        if key.is_some_and(|k| k == 0 || self.by_key.contains_key(&k)) {
            return Err(Error::Invalid("key in use"));
        }
        // Random ids: names another user cannot guess and pre-create. A
        // name taken anyway (by anyone) is skipped, not failed on.
        let mut tries = 0;
        let (id, name, fd) = loop {
            let id = (sys::random_u64() as u32).max(1);
            let name = Self::shm_name(self.job, self.rank, id);
            let fd = if reserve {
                sys::shm_file(&name, len.max(8), true)
            } else {
                sys::shm_file_sparse(&name, len.max(8))
            };
            match fd {
                Ok(fd) => break (id, name, fd),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && tries < 16 => {
                    tries += 1;
                }
                Err(e) => return Err(Error::Io(e)),
            }
        };
        let mapped = match at {
            Some(a) => Mapping::shared_at(fd.as_raw_fd(), len.max(8), a),
            None => Mapping::shared(fd.as_raw_fd(), len.max(8)),
        };
        let map = Arc::new(mapped.map_err(|e| {
            sys::shm_unlink(&name);
            Error::Io(e)
        })?);
        let info = SegmentInfo {
            rank: self.rank,
            id,
            key: key.unwrap_or_else(|| self.new_key()),
            base: map.ptr() as u64,
            len: len as u64,
            perm,
            shared: true,
        };
        self.by_key.insert(info.key, self.segs.len());
        self.segs.push(Seg {
            info,
            backing: Backing::Shared {
                _map: map.clone(),
                name,
            },
        });
        Ok(Segment {
            info,
            _map: Some(map),
        })
    }

    /// Registers memory the caller owns, once it is seen mapped with the
    /// access `perm` lets peers have (readable; writable for WRITE or
    /// ATOMIC).
    pub fn register(&mut self, base: u64, len: usize, perm: Perm) -> Result<Segment, Error> {
        let write = perm.contains(Perm::WRITE) || perm.contains(Perm::ATOMIC);
        if !sys::range_mapped(base, len as u64, write)? {
            return Err(Error::Invalid(if write {
                "range not mapped readable and writable in this process"
            } else {
                "range not mapped readable in this process"
            }));
        }
        Ok(self.register_mapped(base, len, perm))
    }

    /// [`SegTable::register`] of memory the caller knows mapped with the
    /// access `perm` lets peers have.
    pub fn register_mapped(&mut self, base: u64, len: usize, perm: Perm) -> Segment {
        let id = self.next_id;
        self.next_id += 1;
        let info = SegmentInfo {
            rank: self.rank,
            id,
            key: self.new_key(),
            base,
            len: len as u64,
            perm,
            shared: false,
        };
        self.by_key.insert(info.key, self.segs.len());
        self.segs.push(Seg {
            info,
            backing: Backing::Registered,
        });
        Segment { info, _map: None }
    }

    /// Removes a segment; its key stops working at once.
    pub fn free(&mut self, key: u64) -> bool {
        let Some(i) = self.by_key.remove(&key) else {
            return false;
        };
        let seg = self.segs.swap_remove(i);
        if i < self.segs.len() {
            let k = self.segs[i].info.key;
            self.by_key.insert(k, i);
        }
        if let Backing::Shared { name, .. } = &seg.backing {
            sys::shm_unlink(name);
        }
        true
    }

    /// Unlinks every shared-memory file (the mappings stay valid).
    pub fn unlink_all(&self) {
        for s in &self.segs {
            if let Backing::Shared { name, .. } = &s.backing {
                sys::shm_unlink(name);
            }
        }
    }

    /// Every segment, for publishing to same-node peers.
    pub fn infos(&self) -> Vec<SegmentInfo> {
        self.segs.iter().map(|s| s.info).collect()
    }

    /// The receiver's check of an incoming operation.
    #[allow(unsafe_code)]
    pub fn check(&self, key: u64, addr: u64, len: usize, need: Perm) -> Result<Checked, Status> {
        let &i = self.by_key.get(&key).ok_or(Status::BadKey)?;
        let info = &self.segs[i].info;
        let off = addr.checked_sub(info.base).ok_or(Status::OutOfBounds)?;
        if off.checked_add(len as u64).is_none_or(|end| end > info.len) {
            return Err(Status::OutOfBounds);
        }
        if !info.perm.contains(need) {
            return Err(Status::NoPermission);
        }
        // SAFETY: the range lies inside a segment of the table: shared
        // memory the table keeps mapped, or registered memory the
        // registrant keeps valid (Task::register's contract) until freed.
        Ok(unsafe { Checked::new(addr as *mut u8, len) })
    }

    /// The check of a multicast write, addressed by offset into the
    /// segment the key names.
    pub fn check_offset(
        &self,
        key: u64,
        off: u64,
        len: usize,
        need: Perm,
    ) -> Result<Checked, Status> {
        let &i = self.by_key.get(&key).ok_or(Status::BadKey)?;
        let base = self.segs[i].info.base;
        self.check(
            key,
            base.checked_add(off).ok_or(Status::OutOfBounds)?,
            len,
            need,
        )
    }

    /// Checks an 8-byte atomic target.
    pub fn check_word(&self, key: u64, addr: u64, need: Perm) -> Result<Checked, Status> {
        let c = self.check(key, addr, 8, need)?;
        if addr % 8 != 0 {
            return Err(Status::Misaligned);
        }
        Ok(c)
    }
}
