//! The task side: both ranks of the bench job run [`task_main`] with the
//! same plan; rank 0 times and records, rank 1 answers. Baseline sockets
//! are bound to each task's own node address, so UDP and TCP travel
//! between the same two hosts as MBCF does.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sss_mbcf::{Fifo, Options, Perm, Segment, SegmentInfo, Task};

use crate::plan::{self, Item, LatOp, Plan, Proto, Wait, CPU_SIZE, GSO_SEG};
use crate::{sock, sys, BenchError};

/// Offset of the counter that WRITE+notify bumps.
const FLAG: usize = 0;
/// Offset of the word the atomics work on.
const ATOMIC: usize = 64;
/// Offset of the data area WRITE and READ use.
const DATA: usize = 4096;
/// Bytes of the data area: the largest bandwidth operation.
const DATA_LEN: usize = 1 << 20;
/// Offset of the FIFO queue.
const FIFO: usize = DATA + DATA_LEN;
/// Slots of the FIFO queue; a ping-pong uses one at a time.
const FIFO_SLOTS: u32 = 64;
/// Largest FIFO message.
const FIFO_MAX: usize = 2048;
/// Bytes of the receive buffer: one largest datagram or GRO batch.
const RBUF: usize = 1 << 16;
/// How long a baseline socket waits before the item is declared failed.
const SOCK_TIMEOUT: Duration = Duration::from_secs(10);

/// Hidden task-side arguments (`sss __bench-task`).
#[derive(Debug, Clone, clap::Args)]
pub struct TaskArgs {
    /// The plan written by `sss bench`.
    #[arg(long)]
    pub plan: std::path::PathBuf,
    /// Where rank 0 writes the figures (JSON object key → value).
    #[arg(long)]
    pub out: std::path::PathBuf,
    /// File rank 0 appends one byte to per finished item.
    #[arg(long)]
    pub progress: std::path::PathBuf,
    /// Start the schedule at this item (rotates the order per repetition).
    #[arg(long, default_value_t = 0)]
    pub start: usize,
}

struct Ctx {
    t: Task,
    seg: Segment,
    peer: SegmentInfo,
    rank: u32,
    other: u32,
    fifo: Fifo,
    /// Signals received back at rank 0.
    sig_count: Arc<AtomicU64>,
    /// Notifications this task expects to have received so far.
    flag_seen: u64,
    sig_seen: u64,
    udp: UdpSocket,
    udp_peer: SocketAddr,
    tcp: TcpStream,
    /// The GSO floor's own sockets, so that its options touch no baseline.
    gso: UdpSocket,
    gso_peer: SocketAddr,
    /// Of the last zero-copy run's completed sends: the share the kernel
    /// reported copied after all, and how many completed.
    zerocopy_copied: (f64, u64),
    /// How long a hybrid waiter polls: MBCF's `SSS_SPIN_US`.
    spin: Duration,
    /// The cache-line floor's shared file and its round count.
    line_path: PathBuf,
    line_seq: u64,
    line: Option<sys::SharedPage>,
    buf: Vec<u8>,
    rbuf: Vec<u8>,
}

