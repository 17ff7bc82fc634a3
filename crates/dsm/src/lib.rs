//! ADSM: a shared heap across the tasks of a job, built on MBCF only.
//!
//! Every task reserves the heap at the same virtual address (large,
//! `MAP_NORESERVE`, backed lazily, nothing pinned) and registers it with
//! userfaultfd. The heap view of every task is a cache: the master copy of
//! each page lives in the *home* segment of the page's home task (a sparse
//! shared-memory MBCF segment at the same heap offset). A read miss faults
//! into the fault-handling thread, which fetches the page from its home
//! with MBCF READ (plus up to `prefetch` following pages with the same
//! home, in the same READ) and installs it with `UFFDIO_COPY`. There is no
//! SIGSEGV handler, so applications keep their own.
//!
//! Writes are recorded either explicitly — [`Dsm::note_write`] after plain
//! stores, as compiler-emitted code sequences do — or, for unmodified code,
//! by write-protect faults (`WriteMode::Trap`): pages are installed
//! write-protected, the first write of an interval keeps a twin, and
//! release sends the diff.
//!
//! Protocols ([`Protocol`], seed 001 §3) belong to allocations: each
//! range's descriptor at rank 0 holds its protocol, chosen at allocation
//! ([`Dsm::malloc_with`]; [`Config::protocol`], `SSS_DSM_PROTOCOL`, is the
//! default) and switched later with the collective [`Dsm::set_protocol`]
//! (pending writes flushed, every copy of the range dropped, holder
//! directory cleared, barriers). Every protocol gives data-race-free
//! programs, synchronized with the DSM's locks and barriers, the results
//! of a sequential run.
//! - `Ulrc` — home-based lazy release consistency, multiple writers. At a
//!   release, noted ranges and diffs go to the homes (one MBCF WRITE per
//!   contiguous run with the same home; MBCF splits runs into packets), then
//!   the written pages are appended to this task's write-notice log. At an
//!   acquire, the task pulls the new notices of every other task and drops
//!   its copies of those pages, so the next read faults.
//! - `Invalidate` — sequential consistency, single writer: a noted write
//!   takes the busy bit of each written page in the page's directory word
//!   at its home (writers of a page go one at a time; fetchers of a busy
//!   page wait), has every recorded copy holder drop its copy (acked),
//!   writes the home, and frees the pages, all before
//!   [`Dsm::note_write`] returns: no task can read the new value while
//!   another still holds the old one. Stores are visible to others once
//!   noted; a store not yet noted is lost if another writer's note drops
//!   the page under it, so a page has one writer between
//!   synchronizations. In trap mode the diffs go home at release and the
//!   holders drop their copies before the release completes (release
//!   consistency, several writers a page). With more than 63 tasks every
//!   task is told instead of the holders, and writers are not serialized.
//! - `HomeUpdate` — SAURC (AURC emulated in software): a noted write goes
//!   to its home at once as an asynchronous MBCF WRITE; consecutive
//!   contiguous notes for one home are combined up to one datagram's
//!   payload. The local copy keeps the stores. Release fences the homes
//!   written and publishes write notices; acquire drops noticed pages as
//!   under `Ulrc`. Multiple writers.
//! - `Update` — writes go through the home to every copy: a task sets its
//!   bit in the page's holder directory (at the home) before it first
//!   reads the page; a noted write is a SIGNAL to the home, whose handler
//!   applies it to the home copy and forwards it to every other holder,
//!   whose handler copies it into its view. Release waits until every
//!   holder acknowledged (the home tells the writer how many acks to
//!   expect). Acquire does nothing for these pages. At most 64 tasks.
//! - `UpdateDirect` — the copy set is fixed at allocation: every task. A
//!   noted write goes to the home at once (combined WRITEs); at release,
//!   after the homes are fenced, the written bytes go straight to every
//!   other task, and release waits for their acknowledgements. (Pushing
//!   after the fence means a copy fetched meanwhile cannot miss them: a
//!   holder without the page ignores the update and its fetch reads the
//!   home again.)
//! - `HomeOnly` — no copies are kept: [`Dsm::read`] and [`Dsm::write`]
//!   go to the home (reads of pages not cached here are MBCF READs that
//!   install nothing). Plain loads still work: the page is fetched on a
//!   fault and dropped at every acquire; noted writes go home at once as
//!   under `HomeUpdate`, without notices.
//!
//! In trap mode (write-protect faults) writes are seen only at release,
//! so every protocol sends diffs then: `HomeUpdate`, `HomeOnly` and
//! `UpdateDirect` to the homes (and `UpdateDirect` to every copy),
//! `Update` through the homes. An update reaching a write-protected clean
//! page in trap mode drops the page instead of writing it (a store would
//! fault); a page with a twin gets the bytes in both view and twin.
//!
//! Synchronization ([`Dsm::lock`], [`Dsm::unlock`], [`Dsm::barrier`]) is
//! built on MBCF atomics and WRITEs, waiting with SS-Wait
//! ([`Task::wait_word`]). Locks are ticket locks at the lock's home task.
//!
//! One application thread per task uses the heap; the fault thread and
//! the MBCF progress thread are internal.

#![warn(missing_docs)]

mod layout;
pub mod msg;
mod sys;

use layout as L;
use msg::{Range, RangeError, Update, TAG_COPY, TAG_HOME};
use sss_mbcf::{Options, Perm, RemoteAddr, Segment, SegmentInfo, SignalContext, Task};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub use sys::PAGE;

/// Signal handler index the DSM registers for eager invalidations.
pub const INVALIDATE_HANDLER: u32 = 40;
/// Signal handler index the DSM registers for updates (`Update`,
/// `UpdateDirect`).
pub const UPDATE_HANDLER: u32 = 41;

/// Eager WRITEs to one home are combined up to MBCF's default datagram
/// payload: one packet each.
const COMBINE: usize = 1408;
/// Data bytes per update SIGNAL: with its 16-byte header it fits one
/// datagram (signals are not fragmented).
const UPDATE_DATA: usize = 1024;
/// The holder directory has one bit per task.
const MAX_HOLDERS: u32 = 64;

/// Top bit of an `Invalidate` page's directory word: a writer is changing
/// the page (its holders are being invalidated, then its home written).
/// Fetchers wait while it is set; writers take it in turn.
const BUSY: u64 = 1 << 63;

/// `Invalidate` is sequentially consistent through the directory with at
/// most this many tasks (the busy bit takes the last holder bit).
const SC_MAX: u32 = MAX_HOLDERS - 1;

/// Why a DSM operation failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An MBCF operation failed.
    #[error("mbcf: {0}")]
    Mbcf(#[from] sss_mbcf::Error),
    /// A system call failed.
    #[error("system call: {0}")]
    Io(#[from] std::io::Error),
    /// The heap (or a DSM table) is full.
    #[error("out of shared memory: {0}")]
    OutOfMemory(&'static str),
    /// A bad argument.
    #[error("invalid argument: {0}")]
    Invalid(&'static str),
    /// The tasks could not agree on a heap address.
    #[error("no heap address free in every task")]
    NoAddress,
}

/// Consistency protocol of an allocation (seed 001 §3 page attributes).
/// Every protocol gives data-race-free programs (synchronized with the
/// DSM's locks and barriers) the answer of a sequential run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum Protocol {
    /// Single writer, write-through with eager invalidation.
    Invalidate,
    /// Lazy release consistency, multiple writers, home based.
    #[default]
    Ulrc,
    /// SAURC: noted writes go to the home eagerly (combined per packet)
    /// and stay in the local copy; release fences the homes and publishes
    /// write notices, acquire invalidates noticed pages as `Ulrc` does.
    HomeUpdate,
    /// Writes go to the home, which forwards them to every task holding a
    /// copy (a directory of holders per page); no invalidations.
    Update,
    /// Writes go straight from the writer to the home and to every other
    /// task (the copy set, fixed at allocation, is the whole job).
    UpdateDirect,
    /// No copies are kept: [`Dsm::read`] and [`Dsm::write`] go to the
    /// home; pages fetched by plain loads are dropped at every acquire.
    HomeOnly,
}

impl Protocol {
    /// Every protocol, in the order of their wire codes.
    pub const ALL: [Protocol; 6] = [
        Protocol::Ulrc,
        Protocol::Invalidate,
        Protocol::HomeUpdate,
        Protocol::Update,
        Protocol::UpdateDirect,
        Protocol::HomeOnly,
    ];

    /// The `SSS_DSM_PROTOCOL` spelling.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Ulrc => "ulrc",
            Protocol::Invalidate => "invalidate",
            Protocol::HomeUpdate => "home_update",
            Protocol::Update => "update",
            Protocol::UpdateDirect => "update_drct",
            Protocol::HomeOnly => "home_only",
        }
    }

    /// Parses an `SSS_DSM_PROTOCOL` spelling.
    pub fn parse(s: &str) -> Option<Protocol> {
        Self::ALL.into_iter().find(|p| p.name() == s.trim())
    }

    /// Code in range descriptors and the C API (1 = ulrc … 6 = home_only).
    pub fn code(self) -> u32 {
        Self::ALL.iter().position(|p| *p == self).unwrap_or(0) as u32 + 1
    }

    /// The protocol of a code; None for 0 and unknown codes.
    pub fn from_code(c: u32) -> Option<Protocol> {
        Self::ALL.get((c as usize).checked_sub(1)?).copied()
    }

    /// Keeps write notices (acquire invalidates noticed pages).
    fn lazy(self) -> bool {
        matches!(self, Protocol::Ulrc | Protocol::HomeUpdate)
    }
}

/// How writes are recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WriteMode {
    /// The program calls [`Dsm::note_write`] after its stores.
    #[default]
    Note,
    /// Write-protect faults with twins and diffs (unmodified code).
    Trap,
}

/// Where the pages of an allocation live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// Contiguous equal chunks, one per task, in rank order.
    Block,
    /// Blocks of this many pages dealt round-robin over the tasks.
    Cyclic(u32),
    /// The first task to touch a page becomes its home.
    FirstTouch,
    /// Every page at this rank.
    Explicit(u32),
}

/// Tunables, from [`Config::from_env`] or set by hand.
#[derive(Debug, Clone)]
pub struct Config {
    /// Bytes of heap reserved in every task (`SSS_DSM_HEAP`, default 64 GiB;
    /// suffixes K, M, G).
    pub heap: usize,
    /// The protocol of allocations that name none (`SSS_DSM_PROTOCOL=
    /// ulrc|invalidate|home_update|update|update_drct|home_only`).
    pub protocol: Protocol,
    /// How writes are recorded (`SSS_DSM_WRITES=note|trap`).
    pub writes: WriteMode,
    /// Pages fetched after a missing page with the same home, in one READ
    /// (`SSS_DSM_PREFETCH`, default 0).
    pub prefetch: usize,
    /// Fault injection: releasers never wake lock and barrier waiters
    /// (`SSS_DSM_FAULT_NO_WAKEUPS=1`), so every such wait ends by looking
    /// again after [`WAKE_RECHECK`]. For tests of that path.
    pub fault_no_wakeups: bool,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            heap: 64 << 30,
            protocol: Protocol::Ulrc,
            writes: WriteMode::Note,
            prefetch: 0,
            fault_no_wakeups: false,
        }
    }
}

