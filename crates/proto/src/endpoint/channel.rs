//! The reliable channel with one peer: the send stream and its window,
//! selective acks, RACK loss detection, the retransmission timer, the
//! receive side's state, and the processing of an incoming ack.

use super::packetize::{emit_into, emit_slot};
use super::pool::Pool;
use super::reply::Pending;
use super::timer::{Timer, Timers};
use super::Endpoint;
use crate::reorder::{self, Reorder};
use crate::rtt::Rtt;
use crate::{Config, Stats, Time};
use foldhash::{HashMap, HashMapExt};
use sss_wire::{encode_sack, Body, Flags, Format, Frag, Packet, Status, TaskId, HEADER_LEN};
use std::collections::{BTreeSet, VecDeque};

/// Sequence numbers are 32 bits on the wire and 64 bits here, so ordering
/// never has to think about wrap-around. A wire value is read as the 64-bit
/// number closest to a reference point.
pub(super) fn unwrap_seq(reference: u64, wire: u32) -> u64 {
    let delta = wire.wrapping_sub(reference as u32) as i32 as i64;
    (reference as i64).saturating_add(delta).max(0) as u64
}

/// A packet's payload: a range of its operation's bytes, which all the
/// operation's fragments share, so that a large WRITE costs one
/// allocation and one copy, not one per packet; a small payload (a
/// flag, a counter, a short message) is kept inline, with no allocation
/// at all.
#[derive(Debug, Clone)]
pub(super) enum Chunk {
    /// `buf[lo..hi]`.
    Shared {
        buf: std::sync::Arc<[u8]>,
        lo: usize,
        hi: usize,
    },
    /// The first `len` bytes of `bytes`.
    Inline { len: u8, bytes: [u8; INLINE] },
}

/// Payloads up to this many bytes are kept inside their [`Chunk`].
pub(super) const INLINE: usize = 32;

impl Default for Chunk {
    fn default() -> Self {
        Chunk::Inline {
            len: 0,
            bytes: [0; INLINE],
        }
    }
}

impl Chunk {
    /// `data` kept inline, when it fits.
    fn inline(data: &[u8]) -> Option<Chunk> {
        let len = u8::try_from(data.len())
            .ok()
            .filter(|&l| l as usize <= INLINE)?;
        let mut bytes = [0; INLINE];
        bytes[..data.len()].copy_from_slice(data);
        Some(Chunk::Inline { len, bytes })
    }

    /// `n` chunks of at most `size` bytes covering `data`, sharing one
    /// copy of it (one empty chunk for empty data), handed to `each` in
    /// order with their index.
    pub(super) fn split(
        data: &[u8],
        size: usize,
        n: usize,
        pool: &mut Pool,
        mut each: impl FnMut(usize, Chunk),
    ) {
        let n = n.max(1);
        if n == 1 {
            if let Some(c) = Chunk::inline(data) {
                return each(0, c);
            }
        }
        let buf = pool.copy(data);
        let size = size.max(1);
        for i in 0..n {
            let lo = (i * size).min(data.len());
            each(
                i,
                Chunk::Shared {
                    buf: buf.clone(),
                    lo,
                    hi: (lo + size).min(data.len()),
                },
            );
        }
    }
}

impl From<Vec<u8>> for Chunk {
    fn from(v: Vec<u8>) -> Self {
        Chunk::inline(&v).unwrap_or_else(|| {
            let hi = v.len();
            Chunk::Shared {
                buf: v.into(),
                lo: 0,
                hi,
            }
        })
    }
}

impl From<&[u8]> for Chunk {
    fn from(v: &[u8]) -> Self {
        Chunk::inline(v).unwrap_or_else(|| Chunk::Shared {
            buf: v.into(),
            lo: 0,
            hi: v.len(),
        })
    }
}

impl std::ops::Deref for Chunk {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Chunk::Shared { buf, lo, hi } => &buf[*lo..*hi],
            Chunk::Inline { len, bytes } => &bytes[..*len as usize],
        }
    }
}

/// Loss episodes without a D-SACK after which RACK's reordering
/// allowance halves (RFC 8985 keeps it for 16 recoveries).
const REORDER_DECAY: u32 = 16;

