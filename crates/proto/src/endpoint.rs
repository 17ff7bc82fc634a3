//! The endpoint: one reliable channel per peer, multicast forwarding, and
//! the event queue. See the crate docs for the call order.

use crate::reorder::{self, Refused, Reorder};
use crate::rtt::Rtt;
use crate::{
    Completion, Config, ConfigError, Event, McastId, Op, OpId, OpOptions, Outcome, PathInfo, Stats,
    SubmitError, Target, Time,
};
use sss_wire::{encode_sack, Body, Flags, Frag, Packet, Status, TaskId, HEADER_LEN};
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Sequence numbers are 32 bits on the wire and 64 bits here, so ordering
/// never has to think about wrap-around. A wire value is read as the 64-bit
/// number closest to a reference point.
fn unwrap_seq(reference: u64, wire: u32) -> u64 {
    let delta = wire.wrapping_sub(reference as u32) as i32 as i64;
    (reference as i64).saturating_add(delta).max(0) as u64
}

/// A packet this side keeps until it is acknowledged.
struct Slot {
    /// Everything but the payload and the ack, which is filled in anew at
    /// every transmission.
    meta: Packet<'static>,
    payload: Vec<u8>,
    /// Last transmission, `None` before the first.
    sent_at: Option<Time>,
    /// Transmissions beyond the first.
    retx: u32,
    /// Reported received by a selective ack.
    sacked: bool,
    /// Waiting in the retransmission queue.
    queued: bool,
    /// What the peer's reorder buffer is charged for the packets pushed
    /// before this one, and with it (see `Channel::may_send_new`).
    start: u64,
    end: u64,
}

impl Slot {
    fn cost(&self) -> usize {
        HEADER_LEN + self.payload.len()
    }
}

/// What an operation waiting for its reply expects.
enum Pending {
    /// A STATUS (ACK/NACK).
    Status,
    /// An ATOMIC_REPLY.
    Atomic,
    /// READ_REPLY fragments, gathered here.
    Read { buf: Vec<u8> },
}

/// State of the channel with one peer.
struct Channel {
    peer: TaskId,
    down: bool,

    // Send side: slots hold sequence numbers base .. next_seq.
    next_seq: u64,
    base: u64,
    slots: VecDeque<Slot>,
    /// First sequence number never transmitted.
    next_send: u64,
    /// Bytes held in slots (header + payload), for back-pressure.
    buffered: usize,
    retx: VecDeque<u64>,
    /// RACK: send time and sequence number of the most recently sent packet
    /// known delivered. Unacknowledged packets sent before it are lost once
    /// they are older than `rack_rtt` plus a reordering allowance.
    rack: Option<(Time, u64)>,
    /// Round trip measured on the `rack` packet.
    rack_rtt: Time,
    rto_at: Option<Time>,
    retries: u32,
    rtt: Rtt,
    /// Operations waiting for a reply, by wire op id.
    pending: HashMap<u32, Pending>,
    /// Ask the peer for an ACK (its replies are overdue).
    probe: bool,
    /// Set by a retransmission timeout: packets sent before it are resent
    /// once the next ack shows the path works.
    recover_before: Option<Time>,
    /// When a hole below the highest selectively acked packet becomes old
    /// enough to resend.
    hole_at: Option<Time>,
    /// While down: the interval to the next probe (`rto_at`).
    probe_every: Time,
    /// Operations failed while the peer was down whose requests it may
    /// still answer: a late NACK for one is not a second completion.
    failed_ops: BTreeSet<u32>,

    // Receive side.
    peer_epoch: Option<u32>,
    recv_next: u64,
    ooo: Reorder,
    /// The peer's reorder budget in bytes, assumed equal to ours.
    ooo_budget: usize,
    unacked: u32,
    ack_now: bool,
    ack_at: Option<Time>,
    /// Worst status among the fragments of the incoming operation so far.
    in_op_status: Status,

    in_ready: bool,
}

impl Channel {
    fn new(peer: TaskId, cfg: &Config) -> Self {
        Self {
            peer,
            down: false,
            next_seq: 1,
            base: 1,
            slots: VecDeque::new(),
            next_send: 1,
            buffered: 0,
            retx: VecDeque::new(),
            rack: None,
            rack_rtt: 0,
            rto_at: None,
            retries: 0,
            rtt: Rtt::new(cfg.initial_rto, cfg.min_rto, cfg.max_rto),
            pending: HashMap::new(),
            probe: false,
            recover_before: None,
            hole_at: None,
            probe_every: 0,
            failed_ops: BTreeSet::new(),
            peer_epoch: None,
            recv_next: 1,
            ooo: Reorder::default(),
            ooo_budget: cfg.ooo_bytes,
            unacked: 0,
            ack_now: false,
            ack_at: None,
            in_op_status: Status::Ok,
            in_ready: false,
        }
    }

    /// Forgets everything but the peer's identity, as after a restart.
    fn reset(&mut self, cfg: &Config) {
        let peer = self.peer;
        let in_ready = self.in_ready;
        *self = Self::new(peer, cfg);
        self.in_ready = in_ready;
    }

