//! The plain-data types of `include/sss.h`, laid out `#[repr(C)]` exactly
//! as the header declares them (a test compares sizes and offsets with
//! what a C compiler computes), and the `field_mask` tables of the structs
//! that may grow.

use sss_mbcf::{Perm, RemoteAddr, SegmentInfo, TaskStats};

/// The bytes of one field of a [`Masked`] struct.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    /// Offset from the start of the struct.
    pub offset: usize,
    /// Size in bytes.
    pub len: usize,
}

/// A caller-allocated struct that starts with a `uint64_t field_mask`
/// (UCX style): bit `i` stands for `FIELDS[i]`, and the library reads or
/// writes a field only when its bit is set, so a caller built against an
/// older header, with a shorter struct, is never read or written past
/// the fields it knows.
pub trait Masked: Copy + Default {
    /// The field of each mask bit, in bit order (appended, never reordered).
    const FIELDS: &'static [Field];
    /// Every bit this version knows.
    const ALL: u64 = (1u64 << Self::FIELDS.len()) - 1;
}

/// The size of the field `f` selects (for [`fields!`]).
const fn field_len<T, F>(_: fn(&T) -> &F) -> usize {
    std::mem::size_of::<F>()
}

/// The [`Field`] table of struct `$t`, one entry per named field in bit
/// order.
macro_rules! fields {
    ($t:ty: $($f:ident),+ $(,)?) => {
        &[$(Field {
            offset: std::mem::offset_of!($t, $f),
            len: field_len(|s: &$t| &s.$f),
        }),+]
    };
}

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
    /// `SSS_OP_PARAM_FIELD_*` bits: the fields the caller set.
    pub field_mask: u64,
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

impl Default for OpParams {
    /// What unset fields read as: zero, and a null counter.
    fn default() -> Self {
        Self {
            field_mask: 0,
            flags: 0,
            reserved: 0,
            notify_key: 0,
            notify_addr: 0,
            notify_addend: 0,
            counter: std::ptr::null_mut(),
        }
    }
}

impl Masked for OpParams {
    const FIELDS: &'static [Field] = fields!(OpParams:
        flags, notify_key, notify_addr, notify_addend, counter);
}

/// `sss_stats_t`: counters of a task.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// `SSS_STATS_FIELD_*` bits: the fields the caller wants filled.
    pub field_mask: u64,
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
    /// Datagrams refused unopened (forged, modified, replayed, another
    /// job's).
    pub refused: u64,
}

impl From<TaskStats> for Stats {
    fn from(s: TaskStats) -> Self {
        Self {
            field_mask: 0,
            packets_sent: s.packets_sent,
            bytes_sent: s.bytes_sent,
            packets_received: s.packets_received,
            bytes_received: s.bytes_received,
            retransmissions: s.retransmissions,
            applied: s.applied,
            rejected: s.rejected,
            bad_packets: s.bad_packets,
            refused: s.refused,
        }
    }
}

impl Masked for Stats {
    const FIELDS: &'static [Field] = fields!(Stats:
        packets_sent, bytes_sent, packets_received, bytes_received,
        retransmissions, applied, rejected, bad_packets, refused);
}

/// `sss_dsm_stats_t`: counters of a task's heap.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DsmStats {
    /// `SSS_DSM_STATS_FIELD_*` bits: the fields the caller wants filled.
    pub field_mask: u64,
    /// Read faults.
    pub read_faults: u64,
    /// Write faults.
    pub write_faults: u64,
    /// Pages fetched from homes.
    pub pages_fetched: u64,
    /// Of those, prefetched.
    pub pages_prefetched: u64,
    /// Pages diffed.
    pub diffs: u64,
    /// MBCF WRITEs of data to homes.
    pub writes: u64,
    /// Bytes written to homes.
    pub bytes_sent: u64,
    /// Datagrams sent.
    pub packets: u64,
    /// note_write calls (#CM).
    pub notes: u64,
    /// Write notices published.
    pub notices: u64,
    /// Pages invalidated.
    pub invalidations: u64,
    /// Lock acquisitions.
    pub locks: u64,
    /// Barriers.
    pub barriers: u64,
    /// Nanoseconds resolving faults.
    pub fault_ns: u64,
    /// Nanoseconds synchronizing.
    pub sync_ns: u64,
    /// Update messages received for this task's copies.
    pub updates: u64,
}

impl From<sss_dsm::Stats> for DsmStats {
    fn from(s: sss_dsm::Stats) -> Self {
        Self {
            field_mask: 0,
            read_faults: s.read_faults,
            write_faults: s.write_faults,
            pages_fetched: s.pages_fetched,
            pages_prefetched: s.pages_prefetched,
            diffs: s.diffs,
            writes: s.writes,
            bytes_sent: s.bytes_sent,
            packets: s.packets,
            notes: s.notes,
            notices: s.notices,
            invalidations: s.invalidations,
            locks: s.locks,
            barriers: s.barriers,
            fault_ns: s.fault_ns,
            sync_ns: s.sync_ns,
            updates: s.updates,
        }
    }
}

impl Masked for DsmStats {
    const FIELDS: &'static [Field] = fields!(DsmStats:
        read_faults, write_faults, pages_fetched, pages_prefetched, diffs,
        writes, bytes_sent, packets, notes, notices, invalidations, locks,
        barriers, fault_ns, sync_ns, updates);
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NodeInfo {
    /// `SSS_NODE_INFO_FIELD_*` bits: the fields the caller wants filled.
    pub field_mask: u64,
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

impl Masked for NodeInfo {
    const FIELDS: &'static [Field] = fields!(NodeInfo:
        name, up, ncpus, runnable, ntasks, load1000, mem_total_kb,
        mem_free_kb, packets, bytes, retransmissions, rejected, updated_ns);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_match_the_header_comments() {
        assert_eq!(std::mem::size_of::<SegInfo>(), 32);
        assert_eq!(std::mem::size_of::<RAddr>(), 24);
        assert_eq!(std::mem::size_of::<OpParams>(), 48);
        assert_eq!(std::mem::size_of::<Stats>(), 80);
        assert_eq!(std::mem::size_of::<DsmStats>(), 136);
        assert_eq!(std::mem::size_of::<NodeInfo>(), 128);
    }

    /// Every table starts after the mask, covers distinct ascending
    /// fields, and stays inside its struct.
    fn check<T: Masked>() {
        let mut end = 8;
        for f in T::FIELDS {
            assert!(f.offset >= end && f.len > 0, "{f:?}");
            end = f.offset + f.len;
        }
        assert!(end <= std::mem::size_of::<T>());
        assert_eq!(T::ALL.count_ones() as usize, T::FIELDS.len());
    }

    #[test]
    fn field_tables() {
        check::<OpParams>();
        check::<Stats>();
        check::<DsmStats>();
        check::<NodeInfo>();
        assert_eq!(Stats::ALL, 0x1ff);
        assert_eq!(
            NodeInfo::FIELDS[5],
            Field {
                offset: 56,
                len: 12
            }
        );
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
