//! The endpoint: one reliable channel per peer, multicast forwarding, and
//! the event queue. See the crate docs for the call order.
//!
//! This file holds the [`Endpoint`], its accessors, the transmit queue and
//! the receive path (sequencing, duplicates, reordering). The rest:
//!
//! - `channel`: the reliable channel with one peer (window, SACK, RACK
//!   loss detection, retransmission), and the processing of acks;
//! - `liveness`: a peer declared down, probed and brought back, with the
//!   fillers that keep its stream whole;
//! - `packetize`: operations cut into packets, submit, packet encoding;
//! - `reply`: incoming operations applied, replies sent, and replies
//!   received (READ reassembly, completions);
//! - `multicast`: groups and the forwarding tree with combined acks;
//! - `timer`: the deadlines of every channel and the timeout handling.

mod channel;
mod liveness;
mod multicast;
mod packetize;
mod pool;
mod reply;
mod timer;

use crate::reorder::Refused;
use crate::{Config, ConfigError, Event, PathInfo, Stats, SubmitError, Target, Time};
use channel::{unwrap_seq, Channel};
use foldhash::{HashMap, HashMapExt};
use multicast::Forward;
use reply::Pending;
use sss_wire::{Body, Packet, TaskId};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use timer::{Timer, TimerTable};

/// One task's end of MBCF. See the crate docs.
pub struct Endpoint {
    local: TaskId,
    cfg: Config,
    chans: Vec<Channel>,
    index: HashMap<TaskId, usize>,
    ready: VecDeque<usize>,
    nofc_out: VecDeque<(TaskId, Vec<u8>)>,
    nofc_next: u32,
    nofc_pending: HashMap<u32, (TaskId, Pending)>,
    /// No-flow-control operations that asked for no reply, until their
    /// reply deadline: a NACK for one is reported once, duplicates and
    /// late ones are dropped.
    nofc_quiet: HashMap<u32, TaskId>,
    nofc_deadlines: VecDeque<(Time, u32)>,
    events: VecDeque<Event>,
    groups: HashMap<u32, Vec<TaskId>>,
    mcast_next: u32,
    mcast_out: HashMap<u32, (u32, TaskId)>,
    mcast_fwd: HashMap<(TaskId, u32), Forward>,
    stats: Stats,
    /// The latest time any call brought, for work started without one
    /// (arming the probe of a peer declared down).
    now: Time,
    /// Bytes held in every channel's out-of-order buffer.
    ooo_held: Arc<AtomicUsize>,
    /// Every channel's next deadline, in time order.
    timers: TimerTable,
    /// Channels due in [`Endpoint::handle_timeout`] (kept for its buffer).
    due: Vec<usize>,
    /// Buffers of large operations' copies, to reuse.
    pool: pool::Pool,
}

/// How far past the received stream an ack's position may claim to be
/// (more than any send buffer holds).
const OWED_SPAN: u64 = 1 << 24;

impl Endpoint {
    /// An endpoint for task `local`, with `cfg` checked first
    /// ([`Config::validate`]).
    pub fn try_new(local: TaskId, cfg: Config) -> Result<Self, ConfigError> {
        cfg.validate()?;
        Ok(Self::new(local, cfg))
    }

    /// An endpoint for task `local`. Fields of `cfg` outside their range
    /// are forced into it (see [`Endpoint::try_new`] to refuse them).
    pub fn new(local: TaskId, cfg: Config) -> Self {
        Self {
            local,
            cfg: cfg.clamped(),
            chans: Vec::new(),
            index: HashMap::new(),
            ready: VecDeque::new(),
            nofc_out: VecDeque::new(),
            nofc_next: 1,
            nofc_pending: HashMap::new(),
            nofc_quiet: HashMap::new(),
            nofc_deadlines: VecDeque::new(),
            events: VecDeque::new(),
            groups: HashMap::new(),
            mcast_next: 1,
            mcast_out: HashMap::new(),
            mcast_fwd: HashMap::new(),
            stats: Stats::default(),
            now: 0,
            ooo_held: Arc::new(AtomicUsize::new(0)),
            timers: TimerTable::default(),
            due: Vec::new(),
            pool: pool::Pool::default(),
        }
    }

