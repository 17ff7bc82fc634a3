//! Tasks: one process of a job, what it owns, and the operation API.
//!
//! The task is split by what each part holds: joining a job ([`boot`]),
//! its tunables ([`config`]), operations and their completions
//! ([`request`], [`ops`], [`segments`], [`queue`]), the transports that
//! carry them ([`transport`], [`udp`], [`shm`]), waiting ([`wait`],
//! [`sswait`]), the progress thread ([`progress`]) with its applier
//! ([`apply`]), and node liveness from IDM ([`liveness`]). This module
//! holds the [`Task`] handle, its shared state and its counters.

use crate::idm::Idm;
use crate::segment::SegTable;
use crate::shm::{ctl_name, CtlMap};
use crate::sys::{self, EventFd};
use crate::Error;
use foldhash::HashMap;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

mod apply;
mod boot;
mod config;
mod liveness;
mod ops;
mod progress;
mod queue;
mod request;
mod segments;
mod shm;
mod sswait;
mod transport;
mod udp;
mod wait;

pub use boot::{Bootstrap, ThreadBoot};
pub use config::{
    default_payload, payload_for_mtu, Bind, SsWaitTuning, TaskConfig, Transport, JUMBO_MTU,
};
pub use queue::{Fifo, FifoProbe, FifoSender};
pub use request::{Options, Reply, Request, Sink};
pub use segments::PeerMap;
pub use transport::TransportKind;
pub use wait::WaitPolicy;

/// After a WRITE's notify bump: the operations applied after it (a READ
/// of the same task, in issue order) load after the bump and the data
/// are visible, so a target thread that stores, fences and then loads
/// the counter, and this READ, cannot both miss the other's stores
/// (Dekker's pairing; the DSM's copy marks rely on it). x86's locked add
/// is already a full barrier.
#[inline]
pub(crate) fn after_notify() {
    #[cfg(not(target_arch = "x86_64"))]
    std::sync::atomic::fence(Ordering::SeqCst);
}

use apply::{drain_signal_ring, Applier};
use progress::progress;
use request::{keep_error, status_error, ReqState, ERRORS_KEPT};
use transport::{Lane, Route};
use udp::{Net, Senders};

/// A signal handler: called with the sender's rank and payload, one at a
/// time in arrival order, on a thread of the receiving task that is
/// waiting (the one that received the signal) or else on its progress
/// thread; it may issue operations through the context. It must not take
/// a lock that a waiting thread of the task may hold.
pub type Handler = Arc<dyn Fn(&SignalContext<'_>, &[u8]) + Send + Sync>;

/// What the thread running signal handlers keeps between signals: a
/// copy of the handler table, so that a signal costs no read lock and
/// no reference count (a same-node signal's whole cost is a few of
/// those besides its two cache-line transfers).
#[derive(Default)]
pub(super) struct Runner {
    /// `Inner::handlers_version` when `handlers` was copied.
    version: u64,
    handlers: HashMap<u32, Handler>,
}

impl Runner {
    /// Handler `index`, from a copy refreshed when the table changed.
    fn handler(&mut self, inner: &Inner, index: u32) -> Option<&Handler> {
        let v = inner.handlers_version.load(Ordering::Acquire);
        if v != self.version {
            if let Ok(hs) = inner.handlers.read() {
                self.handlers.clone_from(&hs);
            }
            self.version = v;
        }
        self.handlers.get(&index)
    }
}

/// What a signal handler gets besides the payload.
pub struct SignalContext<'a> {
    /// The receiving task, to reply or issue operations.
    pub task: &'a Task,
    /// The sender's rank.
    pub from: u32,
    /// The handler index that was invoked.
    pub handler: u32,
}

