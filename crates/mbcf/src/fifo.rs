//! MBCF FIFO queues: a bounded ring that a receiver lays out at any
//! address inside one of its segments. Remote pushes land through MBCF
//! (applied by the receiver's progress thread, or directly by a sender on
//! the same node through the shared mapping); the receiver pops locally.
//!
//! The ring is a bounded multi-producer queue: producers reserve slots
//! with one CAS on `tail` and publish a slot with one release store of
//! its sequence word; a push into a full queue fails with `FifoFull`,
//! never loses or overwrites a message.
//!
//! The consumer never writes a slot: it frees slots by advancing `head`,
//! which producers read only when their last view of it says the ring is
//! full (the view is kept by the producer, outside the ring). So a
//! message costs two cache-line transfers between the two CPUs, the
//! slot's to the producer and back to the consumer, as a WRITE does: in
//! the earlier design (D. Vyukov's, where a pop marks its slot free in
//! the sequence word) the consumer's mark took the line back and the
//! producer's next look at the mark fetched it shared before its fill
//! fetched it again to own it, four transfers a message.
//!
//! Layout at the queue address (all little-endian, native atomics):
//!
//! ```text
//! offset  size  field
//!      0     4  magic  = 0x5353_4649 ("SSFI"), written last at creation
//!      4     4  slot_size: bytes per slot, a multiple of 8, >= 24
//!                 (queues made here use multiples of 64)
//!      8     4  slots: number of slots, a power of two
//!     12     4  max_msg: longest message taken, <= slot_size - 16
//!     16    48  reserved (zero)
//!     64     8  head: next position to pop (written by the receiver;
//!                 producers read it when the ring looks full) [own line]
//!    128     8  tail: next position to reserve (every producer)  [own line]
//!    192     …  slots[slots], each slot_size bytes:
//!                 0  8  seq: position + 1 once the slot at that position
//!                       is filled (written by producers only)
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
    /// Longest message the queue takes (its creator's `max_msg`; slots
    /// are rounded up to whole lines, so they may hold more). Owner:
    /// receiver, constant; at most `slot_size - 16`.
    pub max_msg: u32,
    /// Padding to the end of the cache line; zero.
    pub _reserved: [u8; 48],
    /// Next position to pop: every slot before it is free. Owner: the
    /// receiver (release store after it read the slot); producers read
    /// it (acquire) when their last view of it says the ring is full.
    /// Alone on its cache line so pops do not bounce the producers' line.
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

/// Slots are whole cache lines: a small message then lies in one line
/// (the slot's first), which the producer owns once and the consumer
/// fetches once; a slot straddling two lines moved both.
fn slot_size_for(max_msg: usize) -> usize {
    (SLOT_HEADER + max_msg).next_multiple_of(64)
}

/// Producer attempts at reserving a slot before a push gives up: the
/// indices live in memory peers may scribble on, so a corrupted queue must
/// not spin the pusher forever.
const PUSH_TRIES: u32 = 1024;

/// A producer's last view of a ring's `head`, kept in its own memory
/// between pushes (see the module's notes): a slot behind it is known
/// free without a look at the consumer's line. Shared by the producer's
/// threads; release and acquire pass on what the consumer's `head`
/// published to whichever thread uses the view next.
#[derive(Debug, Default)]
pub(crate) struct HeadView(AtomicU64);

impl HeadView {
    /// A view that has seen nothing (position 0).
    pub fn new() -> Self {
        Self::default()
    }

    fn get(&self) -> u64 {
        self.0.load(Ordering::Acquire)
    }

    fn set(&self, head: u64) {
        self.0.store(head, Ordering::Release);
    }
}

/// Bytes of a ring of `slots` slots of `slot_size` bytes, if that geometry
/// is one `create` could have made.
fn ring_bytes(slots: u32, slot_size: usize) -> Result<usize, Status> {
    if !slots.is_power_of_two() || slot_size < 24 || slot_size % 8 != 0 {
        return Err(Status::Unsupported);
    }
    (slots as usize)
        .checked_mul(slot_size)
        .and_then(|b| b.checked_add(FIFO_HEADER))
        .ok_or(Status::OutOfBounds)
}

/// A queue at a checked address, with its geometry validated once and kept
/// here: `slot_size` and `slots` in shared memory are never read again, as
/// anyone with WRITE on the segment may change them. Only the indices and
/// sequence words are read from shared memory, and every one of them is
/// masked into the ring before use.
#[derive(Clone, Copy)]
pub(crate) struct Ring {
    /// Invariant: `base .. base + FIFO_HEADER + slots * slot_size` is a
    /// checked range (a [`Checked`]), 64-byte aligned, in a live mapping.
    base: *mut u8,
    slot_size: usize,
    slots: u32,
    /// Longest message pushed; at most `slot_size - SLOT_HEADER`.
    max_msg: usize,
}

