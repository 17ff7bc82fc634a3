//! A cluster of endpoints on the simulated network, with a memory image per
//! task as the target, for end-to-end protocol tests.

#![allow(dead_code)]

use sss_netsim::{NetConfig, Network, Time};
use sss_proto::{
    Body, Config, Endpoint, Event, McastId, Op, OpId, OpOptions, Outcome, Packet, Status,
    SubmitError, Target, TaskId,
};
use std::collections::{BTreeMap, HashMap, VecDeque};

/// Base address of every task's segment.
pub const BASE: u64 = 0x1_0000;
/// Segment size.
pub const SEG: usize = 1 << 20;
/// Bytes of the segment reserved for each source task.
pub const REGION: u64 = 64 << 10;
/// FIFO capacity in messages.
pub const FIFO_CAP: usize = 1 << 30;

pub fn key_of(t: TaskId) -> u64 {
    0x5eed_0000_0000 ^ ((t.job as u64) << 20) ^ t.rank as u64
}

/// Read-only segment key (writes to it are refused).
pub fn ro_key_of(t: TaskId) -> u64 {
    key_of(t) ^ 0xffff_0000_0000_0000
}

/// One task's memory: a segment, FIFO queues at any address in it, signal
/// handlers 0..4, and a log of applied operations per source.
pub struct Mem {
    pub me: TaskId,
    pub seg: Vec<u8>,
    pub fifos: BTreeMap<u64, VecDeque<Vec<u8>>>,
    pub fifo_cap: usize,
    pub signals: BTreeMap<TaskId, Vec<(u32, Vec<u8>)>>,
    pub log: BTreeMap<TaskId, Vec<(u8, u64, usize)>>,
}

impl Mem {
    pub fn new(me: TaskId) -> Self {
        Self {
            me,
            seg: vec![0; SEG],
            fifos: BTreeMap::new(),
            fifo_cap: FIFO_CAP,
            signals: BTreeMap::new(),
            log: BTreeMap::new(),
        }
    }

    fn range(&self, key: u64, addr: u64, len: usize, write: bool) -> Result<usize, Status> {
        if key == ro_key_of(self.me) {
            if write {
                return Err(Status::NoPermission);
            }
        } else if key != key_of(self.me) {
            return Err(Status::BadKey);
        }
        let off = addr.checked_sub(BASE).ok_or(Status::OutOfBounds)? as usize;
        if off.checked_add(len).is_none_or(|e| e > SEG) {
            return Err(Status::OutOfBounds);
        }
        Ok(off)
    }

    fn word(&mut self, key: u64, addr: u64) -> Result<usize, Status> {
        let off = self.range(key, addr, 8, true)?;
        if addr % 8 != 0 {
            return Err(Status::Misaligned);
        }
        Ok(off)
    }

    fn get(&self, off: usize) -> u64 {
        u64::from_le_bytes(self.seg[off..off + 8].try_into().unwrap())
    }

    fn set(&mut self, off: usize, v: u64) {
        self.seg[off..off + 8].copy_from_slice(&v.to_le_bytes());
    }
}

