//! An attacker on the network and another user on the node, against a job
//! of two tasks on 127.0.0.2 and 127.0.0.3 (`SSS_SECURITY=auth`, the
//! default, and `encrypt`).
//!
//! The network attacker records the job's datagrams with a packet socket
//! on the loopback interface and sends from the member's own address with
//! a raw socket: replays, flipped bits, WRITEs and FETCH_ADDs forged with
//! the sniffed segment key (unsealed, with a made-up tag, sealed under
//! another secret), another job's datagrams, and the epoch-reset ACK that
//! once partitioned a job. Every one must be refused and counted, none
//! applied, and the job must go on working. Both need root (CAP_NET_RAW);
//! without it these tests say so and pass.
//!
//! The local attacker is another user (uid 65534, this test binary run
//! again under it): it may not open any of the job's shared-memory files,
//! and its datagrams are dropped as foreign.

#![allow(unsafe_code)]

use sss_mbcf::{Options, Perm, Security, Task, TaskConfig, ThreadBoot};
use sss_seal::Seals;
use sss_wire::{Body, Flags, Format, Frag, Packet, Status, TaskId};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::os::unix::process::CommandExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

fn two_nodes(security: Security) -> Vec<Task> {
    let boots = ThreadBoot::group(2, &["127.0.0.2", "127.0.0.3"]);
    let cfg = TaskConfig {
        security,
        ..TaskConfig::default()
    };
    let hs: Vec<_> = boots
        .into_iter()
        .map(|b| {
            let cfg = cfg.clone();
            std::thread::spawn(move || Task::join(Box::new(b), cfg))
        })
        .collect();
    hs.into_iter()
        .map(|h| h.join().unwrap().expect("join"))
        .collect()
}

fn v4(a: SocketAddr) -> SocketAddrV4 {
    match a {
        SocketAddr::V4(a) => a,
        SocketAddr::V6(_) => panic!("tasks bind IPv4 here"),
    }
}

/// A packet socket on `lo` that keeps the UDP payloads sent from `from`
/// to `to`, until stopped.
struct Sniffer {
    stop: Arc<AtomicBool>,
    seen: Arc<Mutex<Vec<Vec<u8>>>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Sniffer {
    fn start(from: SocketAddrV4, to: SocketAddrV4) -> Sniffer {
        let proto = (libc::ETH_P_IP as u16).to_be();
        // SAFETY: plain socket(2) call; the descriptor is owned below.
        let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_DGRAM, i32::from(proto)) };
        assert!(
            fd >= 0,
            "packet socket: {}",
            std::io::Error::last_os_error()
        );
        // SAFETY: the name is a NUL-terminated literal.
        let lo = unsafe { libc::if_nametoindex(c"lo".as_ptr()) };
        // SAFETY: sockaddr_ll is plain data; all-zero is a valid value.
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = proto;
        sll.sll_ifindex = lo as i32;
        // SAFETY: `sll` is a valid sockaddr_ll of the size passed.
        let r = unsafe {
            libc::bind(
                fd,
                (&sll as *const libc::sockaddr_ll).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as u32,
            )
        };
        assert_eq!(r, 0, "bind lo: {}", std::io::Error::last_os_error());
        let tv = libc::timeval {
            tv_sec: 0,
            tv_usec: 20_000,
        };
        // SAFETY: `tv` is a valid timeval of the size passed.
        unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_RCVTIMEO,
                (&tv as *const libc::timeval).cast(),
                std::mem::size_of::<libc::timeval>() as u32,
            )
        };
        let stop = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (st, se) = (stop.clone(), seen.clone());
        let thread = std::thread::spawn(move || {
            let mut buf = vec![0u8; 70_000];
            while !st.load(Ordering::Acquire) {
                // SAFETY: `buf` is writable for its whole length.
                let n = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), 0) };
                if n <= 0 {
                    continue;
                }
                if let Some(p) = udp_payload(&buf[..n as usize], from, to) {
                    se.lock().unwrap().push(p.to_vec());
                }
            }
            // SAFETY: `fd` is ours and closed once.
            unsafe { libc::close(fd) };
        });
        Sniffer {
            stop,
            seen,
            thread: Some(thread),
        }
    }

    fn stop(mut self) -> Vec<Vec<u8>> {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            t.join().unwrap();
        }
        std::mem::take(&mut *self.seen.lock().unwrap())
    }
}

