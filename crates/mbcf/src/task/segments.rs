//! Segments and collectives: allocating, registering and freeing
//! memory peers may address, and the all-gather and barrier of the
//! bootstrap.

use super::transport::Route;
use super::Task;
use crate::segment::{Perm, Segment, SegmentInfo};
use crate::sys::{self};
use crate::Error;

/// A same-node task's segment mapped into this process
/// ([`Task::map_peer`]).
#[derive(Clone)]
pub struct PeerMap {
    map: std::sync::Arc<crate::sys::Mapping>,
    len: u64,
}

impl PeerMap {
    /// Where the segment starts here.
    pub fn as_ptr(&self) -> *mut u8 {
        self.map.ptr()
    }

    /// Its length.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True for an empty segment.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl std::fmt::Debug for PeerMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PeerMap").field("len", &self.len).finish()
    }
}

impl Task {
    /// Allocates `len` zeroed bytes of shared memory as a segment. The
    /// bytes are reserved in the shared-memory directory first: when it is
    /// full, this fails (`ErrorKind::StorageFull`) instead of a later
    /// touch of the memory raising SIGBUS.
    pub fn alloc(&self, len: usize, perm: Perm) -> Result<Segment, Error> {
        let mut segs = self.inner.segs.write().map_err(|_| Error::Shutdown)?;
        let s = segs.alloc(len, perm)?;
        self.inner.publish(&segs);
        Ok(s)
    }

    /// Like [`Task::alloc`] without reserving the bytes: for large, mostly
    /// untouched ranges (a DSM heap). Pages are backed as they are first
    /// touched; on a full shared-memory directory that touch raises
    /// SIGBUS, in this task or in a same-node peer, so the owner should
    /// reserve what it hands out.
    pub fn alloc_sparse(&self, len: usize, perm: Perm) -> Result<Segment, Error> {
        let mut segs = self.inner.segs.write().map_err(|_| Error::Shutdown)?;
        let s = segs.alloc_sparse(len, perm)?;
        self.inner.publish(&segs);
        Ok(s)
    }

    /// Collective: allocates a segment at the same virtual address and
    /// with the same key in every task, so one (key, address) names it
    /// everywhere — what multicast and a shared heap need.
    pub fn alloc_symmetric(&self, len: usize, perm: Perm) -> Result<Segment, Error> {
        let mine = if self.inner.rank == 0 {
            Some(self.alloc(len, perm)?)
        } else {
            None
        };
        let proposal = mine
            .as_ref()
            .map(|s| s.info.to_bytes().to_vec())
            .unwrap_or_default();
        let all = self.allgather(&proposal)?;
        let root = SegmentInfo::from_bytes(&all[0]).ok_or(Error::Boot("no proposal".into()))?;
        let seg = match mine {
            Some(s) => Ok(s),
            None => {
                let mut segs = self.inner.segs.write().map_err(|_| Error::Shutdown)?;
                let s = segs.alloc_with(len, perm, Some(root.base), Some(root.key));
                self.inner.publish(&segs);
                s
            }
        };
        let ok = self.allgather(&[seg.is_ok() as u8])?;
        if ok.iter().all(|b| b.first() == Some(&1)) {
            return seg;
        }
        if let Ok(s) = seg {
            let _ = self.free(s);
        }
        Err(Error::Invalid("address not free in every task"))
    }

    /// Collective: allocates a segment with the same key in every task (at
    /// whatever address), for multicast.
    pub fn alloc_shared_key(&self, len: usize, perm: Perm) -> Result<Segment, Error> {
        let proposal = if self.inner.rank == 0 {
            sys::random_u64().max(1).to_le_bytes().to_vec()
        } else {
            Vec::new()
        };
        let all = self.allgather(&proposal)?;
        let key = all[0]
            .get(..8)
            .and_then(|b| b.try_into().ok())
            .map(u64::from_le_bytes)
            .ok_or(Error::Boot("no key proposal".into()))?;
        let seg = {
            let mut segs = self.inner.segs.write().map_err(|_| Error::Shutdown)?;
            let s = segs.alloc_with(len, perm, None, Some(key));
            self.inner.publish(&segs);
            s
        };
        let ok = self.allgather(&[seg.is_ok() as u8])?;
        if ok.iter().all(|b| b.first() == Some(&1)) {
            return seg;
        }
        if let Ok(s) = seg {
            let _ = self.free(s);
        }
        Err(Error::Invalid("key in use in some task"))
    }

