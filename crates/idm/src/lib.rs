//! The node daemon (`sssd`), the user-level SSS-MC of seed 000 §6: it
//! publishes this node's IDM status page in shared memory, gossips it to
//! the other nodes' daemons with no-flow-control MBCF writes, keeps their
//! pages, and marks a node down when its gossip stops. Gossip is
//! authenticated with a key derived from the cluster secret ([`secret`]).
//!
//! The page layout and the lock-free reader live in `sss_mbcf::idm`, so
//! tasks read pages without this crate, and the packets and their socket
//! in `sss_mbcf::nofc`. Here: sampling `/proc` and the local tasks
//! ([`sample`]), what gossip carries and how it is tagged ([`gossip`]),
//! where the cluster secret comes from ([`secret`]), and the daemon loop
//! ([`Daemon`]).

#![deny(unsafe_code)]

pub mod gossip;
pub mod sample;
pub mod secret;

use gossip::{GossipKey, Refusal};
use secret::ClusterSecret;
use sss_mbcf::idm::{Idm, IdmWriter, NodeData, IDM_NODES, NODE_DOWN, NODE_VALID};
use std::collections::BTreeSet;
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

/// Default UDP port of the daemons.
pub const DEFAULT_PORT: u16 = 7470;

/// How a daemon runs.
#[derive(Debug, Clone)]
pub struct DaemonConfig {
    /// This node's name (its host address).
    pub node: String,
    /// Other nodes' daemons.
    pub peers: Vec<SocketAddr>,
    /// Our UDP port.
    pub port: u16,
    /// How often local tasks are sampled.
    pub sample: Duration,
    /// How often our page is gossiped.
    pub gossip: Duration,
    /// Silence after which a node is marked down.
    pub down_after: Duration,
    /// The cluster's secret: gossip is taken only from daemons holding it.
    pub secret: ClusterSecret,
}

/// Why the daemon stopped or could not start.
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    /// A system call failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The error.
        source: std::io::Error,
    },
    /// Another daemon owns this node's page.
    #[error("a node daemon (pid {0}) already runs for this node")]
    AlreadyRunning(u32),
}

/// True when a process with this pid exists.
pub fn alive(pid: u32) -> bool {
    pid != 0 && std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// The pid of the daemon serving `node`, if one runs.
pub fn running_daemon(node: &str) -> Option<u32> {
    let idm = Idm::open(node).ok()?;
    let pid = idm.daemon_pid();
    alive(pid).then_some(pid)
}

/// What a daemon's gossip socket sent, took and refused. A refused
/// datagram is dropped before anything else looks at it and never
/// answered; each class is checked in this order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GossipStats {
    /// Datagrams sent.
    pub sent: u64,
    /// Sends that failed (full buffer, no route).
    pub send_failed: u64,
    /// Datagrams received.
    pub received: u64,
    /// Pages stored.
    pub accepted: u64,
    /// From an address that is not one of our peers.
    pub strangers: u64,
    /// Not a gossip write for a daemon, or with no counter and tag.
    pub malformed: u64,
    /// A wrong tag: forged, modified, or from another cluster.
    pub forged: u64,
    /// Authentic, but its counter is not above the highest taken from its
    /// sender: a replay.
    pub replayed: u64,
    /// Authentic and fresh, but not a page of its sender's node.
    pub bad_pages: u64,
}

impl GossipStats {
    /// Every datagram refused.
    pub fn refused(&self) -> u64 {
        self.strangers + self.malformed + self.forged + self.replayed + self.bad_pages
    }
}

/// The daemon state.
pub struct Daemon {
    cfg: DaemonConfig,
    idm: IdmWriter,
    sock: UdpSocket,
    /// Room for the largest MBCF packet, allocated once.
    buf: Vec<u8>,
    key: GossipKey,
    counter: gossip::Counter,
    replay: gossip::Replay,
    stats: GossipStats,
    peers: BTreeSet<SocketAddr>,
    sampler: sample::Sampler,
    start: Instant,
}

