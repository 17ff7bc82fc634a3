//! Tasks: joining a job, the progress thread, and the operation API.

use crate::fifo::{Ring, FIFO_HEADER};
use crate::idm::{Idm, NodeData, TaskState};
use crate::segment::{Perm, SegTable, Segment, SegmentInfo};
use crate::shm::{ctl_name, CtlMap, Direct, Peer};
use crate::sys::{self, EventFd};
use crate::{Error, RemoteAddr};
use sss_proto::{
    Body, Completion, Config, Endpoint, Event, McastId, Op, OpId, OpOptions, Outcome, Packet,
    SubmitError, Target,
};
use sss_wire::{Notify, Status, TaskId};
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, RwLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How a task learns its job: rank, size, node, and an all-gather to swap
/// addresses. Implemented by the launcher's bootstrap and by
/// [`ThreadBoot`] for tasks that are threads of one process (tests).
pub trait Bootstrap: Send {
    /// Job id, equal in every task.
    fn job(&self) -> u32;
    /// This task's rank.
    fn rank(&self) -> u32;
    /// Tasks in the job.
    fn size(&self) -> u32;
    /// This task's node: a host address or name. Equal nodes share memory.
    fn node(&self) -> String;
    /// Every task's bytes, by rank; a barrier too.
    fn allgather(&mut self, data: &[u8]) -> Result<Vec<Vec<u8>>, String>;
}

struct TbState {
    gen: u64,
    count: u32,
    data: Vec<Vec<u8>>,
    result: Arc<Vec<Vec<u8>>>,
}

struct TbShared {
    m: Mutex<TbState>,
    cv: Condvar,
}

/// A bootstrap for tasks that are threads of one process.
pub struct ThreadBoot {
    shared: Arc<TbShared>,
    job: u32,
    rank: u32,
    size: u32,
    node: String,
}

impl ThreadBoot {
    /// `n` bootstraps of one job; rank i sits on `nodes[i % nodes.len()]`.
    pub fn group(n: u32, nodes: &[&str]) -> Vec<ThreadBoot> {
        let shared = Arc::new(TbShared {
            m: Mutex::new(TbState {
                gen: 0,
                count: 0,
                data: vec![Vec::new(); n as usize],
                result: Arc::new(Vec::new()),
            }),
            cv: Condvar::new(),
        });
        let job = (sys::random_u64() as u32).max(1);
        (0..n)
            .map(|r| ThreadBoot {
                shared: shared.clone(),
                job,
                rank: r,
                size: n,
                node: nodes
                    .get(r as usize % nodes.len().max(1))
                    .unwrap_or(&"127.0.0.1")
                    .to_string(),
            })
            .collect()
    }
}

impl Bootstrap for ThreadBoot {
    fn job(&self) -> u32 {
        self.job
    }
    fn rank(&self) -> u32 {
        self.rank
    }
    fn size(&self) -> u32 {
        self.size
    }
    fn node(&self) -> String {
        self.node.clone()
    }
    fn allgather(&mut self, data: &[u8]) -> Result<Vec<Vec<u8>>, String> {
        let mut st = self.shared.m.lock().map_err(|_| "poisoned")?;
        let gen = st.gen;
        st.data[self.rank as usize] = data.to_vec();
        st.count += 1;
        if st.count == self.size {
            st.result = Arc::new(std::mem::take(&mut st.data));
            st.data = vec![Vec::new(); self.size as usize];
            st.count = 0;
            st.gen += 1;
            self.shared.cv.notify_all();
            return Ok((*st.result).clone());
        }
        while st.gen == gen {
            st = self.shared.cv.wait(st).map_err(|_| "poisoned")?;
        }
        Ok((*st.result).clone())
    }
}

impl Bootstrap for sss_boot::Boot {
    fn job(&self) -> u32 {
        sss_boot::Boot::job(self)
    }
    fn rank(&self) -> u32 {
        sss_boot::Boot::rank(self)
    }
    fn size(&self) -> u32 {
        sss_boot::Boot::size(self)
    }
    fn node(&self) -> String {
        sss_boot::Boot::node(self).to_string()
    }
    fn allgather(&mut self, data: &[u8]) -> Result<Vec<Vec<u8>>, String> {
        sss_boot::Boot::allgather(self, data).map_err(|e| e.to_string())
    }
}

/// Tunables of a task, read from the environment by [`TaskConfig::from_env`]
/// (in `settings.rs`).
#[derive(Debug, Clone)]
pub struct TaskConfig {
    /// Protocol tunables.
    pub proto: Config,
    /// How long a waiter spins before it blocks (`SSS_SPIN_US`, default 50).
    pub spin: Duration,
    /// Socket buffer size in bytes (`SSS_SOCKBUF`, default 4 MiB).
    pub sockbuf: i32,
    /// Transport choice (`SSS_TRANSPORT=auto|udp|shm`).
    pub transport: Transport,
    /// Fault injection: fraction of outgoing udp datagrams dropped
    /// (`SSS_FAULT_DROP`, default 0).
    pub fault_drop: f64,
    /// Fault injection: fraction of outgoing udp datagrams sent twice
    /// (`SSS_FAULT_DUP`, default 0).
    pub fault_dup: f64,
    /// SS-Wait policy constants.
    pub sswait: SsWaitTuning,
    /// CPU binding of the task (`SSS_BIND=auto|core|none`).
    pub bind: Bind,
}

/// Whether a task binds itself to one CPU when it joins its job.
///
/// Bound tasks take CPUs round robin by their rank among the job's tasks
/// on the node: the k-th task on the node gets the k-th CPU it may use
/// (modulo their number), so neighbours in rank order sit on different
/// CPUs. Under oversubscription this is what makes SS-Wait's wake-ups
/// cheap: a task blocked two hand-overs away is woken by a task on its
/// own CPU (no inter-processor interrupt), and the kernel does not move
/// tasks between CPUs in the middle of a hand-over. The binding applies
/// to the thread that joins and to the threads it starts later (the
/// progress thread among them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Bind {
    /// Bind when the job's own tasks on the node outnumber the CPUs the
    /// task may use; leave placement to the kernel otherwise.
    #[default]
    Auto,
    /// Always bind.
    Core,
    /// Never bind.
    None,
}

/// SS-Wait's policy constants ([`Task::sswait`]), read once when the task
/// starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SsWaitTuning {
    /// Longest stretch spun (partner running, CPUs to spare) before the
    /// partner and the node are looked at again (`SSS_SSWAIT_SPIN_US`,
    /// default 2000).
    pub spin: Duration,
    /// Longest block before the waiter looks again
    /// (`SSS_SSWAIT_BLOCK_US`, default 5000).
    pub block: Duration,
    /// Yields before blocking while the partner is blocked itself
    /// (`SSS_SSWAIT_YIELDS`, default 32): it needs a wake-up before it can
    /// answer, so our flag is not imminent.
    pub yields: u32,
    /// Longest stretch of yielding on an oversubscribed node while the
    /// partner is not blocked, before blocking anyway
    /// (`SSS_SSWAIT_YIELD_US`, default 1000): bounds what a waiter costs
    /// others while its partner computes.
    pub yield_for: Duration,
    /// CPUs SS-Wait counts when it judges oversubscription
    /// (`SSS_SSWAIT_CPUS`; default: the CPUs the task could use when it
    /// started). Fewer keeps CPUs free for other work; also for tests.
    pub cpus: Option<usize>,
}

impl Default for SsWaitTuning {
    fn default() -> Self {
        Self {
            spin: Duration::from_micros(2000),
            block: Duration::from_micros(5000),
            yields: 32,
            yield_for: Duration::from_micros(1000),
            cpus: None,
        }
    }
}

/// Which transport carries operations to a peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Transport {
    /// `shm` for tasks on the same node, `udp` for the others.
    #[default]
    Auto,
    /// `udp` for everyone, even on one node.
    Udp,
}

impl Default for TaskConfig {
    fn default() -> Self {
        Self {
            proto: Config::default(),
            spin: Duration::from_micros(50),
            sockbuf: 4 << 20,
            transport: Transport::Auto,
            fault_drop: 0.0,
            fault_dup: 0.0,
            sswait: SsWaitTuning::default(),
            bind: Bind::Auto,
        }
    }
}

/// What an SS-Waiter does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SsNext {
    /// The partner runs and there is a CPU for everyone: the flag may
    /// change any moment, and spinning sees it first.
    Spin,
    /// Oversubscribed, partner not blocked: the partner (or the task it
    /// waits for) needs CPU time to answer, so give ours away and look
    /// again when we are back. A yield keeps the CPUs busy, where a
    /// futex wake-up of a blocked task costs an inter-processor interrupt
    /// and often an idle CPU's wake-up.
    Yield,
    /// The partner is blocked: it needs a wake-up before it can answer,
    /// so our flag is not imminent; yield a few times, then block.
    YieldThenBlock,
    /// Oversubscribed, and the partner (on this node) is itself in an
    /// SS-Wait that nothing has landed in yet: our flag is at least two
    /// hand-overs away. Block, so the tasks that are about to run have
    /// the CPUs; the sender whose operation lands in the partner's memory
    /// wakes us (see [`Inner::prewake`]), one hand-over ahead of time.
    BlockWhileIdle,
}

/// The CPU the `local_rank`-th of `local_size` tasks on a node binds to
/// under `policy`, from the CPUs it may use (`allowed`, ascending).
fn bind_cpu(
    policy: Bind,
    local_rank: usize,
    local_size: usize,
    allowed: &[usize],
) -> Option<usize> {
    let bind = match policy {
        Bind::None => false,
        Bind::Core => true,
        Bind::Auto => local_size > allowed.len(),
    };
    if !bind || allowed.is_empty() {
        return None;
    }
    Some(allowed[local_rank % allowed.len()])
}

