//! Pages homed at this task as plain memory. At the first fault on such a
//! page the run of this task's pages around it (same allocation, same
//! home) is mapped from the home segment into the view, so loads and
//! stores there reach the master copy: no fetch, no twin, no diff and no
//! copy at release. A noted or trapped write of such a page only records
//! the page (its write notice, or its holders' invalidation). In trap
//! mode with other tasks the run is registered for write-protect faults,
//! and a fault there also opens the following pages written in the
//! two previous intervals (one ioctl for the run instead of a fault a page).
//! Pages of lazy and (up to 63 tasks) `Invalidate` ranges are protected
//! only once another task has copied them (its copy mark or holder bit at
//! this home): writes nobody can see need no
//! notice, so a task working on its own pages takes no faults.

use crate::layout as L;
use crate::protocol::directory::{BUSY, SC_MAX};
use crate::protocol::Protocol;
use crate::range::Placement;
use crate::shared::{lock, page_of, Shared};
use crate::stats::bump;
use crate::sys::PAGE;
use crate::Error;
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;

/// Runs mapped at most (each is a kernel mapping; past this, pages are
/// fetched and installed as before).
const MAX_RUNS: usize = 8192;
/// Pages a run grows by at most on each side of the faulting page.
const MAX_RUN: u64 = 1 << 18;
/// Pages of a newly mapped run populated at once, from the faulting page
/// on (16 MiB: a sparse use of a large allocation must not commit it).
const POPULATE_MAX: u64 = 4096;
/// Pages one write-protect fault opens at most.
const MAX_OPEN: u64 = 512;
use crate::fault::SEQ_AHEAD;

/// Runs of this task's home pages mapped into the view: first page to
/// one past the last.
#[derive(Default)]
pub(crate) struct Mapped {
    runs: BTreeMap<u64, u64>,
}

impl Mapped {
    fn holds(&self, page: u64) -> bool {
        self.runs
            .range(..=page)
            .next_back()
            .is_some_and(|(_, &end)| page < end)
    }

    /// [`Mapped::holds`] of each of `pages`, sorted ascending: one walk
    /// along the runs they span instead of a search a page.
    fn holds_sorted(&self, pages: &[u64]) -> Vec<bool> {
        let (Some(&first), Some(&last)) = (pages.first(), pages.last()) else {
            return Vec::new();
        };
        let mut cur = self.runs.range(..=first).next_back().map(|(&s, &e)| (s, e));
        let mut next = self
            .runs
            .range(first.saturating_add(1)..=last.max(first.saturating_add(1)))
            .peekable();
        pages
            .iter()
            .map(|&p| {
                while let Some((&s, &e)) = next.next_if(|(&s, _)| s <= p) {
                    cur = Some((s, e));
                }
                cur.is_some_and(|(s, e)| s <= p && p < e)
            })
            .collect()
    }

    /// [`Mapped::holds_all`] of each span `(first, last)`: a span inside
    /// the run that held the span before costs no search (a release's
    /// noted rows lie in a few runs, hundreds of them a run).
    fn hold_spans(&self, spans: impl Iterator<Item = (u64, u64)>) -> Vec<bool> {
        let mut held_by: Option<(u64, u64)> = None;
        spans
            .map(|(first, last)| {
                if held_by.is_some_and(|(s, e)| s <= first && last < e) {
                    return true;
                }
                let held = self.holds_all(first, last);
                held_by = self
                    .runs
                    .range(..=first)
                    .next_back()
                    .map(|(&s, &e)| (s, e))
                    .filter(|&(_, e)| first < e);
                held
            })
            .collect()
    }

    /// Whether every page of `[first, last]` is mapped.
    fn holds_all(&self, first: u64, last: u64) -> bool {
        let mut p = first;
        while p <= last {
            match self.runs.range(..=p).next_back() {
                Some((_, &end)) if p < end => p = end,
                _ => return false,
            }
        }
        true
    }
}

impl Shared {
    /// Whether heap page `page` is this task's home page mapped here.
    pub(crate) fn is_mapped(&self, page: u64) -> bool {
        lock(&self.mapped).holds(page)
    }