/// Counters of a task.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskStats {
    /// Datagrams sent.
    pub packets_sent: u64,
    /// Bytes sent.
    pub bytes_sent: u64,
    /// Datagrams received.
    pub packets_received: u64,
    /// Bytes received.
    pub bytes_received: u64,
    /// Retransmitted packets.
    pub retransmissions: u64,
    /// Retransmission timeouts that fired with data unacknowledged.
    pub timeouts: u64,
    /// Packets presumed lost because a later one was acknowledged first
    /// (RACK), and resent.
    pub rack_lost: u64,
    /// Packets presumed lost after a timeout, and resent.
    pub timeout_lost: u64,
    /// Timeouts found spurious: the first ack after one showed the
    /// packets sent before it getting through, and nothing more was
    /// resent.
    pub spurious_timeouts: u64,
    /// Duplicates the peers reported (D-SACK): retransmissions that were
    /// not needed.
    pub dsacks: u64,
    /// Datagrams received again that had been taken already: what a
    /// retransmission that was not needed costs the receiver.
    pub duplicates: u64,
    /// Incoming operations applied.
    pub applied: u64,
    /// Incoming operations refused (bad key, bounds, permission, …).
    pub rejected: u64,
    /// Corrupted or malformed datagrams dropped.
    pub bad_packets: u64,
    /// SS-Waits that blocked because the partner was waiting itself
    /// (the flag at least two hand-overs away).
    pub sswait_idle_blocks: u64,
    /// Tasks this one woke ahead of time: blocked SS-Waiters whose
    /// partner it had just written to.
    pub prewakes: u64,
    /// Datagrams dropped because they did not come from a member of the
    /// job: an address no task has, another job, a rank past the job, or
    /// a rank other than the one whose address sent it.
    pub foreign: u64,
    /// Out-of-order datagrams dropped over the reorder budget (they come
    /// again).
    pub reorder_dropped: u64,
    /// Datagrams refused before anything parsed them: not sealed with the
    /// job's keys (forged, modified, another job's or another mode's),
    /// replayed, or of an older incarnation of their sender
    /// (`SSS_SECURITY=auth|encrypt`). Never answered.
    pub refused: u64,
    /// Times the progress thread was woken by a datagram or a ring (a
    /// doorbell, a hand-back, an earlier timer), not counting its own
    /// timers. While a waiter spins it receives for itself and the
    /// progress thread sleeps: a round trip between spinning waiters
    /// wakes no progress thread.
    pub progress_wakeups: u64,
    /// Times the progress thread, having left the socket to waiters, woke
    /// from its own timer to look whether they still wait. The period
    /// grows while they do, so a ping-pong between spinning waiters costs
    /// about one look per 400 µs, not one per 200 µs.
    pub progress_looks: u64,
    /// Same-node signals a waiting thread took from the signal ring and
    /// ran at once, with no queue or copy of their own: in a signal
    /// ping-pong between waiters, all of them.
    pub signals_inline: u64,
    /// Default waits that spun their whole budget and blocked (each pays
    /// a wake-up when its answer comes).
    pub blocked_waits: u64,
    /// Blocks of a default wait that ended by their safety-net timeout
    /// (20 ms) rather than by a wake: an answer that slow, or a wake-up
    /// lost (a condition that ignored what woke it).
    pub wait_timeouts: u64,
    /// Yields of waits that lasted (20 µs) without their answer: the
    /// partner may be waiting for this CPU, where the kernel put both
    /// tasks (see `YIELD_AFTER` in the wait's module).
    pub handovers: u64,
    /// Times a waiting thread moved itself to another CPU: its lasting
    /// waits kept handing its CPU to another thread while the job's
    /// tasks on the node did not outnumber the CPUs (the kernel had put
    /// two ping-ponging tasks on one CPU and left them there).
    pub moves: u64,
}

#[derive(Debug, Clone)]
struct PeerInfo {
    addr: SocketAddr,
    node: String,
    pid: u32,
    signal_key: u64,
    /// Random bytes of this incarnation, in the keys of its datagrams.
    salt: [u8; sss_seal::SALT_LEN],
}