/// Runs one repetition of the plan as a task of the bench job.
pub fn task_main(args: &TaskArgs) -> Result<(), BenchError> {
    let plan: Plan = serde_json::from_slice(
        &std::fs::read(&args.plan)
            .map_err(|e| BenchError::Io(format!("cannot read plan {}", args.plan.display()), e))?,
    )
    .map_err(|e| BenchError::Parse(format!("plan: {e}")))?;
    let t = Task::init().map_err(mbcf)?;
    if t.size() != 2 {
        return Err(BenchError::Usage(format!(
            "the bench job needs exactly 2 tasks, not {}",
            t.size()
        )));
    }
    let rank = t.rank();
    let other = 1 - rank;
    let seg_len = FIFO + sss_mbcf::fifo_bytes(FIFO_SLOTS, FIFO_MAX);
    let seg = t.alloc(seg_len, Perm::ALL).map_err(mbcf)?;
    let fifo = t
        .fifo_create(&seg, FIFO, FIFO_SLOTS, FIFO_MAX)
        .map_err(mbcf)?;
    let sig_count = Arc::new(AtomicU64::new(0));
    if rank == 0 {
        let c = sig_count.clone();
        t.set_handler(
            0,
            Arc::new(move |_, _| {
                c.fetch_add(1, Ordering::Release);
            }),
        )
        .map_err(mbcf)?;
    } else {
        // The echo: answer from the handler, as seed 000 measured SIGNAL.
        let c = sig_count.clone();
        t.set_handler(
            0,
            Arc::new(move |ctx, data| {
                // A failed echo shows up as a timeout at rank 0.
                let _ = ctx.task.signal(ctx.from, 0, data, Options::default());
                c.fetch_add(1, Ordering::Release);
            }),
        )
        .map_err(mbcf)?;
    }
    let infos = t.exchange(&seg).map_err(mbcf)?;
    let peer = infos
        .get(other as usize)
        .cloned()
        .ok_or_else(|| BenchError::Usage("peer segment missing".into()))?;

    // Baseline sockets on this task's node address.
    let node = t.node().to_string();
    let ip: std::net::IpAddr = node
        .parse()
        .map_err(|_| BenchError::Usage(format!("node {node:?} is not an IP address")))?;
    let udp = UdpSocket::bind((ip, 0)).map_err(io("bind udp"))?;
    udp.set_read_timeout(Some(SOCK_TIMEOUT))
        .map_err(io("udp timeout"))?;
    let listener = TcpListener::bind((ip, 0)).map_err(io("bind tcp"))?;
    let gso = UdpSocket::bind((ip, 0)).map_err(io("bind gso udp"))?;
    sys::set_bufs(gso.as_raw_fd(), 8 << 20);
    if rank == 0 {
        sys::set_udp_segment(gso.as_raw_fd(), GSO_SEG as u16).map_err(io("UDP_SEGMENT"))?;
    } else {
        sys::set_udp_gro(gso.as_raw_fd()).map_err(io("UDP_GRO"))?;
    }
    gso.set_read_timeout(Some(SOCK_TIMEOUT))
        .map_err(io("udp timeout"))?;
    let mine = format!(
        "{}\n{}\n{}",
        udp.local_addr().map_err(io("udp addr"))?,
        listener.local_addr().map_err(io("tcp addr"))?,
        gso.local_addr().map_err(io("gso addr"))?
    );
    let all = t.allgather(mine.as_bytes()).map_err(mbcf)?;
    let theirs = String::from_utf8_lossy(&all[other as usize]).to_string();
    let mut lines = theirs.lines();
    let parse = |s: Option<&str>| -> Result<SocketAddr, BenchError> {
        s.and_then(|s| s.parse().ok())
            .ok_or_else(|| BenchError::Parse(format!("peer addresses {theirs:?}")))
    };
    let udp_peer = parse(lines.next())?;
    let tcp_peer = parse(lines.next())?;
    let gso_peer = parse(lines.next())?;
    let tcp = if rank == 0 {
        TcpStream::connect(tcp_peer).map_err(io("tcp connect"))?
    } else {
        listener.accept().map_err(io("tcp accept"))?.0
    };
    tcp.set_nodelay(true).map_err(io("TCP_NODELAY"))?;
    tcp.set_read_timeout(Some(SOCK_TIMEOUT))
        .map_err(io("tcp timeout"))?;

    let mut cx = Ctx {
        t,
        seg,
        peer,
        rank,
        other,
        fifo,
        sig_count,
        flag_seen: 0,
        sig_seen: 0,
        udp,
        udp_peer,
        tcp,
        gso,
        gso_peer,
        zerocopy_copied: (0.0, 0),
        spin: sss_mbcf::TaskConfig::from_env()
            .map(|c| c.spin)
            .unwrap_or(Duration::from_micros(50)),
        line_path: args
            .plan
            .parent()
            .unwrap_or(Path::new("."))
            .join("cache-line"),
        line_seq: 0,
        line: None,
        buf: vec![0x5a; DATA_LEN],
        rbuf: vec![0; RBUF],
    };
    let mut out = BTreeMap::new();
    let mut progress = if rank == 0 {
        Some(
            std::fs::OpenOptions::new()
                .append(true)
                .create(true)
                .open(&args.progress)
                .map_err(io("progress file"))?,
        )
    } else {
        None
    };
    let n = plan.items.len();
    for k in 0..n {
        let item = plan.items[(k + args.start) % n.max(1)];
        // Goes to the job log, which `sss bench` shows when a job fails.
        eprintln!("rank {rank}: item {k}/{n}: {item:?}");
        cx.t.barrier().map_err(mbcf)?;
        for (key, v) in cx.run(&plan, item)? {
            out.insert(key, v);
        }
        if let Some(p) = progress.as_mut() {
            // Progress is cosmetic: a failed write must not fail the bench.
            let _ = p.write_all(b".");
        }
    }
    cx.t.barrier().map_err(mbcf)?;
    if rank == 0 {
        out.insert(
            "mbcf_stats".into(),
            serde_json::Value::String(format!("{:?}", cx.t.stats())),
        );
        let json = serde_json::to_vec(&out).map_err(|e| BenchError::Parse(e.to_string()))?;
        std::fs::write(&args.out, json).map_err(io("write results"))?;
    }
    Ok(())
}