    /// Appends a packet to the send stream and returns its sequence number.
    fn push(&mut self, mut meta: Packet<'static>, payload: Vec<u8>) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        meta.seq = seq as u32;
        let wire = HEADER_LEN + meta.body.ext_len() + payload.len();
        let start = self.slots.back().map_or(0, |s| s.end);
        let slot = Slot {
            meta,
            payload,
            sent_at: None,
            retx: 0,
            sacked: false,
            queued: false,
            start,
            end: start + reorder::cost(wire) as u64,
        };
        self.buffered += slot.cost();
        self.slots.push_back(slot);
        seq
    }

    /// Packets and replies outstanding. A down channel owes nothing: its
    /// operations failed, and the stream it keeps is only for the peer.
    fn in_flight(&self) -> usize {
        if self.down {
            0
        } else {
            self.slots.len() + self.pending.len()
        }
    }

    fn wants_send(&self, window: u32) -> bool {
        if self.down {
            return self.probe;
        }
        !self.retx.is_empty() || self.may_send_new(window) || self.ack_now || self.probe
    }

    /// True when the next new packet may go out: within the window, and
    /// within what the peer's reorder buffer holds (`ooo_budget`, as
    /// configured here), so that a loss never makes it drop the packets
    /// behind the hole, which would all have to come again.
    fn may_send_new(&self, window: u32) -> bool {
        if self.next_send >= self.next_seq || self.next_send - self.base >= window as u64 {
            return false;
        }
        let i = (self.next_send - self.base) as usize;
        i == 0 || self.slots[i].end - self.slots[0].start <= self.ooo_budget as u64
    }

    fn piggybacked(&mut self) -> Option<u32> {
        self.ack_now = false;
        self.ack_at = None;
        self.unacked = 0;
        Some(self.recv_next as u32)
    }

    /// Notes that the transmission of `seq` sent at `sent` (retransmitted
    /// or not) was acknowledged at `now`, for RACK.
    fn delivered(&mut self, now: Time, seq: u64, sent: Time, retransmitted: bool) {
        let rtt = now.saturating_sub(sent);
        // An ack sooner than any round trip seen answers the original
        // transmission, not the retransmission (RACK's ambiguity rule).
        if retransmitted && self.rtt.min_rtt().is_some_and(|m| rtt < m) {
            return;
        }
        if self.rack.is_none_or(|r| (sent, seq) > r) {
            self.rack = Some((sent, seq));
            self.rack_rtt = rtt;
        }
    }

    /// RACK loss detection: queues every unacknowledged packet sent before
    /// the most recently sent delivered one once it is older than that
    /// packet's round trip plus a reordering allowance (lost, not merely
    /// reordered), and arms `hole_at` for the ones still too young. Works
    /// per packet, retransmissions and the last fragments of a message
    /// included, so no loss waits for the retransmission timer while later
    /// packets get through.
    fn scan_holes(&mut self, now: Time) {
        self.hole_at = None;
        let Some(rack) = self.rack else { return };
        let wait = self.rack_rtt + self.rtt.reorder_window(self.rack_rtt);
        for seq in self.base..self.next_send {
            let slot = &mut self.slots[(seq - self.base) as usize];
            let Some(t) = slot.sent_at else { break };
            if (t, seq) > rack {
                // First transmissions go out in sequence order, so every
                // later packet was sent after this one.
                if slot.retx == 0 {
                    break;
                }
                continue;
            }
            if slot.sacked || slot.queued {
                continue;
            }
            let due = t.saturating_add(wait);
            if now >= due {
                slot.queued = true;
                self.retx.push_back(seq);
            } else {
                self.hole_at = Some(self.hole_at.map_or(due, |h| h.min(due)));
            }
        }
    }

    fn arm_rto(&mut self, now: Time) {
        if self.rto_at.is_none() {
            self.rto_at = Some(now + self.rtt.rto());
        }
    }

