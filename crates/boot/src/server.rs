//! Launcher side of the TCP rendezvous: serves one job of `size` tasks.
//!
//! One acceptor thread, and one thread per task connection that reads the
//! task's rounds and waits on a condition variable until the round is
//! complete. Rendezvous traffic is a handful of rounds per job, so threads
//! are simpler than an event loop at no real cost.

use crate::auth::{self, JobSecret};
use std::collections::BTreeMap;
use std::io::ErrorKind;
use std::net::ToSocketAddrs;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::frame;
use crate::BootError;

/// How long a new connection may take to say hello before it is dropped.
const HELLO_TIMEOUT: Duration = Duration::from_secs(30);

/// A bound, not yet running, rendezvous server for one job.
#[derive(Debug)]
pub struct BootServer {
    listener: TcpListener,
    addr: SocketAddr,
    job: u32,
    size: u32,
    secret: Option<JobSecret>,
}

/// A task that left the job before a round that another task entered, so
/// that round could never complete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EarlyDisconnect {
    /// The task that disconnected.
    pub rank: u32,
    /// The first round it did not contribute to.
    pub round: u32,
}

/// What the server saw, from [`BootServerHandle::report`] or
/// [`BootServerHandle::shutdown`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerReport {
    /// Tasks that said hello.
    pub joined: u32,
    /// Rounds completed by every task.
    pub rounds: u32,
    /// Connections refused (bad hello, wrong job, duplicate rank).
    pub refused: u32,
    /// Contributions to rounds received (one per task and round).
    pub received: u32,
    /// Tasks that left while others still needed them, in the order seen.
    pub early_disconnects: Vec<EarlyDisconnect>,
}

/// A running server; dropping it shuts the server down.
#[derive(Debug)]
pub struct BootServerHandle {
    addr: SocketAddr,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
}

#[derive(Debug)]
struct Shared {
    job: u32,
    size: u32,
    secret: Option<JobSecret>,
    state: Mutex<State>,
    cond: Condvar,
}

#[derive(Debug, Default)]
struct State {
    shutdown: bool,
    joined: Vec<bool>,
    /// Rounds each rank has sent.
    sent: Vec<u32>,
    /// For a rank that disconnected: how many rounds it had sent.
    gone: Vec<Option<u32>>,
    rounds: BTreeMap<u32, Round>,
    report: ServerReport,
    /// Clones of live connections, to cut them at shutdown.
    streams: Vec<TcpStream>,
    workers: Vec<JoinHandle<()>>,
}

#[derive(Debug)]
struct Round {
    parts: Vec<Option<Vec<u8>>>,
    have: u32,
    /// The encoded GATHERED body, once complete; shared by every writer.
    answer: Option<Arc<Vec<u8>>>,
    served: u32,
}

impl BootServer {
    /// Binds the server for job `job` of `size` tasks. Use port 0 for any
    /// free port and read it back with [`BootServer::addr`].
    pub fn bind<A: ToSocketAddrs>(addr: A, job: u32, size: u32) -> Result<BootServer, BootError> {
        if size == 0 {
            return Err(BootError::Inconsistent(
                "a job needs at least one task".into(),
            ));
        }
        let listener =
            TcpListener::bind(addr).map_err(|e| BootError::io("binding the boot server", e))?;
        let addr = listener
            .local_addr()
            .map_err(|e| BootError::io("reading the boot server's address", e))?;
        Ok(BootServer {
            listener,
            addr,
            job,
            size,
            secret: None,
        })
    }

    /// The bound address (with the real port when bound to port 0).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Admits only tasks that prove `secret` in their HELLO (see
    /// [`crate::auth`]); without it any task that finds the port may join.
    pub fn with_secret(mut self, secret: JobSecret) -> BootServer {
        self.secret = Some(secret);
        self
    }

    /// Starts serving in background threads.
    pub fn spawn(self) -> Result<BootServerHandle, BootError> {
        let n = self.size as usize;
        let shared = Arc::new(Shared {
            job: self.job,
            size: self.size,
            secret: self.secret,
            state: Mutex::new(State {
                joined: vec![false; n],
                sent: vec![0; n],
                gone: vec![None; n],
                ..State::default()
            }),
            cond: Condvar::new(),
        });
        let sh = Arc::clone(&shared);
        let listener = self.listener;
        let acceptor = std::thread::Builder::new()
            .name("sss-boot-accept".into())
            .spawn(move || accept_loop(&sh, &listener))
            .map_err(|e| BootError::io("starting the boot server thread", e))?;
        Ok(BootServerHandle {
            addr: self.addr,
            shared,
            acceptor: Some(acceptor),
        })
    }
}

