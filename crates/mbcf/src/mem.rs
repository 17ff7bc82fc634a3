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

/// glibc's `memcpy` (2.36, AMD EPYC) copies a block from 2 KiB up with
/// `rep movsb`, which runs 20 times slower (1.8 GB/s against 40) when
/// the destination lies 1–63 bytes past the source modulo 4 KiB: a
/// page-aligned buffer of the program's copied into one of malloc's
/// (16 bytes into a page) is that case. Such copies go in pieces below
/// its threshold, which it copies with vector loads and stores. From
/// 1 MiB on it streams with non-temporal stores, at any distance.
const PIECE: usize = 2048;
/// See [`PIECE`].
const PIECES_BELOW: usize = 1 << 20;

/// `std::ptr::copy_nonoverlapping`, except that a block from 2 KiB to
/// 1 MiB whose destination lies 1–63 bytes past its source modulo 4 KiB
/// goes in 2 KiB pieces: glibc's `memcpy` (2.36, AMD EPYC) copies it
/// with `rep movsb`, 20 times slower there (1.8 GB/s against 40).
///
/// # Safety
/// That of `std::ptr::copy_nonoverlapping`: `n` readable bytes at `src`,
/// `n` writable ones at `dst`, not overlapping.
pub unsafe fn copy_raw(src: *const u8, dst: *mut u8, n: usize) {
    let d = (dst as usize).wrapping_sub(src as usize) & 4095;
    if n <= PIECE || n >= PIECES_BELOW || d == 0 || d >= 64 {
        // SAFETY: the caller's contract.
        unsafe { std::ptr::copy_nonoverlapping(src, dst, n) };
        return;
    }
    let mut at = 0;
    while at < n {
        let k = (n - at).min(PIECE);
        // SAFETY: `at + k <= n`: inside both ranges of the contract.
        unsafe { std::ptr::copy_nonoverlapping(src.add(at), dst.add(at), k) };
        at += k;
    }
}

/// `dst.copy_from_slice(src)` (lengths equal) through [`copy_raw`].
pub fn copy_bytes(dst: &mut [u8], src: &[u8]) {
    assert_eq!(dst.len(), src.len(), "copy_bytes: lengths differ");
    // SAFETY: two live slices of `src.len()` bytes; `&mut` and `&`
    // cannot overlap.
    unsafe { copy_raw(src.as_ptr(), dst.as_mut_ptr(), src.len()) }
}

/// A checked address range inside a live segment or mapping. The fields
/// are private: a `Checked` comes only from a check — the segment table's
/// ([`crate::segment::SegTable::check`]), a segment handle's bounds check,
/// or [`Checked::in_mapping`] — so holding one is the proof that the range
/// is mapped memory, which is what makes the safe accessors below sound.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Checked {
    ptr: *mut u8,
    len: usize,
}

impl Checked {
    /// A checked range from its parts.
    ///
    /// # Safety
    /// `ptr .. ptr + len` must be memory mapped readable and writable for
    /// as long as any copy of the result is used (a segment in the table,
    /// kept alive by its mapping or by the registrant's contract of
    /// [`crate::Task::register`]).
    pub unsafe fn new(ptr: *mut u8, len: usize) -> Checked {
        Checked { ptr, len }
    }

    /// `len` bytes at `off` in `map`, if they lie inside it. Valid while
    /// the mapping lives.
    pub fn in_mapping(map: &crate::sys::Mapping, off: usize, len: usize) -> Option<Checked> {
        if off.checked_add(len)? > map.len() {
            return None;
        }
        Some(Checked {
            ptr: map.ptr().wrapping_add(off),
            len,
        })
    }

    /// Start of the range.
    pub fn ptr(self) -> *mut u8 {
        self.ptr
    }

    /// Length of the range.
    pub fn len(self) -> usize {
        self.len
    }

    /// Copies `data` (exactly `self.len` bytes) into the segment.
    pub fn write(self, data: &[u8]) {
        debug_assert_eq!(data.len(), self.len);
        // SAFETY: ptr..ptr+len lies inside a mapped segment (checked by the
        // segment table) and cannot overlap `data`, which is a packet
        // buffer or a caller's buffer outside our segment bookkeeping.
        unsafe { copy_raw(data.as_ptr(), self.ptr, data.len().min(self.len)) }
    }