fn parse_size(s: &str) -> Option<usize> {
    let s = s.trim();
    let (num, mul) = match s.chars().last()? {
        'k' | 'K' => (&s[..s.len() - 1], 1 << 10),
        'm' | 'M' => (&s[..s.len() - 1], 1 << 20),
        'g' | 'G' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.trim().parse::<usize>().ok()?.checked_mul(mul)
}

impl Config {
    /// Defaults overridden by `SSS_DSM_HEAP`, `SSS_DSM_PROTOCOL`,
    /// `SSS_DSM_WRITES`, `SSS_DSM_PREFETCH` and
    /// `SSS_DSM_FAULT_NO_WAKEUPS`; unparsable values are ignored.
    pub fn from_env() -> Self {
        let mut c = Self::default();
        if let Some(v) = std::env::var("SSS_DSM_HEAP")
            .ok()
            .and_then(|v| parse_size(&v))
        {
            c.heap = v;
        }
        if let Some(p) = std::env::var("SSS_DSM_PROTOCOL")
            .ok()
            .and_then(|v| Protocol::parse(&v))
        {
            c.protocol = p;
        }
        match std::env::var("SSS_DSM_WRITES").as_deref() {
            Ok("trap") => c.writes = WriteMode::Trap,
            Ok("note") => c.writes = WriteMode::Note,
            _ => {}
        }
        if let Some(v) = std::env::var("SSS_DSM_PREFETCH")
            .ok()
            .and_then(|v| v.trim().parse().ok())
        {
            c.prefetch = std::cmp::min(v, 256);
        }
        if std::env::var("SSS_DSM_FAULT_NO_WAKEUPS").as_deref() == Ok("1") {
            c.fault_no_wakeups = true;
        }
        c
    }
}

/// Counters of one task (what `SSS_STATS=json` prints).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    /// Read (missing-page) faults.
    pub read_faults: u64,
    /// Write faults: missing pages written first, and write-protect faults.
    pub write_faults: u64,
    /// Pages fetched from a home (prefetched ones included).
    pub pages_fetched: u64,
    /// Of those, fetched ahead by prefetch.
    pub pages_prefetched: u64,
    /// Pages diffed against their twin.
    pub diffs: u64,
    /// Messages of written data: MBCF WRITEs to homes, and update
    /// SIGNALs (to homes, forwarded by homes, or sent to copies).
    pub writes: u64,
    /// Bytes of data in those messages.
    pub bytes_sent: u64,
    /// MBCF datagrams sent (udp peers only; shm peers need none).
    pub packets: u64,
    /// `note_write` calls (#CM: consistency-code executions).
    pub notes: u64,
    /// Write notices published.
    pub notices: u64,
    /// Pages dropped by invalidation.
    pub invalidations: u64,
    /// Lock acquisitions.
    pub locks: u64,
    /// Barriers.
    pub barriers: u64,
    /// Nanoseconds in the fault thread resolving faults.
    pub fault_ns: u64,
    /// Nanoseconds in lock, unlock, barrier and write-through.
    pub sync_ns: u64,
    /// Update messages received for this task's copies (`update`,
    /// `update_drct`), applied or not.
    pub updates: u64,
    /// [`Dsm::read`] pieces served by an MBCF READ from a home.
    pub home_reads: u64,
    /// Lock and barrier waits that found their turn by looking again
    /// after [`WAKE_RECHECK`] rather than by their wake-up: the releaser
    /// was slow to ring (descheduled, or its packets retransmitted), or
    /// the wake-up went missing (see [`Dsm::lock`]).
    pub missed_wakeups: u64,
    /// Update and invalidation messages, and allocation descriptors,
    /// dropped as malformed or outside the heap: another task's bug or a
    /// forged datagram.
    pub bad_messages: u64,
}

impl Stats {
    /// One JSON object on one line.
    pub fn to_json(&self, rank: u32) -> String {
        format!(
            "{{\"dsm\":{{\"rank\":{rank},\"read_faults\":{},\"write_faults\":{},\"pages_fetched\":{},\"pages_prefetched\":{},\"diffs\":{},\"writes\":{},\"bytes_sent\":{},\"packets\":{},\"notes\":{},\"notices\":{},\"invalidations\":{},\"locks\":{},\"barriers\":{},\"fault_ns\":{},\"sync_ns\":{},\"updates\":{},\"home_reads\":{},\"missed_wakeups\":{},\"bad_messages\":{}}}}}",
            self.read_faults,
            self.write_faults,
            self.pages_fetched,
            self.pages_prefetched,
            self.diffs,
            self.writes,
            self.bytes_sent,
            self.packets,
            self.notes,
            self.notices,
            self.invalidations,
            self.locks,
            self.barriers,
            self.fault_ns,
            self.sync_ns,
            self.updates,
            self.home_reads,
            self.missed_wakeups,
            self.bad_messages
        )
    }
}

#[derive(Default)]
struct Counters {
    read_faults: AtomicU64,
    write_faults: AtomicU64,
    pages_fetched: AtomicU64,
    pages_prefetched: AtomicU64,
    diffs: AtomicU64,
    writes: AtomicU64,
    bytes_sent: AtomicU64,
    notes: AtomicU64,
    notices: AtomicU64,
    invalidations: AtomicU64,
    locks: AtomicU64,
    barriers: AtomicU64,
    fault_ns: AtomicU64,
    sync_ns: AtomicU64,
    updates: AtomicU64,
    home_reads: AtomicU64,
    missed_wakeups: AtomicU64,
    bad_messages: AtomicU64,
}

/// How long a lock or barrier waiter trusts its wake-up before it looks
/// at the lock's or barrier's counters itself.
pub const WAKE_RECHECK: Duration = Duration::from_millis(5);

fn bump(c: &AtomicU64, n: u64) {
    c.fetch_add(n, Ordering::Relaxed);
}

#[derive(Default)]
struct Placements {
    /// Known ranges by first page.
    ranges: BTreeMap<u64, Range>,
    /// Descriptors read from rank 0 so far.
    known: u64,
    /// First-touch homes learnt.
    ft: HashMap<u64, u32>,
    /// A range with write notices (ulrc, home_update) is known here:
    /// acquires must read other tasks' notices.
    lazy: bool,
}

#[derive(Default)]
struct State {
    /// Pages installed in this task's view.
    present: HashSet<u64>,
    /// Pages written this interval; the twin in trap mode.
    dirty: HashMap<u64, Option<Vec<u8>>>,
    /// Per rank: write notices of that rank already applied.
    seen: Vec<u64>,
    /// Notices this task published.
    published: u64,
    /// Present pages of `HomeOnly` ranges: dropped at every acquire.
    transient: HashSet<u64>,
    /// `Update` pages whose holder bit this task set at the home.
    registered: HashSet<u64>,
    /// Pages another task invalidated while this task was writing them:
    /// kept until this task's release has sent its diff, then dropped.
    stale: HashSet<u64>,
}

/// How an eager write leaves the writer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Via {
    /// MBCF WRITE into the home segment.
    Home,
    /// SIGNAL to the home, which applies it and forwards it to holders.
    Forward,
}

/// Contiguous noted bytes for one home, combined into one packet.
struct Pending {
    via: Via,
    home: u32,
    off: u64,
    data: Vec<u8>,
}

/// Outgoing writes of the application thread (only it takes this lock).
#[derive(Default)]
struct Out {
    /// Noted `Ulrc` ranges (heap offset, length) not yet sent.
    noted: Vec<(u64, u64)>,
    /// The packet being combined.
    pending: Option<Pending>,
    /// Homes written by eager WRITEs since the last release (fenced then).
    homes: HashSet<u32>,
    /// Pages written eagerly to homes since the last release.
    pages: Vec<u64>,
    /// `UpdateDirect` ranges to push to every copy at release.
    direct: Vec<(u64, u64)>,
    /// Forwarded updates sent to homes so far (compared with `UPD_HOME`).
    forwarded: u64,
}

struct Shared {
    task: Task,
    rank: u32,
    size: u32,
    cfg: Config,
    view: sys::Reservation,
    uffd: sys::Uffd,
    home: Segment,
    homes: Vec<SegmentInfo>,
    meta: Segment,
    metas: Vec<SegmentInfo>,
    /// Holder directory: a bit mask of copy holders per page homed here.
    dir: Segment,
    dirs: Vec<SegmentInfo>,
    state: Mutex<State>,
    out: Mutex<Out>,
    place: Mutex<Placements>,
    /// Bumped on every invalidation: a fetch that raced one is redone.
    epoch: AtomicU64,
    /// Invalidation acks expected so far (Invalidate protocol).
    acks_expected: AtomicU64,
    stats: Counters,
    packets0: u64,
}

