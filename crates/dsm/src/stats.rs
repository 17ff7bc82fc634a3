//! Counters of one task's heap: the atomic [`Counters`] the threads bump
//! and the [`Stats`] snapshot (what `SSS_STATS=json` prints).

use std::sync::atomic::{AtomicU64, Ordering};

#[cfg(doc)]
use crate::{Dsm, WAKE_RECHECK};

/// Counters of one task (what `SSS_STATS=json` prints).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    /// Read (missing-page) faults.
    pub read_faults: u64,
    /// Write faults: missing pages written first, and write-protect faults.
    pub write_faults: u64,
    /// Pages fetched from a home (prefetched ones included).
    pub pages_fetched: u64,
    /// Of those, fetched ahead by prefetch.
    pub pages_prefetched: u64,
    /// Of those, copies fetched again at the acquire that dropped them
    /// (read again after an earlier drop).
    pub pages_refreshed: u64,
    /// Pages of this home sent with barrier arrival records to tasks
    /// that asked for them (their copies, dropped by the acquire after,
    /// are installed from these instead of READ again).
    pub pages_pushed: u64,
    /// Of the refreshed copies, those whose home's pushed bytes were
    /// written over the copy where it was (no drop, no install).
    pub pages_overwritten: u64,
    /// Pages diffed against their twin.
    pub diffs: u64,
    /// Twins kept (page copies taken at a page's first trapped write of
    /// an interval, or ahead of it for pages written the interval before).
    pub twins: u64,
    /// Pages of this task's home mapped into its view as plain memory
    /// (no fetch, no twin, no diff).
    pub mapped_pages: u64,
    /// Messages of written data: MBCF WRITEs to homes, and update
    /// SIGNALs (to homes, forwarded by homes, or sent to copies).
    pub writes: u64,
    /// Bytes of data in those messages.
    pub bytes_sent: u64,
    /// MBCF datagrams sent (udp peers only; shm peers need none).
    pub packets: u64,
    /// `note_write` calls (#CM: consistency-code executions).
    pub notes: u64,
    /// Write notices published.
    pub notices: u64,
    /// Write notices of pages homed here left out: no other task ever
    /// copied the page (its copy marks are 0).
    pub notices_skipped: u64,
    /// Copy marks this task set at other homes (once per page fetched).
    pub copy_marks: u64,
    /// Pages dropped by invalidation.
    pub invalidations: u64,
    /// Lock acquisitions.
    pub locks: u64,
    /// Barriers.
    pub barriers: u64,
    /// Nanoseconds in the fault thread resolving faults.
    pub fault_ns: u64,
    /// Nanoseconds in lock, unlock, barrier and write-through.
    pub sync_ns: u64,
    /// Update messages received for this task's copies (`update`,
    /// `update_drct`), applied or not.
    pub updates: u64,
    /// [`Dsm::read`] pieces served by an MBCF READ from a home.
    pub home_reads: u64,
    /// Lock and barrier waits that found their turn by looking again
    /// after [`WAKE_RECHECK`] rather than by their wake-up: the releaser
    /// was slow to ring (descheduled, or its packets retransmitted), or
    /// the wake-up went missing (see [`Dsm::lock`]).
    pub missed_wakeups: u64,
    /// Update and invalidation messages, and allocation descriptors,
    /// dropped as malformed or outside the heap: another task's bug or a
    /// forged datagram.
    pub bad_messages: u64,
    /// Pages made present by explicit fetches ([`Dsm::fetch`], UDSM
    /// mode: what compiled code's presence checks asked for), instead of
    /// read or write faults.
    pub fetches: u64,
    /// Whether the heap used userfaultfd (1, ADSM) or not (0, UDSM).
    pub userfaultfd: u64,
    /// Faults the fault thread could not resolve (each also printed): a
    /// bug of ours, or a home that failed; the faulting thread may stay
    /// blocked until the job's time-out (or, resolving in the faulting
    /// thread, the task ends with SIGBUS).
    pub fault_errors: u64,
    /// Faults resolved in the faulting thread's SIGBUS handler
    /// (`SSS_DSM_FAULTS=signal`) rather than by the fault thread.
    pub fault_signals: u64,
    /// MBCF operations of locks, barriers and acquires (the notice pull,
    /// the READs of dropped copies fetched again) to other tasks that
    /// wait for an answer (FETCH_ADD, SWAP, READ):
    /// each is a round trip unless others are in flight with it.
    pub sync_requests: u64,
    /// One-way MBCF operations of synchronization, not waited for:
    /// barriers' WRITEs (arrival records with their write notices, or the
    /// last arrival's release of the others), locks' releases (a SIGNAL
    /// to the home, or a WRITE of the releaser's view on one node) and
    /// the doorbells a home rings.
    pub sync_writes: u64,
    /// Lookups of the allocation a page belongs to (each takes the
    /// allocation table's lock): per allocation met, not per page or
    /// note, in a release and in a drained note log.
    pub range_lookups: u64,
    /// Round trips the faults' fetches waited for (holder bits, looks at
    /// busy bits, READs; those sent together count once).
    pub fetch_trips: u64,
}

