//! Fuzz target for `sss_proto::Endpoint`, driven by operation sequences.
//!
//! Three endpoints exchange datagrams through a queue the input controls:
//! each action submits an operation of some kind, delivers, drops,
//! duplicates, reorders or corrupts a queued datagram, injects raw bytes,
//! advances the clock, runs the timers, or declares a peer down or back.
//! The configuration itself comes from the input too, unchecked (the
//! endpoint clamps it).
//!
//! Checked: nothing panics; every emitted datagram parses; an operation or
//! multicast completes at most once, and only one that was submitted;
//! what the endpoints hold in reorder buffers stays within the budgets.

#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use sss_proto::{
    Body, Config, Endpoint, Event, McastId, Notify, Op, OpId, OpOptions, Outcome, Packet, Target,
    TaskId, Time,
};
use std::collections::HashSet;

const N: usize = 3;
const JOB: u32 = 7;
const KEY: u64 = 0x5eed;
const BASE: u64 = 0x1000;
const SEG: usize = 64 << 10;
/// Datagrams queued at most (the rest are lost, as a full socket would).
const QUEUE: usize = 4096;

#[derive(Arbitrary, Debug)]
struct Settings {
    payload_size: u16,
    window: u8,
    send_buffer: u32,
    initial_rto: u32,
    min_rto: u32,
    max_rto: u32,
    max_retries: u8,
    ack_delay: u32,
    ack_every: u8,
    max_read: u16,
    multicast_arity: u8,
    chain_threshold: u8,
    nofc_reply_timeout: u32,
    max_peers: u8,
    ooo_bytes: u32,
    ooo_total: u32,
    down_probe: u32,
    down_probe_max: u32,
    max_fifo: u32,
}

impl Settings {
    fn config(&self) -> Config {
        Config {
            // Tiny payloads make every write thousands of packets: slow, not new.
            payload_size: (self.payload_size as usize).max(256),
            window: self.window.into(),
            send_buffer: self.send_buffer as usize,
            initial_rto: self.initial_rto.into(),
            min_rto: self.min_rto.into(),
            max_rto: self.max_rto.into(),
            max_retries: self.max_retries.into(),
            ack_delay: self.ack_delay.into(),
            ack_every: self.ack_every.into(),
            max_read: self.max_read.into(),
            multicast_arity: self.multicast_arity,
            chain_threshold: self.chain_threshold.into(),
            nofc_reply_timeout: self.nofc_reply_timeout.into(),
            epoch: 1,
            max_peers: self.max_peers.into(),
            members: Some(N as u32),
            ooo_bytes: self.ooo_bytes as usize,
            ooo_total: self.ooo_total as usize,
            down_probe: self.down_probe.into(),
            down_probe_max: self.down_probe_max.into(),
            // Forced into its range by the endpoint, like every field.
            max_fifo: self.max_fifo as usize,
            format: sss_wire::Format::Checksummed,
        }
    }
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Kind {
    Write { len: u16, notify: bool },
    Read { len: u16 },
    Swap(u64),
    Cas(u64, u64),
    FetchAdd(u64),
    Fifo { len: u16 },
    Signal { handler: u8, len: u16 },
}

#[derive(Arbitrary, Debug)]
enum Action {
    Submit {
        from: u8,
        to: u8,
        kind: Kind,
        /// Offset in the target segment (may fall outside it).
        off: u16,
        status_return: bool,
        nofc: bool,
    },
    Multicast {
        from: u8,
        len: u16,
    },
    /// Hand queued datagram `i` to its destination.
    Deliver(u16),
    /// Hand over the oldest `n` datagrams in order.
    DeliverFirst(u8),
    Drop(u16),
    Duplicate(u16),
    /// Move datagram `i` to the back of the queue.
    Reorder(u16),
    Corrupt {
        i: u16,
        byte: u16,
        bit: u8,
    },
    /// Raw bytes to endpoint `to`, claimed (or not) to come from `from`.
    Raw {
        to: u8,
        from: Option<u8>,
        data: Vec<u8>,
    },
    Advance(u32),
    /// Advance to the earliest timer and run the due ones.
    NextTimer,
    DeclareDown {
        at: u8,
        peer: u8,
    },
    ResetPeer {
        at: u8,
        peer: u8,
    },
}

#[derive(Arbitrary, Debug)]
struct Input {
    settings: Settings,
    actions: Vec<Action>,
}

/// A task's memory: one segment; FIFOs and signals only counted.
struct Mem {
    seg: Vec<u8>,
}

impl Mem {
    fn range(&self, key: u64, addr: u64, len: usize) -> Option<usize> {
        let off = usize::try_from(addr.checked_sub(BASE)?).ok()?;
        (key == KEY && off.checked_add(len)? <= SEG).then_some(off)
    }