    /// Bytes held in out-of-order buffers, over all peers (bounded by
    /// [`Config::ooo_total`]).
    pub fn reorder_bytes(&self) -> usize {
        self.ooo_held.load(Ordering::Relaxed)
    }

    /// Bytes held in the out-of-order buffer of `peer` (bounded by
    /// [`Config::ooo_bytes`]).
    pub fn reorder_bytes_of(&self, peer: TaskId) -> usize {
        self.index
            .get(&peer)
            .map_or(0, |&i| self.chans[i].ooo.bytes())
    }

    /// Peers with channel state here (members talked to or heard from).
    pub fn channels(&self) -> usize {
        self.chans.len()
    }

    /// True when `t` may be talked to: a member of this endpoint's job
    /// when [`Config::members`] is set.
    fn is_member(&self, t: TaskId) -> bool {
        self.cfg
            .members
            .is_none_or(|n| t.job == self.local.job && t.rank < n)
    }

    /// This endpoint's task id.
    pub fn local(&self) -> TaskId {
        self.local
    }

    /// The configuration in force.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// Counters so far.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// Operations and packets toward `peer` not yet acknowledged or
    /// answered. Zero means every earlier operation to it completed (FENCE).
    pub fn in_flight(&self, peer: TaskId) -> usize {
        self.index
            .get(&peer)
            .map_or(0, |&i| self.chans[i].in_flight())
    }

    /// Packets toward `peer` that were transmitted and are not yet
    /// acknowledged: while there are any, an ack (or a timer) will come.
    pub fn unacked_sent(&self, peer: TaskId) -> usize {
        self.index.get(&peer).map_or(0, |&i| {
            let c = &self.chans[i];
            if c.down {
                0
            } else {
                (c.next_send - c.base) as usize
            }
        })
    }

    /// Asks `peer` for an ACK of everything queued toward it so far as
    /// soon as it has all been sent, instead of leaving the ACK to the
    /// peer's ack delay or to traffic back: what a fence calls before it
    /// waits. True when something was unacknowledged (the request is
    /// due at the next [`Endpoint::poll_transmit`] or after the window
    /// lets the rest go).
    pub fn request_ack(&mut self, peer: TaskId) -> bool {
        let Some(&ci) = self.index.get(&peer) else {
            return false;
        };
        let wanted = self.chans[ci].want_ack();
        if wanted {
            self.mark_ready(ci);
        }
        wanted
    }

    /// [`Endpoint::request_ack`] toward every peer (QUIET); true when any
    /// request is due.
    pub fn request_acks(&mut self) -> bool {
        let mut any = false;
        for ci in 0..self.chans.len() {
            if self.chans[ci].want_ack() {
                self.mark_ready(ci);
                any = true;
            }
        }
        any
    }

    /// Everything not yet acknowledged or answered, toward all peers,
    /// including multicasts (QUIET waits for zero).
    pub fn total_in_flight(&self) -> usize {
        self.chans.iter().map(Channel::in_flight).sum::<usize>()
            + self.nofc_pending.len()
            + self.mcast_out.len()
    }

    /// Round-trip estimate and timeout toward `peer`, if a channel exists.
    pub fn path(&self, peer: TaskId) -> Option<PathInfo> {
        self.index.get(&peer).map(|&i| {
            let r = &self.chans[i].rtt;
            PathInfo {
                srtt: r.srtt(),
                rto: r.rto(),
                backoff: r.backoff(),
            }
        })
    }

    /// True when `peer` was declared down.
    pub fn is_down(&self, peer: TaskId) -> bool {
        self.index.get(&peer).is_some_and(|&i| self.chans[i].down)
    }

    /// True when every armed timer is the probe of a peer declared down:
    /// nothing is in flight or owed, and only a peer's return could bring
    /// work (a simulation may stop here).
    pub fn probing_only(&self) -> bool {
        self.nofc_deadlines.is_empty() && self.chans.iter().all(|c| c.down || c.timers.is_idle())
    }

    fn channel(&mut self, peer: TaskId) -> Result<usize, SubmitError> {
        if let Some(&i) = self.index.get(&peer) {
            return Ok(i);
        }
        if self.chans.len() >= self.cfg.max_peers {
            return Err(SubmitError::TooManyPeers);
        }
        self.chans.push(Channel::new(peer, &self.cfg));
        let i = self.chans.len() - 1;
        self.index.insert(peer, i);
        Ok(i)
    }

