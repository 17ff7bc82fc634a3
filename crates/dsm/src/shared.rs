//! The state of one task's heap shared by the application thread, the
//! fault thread and the signal handlers on the progress thread
//! ([`Shared`]), and its bounds-checked accessors of the heap view, the
//! home segment and the metadata words.

use crate::adopt::Window;
use crate::config::Config;
use crate::layout as L;
use crate::local::Mapped;
use crate::protocol::eager::Pending;
use crate::range::Placements;
use crate::stats::Counters;
use crate::sys::{self, PAGE};
use crate::twin::Spans;
use crate::Error;
use sss_mbcf::{Options, RemoteAddr, Segment, SegmentInfo, Task};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

#[derive(Default)]
pub(crate) struct State {
    /// Pages installed in this task's view.
    pub(crate) present: HashSet<u64>,
    /// Locks this task holds, by id: the ticket it was served.
    pub(crate) held: HashMap<u32, u32>,
    /// Locks this task released with a SIGNAL to their home, by id: the
    /// ticket it released. Its next ticket may arrive before the SIGNAL
    /// is run there: it then finds its own ticket still served, and the
    /// lock is its own all the same.
    pub(crate) released: HashMap<u32, u32>,
    /// Pages written this interval; the twin in trap mode, and in note
    /// mode for the pages of diffed ranges (`twin_range`).
    pub(crate) dirty: HashMap<u64, Option<Vec<u8>>>,
    /// Per rank: write notices of that rank already applied.
    pub(crate) seen: Vec<u64>,
    /// Whether `seen` holds everything that happened before this task's
    /// last acquire: true from the start when the heap's protocol keeps
    /// notices, otherwise once an acquire has looked at every task while
    /// a range with notices was known (before that, acquires looked at no
    /// one). A lock's releaser leaves `seen` for the next holder only
    /// when it is; otherwise it leaves "ask everyone".
    pub(crate) seen_whole: bool,
    /// Per rank: notices that rank published between the last two looks.
    pub(crate) gain: Vec<u64>,
    /// Notices this task published.
    pub(crate) published: u64,
    /// `published` when this task sent its last barrier arrival record:
    /// its next record carries the notices from there.
    pub(crate) bar_sent: u64,
    /// Per rank: the pages of this home that rank asked, in its last
    /// barrier arrival record, to be pushed with the next one.
    pub(crate) wanted: Vec<Vec<u64>>,
    /// Present pages of `HomeOnly` ranges: dropped at every acquire.
    pub(crate) transient: HashSet<u64>,
    /// Pages whose holder bit (`Update`, `Invalidate`) or copy mark
    /// (lazy protocols) this task set at the home.
    pub(crate) registered: HashSet<u64>,
    /// Pages another task invalidated while this task was writing them:
    /// kept until this task's release has sent its diff, then dropped.
    pub(crate) stale: HashSet<u64>,
    /// `Invalidate` copies with a twin (note mode) that another writer
    /// invalidated: their twin and their bytes then, whose difference is
    /// this task's stores not yet noted. Laid over the page when it is
    /// fetched again, sent home at the release (`Shared::on_invalidate`).
    pub(crate) saved: HashMap<u64, (Vec<u8>, Vec<u8>)>,
    /// `Invalidate` copies with a twin (note mode) noted this interval:
    /// the release keeps them writable, their twin brought up to date,
    /// instead of protecting them again (the next interval's stores into
    /// them would each fault).
    pub(crate) noted_twinned: HashSet<u64>,
    /// `noted_twinned` of the last interval with notes.
    pub(crate) noted_twinned_prev: HashSet<u64>,
    /// The pages noted in the last two intervals with notes: kept open,
    /// so a page written every other interval (two arrays swapped at each
    /// barrier) does not fault each time.
    pub(crate) noted_open: HashSet<u64>,
    /// Set by a barrier between its release and its acquire's release
    /// (no store of the application in between): that second release
    /// leaves the twinned `Invalidate` copies alone (nothing to diff).
    pub(crate) just_released: bool,
    /// UDSM, `Invalidate` copies (note mode): the bytes each was
    /// installed with, plus this task's notes since. Stores are not
    /// trapped there: what differs from it when the page is fetched again
    /// is this task's stores not yet noted, laid over the new bytes.
    pub(crate) kept: HashMap<u64, Vec<u8>>,
    /// Mapped home pages written this interval (trap mode).
    pub(crate) own_dirty: BTreeSet<u64>,
    /// One past the last page the last fetch brought (read-ahead).
    pub(crate) ra_end: u64,
    /// Fetches in a row that each started at `ra_end`.
    pub(crate) ra_count: u32,
    /// Twinned pages diffed at the last release that diffed any.
    pub(crate) twin_prev1: BTreeSet<u64>,
    /// Twinned pages diffed at either of the two releases before.
    pub(crate) twin_prev: BTreeSet<u64>,
    /// Mapped home pages written in the previous interval.
    pub(crate) own_prev1: BTreeSet<u64>,
    /// Mapped home pages written in either of the two previous intervals.
    pub(crate) own_prev: BTreeSet<u64>,
    /// Mapped home pages of lazy ranges that another task copied, so
    /// write-protected between writes (trap mode); the others stay
    /// writable and unrecorded until a copy mark shows up.
    pub(crate) watched: HashSet<u64>,
    /// Pages whose twins were asked for this interval (`twin_range`): a
    /// copy installed among them keeps a twin in `dirty`.
    pub(crate) twin_spans: Spans,
    /// Spans refused this interval (too many present pages to copy).
    pub(crate) twin_refused: Spans,
    /// Mapped home pages among them: their bytes when twinned.
    pub(crate) own_twins: HashMap<u64, Vec<u8>>,
    /// This home's `MARKS` word when it last looked for newly copied pages.
    pub(crate) marks_seen: u64,
    /// Copies dropped (bounded: cleared when it grows past `MAX_DROPPED`).
    pub(crate) dropped: HashSet<u64>,
    /// Copies fetched again after being dropped, with the acquires since
    /// that fetched them again at once (`Shared::refresh`) in a row.
    pub(crate) hot: HashMap<u64, u32>,
    /// Hot copies allowed more than [`MAX_STREAK`] acquires in a row:
    /// each was read again right after its streak ran out (see
    /// [`State::streak_limit`]).
    pub(crate) hot_limit: HashMap<u64, u32>,
    /// Hot copies whose streak ran out at the last acquire that had
    /// notices to apply: a fault on one of them before the next such
    /// acquire doubles its limit.
    pub(crate) expired: HashSet<u64>,
}