/// The shared heap of one task. Dropping it (or [`Dsm::finalize`]) stops
/// the fault thread; the heap must not be touched afterwards.
pub struct Dsm {
    shared: Arc<Shared>,
    stop: sys::EventFd,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Dsm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dsm")
            .field("rank", &self.shared.rank)
            .field("base", &self.shared.view.base())
            .field("len", &self.shared.view.len())
            .finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every update of the guarded state is a single insert or take.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn page_of(off: u64) -> u64 {
    off / PAGE as u64
}

impl Dsm {
    /// Collective: creates the heap in every task of `task`'s job.
    pub fn new(task: &Task, cfg: Config) -> Result<Dsm, Error> {
        let heap = cfg.heap.max(PAGE).next_multiple_of(PAGE);
        let wp = cfg.writes == WriteMode::Trap;
        let uffd = sys::Uffd::new(wp)?;
        let view = reserve_everywhere(task, heap)?;
        uffd.register(view.base(), view.len())?;
        // The heap and its directory are large and mostly untouched: not
        // reserved in /dev/shm up front.
        let home = task.alloc_sparse(heap, Perm::ALL)?;
        let homes = task.exchange(&home)?;
        let meta = task.alloc(L::META_BYTES, Perm::ALL)?;
        let metas = task.exchange(&meta)?;
        let dir = task.alloc_sparse(heap / PAGE * 8, Perm::ALL)?;
        let dirs = task.exchange(&dir)?;
        let size = task.size();
        let packets0 = task.stats().packets_sent;
        let shared = Arc::new(Shared {
            task: task.clone(),
            rank: task.rank(),
            size,
            cfg: Config { heap, ..cfg },
            view,
            uffd,
            home,
            homes,
            meta,
            metas,
            dir,
            dirs,
            state: Mutex::new(State {
                seen: vec![0; size as usize],
                ..State::default()
            }),
            out: Mutex::new(Out::default()),
            place: Mutex::new(Placements {
                lazy: cfg.protocol.lazy(),
                ..Placements::default()
            }),
            epoch: AtomicU64::new(0),
            acks_expected: AtomicU64::new(0),
            stats: Counters::default(),
            packets0,
        });
        let weak = Arc::downgrade(&shared);
        task.set_handler(
            INVALIDATE_HANDLER,
            Arc::new(move |ctx: &SignalContext<'_>, payload: &[u8]| {
                if let Some(s) = weak.upgrade() {
                    s.on_invalidate(ctx, payload);
                }
            }),
        )?;
        let weak = Arc::downgrade(&shared);
        task.set_handler(
            UPDATE_HANDLER,
            Arc::new(move |ctx: &SignalContext<'_>, payload: &[u8]| {
                if let Some(s) = weak.upgrade() {
                    s.on_update(ctx, payload);
                }
            }),
        )?;
        let stop = sys::EventFd::new()?;
        let s2 = shared.clone();
        let stop_fd = stop.fd();
        let thread = std::thread::Builder::new()
            .name(format!("sss-dsm-fault-{}", task.rank()))
            .spawn(move || fault_loop(s2, stop_fd))?;
        // Nobody may fault on a peer before every handler is in place.
        task.barrier()?;
        Ok(Dsm {
            shared,
            stop,
            thread: Some(thread),
        })
    }

    /// Collective, with [`Config::from_env`].
    pub fn from_env(task: &Task) -> Result<Dsm, Error> {
        Self::new(task, Config::from_env())
    }

    /// First byte of the heap (equal in every task).
    pub fn base(&self) -> *mut u8 {
        self.shared.view.base() as *mut u8
    }

    /// Bytes reserved.
    pub fn len(&self) -> usize {
        self.shared.view.len()
    }

    /// Never true: a heap has at least one page.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The configuration in force.
    pub fn config(&self) -> &Config {
        &self.shared.cfg
    }

    /// This task's rank.
    pub fn rank(&self) -> u32 {
        self.shared.rank
    }

    /// Tasks in the job.
    pub fn size(&self) -> u32 {
        self.shared.size
    }

    /// G_MALLOC: allocates `len` bytes (whole pages, zeroed) from any
    /// task, with the heap's default protocol ([`Config::protocol`]);
    /// the address is valid in every task. Not collective.
    pub fn malloc(&self, len: usize, placement: Placement) -> Result<*mut u8, Error> {
        self.malloc_with(len, placement, self.shared.cfg.protocol)
    }

    /// [`Dsm::malloc`] with the range's consistency protocol.
    /// `Update` needs at most 64 tasks (one directory bit each).
    pub fn malloc_with(
        &self,
        len: usize,
        placement: Placement,
        protocol: Protocol,
    ) -> Result<*mut u8, Error> {
        self.shared
            .malloc(len, placement, protocol)
            .map(|off| self.at(off))
    }

    /// Collective: rank 0 allocates, every task gets the address.
    pub fn malloc_all(&self, len: usize, placement: Placement) -> Result<*mut u8, Error> {
        self.malloc_all_with(len, placement, self.shared.cfg.protocol)
    }

    /// Collective [`Dsm::malloc_with`].
    pub fn malloc_all_with(
        &self,
        len: usize,
        placement: Placement,
        protocol: Protocol,
    ) -> Result<*mut u8, Error> {
        let s = &self.shared;
        // Rank 0's outcome travels with the address so that every task
        // fails alike.
        let mine = if s.rank == 0 {
            match s.malloc(len, placement, protocol) {
                Ok(off) => off.to_le_bytes().to_vec(),
                Err(e) => {
                    // One byte: whether the heap was short.
                    let short = matches!(e, Error::OutOfMemory(_));
                    s.task.allgather(&[short as u8])?;
                    return Err(e);
                }
            }
        } else {
            Vec::new()
        };
        let all = s.task.allgather(&mine)?;
        let first = all.first().map(Vec::as_slice).unwrap_or_default();
        if first == [1] {
            return Err(Error::OutOfMemory("allocation failed at rank 0"));
        }
        let off = <[u8; 8]>::try_from(first)
            .map(u64::from_le_bytes)
            .map_err(|_| Error::Invalid("allocation failed at rank 0"))?;
        Ok(self.at(off))
    }

    /// Collective: switches the allocation containing `addr` to
    /// `protocol`. Every task's pending writes reach their homes, every
    /// cached copy of the range is dropped and its holder directory
    /// cleared, then a barrier; afterwards the range behaves as if
    /// allocated with `protocol`. Has barrier semantics.
    pub fn set_protocol(&self, addr: *const u8, protocol: Protocol) -> Result<(), Error> {
        let t0 = Instant::now();
        let r = self.shared.set_protocol(addr as usize, protocol);
        bump(&self.shared.stats.sync_ns, t0.elapsed().as_nanos() as u64);
        r
    }

    /// The protocol of the allocation containing `addr` (the default for
    /// heap memory nobody allocated).
    pub fn protocol_of(&self, addr: *const u8) -> Result<Protocol, Error> {
        let s = &self.shared;
        s.proto_of(page_of(s.offset(addr as usize, 1)?))
    }

    /// Reads `buf.len()` bytes of the heap at `addr`. On `HomeOnly`
    /// ranges pages not cached here (every page after an acquire) are
    /// read from their home with MBCF READ, without keeping a copy; on
    /// other ranges this is a plain load of the local copy.
    pub fn read(&self, addr: *const u8, buf: &mut [u8]) -> Result<(), Error> {
        let s = &self.shared;
        let off = s.offset(addr as usize, buf.len())?;
        let mut done = 0usize;
        for (o, l, proto) in s.split_by_range(off, buf.len() as u64)? {
            let dst = &mut buf[done..done + l as usize];
            if proto == Protocol::HomeOnly {
                s.read_home(o, dst)?;
            } else {
                dst.copy_from_slice(&s.view_read(o, l as usize)?);
            }
            done += l as usize;
        }
        Ok(())
    }

    /// Writes `buf` to the heap at `addr`. On `HomeOnly` ranges the bytes
    /// go to their homes (eagerly, combined per packet; visible to others
    /// after this task's next release) and into the local copy if one is
    /// cached; on other ranges this is a plain store followed by
    /// [`Dsm::note_write`].
    pub fn write(&self, addr: *mut u8, buf: &[u8]) -> Result<(), Error> {
        let s = &self.shared;
        let off = s.offset(addr as usize, buf.len())?;
        let mut done = 0usize;
        for (o, l, proto) in s.split_by_range(off, buf.len() as u64)? {
            let src = &buf[done..done + l as usize];
            if proto == Protocol::HomeOnly {
                s.write_home(o, src)?;
            } else {
                s.view_write(o, src)?;
                self.note_write(self.at(o), l as usize)?;
            }
            done += l as usize;
        }
        Ok(())
    }

    fn at(&self, off: u64) -> *mut u8 {
        (self.shared.view.base() + off as usize) as *mut u8
    }

    /// Records that `[addr, addr+len)` of the heap was written by plain
    /// stores (the code sequence a compiler emits after stores). What
    /// happens depends on each range's protocol: `Ulrc` keeps the range
    /// for the next release; `Invalidate` writes it through and drops
    /// other copies before returning; `HomeUpdate`, `HomeOnly` and
    /// `UpdateDirect` send it to the home now (combined per packet),
    /// `Update` sends it through the home to every copy holder. In trap
    /// mode it only checks the range.
    pub fn note_write(&self, addr: *const u8, len: usize) -> Result<(), Error> {
        let s = &self.shared;
        let off = s.offset(addr as usize, len)?;
        if s.cfg.writes == WriteMode::Trap {
            // Write protection records the stores already.
            return Ok(());
        }
        bump(&s.stats.notes, 1);
        if len == 0 {
            return Ok(());
        }
        for (o, l, proto) in s.split_by_range(off, len as u64)? {
            match proto {
                Protocol::Ulrc => lock(&s.out).noted.push((o, l)),
                Protocol::Invalidate => {
                    let t0 = Instant::now();
                    let data = s.view_read(o, l as usize)?;
                    s.write_sc(o, data)?;
                    bump(&s.stats.sync_ns, t0.elapsed().as_nanos() as u64);
                }
                Protocol::HomeUpdate | Protocol::HomeOnly => s.eager(o, l, Via::Home)?,
                Protocol::UpdateDirect => {
                    s.eager(o, l, Via::Home)?;
                    lock(&s.out).direct.push((o, l));
                }
                Protocol::Update => s.eager(o, l, Via::Forward)?,
            }
        }
        Ok(())
    }

    /// Store helper: writes `value` at `addr` (inside the heap, aligned
    /// for T) and notes it.
    // Safe for any `addr`: it is checked to lie in the heap view, which is
    // mapped while `self` lives.
    #[allow(clippy::not_unsafe_ptr_arg_deref)]
    pub fn store<T: Copy>(&self, addr: *mut T, value: T) -> Result<(), Error> {
        let n = std::mem::size_of::<T>();
        self.shared.offset(addr as usize, n)?;
        if (addr as usize) % std::mem::align_of::<T>() != 0 {
            return Err(Error::Invalid("misaligned store"));
        }
        #[allow(unsafe_code)]
        // SAFETY: `offset` checked that the T lies inside the heap view,
        // which this Dsm keeps reserved, and it is aligned (checked
        // above); T is Copy, plain data.
        unsafe {
            sys::store(addr, value)
        };
        self.note_write(addr as *const u8, n)
    }

    /// Acquires lock `id` (< 256): a ticket lock at task `id % size`, then
    /// acquire semantics (pages others wrote are invalidated). A waiter
    /// leaves a slot at the lock's home for the releaser to ring; it also
    /// looks at the ticket being served every [`WAKE_RECHECK`], so a
    /// wake-up that goes missing delays it and never hangs it
    /// ([`Stats::missed_wakeups`] counts those).
    pub fn lock(&self, id: u32) -> Result<(), Error> {
        let t0 = Instant::now();
        let r = self.shared.lock(id);
        bump(&self.shared.stats.sync_ns, t0.elapsed().as_nanos() as u64);
        r
    }

    /// Releases lock `id`: release semantics (this task's writes reach
    /// their homes first), then hands the lock to the next ticket.
    pub fn unlock(&self, id: u32) -> Result<(), Error> {
        let t0 = Instant::now();
        let r = self.shared.unlock(id);
        bump(&self.shared.stats.sync_ns, t0.elapsed().as_nanos() as u64);
        r
    }

    /// Barrier of all tasks with release and acquire semantics.
    pub fn barrier(&self) -> Result<(), Error> {
        let t0 = Instant::now();
        let r = self.shared.barrier();
        bump(&self.shared.stats.sync_ns, t0.elapsed().as_nanos() as u64);
        r
    }

    /// Counters so far.
    pub fn stats(&self) -> Stats {
        let c = &self.shared.stats;
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        Stats {
            read_faults: g(&c.read_faults),
            write_faults: g(&c.write_faults),
            pages_fetched: g(&c.pages_fetched),
            pages_prefetched: g(&c.pages_prefetched),
            diffs: g(&c.diffs),
            writes: g(&c.writes),
            bytes_sent: g(&c.bytes_sent),
            packets: self
                .shared
                .task
                .stats()
                .packets_sent
                .saturating_sub(self.shared.packets0),
            notes: g(&c.notes),
            notices: g(&c.notices),
            invalidations: g(&c.invalidations),
            locks: g(&c.locks),
            barriers: g(&c.barriers),
            fault_ns: g(&c.fault_ns),
            sync_ns: g(&c.sync_ns),
            updates: g(&c.updates),
            home_reads: g(&c.home_reads),
            missed_wakeups: g(&c.missed_wakeups),
            bad_messages: g(&c.bad_messages),
        }
    }

    /// Collective: a final barrier (so no peer still reads this task's
    /// pages), prints the statistics when `SSS_STATS=json` (one line on
    /// stderr), stops the fault thread.
    pub fn finalize(mut self) -> Result<Stats, Error> {
        let r = self.barrier();
        let st = self.stats();
        if std::env::var("SSS_STATS").as_deref() == Ok("json") {
            eprintln!("{}", st.to_json(self.shared.rank));
        }
        // The bootstrap barrier needs no page server: after it nobody
        // touches our segments.
        let r2 = self.shared.task.barrier();
        self.shutdown();
        r?;
        r2?;
        Ok(st)
    }

    fn shutdown(&mut self) {
        if let Some(t) = self.thread.take() {
            self.stop.notify();
            let _ = t.join();
        }
    }
}

