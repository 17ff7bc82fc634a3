//! The `shm` transport: tasks on one node operate on each other's memory
//! directly.
//!
//! Every task publishes a control block, `/dev/shm/sss-<job>-<rank>-ctl`,
//! that same-node peers map: its waiters' futex word, its segment table
//! (so a sender can check key, bounds and permission exactly as the
//! receiver would), its signal-handler bitmap and an inbound ring for
//! SIGNALs. A sender then
//!
//! - applies WRITE, READ and atomics on shared-memory segments itself,
//!   through its own mapping of the segment file, atomics as native atomic
//!   instructions on the shared mapping, then wakes the receiver's waiters;
//! - uses `process_vm_writev`/`readv` for plain WRITE/READ on registered
//!   (non-shared) memory;
//! - pushes FIFO messages straight into the queue's ring when the queue
//!   lives in shared memory;
//! - queues SIGNALs on the receiver's inbound ring and rings its doorbell (a
//!   one-byte datagram, [`DOORBELL`]) if its progress thread sleeps.
//!
//! Anything else — atomics, notifies or FIFOs in registered memory,
//! segments beyond the published table, multicast — takes the `udp` path,
//! where the receiver checks and applies as usual. Either way the receiver
//! counts what it applied and refused.

use crate::fifo::{HeadView, Ring, FIFO_HEADER};
use crate::mem::Checked;
use crate::segment::{Perm, SegmentInfo};
use crate::seqlock::Stale;
use crate::sys::{self, Mapping};
use sss_wire::Status;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

/// Magic of a control block ("SSCT").
pub const CTL_MAGIC: u32 = 0x5353_4354;
/// Layout version of [`Ctl`]: a peer's block of another layout is refused.
pub const CTL_VERSION: u32 = 5;
/// Segments a control block publishes.
pub const CTL_SEGMENTS: usize = 256;
/// Slots of the inbound signal ring.
pub const SIGNAL_SLOTS: u32 = 256;
/// Largest signal payload through shared memory.
pub const SIGNAL_MAX: usize = 1408;

/// One published segment, read by peers under a sequence lock.
#[repr(C)]
pub(crate) struct SegEntry {
    /// Sequence lock: odd while the owner rewrites the entry. Owner: the
    /// segment's task; readers retry when it is odd or changed.
    pub seq: AtomicU64,
    /// Capability key; 0 marks a free entry.
    pub key: AtomicU64,
    /// Base address in the owner.
    pub base: AtomicU64,
    /// Length in bytes.
    pub len: AtomicU64,
    /// Bits 0–7 permissions, bit 8 shared memory, bits 32–63 segment id.
    pub meta: AtomicU64,
}