/// The UDP payload of an IPv4 packet from `from` to `to`.
fn udp_payload(ip: &[u8], from: SocketAddrV4, to: SocketAddrV4) -> Option<&[u8]> {
    let ihl = usize::from(*ip.first()? & 0x0f) * 4;
    if ip.len() < ihl + 8 || ip[9] != 17 {
        return None;
    }
    let src = Ipv4Addr::new(ip[12], ip[13], ip[14], ip[15]);
    let dst = Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19]);
    let u = &ip[ihl..];
    let (sp, dp) = (
        u16::from_be_bytes([u[0], u[1]]),
        u16::from_be_bytes([u[2], u[3]]),
    );
    let len = usize::from(u16::from_be_bytes([u[4], u[5]]));
    if (src, sp) != (*from.ip(), from.port()) || (dst, dp) != (*to.ip(), to.port()) {
        return None;
    }
    u.get(8..len)
}

/// A raw socket that sends UDP datagrams with any source address.
struct Spoofer(i32);

impl Spoofer {
    fn new() -> Spoofer {
        // SAFETY: plain socket(2) call; IPPROTO_RAW implies IP_HDRINCL.
        let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_RAW, libc::IPPROTO_RAW) };
        assert!(fd >= 0, "raw socket: {}", std::io::Error::last_os_error());
        Spoofer(fd)
    }

    fn send(&self, from: SocketAddrV4, to: SocketAddrV4, payload: &[u8]) {
        let total = 28 + payload.len();
        let mut p = Vec::with_capacity(total);
        p.extend_from_slice(&[0x45, 0]);
        p.extend_from_slice(&(total as u16).to_be_bytes());
        p.extend_from_slice(&[0, 0, 0x40, 0, 64, 17, 0, 0]);
        p.extend_from_slice(&from.ip().octets());
        p.extend_from_slice(&to.ip().octets());
        p.extend_from_slice(&from.port().to_be_bytes());
        p.extend_from_slice(&to.port().to_be_bytes());
        p.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
        // No UDP checksum (allowed over IPv4); the kernel fills the IP one.
        p.extend_from_slice(&[0, 0]);
        p.extend_from_slice(payload);
        // SAFETY: sockaddr_in is plain data; all-zero is a valid value.
        let mut sin: libc::sockaddr_in = unsafe { std::mem::zeroed() };
        sin.sin_family = libc::AF_INET as u16;
        sin.sin_addr.s_addr = u32::from_ne_bytes(to.ip().octets());
        // SAFETY: `p` and `sin` are valid for the lengths passed.
        let n = unsafe {
            libc::sendto(
                self.0,
                p.as_ptr().cast(),
                p.len(),
                0,
                (&sin as *const libc::sockaddr_in).cast(),
                std::mem::size_of::<libc::sockaddr_in>() as u32,
            )
        };
        assert_eq!(n as usize, p.len(), "{}", std::io::Error::last_os_error());
    }
}

impl Drop for Spoofer {
    fn drop(&mut self) {
        // SAFETY: the descriptor is ours and closed once.
        unsafe { libc::close(self.0) };
    }
}

/// An operation as an attacker writes it: key, address, body, payload.
type Op<'a> = (u64, u64, Body, &'a [u8]);

fn forged(fmt: Format, src: TaskId, dst: TaskId, epoch: u32, seq: u32, op: Op<'_>) -> Vec<u8> {
    let (key, addr, body, data) = op;
    let p = Packet {
        src,
        dst,
        epoch,
        seq,
        ack: (body == Body::Ack).then_some(seq),
        op: seq,
        flags: Flags::default(),
        status: Status::Ok,
        key,
        addr,
        frag: Frag::SINGLE,
        body,
        payload: data,
    };
    let mut v = vec![0; p.buffer_len()];
    p.emit_as(&mut v, fmt).expect("valid packet");
    v
}

