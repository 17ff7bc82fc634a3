//! Nonblocking collectives as schedules: rounds of
//! sends and receives on the communicator's collective context, each
//! followed by local steps (copies, reductions) once its messages
//! completed. Every MPI call that makes progress (waits, tests, probes,
//! blocking point-to-point and collectives) advances every schedule as
//! far as it can without waiting, so a collective completes while its
//! task waits for something else.
//!
//! Each collective gets a tag of its own from a sequence per
//! communicator context: every task issues the collectives of a
//! communicator in the same order, so the k-th matches the k-th
//! everywhere, never a blocking collective's messages (small tags) or
//! another outstanding one's, whatever order they progress in.
//!
//! Between MPI calls: while a schedule runs here, every message the
//! engine pushes into a peer's FIFO is followed by an MBCF signal
//! ([`SIGNAL`]; `SSS_MPI_NBC_SIGNAL=off` sends none). Its handler
//! ([`on_signal`]), which MBCF runs on the receiver's progress thread
//! when no thread of it waits, advances the schedules if it gets the
//! library's lock and the schedules' without waiting. When it does not,
//! the thread holding one is inside MPI: it looks at [`PENDING`] after
//! it lets the lock go (`runtime::with`, [`progress`]) and advances them
//! then. A thread waiting in MPI advances them itself (the message wakes
//! it), so the handler leaves them to it. Schedules with a user-defined
//! operation move only inside MPI calls: a handler runs no program code.

use crate::buf::Lender;
use crate::coll::Reduction;
use crate::consts::err;
use crate::engine::{Dest, Engine, MpiErr};
use crate::runtime::with;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{fence, AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};

pub(crate) mod algo;
pub(crate) mod pool;

/// The MBCF handler index of the signal that follows a message while
/// schedules run (below 256: same-node senders check it in the
/// receiver's published handler mask).
pub(crate) const SIGNAL: u32 = 240;

/// Tags of nonblocking collectives: above every tag the blocking
/// collectives and windows use on the collective context.
const TAG_BASE: i32 = 1 << 30;

/// One action of a round. Ranks are the communicator's; `buf` indexes
/// the schedule's buffers, `at`/`len` bytes in it.
#[derive(Debug, Clone)]
pub(crate) enum Act {
    Send {
        to: u32,
        buf: usize,
        at: usize,
        len: usize,
    },
    Recv {
        from: u32,
        buf: usize,
        at: usize,
        len: usize,
    },
    /// After the messages: `bufs[inout] = bufs[inv] (op) bufs[inout]`.
    Fold { inv: usize, inout: usize },
    /// After the messages: `bufs[inout] = bufs[inout] (op) bufs[inv]`
    /// (rank order when the lower ranks' part is in `inout`).
    FoldBack { inv: usize, inout: usize },
    /// After the messages: bytes from one buffer into another.
    Copy {
        from: usize,
        at: usize,
        to: usize,
        to_at: usize,
        len: usize,
    },
}

impl Act {
    /// A send to (`send`) or receive from `peer` of `len` bytes at `at`
    /// of buffer `buf`.
    pub(crate) fn msg(send: bool, peer: u32, buf: usize, at: usize, len: usize) -> Act {
        if send {
            Act::Send {
                to: peer,
                buf,
                at,
                len,
            }
        } else {
            Act::Recv {
                from: peer,
                buf,
                at,
                len,
            }
        }
    }

    fn is_msg(&self) -> bool {
        matches!(self, Act::Send { .. } | Act::Recv { .. })
    }
}