/// The control block at the start of `/dev/shm/sss-<job>-<rank>-ctl`.
/// Fields written by peers are atomics; lines written by different parties
/// are kept apart.
#[repr(C)]
pub(crate) struct Ctl {
    /// `CTL_MAGIC` (0x5353_4354, "SSCT") once initialized. Owner: the task.
    pub magic: AtomicU32,
    /// Layout version, [`CTL_VERSION`].
    pub version: u32,
    /// Process id of the task. Owner: the task.
    pub pid: u32,
    /// The task's node name, NUL-padded, for the node daemon.
    pub node: [u8; 32],
    /// Threads of the task blocked in a wait (futex) right now; SS-Wait
    /// partners on the node read it at the start of every wait to decide
    /// whether spinning pays. On this line, which nothing else writes
    /// after creation, so that reading it costs a cache miss only when it
    /// changed (beside the counters that every same-node sender bumps,
    /// each look of an oversubscribed wait missed once per peer).
    pub blocked: AtomicU32,
    /// One more than the CPU a thread of the task last yielded from in a
    /// wait (0: not known yet). Owner: the task, which stores it only
    /// when it changed; an SS-Wait partner on the node reads it before
    /// it yields, to tell whether the kernel put both on one CPU.
    pub cpu: AtomicU32,
    /// Padding.
    pub _pad0: [u8; 12],
    /// Bumped after anything lands in this task's memory; the task's
    /// waiters block on it (futex). Written by the progress thread and by
    /// same-node senders.
    pub events: AtomicU32,
    /// Number of threads blocked on `events`; same-node senders neither
    /// bump `events` nor wake when it is zero (a wait raises it, then
    /// looks at its condition again, then sleeps). Alone on this line
    /// with `events`, which a task writes only when it blocks: a sender's
    /// look at it stays in its cache while the task spins.
    pub waiters: AtomicU32,
    /// Threads of this node's tasks blocked in an SS-Wait on this task:
    /// only then does a sender whose operation lands here pre-wake them
    /// (see `Inner::prewake`), and this task wake them as its wait ends.
    /// Written by those waiters around their sleep.
    pub dependents: AtomicU32,
    /// Threads of the task blocked on `events` that run the signal ring
    /// when woken: while it is non-zero a same-node sender of a SIGNAL
    /// wakes them (`events`) instead of ringing the progress thread, one
    /// wake-up a way instead of two. Written by those waiters around
    /// their sleep; each looks at the ring again once it stopped counting.
    pub ring_waiters: AtomicU32,
    /// Padding to the next line.
    pub _pad1: [u8; 48],
    /// 1 while the progress thread sleeps in poll: senders that queue a
    /// signal then ring the doorbell. Owner: the progress thread.
    pub progress_asleep: AtomicU32,
    /// While a thread of the task is in an SS-Wait: one more than the
    /// partner's rank; 0 otherwise. Owner: the task. Same-node senders
    /// read it to wake the tasks waiting on the task they just wrote to,
    /// and a sender of a SIGNAL rings nobody while it is set: the wait
    /// looks at the signal ring on every turn, and once more after it
    /// cleared this.
    pub waiting_for: AtomicU32,
    /// Set to 1 by the first same-node sender whose operation lands
    /// while the task is in an SS-Wait; the task clears it when a wait
    /// starts. Tells the task's own waiters that it is about to run.
    pub hit: AtomicU32,
    /// Padding.
    pub _pad2: [u8; 52],
    /// Operations applied by same-node senders on this task's behalf.
    pub applied: AtomicU64,
    /// Operations refused by same-node senders' checks.
    pub rejected: AtomicU64,
    /// Progress counter the application bumps (IDM shows it). Owner: the
    /// task.
    pub progress: AtomicU64,
    /// Datagrams the task sent (copied by its progress thread, for IDM).
    pub packets: AtomicU64,
    /// Bytes the task sent.
    pub bytes: AtomicU64,
    /// Retransmissions of the task.
    pub retransmissions: AtomicU64,
    /// Operations refused by the task's udp receive path.
    pub udp_rejected: AtomicU64,
    /// Padding.
    pub _pad3: u64,
    /// Bitmap of registered signal handlers 0–255. Owner: the task.
    pub handlers: [AtomicU64; 4],
    /// Datagrams the task's udp receive path refused unopened: not sealed
    /// with the job's keys, replayed, or of an older incarnation.
    pub refused: AtomicU64,
    /// Threads of the task in a lasting spin of the default wait, which
    /// looks at the signal ring on every turn (see `Inner::look_at_ring`):
    /// while non-zero (and no waiter sleeps, see `ring_waiters`) a
    /// same-node sender of a SIGNAL rings nobody. On the line senders of
    /// a SIGNAL read anyway (`handlers`).
    pub ring_lookers: AtomicU32,
    /// A word the application publishes to the tasks of its node
    /// (`Task::publish_word`), e.g. MPI's "nonblocking collectives run
    /// here". Owner: the task; peers read it as a hint.
    pub app_word: AtomicU32,
    /// Padding.
    pub _pad4: [u8; 16],
    /// Published segments. Owner: the task.
    pub segs: [SegEntry; CTL_SEGMENTS],
}

// `blocked` is read by every waiter on the node at the start of its wait:
// never on the line the counters same-node senders bump live on.
const _: () =
    assert!(std::mem::offset_of!(Ctl, blocked) / 64 != std::mem::offset_of!(Ctl, applied) / 64);

/// Offset of the signal ring in the control file (64-byte aligned).
pub const SIGNAL_RING_AT: usize = std::mem::size_of::<Ctl>().next_multiple_of(64);

/// Bytes of a control file.
pub fn ctl_bytes() -> usize {
    SIGNAL_RING_AT + crate::fifo::fifo_bytes(SIGNAL_SLOTS, 4 + SIGNAL_MAX)
}

/// Name of a task's control file. The tag is random per incarnation and
/// published only to the job's tasks: another user cannot pre-create the
/// name to make the task fail at start.
pub(crate) fn ctl_name(job: u32, rank: u32, tag: u64) -> String {
    format!("sss-{job}-{rank}-{tag:016x}-ctl")
}

/// The (job, rank, tag) a control file's name stands for; `None` for any
/// other name.
pub(crate) fn parse_ctl_name(name: &str) -> Option<(u32, u32, u64)> {
    let mut it = name.strip_prefix("sss-")?.strip_suffix("-ctl")?.split('-');
    let (job, rank, tag) = (it.next()?, it.next()?, it.next()?);
    if it.next().is_some() || tag.len() != 16 || !tag.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let num = |s: &str| {
        s.bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| s.parse().ok())
            .flatten()
    };
    Some((num(job)?, num(rank)?, u64::from_str_radix(tag, 16).ok()?))
}

/// The doorbell datagram. No MBCF packet is one byte long, so it cannot
/// be mistaken for one; any other datagram that does not parse, the empty
/// one included, counts as a bad packet.
pub(crate) const DOORBELL: [u8; 1] = [0xdb];