    /// Copies the checked range out.
    pub fn read(self, out: &mut [u8]) {
        debug_assert_eq!(out.len(), self.len);
        // SAFETY: as for write; `out` is caller memory, not the segment.
        unsafe { copy_raw(self.ptr, out.as_mut_ptr(), out.len().min(self.len)) }
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
///
/// # Safety
/// `base` must start a mapped, 64-byte aligned range of at least
/// `FIFO_HEADER` bytes that stays mapped for `'a` (a [`Checked`] range
/// behind a `fifo::Ring`).
pub(crate) unsafe fn fifo_header<'a>(base: *mut u8) -> &'a FifoHeader {
    // SAFETY: the caller's contract; FifoHeader's shared fields are
    // atomics, and the plain geometry fields are only read through
    // fifo_geometry (volatile, once).
    unsafe { &*(base as *const FifoHeader) }
}

/// Reads the geometry fields (slot size, slot count) of a FIFO header once.
/// Peers may be rewriting them: the values are to be validated.
///
/// # Safety
/// As for [`fifo_header`].
pub(crate) unsafe fn fifo_geometry(base: *mut u8) -> (u32, u32, u32) {
    let h = base as *const FifoHeader;
    // SAFETY: the caller's contract: the header is mapped and aligned; any
    // bit pattern is a valid u32, and volatile reads are not repeated or
    // merged by the compiler.
    unsafe {
        (
            std::ptr::addr_of!((*h).slot_size).read_volatile(),
            std::ptr::addr_of!((*h).slots).read_volatile(),
            std::ptr::addr_of!((*h).max_msg).read_volatile(),
        )
    }
}

/// Writes the constant fields of a new FIFO header.
///
/// # Safety
/// As for [`fifo_header`], and the queue is not published yet (its magic
/// is zero), so no one else relies on these fields now.
pub(crate) unsafe fn fifo_init(base: *mut u8, slot_size: u32, slots: u32, max_msg: u32) {
    // SAFETY: the caller's contract.
    unsafe {
        let h = base as *mut FifoHeader;
        std::ptr::addr_of_mut!((*h).slot_size).write(slot_size);
        std::ptr::addr_of_mut!((*h).slots).write(slots);
        std::ptr::addr_of_mut!((*h).max_msg).write(max_msg);
        std::ptr::addr_of_mut!((*h)._reserved).write([0; 48]);
    }
}

/// The sequence word of the slot at byte offset `off` from `base`.
///
/// # Safety
/// `base + off .. base + off + 8` must lie inside a mapped range that stays
/// mapped for `'a`, 8-byte aligned.
pub(crate) unsafe fn slot_seq<'a>(base: *mut u8, off: usize) -> &'a AtomicU64 {
    // SAFETY: the caller's contract.
    unsafe { AtomicU64::from_ptr(base.add(off).cast()) }
}

/// Fills a reserved slot's length, sender and message, the message being
/// the concatenation of `parts`.
///
/// # Safety
/// `base + off .. base + off + 16 + len` must lie inside a mapped range,
/// where `len` is the parts' total length, and the slot must be reserved
/// by the caller (nobody else writes it until its sequence word says
/// full).
pub(crate) unsafe fn slot_fill(base: *mut u8, off: usize, from: u32, parts: &[&[u8]]) {
    let len: usize = parts.iter().map(|m| m.len()).sum();
    // SAFETY: the caller's contract; the parts are our memory, not the
    // ring, and together exactly `len` bytes.
    unsafe {
        let p = base.add(off);
        (p.add(8) as *mut u32).write_unaligned(len as u32);
        (p.add(12) as *mut u32).write_unaligned(from);
        let mut at = p.add(16);
        for m in parts {
            copy_raw(m.as_ptr(), at, m.len());
            at = at.add(m.len());
        }
    }
}

/// Copies a full slot's message (at most `max` bytes) out; returns the
/// sender.
///
/// # Safety
/// `base + off .. base + off + 16 + max` must lie inside a mapped range,
/// and the slot must be full (its sequence word read with acquire order),
/// so its producer no longer writes it.
pub(crate) unsafe fn slot_take(base: *mut u8, off: usize, max: usize, out: &mut Vec<u8>) -> u32 {
    // SAFETY: the caller's contract; the length word is clamped to `max`.
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

/// The control block at `base`.
///
/// # Safety
/// `base` must start a mapping of at least `size_of::<Ctl>()` bytes, page
/// aligned, that stays mapped for `'a`.
pub(crate) unsafe fn ctl_at<'a>(base: *mut u8) -> &'a Ctl {
    // SAFETY: the caller's contract; every field others write is atomic.
    unsafe { &*(base as *const Ctl) }
}

/// Writes the constant fields of a fresh control block.
///
/// # Safety
/// As for [`ctl_at`], and the block is not published yet (`magic` unset).
pub(crate) unsafe fn ctl_init(base: *mut u8, pid: u32, node: &str) {
    // SAFETY: the caller's contract.
    unsafe {
        let c = base as *mut Ctl;
        std::ptr::addr_of_mut!((*c).version).write(crate::shm::CTL_VERSION);
        std::ptr::addr_of_mut!((*c).pid).write(pid);
        let mut n = [0u8; 32];
        let k = node.len().min(32);
        n[..k].copy_from_slice(&node.as_bytes()[..k]);
        std::ptr::addr_of_mut!((*c).node).write(n);
    }
}

/// Copies a completion's bytes to a caller-supplied location (C API).
///
/// # Safety
/// `dst` must point to `cap` writable bytes nobody else accesses now
/// (`Sink::new`'s contract, until the operation completes).
pub(crate) unsafe fn sink_bytes(dst: usize, cap: usize, data: &[u8]) {
    // SAFETY: the caller's contract; `data` is ours, not at `dst`.
    unsafe { copy_raw(data.as_ptr(), dst as *mut u8, data.len().min(cap)) }
}

/// The caller-supplied completion counter (C API).
///
/// # Safety
/// `addr` must point to an 8-byte aligned u64, valid for `'a` and accessed
/// only atomically meanwhile (`Sink::new`'s contract).
pub(crate) unsafe fn sink_counter<'a>(addr: usize) -> &'a AtomicU64 {
    // SAFETY: the caller's contract.
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
///
/// # Safety
/// `base` must start a mapping of at least `IDM_BYTES`, page aligned, that
/// stays mapped for `'a`.
pub(crate) unsafe fn idm_header<'a>(base: *mut u8) -> &'a IdmHeader {
    // SAFETY: the caller's contract; the header's fields are atomics.
    unsafe { &*(base as *const IdmHeader) }
}

/// The sequence word of an IDM slot.
///
/// # Safety
/// `base + off .. base + off + 8` must lie inside a mapping that stays
/// mapped for `'a`, 8-byte aligned.
pub(crate) unsafe fn idm_seq<'a>(base: *mut u8, off: usize) -> &'a AtomicU64 {
    // SAFETY: the caller's contract.
    unsafe { AtomicU64::from_ptr(base.add(off).cast()) }
}

/// Copies a node page out of a slot; racing writers are detected by the
/// caller's sequence check, so the copy is volatile and may be torn.
///
/// # Safety
/// `base + off .. base + off + size_of::<NodeData>()` must lie inside a
/// mapping, 8-byte aligned.
pub(crate) unsafe fn idm_read(base: *mut u8, off: usize) -> NodeData {
    // SAFETY: the caller's contract; any bit pattern is a valid NodeData;
    // volatile keeps the compiler from assuming the memory is stable, and
    // a torn copy is discarded by the sequence check.
    unsafe { std::ptr::read_volatile(base.add(off).cast::<NodeData>()) }
}

/// Writes a node page into a slot (its owner holds the sequence lock).
///
/// # Safety
/// As for [`idm_read`], and the mapping must be writable.
pub(crate) unsafe fn idm_write(base: *mut u8, off: usize, d: &NodeData) {
    // SAFETY: the caller's contract; readers retry on the sequence word.
    unsafe { std::ptr::write_volatile(base.add(off).cast::<NodeData>(), *d) }
}

/// One 4-byte field of a node page, read in place; may be mid-update (a
/// hint, not a consistent snapshot).
///
/// # Safety
/// `base + off .. base + off + 4` must lie inside a mapping, 4-byte
/// aligned.
pub(crate) unsafe fn idm_u32(base: *mut u8, off: usize) -> u32 {
    // SAFETY: the caller's contract; any bit pattern is a valid u32;
    // volatile as the daemon rewrites it concurrently.
    unsafe { std::ptr::read_volatile(base.add(off).cast::<u32>()) }
}

// SAFETY: a Ring is an address into shared memory that every process and
// thread accesses through atomics or through slots reserved by those
// atomics, exactly like memory shared with other processes; the pointer is
// not owned and carries no thread affinity.
unsafe impl Send for crate::fifo::Ring {}
// SAFETY: as above.
unsafe impl Sync for crate::fifo::Ring {}

#[cfg(test)]
mod tests {
    use super::{copy_bytes, PIECE, PIECES_BELOW};

    /// Every distance modulo 4 KiB around the slow ones, and lengths at
    /// and around the pieces' edges, copy exactly the bytes asked for.
    #[test]
    fn piecewise_copies_copy_exactly_at_every_distance_and_length() {
        let src: Vec<u8> = (0..PIECES_BELOW + 8192)
            .map(|i| (i * 7 + i / 251) as u8)
            .collect();
        let mut dst = vec![0u8; PIECES_BELOW + 16384];
        let lens = [
            0,
            1,
            PIECE - 1,
            PIECE,
            PIECE + 1,
            3 * PIECE + 17,
            65536,
            PIECES_BELOW - 1,
            PIECES_BELOW,
        ];
        for s_off in [0usize, 8, 4095] {
            for d in [0usize, 1, 8, 16, 63, 64, 4080] {
                for &n in &lens {
                    dst.iter_mut().for_each(|b| *b = 0xa5);
                    // `dst + at` lies `d` past `src + s_off` modulo 4 KiB.
                    let from = src.as_ptr() as usize + s_off;
                    let base = dst.as_ptr() as usize + 4096;
                    let at = 4096 + (from + d).wrapping_sub(base) % 4096;
                    copy_bytes(&mut dst[at..at + n], &src[s_off..s_off + n]);
                    assert_eq!(&dst[at..at + n], &src[s_off..s_off + n], "{s_off} {d} {n}");
                    assert!(dst[..at].iter().all(|&b| b == 0xa5), "before {d} {n}");
                    assert!(dst[at + n..].iter().all(|&b| b == 0xa5), "after {d} {n}");
                }
            }
        }
    }
}
