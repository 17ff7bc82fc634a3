//! The `udp` lane: the protocol endpoint over the task's socket,
//! source-address checks, and sending what the endpoint has due in GSO
//! batches.
//!
//! Reliable and ordered per peer (acknowledged, retransmitted, applied
//! once in issue order), except operations without flow control, sent
//! once. It reaches every peer and declines nothing. A tracked operation
//! completes later: the endpoint reports its completion as an event, and
//! the progress engine (`progress.rs`, `handle_events`) completes the
//! request's state, registered here under the same lock.

use super::transport::{Carried, Lane, Submission, TransportKind};
use super::{Inner, PeerInfo, ReqState};
use crate::sys::{self};
use crate::Error;
use foldhash::HashMap;
use sss_proto::{Endpoint, McastId, OpId, SubmitError};
use sss_seal::Seals;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// The rank behind each udp source address, so that a datagram's claimed
/// source can be checked against where it came from.
pub(super) struct Senders {
    /// Addresses of a job of up to [`FEW_SENDERS`] peers, scanned rather
    /// than hashed: every received datagram is looked up.
    few: Vec<(SocketAddr, u32)>,
    /// Addresses of a larger job.
    by_addr: HashMap<SocketAddr, u32>,
    /// Tasks bound to an unspecified address are known by port alone.
    by_port: HashMap<u16, u32>,
}

/// Peers up to this many are found by a scan rather than a hash.
const FEW_SENDERS: usize = 16;

impl Senders {
    pub(super) fn new(peers: &[PeerInfo]) -> Self {
        let (wild, addrs): (Vec<_>, Vec<_>) = peers
            .iter()
            .enumerate()
            .map(|(r, p)| (p.addr, r as u32))
            .partition(|(a, _)| a.ip().is_unspecified());
        let by_port = wild.into_iter().map(|(a, r)| (a.port(), r)).collect();
        if addrs.len() <= FEW_SENDERS {
            Self {
                few: addrs,
                by_addr: HashMap::default(),
                by_port,
            }
        } else {
            Self {
                few: Vec::new(),
                by_addr: addrs.into_iter().collect(),
                by_port,
            }
        }
    }

    pub(super) fn rank(&self, a: SocketAddr) -> Option<u32> {
        self.few
            .iter()
            .find(|(x, _)| *x == a)
            .map(|&(_, r)| r)
            .or_else(|| self.by_addr.get(&a).copied())
            .or_else(|| self.by_port.get(&a.port()).copied())
    }
}

pub(super) struct Net {
    pub(super) ep: Endpoint,
    pub(super) reqs: HashMap<OpId, Arc<ReqState>>,
    pub(super) mreqs: HashMap<McastId, Arc<ReqState>>,
    /// xorshift state of the fault injector.
    pub(super) rng: u64,
    /// Datagrams gathered for one flush, in runs of one size.
    pub(super) batch: Vec<u8>,
    /// The runs of `batch` (kept for its allocation).
    pub(super) runs: Vec<sys::Run>,
    /// Whether the kernel takes GSO sends.
    pub(super) gso: bool,
    /// Operations submitted since the last flush (held back while earlier
    /// ones are in flight, so they leave in batches).
    pub(super) held: usize,
    /// Keys, counters and replay windows of sealed datagrams; `None`
    /// under `SSS_SECURITY=none`.
    pub(super) seals: Option<Seals>,
}

impl Net {
    /// A uniform draw in [0, 1).
    fn draw(&mut self) -> f64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        (self.rng >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Whether a send failed because the kernel or the path takes no UDP
/// GSO (then datagrams go one by one from now on).
fn no_gso(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EINVAL | libc::EIO | libc::EOPNOTSUPP | libc::ENOPROTOOPT)
    )
}

/// Bytes a flush gathers before it sends them.
const SEND_BYTES: usize = 256 << 10;

/// The `udp` lane. Stateless: the endpoint and the socket are the task's,
/// shared by every peer.
pub(super) struct UdpLane;

impl Lane for UdpLane {
    fn kind(&self) -> TransportKind {
        TransportKind::Udp
    }

    fn submit(&self, task: &Inner, sub: &Submission<'_>) -> Result<Carried, Error> {
        let (rank, dst) = (sub.rank, sub.dst);
        task.udp_used[rank as usize].store(true, Ordering::Release);
        let mut net = task.lock_net();
        // Nagle-like: with earlier operations to this peer still in
        // flight, hold new packets back (their ack, a timer or a wait will
        // flush them) so that a stream leaves in GSO batches; an operation
        // to an idle peer leaves at once.
        let busy = net.ep.unacked_sent(dst) > 0;
        let mut now = task.now();
        let id = loop {
            match net.ep.submit(now, dst, sub.op, sub.opts) {
                Ok(id) => break id,
                Err(SubmitError::WouldBlock) => {
                    // Whatever was held back for batching must leave now,
                    // or nothing would ever make room.
                    task.flush(&mut net);
                    drop(net);
                    task.wait_progress();
                    net = task.lock_net();
                    now = task.now();
                }
                Err(SubmitError::PeerDown) => return Err(Error::PeerDown(rank)),
                Err(SubmitError::Invalid) => {
                    return Err(Error::Invalid("operation too large or malformed"))
                }
                Err(_) => return Err(Error::Invalid("operation refused")),
            }
        };
        let state = sub.tracked.then(|| {
            let st = ReqState::new(sub.sink);
            net.reqs.insert(id, st.clone());
            st
        });
        net.held += 1;
        if !busy || net.held >= 32 || sub.opts.nofc {
            task.flush_at(&mut net, now);
        } else {
            task.maybe_held.store(true, Ordering::Release);
        }
        // Read under the lock already held, not a second one.
        let next = net.ep.poll_timeout();
        drop(net);
        task.wake_before(next);
        Ok(Carried::Pending(state))
    }
}

