//! SS-Wait (snoopy spin wait): the policy that decides, from the
//! partner's and the node's state, whether a waiter spins, yields or
//! blocks, and the pre-wake of tasks about to be handed over to.

use super::{Inner, SsWaitTuning, Task};
use crate::idm::TaskState;
use crate::sys::{self};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

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
    /// hand-overs away. Yield a few turns while it stays so (it is often
    /// hit within them), then block, so the tasks that are about to run
    /// have the CPUs; the sender whose operation lands in the partner's
    /// memory wakes us (see [`Inner::prewake`]), one hand-over ahead of
    /// time.
    BlockWhileIdle,
}

/// Longest stretch an oversubscribed SS-Waiter yields while its partner
/// is idle before it blocks ([`SsNext::BlockWhileIdle`]): turns among
/// waiting tasks take a microsecond or two each (their flags are about
/// to come), a turn that went to a task with work takes longer.
const IDLE_YIELD_FOR: Duration = Duration::from_micros(20);

/// How long an SS-Waiter whose partner is blocked yields before it
/// blocks itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Yields {
    /// This many turns: with CPUs to spare a yield returns at once (there
    /// is nothing else to run), a spin that cannot see the flag sooner.
    Turns(u32),
    /// For this long: on an oversubscribed node a yield hands the CPU to
    /// a task with work, and the kernel (EEVDF) puts the yielder behind
    /// every such task, so a turn costs the others about a microsecond on
    /// the waiter's own CPU. Blocking instead costs a futex wake-up when
    /// the answer lands — on another CPU an inter-processor interrupt,
    /// 6 µs on a VM (12.6 µs per cross-CPU pipe round trip against
    /// 2.6 µs on one CPU). With the yields before an idle block
    /// ([`SsNext::BlockWhileIdle`]), NPB CG class W, 16 tasks on 2 CPUs,
    /// went from 0.515 s to 0.445 s (medians of 6; Open MPI 0.42;
    /// docs/performance.md).
    For(Duration),
}

