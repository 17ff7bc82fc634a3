//! Timers: every deadline of a channel ([`Timers`], by [`Timer`]), the
//! endpoint's table of each channel's next one ([`TimerTable`]), and what
//! runs when they expire (delayed acks, RACK reorder timers,
//! retransmission and probe timers, peer failure, no-flow-control reply
//! deadlines). Finding the next deadline costs O(1), moving one O(log
//! peers), and a timeout visits only the channels due, however many peers
//! are idle.

use super::Endpoint;
use crate::{Event, OpId, Status, Time};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// A deadline of a channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Timer {
    /// Send the acknowledgement held back hoping to piggyback it.
    Ack,
    /// RACK reorder timer: a hole below a delivered packet is old enough
    /// to be resent.
    Hole,
    /// Retransmission timeout; while the peer is down, its next probe.
    Rto,
}

/// The deadlines of one channel, by [`Timer`].
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Timers {
    at: [Option<Time>; 3],
    /// The live entry of the endpoint's [`TimerTable`] for this channel:
    /// its deadline and generation.
    queued: Option<(Time, u64)>,
    /// Entries pushed for this channel so far, so that only the latest is
    /// live even when a deadline comes back to an earlier value.
    pushed: u64,
}

impl Timers {
    pub(super) fn get(&self, timer: Timer) -> Option<Time> {
        self.at[timer as usize]
    }

    pub(super) fn set(&mut self, timer: Timer, at: Time) {
        self.at[timer as usize] = Some(at);
    }

    pub(super) fn stop(&mut self, timer: Timer) {
        self.at[timer as usize] = None;
    }

    pub(super) fn stop_all(&mut self) {
        self.at = [None; 3];
    }

    fn is_due(&self, timer: Timer, now: Time) -> bool {
        self.get(timer).is_some_and(|t| t <= now)
    }

    /// True when no deadline is armed.
    pub(super) fn is_idle(&self) -> bool {
        self.next().is_none()
    }

    /// The earliest deadline armed.
    fn next(&self) -> Option<Time> {
        self.at.iter().flatten().copied().min()
    }
}

/// Each channel's earliest deadline in a min-heap, so that the endpoint's
/// next timeout and the channels due are found without visiting the
/// others. A deadline that moves is pushed anew and its old entry left
/// behind: an entry is live while it is the one its channel's [`Timers`]
/// records as queued (same deadline and generation), and stale entries
/// are dropped when they reach the top or when they outnumber the
/// channels. The top is live between calls: whoever changes a channel's
/// [`Timers`] calls [`Endpoint::update_timers`] before returning.
#[derive(Debug, Default)]
pub(super) struct TimerTable {
    /// (deadline, channel, generation).
    heap: BinaryHeap<Reverse<(Time, usize, u64)>>,
}

impl TimerTable {
    /// The earliest deadline of any channel.
    fn next(&self) -> Option<Time> {
        self.heap.peek().map(|e| e.0 .0)
    }
}

impl Endpoint {
    /// Brings the timer table up to date with channel `ci`'s deadlines.
    pub(super) fn update_timers(&mut self, ci: usize) {
        let timers = &mut self.chans[ci].timers;
        let next = timers.next();
        if next == timers.queued.map(|q| q.0) {
            return;
        }
        timers.queued = next.map(|t| {
            timers.pushed += 1;
            (t, timers.pushed)
        });
        if let Some((t, g)) = timers.queued {
            self.timers.heap.push(Reverse((t, ci, g)));
        }
        if self.timers.heap.len() > 2 * self.chans.len() + 64 {
            let chans = &self.chans;
            self.timers
                .heap
                .retain(|&Reverse((t, ci, g))| chans[ci].timers.queued == Some((t, g)));
        }
        self.settle_timers();
    }

    /// Drops stale entries from the top of the timer table.
    fn settle_timers(&mut self) {
        while let Some(&Reverse((t, ci, g))) = self.timers.heap.peek() {
            if self.chans[ci].timers.queued == Some((t, g)) {
                break;
            }
            self.timers.heap.pop();
        }
    }

