//! `SSS_STATS`: what each task's point-to-point traffic and collectives
//! looked like, printed at `MPI_Finalize` (the columns of the seed's NPB
//! table: data and message rates, average message size, the share of
//! data MBCF WRITE carried into a receive posted first, collectives
//! used). `json` prints one JSON object per task on stderr, `1` one
//! readable line; the schema is in docs/mpi.md.

use crate::consts::err;
use crate::engine::MpiErr;
use std::cell::Cell;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Mutex;

/// What finalize prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Off,
    Json,
    Line,
}

/// The mode in force: 0 off, 1 json, 2 a line (read once at init).
static MODE: AtomicU8 = AtomicU8::new(0);

/// Collectives called, by name (`MPI_` taken off, lower case).
static COLLS: Mutex<BTreeMap<&'static str, u64>> = Mutex::new(BTreeMap::new());

/// Parses `SSS_STATS` (`json`, `1`, `off`, `0` or unset).
pub(crate) fn parse(v: Option<&str>) -> Result<Mode, MpiErr> {
    match v.map(str::trim) {
        None | Some("" | "off" | "0") => Ok(Mode::Off),
        Some("json") => Ok(Mode::Json),
        Some("1") => Ok(Mode::Line),
        Some(other) => Err(MpiErr::new(
            err::OTHER,
            format!(
                "SSS_STATS={:?}: expected json, 1 or off",
                other.chars().take(40).collect::<String>()
            ),
        )),
    }
}

/// Reads the mode from the environment (at `MPI_Init`).
pub(crate) fn init_from_env() -> Result<(), MpiErr> {
    let v = std::env::var("SSS_STATS").ok();
    let m = parse(v.as_deref())?;
    MODE.store(
        match m {
            Mode::Off => 0,
            Mode::Json => 1,
            Mode::Line => 2,
        },
        Ordering::Relaxed,
    );
    Ok(())
}

pub(crate) fn mode() -> Mode {
    match MODE.load(Ordering::Relaxed) {
        1 => Mode::Json,
        2 => Mode::Line,
        _ => Mode::Off,
    }
}

/// The collective an entry point `name` is, if any.
fn collective(name: &str) -> Option<&'static str> {
    const NAMES: &[&str] = &[
        "barrier",
        "bcast",
        "reduce",
        "allreduce",
        "gather",
        "gatherv",
        "scatter",
        "scatterv",
        "allgather",
        "allgatherv",
        "alltoall",
        "alltoallv",
        "alltoallw",
        "reduce_scatter",
        "reduce_scatter_block",
        "scan",
        "exscan",
        "ibarrier",
        "ibcast",
        "ireduce",
        "iallreduce",
        "igather",
        "igatherv",
        "iscatter",
        "iscatterv",
        "iallgather",
        "iallgatherv",
        "ialltoall",
        "ialltoallv",
        "ialltoallw",
        "ireduce_scatter",
        "ireduce_scatter_block",
        "iscan",
        "iexscan",
    ];
    let n = name.strip_prefix("MPI_")?;
    NAMES.iter().copied().find(|c| c.eq_ignore_ascii_case(n))
}

