//! Quick round-trip probe: 8-byte WRITE+notify ping-pong between two tasks
//! (threads of this process) against a raw UDP ping-pong busy-polling
//! `recv` (the fair baseline), same addresses.
//! `cargo run --release -p sss-mbcf --example rtt -- [udp|shm] [ROUNDS] [BYTES] [mbcf|signal]`
//! (`mbcf`: skip the raw UDP baseline, e.g. to profile MBCF alone;
//! `signal`: a SIGNAL echoed from the handler instead of WRITE + notify)

use sss_mbcf::{Options, Perm, Task, TaskConfig, ThreadBoot};
use std::net::UdpSocket;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_else(|| "udp".into());
    let rounds: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(20_000);
    let size: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(8);
    let payload = vec![1u8; size];
    let last = args.next();
    let signal = last.as_deref() == Some("signal");
    let fifo = last.as_deref() == Some("fifo");
    let mbcf_only = signal || fifo || last.as_deref() == Some("mbcf");
    let nodes: &[&str] = if mode == "shm" {
        &["127.0.0.1"]
    } else {
        &["127.0.0.2", "127.0.0.3"]
    };
    let boots = ThreadBoot::group(2, nodes);
    let mode2 = mode.clone();
    let payload2 = payload.clone();
    let hs: Vec<_> = boots
        .into_iter()
        .map(|b| {
            let mode = mode2.clone();
            let mut data = payload2.clone();
            std::thread::spawn(move || {
                let t = Task::join(Box::new(b), TaskConfig::from_env().unwrap()).unwrap();
                let seg = t
                    .alloc(4096 + sss_mbcf::fifo_bytes(64, 64), Perm::ALL)
                    .unwrap();
                let mut q = t.fifo_create(&seg, 4096, 64, 64).unwrap();
                let mut msg = Vec::new();
                let all = t.exchange(&seg).unwrap();
                let peer = &all[1 - t.rank() as usize];
                let flag = seg.word(0).unwrap();
                let got = Arc::new(AtomicU64::new(0));
                let (g, echo) = (got.clone(), t.rank() == 1);
                t.set_handler(
                    0,
                    Arc::new(move |ctx, data| {
                        if echo {
                            let _ = ctx.task.signal(ctx.from, 0, data, Options::default());
                        }
                        g.fetch_add(1, Ordering::Release);
                    }),
                )
                .unwrap();
                t.barrier().unwrap();
                let start = Instant::now();
                let mut wt = 0u64;
                for i in 1..=rounds {
                    if fifo {
                        let dst = peer.at(4096);
                        if t.rank() == 0 {
                            t.fifo_push(dst, &data, Options::default()).unwrap();
                            q.wait_pop(&t, &mut msg);
                        } else {
                            q.wait_pop(&t, &mut msg);
                            t.fifo_push(dst, &msg, Options::default()).unwrap();
                        }
                        continue;
                    }
                    if signal {
                        if t.rank() == 0 {
                            t.signal(1, 0, &data, Options::default()).unwrap();
                        }
                        t.wait_word(&got, |v| v >= i);
                        continue;
                    }
                    let n = data.len().min(8);
                    data[..n].copy_from_slice(&i.to_le_bytes()[..n]);
                    if t.rank() == 0 {
                        let a = Instant::now();
                        t.write(peer.at(64), &data, Options::notify(peer.at(0)))
                            .unwrap();
                        wt += a.elapsed().as_nanos() as u64;
                        t.wait_word(flag, |v| v >= i);
                    } else {
                        t.wait_word(flag, |v| v >= i);
                        t.write(peer.at(64), &data, Options::notify(peer.at(0)))
                            .unwrap();
                    }
                }
                let el = start.elapsed();
                if t.rank() == 0 {
                    println!(
                        "mbcf {mode}{}, {size} B: {:.3} us round trip",
                        if signal {
                            " signal"
                        } else if fifo {
                            " fifo"
                        } else {
                            ""
                        },
                        el.as_secs_f64() * 1e6 / rounds as f64
                    );
                    println!("{:?}", t.stats());
                    println!("write() {} ns", wt / rounds);
                }
                t.barrier().unwrap();
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    if mbcf_only {
        return;
    }
    // Raw UDP ping-pong, both sides busy-polling recv, same addresses.
    let a = UdpSocket::bind((nodes[0], 0)).unwrap();
    let b = UdpSocket::bind((nodes[nodes.len() - 1], 0)).unwrap();
    a.set_nonblocking(true).unwrap();
    b.set_nonblocking(true).unwrap();
    let (aa, ba) = (a.local_addr().unwrap(), b.local_addr().unwrap());
    let echo = std::thread::spawn(move || {
        let mut buf = [0u8; 65536];
        for _ in 0..rounds {
            let n = loop {
                if let Ok((n, _)) = b.recv_from(&mut buf) {
                    break n;
                }
            };
            b.send_to(&buf[..n], aa).unwrap();
        }
    });
    let mut buf = [0u8; 65536];
    let start = Instant::now();
    let mut st = 0u64;
    for _ in 0..rounds {
        let s = Instant::now();
        a.send_to(&payload, ba).unwrap();
        st += s.elapsed().as_nanos() as u64;
        while a.recv_from(&mut buf).is_err() {}
    }
    println!(
        "raw udp, busy-polled, {size} B: {:.2} us round trip",
        start.elapsed().as_secs_f64() * 1e6 / rounds as f64
    );
    println!("send_to() {} ns", st / rounds);
    echo.join().unwrap();
}
