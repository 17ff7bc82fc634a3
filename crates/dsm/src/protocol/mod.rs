//! Consistency protocols: [`Protocol`], and release and acquire, which
//! run each range's protocol. One module per family: `lrc` (runs and
//! diffs to homes, write notices), `eager` (writes sent as they are
//! noted), `update` (copies kept up to date), `directory` (the holder
//! directory), `invalidate` and `home_only`.

pub(crate) mod directory;
pub(crate) mod eager;
mod home_only;
mod invalidate;
mod lrc;
mod update;

pub(crate) use invalidate::lay_over;

use crate::layout as L;
use crate::shared::{lock, page_of, Shared, State, MAX_DROPPED};
use crate::stats::bump;
use crate::sync::{split_pushed, Arrival};
use crate::sys::PAGE;
use crate::Error;
use directory::BUSY;
use eager::Via;
use lrc::Run;
use sss_mbcf::{Options, Request};
use std::collections::HashSet;
use std::sync::atomic::Ordering;

/// Write notices read with each task's count in one round trip at an
/// acquire (more take another READ).
const NOTICE_PEEK: usize = 128;
/// In what a lock's releaser had seen of a task: ask that task, and take
/// whatever count it answers (the releaser's own look was not whole).
pub(crate) const ASK_ALL: u64 = u64::MAX;
/// Copies fetched again at one acquire, at most.
const MAX_REFRESH: usize = 256;

#[cfg(doc)]
use crate::Dsm;

/// Consistency protocol of an allocation (seed 001 §3 page attributes).
/// Every protocol gives data-race-free programs (synchronized with the
/// DSM's locks and barriers) the answer of a sequential run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum Protocol {
    /// Write-through with eager invalidation (sequentially consistent
    /// for noted writes), several writers a page.
    Invalidate,
    /// Lazy release consistency, multiple writers, home based.
    #[default]
    Ulrc,
    /// SAURC: noted writes go to the home eagerly (combined per packet)
    /// and stay in the local copy; release fences the homes and publishes
    /// write notices, acquire invalidates noticed pages as `Ulrc` does.
    HomeUpdate,
    /// Writes go to the home, which forwards them to every task holding a
    /// copy (a directory of holders per page); no invalidations.
    Update,
    /// Writes go straight from the writer to the home and to every other
    /// task (the copy set, fixed at allocation, is the whole job).
    UpdateDirect,
    /// No copies are kept: [`Dsm::read`] and [`Dsm::write`] go to the
    /// home; pages fetched by plain loads are dropped at every acquire.
    HomeOnly,
}

/// A look at another task's write notices in flight: its count and a
/// peek at the entries after `seen`.
pub(crate) struct Ask {
    rank: u32,
    seen: u64,
    count: Request,
    log: Request,
}

impl Protocol {
    /// Every protocol, in the order of their wire codes.
    pub const ALL: [Protocol; 6] = [
        Protocol::Ulrc,
        Protocol::Invalidate,
        Protocol::HomeUpdate,
        Protocol::Update,
        Protocol::UpdateDirect,
        Protocol::HomeOnly,
    ];

    /// The `SSS_DSM_PROTOCOL` spelling.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Ulrc => "ulrc",
            Protocol::Invalidate => "invalidate",
            Protocol::HomeUpdate => "home_update",
            Protocol::Update => "update",
            Protocol::UpdateDirect => "update_drct",
            Protocol::HomeOnly => "home_only",
        }
    }

    /// Parses an `SSS_DSM_PROTOCOL` spelling.
    pub fn parse(s: &str) -> Option<Protocol> {
        Self::ALL.into_iter().find(|p| p.name() == s.trim())
    }

    /// Code in range descriptors and the C API (1 = ulrc … 6 = home_only).
    pub fn code(self) -> u32 {
        Self::ALL.iter().position(|p| *p == self).unwrap_or(0) as u32 + 1
    }

    /// The protocol of a code; None for 0 and unknown codes.
    pub fn from_code(c: u32) -> Option<Protocol> {
        Self::ALL.get((c as usize).checked_sub(1)?).copied()
    }

    /// Keeps write notices (acquire invalidates noticed pages).
    pub(crate) fn lazy(self) -> bool {
        matches!(self, Protocol::Ulrc | Protocol::HomeUpdate)
    }
}

