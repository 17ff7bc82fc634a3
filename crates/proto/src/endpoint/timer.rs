//! Timers: when the endpoint must next be woken, and what runs then
//! (delayed acks, RACK reorder timers, retransmission and probe timers,
//! peer failure, no-flow-control reply deadlines).

use super::Endpoint;
use crate::{Event, OpId, Status, Time};

impl Endpoint {
    /// When [`Endpoint::handle_timeout`] should next be called.
    pub fn poll_timeout(&self) -> Option<Time> {
        let mut t: Option<Time> = self.nofc_deadlines.front().map(|d| d.0);
        for c in &self.chans {
            for x in [c.rto_at, c.ack_at, c.hole_at].into_iter().flatten() {
                t = Some(t.map_or(x, |t| t.min(x)));
            }
        }
        t
    }

    /// Runs the timers due at `now`: delayed acks, retransmissions, peer
    /// failure, and no-flow-control reply deadlines.
    pub fn handle_timeout(&mut self, now: Time) {
        self.now = self.now.max(now);
        for ci in 0..self.chans.len() {
            if self.chans[ci].down {
                let (first, max) = (self.cfg.down_probe, self.cfg.down_probe_max);
                let c = &mut self.chans[ci];
                if c.rto_at.is_some_and(|t| t <= now) {
                    c.probe = true;
                    c.probe_every = c.probe_every.saturating_mul(2).clamp(first, max.max(first));
                    c.rto_at = Some(now.saturating_add(c.probe_every));
                    self.mark_ready(ci);
                }
                continue;
            }
            let c = &mut self.chans[ci];
            let mut ready = false;
            if c.ack_at.is_some_and(|t| t <= now) {
                c.ack_at = None;
                c.ack_now = true;
                ready = true;
            }
            if c.hole_at.is_some_and(|t| t <= now) {
                c.scan_holes(now);
                ready |= !c.retx.is_empty();
            }
            if c.rto_at.is_some_and(|t| t <= now) {
                c.retries += 1;
                if c.retries > self.cfg.max_retries {
                    self.peer_down(ci);
                    continue;
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
                c.rto_at = Some(now + c.rtt.rto());
                ready = true;
            }
            if ready {
                self.mark_ready(ci);
            }
        }
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