impl BootServerHandle {
    /// The server's address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// A snapshot of what the server saw so far.
    pub fn report(&self) -> ServerReport {
        self.shared.lock().report.clone()
    }

    /// Stops the server: closes every task connection (their next or
    /// pending rendezvous fails with [`BootError::ServerGone`]), joins the
    /// threads and returns the final report.
    pub fn shutdown(mut self) -> ServerReport {
        self.stop();
        self.shared.lock().report.clone()
    }

    fn stop(&mut self) {
        let workers = {
            let mut st = self.shared.lock();
            st.shutdown = true;
            for s in &st.streams {
                let _ = s.shutdown(Shutdown::Both);
            }
            std::mem::take(&mut st.workers)
        };
        self.shared.cond.notify_all();
        if let Some(acceptor) = self.acceptor.take() {
            // accept() has no timeout: wake it with a connection of our own.
            // If even that fails the thread is left to die with the process
            // rather than blocking the caller.
            if TcpStream::connect_timeout(&wake_addr(self.addr), Duration::from_secs(1)).is_ok() {
                let _ = acceptor.join();
            }
        }
        for w in workers {
            let _ = w.join();
        }
    }
}

impl Drop for BootServerHandle {
    fn drop(&mut self) {
        if self.acceptor.is_some() {
            self.stop();
        }
    }
}

