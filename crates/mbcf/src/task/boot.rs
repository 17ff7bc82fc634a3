//! Joining a job: the bootstrap that swaps addresses, peer records,
//! CPU binding, and [`Task::join`] itself.

use super::shm::ShmLane;
use super::transport::{Lane, Route, TransportKind};
use super::udp::UdpLane;
use super::{progress, Bind, Inner, Net, Owner, PeerInfo, Senders, Task, TaskConfig, Transport};
use crate::segment::SegTable;
use crate::shm::{CtlMap, Peer};
use crate::sys::{self, EventFd};
use crate::Error;
use foldhash::{HashMap, HashMapExt};
use sss_proto::Endpoint;
use sss_seal::{Seals, Security};
use sss_wire::TaskId;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64};
use std::sync::{Arc, Condvar, Mutex, RwLock};
use std::time::Instant;

/// How a task learns its job: rank, size, node, and an all-gather to swap
/// addresses. Implemented by the launcher's bootstrap and by
/// [`ThreadBoot`] for tasks that are threads of one process (tests).
pub trait Bootstrap: Send {
    /// Job id, equal in every task.
    fn job(&self) -> u32;
    /// This task's rank.
    fn rank(&self) -> u32;
    /// Tasks in the job.
    fn size(&self) -> u32;
    /// This task's node: a host address or name. Equal nodes share memory.
    fn node(&self) -> String;
    /// Every task's bytes, by rank; a barrier too.
    fn allgather(&mut self, data: &[u8]) -> Result<Vec<Vec<u8>>, String>;
    /// The job's secret, equal in every task, from which the keys of
    /// sealed datagrams are derived; `None` when the launcher gave none.
    fn secret(&self) -> Option<[u8; sss_seal::SECRET_LEN]> {
        None
    }
}

struct TbState {
    gen: u64,
    count: u32,
    data: Vec<Vec<u8>>,
    result: Arc<Vec<Vec<u8>>>,
}

struct TbShared {
    m: Mutex<TbState>,
    cv: Condvar,
}

/// A bootstrap for tasks that are threads of one process.
pub struct ThreadBoot {
    shared: Arc<TbShared>,
    secret: [u8; sss_seal::SECRET_LEN],
    job: u32,
    rank: u32,
    size: u32,
    node: String,
}

impl ThreadBoot {
    /// Starts a job of `n` tasks that are threads of this process (rank i
    /// on `nodes[i % nodes.len()]`), each joining with `cfg`; every task's
    /// outcome, in rank order.
    pub fn join_all(n: u32, nodes: &[&str], cfg: &TaskConfig) -> Vec<Result<Task, Error>> {
        let joins: Vec<_> = Self::group(n, nodes)
            .into_iter()
            .map(|b| {
                let cfg = cfg.clone();
                std::thread::spawn(move || Task::join(Box::new(b), cfg))
            })
            .collect();
        joins
            .into_iter()
            .map(|h| h.join().unwrap_or(Err(Error::Shutdown)))
            .collect()
    }

    /// `n` bootstraps of one job; rank i sits on `nodes[i % nodes.len()]`.
    pub fn group(n: u32, nodes: &[&str]) -> Vec<ThreadBoot> {
        let shared = Arc::new(TbShared {
            m: Mutex::new(TbState {
                gen: 0,
                count: 0,
                data: vec![Vec::new(); n as usize],
                result: Arc::new(Vec::new()),
            }),
            cv: Condvar::new(),
        });
        let job = (sys::random_u64() as u32).max(1);
        let mut secret = [0u8; sss_seal::SECRET_LEN];
        for c in secret.chunks_mut(8) {
            c.copy_from_slice(&sys::random_u64().to_le_bytes());
        }
        (0..n)
            .map(|r| ThreadBoot {
                shared: shared.clone(),
                secret,
                job,
                rank: r,
                size: n,
                node: nodes
                    .get(r as usize % nodes.len().max(1))
                    .unwrap_or(&"127.0.0.1")
                    .to_string(),
            })
            .collect()
    }
}