impl Shared {
    /// Release: this interval's writes reach their homes and, for the
    /// update protocols, every copy; then pages of `Ulrc` and
    /// `HomeUpdate` ranges are published as write notices and (trap mode)
    /// other copies of `Invalidate` pages are dropped.
    pub(crate) fn release(&self) -> Result<(), Error> {
        if self.nothing_to_release() {
            return Ok(());
        }
        self.flush_pending()?;
        let mut home_runs = Vec::new();
        let mut fwd_runs = Vec::new();
        // Noted UpdateDirect ranges went home already; copies get them now.
        let mut direct: Vec<Run> = std::mem::take(&mut lock(&self.out).direct)
            .into_iter()
            .map(|(o, l)| Ok((o, self.view_read(o, l as usize)?)))
            .collect::<Result<_, Error>>()?;
        // Noted runs were cut at allocations, diffs lie in one page: each
        // run has one protocol.
        let (runs, page_diffs, own_pages) = self.collect_runs()?;
        // Runs come page by page: one lookup a page.
        let mut last: Option<(u64, Protocol)> = None;
        for run in runs {
            let page = page_of(run.0);
            let proto = match last {
                Some((p, proto)) if p == page => proto,
                _ => self.proto_of(page)?,
            };
            last = Some((page, proto));
            match proto {
                // Trapped writes of Update ranges: through the home.
                Protocol::Update => fwd_runs.push(run),
                Protocol::UpdateDirect => {
                    direct.push(run.clone());
                    home_runs.push(run);
                }
                _ => home_runs.push(run),
            }
        }
        let mut home_diffs = Vec::with_capacity(page_diffs.len());
        for d in page_diffs {
            match self.proto_of(d.page)? {
                Protocol::Update => fwd_runs.extend(d.to_runs()),
                Protocol::UpdateDirect => {
                    direct.extend(d.to_runs());
                    home_diffs.push(d);
                }
                _ => home_diffs.push(d),
            }
        }
        let mut pages = self.send_all(home_runs, home_diffs)?;
        for (o, data) in fwd_runs {
            self.eager_data(o, &data, Via::Forward)?;
        }
        self.flush_pending()?;
        let (homes, eager_pages) = {
            let mut out = lock(&self.out);
            (
                std::mem::take(&mut out.homes),
                std::mem::take(&mut out.pages),
            )
        };
        if !homes.is_empty() {
            let homes: Vec<u32> = homes.into_iter().collect();
            self.task.fence_many(&homes)?;
        }
        pages.extend(eager_pages);
        pages.extend(own_pages);
        pages.sort_unstable();
        pages.dedup();
        let mut notices = Vec::new();
        let mut invalidate = Vec::new();
        let mut skipped = 0;
        // This task's stores (and its homes' fenced data) before the look
        // at the copy marks: pairs with a fetcher's mark before its READ.
        std::sync::atomic::fence(Ordering::SeqCst);
        let protos = self.protos_of(&pages)?;
        let mapped = self.pages_mapped(&pages);
        for ((p, proto), mapped) in pages.into_iter().zip(protos).zip(mapped) {
            match proto {
                // A page of this home nobody copied: no copy to drop.
                Protocol::Ulrc | Protocol::HomeUpdate
                    if mapped && self.dir_word(p)?.load(Ordering::SeqCst) & !BUSY == 0 =>
                {
                    skipped += 1
                }
                Protocol::Ulrc | Protocol::HomeUpdate => notices.push(p),
                Protocol::Invalidate => invalidate.push(p),
                _ => {}
            }
        }
        // Trapped Invalidate writes: the other copies go before the
        // release completes (noted writes were written through already).
        self.invalidate_others(&invalidate)?;
        // Homes have every byte (fenced above), so a copy that misses a
        // direct update while being fetched reads it from the home.
        self.push_direct(direct)?;
        self.wait_updates()?;
        if !notices.is_empty() {
            let mut st = lock(&self.state);
            for p in &notices {
                let slot = (st.published % L::LOG_CAP as u64) as usize;
                self.local_word(L::LOG + slot * 8)
                    .store(*p, Ordering::Relaxed);
                st.published += 1;
            }
            // Entries before the count: readers READ the count first.
            self.local_word(L::NOTICES)
                .store(st.published, Ordering::Release);
            bump(&self.stats.notices, notices.len() as u64);
        }
        bump(&self.stats.notices_skipped, skipped);
        // Diffs are out: pages invalidated while being written go now.
        let mut st = lock(&self.state);
        if !st.stale.is_empty() {
            let stale: Vec<u64> = st.stale.drain().collect();
            self.discard(&mut st, &stale)?;
        }
        Ok(())
    }