// The raw-address helpers of `mem` are unsafe fns; their contracts hold
// by the Ring invariant, stated at each call.
#[allow(unsafe_code)]
impl Ring {
    /// A ring of the given geometry over `mem`, touching no memory.
    fn over(mem: Checked, slots: u32, slot_size: usize, max_msg: usize) -> Result<Ring, Status> {
        let total = ring_bytes(slots, slot_size)?;
        if (mem.ptr() as usize) % 64 != 0 {
            return Err(Status::Misaligned);
        }
        if mem.len() < total {
            return Err(Status::OutOfBounds);
        }
        if max_msg > slot_size - SLOT_HEADER {
            return Err(Status::Unsupported);
        }
        Ok(Ring {
            base: mem.ptr(),
            slot_size,
            slots,
            max_msg,
        })
    }

    /// The ring of `slots` slots of `max_msg` bytes laid out at `mem`,
    /// for queues whose geometry is fixed by the program (the signal ring
    /// of a control block), never read from memory.
    pub fn with_geometry(mem: Checked, slots: u32, max_msg: usize) -> Result<Ring, Status> {
        Ring::over(mem, slots, slot_size_for(max_msg), max_msg)
    }

    fn header(&self) -> &FifoHeader {
        // SAFETY: the Ring invariant: base starts a checked, 64-byte aligned
        // range of at least FIFO_HEADER bytes in a live mapping.
        unsafe { crate::mem::fifo_header(self.base) }
    }