    /// When [`Endpoint::handle_timeout`] should next be called.
    pub fn poll_timeout(&self) -> Option<Time> {
        let nofc = self.nofc_deadlines.front().map(|d| d.0);
        match (nofc, self.timers.next()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Runs the timers due at `now`: delayed acks, retransmissions, peer
    /// failure, and no-flow-control reply deadlines.
    pub fn handle_timeout(&mut self, now: Time) {
        self.now = self.now.max(now);
        // In channel order, as a scan of every channel would: the order
        // in which channels become ready is the order they transmit in.
        let mut due = std::mem::take(&mut self.due);
        due.clear();
        while let Some(&Reverse((t, ci, g))) = self.timers.heap.peek() {
            if t > now {
                break;
            }
            self.timers.heap.pop();
            let timers = &mut self.chans[ci].timers;
            if timers.queued == Some((t, g)) {
                // Taken off the table; `update_timers` puts it back.
                timers.queued = None;
                due.push(ci);
            }
        }
        due.sort_unstable();
        for &ci in &due {
            self.stats.timer_visits += 1;
            self.expire(ci, now);
            self.update_timers(ci);
        }
        self.due = due;
        self.settle_timers();
        self.expire_nofc(now);
    }

    /// Runs channel `ci`'s timers due at `now`.
    fn expire(&mut self, ci: usize, now: Time) {
        if self.chans[ci].down {
            let (first, max) = (self.cfg.down_probe, self.cfg.down_probe_max);
            let c = &mut self.chans[ci];
            if c.timers.is_due(Timer::Rto, now) {
                c.probe = true;
                c.probe_every = c.probe_every.saturating_mul(2).clamp(first, max.max(first));
                c.timers.set(Timer::Rto, now.saturating_add(c.probe_every));
                self.mark_ready(ci);
            }
            return;
        }
        let c = &mut self.chans[ci];
        let mut ready = false;
        if c.timers.is_due(Timer::Ack, now) {
            c.timers.stop(Timer::Ack);
            c.ack_now = true;
            ready = true;
        }
        if c.timers.is_due(Timer::Hole, now) {
            self.stats.rack_lost += c.scan_holes(now);
            ready |= !c.retx.is_empty();
        }
        if c.timers.is_due(Timer::Rto, now) {
            c.retries += 1;
            if c.retries > self.cfg.max_retries {
                self.peer_down(ci);
                return;
            }
            c.rtt.back_off();
            // Resend only the oldest packet: a timeout is as often a
            // starved receiver as a lost packet, and resending the
            // whole window then only adds load. The ack it brings back
            // starts recovery of the rest (see `recover_before`).
            let mut any = false;
            for seq in c.base..c.next_send {
                let s = &mut c.slots[(seq - c.base) as usize];
                if !s.sacked {
                    if !s.queued {
                        s.queued = true;
                        c.retx.push_back(seq);
                    }
                    any = true;
                    break;
                }
            }
            if any {
                c.recover_before = Some(now);
                self.stats.timeouts += 1;
            }
            if !any {
                // Only replies are outstanding, or everything sent was
                // selectively acked and the cumulative ack got lost:
                // ask the peer for an ACK.
                c.probe = true;
            }
            c.timers.set(Timer::Rto, now + c.rtt.rto());
            ready = true;
        }
        if ready {
            self.mark_ready(ci);
        }
    }

    /// Fails the no-flow-control operations whose reply is overdue.
    fn expire_nofc(&mut self, now: Time) {
        while let Some(&(t, id)) = self.nofc_deadlines.front() {
            if t > now {
                break;
            }
            self.nofc_deadlines.pop_front();
            self.nofc_quiet.remove(&id);
            if let Some((peer, _)) = self.nofc_pending.remove(&id) {
                self.events.push_back(Event::Completed {
                    op: OpId {
                        peer,
                        id,
                        nofc: true,
                    },
                    result: Err(Status::TimedOut),
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::{Config, Endpoint, Op, OpOptions, Outcome, Packet, Target, TaskId};

    struct Sink;

    impl Target for Sink {
        fn apply(&mut self, _: &Packet<'_>) -> Outcome {
            Outcome::Done
        }
    }

    /// Deadlines that move on every packet leave stale entries behind,
    /// under the live deadline of a silent peer; the table never holds
    /// more than twice the channels plus a constant.
    #[test]
    fn stale_entries_stay_bounded() {
        let (ta, tb, silent) = (TaskId::new(1, 0), TaskId::new(1, 1), TaskId::new(1, 2));
        let mut a = Endpoint::new(ta, Config::default());
        let mut b = Endpoint::new(tb, Config::default());
        let mut out = Vec::new();
        let op = Op::Write {
            key: 1,
            addr: 0,
            data: &[1],
            notify: None,
        };
        a.submit(0, silent, op, OpOptions::default()).unwrap();
        assert_eq!(a.poll_transmit(0, &mut out), Some(silent));
        let mut most = 0;
        for i in 0..30_000u64 {
            let now = i * 1_000;
            a.submit(now, tb, op, OpOptions::default()).unwrap();
            b.submit(now, ta, op, OpOptions::default()).unwrap();
            while let Some(to) = a.poll_transmit(now, &mut out) {
                if to == tb {
                    b.handle_datagram(now, &out, &mut Sink);
                }
            }
            while b.poll_transmit(now, &mut out).is_some() {
                a.handle_datagram(now, &out, &mut Sink);
            }
            for e in [&mut a, &mut b] {
                if e.poll_timeout().is_some_and(|t| t <= now) {
                    e.handle_timeout(now);
                }
                while e.poll_event().is_some() {}
                most = most.max(e.timers.heap.len());
            }
        }
        assert!(most <= 2 * 2 + 64 + 1, "{most} entries for two channels");
        assert!(a.poll_timeout().is_some());
    }
}