fn attack(security: Security) {
    if !is_root() {
        eprintln!("skipped: sniffing and spoofing need root");
        return;
    }
    let t = two_nodes(security);
    let fmt = security.format();
    let (job, a, b) = (
        t[0].job(),
        TaskId::new(t[0].job(), 0),
        TaskId::new(t[0].job(), 1),
    );
    let (from, to) = (
        v4(t[0].udp_addr_of(0).unwrap()),
        v4(t[0].udp_addr_of(1).unwrap()),
    );
    let seg = t[1].alloc(8192, Perm::ALL).unwrap();
    let info = seg.info();

    // Genuine traffic, recorded.
    let sniffer = Sniffer::start(from, to);
    let secret_data = [0x5a; 256];
    for i in 0..40u64 {
        t[0].write(info.at(i * 64), &secret_data[..64], Options::default())
            .unwrap();
        t[0].fetch_add(info.at(4096), 1, Options::default())
            .unwrap()
            .wait()
            .unwrap();
    }
    t[0].write(info.at(5000), &secret_data, Options::default())
        .unwrap();
    t[0].quiet().unwrap();
    std::thread::sleep(Duration::from_millis(50));
    let seen = sniffer.stop();
    assert!(seen.len() >= 40, "sniffed only {} datagrams", seen.len());
    let plain_seen = seen.iter().any(|d| d.windows(16).any(|w| w == [0x5a; 16]));
    assert_eq!(
        plain_seen,
        security != Security::Encrypt,
        "payload visible to a sniffer under {security}"
    );
    let applied = t[1].stats().applied;
    let counter = seg.word(4096).unwrap().load(Ordering::Acquire);
    assert_eq!(counter, 40);

    // The attacks, all from rank 0's own address.
    let spoof = Spoofer::new();
    let before = t[1].stats().refused;
    let mut sent = 0u64;
    let mut send = |d: &[u8]| {
        spoof.send(from, to, d);
        sent += 1;
    };
    for d in &seen {
        // Replayed as recorded.
        send(d);
        // One bit flipped: in the header, the body, the tag.
        for at in [13, 30, 45, 66, d.len() - 1] {
            if at < d.len() {
                let mut x = d.clone();
                x[at] ^= 0x10;
                send(&x);
            }
        }
    }
    // Forged with the sniffed key, every way but with the secret.
    let hostile = [0xee; 64];
    let mut other_secret = [0u8; 32];
    getrandom::fill(&mut other_secret).unwrap();
    let mut wrong = Seals::new(security, &other_secret, job, 0, vec![[1; 16], [2; 16]]).unwrap();
    let mut other_job = Seals::new(security, &other_secret, job + 1, 0, vec![[1; 16]; 2]).unwrap();
    for seq in 1..=50u32 {
        let kinds = [
            (Body::Write { notify: None }, info.base, &hostile[..]),
            (Body::FetchAdd { operand: 1000 }, info.base + 4096, &[][..]),
            (Body::Ack, 0, &[][..]),
        ];
        for (body, addr, data) in kinds {
            let epoch = if body == Body::Ack { u32::MAX } else { 1 };
            // Unsealed, with a good CRC.
            let op = (info.key, addr, body, data);
            send(&forged(Format::Checksummed, a, b, epoch, seq, op));
            // In the job's format, with a made-up tag.
            let mut v = forged(fmt, a, b, epoch, seq, op);
            v[60..64].copy_from_slice(&(1u32 << 30).wrapping_add(seq).to_be_bytes());
            v.extend_from_slice(&[0xab; 16]);
            send(&v);
            // Sealed under another secret.
            let mut v = forged(fmt, a, b, epoch, seq, op);
            wrong.seal(&mut v, 0).unwrap();
            send(&v);
            // Another job's, re-addressed to this one.
            let (oa, ob) = (TaskId::new(job + 1, 0), TaskId::new(job + 1, 1));
            let mut v = forged(fmt, oa, ob, epoch, seq, op);
            other_job.seal(&mut v, 0).unwrap();
            send(&v);
        }
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    while t[1].stats().refused - before < sent {
        assert!(
            Instant::now() < deadline,
            "only {} of {sent} refused",
            t[1].stats().refused - before
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    // Nothing applied, nothing answered, nothing changed.
    assert_eq!(t[1].stats().applied, applied);
    assert_eq!(seg.word(4096).unwrap().load(Ordering::Acquire), 40);
    let mut back = [0u8; 64];
    seg.read_bytes(0, &mut back).unwrap();
    assert_eq!(back, [0x5a; 64]);
    assert_eq!(t[1].stats().refused - before, sent);
    assert_eq!(
        t[1].stats().bad_packets,
        0,
        "nothing refused reached the parser"
    );

    // The job goes on, both ways.
    t[0].fetch_add(info.at(4096), 1, Options::default())
        .unwrap()
        .wait()
        .unwrap();
    assert_eq!(seg.word(4096).unwrap().load(Ordering::Acquire), 41);
    let back_seg = t[0].alloc(64, Perm::ALL).unwrap();
    t[1].write(
        back_seg.info().at(0),
        &9u64.to_le_bytes(),
        Options::default(),
    )
    .unwrap();
    t[1].quiet().unwrap();
    assert_eq!(back_seg.word(0).unwrap().load(Ordering::Acquire), 9);
    std::thread::scope(|s| {
        for task in &t {
            s.spawn(move || task.barrier().unwrap());
        }
    });
    eprintln!("{security}: {} sniffed, {sent} attacks refused", seen.len());
}

#[test]
fn network_attacks_are_refused_counted_and_harmless_under_auth() {
    attack(Security::Auth);
}

#[test]
fn network_attacks_are_refused_counted_and_harmless_under_encrypt() {
    attack(Security::Encrypt);
}

/// Set in the environment of this binary run again as another user: the
/// job's files, a task's udp address, and the datagrams to send.
const CHILD: &str = "SSS_ATTACK_CHILD";

#[test]
fn another_user_can_neither_open_the_jobs_files_nor_reach_its_tasks() {
    if !is_root() {
        eprintln!("skipped: running as another user needs root");
        return;
    }
    // One node: control blocks, segments and the shm lane's files exist.
    let boots = ThreadBoot::group(2, &["127.0.0.1"]);
    let hs: Vec<_> = boots
        .into_iter()
        .map(|b| std::thread::spawn(move || Task::join(Box::new(b), TaskConfig::default())))
        .collect();
    let t: Vec<Task> = hs
        .into_iter()
        .map(|h| h.join().unwrap().expect("join"))
        .collect();
    let seg = t[0].alloc(4096, Perm::ALL).unwrap();
    let prefix = format!("sss-{}-", t[0].job());
    let files: Vec<String> = std::fs::read_dir(sss_mbcf::shm_dir().unwrap())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path().display().to_string())
        .filter(|p| p.rsplit('/').next().is_some_and(|n| n.starts_with(&prefix)))
        .collect();
    assert!(files.len() >= 3, "job files: {files:?}");
    let addr = t[0].udp_addr_of(0).unwrap();
    let before = t[0].stats().foreign;
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "local_attacker_child", "--nocapture"])
        .env(CHILD, format!("{addr}\n{}", files.join("\n")))
        .uid(65534)
        .gid(65534)
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "attacker: {log}");
    assert!(log.contains("attacker done"), "{log}");
    let deadline = Instant::now() + Duration::from_secs(20);
    while t[0].stats().foreign - before < 100 {
        assert!(Instant::now() < deadline, "foreign datagrams not counted");
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(t[0].stats().applied, 0);
    assert_eq!(seg.word(0).unwrap().load(Ordering::Acquire), 0);
}

/// The other user's side (does nothing unless [`CHILD`] is set).
#[test]
fn local_attacker_child() {
    let Ok(spec) = std::env::var(CHILD) else {
        return;
    };
    let mut lines = spec.lines();
    let addr: SocketAddr = lines.next().unwrap().parse().unwrap();
    for f in lines {
        for write in [false, true] {
            let r = std::fs::OpenOptions::new().read(true).write(write).open(f);
            let e = r.expect_err(&format!("opened {f} (write {write})"));
            assert_eq!(e.kind(), std::io::ErrorKind::PermissionDenied, "{f}");
        }
    }
    let sock = std::net::UdpSocket::bind("127.0.0.9:0").unwrap();
    let junk = forged(
        Format::Authenticated,
        TaskId::new(1, 1),
        TaskId::new(1, 0),
        1,
        1,
        (1, 0, Body::Write { notify: None }, &[0xee; 64]),
    );
    for _ in 0..100 {
        sock.send_to(&junk, addr).unwrap();
    }
    eprintln!("attacker done");
}