    /// Lays out a new, empty queue over `mem` (which must be 64-byte aligned
    /// and `fifo_bytes(slots, max_msg)` long).
    pub fn create(mem: Checked, slots: u32, max_msg: usize) -> Result<Ring, &'static str> {
        if !slots.is_power_of_two() {
            return Err("slot count must be a power of two");
        }
        if (mem.ptr() as usize) % 64 != 0 {
            return Err("queue address must be 64-byte aligned");
        }
        let ss = slot_size_for(max_msg);
        if ss > u32::MAX as usize {
            return Err("queue does not fit");
        }
        let r = Ring::over(mem, slots, ss, max_msg).map_err(|_| "queue does not fit")?;
        r.header().magic.store(0, Ordering::Relaxed);
        // SAFETY: as for header(); the queue is not published yet (magic
        // is zero). No reference to the header is live across the write.
        unsafe { crate::mem::fifo_init(r.base, ss as u32, slots, max_msg as u32) };
        let h = r.header();
        for i in 0..slots as u64 {
            r.seq(i).store(i, Ordering::Relaxed);
        }
        h.head.store(0, Ordering::Relaxed);
        h.tail.store(0, Ordering::Relaxed);
        h.magic.store(FIFO_MAGIC, Ordering::Release);
        Ok(r)
    }

    /// Opens the queue whose header is at `head` (at least FIFO_HEADER
    /// checked bytes). Its geometry is read once and validated;
    /// `extent(total)` must then check the whole ring, `total` bytes from
    /// the same address, against the segment.
    pub fn open(
        head: Checked,
        extent: impl FnOnce(usize) -> Result<Checked, Status>,
    ) -> Result<Ring, Status> {
        if head.len() < FIFO_HEADER {
            return Err(Status::OutOfBounds);
        }
        if (head.ptr() as usize) % 64 != 0 {
            return Err(Status::Misaligned);
        }
        // SAFETY: head is a checked, 64-byte aligned range of at least
        // FIFO_HEADER bytes in a live mapping.
        let h = unsafe { crate::mem::fifo_header(head.ptr()) };
        if h.magic.load(Ordering::Acquire) != FIFO_MAGIC {
            return Err(Status::Unsupported);
        }
        // One read of each: what a peer writes here later does not matter.
        // SAFETY: as above; plain u32 fields that only racing hostile
        // writers change, read volatile so the compiler cannot re-read.
        let (ss, slots, max_msg) = unsafe { crate::mem::fifo_geometry(head.ptr()) };
        let total = ring_bytes(slots, ss as usize)?;
        let all = extent(total)?;
        if all.ptr() != head.ptr() {
            return Err(Status::OutOfBounds);
        }
        Ring::over(all, slots, ss as usize, max_msg as usize)
    }

    fn slot_off(&self, pos: u64) -> usize {
        FIFO_HEADER + (pos & (self.slots as u64 - 1)) as usize * self.slot_size
    }

    fn seq(&self, pos: u64) -> &AtomicU64 {
        // SAFETY: slot_off masks pos into the ring, so the word lies inside
        // the checked range; slots start 8-byte aligned (64-byte aligned
        // base, header and slot size multiples of 8).
        unsafe { crate::mem::slot_seq(self.base, self.slot_off(pos)) }
    }

    /// Pushes a message; `FifoFull` when no slot is free (or the indices
    /// are corrupt and never offer one), `TooLarge` when it exceeds the
    /// slot. For a producer that keeps no view of `head` (it reads
    /// `head` whenever the ring may have wrapped).
    pub fn push(&self, from: u32, msg: &[u8]) -> Result<(), Status> {
        self.push_parts(from, &[msg], &HeadView::new())
    }

    /// [`Ring::push`] of the concatenation of `parts`, copied straight
    /// into the slot (a signal's handler index and payload, with no
    /// buffer to join them first). `seen` is this producer's last view
    /// of `head`, kept between pushes to the same ring.
    pub fn push_parts(&self, from: u32, parts: &[&[u8]], seen: &HeadView) -> Result<(), Status> {
        let h = self.header();
        let len: usize = parts.iter().map(|m| m.len()).sum();
        if len > self.max_msg {
            return Err(Status::TooLarge);
        }
        let slots = u64::from(self.slots);
        let mut pos = h.tail.load(Ordering::Relaxed);
        let mut tries = 0;
        loop {
            tries += 1;
            if tries > PUSH_TRIES {
                return Err(Status::FifoFull);
            }
            // Free when the consumer is past the slot's previous message.
            // Only when the view says full is the consumer's line read.
            if pos.wrapping_sub(seen.get()) >= slots {
                // Acquire: the consumer read that message before it
                // moved `head` (release), so the slot may be written now.
                let head = h.head.load(Ordering::Acquire);
                seen.set(head);
                if pos.wrapping_sub(head) >= slots {
                    // Full, unless `pos` is stale (others pushed and the
                    // consumer popped since it was read).
                    let now = h.tail.load(Ordering::Relaxed);
                    if now == pos {
                        return Err(Status::FifoFull);
                    }
                    pos = now;
                    continue;
                }
            }
            // SeqCst: a signal's sender reads the receiver's sleep flag
            // next (`Peer::signal_wake`), which the receiver sets before it
            // looks at `tail`; on x86 this locked CAS is the full fence
            // that pairing needs, with no second one.
            match h.tail.compare_exchange_weak(
                pos,
                pos.wrapping_add(1),
                Ordering::SeqCst,
                Ordering::Relaxed,
            ) {
                Ok(_) => break,
                Err(p) => pos = p,
            }
        }
        // SAFETY: the slot lies inside the checked ring (masked offset,
        // slot_size bytes) and the parts fit its payload (checked above);
        // this producer reserved it with the CAS on tail.
        unsafe { crate::mem::slot_fill(self.base, self.slot_off(pos), from, parts) };
        // Release: the message bytes are visible before the slot reads full.
        self.seq(pos).store(pos.wrapping_add(1), Ordering::Release);
        Ok(())
    }

    /// Pops the oldest message into `out` (cleared first); returns the
    /// sender's rank, or `None` when empty. Receiver only. Writes `head`
    /// only, never the slot.
    pub fn pop(&self, out: &mut Vec<u8>) -> Option<u32> {
        let h = self.header();
        let pos = h.head.load(Ordering::Relaxed);
        if self.seq(pos).load(Ordering::Acquire) != pos.wrapping_add(1) {
            return None;
        }
        let max = self.max_msg;
        // SAFETY: the slot lies inside the checked ring; it reads full, so
        // its producer is done with it; the length is clamped to `max`
        // (at most the slot's capacity).
        let from = unsafe { crate::mem::slot_take(self.base, self.slot_off(pos), max, out) };
        // Release: we are done reading before producers may reuse it.
        h.head.store(pos.wrapping_add(1), Ordering::Release);
        Some(from)
    }

    /// Whether the oldest slot holds a whole message. Reads only that
    /// slot's line, which the producer writes anyway: a receiver polling
    /// this does not pull the tail's line away from producers, as
    /// [`Ring::len`] does.
    pub fn ready(&self) -> bool {
        let pos = self.header().head.load(Ordering::Relaxed);
        self.seq(pos).load(Ordering::Acquire) == pos.wrapping_add(1)
    }

    /// Whether a message was claimed and not taken, its claim read in
    /// sequential consistency: after a SeqCst store of its own, the
    /// reader sees every claim (a SeqCst compare-and-swap of `tail`)
    /// made before a sender's SeqCst load saw that store undone.
    pub fn claimed_seqcst(&self) -> bool {
        let h = self.header();
        h.tail.load(Ordering::SeqCst) != h.head.load(Ordering::Relaxed)
    }

    /// Messages waiting (at most the slot count, whatever the indices say).
    pub fn len(&self) -> usize {
        let h = self.header();
        let n = h
            .tail
            .load(Ordering::Relaxed)
            .saturating_sub(h.head.load(Ordering::Relaxed));
        n.min(self.slots as u64) as usize
    }
}