    /// Writes the next datagram for this peer into `out`, if any is due.
    fn next_packet(
        &mut self,
        now: Time,
        local: TaskId,
        epoch: u32,
        window: u32,
        out: &mut Vec<u8>,
        stats: &mut Stats,
    ) -> bool {
        // A down channel keeps its stream for the peer's return and sends
        // only probes meanwhile.
        while !self.down {
            let Some(seq) = self.retx.pop_front() else {
                break;
            };
            if seq < self.base {
                continue;
            }
            let i = (seq - self.base) as usize;
            self.slots[i].queued = false;
            if self.slots[i].sacked {
                continue;
            }
            let ack = self.piggybacked();
            let slot = &mut self.slots[i];
            emit_slot(slot, ack, out);
            slot.sent_at = Some(now);
            slot.retx += 1;
            stats.retransmissions += 1;
            self.arm_rto(now);
            return true;
        }
        if !self.down && self.may_send_new(window) {
            let ack = self.piggybacked();
            let slot = &mut self.slots[(self.next_send - self.base) as usize];
            emit_slot(slot, ack, out);
            slot.sent_at = Some(now);
            self.next_send += 1;
            self.arm_rto(now);
            return true;
        }
        if self.ack_now || self.probe {
            let probe = std::mem::take(&mut self.probe);
            let ack = self.piggybacked();
            let mut blocks: Vec<(u32, u32)> = Vec::new();
            for &s in self.ooo.keys() {
                match blocks.last_mut() {
                    Some((_, e)) if *e == s as u32 => *e = (s + 1) as u32,
                    _ => {
                        if blocks.len() == sss_wire::MAX_SACK_BLOCKS {
                            break;
                        }
                        blocks.push((s as u32, (s + 1) as u32));
                    }
                }
            }
            let mut payload = Vec::with_capacity(blocks.len() * 8);
            encode_sack(&blocks, &mut payload);
            let p = Packet {
                src: local,
                dst: self.peer,
                epoch,
                seq: 0,
                ack,
                op: 0,
                flags: Flags {
                    nofc: false,
                    status_return: probe,
                },
                status: Status::Ok,
                key: 0,
                addr: 0,
                frag: Frag::SINGLE,
                body: Body::Ack,
                payload: &payload,
            };
            emit_into(&p, out);
            stats.acks_sent += 1;
            return true;
        }
        false
    }
}

/// Most failed operations remembered per peer (see `Channel::failed_ops`);
/// the oldest are forgotten first.
const FAILED_OPS_KEPT: usize = 4096;

/// A request of the user's, failed as a whole when its peer goes down.
fn is_user_request(body: Body) -> bool {
    matches!(
        body,
        Body::Write { .. }
            | Body::Read { .. }
            | Body::Swap { .. }
            | Body::Cas { .. }
            | Body::FetchAdd { .. }
            | Body::Fifo
            | Body::Signal { .. }
    )
}

/// Takes the place of a request that failed while its peer was down: the
/// peer receives the sequence number it waits for, and nothing else. An ACK
/// with a sequence number; plain ACKs carry zero.
fn filler(local: TaskId, dst: TaskId, epoch: u32, seq: u32) -> Packet<'static> {
    let mut p = request_meta(local, dst, epoch, Body::Ack);
    p.seq = seq;
    p
}

fn emit_into(p: &Packet<'_>, out: &mut Vec<u8>) {
    out.clear();
    out.resize(p.buffer_len(), 0);
    // Packets built here always satisfy emit's checks (fragment fields,
    // arity, payload sizes are validated at submit), so this cannot fail;
    // an empty datagram would merely be dropped by the peer.
    if p.emit(out).is_err() {
        out.clear();
    }
}

fn emit_slot(slot: &Slot, ack: Option<u32>, out: &mut Vec<u8>) {
    let p = Packet {
        ack,
        payload: &slot.payload,
        ..slot.meta
    };
    emit_into(&p, out);
}

/// Multicast forwarding state at an inner member.
struct Forward {
    parent: TaskId,
    group: u32,
    waiting: Vec<TaskId>,
    count: u32,
    status: Status,
}

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
}

