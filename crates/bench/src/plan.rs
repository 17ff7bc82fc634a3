//! What one bench run measures: the list of items, their sizes and
//! iteration counts. The launcher side writes it as JSON and every task
//! reads the same file, so both ranks walk the same schedule.

use serde::{Deserialize, Serialize};

/// Payload of one full MBCF datagram with the default settings (sealed:
/// 1392 bytes fill a 1500-byte frame), the "one packet" size of the tables.
pub const DATAGRAM: usize = 1392;
/// Sizes of the one-way latency table (seed 000 Table 3).
pub const LAT_SIZES: [usize; 5] = [4, 16, 64, 256, 1024];
/// Sizes of the peak bandwidth table (seed 000 Table 2, extended).
pub const BW_SIZES: [usize; 9] = [4, 16, 64, 256, 1024, DATAGRAM, 4096, 65536, 1 << 20];
/// Sizes of the round trip against size plot (seed 000 Fig. 4): 0–1392 B,
/// including every size of the latency table and the 8 B of the target.
pub const RTT_SIZES: [usize; 11] = [0, 4, 8, 16, 64, 256, 512, 768, 1024, 1280, DATAGRAM];
/// The TCP bandwidth baseline writes this many bytes per `write`, and
/// [`TCP_BW_LARGE`].
pub const TCP_BW_SIZE: usize = DATAGRAM;
/// The large-write TCP bandwidth baseline.
pub const TCP_BW_LARGE: usize = 65536;
/// Datagram size of the GSO UDP floor (MBCF's default udp payload).
pub const GSO_SEG: usize = DATAGRAM;
/// Bytes per GSO send: as many segments as fit in one 64 KiB UDP send.
pub const GSO_SEND: usize = GSO_SEG * (65_000 / GSO_SEG);
/// Sizes of the memcpy floor.
pub const MEMCPY_SIZES: [usize; 2] = [65536, 1 << 20];
/// Payload of the floors' and busy-polled baselines' round trips.
pub const FLOOR_SIZE: usize = 8;
/// Payload of the operations whose CPU cost is measured.
pub const CPU_SIZE: usize = 8;

/// An MBCF operation of the latency table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LatOp {
    /// READ with status return: a round trip by itself.
    Read,
    /// FIFO push answered by a FIFO push back.
    Fifo,
    /// SIGNAL whose handler signals back.
    Signal,
    /// SWAP with the old value returned.
    Swap,
    /// CAS with the old value returned.
    Cas,
}

impl LatOp {
    /// Every operation measured by [`Item::Lat`]; WRITE comes from the
    /// round-trip items.
    pub const ALL: [LatOp; 5] = [
        LatOp::Read,
        LatOp::Fifo,
        LatOp::Signal,
        LatOp::Swap,
        LatOp::Cas,
    ];

    /// Lower-case name used in keys.
    pub fn name(self) -> &'static str {
        match self {
            LatOp::Read => "read",
            LatOp::Fifo => "fifo",
            LatOp::Signal => "signal",
            LatOp::Swap => "swap",
            LatOp::Cas => "cas",
        }
    }

    /// Atomics move 8 bytes whatever the column says.
    pub fn is_atomic(self) -> bool {
        matches!(self, LatOp::Swap | LatOp::Cas)
    }
}

/// How a socket baseline waits for data.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Wait {
    /// Blocks in `recv` (the process sleeps until data arrives).
    #[default]
    Block,
    /// Calls `recv(MSG_DONTWAIT)` in a loop: never sleeps.
    Poll,
    /// MBCF's own policy: polls for `SSS_SPIN_US`, then blocks.
    Hybrid,
}

impl Wait {
    /// Every policy, in table order.
    pub const ALL: [Wait; 3] = [Wait::Block, Wait::Poll, Wait::Hybrid];

    /// Lower-case name used in keys.
    pub fn name(self) -> &'static str {
        match self {
            Wait::Block => "block",
            Wait::Poll => "poll",
            Wait::Hybrid => "hybrid",
        }
    }
}

