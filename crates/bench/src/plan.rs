//! What one bench run measures: the list of items, their sizes and
//! iteration counts. The launcher side writes it as JSON and every task
//! reads the same file, so both ranks walk the same schedule.

use serde::{Deserialize, Serialize};

/// Sizes of the one-way latency table (seed 000 Table 3).
pub const LAT_SIZES: [usize; 5] = [4, 16, 64, 256, 1024];
/// Sizes of the peak bandwidth table (seed 000 Table 2, extended).
pub const BW_SIZES: [usize; 9] = [4, 16, 64, 256, 1024, 1408, 4096, 65536, 1 << 20];
/// Sizes of the round trip against size plot (seed 000 Fig. 4): 0–1408 B,
/// including every size of the latency table and the 8 B of the target.
pub const RTT_SIZES: [usize; 11] = [0, 4, 8, 16, 64, 256, 512, 768, 1024, 1280, 1408];
/// The TCP bandwidth baseline writes this many bytes per `write`.
pub const TCP_BW_SIZE: usize = 1408;
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

/// A transport compared in the round-trip, bandwidth and CPU items.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Proto {
    /// MBCF WRITE with a notify counter.
    Mbcf,
    /// Raw UDP datagrams, blocking sockets.
    Udp,
    /// TCP with `TCP_NODELAY`.
    Tcp,
}

impl Proto {
    /// Lower-case name used in keys.
    pub fn name(self) -> &'static str {
        match self {
            Proto::Mbcf => "mbcf",
            Proto::Udp => "udp",
            Proto::Tcp => "tcp",
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
    /// Ping-pong round trip (key `rtt/PROTO/SIZE`, µs).
    Rtt {
        /// Who carries it.
        proto: Proto,
        /// Payload bytes.
        size: usize,
    },
    /// Streaming bandwidth (key `bw/PROTO/SIZE`, MB/s = 10^6 B/s).
    Bw {
        /// MBCF WRITE or TCP.
        proto: Proto,
        /// Bytes per operation or per `write`.
        size: usize,
    },
    /// CPU time per small operation at the sender and at the receiver
    /// (keys `cpu/PROTO/send` and `cpu/PROTO/recv`, ns per operation).
    Cpu {
        /// Who carries it.
        proto: Proto,
    },
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
            for proto in [Proto::Mbcf, Proto::Udp, Proto::Tcp] {
                items.push(Item::Rtt { proto, size });
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
            });
            if size == TCP_BW_SIZE {
                items.push(Item::Bw {
                    proto: Proto::Tcp,
                    size,
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
                bw_bytes: 64 << 20,
                bw_max_ops: 40_000,
                cpu_ops: 200_000,
            }
        }
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

/// The key of a CPU figure; `side` is `send` or `recv`.
pub fn cpu_key(proto: &str, side: &str) -> String {
    format!("cpu/{proto}/{side}")
}