fn request_meta(local: TaskId, dst: TaskId, epoch: u32, body: Body) -> Packet<'static> {
    Packet {
        src: local,
        dst,
        epoch,
        seq: 0,
        ack: None,
        op: 0,
        flags: Flags::default(),
        status: Status::Ok,
        key: 0,
        addr: 0,
        frag: Frag::SINGLE,
        body,
        payload: &[],
    }
}

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
        self.nofc_deadlines.is_empty()
            && self.chans.iter().all(|c| {
                c.down || (c.rto_at.is_none() && c.ack_at.is_none() && c.hole_at.is_none())
            })
    }

    /// Registers multicast group `group` with its members, in an order every
    /// member must agree on. Replaces an earlier registration.
    pub fn add_group(&mut self, group: u32, members: Vec<TaskId>) {
        self.groups.insert(group, members);
    }

    /// Forgets a multicast group.
    pub fn remove_group(&mut self, group: u32) {
        self.groups.remove(&group);
    }

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
    fn peer_up(&mut self, ci: usize) {
        let c = &mut self.chans[ci];
        c.down = false;
        c.retries = 0;
        c.rtt.reset_backoff();
        c.rto_at = None;
        c.probe_every = 0;
        for seq in c.base..c.next_send {
            let s = &mut c.slots[(seq - c.base) as usize];
            if !s.sacked && !s.queued {
                s.queued = true;
                c.retx.push_back(seq);
            }
        }
        let peer = c.peer;
        self.mark_ready(ci);
        self.stats.recoveries += 1;
        self.events.push_back(Event::PeerUp { peer });
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

    fn mark_ready(&mut self, ci: usize) {
        let c = &mut self.chans[ci];
        if !c.in_ready {
            c.in_ready = true;
            self.ready.push_back(ci);
        }
    }

    fn frags_for(&self, len: usize) -> Option<u16> {
        let ps = self.cfg.payload_size.max(1);
        u16::try_from(len.div_ceil(ps).max(1)).ok()
    }

    /// Submits a reliable or no-flow-control operation toward `dst`. The
    /// operation's bytes are copied; the caller's buffer is free on return.
    pub fn submit(
        &mut self,
        now: Time,
        dst: TaskId,
        op: Op<'_>,
        opts: OpOptions,
    ) -> Result<OpId, SubmitError> {
        let ps = self.cfg.payload_size;
        let frags = match op {
            Op::Write { data, .. } => self.frags_for(data.len()).ok_or(SubmitError::Invalid)?,
            Op::Fifo { data, .. } | Op::Signal { data, .. } if data.len() > ps => {
                return Err(SubmitError::Invalid)
            }
            Op::Read { len, .. } => {
                if len > self.cfg.max_read || self.frags_for(len as usize).is_none() {
                    return Err(SubmitError::Invalid);
                }
                1
            }
            _ => 1,
        };
        if opts.nofc {
            return self.submit_nofc(now, dst, op, opts, frags);
        }
        let ci = self.channel(dst)?;
        let cost = op.payload_len() + HEADER_LEN * frags as usize;
        let (local, epoch, send_buffer) = (self.local, self.cfg.epoch, self.cfg.send_buffer);
        let c = &mut self.chans[ci];
        if c.down {
            return Err(SubmitError::PeerDown);
        }
        if c.buffered > 0 && c.buffered + cost > send_buffer {
            return Err(SubmitError::WouldBlock);
        }
        let id = c.next_seq as u32;
        let flags = Flags {
            nofc: false,
            status_return: opts.status_return,
        };
        for (meta, payload) in build_packets(local, dst, epoch, id, flags, op, ps, frags) {
            c.push(meta, payload);
        }
        if op.has_reply() || opts.status_return {
            let p = match op {
                Op::Read { len, .. } => Pending::Read {
                    buf: vec![0; len as usize],
                },
                Op::Swap { .. } | Op::Cas { .. } | Op::FetchAdd { .. } => Pending::Atomic,
                _ => Pending::Status,
            };
            c.pending.insert(id, p);
        }
        self.mark_ready(ci);
        Ok(OpId {
            peer: dst,
            id,
            nofc: false,
        })
    }

    fn submit_nofc(
        &mut self,
        now: Time,
        dst: TaskId,
        op: Op<'_>,
        opts: OpOptions,
        frags: u16,
    ) -> Result<OpId, SubmitError> {
        // Unsequenced packets cannot be reassembled in order, so a
        // no-flow-control operation must fit one packet each way.
        if frags != 1 {
            return Err(SubmitError::Invalid);
        }
        if let Op::Read { len, .. } = op {
            if len as usize > self.cfg.payload_size {
                return Err(SubmitError::Invalid);
            }
        }
        let id = self.nofc_next;
        self.nofc_next = self.nofc_next.wrapping_add(1).max(1);
        let flags = Flags {
            nofc: true,
            status_return: opts.status_return,
        };
        let ps = self.cfg.payload_size;
        for (meta, payload) in build_packets(self.local, dst, self.cfg.epoch, id, flags, op, ps, 1)
        {
            let p = Packet {
                payload: &payload,
                ..meta
            };
            let mut out = Vec::new();
            emit_into(&p, &mut out);
            self.nofc_out.push_back((dst, out));
        }
        if op.has_reply() || opts.status_return {
            let p = match op {
                Op::Read { len, .. } => Pending::Read {
                    buf: vec![0; len as usize],
                },
                Op::Swap { .. } | Op::Cas { .. } | Op::FetchAdd { .. } => Pending::Atomic,
                _ => Pending::Status,
            };
            self.nofc_pending.insert(id, (dst, p));
        } else {
            self.nofc_quiet.insert(id, dst);
        }
        self.nofc_deadlines
            .push_back((now + self.cfg.nofc_reply_timeout, id));
        Ok(OpId {
            peer: dst,
            id,
            nofc: true,
        })
    }

    /// Starts a WRITE of `data` at (`key`, `addr`) in every member of
    /// `group` but this task (which applies its own copy itself, if it is a
    /// member). Completes with one [`Event::Multicast`].
    pub fn multicast(
        &mut self,
        now: Time,
        group: u32,
        key: u64,
        addr: u64,
        data: &[u8],
    ) -> Result<McastId, SubmitError> {
        let _ = now;
        let members = self.groups.get(&group).ok_or(SubmitError::UnknownGroup)?;
        if data.len() > self.cfg.payload_size {
            return Err(SubmitError::Invalid);
        }
        let receivers: Vec<TaskId> = members
            .iter()
            .copied()
            .filter(|&m| m != self.local)
            .collect();
        let id = self.mcast_next;
        self.mcast_next = self.mcast_next.wrapping_add(1);
        let mcast = McastId { group, id };
        let Some(&root) = receivers.first() else {
            self.events.push_back(Event::Multicast {
                mcast,
                members: 0,
                status: Status::Ok,
            });
            return Ok(mcast);
        };
        let arity = if receivers.len() <= self.cfg.chain_threshold {
            1
        } else {
            self.cfg.multicast_arity.max(1)
        };
        let ci = self.channel(root)?;
        let (local, epoch, send_buffer) = (self.local, self.cfg.epoch, self.cfg.send_buffer);
        let c = &mut self.chans[ci];
        if c.down {
            return Err(SubmitError::PeerDown);
        }
        if c.buffered > 0 && c.buffered + data.len() + HEADER_LEN > send_buffer {
            return Err(SubmitError::WouldBlock);
        }
        let mut meta = request_meta(
            local,
            root,
            epoch,
            Body::Multicast {
                group,
                mcast: id,
                origin: local,
                arity,
            },
        );
        meta.key = key;
        meta.addr = addr;
        meta.op = c.next_seq as u32;
        c.push(meta, data.to_vec());
        self.mcast_out.insert(id, (group, root));
        self.mark_ready(ci);
        Ok(mcast)
    }

    /// The next datagram to send, written into `out` (cleared first).
    /// Returns its destination task, or `None` when nothing is due.
    pub fn poll_transmit(&mut self, now: Time, out: &mut Vec<u8>) -> Option<TaskId> {
        if let Some((dst, bytes)) = self.nofc_out.pop_front() {
            out.clear();
            out.extend_from_slice(&bytes);
            self.stats.packets_sent += 1;
            self.stats.bytes_sent += out.len() as u64;
            self.stats.nofc_sent += 1;
            return Some(dst);
        }
        self.now = self.now.max(now);
        while let Some(ci) = self.ready.pop_front() {
            let (local, epoch, window) = (self.local, self.cfg.epoch, self.cfg.window);
            let c = &mut self.chans[ci];
            c.in_ready = false;
            if c.next_packet(now, local, epoch, window, out, &mut self.stats) {
                let peer = c.peer;
                if c.wants_send(window) {
                    self.mark_ready(ci);
                }
                self.stats.packets_sent += 1;
                self.stats.bytes_sent += out.len() as u64;
                return Some(peer);
            }
        }
        None
    }

    /// The next completion or failure, if any.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

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

    /// Completes everything outstanding on a channel with `NodeDown`. With
    /// `keep_stream`, the peer may still be alive (a stall): the sequence
    /// numbers stay, our requests in the stream become fillers and our
    /// replies stay, so that nothing the peer waits for goes missing when
    /// it answers again. Without, the stream is dropped (the peer restarted).
    fn fail_channel(&mut self, ci: usize, keep_stream: bool) {
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
                if is_user_request(s.meta.body) || matches!(s.meta.body, Body::Multicast { .. }) {
                    c.buffered -= s.payload.len();
                    s.payload = Vec::new();
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
        c.rto_at = None;
        c.ack_at = None;
        c.ack_now = false;
        c.probe = false;
        c.recover_before = None;
        c.hole_at = None;
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

    fn peer_down(&mut self, ci: usize) {
        self.fail_channel(ci, true);
        let first = self.cfg.down_probe;
        let c = &mut self.chans[ci];
        c.down = true;
        c.probe_every = first;
        c.rto_at = Some(self.now.saturating_add(first));
        let peer = c.peer;
        self.events.push_back(Event::PeerDown { peer });
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
        let pkt = match Packet::parse(data) {
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
            self.process_ack(ci, now, a, &pkt);
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
            self.deliver(ci, now, &pkt, target);
            return;
        }
        let c = &mut self.chans[ci];
        let seq = unwrap_seq(c.recv_next, pkt.seq);
        if seq < c.recv_next {
            self.stats.duplicates += 1;
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
                Err(Refused::Duplicate) => self.stats.duplicates += 1,
                // Not stored and not selectively acked: the sender resends.
                Err(Refused::Budget) => self.stats.reorder_dropped += 1,
            }
            c.ack_now = true;
            self.mark_ready(ci);
            return;
        }
        self.deliver(ci, now, &pkt, target);
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
            if let Ok(p) = Packet::parse(&buf) {
                self.deliver(ci, now, &p, target);
            }
        }
        let c = &mut self.chans[ci];
        c.unacked += n;
        if n > 1 || c.unacked >= self.cfg.ack_every {
            c.ack_now = true;
        } else if c.ack_at.is_none() {
            c.ack_at = Some(now + self.cfg.ack_delay);
        }
        if c.ack_now {
            self.mark_ready(ci);
        }
    }

    fn process_ack(&mut self, ci: usize, now: Time, ack_wire: u32, pkt: &Packet<'_>) {
        let c = &mut self.chans[ci];
        let ack = unwrap_seq(c.base, ack_wire).min(c.next_send);
        let mut progress = false;
        // The most recently sent packet this ack newly covers: (sent at,
        // seq, retransmitted). Only its round trip is a clean sample; an
        // older one acknowledged now (cumulatively, once a hole below it
        // was filled) would count the hole's recovery as round trip,
        // inflating the timeout, which slows recovery, which inflates the
        // next sample: the loss cliff.
        let mut newest: Option<(Time, u64, bool)> = None;
        let mut note = |seq: u64, slot: &Slot| {
            if let Some(t) = slot.sent_at {
                if newest.is_none_or(|(nt, ns, _)| (t, seq) > (nt, ns)) {
                    newest = Some((t, seq, slot.retx > 0));
                }
            }
        };
        while c.base < ack {
            let Some(s) = c.slots.pop_front() else {
                break;
            };
            c.buffered -= s.cost();
            if !s.sacked {
                note(c.base, &s);
            }
            c.base += 1;
            progress = true;
        }
        for (s, e) in pkt.sack_blocks() {
            let s = unwrap_seq(c.base, s).max(c.base);
            let e = unwrap_seq(c.base, e).min(c.next_send);
            for seq in s..e {
                let slot = &mut c.slots[(seq - c.base) as usize];
                if !slot.sacked {
                    slot.sacked = true;
                    progress = true;
                    note(seq, slot);
                }
            }
        }
        if let Some((sent, seq, retransmitted)) = newest {
            // Karn's rule: a retransmitted packet's ack is ambiguous.
            if !retransmitted {
                c.rtt.sample(now.saturating_sub(sent));
            }
            c.delivered(now, seq, sent, retransmitted);
        }
        if progress || c.slots.is_empty() {
            // Hearing from the peer with nothing of ours unacknowledged is
            // progress too: it is alive and owes only replies.
            c.retries = 0;
            c.rtt.reset_backoff();
            c.rto_at = if c.next_send > c.base || !c.pending.is_empty() {
                Some(now + c.rtt.rto())
            } else {
                None
            };
        }
        // After a timeout, the first ack that shows the path works marks
        // every packet still unacknowledged from before the timeout lost.
        if progress {
            if let Some(t) = c.recover_before.take() {
                for seq in c.base..c.next_send {
                    let slot = &mut c.slots[(seq - c.base) as usize];
                    if !slot.sacked && !slot.queued && slot.sent_at.is_some_and(|s| s <= t) {
                        slot.queued = true;
                        c.retx.push_back(seq);
                    }
                }
            }
        }
        c.scan_holes(now);
        if c.wants_send(self.cfg.window) {
            self.mark_ready(ci);
        }
    }

    /// Sends a reply to request `req` from channel `ci`'s peer: reliable for
    /// a reliable request, no-flow-control for a no-flow-control one.
    fn reply(&mut self, ci: usize, req: &Packet<'_>, body: Body, status: Status, payload: Vec<u8>) {
        let mut meta = request_meta(self.local, req.src, self.cfg.epoch, body);
        meta.op = req.op;
        meta.status = status;
        self.send_meta(ci, meta, payload, req.flags.nofc);
    }

    fn send_meta(&mut self, ci: usize, mut meta: Packet<'static>, payload: Vec<u8>, nofc: bool) {
        if nofc {
            meta.flags.nofc = true;
            let p = Packet {
                payload: &payload,
                ..meta
            };
            let mut out = Vec::new();
            emit_into(&p, &mut out);
            self.nofc_out.push_back((meta.dst, out));
        } else {
            self.chans[ci].push(meta, payload);
            self.mark_ready(ci);
        }
    }

    fn deliver<T: Target + ?Sized>(
        &mut self,
        ci: usize,
        now: Time,
        pkt: &Packet<'_>,
        target: &mut T,
    ) {
        match pkt.body {
            Body::Write { .. } | Body::Fifo | Body::Signal { .. } => {
                let status = match self.apply(pkt, target) {
                    Outcome::Failed(s) => s,
                    _ => Status::Ok,
                };
                let status = if pkt.flags.nofc {
                    status
                } else {
                    let c = &mut self.chans[ci];
                    if pkt.frag.index == 0 {
                        c.in_op_status = Status::Ok;
                    }
                    c.in_op_status = c.in_op_status.combine(status);
                    if !pkt.frag.is_last() {
                        return;
                    }
                    c.in_op_status
                };
                if !status.is_ok() || pkt.flags.status_return {
                    self.reply(ci, pkt, Body::Status, status, Vec::new());
                }
            }
            Body::Read { len } if len > self.cfg.max_read => {
                self.stats.rejected += 1;
                self.reply(ci, pkt, Body::Status, Status::TooLarge, Vec::new());
            }
            Body::Read { len } => match self.apply(pkt, target) {
                Outcome::Data(mut v) => {
                    v.resize(len as usize, 0);
                    self.send_read_reply(ci, pkt, v);
                }
                Outcome::Failed(s) => self.reply(ci, pkt, Body::Status, s, Vec::new()),
                _ => self.reply(ci, pkt, Body::Status, Status::Unsupported, Vec::new()),
            },
            Body::Swap { .. } | Body::Cas { .. } | Body::FetchAdd { .. } => {
                match self.apply(pkt, target) {
                    Outcome::Value(old) => {
                        self.reply(ci, pkt, Body::AtomicReply { old }, Status::Ok, Vec::new())
                    }
                    Outcome::Failed(s) => self.reply(ci, pkt, Body::Status, s, Vec::new()),
                    _ => self.reply(ci, pkt, Body::Status, Status::Unsupported, Vec::new()),
                }
            }
            Body::Multicast { .. } => self.multicast_received(ci, now, pkt, target),
            Body::McastAck {
                mcast,
                origin,
                count,
                ..
            } => {
                if origin == self.local {
                    self.stats.mcast_acks += 1;
                    if let Some((group, _)) = self.mcast_out.remove(&mcast) {
                        self.events.push_back(Event::Multicast {
                            mcast: McastId { group, id: mcast },
                            members: count,
                            status: pkt.status,
                        });
                    }
                } else {
                    self.child_acked((origin, mcast), pkt.src, count, pkt.status);
                }
            }
            Body::Status | Body::AtomicReply { .. } | Body::ReadReply => {
                self.reply_received(ci, pkt)
            }
            Body::Ack => {}
        }
    }

    fn apply<T: Target + ?Sized>(&mut self, pkt: &Packet<'_>, target: &mut T) -> Outcome {
        let out = target.apply(pkt);
        if matches!(out, Outcome::Failed(_)) {
            self.stats.rejected += 1;
        } else {
            self.stats.applied += 1;
        }
        out
    }

    fn send_read_reply(&mut self, ci: usize, req: &Packet<'_>, data: Vec<u8>) {
        let ps = self.cfg.payload_size.max(1);
        let count = data.len().div_ceil(ps).max(1);
        let Ok(count16) = u16::try_from(count) else {
            self.reply(ci, req, Body::Status, Status::TooLarge, Vec::new());
            return;
        };
        if req.flags.nofc && count16 > 1 {
            self.reply(ci, req, Body::Status, Status::TooLarge, Vec::new());
            return;
        }
        for i in 0..count {
            let lo = i * ps;
            let hi = (lo + ps).min(data.len());
            let mut meta = request_meta(self.local, req.src, self.cfg.epoch, Body::ReadReply);
            meta.op = req.op;
            meta.addr = lo as u64;
            meta.frag = Frag {
                index: i as u16,
                count: count16,
            };
            self.send_meta(ci, meta, data[lo..hi].to_vec(), req.flags.nofc);
        }
    }

    fn reply_received(&mut self, ci: usize, pkt: &Packet<'_>) {
        let peer = self.chans[ci].peer;
        let op = OpId {
            peer,
            id: pkt.op,
            nofc: pkt.flags.nofc,
        };
        let pending = if pkt.flags.nofc {
            self.nofc_pending
                .get_mut(&pkt.op)
                .filter(|(to, _)| *to == peer)
                .map(|(_, p)| p)
        } else {
            self.chans[ci].pending.get_mut(&pkt.op)
        };
        let Some(p) = pending else {
            if !pkt.flags.nofc && self.chans[ci].failed_ops.remove(&pkt.op) {
                // Already reported failed when the peer went down.
                return;
            }
            // A NACK for an operation that asked for no reply; unsequenced
            // ones may come twice (or never were ours): report once.
            let known =
                !pkt.flags.nofc || self.nofc_quiet.remove(&pkt.op).is_some_and(|to| to == peer);
            if known && pkt.body == Body::Status && !pkt.status.is_ok() {
                self.events.push_back(Event::Completed {
                    op,
                    result: Err(pkt.status),
                });
            }
            return;
        };
        let result = match (p, pkt.body) {
            (Pending::Read { buf }, Body::ReadReply) => {
                let off = pkt.addr as usize;
                if let Some(dst) = off
                    .checked_add(pkt.payload.len())
                    .and_then(|end| buf.get_mut(off..end))
                {
                    dst.copy_from_slice(pkt.payload);
                }
                if !pkt.frag.is_last() {
                    return;
                }
                Ok(Completion::Data(std::mem::take(buf)))
            }
            (Pending::Atomic, Body::AtomicReply { old }) => Ok(Completion::Value(old)),
            (_, Body::Status) if !pkt.status.is_ok() => Err(pkt.status),
            (Pending::Status, Body::Status) => Ok(Completion::Done),
            (Pending::Read { buf }, Body::Status) => Ok(Completion::Data(std::mem::take(buf))),
            _ => Err(Status::Unsupported),
        };
        if pkt.flags.nofc {
            self.nofc_pending.remove(&pkt.op);
        } else {
            let c = &mut self.chans[ci];
            c.pending.remove(&pkt.op);
            if c.pending.is_empty() && c.slots.is_empty() {
                c.rto_at = None;
            }
        }
        self.events.push_back(Event::Completed { op, result });
    }

    fn multicast_received<T: Target + ?Sized>(
        &mut self,
        ci: usize,
        now: Time,
        pkt: &Packet<'_>,
        target: &mut T,
    ) {
        let _ = now;
        let Body::Multicast {
            group,
            mcast,
            origin,
            arity,
        } = pkt.body
        else {
            return;
        };
        let parent = pkt.src;
        let receivers: Option<Vec<TaskId>> = self.groups.get(&group).map(|m| {
            m.iter()
                .copied()
                .filter(|&t| t != origin)
                .collect::<Vec<_>>()
        });
        let me = receivers
            .as_ref()
            .and_then(|r| r.iter().position(|&t| t == self.local));
        let (Some(receivers), Some(me)) = (receivers, me) else {
            self.send_mcast_ack(ci, group, mcast, origin, 0, Status::NoSuchGroup);
            return;
        };
        let mut status = match self.apply(pkt, target) {
            Outcome::Failed(s) => s,
            _ => Status::Ok,
        };
        let count = u32::from(status.is_ok());
        let k = arity.max(1) as usize;
        let mut waiting = Vec::new();
        for child in receivers.iter().skip(me * k + 1).take(k).copied() {
            let Ok(cc) = self.channel(child) else {
                status = status.combine(Status::NodeDown);
                continue;
            };
            if self.chans[cc].down {
                status = status.combine(Status::NodeDown);
                continue;
            }
            let mut meta = request_meta(self.local, child, self.cfg.epoch, pkt.body);
            meta.key = pkt.key;
            meta.addr = pkt.addr;
            meta.op = self.chans[cc].next_seq as u32;
            self.send_meta(cc, meta, pkt.payload.to_vec(), false);
            waiting.push(child);
        }
        if waiting.is_empty() {
            self.send_mcast_ack(ci, group, mcast, origin, count, status);
        } else {
            self.mcast_fwd.insert(
                (origin, mcast),
                Forward {
                    parent,
                    group,
                    waiting,
                    count,
                    status,
                },
            );
        }
    }

    fn child_acked(&mut self, key: (TaskId, u32), child: TaskId, count: u32, status: Status) {
        let Some(f) = self.mcast_fwd.get_mut(&key) else {
            return;
        };
        let Some(pos) = f.waiting.iter().position(|&c| c == child) else {
            return;
        };
        f.waiting.swap_remove(pos);
        f.count += count;
        f.status = f.status.combine(status);
        if !f.waiting.is_empty() {
            return;
        }
        let Some(f) = self.mcast_fwd.remove(&key) else {
            return;
        };
        if let Some(&pi) = self.index.get(&f.parent) {
            if !self.chans[pi].down {
                self.send_mcast_ack(pi, f.group, key.1, key.0, f.count, f.status);
            }
        }
    }

    fn send_mcast_ack(
        &mut self,
        ci: usize,
        group: u32,
        mcast: u32,
        origin: TaskId,
        count: u32,
        status: Status,
    ) {
        let peer = self.chans[ci].peer;
        let mut meta = request_meta(
            self.local,
            peer,
            self.cfg.epoch,
            Body::McastAck {
                group,
                mcast,
                origin,
                count,
            },
        );
        meta.status = status;
        self.send_meta(ci, meta, Vec::new(), false);
    }
}