    /// The mapped runs that meet pages `[first, end)`.
    pub(crate) fn mapped_runs(&self, first: u64, end: u64) -> Vec<(u64, u64)> {
        let m = lock(&self.mapped);
        let mut v: Vec<(u64, u64)> = m
            .runs
            .range(..end)
            .rev()
            .take_while(|(_, &e)| e > first)
            .map(|(&s, &e)| (s, e))
            .collect();
        v.reverse();
        v
    }

    /// Whether every page of `[off, off+len)` (len > 0) is mapped here.
    pub(crate) fn span_mapped(&self, off: u64, len: u64) -> bool {
        len > 0 && lock(&self.mapped).holds_all(page_of(off), page_of(off + len - 1))
    }

    /// [`Shared::span_mapped`] of each of `spans`, under one lock: a
    /// release looks at every noted range (hundreds per barrier in a
    /// stencil) and a lock per look showed in its time.
    pub(crate) fn spans_mapped(&self, spans: &[(u64, u64)]) -> Vec<bool> {
        let m = lock(&self.mapped);
        // An empty span holds nothing: as a span past every page.
        m.hold_spans(spans.iter().map(|&(off, len)| {
            if len == 0 {
                (u64::MAX, u64::MAX)
            } else {
                (page_of(off), page_of(off + len - 1))
            }
        }))
    }

    /// [`Shared::is_mapped`] of each of `pages` (sorted), under one lock.
    pub(crate) fn pages_mapped(&self, pages: &[u64]) -> Vec<bool> {
        lock(&self.mapped).holds_sorted(pages)
    }

    /// A missing fault on `page`: when the page is homed here, maps its
    /// run and returns true (the caller wakes the faulting thread).
    pub(crate) fn map_own(&self, page: u64) -> Result<bool, Error> {
        let off = page * PAGE as u64;
        if self.window.get().is_some_and(|w| w.holds(off)) || page >= self.heap_pages() {
            return Ok(false);
        }
        let Some(r) = self.range_of(page)? else {
            return Ok(false);
        };
        if self.home_of(page)? != self.rank || lock(&self.mapped).runs.len() >= MAX_RUNS {
            return Ok(false);
        }
        // Trapped writes of the update protocols reach copies as diffs
        // against a twin; a copy fetched from a mapped home mid-interval
        // would already hold some of them, and the diff would miss what
        // it saw (a word written back to its twin value, bytes equal to
        // the twin's). Those pages stay fetched: the home segment then
        // changes only at releases.
        if self.traps()
            && matches!(
                self.proto_of(page)?,
                Protocol::Update | Protocol::UpdateDirect
            )
        {
            return Ok(false);
        }
        let free = |p: u64| -> Result<bool, Error> {
            Ok(!lock(&self.state).present.contains(&p)
                && !self.is_mapped(p)
                && self.home_of(p)? == self.rank)
        };
        let (mut lo, mut hi) = (page, page + 1);
        // First-touch pages are claimed one by one: asking the home of a
        // neighbour would claim it. A task alone claims every page
        // anyway: its runs grow as any other (one mapping for many
        // pages, not one each until MAX_RUNS, then copies).
        if r.placement != Placement::FirstTouch || self.size == 1 {
            let end = r.start + r.pages;
            while hi < end && hi - page < MAX_RUN && free(hi)? {
                hi += 1;
            }
            while lo > r.start && page - lo < MAX_RUN && free(lo - 1)? {
                lo -= 1;
            }
        }
        let addr = self.view.base() + lo as usize * PAGE;
        let len = (hi - lo) as usize * PAGE;
        let src = self.home.as_ptr() as usize + lo as usize * PAGE;
        #[allow(unsafe_code)]
        // SAFETY: the home segment is a shared mapping of the whole heap
        // (same offsets), kept by `self` as long as the view; the view
        // pages replaced were never installed (not present, not mapped),
        // so nothing relies on their bytes.
        let mapped = unsafe { self.view.map_shared(addr, src, len) };
        if mapped.is_err() {
            // Too many mappings, or no mremap: fetch as before.
            return Ok(false);
        }
        // The run's pages are about to be touched one by one (a minor
        // fault each, 2.5-4 µs here); mapping up to POPULATE_MAX of them
        // from the faulting page on in one call costs less.
        let from = page.max(lo);
        let upto = hi.min(from + POPULATE_MAX);
        self.view.populate(
            self.view.base() + from as usize * PAGE,
            (upto - from) as usize * PAGE,
        );
        if self.traps() {
            let wp = self
                .uffd
                .register_wp(addr, len)
                .map_err(Error::from)
                .and_then(|()| self.protect_copied(lo, hi, self.copies_marked(r.protocol)));
            if let Err(e) = wp {
                // Untracked stores would be lost to other tasks: put the
                // reservation back and fetch as before.
                self.view.unmap_shared(addr, len)?;
                self.uffd.register(addr, len)?;
                eprintln!("sss-dsm: home pages stay fetched (write protection: {e})");
                return Ok(false);
            }
        }
        lock(&self.mapped).runs.insert(lo, hi);
        // Before the faulting store runs (its thread is woken after).
        self.twin_mapped(lo, hi)?;
        self.mark_present(lo, hi, true);
        bump(&self.stats.mapped_pages, hi - lo);
        Ok(true)
    }