/// Splits what one receive returned (several datagrams of one sender when
/// the kernel coalesced them, GRO: all as long as the first declares in
/// its header, but the last) and hands every datagram but doorbells to
/// `handle`. Returns (some datagram handled, some doorbell seen).
///
/// The length comes from the first header, not from the kernel's
/// `UDP_GRO` control message: a plain `recvfrom`, which a spinning waiter
/// calls at every look, costs 80 ns less than a `recvmsg` on this path.
/// What declares no length of ours is one datagram.
pub(crate) fn split_received(bytes: &mut [u8], mut handle: impl FnMut(&mut [u8])) -> (bool, bool) {
    if bytes.is_empty() {
        // A zero-length datagram: not ours, a bad packet.
        handle(bytes);
        return (true, false);
    }
    let seg = sss_wire::datagram_len(bytes)
        .filter(|&l| l <= bytes.len())
        .unwrap_or(bytes.len());
    let (mut handled, mut bell) = (false, false);
    for d in bytes.chunks_mut(seg.max(1)) {
        if d == DOORBELL {
            bell = true;
        } else {
            handle(d);
            handled = true;
        }
    }
    (handled, bell)
}

/// A mapped control block, ours or a peer's.
pub(crate) struct CtlMap {
    map: Mapping,
    /// The inbound signal ring; its geometry is fixed by this program,
    /// never read from the file.
    ring: Ring,
}

impl CtlMap {
    /// Creates and initializes this task's control block.
    #[allow(unsafe_code)]
    pub(crate) fn create(job: u32, rank: u32, tag: u64, node: &str) -> std::io::Result<Self> {
        let name = ctl_name(job, rank, tag);
        sys::shm_unlink(&name);
        let fd = sys::shm_file(&name, ctl_bytes(), true)?;
        let map = Mapping::shared(fd.as_raw_fd(), ctl_bytes())?;
        // SAFETY: the mapping is ctl_bytes() long, page aligned, and not
        // published yet (magic unset).
        unsafe { crate::mem::ctl_init(map.ptr(), std::process::id(), node) };
        let mem = Checked::in_mapping(&map, SIGNAL_RING_AT, ctl_bytes() - SIGNAL_RING_AT)
            .ok_or_else(|| std::io::Error::other("control block too small"))?;
        let ring = Ring::create(mem, SIGNAL_SLOTS, 4 + SIGNAL_MAX)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
        let c = CtlMap { map, ring };
        c.ctl().magic.store(CTL_MAGIC, Ordering::Release);
        Ok(c)
    }