    /// Whether a release would find nothing to send, publish, invalidate
    /// or wait for: no noted, eager, direct or forwarded writes since the
    /// last one, no trapped pages, no stale pages. A task that takes a
    /// lock around reads (or alone, where nothing is trapped) then pays
    /// a few lock-free looks instead of the whole release, twice a lock.
    fn nothing_to_release(&self) -> bool {
        let quiet_out = {
            let out = lock(&self.out);
            out.noted.is_empty()
                && out.pending.is_none()
                && out.homes.is_empty()
                && out.pages.is_empty()
                && out.direct.is_empty()
                && self.local_word(L::UPD_HOME).load(Ordering::Acquire) >= out.forwarded
        };
        if !quiet_out || self.marks_moved() {
            return false;
        }
        let st = lock(&self.state);
        st.dirty.is_empty()
            && st.own_dirty.is_empty()
            && st.twin_spans.is_empty()
            && st.twin_refused.is_empty()
            && st.stale.is_empty()
            && st.saved.is_empty()
            && self.local_word(L::UPD_ACK).load(Ordering::Acquire)
                >= self.local_word(L::UPD_WANT).load(Ordering::Acquire)
    }

    /// Acquire: pulls every other task's new write notices (when a range
    /// with notices is known here) and drops this task's copies of those
    /// pages, and drops every cached `HomeOnly` page, so the next read
    /// faults. Copies that were dropped before and read again (a
    /// stencil's boundary rows) are fetched again at once instead, while
    /// their homes are likely still at the same synchronization.
    pub(crate) fn acquire(&self) -> Result<(), Error> {
        self.acquire_after(&[])
    }

    /// [`Shared::acquire`] after a barrier whose arrival records carried
    /// other tasks' notices (by rank; a task without one is asked).
    pub(crate) fn acquire_after(&self, arrivals: &[Option<Arrival>]) -> Result<(), Error> {
        self.acquire_with(arrivals, None)
    }

    /// [`Shared::acquire_after`]; with `asked`, the looks at other
    /// tasks' notices a lock sent and what the lock's last releaser had
    /// seen ([`Shared::take_asked`]), instead of a look at every task.
    pub(crate) fn acquire_with(
        &self,
        arrivals: &[Option<Arrival>],
        asked: Option<(Vec<Ask>, Vec<u64>)>,
    ) -> Result<(), Error> {
        // Writes of this task not yet released would be lost with the page.
        let released = self.release();
        lock(&self.state).just_released = false;
        released?;
        let mut drop_all = false;
        let mut pages = Vec::new();
        let lazy = lock(&self.place).lazy;
        let mut counts = Vec::new();
        // Whether this acquire looks at every task's notices.
        let mut whole = false;
        match asked {
            Some((asks, need)) => {
                whole = (0..self.size)
                    .all(|r| r == self.rank || need.get(r as usize) == Some(&ASK_ALL));
                drop_all = self.take_asked(asks, &mut pages, &mut counts, &need)?;
            }
            None if lazy => {
                whole = true;
                drop_all = self.pull_notices(&mut pages, &mut counts, arrivals)?;
            }
            None => {}
        }
        let refresh = {
            let mut st = lock(&self.state);
            if drop_all {
                pages = st.present.iter().copied().collect();
            }
            pages.extend(st.transient.iter().copied());
            pages.sort_unstable();
            pages.dedup();
            let mut refresh = Vec::new();
            let mut ran_out = HashSet::new();
            for &p in &pages {
                if refresh.len() >= MAX_REFRESH || !st.present.contains(&p) {
                    continue;
                }
                let limit = st.streak_limit(p);
                if let Some(streak) = st.hot.get_mut(&p) {
                    *streak += 1;
                    if *streak > limit {
                        st.hot.remove(&p);
                        ran_out.insert(p);
                    } else {
                        refresh.push(p);
                    }
                }
            }
            if !pages.is_empty() {
                st.streaks_ran_out(ran_out);
            }
            // Only copies of lazy ranges outside the adopted window: the
            // others are fetched at their fault as before.
            let refresh = refresh
                .into_iter()
                .filter(|&p| {
                    !self.window.get().is_some_and(|w| w.holds(p * PAGE as u64))
                        && self.find_range(p).is_some_and(|r| r.protocol.lazy())
                })
                .collect();
            let (pushed, refresh) = split_pushed(arrivals, refresh);
            // A pushed page whose copy stays writable is overwritten where
            // it is: no drop (an madvise and its TLB shootdown) and no
            // install (an ioctl) a page and acquire.
            let (in_place, pushed): (Vec<_>, Vec<_>) = pushed
                .into_iter()
                .partition(|&(p, _, _)| self.refreshes_in_place(&st, p));
            if in_place.is_empty() {
                self.discard(&mut st, &pages)?;
            } else {
                let keep: HashSet<u64> = in_place.iter().map(|&(p, _, _)| p).collect();
                let drop: Vec<u64> = pages
                    .iter()
                    .copied()
                    .filter(|p| !keep.contains(p))
                    .collect();
                self.discard(&mut st, &drop)?;
            }
            for (r, count) in counts {
                st.seen[r as usize] = count;
            }
            st.seen_whole |= whole;
            (in_place, pushed, refresh)
        };
        let (in_place, pushed, mut refresh) = refresh;
        refresh.extend(self.overwrite_pushed(arrivals, in_place)?);
        refresh.extend(self.install_pushed(arrivals, pushed)?);
        self.refresh(refresh)
    }