fn mbcf(e: sss_mbcf::Error) -> BenchError {
    BenchError::Mbcf(e.to_string())
}

fn io(what: &'static str) -> impl Fn(std::io::Error) -> BenchError {
    move |e| BenchError::Io(what.to_string(), e)
}

type Figures = Vec<(String, serde_json::Value)>;

fn num(v: f64) -> serde_json::Value {
    serde_json::json!(v)
}

impl Ctx {
    fn run(&mut self, plan: &Plan, item: Item) -> Result<Figures, BenchError> {
        // A FIFO pop leaves the buffer at the message's length; a short
        // buffer would truncate datagrams and slow stream reads.
        self.rbuf.resize(RBUF, 0);
        Ok(match item {
            Item::Rtt { proto, size, wait } => {
                if proto == Proto::Line {
                    self.line_open()?;
                }
                let us = self.pingpong(plan, |cx| cx.rtt_once(proto, size, wait));
                if proto == Proto::Line {
                    self.line_close()?;
                }
                vec![(plan::rtt_key(&proto.key(wait), size), num(us?))]
            }
            Item::Lat { op, size } => {
                let us = self.pingpong(plan, |cx| cx.lat_once(op, size))?;
                vec![(plan::lat_key(op.name(), size), num(us / 2.0))]
            }
            Item::Bw {
                proto: proto @ (Proto::Gso | Proto::GsoZerocopy),
                size,
                wait,
            } => {
                let (mbs, got) = self.gso_bandwidth(plan.bw_ops(size), size, wait, proto)?;
                let key = proto.key(wait);
                let mut v = vec![
                    (plan::bw_key(&key, size), num(mbs)),
                    (plan::delivered_key(&key, size), num(got)),
                ];
                if proto == Proto::GsoZerocopy && self.rank == 0 {
                    v.push((plan::copied_key(&key, size), num(self.zerocopy_copied.0)));
                }
                v
            }
            Item::Bw { proto, size, wait } => {
                let mbs = self.bandwidth(plan, proto, size, wait)?;
                vec![(plan::bw_key(&proto.key(wait), size), num(mbs))]
            }
            Item::Cpu { proto } => {
                let (send, recv) = self.cpu(plan, proto)?;
                vec![
                    (plan::cpu_key(proto.name(), "send"), num(send)),
                    (plan::cpu_key(proto.name(), "recv"), num(recv)),
                ]
            }
        })
    }

    /// Warm-up then timed rounds of `once` in [`plan::CHUNKS`] chunks;
    /// the median chunk's mean round trip in µs (meaningful at rank 0,
    /// which starts every round). A stall of one process (a daemon's
    /// time slice, a blocked wait) moves one chunk, not the item: a shm
    /// item lasts about a millisecond.
    fn pingpong(
        &mut self,
        plan: &Plan,
        mut once: impl FnMut(&mut Self) -> Result<(), BenchError>,
    ) -> Result<f64, BenchError> {
        for _ in 0..plan.warmup {
            once(self)?;
        }
        let per = plan.chunk_rounds();
        let mut means = Vec::with_capacity(plan::CHUNKS as usize);
        for _ in 0..plan::CHUNKS {
            let start = Instant::now();
            for _ in 0..per {
                once(self)?;
            }
            means.push(start.elapsed().as_secs_f64() * 1e6 / per as f64);
        }
        Ok(plan::median_of(&mut means))
    }

    fn flag(&self) -> Result<&AtomicU64, BenchError> {
        self.seg.word(FLAG).map_err(mbcf)
    }

