//! Quick bandwidth probe: a stream of WRITEs of SIZE bytes from one task to
//! another (threads of this process, two "nodes") against TCP with writes
//! of the same size. `cargo run --release -p sss-mbcf --example bw -- [SIZE] [MB]`.
//! Under `sss run -n 2` (two processes, e.g. `--hosts 127.0.0.2,127.0.0.3`)
//! the job's two tasks stream instead, and TCP is left out.

use sss_mbcf::{Options, Perm, Task, TaskConfig, ThreadBoot};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Instant;

/// Task 0 streams `n` WRITEs of `size` bytes to task 1 and reports.
fn stream(t: &Task, size: usize, n: usize) {
    let seg_len = (2 * size).max(1 << 20);
    let seg = t.alloc(seg_len, Perm::ALL).unwrap();
    let all = t.exchange(&seg).unwrap();
    let data = vec![7u8; size];
    let start = Instant::now();
    if t.rank() == 0 {
        for i in 0..n {
            let off = (i * size) % (seg_len - size + 1);
            t.write(all[1].at(off as u64), &data, Options::default())
                .unwrap();
        }
        t.quiet().unwrap();
        let s = start.elapsed().as_secs_f64();
        println!(
            "mbcf {size} B: {:.0} MB/s, {:?}",
            (n * size) as f64 / s / 1e6,
            t.stats()
        );
    }
    t.barrier().unwrap();
}

fn main() {
    let mut args = std::env::args().skip(1);
    let size: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(1408);
    let mb: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(200);
    let n = mb * 1_000_000 / size;
    if std::env::var_os("SSS_RANK").is_some() {
        let t = Task::init().unwrap();
        stream(&t, size, n);
        return;
    }
    let boots = ThreadBoot::group(2, &["127.0.0.2", "127.0.0.3"]);
    let hs: Vec<_> = boots
        .into_iter()
        .map(|b| {
            std::thread::spawn(move || {
                let t = Task::join(Box::new(b), TaskConfig::from_env().unwrap()).unwrap();
                stream(&t, size, n);
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    if std::env::var_os("BW_ONLY").is_some() {
        return;
    }
    let l = TcpListener::bind("127.0.0.3:0").unwrap();
    let a = l.local_addr().unwrap();
    let rx = std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        let mut buf = vec![0u8; 1 << 16];
        let mut got = 0;
        while got < n * size {
            got += s.read(&mut buf).unwrap();
        }
        s.write_all(&[1]).unwrap();
    });
    let mut s = TcpStream::connect(a).unwrap();
    s.set_nodelay(true).unwrap();
    let data = vec![7u8; size];
    let start = Instant::now();
    for _ in 0..n {
        s.write_all(&data).unwrap();
    }
    let mut b = [0u8; 1];
    s.read_exact(&mut b).unwrap();
    println!(
        "tcp {size} B writes: {:.0} MB/s",
        (n * size) as f64 / start.elapsed().as_secs_f64() / 1e6
    );
    rx.join().unwrap();
}
