//! Timers: every deadline of a channel ([`Timers`], by [`Timer`]), the
//! endpoint's table of each channel's next one ([`TimerTable`]), and what
//! runs when they expire (delayed acks, RACK reorder timers,
//! retransmission and probe timers, peer failure, no-flow-control reply
//! deadlines). Waking the endpoint costs O(log peers) and visits only the
//! channels due, however many peers are idle.

use super::Endpoint;
use crate::{Event, OpId, Status, Time};
use std::collections::BTreeSet;

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
    /// The deadline the endpoint's [`TimerTable`] holds for this channel.
    queued: Option<Time>,
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

/// Each channel's earliest deadline, ordered by time, so that the
/// endpoint's next timeout and the channels due are found without visiting
/// the others. Kept exact: whoever changes a channel's [`Timers`] calls
/// [`Endpoint::update_timers`] before returning to the caller.
#[derive(Debug, Default)]
pub(super) struct TimerTable {
    queue: BTreeSet<(Time, usize)>,
}

impl TimerTable {
    /// Records channel `ci`'s earliest deadline.
    fn update(&mut self, ci: usize, timers: &mut Timers) {
        let next = timers.next();
        if next == timers.queued {
            return;
        }
        if let Some(t) = timers.queued {
            self.queue.remove(&(t, ci));
        }
        if let Some(t) = next {
            self.queue.insert((t, ci));
        }
        timers.queued = next;
    }

    /// The earliest deadline of any channel.
    fn next(&self) -> Option<Time> {
        self.queue.first().map(|&(t, _)| t)
    }

    /// The channels with a deadline at or before `now`, in channel order.
    fn due(&self, now: Time, out: &mut Vec<usize>) {
        out.clear();
        out.extend(self.queue.range(..=(now, usize::MAX)).map(|&(_, ci)| ci));
        out.sort_unstable();
    }
}

impl Endpoint {
    /// Brings the timer table up to date with channel `ci`'s deadlines.
    pub(super) fn update_timers(&mut self, ci: usize) {
        self.timers.update(ci, &mut self.chans[ci].timers);
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
        self.timers.due(now, &mut due);
        for &ci in &due {
            self.stats.timer_visits += 1;
            self.expire(ci, now);
            self.update_timers(ci);
        }
        self.due = due;
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
            c.scan_holes(now);
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