/// A collective as rounds over buffers it owns.
#[derive(Default)]
pub(crate) struct Sched {
    pub(crate) bufs: Vec<Vec<u8>>,
    rounds: VecDeque<Vec<Act>>,
    red: Option<Reduction>,
    /// The caller's memory standing for one buffer (see
    /// [`Sched::on_caller_memory`]).
    caller: Option<(usize, &'static mut [u8])>,
    /// The caller's send buffer standing for another (see
    /// [`Sched::sends_caller_memory`]).
    source: Option<(usize, &'static [u8])>,
}

impl Sched {
    pub(crate) fn new(bufs: Vec<Vec<u8>>, red: Option<Reduction>) -> Sched {
        Sched {
            bufs,
            rounds: VecDeque::new(),
            red,
            caller: None,
            source: None,
        }
    }

    /// Buffer `buf` is `data`, the caller's send buffer (MPI lends it,
    /// unchanged, until the collective completes): messages leave from
    /// it, with no copy at the start. Only sends may name it.
    pub(crate) fn sends_caller_memory(&mut self, buf: usize, data: &'static [u8]) {
        if let Some(b) = self.bufs.get_mut(buf) {
            *b = Vec::new();
            self.source = Some((buf, data));
        }
    }

    /// Buffer `buf` is `mem`, the caller's receive buffer (MPI lends it
    /// until the collective completes): messages land in it and leave
    /// from it, with no copy in at the start and none out at the end.
    /// The buffer must be one only messages use (no local step).
    pub(crate) fn on_caller_memory(&mut self, buf: usize, mem: &'static mut [u8]) {
        if let Some(b) = self.bufs.get_mut(buf) {
            *b = Vec::new();
            self.caller = Some((buf, mem));
        }
    }

    /// Length of buffer `buf`.
    pub(crate) fn len(&self, buf: usize) -> usize {
        match (&self.caller, &self.source) {
            (Some((i, m)), _) if *i == buf => m.len(),
            (_, Some((i, d))) if *i == buf => d.len(),
            _ => self.bufs.get(buf).map_or(0, Vec::len),
        }
    }

    /// Whether a local step names a buffer in the caller's memory, or a
    /// receive the caller's send buffer.
    fn steps_on_caller(&self) -> bool {
        let c = self.caller.as_ref().map(|&(c, _)| c);
        let src = self.source.as_ref().map(|&(c, _)| c);
        let lent = |b: usize| c == Some(b) || src == Some(b);
        self.rounds.iter().flatten().any(|a| match *a {
            Act::Fold { inv, inout } | Act::FoldBack { inv, inout } => lent(inv) || lent(inout),
            Act::Copy { from, to, .. } => lent(from) || lent(to),
            Act::Recv { buf, .. } => src == Some(buf),
            Act::Send { .. } => false,
        })
    }

    /// Appends a round (nothing for an empty one).
    pub(crate) fn add(&mut self, acts: Vec<Act>) {
        if !acts.is_empty() {
            self.rounds.push_back(acts);
        }
    }

    /// Runs the local actions of a round whose messages completed, on
    /// the schedule's own buffers (tests).
    #[cfg(test)]
    fn local(&mut self, acts: &[Act]) -> Result<(), MpiErr> {
        let mut bufs = std::mem::take(&mut self.bufs);
        let r = self.steps(&mut bufs, acts);
        self.bufs = bufs;
        r
    }

    /// Runs the local actions of a round whose messages completed, on
    /// `bufs` (the schedule's buffers, lent out while it runs).
    fn steps(&self, bufs: &mut [Vec<u8>], acts: &[Act]) -> Result<(), MpiErr> {
        for a in acts {
            match *a {
                Act::Fold { inv, inout } => {
                    let mut io = std::mem::take(&mut bufs[inout]);
                    let r = self.reduction()?.apply(&bufs[inv], &mut io);
                    bufs[inout] = io;
                    r?;
                }
                Act::FoldBack { inv, inout } => {
                    // inv := inout (op) inv, then the buffers trade places.
                    let mut io = std::mem::take(&mut bufs[inv]);
                    let r = self.reduction()?.apply(&bufs[inout], &mut io);
                    bufs[inv] = io;
                    r?;
                    bufs.swap(inv, inout);
                }
                Act::Copy {
                    from,
                    at,
                    to,
                    to_at,
                    len,
                } => {
                    if from == to {
                        bufs[to].copy_within(at..at + len, to_at);
                    } else {
                        let src = std::mem::take(&mut bufs[from]);
                        bufs[to][to_at..to_at + len].copy_from_slice(&src[at..at + len]);
                        bufs[from] = src;
                    }
                }
                Act::Send { .. } | Act::Recv { .. } => {}
            }
        }
        Ok(())
    }

    /// Whether a step runs the program's code (a user-defined
    /// operation): never from a signal handler.
    fn runs_user_code(&self) -> bool {
        matches!(self.red, Some(Reduction::User { .. }))
    }

    fn reduction(&self) -> Result<&Reduction, MpiErr> {
        self.red
            .as_ref()
            .ok_or_else(|| MpiErr::new(err::INTERN, "a reduction step without an operation"))
    }
}

/// What a finished schedule does with its buffers: writes the results
/// into the program's memory.
pub(crate) type Finish = Box<dyn FnOnce(&mut [Vec<u8>]) + Send>;

/// Where a receive's bytes go: buffer, offset, length.
type Landing = (usize, usize, usize);

/// A schedule under way.
struct Running {
    /// The request the program holds.
    req: usize,
    comm: usize,
    ctx: u32,
    tag: i32,
    group: Arc<Vec<u32>>,
    /// The rounds still to come (its buffers moved to `bufs`).
    sched: Sched,
    /// The schedule's buffers, whose blocks its receives land in.
    bufs: Lender,
    /// Messages of the current round in flight: request, and for a
    /// receive that landed in memory of its own (not lent a block of
    /// `bufs`), where its bytes go (buffer, offset, length).
    inflight: Vec<(usize, Option<Landing>)>,
    /// The current round's local actions, run once `inflight` is done.
    after: Vec<Act>,
    finish: Option<Finish>,
    /// The first error class met.
    error: i32,
}

static ACTIVE: Mutex<Vec<Running>> = Mutex::new(Vec::new());
/// How many schedules run: progress checks this word, not the lock.
static COUNT: AtomicUsize = AtomicUsize::new(0);
/// The engine's event count when the last pass over the schedules
/// began.
static SEEN: AtomicU64 = AtomicU64::new(0);
/// The next sequence number of each communicator context.
static SEQ: Mutex<Option<HashMap<u32, u32>>> = Mutex::new(None);
/// A signal came and its handler did not advance the schedules: the
/// next thread to let go of a lock they need (or to look up from a
/// wait) advances them. Cleared by a pass that holds both locks.
static PENDING: AtomicBool = AtomicBool::new(false);
/// Threads waiting in MPI (`runtime::wait_until`): they advance the
/// schedules themselves.
static WAITING: AtomicUsize = AtomicUsize::new(0);
/// Messages carry a signal while schedules run (`SSS_MPI_NBC_SIGNAL`).
static SIGNALS: AtomicBool = AtomicBool::new(true);

/// Whether any schedule runs.
pub(crate) fn active() -> bool {
    COUNT.load(Ordering::Acquire) > 0
}

/// Reads `SSS_MPI_NBC_SIGNAL` (at `MPI_Init`): `on` (default) or `off`.
pub(crate) fn init_from_env() -> Result<(), MpiErr> {
    let v = std::env::var("SSS_MPI_NBC_SIGNAL").ok();
    SIGNALS.store(parse_signal(v.as_deref())?, Ordering::Relaxed);
    Ok(())
}

fn parse_signal(v: Option<&str>) -> Result<bool, MpiErr> {
    crate::objects::on_off("SSS_MPI_NBC_SIGNAL", v)
}

/// Whether a message pushed now is followed by a signal: schedules run
/// here, so the receiver likely has its part of one outstanding. Two
/// relaxed loads when none runs.
pub(crate) fn signal_peers() -> bool {
    COUNT.load(Ordering::Relaxed) > 0 && SIGNALS.load(Ordering::Relaxed)
}

/// Bits of the word a task publishes to its node's tasks
/// (`Task::publish_word`): schedules run here ...
const RUNNING: u32 = 1;
/// ... and a thread of ours is inside MPI where it advances them
/// (starting a collective, or waiting).
const IN_MPI: u32 = 2;

/// The task our word is published through (set at the first schedule).
static PUBLISHER: std::sync::OnceLock<sss_mbcf::Task> = std::sync::OnceLock::new();
/// Threads inside MPI where they advance the schedules (see [`IN_MPI`]).
static INSIDE: AtomicUsize = AtomicUsize::new(0);

/// Publishes [`RUNNING`] and [`IN_MPI`] as they are now. Threads race to
/// publish: the word is a hint, and a stale one costs a signal too many
/// or a collective's progress between calls.
fn publish() {
    if let Some(t) = PUBLISHER.get() {
        let mut w = 0;
        if active() {
            w |= RUNNING;
        }
        if INSIDE.load(Ordering::SeqCst) > 0 {
            w |= IN_MPI;
        }
        t.publish_word(w);
    }
}

/// A thread counted in [`INSIDE`] until it drops.
struct Inside(());

impl Inside {
    fn enter() -> Inside {
        INSIDE.fetch_add(1, Ordering::SeqCst);
        publish();
        Inside(())
    }
}

impl Drop for Inside {
    fn drop(&mut self) {
        INSIDE.fetch_sub(1, Ordering::SeqCst);
        publish();
        // A sender that saw us inside sent no signal: what it pushed
        // before its look (see `signal_to`) is in the FIFO now, and one
        // more pass takes it, or the schedules would wait for our next
        // call (the SeqCst store in `publish` orders it before the look).
        if active() {
            progress();
        }
    }
}

/// Whether a message just pushed to `to` should be followed by a
/// signal: schedules run here, and, on this node, `to` runs some too and
/// no thread of it is inside MPI where it advances them (which sees the
/// message itself). The fence orders the push before the look at `to`'s
/// word, against `to`'s store of it and its pass after (`Inside`):
/// either we see it gone from MPI and signal, or its pass sees the
/// message.
pub(crate) fn signal_to(task: &sss_mbcf::Task, to: u32) -> bool {
    signal_peers() && {
        fence(Ordering::SeqCst);
        task.peer_word(to)
            .is_none_or(|w| w & RUNNING != 0 && w & IN_MPI == 0)
    }
}

/// Whether a signal's pass is owed: a waiting thread stops waiting.
pub(crate) fn wanted() -> bool {
    COUNT.load(Ordering::Relaxed) > 0 && PENDING.load(Ordering::Relaxed)
}

/// Called after a thread let go of the library's lock: runs the pass a
/// signal could not (it found the lock taken). A relaxed load when no
/// schedule runs.
pub(crate) fn after_release() {
    if COUNT.load(Ordering::Relaxed) > 0 {
        // Pairs with the fence in `on_signal`: either the handler's
        // try-lock saw the lock free, or this load sees its flag.
        fence(Ordering::SeqCst);
        if PENDING.load(Ordering::Relaxed) {
            progress();
        }
    }
}

/// Marks the calling thread as waiting in MPI until the guard drops;
/// the handler then leaves the schedules to it.
pub(crate) fn waiting() -> Waiting {
    WAITING.fetch_add(1, Ordering::SeqCst);
    Waiting(Inside::enter())
}

/// See [`waiting`].
pub(crate) struct Waiting(Inside);

impl Drop for Waiting {
    fn drop(&mut self) {
        WAITING.fetch_sub(1, Ordering::SeqCst);
        // A handler that saw us waiting left its pass to us.
        after_release();
    }
}

/// The signal's handler: advances the schedules if neither lock is
/// taken, never waiting for one (it runs on MBCF's progress thread, or
/// on a thread of ours that waits in MBCF, maybe with a lock held).
pub(crate) fn on_signal() {
    if !active() {
        return;
    }
    PENDING.store(true, Ordering::SeqCst);
    fence(Ordering::SeqCst);
    if WAITING.load(Ordering::SeqCst) > 0 {
        return;
    }
    // The library's lock first, then the schedules': a thread advancing
    // them takes the library's lock while it holds theirs, so this order
    // with try-locks never waits on it. Either lock's holder looks at
    // `PENDING` after it lets go.
    let _ = crate::runtime::try_with(|e| {
        // A thread that began waiting since the look above would sleep
        // through what this pass takes from the FIFO and completes: it
        // looked under this lock, so under it is the last look.
        if WAITING.load(Ordering::SeqCst) > 0 {
            return;
        }
        let mut list = match ACTIVE.try_lock() {
            Ok(g) => g,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) => return,
        };
        PENDING.store(false, Ordering::Relaxed);
        pass(&mut list, &mut Eng::Held(e));
    });
}

/// How a pass reaches the engine: taking the library's lock for each
/// step (inside MPI calls), or through the lock a signal's handler
/// holds for the whole pass.
enum Eng<'a> {
    Lock,
    Held(&'a mut Engine),
}

impl Eng<'_> {
    fn run<T>(&mut self, f: impl FnOnce(&mut Engine) -> Result<T, MpiErr>) -> Result<T, MpiErr> {
        match self {
            Eng::Lock => with(f),
            Eng::Held(e) => f(e),
        }
    }