impl Daemon {
    /// Binds the gossip socket and creates the IDM file.
    pub fn new(cfg: DaemonConfig) -> Result<Self, DaemonError> {
        if let Some(pid) = running_daemon(&cfg.node) {
            if pid != std::process::id() {
                return Err(DaemonError::AlreadyRunning(pid));
            }
        }
        let io = |what: &str| {
            let what = what.to_string();
            move |source| DaemonError::Io { what, source }
        };
        let sock = UdpSocket::bind((cfg.node.as_str(), cfg.port))
            .map_err(io("binding the gossip socket"))?;
        let idm = IdmWriter::create(&cfg.node).map_err(io("creating the IDM file"))?;
        idm.set_self_slot(0);
        Ok(Self {
            peers: cfg.peers.iter().copied().collect(),
            sampler: sample::Sampler::new(&cfg.node),
            key: GossipKey::new(&cfg.secret),
            counter: gossip::Counter::new(),
            // Only peers get past the address check, and a node has room
            // for no more pages than the IDM file holds.
            replay: gossip::Replay::new(cfg.peers.len().max(IDM_NODES)),
            cfg,
            idm,
            sock,
            buf: vec![0; sss_wire::MAX_PACKET_LEN],
            stats: GossipStats::default(),
            start: Instant::now(),
        })
    }

    fn local_ns(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }

    /// Runs until `stop` returns true (checked every sample period).
    pub fn run(&mut self, stop: impl Fn() -> bool) {
        self.run_with(|_| stop());
    }

    /// Runs until `stop`, shown the stats so far, returns true (checked
    /// after every datagram and every sample period).
    pub fn run_with(&mut self, mut stop: impl FnMut(&GossipStats) -> bool) {
        // `None`: due now (`Instant::now() - period` can underflow).
        let mut last_gossip: Option<Instant> = None;
        let mut last_sample: Option<Instant> = None;
        let due = |last: Option<Instant>, period| last.is_none_or(|t| t.elapsed() >= period);
        while !stop(&self.stats) {
            if due(last_sample, self.cfg.sample) {
                last_sample = Some(Instant::now());
                let mut page = self.sampler.sample();
                page.received_ns = self.local_ns();
                self.idm.write(0, &page);
                self.mark_silent_nodes();
                if due(last_gossip, self.cfg.gossip) {
                    last_gossip = Some(Instant::now());
                    // One datagram for all peers: a copy replayed to
                    // another peer has a counter it has already seen.
                    let b = gossip::encode(&self.key, &self.cfg.node, &page, self.counter.take());
                    for &p in &self.peers {
                        // Lost gossip is fine: the next round repeats it.
                        match self.sock.send_to(&b, p) {
                            Ok(_) => self.stats.sent += 1,
                            Err(_) => self.stats.send_failed += 1,
                        }
                    }
                }
            }
            let since = last_sample.map_or(Duration::ZERO, |t| t.elapsed());
            let wait = self.cfg.sample.saturating_sub(since);
            self.receive(wait.max(Duration::from_micros(200)));
        }
        IdmWriter::unlink(&self.cfg.node);
    }

    /// Waits up to `timeout` for one datagram and stores the page in it if
    /// it passes every check; counts it either way. Never answers.
    fn receive(&mut self, timeout: Duration) {
        // A zero timeout would mean "block forever".
        let t = timeout.max(Duration::from_micros(1));
        if self.sock.set_read_timeout(Some(t)).is_err() {
            return;
        }
        let Ok((n, from)) = self.sock.recv_from(&mut self.buf) else {
            return;
        };
        self.stats.received += 1;
        // Only the daemons we were told of, checked before any work: a
        // stranger's pages would fill the IDM file with nodes that do not
        // exist and make us send to whatever address it claims.
        if !self.peers.contains(&from) {
            self.stats.strangers += 1;
            return;
        }
        let a = match gossip::open(&self.key, &self.buf[..n]) {
            Ok(a) => a,
            Err(Refusal::Forged) => {
                self.stats.forged += 1;
                return;
            }
            Err(Refusal::NotGossip(_) | Refusal::NoTrailer) => {
                self.stats.malformed += 1;
                return;
            }
        };
        if !self.replay.fresh(a.write.src, a.counter) {
            self.stats.replayed += 1;
            return;
        }
        match gossip::page(&a.write) {
            Some(page) => {
                self.stats.accepted += 1;
                self.store_remote(page);
            }
            None => self.stats.bad_pages += 1,
        }
    }

    /// Gossip datagrams refused so far, all classes (see [`GossipStats`]).
    pub fn refused(&self) -> u64 {
        self.stats.refused()
    }

    /// Datagrams refused because they came from an address that is not
    /// one of our peers (never looked at further, never answered).
    pub fn strangers(&self) -> u64 {
        self.stats.strangers
    }

    /// What the gossip socket sent, took and refused, by class.
    pub fn stats(&self) -> GossipStats {
        self.stats
    }