impl Bootstrap for ThreadBoot {
    fn job(&self) -> u32 {
        self.job
    }
    fn rank(&self) -> u32 {
        self.rank
    }
    fn size(&self) -> u32 {
        self.size
    }
    fn node(&self) -> String {
        self.node.clone()
    }
    fn allgather(&mut self, data: &[u8]) -> Result<Vec<Vec<u8>>, String> {
        let mut st = self.shared.m.lock().map_err(|_| "poisoned")?;
        let gen = st.gen;
        st.data[self.rank as usize] = data.to_vec();
        st.count += 1;
        if st.count == self.size {
            st.result = Arc::new(std::mem::take(&mut st.data));
            st.data = vec![Vec::new(); self.size as usize];
            st.count = 0;
            st.gen += 1;
            self.shared.cv.notify_all();
            return Ok((*st.result).clone());
        }
        while st.gen == gen {
            st = self.shared.cv.wait(st).map_err(|_| "poisoned")?;
        }
        Ok((*st.result).clone())
    }
    fn secret(&self) -> Option<[u8; sss_seal::SECRET_LEN]> {
        Some(self.secret)
    }
}

impl Bootstrap for sss_boot::Boot {
    fn job(&self) -> u32 {
        sss_boot::Boot::job(self)
    }
    fn rank(&self) -> u32 {
        sss_boot::Boot::rank(self)
    }
    fn size(&self) -> u32 {
        sss_boot::Boot::size(self)
    }
    fn node(&self) -> String {
        sss_boot::Boot::node(self).to_string()
    }
    fn allgather(&mut self, data: &[u8]) -> Result<Vec<Vec<u8>>, String> {
        sss_boot::Boot::allgather(self, data).map_err(|e| e.to_string())
    }
    fn secret(&self) -> Option<[u8; sss_seal::SECRET_LEN]> {
        sss_boot::Boot::secret(self).map(|s| *s.as_bytes())
    }
}

fn encode_peer(addr: SocketAddr, node: &str, pid: u32, sk: u64, salt: &[u8]) -> Vec<u8> {
    let salt: String = salt.iter().map(|b| format!("{b:02x}")).collect();
    format!("{addr}\n{node}\n{pid}\n{sk}\n{salt}").into_bytes()
}

/// The tag in the name of the control block of the task with `salt`.
pub(super) fn tag_of(salt: &[u8; sss_seal::SALT_LEN]) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&salt[..8]);
    u64::from_le_bytes(b)
}

fn decode_salt(s: &str) -> Option<[u8; sss_seal::SALT_LEN]> {
    let s = s.as_bytes();
    if s.len() != 2 * sss_seal::SALT_LEN {
        return None;
    }
    let mut out = [0u8; sss_seal::SALT_LEN];
    for (o, pair) in out.iter_mut().zip(s.chunks(2)) {
        let hex = |c: u8| (c as char).to_digit(16);
        *o = (hex(pair[0])? * 16 + hex(pair[1])?) as u8;
    }
    Some(out)
}

fn decode_peer(b: &[u8]) -> Option<PeerInfo> {
    let s = std::str::from_utf8(b).ok()?;
    let mut it = s.split('\n');
    Some(PeerInfo {
        addr: it.next()?.parse().ok()?,
        node: it.next()?.to_string(),
        pid: it.next()?.parse().ok()?,
        signal_key: it.next()?.parse().ok()?,
        salt: decode_salt(it.next()?)?,
    })
}

/// The payload that fills the smallest frame the routes to this task's
/// udp peers carry (see [`TaskConfig::route_payload`]); `None` without
/// udp peers or when the kernel cannot say for one of them.
fn route_payload(
    sock: &UdpSocket,
    peers: &[PeerInfo],
    routes: &[Route],
    rank: u32,
    security: crate::Security,
) -> Option<usize> {
    let from = sock.local_addr().ok()?.ip();
    let mut seen: Vec<IpAddr> = Vec::new();
    let mut least: Option<usize> = None;
    for (r, (p, route)) in peers.iter().zip(routes).enumerate() {
        if r == rank as usize || route.kind() != TransportKind::Udp || seen.contains(&p.addr.ip()) {
            continue;
        }
        seen.push(p.addr.ip());
        let mtu = sys::route_mtu(from, p.addr)?;
        let payload = super::payload_for_mtu(mtu, p.addr.is_ipv6(), security);
        least = Some(least.map_or(payload, |l| l.min(payload)));
    }
    least
}