    fn in_handler(&self) -> bool {
        matches!(self, Eng::Held(_))
    }
}

fn list() -> MutexGuard<'static, Vec<Running>> {
    ACTIVE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Starts `sched` as a collective on `comm`; the request that completes
/// when it finished and `finish` ran. On an intercommunicator the
/// schedule's ranks are the local group's, then the remote group's
/// (`algo::Inter`), all on the intercommunicator's collective context.
pub(crate) fn start(comm: usize, mut sched: Sched, finish: Finish) -> Result<usize, MpiErr> {
    if sched.steps_on_caller() {
        return Err(MpiErr::new(
            err::INTERN,
            "a schedule's local step names the caller's memory",
        ));
    }
    let local = if crate::inter::is_inter(comm) {
        Some(crate::inter::local_group(comm)?)
    } else {
        None
    };
    let (req, ctx, group) = with(|e| {
        let c = e.comm(comm)?;
        let group = match &local {
            Some(l) => Arc::new(l.iter().chain(c.group.iter()).copied().collect()),
            None => c.group.clone(),
        };
        let ctx = c.ctx + 1;
        let _ = PUBLISHER.set(e.task.clone());
        Ok((e.nbc_request(comm), ctx, group))
    })?;
    // Same-node peers signal us only while schedules run here and no
    // thread of ours is in this call or a wait (see `signal_to`).
    let _inside = Inside::enter();
    let seq = {
        let mut g = SEQ.lock().unwrap_or_else(|e| e.into_inner());
        let n = g.get_or_insert_with(HashMap::new).entry(ctx).or_insert(0);
        let s = *n;
        *n = (s + 1) % (1 << 29);
        s
    };
    list().push(Running {
        req,
        comm,
        ctx,
        tag: TAG_BASE + seq as i32,
        group,
        bufs: Lender::new(
            std::mem::take(&mut sched.bufs),
            sched.caller.take(),
            sched.source.take(),
        ),
        sched,
        inflight: Vec::new(),
        after: Vec::new(),
        finish: Some(finish),
        error: 0,
    });
    COUNT.fetch_add(1, Ordering::AcqRel);
    // Its first messages leave now.
    progress();
    Ok(req)
}

