//! Choosing a transport per peer and submitting an operation.

use super::{keep_error, status_error, Inner, Options, Reply, ReqState, Request};
use crate::shm::Direct;
use crate::Error;
use sss_proto::{Op, OpOptions, SubmitError};
use sss_wire::TaskId;
use std::sync::atomic::Ordering;
use std::sync::Arc;

impl Inner {
    pub(super) fn submit(
        self: &Arc<Self>,
        rank: u32,
        op: Op<'_>,
        opts: Options,
    ) -> Result<Request, Error> {
        if self.shutdown.load(Ordering::Relaxed) {
            return Err(Error::Shutdown);
        }
        if rank >= self.size {
            return Err(Error::NoSuchTask(rank));
        }
        let status_return = opts.status_return || opts.sink.is_some();
        let popts = OpOptions {
            status_return,
            nofc: opts.nofc,
        };
        let tracked = status_return
            || matches!(
                op,
                Op::Read { .. } | Op::Swap { .. } | Op::Cas { .. } | Op::FetchAdd { .. }
            );
        let dst = TaskId::new(self.job, rank);
        if let Some(peer) = &self.shm_peers[rank as usize] {
            // Keep issue order with earlier operations that went over udp.
            if self.udp_used[rank as usize].load(Ordering::Acquire)
                && self.lock_net().ep.in_flight(dst) > 0
            {
                self.wait_until(|| self.lock_net().ep.in_flight(dst) == 0, None);
            }
            let mut p = peer.lock().unwrap_or_else(|e| e.into_inner());
            if let Direct::Done(r) = p.apply(self.rank, &op) {
                if matches!(op, Op::Signal { .. }) && p.asleep() {
                    // Doorbell: a one-byte datagram wakes its poll.
                    let _ = self
                        .sock
                        .send_to(&crate::shm::DOORBELL, self.peers[rank as usize].addr);
                }
                drop(p);
                if r.is_ok() {
                    self.prewake(rank);
                }
                let r = r.map_err(|s| status_error(s, rank));
                let state = match r {
                    Ok(Reply::Done) if !tracked => None,
                    Err(e) if !tracked => {
                        // Like a NACK for an operation without status
                        // return: reported by fence/quiet.
                        if let Ok(mut errs) = self.errors.lock() {
                            keep_error(&mut errs, e);
                        }
                        None
                    }
                    r => {
                        let st = ReqState::new(opts.sink);
                        st.complete(r, &self.errors);
                        Some(st)
                    }
                };
                return Ok(Request {
                    state,
                    inner: self.clone(),
                });
            }
        }
        self.udp_used[rank as usize].store(true, Ordering::Release);
        let mut net = self.lock_net();
        // Nagle-like: with earlier operations to this peer still in
        // flight, hold new packets back (their ack, a timer or a wait will
        // flush them) so that a stream leaves in GSO batches; an operation
        // to an idle peer leaves at once.
        let busy = net.ep.unacked_sent(dst) > 0;
        let id = loop {
            match net.ep.submit(self.now(), dst, op, popts) {
                Ok(id) => break id,
                Err(SubmitError::WouldBlock) => {
                    // Whatever was held back for batching must leave now,
                    // or nothing would ever make room.
                    self.flush(&mut net);
                    drop(net);
                    self.wait_progress();
                    net = self.lock_net();
                }
                Err(SubmitError::PeerDown) => return Err(Error::PeerDown(rank)),
                Err(SubmitError::Invalid) => {
                    return Err(Error::Invalid("operation too large or malformed"))
                }
                Err(_) => return Err(Error::Invalid("operation refused")),
            }
        };
        let state = tracked.then(|| {
            let st = ReqState::new(opts.sink);
            net.reqs.insert(id, st.clone());
            st
        });
        net.held += 1;
        if !busy || net.held >= 32 || opts.nofc {
            self.flush(&mut net);
        } else {
            self.maybe_held.store(true, Ordering::Release);
        }
        drop(net);
        self.wake_if_needed();
        Ok(Request {
            state,
            inner: self.clone(),
        })
    }
}