/// How many of the packets RACK resent last are remembered.
const RACK_RESENT: usize = 256;

/// Largest multiplier of RACK's reordering allowance; the allowance is
/// also capped by the smoothed round trip or the minimum timeout.
const REORDER_MULT_MAX: u32 = 1 << 12;

/// A packet this side keeps until it is acknowledged.
pub(super) struct Slot {
    /// Everything but the payload and the ack, which is filled in anew at
    /// every transmission.
    pub(super) meta: Packet<'static>,
    pub(super) payload: Chunk,
    /// Last transmission, `None` before the first.
    pub(super) sent_at: Option<Time>,
    /// Transmissions beyond the first.
    pub(super) retx: u32,
    /// Reported received by a selective ack.
    pub(super) sacked: bool,
    /// Waiting in the retransmission queue.
    pub(super) queued: bool,
    /// What the peer's reorder buffer is charged for the packets pushed
    /// before this one, and with it (see `Channel::may_send_new`).
    pub(super) start: u64,
    pub(super) end: u64,
}

impl Slot {
    pub(super) fn cost(&self) -> usize {
        HEADER_LEN + self.payload.len()
    }
}

/// State of the channel with one peer.
pub(super) struct Channel {
    pub(super) peer: TaskId,
    pub(super) down: bool,
    /// The datagram format of the job ([`Config::format`]).
    pub(super) format: Format,

    // Send side: slots hold sequence numbers base .. next_seq.
    pub(super) next_seq: u64,
    pub(super) base: u64,
    pub(super) slots: VecDeque<Slot>,
    /// First sequence number never transmitted.
    pub(super) next_send: u64,
    /// Bytes held in slots (header + payload), for back-pressure.
    pub(super) buffered: usize,
    pub(super) retx: VecDeque<u64>,
    /// RACK: send time and sequence number of the most recently sent packet
    /// known delivered. Unacknowledged packets sent before it are lost once
    /// they are older than `rack_rtt` plus a reordering allowance.
    pub(super) rack: Option<(Time, u64)>,
    /// Round trip measured on the `rack` packet.
    pub(super) rack_rtt: Time,
    /// Multiplier of RACK's reordering allowance (RFC 8985 §6.2): doubled
    /// when the peer reports a duplicate (D-SACK), at most once a round
    /// trip, so that a path that reorders by more than the allowance
    /// stops resending what was only late; halved after
    /// [`REORDER_DECAY`] loss episodes without one.
    pub(super) reo_mult: u32,
    /// When `reo_mult` last grew.
    pub(super) reo_grown_at: Time,
    /// Loss episodes RACK found since the last D-SACK.
    pub(super) reo_quiet: u32,
    /// The last packets RACK resent once and nothing resent again (at
    /// most [`RACK_RESENT`]): a D-SACK of one of them shows reordering;
    /// one of a packet a timeout resent shows a slow receiver or a lost
    /// ack, and leaves the allowance alone.
    pub(super) rack_resent: VecDeque<u64>,
    pub(super) retries: u32,
    pub(super) rtt: Rtt,
    /// Operations waiting for a reply, by wire op id.
    pub(super) pending: HashMap<u32, Pending>,
    /// Ask the peer for an ACK (its replies are overdue).
    pub(super) probe: bool,
    /// Packets below this sequence number are waited for (a fence): once
    /// the last of them that can go now has gone, the peer is asked for
    /// an ACK at once instead of after its ack delay.
    pub(super) ack_wanted_below: u64,
    /// `next_send` when such a request last went: one per burst sent.
    pub(super) probed_at: u64,
    /// Set by a retransmission timeout: packets sent before it are resent
    /// once the next ack shows the path works.
    pub(super) recover_before: Option<Time>,
    /// While down: the interval to the next probe ([`Timer::Rto`]).
    pub(super) probe_every: Time,
    /// Operations failed while the peer was down whose requests it may
    /// still answer: a late NACK for one is not a second completion.
    pub(super) failed_ops: BTreeSet<u32>,