/// Advances every schedule as far as it goes without waiting; whether
/// one moved. A thread that finds another advancing leaves it to that
/// one (and to the news its completions send).
pub(crate) fn progress() -> bool {
    let mut moved = false;
    loop {
        if !active() {
            return moved;
        }
        let mut list = match ACTIVE.try_lock() {
            Ok(g) => g,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) => return moved,
        };
        // What a signal announced before this point is in the engine's
        // queues when the pass looks.
        PENDING.store(false, Ordering::Relaxed);
        moved |= pass(&mut list, &mut Eng::Lock);
        drop(list);
        // A handler that found the schedules' lock taken meanwhile.
        fence(Ordering::SeqCst);
        if !PENDING.load(Ordering::Relaxed) {
            return moved;
        }
    }
}

/// One pass over the schedules; whether one moved.
fn pass(list: &mut Vec<Running>, eng: &mut Eng<'_>) -> bool {
    // Every completion counted up to here is seen by the pass below.
    let start = eng.run(|e| Ok(e.events)).unwrap_or(u64::MAX);
    let mut moved = false;
    let mut i = 0;
    while i < list.len() {
        if eng.in_handler() && list[i].sched.runs_user_code() {
            i += 1;
            continue;
        }
        let (m, done) = advance(&mut list[i], eng);
        moved |= m;
        if done {
            let r = list.remove(i);
            COUNT.fetch_sub(1, Ordering::AcqRel);
            if !active() {
                publish();
            }
            let _ = eng.run(|e| {
                e.nbc_complete(r.req, r.error);
                Ok(())
            });
            for b in r.bufs.into_bufs().unwrap_or_default() {
                crate::nbc::pool::give(b);
            }
        } else {
            i += 1;
        }
    }
    SEEN.store(start, Ordering::Release);
    moved
}