/// The ring protocol on a heap buffer, small enough for Miri
/// (`cargo +nightly miri test -p sss-mbcf --lib fifo::`), which checks the
/// atomics' orderings and every raw access against the buffer.
#[cfg(test)]
#[allow(unsafe_code)]
mod tests {
    use super::*;

    #[derive(Clone, Copy)]
    #[repr(C, align(64))]
    struct Line([u8; 64]);

    /// A 64-byte aligned heap buffer standing in for segment memory.
    fn buffer(bytes: usize) -> (Vec<Line>, Checked) {
        let mut v = vec![Line([0; 64]); bytes.div_ceil(64)];
        let ptr = v.as_mut_ptr().cast::<u8>();
        // SAFETY: the buffer is `bytes` long and outlives every use (the
        // Vec is returned alongside and never reallocated).
        (v, unsafe { Checked::new(ptr, bytes) })
    }

    #[test]
    fn two_producers_one_consumer_keep_per_sender_order() {
        const N: u32 = if cfg!(miri) { 12 } else { 2000 };
        let (_buf, mem) = buffer(fifo_bytes(4, 8));
        let ring = Ring::create(mem, 4, 8).unwrap();
        std::thread::scope(|s| {
            for from in 0..2u32 {
                s.spawn(move || {
                    for i in 0..N {
                        while ring.push(from, &i.to_le_bytes()) == Err(Status::FifoFull) {
                            std::thread::yield_now();
                        }
                    }
                });
            }
            let mut next = [0u32; 2];
            let mut out = Vec::new();
            while next != [N; 2] {
                match ring.pop(&mut out) {
                    Some(from) => {
                        let i = u32::from_le_bytes(out[..4].try_into().unwrap());
                        assert_eq!(i, next[from as usize], "order of sender {from}");
                        next[from as usize] += 1;
                    }
                    None => std::thread::yield_now(),
                }
            }
        });
        assert_eq!(ring.len(), 0);
    }

    #[test]
    fn ready_reads_the_oldest_slot_only() {
        let (_buf, mem) = buffer(fifo_bytes(4, 8));
        let ring = Ring::create(mem, 4, 8).unwrap();
        assert!(!ring.ready());
        // A producer that reserved a slot (tail moved) but has not filled
        // it yet: not ready, although `len` counts it.
        ring.header().tail.store(1, Ordering::Relaxed);
        assert_eq!(ring.len(), 1);
        assert!(!ring.ready());
        ring.header().tail.store(0, Ordering::Relaxed);
        let mut out = Vec::new();
        for k in 0..6u8 {
            ring.push(1, &[k]).unwrap();
            assert!(ring.ready());
            assert_eq!(ring.pop(&mut out), Some(1));
            assert_eq!(out, [k]);
            assert!(!ring.ready());
        }
    }

    /// The consumer frees slots through `head` only: a pop leaves the
    /// slot's line (its sequence word) as the producer wrote it, so the
    /// producer's next fill of that line is its only transfer.
    #[test]
    fn a_pop_writes_head_and_never_the_slot() {
        let (_buf, mem) = buffer(fifo_bytes(4, 8));
        let ring = Ring::create(mem, 4, 8).unwrap();
        let seen = HeadView::new();
        let mut out = Vec::new();
        for pos in 0..9u64 {
            ring.push_parts(2, &[&[pos as u8]], &seen).unwrap();
            assert_eq!(ring.seq(pos).load(Ordering::Relaxed), pos + 1);
            assert_eq!(ring.pop(&mut out), Some(2));
            assert_eq!(out, [pos as u8]);
            assert_eq!(
                ring.seq(pos).load(Ordering::Relaxed),
                pos + 1,
                "slot untouched"
            );
            assert_eq!(ring.header().head.load(Ordering::Relaxed), pos + 1);
        }
    }