    // Receive side.
    pub(super) peer_epoch: Option<u32>,
    pub(super) recv_next: u64,
    pub(super) ooo: Reorder,
    /// A data packet received again, below the cumulative ack or already
    /// held: reported in the next ACK as a D-SACK block (RFC 2883), a
    /// block below the cumulative ack, which tells the peer that its
    /// retransmission was not needed.
    pub(super) dsack: Option<u64>,
    /// The peer's reorder budget in bytes, assumed equal to ours.
    pub(super) ooo_budget: usize,
    pub(super) unacked: u32,
    pub(super) ack_now: bool,
    /// Worst status among the fragments of the incoming operation so far.
    pub(super) in_op_status: Status,
    /// The FIFO message being joined from its fragments (at most
    /// `Config::max_fifo` bytes), the next fragment index expected, and
    /// whether a fragment out of place spoilt it.
    pub(super) fifo_part: Vec<u8>,
    pub(super) fifo_next: u16,
    pub(super) fifo_spoilt: bool,
    /// The peer's stream position when it last acknowledged us: it had
    /// queued everything below it (an unsolicited NACK, say) before. Our
    /// operations count as in flight until we received that far, so
    /// QUIET never sees a request done while its NACK is still lost.
    pub(super) owed_below: u64,

    pub(super) in_ready: bool,
    /// Delayed ack, RACK reorder and retransmission/probe deadlines.
    pub(super) timers: Timers,
}

impl Channel {
    pub(super) fn new(peer: TaskId, cfg: &Config) -> Self {
        Self {
            peer,
            down: false,
            format: cfg.format,
            next_seq: 1,
            base: 1,
            slots: VecDeque::new(),
            next_send: 1,
            buffered: 0,
            retx: VecDeque::new(),
            rack: None,
            rack_rtt: 0,
            reo_mult: 1,
            reo_grown_at: 0,
            reo_quiet: 0,
            rack_resent: VecDeque::new(),
            retries: 0,
            rtt: Rtt::new(cfg.initial_rto, cfg.min_rto, cfg.max_rto),
            pending: HashMap::new(),
            probe: false,
            ack_wanted_below: 0,
            probed_at: 0,
            recover_before: None,
            probe_every: 0,
            failed_ops: BTreeSet::new(),
            peer_epoch: None,
            recv_next: 1,
            ooo: Reorder::default(),
            dsack: None,
            ooo_budget: cfg.ooo_bytes,
            unacked: 0,
            ack_now: false,
            in_op_status: Status::Ok,
            fifo_part: Vec::new(),
            fifo_next: 0,
            fifo_spoilt: false,
            owed_below: 0,
            in_ready: false,
            timers: Timers::default(),
        }
    }

    /// Forgets everything but the peer's identity, as after a restart.
    pub(super) fn reset(&mut self, cfg: &Config) {
        let (peer, in_ready, mut timers) = (self.peer, self.in_ready, self.timers);
        *self = Self::new(peer, cfg);
        self.in_ready = in_ready;
        // The deadlines go; what the endpoint's table holds for this
        // channel stays, for the table to update.
        timers.stop_all();
        self.timers = timers;
    }