/// Whether every schedule has looked at the completions counted by
/// `events` (the engine's event count): a wait may then sleep until a
/// message arrives.
pub(crate) fn settled(events: u64) -> bool {
    !active() || SEEN.load(Ordering::Acquire) == events
}

/// Moves one schedule on: whether it moved, and whether it finished
/// (its results written).
fn advance(r: &mut Running, eng: &mut Eng<'_>) -> (bool, bool) {
    let mut moved = false;
    loop {
        if !r.inflight.is_empty() {
            match collect(r, eng) {
                Ok(true) => {}
                Ok(false) => return (moved, false),
                Err(e) => r.error = e.class,
            }
        }
        if r.error == 0 {
            let after = std::mem::take(&mut r.after);
            let done = match r.bufs.bufs() {
                Some(b) => r.sched.steps(b, &after),
                None => Err(MpiErr::new(
                    err::INTERN,
                    "a schedule's buffers are out on loan",
                )),
            };
            if let Err(e) = done {
                r.error = e.class;
            }
        }
        let next = if r.error == 0 {
            r.sched.rounds.pop_front()
        } else {
            None
        };
        let Some(round) = next else {
            if r.error == 0 {
                if let (Some(f), Some(b)) = (r.finish.take(), r.bufs.bufs()) {
                    f(b);
                }
            }
            return (true, true);
        };
        moved = true;
        let (msgs, after): (Vec<Act>, Vec<Act>) = round.into_iter().partition(Act::is_msg);
        r.after = after;
        if let Err(e) = post(r, &msgs, eng) {
            r.error = e.class;
        }
    }
}

