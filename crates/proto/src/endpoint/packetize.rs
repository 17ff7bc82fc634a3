//! Operations cut into packets: submit (reliable and no-flow-control),
//! fragmentation, packet headers, and encoding into datagrams.

use super::channel::{Chunk, Slot};
use super::pool::Pool;
use super::reply::Pending;
use super::Endpoint;
use crate::{Op, OpId, OpOptions, SubmitError, Time};
use sss_wire::{Body, Flags, Format, Frag, Packet, Status, TaskId, HEADER_LEN};

/// Appends the datagram of `p` to `out`, in `format`.
pub(super) fn emit_into(p: &Packet<'_>, format: Format, out: &mut Vec<u8>) {
    let start = out.len();
    out.resize(start + p.buffer_len(), 0);
    // Packets built here always satisfy emit's checks (fragment fields,
    // arity, payload sizes are validated at submit), so this cannot fail;
    // an empty datagram would merely be dropped by the peer.
    if p.emit_as(&mut out[start..], format).is_err() {
        out.truncate(start);
    }
}

pub(super) fn emit_slot(slot: &Slot, ack: Option<u32>, format: Format, out: &mut Vec<u8>) {
    let p = Packet {
        ack,
        payload: &slot.payload[..],
        ..slot.meta
    };
    emit_into(&p, format, out);
}

pub(super) fn request_meta(local: TaskId, dst: TaskId, epoch: u32, body: Body) -> Packet<'static> {
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
            // A FIFO message longer than a packet goes in fragments, up
            // to the receiver's limit (assumed to be ours).
            Op::Fifo { data, .. } if data.len() > ps => {
                if data.len() > self.cfg.max_fifo {
                    return Err(SubmitError::Invalid);
                }
                self.frags_for(data.len()).ok_or(SubmitError::Invalid)?
            }
            Op::Signal { data, .. } if data.len() > ps => return Err(SubmitError::Invalid),
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
        let send_buffer = self.cfg.send_buffer;
        let c = &self.chans[ci];
        if c.down {
            return Err(SubmitError::PeerDown);
        }
        if c.buffered > 0 && c.buffered + cost > send_buffer {
            return Err(SubmitError::WouldBlock);
        }
        let id = c.next_seq as u32;
        let cut = self.cut(dst, id, opts, false, frags);
        let c = &mut self.chans[ci];
        build_packets(&cut, op, &mut self.pool, |m, p| {
            c.push(m, p);
        });
        self.stats.pooled_reuses = self.pool.reused;
        if op.has_reply() || opts.status_return {
            let p = Pending::for_op(&op);
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
        let cut = self.cut(dst, id, opts, true, 1);
        let format = self.cfg.format;
        let out_q = &mut self.nofc_out;
        build_packets(&cut, op, &mut self.pool, |meta, payload| {
            let p = Packet {
                payload: &payload[..],
                ..meta
            };
            let mut out = Vec::new();
            emit_into(&p, format, &mut out);
            out_q.push_back((dst, out));
        });
        if op.has_reply() || opts.status_return {
            let p = Pending::for_op(&op);
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
}

impl Endpoint {
    /// How operation `id` to `dst` is cut into `frags` packets.
    fn cut(&self, dst: TaskId, id: u32, opts: OpOptions, nofc: bool, frags: u16) -> Cut {
        Cut {
            local: self.local,
            dst,
            epoch: self.cfg.epoch,
            id,
            flags: Flags {
                nofc,
                status_return: opts.status_return,
            },
            ps: self.cfg.payload_size,
            frags,
        }
    }
}

/// Where and how an operation is cut into packets.
struct Cut {
    local: TaskId,
    dst: TaskId,
    epoch: u32,
    /// The operation's id.
    id: u32,
    flags: Flags,
    /// Payload bytes per packet.
    ps: usize,
    /// Packets the operation takes.
    frags: u16,
}

/// Cuts an operation into its packets (all but sequence numbers filled
/// in), handing each to `push` in order.
fn build_packets(
    cut: &Cut,
    op: Op<'_>,
    pool: &mut Pool,
    mut push: impl FnMut(Packet<'static>, Chunk),
) {
    let (ps, frags) = (cut.ps, cut.frags);
    let meta = |body: Body, key: u64, addr: u64| {
        let mut m = request_meta(cut.local, cut.dst, cut.epoch, body);
        m.op = cut.id;
        m.flags = cut.flags;
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
            Chunk::split(data, ps, frags as usize, pool, |i, chunk| {
                let last = i + 1 == frags as usize;
                let mut m = meta(
                    Body::Write {
                        notify: if last { notify } else { None },
                    },
                    key,
                    addr.wrapping_add((i * ps) as u64),
                );
                m.frag = Frag {
                    index: i as u16,
                    count: frags,
                };
                push(m, chunk);
            });
        }
        Op::Read { key, addr, len } => push(meta(Body::Read { len }, key, addr), Chunk::default()),
        Op::Swap { key, addr, operand } => {
            push(meta(Body::Swap { operand }, key, addr), Chunk::default())
        }
        Op::Cas {
            key,
            addr,
            expected,
            new,
        } => push(
            meta(Body::Cas { expected, new }, key, addr),
            Chunk::default(),
        ),
        Op::FetchAdd { key, addr, operand } => push(
            meta(Body::FetchAdd { operand }, key, addr),
            Chunk::default(),
        ),
        // Every fragment names the queue; their order places the bytes.
        Op::Fifo { key, addr, data } if frags > 1 => {
            let ps = ps.max(1);
            Chunk::split(data, ps, frags as usize, pool, |i, chunk| {
                let mut m = meta(Body::Fifo, key, addr);
                m.frag = Frag {
                    index: i as u16,
                    count: frags,
                };
                push(m, chunk);
            });
        }
        Op::Fifo { key, addr, data } => push(meta(Body::Fifo, key, addr), data.into()),
        Op::Signal { key, handler, data } => {
            push(meta(Body::Signal { handler }, key, 0), data.into())
        }
    }
}