    /// Puts the reservation back over the mapped pages of
    /// `[first, end)`, so they fault and are fetched as copies again
    /// (a range switched to an update protocol in trap mode, see
    /// `map_own`). Called between barriers: no store of this task runs.
    pub(crate) fn unmap_own(&self, first: u64, end: u64) -> Result<(), Error> {
        let mut m = lock(&self.mapped);
        let hit: Vec<(u64, u64)> = m
            .runs
            .range(..end)
            .filter(|(_, &e)| e > first)
            .map(|(&s, &e)| (s, e))
            .collect();
        for (s, e) in hit {
            m.runs.remove(&s);
            if s < first {
                m.runs.insert(s, first);
            }
            if e > end {
                m.runs.insert(end, e);
            }
            let (lo, hi) = (s.max(first), e.min(end));
            self.mark_present(lo, hi, false);
            let addr = self.view.base() + lo as usize * PAGE;
            let len = (hi - lo) as usize * PAGE;
            self.view.unmap_shared(addr, len)?;
            self.uffd.register(addr, len)?;
        }
        Ok(())
    }

    /// Whether the copies of `protocol`'s pages are marked at their home
    /// (copy marks of the lazy protocols; `Invalidate`'s holder bits, kept
    /// up to 63 tasks), so that trap mode can leave pages nobody copied
    /// writable.
    pub(crate) fn copies_marked(&self, protocol: Protocol) -> bool {
        protocol.lazy() || (protocol == Protocol::Invalidate && self.size <= SC_MAX)
    }

    /// Write-protects the pages of `[lo, hi)`, just mapped: for a range
    /// whose copies are marked only those another task copied (the rest were never written
    /// here, and nobody needs to hear of their writes until a copy mark
    /// shows up, see [`Shared::newly_copied`]).
    fn protect_copied(&self, lo: u64, hi: u64, marked: bool) -> Result<(), Error> {
        if !marked {
            let addr = self.page_addr(lo)?;
            return Ok(self.uffd.protect(addr, (hi - lo) as usize * PAGE, true)?);
        }
        let mut copied = Vec::new();
        for p in lo..hi {
            if self.dir_word(p)?.load(Ordering::SeqCst) & !BUSY != 0 {
                copied.push(p);
            }
        }
        self.protect_pages(&copied)?;
        let mut st = lock(&self.state);
        // What an earlier mapping of these pages watched is gone with it.
        for p in lo..hi {
            st.watched.remove(&p);
        }
        st.watched.extend(copied);
        Ok(())
    }

    /// Write-protects `pages` (sorted), a run per ioctl.
    fn protect_pages(&self, pages: &[u64]) -> Result<(), Error> {
        let mut i = 0;
        while i < pages.len() {
            let mut j = i + 1;
            while j < pages.len() && pages[j] == pages[j - 1] + 1 {
                j += 1;
            }
            let addr = self.page_addr(pages[i])?;
            self.uffd.protect(addr, (j - i) * PAGE, true)?;
            i = j;
        }
        Ok(())
    }

