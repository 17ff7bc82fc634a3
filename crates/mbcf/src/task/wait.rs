//! Waiting for memory to change: spin-then-block waits, block-only
//! waits, and the [`WaitPolicy`] choice between them and SS-Wait.

use super::{Inner, Task};
use crate::sys::{self};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A wait that blocked is taken for a long one (the spin budget halves)
/// only past this many times the longest spin (`spin_max`).
const LONG_WAIT: u32 = 4;

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

/// Datagrams [`Task::poll`] takes at most.
const POLL_MAX: usize = 16;

impl Task {
    /// Receives and applies what already waits in the task's socket,
    /// without waiting: for a caller about to decide on what may have
    /// just arrived (a library choosing how to send a message), between
    /// waits, when the socket is left to waiters and nobody reads it. At
    /// most 16 datagrams; one `recvmsg` when there is none.
    /// Nothing on a task whose peers are all on its node.
    pub fn poll(&self) {
        let inner = &self.inner;
        if inner.all_local || inner.on_progress_thread() {
            return;
        }
        let claim = inner.claim_socket();
        let at = inner.now().max(1);
        claim.looked.set(at);
        for _ in 0..POLL_MAX {
            if !inner.try_step(at) {
                break;
            }
        }
    }

    /// The task's event count. It moves after anything that wakes a
    /// blocked waiter: an operation completed or a datagram applied here,
    /// or a same-node operation that landed while a thread blocks. A wait
    /// whose condition is costly to evaluate in full may do so only when
    /// this moved (and now and then while it spins): what woke it from a
    /// block is never left unseen.
    pub fn events(&self) -> u32 {
        self.inner.ctl.ctl().events.load(Ordering::SeqCst)
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
        self.wait_word_spinning(word, pred, timeout, None)
    }

    /// [`Task::wait_word_timeout`] for a word `partner` will change, with
    /// SS-Wait's spin when the partner is on another node: the waiter
    /// spins (receiving for itself, so no thread is woken for the answer)
    /// for up to `SSS_SSWAIT_SPIN_US`, where the default wait's adaptive
    /// budget (at most `SSS_SPIN_MAX_US`) would block and pay two
    /// wake-ups. An oversubscribed node yields instead of spinning, as
    /// every wait does. A partner on this node gets the default wait.
    /// `None` when `timeout` passed.
    pub fn wait_word_partner_timeout(
        &self,
        word: &AtomicU64,
        partner: u32,
        pred: impl Fn(u64) -> bool,
        timeout: Duration,
    ) -> Option<u64> {
        if matches!(self.inner.peer_ctls.get(partner as usize), Some(Some(_)))
            || partner >= self.inner.size
        {
            return self.wait_word_timeout(word, pred, timeout);
        }
        self.wait_word_spinning(word, pred, timeout, Some(self.inner.cfg.sswait.spin))
    }