/// Binds the calling thread (and the threads it starts) as [`Bind`]
/// says. Failing to bind is not an error: placement is a performance
/// matter, and a task that cannot change its affinity still runs.
fn bind(policy: Bind, local_rank: usize, local_size: usize) {
    if policy == Bind::None {
        return;
    }
    let Ok(allowed) = sys::allowed_cpus() else {
        return;
    };
    if let Some(cpu) = bind_cpu(policy, local_rank, local_size, &allowed) {
        let _ = sys::bind_to_cpu(cpu);
    }
}

/// A partner as SS-Wait sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Partner {
    /// Running, or about to: computing, or in a wait something has
    /// landed in.
    Busy,
    /// On this node, in an SS-Wait nothing has landed in yet.
    Idle,
    /// Blocked in a wait.
    Blocked,
}

/// SS-Wait's decision from the node's and the partner's state.
fn sswait_next(oversubscribed: bool, partner: Partner) -> SsNext {
    match (oversubscribed, partner) {
        (_, Partner::Blocked) => SsNext::YieldThenBlock,
        (false, _) => SsNext::Spin,
        (true, Partner::Idle) => SsNext::BlockWhileIdle,
        (true, Partner::Busy) => SsNext::Yield,
    }
}

/// Oversubscription as SS-Wait judges it: more of our job's tasks on
/// the node not blocked (`active`, the caller included) than CPUs —
/// exact and current — or, in the daemon's last sample (`page`:
/// runnable threads, CPUs), more runnable threads than CPUs, which also
/// counts other programs. The sample alone is not enough: taken while
/// our tasks were blocked it says "CPUs to spare" for 10 ms after they
/// all started spinning.
fn oversubscribed(ncpus: usize, active: usize, page: Option<(u32, u32)>) -> bool {
    active > ncpus.max(1) || page.is_some_and(|(r, c)| r > c.max(1))
}

/// How a wait behaves; see [`Task::wait_word_with`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitPolicy {
    /// Spin until the condition holds (also making progress).
    Spin,
    /// Block on the futex until something lands.
    Block,
    /// SS-Wait: spin while this partner runs on a node with CPUs to
    /// spare, block otherwise.
    SsWait(u32),
}

/// Options of one operation.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// Complete the returned [`Request`] when the target applied the
    /// operation (status return). Without it a WRITE, FIFO push or SIGNAL
    /// completes locally at once; errors still surface in
    /// [`Task::fence`] / [`Task::quiet`].
    pub status_return: bool,
    /// No flow control: sent once, unordered, never retransmitted.
    pub nofc: bool,
    /// WRITE only: after the data, add `addend` to the 8-byte counter at
    /// (`key`, `addr`) in the same target.
    pub notify: Option<Notify>,
    /// Local memory the completion is delivered into (C-style APIs): see
    /// [`Sink`]. Implies status return.
    pub sink: Option<Sink>,
}

/// Where a completion lands in local memory, for callers that poll memory
/// rather than hold a [`Request`] (the C API). On completion, successful or
/// not, the result is stored first — READ data copied to `data` (at most
/// `data_len` bytes), an atomic's old value written to `data` as a u64 —
/// then `counter`, if set, is incremented with release order, and waiters
/// are woken.
#[derive(Debug, Clone, Copy, Default)]
pub struct Sink {
    counter: usize,
    data: usize,
    data_len: usize,
}

impl Sink {
    /// A sink bumping `counter` and storing results at `data`.
    ///
    /// # Safety
    /// `counter` (if not null) must point to an 8-byte aligned u64 and
    /// `data` (if not null) to `data_len` writable bytes (8-byte aligned
    /// when it receives an atomic's value), both valid until the operation
    /// completes, and not accessed non-atomically by others meanwhile.
    #[allow(unsafe_code)]
    pub unsafe fn new(counter: *const AtomicU64, data: *mut u8, data_len: usize) -> Self {
        Self {
            counter: counter as usize,
            data: data as usize,
            data_len,
        }
    }

    // SAFETY (every block below): Sink::new's contract — the locations
    // are valid, writable and ours until the operation completes, which is
    // now.
    #[allow(unsafe_code)]
    fn deliver(&self, r: &Result<Reply, Error>) {
        if self.data != 0 {
            match r {
                // SAFETY: see above.
                Ok(Reply::Data(d)) => unsafe {
                    crate::mem::sink_bytes(self.data, self.data_len, d)
                },
                Ok(Reply::Value(v)) if self.data_len >= 8 => {
                    // SAFETY: see above; data_len >= 8.
                    unsafe { crate::mem::sink_bytes(self.data, 8, &v.to_ne_bytes()) }
                }
                _ => {}
            }
        }
        if self.counter != 0 {
            // SAFETY: see above.
            unsafe { crate::mem::sink_counter(self.counter) }.fetch_add(1, Ordering::Release);
        }
    }
}

impl Options {
    /// Status return on.
    pub fn status() -> Self {
        Self {
            status_return: true,
            ..Self::default()
        }
    }

    /// Bump the target counter at `at` by one after the data.
    pub fn notify(at: RemoteAddr) -> Self {
        Self {
            notify: Some(Notify {
                key: at.key,
                addr: at.addr,
                addend: 1,
            }),
            ..Self::default()
        }
    }
}

/// What a completed operation returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// Applied.
    Done,
    /// The old value of an atomic.
    Value(u64),
    /// The bytes of a READ.
    Data(Vec<u8>),
    /// Members of a multicast group that applied the write.
    Members(u32),
}

struct ReqState {
    done: AtomicBool,
    result: Mutex<Option<Result<Reply, Error>>>,
    sink: Option<Sink>,
    /// The application dropped its Request: an error must go to the
    /// task's error list, for fence/quiet to report.
    abandoned: AtomicBool,
}

impl ReqState {
    fn new(sink: Option<Sink>) -> Arc<Self> {
        Arc::new(Self {
            done: AtomicBool::new(false),
            result: Mutex::new(None),
            sink,
            abandoned: AtomicBool::new(false),
        })
    }

    /// Records the outcome; an error nobody will collect goes to `errors`.
    fn complete(&self, r: Result<Reply, Error>, errors: &Mutex<Vec<Error>>) {
        if let Some(s) = &self.sink {
            s.deliver(&r);
        }
        if let Ok(mut g) = self.result.lock() {
            if self.abandoned.load(Ordering::Acquire) {
                if let Err(e) = r {
                    if let Ok(mut errs) = errors.lock() {
                        keep_error(&mut errs, e);
                    }
                }
            } else {
                *g = Some(r);
            }
        }
        self.done.store(true, Ordering::Release);
    }
}

/// A pending operation. Dropping it does not cancel the operation.
pub struct Request {
    state: Option<Arc<ReqState>>,
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Request {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Request")
            .field("done", &self.is_done())
            .finish()
    }
}

impl Drop for Request {
    fn drop(&mut self) {
        let Some(st) = self.state.take() else {
            return;
        };
        // Under the result lock, so a completion racing with us either sees
        // the flag or leaves its result for us to move.
        if let Ok(mut g) = st.result.lock() {
            st.abandoned.store(true, Ordering::Release);
            if let Some(Err(e)) = g.take() {
                if let Ok(mut errs) = self.inner.errors.lock() {
                    keep_error(&mut errs, e);
                }
            }
        };
    }
}

impl Request {
    /// True once the operation completed (or when it completes locally).
    pub fn is_done(&self) -> bool {
        self.state
            .as_ref()
            .is_none_or(|s| s.done.load(Ordering::Acquire))
    }

    /// Waits for completion.
    pub fn wait(mut self) -> Result<Reply, Error> {
        let Some(st) = self.state.take() else {
            return Ok(Reply::Done);
        };
        self.inner
            .wait_until(|| st.done.load(Ordering::Acquire), None);
        let r = st
            .result
            .lock()
            .ok()
            .and_then(|mut g| g.take())
            .unwrap_or(Err(Error::Shutdown));
        r
    }

    /// Waits for the old value of an atomic.
    pub fn wait_value(self) -> Result<u64, Error> {
        match self.wait()? {
            Reply::Value(v) => Ok(v),
            _ => Err(Error::Invalid("not an atomic")),
        }
    }

    /// Waits for the bytes of a READ.
    pub fn wait_data(self) -> Result<Vec<u8>, Error> {
        match self.wait()? {
            Reply::Data(v) => Ok(v),
            _ => Err(Error::Invalid("not a read")),
        }
    }
}

/// A signal handler: runs in the receiving task's progress thread with the
/// sender's rank and payload, and may issue operations through the context.
pub type Handler = Arc<dyn Fn(&SignalContext<'_>, &[u8]) + Send + Sync>;

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
}

#[derive(Debug, Clone)]
struct PeerInfo {
    addr: SocketAddr,
    node: String,
    pid: u32,
    signal_key: u64,
}

/// The rank behind each udp source address, so that a datagram's claimed
/// source can be checked against where it came from.
struct Senders {
    by_addr: HashMap<SocketAddr, u32>,
    /// Tasks bound to an unspecified address are known by port alone.
    by_port: HashMap<u16, u32>,
}

impl Senders {
    fn new(peers: &[PeerInfo]) -> Self {
        let mut s = Self {
            by_addr: HashMap::new(),
            by_port: HashMap::new(),
        };
        for (r, p) in peers.iter().enumerate() {
            if p.addr.ip().is_unspecified() {
                s.by_port.insert(p.addr.port(), r as u32);
            } else {
                s.by_addr.insert(p.addr, r as u32);
            }
        }
        s
    }

    fn rank(&self, a: SocketAddr) -> Option<u32> {
        self.by_addr
            .get(&a)
            .or_else(|| self.by_port.get(&a.port()))
            .copied()
    }
}