    /// Whether a release must look for newly copied pages: another task
    /// set a copy mark here since the last look (trap mode).
    pub(crate) fn marks_moved(&self) -> bool {
        if !self.traps() {
            return false;
        }
        // As in `newly_copied`: this task's stores before the look.
        std::sync::atomic::fence(Ordering::SeqCst);
        self.local_word(L::MARKS).load(Ordering::SeqCst) != lock(&self.state).marks_seen
    }

    /// Release (trap mode): mapped pages of ranges whose copies are marked
    /// that another task copied since the last look. Their writes of this interval went
    /// unrecorded (they were writable), so they count as written: the
    /// caller publishes their notices. From now on they are protected
    /// like every copied page.
    pub(crate) fn newly_copied(&self) -> Result<Vec<u64>, Error> {
        if !self.traps() {
            return Ok(Vec::new());
        }
        // This task's stores before the look at the marks: a fetcher
        // marks before it READs, so either its READ sees the stores or
        // this look sees its mark (and its copy marks, applied before).
        std::sync::atomic::fence(Ordering::SeqCst);
        let marks = self.local_word(L::MARKS).load(Ordering::SeqCst);
        if marks == lock(&self.state).marks_seen {
            return Ok(Vec::new());
        }
        let runs: Vec<(u64, u64)> = lock(&self.mapped)
            .runs
            .iter()
            .map(|(&s, &e)| (s, e))
            .collect();
        let mut fresh = Vec::new();
        {
            let st = lock(&self.state);
            for (s, e) in runs {
                // A run lies in one allocation.
                if !self
                    .find_range(s)
                    .is_some_and(|r| self.copies_marked(r.protocol))
                {
                    continue;
                }
                for p in s..e {
                    // The directory first: most words are 0, a cheap look.
                    if self.dir_word(p)?.load(Ordering::SeqCst) & !BUSY != 0
                        && !st.watched.contains(&p)
                    {
                        fresh.push(p);
                    }
                }
            }
        }
        self.protect_pages(&fresh)?;
        let mut st = lock(&self.state);
        st.watched.extend(fresh.iter().copied());
        st.marks_seen = marks;
        Ok(fresh)
    }

    /// After a protocol switch of `[first, end)` (trap mode, between the
    /// barriers, every copy of the range dropped and, right after, the
    /// directory words of its pages cleared): under a protocol whose
    /// copies are marked nobody holds any, so its mapped pages are all
    /// left writable and unwatched (a mark after the switch makes them
    /// watched again); under any other every one is protected.
    pub(crate) fn reprotect_own(&self, first: u64, end: u64, marked: bool) -> Result<(), Error> {
        let runs: Vec<(u64, u64)> = lock(&self.mapped)
            .runs
            .range(..end)
            .filter(|(_, &e)| e > first)
            .map(|(&s, &e)| (s.max(first), e.min(end)))
            .collect();
        for &(lo, hi) in &runs {
            let addr = self.page_addr(lo)?;
            self.uffd
                .protect(addr, (hi - lo) as usize * PAGE, !marked)?;
        }
        let mut st = lock(&self.state);
        for (lo, hi) in runs {
            for p in lo..hi {
                st.watched.remove(&p);
            }
        }
        Ok(())
    }