fn bind_addr(node: &str) -> IpAddr {
    if let Ok(ip) = node.parse::<IpAddr>() {
        return ip;
    }
    (node, 0)
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .map_or(IpAddr::from([0, 0, 0, 0]), |a| a.ip())
}

/// The CPU the `local_rank`-th of `local_size` tasks on a node binds to
/// under `policy`, from the CPUs it may use (`allowed`, ascending).
fn bind_cpu(
    policy: Bind,
    local_rank: usize,
    local_size: usize,
    allowed: &[usize],
) -> Option<usize> {
    let bind = match policy {
        Bind::None => false,
        Bind::Core => true,
        Bind::Auto => local_size > allowed.len(),
    };
    if !bind || allowed.is_empty() {
        return None;
    }
    Some(allowed[local_rank % allowed.len()])
}

/// Binds the calling thread (and the threads it starts) as [`Bind`]
/// says. Failing to bind is not an error: placement is a performance
/// matter, and a task that cannot change its affinity still runs.
fn bind(policy: Bind, local_rank: usize, local_size: usize) {
    if policy == Bind::None {
        return;
    }
    let Ok(allowed) = sys::allowed_cpus() else {
        return;
    };
    if let Some(cpu) = bind_cpu(policy, local_rank, local_size, &allowed) {
        let _ = sys::bind_to_cpu(cpu);
    }
}

impl Task {
    /// Joins the job this process was started in: `sss run`, Slurm, PMI or
    /// Open MPI variables, or a job of one task when there are none.
    /// Tunables come from the environment ([`TaskConfig::from_env`]).
    pub fn init() -> Result<Task, Error> {
        // Settings first: a bad one fails every task at once, before any
        // of them waits for the others.
        let cfg = TaskConfig::from_env()?;
        // A misspelt name would be ignored: say so, once, on stderr.
        let names: Vec<String> = std::env::vars_os()
            .filter_map(|(k, _)| k.into_string().ok())
            .collect();
        for w in crate::known::misspelt(names.iter().map(String::as_str)) {
            eprintln!("sss: warning: {w}");
        }
        let boot = sss_boot::Boot::from_env().map_err(|e| Error::Boot(e.to_string()))?;
        Self::join(Box::new(boot), cfg)
    }

