//! Datagrams that do not come from a member of the job are dropped before
//! any state is made for them, and counted: a socket no task has, a rank
//! past the job, another job, a member's rank claimed from the wrong
//! address. The job keeps working.

use sss_mbcf::{Options, Perm, Task, TaskConfig, ThreadBoot};
use sss_wire::{Body, Flags, Frag, Packet, Status, TaskId};
use std::net::UdpSocket;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

fn two_nodes() -> Vec<Task> {
    let boots = ThreadBoot::group(2, &["127.0.0.2", "127.0.0.3"]);
    let hs: Vec<_> = boots
        .into_iter()
        .map(|b| std::thread::spawn(move || Task::join(Box::new(b), TaskConfig::default())))
        .collect();
    hs.into_iter()
        .map(|h| h.join().unwrap().expect("join"))
        .collect()
}

/// A well-formed WRITE of `data` at (`key`, `addr`) in `dst`.
fn forged(src: TaskId, dst: TaskId, seq: u32, key: u64, addr: u64, data: &[u8]) -> Vec<u8> {
    Packet {
        src,
        dst,
        epoch: u32::MAX,
        seq,
        ack: None,
        op: seq,
        flags: Flags::default(),
        status: Status::Ok,
        key,
        addr,
        frag: Frag::SINGLE,
        body: Body::Write { notify: None },
        payload: data,
    }
    .to_vec()
    .expect("valid packet")
}

#[test]
fn datagrams_from_strangers_are_dropped_counted_and_harmless() {
    let t = two_nodes();
    let segs: Vec<_> = t
        .iter()
        .map(|t| t.alloc(4096, Perm::ALL).unwrap())
        .collect();
    let info = segs[0].info();
    let job = t[0].job();
    let me = TaskId::new(job, 0);
    let to = t[0].udp_addr_of(0).expect("address of rank 0");
    // Not a member's socket (another loopback address).
    let evil = UdpSocket::bind("127.0.0.9:0").expect("bind");
    let before = t[0].stats().foreign;
    let data = [0xee; 512];
    let mut sent = 0u64;
    let claims = [
        TaskId::new(job, 1),      // a member, from the wrong address
        TaskId::new(job, 2),      // a rank past the job
        TaskId::new(job + 1, 1),  // another job
        TaskId::new(job, 60_000), // anyone
    ];
    for src in claims {
        for seq in 1..=200u32 {
            // In order (1) and far out of order (the rest): neither may be
            // applied or buffered.
            let d = forged(src, me, seq * 5 - 4, info.key, info.base + 64, &data);
            evil.send_to(&d, to).expect("send");
            sent += 1;
        }
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    while t[0].stats().foreign - before < sent {
        assert!(
            Instant::now() < deadline,
            "only {} of {sent} counted",
            t[0].stats().foreign - before
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    // Nothing was written, and nothing else was counted as received.
    assert_eq!(segs[0].word(64).unwrap().load(Ordering::Acquire), 0);
    assert_eq!(t[0].stats().applied, 0);
    assert_eq!(t[0].stats().bad_packets, 0);

    // The job keeps working: rank 1 writes, rank 0 sees it.
    t[1].write(
        info.at(64),
        &7u64.to_le_bytes(),
        Options::notify(info.at(0)),
    )
    .unwrap();
    t[1].quiet().unwrap();
    let flag = segs[0].word(0).unwrap();
    t[0].wait_word(flag, |v| v >= 1);
    assert_eq!(segs[0].word(64).unwrap().load(Ordering::Acquire), 7);
    assert_eq!(t[0].stats().foreign - before, sent);
    assert_eq!(t[1].stats().foreign, 0);
}