impl Drop for Dsm {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Reserves `len` bytes at one address in every task: rank 0 picks, the
/// others map exactly there; on a clash rank 0 picks again.
fn reserve_everywhere(task: &Task, len: usize) -> Result<sys::Reservation, Error> {
    let mut keep = Vec::new();
    for _ in 0..4 {
        let mine = if task.rank() == 0 {
            Some(sys::Reservation::new(len, None)?)
        } else {
            None
        };
        let prop = mine
            .as_ref()
            .map(|r| (r.base() as u64).to_le_bytes().to_vec())
            .unwrap_or_default();
        let all = task.allgather(&prop)?;
        let at = all
            .first()
            .and_then(|b| b.get(..8))
            .and_then(|b| b.try_into().ok())
            .map(u64::from_le_bytes)
            .ok_or(Error::NoAddress)? as usize;
        let r = match mine {
            Some(r) => Ok(r),
            None => sys::Reservation::new(len, Some(at)),
        };
        let ok = task.allgather(&[r.is_ok() as u8])?;
        if ok.iter().all(|b| b.first() == Some(&1)) {
            return r.map_err(Error::Io);
        }
        // Keep rank 0's failed pick mapped so it is not chosen again.
        if let Ok(r) = r {
            keep.push(r);
        }
    }
    Err(Error::NoAddress)
}

impl Shared {
    fn meta_at(&self, rank: u32, off: usize) -> Result<RemoteAddr, Error> {
        self.metas
            .get(rank as usize)
            .map(|m| m.at(off as u64))
            .ok_or(Error::Invalid("no such rank"))
    }

    /// The word at `off` (a `layout` constant, or a notice-log slot) of
    /// this task's metadata segment.
    fn local_word(&self, off: usize) -> &AtomicU64 {
        // Offsets are this module's constants, never input: a bad one is a
        // bug, stopped here before it becomes a stray pointer.
        assert!(off % 8 == 0 && off + 8 <= L::META_BYTES.min(self.meta.info().len as usize));
        #[allow(unsafe_code)]
        // SAFETY: aligned and inside the metadata segment (asserted
        // above), which `self` keeps mapped as long as the returned borrow;
        // its words are only ever accessed atomically (here and by MBCF).
        let w = unsafe { sys::word(self.meta.as_ptr() as usize + off) };
        w
    }

    /// `len` bytes of this task's heap view at heap offset `off`.
    fn view_read(&self, off: u64, len: usize) -> Result<Vec<u8>, Error> {
        let at = span(off, len, self.view.len() as u64)?;
        #[allow(unsafe_code)]
        // SAFETY: inside the view (checked by `span`), which `self` keeps
        // reserved; a missing page faults and the fault thread fetches it.
        let v = unsafe { sys::copy_out(self.view.base() + at, len) };
        Ok(v)
    }

    /// Writes `data` into this task's heap view at heap offset `off`.
    fn view_write(&self, off: u64, data: &[u8]) -> Result<(), Error> {
        let at = span(off, data.len(), self.view.len() as u64)?;
        #[allow(unsafe_code)]
        // SAFETY: inside the view (checked by `span`), which `self` keeps
        // reserved; heap bytes are plain data.
        unsafe {
            sys::copy_in(self.view.base() + at, data)
        };
        Ok(())
    }

    /// `len` bytes of this task's home segment at heap offset `off`.
    fn home_read(&self, off: u64, len: usize) -> Result<Vec<u8>, Error> {
        let at = span(off, len, self.home.info().len)?;
        #[allow(unsafe_code)]
        // SAFETY: inside the home segment (checked by `span`), mapped as
        // long as `self`; peers write it only with MBCF, as plain bytes.
        let v = unsafe { sys::copy_out(self.home.as_ptr() as usize + at, len) };
        Ok(v)
    }

    /// Writes `data` into this task's home segment at heap offset `off`.
    fn home_write(&self, off: u64, data: &[u8]) -> Result<(), Error> {
        let at = span(off, data.len(), self.home.info().len)?;
        #[allow(unsafe_code)]
        // SAFETY: inside the home segment (checked by `span`), mapped as
        // long as `self`; plain bytes.
        unsafe {
            sys::copy_in(self.home.as_ptr() as usize + at, data)
        };
        Ok(())
    }

    fn offset(&self, addr: usize, len: usize) -> Result<u64, Error> {
        let base = self.view.base();
        if addr < base
            || addr
                .checked_add(len)
                .is_none_or(|e| e > base + self.view.len())
        {
            return Err(Error::Invalid("address outside the shared heap"));
        }
        Ok((addr - base) as u64)
    }

    fn fetch_add(&self, at: RemoteAddr, v: u64) -> Result<u64, Error> {
        Ok(self
            .task
            .fetch_add(at, v, Options::default())?
            .wait_value()?)
    }

    fn malloc(&self, len: usize, placement: Placement, protocol: Protocol) -> Result<u64, Error> {
        if protocol == Protocol::Update && self.size > MAX_HOLDERS {
            return Err(Error::Invalid(
                "the update protocol supports at most 64 tasks",
            ));
        }
        if let Placement::Explicit(r) = placement {
            if r >= self.size {
                return Err(Error::Invalid("explicit home outside the job"));
            }
        }
        let pages = len.max(1).div_ceil(PAGE) as u64;
        let heap = self.view.len() as u64;
        if pages > heap / PAGE as u64 {
            return Err(Error::OutOfMemory("request larger than the heap"));
        }
        let off = self.take(L::HEAP_BUMP, pages * PAGE as u64, heap, "heap exhausted")?;
        let ft = if placement == Placement::FirstTouch {
            let full = "first-touch directory full";
            self.take(L::FT_BUMP, pages, L::FT_WORDS as u64, full)?
        } else {
            0
        };
        let idx = self.take(
            L::RANGE_COUNT,
            1,
            L::MAX_RANGES as u64,
            "too many allocations",
        )?;
        let r = Range {
            start: page_of(off),
            pages,
            placement,
            ft,
            protocol,
            idx,
        };
        let at = self.meta_at(0, L::RANGES + idx as usize * L::RANGE_BYTES)?;
        // Status return: the descriptor is in place before the address is
        // handed out, so any task that learns it can find its placement.
        self.task
            .write(at, &r.encode(), Options::status())?
            .wait()?;
        let mut p = lock(&self.place);
        p.lazy |= protocol.lazy();
        p.ranges.insert(r.start, r);
        Ok(off)
    }

    /// Takes `n` from the counter at `word` of rank 0's metadata, which
    /// never passes `limit`: a request that does not fit takes nothing
    /// (the heap stays usable) and fails with `full`.
    fn take(&self, word: usize, n: u64, limit: u64, full: &'static str) -> Result<u64, Error> {
        let at = self.meta_at(0, word)?;
        let mut old = self.fetch_add(at, 0)?;
        loop {
            let new = old
                .checked_add(n)
                .filter(|&e| e <= limit)
                .ok_or(Error::OutOfMemory(full))?;
            let seen = self
                .task
                .cas(at, old, new, Options::default())?
                .wait_value()?;
            if seen == old {
                return Ok(old);
            }
            old = seen;
        }
    }

    /// Reads descriptors rank 0 holds that this task has not seen.
    fn refresh_ranges(&self) -> Result<(), Error> {
        let count = self.fetch_add(self.meta_at(0, L::RANGE_COUNT)?, 0)?;
        let known = lock(&self.place).known;
        let count = count.min(L::MAX_RANGES as u64);
        if count <= known {
            return Ok(());
        }
        let at = self.meta_at(0, L::RANGES + known as usize * L::RANGE_BYTES)?;
        let n = (count - known) as usize;
        let data = self
            .task
            .read(at, n * L::RANGE_BYTES, Options::default())?
            .wait_data()?;
        let mut p = lock(&self.place);
        let mut done = known;
        for c in data.chunks_exact(L::RANGE_BYTES) {
            // A descriptor still being written ends what we take this time.
            let r = match Range::decode(c, done, self.heap_pages(), self.size) {
                Ok(r) => r,
                Err(RangeError::Pending) => break,
                Err(RangeError::Invalid) => {
                    self.bad_message(0, "allocation descriptor");
                    break;
                }
            };
            p.lazy |= r.protocol.lazy();
            p.ranges.insert(r.start, r);
            done += 1;
        }
        p.known = p.known.max(done);
        Ok(())
    }

    fn find_range(&self, page: u64) -> Option<Range> {
        let p = lock(&self.place);
        let (_, r) = p.ranges.range(..=page).next_back()?;
        (page < r.start + r.pages).then_some(*r)
    }

    /// The allocation containing `page`, learning new ones from rank 0.
    fn range_of(&self, page: u64) -> Result<Option<Range>, Error> {
        if let Some(r) = self.find_range(page) {
            return Ok(Some(r));
        }
        self.refresh_ranges()?;
        Ok(self.find_range(page))
    }

    /// The protocol of `page` (the default for memory nobody allocated).
    fn proto_of(&self, page: u64) -> Result<Protocol, Error> {
        Ok(self
            .range_of(page)?
            .map_or(self.cfg.protocol, |r| r.protocol))
    }