/// The yields of [`SsNext::YieldThenBlock`].
fn yields_before_blocking(oversubscribed: bool, tune: &SsWaitTuning) -> Yields {
    if oversubscribed {
        Yields::For(tune.yield_for)
    } else {
        Yields::Turns(tune.yields)
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

impl Task {
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
    /// SS-Wait itself, with nothing landed in it yet, yields a few turns
    /// (while they are quick) and then blocks: its flag is at least two hand-overs away, and the
    /// CPUs are better left to the tasks about to run. One whose partner
    /// is blocked yields for `yield_for` before it blocks too: a turn
    /// goes to a task with work, where a wake-up costs an interrupt. The
    /// sender whose operation lands in the idle partner's memory wakes the
    /// blocked waiter (the partner's control block names what it waits
    /// for), so it is back on a CPU by the time the partner hands over. With tasks bound round robin to CPUs ([`Bind`](super::Bind)) that wake-up
    /// stays on the waker's CPU.
    ///
    /// Policy constants: [`SsWaitTuning`] (`SSS_SSWAIT_*` variables).
    pub fn sswait(&self, word: &AtomicU64, partner: u32, pred: impl Fn(u64) -> bool) -> u64 {
        // What was held back for batching (a READ just issued) may be what
        // the partner waits for, even when this wait is already over; the
        // yield and block phases send nothing.
        if self.inner.maybe_held.load(Ordering::Acquire) {
            let mut net = self.inner.lock_net();
            self.inner.flush(&mut net);
        }
        let v = word.load(Ordering::Acquire);
        if pred(v) {
            return v;
        }
        if !matches!(self.inner.peer_ctls.get(partner as usize), Some(Some(_))) {
            // Across the network: the default wait, with SS-Wait's spin.
            // The daemon's sample that judges oversubscription here counts
            // whatever ran at that instant (on hosts sharing a machine,
            // the partner's own spinning), and its yields would leave the
            // socket to the progress thread.
            let done = || pred(word.load(Ordering::Acquire));
            self.inner.spin_then_block(done, self.inner.cfg.sswait.spin);
            return word.load(Ordering::Acquire);
        }
        let c = self.inner.ctl.ctl();
        // Plain stores: a fence here would wait for the message just sent
        // to leave the store buffer. Others read them as hints; the
        // exchange that matters (a dependent blocking, our wait ending)
        // is ordered at the end.
        c.hit.store(0, Ordering::Relaxed);
        c.waiting_for
            .store(partner.saturating_add(1), Ordering::Release);
        let v = self.sswait_loop(word, partner, pred);
        c.waiting_for.store(0, Ordering::SeqCst);
        // Senders rang nobody for signals while `waiting_for` was set:
        // one queued since our last look runs here (the SeqCst store and
        // load pair with the sender's claim and look, see
        // `Peer::signal_wake`), or goes to the progress thread.
        if self.inner.ctl.signal_ring().claimed_seqcst() {
            self.inner.run_ring_or_hand_on();
        }
        // Nobody on this node saw us about to run (the value came over
        // udp, or was there already): wake our own waiters now.
        if c.hit.load(Ordering::SeqCst) == 0 && c.dependents.load(Ordering::SeqCst) > 0 {
            self.inner.wake_dependents(self.inner.rank);
        }
        v
    }

    fn sswait_loop(&self, word: &AtomicU64, partner: u32, pred: impl Fn(u64) -> bool) -> u64 {
        let tune = self.inner.cfg.sswait;
        // Every turn of every phase runs the signals same-node senders
        // queued (a load of the ring's oldest slot when none): they rang
        // nobody, seeing us in this wait.
        let ring = self.inner.ctl.signal_ring();
        let done = || {
            if ring.ready() {
                self.inner.take_ring_signals();
            }
            pred(word.load(Ordering::Acquire))
        };
        // When the first spin began: a clock read there, not here, as
        // most waits of a ping-pong end before it.
        let mut since = None;
        loop {
            let v = word.load(Ordering::Acquire);
            if pred(v) {
                return v;
            }
            let over = self.inner.oversubscribed();
            let next = sswait_next(over, self.inner.partner(partner));
            let hit = match next {
                SsNext::Spin => self.inner.spin_while(partner, &done, tune, &mut since),
                SsNext::Yield => self.inner.yield_while(partner, &done, tune),
                SsNext::BlockWhileIdle => {
                    self.inner.yield_while_idle(partner, &done, tune)
                        || self.inner.block_while_idle(partner, &done, tune)
                }
                SsNext::YieldThenBlock => {
                    // A yield is cheaper than a futex sleep and wake-up, and
                    // the partner may be woken any moment.
                    let got = match yields_before_blocking(over, &tune) {
                        Yields::Turns(n) => (0..n).any(|_| {
                            done() || {
                                std::thread::yield_now();
                                false
                            }
                        }),
                        Yields::For(t) => self.inner.yield_for(&done, t),
                    };
                    got || {
                        let _d = self.inner.dependent_of(partner);
                        self.inner.block_until(done, Instant::now() + tune.block)
                    }
                }
            };
            if hit {
                return word.load(Ordering::Acquire);
            }
        }
    }
}

impl Inner {
    /// True when SS-Wait should not spin here: see [`oversubscribed`].
    fn oversubscribed(&self) -> bool {
        let cpus = self.cfg.sswait.cpus.unwrap_or(self.ncpus);
        oversubscribed(
            cpus,
            self.own_active(),
            self.idm().and_then(|i| i.own_load()),
        )
    }

    /// True when more of the job's tasks on this node are awake than it
    /// has CPUs: exact and current, unlike the daemon's sample, whose
    /// instant counts on a busy node catch kernel threads and daemons
    /// running for a moment (the default wait goes by this alone).
    pub(super) fn crowded(&self) -> bool {
        let cpus = self.cfg.sswait.cpus.unwrap_or(self.ncpus);
        oversubscribed(cpus, self.own_active(), None)
    }

    /// The job's tasks on this node not blocked in a wait, this one
    /// included.
    fn own_active(&self) -> usize {
        1 + self
            .local_peers
            .iter()
            .filter(|&&r| {
                matches!(self.peer_ctls.get(r as usize), Some(Some(c))
                    if c.ctl().blocked.load(Ordering::Relaxed) == 0)
            })
            .count()
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

    /// Yields up to `tune.yields` turns, and for at most
    /// [`IDLE_YIELD_FOR`], while same-node `partner` stays idle; true
    /// when `done`. A partner hit within them costs no block and no
    /// wake-up; once a turn took long (other tasks had work and ran), the
    /// answer is far and blocking frees the CPU for them.
    fn yield_while_idle(&self, partner: u32, done: &impl Fn() -> bool, tune: SsWaitTuning) -> bool {
        let end = Instant::now() + IDLE_YIELD_FOR;
        for _ in 0..tune.yields {
            if done() {
                return true;
            }
            if !self.partner_idle(partner) || Instant::now() >= end {
                return false;
            }
            self.before_yield(partner);
            std::thread::yield_now();
        }
        done()
    }

    /// Yields until `done` (true) or `t` passed (false), looking at the
    /// clock every 64 turns.
    fn yield_for(&self, done: &impl Fn() -> bool, t: Duration) -> bool {
        let end = Instant::now() + t;
        let mut k: u32 = 0;
        loop {
            if done() {
                return true;
            }
            k = k.wrapping_add(1);
            if k % 64 == 0 && Instant::now() >= end {
                return false;
            }
            std::thread::yield_now();
        }
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
            let dep = self.dependent_of(partner);
            c.waiters.fetch_add(1, Ordering::SeqCst);
            self.watch_ring();
            self.begin_blocking();
            // Re-checked after announcing ourselves: a sender that set
            // the partner's `hit` before it could see `waiters` is seen
            // here, one that sets it later wakes us; a partner that left
            // its wait before it could see `dependents` is seen here,
            // one that leaves later wakes us.
            if !done() && !self.ring_waiting() && self.partner_idle(partner) {
                self.idle_blocks.fetch_add(1, Ordering::Relaxed);
                sys::futex_wait(&c.events, seq, Some(deadline - now));
            }
            self.end_blocking();
            c.waiters.fetch_sub(1, Ordering::SeqCst);
            self.unwatch_ring();
            drop(dep);
        }
    }

    /// After an operation landed in same-node `rank`'s memory: if `rank`
    /// is in an SS-Wait, it is about to run, so the tasks waiting on it
    /// will be next; wake those that blocked now, from here, while
    /// `rank` takes its turn, rather than from `rank` when it hands over
    /// (where the wake-up would delay the hand-over). Once per wait.
    pub(super) fn prewake(&self, rank: u32) {
        let Some(Some(x)) = self.peer_ctls.get(rank as usize) else {
            return;
        };
        let x = x.ctl();
        // Nobody blocked on `rank`: nothing to pre-wake, and no write to
        // its line (which it reads as it spins).
        if x.dependents.load(Ordering::Relaxed) == 0
            || x.waiting_for.load(Ordering::Relaxed) == 0
            || x.hit.load(Ordering::Relaxed) != 0
            || x.hit.swap(1, Ordering::SeqCst) != 0
        {
            return;
        }
        self.wake_dependents(rank);
    }

    /// Counts us among same-node `partner`'s dependents (threads blocked
    /// in an SS-Wait on it) until the guard drops.
    fn dependent_of(&self, partner: u32) -> Dependent<'_> {
        let ctl = self
            .peer_ctls
            .get(partner as usize)
            .and_then(|c| c.as_deref());
        if let Some(c) = ctl {
            c.ctl().dependents.fetch_add(1, Ordering::SeqCst);
        }
        Dependent(ctl)
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

    /// Before an SS-Wait yields to a same-node `partner`: publishes this
    /// thread's CPU and counts whether the partner's last one is the
    /// same (then the two take turns on one CPU through their yields:
    /// see [`Inner::shared_cpu`], which moves this thread). Only the
    /// higher rank of the two counts it, so that one of them moves.
    fn before_yield(&self, partner: u32) {
        let mine = self.publish_cpu();
        let theirs = match self.peer_ctls.get(partner as usize) {
            Some(Some(c)) => c.ctl().cpu.load(Ordering::Relaxed),
            _ => return,
        };
        self.shared_cpu(mine != 0 && theirs == mine && self.rank > partner);
    }

    /// SS-Wait with CPUs to spare and the partner awake: spins until
    /// `done`, the partner blocks, or `tune.spin` passes. A partner on
    /// this node writes straight into our memory, so the spin reads
    /// memory only (the socket, polled between turns, delayed the
    /// hand-over by half a microsecond); for a remote one it receives
    /// and applies packets as it goes.
    fn spin_while(
        &self,
        partner: u32,
        done: &impl Fn() -> bool,
        tune: SsWaitTuning,
        since: &mut Option<Instant>,
    ) -> bool {
        // A partner across the network never gets here (see `Task::sswait`).
        let at = Instant::now();
        let since = *since.get_or_insert(at);
        let end = at + tune.spin;
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
            if k % 256 == 0 {
                let now = Instant::now();
                // A partner that does not answer may be waiting for this
                // very CPU (the kernel put both on one): hand it over, see
                // `wait::YIELD_AFTER`. Two tasks pinned to one CPU took
                // 8 ms a round trip.
                if now >= since + super::wait::YIELD_AFTER {
                    self.hand_over();
                }
                if self.partner(partner) != Partner::Busy || now >= end {
                    return false;
                }
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
                    let _d = self.dependent_of(partner);
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
}

/// A thread counted in a partner's `dependents` (see
/// [`Inner::dependent_of`]).
struct Dependent<'a>(Option<&'a crate::shm::CtlMap>);

impl Drop for Dependent<'_> {
    fn drop(&mut self) {
        if let Some(c) = self.0 {
            c.ctl().dependents.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Oversubscribed, a waiter whose partner is blocked yields for
    /// `yield_for` before it blocks, not 32 turns: on a node with more
    /// tasks than CPUs a turn goes to a task with work.
    #[test]
    fn an_oversubscribed_waiter_yields_for_a_while_before_blocking() {
        let tune = SsWaitTuning::default();
        assert_eq!(
            yields_before_blocking(true, &tune),
            Yields::For(tune.yield_for)
        );
        assert_eq!(
            yields_before_blocking(false, &tune),
            Yields::Turns(tune.yields)
        );
    }

    #[test]
    fn sswait_spins_only_with_cpus_to_spare_and_the_partner_awake() {
        assert_eq!(sswait_next(false, Partner::Busy), SsNext::Spin);
        assert_eq!(sswait_next(false, Partner::Idle), SsNext::Spin);
        assert_eq!(sswait_next(true, Partner::Busy), SsNext::Yield);
        assert_eq!(sswait_next(true, Partner::Idle), SsNext::BlockWhileIdle);
        assert_eq!(sswait_next(false, Partner::Blocked), SsNext::YieldThenBlock);
        assert_eq!(sswait_next(true, Partner::Blocked), SsNext::YieldThenBlock);
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
}
