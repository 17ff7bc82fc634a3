//! The progress engine: the progress thread, one round of progress
//! (receive, apply, timers, send), progress made inline by waiting
//! threads, and completing requests from endpoint events.

use super::{
    drain_signal_ring, keep_error, status_error, Applier, Inner, Net, Reply, SignalContext, Task,
};
use crate::sys::{self};
use crate::Error;
use sss_proto::{Completion, Event};
use sss_wire::{Format, TaskId};
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// How long the progress thread, leaving the socket to waiters, first
/// sleeps before it looks whether they still wait. A waiter that returns
/// does not ring (that would cost the wake-up saved): the thread takes the
/// socket back at the first look that finds nobody spinning and no claim
/// ended within [`BETWEEN_WAITS`]; a waiter that blocks instead rings at
/// once. Each look that finds a waiter spinning doubles the period, up to
/// [`HAND_BACK_MAX`]: a look preempts a spinner (a ping-pong looked at
/// every 200 µs lost 10–25 % to them).
const HAND_BACK: Duration = Duration::from_micros(200);

/// The longest hand-back period, also about the longest a datagram that
/// comes once the application stopped waiting waits for this thread (a
/// DSM page request to a home that went to compute): 400 µs costs about
/// 0.1 µs per 12 µs round trip of a ping-pong more than 800 µs would, and
/// halves that wait.
const HAND_BACK_MAX: Duration = Duration::from_micros(400);

/// A spinning waiter that has not looked at the socket for this long is
/// taken for descheduled: the progress thread watches the socket until
/// it looks again.
const SPIN_STALE: Duration = Duration::from_micros(200);

/// A claim that ended this recently means the application is between two
/// waits (a ping-pong sends its answer, then waits again): leave it the
/// socket. A longer gap means it went to compute.
pub(super) const BETWEEN_WAITS: Duration = Duration::from_micros(50);