    /// Cuts `[off, off+len)` where the allocation changes: pieces with
    /// their protocol.
    fn split_by_range(&self, off: u64, len: u64) -> Result<Vec<(u64, u64, Protocol)>, Error> {
        let end = off + len;
        let mut v = Vec::with_capacity(1);
        let mut at = off;
        while at < end {
            let (stop, proto) = match self.range_of(page_of(at))? {
                Some(r) => (((r.start + r.pages) * PAGE as u64).min(end), r.protocol),
                None => (end, self.cfg.protocol),
            };
            v.push((at, stop - at, proto));
            at = stop;
        }
        Ok(v)
    }

    /// The home of heap page `page` (claims it under first touch).
    fn home_of(&self, page: u64) -> Result<u32, Error> {
        let Some(r) = self.range_of(page)? else {
            // Memory nobody allocated: rank 0 serves zeros.
            return Ok(0);
        };
        let rel = page - r.start;
        let n = self.size as u64;
        Ok(match r.placement {
            Placement::Block => (rel / r.pages.div_ceil(n)) as u32,
            Placement::Cyclic(b) => ((rel / b as u64) % n) as u32,
            Placement::Explicit(k) => k,
            Placement::FirstTouch => {
                if let Some(h) = lock(&self.place).ft.get(&page) {
                    return Ok(*h);
                }
                let at = self.meta_at(0, L::FT + (r.ft + rel) as usize * 8)?;
                let old = self
                    .task
                    .cas(at, 0, self.rank as u64 + 1, Options::default())?
                    .wait_value()?;
                let h = if old == 0 { self.rank } else { old as u32 - 1 };
                lock(&self.place).ft.insert(page, h);
                h
            }
        })
    }

    /// Handles one fault from the fault thread.
    fn handle_fault(&self, f: sys::Fault) -> Result<(), Error> {
        let t0 = Instant::now();
        let base = self.view.base();
        let page = page_of((f.addr - base) as u64);
        let paddr = base + page as usize * PAGE;
        let trap = self.cfg.writes == WriteMode::Trap;
        if f.wp {
            bump(&self.stats.write_faults, 1);
            let mut st = lock(&self.state);
            if !st.present.contains(&page) {
                // Dropped meanwhile (reading it here would fault on this
                // very thread): let the writer retry as a missing fault.
                drop(st);
                self.uffd.wake(paddr, PAGE)?;
            } else {
                // Present and protected: reading it cannot fault.
                if let std::collections::hash_map::Entry::Vacant(e) = st.dirty.entry(page) {
                    e.insert(Some(self.view_read(page * PAGE as u64, PAGE)?));
                }
                drop(st);
                self.uffd.protect(paddr, PAGE, false)?;
            }
        } else {
            bump(
                if f.write {
                    &self.stats.write_faults
                } else {
                    &self.stats.read_faults
                },
                1,
            );
            self.fetch_install(page, f.write && trap)?;
        }
        bump(&self.stats.fault_ns, t0.elapsed().as_nanos() as u64);
        Ok(())
    }

    /// Fetches `page` (and prefetch pages) from the home and installs it.
    /// With `twin`, the page is installed writable and its twin kept.
    fn fetch_install(&self, page: u64, twin: bool) -> Result<(), Error> {
        let base = self.view.base();
        let last = (self.view.len() / PAGE) as u64;
        let home = self.home_of(page)?;
        let proto = self.proto_of(page)?;
        let tracked =
            proto == Protocol::Update || (proto == Protocol::Invalidate && self.size <= SC_MAX);
        if tracked {
            // Before reading the page: updates (invalidations) the home
            // (a writer) applies after this reach this task; earlier ones
            // are in the data.
            self.register(page, home)?;
        }
        // Prefetch: following pages of the same home, not present, within
        // the same allocation (not for pages in the holder directory: each
        // would need its own registration round trip first).
        let mut n = 1u64;
        if self.cfg.prefetch > 0 && !tracked {
            let r_end = self
                .find_range(page)
                .map_or(page + 1, |r| r.start + r.pages);
            while n <= self.cfg.prefetch as u64
                && page + n < r_end.min(last)
                && !lock(&self.state).present.contains(&(page + n))
                && self.home_of(page + n)? == home
            {
                n += 1;
            }
        }
        let sc = proto == Protocol::Invalidate && tracked && self.size > 1;
        loop {
            let epoch = self.epoch.load(Ordering::Acquire);
            if sc {
                // Registered before this look: a writer that takes the
                // page after it sees our bit and invalidates (the epoch
                // then sends us round again).
                self.wait_not_busy(page, home)?;
            }
            let off = page * PAGE as u64;
            let len = n as usize * PAGE;
            let data = if home == self.rank {
                self.home_read(off, len)?
            } else {
                let at = self
                    .homes
                    .get(home as usize)
                    .ok_or(Error::Invalid("no such home"))?
                    .at(off);
                self.task.read(at, len, Options::default())?.wait_data()?
            };
            if data.len() != len {
                return Err(Error::Invalid("short read from home"));
            }
            let mut st = lock(&self.state);
            if self.epoch.load(Ordering::Acquire) != epoch {
                // An invalidation raced the fetch: the data may be older
                // than what the invalidation asked for.
                continue;
            }
            bump(&self.stats.pages_fetched, 1);
            let wp = self.cfg.writes == WriteMode::Trap;
            for i in 0..n {
                let p = page + i;
                let chunk = &data[i as usize * PAGE..(i as usize + 1) * PAGE];
                if i > 0 && st.present.contains(&p) {
                    continue;
                }
                let install_wp = wp && !(twin && i == 0);
                let fresh = self
                    .uffd
                    .copy(base + p as usize * PAGE, chunk, install_wp)?;
                if i == 0 && !fresh {
                    self.uffd.wake(base + p as usize * PAGE, PAGE)?;
                }
                if i > 0 && fresh {
                    bump(&self.stats.pages_fetched, 1);
                    bump(&self.stats.pages_prefetched, 1);
                }
                st.present.insert(p);
                if proto == Protocol::HomeOnly {
                    st.transient.insert(p);
                }
                if i == 0 && twin {
                    st.dirty.entry(p).or_insert_with(|| Some(chunk.to_vec()));
                }
            }
            return Ok(());
        }
    }

    /// Turns this interval's writes into runs with their bytes (noted
    /// ranges, diffs). Each dirty page is protected, copied and leaves
    /// `dirty` under the state lock: an update or invalidation handler
    /// sees it either still dirty (and updates the twin) or clean and
    /// protected (and may drop it: the bytes to send are copied already).
    fn collect_runs(&self) -> Result<Vec<Run>, Error> {
        let noted = std::mem::take(&mut lock(&self.out).noted);
        let base = self.view.base();
        let mut runs: Vec<Run> = noted
            .into_iter()
            .map(|(o, l)| Ok((o, self.view_read(o, l as usize)?)))
            .collect::<Result<_, Error>>()?;
        let pages: Vec<u64> = lock(&self.state).dirty.keys().copied().collect();
        for page in pages {
            let paddr = base + page as usize * PAGE;
            let (cur, twin) = {
                let mut st = lock(&self.state);
                let Some(Some(twin)) = st.dirty.remove(&page) else {
                    continue;
                };
                // Protect first so the next write of the page starts a new
                // twin; this thread is the only writer, so nothing is
                // missed. A dirty page is present: the copy cannot fault.
                self.uffd.protect(paddr, PAGE, true)?;
                (self.view_read(page * PAGE as u64, PAGE)?, twin)
            };
            bump(&self.stats.diffs, 1);
            let off0 = page * PAGE as u64;
            // Word granularity (as TreadMarks): programs are data-race
            // free at 8-byte words, and whole words keep runs long.
            let same = |w: usize| cur[w * 8..w * 8 + 8] == twin[w * 8..w * 8 + 8];
            let words = PAGE / 8;
            let mut i = 0;
            while i < words {
                if same(i) {
                    i += 1;
                    continue;
                }
                let j = (i..words).find(|&j| same(j)).unwrap_or(words);
                runs.push((off0 + i as u64 * 8, cur[i * 8..j * 8].to_vec()));
                i = j;
            }
        }
        Ok(runs)
    }

    /// Sends `runs` to their homes: runs are sorted and merged, then cut
    /// where the home changes; each piece is one MBCF WRITE. Waits until
    /// every home applied them. Returns the pages.
    fn send_runs(&self, runs: Vec<Run>) -> Result<Vec<u64>, Error> {
        if runs.is_empty() {
            return Ok(Vec::new());
        }
        let mut pages = Vec::new();
        let mut homes_hit = HashSet::new();
        for (o, data) in merge_runs(runs) {
            let end = o + data.len() as u64;
            let mut start = o;
            while start < end {
                let home = self.home_of(page_of(start))?;
                let mut stop = ((page_of(start) + 1) * PAGE as u64).min(end);
                pages.push(page_of(start));
                while stop < end && self.home_of(page_of(stop))? == home {
                    pages.push(page_of(stop));
                    stop = ((page_of(stop) + 1) * PAGE as u64).min(end);
                }
                let piece = &data[(start - o) as usize..(stop - o) as usize];
                if home == self.rank {
                    self.home_write(start, piece)?;
                } else {
                    let at = self
                        .homes
                        .get(home as usize)
                        .ok_or(Error::Invalid("no such home"))?
                        .at(start);
                    self.task.write(at, piece, Options::default())?;
                    homes_hit.insert(home);
                }
                bump(&self.stats.writes, 1);
                bump(&self.stats.bytes_sent, piece.len() as u64);
                start = stop;
            }
        }
        for h in homes_hit {
            self.task.fence(h)?;
        }
        pages.dedup();
        Ok(pages)
    }

