//! A deterministic simulated datagram network for protocol tests.
//!
//! Time is virtual (nanoseconds, a plain `u64`) and every random choice
//! comes from one seeded generator, so a run is a pure function of its seed
//! and inputs: a failing test can be replayed exactly. The network knows
//! nothing of MBCF; it moves byte vectors between addresses of any ordered
//! type and misbehaves as configured:
//!
//! - **latency** plus uniform **jitter** (jitter reorders packets);
//! - **reorder**: a fraction of packets held back by an extra delay;
//! - **loss**: a fraction of packets dropped;
//! - **duplication**: a fraction delivered twice, at independent times;
//! - **corruption**: a fraction with one random bit flipped;
//! - **MTU**: packets longer than the limit are dropped (and counted), as
//!   an IP network without fragmentation would.
//!
//! Links can also be cut per address ([`Network::set_down`]), which drops
//! everything to and from that address, as a dead node would.

#![forbid(unsafe_code)]

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap};

/// Virtual time in nanoseconds.
pub type Time = u64;

/// How the network misbehaves. Fractions are probabilities in `[0, 1]`.
#[derive(Debug, Clone)]
pub struct NetConfig {
    /// Base one-way delay.
    pub latency: Time,
    /// Uniform extra delay in `[0, jitter]` per packet.
    pub jitter: Time,
    /// Fraction of packets delayed by an extra `reorder_delay`.
    pub reorder: f64,
    /// Extra delay of reordered packets.
    pub reorder_delay: Time,
    /// Fraction of packets dropped.
    pub loss: f64,
    /// Fraction of packets delivered twice.
    pub duplicate: f64,
    /// Fraction of packets with one bit flipped.
    pub corrupt: f64,
    /// Largest datagram carried; longer ones are dropped.
    pub mtu: usize,
    /// Seed of the random generator.
    pub seed: u64,
}

impl Default for NetConfig {
    /// A perfect network: 10 µs latency, nothing lost, 64 KiB datagrams.
    fn default() -> Self {
        Self {
            latency: 10_000,
            jitter: 0,
            reorder: 0.0,
            reorder_delay: 0,
            loss: 0.0,
            duplicate: 0.0,
            corrupt: 0.0,
            mtu: 65_535,
            seed: 1,
        }
    }
}

/// What happened to packets, for assertions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NetStats {
    /// Packets handed to [`Network::send`].
    pub sent: u64,
    /// Packets handed out by [`Network::pop`] (duplicates count twice).
    pub delivered: u64,
    /// Dropped by random loss.
    pub lost: u64,
    /// Extra copies made.
    pub duplicated: u64,
    /// Packets with a flipped bit.
    pub corrupted: u64,
    /// Packets held back to reorder them.
    pub reordered: u64,
    /// Dropped for exceeding the MTU.
    pub too_big: u64,
    /// Dropped because an end was down.
    pub to_down: u64,
}

struct InFlight<A> {
    from: A,
    to: A,
    data: Vec<u8>,
}

/// The simulated network. `A` is the address type.
pub struct Network<A> {
    cfg: NetConfig,
    rng: ChaCha8Rng,
    // Ordered by delivery time, then by an insertion counter so equal times
    // keep a deterministic order.
    queue: BinaryHeap<Reverse<(Time, u64, usize)>>,
    slots: Vec<Option<InFlight<A>>>,
    free: Vec<usize>,
    counter: u64,
    down: BTreeSet<A>,
    stats: NetStats,
}

impl<A: Ord + Clone> Network<A> {
    /// A network with the given behaviour.
    pub fn new(cfg: NetConfig) -> Self {
        let rng = ChaCha8Rng::seed_from_u64(cfg.seed);
        Self {
            cfg,
            rng,
            queue: BinaryHeap::new(),
            slots: Vec::new(),
            free: Vec::new(),
            counter: 0,
            down: BTreeSet::new(),
            stats: NetStats::default(),
        }
    }

    /// The configuration in force.
    pub fn config(&self) -> &NetConfig {
        &self.cfg
    }

    /// Changes the behaviour from now on (packets in flight keep theirs).
    pub fn set_config(&mut self, cfg: NetConfig) {
        self.cfg = cfg;
    }

    /// Counters so far.
    pub fn stats(&self) -> &NetStats {
        &self.stats
    }

    /// Cuts (`true`) or restores (`false`) every link of `addr`.
    pub fn set_down(&mut self, addr: A, down: bool) {
        if down {
            self.down.insert(addr);
        } else {
            self.down.remove(&addr);
        }
    }

    fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && self.rng.random_bool(p.min(1.0))
    }

    fn schedule(&mut self, at: Time, from: A, to: A, data: Vec<u8>) {
        let f = InFlight { from, to, data };
        let idx = match self.free.pop() {
            Some(i) => {
                self.slots[i] = Some(f);
                i
            }
            None => {
                self.slots.push(Some(f));
                self.slots.len() - 1
            }
        };
        self.counter += 1;
        self.queue.push(Reverse((at, self.counter, idx)));
    }

    fn delay(&mut self) -> Time {
        let mut d = self.cfg.latency;
        if self.cfg.jitter > 0 {
            d += self.rng.random_range(0..=self.cfg.jitter);
        }
        if self.chance(self.cfg.reorder) {
            self.stats.reordered += 1;
            d += self.cfg.reorder_delay;
        }
        d
    }

    /// Hands a datagram to the network at time `now`.
    pub fn send(&mut self, now: Time, from: A, to: A, mut data: Vec<u8>) {
        self.stats.sent += 1;
        if self.down.contains(&from) || self.down.contains(&to) {
            self.stats.to_down += 1;
            return;
        }
        if data.len() > self.cfg.mtu {
            self.stats.too_big += 1;
            return;
        }
        if self.chance(self.cfg.loss) {
            self.stats.lost += 1;
            return;
        }
        if !data.is_empty() && self.chance(self.cfg.corrupt) {
            self.stats.corrupted += 1;
            let bit = self.rng.random_range(0..data.len() * 8);
            data[bit / 8] ^= 1 << (bit % 8);
        }
        if self.chance(self.cfg.duplicate) {
            self.stats.duplicated += 1;
            let at = now + self.delay();
            self.schedule(at, from.clone(), to.clone(), data.clone());
        }
        let at = now + self.delay();
        self.schedule(at, from, to, data);
    }

    /// When the next datagram arrives, if any is in flight.
    pub fn next_arrival(&self) -> Option<Time> {
        self.queue.peek().map(|Reverse((t, _, _))| *t)
    }

    /// Datagrams in flight.
    pub fn in_flight(&self) -> usize {
        self.queue.len()
    }

    /// The next datagram due at or before `now`: `(from, to, bytes)`.
    /// Datagrams to or from an address that went down meanwhile vanish.
    pub fn pop(&mut self, now: Time) -> Option<(A, A, Vec<u8>)> {
        loop {
            let &Reverse((t, _, idx)) = self.queue.peek()?;
            if t > now {
                return None;
            }
            self.queue.pop();
            let f = self.slots[idx].take()?;
            self.free.push(idx);
            if self.down.contains(&f.from) || self.down.contains(&f.to) {
                self.stats.to_down += 1;
                continue;
            }
            self.stats.delivered += 1;
            return Some((f.from, f.to, f.data));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(cfg: NetConfig, n: usize) -> (Vec<(Time, Vec<u8>)>, NetStats) {
        let mut net: Network<u32> = Network::new(cfg);
        for i in 0..n {
            net.send(i as Time * 100, 1, 2, vec![i as u8; 16]);
        }
        let mut out = Vec::new();
        while let Some(t) = net.next_arrival() {
            while let Some((_, _, d)) = net.pop(t) {
                out.push((t, d));
            }
        }
        (out, net.stats().clone())
    }

    #[test]
    fn perfect_network_delivers_everything_in_order() {
        let (out, st) = run(NetConfig::default(), 100);
        assert_eq!(out.len(), 100);
        assert!(out.windows(2).all(|w| w[0].1[0] < w[1].1[0]));
        assert_eq!(st.delivered, 100);
    }

    #[test]
    fn same_seed_same_run() {
        let cfg = NetConfig {
            jitter: 5_000,
            loss: 0.2,
            duplicate: 0.1,
            corrupt: 0.05,
            reorder: 0.1,
            reorder_delay: 50_000,
            ..NetConfig::default()
        };
        let a = run(cfg.clone(), 1000);
        let b = run(cfg, 1000);
        assert_eq!(a.0, b.0);
        assert_eq!(a.1, b.1);
        let st = a.1;
        assert!(st.lost > 100 && st.duplicated > 40 && st.corrupted > 10 && st.reordered > 40);
        assert_eq!(st.delivered, st.sent - st.lost + st.duplicated);
    }

    #[test]
    fn mtu_and_down_links_drop() {
        let mut net: Network<u32> = Network::new(NetConfig {
            mtu: 100,
            ..NetConfig::default()
        });
        net.send(0, 1, 2, vec![0; 101]);
        net.set_down(3, true);
        net.send(0, 1, 3, vec![0; 10]);
        assert_eq!(net.in_flight(), 0);
        assert_eq!(net.stats().too_big, 1);
        assert_eq!(net.stats().to_down, 1);
    }
}