    fn map_existing(fd: std::os::fd::OwnedFd) -> std::io::Result<Self> {
        let map = Mapping::shared(fd.as_raw_fd(), ctl_bytes())?;
        let bad = |m: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, m.to_string());
        let mem = Checked::in_mapping(&map, SIGNAL_RING_AT, ctl_bytes() - SIGNAL_RING_AT)
            .ok_or_else(|| bad("control block too small"))?;
        let ring = Ring::with_geometry(mem, SIGNAL_SLOTS, 4 + SIGNAL_MAX)
            .map_err(|_| bad("control block too small"))?;
        let c = CtlMap { map, ring };
        if c.ctl().magic.load(Ordering::Acquire) != CTL_MAGIC {
            return Err(bad("control block not initialized"));
        }
        if c.ctl().version != CTL_VERSION {
            return Err(bad(
                "control block of another layout version (tasks of one job must use one build)",
            ));
        }
        Ok(c)
    }

    /// Maps a peer's control block.
    pub(crate) fn open(job: u32, rank: u32, tag: u64) -> std::io::Result<Self> {
        let fd = sys::shm_file(&ctl_name(job, rank, tag), 0, false)?;
        Self::map_existing(fd)
    }

    /// The control block.
    #[allow(unsafe_code)]
    pub fn ctl(&self) -> &Ctl {
        // SAFETY: the mapping is ctl_bytes() long (checked against the file
        // when mapped), page aligned, and lives as long as `self`.
        unsafe { crate::mem::ctl_at(self.map.ptr()) }
    }

    pub(crate) fn signal_ring(&self) -> Ring {
        self.ring
    }

    /// Publishes the segment table (called with the owner's table lock).
    pub(crate) fn publish(&self, infos: &[SegmentInfo]) {
        let c = self.ctl();
        for (i, e) in c.segs.iter().enumerate() {
            crate::seqlock::write(&e.seq, || match infos.get(i) {
                Some(info) => {
                    e.key.store(info.key, Ordering::Relaxed);
                    e.base.store(info.base, Ordering::Relaxed);
                    e.len.store(info.len, Ordering::Relaxed);
                    e.meta.store(
                        info.perm.0 as u64 | (info.shared as u64) << 8 | (info.id as u64) << 32,
                        Ordering::Relaxed,
                    );
                }
                None => e.key.store(0, Ordering::Relaxed),
            });
        }
    }

    /// Marks handler `h` registered.
    pub(crate) fn set_handler(&self, h: u32) {
        if h < 256 {
            self.ctl().handlers[(h / 64) as usize].fetch_or(1 << (h % 64), Ordering::Release);
        }
    }

    fn has_handler(&self, h: u32) -> bool {
        h < 256
            && self.ctl().handlers[(h / 64) as usize].load(Ordering::Acquire) & (1 << (h % 64)) != 0
    }

    /// Entry `i` of the published table if it holds `key` (a consistent
    /// read under the entry's sequence lock); [`Stale`] when the entry
    /// stays mid-update (its owner died rewriting it).
    fn entry(&self, i: usize, key: u64) -> Result<Option<Published>, Stale> {
        let Some(e) = self.ctl().segs.get(i) else {
            return Ok(None);
        };
        let (k, base, len, meta) = crate::seqlock::read(&e.seq, || {
            (
                e.key.load(Ordering::Relaxed),
                e.base.load(Ordering::Relaxed),
                e.len.load(Ordering::Relaxed),
                e.meta.load(Ordering::Relaxed),
            )
        })?;
        Ok((k == key).then_some(Published {
            base,
            len,
            perm: Perm((meta & 0xff) as u8),
            shared: meta & 0x100 != 0,
            id: (meta >> 32) as u32,
        }))
    }

    /// The ids of the segments published now, sorted. An entry that
    /// cannot be read (stuck mid-update) counts as not published: its
    /// mapping is only dropped from a cache and mapped again if used.
    fn live_ids(&self) -> Vec<u32> {
        let mut ids = Vec::with_capacity(CTL_SEGMENTS);
        for e in &self.ctl().segs {
            let read = crate::seqlock::read(&e.seq, || {
                (
                    e.key.load(Ordering::Relaxed),
                    e.meta.load(Ordering::Relaxed),
                )
            });
            if let Ok((key, meta)) = read {
                if key != 0 {
                    ids.push((meta >> 32) as u32);
                }
            }
        }
        ids.sort_unstable();
        ids
    }

    /// Finds the published segment with `key`, and its table index;
    /// [`Stale`] when it is not found and some entry could not be read.
    fn lookup(&self, key: u64) -> Result<Option<(usize, Published)>, Stale> {
        if key == 0 {
            return Ok(None);
        }
        let mut stale = false;
        for i in 0..CTL_SEGMENTS {
            match self.entry(i, key) {
                Ok(Some(p)) => return Ok(Some((i, p))),
                Ok(None) => {}
                Err(Stale) => stale = true,
            }
        }
        if stale {
            Err(Stale)
        } else {
            Ok(None)
        }
    }

    /// Bumps the event word and wakes the task's waiters.
    pub(crate) fn wake(&self) {
        let c = self.ctl();
        c.events.fetch_add(1, Ordering::SeqCst);
        if c.waiters.load(Ordering::SeqCst) > 0 {
            sys::futex_wake_all(&c.events);
        }
    }

    /// Counts an operation a same-node sender applied (`ok`) or refused
    /// here, and wakes the task's blocked waiters after one applied.
    pub(crate) fn landed(&self, ok: bool) {
        let c = self.ctl();
        if ok {
            c.applied.fetch_add(1, Ordering::Relaxed);
            self.wake_waiting();
        } else {
            c.rejected.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// After an operation landed: bumps the event word and wakes only
    /// when a thread of the task blocks. The fence orders what landed
    /// before the look at `waiters`; a blocking wait raises `waiters`
    /// (SeqCst) before it looks at its condition a last time, so either
    /// it sees what landed or we see it waiting. A locked write to this
    /// line on every operation cost a cache-line transfer per message.
    pub(crate) fn wake_waiting(&self) {
        let c = self.ctl();
        std::sync::atomic::fence(Ordering::SeqCst);
        if c.waiters.load(Ordering::SeqCst) > 0 {
            c.events.fetch_add(1, Ordering::SeqCst);
            sys::futex_wake_all(&c.events);
        }
    }
}

/// Who a SIGNAL pushed on a same-node peer's ring woke, or must wake
/// ([`Peer::signal_wake`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SignalWake {
    /// A blocked waiter of the peer, woken on its futex: it runs the ring.
    Waiter,
    /// Nobody yet: the peer's progress thread sleeps and needs the
    /// doorbell datagram.
    Doorbell,
    /// Nobody: a thread of the peer is awake and will look at the ring.
    None,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Published {
    base: u64,
    len: u64,
    perm: Perm,
    shared: bool,
    id: u32,
}

/// A same-node peer's FIFO queue, opened once (`Peer::open_fifo`):
/// its geometry read then and never again, its segment kept mapped.
pub(crate) struct OpenFifo {
    pub ring: Ring,
    /// Our last view of the queue's head.
    pub seen: HeadView,
    _map: Arc<Mapping>,
    pub ctl: Arc<CtlMap>,
    /// Where the queue's segment was in the peer's table, and as what.
    index: usize,
    key: u64,
    seg: Published,
}

impl OpenFifo {
    /// True while the peer publishes the queue's segment as it did when
    /// the queue was opened (one entry of its table read: not freed, not
    /// moved, still writable).
    pub fn current(&self) -> bool {
        matches!(self.ctl.entry(self.index, self.key), Ok(Some(p)) if p == self.seg)
    }

    /// Counts a push in the peer's control block and wakes its blocked
    /// waiters, as an operation of the shm path does.
    pub fn landed(&self, r: Result<(), Status>) -> Result<(), Status> {
        self.ctl.landed(r.is_ok());
        r
    }
}

/// What the shm path did with an operation.
pub(crate) enum Direct {
    /// Applied (or refused) here; the reply.
    Done(Result<crate::Reply, Status>),
    /// Not for the shm path: send it over udp.
    Fallback,
}

/// Hashes a segment id (a small integer) with one multiplication: the
/// map of a peer's segments is looked up twice per WRITE with notify, and
/// SipHash showed in the round trip. Ids come from the peer's table, so a
/// hostile peer can at worst make its own lookups slow.
#[derive(Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ b as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }

    fn write_u32(&mut self, i: u32) {
        self.0 = (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

/// Fewest mappings of a peer's segments that are worth a prune.
const PRUNE_MIN: usize = 16;

/// A same-node peer: its control block and the segment files mapped so far.
pub(crate) struct Peer {
    job: u32,
    rank: u32,
    pid: i32,
    ctl: Arc<CtlMap>,
    maps: HashMap<u32, Arc<Mapping>, BuildHasherDefault<IdHasher>>,
    /// `maps` is pruned when it holds this many: see [`Peer::prune_maps`].
    prune_at: usize,
    /// Table entries where recently used keys were found (key, index),
    /// tried before the full scan; round robin.
    hints: [(u64, usize); 4],
    next_hint: usize,
    /// Set when a key was not found in the published table: the segment
    /// may lie beyond the table's CTL_SEGMENTS entries, have moved while
    /// its owner republished, or the table may be stale (an entry stuck
    /// mid-update). A refusal is then not ours to make: the operation is
    /// handed to the udp path, where the owner checks it against its own
    /// table.
    ask_owner: bool,
    /// Our last view of the head of the peer's signal ring.
    sig_seen: HeadView,
    /// The queue (key, address) FIFO operations last went to, and our
    /// view of its head: a stream of pushes to one queue reads the
    /// receiver's `head` only when the ring looks full.
    fifo_seen: (u64, u64, HeadView),
}

impl Peer {
    pub fn open(job: u32, rank: u32, tag: u64, pid: u32) -> std::io::Result<Self> {
        Ok(Self {
            job,
            rank,
            pid: pid as i32,
            ctl: Arc::new(CtlMap::open(job, rank, tag)?),
            maps: HashMap::default(),
            prune_at: PRUNE_MIN,
            hints: [(0, 0); 4],
            next_hint: 0,
            ask_owner: false,
            sig_seen: HeadView::new(),
            fifo_seen: (0, 0, HeadView::new()),
        })
    }

    /// The peer's control block, for reading its state without the
    /// peer's lock.
    pub fn ctl(&self) -> Arc<CtlMap> {
        self.ctl.clone()
    }

    /// Drops the mappings of segments the peer no longer publishes. A
    /// freed segment's pages stay allocated while anyone maps them, so a
    /// peer cycling through short-lived segments (staging of large
    /// messages) would pin them all here, without bound. Pruning is only
    /// a cache eviction: holders of a mapping (`PeerMap`, an open FIFO)
    /// keep their `Arc`, and a segment missed while the table was being
    /// rewritten is mapped again at its next use. Runs only at entry
    /// points, before any [`Checked`] into a mapping exists; the
    /// threshold doubles with what stays live, so scans are amortized.
    fn prune_maps(&mut self) {
        if self.maps.len() < self.prune_at {
            return;
        }
        let live = self.ctl.live_ids();
        self.maps.retain(|id, _| live.binary_search(id).is_ok());
        self.prune_at = (self.maps.len() * 2).max(PRUNE_MIN);
    }

    /// Finds the published segment with `key`: where it was found last
    /// time if it is still there, else by scanning the table. A key not
    /// found sets `ask_owner`.
    fn find(&mut self, key: u64) -> Option<Published> {
        for &(k, i) in &self.hints {
            if k == key && key != 0 {
                if let Ok(Some(p)) = self.ctl.entry(i, key) {
                    return Some(p);
                }
            }
        }
        let Ok(Some((i, p))) = self.ctl.lookup(key) else {
            self.ask_owner = true;
            return None;
        };
        self.hints[self.next_hint] = (key, i);
        self.next_hint = (self.next_hint + 1) % self.hints.len();
        Some(p)
    }

    /// Maps the peer's shared-memory segment `key` (the whole published
    /// range, checked against the peer's table) for direct loads and
    /// stores; `Ok(None)` when it is not in shared memory (registered
    /// memory of the peer's own).
    pub(crate) fn map_segment(
        &mut self,
        key: u64,
        need: Perm,
    ) -> Result<Option<(Arc<Mapping>, u64)>, Status> {
        self.prune_maps();
        let p = self.find(key).ok_or(Status::BadKey)?;
        if !p.perm.contains(need) {
            return Err(Status::NoPermission);
        }
        if !p.shared {
            return Ok(None);
        }
        self.local(&p, p.base, 0)?;
        let m = self.maps.get(&p.id).cloned().ok_or(Status::BadKey)?;
        Ok(Some((m, p.base)))
    }

    /// Opens the peer's FIFO queue at (`key`, `addr`) for pushes straight
    /// into its slots, checked as a push would be: `Ok(None)` when the
    /// queue is not in shared memory or not in the peer's table (the
    /// operation path decides those).
    pub(crate) fn open_fifo(&mut self, key: u64, addr: u64) -> Result<Option<OpenFifo>, Status> {
        self.prune_maps();
        let Ok(Some((index, seg))) = self.ctl.lookup(key) else {
            return Ok(None);
        };
        if !seg.shared {
            return Ok(None);
        }
        self.check(key, addr, FIFO_HEADER, Perm::WRITE)?;
        let head = self.local(&seg, addr, FIFO_HEADER)?;
        let ring = Ring::open(head, |total| {
            self.check(key, addr, total, Perm::WRITE)?;
            self.local(&seg, addr, total)
        })?;
        let map = self.maps.get(&seg.id).cloned().ok_or(Status::BadKey)?;
        Ok(Some(OpenFifo {
            ring,
            seen: HeadView::new(),
            _map: map,
            ctl: self.ctl.clone(),
            index,
            key,
            seg,
        }))
    }

    /// Checks (key, addr, len, perm) against the peer's table, as the
    /// receiver would.
    fn check(&mut self, key: u64, addr: u64, len: usize, need: Perm) -> Result<Published, Status> {
        let p = self.find(key).ok_or(Status::BadKey)?;
        let off = addr.checked_sub(p.base).ok_or(Status::OutOfBounds)?;
        if off.checked_add(len as u64).is_none_or(|e| e > p.len) {
            return Err(Status::OutOfBounds);
        }
        if !p.perm.contains(need) {
            return Err(Status::NoPermission);
        }
        Ok(p)
    }

    /// Our address for `addr` in the peer's shared segment `p`.
    fn local(&mut self, p: &Published, addr: u64, len: usize) -> Result<Checked, Status> {
        // The table check put addr - base + len within p.len, and the
        // mapping covers p.len; in_mapping checks it again.
        let off = addr.checked_sub(p.base).ok_or(Status::OutOfBounds)? as usize;
        // Mapped already: no reference count taken, the map keeps it.
        if let Some(m) = self.maps.get(&p.id).filter(|m| m.len() as u64 >= p.len) {
            return Checked::in_mapping(m, off, len).ok_or(Status::OutOfBounds);
        }
        let name = crate::segment::SegTable::shm_name(self.job, self.rank, p.id);
        let fd = sys::shm_file(&name, 0, false).map_err(|_| Status::BadKey)?;
        let m = Arc::new(
            Mapping::shared(fd.as_raw_fd(), p.len.max(8) as usize).map_err(|_| Status::BadKey)?,
        );
        let c = Checked::in_mapping(&m, off, len).ok_or(Status::OutOfBounds);
        self.maps.insert(p.id, m);
        c
    }

    fn finish(&mut self, r: Result<crate::Reply, Status>) -> Direct {
        if std::mem::take(&mut self.ask_owner) && r.is_err() {
            return Direct::Fallback;
        }
        self.ctl.landed(r.is_ok());
        Direct::Done(r)
    }

    /// Runs one operation against the peer's memory if the shm path can.
    pub fn apply(&mut self, me: u32, op: &sss_proto::Op<'_>) -> Direct {
        use crate::Reply;
        use sss_proto::Op;
        self.ask_owner = false;
        self.prune_maps();
        match *op {
            Op::Write {
                key,
                addr,
                data,
                notify,
            } => {
                let p = match self.check(key, addr, data.len(), Perm::WRITE) {
                    Ok(p) => p,
                    Err(s) => return self.finish(Err(s)),
                };
                let counter = match notify {
                    None => None,
                    Some(n) => match self.check(n.key, n.addr, 8, Perm::WRITE) {
                        Err(s) => return self.finish(Err(s)),
                        Ok(_) if n.addr % 8 != 0 => return self.finish(Err(Status::Misaligned)),
                        Ok(np) if !np.shared => return Direct::Fallback,
                        Ok(np) => Some((np, n)),
                    },
                };
                if p.shared {
                    match self.local(&p, addr, data.len()) {
                        Ok(c) => c.write(data),
                        Err(s) => return self.finish(Err(s)),
                    }
                } else if sys::process_vm_write(self.pid, addr, data).ok() != Some(data.len()) {
                    return self.finish(Err(Status::OutOfBounds));
                }
                if let Some((np, n)) = counter {
                    match self.local(&np, n.addr, 8) {
                        // Release: the data is visible before the bump.
                        Ok(c) => {
                            c.word().fetch_add(n.addend, Ordering::Release);
                            crate::task::after_notify();
                        }
                        Err(s) => return self.finish(Err(s)),
                    }
                }
                self.finish(Ok(Reply::Done))
            }
            Op::Read { key, addr, len } => {
                let p = match self.check(key, addr, len as usize, Perm::READ) {
                    Ok(p) => p,
                    Err(s) => return self.finish(Err(s)),
                };
                if p.shared {
                    match self.local(&p, addr, len as usize) {
                        Ok(c) => self.finish(Ok(Reply::Data(c.to_vec()))),
                        Err(s) => self.finish(Err(s)),
                    }
                } else {
                    let mut v = vec![0; len as usize];
                    match sys::process_vm_read(self.pid, addr, &mut v) {
                        Ok(n) if n == v.len() => self.finish(Ok(Reply::Data(v))),
                        _ => self.finish(Err(Status::OutOfBounds)),
                    }
                }
            }
            Op::Swap { key, addr, .. }
            | Op::Cas { key, addr, .. }
            | Op::FetchAdd { key, addr, .. } => {
                let p = match self.check(key, addr, 8, Perm::ATOMIC) {
                    Ok(p) => p,
                    Err(s) => return self.finish(Err(s)),
                };
                if addr % 8 != 0 {
                    return self.finish(Err(Status::Misaligned));
                }
                if !p.shared {
                    return Direct::Fallback;
                }
                let w = match self.local(&p, addr, 8) {
                    Ok(c) => c.word(),
                    Err(s) => return self.finish(Err(s)),
                };
                let old = match *op {
                    Op::Swap { operand, .. } => w.swap(operand, Ordering::AcqRel),
                    Op::Cas { expected, new, .. } => {
                        match w.compare_exchange(expected, new, Ordering::AcqRel, Ordering::Acquire)
                        {
                            Ok(v) | Err(v) => v,
                        }
                    }
                    Op::FetchAdd { operand, .. } => w.fetch_add(operand, Ordering::AcqRel),
                    _ => 0,
                };
                self.finish(Ok(Reply::Value(old)))
            }
            Op::Fifo { key, addr, data } => {
                let p = match self.check(key, addr, FIFO_HEADER, Perm::WRITE) {
                    Ok(p) => p,
                    Err(s) => return self.finish(Err(s)),
                };
                if !p.shared {
                    return Direct::Fallback;
                }
                let head = match self.local(&p, addr, FIFO_HEADER) {
                    Ok(c) => c,
                    Err(s) => return self.finish(Err(s)),
                };
                let r = Ring::open(head, |total| {
                    self.check(key, addr, total, Perm::WRITE)?;
                    self.local(&p, addr, total)
                })
                .and_then(|ring| {
                    if (self.fifo_seen.0, self.fifo_seen.1) != (key, addr) {
                        self.fifo_seen = (key, addr, HeadView::new());
                    }
                    ring.push_parts(me, &[data], &self.fifo_seen.2)
                });
                self.finish(r.map(|_| Reply::Done))
            }
            Op::Signal {
                key: _,
                handler,
                data,
            } => {
                if data.len() > SIGNAL_MAX {
                    return Direct::Fallback;
                }
                if !self.ctl.has_handler(handler) {
                    return self.finish(Err(Status::NoSuchHandler));
                }
                let index = handler.to_le_bytes();
                match self
                    .ctl
                    .signal_ring()
                    .push_parts(me, &[&index, data], &self.sig_seen)
                {
                    Ok(()) => {
                        let c = self.ctl.ctl();
                        c.applied.fetch_add(1, Ordering::Relaxed);
                        Direct::Done(Ok(Reply::Done))
                    }
                    // A full ring is back-pressure, not an error: let the
                    // caller retry through the udp path, which queues.
                    Err(_) => Direct::Fallback,
                }
            }
        }
    }

    /// After a SIGNAL was pushed on the peer's ring: who must be woken
    /// to run it. A blocked waiter that runs the ring itself is woken on
    /// its futex; else nobody while a thread of the peer is in an
    /// SS-Wait (`waiting_for`) or a lasting spin (`ring_lookers`), which
    /// look at the ring on every turn; else the progress thread, if it
    /// sleeps, gets a doorbell. The push's SeqCst claim of the slot (the
    /// CAS on the ring's `tail`) and these SeqCst loads pair with the
    /// waiter's SeqCst decrement of `ring_waiters` or `ring_lookers`, or
    /// clearing of `waiting_for`, followed by its look at the ring, and with the progress loop's store of its flag, its
    /// fence and its read of `tail`: either we see them or they see the
    /// message.
    pub fn signal_wake(&self) -> SignalWake {
        let c = self.ctl.ctl();
        if c.ring_waiters.load(Ordering::SeqCst) != 0 {
            c.events.fetch_add(1, Ordering::SeqCst);
            sys::futex_wake_all(&c.events);
            SignalWake::Waiter
        } else if c.waiting_for.load(Ordering::SeqCst) != 0
            || c.ring_lookers.load(Ordering::SeqCst) != 0
        {
            // In an SS-Wait or a lasting spin: it looks every turn.
            SignalWake::None
        } else if c.progress_asleep.load(Ordering::SeqCst) != 0 {
            SignalWake::Doorbell
        } else {
            SignalWake::None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::FileExt;

    /// A sealed datagram head declaring `payload` bytes of WRITE.
    fn head(payload: u16) -> Vec<u8> {
        let mut d = vec![0u8; sss_wire::HEADER_LEN];
        d[0..2].copy_from_slice(&sss_wire::MAGIC.to_be_bytes());
        d[2] = sss_wire::Format::Authenticated as u8;
        d[3] = sss_wire::Kind::Write as u8;
        d[6..8].copy_from_slice(&payload.to_be_bytes());
        d
    }

    /// What the kernel coalesced (GRO) is cut where the first datagram's
    /// header says: three of one length, then a shorter last one.
    #[test]
    fn a_coalesced_batch_is_cut_into_its_datagrams() {
        let full = sss_wire::HEADER_LEN + 100 + sss_wire::SEAL_TAG_LEN;
        let mut batch = Vec::new();
        for _ in 0..3 {
            let mut d = head(100);
            d.resize(full, 7);
            batch.extend_from_slice(&d);
        }
        batch.extend_from_slice(&head(10));
        let mut lens = Vec::new();
        let (handled, bell) = split_received(&mut batch, |d| lens.push(d.len()));
        assert!(handled && !bell);
        assert_eq!(lens, [full, full, full, sss_wire::HEADER_LEN]);
    }

    /// A doorbell, a datagram of no header of ours and one declaring more
    /// than arrived are each one datagram; a header declaring less cuts
    /// only its own sender's batch, into pieces no shorter than a header.
    #[test]
    fn what_declares_no_length_of_ours_is_one_datagram() {
        let mut lens = Vec::new();
        assert_eq!(
            split_received(&mut DOORBELL.clone(), |d| lens.push(d.len())),
            (false, true)
        );
        let mut junk = vec![0x5a; 500];
        assert_eq!(
            split_received(&mut junk, |d| lens.push(d.len())),
            (true, false)
        );
        let mut long = head(1000);
        long.resize(300, 0);
        split_received(&mut long, |d| lens.push(d.len()));
        assert_eq!(lens, [500, 300]);
        let mut lie = head(0);
        lie.resize(1000, 0);
        let mut pieces = 0;
        split_received(&mut lie, |d| {
            assert!(d.len() <= sss_wire::HEADER_LEN + sss_wire::SEAL_TAG_LEN);
            pieces += 1;
        });
        assert_eq!(
            pieces,
            1000usize.div_ceil(sss_wire::HEADER_LEN + sss_wire::SEAL_TAG_LEN)
        );
    }

    /// A peer's control block of another layout version is refused when
    /// opened, not read with this build's offsets.
    #[test]
    fn a_control_block_of_another_layout_version_is_refused() {
        let (job, rank, tag) = (std::process::id() | 0x4000_0000, 7, sys::random_u64());
        let mine = CtlMap::create(job, rank, tag, "node").unwrap();
        assert!(CtlMap::open(job, rank, tag).is_ok());
        let path = sys::shm_dir().unwrap().join(ctl_name(job, rank, tag));
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        let version = std::mem::offset_of!(Ctl, version) as u64;
        f.write_all_at(&(CTL_VERSION + 1).to_ne_bytes(), version)
            .unwrap();
        let e = CtlMap::open(job, rank, tag).err().expect("refused");
        sys::shm_unlink(&ctl_name(job, rank, tag));
        drop(mine);
        assert!(e.to_string().contains("layout version"), "{e}");
    }
}