/// Posts a round's messages: receives first, so a message to ourselves
/// finds its receive. A receive lands in its block of the schedule's
/// buffers (lent to it), or, where the block overlaps another receive's
/// or a send's of the round, in memory of its own, copied after.
fn post(r: &mut Running, msgs: &[Act], eng: &mut Eng<'_>) -> Result<(), MpiErr> {
    let (comm, ctx, tag) = (r.comm, r.ctx, r.tag);
    let group = r.group.clone();
    let bufs = &mut r.bufs;
    let inflight = &mut r.inflight;
    let sent = |b: usize, a: usize, l: usize| {
        msgs.iter().any(|m| {
            matches!(*m, Act::Send { buf, at, len, .. }
                if buf == b && at < a + l && a < at + len)
        })
    };
    eng.run(|e| {
        for a in msgs.iter().filter(|a| matches!(a, Act::Recv { .. })) {
            if let Act::Recv { from, buf, at, len } = *a {
                let id = e.handle();
                let w = world(&group, from)?;
                let mut post = |dest| {
                    e.recv_ctx_unnoticed(comm, ctx, group.clone(), Some(w), Some(tag), dest, id);
                    Ok::<_, MpiErr>(id)
                };
                let lent =
                    !sent(buf, at, len) && bufs.lend((buf, at, len), |u| post(Dest::User(u)))?;
                if lent {
                    inflight.push((id, None));
                } else {
                    post(Dest::Own {
                        cap: len,
                        data: Vec::new(),
                    })?;
                    inflight.push((id, Some((buf, at, len))));
                }
            }
        }
        for a in msgs {
            if let Act::Send { to, buf, at, len } = *a {
                let id = e.handle();
                let data = bufs.bytes(buf, at, len).ok_or_else(|| {
                    MpiErr::new(err::INTERN, "a schedule sends bytes outside its buffers")
                })?;
                e.send_ctx(comm, ctx, world(&group, to)?, tag, data, false, id)?;
                e.stats.coll_msgs += 1;
                e.stats.coll_bytes += len as u64;
                inflight.push((id, None));
            }
        }
        Ok(())
    })
}