    /// One WRITE+notify to the peer.
    fn write_ping(&self, size: usize) -> Result<(), BenchError> {
        self.t
            .write(
                self.peer.at(DATA as u64),
                &self.buf[..size],
                Options::notify(self.peer.at(FLAG as u64)),
            )
            .map_err(mbcf)?;
        Ok(())
    }

    fn wait_flag(&mut self) -> Result<(), BenchError> {
        self.flag_seen += 1;
        let want = self.flag_seen;
        self.t.wait_word(self.flag()?, |v| v >= want);
        Ok(())
    }

    /// Maps the cache-line floor's file: rank 0 creates it first.
    fn line_open(&mut self) -> Result<(), BenchError> {
        if self.rank == 0 {
            self.line =
                Some(sys::SharedPage::map(&self.line_path, true).map_err(io("cache line"))?);
        }
        self.t.barrier().map_err(mbcf)?;
        if self.rank == 1 {
            self.line =
                Some(sys::SharedPage::map(&self.line_path, false).map_err(io("cache line"))?);
        }
        self.line_seq = 0;
        self.t.barrier().map_err(mbcf)
    }

    fn line_close(&mut self) -> Result<(), BenchError> {
        self.t.barrier().map_err(mbcf)?;
        self.line = None;
        if self.rank == 0 {
            let _ = std::fs::remove_file(&self.line_path);
        }
        Ok(())
    }

    fn sock_recv(&mut self, tcp: bool, n: usize, wait: Wait) -> Result<(), BenchError> {
        if tcp {
            let fd = self.tcp.as_raw_fd();
            sock::read_exact(fd, &mut self.rbuf[..n], wait, self.spin, SOCK_TIMEOUT)
                .map_err(io("tcp recv"))
        } else {
            let fd = self.udp.as_raw_fd();
            sock::recv(fd, &mut self.rbuf, wait, self.spin, SOCK_TIMEOUT)
                .map(drop)
                .map_err(io("udp recv"))
        }
    }

    fn rtt_once(&mut self, proto: Proto, size: usize, wait: Wait) -> Result<(), BenchError> {
        match proto {
            Proto::Mbcf => {
                if self.rank == 0 {
                    self.write_ping(size)?;
                    self.wait_flag()
                } else {
                    self.wait_flag()?;
                    self.write_ping(size)
                }
            }
            Proto::Udp => {
                if self.rank == 0 {
                    self.udp
                        .send_to(&self.buf[..size], self.udp_peer)
                        .map_err(io("udp send"))?;
                    self.sock_recv(false, 0, wait)
                } else {
                    self.sock_recv(false, 0, wait)?;
                    self.udp
                        .send_to(&self.buf[..size], self.udp_peer)
                        .map_err(io("udp send"))?;
                    Ok(())
                }
            }
            Proto::Tcp => {
                // A stream has no empty message: 0 B travels as 1 B.
                let n = size.max(1);
                if self.rank == 0 {
                    self.tcp.write_all(&self.buf[..n]).map_err(io("tcp send"))?;
                    self.sock_recv(true, n, wait)
                } else {
                    self.sock_recv(true, n, wait)?;
                    self.tcp.write_all(&self.buf[..n]).map_err(io("tcp send"))?;
                    Ok(())
                }
            }
            Proto::Line => {
                let w = self
                    .line
                    .as_ref()
                    .ok_or_else(|| BenchError::Usage("cache line not mapped".into()))?
                    .word();
                let odd = 2 * self.line_seq + 1;
                self.line_seq += 1;
                if self.rank == 0 {
                    w.store(odd, Ordering::Release);
                    sock::spin_until(w, odd + 1, SOCK_TIMEOUT).map_err(io("cache line"))
                } else {
                    sock::spin_until(w, odd, SOCK_TIMEOUT).map_err(io("cache line"))?;
                    w.store(odd + 1, Ordering::Release);
                    Ok(())
                }
            }
            Proto::Gso | Proto::GsoZerocopy | Proto::Memcpy => Err(BenchError::Usage(format!(
                "no round trip item for {}",
                proto.name()
            ))),
        }
    }

