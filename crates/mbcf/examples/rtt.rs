//! Quick round-trip probe: 8-byte WRITE+notify ping-pong between two tasks
//! (threads of this process) against a raw UDP ping-pong, same addresses.
//! `cargo run --release -p sss-mbcf --example rtt -- [udp|shm] [ROUNDS]`

use sss_mbcf::{Options, Perm, Task, TaskConfig, ThreadBoot};
use std::net::UdpSocket;
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_else(|| "udp".into());
    let rounds: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(20_000);
    let nodes: &[&str] = if mode == "shm" {
        &["127.0.0.1"]
    } else {
        &["127.0.0.2", "127.0.0.3"]
    };
    let boots = ThreadBoot::group(2, nodes);
    let mode2 = mode.clone();
    let hs: Vec<_> = boots
        .into_iter()
        .map(|b| {
            let mode = mode2.clone();
            std::thread::spawn(move || {
                let t = Task::join(Box::new(b), TaskConfig::from_env().unwrap()).unwrap();
                let seg = t.alloc(4096, Perm::ALL).unwrap();
                let all = t.exchange(&seg).unwrap();
                let peer = &all[1 - t.rank() as usize];
                let flag = seg.word(0).unwrap();
                let start = Instant::now();
                for i in 1..=rounds {
                    if t.rank() == 0 {
                        t.write(peer.at(64), &i.to_le_bytes(), Options::notify(peer.at(0)))
                            .unwrap();
                        t.wait_word(flag, |v| v >= i);
                    } else {
                        t.wait_word(flag, |v| v >= i);
                        t.write(peer.at(64), &i.to_le_bytes(), Options::notify(peer.at(0)))
                            .unwrap();
                    }
                }
                let el = start.elapsed();
                if t.rank() == 0 {
                    println!(
                        "mbcf {mode}: {:.2} us round trip",
                        el.as_secs_f64() * 1e6 / rounds as f64
                    );
                    println!("{:?}", t.stats());
                }
                t.barrier().unwrap();
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    // Raw UDP ping-pong, blocking recv, same addresses.
    let a = UdpSocket::bind((nodes[0], 0)).unwrap();
    let b = UdpSocket::bind((nodes[nodes.len() - 1], 0)).unwrap();
    let (aa, ba) = (a.local_addr().unwrap(), b.local_addr().unwrap());
    let echo = std::thread::spawn(move || {
        let mut buf = [0u8; 64];
        for _ in 0..rounds {
            let (n, _) = b.recv_from(&mut buf).unwrap();
            b.send_to(&buf[..n], aa).unwrap();
        }
    });
    let mut buf = [0u8; 64];
    let start = Instant::now();
    for _ in 0..rounds {
        a.send_to(&[1u8; 8], ba).unwrap();
        a.recv_from(&mut buf).unwrap();
    }
    println!(
        "raw udp: {:.2} us round trip",
        start.elapsed().as_secs_f64() * 1e6 / rounds as f64
    );
    echo.join().unwrap();
}