    /// Joins the job described by `boot`: binds a UDP socket on the node's
    /// address, swaps addresses with every task, starts the progress
    /// thread.
    pub fn join(mut boot: Box<dyn Bootstrap>, cfg: TaskConfig) -> Result<Task, Error> {
        cfg.proto.validate().map_err(Error::Config)?;
        let (job, rank, size, node) = (boot.job(), boot.rank(), boot.size(), boot.node());
        let sock = UdpSocket::bind((bind_addr(&node), 0))?;
        sock.set_nonblocking(true)?;
        sys::set_socket_buffers(sock.as_raw_fd(), cfg.sockbuf);
        sys::enable_gro(sock.as_raw_fd());
        let signal_key = sys::random_u64();
        let mut salt = [0u8; sss_seal::SALT_LEN];
        for c in salt.chunks_mut(8) {
            c.copy_from_slice(&sys::random_u64().to_le_bytes());
        }
        let ctl = CtlMap::create(job, rank, tag_of(&salt), &node)?;
        let me = encode_peer(
            sock.local_addr()?,
            &node,
            std::process::id(),
            signal_key,
            &salt,
        );
        let all = boot.allgather(&me).map_err(Error::Boot)?;
        if all.len() != size as usize {
            return Err(Error::Boot(format!(
                "{} answers for {size} tasks",
                all.len()
            )));
        }
        let peers = all
            .iter()
            .map(|b| decode_peer(b).ok_or_else(|| Error::Boot("malformed peer record".into())))
            .collect::<Result<Vec<_>, _>>()?;
        let mut routes = Vec::with_capacity(peers.len());
        let mut peer_ctls = Vec::with_capacity(peers.len());
        for (r, p) in peers.iter().enumerate() {
            let local = cfg.transport == Transport::Auto && p.node == node;
            if local {
                let peer = Peer::open(job, r as u32, tag_of(&p.salt), p.pid)?;
                peer_ctls.push(Some(peer.ctl()));
                routes.push(Route::Shm(ShmLane::new(peer)));
            } else {
                peer_ctls.push(None);
                routes.push(Route::Udp(UdpLane));
            }
        }
        // CPUs counted before binding, which would leave one.
        let ncpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let local_rank = peers[..rank as usize]
            .iter()
            .filter(|p| p.node == node)
            .count();
        let local_size = peers.iter().filter(|p| p.node == node).count();
        bind(cfg.bind, local_rank, local_size);
        let udp_peers = routes
            .iter()
            .enumerate()
            .any(|(r, x)| r != rank as usize && x.kind() == TransportKind::Udp);
        // With no peer over udp, only this task's datagrams to itself
        // (`SSS_TRANSPORT=udp`) need keys: a secret of its own will do.
        let secret = boot.secret().or_else(|| {
            let mut s = [0u8; sss_seal::SECRET_LEN];
            for c in s.chunks_mut(8) {
                c.copy_from_slice(&sys::random_u64().to_le_bytes());
            }
            (!udp_peers).then_some(s)
        });
        let seals = match secret {
            Some(secret) => {
                let salts = peers.iter().map(|p| p.salt).collect();
                Seals::new(cfg.security, &secret, job, rank, salts)
            }
            None if cfg.security != Security::None && udp_peers => {
                return Err(Error::Boot(format!(
                    "SSS_SECURITY={} needs the job's secret, which the launcher did not \
                     give: start the job with `sss run`, or set SSS_JOB_SECRET to the same \
                     64 hex digits in every task, or set SSS_SECURITY=none to run without \
                     protection",
                    cfg.security
                )));
            }
            None => None,
        };
        let mut pcfg = cfg.proto.clone();
        if cfg.route_payload {
            if let Some(p) = route_payload(&sock, &peers, &routes, rank, cfg.security) {
                pcfg.payload_size = p;
            }
        }
        pcfg.members = Some(size);
        pcfg.format = cfg.security.format();
        if pcfg.ooo_bytes == sss_proto::Config::default().ooo_bytes {
            // A configuration that chose its own keeps it.
            pcfg.ooo_bytes = in_flight(pcfg.ooo_bytes, sys::receive_buffer(sock.as_raw_fd()));
        }
        pcfg.epoch = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_secs() as u32);
        let wake = EventFd::new()?;
        let inner = Arc::new_cyclic(|me| Inner {
            me: me.clone(),
            signal_runner: Mutex::new(super::Runner::default()),
            handlers_version: AtomicU64::new(0),
            job,
            rank,
            size,
            node,
            senders: Senders::new(&peers),
            foreign: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            peers,
            segs: RwLock::new(SegTable::new(job, rank)),
            handlers: RwLock::new(HashMap::new()),
            groups: Mutex::new(HashMap::new()),
            signal_key,
            net: Mutex::new(Net {
                ep: Endpoint::new(TaskId::new(job, rank), pcfg),
                reqs: HashMap::new(),
                mreqs: HashMap::new(),
                rng: sys::random_u64() | 1,
                batch: Vec::with_capacity(64 << 10),
                runs: Vec::new(),
                gso: std::env::var_os("SSS_NO_GSO").is_none(),
                held: 0,
                seals,
            }),
            sock,
            wake,
            ctl,
            routes,
            all_local: peer_ctls.iter().all(Option::is_some),
            local_peers: (0..size)
                .filter(|&r| r != rank && matches!(peer_ctls.get(r as usize), Some(Some(_))))
                .collect(),
            spin_budget: AtomicU64::new(cfg.spin.as_nanos() as u64),
            answered: AtomicU64::new(0),
            peer_ctls,
            ncpus,
            next_wake: AtomicU64::new(u64::MAX),
            spinners: AtomicU32::new(0),
            released: AtomicU64::new(0),
            spin_looked: AtomicU64::new(0),
            handed_back: AtomicBool::new(false),
            sockless: AtomicBool::new(false),
            wakeups: AtomicU64::new(0),
            looks: AtomicU64::new(0),
            signals_inline: AtomicU64::new(0),
            blocked_waits: AtomicU64::new(0),
            wait_timeouts: AtomicU64::new(0),
            handovers: AtomicU64::new(0),
            moves: AtomicU64::new(0),
            shutdown: AtomicBool::new(false),
            deferred: Mutex::new(Vec::new()),
            has_deferred: AtomicBool::new(false),
            idm: std::sync::OnceLock::new(),
            idm_slots: Mutex::new(HashMap::new()),
            idm_down: Mutex::new(Vec::new()),
            idm_checked: AtomicU64::new(0),
            idm_tried: AtomicU64::new(0),
            maybe_held: AtomicBool::new(false),
            udp_used: (0..size).map(|_| AtomicBool::new(false)).collect(),
            start: Instant::now(),
            errors: Mutex::new(Vec::new()),
            idle_blocks: AtomicU64::new(0),
            prewakes: AtomicU64::new(0),
            boot: Mutex::new(boot),
            cfg,
        });
        let i2 = inner.clone();
        let thread = std::thread::Builder::new()
            .name(format!("sss-progress-{rank}"))
            .spawn(move || progress(i2))?;
        Ok(Task {
            inner: inner.clone(),
            _owner: Some(Arc::new(Owner {
                inner,
                thread: Mutex::new(Some(thread)),
            })),
        })
    }
}