    fn lat_once(&mut self, op: LatOp, size: usize) -> Result<(), BenchError> {
        let t = &self.t;
        match op {
            LatOp::Read => {
                if self.rank == 0 {
                    t.read(self.peer.at(DATA as u64), size, Options::status())
                        .and_then(|r| r.wait_data())
                        .map_err(mbcf)?;
                }
            }
            LatOp::Swap => {
                if self.rank == 0 {
                    t.swap(self.peer.at(ATOMIC as u64), 7, Options::status())
                        .and_then(|r| r.wait_value())
                        .map_err(mbcf)?;
                }
            }
            LatOp::Cas => {
                if self.rank == 0 {
                    t.cas(self.peer.at(ATOMIC as u64), 7, 7, Options::status())
                        .and_then(|r| r.wait_value())
                        .map_err(mbcf)?;
                }
            }
            LatOp::Fifo => {
                let q = self.peer.at(FIFO as u64);
                let mut msg = std::mem::take(&mut self.rbuf);
                if self.rank == 0 {
                    t.fifo_push(q, &self.buf[..size], Options::default())
                        .map_err(mbcf)?;
                    self.fifo.wait_pop(t, &mut msg);
                } else {
                    self.fifo.wait_pop(t, &mut msg);
                    t.fifo_push(q, &msg, Options::default()).map_err(mbcf)?;
                }
                self.rbuf = msg;
            }
            LatOp::Signal => {
                // Both sides wait, as in the WRITE ping-pong: rank 1 for
                // the signal it echoes (its handler counts it).
                if self.rank == 0 {
                    t.signal(self.other, 0, &self.buf[..size], Options::default())
                        .map_err(mbcf)?;
                }
                self.sig_seen += 1;
                let want = self.sig_seen;
                t.wait_word(&self.sig_count, |v| v >= want);
            }
        }
        Ok(())
    }

    /// Streams operations of `size` bytes; MB/s at rank 0 (0 at rank 1).
    fn bandwidth(
        &mut self,
        plan: &Plan,
        proto: Proto,
        size: usize,
        wait: Wait,
    ) -> Result<f64, BenchError> {
        let ops = plan.bw_ops(size);
        let start = Instant::now();
        match proto {
            Proto::Mbcf => {
                if self.rank == 0 {
                    for _ in 0..ops {
                        self.t
                            .write(
                                self.peer.at(DATA as u64),
                                &self.buf[..size],
                                Options::default(),
                            )
                            .map_err(mbcf)?;
                    }
                    // Every write acknowledged, so applied at the target.
                    self.t.quiet().map_err(mbcf)?;
                }
            }
            Proto::Udp | Proto::Line => {
                return Err(BenchError::Usage(format!(
                    "no bandwidth item for {}",
                    proto.name()
                )))
            }
            Proto::Gso | Proto::GsoZerocopy => {
                return Ok(self.gso_bandwidth(ops, size, wait, proto)?.0)
            }
            Proto::Memcpy => {
                if self.rank == 0 {
                    let mut dst = vec![0u8; size];
                    for _ in 0..ops {
                        dst.copy_from_slice(std::hint::black_box(&self.buf[..size]));
                        std::hint::black_box(&mut dst);
                    }
                }
            }
            Proto::Tcp => {
                let total = ops * size as u64;
                if self.rank == 0 {
                    for _ in 0..ops {
                        self.tcp
                            .write_all(&self.buf[..size])
                            .map_err(io("tcp send"))?;
                    }
                    self.tcp
                        .read_exact(&mut self.rbuf[..1])
                        .map_err(io("tcp ack"))?;
                } else {
                    self.drain_tcp(total, wait)?;
                    self.tcp.write_all(&[1]).map_err(io("tcp ack"))?;
                }
            }
        }
        let secs = start.elapsed().as_secs_f64().max(1e-9);
        Ok(ops as f64 * size as f64 / secs / 1e6)
    }

