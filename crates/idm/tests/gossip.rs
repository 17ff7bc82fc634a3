//! A daemon takes gossip only through `sss_mbcf::nofc`: a page written by
//! its own node's daemon is stored, anything else arriving on its port is
//! refused and counted, and none of it stops the daemon.

use sss_idm::{gossip, Daemon, DaemonConfig};
use sss_mbcf::idm::{Idm, NodeData};
use sss_mbcf::nofc::{self, Write};
use sss_mbcf::TaskId;
use std::net::UdpSocket;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A daemon for `node` with `peers`, running in a thread until the flag
/// is set; its gossip address.
fn start(
    node: &str,
    peers: Vec<std::net::SocketAddr>,
    gossip: Duration,
) -> (
    std::net::SocketAddr,
    Arc<AtomicBool>,
    std::thread::JoinHandle<Daemon>,
) {
    let mut d = Daemon::new(DaemonConfig {
        node: node.to_string(),
        peers,
        port: 0,
        sample: Duration::from_millis(5),
        gossip,
        down_after: Duration::from_secs(60),
    })
    .expect("start the daemon");
    let to = d.local_addr().expect("bound");
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let h = std::thread::spawn(move || {
        d.run(|| flag.load(Ordering::Relaxed));
        d
    });
    (to, stop, h)
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
    let hostile = [
        b"not an MBCF packet".to_vec(),
        write(me, gossip::INBOX.dst, gossip::GOSSIP_KEY ^ 1),
        write(me, TaskId::new(0, 5), gossip::GOSSIP_KEY),
        // A page of `peer` claimed by another node's daemon.
        write(
            gossip::daemon_id("liar"),
            gossip::INBOX.dst,
            gossip::GOSSIP_KEY,
        ),
    ];
    for b in &hostile {
        sock.send_to(b, to).unwrap();
    }
    // Loopback keeps the order: once the good page is stored, every
    // hostile datagram before it was handled.
    sock.send_to(&gossip::encode(&peer, &page), to).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let stored = loop {
        let found = Idm::open(&node).ok().and_then(|i| i.find(&peer));
        if found.is_some() || Instant::now() > deadline {
            break found;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    stop.store(true, Ordering::Relaxed);
    let d = daemon.join().expect("the daemon survived");
    assert_eq!(stored.map(|(_, p)| p.ncpus), Some(3), "good gossip stored");
    assert_eq!(d.refused(), hostile.len() as u64);
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
    for _ in 0..20 {
        stranger.send_to(&gossip::encode(&fake, &page), to).unwrap();
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
