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
//! Protocols ([`Protocol`]):
//! - `Ulrc` — home-based lazy release consistency, multiple writers. At a
//!   release, noted ranges and diffs go to the homes (one MBCF WRITE per
//!   contiguous run with the same home; MBCF splits runs into packets), then
//!   the written pages are appended to this task's write-notice log. At an
//!   acquire, the task pulls the new notices of every other task and drops
//!   its copies of those pages, so the next read faults.
//! - `Invalidate` — single writer, write-through with eager invalidation:
//!   a noted write reaches the home and every other copy of its pages is
//!   dropped before [`Dsm::note_write`] returns, so noted stores are
//!   sequentially consistent. In trap mode the diffs go home at release
//!   and every other copy of the written pages is dropped before the
//!   release completes (eager invalidation). One writer per page between
//!   synchronizations.
//!
//! Synchronization ([`Dsm::lock`], [`Dsm::unlock`], [`Dsm::barrier`]) is
//! built on MBCF atomics and WRITEs, waiting with SS-Wait
//! ([`Task::wait_word`]). Locks are ticket locks at the lock's home task.
//!
//! One application thread per task uses the heap; the fault thread and
//! the MBCF progress thread are internal.

#![warn(missing_docs)]

mod layout;
mod sys;

use layout as L;
use sss_mbcf::{Options, Perm, RemoteAddr, Segment, SegmentInfo, SignalContext, Task};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Instant;

pub use sys::PAGE;

/// Signal handler index the DSM registers for eager invalidations.
pub const INVALIDATE_HANDLER: u32 = 40;

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