impl Stats {
    /// One JSON object on one line.
    pub fn to_json(&self, rank: u32) -> String {
        format!(
            "{{\"dsm\":{{\"rank\":{rank},\"read_faults\":{},\"write_faults\":{},\"pages_fetched\":{},\"pages_prefetched\":{},\"pages_refreshed\":{},\"pages_pushed\":{},\"pages_overwritten\":{},\"diffs\":{},\"twins\":{},\"mapped_pages\":{},\"writes\":{},\"bytes_sent\":{},\"packets\":{},\"notes\":{},\"notices\":{},\"notices_skipped\":{},\"copy_marks\":{},\"invalidations\":{},\"locks\":{},\"barriers\":{},\"fault_ns\":{},\"sync_ns\":{},\"updates\":{},\"home_reads\":{},\"missed_wakeups\":{},\"bad_messages\":{},\"fetches\":{},\"userfaultfd\":{},\"fault_errors\":{},\"fault_signals\":{},\"sync_requests\":{},\"sync_writes\":{},\"range_lookups\":{},\"fetch_trips\":{}}}}}",
            self.read_faults,
            self.write_faults,
            self.pages_fetched,
            self.pages_prefetched,
            self.pages_refreshed,
            self.pages_pushed,
            self.pages_overwritten,
            self.diffs,
            self.twins,
            self.mapped_pages,
            self.writes,
            self.bytes_sent,
            self.packets,
            self.notes,
            self.notices,
            self.notices_skipped,
            self.copy_marks,
            self.invalidations,
            self.locks,
            self.barriers,
            self.fault_ns,
            self.sync_ns,
            self.updates,
            self.home_reads,
            self.missed_wakeups,
            self.bad_messages,
            self.fetches,
            self.userfaultfd,
            self.fault_errors,
            self.fault_signals,
            self.sync_requests,
            self.sync_writes,
            self.range_lookups,
            self.fetch_trips,
        )
    }
}

#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) read_faults: AtomicU64,
    pub(crate) write_faults: AtomicU64,
    pub(crate) pages_fetched: AtomicU64,
    pub(crate) pages_prefetched: AtomicU64,
    pub(crate) pages_refreshed: AtomicU64,
    pub(crate) pages_pushed: AtomicU64,
    pub(crate) pages_overwritten: AtomicU64,
    pub(crate) diffs: AtomicU64,
    pub(crate) twins: AtomicU64,
    pub(crate) mapped_pages: AtomicU64,
    pub(crate) writes: AtomicU64,
    pub(crate) bytes_sent: AtomicU64,
    pub(crate) notes: AtomicU64,
    pub(crate) notices: AtomicU64,
    pub(crate) notices_skipped: AtomicU64,
    pub(crate) copy_marks: AtomicU64,
    pub(crate) invalidations: AtomicU64,
    pub(crate) locks: AtomicU64,
    pub(crate) barriers: AtomicU64,
    pub(crate) fault_ns: AtomicU64,
    pub(crate) sync_ns: AtomicU64,
    pub(crate) updates: AtomicU64,
    pub(crate) home_reads: AtomicU64,
    pub(crate) missed_wakeups: AtomicU64,
    pub(crate) bad_messages: AtomicU64,
    pub(crate) fetches: AtomicU64,
    pub(crate) fault_errors: AtomicU64,
    pub(crate) fault_signals: AtomicU64,
    pub(crate) sync_requests: AtomicU64,
    pub(crate) sync_writes: AtomicU64,
    pub(crate) range_lookups: AtomicU64,
    pub(crate) fetch_trips: AtomicU64,
}

pub(crate) fn bump(c: &AtomicU64, n: u64) {
    c.fetch_add(n, Ordering::Relaxed);
}
