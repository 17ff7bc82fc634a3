//! MBCF FIFO queues: a bounded ring that a receiver lays out at any
//! address inside one of its segments. Remote pushes land through MBCF
//! (applied by the receiver's progress thread, or directly by a sender on
//! the same node through the shared mapping); the receiver pops locally.
//!
//! The ring is a bounded multi-producer queue after D. Vyukov: each slot
//! carries a sequence word, so producers reserve slots with one CAS on
//! `tail` and publish with one release store, and a full ring is seen at
//! once — a push into a full queue fails with `FifoFull`, never loses or
//! overwrites a message.
//!
//! Layout at the queue address (all little-endian, native atomics):
//!
//! ```text
//! offset  size  field
//!      0     4  magic  = 0x5353_4649 ("SSFI"), written last at creation
//!      4     4  slot_size: bytes per slot, a multiple of 8, >= 24
//!      8     4  slots: number of slots, a power of two
//!     12    52  reserved (zero)
//!     64     8  head: next position to pop (receiver only)        [own line]
//!    128     8  tail: next position to reserve (every producer)  [own line]
//!    192     …  slots[slots], each slot_size bytes:
//!                 0  8  seq: position + 1 when full, position when free
//!                 8  4  len: message bytes
//!                12  4  from: sender rank
//!                16  …  message (slot_size - 16 bytes at most)
//! ```

use crate::mem::Checked;
use sss_wire::Status;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// Magic value marking an initialized queue.
pub const FIFO_MAGIC: u32 = 0x5353_4649;
/// Bytes before the first slot.
pub const FIFO_HEADER: usize = 192;
/// Bytes of slot header before the message.
pub const SLOT_HEADER: usize = 16;

/// The queue header, `#[repr(C)]` so every process agrees on it.
#[repr(C)]
pub struct FifoHeader {
    /// [`FIFO_MAGIC`] once the queue is ready. Owner: the receiver, written
    /// last at creation with release order so pushers never see a
    /// half-made queue.
    pub magic: AtomicU32,
    /// Bytes per slot, including the 16-byte slot header. Owner: receiver,
    /// constant after creation.
    pub slot_size: u32,
    /// Number of slots, a power of two. Owner: receiver, constant.
    pub slots: u32,
    /// Padding to the end of the cache line; zero.
    pub _reserved: [u8; 52],
    /// Next position to pop. Owner: the receiver; producers read it only
    /// for statistics. Alone on its cache line so pops do not bounce the
    /// producers' line.
    pub head: AtomicU64,
    /// Padding so `tail` starts its own cache line.
    pub _pad1: [u8; 56],
    /// Next position to reserve. Owners: all producers (CAS).
    pub tail: AtomicU64,
    /// Padding to the first slot.
    pub _pad2: [u8; 56],
}

const _: () = assert!(std::mem::size_of::<FifoHeader>() == FIFO_HEADER);

/// Bytes a queue of `slots` slots of `max_msg` bytes occupies.
pub fn fifo_bytes(slots: u32, max_msg: usize) -> usize {
    FIFO_HEADER + slots as usize * slot_size_for(max_msg)
}

fn slot_size_for(max_msg: usize) -> usize {
    (SLOT_HEADER + max_msg).next_multiple_of(8).max(24)
}

/// A view of a queue at a checked address.
pub(crate) struct Ring {
    base: *mut u8,
}

impl Ring {
    /// A queue the caller created at `base` and keeps mapped.
    pub fn at(base: *mut u8) -> Ring {
        Ring { base }
    }

    fn header(&self) -> &FifoHeader {
        // Every Ring covers a checked, 64-byte aligned range of at least
        // FIFO_HEADER bytes inside a live segment.
        crate::mem::fifo_header(self.base)
    }