    /// Whether a pushed page `p` may be overwritten in place at an
    /// acquire: a copy present and marked at its home, installed writable
    /// (note mode, not a guarded `Invalidate` copy, not UDSM, not in the
    /// adopted window).
    fn refreshes_in_place(&self, st: &State, p: u64) -> bool {
        !self.traps()
            && !self.udsm()
            && st.present.contains(&p)
            && st.registered.contains(&p)
            && !self.window.get().is_some_and(|w| w.holds(p * PAGE as u64))
            && self
                .find_range(p)
                .is_some_and(|r| r.protocol.lazy() && !self.guards(r.protocol))
    }

    /// Overwrites the present copies among `pushed` with the bytes their
    /// homes pushed (see [`Shared::refreshes_in_place`]); returns the
    /// pages it could not (their home's record does not hold them, or
    /// the copy went meanwhile): dropped here, for the caller to fetch.
    /// On an error the pages not overwritten yet are dropped first: their
    /// notices count as seen already, so a copy kept would stay stale.
    fn overwrite_pushed(
        &self,
        arrivals: &[Option<Arrival>],
        pushed: Vec<(u64, u32, usize)>,
    ) -> Result<Vec<u64>, Error> {
        let mut rest = Vec::new();
        for (i, &(p, home, k)) in pushed.iter().enumerate() {
            match self.overwrite_one(arrivals, p, home, k) {
                Ok(true) => {}
                Ok(false) => rest.push(p),
                Err(e) => {
                    let left: Vec<u64> = pushed[i..].iter().map(|&(p, _, _)| p).collect();
                    let mut st = lock(&self.state);
                    self.discard(&mut st, &left)?;
                    return Err(e);
                }
            }
        }
        Ok(rest)
    }

    /// [`Shared::overwrite_pushed`] of page `p`, the `k`-th its home
    /// pushed; false when it was dropped instead.
    fn overwrite_one(
        &self,
        arrivals: &[Option<Arrival>],
        p: u64,
        home: u32,
        k: usize,
    ) -> Result<bool, Error> {
        let data = match arrivals.get(home as usize).and_then(Option::as_ref) {
            Some(a) if self.home_of(p)? == home => self.pushed_page(home, a.episode, k)?,
            found => {
                if found.is_some() {
                    self.bad_message(home, "pushed page");
                }
                let mut st = lock(&self.state);
                self.discard(&mut st, &[p])?;
                return Ok(false);
            }
        };
        let mut st = lock(&self.state);
        if !self.refreshes_in_place(&st, p) {
            self.discard(&mut st, &[p])?;
            return Ok(false);
        }
        self.view_write(p * PAGE as u64, &data)?;
        // As a drop and install would: the old twin goes (what it
        // covered was released), the new bytes are the twin.
        st.dirty.remove(&p);
        self.twin_installed(&mut st, p, &data);
        bump(&self.stats.invalidations, 1);
        bump(&self.stats.pages_fetched, 1);
        bump(&self.stats.pages_refreshed, 1);
        bump(&self.stats.pages_overwritten, 1);
        Ok(true)
    }