    /// Release: this interval's writes reach their homes and, for the
    /// update protocols, every copy; then pages of `Ulrc` and
    /// `HomeUpdate` ranges are published as write notices and (trap mode)
    /// other copies of `Invalidate` pages are dropped.
    fn release(&self) -> Result<(), Error> {
        self.flush_pending()?;
        let mut home_runs = Vec::new();
        let mut fwd_runs = Vec::new();
        // Noted UpdateDirect ranges went home already; copies get them now.
        let mut direct: Vec<Run> = std::mem::take(&mut lock(&self.out).direct)
            .into_iter()
            .map(|(o, l)| Ok((o, self.view_read(o, l as usize)?)))
            .collect::<Result<_, Error>>()?;
        // Noted runs were cut at allocations, diffs lie in one page: each
        // run has one protocol.
        for run in self.collect_runs()? {
            match self.proto_of(page_of(run.0))? {
                // Trapped writes of Update ranges: through the home.
                Protocol::Update => fwd_runs.push(run),
                Protocol::UpdateDirect => {
                    direct.push(run.clone());
                    home_runs.push(run);
                }
                _ => home_runs.push(run),
            }
        }
        let mut pages = self.send_runs(home_runs)?;
        for (o, data) in fwd_runs {
            self.eager_data(o, &data, Via::Forward)?;
        }
        self.flush_pending()?;
        let (homes, eager_pages) = {
            let mut out = lock(&self.out);
            (
                std::mem::take(&mut out.homes),
                std::mem::take(&mut out.pages),
            )
        };
        for h in homes {
            self.task.fence(h)?;
        }
        pages.extend(eager_pages);
        pages.sort_unstable();
        pages.dedup();
        let mut notices = Vec::new();
        let mut invalidate = Vec::new();
        for p in pages {
            match self.proto_of(p)? {
                Protocol::Ulrc | Protocol::HomeUpdate => notices.push(p),
                Protocol::Invalidate => invalidate.push(p),
                _ => {}
            }
        }
        // Trapped Invalidate writes: the other copies go before the
        // release completes (noted writes were written through already).
        self.invalidate_others(&invalidate)?;
        // Homes have every byte (fenced above), so a copy that misses a
        // direct update while being fetched reads it from the home.
        self.push_direct(direct)?;
        self.wait_updates()?;
        if !notices.is_empty() {
            let mut st = lock(&self.state);
            for p in &notices {
                let slot = (st.published % L::LOG_CAP as u64) as usize;
                self.local_word(L::LOG + slot * 8)
                    .store(*p, Ordering::Relaxed);
                st.published += 1;
            }
            // Entries before the count: readers READ the count first.
            self.local_word(L::NOTICES)
                .store(st.published, Ordering::Release);
            bump(&self.stats.notices, notices.len() as u64);
        }
        // Diffs are out: pages invalidated while being written go now.
        let mut st = lock(&self.state);
        if !st.stale.is_empty() {
            let stale: Vec<u64> = st.stale.drain().collect();
            self.discard(&mut st, &stale)?;
        }
        Ok(())
    }

    /// Acquire: pulls every other task's new write notices (when a range
    /// with notices is known here) and drops this task's copies of those
    /// pages, and drops every cached `HomeOnly` page, so the next read
    /// faults.
    fn acquire(&self) -> Result<(), Error> {
        // Writes of this task not yet released would be lost with the page.
        self.release()?;
        let mut drop_all = false;
        let mut pages = Vec::new();
        let lazy = lock(&self.place).lazy;
        for r in 0..self.size {
            if r == self.rank || !lazy {
                continue;
            }
            let count = self.fetch_add(self.meta_at(r, L::NOTICES)?, 0)?;
            let seen = lock(&self.state).seen[r as usize];
            if count <= seen {
                continue;
            }
            if count - seen > L::LOG_CAP as u64 {
                drop_all = true;
            } else {
                let mut i = seen;
                while i < count {
                    let slot = (i % L::LOG_CAP as u64) as usize;
                    let n = ((count - i) as usize).min(L::LOG_CAP - slot).min(8192);
                    let at = self.meta_at(r, L::LOG + slot * 8)?;
                    let d = self.task.read(at, n * 8, Options::default())?.wait_data()?;
                    pages.extend(
                        d.chunks_exact(8)
                            .filter_map(|c| c.try_into().ok().map(u64::from_le_bytes)),
                    );
                    i += n as u64;
                }
            }
            lock(&self.state).seen[r as usize] = count;
        }
        let mut st = lock(&self.state);
        if drop_all {
            pages = st.present.iter().copied().collect();
        }
        pages.extend(st.transient.iter().copied());
        self.discard(&mut st, &pages)
    }

    /// Drops present pages among `pages` (state lock held).
    fn discard(&self, st: &mut State, pages: &[u64]) -> Result<(), Error> {
        let base = self.view.base();
        let mut any = false;
        for &p in pages {
            if st.present.remove(&p) {
                st.transient.remove(&p);
                self.view.discard(base + p as usize * PAGE, PAGE)?;
                bump(&self.stats.invalidations, 1);
                any = true;
            }
        }
        if any {
            self.epoch.fetch_add(1, Ordering::AcqRel);
        }
        Ok(())
    }

    /// Sends `[off, off+len)` of the view eagerly: pieces cut where the
    /// home changes (and, for `Forward`, at pages and `UPDATE_DATA`
    /// bytes), combined with the pending packet when contiguous.
    fn eager(&self, off: u64, len: u64, via: Via) -> Result<(), Error> {
        let data = self.view_read(off, len as usize)?;
        self.eager_data(off, &data, via)
    }

    fn eager_data(&self, off: u64, data: &[u8], via: Via) -> Result<(), Error> {
        let end = off + data.len() as u64;
        let mut start = off;
        while start < end {
            let home = self.home_of(page_of(start))?;
            let mut stop = ((page_of(start) + 1) * PAGE as u64).min(end);
            if via == Via::Home {
                while stop < end && self.home_of(page_of(stop))? == home {
                    stop = ((page_of(stop) + 1) * PAGE as u64).min(end);
                }
                lock(&self.out)
                    .pages
                    .extend(page_of(start)..=page_of(stop - 1));
            } else {
                stop = stop.min(start + UPDATE_DATA as u64);
            }
            let piece = &data[(start - off) as usize..(stop - off) as usize];
            self.push_eager(via, home, start, piece)?;
            start = stop;
        }
        Ok(())
    }

    /// Appends to the pending packet or sends it and starts another.
    fn push_eager(&self, via: Via, home: u32, off: u64, data: &[u8]) -> Result<(), Error> {
        let limit = match via {
            Via::Home => COMBINE,
            Via::Forward => UPDATE_DATA,
        };
        let mut out = lock(&self.out);
        if let Some(p) = out.pending.as_mut() {
            let p_end = p.off + p.data.len() as u64;
            if p.via == via
                && p.home == home
                && p_end == off
                && p.data.len() + data.len() <= limit
                && (via == Via::Home || page_of(p.off) == page_of(off + data.len() as u64 - 1))
            {
                p.data.extend_from_slice(data);
                return Ok(());
            }
        }
        if let Some(p) = out.pending.take() {
            self.send_eager(&mut out, p)?;
        }
        let p = Pending {
            via,
            home,
            off,
            data: data.to_vec(),
        };
        if data.len() >= limit {
            self.send_eager(&mut out, p)
        } else {
            out.pending = Some(p);
            Ok(())
        }
    }

    /// Sends the pending packet, if any.
    fn flush_pending(&self) -> Result<(), Error> {
        let mut out = lock(&self.out);
        match out.pending.take() {
            Some(p) => self.send_eager(&mut out, p),
            None => Ok(()),
        }
    }

    /// One eager message: a WRITE to the home, or an update SIGNAL to it
    /// (applied at once when this task is the home).
    fn send_eager(&self, out: &mut Out, p: Pending) -> Result<(), Error> {
        bump(&self.stats.writes, 1);
        bump(&self.stats.bytes_sent, p.data.len() as u64);
        match p.via {
            Via::Home if p.home == self.rank => {
                self.home_write(p.off, &p.data)?;
            }
            Via::Home => {
                let at = self
                    .homes
                    .get(p.home as usize)
                    .ok_or(Error::Invalid("no such home"))?
                    .at(p.off);
                self.task.write(at, &p.data, Options::default())?;
                out.homes.insert(p.home);
            }
            Via::Forward => {
                out.forwarded += 1;
                if p.home == self.rank {
                    self.forward(&self.task, self.rank, p.off, &p.data)?;
                } else {
                    let msg = Update {
                        tag: TAG_HOME,
                        writer: self.rank,
                        off: p.off,
                        data: &p.data,
                    }
                    .encode();
                    self.task
                        .signal(p.home, UPDATE_HANDLER, &msg, Options::default())?;
                }
            }
        }
        Ok(())
    }

    /// At the home of an `Update` page: applies `data` (within one page)
    /// written by `writer`, forwards it to every other holder, and tells
    /// the writer how many acknowledgements to expect.
    fn forward(&self, task: &Task, writer: u32, off: u64, data: &[u8]) -> Result<(), Error> {
        // Checked against the home segment: `off` came off the network.
        self.home_write(off, data)?;
        // Pairs with the fence after a holder registers: either the
        // holder's READ sees these bytes or this load sees its bit.
        std::sync::atomic::fence(Ordering::SeqCst);
        let page = page_of(off);
        let mask = self.dir_word(page)?.load(Ordering::SeqCst);
        let mut sent = 0u64;
        let mut msg = Vec::new();
        for r in 0..self.size.min(MAX_HOLDERS) {
            if mask & (1 << r) == 0 || r == writer {
                continue;
            }
            if r == self.rank {
                self.apply_copy(off, data)?;
                continue;
            }
            if msg.is_empty() {
                msg = Update {
                    tag: TAG_COPY,
                    writer,
                    off,
                    data,
                }
                .encode();
            }
            task.signal(r, UPDATE_HANDLER, &msg, Options::default())?;
            bump(&self.stats.writes, 1);
            bump(&self.stats.bytes_sent, data.len() as u64);
            sent += 1;
        }
        if writer == self.rank {
            self.local_word(L::UPD_WANT)
                .fetch_add(sent, Ordering::AcqRel);
            self.local_word(L::UPD_HOME).fetch_add(1, Ordering::AcqRel);
        } else {
            // Same destination: WANT is applied before HOME.
            task.fetch_add(self.meta_at(writer, L::UPD_WANT)?, sent, Options::default())?;
            task.fetch_add(self.meta_at(writer, L::UPD_HOME)?, 1, Options::default())?;
        }
        Ok(())
    }

    /// At a copy holder: applies an update of `data` (within one page) to
    /// the local copy. A page not present bumps the epoch instead, so a
    /// fetch racing this update reads the page again (the home has the
    /// bytes by now). In trap mode a clean page is write-protected and is
    /// dropped instead; a page with a twin gets the bytes in both, so its
    /// diff does not claim them.
    fn apply_copy(&self, off: u64, data: &[u8]) -> Result<(), Error> {
        let page = page_of(off);
        let mut st = lock(&self.state);
        if !st.present.contains(&page) {
            self.epoch.fetch_add(1, Ordering::AcqRel);
            return Ok(());
        }
        let in_page = (off - page * PAGE as u64) as usize;
        match st.dirty.get_mut(&page) {
            Some(Some(twin)) => {
                if let Some(t) = twin.get_mut(in_page..in_page + data.len()) {
                    t.copy_from_slice(data);
                }
                self.view_write(off, data)
            }
            _ if self.cfg.writes == WriteMode::Trap => self.discard(&mut st, &[page]),
            _ => self.view_write(off, data),
        }
    }