impl Target for Mem {
    fn apply(&mut self, p: &Packet<'_>) -> Outcome {
        let from = match p.body {
            Body::Multicast { origin, .. } => origin,
            _ => p.src,
        };
        let kind = p.body.kind() as u8;
        let r = (|| -> Result<Outcome, Status> {
            match p.body {
                Body::Write { notify } => {
                    let off = self.range(p.key, p.addr, p.payload.len(), true)?;
                    self.seg[off..off + p.payload.len()].copy_from_slice(p.payload);
                    if let Some(n) = notify {
                        let o = self.word(n.key, n.addr)?;
                        let v = self.get(o).wrapping_add(n.addend);
                        self.set(o, v);
                    }
                    Ok(Outcome::Done)
                }
                Body::Multicast { .. } => {
                    let off = self.range(p.key, p.addr, p.payload.len(), true)?;
                    self.seg[off..off + p.payload.len()].copy_from_slice(p.payload);
                    Ok(Outcome::Done)
                }
                Body::Read { len } => {
                    let off = self.range(p.key, p.addr, len as usize, false)?;
                    Ok(Outcome::Data(self.seg[off..off + len as usize].to_vec()))
                }
                Body::Swap { operand } => {
                    let o = self.word(p.key, p.addr)?;
                    let old = self.get(o);
                    self.set(o, operand);
                    Ok(Outcome::Value(old))
                }
                Body::Cas { expected, new } => {
                    let o = self.word(p.key, p.addr)?;
                    let old = self.get(o);
                    if old == expected {
                        self.set(o, new);
                    }
                    Ok(Outcome::Value(old))
                }
                Body::FetchAdd { operand } => {
                    let o = self.word(p.key, p.addr)?;
                    let old = self.get(o);
                    self.set(o, old.wrapping_add(operand));
                    Ok(Outcome::Value(old))
                }
                Body::Fifo => {
                    self.range(p.key, p.addr, 8, true)?;
                    let q = self.fifos.entry(p.addr).or_default();
                    if q.len() >= self.fifo_cap {
                        return Err(Status::FifoFull);
                    }
                    q.push_back(p.payload.to_vec());
                    Ok(Outcome::Done)
                }
                Body::Signal { handler } => {
                    if p.key != key_of(self.me) {
                        return Err(Status::BadKey);
                    }
                    if handler >= 4 {
                        return Err(Status::NoSuchHandler);
                    }
                    self.signals
                        .entry(from)
                        .or_default()
                        .push((handler, p.payload.to_vec()));
                    Ok(Outcome::Done)
                }
                _ => Err(Status::Unsupported),
            }
        })();
        self.log
            .entry(from)
            .or_default()
            .push((kind, p.addr, p.payload.len()));
        match r {
            Ok(o) => o,
            Err(s) => Outcome::Failed(s),
        }
    }
}

/// An operation in a test workload, owned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TestOp {
    Write {
        key: u64,
        addr: u64,
        data: Vec<u8>,
        notify: Option<sss_proto::Notify>,
    },
    Read {
        key: u64,
        addr: u64,
        len: u32,
    },
    Swap {
        key: u64,
        addr: u64,
        operand: u64,
    },
    Cas {
        key: u64,
        addr: u64,
        expected: u64,
        new: u64,
    },
    FetchAdd {
        key: u64,
        addr: u64,
        operand: u64,
    },
    Fifo {
        key: u64,
        addr: u64,
        data: Vec<u8>,
    },
    Signal {
        key: u64,
        handler: u32,
        data: Vec<u8>,
    },
}

impl TestOp {
    pub fn as_op(&self) -> Op<'_> {
        match self {
            TestOp::Write {
                key,
                addr,
                data,
                notify,
            } => Op::Write {
                key: *key,
                addr: *addr,
                data,
                notify: *notify,
            },
            TestOp::Read { key, addr, len } => Op::Read {
                key: *key,
                addr: *addr,
                len: *len,
            },
            TestOp::Swap { key, addr, operand } => Op::Swap {
                key: *key,
                addr: *addr,
                operand: *operand,
            },
            TestOp::Cas {
                key,
                addr,
                expected,
                new,
            } => Op::Cas {
                key: *key,
                addr: *addr,
                expected: *expected,
                new: *new,
            },
            TestOp::FetchAdd { key, addr, operand } => Op::FetchAdd {
                key: *key,
                addr: *addr,
                operand: *operand,
            },
            TestOp::Fifo { key, addr, data } => Op::Fifo {
                key: *key,
                addr: *addr,
                data,
            },
            TestOp::Signal { key, handler, data } => Op::Signal {
                key: *key,
                handler: *handler,
                data,
            },
        }
    }

    /// True when the operation ends with a completion event even without
    /// status return.
    pub fn has_reply(&self) -> bool {
        matches!(
            self,
            TestOp::Read { .. }
                | TestOp::Swap { .. }
                | TestOp::Cas { .. }
                | TestOp::FetchAdd { .. }
        )
    }
}

/// A 3000-byte write (three fragments) at `dst`, the `i`th of a stream.
pub fn write_3000(dst: TaskId, i: u64, opts: OpOptions) -> Planned {
    Planned {
        dst,
        op: TestOp::Write {
            key: key_of(dst),
            addr: BASE + 4096 + (i % 64) * 3000,
            data: vec![i as u8; 3000],
            notify: None,
        },
        opts,
    }
}