    /// The default wait with a deadline, spinning for `fixed` instead of
    /// the adaptive budget when given.
    fn wait_word_spinning(
        &self,
        word: &AtomicU64,
        pred: impl Fn(u64) -> bool,
        timeout: Duration,
        fixed: Option<Duration>,
    ) -> Option<u64> {
        let mut v = 0;
        let ok = self.inner.wait_with(
            || {
                v = word.load(Ordering::Acquire);
                pred(v)
            },
            Some(Instant::now() + timeout),
            fixed,
        );
        ok.then_some(v)
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
            WaitPolicy::Spin => {
                let _claim = self.inner.claim_socket();
                loop {
                    let v = word.load(Ordering::Acquire);
                    if pred(v) {
                        return v;
                    }
                    if !self.inner.try_step(self.inner.now()) {
                        std::hint::spin_loop();
                    }
                }
            }
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
}

/// How long a wait spins before it yields at its looks (see
/// `spin_phase`): far above a round trip on one node (0.2 µs) or over
/// udp (10 µs), far below the spin budget (50 µs to a few hundred).
/// Two ping-ponging tasks the kernel had put on one CPU spun the whole
/// budget in turn, 0.26 ms a message for milliseconds on end.
pub(super) const YIELD_AFTER: Duration = Duration::from_micros(20);

/// A hand-over's yield that took this long ran another thread on our
/// CPU (a yield alone on its CPU returns in about a microsecond; a
/// partner that got the CPU answers and starts a wait that spins
/// [`YIELD_AFTER`] before it hands it back).
const GAVE_CPU: Duration = Duration::from_micros(5);

/// Hand-overs in a row that gave the CPU away before a thread moves to
/// another CPU; doubled (up to [`MOVE_AFTER_MAX`]) when it has to move
/// again soon after moving, so a node busier than it looks is not
/// churned.
const MOVE_AFTER: u32 = 4;
const MOVE_AFTER_MAX: u32 = 1024;

/// A move this long after the last one starts again from [`MOVE_AFTER`].
const MOVES_FORGOTTEN: Duration = Duration::from_millis(50);

thread_local! {
    /// This thread's hand-overs in a row that gave the CPU away, the
    /// number that makes it move, and when it last moved.
    static SHARED: std::cell::Cell<(u32, u32, Option<Instant>)> =
        const { std::cell::Cell::new((0, MOVE_AFTER, None)) };
}

/// How long a wait spins before it counts itself among the threads that
/// run the signal ring (`Ctl::ring_lookers`), so that same-node senders
/// of a SIGNAL ring nobody: an answer within it (a ping-pong's) costs
/// the wait no locked instruction more.
const LOOK_AT_RING_AFTER: Duration = Duration::from_micros(1);

/// Over udp a look receives: a lasting wait yields at every this many
/// looks only (about every 5 µs).
const UDP_YIELD_EVERY: u32 = 16;

/// An application thread's claim on the task's socket while it spins in a
/// wait, receiving and applying for itself: the progress thread stops
/// polling the socket (see `progress.rs`), so a datagram wakes nobody.
pub(super) struct Claim<'a> {
    inner: &'a Inner,
    /// Ring the progress thread when the last claim goes.
    hand_back: bool,
    /// The clock at the claimant's last look (0: none yet): when the
    /// claim ends, it stands for the end, saving a clock read per wait.
    looked: std::cell::Cell<u64>,
}

impl Claim<'_> {
    /// Gives the socket back before blocking: the progress thread must
    /// watch it from now on, so it is rung if nobody else spins.
    pub(super) fn hand_back(mut self) {
        self.hand_back = true;
    }
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        if self.hand_back {
            self.inner.handed_back.store(true, Ordering::SeqCst);
        }
        // Only the socket is left to waiters between waits; on one node
        // the progress thread keeps it, and the clock read would show in
        // the shm round trip.
        if !self.inner.all_local {
            let at = match self.looked.get() {
                0 => self.inner.now(),
                t => t,
            };
            self.inner.released.store(at, Ordering::Relaxed);
        }
        self.inner.spinners.fetch_sub(1, Ordering::SeqCst);
        // A waiter that got what it waited for returns without a wake-up;
        // the progress thread takes the socket back at its first look that
        // finds nobody spinning and no claim ended within
        // `BETWEEN_WAITS`. One about to block rings even when
        // other claims remain: an outer wait of this thread (a signal
        // handler waits inside a wait) does not spin while it blocks.
        if self.hand_back && self.inner.sockless.load(Ordering::SeqCst) {
            self.inner.wake.notify();
        }
    }
}

impl Inner {
    /// Counts the calling thread as blocked (see `TaskCtl::blocked`) and
    /// makes sure the progress thread watches the socket: a blocked thread
    /// receives nothing. Pairs with the progress loop, which sets
    /// `sockless` before it reads `blocked`: either it sees us, or we see
    /// it sockless and ring.
    pub(super) fn begin_blocking(&self) {
        self.ctl.ctl().blocked.fetch_add(1, Ordering::SeqCst);
        if self.sockless.load(Ordering::SeqCst) {
            self.wake.notify();
        }
    }

    /// Ends [`Inner::begin_blocking`].
    pub(super) fn end_blocking(&self) {
        self.ctl.ctl().blocked.fetch_sub(1, Ordering::SeqCst);
    }