    /// Handler of update messages (progress thread).
    fn on_update(&self, ctx: &SignalContext<'_>, payload: &[u8]) {
        let u = Update::parse(payload)
            .filter(|u| u.end() <= self.view.len() as u64 && u.writer < self.size);
        let Some(Update {
            tag,
            writer,
            off,
            data,
        }) = u
        else {
            self.bad_message(ctx.from, "update");
            return;
        };
        let r = match tag {
            TAG_HOME => self.forward(ctx.task, writer, off, data),
            TAG_COPY => {
                bump(&self.stats.updates, 1);
                // Acknowledged even if not applied: the writer waits.
                let applied = self.apply_copy(off, data);
                self.meta_at(writer, L::UPD_ACK)
                    .and_then(|at| {
                        ctx.task.fetch_add(at, 1, Options::default())?;
                        Ok(())
                    })
                    .and(applied)
            }
            _ => Ok(()),
        };
        if let Err(e) = r {
            eprintln!("sss-dsm: update from task {}: {e}", ctx.from);
        }
    }

    /// `UpdateDirect` at release: `runs` go to every other task.
    fn push_direct(&self, runs: Vec<Run>) -> Result<(), Error> {
        if self.size == 1 || runs.is_empty() {
            return Ok(());
        }
        let mut sent = 0u64;
        for (o, bytes) in merge_runs(runs) {
            let end = o + bytes.len() as u64;
            let mut at = o;
            while at < end {
                let stop = ((page_of(at) + 1) * PAGE as u64)
                    .min(end)
                    .min(at + UPDATE_DATA as u64);
                let data = &bytes[(at - o) as usize..(stop - o) as usize];
                let msg = Update {
                    tag: TAG_COPY,
                    writer: self.rank,
                    off: at,
                    data,
                }
                .encode();
                for r in (0..self.size).filter(|&r| r != self.rank) {
                    self.task
                        .signal(r, UPDATE_HANDLER, &msg, Options::default())?;
                    bump(&self.stats.writes, 1);
                    bump(&self.stats.bytes_sent, data.len() as u64);
                    sent += 1;
                }
                at = stop;
            }
        }
        self.local_word(L::UPD_WANT)
            .fetch_add(sent, Ordering::AcqRel);
        Ok(())
    }

    /// Waits until every update this task sent is applied at every copy.
    fn wait_updates(&self) -> Result<(), Error> {
        let forwarded = lock(&self.out).forwarded;
        // Each home answers a forwarded update with WANT, then HOME.
        self.task
            .wait_word(self.local_word(L::UPD_HOME), |v| v >= forwarded);
        let want = self.local_word(L::UPD_WANT).load(Ordering::Acquire);
        self.task
            .wait_word(self.local_word(L::UPD_ACK), |v| v >= want);
        Ok(())
    }

    /// Sets this task's holder bit for `page` at its home (once).
    fn register(&self, page: u64, home: u32) -> Result<(), Error> {
        if lock(&self.state).registered.contains(&page) {
            return Ok(());
        }
        if self.rank >= MAX_HOLDERS {
            return Err(Error::Invalid(
                "the update protocol supports at most 64 tasks",
            ));
        }
        let bit = 1u64 << self.rank;
        if home == self.rank {
            self.dir_word(page)?.fetch_or(bit, Ordering::SeqCst);
        } else {
            let at = self
                .dirs
                .get(home as usize)
                .ok_or(Error::Invalid("no such home"))?
                .at(page * 8);
            // The bit is clear (only this task sets or clears it).
            self.fetch_add(at, bit)?;
        }
        std::sync::atomic::fence(Ordering::SeqCst);
        lock(&self.state).registered.insert(page);
        Ok(())
    }

    /// `HomeOnly` read: pages cached here (fetched since the last
    /// acquire, holding this task's own writes) from the view, the rest
    /// from their homes.
    fn read_home(&self, off: u64, buf: &mut [u8]) -> Result<(), Error> {
        // This task's eager writes reach each home before the READ.
        self.flush_pending()?;
        let end = off + buf.len() as u64;
        let mut at = off;
        while at < end {
            let page = page_of(at);
            let stop = ((page + 1) * PAGE as u64).min(end);
            let dst = &mut buf[(at - off) as usize..(stop - off) as usize];
            let home = self.home_of(page)?;
            // Under the state lock so the page cannot be dropped between.
            let st = lock(&self.state);
            if st.present.contains(&page) {
                dst.copy_from_slice(&self.view_read(at, dst.len())?);
            } else if home == self.rank {
                drop(st);
                dst.copy_from_slice(&self.home_read(at, dst.len())?);
            } else {
                drop(st);
                let ra = self
                    .homes
                    .get(home as usize)
                    .ok_or(Error::Invalid("no such home"))?
                    .at(at);
                let d = self
                    .task
                    .read(ra, dst.len(), Options::default())?
                    .wait_data()?;
                if d.len() != dst.len() {
                    return Err(Error::Invalid("short read from home"));
                }
                dst.copy_from_slice(&d);
                bump(&self.stats.home_reads, 1);
            }
            at = stop;
        }
        Ok(())
    }

    /// `HomeOnly` write: into the cached copy if any, and to the homes.
    fn write_home(&self, off: u64, data: &[u8]) -> Result<(), Error> {
        let end = off + data.len() as u64;
        let mut at = off;
        while at < end {
            let stop = ((page_of(at) + 1) * PAGE as u64).min(end);
            self.apply_copy(at, &data[(at - off) as usize..(stop - off) as usize])?;
            at = stop;
        }
        self.eager_data(off, data, Via::Home)
    }

    /// Collective protocol switch (see [`Dsm::set_protocol`]).
    fn set_protocol(&self, addr: usize, protocol: Protocol) -> Result<(), Error> {
        let page = page_of(self.offset(addr, 1)?);
        let r = self.range_of(page)?;
        let ok = r.is_some() && (protocol != Protocol::Update || self.size <= MAX_HOLDERS);
        // Every task takes part in both barriers even when one fails.
        self.barrier()?;
        let r = match r {
            Some(r) if ok => r,
            Some(_) => {
                return Err(Error::Invalid(
                    "the update protocol supports at most 64 tasks",
                ))
            }
            None => return Err(Error::Invalid("address outside every allocation")),
        };
        let pages = r.start..r.start + r.pages;
        {
            let mut st = lock(&self.state);
            let mine: Vec<u64> = st
                .present
                .iter()
                .copied()
                .filter(|p| pages.contains(p))
                .collect();
            self.discard(&mut st, &mine)?;
            st.registered.retain(|p| !pages.contains(p));
        }
        if matches!(r.protocol, Protocol::Update | Protocol::Invalidate) {
            // Nobody holds a copy any more: clear the holder bits of the
            // pages homed here.
            for p in pages.clone() {
                let home = match r.placement {
                    // Pages this task claimed are in its cache; asking
                    // home_of would claim the others.
                    Placement::FirstTouch => lock(&self.place).ft.get(&p).copied(),
                    _ => Some(self.home_of(p)?),
                };
                if home == Some(self.rank) {
                    self.dir_word(p)?.store(0, Ordering::SeqCst);
                }
            }
        }
        {
            let mut pl = lock(&self.place);
            pl.lazy |= protocol.lazy();
            if let Some(x) = pl.ranges.get_mut(&r.start) {
                x.protocol = protocol;
            }
        }
        if self.rank == 0 {
            let at = self.meta_at(
                0,
                L::RANGES + r.idx as usize * L::RANGE_BYTES + L::RANGE_PROTOCOL,
            )?;
            self.task
                .write(at, &protocol.code().to_le_bytes(), Options::status())?
                .wait()?;
        }
        self.barrier()
    }

    /// Invalidate protocol: every other task drops its copies of `pages`
    /// before this returns.
    fn invalidate_others(&self, pages: &[u64]) -> Result<(), Error> {
        if self.size == 1 || pages.is_empty() {
            return Ok(());
        }
        // With the holder directory (at most 63 tasks), only the tasks
        // that ever held a page hear of it; beyond, every task does.
        let mut per_rank: Vec<Vec<u64>> = vec![Vec::new(); self.size as usize];
        if self.size <= SC_MAX {
            // Pairs with the fence after a holder registers: the written
            // bytes are at the home (send_runs fenced them), so either its
            // READ sees them or this load sees its bit.
            std::sync::atomic::fence(Ordering::SeqCst);
            for &p in pages {
                let mask = self.holders(p)?;
                for (r, list) in per_rank.iter_mut().enumerate() {
                    if r as u32 != self.rank && mask & (1 << r) != 0 {
                        list.push(p);
                    }
                }
            }
        } else {
            for (r, list) in per_rank.iter_mut().enumerate() {
                if r as u32 != self.rank {
                    list.extend_from_slice(pages);
                }
            }
        }
        self.signal_invalidations(&per_rank)
    }

    /// Sends each task its list of pages to drop and waits for the acks.
    fn signal_invalidations(&self, per_rank: &[Vec<u64>]) -> Result<(), Error> {
        let mut sent = 0u64;
        for (r, list) in per_rank.iter().enumerate() {
            for chunk in list.chunks(128) {
                let payload: Vec<u8> = chunk.iter().flat_map(|p| p.to_le_bytes()).collect();
                self.task
                    .signal(r as u32, INVALIDATE_HANDLER, &payload, Options::default())?;
                sent += 1;
            }
        }
        if sent == 0 {
            return Ok(());
        }
        let want = self.acks_expected.fetch_add(sent, Ordering::AcqRel) + sent;
        self.task.wait_word(self.local_word(L::ACK), |v| v >= want);
        Ok(())
    }

    /// A noted write under `Invalidate`: takes the busy bit of every page
    /// written (in page order, so writers cannot deadlock), has every
    /// other holder drop its copy, writes the home, and frees the pages.
    /// No task can read the new value while another still holds the old
    /// one, and writers of a page are serialized: sequential consistency.
    fn write_sc(&self, off: u64, data: Vec<u8>) -> Result<(), Error> {
        if self.size == 1 || self.size > SC_MAX || data.is_empty() {
            let pages = self.send_runs(vec![(off, data)])?;
            return self.invalidate_others(&pages);
        }
        let first = page_of(off);
        let last = page_of(off + data.len() as u64 - 1);
        let mut taken = Vec::new();
        for p in first..=last {
            let home = self.home_of(p)?;
            let mask = self.dir_take(p, home)?;
            taken.push((p, home, mask));
        }
        let r = (|| {
            let mut per_rank: Vec<Vec<u64>> = vec![Vec::new(); self.size as usize];
            for &(p, _, mask) in &taken {
                for (r, list) in per_rank.iter_mut().enumerate() {
                    if r as u32 != self.rank && mask & (1 << r) != 0 {
                        list.push(p);
                    }
                }
            }
            self.signal_invalidations(&per_rank)?;
            self.send_runs(vec![(off, data)]).map(|_| ())
        })();
        // Free the pages even after an error: a stuck bit would stop
        // every reader of them.
        for (p, home, _) in taken {
            self.dir_add(p, home, BUSY)?;
        }
        r
    }

    /// Adds `v` (wrapping) to `page`'s directory word at `home`; returns
    /// the old word.
    fn dir_add(&self, page: u64, home: u32, v: u64) -> Result<u64, Error> {
        if home == self.rank {
            return Ok(self.dir_word(page)?.fetch_add(v, Ordering::SeqCst));
        }
        let at = self
            .dirs
            .get(home as usize)
            .ok_or(Error::Invalid("no such home"))?
            .at(page * 8);
        self.fetch_add(at, v)
    }