pub(crate) struct Inner {
    job: u32,
    rank: u32,
    size: u32,
    node: String,
    peers: Vec<PeerInfo>,
    senders: Senders,
    /// Datagrams from addresses of no task ([`TaskStats::foreign`]).
    foreign: AtomicU64,
    /// Datagrams refused unopened ([`TaskStats::refused`]).
    refused: AtomicU64,
    segs: RwLock<SegTable>,
    handlers: RwLock<HashMap<u32, Handler>>,
    groups: Mutex<HashMap<u32, Vec<u32>>>,
    signal_key: u64,
    net: Mutex<Net>,
    sock: UdpSocket,
    wake: EventFd,
    /// Our control block: waiters' futex word, published segments,
    /// signal ring.
    ctl: CtlMap,
    /// How each peer is reached, by rank (see [`transport`]).
    routes: Vec<Route>,
    /// Their control blocks, read without the peer's lock (SS-Wait).
    peer_ctls: Vec<Option<Arc<CtlMap>>>,
    /// The other ranks with a control block in `peer_ctls`.
    local_peers: Vec<u32>,
    /// How long the next default wait spins before it blocks (ns):
    /// adapted between `cfg.spin` and `cfg.spin_max` (see `wait.rs`).
    spin_budget: AtomicU64,
    /// When the progress thread last woke blocked waiters (`now()`): a
    /// wait that blocked adapts its spin to when its answer came, not to
    /// when it woke (a wake-up costs 50–100 µs on a VM, which would make
    /// every blocked wait look too long to spin through).
    answered: AtomicU64,
    /// Every task of the job is on this node: answers land in memory, so
    /// a spinning waiter need not poll the socket (the progress thread
    /// still serves it).
    all_local: bool,
    /// CPUs this process may use, counted once: counting reads cgroup
    /// files, far too slow for every wait.
    ncpus: usize,
    next_wake: AtomicU64,
    /// Application threads spinning in a wait that receive from the
    /// socket themselves; while there are any, the progress thread leaves
    /// the socket to them (see [`wait::Claim`]).
    spinners: AtomicU32,
    /// When the last claim ended (`Inner::now`, ns): a claim that ended
    /// within [`progress::BETWEEN_WAITS`] means the application is between
    /// two waits and will receive for itself again soon.
    released: AtomicU64,
    /// When a spinning waiter last looked at the socket (nanoseconds
    /// since the task began): a spinner whose looks stopped was
    /// descheduled, and the progress thread watches the socket meanwhile.
    spin_looked: AtomicU64,
    /// A waiter gave the socket back to block: the progress thread must
    /// watch it whatever `released` says.
    handed_back: AtomicBool,
    /// The progress thread sleeps without watching the socket.
    sockless: AtomicBool,
    /// See [`TaskStats::progress_wakeups`].
    wakeups: AtomicU64,
    /// See [`TaskStats::progress_looks`].
    looks: AtomicU64,
    /// See [`TaskStats::signals_inline`].
    signals_inline: AtomicU64,
    /// See [`TaskStats::blocked_waits`].
    blocked_waits: AtomicU64,
    /// See [`TaskStats::wait_timeouts`].
    wait_timeouts: AtomicU64,
    /// See [`TaskStats::handovers`].
    handovers: AtomicU64,
    /// See [`TaskStats::moves`].
    moves: AtomicU64,
    shutdown: AtomicBool,
    /// Signals received and not yet run, in arrival order (queued under
    /// the net lock); see [`Inner::run_signals`].
    deferred: Mutex<Vec<(u32, u32, Vec<u8>)>>,
    /// `deferred` is not empty: set as signals are queued, cleared as
    /// the last are taken, both under its lock. Looked at without the
    /// lock by the paths that run a signal straight from the ring.
    has_deferred: AtomicBool,
    /// Held by the thread running signal handlers: one at a time, in
    /// order. Holds that thread's copy of the handler table.
    signal_runner: Mutex<Runner>,
    /// Bumped by every `set_handler`: the runner's copy of the table is
    /// current while its version equals this.
    handlers_version: AtomicU64,
    /// This task, for handlers run from a thread that has only `&Inner`.
    me: std::sync::Weak<Inner>,
    /// This node's IDM file, once its daemon published it.
    idm: std::sync::OnceLock<Idm>,
    /// IDM slot of each node name seen, to skip the search.
    idm_slots: Mutex<HashMap<String, usize>>,
    /// Nodes this task declared down from IDM, to bring them back.
    idm_down: Mutex<Vec<String>>,
    /// Last liveness check (ns since start).
    idm_checked: AtomicU64,
    /// Last attempt to map the IDM file (ns since start).
    idm_tried: AtomicU64,
    /// Packets may be held back for batching (set by submit, cleared by
    /// flush), so waiters know whether to flush first.
    maybe_held: AtomicBool,
    /// Per rank: an operation ever went to it over udp (so shm operations
    /// must first wait for those to be acknowledged, to keep order).
    udp_used: Vec<AtomicBool>,
    start: Instant,
    errors: Mutex<Vec<Error>>,
    /// See [`TaskStats::sswait_idle_blocks`].
    idle_blocks: AtomicU64,
    /// See [`TaskStats::prewakes`].
    prewakes: AtomicU64,
    boot: Mutex<Box<dyn Bootstrap>>,
    cfg: TaskConfig,
}