thread_local! {
    /// Entry points this thread is inside: only the outermost counts (an
    /// entry point may call another, as `Reduce_scatter_block` does).
    static DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// While alive, the thread is inside an entry point.
pub(crate) struct Entered(bool);

impl Drop for Entered {
    fn drop(&mut self) {
        if self.0 {
            DEPTH.with(|d| d.set(d.get().saturating_sub(1)));
        }
    }
}

/// Entry point `name` was called: counted when it is a collective called
/// by the program and statistics are on.
pub(crate) fn enter(name: &str) -> Entered {
    if mode() == Mode::Off {
        return Entered(false);
    }
    let outer = DEPTH.with(|d| {
        let v = d.get();
        d.set(v + 1);
        v == 0
    });
    if let Some(c) = collective(name).filter(|_| outer) {
        *COLLS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(c)
            .or_default() += 1;
    }
    Entered(true)
}

/// Traffic counters of one task. Messages are those the MPI calls send
/// (collectives' included, control messages not); bytes are their
/// data, without envelopes.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Counters {
    pub sent_msgs: u64,
    pub sent_bytes: u64,
    /// Sent whole with the envelope through the receiver's FIFO.
    pub eager_msgs: u64,
    pub eager_bytes: u64,
    /// Of the eager ones, written into the receiver's ring (over udp,
    /// above the FIFO's slot).
    pub ring_msgs: u64,
    pub ring_bytes: u64,
    /// Announced, then READ by the receiver.
    pub rndv_msgs: u64,
    pub rndv_bytes: u64,
    /// Written by MBCF WRITE straight into a receive posted first.
    pub write_msgs: u64,
    pub write_bytes: u64,
    /// Of the WRITEs, messages written into a receive its receiver had
    /// noticed us (`engine/direct.rs`), without rendezvous.
    pub direct_writes: u64,
    /// Receives noticed to their sender with their buffer registered,
    /// and before them without (to keep the sender's picture whole).
    pub notices: u64,
    pub notice_placeholders: u64,
    /// Noticed receives completed by their sender's WRITE.
    pub direct_received: u64,
    /// Of those, written into another receive than MPI's matching names
    /// (never from a well-behaved sender: a check).
    pub direct_misordered: u64,
    /// FIFO messages refused: malformed, or naming what their sender
    /// has no business naming (another task wrote them: counted, then
    /// dropped).
    pub bad_msgs: u64,
    /// Receivers we stopped writing directly (a NOTICE came too late
    /// to check against the messages sent).
    pub direct_stops: u64,
    /// Of those sent, sent by collectives.
    pub coll_msgs: u64,
    pub coll_bytes: u64,
    pub recv_msgs: u64,
    pub recv_bytes: u64,
    /// Received into a receive posted before the message arrived.
    pub posted_first_msgs: u64,
    pub posted_first_bytes: u64,
    /// Rendezvous received by copying straight from a same-node sender's
    /// staged data, mapped here (no READ).
    pub direct_msgs: u64,
    pub direct_bytes: u64,
    /// Rendezvous received by reading the same-node sender's own buffer
    /// (`process_vm_readv`): one copy, nothing staged.
    pub peer_read_msgs: u64,
    pub peer_read_bytes: u64,
    /// Bytes sends copied into staging segments.
    pub staged_bytes: u64,
    /// Staging segments allocated (a window of large sends reuses
    /// them round after round).
    pub staging_segments: u64,
    /// Rendezvous sends across the network written from the caller's
    /// buffer at the clear-to-send, nothing staged.
    pub lent_msgs: u64,
    /// Rendezvous sends complete as soon as their data was staged,
    /// before the receiver took it (`engine::STAGED_AHEAD`).
    pub staged_ahead_msgs: u64,
    /// MBCF signals that followed a message while nonblocking
    /// collectives ran here (`nbc`).
    pub nbc_signals: u64,
    /// Requests the library made (point-to-point, collectives' messages,
    /// nonblocking collectives): a blocking send or receive done without
    /// one counts none.
    pub requests: u64,
    /// Blocking receives (`MPI_Recv`), and the looks they took under the
    /// library's lock: the first, then one per turn of their wait.
    pub blocking_recvs: u64,
    pub blocking_recv_looks: u64,
    /// Times a call (or a signal's handler) took the library's lock.
    pub library_locks: u64,
}

impl Counters {
    /// A message of `len` bytes sent eagerly (or not).
    pub(crate) fn sent(&mut self, len: usize, eager: bool) {
        let len = len as u64;
        self.sent_msgs += 1;
        self.sent_bytes += len;
        if eager {
            self.eager_msgs += 1;
            self.eager_bytes += len;
        } else {
            self.rndv_msgs += 1;
            self.rndv_bytes += len;
        }
    }

