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

#[test]
fn hostile_datagrams_are_refused_and_counted_and_good_gossip_still_lands() {
    let pid = std::process::id();
    let node = format!("127.9.{}.{}", (pid >> 8) & 0xff, 1 + pid % 250);
    let peer = format!("gossip-test-peer-{pid}");
    let mut d = Daemon::new(DaemonConfig {
        node: node.clone(),
        peers: Vec::new(),
        port: 0,
        sample: Duration::from_millis(5),
        gossip: Duration::from_millis(50),
        down_after: Duration::from_secs(60),
    })
    .expect("start the daemon");
    let to = d.local_addr().expect("bound");
    let stop = Arc::new(AtomicBool::new(false));
    let daemon = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            d.run(|| stop.load(Ordering::Relaxed));
            d
        })
    };
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
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
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
