//! CPU cost of the protocol state machines alone: one small WRITE sent by
//! one endpoint and applied by another through a zero-latency in-memory
//! link, including the acks that flow back. No sockets, no clock reads.

#![allow(missing_docs)]

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use sss_proto::{Body, Config, Endpoint, Op, OpOptions, Outcome, Packet, Target, TaskId, Time};

struct Sink {
    mem: Vec<u8>,
}

impl Target for Sink {
    fn apply(&mut self, p: &Packet<'_>) -> Outcome {
        if let Body::Write { .. } = p.body {
            let off = (p.addr as usize) % (self.mem.len() - 64);
            self.mem[off..off + p.payload.len()].copy_from_slice(p.payload);
        }
        Outcome::Done
    }
}

struct Pair {
    a: Endpoint,
    b: Endpoint,
    sa: Sink,
    sb: Sink,
    buf: Vec<u8>,
    now: Time,
    ta: TaskId,
    tb: TaskId,
}

impl Pair {
    fn new() -> Self {
        let ta = TaskId::new(1, 0);
        let tb = TaskId::new(1, 1);
        Self {
            a: Endpoint::new(ta, Config::default()),
            b: Endpoint::new(tb, Config::default()),
            sa: Sink { mem: vec![0; 4096] },
            sb: Sink { mem: vec![0; 4096] },
            buf: Vec::with_capacity(2048),
            now: 0,
            ta,
            tb,
        }
    }

    /// Moves datagrams both ways until both sides are idle.
    fn settle(&mut self) {
        loop {
            let mut moved = false;
            while self.a.poll_transmit(self.now, &mut self.buf).is_some() {
                self.b.handle_datagram(self.now, &self.buf, &mut self.sb);
                moved = true;
            }
            while self.b.poll_transmit(self.now, &mut self.buf).is_some() {
                self.a.handle_datagram(self.now, &self.buf, &mut self.sa);
                moved = true;
            }
            while self.a.poll_event().is_some() {}
            while self.b.poll_event().is_some() {}
            if !moved {
                break;
            }
        }
        for e in [&mut self.a, &mut self.b] {
            if e.poll_timeout().is_some_and(|t| t <= self.now) {
                e.handle_timeout(self.now);
            }
        }
    }

    /// One 8-byte WRITE from a to b.
    fn one_way(&mut self, i: u64) {
        self.now += 100;
        let data = i.to_le_bytes();
        let op = Op::Write {
            key: 1,
            addr: (i * 8) % 4000,
            data: &data,
            notify: None,
        };
        let _ = self.a.submit(self.now, self.tb, op, OpOptions::default());
        self.settle();
    }

    /// A WRITE from a to b, then one from b to a (acks piggyback).
    fn ping_pong(&mut self, i: u64) {
        self.now += 100;
        let data = i.to_le_bytes();
        let op = Op::Write {
            key: 1,
            addr: (i * 8) % 4000,
            data: &data,
            notify: None,
        };
        let _ = self.a.submit(self.now, self.tb, op, OpOptions::default());
        self.settle();
        let _ = self.b.submit(self.now, self.ta, op, OpOptions::default());
        self.settle();
    }
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("state_machine");
    g.throughput(Throughput::Elements(1));
    let mut p = Pair::new();
    let mut i = 0;
    g.bench_function("write_8B_one_way", |b| {
        b.iter(|| {
            i += 1;
            p.one_way(i)
        })
    });
    let mut p = Pair::new();
    g.throughput(Throughput::Elements(2));
    g.bench_function("write_8B_ping_pong", |b| {
        b.iter(|| {
            i += 1;
            p.ping_pong(i)
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