    /// Maps segment `info` of a task on this node into this process, for
    /// direct loads and stores (an MPI shared-memory window): the segment
    /// is looked up in the owner's published table and must lie in shared
    /// memory. The mapping stays valid while the returned value lives,
    /// even after the owner frees the segment (its pages then belong to
    /// nobody else).
    pub fn map_peer(&self, info: &SegmentInfo) -> Result<PeerMap, Error> {
        let Some(Route::Shm(lane)) = self.inner.routes.get(info.rank as usize) else {
            return Err(Error::Invalid("not a task on this node"));
        };
        match lane.map_segment(info.key, Perm(0)) {
            Ok(Some((map, base))) if base == info.base && map.len() as u64 >= info.len => {
                Ok(PeerMap { map, len: info.len })
            }
            Ok(Some(_)) => Err(Error::Invalid("segment not as described")),
            Ok(None) => Err(Error::Invalid("segment not in shared memory")),
            Err(s) => Err(Error::Remote(s)),
        }
    }

    /// Maps the shared-memory segment `key` of task `rank` on this node,
    /// as [`Task::map_peer`] does, knowing only its key (a rendezvous
    /// names the data by key and address), when its owner lets peers
    /// READ it: the mapping and the address the segment starts at in its
    /// owner.
    pub fn map_peer_key(&self, rank: u32, key: u64) -> Result<(PeerMap, u64), Error> {
        let Some(Route::Shm(lane)) = self.inner.routes.get(rank as usize) else {
            return Err(Error::Invalid("not a task on this node"));
        };
        match lane.map_segment(key, Perm::READ) {
            Ok(Some((map, base))) => {
                let len = map.len() as u64;
                Ok((PeerMap { map, len }, base))
            }
            Ok(None) => Err(Error::Invalid("segment not in shared memory")),
            Err(s) => Err(Error::Remote(s)),
        }
    }

    /// Registers existing memory as a segment. A range not mapped in this
    /// process (readable, and writable for WRITE or ATOMIC) is refused.
    ///
    /// # Safety
    /// `ptr .. ptr + len` must stay valid, writable memory until the
    /// segment is freed, and the caller must tolerate remote writes into it
    /// at any time (use atomics or synchronize through flags).
    #[allow(unsafe_code)]
    pub unsafe fn register(&self, ptr: *mut u8, len: usize, perm: Perm) -> Result<Segment, Error> {
        if ptr.is_null() {
            return Err(Error::Invalid("null pointer"));
        }
        let mut segs = self.inner.segs.write().map_err(|_| Error::Shutdown)?;
        let s = segs.register(ptr as u64, len, perm)?;
        self.inner.publish(&segs);
        Ok(s)
    }

    /// [`Task::register`] without looking the range up in
    /// `/proc/self/maps` (tens of microseconds): for memory the caller is
    /// about to read or write itself anyway, such as a receive buffer.
    ///
    /// # Safety
    /// As [`Task::register`], and the range must be mapped readable (and
    /// writable for WRITE or ATOMIC) in this process.
    #[allow(unsafe_code)]
    pub unsafe fn register_mapped(
        &self,
        ptr: *mut u8,
        len: usize,
        perm: Perm,
    ) -> Result<Segment, Error> {
        if ptr.is_null() {
            return Err(Error::Invalid("null pointer"));
        }
        let mut segs = self.inner.segs.write().map_err(|_| Error::Shutdown)?;
        let s = segs.register_mapped(ptr as u64, len, perm);
        self.inner.publish(&segs);
        Ok(s)
    }

    /// Frees a segment: its key stops working at once.
    pub fn free(&self, seg: Segment) -> Result<(), Error> {
        let mut segs = self.inner.segs.write().map_err(|_| Error::Shutdown)?;
        let ok = segs.free(seg.info.key);
        self.inner.publish(&segs);
        if ok {
            Ok(())
        } else {
            Err(Error::Invalid("unknown segment"))
        }
    }

    /// Collective: every task passes one segment and gets every task's, by
    /// rank.
    pub fn exchange(&self, seg: &Segment) -> Result<Vec<SegmentInfo>, Error> {
        self.allgather(&seg.info.to_bytes())?
            .iter()
            .map(|b| SegmentInfo::from_bytes(b).ok_or_else(|| Error::Boot("bad segment".into())))
            .collect()
    }

    /// Collective: every task's bytes, by rank.
    pub fn allgather(&self, data: &[u8]) -> Result<Vec<Vec<u8>>, Error> {
        self.inner
            .boot
            .lock()
            .map_err(|_| Error::Shutdown)?
            .allgather(data)
            .map_err(Error::Boot)
    }

    /// Collective barrier (through the bootstrap; for hot loops build one
    /// from MBCF atomics).
    pub fn barrier(&self) -> Result<(), Error> {
        self.allgather(&[]).map(|_| ())
    }
}