    /// A write-protect fault on mapped page `page` (never of the update
    /// protocols, see `map_own`): records it written this interval and
    /// opens it, with the pages after it that were written in one of the
    /// two previous intervals.
    pub(crate) fn own_write(&self, page: u64) -> Result<(), Error> {
        let addr = self.page_addr(page)?;
        let mut st = lock(&self.state);
        let range = self.find_range(page);
        let end = range.map_or(page + 1, |r| r.start + r.pages);
        // Where copies are marked only watched pages are protected:
        // opening another would record writes nobody needs to hear of.
        let marked = range.is_some_and(|r| self.copies_marked(r.protocol));
        // A store right after the last page opened is a sequential pass:
        // open a few pages ahead even without history.
        let ahead = if page > 0 && st.own_dirty.contains(&(page - 1)) {
            SEQ_AHEAD
        } else {
            1
        };
        let mut hi = page + 1;
        while hi < end
            && hi - page < MAX_OPEN
            && (st.own_prev.contains(&hi) || hi - page < ahead)
            && !st.own_dirty.contains(&hi)
            && (!marked || st.watched.contains(&hi))
            && self.is_mapped(hi)
        {
            hi += 1;
        }
        st.own_dirty.extend(page..hi);
        drop(st);
        Ok(self
            .uffd
            .protect(addr, (hi - page) as usize * PAGE, false)?)
    }

    /// Release of the mapped pages written this interval (trap mode):
    /// protects them again, in runs, and returns them for their notices.
    pub(crate) fn take_own_dirty(&self) -> Result<Vec<u64>, Error> {
        let pages: Vec<u64> = {
            let mut st = lock(&self.state);
            if st.own_dirty.is_empty() {
                // Releases that wrote nothing (the acquire half of a
                // barrier) do not age the history.
                return Ok(Vec::new());
            }
            let d = std::mem::take(&mut st.own_dirty);
            // Programs alternate between arrays (a Jacobi sweep writes
            // one grid, the next sweep the other): the two intervals
            // before predict the next writes.
            let older = std::mem::replace(&mut st.own_prev1, d.clone());
            st.own_prev = older.union(&d).copied().collect();
            d.into_iter().collect()
        };
        self.protect_pages(&pages)?;
        Ok(pages)
    }
}

#[cfg(test)]
mod tests {
    use super::Mapped;

    /// A xorshift draw in `[0, n)` from `seed`'s sequence.
    fn drawer(mut x: u64) -> impl FnMut(u64) -> u64 {
        move |n| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        }
    }

    /// Up to five runs of 1 to `max_len` pages with gaps of 0 to 2
    /// (adjacent runs too), and one past the last page.
    fn random_runs(draw: &mut impl FnMut(u64) -> u64, max_len: u64) -> (Mapped, u64) {
        let mut m = Mapped::default();
        let mut at = draw(4);
        for _ in 0..draw(6) {
            let len = 1 + draw(max_len);
            m.runs.insert(at, at + len);
            at += len + draw(3);
        }
        (m, at)
    }

    /// The walk along the runs answers as a search a page does, for
    /// runs and sorted pages of every shape (adjacent runs, gaps, pages
    /// before, between and after them, repeated pages).
    #[test]
    fn a_walk_along_the_runs_agrees_with_a_search_a_page() {
        let mut draw = drawer(0x9e37_79b9_7f4a_7c15);
        for _ in 0..500 {
            let (m, at) = random_runs(&mut draw, 5);
            let mut pages: Vec<u64> = (0..draw(20)).map(|_| draw(at + 4)).collect();
            pages.sort_unstable();
            let want: Vec<bool> = pages.iter().map(|&p| m.holds(p)).collect();
            assert_eq!(
                m.holds_sorted(&pages),
                want,
                "runs {:?} pages {pages:?}",
                m.runs
            );
        }
    }

    /// Spans answered from the run that held the span before agree with a
    /// search each, for spans in any order, inside, across and between
    /// runs.
    #[test]
    fn spans_held_by_the_last_run_agree_with_a_search_each() {
        let mut draw = drawer(0x2545_f491_4f6c_dd1d);
        for _ in 0..500 {
            let (m, at) = random_runs(&mut draw, 8);
            let spans: Vec<(u64, u64)> = (0..draw(30))
                .map(|_| {
                    let first = draw(at + 4);
                    (first, first + draw(4))
                })
                .collect();
            let want: Vec<bool> = spans.iter().map(|&(f, l)| m.holds_all(f, l)).collect();
            assert_eq!(
                m.hold_spans(spans.iter().copied()),
                want,
                "runs {:?} spans {spans:?}",
                m.runs
            );
        }
    }
}