    /// Appends a packet to the send stream and returns its sequence number.
    pub(super) fn push(&mut self, mut meta: Packet<'static>, payload: Chunk) -> u64 {
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
    pub(super) fn in_flight(&self) -> usize {
        if self.down {
            0
        } else {
            self.slots.len() + self.pending.len() + usize::from(self.recv_next < self.owed_below)
        }
    }

    pub(super) fn wants_send(&self, window: u32) -> bool {
        if self.down {
            return self.probe;
        }
        !self.retx.is_empty()
            || self.may_send_new(window)
            || self.ack_now
            || self.probe
            || self.owes_ack_request()
    }

    /// True when a fence waits for packets sent since the last request
    /// for an ACK: the peer would otherwise hold its ACK for its ack delay
    /// (nothing of ours may come to piggyback on), and the fence with it.
    fn owes_ack_request(&self) -> bool {
        !self.down
            && self.base < self.ack_wanted_below
            && self.next_send > self.base
            && self.probed_at < self.next_send
    }

    /// Asks for an ACK of every packet queued so far as soon as the last
    /// of them that the window lets go has gone; true when some are not
    /// yet acknowledged (a request will go).
    pub(super) fn want_ack(&mut self) -> bool {
        if self.down || self.base >= self.next_seq {
            return false;
        }
        self.ack_wanted_below = self.ack_wanted_below.max(self.next_seq);
        true
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
        self.timers.stop(Timer::Ack);
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
    /// reordered), and arms [`Timer::Hole`] for the ones still too young.
    /// Works per packet, retransmissions and the last fragments of a
    /// message included, so no loss waits for the retransmission timer
    /// while later packets get through. Returns how many it presumed lost.
    pub(super) fn scan_holes(&mut self, now: Time) -> u64 {
        self.timers.stop(Timer::Hole);
        let Some(rack) = self.rack else { return 0 };
        let mut lost = 0;
        let wait = self.rack_rtt + self.rtt.reorder_window(self.rack_rtt, self.reo_mult);
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
                if self.rack_resent.len() == RACK_RESENT {
                    self.rack_resent.pop_front();
                }
                self.rack_resent.push_back(seq);
                lost += 1;
            } else {
                let at = self.timers.get(Timer::Hole).map_or(due, |h| h.min(due));
                self.timers.set(Timer::Hole, at);
            }
        }
        if lost > 0 {
            self.reo_quiet += 1;
            if self.reo_quiet >= REORDER_DECAY {
                self.reo_quiet = 0;
                self.reo_mult = (self.reo_mult / 2).max(1);
            }
        }
        lost
    }

    /// The peer reported receiving `seq` twice: if RACK resent it, widen
    /// the reordering allowance.
    fn duplicate_reported(&mut self, now: Time, seq: u64) {
        if !self.rack_resent.contains(&seq) {
            return;
        }
        self.reo_quiet = 0;
        if self.reo_mult == 1 || now >= self.reo_grown_at.saturating_add(self.rtt.srtt()) {
            self.reo_mult = (self.reo_mult * 2).min(REORDER_MULT_MAX);
            self.reo_grown_at = now;
        }
    }

    fn arm_rto(&mut self, now: Time) {
        if self.timers.get(Timer::Rto).is_none() {
            self.timers.set(Timer::Rto, now + self.rtt.rto());
        }
    }