    /// Appends the write notices other tasks published since the last
    /// look to `pages`; true when a task published more than its log
    /// holds since (drop every copy). A task's barrier arrival record in
    /// `arrivals` gives its count and the notices since its previous
    /// record (usually all that is new here); what it does not carry is
    /// READ from that task's log. Of the other tasks, each count and the
    /// entries after the last one seen travel in one round trip, every
    /// task's at once: the count is read first, and the owner writes
    /// entries before it publishes the count, so entries below it are
    /// complete. The counts reached go to `counts`, for the caller to
    /// record once the pages are dropped (an error before then loses no
    /// notice).
    fn pull_notices(
        &self,
        pages: &mut Vec<u64>,
        counts: &mut Vec<(u32, u64)>,
        arrivals: &[Option<Arrival>],
    ) -> Result<bool, Error> {
        let mut drop_all = false;
        let mut asks = Vec::new();
        for r in 0..self.size {
            if r == self.rank {
                continue;
            }
            let (seen, gain) = {
                let st = lock(&self.state);
                (st.seen[r as usize], st.gain[r as usize])
            };
            if let Some(a) = arrivals.get(r as usize).and_then(Option::as_ref) {
                if a.count <= seen {
                    continue;
                }
                if a.count - seen > L::LOG_CAP as u64 {
                    drop_all = true;
                } else {
                    // [seen, count): before the record's notices, in
                    // them, after them.
                    let end = a.from + a.notices.len() as u64;
                    self.read_log(r, seen, a.from.min(a.count), pages)?;
                    let (lo, hi) = (seen.max(a.from), a.count.min(end));
                    if lo < hi {
                        pages.extend_from_slice(
                            &a.notices[(lo - a.from) as usize..(hi - a.from) as usize],
                        );
                    }
                    self.read_log(r, seen.max(end), a.count, pages)?;
                }
                lock(&self.state).gain[r as usize] = a.count - seen;
                counts.push((r, a.count));
                continue;
            }
            asks.push(self.ask(r, seen, gain)?);
        }
        let more = self.take_asked(asks, pages, counts, &[])?;
        Ok(drop_all || more)
    }

    /// Asks task `r` for its notice count and the entries after `seen`
    /// (as many as it published last time, `gain`), both in one trip.
    fn ask(&self, r: u32, seen: u64, gain: u64) -> Result<Ask, Error> {
        let count = self
            .task
            .fetch_add(self.meta_at(r, L::NOTICES)?, 0, Options::default())?;
        let slot = (seen % L::LOG_CAP as u64) as usize;
        // As many entries as that task published last time, within
        // bounds: a lock taken often by many tasks peeks a little.
        // A count another task wrote may be anything: capped before it grows.
        let want = (gain.min(NOTICE_PEEK as u64) as usize)
            .next_power_of_two()
            .clamp(8, NOTICE_PEEK);
        let n = want.min(L::LOG_CAP - slot);
        let log = self.task.read(
            self.meta_at(r, L::LOG + slot * 8)?,
            n * 8,
            Options::default(),
        )?;
        bump(&self.stats.sync_requests, 2);
        Ok(Ask {
            rank: r,
            seen,
            count,
            log,
        })
    }

    /// Asks for their notices ([`Shared::ask`]) the other tasks of which
    /// `need` (what a lock's last releaser had seen) holds more than this
    /// task has seen.
    pub(crate) fn ask_behind(&self, need: &[u64]) -> Result<Vec<Ask>, Error> {
        let mut asks = Vec::new();
        for r in 0..self.size {
            let (seen, gain) = {
                let st = lock(&self.state);
                (st.seen[r as usize], st.gain[r as usize])
            };
            if r != self.rank && need.get(r as usize).is_some_and(|&n| n > seen) {
                asks.push(self.ask(r, seen, gain)?);
            }
        }
        Ok(asks)
    }

