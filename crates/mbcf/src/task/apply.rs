//! The applier: checks incoming operations against the segment table
//! and applies them to this task's memory; queues signals.

use super::Handler;
use crate::fifo::{Ring, FIFO_HEADER};
use crate::segment::{Perm, SegTable};
use foldhash::HashMap;
use sss_proto::{Body, Outcome, Packet, Target};
use sss_wire::Status;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// Applies incoming operations to this task's memory after checking them.
pub(super) struct Applier<'a> {
    pub(super) segs: &'a SegTable,
    pub(super) handlers: &'a HashMap<u32, Handler>,
    pub(super) signal_key: u64,
    /// This task's same-node signal ring.
    pub(super) ring: Ring,
    pub(super) signals: &'a mut Vec<(u32, u32, Vec<u8>)>,
}

/// Moves every signal queued in `ring` so far to `signals`, oldest first.
/// A slot claimed but still being filled is waited for (a while): its
/// sender pushed it before anything it sends later. Receiver only (under
/// the net lock).
pub(super) fn drain_signal_ring(ring: &Ring, signals: &mut Vec<(u32, u32, Vec<u8>)>) {
    let mut msg = Vec::new();
    let mut deadline = None;
    for _ in 0..ring.len() {
        let from = loop {
            if let Some(f) = ring.pop(&mut msg) {
                break f;
            }
            let d = *deadline.get_or_insert_with(|| Instant::now() + Duration::from_secs(1));
            if Instant::now() >= d {
                return;
            }
            std::thread::yield_now();
        };
        if msg.len() >= 4 {
            let h = u32::from_le_bytes([msg[0], msg[1], msg[2], msg[3]]);
            signals.push((from, h, msg[4..].to_vec()));
        }
    }
}

impl Target for Applier<'_> {
    fn apply(&mut self, p: &Packet<'_>) -> Outcome {
        match self.apply_checked(p) {
            Ok(o) => o,
            Err(s) => Outcome::Failed(s),
        }
    }
}

impl Applier<'_> {
    fn apply_checked(&mut self, p: &Packet<'_>) -> Result<Outcome, Status> {
        let segs = self.segs;
        match p.body {
            Body::Write { notify } => {
                let dst = segs.check(p.key, p.addr, p.payload.len(), Perm::WRITE)?;
                // Check the counter before storing, so a bad notify leaves
                // memory untouched.
                let counter = match notify {
                    Some(n) => Some((segs.check_word(n.key, n.addr, Perm::WRITE)?, n.addend)),
                    None => None,
                };
                dst.write(p.payload);
                if let Some((c, add)) = counter {
                    // Release: the data above is visible before the bump.
                    c.word().fetch_add(add, Ordering::Release);
                    super::after_notify();
                }
                Ok(Outcome::Done)
            }
            Body::Multicast { .. } => {
                segs.check_offset(p.key, p.addr, p.payload.len(), Perm::WRITE)?
                    .write(p.payload);
                Ok(Outcome::Done)
            }
            Body::Read { len } => Ok(Outcome::Data(
                segs.check(p.key, p.addr, len as usize, Perm::READ)?
                    .to_vec(),
            )),
            Body::Swap { operand } => Ok(Outcome::Value(
                segs.check_word(p.key, p.addr, Perm::ATOMIC)?
                    .word()
                    .swap(operand, Ordering::AcqRel),
            )),
            Body::Cas { expected, new } => {
                let w = segs.check_word(p.key, p.addr, Perm::ATOMIC)?.word();
                Ok(Outcome::Value(
                    match w.compare_exchange(expected, new, Ordering::AcqRel, Ordering::Acquire) {
                        Ok(v) | Err(v) => v,
                    },
                ))
            }
            Body::FetchAdd { operand } => Ok(Outcome::Value(
                segs.check_word(p.key, p.addr, Perm::ATOMIC)?
                    .word()
                    .fetch_add(operand, Ordering::AcqRel),
            )),
            Body::Fifo => {
                let head = segs.check(p.key, p.addr, FIFO_HEADER, Perm::WRITE)?;
                let ring = Ring::open(head, |total| segs.check(p.key, p.addr, total, Perm::WRITE))?;
                ring.push(p.src.rank, p.payload)?;
                Ok(Outcome::Done)
            }
            Body::Signal { handler } => {
                if p.key != self.signal_key {
                    return Err(Status::BadKey);
                }
                if !self.handlers.contains_key(&handler) {
                    return Err(Status::NoSuchHandler);
                }
                // A same-node sender whose ring push found the ring full
                // sends over udp: what it queued in the ring goes first.
                drain_signal_ring(&self.ring, self.signals);
                self.signals.push((p.src.rank, handler, p.payload.to_vec()));
                Ok(Outcome::Done)
            }
            _ => Err(Status::Unsupported),
        }
    }
}