struct Net {
    ep: Endpoint,
    reqs: HashMap<OpId, Arc<ReqState>>,
    mreqs: HashMap<McastId, Arc<ReqState>>,
    out: Vec<u8>,
    /// xorshift state of the fault injector.
    rng: u64,
    /// Datagrams gathered for one GSO send.
    batch: Vec<u8>,
    /// Whether the kernel takes GSO sends.
    gso: bool,
    /// Operations submitted since the last flush (held back while earlier
    /// ones are in flight, so they leave in batches).
    held: usize,
}

impl Net {
    /// A uniform draw in [0, 1).
    fn draw(&mut self) -> f64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        (self.rng >> 11) as f64 / (1u64 << 53) as f64
    }
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
    /// Same-node peers reached through shared memory, by rank.
    shm_peers: Vec<Option<Mutex<Peer>>>,
    /// Their control blocks, read without the peer's lock (SS-Wait).
    peer_ctls: Vec<Option<Arc<CtlMap>>>,
    /// Every task of the job is on this node: answers land in memory, so
    /// a spinning waiter need not poll the socket (the progress thread
    /// still serves it).
    all_local: bool,
    /// CPUs this process may use, counted once: counting reads cgroup
    /// files, far too slow for every wait.
    ncpus: usize,
    next_wake: AtomicU64,
    shutdown: AtomicBool,
    progress_thread: std::sync::OnceLock<std::thread::ThreadId>,
    /// Signals collected by inline progress, run by the progress loop.
    deferred: Mutex<Vec<(u32, u32, Vec<u8>)>>,
    /// This node's IDM file, once its daemon published it.
    idm: Mutex<Option<Arc<Idm>>>,
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

/// Asynchronous errors kept for FENCE and QUIET; a program that never
/// collects them must not grow without bound.
const ERRORS_KEPT: usize = 1024;