impl State {
    /// Acquires in a row that fetch hot copy `p` again before it is
    /// dropped like any copy: [`MAX_STREAK`], doubled up to
    /// [`MAX_STREAK_LIMIT`] each time the page was read again in the
    /// interval right after its streak ran out (a stencil's boundary rows
    /// then fault a few times a run, not once every nine intervals).
    pub(crate) fn streak_limit(&self, p: u64) -> u32 {
        self.hot_limit.get(&p).copied().unwrap_or(MAX_STREAK)
    }

    /// A fault fetched dropped copy `p` again: hot from now on, with a
    /// doubled limit when its streak ran out at the last acquire.
    pub(crate) fn hot_again(&mut self, p: u64) {
        if self.hot.len() >= MAX_DROPPED {
            self.hot.clear();
            self.hot_limit.clear();
        }
        if self.expired.remove(&p) {
            let limit = (self.streak_limit(p) * 2).min(MAX_STREAK_LIMIT);
            self.hot_limit.insert(p, limit);
        }
        self.hot.insert(p, 0);
    }

    /// An acquire had notices to apply: `ran_out` are the hot copies
    /// whose streak ran out now. Pages whose streak ran out at the
    /// acquire before and were not read since fall back to [`MAX_STREAK`].
    pub(crate) fn streaks_ran_out(&mut self, ran_out: HashSet<u64>) {
        let stale = std::mem::replace(&mut self.expired, ran_out);
        for p in stale {
            self.hot_limit.remove(&p);
        }
    }
}

/// Acquires in a row that fetch a hot copy again: a refreshed page never
/// faults, so whether it is still read is unknown; past this it is
/// dropped as other copies are, and a read then makes it hot again.
pub(crate) const MAX_STREAK: u32 = 8;
/// Most acquires in a row a copy read in every interval is fetched again
/// at once (see [`State::streak_limit`]).
pub(crate) const MAX_STREAK_LIMIT: u32 = 256;

/// Dropped copies remembered at most (to tell hot pages).
pub(crate) const MAX_DROPPED: usize = 1 << 16;

/// Outgoing writes of the application thread (only it takes this lock).
#[derive(Default)]
pub(crate) struct Out {
    /// Noted `Ulrc` ranges (heap offset, length) not yet sent.
    pub(crate) noted: Vec<(u64, u64)>,
    /// The packet being combined.
    pub(crate) pending: Option<Pending>,
    /// Homes written by eager WRITEs since the last release (fenced then).
    pub(crate) homes: HashSet<u32>,
    /// Pages written eagerly to homes since the last release.
    pub(crate) pages: Vec<u64>,
    /// `UpdateDirect` ranges to push to every copy at release.
    pub(crate) direct: Vec<(u64, u64)>,
    /// Forwarded updates sent to homes so far (compared with `UPD_HOME`).
    pub(crate) forwarded: u64,
}

