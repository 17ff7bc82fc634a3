//! Layout of each task's metadata segment (shared memory, registered with
//! MBCF, sparse: untouched parts cost nothing). Offsets in bytes; every
//! word is 8-byte aligned and updated with MBCF atomics or plain WRITEs.
//!
//! | offset | word | owner / role |
//! |---|---|---|
//! | `BAR_COUNT` | barrier arrivals (rank 0 only) | every task fetch_adds |
//! | `BAR_GEN` | last barrier episode that completed | written by the last arriver |
//! | `GRANT` | lock hand-over doorbell | bumped by a releaser |
//! | `NOTICES` | write notices published so far | the owner; peers READ it |
//! | `ACK` | invalidation acknowledgements received | bumped by peers' handlers |
//! | `HEAP_BUMP` | bytes of heap handed out (rank 0 only) | allocators CAS, never past the heap |
//! | `RANGE_COUNT` | range descriptors claimed (rank 0 only) | allocators CAS, never past `MAX_RANGES` |
//! | `FT_BUMP` | first-touch directory words claimed (rank 0 only) | allocators CAS, never past `FT_WORDS` |
//! | `UPD_HOME` | forwarded updates this task sent that their home handled | bumped by homes |
//! | `UPD_WANT` | update acknowledgements this task must receive | homes (forwards), the owner (direct) |
//! | `UPD_ACK` | update acknowledgements received | bumped by copy holders |
//! | `ARRIVED` | barriers this task has arrived at | the owner; a waiter that waited long READs it |
//! | `MARKS` | copy marks set at this home (see below) | fetchers add to it after their marks (a WRITE's notify, or a FETCH_ADD after a holder bit) |
//! | `BAR_STAMP` | per task (up to `DIRECT_MAX`): barrier arrival records received from it | its record's WRITE adds 1 (notify) |
//! | `LOCKS` | per lock homed here: its word (next ticket in the high half, the ticket served in the low half), 64 waiter slots, and per task the notices of that task its last releaser had seen | acquirers / releasers |
//! | `RANGES` | range descriptors (rank 0 only): start page, pages, placement kind and parameter, first-touch word, protocol code | written by the allocator; the protocol word by `set_protocol` |
//! | `LOG` | ring of write notices (page numbers) | the owner |
//! | `FT` | first-touch directory: home rank + 1 per page, 0 = unclaimed | CAS by the first toucher |
//! | `BAR_IN` | per task and barrier parity: that task's last arrival record (episode, notice count, first notice, counts, then the write notices it published since its previous record, the pages it wants pushed, the pages it pushed) and the bytes of the pages pushed | that task's WRITEs (pages first) |
//!
//! A second sparse segment per task, the *holder directory*, has one word
//! per heap page (at `page * 8`): for `Update` pages homed at this task,
//! the bit mask of tasks holding a copy. A holder sets its own bit (MBCF
//! FETCH_ADD, once per page) before it reads the page; `set_protocol`
//! clears the words of the pages the task homes. For pages of the lazy
//! protocols (`Ulrc`, `HomeUpdate`) the word is a copy mark: set to 1 by
//! every task that fetches a copy (a WRITE, once per page, then an add to
//! `MARKS`, both applied before its READ): a page whose word is 0 has no
//! copy to invalidate, so its home publishes no write notice for it and,
//! in trap mode, leaves it writable.

/// Barrier arrivals.
pub const BAR_COUNT: usize = 0;
/// Barrier episodes completed.
pub const BAR_GEN: usize = 8;
/// Lock doorbell.
pub const GRANT: usize = 16;
/// Write notices published.
pub const NOTICES: usize = 24;
/// Invalidation acks.
pub const ACK: usize = 32;
/// Heap bump pointer.
pub const HEAP_BUMP: usize = 40;
/// Range descriptors claimed.
pub const RANGE_COUNT: usize = 48;
/// First-touch words claimed.
pub const FT_BUMP: usize = 56;
/// Forwarded updates handled by their homes.
pub const UPD_HOME: usize = 64;
/// Update acknowledgements expected.
pub const UPD_WANT: usize = 72;
/// Update acknowledgements received.
pub const UPD_ACK: usize = 80;
/// Barriers this task arrived at.
pub const ARRIVED: usize = 88;
/// Copy marks set at this home (lazy protocols), so that a release looks
/// for newly copied pages only when this moved.
pub const MARKS: usize = 96;
/// Barrier arrival records received, one word per sending task (jobs of
/// at most [`DIRECT_MAX`] tasks).
pub const BAR_STAMP: usize = 128;
/// Jobs of at most this many tasks synchronize barriers all to all: each
/// task WRITEs its arrival record (with its new write notices) to every
/// other; larger jobs count arrivals at rank 0.
pub const DIRECT_MAX: usize = 16;