    /// The GSO UDP floor: rank 0 fires `ops` sends of `size` bytes, rank 1
    /// counts what arrives (loopback drops what overflows its buffer);
    /// (MB/s delivered as seen by the receiver, fraction of the bytes
    /// delivered), reported at rank 0.
    ///
    /// `Proto::GsoZerocopy` sends with `MSG_ZEROCOPY` from a socket of its
    /// own, connected to the receiver, and drains the completions as it
    /// goes (the kernel stops taking zero-copy sends when they pile up).
    fn gso_bandwidth(
        &mut self,
        ops: u64,
        size: usize,
        wait: Wait,
        proto: Proto,
    ) -> Result<(f64, f64), BenchError> {
        let start = Instant::now();
        let (mut mbs, mut frac) = (0.0, 0.0);
        if self.rank == 0 && proto == Proto::GsoZerocopy {
            let local = self.gso.local_addr().map_err(io("gso addr"))?;
            let zc = UdpSocket::bind((local.ip(), 0)).map_err(io("bind zerocopy udp"))?;
            let fd = zc.as_raw_fd();
            sys::set_bufs(fd, 8 << 20);
            sys::set_udp_segment(fd, GSO_SEG as u16).map_err(io("UDP_SEGMENT"))?;
            sys::set_zerocopy(fd).map_err(io("SO_ZEROCOPY"))?;
            zc.connect(self.gso_peer)
                .map_err(io("connect zerocopy udp"))?;
            let (mut sent, mut done, mut copied) = (0u64, 0u64, 0u64);
            for _ in 0..ops {
                match sys::send_zerocopy(fd, &self.buf[..size]) {
                    Ok(_) => sent += 1,
                    // A full queue, or too many sends not completed yet.
                    Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {}
                    Err(e) => return Err(io("zerocopy send")(e)),
                }
                if sent.saturating_sub(done) >= 64 {
                    let (d, c) = sys::zerocopy_done(fd);
                    done += d;
                    copied += c;
                }
            }
            let until = Instant::now() + Duration::from_millis(200);
            while done < sent && Instant::now() < until {
                let (d, c) = sys::zerocopy_done(fd);
                done += d;
                copied += c;
            }
            self.zerocopy_copied = (copied as f64 / done.max(1) as f64, done);
        } else if self.rank == 0 {
            for _ in 0..ops {
                match self.gso.send_to(&self.buf[..size], self.gso_peer) {
                    // A full queue drops datagrams; so does the receiver's.
                    Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {}
                    r => {
                        r.map_err(io("gso send"))?;
                    }
                }
            }
        } else {
            let fd = self.gso.as_raw_fd();
            let quiet = Duration::from_millis(100);
            // Block mode waits at most `quiet` for each receive.
            self.gso
                .set_read_timeout(Some(quiet))
                .map_err(io("udp timeout"))?;
            let r =
                sock::drain_datagrams(fd, &mut self.rbuf, wait, ops * size as u64, quiet, start);
            self.gso
                .set_read_timeout(Some(SOCK_TIMEOUT))
                .map_err(io("udp timeout"))?;
            let (got, last) = r.map_err(io("gso recv"))?;
            mbs = got as f64 / last.as_secs_f64().max(1e-9) / 1e6;
            frac = got as f64 / (ops * size as u64).max(1) as f64;
        }
        let mut mine = mbs.to_le_bytes().to_vec();
        mine.extend_from_slice(&frac.to_le_bytes());
        let all = self.t.allgather(&mine).map_err(mbcf)?;
        let get = |at: usize| {
            all.get(1)
                .and_then(|b| b.get(at..at + 8))
                .and_then(|b| <[u8; 8]>::try_from(b).ok())
                .map(f64::from_le_bytes)
                .ok_or_else(|| BenchError::Parse("gso figure".into()))
        };
        Ok((get(0)?, get(8)?))
    }

    fn drain_tcp(&mut self, mut left: u64, wait: Wait) -> Result<(), BenchError> {
        while left > 0 {
            let want = (left as usize).min(self.rbuf.len());
            let n = sock::recv(
                self.tcp.as_raw_fd(),
                &mut self.rbuf[..want],
                wait,
                self.spin,
                SOCK_TIMEOUT,
            )
            .map_err(io("tcp recv"))?;
            if n == 0 {
                return Err(BenchError::Usage("tcp peer closed early".into()));
            }
            left -= n as u64;
        }
        Ok(())
    }