    /// Compare-and-swap on `page`'s directory word at `home`; the old word.
    fn dir_cas(&self, page: u64, home: u32, old: u64, new: u64) -> Result<u64, Error> {
        if home == self.rank {
            let w = self.dir_word(page)?;
            return Ok(
                match w.compare_exchange(old, new, Ordering::SeqCst, Ordering::SeqCst) {
                    Ok(v) | Err(v) => v,
                },
            );
        }
        let at = self
            .dirs
            .get(home as usize)
            .ok_or(Error::Invalid("no such home"))?
            .at(page * 8);
        Ok(self
            .task
            .cas(at, old, new, Options::default())?
            .wait_value()?)
    }

    /// Sets `page`'s busy bit (waiting for another writer to clear it);
    /// returns the holder mask at that moment.
    fn dir_take(&self, page: u64, home: u32) -> Result<u64, Error> {
        let mut guess = 0;
        let mut waits = 0u32;
        loop {
            let old = self.dir_cas(page, home, guess, guess | BUSY)?;
            if old == guess {
                return Ok(guess);
            }
            if old & BUSY != 0 {
                backoff(&mut waits);
            }
            guess = old & !BUSY;
        }
    }

    /// Waits until no writer holds `page`.
    fn wait_not_busy(&self, page: u64, home: u32) -> Result<(), Error> {
        let mut waits = 0u32;
        while self.dir_add(page, home, 0)? & BUSY != 0 {
            backoff(&mut waits);
        }
        Ok(())
    }

    /// This task's holder-directory word of `page` (homed here). Checked:
    /// the directory is followed in memory by other mappings, which a
    /// page number outside the heap would silently corrupt.
    fn dir_word(&self, page: u64) -> Result<&AtomicU64, Error> {
        if page >= self.dir.info().len / 8 {
            return Err(Error::Invalid("holder directory: page outside the heap"));
        }
        #[allow(unsafe_code)]
        // SAFETY: `page` indexes a word of the directory segment (checked
        // above; its length is a multiple of 8 and its base page-aligned),
        // which `self` keeps mapped as long as the borrow; directory words
        // are only accessed atomically (here and by MBCF atomics).
        let w = unsafe { sys::word(self.dir.as_ptr() as usize + page as usize * 8) };
        Ok(w)
    }

    /// The holder mask of `page`, read at its home.
    fn holders(&self, page: u64) -> Result<u64, Error> {
        let home = self.home_of(page)?;
        if home == self.rank {
            return Ok(self.dir_word(page)?.load(Ordering::SeqCst));
        }
        let at = self
            .dirs
            .get(home as usize)
            .ok_or(Error::Invalid("no such home"))?
            .at(page * 8);
        self.fetch_add(at, 0)
    }

    /// Pages in the heap.
    fn heap_pages(&self) -> u64 {
        (self.view.len() / PAGE) as u64
    }

    /// Counts a malformed message or descriptor from task `from`; the
    /// first one is reported.
    fn bad_message(&self, from: u32, what: &str) {
        if self.stats.bad_messages.fetch_add(1, Ordering::Relaxed) == 0 {
            eprintln!(
                "sss-dsm: malformed {what} from task {from} dropped (counted in bad_messages)"
            );
        }
    }

    /// Handler of an eager invalidation (progress thread).
    fn on_invalidate(&self, ctx: &SignalContext<'_>, payload: &[u8]) {
        let Some(pages) = msg::parse_invalidation(payload, self.heap_pages()) else {
            self.bad_message(ctx.from, "invalidation");
            return;
        };
        {
            let mut st = lock(&self.state);
            // A page this task is writing keeps its copy until its own
            // release has sent the diff (dropping it now would lose the
            // writes), and is dropped then: the rest of it is stale.
            let (busy, victims): (Vec<u64>, Vec<u64>) =
                pages.into_iter().partition(|p| st.dirty.contains_key(p));
            st.stale.extend(busy);
            let _ = self.discard(&mut st, &victims);
            // A page being fetched right now is not present yet: the
            // fetch may have read the home before the writer's data
            // landed, so it must read again.
            self.epoch.fetch_add(1, Ordering::AcqRel);
        }
        if let Ok(at) = self.meta_at(ctx.from, L::ACK) {
            let _ = ctx.task.fetch_add(at, 1, Options::default());
        }
    }

    fn lock_at(&self, id: u32) -> Result<(u32, usize), Error> {
        if id as usize >= L::MAX_LOCKS {
            return Err(Error::Invalid("lock id too large"));
        }
        if self.size as usize > L::LOCK_SLOTS {
            return Err(Error::Invalid("locks support at most 64 tasks"));
        }
        Ok((id % self.size, L::LOCKS + id as usize * L::LOCK_BYTES))
    }

    fn lock(&self, id: u32) -> Result<(), Error> {
        let (home, at) = self.lock_at(id)?;
        let next = self.meta_at(home, at)?;
        let serving = self.meta_at(home, at + 8)?;
        let ticket = self.fetch_add(next, 1)?;
        let grant = self.local_word(L::GRANT);
        let mut g = grant.load(Ordering::Acquire);
        let slot = self.meta_at(home, at + 16 + (ticket as usize % L::LOCK_SLOTS) * 8)?;
        self.task
            .swap(slot, self.rank as u64 + 1, Options::default())?
            .wait_value()?;
        // The slot is in place before we look: a releaser that bumped
        // `serving` after this sees it and rings our doorbell. The wait
        // is bounded all the same, so a doorbell that goes missing costs
        // a re-read of `serving`, not the job.
        while self.fetch_add(serving, 0)? != ticket {
            if self
                .task
                .wait_word_timeout(grant, |v| v != g, WAKE_RECHECK)
                .is_none()
                && self.fetch_add(serving, 0)? == ticket
            {
                bump(&self.stats.missed_wakeups, 1);
                break;
            }
            g = grant.load(Ordering::Acquire);
        }
        bump(&self.stats.locks, 1);
        self.acquire()
    }

    fn unlock(&self, id: u32) -> Result<(), Error> {
        let (home, at) = self.lock_at(id)?;
        self.release()?;
        let serving = self.meta_at(home, at + 8)?;
        let now = self.fetch_add(serving, 1)? + 1;
        let slot = self.meta_at(home, at + 16 + (now as usize % L::LOCK_SLOTS) * 8)?;
        let who = self.task.swap(slot, 0, Options::default())?.wait_value()?;
        if who != 0 && who <= self.size as u64 && !self.cfg.fault_no_wakeups {
            self.fetch_add(self.meta_at(who as u32 - 1, L::GRANT)?, 1)?;
        }
        Ok(())
    }

    fn barrier(&self) -> Result<(), Error> {
        self.release()?;
        let n = self.size as u64;
        let old = self.fetch_add(self.meta_at(0, L::BAR_COUNT)?, 1)?;
        let episode = old / n + 1;
        if (old + 1) % n == 0 && !self.cfg.fault_no_wakeups {
            let bytes = episode.to_le_bytes();
            for r in 0..self.size {
                self.task
                    .write(self.meta_at(r, L::BAR_GEN)?, &bytes, Options::default())?;
            }
        }
        // The last arrival's write ends the wait; should it go missing,
        // the count at rank 0 says when everyone has arrived.
        let count = self.meta_at(0, L::BAR_COUNT)?;
        while self
            .task
            .wait_word_timeout(self.local_word(L::BAR_GEN), |v| v >= episode, WAKE_RECHECK)
            .is_none()
        {
            if self.fetch_add(count, 0)? >= episode * n {
                bump(&self.stats.missed_wakeups, 1);
                break;
            }
        }
        bump(&self.stats.barriers, 1);
        self.acquire()
    }
}

/// Heap offset and the bytes written there.
type Run = (u64, Vec<u8>);

/// Sorts runs and merges touching or overlapping ones (the later run's
/// bytes win where they overlap; runs of one release agree there).
fn merge_runs(mut runs: Vec<Run>) -> Vec<Run> {
    runs.sort_by_key(|r| r.0);
    let mut merged: Vec<Run> = Vec::with_capacity(runs.len());
    for (o, d) in runs {
        match merged.last_mut() {
            Some((mo, md)) if o <= *mo + md.len() as u64 => {
                let at = (o - *mo) as usize;
                let end = at + d.len();
                if end > md.len() {
                    md.resize(end, 0);
                }
                md[at..end].copy_from_slice(&d);
            }
            _ => merged.push((o, d)),
        }
    }
    merged
}

/// `[off, off+len)` inside a region of `size` bytes: `off` as an index.
fn span(off: u64, len: usize, size: u64) -> Result<usize, Error> {
    match off.checked_add(len as u64) {
        Some(end) if end <= size => Ok(off as usize),
        _ => Err(Error::Invalid("range outside the heap")),
    }
}

/// Short waits first, then sleeps: the other side is a remote round trip
/// or two away.
fn backoff(waits: &mut u32) {
    *waits += 1;
    if *waits < 16 {
        std::thread::yield_now();
    } else {
        std::thread::sleep(std::time::Duration::from_micros(20));
    }
}

/// The fault-handling thread: resolves faults until told to stop. A fault
/// it cannot resolve leaves the application thread blocked; the error is
/// printed and the job's timeout ends it.
fn fault_loop(s: Arc<Shared>, stop: std::os::fd::RawFd) {
    loop {
        match sys::poll2(s.uffd.fd(), stop, 1000) {
            Ok((_, true)) => return,
            Ok((true, _)) => {}
            Ok(_) => continue,
            Err(e) => {
                eprintln!("sss-dsm: poll: {e}");
                return;
            }
        }
        loop {
            match s.uffd.next() {
                Ok(Some(f)) => {
                    if let Err(e) = s.handle_fault(f) {
                        eprintln!("sss-dsm: fault at {:#x}: {e}", f.addr);
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    eprintln!("sss-dsm: userfaultfd: {e}");
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_runs_keeps_every_byte() {
        let m = merge_runs(vec![
            (10, vec![1; 10]),
            (0, vec![2; 4]),
            (12, vec![3; 2]),
            (20, vec![4; 2]),
            (30, vec![5; 1]),
        ]);
        let mut want = vec![1u8; 10];
        want[2] = 3;
        want[3] = 3;
        want.extend([4, 4]);
        assert_eq!(m, vec![(0, vec![2; 4]), (10, want), (30, vec![5])]);
    }

    #[test]
    fn protocol_names_and_codes() {
        for p in Protocol::ALL {
            assert_eq!(Protocol::parse(p.name()), Some(p));
            assert_eq!(Protocol::from_code(p.code()), Some(p));
        }
        assert_eq!(Protocol::from_code(0), None);
        assert_eq!(Protocol::parse("update_drct"), Some(Protocol::UpdateDirect));
    }
}
