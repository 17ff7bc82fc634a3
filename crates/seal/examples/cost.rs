//! Time to seal and open one datagram in each mode, by size, beside what
//! `none` spends instead (CRC-32C on emit and on parse):
//! `cargo run --release -p sss-seal --example cost`.

use sss_seal::{Seals, Security};
use sss_wire::{Body, Flags, Frag, Packet, Status, TaskId};
use std::time::Instant;

fn main() {
    for size in [8usize, 1408] {
        let data = vec![7u8; size];
        let p = packet(&data);
        let mut v = vec![0; p.buffer_len()];
        let n = 200_000;
        let t = Instant::now();
        for _ in 0..n {
            p.emit(std::hint::black_box(&mut v)).unwrap();
        }
        let emit = t.elapsed().as_nanos() as f64 / n as f64;
        let t = Instant::now();
        for _ in 0..n {
            Packet::parse(std::hint::black_box(&v)).unwrap();
        }
        let parse = t.elapsed().as_nanos() as f64 / n as f64;
        println!("none     {size:5} B: emit with CRC {emit:4.0} ns, parse with CRC {parse:4.0} ns");
        for sec in [Security::Auth, Security::Encrypt] {
            let salts = vec![[1; 16], [2; 16]];
            let mut a = Seals::new(sec, &[9; 32], 1, 0, salts.clone()).unwrap();
            let mut b = Seals::new(sec, &[9; 32], 1, 1, salts).unwrap();
            let p = packet(&data);
            let mut plain = vec![0; p.buffer_len()];
            p.emit_as(&mut plain, sec.format()).unwrap();
            let n = 200_000;
            let mut buf = Vec::with_capacity(plain.len() + 16);
            let (mut seal_ns, mut open_ns) = (0u128, 0u128);
            for _ in 0..n {
                buf.clear();
                buf.extend_from_slice(&plain);
                let t = Instant::now();
                a.seal(&mut buf, 0).unwrap();
                let t1 = Instant::now();
                b.open(&mut buf).unwrap();
                open_ns += t1.elapsed().as_nanos();
                seal_ns += (t1 - t).as_nanos();
            }
            println!(
                "{sec:8} {size:5} B: seal {:6.0} ns, open {:6.0} ns",
                seal_ns as f64 / n as f64,
                open_ns as f64 / n as f64
            );
        }
    }
}

fn packet(data: &[u8]) -> Packet<'_> {
    Packet {
        src: TaskId::new(1, 0),
        dst: TaskId::new(1, 1),
        epoch: 1,
        seq: 1,
        ack: None,
        op: 1,
        flags: Flags::default(),
        status: Status::Ok,
        key: 1,
        addr: 2,
        frag: Frag::SINGLE,
        body: Body::Write { notify: None },
        payload: data,
    }
}
