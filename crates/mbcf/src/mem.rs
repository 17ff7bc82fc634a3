//! Raw access to segment memory. Every pointer handed to these functions
//! was checked against the segment table first (key, bounds, permission,
//! alignment), which is what makes them sound; the checks live in
//! `segment.rs`, the accesses here.
//!
//! Segment memory is shared with remote writers (the progress thread, and
//! on one node other processes), like RDMA-registered memory: plain byte
//! copies for data, atomics for flags, counters and queue indices.

#![allow(unsafe_code)]

use std::sync::atomic::AtomicU64;

/// A checked address inside a live segment.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Checked {
    pub ptr: *mut u8,
    pub len: usize,
}

impl Checked {
    /// Copies `data` (exactly `self.len` bytes) into the segment.
    pub fn write(self, data: &[u8]) {
        debug_assert_eq!(data.len(), self.len);
        // SAFETY: ptr..ptr+len lies inside a mapped segment (checked by the
        // segment table) and cannot overlap `data`, which is a packet
        // buffer or a caller's buffer outside our segment bookkeeping.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), self.ptr, data.len().min(self.len)) }
    }

    /// Copies the checked range out.
    pub fn read(self, out: &mut [u8]) {
        debug_assert_eq!(out.len(), self.len);
        // SAFETY: as for write; `out` is caller memory, not the segment.
        unsafe {
            std::ptr::copy_nonoverlapping(self.ptr, out.as_mut_ptr(), out.len().min(self.len))
        }
    }

    /// The checked range as a vector.
    pub fn to_vec(self) -> Vec<u8> {
        let mut v = vec![0; self.len];
        self.read(&mut v);
        v
    }

    /// The 8-byte word at the checked address. The lifetime is the
    /// caller's to bound: no longer than the segment stays mapped.
    pub fn word<'a>(self) -> &'a AtomicU64 {
        debug_assert!(self.len >= 8 && (self.ptr as usize) % 8 == 0);
        // SAFETY: the address is 8-byte aligned and 8 bytes long inside a
        // live segment (checked), and all concurrent accesses to words used
        // as atomics go through AtomicU64.
        unsafe { AtomicU64::from_ptr(self.ptr.cast()) }
    }
}

use crate::fifo::FifoHeader;

/// The FIFO header at `base`.
pub(crate) fn fifo_header<'a>(base: *mut u8) -> &'a FifoHeader {
    // SAFETY: callers (fifo::Ring) only construct a ring over a checked,
    // 64-byte aligned range of at least FIFO_HEADER bytes in a live
    // segment; FifoHeader's shared fields are atomics.
    unsafe { &*(base as *const FifoHeader) }
}

/// Writes the constant fields of a new FIFO header.
pub(crate) fn fifo_init(base: *mut u8, slot_size: u32, slots: u32) {
    // SAFETY: as for fifo_header; the queue is not yet published (magic is
    // zero), so nobody else reads these fields now.
    unsafe {
        let h = base as *mut FifoHeader;
        std::ptr::addr_of_mut!((*h).slot_size).write(slot_size);
        std::ptr::addr_of_mut!((*h).slots).write(slots);
        std::ptr::addr_of_mut!((*h)._reserved).write([0; 52]);
    }
}

/// The sequence word of the slot at byte offset `off` from `base`.
pub(crate) fn slot_seq<'a>(base: *mut u8, off: usize) -> &'a AtomicU64 {
    // SAFETY: `off` addresses a slot inside the ring, whose extent the
    // opener checked against the segment; slots are 8-byte aligned.
    unsafe { AtomicU64::from_ptr(base.add(off).cast()) }
}

/// Fills a reserved slot's length, sender and message.
pub(crate) fn slot_fill(base: *mut u8, off: usize, from: u32, msg: &[u8]) {
    // SAFETY: the slot at `off` lies inside the checked ring and was
    // reserved by this producer (CAS on tail), so nobody else writes it
    // until its sequence word says full.
    unsafe {
        let p = base.add(off);
        (p.add(8) as *mut u32).write_unaligned(msg.len() as u32);
        (p.add(12) as *mut u32).write_unaligned(from);
        std::ptr::copy_nonoverlapping(msg.as_ptr(), p.add(16), msg.len());
    }
}

/// Copies a full slot's message out; returns the sender.
pub(crate) fn slot_take(base: *mut u8, off: usize, max: usize, out: &mut Vec<u8>) -> u32 {
    // SAFETY: the slot lies inside the checked ring and is full (its
    // sequence word was read with acquire order), so its contents are
    // stable until the consumer releases it.
    unsafe {
        let p = base.add(off);
        let len = ((p.add(8) as *const u32).read_unaligned() as usize).min(max);
        let from = (p.add(12) as *const u32).read_unaligned();
        out.clear();
        out.extend_from_slice(std::slice::from_raw_parts(p.add(16), len));
        from
    }
}

use crate::shm::Ctl;