    /// The address gossip is received on.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.sock.local_addr().ok()
    }

    fn store_remote(&mut self, mut page: NodeData) {
        let name = page.name().to_string();
        if name.is_empty() || name == self.cfg.node {
            return;
        }
        page.received_ns = self.local_ns();
        page.flags = NODE_VALID;
        let slot = self.idm.find(&name).map(|(i, _)| i).or_else(|| {
            (1..IDM_NODES).find(|&i| self.idm.read(i).is_some_and(|d| d.flags & NODE_VALID == 0))
        });
        if let Some(i) = slot {
            self.idm.write(i, &page);
        }
    }

    fn mark_silent_nodes(&mut self) {
        let now = self.local_ns();
        let bound = self.cfg.down_after.as_nanos() as u64;
        for i in 1..IDM_NODES {
            let Some(mut d) = self.idm.read(i) else {
                continue;
            };
            if d.flags & NODE_VALID == 0 || d.flags & NODE_DOWN != 0 {
                continue;
            }
            if now.saturating_sub(d.received_ns) > bound {
                d.flags |= NODE_DOWN;
                self.idm.write(i, &d);
            }
        }
    }
}

/// The cluster as host `node`'s daemon sees it, as a Markdown table (what
/// `sss status` prints). `None` when no daemon serves `node`.
pub fn status_table(node: &str) -> Option<String> {
    let idm = Idm::open(node).ok()?;
    Some(render(&idm.nodes()))
}

/// What `sss status` prints: the daemon's view when one serves `node`;
/// otherwise the node itself from /proc (and its SSS tasks), and the
/// daemons that serve other nodes of this machine.
pub fn status_report(node: &str) -> String {
    if running_daemon(node).is_some() {
        if let Some(t) = status_table(node) {
            return t;
        }
    }
    let page = sample::Sampler::new(node).sample();
    let mut out = format!(
        "No node daemon serves {node} (`sss run` starts one per host for the length of a \
         job, or run `sssd --node {node} --peers …`). The node itself, from /proc:\n\n"
    );
    out.push_str(&render(std::slice::from_ref(&page)));
    let others = daemons_here();
    if others.is_empty() {
        out.push_str("\nNo node daemon runs on this machine.\n");
    } else {
        out.push_str("\nNode daemons on this machine (`sss status --node NODE`):\n\n");
        for (name, pid) in others {
            out.push_str(&format!("- {name} (pid {pid})\n"));
        }
    }
    out
}

/// The nodes whose daemon runs on this machine, with its pid.
pub fn daemons_here() -> Vec<(String, u32)> {
    let Ok(dir) = sss_mbcf::shm_dir() else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut v: Vec<(String, u32)> = entries
        .flatten()
        .filter_map(|e| {
            let name = e
                .file_name()
                .to_str()?
                .strip_prefix("sss-idm-")?
                .to_string();
            let pid = Idm::open(&name).ok()?.daemon_pid();
            alive(pid).then_some((name, pid))
        })
        .collect();
    v.sort();
    v
}

/// The Markdown tables of `nodes`: one row per node, then its tasks.
fn render(nodes: &[NodeData]) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let mut out = String::from(
        "| node | state | age (ms) | cpus | runnable | load 1m | mem free / total (MiB) | tasks | packets | bytes | retrans | rejected | refused |\n|---|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|\n",
    );
    let mut tasks = String::new();
    for d in nodes {
        let age = now.saturating_sub(d.updated_ns) / 1_000_000;
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {:.2} | {} / {} | {} | {} | {} | {} | {} | {} |\n",
            d.name(),
            if d.is_up() { "up" } else { "down" },
            age,
            d.ncpus,
            d.runnable,
            d.load[0] as f64 / 1000.0,
            d.mem_free_kb / 1024,
            d.mem_total_kb / 1024,
            d.ntasks,
            d.packets,
            d.bytes,
            d.retransmissions,
            d.rejected,
            d.refused
        ));
        for t in &d.tasks[..(d.ntasks as usize).min(sss_mbcf::idm::IDM_TASKS)] {
            tasks.push_str(&format!(
                "| {} | {}.{} | {} | {:?} | {} |\n",
                d.name(),
                t.job,
                t.rank,
                t.pid,
                sss_mbcf::idm::TaskState::from_u32(t.state),
                t.progress
            ));
        }
    }
    if !tasks.is_empty() {
        out.push_str("\n| node | task | pid | state | progress |\n|---|---|---:|---|---:|\n");
        out.push_str(&tasks);
    }
    out
}