fn keep_error(errs: &mut Vec<Error>, e: Error) {
    if errs.len() < ERRORS_KEPT {
        errs.push(e);
    }
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
        if let Ok(s) = self.inner.segs.read() {
            s.unlink_all();
        }
        sys::shm_unlink(&ctl_name(self.inner.job, self.inner.rank));
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

fn encode_peer(addr: SocketAddr, node: &str, pid: u32, sk: u64) -> Vec<u8> {
    format!("{addr}\n{node}\n{pid}\n{sk}").into_bytes()
}

fn decode_peer(b: &[u8]) -> Option<PeerInfo> {
    let s = std::str::from_utf8(b).ok()?;
    let mut it = s.split('\n');
    Some(PeerInfo {
        addr: it.next()?.parse().ok()?,
        node: it.next()?.to_string(),
        pid: it.next()?.parse().ok()?,
        signal_key: it.next()?.parse().ok()?,
    })
}

fn bind_addr(node: &str) -> IpAddr {
    if let Ok(ip) = node.parse::<IpAddr>() {
        return ip;
    }
    (node, 0)
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .map_or(IpAddr::from([0, 0, 0, 0]), |a| a.ip())
}

impl Task {
    /// Joins the job this process was started in: `sss run`, Slurm, PMI or
    /// Open MPI variables, or a job of one task when there are none.
    /// Tunables come from the environment ([`TaskConfig::from_env`]).
    pub fn init() -> Result<Task, Error> {
        // Settings first: a bad one fails every task at once, before any
        // of them waits for the others.
        let cfg = TaskConfig::from_env()?;
        let boot = sss_boot::Boot::from_env().map_err(|e| Error::Boot(e.to_string()))?;
        Self::join(Box::new(boot), cfg)
    }

    /// Joins the job described by `boot`: binds a UDP socket on the node's
    /// address, swaps addresses with every task, starts the progress
    /// thread.
    pub fn join(mut boot: Box<dyn Bootstrap>, cfg: TaskConfig) -> Result<Task, Error> {
        cfg.proto.validate().map_err(Error::Config)?;
        let (job, rank, size, node) = (boot.job(), boot.rank(), boot.size(), boot.node());
        let sock = UdpSocket::bind((bind_addr(&node), 0))?;
        sock.set_nonblocking(true)?;
        sys::set_socket_buffers(sock.as_raw_fd(), cfg.sockbuf);
        sys::enable_gro(sock.as_raw_fd());
        let signal_key = sys::random_u64();
        let ctl = CtlMap::create(job, rank, &node)?;
        let me = encode_peer(sock.local_addr()?, &node, std::process::id(), signal_key);
        let all = boot.allgather(&me).map_err(Error::Boot)?;
        if all.len() != size as usize {
            return Err(Error::Boot(format!(
                "{} answers for {size} tasks",
                all.len()
            )));
        }
        let peers = all
            .iter()
            .map(|b| decode_peer(b).ok_or_else(|| Error::Boot("malformed peer record".into())))
            .collect::<Result<Vec<_>, _>>()?;
        let mut shm_peers = Vec::with_capacity(peers.len());
        let mut peer_ctls = Vec::with_capacity(peers.len());
        for (r, p) in peers.iter().enumerate() {
            let local = cfg.transport == Transport::Auto && p.node == node;
            if local {
                let peer = Peer::open(job, r as u32, p.pid)?;
                peer_ctls.push(Some(peer.ctl()));
                shm_peers.push(Some(Mutex::new(peer)));
            } else {
                peer_ctls.push(None);
                shm_peers.push(None);
            }
        }
        // CPUs counted before binding, which would leave one.
        let ncpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let local_rank = peers[..rank as usize]
            .iter()
            .filter(|p| p.node == node)
            .count();
        let local_size = peers.iter().filter(|p| p.node == node).count();
        bind(cfg.bind, local_rank, local_size);
        let mut pcfg = cfg.proto.clone();
        pcfg.members = Some(size);
        pcfg.epoch = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_secs() as u32);
        let inner = Arc::new(Inner {
            job,
            rank,
            size,
            node,
            senders: Senders::new(&peers),
            foreign: AtomicU64::new(0),
            peers,
            segs: RwLock::new(SegTable::new(job, rank)),
            handlers: RwLock::new(HashMap::new()),
            groups: Mutex::new(HashMap::new()),
            signal_key,
            net: Mutex::new(Net {
                ep: Endpoint::new(TaskId::new(job, rank), pcfg),
                reqs: HashMap::new(),
                mreqs: HashMap::new(),
                out: Vec::with_capacity(2048),
                rng: sys::random_u64() | 1,
                batch: Vec::with_capacity(64 << 10),
                gso: std::env::var_os("SSS_NO_GSO").is_none(),
                held: 0,
            }),
            sock,
            wake: EventFd::new()?,
            ctl,
            shm_peers,
            all_local: peer_ctls.iter().all(Option::is_some),
            peer_ctls,
            ncpus,
            next_wake: AtomicU64::new(u64::MAX),
            shutdown: AtomicBool::new(false),
            progress_thread: std::sync::OnceLock::new(),
            deferred: Mutex::new(Vec::new()),
            idm: Mutex::new(None),
            idm_slots: Mutex::new(HashMap::new()),
            idm_down: Mutex::new(Vec::new()),
            idm_checked: AtomicU64::new(0),
            idm_tried: AtomicU64::new(0),
            maybe_held: AtomicBool::new(false),
            udp_used: (0..size).map(|_| AtomicBool::new(false)).collect(),
            start: Instant::now(),
            errors: Mutex::new(Vec::new()),
            idle_blocks: AtomicU64::new(0),
            prewakes: AtomicU64::new(0),
            boot: Mutex::new(boot),
            cfg,
        });
        let i2 = inner.clone();
        let thread = std::thread::Builder::new()
            .name(format!("sss-progress-{rank}"))
            .spawn(move || progress(i2))?;
        Ok(Task {
            inner: inner.clone(),
            _owner: Some(Arc::new(Owner {
                inner,
                thread: Mutex::new(Some(thread)),
            })),
        })
    }

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

    /// Stores `data` at `at`. See the crate docs for buffer reuse and
    /// visibility.
    pub fn write(&self, at: RemoteAddr, data: &[u8], opts: Options) -> Result<Request, Error> {
        let op = Op::Write {
            key: at.key,
            addr: at.addr,
            data,
            notify: opts.notify,
        };
        self.submit(at.rank, op, opts)
    }

    /// Fetches `len` bytes at `at`.
    pub fn read(&self, at: RemoteAddr, len: usize, opts: Options) -> Result<Request, Error> {
        let len = u32::try_from(len).map_err(|_| Error::Invalid("read too large"))?;
        let op = Op::Read {
            key: at.key,
            addr: at.addr,
            len,
        };
        self.submit(at.rank, op, opts)
    }

    /// Atomically stores `value` at `at` (8-byte aligned); the request
    /// yields the old value.
    pub fn swap(&self, at: RemoteAddr, value: u64, opts: Options) -> Result<Request, Error> {
        let op = Op::Swap {
            key: at.key,
            addr: at.addr,
            operand: value,
        };
        self.submit(at.rank, op, opts)
    }

    /// Atomically replaces `expected` by `new` at `at`; yields the old value.
    pub fn cas(
        &self,
        at: RemoteAddr,
        expected: u64,
        new: u64,
        opts: Options,
    ) -> Result<Request, Error> {
        let op = Op::Cas {
            key: at.key,
            addr: at.addr,
            expected,
            new,
        };
        self.submit(at.rank, op, opts)
    }

    /// Atomically adds `value` at `at`; yields the old value.
    pub fn fetch_add(&self, at: RemoteAddr, value: u64, opts: Options) -> Result<Request, Error> {
        let op = Op::FetchAdd {
            key: at.key,
            addr: at.addr,
            operand: value,
        };
        self.submit(at.rank, op, opts)
    }

    /// Pushes `msg` into the FIFO queue at `queue`.
    pub fn fifo_push(
        &self,
        queue: RemoteAddr,
        msg: &[u8],
        opts: Options,
    ) -> Result<Request, Error> {
        let op = Op::Fifo {
            key: queue.key,
            addr: queue.addr,
            data: msg,
        };
        self.submit(queue.rank, op, opts)
    }

    /// Runs handler `handler` of task `rank` with `payload`.
    pub fn signal(
        &self,
        rank: u32,
        handler: u32,
        payload: &[u8],
        opts: Options,
    ) -> Result<Request, Error> {
        let key = self
            .inner
            .peers
            .get(rank as usize)
            .ok_or(Error::NoSuchTask(rank))?
            .signal_key;
        let op = Op::Signal {
            key,
            handler,
            data: payload,
        };
        self.submit(rank, op, opts)
    }

    /// Registers handler `index` of this task.
    pub fn set_handler(&self, index: u32, h: Handler) -> Result<(), Error> {
        self.inner
            .handlers
            .write()
            .map_err(|_| Error::Shutdown)?
            .insert(index, h);
        self.inner.ctl.set_handler(index);
        Ok(())
    }

    /// Creates a FIFO queue of `slots` (a power of two) messages of at
    /// most `max_msg` bytes at `offset` (64-byte aligned) in `seg`.
    pub fn fifo_create(
        &self,
        seg: &Segment,
        offset: usize,
        slots: u32,
        max_msg: usize,
    ) -> Result<Fifo, Error> {
        let bytes = crate::fifo::fifo_bytes(slots, max_msg);
        if offset.checked_add(bytes).is_none_or(|e| e > seg.len()) {
            return Err(Error::Invalid("queue does not fit in the segment"));
        }
        let mem = seg.check(offset, bytes)?;
        let ring = Ring::create(mem, slots, max_msg).map_err(Error::Invalid)?;
        Ok(Fifo {
            ring,
            at: seg.info.at(offset as u64),
            _seg: seg.clone(),
        })
    }

    /// Declares a multicast group; every member must declare it with the
    /// same ranks in the same order.
    pub fn group_create(&self, group: u32, ranks: &[u32]) -> Result<(), Error> {
        if ranks.iter().any(|&r| r >= self.inner.size) {
            return Err(Error::Invalid("rank outside the job"));
        }
        let members = ranks
            .iter()
            .map(|&r| TaskId::new(self.inner.job, r))
            .collect();
        self.inner.lock_net().ep.add_group(group, members);
        self.inner
            .groups
            .lock()
            .map_err(|_| Error::Shutdown)?
            .insert(group, ranks.to_vec());
        Ok(())
    }

    /// WRITEs `data` at byte `offset` of the segment with key `key` in
    /// every member of `group` (the caller included, if it is a member);
    /// members hold such a segment from [`Task::alloc_shared_key`] or
    /// [`Task::alloc_symmetric`]. Completes with the number of other
    /// members that applied it.
    pub fn multicast(
        &self,
        group: u32,
        key: u64,
        offset: u64,
        data: &[u8],
    ) -> Result<Request, Error> {
        let addr = offset;
        let member = self
            .inner
            .groups
            .lock()
            .map_err(|_| Error::Shutdown)?
            .get(&group)
            .ok_or(Error::Invalid("unknown group"))?
            .contains(&self.inner.rank);
        if member {
            let segs = self.inner.segs.read().map_err(|_| Error::Shutdown)?;
            segs.check_offset(key, addr, data.len(), Perm::WRITE)
                .map_err(Error::Remote)?
                .write(data);
        }
        let st = ReqState::new(None);
        let mut net = self.inner.lock_net();
        loop {
            let now = self.inner.now();
            match net.ep.multicast(now, group, key, addr, data) {
                Ok(id) => {
                    net.mreqs.insert(id, st.clone());
                    break;
                }
                Err(SubmitError::WouldBlock) => {
                    drop(net);
                    self.inner.wait_progress();
                    net = self.inner.lock_net();
                }
                Err(SubmitError::PeerDown) => return Err(Error::Remote(Status::NodeDown)),
                Err(_) => return Err(Error::Invalid("multicast too large or unknown group")),
            }
        }
        self.inner.flush(&mut net);
        // A group with no other member completes at once.
        self.inner.handle_events(&mut net);
        drop(net);
        self.inner.wake_if_needed();
        Ok(Request {
            state: Some(st),
            inner: self.inner.clone(),
        })
    }

    fn submit(&self, rank: u32, op: Op<'_>, opts: Options) -> Result<Request, Error> {
        self.inner.submit(rank, op, opts)
    }

    /// Waits until every earlier operation to `rank` is acknowledged, then
    /// reports the first asynchronous error, if any.
    pub fn fence(&self, rank: u32) -> Result<(), Error> {
        let peer = TaskId::new(self.inner.job, rank);
        self.inner
            .wait_until(|| self.inner.lock_net().ep.in_flight(peer) == 0, None);
        self.take_error()
    }

    /// Waits until every earlier operation to every task is acknowledged,
    /// then reports the first asynchronous error, if any.
    pub fn quiet(&self) -> Result<(), Error> {
        self.inner
            .wait_until(|| self.inner.lock_net().ep.total_in_flight() == 0, None);
        self.take_error()
    }

    fn take_error(&self) -> Result<(), Error> {
        let mut e = self.inner.errors.lock().map_err(|_| Error::Shutdown)?;
        if e.is_empty() {
            Ok(())
        } else {
            Err(e.remove(0))
        }
    }

    /// Waits until `pred` holds for `word` (a flag or counter that remote
    /// operations update). Spins briefly, then blocks until the progress
    /// thread applies something.
    pub fn wait_word(&self, word: &AtomicU64, pred: impl Fn(u64) -> bool) -> u64 {
        let mut v = 0;
        self.inner.wait_until(
            || {
                v = word.load(Ordering::Acquire);
                pred(v)
            },
            None,
        );
        v
    }

    /// Like [`Task::wait_word`] with a deadline; `None` when it passed.
    pub fn wait_word_timeout(
        &self,
        word: &AtomicU64,
        pred: impl Fn(u64) -> bool,
        timeout: Duration,
    ) -> Option<u64> {
        let mut v = 0;
        let ok = self.inner.wait_until(
            || {
                v = word.load(Ordering::Acquire);
                pred(v)
            },
            Some(Instant::now() + timeout),
        );
        ok.then_some(v)
    }

    /// Bumps this task's progress counter, which the node daemon publishes
    /// in IDM for partners and schedulers to see.
    pub fn bump_progress(&self) {
        self.inner
            .ctl
            .ctl()
            .progress
            .fetch_add(1, Ordering::Relaxed);
    }

    /// The IDM page of node `node` as this node's daemon knows it (its own
    /// page, or the last one gossiped to it). Reads shared memory only.
    /// `None` without a node daemon or for an unknown node.
    pub fn node_page(&self, node: &str) -> Option<NodeData> {
        self.inner.node_page(node)
    }

    /// Every node page this node's daemon knows.
    pub fn node_pages(&self) -> Vec<NodeData> {
        self.inner.idm().map(|i| i.nodes()).unwrap_or_default()
    }

    /// The scheduling state of task `rank` from IDM.
    pub fn task_state(&self, rank: u32) -> TaskState {
        self.inner.task_state(rank)
    }

    /// SS-Wait (snoopy spin wait): waits until `pred` holds for `word`,
    /// spinning only while `partner` — the task expected to change it —
    /// runs on a node with a CPU for every runnable thread; on an
    /// oversubscribed node yielding the CPU (the partner, or the task it
    /// waits for, needs it to answer), and blocking on the futex while the
    /// partner is blocked itself. A partner on this node is blocked when
    /// its control block says so — exact and current, where a sampled
    /// `/proc` state would be 10 ms old; elsewhere its node daemon's last
    /// sample tells. The node is oversubscribed when more of the job's
    /// tasks on it are not blocked than it has CPUs, or when its daemon
    /// counted more runnable threads than CPUs.
    ///
    /// Oversubscribed, a waiter whose partner on this node sits in an
    /// SS-Wait itself, with nothing landed in it yet, blocks: its flag is
    /// at least two hand-overs away, and the CPUs are better left to the
    /// tasks about to run. The sender whose operation lands in the
    /// partner's memory wakes it (the partner's control block names what
    /// it waits for), so it is back on a CPU by the time the partner hands
    /// over. With tasks bound round robin to CPUs ([`Bind`]) that wake-up
    /// stays on the waker's CPU.
    ///
    /// Policy constants: [`SsWaitTuning`] (`SSS_SSWAIT_*` variables).
    pub fn sswait(&self, word: &AtomicU64, partner: u32, pred: impl Fn(u64) -> bool) -> u64 {
        let v = word.load(Ordering::Acquire);
        if pred(v) {
            return v;
        }
        let c = self.inner.ctl.ctl();
        c.hit.store(0, Ordering::SeqCst);
        c.waiting_for
            .store(partner.saturating_add(1), Ordering::SeqCst);
        let v = self.sswait_loop(word, partner, pred);
        c.waiting_for.store(0, Ordering::SeqCst);
        // Nobody on this node saw us about to run (the value came over
        // udp, or was there already): wake our own waiters now.
        if c.hit.load(Ordering::SeqCst) == 0 {
            self.inner.wake_dependents(self.inner.rank);
        }
        v
    }

    fn sswait_loop(&self, word: &AtomicU64, partner: u32, pred: impl Fn(u64) -> bool) -> u64 {
        let tune = self.inner.cfg.sswait;
        let done = || pred(word.load(Ordering::Acquire));
        loop {
            let v = word.load(Ordering::Acquire);
            if pred(v) {
                return v;
            }
            let next = sswait_next(self.inner.oversubscribed(), self.inner.partner(partner));
            let hit = match next {
                SsNext::Spin => self.inner.spin_while(partner, &done, tune),
                SsNext::Yield => self.inner.yield_while(partner, &done, tune),
                SsNext::BlockWhileIdle => self.inner.block_while_idle(partner, &done, tune),
                SsNext::YieldThenBlock => {
                    // A yield is cheaper than a futex sleep and wake-up, and
                    // the partner may be woken any moment.
                    let mut got = false;
                    for _ in 0..tune.yields {
                        if done() {
                            got = true;
                            break;
                        }
                        std::thread::yield_now();
                    }
                    got || self.inner.block_until(done, Instant::now() + tune.block)
                }
            };
            if hit {
                return word.load(Ordering::Acquire);
            }
        }
    }

    /// Waits for `pred` on `word` with an explicit policy: spin only,
    /// block only, or SS-Wait on `partner` (what `sss` benchmarks
    /// compare).
    pub fn wait_word_with(
        &self,
        word: &AtomicU64,
        pred: impl Fn(u64) -> bool,
        policy: WaitPolicy,
    ) -> u64 {
        match policy {
            WaitPolicy::Spin => loop {
                let v = word.load(Ordering::Acquire);
                if pred(v) {
                    return v;
                }
                self.inner.try_step();
                std::hint::spin_loop();
            },
            WaitPolicy::Block => {
                self.inner.block_until(
                    || pred(word.load(Ordering::Acquire)),
                    Instant::now() + Duration::from_secs(3600 * 24 * 365),
                );
                word.load(Ordering::Acquire)
            }
            WaitPolicy::SsWait(partner) => self.sswait(word, partner, pred),
        }
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
            applied: s.applied + self.inner.ctl.ctl().applied.load(Ordering::Relaxed),
            rejected: s.rejected + self.inner.ctl.ctl().rejected.load(Ordering::Relaxed),
            bad_packets: s.bad_packets,
            sswait_idle_blocks: self.inner.idle_blocks.load(Ordering::Relaxed),
            prewakes: self.inner.prewakes.load(Ordering::Relaxed),
            foreign: s.not_member + self.inner.foreign.load(Ordering::Relaxed),
            reorder_dropped: s.reorder_dropped,
        }
    }

    /// True once `rank` was declared down.
    pub fn is_down(&self, rank: u32) -> bool {
        self.inner
            .lock_net()
            .ep
            .is_down(TaskId::new(self.inner.job, rank))
    }
}