    /// A producer looks at the consumer's `head` only when its own view
    /// says the ring is full: with `head` scribbled over, pushes its view
    /// already allows still go in, the next one reads `head` and finds
    /// the ring full, and once `head` is sane again the push goes in.
    #[test]
    fn a_producer_reads_head_only_when_its_view_says_full() {
        let (_buf, mem) = buffer(fifo_bytes(4, 8));
        let ring = Ring::create(mem, 4, 8).unwrap();
        let seen = HeadView::new();
        let h = &ring.header().head;
        h.store(u64::MAX / 2, Ordering::Relaxed);
        for k in 0..4u8 {
            ring.push_parts(0, &[&[k]], &seen).unwrap();
        }
        assert_eq!(ring.push_parts(0, &[&[4]], &seen), Err(Status::FifoFull));
        // The consumer had popped two before the scribble.
        h.store(2, Ordering::Relaxed);
        ring.push_parts(0, &[&[4]], &seen).unwrap();
        ring.push_parts(0, &[&[5]], &seen).unwrap();
        assert_eq!(ring.push_parts(0, &[&[6]], &seen), Err(Status::FifoFull));
        let mut out = Vec::new();
        assert_eq!(ring.pop(&mut out), Some(0));
        assert_eq!(out, [2]);
    }

    /// A full ring refuses the push and loses nothing; each pop makes room
    /// for exactly one more, with a view shared by two producers.
    #[test]
    fn a_full_ring_refuses_and_loses_nothing() {
        let (_buf, mem) = buffer(fifo_bytes(2, 8));
        let ring = Ring::create(mem, 2, 8).unwrap();
        let seen = HeadView::new();
        let mut out = Vec::new();
        let mut next = 0u8;
        let mut want = 0u8;
        for _ in 0..5 {
            while ring
                .push_parts(u32::from(next % 2), &[&[next]], &seen)
                .is_ok()
            {
                next += 1;
            }
            assert_eq!(ring.len(), 2);
            assert_eq!(ring.pop(&mut out), Some(u32::from(want % 2)));
            assert_eq!(out, [want]);
            want += 1;
        }
        while ring.pop(&mut out).is_some() {
            assert_eq!(out, [want]);
            want += 1;
        }
        assert_eq!(want, next);
    }

    /// Every queue made here, the signal ring among them, has slots of
    /// whole cache lines, so a small message never straddles two.
    #[test]
    fn slots_are_whole_cache_lines() {
        for max in [0, 8, 20, 48, 1000, 4 + crate::shm::SIGNAL_MAX, 8192 + 48] {
            assert_eq!(slot_size_for(max) % 64, 0, "max_msg {max}");
            assert!(slot_size_for(max) >= SLOT_HEADER + max);
        }
    }

    /// The creator's `max_msg` is the limit, not the rounded slot: a
    /// longer message is refused, and a length a producer scribbled into
    /// a slot is clamped to it at the pop.
    #[test]
    fn the_limit_is_max_msg_not_the_slot() {
        let (_buf, mem) = buffer(fifo_bytes(4, 32));
        let ring = Ring::create(mem, 4, 32).unwrap();
        assert_eq!(ring.push(0, &[1; 33]), Err(Status::TooLarge));
        ring.push(0, &[1; 32]).unwrap();
        let open = Ring::open(mem, |_| Ok(mem)).unwrap();
        assert_eq!(open.push(0, &[1; 33]), Err(Status::TooLarge));
        // SAFETY: the slot's length word lies inside the live buffer.
        unsafe { (mem.ptr().add(FIFO_HEADER + 8) as *mut u32).write_unaligned(48) };
        let mut out = Vec::new();
        assert_eq!(ring.pop(&mut out), Some(0));
        assert_eq!(out.len(), 32);
    }

    #[test]
    fn open_validates_the_geometry_once() {
        let (_buf, mem) = buffer(1024);
        Ring::create(mem, 4, 8).unwrap();
        let whole = |t: usize| {
            if t <= 1024 {
                Ok(mem)
            } else {
                Err(Status::OutOfBounds)
            }
        };
        let r = Ring::open(mem, whole).unwrap();
        // The header rewritten after open: the ring keeps its geometry.
        let h = mem.ptr() as *mut FifoHeader;
        // SAFETY: the header lies at the start of the live buffer; no
        // reference to it is live.
        unsafe { std::ptr::addr_of_mut!((*h).slot_size).write(8) };
        r.push(0, &[1; 8]).unwrap();
        let mut out = Vec::new();
        assert_eq!(r.pop(&mut out), Some(0));
        assert_eq!(out, [1; 8]);
        assert_eq!(Ring::open(mem, whole).err(), Some(Status::Unsupported));
    }
}