    /// Claims the socket for a spinning waiter.
    pub(super) fn claim_socket(&self) -> Claim<'_> {
        self.spinners.fetch_add(1, Ordering::SeqCst);
        Claim {
            inner: self,
            hand_back: false,
            looked: std::cell::Cell::new(0),
        }
    }

    /// Blocks until the progress thread did some work (or a short while).
    pub(super) fn wait_progress(&self) {
        if self.on_progress_thread() {
            self.step_inline();
            return;
        }
        let seq = self.ctl.ctl().events.load(Ordering::SeqCst);
        self.ctl.ctl().waiters.fetch_add(1, Ordering::SeqCst);
        self.begin_blocking();
        sys::futex_wait(&self.ctl.ctl().events, seq, Some(Duration::from_millis(1)));
        self.end_blocking();
        self.ctl.ctl().waiters.fetch_sub(1, Ordering::SeqCst);
    }

    /// The default wait: SS-Wait's policy without a named partner. With a
    /// CPU for every runnable thread it spins (receiving and applying for
    /// itself, see [`Claim`]) for the adaptive spin budget, then blocks on
    /// the event word; on an oversubscribed node it yields instead of
    /// spinning, for at most SS-Wait's `yield_for`, then blocks. Returns
    /// whether `cond` held before `deadline`.
    ///
    /// The budget (between `cfg.spin` and `cfg.spin_max`) grows to twice
    /// a wait that blocked but was answered within `spin_max`, and halves
    /// after a longer one. Without it, one late answer can lock two
    /// ping-ponging tasks into blocking for good: each wake-up takes longer
    /// than the other side's spin, so every answer comes after it blocked.
    pub(super) fn wait_until(&self, cond: impl FnMut() -> bool, deadline: Option<Instant>) -> bool {
        self.wait_with(cond, deadline, None)
    }

    /// [`Inner::wait_until`], spinning for `fixed` (not adapted) instead
    /// of the adaptive budget when given.
    pub(super) fn wait_with(
        &self,
        mut cond: impl FnMut() -> bool,
        deadline: Option<Instant>,
        fixed: Option<Duration>,
    ) -> bool {
        // Nothing held back for batching may wait on our waiting, even a
        // wait already over: the peer may wait for what is held (a
        // barrier's last arrival record, held behind the pages it pushed
        // until their ack came, 200 µs later).
        if self.maybe_held.load(Ordering::Acquire) {
            let mut net = self.lock_net();
            self.flush(&mut net);
        }
        if cond() {
            return true;
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
        if cond() {
            return true;
        }
        let mut start = None;
        if fixed.is_some() || !self.cfg.spin.is_zero() {
            let over = self.crowded();
            let budget = match (fixed, over) {
                (Some(b), true) => self.cfg.sswait.yield_for.min(b),
                (Some(b), false) => b,
                (None, true) => self.cfg.sswait.yield_for,
                (None, false) => Duration::from_nanos(self.spin_budget.load(Ordering::Relaxed)),
            };
            match self.spin_phase(&mut cond, budget, deadline, over, fixed.is_some()) {
                Ok(held) => return held,
                Err(began) => start = Some(began),
            }
            self.blocked_waits.fetch_add(1, Ordering::Relaxed);
        }
        let held = self.block_phase(&mut cond, deadline);
        let adapt = fixed.is_none() && held && !self.crowded();
        if let Some(start) = start.filter(|_| adapt) {
            self.adapt_spin(self.answer_time(start));
        }
        held
    }

    /// How long a wait that began at `began` and blocked took until the
    /// progress thread last woke waiters, or until now when that was
    /// before it began (the answer came another way: a same-node
    /// sender's ring).
    fn answer_time(&self, began: Instant) -> Duration {
        let took = began.elapsed();
        let from = began.saturating_duration_since(self.start).as_nanos() as u64;
        match self.answered.load(Ordering::Relaxed) {
            at if at > from => took.min(Duration::from_nanos(at - from)),
            _ => took,
        }
    }

    /// A lasting wait's yield (see [`YIELD_AFTER`]). When such yields
    /// keep running another thread on this CPU while the job's tasks on
    /// the node do not outnumber its CPUs, the thread moves to another
    /// CPU: the kernel had put two ping-ponging tasks on one and does
    /// not move a thread that just ran, so they took turns for the
    /// whole job (0.38 µs an MPI message one way against 0.15) while
    /// the other CPU idled.
    pub(super) fn hand_over(&self) {
        self.handovers.fetch_add(1, Ordering::Relaxed);
        let t = Instant::now();
        std::thread::yield_now();
        self.shared_cpu(t.elapsed() >= GAVE_CPU);
    }

    /// Counts a look that found this thread's CPU `shared` with another
    /// runnable thread (or not, which ends the run of them); after
    /// enough in a row, and unless the job's tasks on the node outnumber
    /// its CPUs, moves the thread to another CPU. Odd ranks need twice
    /// as many: two partners that both moved at once could land on one
    /// CPU again (a ping-pong at job start chased itself through seven
    /// moves a task).
    pub(super) fn shared_cpu(&self, shared: bool) {
        SHARED.with(|c| {
            let (turns, need, last) = c.get();
            let turns = if shared { turns + 1 } else { 0 };
            if turns < need << (self.rank & 1) || self.crowded() {
                c.set((turns.min(need << 1), need, last));
                return;
            }
            let now = Instant::now();
            let need = match last {
                Some(l) if now.saturating_duration_since(l) < MOVES_FORGOTTEN => {
                    (need * 2).min(MOVE_AFTER_MAX)
                }
                _ => MOVE_AFTER,
            };
            c.set((0, need, Some(now)));
            if sys::move_off_cpu() {
                self.moves.fetch_add(1, Ordering::Relaxed);
                self.publish_cpu();
            }
        });
    }

    /// Publishes the CPU this thread runs on (see `Ctl::cpu`); returns it
    /// plus one (0: unknown).
    pub(super) fn publish_cpu(&self) -> u32 {
        let cpu = sys::current_cpu().map_or(0, |c| c.saturating_add(1));
        let c = &self.ctl.ctl().cpu;
        if c.load(Ordering::Relaxed) != cpu {
            c.store(cpu, Ordering::Relaxed);
        }
        cpu
    }

    /// Spins (or yields, when `yielding`) for `budget`, until `cond` or
    /// `deadline` (`Ok(false)`); `Err(start)` when the budget ran out
    /// (block now). Memory is checked on every turn, and on one node the
    /// signal ring too; the socket and the clock, which cost a system
    /// call or a vDSO read, every 4th turn, in an all-local job every
    /// 16th: there the answer lands in memory and every turn counts. The
    /// budget starts at the first clock read, a few turns in: most waits
    /// of a ping-pong end before it, and a read at the start of every
    /// wait showed in the shm round trip.
    ///
    /// `renew` (SS-Wait's spin on a partner across the network): the
    /// budget counts from the last datagram received, not from the
    /// start: while datagrams keep coming the partner runs and sends, and
    /// a long transfer into our memory (a large WRITE) is received here
    /// instead of by a progress thread woken for every burst.
    fn spin_phase(
        &self,
        cond: &mut impl FnMut() -> bool,
        budget: Duration,
        deadline: Option<Instant>,
        yielding: bool,
        renew: bool,
    ) -> Result<bool, Instant> {
        // While spinning, receive and apply ourselves, and run signal
        // handlers: the answer we wait for is usually in the socket before
        // the progress thread could be scheduled to fetch it. When every
        // peer writes straight into our memory the system call only
        // delays seeing it: then only the signal ring is watched, and the
        // progress thread keeps the socket.
        let claim = self.claim_socket();
        let mut spins: u32 = 0;
        let mut got = false;
        // Turns between looks at the socket (or the ring, the clock): over
        // udp the answer is in the socket and the look is what finds it
        // (every 4th turn: 0.3 µs less per 8 B round trip than every
        // 16th, and no less than every 2nd).
        let every = if self.all_local { 16 } else { 4 };
        // Over udp the first look is at once (the answer may be in the
        // socket already); on one node after `every` turns.
        let first = 1;
        let ring = self.ctl.signal_ring();
        let mut start = None;
        let mut looks: u32 = 0;
        let mut looking = None;
        loop {
            if cond() {
                return Ok(true);
            }
            spins = spins.wrapping_add(1);
            // Right after a datagram came, another may be behind it.
            if got {
                spins = 1;
            }
            // A yield costs more than a look at the socket and the clock.
            // On one node the signal ring is looked at every turn: its
            // oldest slot's line stays in our cache until a sender fills
            // it, so the look costs a load, where the clock read of the
            // full look costs 20 ns (reading it every 4th turn showed in
            // the shm round trip). The slot, not the ring's `tail`: a
            // waiter reading `tail` would take its line from the sender's
            // cache at every push.
            if !yielding && spins % every != first {
                if self.all_local && ring.ready() {
                    self.take_ring_signals();
                }
                std::hint::spin_loop();
                continue;
            }
            let now = Instant::now();
            if deadline.is_some_and(|d| now >= d) {
                return Ok(false);
            }
            let began = *start.get_or_insert(now);
            if now >= began + budget {
                claim.hand_back();
                return Err(began);
            }
            if looking.is_none() && now >= began + LOOK_AT_RING_AFTER {
                looking = Some(self.look_at_ring());
            }
            if !self.all_local {
                let at = now.saturating_duration_since(self.start).as_nanos() as u64;
                claim.looked.set(at.max(1));
                self.spin_looked.store(at, Ordering::Relaxed);
                got = self.try_step(at);
                if got && renew {
                    start = Some(now);
                }
            } else if ring.ready() {
                self.take_ring_signals();
            }
            // A spin that lasts may have its partner waiting for our CPU:
            // the kernel placed both on one (it wakes a thread where its
            // waker runs, and keeps a thread that just ran where it is),
            // and spinning there keeps the partner off for the whole
            // budget at every message while the other CPU idles. Yielding
            // hands it the CPU; alone, a yield returns at once. Over udp
            // at every 16th look only: a look receives, and a yield at
            // every empty one cost a 64 KiB WRITE stream a quarter of its
            // bandwidth.
            looks = looks.wrapping_add(1);
            let lasts =
                now >= began + YIELD_AFTER && (self.all_local || looks % UDP_YIELD_EVERY == 0);
            if (yielding || lasts) && !got {
                if lasts {
                    self.hand_over();
                } else {
                    std::thread::yield_now();
                }
            }
        }
    }

    /// Blocks on the event word until `cond` or `deadline`: every applied
    /// operation and completion bumps it and wakes us.
    fn block_phase(&self, cond: &mut impl FnMut() -> bool, deadline: Option<Instant>) -> bool {
        loop {
            if cond() {
                return true;
            }
            let now = Instant::now();
            if deadline.is_some_and(|d| now >= d) {
                return false;
            }
            let seq = self.ctl.ctl().events.load(Ordering::SeqCst);
            // Raised before the last look: same-node senders wake only
            // waits they see (`CtlMap::wake_waiting`).
            self.ctl.ctl().waiters.fetch_add(1, Ordering::SeqCst);
            self.watch_ring();
            if cond() {
                self.ctl.ctl().waiters.fetch_sub(1, Ordering::SeqCst);
                self.unwatch_ring();
                return true;
            }
            if self.ring_waiting() {
                self.ctl.ctl().waiters.fetch_sub(1, Ordering::SeqCst);
                self.unwatch_ring();
                continue;
            }
            self.begin_blocking();
            // The timeout is a safety net only.
            let mut t = Duration::from_millis(20);
            if let Some(d) = deadline {
                t = t.min(d.saturating_duration_since(now));
            }
            if sys::futex_wait(&self.ctl.ctl().events, seq, Some(t))
                && deadline.is_none_or(|d| d > now + t)
            {
                self.wait_timeouts.fetch_add(1, Ordering::Relaxed);
            }
            self.end_blocking();
            self.ctl.ctl().waiters.fetch_sub(1, Ordering::SeqCst);
            self.unwatch_ring();
        }
    }

    /// Spins (receiving for itself, see [`Claim`]) for `budget`, then
    /// blocks until `cond`: SS-Wait's spin on a partner across the
    /// network, whose state its node's IDM page gives only roughly. On an
    /// oversubscribed node it yields instead of spinning.
    pub(super) fn spin_then_block(&self, cond: impl FnMut() -> bool, budget: Duration) {
        self.wait_with(cond, None, Some(budget));
    }

    /// Adapts the spin budget to a wait of `took` that had to block.
    fn adapt_spin(&self, took: Duration) {
        let (lo, hi) = (self.cfg.spin, self.cfg.spin_max.max(self.cfg.spin));
        let cur = Duration::from_nanos(self.spin_budget.load(Ordering::Relaxed));
        let next = if took <= hi {
            cur.max(took * 2).min(hi)
        } else if took <= hi * LONG_WAIT {
            // Its time includes the wake-ups it paid for by blocking (two
            // on a VM can take 300 µs): its answer may well have come
            // within reach. Halving here locks a ping-pong of messages
            // that take a little longer than the budget into blocking.
            hi
        } else {
            (cur / 2).max(lo)
        };
        self.spin_budget
            .store(next.as_nanos() as u64, Ordering::Relaxed);
    }
    /// Blocks (no spinning) until `cond` or `deadline`.
    pub(super) fn block_until(&self, mut cond: impl FnMut() -> bool, deadline: Instant) -> bool {
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
            // Raised before the last look (see `block_phase`).
            c.waiters.fetch_add(1, Ordering::SeqCst);
            self.watch_ring();
            if cond() {
                c.waiters.fetch_sub(1, Ordering::SeqCst);
                self.unwatch_ring();
                return true;
            }
            if self.ring_waiting() {
                c.waiters.fetch_sub(1, Ordering::SeqCst);
                self.unwatch_ring();
                continue;
            }
            self.begin_blocking();
            sys::futex_wait(&c.events, seq, Some(deadline - now));
            self.end_blocking();
            c.waiters.fetch_sub(1, Ordering::SeqCst);
            self.unwatch_ring();
        }
    }

    /// Counts the calling thread, about to block on the event word, among
    /// those that run the signal ring when woken (`Ctl::ring_waiters`):
    /// a same-node sender of a SIGNAL then wakes it, and the handler runs
    /// here, instead of waking the progress thread to run it and then
    /// this thread for its effect (two wake-ups a way where a WRITE takes
    /// one). Ended by [`Inner::unwatch_ring`].
    pub(super) fn watch_ring(&self) {
        self.ctl.ctl().ring_waiters.fetch_add(1, Ordering::SeqCst);
    }

    /// True when a signal waits in the ring: one a sender queued just
    /// before this thread counted itself a watcher (it rang the progress
    /// thread), which runs here instead of sleeping first.
    pub(super) fn ring_waiting(&self) -> bool {
        std::sync::atomic::fence(Ordering::SeqCst);
        self.ctl.signal_ring().len() != 0
    }

    /// Counts the calling thread, spinning in a wait that looks at the
    /// signal ring on every turn (or receives, which runs it), among those
    /// that run it (`Ctl::ring_lookers`): a same-node sender of a SIGNAL
    /// then rings nobody. Ended when the guard drops, which looks at the
    /// ring once more, as [`Inner::unwatch_ring`] does.
    pub(super) fn look_at_ring(&self) -> RingLook<'_> {
        self.ctl.ctl().ring_lookers.fetch_add(1, Ordering::SeqCst);
        RingLook(self)
    }

    /// Ends [`Inner::watch_ring`], then runs what the ring holds: a
    /// sender that saw this thread counted woke only it. What cannot run
    /// here (a slot not filled yet, the net lock or the handler runner
    /// taken) goes to the progress thread. The fence pairs the decrement
    /// with the senders' claim of a slot then look at the count (see
    /// `Peer::signal_wake`): either the sender saw us gone and woke the
    /// progress thread itself, or we see its message.
    pub(super) fn unwatch_ring(&self) {
        self.ctl.ctl().ring_waiters.fetch_sub(1, Ordering::SeqCst);
        self.after_ring_count();
    }

    /// After this thread stopped counting itself among those that run
    /// the signal ring: the fence pairs the decrement with the senders'
    /// claim of a slot then look at the counts (see `Peer::signal_wake`),
    /// so either the sender saw us gone and rang the progress thread
    /// itself, or we see its message and run it, or hand it on.
    fn after_ring_count(&self) {
        std::sync::atomic::fence(Ordering::SeqCst);
        self.run_ring_or_hand_on();
    }

    /// Runs what the signal ring holds here; what cannot run here goes
    /// to the progress thread.
    pub(super) fn run_ring_or_hand_on(&self) {
        let ring = self.ctl.signal_ring();
        if ring.len() == 0 {
            return;
        }
        self.take_ring_signals();
        if ring.len() != 0 {
            self.wake.notify();
        }
    }
}

/// A thread counted in its task's `Ctl::ring_lookers` (see
/// [`Inner::look_at_ring`]).
pub(super) struct RingLook<'a>(&'a Inner);

impl Drop for RingLook<'_> {
    fn drop(&mut self) {
        let inner = self.0;
        inner.ctl.ctl().ring_lookers.fetch_sub(1, Ordering::SeqCst);
        inner.after_ring_count();
    }
}
