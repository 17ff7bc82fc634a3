//! The plain-data types of `include/sss.h`, laid out `#[repr(C)]` exactly
//! as the header declares them (a test compares sizes and offsets with
//! what a C compiler computes).

use sss_mbcf::{Perm, RemoteAddr, SegmentInfo, TaskStats};

/// `sss_seg_info_t`: what a peer needs to address a segment.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SegInfo {
    /// Owner rank.
    pub rank: u32,
    /// `SSS_PERM_*` bits.
    pub perm: u32,
    /// Capability key.
    pub key: u64,
    /// Base virtual address in the owner.
    pub base: u64,
    /// Length in bytes.
    pub len: u64,
}

impl From<SegmentInfo> for SegInfo {
    fn from(i: SegmentInfo) -> Self {
        Self {
            rank: i.rank,
            perm: u32::from(i.perm.0),
            key: i.key,
            base: i.base,
            len: i.len,
        }
    }
}

/// `sss_raddr_t`: an address in a task, (rank, segment key, address).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RAddr {
    /// The task.
    pub rank: u32,
    /// Zero; keeps the layout explicit.
    pub reserved: u32,
    /// Key of the segment holding `addr`.
    pub key: u64,
    /// Virtual address in that task.
    pub addr: u64,
}

impl From<RAddr> for RemoteAddr {
    fn from(a: RAddr) -> Self {
        RemoteAddr {
            rank: a.rank,
            key: a.key,
            addr: a.addr,
        }
    }
}

impl From<RemoteAddr> for RAddr {
    fn from(a: RemoteAddr) -> Self {
        RAddr {
            rank: a.rank,
            reserved: 0,
            key: a.key,
            addr: a.addr,
        }
    }
}

/// `SSS_OP_FLAG_STATUS_RETURN`: complete on remote application.
pub const OP_FLAG_STATUS_RETURN: u32 = 1 << 0;
/// `SSS_OP_FLAG_NOFC`: no flow control (sent once, unordered).
pub const OP_FLAG_NOFC: u32 = 1 << 1;
/// `SSS_OP_FLAG_NOTIFY`: WRITE only, bump a counter in the target after
/// the data.
pub const OP_FLAG_NOTIFY: u32 = 1 << 2;
/// Every flag this version knows.
pub const OP_FLAGS_ALL: u32 = OP_FLAG_STATUS_RETURN | OP_FLAG_NOFC | OP_FLAG_NOTIFY;

/// `sss_op_params_t`: options of one operation.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct OpParams {
    /// `SSS_OP_FLAG_*` bits.
    pub flags: u32,
    /// Zero.
    pub reserved: u32,
    /// Key of the segment holding the notify counter (target side).
    pub notify_key: u64,
    /// Address of the 8-byte notify counter in the target.
    pub notify_addr: u64,
    /// Amount added to the notify counter.
    pub notify_addend: u64,
    /// Local 8-byte counter bumped on completion, or null.
    pub counter: *mut u64,
}

/// `sss_stats_t`: counters of a task.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Datagrams sent.
    pub packets_sent: u64,
    /// Bytes sent.
    pub bytes_sent: u64,
    /// Datagrams received.
    pub packets_received: u64,
    /// Bytes received.
    pub bytes_received: u64,
    /// Retransmitted packets.
    pub retransmissions: u64,
    /// Incoming operations applied.
    pub applied: u64,
    /// Incoming operations refused.
    pub rejected: u64,
    /// Corrupted or malformed datagrams dropped.
    pub bad_packets: u64,
}

impl From<TaskStats> for Stats {
    fn from(s: TaskStats) -> Self {
        Self {
            packets_sent: s.packets_sent,
            bytes_sent: s.bytes_sent,
            packets_received: s.packets_received,
            bytes_received: s.bytes_received,
            retransmissions: s.retransmissions,
            applied: s.applied,
            rejected: s.rejected,
            bad_packets: s.bad_packets,
        }
    }
}

/// `sss_cmp_t`: how `sss_wait_u64` compares the word with the value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmp {
    /// `SSS_CMP_EQ`
    Eq,
    /// `SSS_CMP_NE`
    Ne,
    /// `SSS_CMP_GT`
    Gt,
    /// `SSS_CMP_GE`
    Ge,
    /// `SSS_CMP_LT`
    Lt,
    /// `SSS_CMP_LE`
    Le,
}

impl Cmp {
    /// The comparison with header value `v` (`SSS_CMP_EQ` = 0 …).
    pub fn from_raw(v: u32) -> Option<Cmp> {
        Some(match v {
            0 => Cmp::Eq,
            1 => Cmp::Ne,
            2 => Cmp::Gt,
            3 => Cmp::Ge,
            4 => Cmp::Lt,
            5 => Cmp::Le,
            _ => return None,
        })
    }

    /// `word <cmp> value`.
    pub fn holds(self, word: u64, value: u64) -> bool {
        match self {
            Cmp::Eq => word == value,
            Cmp::Ne => word != value,
            Cmp::Gt => word > value,
            Cmp::Ge => word >= value,
            Cmp::Lt => word < value,
            Cmp::Le => word <= value,
        }
    }
}

/// Segment permissions from `SSS_PERM_*` bits; `None` for unknown bits.
pub fn perm_from_raw(bits: u32) -> Option<Perm> {
    (bits & !7 == 0).then_some(Perm(bits as u8))
}

/// The C view of a node page; layout mirrors `sss_node_info_t`.
#[repr(C)]
pub struct NodeInfo {
    /// Node name, NUL-padded.
    pub name: [u8; 32],
    /// 1 while the node gossips.
    pub up: u32,
    /// CPUs.
    pub ncpus: u32,
    /// Runnable threads.
    pub runnable: u32,
    /// SSS tasks on the node.
    pub ntasks: u32,
    /// Load averages ×1000.
    pub load1000: [u32; 3],
    /// Zero.
    pub reserved: u32,
    /// Memory total, KiB.
    pub mem_total_kb: u64,
    /// Memory available, KiB.
    pub mem_free_kb: u64,
    /// Datagrams sent.
    pub packets: u64,
    /// Bytes sent.
    pub bytes: u64,
    /// Retransmissions.
    pub retransmissions: u64,
    /// Refused operations.
    pub rejected: u64,
    /// Publication time, ns.
    pub updated_ns: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_match_the_header_comments() {
        assert_eq!(std::mem::size_of::<SegInfo>(), 32);
        assert_eq!(std::mem::size_of::<RAddr>(), 24);
        assert_eq!(std::mem::size_of::<OpParams>(), 40);
        assert_eq!(std::mem::size_of::<Stats>(), 64);
    }

    #[test]
    fn comparisons() {
        assert!(Cmp::from_raw(3).unwrap().holds(5, 5));
        assert!(!Cmp::from_raw(2).unwrap().holds(5, 5));
        assert!(Cmp::from_raw(1).unwrap().holds(4, 5));
        assert_eq!(Cmp::from_raw(6), None);
        assert_eq!(perm_from_raw(8), None);
        assert_eq!(perm_from_raw(7), Some(Perm::ALL));
    }
}
