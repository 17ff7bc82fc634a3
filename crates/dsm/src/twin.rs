//! Diffed ranges in note mode ([`Dsm::twin_range`]): code that will store
//! somewhere in a range it can bound but not list (a scatter through
//! data-dependent cursors, a loop nest whose bytes are not one run) asks
//! once, before the stores, for the range's pages to be twinned, and
//! notes nothing itself. The release then sends, for those pages, the
//! words that differ from their twins, as trap mode does with the twins
//! its write faults take (the same `dirty` map, diffed at the same point;
//! whole words less those only notes changed, see `lrc::diffed_runs`):
//! bytes of the range that other tasks wrote, and this one did not, are
//! never sent.
//!
//! Present copies are twinned at once (a copy of the page; no write
//! protection, which note mode does not register). Pages not present yet
//! are twinned when they arrive: the fetch that installs one keeps the
//! bytes it installed as its twin, before the faulting store runs. This
//! task's home pages mapped into the view hold the master copy, so
//! nothing is sent for them: their twin only tells, at the release,
//! whether they changed (their write notice). Only `Ulrc` ranges, whose
//! notes wait for the release anyway, are diffed this way: under the
//! other protocols the caller notes as before.

use crate::config::WriteMode;
use crate::protocol::Protocol;
use crate::shared::{lock, page_of, Shared, State};
use crate::stats::bump;
use crate::sys::PAGE;
use crate::Error;
use std::collections::BTreeMap;

#[cfg(doc)]
use crate::Dsm;

/// Pages one [`Dsm::twin_range`] may cover; a wider range is refused
/// (the caller notes its stores).
pub(crate) const MAX_TWIN_PAGES: u64 = 1 << 15;

/// Present pages one [`Dsm::twin_range`] copies at most: this many, plus
/// [`COPIES_PER_PAGE`] per page the caller says it writes. A range whose
/// bound is much wider than what is written (a column of a matrix
/// bounded by the whole matrix) is refused: its notes cost less than
/// copying and diffing pages that are not written.
const FREE_COPIES: u64 = 64;
const COPIES_PER_PAGE: u64 = 4;

/// Disjoint page spans `[start, end)`, merged where they touch: the pages
/// asked to be twinned this interval.
#[derive(Default, Debug)]
pub(crate) struct Spans {
    by_start: BTreeMap<u64, u64>,
}

impl Spans {
    /// Whether page `p` lies in a span.
    pub(crate) fn holds(&self, p: u64) -> bool {
        self.by_start
            .range(..=p)
            .next_back()
            .is_some_and(|(_, &e)| p < e)
    }

    /// Whether every page of `[first, end)` lies in one span.
    pub(crate) fn covers(&self, first: u64, end: u64) -> bool {
        self.by_start
            .range(..=first)
            .next_back()
            .is_some_and(|(_, &e)| end <= e)
    }

    /// Adds `[first, end)`, merging the spans it meets or touches.
    pub(crate) fn insert(&mut self, mut first: u64, mut end: u64) {
        if first >= end {
            return;
        }
        if let Some((&s, &e)) = self.by_start.range(..=first).next_back() {
            if e >= first {
                first = s;
                end = end.max(e);
            }
        }
        let inside: Vec<(u64, u64)> = self
            .by_start
            .range(first..=end)
            .map(|(&s, &e)| (s, e))
            .collect();
        for (s, e) in inside {
            self.by_start.remove(&s);
            end = end.max(e);
        }
        self.by_start.insert(first, end);
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.by_start.is_empty()
    }

    pub(crate) fn clear(&mut self) {
        self.by_start.clear();
    }
}