/// Most bytes in flight toward a peer that the socket buffers allow: a
/// stream of WRITEs alternated between sender and receiver with 512 KiB
/// in flight, each side idle while the other worked (1.45 CPUs busy of
/// two, 2.3–2.7 GB/s on loopback); 2 MiB keeps both busy (3.2 GB/s).
/// Half the receive buffer the kernel granted (taken as the peer's,
/// which runs with the same settings), so that a late receiver's socket
/// does not drop what is in flight; never below the configured
/// `default`, never above [`MAX_IN_FLIGHT`].
pub(crate) fn in_flight(default: usize, receive_buffer: Option<usize>) -> usize {
    receive_buffer.map_or(default, |b| (b / 2).min(MAX_IN_FLIGHT).max(default))
}

/// See [`in_flight`].
pub(crate) const MAX_IN_FLIGHT: usize = 2 << 20;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_flight_follows_the_receive_buffer_within_bounds() {
        let d = 512 << 10;
        // rmem_max 4 MiB: SO_RCVBUF reports 8 MiB.
        assert_eq!(in_flight(d, Some(8 << 20)), MAX_IN_FLIGHT);
        assert_eq!(in_flight(d, Some(3 << 20)), 3 << 19);
        // Debian's default rmem_max (212 992): the default stands.
        assert_eq!(in_flight(d, Some(425_984)), d);
        assert_eq!(in_flight(d, None), d);
        assert_eq!(in_flight(8 << 20, Some(8 << 20)), 8 << 20);
    }

    #[test]
    fn binding_goes_round_robin_over_the_allowed_cpus() {
        let cpus = [2, 3, 5];
        let got: Vec<_> = (0..7).map(|r| bind_cpu(Bind::Core, r, 7, &cpus)).collect();
        assert_eq!(got, [2, 3, 5, 2, 3, 5, 2].map(Some));
        // auto: only when the job alone oversubscribes the node
        assert_eq!(bind_cpu(Bind::Auto, 1, 3, &cpus), None);
        assert_eq!(bind_cpu(Bind::Auto, 1, 4, &cpus), Some(3));
        assert_eq!(bind_cpu(Bind::None, 1, 8, &cpus), None);
        assert_eq!(bind_cpu(Bind::Core, 0, 1, &[]), None);
    }
}