struct Owner {
    inner: Arc<Inner>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Drop for Owner {
    fn drop(&mut self) {
        // Give operations in flight a bounded chance to be acknowledged so
        // a task that exits right after writing does not strand its peers.
        let deadline = Instant::now() + Duration::from_secs(2);
        self.inner.wait_until(
            || self.inner.lock_net().ep.total_in_flight() == 0,
            Some(deadline),
        );
        self.inner.shutdown.store(true, Ordering::SeqCst);
        self.inner.wake.notify();
        if let Ok(mut t) = self.thread.lock() {
            if let Some(t) = t.take() {
                let _ = t.join();
            }
        }
        // Acks held back for piggybacking go now: peers that wrote last
        // would retransmit to nobody and take this task for down.
        {
            let mut net = self.inner.lock_net();
            net.ep.flush_acks();
            self.inner.flush(&mut net);
        }
        if let Ok(s) = self.inner.segs.read() {
            s.unlink_all();
        }
        let tag = self
            .inner
            .peers
            .get(self.inner.rank as usize)
            .map_or(0, |p| boot::tag_of(&p.salt));
        sys::shm_unlink(&ctl_name(self.inner.job, self.inner.rank, tag));
        // Failures nobody collected (no FENCE or QUIET after them) would
        // otherwise vanish with the task: say so where the launcher shows it.
        if let Ok(e) = self.inner.errors.lock() {
            if let Some(first) = e.first() {
                eprintln!(
                    "sss: task {} of job {}: {}{} operation(s) failed and were never collected (first: {first})",
                    self.inner.rank,
                    self.inner.job,
                    if e.len() >= ERRORS_KEPT { "at least " } else { "" },
                    e.len()
                );
            }
        }
    }
}

/// One task of a job. Cheap to clone; the task shuts down (after a bounded
/// wait for operations in flight) when the last clone made by the
/// application is dropped.
#[derive(Clone)]
pub struct Task {
    inner: Arc<Inner>,
    /// Shared by the application's clones; its drop shuts the task down.
    /// Handlers get a task without one.
    _owner: Option<Arc<Owner>>,
}

impl std::fmt::Debug for Task {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Task")
            .field("job", &self.inner.job)
            .field("rank", &self.inner.rank)
            .field("size", &self.inner.size)
            .finish()
    }
}

impl Task {
    /// The address of this task's socket (where its MBCF datagrams
    /// arrive).
    pub fn local_addr(&self) -> Result<std::net::SocketAddr, Error> {
        Ok(self.inner.sock.local_addr()?)
    }

    /// Job id.
    pub fn job(&self) -> u32 {
        self.inner.job
    }

    /// This task's rank.
    pub fn rank(&self) -> u32 {
        self.inner.rank
    }

    /// Tasks in the job.
    pub fn size(&self) -> u32 {
        self.inner.size
    }

    /// This task's node.
    pub fn node(&self) -> &str {
        &self.inner.node
    }

    /// The node of task `rank`.
    pub fn node_of(&self, rank: u32) -> Option<&str> {
        self.inner.peers.get(rank as usize).map(|p| p.node.as_str())
    }

    /// The process id of task `rank`.
    pub fn pid_of(&self, rank: u32) -> Option<u32> {
        self.inner.peers.get(rank as usize).map(|p| p.pid)
    }

    /// The udp address of task `rank`: datagrams claiming to come from
    /// it are accepted from this address only.
    pub fn udp_addr_of(&self, rank: u32) -> Option<SocketAddr> {
        self.inner.peers.get(rank as usize).map(|p| p.addr)
    }