    /// Lays out a new, empty queue over `mem` (which must be 64-byte aligned
    /// and `fifo_bytes(slots, max_msg)` long).
    pub fn create(mem: Checked, slots: u32, max_msg: usize) -> Result<(), &'static str> {
        if !slots.is_power_of_two() {
            return Err("slot count must be a power of two");
        }
        if (mem.ptr as usize) % 64 != 0 {
            return Err("queue address must be 64-byte aligned");
        }
        let ss = slot_size_for(max_msg);
        if mem.len < fifo_bytes(slots, max_msg) || ss > u32::MAX as usize {
            return Err("queue does not fit");
        }
        let r = Ring { base: mem.ptr };
        let h = r.header();
        h.magic.store(0, Ordering::Relaxed);
        crate::mem::fifo_init(mem.ptr, ss as u32, slots);
        for i in 0..slots as u64 {
            r.seq(i, ss, slots).store(i, Ordering::Relaxed);
        }
        h.head.store(0, Ordering::Relaxed);
        h.tail.store(0, Ordering::Relaxed);
        h.magic.store(FIFO_MAGIC, Ordering::Release);
        Ok(())
    }

    /// Opens the queue whose header is at `mem` (at least FIFO_HEADER
    /// checked bytes); the caller then checks the whole ring's extent.
    pub fn open(mem: Checked) -> Result<(Ring, usize), Status> {
        if mem.len < FIFO_HEADER || (mem.ptr as usize) % 64 != 0 {
            return Err(Status::OutOfBounds);
        }
        let r = Ring { base: mem.ptr };
        let h = r.header();
        if h.magic.load(Ordering::Acquire) != FIFO_MAGIC {
            return Err(Status::Unsupported);
        }
        let total = FIFO_HEADER + h.slots as usize * h.slot_size as usize;
        Ok((r, total))
    }

    fn seq(&self, pos: u64, ss: usize, slots: u32) -> &AtomicU64 {
        let i = (pos & (slots as u64 - 1)) as usize;
        crate::mem::slot_seq(self.base, FIFO_HEADER + i * ss)
    }

    /// Pushes a message; `FifoFull` when no slot is free, `TooLarge` when
    /// it exceeds the slot.
    pub fn push(&self, from: u32, msg: &[u8]) -> Result<(), Status> {
        let h = self.header();
        let (ss, slots) = (h.slot_size as usize, h.slots);
        if msg.len() > ss - SLOT_HEADER {
            return Err(Status::TooLarge);
        }
        let mut pos = h.tail.load(Ordering::Relaxed);
        loop {
            let seq = self.seq(pos, ss, slots).load(Ordering::Acquire);
            let dif = seq as i64 - pos as i64;
            if dif == 0 {
                match h.tail.compare_exchange_weak(
                    pos,
                    pos + 1,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => break,
                    Err(p) => pos = p,
                }
            } else if dif < 0 {
                return Err(Status::FifoFull);
            } else {
                pos = h.tail.load(Ordering::Relaxed);
            }
        }
        let i = (pos & (slots as u64 - 1)) as usize;
        crate::mem::slot_fill(self.base, FIFO_HEADER + i * ss, from, msg);
        // Release: the message bytes are visible before the slot reads full.
        self.seq(pos, ss, slots).store(pos + 1, Ordering::Release);
        Ok(())
    }

    /// Pops the oldest message into `out` (cleared first); returns the
    /// sender's rank, or `None` when empty. Receiver only.
    pub fn pop(&self, out: &mut Vec<u8>) -> Option<u32> {
        let h = self.header();
        let (ss, slots) = (h.slot_size as usize, h.slots);
        let pos = h.head.load(Ordering::Relaxed);
        let seq = self.seq(pos, ss, slots);
        if seq.load(Ordering::Acquire) != pos + 1 {
            return None;
        }
        let i = (pos & (slots as u64 - 1)) as usize;
        let from = crate::mem::slot_take(self.base, FIFO_HEADER + i * ss, ss - SLOT_HEADER, out);
        // Release: we are done reading before producers may reuse it.
        seq.store(pos + slots as u64, Ordering::Release);
        h.head.store(pos + 1, Ordering::Relaxed);
        Some(from)
    }

    /// Messages waiting.
    pub fn len(&self) -> usize {
        let h = self.header();
        h.tail
            .load(Ordering::Relaxed)
            .saturating_sub(h.head.load(Ordering::Relaxed)) as usize
    }
}
