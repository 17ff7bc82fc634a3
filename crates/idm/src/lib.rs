//! The node daemon (`sssd`), the user-level SSS-MC of seed 000 §6: it
//! publishes this node's IDM status page in shared memory, gossips it to
//! the other nodes' daemons with no-flow-control MBCF writes, keeps their
//! pages, and marks a node down when its gossip stops.
//!
//! The page layout and the lock-free reader live in `sss_mbcf::idm`, so
//! tasks read pages without this crate, and the packets and their socket
//! in `sss_mbcf::nofc`. Here: sampling `/proc` and the local tasks
//! ([`sample`]), what gossip carries ([`gossip`]), and the daemon loop
//! ([`Daemon`]).

#![deny(unsafe_code)]

pub mod gossip;
pub mod sample;

use sss_mbcf::idm::{Idm, IdmWriter, NodeData, IDM_NODES, NODE_DOWN, NODE_VALID};
use sss_mbcf::nofc;
use std::collections::BTreeSet;
use std::net::SocketAddr;
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

/// The daemon state.
pub struct Daemon {
    cfg: DaemonConfig,
    idm: IdmWriter,
    sock: nofc::Socket,
    /// Gossip writes accepted by the socket whose payload was not a page
    /// of its sender's node.
    bad_pages: u64,
    /// Pages from addresses that are not our peers, dropped unanswered.
    strangers: u64,
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
        let sock = nofc::Socket::bind(
            (cfg.node.as_str(), cfg.port),
            gossip::daemon_id(&cfg.node),
            gossip::INBOX,
        )
        .map_err(io("binding the gossip socket"))?;
        let idm = IdmWriter::create(&cfg.node).map_err(io("creating the IDM file"))?;
        idm.set_self_slot(0);
        Ok(Self {
            peers: cfg.peers.iter().copied().collect(),
            sampler: sample::Sampler::new(&cfg.node),
            cfg,
            idm,
            sock,
            bad_pages: 0,
            strangers: 0,
            start: Instant::now(),
        })
    }

    fn local_ns(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }

    /// Runs until `stop` returns true (checked every sample period).
    pub fn run(&mut self, stop: impl Fn() -> bool) {
        let mut last_gossip = Instant::now() - self.cfg.gossip;
        let mut last_sample = Instant::now() - self.cfg.sample;
        while !stop() {
            if last_sample.elapsed() >= self.cfg.sample {
                last_sample = Instant::now();
                let mut page = self.sampler.sample();
                page.received_ns = self.local_ns();
                self.idm.write(0, &page);
                self.mark_silent_nodes();
                if last_gossip.elapsed() >= self.cfg.gossip {
                    last_gossip = Instant::now();
                    let payload = page.to_bytes();
                    let (dst, key) = (gossip::INBOX.dst, gossip::INBOX.key);
                    for &p in &self.peers {
                        // Lost gossip is fine: the next round repeats it.
                        let _ = self.sock.send(p, dst, key, 0, &payload);
                    }
                }
            }
            let wait = self.cfg.sample.saturating_sub(last_sample.elapsed());
            let got = self
                .sock
                .recv(wait.max(Duration::from_micros(200)))
                .map(|(from, w)| (from, gossip::page(&w)));
            match got {
                // Only the daemons we were told of: gossip is not
                // authenticated yet, and a stranger's pages would fill
                // the IDM file with nodes that do not exist and make us
                // send to whatever address it claims (a reflector).
                Some((from, Some(page))) if self.peers.contains(&from) => self.store_remote(page),
                Some((_, Some(_))) => self.strangers += 1,
                Some((_, None)) => self.bad_pages += 1,
                None => {}
            }
        }
        IdmWriter::unlink(&self.cfg.node);
    }

    /// Gossip datagrams refused so far: not gossip writes for a daemon
    /// (counted by the socket), not a page of their sender's node, or a
    /// page from an address that is not one of our peers.
    pub fn refused(&self) -> u64 {
        self.sock.counters().refused() + self.bad_pages + self.strangers
    }

    /// Pages refused because they came from an address that is not one
    /// of our peers (never stored, never answered).
    pub fn strangers(&self) -> u64 {
        self.strangers
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
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let mut out = String::from(
        "| node | state | age (ms) | cpus | runnable | load 1m | mem free / total (MiB) | tasks | packets | bytes | retrans | rejected | refused |\n|---|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|\n",
    );
    let mut tasks = String::new();
    for d in idm.nodes() {
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
    Some(out)
}