pub(crate) struct Shared {
    pub(crate) task: Task,
    pub(crate) rank: u32,
    pub(crate) size: u32,
    pub(crate) cfg: Config,
    pub(crate) view: sys::Reservation,
    pub(crate) uffd: sys::Uffd,
    /// Every task's userfaultfd has write-protect faults (agreed when
    /// the heap opened; what depends on them is decided alike).
    pub(crate) wp_all: bool,
    /// UDSM mode (no userfaultfd): the presence map compiled code reads,
    /// kept equal to `present` and the mapped home pages.
    pub(crate) presence: Option<sys::Presence>,
    pub(crate) home: Segment,
    pub(crate) homes: Vec<SegmentInfo>,
    pub(crate) meta: Segment,
    pub(crate) metas: Vec<SegmentInfo>,
    /// Holder directory: a bit mask of copy holders per page homed here.
    pub(crate) dir: Segment,
    pub(crate) dirs: Vec<SegmentInfo>,
    pub(crate) state: Mutex<State>,
    pub(crate) out: Mutex<Out>,
    pub(crate) place: Mutex<Placements>,
    /// Home pages mapped into the view (`local`).
    pub(crate) mapped: Mutex<Mapped>,
    /// Bumped on every invalidation: a fetch that raced one is redone.
    pub(crate) epoch: AtomicU64,
    /// Invalidation acks expected so far (Invalidate protocol).
    pub(crate) acks_expected: AtomicU64,
    pub(crate) stats: Counters,
    pub(crate) packets0: u64,
    /// The note mode word of the caller's note log (`Dsm::watch_notes`).
    pub(crate) note_mode: OnceLock<&'static AtomicU64>,
    /// The program's global variables, once adopted (`Dsm::adopt`).
    pub(crate) window: OnceLock<Window>,
    /// Held while a fault is resolved in a faulting thread: faults of
    /// several threads go one at a time, as the fault thread takes them
    /// (two mapping one home run at once would both map it).
    pub(crate) fault_serial: Mutex<()>,
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every update of the guarded state is a single insert or take.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

pub(crate) fn page_of(off: u64) -> u64 {
    off / PAGE as u64
}

impl Shared {
    pub(crate) fn meta_at(&self, rank: u32, off: usize) -> Result<RemoteAddr, Error> {
        self.metas
            .get(rank as usize)
            .map(|m| m.at(off as u64))
            .ok_or(Error::Invalid("no such rank"))
    }

    /// The word at `off` (a `layout` constant, or a notice-log slot) of
    /// this task's metadata segment.
    pub(crate) fn local_word(&self, off: usize) -> &AtomicU64 {
        // Offsets are `layout` constants, never input: a bad one is a
        // bug, stopped here before it becomes a stray pointer.
        assert!(off % 8 == 0 && off + 8 <= L::META_BYTES.min(self.meta.info().len as usize));
        #[allow(unsafe_code)]
        // SAFETY: aligned and inside the metadata segment (asserted
        // above), which `self` keeps mapped as long as the returned borrow;
        // its words are only ever accessed atomically (here and by MBCF).
        let w = unsafe { sys::word(self.meta.as_ptr() as usize + off) };
        w
    }

    /// `len` bytes of this task's heap view at heap offset `off`.
    pub(crate) fn view_read(&self, off: u64, len: usize) -> Result<Vec<u8>, Error> {
        let at = self.vaddr_span(off, len)?;
        #[allow(unsafe_code)]
        // SAFETY: inside the view or the adopted window (checked by
        // `vaddr_span`), which `self` keeps mapped; a missing page faults
        // and is fetched (in this thread, or by the fault thread).
        let v = unsafe { sys::copy_out(at, len) };
        Ok(v)
    }

    /// Writes `data` into this task's heap view at heap offset `off`.
    pub(crate) fn view_write(&self, off: u64, data: &[u8]) -> Result<(), Error> {
        let at = self.vaddr_span(off, data.len())?;
        #[allow(unsafe_code)]
        // SAFETY: inside the view or the adopted window (checked by
        // `vaddr_span`), which `self` keeps mapped; heap bytes are plain
        // data.
        unsafe {
            sys::copy_in(at, data)
        };
        Ok(())
    }

    /// `len` bytes of this task's home segment at heap offset `off`.
    pub(crate) fn home_read(&self, off: u64, len: usize) -> Result<Vec<u8>, Error> {
        let at = span(off, len, self.home.info().len)?;
        #[allow(unsafe_code)]
        // SAFETY: inside the home segment (checked by `span`), mapped as
        // long as `self`; peers write it only with MBCF, as plain bytes.
        let v = unsafe { sys::copy_out(self.home.as_ptr() as usize + at, len) };
        Ok(v)
    }