/// Cuts an operation into its packets (all but sequence numbers filled in).
#[allow(clippy::too_many_arguments)]
fn build_packets(
    local: TaskId,
    dst: TaskId,
    epoch: u32,
    id: u32,
    flags: Flags,
    op: Op<'_>,
    ps: usize,
    frags: u16,
) -> Vec<(Packet<'static>, Vec<u8>)> {
    let meta = |body: Body, key: u64, addr: u64| {
        let mut m = request_meta(local, dst, epoch, body);
        m.op = id;
        m.flags = flags;
        m.key = key;
        m.addr = addr;
        m
    };
    match op {
        Op::Write {
            key,
            addr,
            data,
            notify,
        } => {
            let ps = ps.max(1);
            (0..frags as usize)
                .map(|i| {
                    let lo = (i * ps).min(data.len());
                    let hi = (lo + ps).min(data.len());
                    let last = i + 1 == frags as usize;
                    let mut m = meta(
                        Body::Write {
                            notify: if last { notify } else { None },
                        },
                        key,
                        addr.wrapping_add(lo as u64),
                    );
                    m.frag = Frag {
                        index: i as u16,
                        count: frags,
                    };
                    (m, data[lo..hi].to_vec())
                })
                .collect()
        }
        Op::Read { key, addr, len } => vec![(meta(Body::Read { len }, key, addr), Vec::new())],
        Op::Swap { key, addr, operand } => {
            vec![(meta(Body::Swap { operand }, key, addr), Vec::new())]
        }
        Op::Cas {
            key,
            addr,
            expected,
            new,
        } => vec![(meta(Body::Cas { expected, new }, key, addr), Vec::new())],
        Op::FetchAdd { key, addr, operand } => {
            vec![(meta(Body::FetchAdd { operand }, key, addr), Vec::new())]
        }
        Op::Fifo { key, addr, data } => vec![(meta(Body::Fifo, key, addr), data.to_vec())],
        Op::Signal { key, handler, data } => {
            vec![(meta(Body::Signal { handler }, key, 0), data.to_vec())]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::unwrap_seq;

    #[test]
    fn unwrap_picks_the_nearest_value() {
        assert_eq!(unwrap_seq(10, 12), 12);
        assert_eq!(unwrap_seq(10, 8), 8);
        assert_eq!(unwrap_seq(0xffff_fff0, 5), 0x1_0000_0005);
        assert_eq!(unwrap_seq(0x1_0000_0005, 0xffff_fff0), 0xffff_fff0);
        assert_eq!(unwrap_seq(1, 0xffff_ffff), 0);
    }
}