/// A FIFO queue this task created; pop messages from it here.
pub struct Fifo {
    /// Geometry fixed at creation: the header in segment memory is not
    /// trusted again, peers with WRITE may have changed it.
    ring: Ring,
    at: RemoteAddr,
    _seg: Segment,
}

impl Fifo {
    /// Where peers push.
    pub fn addr(&self) -> RemoteAddr {
        self.at
    }

    fn ring(&self) -> Ring {
        self.ring
    }

    /// Pops the oldest message into `out`; returns the sender's rank.
    pub fn pop(&mut self, out: &mut Vec<u8>) -> Option<u32> {
        self.ring().pop(out)
    }

    /// Messages waiting.
    pub fn len(&self) -> usize {
        self.ring().len()
    }

    /// True when no message waits.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Waits for a message and pops it.
    pub fn wait_pop(&mut self, task: &Task, out: &mut Vec<u8>) -> u32 {
        let mut from = None;
        task.inner.wait_until(
            || {
                from = self.ring().pop(out);
                from.is_some()
            },
            None,
        );
        from.unwrap_or(u32::MAX)
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

    fn submit(self: &Arc<Self>, rank: u32, op: Op<'_>, opts: Options) -> Result<Request, Error> {
        if self.shutdown.load(Ordering::Relaxed) {
            return Err(Error::Shutdown);
        }
        if rank >= self.size {
            return Err(Error::NoSuchTask(rank));
        }
        let status_return = opts.status_return || opts.sink.is_some();
        let popts = OpOptions {
            status_return,
            nofc: opts.nofc,
        };
        let tracked = status_return
            || matches!(
                op,
                Op::Read { .. } | Op::Swap { .. } | Op::Cas { .. } | Op::FetchAdd { .. }
            );
        let dst = TaskId::new(self.job, rank);
        if let Some(peer) = &self.shm_peers[rank as usize] {
            // Keep issue order with earlier operations that went over udp.
            if self.udp_used[rank as usize].load(Ordering::Acquire)
                && self.lock_net().ep.in_flight(dst) > 0
            {
                self.wait_until(|| self.lock_net().ep.in_flight(dst) == 0, None);
            }
            let mut p = peer.lock().unwrap_or_else(|e| e.into_inner());
            if let Direct::Done(r) = p.apply(self.rank, &op) {
                if matches!(op, Op::Signal { .. }) && p.asleep() {
                    // Doorbell: a one-byte datagram wakes its poll.
                    let _ = self
                        .sock
                        .send_to(&crate::shm::DOORBELL, self.peers[rank as usize].addr);
                }
                drop(p);
                if r.is_ok() {
                    self.prewake(rank);
                }
                let r = r.map_err(|s| status_error(s, rank));
                let state = match r {
                    Ok(Reply::Done) if !tracked => None,
                    Err(e) if !tracked => {
                        // Like a NACK for an operation without status
                        // return: reported by fence/quiet.
                        if let Ok(mut errs) = self.errors.lock() {
                            keep_error(&mut errs, e);
                        }
                        None
                    }
                    r => {
                        let st = ReqState::new(opts.sink);
                        st.complete(r, &self.errors);
                        Some(st)
                    }
                };
                return Ok(Request {
                    state,
                    inner: self.clone(),
                });
            }
        }
        self.udp_used[rank as usize].store(true, Ordering::Release);
        let mut net = self.lock_net();
        // Nagle-like: with earlier operations to this peer still in
        // flight, hold new packets back (their ack, a timer or a wait will
        // flush them) so that a stream leaves in GSO batches; an operation
        // to an idle peer leaves at once.
        let busy = net.ep.unacked_sent(dst) > 0;
        let id = loop {
            match net.ep.submit(self.now(), dst, op, popts) {
                Ok(id) => break id,
                Err(SubmitError::WouldBlock) => {
                    // Whatever was held back for batching must leave now,
                    // or nothing would ever make room.
                    self.flush(&mut net);
                    drop(net);
                    self.wait_progress();
                    net = self.lock_net();
                }
                Err(SubmitError::PeerDown) => return Err(Error::PeerDown(rank)),
                Err(SubmitError::Invalid) => {
                    return Err(Error::Invalid("operation too large or malformed"))
                }
                Err(_) => return Err(Error::Invalid("operation refused")),
            }
        };
        let state = tracked.then(|| {
            let st = ReqState::new(opts.sink);
            net.reqs.insert(id, st.clone());
            st
        });
        net.held += 1;
        if !busy || net.held >= 32 || opts.nofc {
            self.flush(&mut net);
        } else {
            self.maybe_held.store(true, Ordering::Release);
        }
        drop(net);
        self.wake_if_needed();
        Ok(Request {
            state,
            inner: self.clone(),
        })
    }

    /// Sends everything the endpoint has due, from the calling thread.
    fn flush(&self, net: &mut Net) {
        let now = self.now();
        let (drop_p, dup_p) = (self.cfg.fault_drop, self.cfg.fault_dup);
        net.held = 0;
        self.maybe_held.store(false, Ordering::Release);
        let mut batch = std::mem::take(&mut net.batch);
        batch.clear();
        let mut to: Option<SocketAddr> = None;
        let mut seg = 0usize;
        let mut closed = false;
        while let Some(dst) = net.ep.poll_transmit(now, &mut net.out) {
            if dst.job != self.job {
                continue;
            }
            let Some(p) = self.peers.get(dst.rank as usize) else {
                continue;
            };
            let copies = if drop_p > 0.0 && net.draw() < drop_p {
                0
            } else if dup_p > 0.0 && net.draw() < dup_p {
                2
            } else {
                1
            };
            for _ in 0..copies {
                let len = net.out.len();
                // One GSO send carries datagrams of one size to one peer;
                // only the last may be shorter.
                let fits = to == Some(p.addr)
                    && !closed
                    && len <= seg
                    && batch.len() + len <= 60_000
                    && batch.len() / seg.max(1) < 64;
                if !fits {
                    self.send_batch(net, &batch, to, seg);
                    batch.clear();
                    to = Some(p.addr);
                    seg = len;
                    closed = false;
                }
                closed |= len < seg;
                batch.extend_from_slice(&net.out);
            }
        }
        self.send_batch(net, &batch, to, seg);
        net.batch = batch;
    }

    /// Sends a batch of equal-size datagrams (the last may be shorter):
    /// one GSO system call when the kernel allows, else one by one. A full
    /// socket buffer drops them like the network would; retransmission
    /// covers it.
    fn send_batch(&self, net: &mut Net, batch: &[u8], to: Option<SocketAddr>, seg: usize) {
        let Some(addr) = to else { return };
        if batch.is_empty() || seg == 0 {
            return;
        }
        if batch.len() > seg && net.gso {
            match sys::send_gso(self.sock.as_raw_fd(), batch, seg as u16, addr) {
                Ok(_) => return,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return,
                // No GSO here: fall back for good.
                Err(_) => net.gso = false,
            }
        }
        for d in batch.chunks(seg) {
            let _ = self.sock.send_to(d, addr);
        }
    }

    /// Wakes the progress thread when the endpoint's next timer is earlier
    /// than the one it sleeps on.
    fn wake_if_needed(&self) {
        let t = self.lock_net().ep.poll_timeout().unwrap_or(u64::MAX);
        if t < self.next_wake.load(Ordering::Acquire) {
            self.wake.notify();
        }
    }

    /// Blocks until the progress thread did some work (or a short while).
    fn wait_progress(&self) {
        if self.on_progress_thread() {
            self.step_inline();
            return;
        }
        let seq = self.ctl.ctl().events.load(Ordering::SeqCst);
        self.ctl.ctl().waiters.fetch_add(1, Ordering::SeqCst);
        sys::futex_wait(&self.ctl.ctl().events, seq, Some(Duration::from_millis(1)));
        self.ctl.ctl().waiters.fetch_sub(1, Ordering::SeqCst);
    }

    /// Spins for the configured time, then blocks on the event word until
    /// `cond` holds or `deadline` passes. Returns whether `cond` held.
    fn wait_until(&self, mut cond: impl FnMut() -> bool, deadline: Option<Instant>) -> bool {
        // Nothing held back for batching may wait on our waiting.
        if self.maybe_held.load(Ordering::Acquire) {
            let mut net = self.lock_net();
            self.flush(&mut net);
        }
        if self.on_progress_thread() {
            loop {
                if cond() {
                    return true;
                }
                if deadline.is_some_and(|d| Instant::now() >= d)
                    || self.shutdown.load(Ordering::Relaxed)
                {
                    return false;
                }
                self.step_inline();
            }
        }
        let spin_end = Instant::now() + self.cfg.spin;
        let mut spins: u32 = 0;
        loop {
            if cond() {
                return true;
            }
            // Memory is checked on every turn; the socket and the clock,
            // which cost a system call or a vDSO read, every 16th: on one
            // node the answer lands in memory and every turn counts.
            spins = spins.wrapping_add(1);
            if spins % 16 != 1 {
                std::hint::spin_loop();
                continue;
            }
            let now = Instant::now();
            if deadline.is_some_and(|d| now >= d) {
                return false;
            }
            if now < spin_end {
                // While spinning, receive and apply ourselves: the answer we
                // wait for is usually in the socket before the progress
                // thread could be scheduled to fetch it. Not when every
                // peer writes straight into our memory: the system call
                // only delays seeing it.
                if !self.all_local {
                    self.try_step();
                }
                continue;
            }
            let seq = self.ctl.ctl().events.load(Ordering::SeqCst);
            if cond() {
                return true;
            }
            self.ctl.ctl().waiters.fetch_add(1, Ordering::SeqCst);
            self.ctl.ctl().blocked.fetch_add(1, Ordering::Relaxed);
            // The timeout is a safety net only: every applied operation and
            // completion bumps `events` and wakes us.
            let mut t = Duration::from_millis(20);
            if let Some(d) = deadline {
                t = t.min(d.saturating_duration_since(now));
            }
            sys::futex_wait(&self.ctl.ctl().events, seq, Some(t));
            self.ctl.ctl().blocked.fetch_sub(1, Ordering::Relaxed);
            self.ctl.ctl().waiters.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// This node's IDM file, mapped on first use.
    fn idm(&self) -> Option<Arc<Idm>> {
        let mut g = self.idm.lock().ok()?;
        if g.is_none() {
            // Look for a daemon's file at most once a second.
            let now = self.now();
            let last = self.idm_tried.load(Ordering::Relaxed);
            if last == 0 || now.saturating_sub(last) >= 1_000_000_000 {
                self.idm_tried.store(now.max(1), Ordering::Relaxed);
                *g = Idm::open(&self.node).ok().map(Arc::new);
            }
        }
        g.clone()
    }

    fn node_page(&self, node: &str) -> Option<NodeData> {
        let idm = self.idm()?;
        let mut slots = self.idm_slots.lock().ok()?;
        if let Some(&i) = slots.get(node) {
            if let Some(d) = idm.read(i) {
                if d.name() == node && d.flags & crate::idm::NODE_VALID != 0 {
                    return Some(d);
                }
            }
        }
        let (i, d) = idm.find(node)?;
        slots.insert(node.to_string(), i);
        Some(d)
    }

    fn task_state(&self, rank: u32) -> TaskState {
        let Some(p) = self.peers.get(rank as usize) else {
            return TaskState::Unknown;
        };
        self.node_page(&p.node)
            .and_then(|d| d.task(self.job, rank))
            .map_or(TaskState::Unknown, |t| TaskState::from_u32(t.state))
    }

    /// True when SS-Wait should not spin here: see [`oversubscribed`].
    fn oversubscribed(&self) -> bool {
        let active = 1 + self
            .peer_ctls
            .iter()
            .enumerate()
            .filter(|&(r, c)| {
                r != self.rank as usize
                    && c.as_ref()
                        .is_some_and(|c| c.ctl().blocked.load(Ordering::Relaxed) == 0)
            })
            .count();
        let cpus = self.cfg.sswait.cpus.unwrap_or(self.ncpus);
        oversubscribed(cpus, active, self.idm().and_then(|i| i.own_load()))
    }

    /// True when `partner` is blocked in a wait: from its control block on
    /// this node, from its node's IDM page elsewhere.
    fn partner_blocked(&self, partner: u32) -> bool {
        if let Some(Some(c)) = self.peer_ctls.get(partner as usize) {
            return c.ctl().blocked.load(Ordering::Relaxed) != 0;
        }
        let Some(p) = self.peers.get(partner as usize) else {
            return true;
        };
        matches!(
            self.node_page(&p.node)
                .and_then(|d| d.task(self.job, partner))
                .map(|t| TaskState::from_u32(t.state)),
            Some(TaskState::Sleeping) | Some(TaskState::Gone)
        )
    }

    /// The partner's state for SS-Wait: from its control block on this
    /// node, from its node's IDM page elsewhere.
    fn partner(&self, partner: u32) -> Partner {
        if let Some(Some(c)) = self.peer_ctls.get(partner as usize) {
            let c = c.ctl();
            return if c.blocked.load(Ordering::Relaxed) != 0 {
                Partner::Blocked
            } else if c.waiting_for.load(Ordering::Relaxed) != 0
                && c.hit.load(Ordering::Relaxed) == 0
            {
                Partner::Idle
            } else {
                Partner::Busy
            };
        }
        if self.partner_blocked(partner) {
            Partner::Blocked
        } else {
            Partner::Busy
        }
    }

    /// True while a same-node `partner` sits in an SS-Wait nothing has
    /// landed in (sequentially consistent loads: see [`Self::prewake`]).
    fn partner_idle(&self, partner: u32) -> bool {
        self.peer_ctls
            .get(partner as usize)
            .and_then(|c| c.as_ref())
            .is_some_and(|c| {
                let c = c.ctl();
                c.waiting_for.load(Ordering::SeqCst) != 0 && c.hit.load(Ordering::SeqCst) == 0
            })
    }

    /// SS-Wait's block while the partner is idle: sleeps on our event
    /// word until `done`, the partner is hit (its sender wakes us), it
    /// leaves its wait, or `tune.block` passes.
    fn block_while_idle(&self, partner: u32, done: &impl Fn() -> bool, tune: SsWaitTuning) -> bool {
        let deadline = Instant::now() + tune.block;
        let c = self.ctl.ctl();
        loop {
            if done() {
                return true;
            }
            let now = Instant::now();
            if now >= deadline || !self.partner_idle(partner) {
                return false;
            }
            let seq = c.events.load(Ordering::SeqCst);
            c.waiters.fetch_add(1, Ordering::SeqCst);
            c.blocked.fetch_add(1, Ordering::Relaxed);
            // Re-checked after announcing ourselves: a sender that set
            // the partner's `hit` before it could see `waiters` is seen
            // here, one that sets it later wakes us.
            if !done() && self.partner_idle(partner) {
                self.idle_blocks.fetch_add(1, Ordering::Relaxed);
                sys::futex_wait(&c.events, seq, Some(deadline - now));
            }
            c.blocked.fetch_sub(1, Ordering::Relaxed);
            c.waiters.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// After an operation landed in same-node `rank`'s memory: if `rank`
    /// is in an SS-Wait, it is about to run, so the tasks waiting on it
    /// will be next; wake those that blocked now, from here, while
    /// `rank` takes its turn, rather than from `rank` when it hands over
    /// (where the wake-up would delay the hand-over). Once per wait.
    fn prewake(&self, rank: u32) {
        let Some(Some(x)) = self.peer_ctls.get(rank as usize) else {
            return;
        };
        let x = x.ctl();
        if x.waiting_for.load(Ordering::Relaxed) == 0
            || x.hit.load(Ordering::Relaxed) != 0
            || x.hit.swap(1, Ordering::SeqCst) != 0
        {
            return;
        }
        self.wake_dependents(rank);
    }

    /// Wakes this node's tasks blocked in an SS-Wait on `rank`.
    fn wake_dependents(&self, rank: u32) {
        for (r, w) in self.peer_ctls.iter().enumerate() {
            let Some(w) = w else { continue };
            if r == rank as usize {
                continue;
            }
            let c = w.ctl();
            if c.waiting_for.load(Ordering::SeqCst) == rank + 1
                && c.waiters.load(Ordering::SeqCst) > 0
            {
                self.prewakes.fetch_add(1, Ordering::Relaxed);
                w.wake();
            }
        }
    }

    /// SS-Wait with CPUs to spare and the partner awake: spins until
    /// `done`, the partner blocks, or `tune.spin` passes. A partner on
    /// this node writes straight into our memory, so the spin reads
    /// memory only (the socket, polled between turns, delayed the
    /// hand-over by half a microsecond); for a remote one it receives
    /// and applies packets as it goes.
    fn spin_while(&self, partner: u32, done: &impl Fn() -> bool, tune: SsWaitTuning) -> bool {
        let end = Instant::now() + tune.spin;
        if !matches!(self.peer_ctls.get(partner as usize), Some(Some(_))) {
            return self.wait_until(done, Some(end));
        }
        if self.maybe_held.load(Ordering::Acquire) {
            let mut net = self.lock_net();
            self.flush(&mut net);
        }
        let mut k: u32 = 0;
        loop {
            if done() {
                return true;
            }
            k = k.wrapping_add(1);
            if k % 256 == 0 && (self.partner(partner) != Partner::Busy || Instant::now() >= end) {
                return false;
            }
            std::hint::spin_loop();
        }
    }

    /// SS-Wait on an oversubscribed node with the partner not blocked:
    /// yields until `done`, the partner blocks, or `tune.yield_for`
    /// passes (then blocks for up to `tune.block`). Looks at a local
    /// partner's state after every yield (one load), at the clock and a
    /// remote partner's state every 64.
    fn yield_while(&self, partner: u32, done: &impl Fn() -> bool, tune: SsWaitTuning) -> bool {
        let end = Instant::now() + tune.yield_for;
        let local = matches!(self.peer_ctls.get(partner as usize), Some(Some(_)));
        let mut k: u32 = 0;
        loop {
            if done() {
                return true;
            }
            k = k.wrapping_add(1);
            if k % 64 == 0 {
                if Instant::now() >= end {
                    return self.block_until(done, Instant::now() + tune.block);
                }
                if !local && self.partner_blocked(partner) {
                    return false;
                }
            }
            if local && self.partner(partner) != Partner::Busy {
                return false;
            }
            std::thread::yield_now();
        }
    }

    /// Blocks (no spinning) until `cond` or `deadline`.
    fn block_until(&self, mut cond: impl FnMut() -> bool, deadline: Instant) -> bool {
        loop {
            if cond() {
                return true;
            }
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            let c = self.ctl.ctl();
            let seq = c.events.load(Ordering::SeqCst);
            if cond() {
                return true;
            }
            c.waiters.fetch_add(1, Ordering::SeqCst);
            c.blocked.fetch_add(1, Ordering::Relaxed);
            sys::futex_wait(&c.events, seq, Some(deadline - now));
            c.blocked.fetch_sub(1, Ordering::Relaxed);
            c.waiters.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// Liveness from IDM: tasks on nodes the daemon marked down are
    /// declared down (their pending operations fail with NodeDown); nodes
    /// that come back are let in again. At most every 50 ms.
    fn check_liveness(&self) {
        let now = self.now();
        if now.saturating_sub(self.idm_checked.load(Ordering::Relaxed)) < 50_000_000 {
            return;
        }
        self.idm_checked.store(now, Ordering::Relaxed);
        if self.idm().is_none() {
            return;
        }
        let mut nodes: Vec<&str> = self.peers.iter().map(|p| p.node.as_str()).collect();
        nodes.sort_unstable();
        nodes.dedup();
        for node in nodes {
            if node == self.node {
                continue;
            }
            let down = self
                .node_page(node)
                .is_some_and(|d| d.flags & crate::idm::NODE_DOWN != 0);
            let Ok(mut marked) = self.idm_down.lock() else {
                return;
            };
            let was = marked.iter().any(|n| n == node);
            if down == was {
                continue;
            }
            let mut net = self.lock_net();
            for (r, p) in self.peers.iter().enumerate() {
                if p.node == node {
                    let t = TaskId::new(self.job, r as u32);
                    if down {
                        net.ep.declare_down(t);
                    } else {
                        net.ep.resume_peer(t);
                    }
                }
            }
            self.handle_events(&mut net);
            if down {
                marked.push(node.to_string());
            } else {
                marked.retain(|n| n != node);
            }
        }
    }

    /// One round of progress: receive and apply what arrived, run due
    /// timers, send what is due, complete requests, collect queued
    /// signals. The progress thread's loop body, also run inline when a
    /// signal handler on that thread must wait.
    fn step(&self, buf: &mut [u8], signals: &mut Vec<(u32, u32, Vec<u8>)>) {
        {
            let segs = self.segs.read().unwrap_or_else(|e| e.into_inner());
            let handlers = self.handlers.read().unwrap_or_else(|e| e.into_inner());
            let mut net = self.lock_net();
            // Signals are queued under the net lock, in arrival order:
            // those deferred earlier go first.
            if let Ok(mut d) = self.deferred.lock() {
                signals.append(&mut d);
            }
            let mut applier = Applier {
                segs: &segs,
                handlers: &handlers,
                signal_key: self.signal_key,
                ring: self.ctl.signal_ring(),
                signals,
            };
            for _ in 0..256 {
                match sys::recv_segments(self.sock.as_raw_fd(), buf) {
                    Ok((n, seg, from)) => {
                        self.receive(&mut net.ep, &mut applier, &buf[..n], seg, from);
                    }
                    Err(_) => break,
                }
            }
            let now = self.now();
            if net.ep.poll_timeout().is_some_and(|t| t <= now) {
                net.ep.handle_timeout(now);
            }
            self.flush(&mut net);
            self.handle_events(&mut net);
            // For the node daemon's IDM page.
            let st = net.ep.stats();
            let c = self.ctl.ctl();
            c.packets.store(st.packets_sent, Ordering::Relaxed);
            c.bytes.store(st.bytes_sent, Ordering::Relaxed);
            c.retransmissions
                .store(st.retransmissions, Ordering::Relaxed);
            c.udp_rejected.store(st.rejected, Ordering::Relaxed);
            drain_signal_ring(&self.ctl.signal_ring(), signals);
        }
    }

    /// A non-blocking round of progress from an application thread, if no
    /// other thread is making progress right now. Signals found are left
    /// to the progress thread.
    fn try_step(&self) {
        let Ok(segs) = self.segs.try_read() else {
            return;
        };
        let Ok(handlers) = self.handlers.try_read() else {
            return;
        };
        let Ok(mut net) = self.net.try_lock() else {
            return;
        };
        let mut sig = Vec::new();
        let mut any = false;
        let mut doorbell = false;
        {
            let mut applier = Applier {
                segs: &segs,
                handlers: &handlers,
                signal_key: self.signal_key,
                ring: self.ctl.signal_ring(),
                signals: &mut sig,
            };
            RECV_BUF.with_borrow_mut(|buf| {
                for _ in 0..64 {
                    match sys::recv_segments(self.sock.as_raw_fd(), buf) {
                        Ok((n, seg, from)) => {
                            let (handled, bell) =
                                self.receive(&mut net.ep, &mut applier, &buf[..n], seg, from);
                            any |= handled;
                            // A doorbell: a same-node sender queued a signal
                            // for the progress thread, which must hear of it.
                            doorbell |= bell;
                        }
                        Err(_) => break,
                    }
                }
            });
        }
        if doorbell {
            self.wake.notify();
        }
        if any {
            // Queued before the net lock goes, so that signals received
            // later cannot overtake these.
            let queued = !sig.is_empty();
            if queued {
                if let Ok(mut d) = self.deferred.lock() {
                    d.append(&mut sig);
                }
            }
            self.flush(&mut net);
            self.handle_events(&mut net);
            drop(net);
            if queued {
                self.wake.notify();
            }
            self.notify_waiters();
        }
    }

    /// Hands the datagrams of one receive (`seg` bytes each) from `from`
    /// to the endpoint, as coming from the task at that address; drops and
    /// counts them when no task of the job has it.
    /// Hands a received batch of datagrams to the endpoint, each with the
    /// rank its source address belongs to; a datagram from an address of
    /// no member creates no state and is counted. Returns (any datagram
    /// handled, a doorbell rang).
    fn receive(
        &self,
        ep: &mut Endpoint,
        applier: &mut Applier<'_>,
        data: &[u8],
        seg: usize,
        from: Option<SocketAddr>,
    ) -> (bool, bool) {
        let src = from
            .and_then(|a| self.senders.rank(a))
            .map(|r| TaskId::new(self.job, r));
        let now = self.now();
        let mut foreign = 0;
        let r = crate::shm::split_received(data, seg, |d| match src {
            Some(_) => ep.handle_datagram_from(now, src, d, applier),
            None => foreign += 1,
        });
        if foreign > 0 {
            self.foreign.fetch_add(foreign, Ordering::Relaxed);
        }
        r
    }

    fn on_progress_thread(&self) -> bool {
        self.progress_thread.get() == Some(&std::thread::current().id())
    }

    /// Progress made by the progress thread itself while a signal handler
    /// it runs waits: nobody else would receive the answer.
    fn step_inline(&self) {
        let mut buf = vec![0u8; 65_536];
        let mut sig = Vec::new();
        let _ = sys::poll_readable(&[self.sock.as_raw_fd()], Some(Duration::from_millis(1)));
        self.step(&mut buf, &mut sig);
        if let Ok(mut d) = self.deferred.lock() {
            d.append(&mut sig);
        }
    }

    fn notify_waiters(&self) {
        self.ctl.wake();
    }

    /// Republishes the segment table for same-node peers.
    fn publish(&self, segs: &SegTable) {
        self.ctl.publish(&segs.infos());
    }

    fn handle_events(&self, net: &mut Net) {
        while let Some(ev) = net.ep.poll_event() {
            match ev {
                Event::Completed { op, result } => {
                    let r = result
                        .map(|c| match c {
                            Completion::Done => Reply::Done,
                            Completion::Value(v) => Reply::Value(v),
                            Completion::Data(d) => Reply::Data(d),
                        })
                        .map_err(|s| status_error(s, op.peer.rank));
                    match net.reqs.remove(&op) {
                        Some(st) => st.complete(r, &self.errors),
                        None => {
                            if let Err(e) = r {
                                if let Ok(mut errs) = self.errors.lock() {
                                    keep_error(&mut errs, e);
                                }
                            }
                        }
                    }
                }
                Event::Multicast {
                    mcast,
                    members,
                    status,
                } => {
                    if let Some(st) = net.mreqs.remove(&mcast) {
                        st.complete(
                            if status.is_ok() {
                                Ok(Reply::Members(members))
                            } else {
                                Err(Error::Remote(status))
                            },
                            &self.errors,
                        );
                    }
                }
                Event::PeerDown { .. } | Event::PeerUp { .. } => {}
            }
        }
    }
}

fn status_error(s: Status, rank: u32) -> Error {
    if s == Status::NodeDown {
        Error::PeerDown(rank)
    } else {
        Error::Remote(s)
    }
}

thread_local! {
    /// Receive buffer of application threads that make progress while they
    /// wait; large enough for any datagram.
    static RECV_BUF: std::cell::RefCell<Vec<u8>> = std::cell::RefCell::new(vec![0; 1 << 17]);
}

/// Applies incoming operations to this task's memory after checking them.
struct Applier<'a> {
    segs: &'a SegTable,
    handlers: &'a HashMap<u32, Handler>,
    signal_key: u64,
    /// This task's same-node signal ring.
    ring: Ring,
    signals: &'a mut Vec<(u32, u32, Vec<u8>)>,
}

/// Moves every signal queued in `ring` so far to `signals`, oldest first.
/// A slot claimed but still being filled is waited for (a while): its
/// sender pushed it before anything it sends later. Receiver only (under
/// the net lock).
fn drain_signal_ring(ring: &Ring, signals: &mut Vec<(u32, u32, Vec<u8>)>) {
    let mut msg = Vec::new();
    let mut deadline = None;
    for _ in 0..ring.len() {
        let from = loop {
            if let Some(f) = ring.pop(&mut msg) {
                break f;
            }
            let d = *deadline.get_or_insert_with(|| Instant::now() + Duration::from_secs(1));
            if Instant::now() >= d {
                return;
            }
            std::thread::yield_now();
        };
        if msg.len() >= 4 {
            let h = u32::from_le_bytes([msg[0], msg[1], msg[2], msg[3]]);
            signals.push((from, h, msg[4..].to_vec()));
        }
    }
}

impl Target for Applier<'_> {
    fn apply(&mut self, p: &Packet<'_>) -> Outcome {
        match self.apply_checked(p) {
            Ok(o) => o,
            Err(s) => Outcome::Failed(s),
        }
    }
}

impl Applier<'_> {
    fn apply_checked(&mut self, p: &Packet<'_>) -> Result<Outcome, Status> {
        let segs = self.segs;
        match p.body {
            Body::Write { notify } => {
                let dst = segs.check(p.key, p.addr, p.payload.len(), Perm::WRITE)?;
                // Check the counter before storing, so a bad notify leaves
                // memory untouched.
                let counter = match notify {
                    Some(n) => Some((segs.check_word(n.key, n.addr, Perm::WRITE)?, n.addend)),
                    None => None,
                };
                dst.write(p.payload);
                if let Some((c, add)) = counter {
                    // Release: the data above is visible before the bump.
                    c.word().fetch_add(add, Ordering::Release);
                }
                Ok(Outcome::Done)
            }
            Body::Multicast { .. } => {
                segs.check_offset(p.key, p.addr, p.payload.len(), Perm::WRITE)?
                    .write(p.payload);
                Ok(Outcome::Done)
            }
            Body::Read { len } => Ok(Outcome::Data(
                segs.check(p.key, p.addr, len as usize, Perm::READ)?
                    .to_vec(),
            )),
            Body::Swap { operand } => Ok(Outcome::Value(
                segs.check_word(p.key, p.addr, Perm::ATOMIC)?
                    .word()
                    .swap(operand, Ordering::AcqRel),
            )),
            Body::Cas { expected, new } => {
                let w = segs.check_word(p.key, p.addr, Perm::ATOMIC)?.word();
                Ok(Outcome::Value(
                    match w.compare_exchange(expected, new, Ordering::AcqRel, Ordering::Acquire) {
                        Ok(v) | Err(v) => v,
                    },
                ))
            }
            Body::FetchAdd { operand } => Ok(Outcome::Value(
                segs.check_word(p.key, p.addr, Perm::ATOMIC)?
                    .word()
                    .fetch_add(operand, Ordering::AcqRel),
            )),
            Body::Fifo => {
                let head = segs.check(p.key, p.addr, FIFO_HEADER, Perm::WRITE)?;
                let ring = Ring::open(head, |total| segs.check(p.key, p.addr, total, Perm::WRITE))?;
                ring.push(p.src.rank, p.payload)?;
                Ok(Outcome::Done)
            }
            Body::Signal { handler } => {
                if p.key != self.signal_key {
                    return Err(Status::BadKey);
                }
                if !self.handlers.contains_key(&handler) {
                    return Err(Status::NoSuchHandler);
                }
                // A same-node sender whose ring push found the ring full
                // sends over udp: what it queued in the ring goes first.
                drain_signal_ring(&self.ring, self.signals);
                self.signals.push((p.src.rank, handler, p.payload.to_vec()));
                Ok(Outcome::Done)
            }
            _ => Err(Status::Unsupported),
        }
    }
}

/// The progress thread: receives, applies, acknowledges, retransmits, and
/// runs signal handlers. Blocks in poll when there is nothing to do.
fn progress(inner: Arc<Inner>) {
    let _ = inner.progress_thread.set(std::thread::current().id());
    let sock_fd = inner.sock.as_raw_fd();
    let wake_fd = inner.wake.fd();
    // Room for a whole GRO-coalesced batch.
    let mut buf = vec![0u8; 1 << 17];
    let mut signals: Vec<(u32, u32, Vec<u8>)> = Vec::new();
    let handler_task = Task {
        inner: inner.clone(),
        _owner: None,
    };
    while !inner.shutdown.load(Ordering::SeqCst) {
        let next = inner.lock_net().ep.poll_timeout();
        inner
            .next_wake
            .store(next.unwrap_or(u64::MAX), Ordering::Release);
        let mut timeout = next.map(|t| Duration::from_nanos(t.saturating_sub(inner.now())));
        if inner.idm().is_some() {
            // Look at node liveness now and then even when idle.
            timeout = Some(timeout.map_or(Duration::from_millis(50), |t| {
                t.min(Duration::from_millis(50))
            }));
        }
        if timeout.is_none_or(|t| !t.is_zero()) {
            let c = inner.ctl.ctl();
            c.progress_asleep.store(1, Ordering::SeqCst);
            // Pairs with the fence in Peer::asleep: either the sender sees
            // the flag or we see its message.
            std::sync::atomic::fence(Ordering::SeqCst);
            // A signal queued before the flag was visible gets no doorbell:
            // look at the ring once more before sleeping.
            if inner.ctl.signal_ring().len() == 0 {
                let _ = sys::poll_readable(&[sock_fd, wake_fd], timeout);
            }
            c.progress_asleep.store(0, Ordering::SeqCst);
        }
        inner.wake.drain();
        if inner.shutdown.load(Ordering::SeqCst) {
            break;
        }
        inner.step(&mut buf, &mut signals);
        inner.check_liveness();
        if let Ok(mut d) = inner.deferred.lock() {
            signals.append(&mut d);
        }
        for (from, h, payload) in signals.drain(..) {
            let f = inner
                .handlers
                .read()
                .ok()
                .and_then(|hs| hs.get(&h).cloned());
            if let Some(f) = f {
                let ctx = SignalContext {
                    task: &handler_task,
                    from,
                    handler: h,
                };
                f(&ctx, &payload);
            }
        }
        inner.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sswait_spins_only_with_cpus_to_spare_and_the_partner_awake() {
        assert_eq!(sswait_next(false, Partner::Busy), SsNext::Spin);
        assert_eq!(sswait_next(false, Partner::Idle), SsNext::Spin);
        assert_eq!(sswait_next(true, Partner::Busy), SsNext::Yield);
        assert_eq!(sswait_next(true, Partner::Idle), SsNext::BlockWhileIdle);
        assert_eq!(sswait_next(false, Partner::Blocked), SsNext::YieldThenBlock);
        assert_eq!(sswait_next(true, Partner::Blocked), SsNext::YieldThenBlock);
    }

    #[test]
    fn uncollected_errors_are_kept_up_to_a_bound() {
        let mut errs = Vec::new();
        for _ in 0..3 * ERRORS_KEPT {
            keep_error(&mut errs, Error::PeerDown(1));
        }
        assert_eq!(errs.len(), ERRORS_KEPT);
    }

    #[test]
    fn binding_goes_round_robin_over_the_allowed_cpus() {
        let cpus = [2, 3, 5];
        let got: Vec<_> = (0..7).map(|r| bind_cpu(Bind::Core, r, 7, &cpus)).collect();
        assert_eq!(got, [2, 3, 5, 2, 3, 5, 2].map(Some));
        // auto: only when the job alone oversubscribes the node
        assert_eq!(bind_cpu(Bind::Auto, 1, 3, &cpus), None);
        assert_eq!(bind_cpu(Bind::Auto, 1, 4, &cpus), Some(3));
        assert_eq!(bind_cpu(Bind::None, 1, 8, &cpus), None);
        assert_eq!(bind_cpu(Bind::Core, 0, 1, &[]), None);
    }

    /// Regression: the daemon's sample, taken while the job's tasks were
    /// blocked, said "CPUs to spare" while all of them spun, and each
    /// waiter spun through its partner's time slice.
    #[test]
    fn the_jobs_own_awake_tasks_count_even_when_the_sample_is_stale() {
        assert!(oversubscribed(2, 8, Some((1, 2))));
        assert!(oversubscribed(2, 3, None));
        assert!(!oversubscribed(2, 2, Some((2, 2))));
        assert!(!oversubscribed(2, 2, None));
        // Other programs count through the sample.
        assert!(oversubscribed(2, 1, Some((3, 2))));
        // Zero CPUs reported counts as one.
        assert!(oversubscribed(0, 2, None));
        assert!(!oversubscribed(4, 1, Some((1, 0))));
    }

    #[test]
    fn sswait_tuning_comes_from_the_environment_once() {
        let d = TaskConfig::default().sswait;
        assert_eq!(d.yields, 32);
        assert_eq!(d.yield_for, Duration::from_micros(1000));
        assert_eq!(d.spin, Duration::from_micros(2000));
        assert_eq!(d.block, Duration::from_micros(5000));
        assert_eq!(d.cpus, None);
    }
}
