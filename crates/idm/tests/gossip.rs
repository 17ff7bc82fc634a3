//! A daemon takes gossip only from its peers' addresses, tagged under the
//! cluster's secret, with a counter above any it took before from that
//! daemon, carrying a page of the sender's own node. Anything else arriving
//! on its port is refused, counted by class, never answered, and none of it
//! stops the daemon.

use sss_idm::gossip::{self, GossipKey};
use sss_idm::secret::ClusterSecret;
use sss_idm::{Daemon, DaemonConfig, GossipStats};
use sss_mbcf::idm::{Idm, NodeData};
use sss_mbcf::nofc::{self, Write};
use sss_mbcf::TaskId;
use std::net::UdpSocket;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The secret of the tests' cluster.
const SECRET: ClusterSecret = ClusterSecret::from_bytes([0x5a; 32]);

fn key() -> GossipKey {
    GossipKey::new(&SECRET)
}

/// A daemon for `node` on `port` (0: any) with `peers` and `secret`, not
/// yet running.
fn daemon(
    node: &str,
    port: u16,
    peers: Vec<std::net::SocketAddr>,
    gossip: Duration,
    secret: ClusterSecret,
) -> Daemon {
    Daemon::new(DaemonConfig {
        node: node.to_string(),
        peers,
        port,
        sample: Duration::from_millis(5),
        gossip,
        down_after: Duration::from_secs(60),
        secret,
    })
    .expect("start the daemon")
}

/// Runs `d` in a thread until the flag is set and `until` holds for its
/// stats (or 20 s pass, so a broken daemon cannot hang the test).
fn spawn(
    mut d: Daemon,
    until: impl Fn(&GossipStats) -> bool + Send + 'static,
) -> (Arc<AtomicBool>, std::thread::JoinHandle<Daemon>) {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let h = std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(20);
        d.run_with(|s| flag.load(Ordering::Relaxed) && until(s) || Instant::now() > deadline);
        d
    });
    (stop, h)
}

/// A daemon for `node` with `peers` and the tests' secret, running in a
/// thread until the flag is set; its gossip address.
fn start(
    node: &str,
    peers: Vec<std::net::SocketAddr>,
    gossip: Duration,
) -> (
    std::net::SocketAddr,
    Arc<AtomicBool>,
    std::thread::JoinHandle<Daemon>,
) {
    let d = daemon(node, 0, peers, gossip, SECRET);
    let to = d.local_addr().expect("bound");
    let (stop, h) = spawn(d, |_| true);
    (to, stop, h)
}