    /// A message of `len` bytes received, into a receive posted first
    /// (or not).
    pub(crate) fn received(&mut self, len: u64, posted_first: bool) {
        self.recv_msgs += 1;
        self.recv_bytes += len;
        if posted_first {
            self.posted_first_msgs += 1;
            self.posted_first_bytes += len;
        }
    }
}

fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

fn per_s(x: u64, secs: f64) -> f64 {
    if secs > 0.0 {
        x as f64 / secs
    } else {
        0.0
    }
}

/// The report of task `rank` of `size` after `secs` seconds, or None
/// when statistics are off.
pub(crate) fn report(
    rank: u32,
    size: u32,
    secs: f64,
    c: &Counters,
    t: &sss_mbcf::TaskStats,
) -> Option<String> {
    let m = mode();
    if m == Mode::Off {
        return None;
    }
    let colls = COLLS.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let avg = if c.sent_msgs == 0 {
        0.0
    } else {
        c.sent_bytes as f64 / c.sent_msgs as f64
    };
    let write_pct = pct(c.write_bytes, c.sent_bytes);
    if m == Mode::Line {
        let mut used = String::new();
        for (k, v) in &colls {
            let _ = write!(used, " {k} {v}");
        }
        if used.is_empty() {
            used.push_str(" none");
        }
        return Some(format!(
            "MPI stats, task {rank} of {size}: {secs:.3} s; sent {} B in {} messages \
             ({:.3} MB/s, {:.1} messages/s, {avg:.1} B on average); received {} B in {} \
             messages; eager {:.1}%, rendezvous {:.1}%, MBCF WRITE {write_pct:.1}% of bytes \
             sent; {:.1}% of bytes received into a receive posted first; collectives:{used}; \
             MBCF {} datagrams sent, {} retransmitted, {} waits blocked, {} progress wake-ups",
            c.sent_bytes,
            c.sent_msgs,
            per_s(c.sent_bytes, secs) / 1e6,
            per_s(c.sent_msgs, secs),
            c.recv_bytes,
            c.recv_msgs,
            pct(c.eager_bytes, c.sent_bytes),
            pct(c.rndv_bytes, c.sent_bytes),
            pct(c.posted_first_bytes, c.recv_bytes),
            t.packets_sent,
            t.retransmissions,
            t.blocked_waits,
            t.progress_wakeups,
        ));
    }
    let mut o = String::new();
    let _ = write!(
        o,
        "{{\"sss_mpi_stats\":1,\"rank\":{rank},\"size\":{size},\"seconds\":{secs:.6},\
         \"sent_bytes\":{},\"sent_messages\":{},\"recv_bytes\":{},\"recv_messages\":{},\
         \"data_rate_mb_s\":{:.6},\"message_rate_per_s\":{:.3},\"avg_message_bytes\":{avg:.3},\
         \"eager_messages\":{},\"eager_bytes\":{},\"rendezvous_messages\":{},\
         \"rendezvous_bytes\":{},\"write_messages\":{},\"write_bytes\":{},\
         \"mbcf_write_pct\":{write_pct:.3},\"coll_messages\":{},\"coll_bytes\":{},\
         \"posted_first_messages\":{},\
         \"posted_first_bytes\":{},\"posted_first_pct\":{:.3},\"direct_copy_messages\":{},\
         \"direct_copy_bytes\":{},\"ring_messages\":{},\"ring_bytes\":{},\
         \"peer_read_messages\":{},\"peer_read_bytes\":{},\"staged_bytes\":{},\"staging_segments\":{},\
         \"lent_messages\":{},\"staged_ahead_messages\":{},\"nbc_signals\":{},\"nbc_copied_bytes\":{},\"requests\":{},\"blocking_recvs\":{},\
         \"blocking_recv_looks\":{},\"library_locks\":{},\"direct_writes\":{},\"notices\":{},\
         \"notice_placeholders\":{},\"direct_received\":{},\"direct_misordered\":{},\
         \"direct_stops\":{},\"bad_messages\":{},\"collectives\":{{",
        c.sent_bytes,
        c.sent_msgs,
        c.recv_bytes,
        c.recv_msgs,
        per_s(c.sent_bytes, secs) / 1e6,
        per_s(c.sent_msgs, secs),
        c.eager_msgs,
        c.eager_bytes,
        c.rndv_msgs,
        c.rndv_bytes,
        c.write_msgs,
        c.write_bytes,
        c.coll_msgs,
        c.coll_bytes,
        c.posted_first_msgs,
        c.posted_first_bytes,
        pct(c.posted_first_bytes, c.recv_bytes),
        c.direct_msgs,
        c.direct_bytes,
        c.ring_msgs,
        c.ring_bytes,
        c.peer_read_msgs,
        c.peer_read_bytes,
        c.staged_bytes,
        c.staging_segments,
        c.lent_msgs,
        c.staged_ahead_msgs,
        c.nbc_signals,
        crate::nbc::pool::caller_bytes(),
        c.requests,
        c.blocking_recvs,
        c.blocking_recv_looks,
        c.library_locks,
        c.direct_writes,
        c.notices,
        c.notice_placeholders,
        c.direct_received,
        c.direct_misordered,
        c.direct_stops,
        c.bad_msgs,
    );
    for (i, (k, v)) in colls.iter().enumerate() {
        let sep = if i == 0 { "" } else { "," };
        let _ = write!(o, "{sep}\"{k}\":{v}");
    }
    let _ = write!(
        o,
        "}},\"transport\":{{\"packets_sent\":{},\"bytes_sent\":{},\"packets_received\":{},\
         \"retransmissions\":{},\"timeouts\":{},\"rack_lost\":{},\"timeout_lost\":{},\"spurious_timeouts\":{},\"dsacks\":{},\
         \"duplicates\":{},\"refused\":{},\"bad_packets\":{},\"blocked_waits\":{},\"wait_timeouts\":{},\
         \"progress_wakeups\":{},\"sswait_idle_blocks\":{},\"prewakes\":{},\
         \"reorder_dropped\":{},\"applied\":{},\"handovers\":{},\"moves\":{}}}}}",
        t.packets_sent,
        t.bytes_sent,
        t.packets_received,
        t.retransmissions,
        t.timeouts,
        t.rack_lost,
        t.timeout_lost,
        t.spurious_timeouts,
        t.dsacks,
        t.duplicates,
        t.refused,
        t.bad_packets,
        t.blocked_waits,
        t.wait_timeouts,
        t.progress_wakeups,
        t.sswait_idle_blocks,
        t.prewakes,
        t.reorder_dropped,
        t.applied,
        t.handovers,
        t.moves,
    );
    Some(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_parse_and_bad_ones_are_refused() {
        assert_eq!(parse(None).ok(), Some(Mode::Off));
        assert_eq!(parse(Some("json")).ok(), Some(Mode::Json));
        assert_eq!(parse(Some("1")).ok(), Some(Mode::Line));
        assert_eq!(parse(Some("off")).ok(), Some(Mode::Off));
        let e = parse(Some("yes please")).err().map(|e| e.msg);
        assert!(e.is_some_and(|m| m.contains("expected json, 1 or off")));
    }

    #[test]
    fn collectives_are_known_by_entry_point_name() {
        assert_eq!(collective("MPI_Allreduce"), Some("allreduce"));
        assert_eq!(
            collective("MPI_Ireduce_scatter_block"),
            Some("ireduce_scatter_block")
        );
        assert_eq!(collective("MPI_Send"), None);
        assert_eq!(collective("Allreduce"), None);
    }
}