/// The control block at `base` (start of a mapped control file).
pub(crate) fn ctl_at<'a>(base: *mut u8) -> &'a Ctl {
    // SAFETY: `base` is the start of a live mapping of at least
    // size_of::<Ctl>() bytes (CtlMap owns it), page aligned; every field
    // others write is atomic.
    unsafe { &*(base as *const Ctl) }
}

/// Writes the constant fields of a fresh control block.
pub(crate) fn ctl_init(base: *mut u8, pid: u32, node: &str) {
    // SAFETY: as for ctl_at; the file was just created and nobody else
    // reads it before `magic` is published.
    unsafe {
        let c = base as *mut Ctl;
        std::ptr::addr_of_mut!((*c).version).write(1);
        std::ptr::addr_of_mut!((*c).pid).write(pid);
        let mut n = [0u8; 32];
        let k = node.len().min(32);
        n[..k].copy_from_slice(&node.as_bytes()[..k]);
        std::ptr::addr_of_mut!((*c).node).write(n);
    }
}

/// Copies a completion's bytes to a caller-supplied location (C API).
pub(crate) fn sink_bytes(dst: usize, cap: usize, data: &[u8]) {
    // SAFETY: Sink::new's contract: `dst` points to `cap` writable bytes
    // that stay valid until the operation completes, which is now.
    unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), dst as *mut u8, data.len().min(cap)) }
}

/// The caller-supplied completion counter (C API).
pub(crate) fn sink_counter<'a>(addr: usize) -> &'a AtomicU64 {
    // SAFETY: Sink::new's contract: an aligned u64 valid until completion.
    unsafe { AtomicU64::from_ptr(addr as *mut u64) }
}

use crate::idm::{IdmHeader, NodeData};

/// The bytes of a node page (plain integers, no padding holes: every
/// field is explicitly sized and `_pad` fills the only gap).
pub(crate) fn pod_bytes(d: &NodeData) -> &[u8] {
    // SAFETY: NodeData is #[repr(C)] of integers and integer arrays with
    // the one alignment gap filled by an explicit field, so all its bytes
    // are initialized; the slice lives as long as `d`.
    unsafe {
        std::slice::from_raw_parts(
            (d as *const NodeData).cast::<u8>(),
            std::mem::size_of::<NodeData>(),
        )
    }
}

/// A node page from bytes of exactly its size.
pub(crate) fn pod_from_bytes(b: &[u8]) -> Option<NodeData> {
    if b.len() != std::mem::size_of::<NodeData>() {
        return None;
    }
    // SAFETY: the length matches, every bit pattern is a valid NodeData
    // (integers only), and read_unaligned copes with any alignment.
    Some(unsafe { std::ptr::read_unaligned(b.as_ptr().cast::<NodeData>()) })
}

/// The header of a mapped IDM file.
pub(crate) fn idm_header<'a>(base: *mut u8) -> &'a IdmHeader {
    // SAFETY: `base` starts a live mapping of IDM_BYTES (Idm owns it),
    // page aligned; the header's fields are atomics.
    unsafe { &*(base as *const IdmHeader) }
}

/// The sequence word of an IDM slot.
pub(crate) fn idm_seq<'a>(base: *mut u8, off: usize) -> &'a AtomicU64 {
    // SAFETY: `off` is a slot start inside the mapping (checked by the
    // caller against IDM_NODES), 8-byte aligned.
    unsafe { AtomicU64::from_ptr(base.add(off).cast()) }
}

/// Copies a node page out of a slot; racing writers are detected by the
/// caller's sequence check, so the copy is volatile and may be torn.
pub(crate) fn idm_read(base: *mut u8, off: usize) -> NodeData {
    // SAFETY: the page lies inside the mapping; any bit pattern is a valid
    // NodeData; volatile keeps the compiler from assuming the memory is
    // stable, and a torn copy is discarded by the sequence check.
    unsafe { std::ptr::read_volatile(base.add(off).cast::<NodeData>()) }
}

/// Writes a node page into a slot (its owner holds the sequence lock).
pub(crate) fn idm_write(base: *mut u8, off: usize, d: &NodeData) {
    // SAFETY: the page lies inside the writable mapping of the daemon,
    // the only writer; readers retry on the sequence word.
    unsafe { std::ptr::write_volatile(base.add(off).cast::<NodeData>(), *d) }
}

/// One 4-byte field of a node page, read in place; may be mid-update (a
/// hint, not a consistent snapshot).
pub(crate) fn idm_u32(base: *mut u8, off: usize) -> u32 {
    // SAFETY: the caller passes the offset of a u32 field of a slot inside
    // the mapping (4-byte aligned: slots and pages start on 64 bytes and
    // NodeData is repr(C)); any bit pattern is a valid u32; volatile as
    // the daemon rewrites it concurrently.
    unsafe { std::ptr::read_volatile(base.add(off).cast::<u32>()) }
}