/// Locks, at most this many.
pub const MAX_LOCKS: usize = 256;
/// Waiter slots per lock: at most this many tasks contend.
pub const LOCK_SLOTS: usize = 64;
/// Where a lock's waiter slots begin, from its word.
pub const LOCK_WAITERS: usize = 8;
/// Where a lock's last releaser leaves what it had seen: per task, the
/// write notices of that task it had applied (its own: published).
pub const LOCK_SEEN: usize = LOCK_WAITERS + LOCK_SLOTS * 8;
/// Bytes per lock: the lock word, the waiter slots, the releaser's view.
pub const LOCK_BYTES: usize = LOCK_SEEN + LOCK_SLOTS * 8;
/// What taking a ticket adds to a lock word: the tickets handed out
/// count in its high half, the ticket served in its low half.
pub const LOCK_TICKET: u64 = 1 << 32;

/// A lock word's (next ticket, ticket served).
pub fn lock_turn(word: u64) -> (u32, u32) {
    ((word >> 32) as u32, word as u32)
}

/// What serving the ticket after `serving` adds to a lock word: one to
/// its low half, which wraps alone (past `u32::MAX` the carry into the
/// high half is taken back in the same addition).
pub fn lock_serve_next(serving: u32) -> u64 {
    if serving == u32::MAX {
        1u64.wrapping_sub(LOCK_TICKET)
    } else {
        1
    }
}
/// First lock.
pub const LOCKS: usize = 4096;

/// Range descriptors.
pub const RANGES: usize = (LOCKS + MAX_LOCKS * LOCK_BYTES).next_multiple_of(4096);
/// At most this many allocations.
pub const MAX_RANGES: usize = 4096;
/// Bytes per descriptor: start page (8), pages (8), placement kind (4)
/// and parameter (4), first first-touch word (8), protocol code (4,
/// [`crate::Protocol::code`]), reserved (12, zero).
pub const RANGE_BYTES: usize = 48;
/// Offset of the protocol code in a descriptor.
pub const RANGE_PROTOCOL: usize = 32;

/// Write-notice ring.
pub const LOG: usize = RANGES + MAX_RANGES * RANGE_BYTES;
/// Entries in the ring; a reader further behind invalidates everything.
pub const LOG_CAP: usize = 1 << 20;

/// First-touch directory.
pub const FT: usize = LOG + LOG_CAP * 8;
/// Pages of first-touch ranges, at most.
pub const FT_WORDS: usize = 1 << 22;

/// Barrier arrival records: per sending task, two slots (episode
/// parity: a task can be one barrier ahead of a reader, never two).
pub const BAR_IN: usize = FT + FT_WORDS * 8;
/// Bytes of a slot's record: its head, then the notices, the pages the
/// sender would like pushed and the pages it pushed (page numbers).
pub const BAR_RECORD: usize = 2048;
/// Words of a record's head: episode, notice count, index of the first
/// notice carried, notices carried, pages wanted, pages pushed.
pub const BAR_HEAD: usize = 6;
/// Pages a record asks its reader to push at the next barrier, at most.
pub const WANT_MAX: usize = 16;
/// Pages a record comes with (their bytes after the record), at most.
pub const PUSH_MAX: usize = 8;
/// Notices one record carries at most.
pub const BAR_CAP: usize = BAR_RECORD / 8 - BAR_HEAD - WANT_MAX - PUSH_MAX;
/// Bytes of one arrival slot: the record, then the pushed pages.
pub const BAR_SLOT: usize = BAR_RECORD + PUSH_MAX * 4096;

/// The slot of task `from`'s arrival record for barrier `episode`.
pub const fn bar_slot(from: usize, episode: u64) -> usize {
    BAR_IN + (from * 2 + (episode % 2) as usize) * BAR_SLOT
}

/// Bytes of the metadata segment.
pub const META_BYTES: usize = BAR_IN + DIRECT_MAX * 2 * BAR_SLOT;

#[cfg(test)]
mod tests {
    use super::*;

    /// Tickets and turns wrap each in its own half of the lock word.
    #[test]
    fn lock_words_wrap_in_their_halves() {
        let add = |w: u64, v: u64| w.wrapping_add(v);
        let w = (5u64 << 32) | u64::from(u32::MAX);
        assert_eq!(lock_turn(add(w, lock_serve_next(u32::MAX))), (5, 0));
        let w = (9u64 << 32) | 7;
        assert_eq!(lock_turn(add(w, lock_serve_next(7))), (9, 8));
        let w = u64::from(u32::MAX) << 32;
        assert_eq!(lock_turn(add(w, LOCK_TICKET)), (0, 0));
    }
}