    /// The key that protects this task's signal handlers; peers learn it
    /// when they join.
    pub fn signal_key(&self) -> u64 {
        self.inner.signal_key
    }

    /// Payload bytes per datagram this task sends: what
    /// [`TaskConfig::route_payload`] chose, or `SSS_PAYLOAD`.
    pub fn payload(&self) -> usize {
        self.inner.lock_net().ep.config().payload_size
    }

    /// The transport that carries operations to task `rank` (operations
    /// `shm` cannot apply still go over `udp`).
    pub fn transport_to(&self, rank: u32) -> Option<TransportKind> {
        self.inner.routes.get(rank as usize).map(Route::kind)
    }

    /// Publishes `word` to the tasks of this node (in this task's
    /// control block), for hints between the tasks of a library built on
    /// MBCF; they read it with [`Task::peer_word`].
    pub fn publish_word(&self, word: u32) {
        self.inner.ctl.ctl().app_word.store(word, Ordering::SeqCst);
    }

    /// The word same-node task `rank` last published
    /// ([`Task::publish_word`]; 0 before it published any); `None` for a
    /// task on another node, or outside the job.
    pub fn peer_word(&self, rank: u32) -> Option<u32> {
        let Some(Some(c)) = self.inner.peer_ctls.get(rank as usize) else {
            return None;
        };
        Some(c.ctl().app_word.load(Ordering::SeqCst))
    }

    /// The random tag in the name of task `rank`'s control block (see
    /// [`crate::node::TaskView::open`]); `None` past the job.
    pub fn ctl_tag(&self, rank: u32) -> Option<u64> {
        self.inner
            .peers
            .get(rank as usize)
            .map(|p| boot::tag_of(&p.salt))
    }

    /// Counters so far.
    pub fn stats(&self) -> TaskStats {
        let net = self.inner.lock_net();
        let s = net.ep.stats();
        TaskStats {
            packets_sent: s.packets_sent,
            bytes_sent: s.bytes_sent,
            packets_received: s.packets_received,
            bytes_received: s.bytes_received,
            retransmissions: s.retransmissions,
            timeouts: s.timeouts,
            rack_lost: s.rack_lost,
            timeout_lost: s.timeout_lost,
            spurious_timeouts: s.spurious_timeouts,
            dsacks: s.dsacks,
            duplicates: s.duplicates,
            applied: s.applied + self.inner.ctl.ctl().applied.load(Ordering::Relaxed),
            rejected: s.rejected + self.inner.ctl.ctl().rejected.load(Ordering::Relaxed),
            bad_packets: s.bad_packets,
            sswait_idle_blocks: self.inner.idle_blocks.load(Ordering::Relaxed),
            prewakes: self.inner.prewakes.load(Ordering::Relaxed),
            foreign: s.not_member + self.inner.foreign.load(Ordering::Relaxed),
            reorder_dropped: s.reorder_dropped,
            refused: self.inner.refused.load(Ordering::Relaxed),
            progress_wakeups: self.inner.wakeups.load(Ordering::Relaxed),
            progress_looks: self.inner.looks.load(Ordering::Relaxed),
            signals_inline: self.inner.signals_inline.load(Ordering::Relaxed),
            blocked_waits: self.inner.blocked_waits.load(Ordering::Relaxed),
            wait_timeouts: self.inner.wait_timeouts.load(Ordering::Relaxed),
            handovers: self.inner.handovers.load(Ordering::Relaxed),
            moves: self.inner.moves.load(Ordering::Relaxed),
        }
    }
}

impl Inner {
    fn now(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }

    fn lock_net(&self) -> MutexGuard<'_, Net> {
        // A panic while holding the lock leaves consistent-enough state for
        // shutdown; keep going rather than poison the whole task.
        self.net.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn notify_waiters(&self) {
        if self.ctl.ctl().waiters.load(Ordering::Relaxed) > 0 {
            self.answered.store(self.now(), Ordering::Relaxed);
        }
        self.ctl.wake();
    }

    /// Republishes the segment table for same-node peers.
    fn publish(&self, segs: &SegTable) {
        self.ctl.publish(&segs.infos());
    }
}