    /// Records how far the peer's stream went when it sent `pkt`, an ack:
    /// a bare ACK says it in its operation id (zero: not said), any other
    /// sequenced packet stands there itself.
    fn note_owed(&mut self, ci: usize, pkt: &Packet<'_>) {
        let c = &mut self.chans[ci];
        let pos = if pkt.body == Body::Ack && pkt.seq == 0 {
            if pkt.op == 0 {
                return;
            }
            unwrap_seq(c.recv_next, pkt.op)
        } else if pkt.flags.nofc {
            return;
        } else {
            unwrap_seq(c.recv_next, pkt.seq) + 1
        };
        // A position far past what we received is no stream position.
        if pos <= c.recv_next.saturating_add(OWED_SPAN) {
            c.owed_below = c.owed_below.max(pos);
        }
    }

    /// Sends every acknowledgement held back hoping to piggyback it, at
    /// the next [`Endpoint::poll_transmit`]: for a task about to leave,
    /// whose peers would otherwise retransmit to nobody and take it for
    /// down.
    pub fn flush_acks(&mut self) {
        for ci in 0..self.chans.len() {
            let c = &mut self.chans[ci];
            if c.unacked > 0 && !c.down {
                c.ack_now = true;
                self.mark_ready(ci);
            }
        }
    }

    fn mark_ready(&mut self, ci: usize) {
        let c = &mut self.chans[ci];
        if !c.in_ready {
            c.in_ready = true;
            self.ready.push_back(ci);
        }
    }

    /// The next datagram to send, written into `out` (cleared first).
    /// Returns its destination task, or `None` when nothing is due.
    pub fn poll_transmit(&mut self, now: Time, out: &mut Vec<u8>) -> Option<TaskId> {
        out.clear();
        self.poll_transmit_append(now, out)
    }

    /// As [`Endpoint::poll_transmit`], appending the datagram to `out`
    /// (its length is what `out` grew by): a sender gathering datagrams
    /// for one GSO send builds them in place, with no copy.
    pub fn poll_transmit_append(&mut self, now: Time, out: &mut Vec<u8>) -> Option<TaskId> {
        let start = out.len();
        if let Some((dst, bytes)) = self.nofc_out.pop_front() {
            out.extend_from_slice(&bytes);
            self.stats.packets_sent += 1;
            self.stats.bytes_sent += bytes.len() as u64;
            self.stats.nofc_sent += 1;
            return Some(dst);
        }
        self.now = self.now.max(now);
        while let Some(ci) = self.ready.pop_front() {
            let (local, epoch, window) = (self.local, self.cfg.epoch, self.cfg.window);
            let c = &mut self.chans[ci];
            c.in_ready = false;
            let sent = c.next_packet(now, local, epoch, window, out, &mut self.stats);
            // Sending piggybacks the ack and arms the retransmission timer.
            self.update_timers(ci);
            let c = &mut self.chans[ci];
            if sent {
                let peer = c.peer;
                if c.wants_send(window) {
                    self.mark_ready(ci);
                }
                self.stats.packets_sent += 1;
                self.stats.bytes_sent += (out.len() - start) as u64;
                return Some(peer);
            }
        }
        None
    }

    /// The next completion or failure, if any.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// Handles one received datagram. Incoming operations are applied
    /// through `target`, in order and exactly once.
    pub fn handle_datagram<T: Target + ?Sized>(&mut self, now: Time, data: &[u8], target: &mut T) {
        self.handle_datagram_from(now, None, data, target);
    }

