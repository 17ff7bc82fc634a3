//! A peer that stops answering: declared down (its operations fail, its
//! stream is kept with fillers in place of our requests), probed at
//! growing intervals, and brought back when it answers; or, after a
//! restart, its channel dropped.

use super::packetize::request_meta;
use super::timer::Timer;
use super::Endpoint;
use crate::{Event, McastId, OpId};
use sss_wire::{Body, Packet, Status, TaskId};

/// Most failed operations remembered per peer (see `Channel::failed_ops`);
/// the oldest are forgotten first.
const FAILED_OPS_KEPT: usize = 4096;

/// A request of the user's, failed as a whole when its peer goes down
/// (a multicast fails through the table of multicasts in progress).
fn is_user_request(body: Body) -> bool {
    body.is_request() && !matches!(body, Body::Multicast { .. })
}

/// Takes the place of a request that failed while its peer was down: the
/// peer receives the sequence number it waits for, and nothing else. An ACK
/// with a sequence number; plain ACKs carry zero.
fn filler(local: TaskId, dst: TaskId, epoch: u32, seq: u32) -> Packet<'static> {
    let mut p = request_meta(local, dst, epoch, Body::Ack);
    p.seq = seq;
    p
}

impl Endpoint {
    /// Declares `peer` down now (e.g. its node stopped gossiping): every
    /// pending operation to it completes with `NodeDown`, an
    /// [`Event::PeerDown`] is raised, and later submits fail until it
    /// answers a probe or [`Endpoint::resume_peer`]. No effect on a peer
    /// already down.
    pub fn declare_down(&mut self, peer: TaskId) {
        let Ok(ci) = self.channel(peer) else {
            return;
        };
        if !self.chans[ci].down {
            self.peer_down(ci);
        }
    }

    /// Declares a down peer reachable again (e.g. its node came back):
    /// submits are accepted at once and the peer is probed. The channel
    /// keeps its sequence numbers; the peer learns from the probe which
    /// ones were abandoned. No effect on a peer that is up: its state may
    /// be live, and a restarted peer announces itself with a new epoch.
    pub fn resume_peer(&mut self, peer: TaskId) {
        if let Some(&i) = self.index.get(&peer) {
            if self.chans[i].down {
                self.peer_up(i);
                self.chans[i].probe = true;
                self.mark_ready(i);
            }
        }
    }

    /// The peer answered while down: what it may have missed of the stream
    /// (replies, fillers) goes again, and submits are accepted.
    pub(super) fn peer_up(&mut self, ci: usize) {
        let c = &mut self.chans[ci];
        c.down = false;
        c.retries = 0;
        c.rtt.reset_backoff();
        c.timers.stop(Timer::Rto);
        c.probe_every = 0;
        for seq in c.base..c.next_send {
            let s = &mut c.slots[(seq - c.base) as usize];
            if !s.sacked && !s.queued {
                s.queued = true;
                c.retx.push_back(seq);
            }
        }
        let peer = c.peer;
        self.update_timers(ci);
        self.mark_ready(ci);
        self.stats.recoveries += 1;
        self.events.push_back(Event::PeerUp { peer });
    }

    /// Completes everything outstanding on a channel with `NodeDown`. With
    /// `keep_stream`, the peer may still be alive (a stall): the sequence
    /// numbers stay, our requests in the stream become fillers and our
    /// replies stay, so that nothing the peer waits for goes missing when
    /// it answers again. Without, the stream is dropped (the peer restarted).
    pub(super) fn fail_channel(&mut self, ci: usize, keep_stream: bool) {
        let (local, epoch) = (self.local, self.cfg.epoch);
        let c = &mut self.chans[ci];
        let peer = c.peer;
        let mut failed: Vec<u32> = Vec::new();
        for s in &c.slots {
            if is_user_request(s.meta.body)
                && failed.last() != Some(&s.meta.op)
                && !c.pending.contains_key(&s.meta.op)
            {
                failed.push(s.meta.op);
            }
        }
        let mut pend: Vec<u32> = c.pending.keys().copied().collect();
        pend.sort_unstable();
        failed.extend(pend);
        c.pending.clear();
        if keep_stream {
            c.failed_ops.extend(failed.iter().copied());
            while c.failed_ops.len() > FAILED_OPS_KEPT {
                c.failed_ops.pop_first();
            }
            for s in c.slots.iter_mut() {
                if s.meta.body.is_request() {
                    c.buffered -= s.payload.len();
                    s.payload = Default::default();
                    s.meta = filler(local, peer, epoch, s.meta.seq);
                }
                s.queued = false;
            }
        } else {
            c.slots.clear();
            c.ooo.clear();
            c.buffered = 0;
            c.base = c.next_seq;
            c.next_send = c.next_seq;
        }
        c.retx.clear();
        c.timers.stop_all();
        c.ack_now = false;
        c.probe = false;
        c.recover_before = None;
        self.update_timers(ci);
        for id in failed {
            self.events.push_back(Event::Completed {
                op: OpId {
                    peer,
                    id,
                    nofc: false,
                },
                result: Err(Status::NodeDown),
            });
        }
        // Multicasts whose root or subtree went through this peer.
        let mut done: Vec<u32> = self
            .mcast_out
            .iter()
            .filter(|(_, &(_, root))| root == peer)
            .map(|(&id, _)| id)
            .collect();
        done.sort_unstable();
        for id in done {
            if let Some((group, _)) = self.mcast_out.remove(&id) {
                self.events.push_back(Event::Multicast {
                    mcast: McastId { group, id },
                    members: 0,
                    status: Status::NodeDown,
                });
            }
        }
        self.mcast_fwd.retain(|_, f| f.parent != peer);
        let mut keys: Vec<(TaskId, u32)> = self
            .mcast_fwd
            .iter()
            .filter(|(_, f)| f.waiting.contains(&peer))
            .map(|(&k, _)| k)
            .collect();
        keys.sort_unstable();
        for k in keys {
            self.child_acked(k, peer, 0, Status::NodeDown);
        }
    }

    pub(super) fn peer_down(&mut self, ci: usize) {
        self.fail_channel(ci, true);
        let first = self.cfg.down_probe;
        let c = &mut self.chans[ci];
        c.down = true;
        c.probe_every = first;
        c.timers.set(Timer::Rto, self.now.saturating_add(first));
        let peer = c.peer;
        self.update_timers(ci);
        self.events.push_back(Event::PeerDown { peer });
    }
}