/// The progress thread: receives, applies, acknowledges, retransmits, and
/// runs signal handlers. Blocks in poll when there is nothing to do.
pub(super) fn progress(inner: Arc<Inner>) {
    PROGRESS_OF.set(Arc::as_ptr(&inner));
    let sock_fd = inner.sock.as_raw_fd();
    let wake_fd = inner.wake.fd();
    // Room for a whole GRO-coalesced batch.
    let mut buf = vec![0u8; 1 << 17];
    let mut signals: Vec<(u32, u32, Vec<u8>)> = Vec::new();
    let mut hand_back = HAND_BACK;
    let between_waits = || {
        !inner.all_local
            && inner
                .now()
                .saturating_sub(inner.released.load(Ordering::Relaxed))
                < BETWEEN_WAITS.as_nanos() as u64
    };
    while !inner.shutdown.load(Ordering::SeqCst) {
        // While waiters spin they receive for themselves: leave them the
        // socket, or every datagram would wake this thread too (the
        // kernel wakes all pollers before anyone reads). Also between
        // two waits of an application that keeps waiting (a ping-pong):
        // looking at each gap would preempt a spinner and take datagrams
        // it is about to receive. Pairs with `Claim::drop`: either it sees
        // `sockless` and rings, or we see its claim gone.
        inner.sockless.store(true, Ordering::SeqCst);
        // A waiter about to block, or blocked, needs the socket watched,
        // whatever claims remain: a thread blocked in a wait nested in
        // another (a signal handler's) still holds the outer claim.
        let handed_back = inner.handed_back.swap(false, Ordering::SeqCst);
        let blocked = inner.ctl.ctl().blocked.load(Ordering::SeqCst) > 0;
        let now = inner.now();
        // A spinner whose looks stopped was descheduled (more runnable
        // threads than CPUs): meanwhile nobody would receive, and the
        // peer's retransmission timer would fire on what only waits in
        // our socket. Watch the socket until it looks again.
        let spinning = inner.spinners.load(Ordering::SeqCst) > 0
            && (inner.all_local
                || now.saturating_sub(inner.spin_looked.load(Ordering::Relaxed))
                    < SPIN_STALE.as_nanos() as u64);
        let claimed = !handed_back && !blocked && (spinning || between_waits());
        if !claimed {
            inner.sockless.store(false, Ordering::SeqCst);
            hand_back = HAND_BACK;
        }
        // Waiters that receive also run due timers, and the net lock would
        // be taken from a spinner in the middle of its receive (both
        // threads then pay a futex call and a context switch): while they
        // wait, only look again after the hand-back period. Waiters of an
        // all-local job leave socket and timers to this thread.
        let socket_left = claimed && !inner.all_local;
        let next = if socket_left {
            Some(now + hand_back.as_nanos() as u64)
        } else {
            let next = inner.lock_net().ep.poll_timeout();
            let back = now + hand_back.as_nanos() as u64;
            if claimed {
                Some(next.map_or(back, |t| t.min(back)))
            } else {
                next
            }
        };
        inner
            .next_wake
            .store(next.unwrap_or(u64::MAX), Ordering::Release);
        let mut timeout = next.map(|t| Duration::from_nanos(t.saturating_sub(now)));
        if inner.idm().is_some() {
            // Look at node liveness now and then even when idle.
            timeout = Some(timeout.map_or(Duration::from_millis(50), |t| {
                t.min(Duration::from_millis(50))
            }));
        }
        let mut rung = true;
        if timeout.is_none_or(|t| !t.is_zero()) {
            let c = inner.ctl.ctl();
            // A spinning waiter watches the signal ring: same-node senders
            // need not ring.
            if !claimed {
                c.progress_asleep.store(1, Ordering::SeqCst);
            }
            // Pairs with Peer::signal_wake (after the push's SeqCst claim of a
            // slot): either the sender sees the flag or we see its
            // message in `tail`.
            std::sync::atomic::fence(Ordering::SeqCst);
            // A signal queued before the flag was visible gets no doorbell:
            // look at the ring once more before sleeping.
            if inner.ctl.signal_ring().len() == 0 {
                let fds = [wake_fd, sock_fd];
                // While waiters receive for themselves, only the doorbell.
                let ready = sys::poll_readable(if socket_left { &fds[..1] } else { &fds }, timeout);
                rung = ready.is_ok_and(|r| r != 0);
                if rung {
                    inner.wakeups.fetch_add(1, Ordering::Relaxed);
                } else if claimed {
                    inner.looks.fetch_add(1, Ordering::Relaxed);
                }
            }
            c.progress_asleep.store(0, Ordering::SeqCst);
        }
        inner.sockless.store(false, Ordering::SeqCst);
        if inner.shutdown.load(Ordering::SeqCst) {
            break;
        }
        // Looked whether the application still waits, and it does (a
        // waiter spins, or one returned moments ago): it receives and runs
        // due timers itself, so leave it the locks.
        let timers_due = || {
            !socket_left
                && inner
                    .lock_net()
                    .ep
                    .poll_timeout()
                    .is_some_and(|t| t <= inner.now())
        };
        let blocked_now = || inner.ctl.ctl().blocked.load(Ordering::SeqCst) > 0;
        if claimed && !rung && !timers_due() && !blocked_now() {
            if inner.spinners.load(Ordering::SeqCst) > 0 {
                hand_back = (hand_back * 2).min(HAND_BACK_MAX);
                continue;
            }
            // Between two waits: leave the socket to the next one unless
            // something already waits in it (the application may have
            // gone to compute).
            if between_waits()
                && !sys::poll_readable(&[sock_fd], Some(Duration::ZERO)).is_ok_and(|r| r != 0)
            {
                continue;
            }
        }
        inner.wake.drain();
        inner.step(&mut buf, &mut signals);
        inner.check_liveness();
        inner.run_signals();
        inner.notify_waiters();
    }
}