    fn word(&mut self, key: u64, addr: u64) -> Option<&mut [u8]> {
        let off = self.range(key, addr, 8).filter(|o| o % 8 == 0)?;
        Some(&mut self.seg[off..off + 8])
    }
}

impl Target for Mem {
    fn apply(&mut self, p: &Packet<'_>) -> Outcome {
        let failed = Outcome::Failed(sss_proto::Status::OutOfBounds);
        match p.body {
            Body::Write { notify } => {
                let Some(off) = self.range(p.key, p.addr, p.payload.len()) else {
                    return failed;
                };
                self.seg[off..off + p.payload.len()].copy_from_slice(p.payload);
                if let Some(n) = notify {
                    let Some(w) = self.word(n.key, n.addr) else {
                        return failed;
                    };
                    let v = u64::from_le_bytes((&*w).try_into().unwrap()).wrapping_add(n.addend);
                    w.copy_from_slice(&v.to_le_bytes());
                }
                Outcome::Done
            }
            Body::Multicast { .. } => match self.range(p.key, p.addr, p.payload.len()) {
                Some(off) => {
                    self.seg[off..off + p.payload.len()].copy_from_slice(p.payload);
                    Outcome::Done
                }
                None => failed,
            },
            Body::Read { len } => match self.range(p.key, p.addr, len as usize) {
                Some(off) => Outcome::Data(self.seg[off..off + len as usize].to_vec()),
                None => failed,
            },
            Body::Swap { .. } | Body::Cas { .. } | Body::FetchAdd { .. } => {
                let body = p.body;
                let Some(w) = self.word(p.key, p.addr) else {
                    return failed;
                };
                let old = u64::from_le_bytes((&*w).try_into().unwrap());
                let new = match body {
                    Body::Swap { operand } => operand,
                    Body::Cas { expected, new } if old == expected => new,
                    Body::Cas { .. } => old,
                    Body::FetchAdd { operand } => old.wrapping_add(operand),
                    _ => old,
                };
                w.copy_from_slice(&new.to_le_bytes());
                Outcome::Value(old)
            }
            Body::Fifo | Body::Signal { .. } => Outcome::Done,
            _ => Outcome::Failed(sss_proto::Status::Unsupported),
        }
    }
}

struct World {
    now: Time,
    tasks: Vec<TaskId>,
    eps: Vec<Endpoint>,
    mems: Vec<Mem>,
    /// (source index, destination, bytes)
    queue: Vec<(usize, TaskId, Vec<u8>)>,
    /// Per endpoint: operations submitted and not completed yet.
    open: Vec<HashSet<OpId>>,
    mcasts: Vec<HashSet<McastId>>,
    out: Vec<u8>,
}

impl World {
    fn drain(&mut self) {
        for s in 0..N {
            while let Some(dst) = self.eps[s].poll_transmit(self.now, &mut self.out) {
                assert!(
                    self.out.is_empty() || Packet::parse(&self.out).is_ok(),
                    "emitted a datagram that does not parse"
                );
                if self.queue.len() < QUEUE {
                    self.queue.push((s, dst, self.out.clone()));
                }
            }
            while let Some(ev) = self.eps[s].poll_event() {
                match ev {
                    Event::Completed { op, .. } => {
                        assert!(
                            self.open[s].remove(&op),
                            "{op:?} completed twice or unasked"
                        );
                    }
                    Event::Multicast { mcast, .. } => {
                        assert!(self.mcasts[s].remove(&mcast), "{mcast:?} completed twice");
                    }
                    Event::PeerDown { .. } | Event::PeerUp { .. } => {}
                }
            }
        }
        let cfg = self.eps[0].config();
        let (per, total) = (cfg.ooo_bytes, cfg.ooo_total);
        for e in &self.eps {
            assert!(e.reorder_bytes() <= total, "reorder buffers over budget");
            for &t in &self.tasks {
                assert!(e.reorder_bytes_of(t) <= per, "reorder buffer over budget");
            }
            assert!(e.channels() <= N);
        }
    }

    fn deliver(&mut self, i: usize) {
        let (s, dst, data) = self.queue.remove(i);
        if let Some(d) = self.tasks.iter().position(|&t| t == dst) {
            let from = Some(self.tasks[s]);
            self.eps[d].handle_datagram_from(self.now, from, &data, &mut self.mems[d]);
        }
    }

    fn pick(&self, i: u16) -> Option<usize> {
        (!self.queue.is_empty()).then(|| i as usize % self.queue.len())
    }

    fn run_timers(&mut self) {
        for e in &mut self.eps {
            if e.poll_timeout().is_some_and(|t| t <= self.now) {
                e.handle_timeout(self.now);
            }
        }
    }