impl Shared {
    /// See [`Dsm::twin_range`]: `[off, off+len)` is a heap offset range.
    pub(crate) fn twin_range(&self, off: u64, len: u64, written: u64) -> Result<bool, Error> {
        if len == 0 || self.cfg.writes == WriteMode::Trap || self.solo() {
            // Nothing to record: write faults record trapped stores, and
            // a task alone needs no record at all.
            return Ok(true);
        }
        let (first, end) = (page_of(off), page_of(off + len - 1) + 1);
        if end - first > MAX_TWIN_PAGES {
            return Ok(false);
        }
        if self
            .window
            .get()
            .is_some_and(|w| (first..end).any(|p| w.holds(p * PAGE as u64)))
        {
            return Ok(false);
        }
        for (_, _, proto) in self.split_by_range(off, len)? {
            if proto != Protocol::Ulrc {
                return Ok(false);
            }
        }
        let mut st = lock(&self.state);
        if st.twin_spans.covers(first, end) {
            // Asked already this interval (a loop entered again).
            return Ok(true);
        }
        if st.twin_refused.covers(first, end) {
            return Ok(false);
        }
        // The pages to copy now: present ones not twinned yet (mapped
        // home pages are present). The others are twinned when they are
        // installed (`twin_installed`, `twin_mapped`).
        let mapped = self.mapped_runs(first, end);
        // Sorted and disjoint; a diffed range spans thousands of pages.
        let is_mapped = |p: u64| {
            let i = mapped.partition_point(|&(_, e)| e <= p);
            mapped.get(i).is_some_and(|&(s, _)| s <= p)
        };
        let mut copy = Vec::new();
        for p in first..end {
            if st.twin_spans.holds(p) || st.dirty.contains_key(&p) || st.own_twins.contains_key(&p)
            {
                continue;
            }
            if is_mapped(p) {
                copy.push((p, true));
            } else if st.present.contains(&p) {
                copy.push((p, false));
            }
        }
        let allowed = FREE_COPIES
            .saturating_add(COPIES_PER_PAGE.saturating_mul(written.div_ceil(PAGE as u64)));
        if copy.len() as u64 > allowed {
            st.twin_refused.insert(first, end);
            return Ok(false);
        }
        for &(p, own) in &copy {
            // Present: reading it cannot fault (nor wait for the fault
            // thread, which needs the state lock held here).
            let bytes = self.view_read(p * PAGE as u64, PAGE)?;
            if own {
                st.own_twins.insert(p, bytes);
            } else {
                st.dirty.insert(p, Some(bytes));
            }
        }
        st.twin_spans.insert(first, end);
        drop(st);
        bump(&self.stats.twins, copy.len() as u64);
        Ok(true)
    }

    /// A page just installed from `bytes` (fetched, pushed or refreshed):
    /// when its twin was asked for this interval, `bytes` is its twin
    /// (the store that faulted it in has not run yet).
    pub(crate) fn twin_installed(&self, st: &mut State, p: u64, bytes: &[u8]) {
        if !st.twin_spans.is_empty() && st.twin_spans.holds(p) && !st.dirty.contains_key(&p) {
            st.dirty.insert(p, Some(bytes.to_vec()));
            bump(&self.stats.twins, 1);
        }
    }

    /// Home pages `[lo, hi)` just mapped into the view: those whose twin
    /// was asked for get one, from the master copy they map.
    pub(crate) fn twin_mapped(&self, lo: u64, hi: u64) -> Result<(), Error> {
        let mut st = lock(&self.state);
        if st.twin_spans.is_empty() {
            return Ok(());
        }
        for p in lo..hi {
            if st.twin_spans.holds(p) && !st.own_twins.contains_key(&p) {
                let bytes = self.home_read(p * PAGE as u64, PAGE)?;
                st.own_twins.insert(p, bytes);
                bump(&self.stats.twins, 1);
            }
        }
        Ok(())
    }

    /// Release: the mapped home pages twinned this interval that changed
    /// (their bytes are home already; they need their write notices).
    /// Forgets this interval's spans; the copies' twins are diffed with
    /// the trapped ones (`collect_runs`).
    pub(crate) fn take_own_twins(&self) -> Result<Vec<u64>, Error> {
        let twins = {
            let mut st = lock(&self.state);
            st.twin_spans.clear();
            st.twin_refused.clear();
            std::mem::take(&mut st.own_twins)
        };
        let mut changed = Vec::new();
        for (p, twin) in twins {
            // A change by another task's release into this home counts
            // too: one notice more, never one missed.
            if self.is_mapped(p) && self.home_read(p * PAGE as u64, PAGE)? != twin {
                changed.push(p);
            }
            bump(&self.stats.diffs, 1);
        }
        Ok(changed)
    }
}

#[cfg(test)]
mod tests {
    use super::Spans;

    #[test]
    fn spans_merge_and_cover() {
        let mut s = Spans::default();
        s.insert(10, 20);
        s.insert(30, 40);
        assert!(s.holds(10) && s.holds(19) && !s.holds(20) && !s.holds(9));
        assert!(s.covers(12, 20) && !s.covers(12, 21) && !s.covers(20, 30));
        s.insert(20, 30); // touches both: one span
        assert!(s.covers(10, 40));
        s.insert(5, 12);
        s.insert(38, 50);
        assert!(s.covers(5, 50));
        assert_eq!(s.by_start.len(), 1);
        s.insert(60, 60); // empty
        assert_eq!(s.by_start.len(), 1);
        s.insert(0, 2);
        assert!(s.holds(1) && !s.holds(2) && !s.covers(0, 6));
        s.clear();
        assert!(s.is_empty() && !s.holds(7));
    }
}