/// A queued operation: destination, op, options.
pub struct Planned {
    pub dst: TaskId,
    pub op: TestOp,
    pub opts: OpOptions,
}

/// Endpoints, memories and the network, driven in virtual time.
pub struct Cluster {
    pub now: Time,
    pub tasks: Vec<TaskId>,
    pub eps: Vec<Endpoint>,
    pub mems: Vec<Mem>,
    pub net: Network<TaskId>,
    /// Per source, per destination: ops not yet submitted.
    pub plans: Vec<BTreeMap<TaskId, VecDeque<Planned>>>,
    /// Per source: op index by id, to map completions back.
    pub ids: Vec<HashMap<OpId, usize>>,
    /// Per source: submitted count.
    pub submitted: Vec<usize>,
    /// Per source: completion results by op index.
    pub results: Vec<BTreeMap<usize, Result<sss_proto::Completion, Status>>>,
    pub mcasts: Vec<Vec<(McastId, u32, Status)>>,
    pub peer_down: Vec<Vec<TaskId>>,
    pub peer_up: Vec<Vec<TaskId>>,
    pub index: HashMap<TaskId, usize>,
    pub dead: Vec<bool>,
    pub sent_bytes: Vec<Vec<u8>>,
    buf: Vec<u8>,
}

impl Cluster {
    pub fn new(n: u32, cfg: Config, net: NetConfig) -> Self {
        let tasks: Vec<TaskId> = (0..n).map(|r| TaskId::new(7, r)).collect();
        let index = tasks.iter().enumerate().map(|(i, &t)| (t, i)).collect();
        let nn = n as usize;
        Self {
            now: 0,
            eps: tasks
                .iter()
                .map(|&t| Endpoint::new(t, cfg.clone()))
                .collect(),
            mems: tasks.iter().map(|&t| Mem::new(t)).collect(),
            tasks,
            net: Network::new(net),
            plans: (0..nn).map(|_| BTreeMap::new()).collect(),
            ids: (0..nn).map(|_| HashMap::new()).collect(),
            submitted: vec![0; nn],
            results: (0..nn).map(|_| BTreeMap::new()).collect(),
            mcasts: vec![Vec::new(); nn],
            peer_down: vec![Vec::new(); nn],
            peer_up: vec![Vec::new(); nn],
            index,
            dead: vec![false; nn],
            sent_bytes: Vec::new(),
            buf: Vec::with_capacity(2048),
        }
    }

    pub fn plan(&mut self, src: usize, p: Planned) {
        self.plans[src].entry(p.dst).or_default().push_back(p);
    }

    /// Submits planned operations in order until back-pressure.
    fn submit_some(&mut self) {
        for s in 0..self.eps.len() {
            if self.dead[s] {
                continue;
            }
            for q in self.plans[s].values_mut() {
                while let Some(p) = q.front() {
                    match self.eps[s].submit(self.now, p.dst, p.op.as_op(), p.opts) {
                        Ok(id) => {
                            let idx = self.submitted[s];
                            self.submitted[s] += 1;
                            self.ids[s].insert(id, idx);
                            q.pop_front();
                        }
                        Err(SubmitError::WouldBlock) => break,
                        Err(e) => {
                            let idx = self.submitted[s];
                            self.submitted[s] += 1;
                            self.results[s].insert(idx, Err(status_of(e)));
                            q.pop_front();
                        }
                    }
                }
            }
        }
    }

    /// Moves every due datagram and event; returns true if anything moved.
    fn pump(&mut self) -> bool {
        let mut moved = false;
        for s in 0..self.eps.len() {
            if self.dead[s] {
                continue;
            }
            while let Some(dst) = self.eps[s].poll_transmit(self.now, &mut self.buf) {
                moved = true;
                self.net
                    .send(self.now, self.tasks[s], dst, self.buf.clone());
            }
            while let Some(ev) = self.eps[s].poll_event() {
                moved = true;
                match ev {
                    Event::Completed { op, result } => {
                        let idx = self.ids[s].get(&op).copied().unwrap_or(usize::MAX);
                        let prev = self.results[s].insert(idx, result);
                        assert!(
                            prev.is_none() || idx == usize::MAX,
                            "op {idx} of task {s} completed twice"
                        );
                    }
                    Event::Multicast {
                        mcast,
                        members,
                        status,
                    } => self.mcasts[s].push((mcast, members, status)),
                    Event::PeerDown { peer } => self.peer_down[s].push(peer),
                    Event::PeerUp { peer } => self.peer_up[s].push(peer),
                }
            }
        }
        while let Some((_, to, data)) = self.net.pop(self.now) {
            moved = true;
            let Some(&d) = self.index.get(&to) else {
                continue;
            };
            if self.dead[d] {
                continue;
            }
            self.eps[d].handle_datagram(self.now, &data, &mut self.mems[d]);
        }
        moved
    }