    fn act(&mut self, a: &Action, buf: &[u8]) {
        match *a {
            Action::Submit {
                from,
                to,
                kind,
                off,
                status_return,
                nofc,
            } => {
                let (s, d) = (from as usize % N, to as usize % N);
                let addr = BASE + u64::from(off);
                let data = |len: u16| &buf[..(len as usize).min(buf.len())];
                let op = match kind {
                    Kind::Write { len, notify } => Op::Write {
                        key: KEY,
                        addr,
                        data: data(len),
                        notify: notify.then_some(Notify {
                            key: KEY,
                            addr: BASE,
                            addend: 1,
                        }),
                    },
                    Kind::Read { len } => Op::Read {
                        key: KEY,
                        addr,
                        len: len.into(),
                    },
                    Kind::Swap(operand) => Op::Swap {
                        key: KEY,
                        addr,
                        operand,
                    },
                    Kind::Cas(expected, new) => Op::Cas {
                        key: KEY,
                        addr,
                        expected,
                        new,
                    },
                    Kind::FetchAdd(operand) => Op::FetchAdd {
                        key: KEY,
                        addr,
                        operand,
                    },
                    Kind::Fifo { len } => Op::Fifo {
                        key: KEY,
                        addr,
                        data: data(len),
                    },
                    Kind::Signal { handler, len } => Op::Signal {
                        key: KEY,
                        handler: handler.into(),
                        data: data(len),
                    },
                };
                let opts = OpOptions {
                    status_return,
                    nofc,
                };
                if let Ok(id) = self.eps[s].submit(self.now, self.tasks[d], op, opts) {
                    self.open[s].insert(id);
                }
            }
            Action::Multicast { from, len } => {
                let s = from as usize % N;
                let data = &buf[..(len as usize).min(buf.len())];
                if let Ok(id) = self.eps[s].multicast(self.now, 1, KEY, BASE, data) {
                    assert!(self.mcasts[s].insert(id), "multicast id reused");
                }
            }
            Action::Deliver(i) => {
                if let Some(i) = self.pick(i) {
                    self.deliver(i);
                }
            }
            Action::DeliverFirst(n) => {
                for _ in 0..n {
                    if self.queue.is_empty() {
                        break;
                    }
                    self.deliver(0);
                    self.drain();
                }
            }
            Action::Drop(i) => {
                if let Some(i) = self.pick(i) {
                    self.queue.remove(i);
                }
            }
            Action::Duplicate(i) => {
                if let Some(i) = self.pick(i) {
                    if self.queue.len() < QUEUE {
                        let d = self.queue[i].clone();
                        self.queue.push(d);
                    }
                }
            }
            Action::Reorder(i) => {
                if let Some(i) = self.pick(i) {
                    let d = self.queue.remove(i);
                    self.queue.push(d);
                }
            }
            Action::Corrupt { i, byte, bit } => {
                if let Some(i) = self.pick(i) {
                    let d = &mut self.queue[i].2;
                    if !d.is_empty() {
                        let b = byte as usize % d.len();
                        d[b] ^= 1 << (bit % 8);
                    }
                }
            }
            Action::Raw { to, from, ref data } => {
                let d = to as usize % N;
                let from = from.map(|f| TaskId::new(JOB, f.into()));
                self.eps[d].handle_datagram_from(self.now, from, data, &mut self.mems[d]);
            }
            Action::Advance(ns) => {
                self.now += u64::from(ns);
                self.run_timers();
            }
            Action::NextTimer => {
                if let Some(t) = self.eps.iter().filter_map(|e| e.poll_timeout()).min() {
                    self.now = self.now.max(t);
                }
                self.run_timers();
            }
            Action::DeclareDown { at, peer } => {
                let t = self.tasks[peer as usize % N];
                self.eps[at as usize % N].declare_down(t);
            }
            Action::ResetPeer { at, peer } => {
                let t = self.tasks[peer as usize % N];
                self.eps[at as usize % N].resume_peer(t);
            }
        }
        self.drain();
    }
}

fuzz_target!(|input: Input| {
    let cfg = input.settings.config();
    let tasks: Vec<TaskId> = (0..N as u32).map(|r| TaskId::new(JOB, r)).collect();
    let mut w = World {
        now: 0,
        eps: tasks
            .iter()
            .map(|&t| {
                let mut e = Endpoint::new(t, cfg.clone());
                e.add_group(1, tasks.clone());
                e
            })
            .collect(),
        tasks,
        mems: (0..N).map(|_| Mem { seg: vec![0; SEG] }).collect(),
        queue: Vec::new(),
        open: vec![HashSet::new(); N],
        mcasts: vec![HashSet::new(); N],
        out: Vec::new(),
    };
    let buf: Vec<u8> = (0..=u16::MAX).map(|i| i as u8).collect();
    for a in input.actions.iter().take(2000) {
        w.act(a, &buf);
    }
});