    /// As [`Endpoint::handle_datagram`], for a datagram the caller knows
    /// came from task `from` (its source address is that task's): one
    /// claiming another source is dropped and counted as
    /// [`Stats::not_member`].
    pub fn handle_datagram_from<T: Target + ?Sized>(
        &mut self,
        now: Time,
        from: Option<TaskId>,
        data: &[u8],
        target: &mut T,
    ) {
        self.now = self.now.max(now);
        self.stats.packets_received += 1;
        self.stats.bytes_received += data.len() as u64;
        let pkt = match Packet::parse_as(data, self.cfg.format) {
            Ok(p) => p,
            Err(_) => {
                self.stats.bad_packets += 1;
                return;
            }
        };
        if pkt.dst != self.local {
            self.stats.misdelivered += 1;
            return;
        }
        // Before any state exists for the source: strangers must not
        // grow the channel table or its buffers.
        if from.is_some_and(|f| f != pkt.src) || !self.is_member(pkt.src) {
            self.stats.not_member += 1;
            return;
        }

        let Ok(ci) = self.channel(pkt.src) else {
            return;
        };
        self.receive(ci, now, data, &pkt, target);
        // Only the source's channel has its deadlines changed here.
        self.update_timers(ci);
    }

    /// The receive path of [`Endpoint::handle_datagram_from`] once the
    /// packet is known to come from channel `ci`'s peer.
    fn receive<T: Target + ?Sized>(
        &mut self,
        ci: usize,
        now: Time,
        data: &[u8],
        pkt: &Packet<'_>,
        target: &mut T,
    ) {
        let c = &mut self.chans[ci];
        match c.peer_epoch {
            None => c.peer_epoch = Some(pkt.epoch),
            Some(e) if pkt.epoch < e => {
                self.stats.stale += 1;
                return;
            }
            Some(e) if pkt.epoch > e => {
                // The peer restarted: whatever it held of ours is gone.
                self.fail_channel(ci, false);
                let c = &mut self.chans[ci];
                c.reset(&self.cfg);
                c.peer_epoch = Some(pkt.epoch);
            }
            Some(_) => {}
        }
        if self.chans[ci].down {
            // It answered: a stall, not a death.
            self.peer_up(ci);
        }
        if let Some(a) = pkt.ack {
            self.process_ack(ci, now, a, pkt);
            self.note_owed(ci, pkt);
        }
        if pkt.flags.status_return && pkt.body == Body::Ack {
            self.chans[ci].ack_now = true;
            self.mark_ready(ci);
        }
        // An ACK with a sequence number is a filler (see `fill_channel`):
        // it takes its place in the stream and carries nothing.
        if pkt.body == Body::Ack && pkt.seq == 0 {
            return;
        }
        if pkt.flags.nofc {
            self.deliver(ci, now, pkt, target);
            return;
        }
        let c = &mut self.chans[ci];
        let seq = unwrap_seq(c.recv_next, pkt.seq);
        if seq < c.recv_next {
            self.stats.duplicates += 1;
            c.dsack = Some(seq);
            c.ack_now = true;
            self.mark_ready(ci);
            return;
        }
        if seq > c.recv_next {
            if seq - c.recv_next >= self.cfg.window as u64 {
                self.stats.out_of_window += 1;
                return;
            }
            let (limit, total) = (self.cfg.ooo_bytes, self.cfg.ooo_total);
            match c.ooo.insert(seq, data, limit, &self.ooo_held, total) {
                Ok(()) => {}
                Err(Refused::Duplicate) => {
                    self.stats.duplicates += 1;
                    c.dsack = Some(seq);
                }
                // Not stored and not selectively acked: the sender resends.
                Err(Refused::Budget) => self.stats.reorder_dropped += 1,
            }
            c.ack_now = true;
            self.mark_ready(ci);
            return;
        }
        self.deliver(ci, now, pkt, target);
        self.chans[ci].recv_next += 1;
        let mut n = 1;
        loop {
            let c = &mut self.chans[ci];
            if c.down {
                return;
            }
            let next = c.recv_next;
            let Some(buf) = c.ooo.remove(next) else {
                break;
            };
            c.recv_next += 1;
            n += 1;
            // Stored packets were parsed before; parse cannot fail now.
            if let Ok(p) = Packet::parse_as(&buf, self.cfg.format) {
                self.deliver(ci, now, &p, target);
            }
        }
        let c = &mut self.chans[ci];
        c.unacked += n;
        if n > 1 || c.unacked >= self.cfg.ack_every {
            c.ack_now = true;
        } else if c.timers.get(Timer::Ack).is_none() {
            c.timers.set(Timer::Ack, now + self.cfg.ack_delay);
        }
        if c.ack_now {
            self.mark_ready(ci);
        }
    }
}