    /// The answers to `asks`: the notices after each task's `seen` go to
    /// `pages` and the counts reached to `counts`; true when a task
    /// published more than its log holds since (drop every copy). An
    /// answer below `need[rank]` (what the lock's last releaser had seen
    /// of that task; a count another task wrote may be anything) is
    /// asked again, once, and taken as it then is.
    fn take_asked(
        &self,
        asks: Vec<Ask>,
        pages: &mut Vec<u64>,
        counts: &mut Vec<(u32, u64)>,
        need: &[u64],
    ) -> Result<bool, Error> {
        let mut drop_all = false;
        for a in asks {
            let (r, seen) = (a.rank, a.seen);
            let mut count = a.count.wait_value()?;
            let mut peek = a.log.wait_data()?;
            if need
                .get(r as usize)
                .is_some_and(|&n| n != ASK_ALL && count < n)
            {
                count = self.fetch_add(self.meta_at(r, L::NOTICES)?, 0)?;
                bump(&self.stats.sync_requests, 1);
                peek.clear();
            }
            if count <= seen {
                continue;
            }
            if count - seen > L::LOG_CAP as u64 {
                drop_all = true;
            } else {
                let have = (peek.len() / 8) as u64;
                let got = (count - seen).min(have) as usize;
                pages.extend(
                    peek[..got * 8]
                        .chunks_exact(8)
                        .filter_map(|c| c.try_into().ok().map(u64::from_le_bytes)),
                );
                self.read_log(r, seen + got as u64, count, pages)?;
            }
            lock(&self.state).gain[r as usize] = count - seen;
            counts.push((r, count));
        }
        Ok(drop_all)
    }

    /// Appends entries `[from, to)` of task `r`'s notice log (READs of at
    /// most 8192 entries; none when `from >= to`).
    fn read_log(&self, r: u32, from: u64, to: u64, pages: &mut Vec<u64>) -> Result<(), Error> {
        let mut i = from;
        while i < to {
            let slot = (i % L::LOG_CAP as u64) as usize;
            let n = ((to - i) as usize).min(L::LOG_CAP - slot).min(8192);
            let at = self.meta_at(r, L::LOG + slot * 8)?;
            let d = self.task.read(at, n * 8, Options::default())?.wait_data()?;
            bump(&self.stats.sync_requests, 1);
            pages.extend(
                d.chunks_exact(8)
                    .filter_map(|c| c.try_into().ok().map(u64::from_le_bytes)),
            );
            i += n as u64;
        }
        Ok(())
    }

    /// Drops present pages among `pages` (state lock held).
    pub(crate) fn discard(&self, st: &mut State, pages: &[u64]) -> Result<(), Error> {
        self.discard_with(st, pages, true)
    }

    /// [`Shared::discard`]; UDSM: marked absent first, and their bytes
    /// dropped only when `zap` (the application thread's own drops: a
    /// handler dropping a page under the application's load, between its
    /// presence check and the load, would make it read zeros; kept, the
    /// bytes stay until the next fetch overwrites them).
    pub(crate) fn discard_with(
        &self,
        st: &mut State,
        pages: &[u64],
        zap: bool,
    ) -> Result<(), Error> {
        let mut any = false;
        for &p in pages {
            if zap {
                // Its bytes go: nothing of them to lay over a new copy.
                st.kept.remove(&p);
            }
            if st.present.remove(&p) {
                // A twin kept across releases (`collect_guarded`) goes
                // with its copy: everything it covered was sent.
                st.dirty.remove(&p);
                self.mark_present(p, p + 1, false);
                st.transient.remove(&p);
                if st.dropped.len() >= MAX_DROPPED {
                    st.dropped.clear();
                }
                st.dropped.insert(p);
                let addr = self.page_addr(p)?;
                if self.solo() {
                    // Its stores were neither trapped nor noted: they go
                    // home now.
                    let off = p * PAGE as u64;
                    self.home_write(off, &self.view_read(off, PAGE)?)?;
                }
                match self.window.get().filter(|w| w.holds(p * PAGE as u64)) {
                    Some(w) => {
                        // Present until discarded: reading it cannot fault.
                        w.save(p, &self.view_read(p * PAGE as u64, PAGE)?);
                        w.map.discard(addr, PAGE)?;
                    }
                    None if zap || !self.udsm() => self.view.discard(addr, PAGE)?,
                    None => {}
                }
                bump(&self.stats.invalidations, 1);
                any = true;
            }
        }
        if any {
            self.epoch.fetch_add(1, Ordering::AcqRel);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocol_names_and_codes() {
        for p in Protocol::ALL {
            assert_eq!(Protocol::parse(p.name()), Some(p));
            assert_eq!(Protocol::from_code(p.code()), Some(p));
        }
        assert_eq!(Protocol::from_code(0), None);
        assert_eq!(Protocol::parse("update_drct"), Some(Protocol::UpdateDirect));
    }
}