/// Waits up to 20 s for `node`'s IDM file to hold a page of `peer`.
fn wait_for_page(node: &str, peer: &str) -> Option<NodeData> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let found = Idm::open(node).ok().and_then(|i| i.find(peer));
        if found.is_some() || Instant::now() > deadline {
            return found.map(|(_, p)| p);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Distinct loopback addresses for this test process: `127.<a>.<pid>.<i>`.
fn host(a: u8, i: u8) -> String {
    let pid = std::process::id();
    format!(
        "127.{a}.{}.{}",
        (pid >> 8) & 0xff,
        (pid & 0xff) as u8 / 4 * 4 + i
    )
}

/// A port free on `host` (the daemons of a test share it, each on its own
/// address).
fn free_port(host: &str) -> u16 {
    UdpSocket::bind((host, 0))
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn hostile_datagrams_are_refused_and_counted_and_good_gossip_still_lands() {
    let pid = std::process::id();
    let node = format!("127.9.{}.{}", (pid >> 8) & 0xff, 1 + pid % 250);
    let peer = format!("gossip-test-peer-{pid}");
    // The test speaks for a peer daemon from this socket.
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    let (to, stop, daemon) = start(
        &node,
        vec![sock.local_addr().unwrap()],
        Duration::from_millis(50),
    );
    let mut page = NodeData::default();
    page.set_name(&peer);
    page.ncpus = 3;
    let payload = page.to_bytes();
    let write = |src, dst, key| {
        nofc::encode(&Write {
            src,
            dst,
            key,
            addr: 0,
            payload: &payload,
        })
        .unwrap()
    };
    let me = gossip::daemon_id(&peer);
    let mut counter = gossip::Counter::new();
    let malformed = [
        b"not an MBCF packet".to_vec(),
        write(me, gossip::INBOX.dst, gossip::GOSSIP_KEY ^ 1),
        write(me, TaskId::new(0, 5), gossip::GOSSIP_KEY),
    ];
    // A page with no tag, as gossip was before it was authenticated.
    let forged = write(me, gossip::INBOX.dst, gossip::GOSSIP_KEY);
    // A page of `peer` claimed, with a good tag, by another node's daemon.
    let bad_page = gossip::encode(&key(), "liar", &page, counter.take());
    for b in malformed.iter().chain([&forged, &bad_page]) {
        sock.send_to(b, to).unwrap();
    }
    // Loopback keeps the order: once the good page is stored, every
    // hostile datagram before it was handled.
    sock.send_to(&gossip::encode(&key(), &peer, &page, counter.take()), to)
        .unwrap();
    let stored = wait_for_page(&node, &peer);
    stop.store(true, Ordering::Relaxed);
    let d = daemon.join().expect("the daemon survived");
    assert_eq!(stored.map(|p| p.ncpus), Some(3), "good gossip stored");
    let s = d.stats();
    assert_eq!(
        (s.malformed, s.forged, s.bad_pages, s.replayed, s.strangers),
        (3, 1, 1, 0, 0)
    );
    assert_eq!(d.refused(), 5);
    assert!(Idm::open(&node).is_err(), "the daemon removed its IDM file");
}

/// Regression: a valid page from any address was stored and its sender
/// added to the peers, so forged datagrams filled the IDM file with nodes
/// that do not exist and turned the daemon into a reflector. A stranger's
/// page is refused, counted, not stored and not answered.
#[test]
fn gossip_from_a_stranger_changes_nothing_and_is_not_answered() {
    let pid = std::process::id();
    let node = format!("127.10.{}.{}", (pid >> 8) & 0xff, 1 + pid % 250);
    let fake = format!("fake-node-{pid}");
    let (to, stop, daemon) = start(&node, Vec::new(), Duration::from_millis(20));
    let mut page = NodeData::default();
    page.set_name(&fake);
    let stranger = UdpSocket::bind("127.0.0.1:0").unwrap();
    stranger
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let mut counter = gossip::Counter::new();
    for _ in 0..20 {
        // Even tagged with the cluster's secret: not from a peer.
        let b = gossip::encode(&key(), &fake, &page, counter.take());
        stranger.send_to(&b, to).unwrap();
    }
    // Ten gossip periods: an answer would have come by now.
    let mut buf = [0u8; 2048];
    let answered = stranger.recv_from(&mut buf).is_ok();
    let stored = Idm::open(&node).ok().and_then(|i| i.find(&fake));
    stop.store(true, Ordering::Relaxed);
    let d = daemon.join().expect("the daemon survived");
    assert!(!answered, "the daemon gossiped to a stranger");
    assert!(stored.is_none(), "a stranger's page was stored");
    assert_eq!(d.strangers(), 20);
    assert_eq!(d.refused(), 20);
}

/// Two daemons holding the cluster's secret take each other's pages; a
/// third, listed as a peer by both but holding another secret, is refused
/// by both (counted as forged), and they are refused by it.
#[test]
fn only_daemons_with_the_same_secret_exchange_pages() {
    let (a, b, c) = (host(11, 1), host(11, 2), host(11, 3));
    let port = free_port(&a);
    let addr = |h: &str| format!("{h}:{port}").parse().unwrap();
    let all = [addr(&a), addr(&b), addr(&c)];
    let others = |me| all.iter().copied().filter(|&x| x != me).collect();
    let gossip = Duration::from_millis(20);
    let other = ClusterSecret::from_bytes([0xa5; 32]);
    // All three bound before any gossips, so no first round is lost.
    let da = daemon(&a, port, others(addr(&a)), gossip, SECRET);
    let db = daemon(&b, port, others(addr(&b)), gossip, SECRET);
    let dc = daemon(&c, port, others(addr(&c)), gossip, other);
    // Each runs until it has refused the odd one out at least once.
    let both = |s: &GossipStats| s.forged >= 1 && s.accepted >= 1;
    let (sa, ha) = spawn(da, both);
    let (sb, hb) = spawn(db, both);
    let (sc, hc) = spawn(dc, |s| s.forged >= 2);
    let seen_ab = wait_for_page(&a, &b).is_some();
    let seen_ba = wait_for_page(&b, &a).is_some();
    // Mapped now, read after the daemons stop (they unlink the files).
    let (ia, ib, ic) = (Idm::open(&a), Idm::open(&b), Idm::open(&c));
    for s in [&sa, &sb, &sc] {
        s.store(true, Ordering::Relaxed);
    }
    let (da, db, dc) = (ha.join().unwrap(), hb.join().unwrap(), hc.join().unwrap());
    assert!(seen_ab && seen_ba, "the two with the secret gossip");
    let (ia, ib, ic) = (ia.unwrap(), ib.unwrap(), ic.unwrap());
    assert!(
        ia.find(&c).is_none() && ib.find(&c).is_none(),
        "other cluster's page stored"
    );
    assert!(
        ic.find(&a).is_none() && ic.find(&b).is_none(),
        "our pages stored by the other cluster"
    );
    for (name, s) in [("a", da.stats()), ("b", db.stats()), ("c", dc.stats())] {
        assert!(s.forged >= 1, "{name}: {s:?}");
        assert_eq!(
            (s.malformed, s.strangers, s.bad_pages),
            (0, 0, 0),
            "{name}: {s:?}"
        );
    }
    assert_eq!(dc.stats().accepted, 0);
    assert!(da.stats().accepted >= 1 && db.stats().accepted >= 1);
}

/// A genuine datagram recorded on its way, replayed later from its
/// sender's own address (bound by the attacker once the sender is gone),
/// changes nothing; neither does a bit-flipped copy, with or without the
/// checksum repaired, nor a page forged without the secret. Each is
/// counted in its class and none is answered.
#[test]
fn replayed_modified_and_spoofed_gossip_is_refused_counted_and_not_answered() {
    let (d_host, e_host, rec_host) = (host(12, 1), host(12, 2), host(12, 3));
    let port = free_port(&d_host);
    let addr = |h: &str| -> std::net::SocketAddr { format!("{h}:{port}").parse().unwrap() };
    // D, the daemon attacked, gossips once at start and then not for an
    // hour: whatever reaches E's address later would be an answer.
    let d = daemon(
        &d_host,
        port,
        vec![addr(&e_host)],
        Duration::from_secs(3600),
        SECRET,
    );
    // E, a genuine peer, also gossips to a recorder: the same bytes D gets.
    let recorder = UdpSocket::bind(addr(&rec_host)).unwrap();
    recorder
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let e = daemon(
        &e_host,
        port,
        vec![addr(&d_host), addr(&rec_host)],
        Duration::from_millis(20),
        SECRET,
    );
    // D runs until the six attacks and the last good page are handled.
    let (sd, hd) = spawn(d, |s| s.accepted >= 2 && s.refused() >= 6);
    let (se, he) = spawn(e, |_| true);
    let mut buf = vec![0u8; 65536];
    let n = recorder.recv(&mut buf).expect("E gossips");
    let recorded = buf[..n].to_vec();
    let (counter, page) = gossip::decode(&key(), &recorded).expect("genuine");
    assert_eq!(page.name(), e_host);
    // D has taken E's page; the recorded round went to D first.
    assert!(wait_for_page(&d_host, &e_host).is_some());
    se.store(true, Ordering::Relaxed);
    drop(he.join().unwrap());
    // E is gone: the attacker takes its address.
    let spoof = UdpSocket::bind(addr(&e_host)).expect("E's address is free");
    let flipped = |at: usize, fix_crc: bool| {
        let mut m = recorded.clone();
        m[at] ^= 0x10;
        if fix_crc {
            m[60..64].fill(0);
            let c = crc32c::crc32c(&m);
            m[60..64].copy_from_slice(&c.to_be_bytes());
        }
        m
    };
    let counter_at = recorded.len() - gossip::TRAILER_LEN;
    let mut forged_page = page;
    forged_page.ncpus = 999;
    let wrong = GossipKey::new(&ClusterSecret::from_bytes([0x33; 32]));
    let attacks = [
        recorded.clone(),
        // A page byte, as corrupted on the way: the checksum refuses it.
        flipped(200, false),
        // A page byte, the checksum repaired: the tag refuses it.
        flipped(200, true),
        // The counter raised, to pass as fresh: the tag refuses it.
        flipped(counter_at, true),
        // A page made up, with a counter far ahead, without the secret.
        gossip::encode(&wrong, &e_host, &forged_page, u64::MAX),
        // The recorded one again.
        recorded.clone(),
    ];
    for b in &attacks {
        spoof.send_to(b, addr(&d_host)).unwrap();
    }
    // Then a genuine page (made with the secret), to know all were handled.
    let mut last = page;
    last.ncpus = 77;
    let fresh = gossip::encode(&key(), &e_host, &last, counter + 1_000_000_000);
    spoof.send_to(&fresh, addr(&d_host)).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while wait_for_page(&d_host, &e_host).is_some_and(|p| p.ncpus != 77)
        && Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(5));
    }
    let stored = Idm::open(&d_host)
        .ok()
        .and_then(|i| i.find(&e_host))
        .map(|(_, p)| p);
    // Nothing comes back to E's address for any of it.
    spoof
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let answered = spoof.recv_from(&mut buf).is_ok();
    sd.store(true, Ordering::Relaxed);
    let d = hd.join().unwrap();
    assert_eq!(
        stored.map(|p| p.ncpus),
        Some(77),
        "the genuine page after the attacks"
    );
    assert!(!answered, "the daemon answered an attack");
    let s = d.stats();
    assert_eq!(
        (s.replayed, s.malformed, s.forged, s.strangers, s.bad_pages),
        (2, 1, 3, 0, 0),
        "{s:?}"
    );
    // Each of E's rounds once, then the last genuine page.
    assert!(s.accepted >= 2, "{s:?}");
}
