//! Incoming operations applied through the [`Target`] and answered, and
//! replies received: operations waiting for one, READ data reassembled at
//! the origin, completions raised.

use super::channel::Chunk;
use super::packetize::{emit_into, request_meta};
use super::timer::Timer;
use super::Endpoint;
use crate::{Completion, Event, McastId, Op, OpId, Outcome, Target, Time};
use sss_wire::{Body, Frag, Packet, Status};

/// What an operation waiting for its reply expects.
pub(super) enum Pending {
    /// A STATUS (ACK/NACK).
    Status,
    /// An ATOMIC_REPLY.
    Atomic,
    /// READ_REPLY fragments, gathered here.
    Read { buf: Vec<u8> },
}

impl Pending {
    /// What `op` waits for once it asked for a reply.
    pub(super) fn for_op(op: &Op<'_>) -> Self {
        match *op {
            Op::Read { len, .. } => Pending::Read {
                buf: vec![0; len as usize],
            },
            Op::Swap { .. } | Op::Cas { .. } | Op::FetchAdd { .. } => Pending::Atomic,
            _ => Pending::Status,
        }
    }
}

impl Endpoint {
    /// Sends a reply to request `req` from channel `ci`'s peer: reliable for
    /// a reliable request, no-flow-control for a no-flow-control one.
    pub(super) fn reply(
        &mut self,
        ci: usize,
        req: &Packet<'_>,
        body: Body,
        status: Status,
        payload: Vec<u8>,
    ) {
        let mut meta = request_meta(self.local, req.src, self.cfg.epoch, body);
        meta.op = req.op;
        meta.status = status;
        self.send_meta(ci, meta, payload, req.flags.nofc);
    }

    pub(super) fn send_meta(
        &mut self,
        ci: usize,
        mut meta: Packet<'static>,
        payload: Vec<u8>,
        nofc: bool,
    ) {
        if nofc {
            meta.flags.nofc = true;
            let p = Packet {
                payload: &payload,
                ..meta
            };
            let mut out = Vec::new();
            emit_into(&p, self.cfg.format, &mut out);
            self.nofc_out.push_back((meta.dst, out));
        } else {
            self.chans[ci].push(meta, payload.into());
            self.mark_ready(ci);
        }
    }
    pub(super) fn deliver<T: Target + ?Sized>(
        &mut self,
        ci: usize,
        now: Time,
        pkt: &Packet<'_>,
        target: &mut T,
    ) {
        match pkt.body {
            Body::Fifo if pkt.frag.count > 1 => self.fifo_fragment(ci, pkt, target),
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

    pub(super) fn apply<T: Target + ?Sized>(
        &mut self,
        pkt: &Packet<'_>,
        target: &mut T,
    ) -> Outcome {
        let out = target.apply(pkt);
        if matches!(out, Outcome::Failed(_)) {
            self.stats.rejected += 1;
        } else {
            self.stats.applied += 1;
        }
        out
    }

    /// One fragment of a FIFO message: joined with the ones before it
    /// (in order, as the channel delivers them) and the whole message
    /// applied at the last. A fragment out of place or past
    /// [`crate::Config::max_fifo`] spoils the message, which is refused
    /// (`TooLarge`) instead of applied.
    fn fifo_fragment<T: Target + ?Sized>(&mut self, ci: usize, pkt: &Packet<'_>, target: &mut T) {
        let max = self.cfg.max_fifo;
        let c = &mut self.chans[ci];
        if pkt.frag.index == 0 {
            c.fifo_part.clear();
            c.fifo_spoilt = false;
            c.fifo_next = 0;
        }
        // Never sent by a sender that follows the protocol: a message in
        // fragments always goes with flow control.
        if pkt.flags.nofc
            || pkt.frag.index != c.fifo_next
            || c.fifo_part.len() + pkt.payload.len() > max
        {
            c.fifo_spoilt = true;
        } else {
            c.fifo_part.extend_from_slice(pkt.payload);
        }
        c.fifo_next = pkt.frag.index.wrapping_add(1);
        if !pkt.frag.is_last() || pkt.flags.nofc {
            return;
        }
        let whole = std::mem::take(&mut c.fifo_part);
        let status = if c.fifo_spoilt {
            self.stats.rejected += 1;
            Status::TooLarge
        } else {
            let p = Packet {
                payload: &whole,
                frag: Frag::SINGLE,
                ..*pkt
            };
            match self.apply(&p, target) {
                Outcome::Failed(s) => s,
                _ => Status::Ok,
            }
        };
        let c = &mut self.chans[ci];
        c.fifo_part = whole;
        c.fifo_part.clear();
        c.fifo_next = 0;
        if !status.is_ok() || pkt.flags.status_return {
            self.reply(ci, pkt, Body::Status, status, Vec::new());
        }
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
        if req.flags.nofc {
            let mut meta = request_meta(self.local, req.src, self.cfg.epoch, Body::ReadReply);
            meta.op = req.op;
            meta.frag = Frag::SINGLE;
            self.send_meta(ci, meta, data, true);
            return;
        }
        // The fragments share one (pooled) copy, as a WRITE's do: one
        // allocation and no page faults for a large reply, not one
        // allocation and copy per packet.
        let (local, epoch, chan) = (self.local, self.cfg.epoch, &mut self.chans[ci]);
        Chunk::split(&data, ps, count, &mut self.pool, |i, chunk| {
            let mut meta = request_meta(local, req.src, epoch, Body::ReadReply);
            meta.op = req.op;
            meta.addr = (i * ps) as u64;
            meta.frag = Frag {
                index: i as u16,
                count: count16,
            };
            chan.push(meta, chunk);
        });
        self.stats.pooled_reuses = self.pool.reused;
        self.mark_ready(ci);
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
                c.timers.stop(Timer::Rto);
            }
        }
        self.events.push_back(Event::Completed { op, result });
    }
}