impl Inner {
    /// Sends everything the endpoint has due, from the calling thread.
    pub(super) fn flush(&self, net: &mut Net) {
        self.flush_at(net, self.now());
    }

    /// [`Inner::flush`] at `now`, a clock reading the caller just took.
    pub(super) fn flush_at(&self, net: &mut Net, now: u64) {
        let (drop_p, dup_p) = (self.cfg.fault_drop, self.cfg.fault_dup);
        net.held = 0;
        self.maybe_held.store(false, Ordering::Release);
        // Datagrams are built in place at the end of the batch, in runs of
        // one size to one peer (only a run's last may be shorter: a GSO
        // message); every run of the batch leaves in one `sendmmsg`, so a
        // stream of WRITEs whose last fragments are short does not cost a
        // system call per WRITE.
        let mut batch = std::mem::take(&mut net.batch);
        let mut runs = std::mem::take(&mut net.runs);
        batch.clear();
        runs.clear();
        let mut run_start = 0usize;
        let mut to: Option<SocketAddr> = None;
        let mut seg = 0usize;
        let mut closed = false;
        loop {
            let start = batch.len();
            let Some(dst) = net.ep.poll_transmit_append(now, &mut batch) else {
                break;
            };
            // Sealed here, at transmission: a retransmission is a new
            // transmission, with a counter of its own.
            if let Some(s) = net.seals.as_mut() {
                if s.seal(&mut batch, start).is_err() {
                    batch.truncate(start);
                    continue;
                }
            }
            let len = batch.len() - start;
            let addr = (dst.job == self.job)
                .then(|| self.peers.get(dst.rank as usize))
                .flatten()
                .map(|p| p.addr);
            let copies = if drop_p > 0.0 && net.draw() < drop_p {
                0
            } else if dup_p > 0.0 && net.draw() < dup_p {
                2
            } else {
                1
            };
            let Some(addr) = addr.filter(|_| len > 0 && copies > 0) else {
                batch.truncate(start);
                continue;
            };
            // One GSO message carries datagrams of one size to one peer;
            // only the last may be shorter.
            let in_run = start - run_start;
            let fits = to == Some(addr)
                && !closed
                && len <= seg
                && in_run + len <= 60_000
                && in_run / seg.max(1) < 64;
            if !fits {
                if let Some(a) = to.filter(|_| start > run_start) {
                    runs.push(sys::Run {
                        off: run_start,
                        len: start - run_start,
                        seg: seg as u16,
                        dst: a,
                    });
                }
                if start >= SEND_BYTES {
                    // Enough waits: send it, keep the new datagram.
                    self.send_runs(net, &batch, &runs);
                    runs.clear();
                    batch.copy_within(start.., 0);
                    batch.truncate(len);
                    run_start = 0;
                } else {
                    run_start = start;
                }
                to = Some(addr);
                seg = len;
                closed = false;
            }
            closed |= len < seg;
            if copies == 2 {
                let last = batch.len() - len;
                let _ = self.sock.send_to(&batch[last..], addr);
            }
        }
        if let Some(a) = to.filter(|_| batch.len() > run_start) {
            runs.push(sys::Run {
                off: run_start,
                len: batch.len() - run_start,
                seg: seg as u16,
                dst: a,
            });
        }
        self.send_runs(net, &batch, &runs);
        net.batch = batch;
        net.runs = runs;
    }

    /// Sends the runs of `batch`: all in `sendmmsg` calls when the kernel
    /// takes GSO, else datagram by datagram. A full socket buffer drops
    /// what did not fit like the network would; retransmission covers it.
    fn send_runs(&self, net: &mut Net, batch: &[u8], runs: &[sys::Run]) {
        if runs.is_empty() {
            return;
        }
        // One datagram (a small operation, an ack): a plain send.
        if let [r] = runs {
            if r.len <= usize::from(r.seg) {
                let _ = self.sock.send_to(&batch[r.off..r.off + r.len], r.dst);
                return;
            }
        }
        let fd = self.sock.as_raw_fd();
        if net.gso {
            match sys::send_runs(fd, batch, runs) {
                Ok(_) => return,
                // No GSO here: fall back for good.
                Err(e) if no_gso(&e) => net.gso = false,
                // A full buffer or a refusal: dropped, as the network
                // would; retransmission covers it.
                Err(_) => return,
            }
        }
        for r in runs {
            let seg = usize::from(r.seg).max(1);
            for d in batch[r.off..r.off + r.len].chunks(seg) {
                let _ = self.sock.send_to(d, r.dst);
            }
        }
    }

    /// Wakes the progress thread when the endpoint's next timer is earlier
    /// than the one it sleeps on.
    pub(super) fn wake_if_needed(&self) {
        let next = self.lock_net().ep.poll_timeout();
        self.wake_before(next);
    }

    /// Wakes the progress thread when `next` (the endpoint's next timer,
    /// read under the net lock) is earlier than the one it sleeps on.
    pub(super) fn wake_before(&self, next: Option<u64>) {
        if next.unwrap_or(u64::MAX) < self.next_wake.load(Ordering::Acquire) {
            self.wake.notify();
        }
    }
}