/// A transport compared in the round-trip, bandwidth and CPU items.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Proto {
    /// MBCF WRITE with a notify counter.
    Mbcf,
    /// Raw UDP datagrams.
    Udp,
    /// TCP with `TCP_NODELAY`.
    Tcp,
    /// Floor: UDP with GSO sends (`UDP_SEGMENT`) and GRO receives.
    Gso,
    /// The GSO floor with `MSG_ZEROCOPY` sends (does zero-copy pay?).
    GsoZerocopy,
    /// Floor: two processes ping-ponging one shared cache line.
    Line,
    /// Floor: `memcpy` within one process.
    Memcpy,
}

impl Proto {
    /// Lower-case name used in keys.
    pub fn name(self) -> &'static str {
        match self {
            Proto::Mbcf => "mbcf",
            Proto::Udp => "udp",
            Proto::Tcp => "tcp",
            Proto::Gso => "gso",
            Proto::GsoZerocopy => "gsozc",
            Proto::Line => "line",
            Proto::Memcpy => "memcpy",
        }
    }

    /// The contender's name in keys: sockets carry their wait policy
    /// (`udp_poll`), the others not.
    pub fn key(self, wait: Wait) -> String {
        match self {
            Proto::Udp | Proto::Tcp | Proto::Gso | Proto::GsoZerocopy => {
                format!("{}_{}", self.name(), wait.name())
            }
            _ => self.name().to_string(),
        }
    }
}

/// One measurement; each repetition runs every item once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Item {
    /// Round trip of `op` with `size` bytes (key `lat/OP/SIZE`, µs one way).
    Lat {
        /// The operation.
        op: LatOp,
        /// Payload bytes.
        size: usize,
    },
    /// Ping-pong round trip (key `rtt/CONTENDER/SIZE`, µs; see
    /// [`Proto::key`]).
    Rtt {
        /// Who carries it.
        proto: Proto,
        /// Payload bytes.
        size: usize,
        /// How a socket waits (ignored by the others).
        #[serde(default)]
        wait: Wait,
    },
    /// Streaming bandwidth (key `bw/CONTENDER/SIZE`, MB/s = 10^6 B/s).
    Bw {
        /// MBCF WRITE, TCP, GSO UDP or memcpy.
        proto: Proto,
        /// Bytes per operation, per `write` or per GSO send.
        size: usize,
        /// How the receiving socket waits (ignored by the others).
        #[serde(default)]
        wait: Wait,
    },
    /// CPU time per small operation at the sender and at the receiver
    /// (keys `cpu/PROTO/send` and `cpu/PROTO/recv`, ns per operation).
    Cpu {
        /// Who carries it.
        proto: Proto,
    },
}

/// Chunks a latency item's timed rounds are split into; the item's
/// figure is the median chunk's mean (the Open MPI ping-pong does the
/// same).
pub const CHUNKS: u64 = 5;

/// The median of `v` (sorted in place); NaN when empty.
pub fn median_of(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// Everything the tasks need to know to run one repetition.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Plan {
    /// Items in schedule order.
    pub items: Vec<Item>,
    /// Round trips timed per latency item.
    pub iters: u64,
    /// Untimed round trips before them.
    pub warmup: u64,
    /// Bytes streamed per bandwidth item (fewer for tiny sizes: see
    /// [`Plan::bw_ops`]).
    pub bw_bytes: u64,
    /// Most operations per bandwidth item.
    pub bw_max_ops: u64,
    /// Operations per CPU item.
    pub cpu_ops: u64,
}

