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
//! SIGSEGV handler, so applications keep their own. Pages homed at the
//! faulting task are mapped from its home segment instead (`local`): the
//! task works on the master copy, and a task alone needs no notes.
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
//! - `Invalidate` — sequential consistency, write-through: a noted write
//!   takes the busy bit of each written page in the page's directory word
//!   at its home (writers of a page go one at a time; fetchers of a busy
//!   page wait), has every recorded copy holder drop its copy (acked),
//!   writes the home, and frees the pages, all before
//!   [`Dsm::note_write`] returns: no task can read the new value while
//!   another still holds the old one. Stores are visible to others once
//!   noted. Several tasks may write one page between synchronizations:
//!   copies are installed write-protected and twinned at their first
//!   store, so a copy another writer's note drops keeps this task's
//!   stores not yet noted, laid over the page when it is fetched again
//!   (UDSM: over the bytes it was installed with); stores never noted go
//!   home as diffs at the release. In trap mode the diffs go home at
//!   release and the holders drop their copies before it completes (release
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
//! In a job of at most 16 tasks a barrier is one WRITE from each task to
//! each other, after its release: its arrival record, which carries the
//! write notices it published since its last one (the acquire READs none
//! unless a record could not hold them all) and the pages of its home the
//! reader asked to have pushed (copies the reader drops at every acquire
//! and reads again; installed only when no other task wrote them in the
//! interval).
//!
//! One application thread per task uses the heap; the fault thread and
//! the MBCF progress thread are internal.

#![warn(missing_docs)]

mod adopt;
mod agree;
mod config;
mod fault;
mod layout;
mod local;
mod lock;
pub mod msg;
mod protocol;
mod range;
mod shared;
mod signal;
mod stats;
mod sync;
mod sys;
mod twin;

use fault::fault_loop;
use layout as L;
use protocol::eager::Via;
use range::Placements;
use shared::{lock, page_of, Out, Shared, State};
use sss_mbcf::{Perm, SettingError, SignalContext, Task};
use stats::{bump, Counters};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

pub use config::{Config, FaultMode, Stall, WriteMode};
pub use protocol::Protocol;
pub use range::{NotePolicy, Placement};
pub use stats::Stats;
pub use sync::WAKE_RECHECK;
pub use sys::PAGE;

/// Signal handler index the DSM registers for eager invalidations.
pub const INVALIDATE_HANDLER: u32 = 40;
/// Signal handler index the DSM registers for updates (`Update`,
/// `UpdateDirect`) and for diffs to homes (`msg::Diff`).
pub const UPDATE_HANDLER: u32 = 41;
/// Signal handler index the DSM registers for lock releases sent to the
/// lock's home (`msg::Unlock`).
pub const LOCK_HANDLER: u32 = 42;

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
    /// A setting from the environment is not valid.
    #[error("{0}")]
    Setting(#[from] SettingError),
    /// A barrier waited longer than `SSS_DSM_STALL=abort:SECONDS` allows
    /// (the text names the tasks that did not arrive).
    #[error("{0}")]
    Stalled(String),
    /// Another task failed a step of the heap's creation (the text names
    /// the task, the step and its error); this task's heap is not made.
    #[error("{0}")]
    PeerFailed(String),
    /// The tasks ask for different heaps (size, protocol, ADSM or UDSM);
    /// the text names both.
    #[error("{0}")]
    Mismatch(String),
}