fn world(group: &[u32], rank: u32) -> Result<u32, MpiErr> {
    group
        .get(rank as usize)
        .copied()
        .ok_or_else(|| MpiErr::new(err::INTERN, "a schedule names a rank past its group"))
}

/// Whether the round's messages completed (their bytes then in place).
fn collect(r: &mut Running, eng: &mut Eng<'_>) -> Result<bool, MpiErr> {
    let inflight = std::mem::take(&mut r.inflight);
    let lender = &mut r.bufs;
    let out = eng.run(|e: &mut Engine| {
        e.progress();
        if !inflight
            .iter()
            .all(|(id, _)| e.reqs.get(id).is_none_or(|q| q.done))
            || !lender.returned(e)
        {
            return Ok(None);
        }
        let mut first = 0;
        for &(id, to) in &inflight {
            let data = e.take_data(id);
            let st = e.take(id).unwrap_or_default();
            if st.error != 0 && first == 0 {
                first = st.error;
            }
            if let Some((buf, at, len)) = to {
                let n = data.len().min(len);
                if !lender.put(buf, at, &data[..n]) && first == 0 {
                    first = err::INTERN;
                }
            }
        }
        Ok(Some(first))
    });
    match out {
        Ok(None) => {
            r.inflight = inflight;
            Ok(false)
        }
        Ok(Some(0)) => Ok(true),
        Ok(Some(c)) => Err(MpiErr::new(c, "a message of the collective failed")),
        Err(e) => {
            // Receives may still hold blocks of the buffers: the schedule
            // ends with them (see `Lender`'s drop).
            r.inflight = inflight;
            Err(e)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::parse_signal;

    #[test]
    fn signal_setting_is_on_by_default_and_refuses_other_values() {
        for v in [None, Some(""), Some("on"), Some(" 1 ")] {
            assert!(parse_signal(v).expect("accepted"), "{v:?}");
        }
        for v in ["off", "0"] {
            assert!(!parse_signal(Some(v)).expect("accepted"), "{v}");
        }
        let e = parse_signal(Some("yes")).expect_err("refused");
        assert!(e.msg.contains("SSS_MPI_NBC_SIGNAL"), "{}", e.msg);
    }
}