    fn quiet(&self) -> bool {
        self.plans.iter().all(|p| p.values().all(|q| q.is_empty()))
            && self
                .eps
                .iter()
                .zip(&self.dead)
                .all(|(e, &d)| d || e.total_in_flight() == 0)
    }

    /// Runs until every operation completed and the network is empty, or
    /// `limit` of virtual time passed. Returns true when it finished.
    pub fn run(&mut self, limit: Time) -> bool {
        loop {
            self.submit_some();
            while self.pump() {
                self.submit_some();
            }
            if self.quiet() && self.net.in_flight() == 0 {
                // Let delayed acks go out so nothing is left behind.
                // Peers declared down are probed forever; that is no work.
                if self
                    .eps
                    .iter()
                    .zip(&self.dead)
                    .all(|(e, &d)| d || e.probing_only())
                {
                    return true;
                }
            }
            let mut next = self.net.next_arrival();
            for (e, &d) in self.eps.iter().zip(&self.dead) {
                if d {
                    continue;
                }
                if let Some(t) = e.poll_timeout() {
                    next = Some(next.map_or(t, |n: Time| n.min(t)));
                }
            }
            let Some(next) = next else {
                return self.quiet();
            };
            if next > limit {
                return false;
            }
            self.now = self.now.max(next);
            for (e, &d) in self.eps.iter_mut().zip(&self.dead) {
                if !d && e.poll_timeout().is_some_and(|t| t <= self.now) {
                    e.handle_timeout(self.now);
                }
            }
        }
    }

    /// Runs every timer and datagram until `until`, even with nothing left
    /// to do but probing peers that are down.
    pub fn advance(&mut self, until: Time) {
        loop {
            self.submit_some();
            while self.pump() {
                self.submit_some();
            }
            let mut next = self.net.next_arrival();
            for (e, &d) in self.eps.iter().zip(&self.dead) {
                if let Some(t) = e.poll_timeout().filter(|_| !d) {
                    next = Some(next.map_or(t, |n: Time| n.min(t)));
                }
            }
            match next {
                Some(t) if t <= until => self.now = self.now.max(t),
                _ => {
                    self.now = self.now.max(until);
                    return;
                }
            }
            for (e, &d) in self.eps.iter_mut().zip(&self.dead) {
                if !d && e.poll_timeout().is_some_and(|t| t <= self.now) {
                    e.handle_timeout(self.now);
                }
            }
        }
    }

    /// Kills a task: it stops sending and receiving for good.
    pub fn kill(&mut self, i: usize) {
        self.dead[i] = true;
        self.net.set_down(self.tasks[i], true);
    }

    /// Stalls a task (`on`) or lets it go on: while stalled it runs no
    /// timers and what is sent to it is lost, but it keeps its state, as a
    /// stopped process or a paused machine does.
    pub fn stall(&mut self, i: usize, on: bool) {
        self.dead[i] = on;
        self.net.set_down(self.tasks[i], on);
    }
}

pub fn status_of(e: SubmitError) -> Status {
    match e {
        SubmitError::PeerDown => Status::NodeDown,
        SubmitError::UnknownGroup => Status::NoSuchGroup,
        _ => Status::TooLarge,
    }
}

/// A test configuration with a generous retry budget, so that 20 % loss
/// never looks like a dead peer.
pub fn lossy_config() -> Config {
    Config {
        max_retries: 40,
        initial_rto: 200_000,
        min_rto: 50_000,
        max_rto: 5_000_000,
        ack_delay: 20_000,
        ..Config::default()
    }
}