/// The shared heap of one task. Dropping it (or [`Dsm::finalize`]) stops
/// the fault thread; the heap must not be touched afterwards.
pub struct Dsm {
    shared: Arc<Shared>,
    stop: sys::EventFd,
    thread: Option<JoinHandle<()>>,
    /// Faults resolved by signal in the faulting thread: the heap's
    /// registration with the handler.
    signals: Option<signal::Registration>,
    /// `SSS_STATS=json`: finalize prints the counters.
    print_stats: bool,
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

impl Dsm {
    /// Collective: creates the heap in every task of `task`'s job.
    pub fn new(task: &Task, cfg: Config) -> Result<Dsm, Error> {
        // A step a task can fail alone is followed by an agreement (see
        // `agree`): the others return an error naming it instead of
        // waiting for it in the next collective step.
        let heap = cfg.heap.max(PAGE).next_multiple_of(PAGE);
        let wp = cfg.writes == WriteMode::Trap;
        let local = (|| {
            let print_stats = config::stats_json_from_env()?;
            if wp && !cfg.userfaultfd {
                return Err(Error::Invalid(
                    "trap mode needs userfaultfd (UDSM works in note mode only)",
                ));
            }
            let presence = if cfg.userfaultfd {
                None
            } else {
                Some(sys::Presence::new((heap / PAGE) as u64)?)
            };
            Ok((print_stats, presence))
        })();
        let (print_stats, presence) =
            agree::agree_on_settings(task, &Config { heap, ..cfg }, local)?;
        let view = reserve_everywhere(task, heap)?;
        // Faults resolved in the faulting thread where the kernel raises
        // SIGBUS for them, else by the fault thread. The handler's slot
        // first: without one the heap takes the fault thread.
        let mut slot = (cfg.userfaultfd && cfg.faults == FaultMode::Signal && signal::SUPPORTED)
            .then(signal::reserve)
            .flatten();
        let sigbus = slot.is_some();
        let open = |wp: bool| -> Result<sys::Uffd, Error> {
            let u = match sys::Uffd::new(wp, sigbus) {
                Ok(u) => u,
                Err(_) if sigbus => sys::Uffd::new(wp, false)?,
                Err(e) => return Err(e.into()),
            };
            u.register(view.base(), view.len())?;
            Ok(u)
        };
        let uffd = if !cfg.userfaultfd {
            Ok(sys::Uffd::none())
        } else if wp {
            open(true)
        } else {
            // Note mode: write-protect faults too where the kernel has
            // them, for `Invalidate` copies (a store not yet noted must
            // survive another writer's invalidation, see
            // `Shared::on_invalidate`); without them, missing faults only.
            open(true).or_else(|_| open(false))
        };
        // With it, whether every task has write-protect faults: what
        // depends on them (guarded `Invalidate` copies, adopted memory in
        // note mode) must be decided alike everywhere, whatever each
        // kernel offers.
        let wp = uffd.as_ref().map_or(0, |u| u8::from(u.wp()));
        let (uffd, wps) = agree::agree_with(task, "open its userfaultfd", uffd, &[wp])?;
        let wp_all = wps.iter().all(|v| v[..] == [1]);
        // The heap and its directory are large and mostly untouched: not
        // reserved in /dev/shm up front.
        let segments = (|| {
            Ok((
                task.alloc_sparse(heap, Perm::ALL)?,
                task.alloc(L::META_BYTES, Perm::ALL)?,
                task.alloc_sparse(heap / PAGE * 8, Perm::ALL)?,
            ))
        })();
        let (home, meta, dir) = agree::agree(task, "map its shared memory", segments)?;
        let homes = task.exchange(&home)?;
        let metas = task.exchange(&meta)?;
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
            wp_all,
            presence,
            home,
            homes,
            meta,
            metas,
            dir,
            dirs,
            state: Mutex::new(State {
                seen: vec![0; size as usize],
                seen_whole: cfg.protocol.lazy(),
                gain: vec![0; size as usize],
                wanted: vec![Vec::new(); size as usize],
                ..State::default()
            }),
            out: Mutex::new(Out::default()),
            place: Mutex::new(Placements {
                lazy: cfg.protocol.lazy(),
                eager: cfg.protocol != Protocol::Ulrc,
                ..Placements::default()
            }),
            mapped: Mutex::default(),
            epoch: AtomicU64::new(0),
            acks_expected: AtomicU64::new(0),
            stats: Counters::default(),
            packets0,
            window: std::sync::OnceLock::new(),
            note_mode: std::sync::OnceLock::new(),
            fault_serial: Mutex::new(()),
        });
        let made = (|| {
            // Handlers hold the heap weakly: a SIGNAL after it is gone
            // finds nothing to do.
            type On = fn(&Shared, &SignalContext<'_>, &[u8]);
            for (h, on) in [
                (INVALIDATE_HANDLER, Shared::on_invalidate as On),
                (UPDATE_HANDLER, Shared::on_update as On),
                (LOCK_HANDLER, Shared::on_unlock as On),
            ] {
                let weak = Arc::downgrade(&shared);
                task.set_handler(
                    h,
                    Arc::new(move |ctx: &SignalContext<'_>, payload: &[u8]| {
                        if let Some(s) = weak.upgrade() {
                            on(&s, ctx, payload);
                        }
                    }),
                )?;
            }
            let stop = sys::EventFd::new()?;
            let s2 = shared.clone();
            let stop_fd = stop.fd();
            // Faults by signal only with a slot and a userfaultfd that
            // raises them (else the slot goes back).
            let signals = if shared.uffd.sigbus() {
                slot.take().map(|s| s.activate(&shared))
            } else {
                None
            };
            drop(slot);
            let mut dsm = Dsm {
                shared: shared.clone(),
                stop,
                thread: None,
                signals,
                print_stats,
            };
            // UDSM: nothing faults; faults by signal: no events. No thread.
            if !shared.udsm() && dsm.signals.is_none() {
                dsm.thread = Some(
                    std::thread::Builder::new()
                        .name(format!("sss-dsm-fault-{}", task.rank()))
                        .spawn(move || fault_loop(s2, stop_fd))?,
                );
            }
            Ok(dsm)
        })();
        // Also the barrier before anyone may fault on a peer: every task's
        // handlers are in place once it returns. A task that fails drops
        // its heap here (the fault thread stops).
        agree::agree(task, "start its fault handling", made)
    }

    /// Collective, with [`Config::from_env`] (a bad setting is
    /// [`Error::Setting`]).
    pub fn from_env(task: &Task) -> Result<Dsm, Error> {
        Self::new(task, Config::from_env()?)
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

    /// UDSM mode ([`Config::userfaultfd`] false): makes every page of
    /// `[addr, addr+len)` present in this task's view, as a missing
    /// fault would (a home page is mapped, another page fetched from its
    /// home with read-ahead); `write`: the caller is about to store (a
    /// write-allocate). Returns the pages made present. Code compiled by
    /// `sss cc --udsm` calls this when its inline look at
    /// [`Dsm::presence`] finds a page absent; without that code, call it
    /// before touching heap memory since the last acquire. In ADSM mode
    /// nothing is done (faults fetch).
    pub fn fetch(&self, addr: *const u8, len: usize, write: bool) -> Result<u64, Error> {
        let s = &self.shared;
        let off = s.offset(addr as usize, len)?;
        s.fetch_span(off, len as u64, write)
    }

    /// UDSM mode: the presence map, one byte per heap page from
    /// [`Dsm::base`], non-zero while the page is present (valid as long
    /// as `self`); None in ADSM mode.
    pub fn presence(&self) -> Option<*const u8> {
        self.shared.presence.as_ref().map(|m| m.as_ptr())
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
                s.fetch_span(o, l, false)?;
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
                s.fetch_span(o, l, true)?;
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
        if s.cfg.writes == WriteMode::Trap || s.traps_window(page_of(off)) {
            // Write protection records the stores already (adopted memory
            // in note mode too: a note would send its bytes again, this
            // task's private ranges included).
            return Ok(());
        }
        bump(&s.stats.notes, 1);
        if len == 0 || s.size == 1 {
            // A task alone: its view is every page's only copy (home pages
            // are mapped; a page dropped is written home first).
            return Ok(());
        }
        for (o, l, proto) in s.split_by_range(off, len as u64)? {
            match proto {
                Protocol::Ulrc => lock(&s.out).noted.push((o, l)),
                Protocol::Invalidate => {
                    let t0 = Instant::now();
                    if s.span_mapped(o, l) {
                        // Mapped pages are this task's home pages: no
                        // copy of them has a twin here.
                        s.write_sc_mapped(o, l)?;
                    } else {
                        let data = s.view_read(o, l as usize)?;
                        if s.guards(proto) || s.keeps(proto) {
                            s.noted_into_twins(o, &data);
                        }
                        s.write_sc(o, data)?;
                    }
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

    /// A diffed range: the stores this task makes into `[addr, addr+len)`
    /// from now until its next release (unlock, barrier) need no notes;
    /// the release sends the bytes of the range's pages that differ from
    /// their twins, as trap mode sends its diffs. For code that can bound
    /// where a loop stores (a scatter through cursors, a loop nest whose
    /// bytes are not one run) but not list it: one call before the loop
    /// instead of a note per store or per run. A noted range would send
    /// this task's copy of every byte in it, including bytes other tasks
    /// wrote meanwhile; a diff sends only what this task changed. Present
    /// pages are copied now, the others when they arrive (before the
    /// store that fetches them runs); this task's home pages mapped here
    /// only get their write notices when they changed.
    ///
    /// A diff cannot tell a byte written with its old value from one not
    /// written: the release sends each changed 8-byte word of these
    /// pages whole, less the words whose changed bytes all lie in this
    /// interval's notes. So the stores left unnoted in the range must
    /// write whole aligned words (as `sss cc` makes sure), and any other
    /// store there is noted; a word that two tasks write parts of
    /// without notes may get the other's old bytes.
    ///
    /// `written` is at most how many bytes the caller will store there
    /// (0: unknown): the present pages copied now are limited to 64 plus
    /// 4 per page written, so that a bound much wider than the stores (a
    /// column bounded by its whole matrix) is refused rather than copied
    /// and diffed page by page.
    ///
    /// Returns true when the stores are covered (also in trap mode, where
    /// faults record them, and for a task alone, which records nothing),
    /// false when the caller must note them: a range of other protocols
    /// than `Ulrc` (their notes cannot wait for the release), wider than
    /// 2^15 pages, or with more present pages than the limit above. Bytes
    /// written that equal their twins' are not sent, as in trap mode.
    pub fn twin_range(&self, addr: *const u8, len: usize, written: usize) -> Result<bool, Error> {
        let s = &self.shared;
        let off = s.offset(addr as usize, len)?;
        s.twin_range(off, len as u64, written as u64)
    }

    /// The allocation (G_MALLOC) holding `addr`: its first byte and its
    /// length in bytes (whole pages); None outside every allocation.
    pub fn allocation(&self, addr: *const u8) -> Result<Option<(*mut u8, usize)>, Error> {
        let s = &self.shared;
        let off = s.offset(addr as usize, 1)?;
        Ok(s.range_of(page_of(off))?
            .map(|r| (self.at(r.start * PAGE as u64), r.pages as usize * PAGE)))
    }

    /// Notes of several ranges at once (a caller's log of notes, see
    /// [`Dsm::note_policy`]), in order; stops at the first bad range.
    pub fn note_writes(&self, ranges: &[(usize, usize)]) -> Result<(), Error> {
        let s = &self.shared;
        if s.cfg.writes == WriteMode::Trap || s.size == 1 {
            for &(addr, len) in ranges {
                self.note_write(addr as *const u8, len)?;
            }
            return Ok(());
        }
        // A log drained at a synchronization holds hundreds of notes of
        // one allocation (a stencil's rows): `Ulrc` pieces inside the
        // allocation last looked up are gathered and kept under one lock,
        // without a lookup each. The rest go one by one, in order.
        let mut last: Option<msg::Range> = None;
        let mut noted = Vec::new();
        let keep = |noted: &mut Vec<(u64, u64)>| {
            if !noted.is_empty() {
                lock(&s.out).noted.append(noted);
            }
        };
        for &(addr, len) in ranges {
            let off = match s.offset(addr, len) {
                Ok(o) => o,
                Err(e) => {
                    keep(&mut noted);
                    return Err(e);
                }
            };
            let inside = last.is_some_and(|r| {
                r.protocol == Protocol::Ulrc
                    && len > 0
                    && !s.traps_window(page_of(off))
                    && page_of(off) >= r.start
                    && page_of(off + len as u64 - 1) < r.start + r.pages
            });
            if inside {
                bump(&s.stats.notes, 1);
                noted.push((off, len as u64));
                continue;
            }
            keep(&mut noted);
            self.note_write(addr as *const u8, len)?;
            if len > 0 {
                last = s.find_range(page_of(off));
            }
        }
        keep(&mut noted);
        Ok(())
    }

    /// What a caller may do with notes between calls into the heap: the
    /// C header's inline `sss_dsm_note_write` appends to a log
    /// ([`NotePolicy::Log`]) or returns at once ([`NotePolicy::Drop`])
    /// instead of calling into the runtime per store.
    pub fn note_policy(&self) -> NotePolicy {
        self.shared.note_policy()
    }

    /// `word` holds the caller's [`NotePolicy`] (as u64): the heap stores
    /// [`NotePolicy::Call`] there as soon as it learns of a range whose
    /// notes cannot wait (another task's allocation found by a fault),
    /// from whichever thread learns of it, the fault thread included: the
    /// word must not lie in memory that can fault (adopted memory, the
    /// heap). Only the first word given is kept.
    pub fn watch_notes(&self, word: &'static AtomicU64) {
        let _ = self.shared.note_mode.set(word);
        if self.shared.note_policy() == NotePolicy::Call {
            word.store(NotePolicy::Call as u64, Ordering::Release);
        }
    }

    /// Store helper: writes `value` at `addr` (inside the heap, aligned
    /// for T) and notes it.
    // Safe for any `addr`: it is checked to lie in the heap view, which is
    // mapped while `self` lives.
    #[allow(clippy::not_unsafe_ptr_arg_deref)]
    pub fn store<T: Copy>(&self, addr: *mut T, value: T) -> Result<(), Error> {
        let n = std::mem::size_of::<T>();
        let off = self.shared.offset(addr as usize, n)?;
        if (addr as usize) % std::mem::align_of::<T>() != 0 {
            return Err(Error::Invalid("misaligned store"));
        }
        self.shared.fetch_span(off, n as u64, true)?;
        #[allow(unsafe_code)]
        // SAFETY: `offset` checked that the T lies inside the heap view,
        // which this Dsm keeps reserved, and it is aligned (checked
        // above); T is Copy, plain data.
        unsafe {
            sys::store(addr, value)
        };
        self.note_write(addr as *const u8, n)
    }

    /// Collective: makes the program's own memory `[addr, addr+len)` (its
    /// global variables: page-aligned, at the same address in every task)
    /// a shared range, as if allocated with [`Placement::Explicit`]`(0)`
    /// and [`Protocol::Ulrc`]: rank 0's bytes now are every task's, and
    /// stores to it are trapped and reach the others at release, as for
    /// heap pages. The `keep` ranges (address, length; at most 256 of at
    /// most 64 KiB) stay each task's own bytes, never sent by a release. Needs
    /// [`Dsm::can_adopt`]: in note mode too the stores are trapped, not
    /// noted. Pages are fetched lazily; [`Dsm::finalize`] fills in the
    /// rest, so the memory stays whole afterwards.
    ///
    /// # Safety
    /// `[addr, addr+len)` is mapped, readable and writable, and holds
    /// plain bytes (no Rust object); no other thread touches it until this
    /// returns (its contents are replaced), and it is never unmapped while
    /// `self` lives.
    #[allow(unsafe_code)]
    pub unsafe fn adopt(
        &self,
        addr: *mut u8,
        len: usize,
        keep: &[(usize, usize)],
    ) -> Result<(), Error> {
        let t0 = Instant::now();
        // SAFETY: the caller's guarantees, passed on.
        let r = unsafe { self.shared.adopt(addr as usize, len, keep) };
        bump(&self.shared.stats.sync_ns, t0.elapsed().as_nanos() as u64);
        r
    }

    /// Whether [`Dsm::adopt`] can share memory here: in trap mode, and in
    /// note mode where every task's userfaultfd has write-protect faults
    /// (not UDSM). The same in every task of the job.
    pub fn can_adopt(&self) -> bool {
        self.shared.can_adopt()
    }

    /// Acquires lock `id` (< 256): a ticket lock at task `id % size`, then
    /// acquire semantics (pages others wrote are invalidated). A waiter
    /// leaves a slot at the lock's home for the release to ring; it also
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
            pages_refreshed: g(&c.pages_refreshed),
            pages_pushed: g(&c.pages_pushed),
            pages_overwritten: g(&c.pages_overwritten),
            diffs: g(&c.diffs),
            twins: g(&c.twins),
            mapped_pages: g(&c.mapped_pages),
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
            notices_skipped: g(&c.notices_skipped),
            copy_marks: g(&c.copy_marks),
            invalidations: g(&c.invalidations),
            locks: g(&c.locks),
            barriers: g(&c.barriers),
            fault_ns: g(&c.fault_ns),
            sync_ns: g(&c.sync_ns),
            updates: g(&c.updates),
            home_reads: g(&c.home_reads),
            missed_wakeups: g(&c.missed_wakeups),
            bad_messages: g(&c.bad_messages),
            fetches: g(&c.fetches),
            userfaultfd: u64::from(!self.shared.udsm()),
            fault_errors: g(&c.fault_errors),
            fault_signals: g(&c.fault_signals),
            sync_requests: g(&c.sync_requests),
            sync_writes: g(&c.sync_writes),
            range_lookups: g(&c.range_lookups),
            fetch_trips: g(&c.fetch_trips),
        }
    }

    /// Collective: a final barrier (so no peer still reads this task's
    /// pages), prints the statistics when `SSS_STATS=json` (one line on
    /// stderr), stops the fault thread.
    pub fn finalize(mut self) -> Result<Stats, Error> {
        let r = self.barrier();
        let r = r.and_then(|()| self.shared.fill_window());
        let st = self.stats();
        if self.print_stats {
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
        self.signals.take();
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
        // Rank 0's pick, or (sent empty) its failure to pick, which every
        // task learns before returning.
        let mine = (task.rank() == 0).then(|| sys::Reservation::new(len, None));
        let prop = match &mine {
            Some(Ok(r)) => (r.base() as u64).to_le_bytes().to_vec(),
            _ => Vec::new(),
        };
        let all = task.allgather(&prop)?;
        let mine = mine.transpose()?;
        let at = all
            .first()
            .and_then(|b| b.get(..8))
            .and_then(|b| b.try_into().ok())
            .map(u64::from_le_bytes)
            .ok_or_else(|| {
                Error::PeerFailed("task 0 could not reserve an address range for the heap".into())
            })? as usize;
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