/// Consistency protocol of the heap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Protocol {
    /// Single writer, write-through with eager invalidation.
    Invalidate,
    /// Lazy release consistency, multiple writers, home based.
    #[default]
    Ulrc,
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
    /// The protocol (`SSS_DSM_PROTOCOL=ulrc|invalidate`).
    pub protocol: Protocol,
    /// How writes are recorded (`SSS_DSM_WRITES=note|trap`).
    pub writes: WriteMode,
    /// Pages fetched after a missing page with the same home, in one READ
    /// (`SSS_DSM_PREFETCH`, default 0).
    pub prefetch: usize,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            heap: 64 << 30,
            protocol: Protocol::Ulrc,
            writes: WriteMode::Note,
            prefetch: 0,
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
    /// `SSS_DSM_WRITES` and `SSS_DSM_PREFETCH`; unparsable values are
    /// ignored.
    pub fn from_env() -> Self {
        let mut c = Self::default();
        if let Some(v) = std::env::var("SSS_DSM_HEAP")
            .ok()
            .and_then(|v| parse_size(&v))
        {
            c.heap = v;
        }
        match std::env::var("SSS_DSM_PROTOCOL").as_deref() {
            Ok("invalidate") => c.protocol = Protocol::Invalidate,
            Ok("ulrc") => c.protocol = Protocol::Ulrc,
            _ => {}
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
    /// MBCF WRITEs of data to homes.
    pub writes: u64,
    /// Bytes of data written to homes.
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
}

impl Stats {
    /// One JSON object on one line.
    pub fn to_json(&self, rank: u32) -> String {
        format!(
            "{{\"dsm\":{{\"rank\":{rank},\"read_faults\":{},\"write_faults\":{},\"pages_fetched\":{},\"pages_prefetched\":{},\"diffs\":{},\"writes\":{},\"bytes_sent\":{},\"packets\":{},\"notes\":{},\"notices\":{},\"invalidations\":{},\"locks\":{},\"barriers\":{},\"fault_ns\":{},\"sync_ns\":{}}}}}",
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
            self.sync_ns
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
}

fn bump(c: &AtomicU64, n: u64) {
    c.fetch_add(n, Ordering::Relaxed);
}

/// One allocation: pages `[start, start+pages)` of the heap.
#[derive(Debug, Clone, Copy)]
struct Range {
    start: u64,
    pages: u64,
    placement: Placement,
    /// First first-touch directory word (FirstTouch only).
    ft: u64,
}

impl Range {
    fn encode(&self) -> [u8; L::RANGE_BYTES] {
        let (kind, param) = match self.placement {
            Placement::Block => (1u32, 0u32),
            Placement::Cyclic(b) => (2, b),
            Placement::FirstTouch => (3, 0),
            Placement::Explicit(r) => (4, r),
        };
        let mut b = [0u8; L::RANGE_BYTES];
        b[0..8].copy_from_slice(&self.start.to_le_bytes());
        b[8..16].copy_from_slice(&self.pages.to_le_bytes());
        b[16..20].copy_from_slice(&kind.to_le_bytes());
        b[20..24].copy_from_slice(&param.to_le_bytes());
        b[24..32].copy_from_slice(&self.ft.to_le_bytes());
        b
    }

    fn decode(b: &[u8]) -> Option<Self> {
        let u64_at = |o: usize| Some(u64::from_le_bytes(b.get(o..o + 8)?.try_into().ok()?));
        let u32_at = |o: usize| Some(u32::from_le_bytes(b.get(o..o + 4)?.try_into().ok()?));
        let placement = match (u32_at(16)?, u32_at(20)?) {
            (1, _) => Placement::Block,
            (2, p) => Placement::Cyclic(p.max(1)),
            (3, _) => Placement::FirstTouch,
            (4, r) => Placement::Explicit(r),
            _ => return None, // not written yet
        };
        Some(Self {
            start: u64_at(0)?,
            pages: u64_at(8)?,
            placement,
            ft: u64_at(24)?,
        })
    }
}

#[derive(Default)]
struct Placements {
    /// Known ranges by first page.
    ranges: BTreeMap<u64, Range>,
    /// Descriptors read from rank 0 so far.
    known: u64,
    /// First-touch homes learnt.
    ft: HashMap<u64, u32>,
}

#[derive(Default)]
struct State {
    /// Pages installed in this task's view.
    present: HashSet<u64>,
    /// Pages written this interval; the twin in trap mode.
    dirty: HashMap<u64, Option<Vec<u8>>>,
    /// Noted ranges (heap offset, length) not yet sent.
    noted: Vec<(u64, u64)>,
    /// Per rank: write notices of that rank already applied.
    seen: Vec<u64>,
    /// Notices this task published.
    published: u64,
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
    state: Mutex<State>,
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
        let home = task.alloc(heap, Perm::ALL)?;
        let homes = task.exchange(&home)?;
        let meta = task.alloc(L::META_BYTES, Perm::ALL)?;
        let metas = task.exchange(&meta)?;
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
            state: Mutex::new(State {
                seen: vec![0; size as usize],
                ..State::default()
            }),
            place: Mutex::new(Placements::default()),
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
    /// task; the address is valid in every task. Not collective.
    pub fn malloc(&self, len: usize, placement: Placement) -> Result<*mut u8, Error> {
        self.shared.malloc(len, placement).map(|off| self.at(off))
    }

    /// Collective: rank 0 allocates, every task gets the address.
    pub fn malloc_all(&self, len: usize, placement: Placement) -> Result<*mut u8, Error> {
        let s = &self.shared;
        let mine = if s.rank == 0 {
            s.malloc(len, placement)?.to_le_bytes().to_vec()
        } else {
            Vec::new()
        };
        let all = s.task.allgather(&mine)?;
        let off = all
            .first()
            .and_then(|b| b.get(..8))
            .and_then(|b| b.try_into().ok())
            .map(u64::from_le_bytes)
            .ok_or(Error::Invalid("rank 0 sent no address"))?;
        Ok(self.at(off))
    }

    fn at(&self, off: u64) -> *mut u8 {
        (self.shared.view.base() + off as usize) as *mut u8
    }

    /// Records that `[addr, addr+len)` of the heap was written by plain
    /// stores (the code sequence a compiler emits after stores). Under
    /// `Ulrc` the range goes to its homes at the next release; under
    /// `Invalidate` it goes now and other copies are dropped first. In
    /// trap mode it only checks the range.
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
        match s.cfg.protocol {
            Protocol::Ulrc => {
                lock(&s.state).noted.push((off, len as u64));
                Ok(())
            }
            Protocol::Invalidate => {
                let t0 = Instant::now();
                let pages = s.send_runs(vec![(off, len as u64)])?;
                s.invalidate_others(&pages)?;
                bump(&s.stats.sync_ns, t0.elapsed().as_nanos() as u64);
                Ok(())
            }
        }
    }

    /// Store helper: writes `value` at `addr` (inside the heap, aligned
    /// for T) and notes it.
    pub fn store<T: Copy>(&self, addr: *mut T, value: T) -> Result<(), Error> {
        let n = std::mem::size_of::<T>();
        self.shared.offset(addr as usize, n)?;
        if (addr as usize) % std::mem::align_of::<T>() != 0 {
            return Err(Error::Invalid("misaligned store"));
        }
        sys::store(addr, value);
        self.note_write(addr as *const u8, n)
    }

    /// Acquires lock `id` (< 256): a ticket lock at task `id % size`, then
    /// acquire semantics (pages others wrote are invalidated).
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

    fn local_word(&self, off: usize) -> &AtomicU64 {
        sys::word(self.meta.as_ptr() as usize + off)
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

    fn malloc(&self, len: usize, placement: Placement) -> Result<u64, Error> {
        if let Placement::Explicit(r) = placement {
            if r >= self.size {
                return Err(Error::Invalid("explicit home outside the job"));
            }
        }
        let pages = len.max(1).div_ceil(PAGE) as u64;
        let bytes = pages * PAGE as u64;
        let off = self.fetch_add(self.meta_at(0, L::HEAP_BUMP)?, bytes)?;
        if off + bytes > self.view.len() as u64 {
            return Err(Error::OutOfMemory("heap exhausted"));
        }
        let ft = if placement == Placement::FirstTouch {
            let w = self.fetch_add(self.meta_at(0, L::FT_BUMP)?, pages)?;
            if w + pages > L::FT_WORDS as u64 {
                return Err(Error::OutOfMemory("first-touch directory full"));
            }
            w
        } else {
            0
        };
        let idx = self.fetch_add(self.meta_at(0, L::RANGE_COUNT)?, 1)?;
        if idx >= L::MAX_RANGES as u64 {
            return Err(Error::OutOfMemory("too many allocations"));
        }
        let r = Range {
            start: page_of(off),
            pages,
            placement,
            ft,
        };
        let at = self.meta_at(0, L::RANGES + idx as usize * L::RANGE_BYTES)?;
        // Status return: the descriptor is in place before the address is
        // handed out, so any task that learns it can find its placement.
        self.task
            .write(at, &r.encode(), Options::status())?
            .wait()?;
        lock(&self.place).ranges.insert(r.start, r);
        Ok(off)
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
            let Some(r) = Range::decode(c) else { break };
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

    /// The home of heap page `page` (claims it under first touch).
    fn home_of(&self, page: u64) -> Result<u32, Error> {
        let r = match self.find_range(page) {
            Some(r) => r,
            None => {
                self.refresh_ranges()?;
                match self.find_range(page) {
                    Some(r) => r,
                    // Memory nobody allocated: rank 0 serves zeros.
                    None => return Ok(0),
                }
            }
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
                // Present and protected: reading it is safe.
                st.dirty
                    .entry(page)
                    .or_insert_with(|| Some(sys::copy_out(paddr, PAGE)));
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
        // Prefetch: following pages of the same home, not present, within
        // the same allocation.
        let mut n = 1u64;
        if self.cfg.prefetch > 0 {
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
        loop {
            let epoch = self.epoch.load(Ordering::Acquire);
            let off = page * PAGE as u64;
            let len = n as usize * PAGE;
            let data = if home == self.rank {
                sys::copy_out(self.home.as_ptr() as usize + off as usize, len)
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
                if i == 0 && twin {
                    st.dirty.entry(p).or_insert_with(|| Some(chunk.to_vec()));
                }
            }
            return Ok(());
        }
    }

    /// Turns this interval's writes into runs (noted ranges, diffs).
    fn collect_runs(&self) -> Result<Vec<(u64, u64)>, Error> {
        let (mut runs, dirty) = {
            let mut st = lock(&self.state);
            (std::mem::take(&mut st.noted), std::mem::take(&mut st.dirty))
        };
        let base = self.view.base();
        for (page, twin) in dirty {
            let Some(twin) = twin else { continue };
            let paddr = base + page as usize * PAGE;
            // Protect first so the next write of the page starts a new
            // twin; this thread is the only writer, so nothing is missed.
            self.uffd.protect(paddr, PAGE, true)?;
            let cur = sys::copy_out(paddr, PAGE);
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
                runs.push((off0 + i as u64 * 8, (j - i) as u64 * 8));
                i = j;
            }
        }
        Ok(runs)
    }

    /// Sends `runs` (heap offset, length) to their homes: runs are sorted
    /// and merged, then cut where the home changes; each piece is one MBCF
    /// WRITE. Waits until every home applied them. Returns the pages.
    fn send_runs(&self, mut runs: Vec<(u64, u64)>) -> Result<Vec<u64>, Error> {
        if runs.is_empty() {
            return Ok(Vec::new());
        }
        runs.sort_unstable();
        let mut merged: Vec<(u64, u64)> = Vec::with_capacity(runs.len());
        for (o, l) in runs {
            match merged.last_mut() {
                Some((mo, ml)) if o <= *mo + *ml => *ml = (*ml).max(o + l - *mo),
                _ => merged.push((o, l)),
            }
        }
        let base = self.view.base();
        let mut pages = Vec::new();
        let mut homes_hit = HashSet::new();
        for (o, l) in merged {
            let mut start = o;
            let end = o + l;
            while start < end {
                let home = self.home_of(page_of(start))?;
                let mut stop = ((page_of(start) + 1) * PAGE as u64).min(end);
                pages.push(page_of(start));
                while stop < end && self.home_of(page_of(stop))? == home {
                    pages.push(page_of(stop));
                    stop = ((page_of(stop) + 1) * PAGE as u64).min(end);
                }
                let data = sys::copy_out(base + start as usize, (stop - start) as usize);
                if home == self.rank {
                    sys::copy_in(self.home.as_ptr() as usize + start as usize, &data);
                } else {
                    let at = self
                        .homes
                        .get(home as usize)
                        .ok_or(Error::Invalid("no such home"))?
                        .at(start);
                    self.task.write(at, &data, Options::default())?;
                    homes_hit.insert(home);
                }
                bump(&self.stats.writes, 1);
                bump(&self.stats.bytes_sent, data.len() as u64);
                start = stop;
            }
        }
        for h in homes_hit {
            self.task.fence(h)?;
        }
        pages.dedup();
        Ok(pages)
    }

    /// Release: this interval's writes reach their homes, then (Ulrc) the
    /// written pages are published as write notices.
    fn release(&self) -> Result<(), Error> {
        let runs = self.collect_runs()?;
        let pages = self.send_runs(runs)?;
        if self.cfg.protocol == Protocol::Invalidate {
            // Trapped writes: the other copies go before the release
            // completes (noted writes were written through already).
            self.invalidate_others(&pages)?;
        }
        if self.cfg.protocol == Protocol::Ulrc && !pages.is_empty() {
            let mut st = lock(&self.state);
            let log = self.meta.as_ptr() as usize + L::LOG;
            for p in &pages {
                let slot = (st.published % L::LOG_CAP as u64) as usize;
                sys::word(log + slot * 8).store(*p, Ordering::Relaxed);
                st.published += 1;
            }
            // Entries before the count: readers READ the count first.
            self.local_word(L::NOTICES)
                .store(st.published, Ordering::Release);
            bump(&self.stats.notices, pages.len() as u64);
        }
        Ok(())
    }

    /// Acquire (Ulrc): pulls every other task's new write notices and
    /// drops this task's copies of those pages.
    fn acquire(&self) -> Result<(), Error> {
        if self.cfg.protocol != Protocol::Ulrc {
            return Ok(());
        }
        // Writes of this task not yet released would be lost with the page.
        self.release()?;
        let mut drop_all = false;
        let mut pages = Vec::new();
        for r in 0..self.size {
            if r == self.rank {
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
        self.discard(&mut st, &pages)
    }

    /// Drops present pages among `pages` (state lock held).
    fn discard(&self, st: &mut State, pages: &[u64]) -> Result<(), Error> {
        let base = self.view.base();
        let mut any = false;
        for &p in pages {
            if st.present.remove(&p) {
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

    /// Invalidate protocol: every other task drops its copies of `pages`
    /// before this returns.
    fn invalidate_others(&self, pages: &[u64]) -> Result<(), Error> {
        if self.size == 1 || pages.is_empty() {
            return Ok(());
        }
        let mut sent = 0u64;
        for chunk in pages.chunks(128) {
            let payload: Vec<u8> = chunk.iter().flat_map(|p| p.to_le_bytes()).collect();
            for r in 0..self.size {
                if r != self.rank {
                    self.task
                        .signal(r, INVALIDATE_HANDLER, &payload, Options::default())?;
                    sent += 1;
                }
            }
        }
        let want = self.acks_expected.fetch_add(sent, Ordering::AcqRel) + sent;
        self.task.wait_word(self.local_word(L::ACK), |v| v >= want);
        Ok(())
    }

    /// Handler of an eager invalidation (progress thread).
    fn on_invalidate(&self, ctx: &SignalContext<'_>, payload: &[u8]) {
        let pages: Vec<u64> = payload
            .chunks_exact(8)
            .filter_map(|c| c.try_into().ok().map(u64::from_le_bytes))
            .collect();
        {
            let mut st = lock(&self.state);
            // A page this task is writing keeps its copy: one writer per
            // page is the protocol's contract, and dropping it would lose
            // the writes.
            let victims: Vec<u64> = pages
                .into_iter()
                .filter(|p| !st.dirty.contains_key(p))
                .collect();
            let _ = self.discard(&mut st, &victims);
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
        // `serving` after this sees it and rings our doorbell.
        while self.fetch_add(serving, 0)? != ticket {
            self.task.wait_word(grant, |v| v != g);
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
        if who != 0 && who <= self.size as u64 {
            self.fetch_add(self.meta_at(who as u32 - 1, L::GRANT)?, 1)?;
        }
        Ok(())
    }

    fn barrier(&self) -> Result<(), Error> {
        self.release()?;
        let n = self.size as u64;
        let old = self.fetch_add(self.meta_at(0, L::BAR_COUNT)?, 1)?;
        let episode = old / n + 1;
        if (old + 1) % n == 0 {
            let bytes = episode.to_le_bytes();
            for r in 0..self.size {
                self.task
                    .write(self.meta_at(r, L::BAR_GEN)?, &bytes, Options::default())?;
            }
        }
        self.task
            .wait_word(self.local_word(L::BAR_GEN), |v| v >= episode);
        bump(&self.stats.barriers, 1);
        self.acquire()
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