    /// Writes `data` into this task's home segment at heap offset `off`.
    pub(crate) fn home_write(&self, off: u64, data: &[u8]) -> Result<(), Error> {
        let at = span(off, data.len(), self.home.info().len)?;
        #[allow(unsafe_code)]
        // SAFETY: inside the home segment (checked by `span`), mapped as
        // long as `self`; plain bytes.
        unsafe {
            sys::copy_in(self.home.as_ptr() as usize + at, data)
        };
        Ok(())
    }

    /// The address in this task of heap offset `off`, whose `len` bytes
    /// lie in the view or all in the adopted window.
    pub(crate) fn vaddr_span(&self, off: u64, len: usize) -> Result<usize, Error> {
        if let Some(w) = self.window.get() {
            if w.holds(off) {
                let rel = span(off - w.off, len, w.map.len() as u64)?;
                return Ok(w.map.base() + rel);
            }
        }
        Ok(self.view.base() + span(off, len, self.view.len() as u64)?)
    }

    /// The address of page `page` in this task (view or window).
    pub(crate) fn page_addr(&self, page: u64) -> Result<usize, Error> {
        self.vaddr_span(page * PAGE as u64, PAGE)
    }

    /// The heap offset of `[addr, addr+len)`, which lies in the heap view
    /// or in the adopted window.
    pub(crate) fn offset(&self, addr: usize, len: usize) -> Result<u64, Error> {
        if let Some(w) = self.window.get() {
            let b = w.map.base();
            if addr >= b && addr.checked_add(len).is_some_and(|e| e <= b + w.map.len()) {
                return Ok(w.off + (addr - b) as u64);
            }
        }
        let base = self.view.base();
        if addr < base
            || addr
                .checked_add(len)
                .is_none_or(|e| e > base + self.view.len())
        {
            return Err(Error::Invalid("address outside the shared heap"));
        }
        Ok((addr - base) as u64)
    }

    pub(crate) fn fetch_add(&self, at: RemoteAddr, v: u64) -> Result<u64, Error> {
        Ok(self
            .task
            .fetch_add(at, v, Options::default())?
            .wait_value()?)
    }

    /// UDSM mode: no userfaultfd; pages are made present by explicit
    /// fetches and a page dropped keeps its bytes until fetched again
    /// unless the application thread drops it.
    pub(crate) fn udsm(&self) -> bool {
        self.presence.is_some()
    }

    /// Records in the presence map (UDSM) that pages `[first, end)` are
    /// present: after their bytes are in place; absent: before they go.
    pub(crate) fn mark_present(&self, first: u64, end: u64, present: bool) {
        if let Some(m) = &self.presence {
            for p in first..end {
                m.set(p, present);
            }
        }
    }

    /// Pages in the heap.
    pub(crate) fn heap_pages(&self) -> u64 {
        (self.view.len() / PAGE) as u64
    }

    /// Counts a malformed message or descriptor from task `from`; the
    /// first one is reported.
    pub(crate) fn bad_message(&self, from: u32, what: &str) {
        if self.stats.bad_messages.fetch_add(1, Ordering::Relaxed) == 0 {
            eprintln!(
                "sss-dsm: malformed {what} from task {from} dropped (counted in bad_messages)"
            );
        }
    }
}

/// `[off, off+len)` inside a region of `size` bytes: `off` as an index.
fn span(off: u64, len: usize, size: u64) -> Result<usize, Error> {
    match off.checked_add(len as u64) {
        Some(end) if end <= size => Ok(off as usize),
        _ => Err(Error::Invalid("range outside the heap")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_streak_limit_doubles_only_for_a_copy_read_right_after_running_out() {
        let mut st = State::default();
        st.hot_again(5);
        assert_eq!(st.streak_limit(5), MAX_STREAK);
        let mut limit = MAX_STREAK;
        for _ in 0..10 {
            // Ran out at an acquire, read again in the interval after.
            st.hot.remove(&5);
            st.streaks_ran_out(HashSet::from([5]));
            st.hot_again(5);
            limit = (limit * 2).min(MAX_STREAK_LIMIT);
            assert_eq!(st.streak_limit(5), limit);
        }
        assert_eq!(limit, MAX_STREAK_LIMIT);
        // Ran out and not read before the next acquire that dropped
        // pages: back to the default when it is read again later.
        st.hot.remove(&5);
        st.streaks_ran_out(HashSet::from([5]));
        st.streaks_ran_out(HashSet::new());
        st.hot_again(5);
        assert_eq!(st.streak_limit(5), MAX_STREAK);
        // A page hot for the first time keeps the default.
        st.hot_again(6);
        assert_eq!(st.streak_limit(6), MAX_STREAK);
    }
}