/// Where to connect to reach a listener bound to `addr`.
fn wake_addr(addr: SocketAddr) -> SocketAddr {
    let ip = match addr.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    SocketAddr::new(ip, addr.port())
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panicking worker must not take the whole launcher down with it.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn accept_loop(sh: &Arc<Shared>, listener: &TcpListener) {
    loop {
        let res = listener.accept();
        let mut st = sh.lock();
        if st.shutdown {
            return;
        }
        let stream = match res {
            Ok((s, _)) => s,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(_) => {
                // Out of descriptors or similar: back off instead of spinning.
                drop(st);
                std::thread::sleep(Duration::from_millis(20));
                continue;
            }
        };
        if let Ok(c) = stream.try_clone() {
            st.streams.push(c);
        }
        let sh2 = Arc::clone(sh);
        let spawned = std::thread::Builder::new()
            .name("sss-boot-task".into())
            .spawn(move || serve(&sh2, stream));
        if let Ok(h) = spawned {
            st.workers.push(h);
        }
    }
}

/// Answers an error and hangs up.
fn refuse(mut s: &TcpStream, msg: &str) {
    let _ = frame::write_frame(&mut s, frame::ERROR, msg.as_bytes());
    let _ = s.shutdown(Shutdown::Both);
}

fn serve(sh: &Shared, stream: TcpStream) {
    let _ = stream.set_nodelay(true);
    let _ = stream.set_read_timeout(Some(HELLO_TIMEOUT));
    let nonce = auth::nonce();
    if frame::write_frame(&mut &stream, frame::CHALLENGE, &nonce).is_err() {
        sh.lock().report.refused += 1;
        return;
    }
    let mut rd = &stream;
    let hello = match frame::read_frame(&mut rd, frame::MAX_TO_SERVER) {
        Ok(f) if f.kind == frame::HELLO => frame::parse_hello(&f.body),
        Ok(f) => Err(format!("expected HELLO, got frame kind {}", f.kind)),
        Err(_) => {
            sh.lock().report.refused += 1;
            return;
        }
    };
    let rank = {
        let mut st = sh.lock();
        let checked = hello.and_then(|h| {
            let proven = sh.secret.as_ref().is_none_or(|s| {
                auth::hello_ok(s, &nonce, h.job, h.rank, h.size, &h.tag)
            });
            if !proven {
                Err("HELLO not authenticated: the task does not hold this job's secret (SSS_JOB_SECRET)".into())
            } else if h.job != sh.job {
                Err(format!(
                    "task claims job {} but this server runs job {}",
                    h.job, sh.job
                ))
            } else if h.size != sh.size {
                Err(format!(
                    "task claims a job of {} tasks, this job has {}",
                    h.size, sh.size
                ))
            } else if h.rank >= sh.size {
                Err(format!(
                    "rank {} out of range for {} tasks",
                    h.rank, sh.size
                ))
            } else if st.joined[h.rank as usize] {
                Err(format!("rank {} already joined", h.rank))
            } else {
                Ok(h.rank)
            }
        });
        match checked {
            Ok(r) => {
                st.joined[r as usize] = true;
                st.report.joined += 1;
                r
            }
            Err(msg) => {
                st.report.refused += 1;
                drop(st);
                refuse(&stream, &msg);
                return;
            }
        }
    };
    // Between rounds a task may compute for as long as it likes.
    let _ = stream.set_read_timeout(None);
    let mut wr = &stream;
    if frame::write_frame(&mut wr, frame::WELCOME, &[]).is_ok() {
        serve_rounds(sh, &stream, rank);
    }
    let mut st = sh.lock();
    let sent = st.sent[rank as usize];
    st.gone[rank as usize] = Some(sent);
    drop(st);
    sh.cond.notify_all();
}

/// Relays the rounds of task `rank` until it disconnects or the server stops.
fn serve_rounds(sh: &Shared, stream: &TcpStream, rank: u32) {
    let r = rank as usize;
    loop {
        let mut rd = stream;
        let f = match frame::read_frame(&mut rd, frame::MAX_TO_SERVER) {
            Ok(f) => f,
            Err(_) => return,
        };
        if f.kind != frame::ROUND {
            refuse(
                stream,
                &format!("expected ROUND, got frame kind {}", f.kind),
            );
            return;
        }
        let (round, data) = match frame::parse_round(&f.body) {
            Ok(x) => x,
            Err(msg) => {
                refuse(stream, &msg);
                return;
            }
        };
        let mut st = sh.lock();
        if round != st.sent[r] {
            let msg = format!("task {rank} sent round {round}, expected {}", st.sent[r]);
            drop(st);
            refuse(stream, &msg);
            return;
        }
        st.sent[r] += 1;
        st.report.received += 1;
        let size = sh.size;
        let entry = st.rounds.entry(round).or_insert_with(|| Round {
            parts: vec![None; size as usize],
            have: 0,
            answer: None,
            served: 0,
        });
        entry.parts[r] = Some(data.to_vec());
        entry.have += 1;
        if entry.have == size {
            let body = frame::gathered(
                round,
                entry.parts.iter().map(|p| p.as_deref().unwrap_or(&[])),
            );
            entry.answer = Some(Arc::new(body));
            entry.parts = Vec::new();
            st.report.rounds += 1;
            sh.cond.notify_all();
        }
        // Wait for the round to complete, a blocker to show up, or shutdown.
        let answer = loop {
            if st.shutdown {
                return;
            }
            if let Some(a) = st.rounds.get(&round).and_then(|x| x.answer.clone()) {
                break Ok(a);
            }
            if let Some(g) = blocker(&st, round) {
                if !st.report.early_disconnects.iter().any(|d| d.rank == g) {
                    st.report
                        .early_disconnects
                        .push(EarlyDisconnect { rank: g, round });
                }
                break Err(format!(
                    "task {g} left the job before round {round}; the job cannot continue"
                ));
            }
            st = sh.cond.wait(st).unwrap_or_else(|p| p.into_inner());
        };
        drop(st);
        match answer {
            Ok(body) => {
                let mut wr = stream;
                let ok = frame::write_frame(&mut wr, frame::GATHERED, &body).is_ok();
                let mut st = sh.lock();
                if let Some(x) = st.rounds.get_mut(&round) {
                    x.served += 1;
                    if x.served == size {
                        st.rounds.remove(&round);
                    }
                }
                if !ok {
                    return;
                }
            }
            Err(msg) => {
                refuse(stream, &msg);
                return;
            }
        }
    }
}

/// A task that disconnected without sending `round`, if any.
fn blocker(st: &State, round: u32) -> Option<u32> {
    st.gone
        .iter()
        .position(|g| matches!(g, Some(sent) if *sent <= round))
        .map(|i| i as u32)
}