    /// Writes the next datagram for this peer into `out`, if any is due.
    pub(super) fn next_packet(
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
            if self.slots[i].retx > 0 {
                // Sent a third time: a D-SACK of it says nothing about
                // reordering.
                self.rack_resent.retain(|&s| s != seq);
            }
            let slot = &mut self.slots[i];
            emit_slot(slot, ack, self.format, out);
            slot.sent_at = Some(now);
            slot.retx += 1;
            stats.retransmissions += 1;
            self.arm_rto(now);
            return true;
        }
        if !self.down && self.may_send_new(window) {
            let ack = self.piggybacked();
            let slot = &mut self.slots[(self.next_send - self.base) as usize];
            emit_slot(slot, ack, self.format, out);
            slot.sent_at = Some(now);
            self.next_send += 1;
            self.arm_rto(now);
            return true;
        }
        if self.owes_ack_request() {
            self.probe = true;
            self.probed_at = self.next_send;
        }
        if self.ack_now || self.probe {
            let probe = std::mem::take(&mut self.probe);
            let ack = self.piggybacked();
            let mut blocks: Vec<(u32, u32)> = Vec::new();
            if let Some(d) = self.dsack.take() {
                blocks.push((d as u32, (d + 1) as u32));
            }
            let first = blocks.len();
            for &s in self.ooo.keys() {
                match blocks[first..].last_mut() {
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
                // Our stream position: everything queued before this ACK
                // (replies, NACKs) is below it.
                op: self.next_seq as u32,
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
            emit_into(&p, self.format, out);
            stats.acks_sent += 1;
            return true;
        }
        false
    }
}

impl Endpoint {
    pub(super) fn process_ack(&mut self, ci: usize, now: Time, ack_wire: u32, pkt: &Packet<'_>) {
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
        // Whether this ack covers a packet sent only once, before the
        // timeout that is being recovered from (if any).
        let before = c.recover_before;
        let mut original = false;
        let mut note = |seq: u64, slot: &Slot| {
            if let Some(t) = slot.sent_at {
                original |= slot.retx == 0 && before.is_some_and(|b| t <= b);
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
        let mut reported = None;
        for (s, e) in pkt.sack_blocks() {
            // A block wholly below the cumulative ack is a D-SACK.
            let (ds, de) = (unwrap_seq(c.base, s), unwrap_seq(c.base, e));
            if de <= ack && ds < de {
                reported = Some(ds);
                continue;
            }
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
        if let Some(seq) = reported {
            self.stats.dsacks += 1;
            c.duplicate_reported(now, seq);
        }
        if progress || c.slots.is_empty() {
            // Hearing from the peer with nothing of ours unacknowledged is
            // progress too: it is alive and owes only replies.
            c.retries = 0;
            c.rtt.reset_backoff();
            if c.next_send > c.base || !c.pending.is_empty() {
                c.timers.set(Timer::Rto, now + c.rtt.rto());
            } else {
                c.timers.stop(Timer::Rto);
            }
        }
        // After a timeout, the first ack that shows the path works marks
        // every packet still unacknowledged from before the timeout lost,
        // unless it acknowledges a packet sent only once, before the
        // timeout: the first transmissions are getting through (the
        // receiver or the path was only slow; as F-RTO, RFC 5682), and
        // RACK finds what is missing among them.
        if progress {
            if let Some(t) = c.recover_before.take() {
                if original {
                    self.stats.spurious_timeouts += 1;
                } else {
                    for seq in c.base..c.next_send {
                        let slot = &mut c.slots[(seq - c.base) as usize];
                        if !slot.sacked && !slot.queued && slot.sent_at.is_some_and(|s| s <= t) {
                            slot.queued = true;
                            c.retx.push_back(seq);
                            self.stats.timeout_lost += 1;
                        }
                    }
                }
            }
        }
        self.stats.rack_lost += c.scan_holes(now);
        if c.wants_send(self.cfg.window) {
            self.mark_ready(ci);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{unwrap_seq, Chunk, Pool, INLINE};

    /// A small payload is kept in its chunk (no allocation per small
    /// operation); a larger one is one shared copy cut into ranges.
    #[test]
    fn small_payloads_are_inline_and_large_ones_shared() {
        let mut pool = Pool::default();
        let small = [7u8; INLINE];
        let mut got = Vec::new();
        Chunk::split(&small, 1392, 1, &mut pool, |i, c| got.push((i, c)));
        assert_eq!(got.len(), 1);
        assert!(matches!(got[0].1, Chunk::Inline { .. }));
        assert_eq!(&got[0].1[..], &small[..]);
        assert!(matches!(
            Chunk::from(vec![1u8; INLINE + 1]),
            Chunk::Shared { .. }
        ));
        assert!(matches!(Chunk::from(&[][..]), Chunk::Inline { len: 0, .. }));
        let big: Vec<u8> = (0..3000u32).map(|i| i as u8).collect();
        got.clear();
        Chunk::split(&big, 1392, 3, &mut pool, |i, c| got.push((i, c)));
        let joined: Vec<u8> = got.iter().flat_map(|(_, c)| c.iter().copied()).collect();
        assert_eq!(joined, big);
        assert!(got.iter().all(|(_, c)| matches!(c, Chunk::Shared { .. })));
        assert_eq!(got.iter().map(|(i, _)| *i).collect::<Vec<_>>(), [0, 1, 2]);
    }

    #[test]
    fn unwrap_picks_the_nearest_value() {
        assert_eq!(unwrap_seq(10, 12), 12);
        assert_eq!(unwrap_seq(10, 8), 8);
        assert_eq!(unwrap_seq(0xffff_fff0, 5), 0x1_0000_0005);
        assert_eq!(unwrap_seq(0x1_0000_0005, 0xffff_fff0), 0xffff_fff0);
        assert_eq!(unwrap_seq(1, 0xffff_ffff), 0);
    }
}