thread_local! {
    /// The task whose progress thread this is (null elsewhere).
    static PROGRESS_OF: std::cell::Cell<*const Inner> = const { std::cell::Cell::new(std::ptr::null()) };
    /// Receive buffer of application threads that make progress while they
    /// wait; large enough for any datagram.
    static RECV_BUF: std::cell::RefCell<Vec<u8>> = std::cell::RefCell::new(vec![0; 1 << 17]);
    /// Where a waiter copies a same-node signal out of the ring before
    /// running its handler.
    static SIGNAL_BUF: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl Inner {
    /// One round of progress: receive and apply what arrived, run due
    /// timers, send what is due, complete requests, collect queued
    /// signals. The progress thread's loop body, also run inline when a
    /// signal handler on that thread must wait.
    fn step(&self, buf: &mut [u8], signals: &mut Vec<(u32, u32, Vec<u8>)>) {
        {
            let segs = self.segs.read().unwrap_or_else(|e| e.into_inner());
            let handlers = self.handlers.read().unwrap_or_else(|e| e.into_inner());
            let mut net = self.lock_net();
            let mut applier = Applier {
                segs: &segs,
                handlers: &handlers,
                signal_key: self.signal_key,
                ring: self.ctl.signal_ring(),
                signals,
            };
            for _ in 0..256 {
                match sys::recv_from(self.sock.as_raw_fd(), buf) {
                    Ok((n, from)) => {
                        let now = self.now();
                        self.receive(&mut net, &mut applier, &mut buf[..n], from, now);
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
            // Queued under the net lock: signals run in arrival order,
            // whichever thread received them.
            self.defer(signals);
        }
    }

    /// Queues received signals behind those already queued (under the
    /// net lock, which orders them by arrival).
    fn defer(&self, sigs: &mut Vec<(u32, u32, Vec<u8>)>) {
        if sigs.is_empty() {
            return;
        }
        if let Ok(mut d) = self.deferred.lock() {
            d.append(sigs);
            self.has_deferred.store(true, Ordering::SeqCst);
        }
    }

    /// Runs the signals same-node senders queued in our ring, here: a
    /// waiter's version of the progress thread's doorbell. Skipped when
    /// another thread holds the net lock (it drains the ring itself).
    ///
    /// While nothing else is queued and no other thread runs handlers,
    /// each signal is popped under the net lock and its handler called
    /// straight from the ring slot's copy, with no queue, allocation or
    /// second lock: the earliest signal is the one in the ring. Signals
    /// other threads take meanwhile queue behind and run after, here
    /// (this thread holds the runner) or by them.
    pub(super) fn take_ring_signals(&self) {
        let ring = self.ctl.signal_ring();
        if let Ok(mut running) = self.signal_runner.try_lock() {
            let Some(me) = self.me.upgrade() else {
                return;
            };
            let task = Task {
                inner: me,
                _owner: None,
            };
            let mut ran = 0;
            SIGNAL_BUF.with_borrow_mut(|msg| loop {
                // Nothing more in the ring: no lock to take for that.
                if !ring.ready() {
                    break;
                }
                let Ok(net) = self.net.try_lock() else {
                    break;
                };
                // Every queuing holds the net lock: under it, a clear
                // flag means nothing is queued ahead of the ring.
                if self.has_deferred.load(Ordering::SeqCst) {
                    break;
                }
                let Some(from) = ring.pop(msg) else {
                    break;
                };
                drop(net);
                ran += 1;
                if msg.len() < 4 {
                    continue;
                }
                let h = u32::from_le_bytes([msg[0], msg[1], msg[2], msg[3]]);
                if let Some(f) = running.handler(self, h) {
                    let ctx = SignalContext {
                        task: &task,
                        from,
                        handler: h,
                    };
                    f(&ctx, &msg[4..]);
                }
            });
            if ran > 0 {
                // Only the runner's holder adds to it: no locked add.
                let n = self.signals_inline.load(Ordering::Relaxed);
                self.signals_inline.store(n + ran, Ordering::Relaxed);
            }
            drop(running);
        }
        // A slot reserved but not yet filled is left for the next look.
        if ring.ready() {
            let Ok(net) = self.net.try_lock() else {
                return;
            };
            let mut sig = Vec::new();
            drain_signal_ring(&ring, &mut sig);
            // Queued under the net lock, like every signal.
            self.defer(&mut sig);
            drop(net);
        }
        self.run_signals();
    }

    /// Runs the queued signal handlers in order, in this thread, unless
    /// another thread is running them (it looks again after it stops,
    /// so none is left behind). The progress thread runs them, and so
    /// does a waiter that received them: a signal to a task that waits
    /// runs where the waiter already is, with no thread woken.
    pub(super) fn run_signals(&self) {
        // The progress loop calls this every round: nothing queued costs
        // one uncontended lock, not a reference count and the runner.
        // Whoever queues a signal calls this afterwards: a flag it set
        // itself, or one another thread set, which runs them then.
        if !self.has_deferred.load(Ordering::SeqCst) {
            return;
        }
        let Some(me) = self.me.upgrade() else {
            return;
        };
        let task = Task {
            inner: me,
            _owner: None,
        };
        loop {
            let Ok(mut running) = self.signal_runner.try_lock() else {
                return;
            };
            loop {
                let batch = match self.deferred.lock() {
                    Ok(mut d) if !d.is_empty() => {
                        self.has_deferred.store(false, Ordering::SeqCst);
                        std::mem::take(&mut *d)
                    }
                    _ => break,
                };
                for (from, h, payload) in batch {
                    if let Some(f) = running.handler(self, h) {
                        let ctx = SignalContext {
                            task: &task,
                            from,
                            handler: h,
                        };
                        f(&ctx, &payload);
                    }
                }
            }
            drop(running);
            // A signal queued while we held the runner found it taken.
            if self.deferred.lock().map_or(true, |d| d.is_empty()) {
                return;
            }
        }
    }

    /// A non-blocking round of progress from an application thread, if no
    /// other thread is making progress right now: one receive (a whole
    /// GRO batch), due timers, and what they make due to send. Signals
    /// found, on the socket or in the same-node ring, run here. Returns
    /// whether a datagram came: then the caller looks at what it waits
    /// for and comes back at once, for more.
    ///
    /// One receive, not until the socket is empty: a second `recvmsg`
    /// that finds nothing costs as long as the one that found the answer
    /// and would delay the waiter seeing it.
    ///
    /// `now` is the caller's clock reading (nanoseconds since the task
    /// began), taken for its own look: a look reads the clock once.
    pub(super) fn try_step(&self, now: u64) -> bool {
        let Ok(segs) = self.segs.try_read() else {
            return false;
        };
        let Ok(handlers) = self.handlers.try_read() else {
            return false;
        };
        let Ok(mut net) = self.net.try_lock() else {
            return false;
        };
        let mut got = false;
        let mut sig = Vec::new();
        let mut any = false;
        {
            let mut applier = Applier {
                segs: &segs,
                handlers: &handlers,
                signal_key: self.signal_key,
                ring: self.ctl.signal_ring(),
                signals: &mut sig,
            };
            RECV_BUF.with_borrow_mut(|buf| {
                if let Ok((n, from)) = sys::recv_from(self.sock.as_raw_fd(), buf) {
                    got = true;
                    // A doorbell needs nothing more: the ring is drained
                    // below.
                    let (handled, _bell) =
                        self.receive(&mut net, &mut applier, &mut buf[..n], from, now);
                    any |= handled;
                }
            });
            // A waiter that owns the socket also runs what is due: the
            // progress thread sleeps on longer timers meanwhile.
            if net.ep.poll_timeout().is_some_and(|t| t <= now) {
                net.ep.handle_timeout(now);
                any = true;
            }
        }
        if self.ctl.signal_ring().len() != 0 {
            drain_signal_ring(&self.ctl.signal_ring(), &mut sig);
        }
        // Queued before the net lock goes, so that signals received later
        // cannot overtake these.
        let queued = !sig.is_empty();
        self.defer(&mut sig);
        if any {
            self.flush_at(&mut net, now);
            self.handle_events(&mut net);
        }
        drop(net);
        drop(handlers);
        drop(segs);
        if queued {
            self.run_signals();
        }
        if any {
            self.notify_waiters();
        }
        got
    }

    /// Hands a received batch of datagrams from `from` (cut as
    /// `split_received` says) to the endpoint, each with the rank its
    /// source address belongs to. A datagram from an address of no member
    /// creates no state and is counted; under sealing, one that does not
    /// open (forged, modified, replayed, another job's) is dropped and
    /// counted before anything parses it. Returns (any datagram handled, a
    /// doorbell rang).
    fn receive(
        &self,
        net: &mut Net,
        applier: &mut Applier<'_>,
        data: &mut [u8],
        from: Option<SocketAddr>,
        now: u64,
    ) -> (bool, bool) {
        let src = from
            .and_then(|a| self.senders.rank(a))
            .map(|r| TaskId::new(self.job, r));
        let mut foreign = 0;
        let mut refused = 0;
        let sealed = net.ep.config().format != Format::Checksummed;
        let (ep, seals) = (&mut net.ep, &mut net.seals);
        let r = crate::shm::split_received(data, |d| match (src, seals.as_mut()) {
            (None, _) => foreign += 1,
            (Some(_), Some(s)) => match s.open(d) {
                Ok(n) => ep.handle_datagram_from(now, src, &d[..n], applier),
                Err(_) => refused += 1,
            },
            (Some(_), None) if sealed => refused += 1,
            (Some(_), None) => ep.handle_datagram_from(now, src, d, applier),
        });
        if foreign > 0 {
            self.foreign.fetch_add(foreign, Ordering::Relaxed);
        }
        if refused > 0 {
            self.refused.fetch_add(refused, Ordering::Relaxed);
            self.ctl.ctl().refused.fetch_add(refused, Ordering::Relaxed);
        }
        r
    }

    pub(super) fn on_progress_thread(&self) -> bool {
        // A thread-local compare: `thread::current()` costs an atomic
        // reference count on every wait.
        std::ptr::eq(PROGRESS_OF.get(), self)
    }

    /// Progress made by the progress thread itself while a signal handler
    /// it runs waits: nobody else would receive the answer.
    pub(super) fn step_inline(&self) {
        let mut buf = vec![0u8; 65_536];
        let mut sig = Vec::new();
        let _ = sys::poll_readable(&[self.sock.as_raw_fd()], Some(Duration::from_millis(1)));
        self.step(&mut buf, &mut sig);
    }

    pub(super) fn handle_events(&self, net: &mut Net) {
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
