//! Waiting for memory to change: spin-then-block waits, block-only
//! waits, and the [`WaitPolicy`] choice between them and SS-Wait.

use super::{Inner, Task};
use crate::sys::{self};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

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

impl Task {
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
}

impl Inner {
    /// Blocks until the progress thread did some work (or a short while).
    pub(super) fn wait_progress(&self) {
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
    pub(super) fn wait_until(
        &self,
        mut cond: impl FnMut() -> bool,
        deadline: Option<Instant>,
    ) -> bool {
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
}