impl Plan {
    /// The full schedule, with `quick` iteration counts or the full ones.
    pub fn new(quick: bool) -> Self {
        let mut items = Vec::new();
        // Contenders of one size sit next to each other so that drift
        // within a repetition hits them alike.
        for &size in &RTT_SIZES {
            items.push(Item::Rtt {
                proto: Proto::Mbcf,
                size,
                wait: Wait::Block,
            });
            if size == FLOOR_SIZE {
                items.push(Item::Rtt {
                    proto: Proto::Line,
                    size,
                    wait: Wait::Poll,
                });
            }
            for proto in [Proto::Udp, Proto::Tcp] {
                for wait in Wait::ALL {
                    items.push(Item::Rtt { proto, size, wait });
                }
            }
        }
        for &size in &LAT_SIZES {
            for op in LatOp::ALL {
                if op.is_atomic() && size != LAT_SIZES[0] {
                    continue;
                }
                items.push(Item::Lat { op, size });
            }
        }
        for &size in &BW_SIZES {
            items.push(Item::Bw {
                proto: Proto::Mbcf,
                size,
                wait: Wait::Block,
            });
            if size == TCP_BW_SIZE || size == TCP_BW_LARGE {
                for wait in [Wait::Block, Wait::Poll] {
                    items.push(Item::Bw {
                        proto: Proto::Tcp,
                        size,
                        wait,
                    });
                }
            }
            if size == TCP_BW_LARGE {
                for wait in [Wait::Block, Wait::Poll] {
                    items.push(Item::Bw {
                        proto: Proto::Gso,
                        size: GSO_SEND,
                        wait,
                    });
                }
                items.push(Item::Bw {
                    proto: Proto::GsoZerocopy,
                    size: GSO_SEND,
                    wait: Wait::Poll,
                });
            }
            if MEMCPY_SIZES.contains(&size) {
                items.push(Item::Bw {
                    proto: Proto::Memcpy,
                    size,
                    wait: Wait::Block,
                });
            }
        }
        for proto in [Proto::Mbcf, Proto::Udp, Proto::Tcp] {
            items.push(Item::Cpu { proto });
        }
        if quick {
            Plan {
                items,
                iters: 300,
                warmup: 30,
                bw_bytes: 8 << 20,
                bw_max_ops: 4000,
                cpu_ops: 20_000,
            }
        } else {
            Plan {
                items,
                iters: 3000,
                warmup: 200,
                // A quarter of a GiB: an MBCF stream lasts about 0.1 s,
                // past its start and the noise of a shared machine (with
                // 64 MiB, 30 ms, its items read 1.7–2.3 GB/s where
                // longer streams held 2.6–3.3).
                bw_bytes: 256 << 20,
                // Small sizes too: 1 KiB WRITEs for 0.1 s.
                bw_max_ops: 160_000,
                cpu_ops: 200_000,
            }
        }
    }

    /// Timed round trips of each of a latency item's [`CHUNKS`] chunks.
    pub fn chunk_rounds(&self) -> u64 {
        (self.iters / CHUNKS).max(1)
    }

    /// Sets the timed round trips per latency item (`--iters`), with a
    /// tenth of them (at least one) as warm-up.
    pub fn with_iters(mut self, iters: u64) -> Self {
        self.iters = iters.max(1);
        self.warmup = (iters / 10).max(1);
        self
    }

    /// Operations streamed by a bandwidth item of `size` bytes each.
    pub fn bw_ops(&self, size: usize) -> u64 {
        (self.bw_bytes / size.max(1) as u64).clamp(16, self.bw_max_ops.max(16))
    }
}

/// The key of a latency figure.
pub fn lat_key(op: &str, size: usize) -> String {
    format!("lat/{op}/{size}")
}

/// The key of a round-trip figure.
pub fn rtt_key(proto: &str, size: usize) -> String {
    format!("rtt/{proto}/{size}")
}

/// The key of a bandwidth figure.
pub fn bw_key(proto: &str, size: usize) -> String {
    format!("bw/{proto}/{size}")
}

/// The key of the fraction of a GSO stream's bytes that arrived.
pub fn delivered_key(proto: &str, size: usize) -> String {
    format!("delivered/{proto}/{size}")
}

/// The key of the share of zero-copy sends the kernel reported copied.
pub fn copied_key(proto: &str, size: usize) -> String {
    format!("copied/{proto}/{size}")
}

/// The key of a CPU figure; `side` is `send` or `recv`.
pub fn cpu_key(proto: &str, side: &str) -> String {
    format!("cpu/{proto}/{side}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stalled_chunk_does_not_move_the_figure() {
        // One chunk took a 1 ms stall over its rounds.
        let mut means = [0.21, 0.22, 0.20, 3.50, 0.21];
        assert_eq!(median_of(&mut means), 0.21);
        assert!(median_of(&mut []).is_nan());
        let plan = Plan::new(false).with_iters(12);
        assert_eq!(plan.chunk_rounds(), 2);
        assert_eq!(Plan::new(false).with_iters(3).chunk_rounds(), 1);
    }
}