    /// CPU time per operation of a long one-way stream of small messages:
    /// (sender ns/op, receiver ns/op), every thread of each process counted.
    fn cpu(&mut self, plan: &Plan, proto: Proto) -> Result<(f64, f64), BenchError> {
        let ops = plan.cpu_ops;
        self.t.barrier().map_err(mbcf)?;
        let c0 = thread_cpu_ns();
        let mut done = ops;
        match proto {
            Proto::Mbcf => {
                if self.rank == 0 {
                    for _ in 1..ops {
                        self.t
                            .write(
                                self.peer.at(DATA as u64),
                                &self.buf[..CPU_SIZE],
                                Options::default(),
                            )
                            .map_err(mbcf)?;
                    }
                    self.write_ping(CPU_SIZE)?;
                    self.t.quiet().map_err(mbcf)?;
                } else {
                    // In-order delivery: the notify of the last write means all arrived.
                    self.wait_flag()?;
                }
            }
            Proto::Udp => {
                if self.rank == 0 {
                    for _ in 0..ops {
                        self.udp
                            .send_to(&self.buf[..CPU_SIZE], self.udp_peer)
                            .map_err(io("udp send"))?;
                    }
                } else {
                    // Datagrams may be dropped: count what arrives, stop
                    // after a short silence.
                    done = 0;
                    self.udp
                        .set_read_timeout(Some(Duration::from_millis(100)))
                        .map_err(io("udp timeout"))?;
                    while done < ops {
                        match self.udp.recv_from(&mut self.rbuf) {
                            Ok(_) => done += 1,
                            Err(_) => break,
                        }
                    }
                    self.udp
                        .set_read_timeout(Some(SOCK_TIMEOUT))
                        .map_err(io("udp timeout"))?;
                }
            }
            Proto::Gso | Proto::GsoZerocopy | Proto::Line | Proto::Memcpy => {
                return Err(BenchError::Usage(format!(
                    "no CPU item for {}",
                    proto.name()
                )))
            }
            Proto::Tcp => {
                if self.rank == 0 {
                    for _ in 0..ops {
                        self.tcp
                            .write_all(&self.buf[..CPU_SIZE])
                            .map_err(io("tcp send"))?;
                    }
                    self.tcp
                        .read_exact(&mut self.rbuf[..1])
                        .map_err(io("tcp ack"))?;
                } else {
                    self.drain_tcp(ops * CPU_SIZE as u64, Wait::Block)?;
                    self.tcp.write_all(&[1]).map_err(io("tcp ack"))?;
                }
            }
        }
        let per_op = cpu_ns_since(&c0) as f64 / done.max(1) as f64;
        let all = self.t.allgather(&per_op.to_le_bytes()).map_err(mbcf)?;
        let get = |r: usize| {
            all.get(r)
                .and_then(|b| <[u8; 8]>::try_from(b.as_slice()).ok())
                .map(f64::from_le_bytes)
                .unwrap_or(f64::NAN)
        };
        Ok((get(0), get(1)))
    }
}

/// CPU time of each thread of this process in ns, by thread id: the
/// first field of `/proc/self/task/*/schedstat` (ns resolution, unlike
/// rusage ticks on some kernels).
pub fn thread_cpu_ns() -> std::collections::HashMap<u64, u64> {
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return Default::default();
    };
    dir.flatten()
        .filter_map(|e| {
            let tid = e.file_name().to_str()?.parse::<u64>().ok()?;
            let s = std::fs::read_to_string(e.path().join("schedstat")).ok()?;
            Some((tid, s.split_whitespace().next()?.parse::<u64>().ok()?))
        })
        .collect()
}

/// CPU time this process's threads used since `before`
/// ([`thread_cpu_ns`]): each live thread's growth, a new thread's whole
/// time. A sum over the live threads dropped when a thread that had run
/// exited in between, which left a figure of 0.
pub fn cpu_ns_since(before: &std::collections::HashMap<u64, u64>) -> u64 {
    thread_cpu_ns()
        .iter()
        .map(|(tid, &t)| t.saturating_sub(before.get(tid).copied().unwrap_or(0)))
        .sum()
}

/// True when `path` names a results file rank 0 finished.
pub fn results_ready(path: &Path) -> bool {
    path.metadata().is_ok_and(|m| m.len() > 0)
}

#[cfg(test)]
mod tests {
    use super::{cpu_ns_since, thread_cpu_ns};

    fn burn(ms: u64) {
        let end = std::time::Instant::now() + std::time::Duration::from_millis(ms);
        let mut x = 0u64;
        while std::time::Instant::now() < end {
            x = std::hint::black_box(x.wrapping_add(1));
        }
    }

    /// A thread that ran and exited between the two looks takes its time
    /// away from no one: the figure is what the live threads used.
    #[test]
    fn cpu_time_survives_a_thread_that_exits_in_between() {
        let t = std::thread::spawn(|| burn(30));
        std::thread::sleep(std::time::Duration::from_millis(10));
        let before = thread_cpu_ns();
        t.join().unwrap();
        burn(5);
        let used = cpu_ns_since(&before);
        assert!(used >= 1_000_000, "{used} ns");
    }
}
