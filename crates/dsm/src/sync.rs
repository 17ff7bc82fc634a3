//! Barriers, and the metadata atomics locks and barriers share (locks:
//! `lock.rs`): barriers of up to 16 tasks all to all (one WRITE of an arrival record to each other
//! task, carrying the write notices and pushed pages the acquire needs),
//! larger ones counted at rank 0. Built on MBCF atomics and WRITEs,
//! waiting with SS-Wait and a bounded recheck, with release and acquire
//! semantics.

use crate::layout as L;
use crate::range::Placement;
use crate::shared::{lock, Shared};
use crate::stats::bump;
use crate::sys::PAGE;
use crate::Error;
use sss_mbcf::Options;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// How long a lock or barrier waiter trusts its wake-up before it looks
/// at the lock's or barrier's counters itself.
pub const WAKE_RECHECK: Duration = Duration::from_millis(5);

impl Shared {
    /// What a barrier that waited `after` for `episode` says: the tasks
    /// not there yet, and the likely cause when they never come.
    fn stalled(&self, episode: u64, after: Duration) -> Result<String, Error> {
        let mut missing = Vec::new();
        for r in 0..self.size {
            if self.fetch_add(self.meta_at(r, L::ARRIVED)?, 0)? < episode {
                missing.push(r);
            }
        }
        Ok(format!(
            "sss-dsm: task {} has waited {} s at barrier {episode} for task(s) {missing:?}. \
             A task that spins on a shared variable another task writes, with no \
             LOCK, UNLOCK or BARRIER in the loop, never sees the write under release \
             consistency: the program has a data race the DSM cannot order (see \
             docs/parmacs.md, \"Data races\"). SSS_DSM_STALL=abort:SECONDS ends such a job.",
            self.rank,
            after.as_secs()
        ))
    }

    /// Fetch-and-add on word `off` of task `rank`'s metadata. On this
    /// task's own words a plain atomic: MBCF applies other tasks' atomics
    /// to them with the same instructions, and an MBCF operation to
    /// oneself costs far more (a task alone takes every lock at home).
    pub(crate) fn meta_add(&self, rank: u32, off: usize, v: u64) -> Result<u64, Error> {
        if rank == self.rank {
            return Ok(self.local_word(off).fetch_add(v, Ordering::AcqRel));
        }
        bump(&self.stats.sync_requests, 1);
        self.fetch_add(self.meta_at(rank, off)?, v)
    }

    /// Swap on word `off` of task `rank`'s metadata (see `meta_add`).
    pub(crate) fn meta_swap(&self, rank: u32, off: usize, v: u64) -> Result<u64, Error> {
        if rank == self.rank {
            return Ok(self.local_word(off).swap(v, Ordering::AcqRel));
        }
        bump(&self.stats.sync_requests, 1);
        Ok(self
            .task
            .swap(self.meta_at(rank, off)?, v, Options::default())?
            .wait_value()?)
    }

    /// Barrier: release, then wait for every task, then acquire. Jobs of
    /// at most [`L::DIRECT_MAX`] tasks go all to all ([`Shared::arrive`]):
    /// one WRITE to each other task, which carries the write notices the
    /// acquire needs, and no round trip; larger jobs count arrivals at
    /// rank 0 and the acquire READs every task's notices.
    pub(crate) fn barrier(&self) -> Result<(), Error> {
        self.release()?;
        // Every task passes the same barriers in the same order: its
        // count of arrivals is the episode it is in.
        let arrived = self.local_word(L::ARRIVED);
        let episode = arrived.load(Ordering::Relaxed) + 1;
        arrived.store(episode, Ordering::Release);
        if self.size as usize <= L::DIRECT_MAX && !self.cfg.fault_no_wakeups {
            let arrivals = self.arrive(episode)?;
            bump(&self.stats.barriers, 1);
            lock(&self.state).just_released = true;
            return self.acquire_after(&arrivals);
        }
        let n = self.size as u64;
        let old = self.meta_add(0, L::BAR_COUNT, 1)?;
        debug_assert_eq!(old / n + 1, episode);
        if (old + 1) % n == 0 && !self.cfg.fault_no_wakeups {
            let bytes = episode.to_le_bytes();
            for r in 0..self.size {
                self.task
                    .write(self.meta_at(r, L::BAR_GEN)?, &bytes, Options::default())?;
                bump(&self.stats.sync_writes, 1);
            }
        }
        // The last arrival's write ends the wait; should it go missing,
        // the count at rank 0 says when everyone has arrived.
        let t0 = Instant::now();
        let mut said = false;
        while self
            .task
            .wait_word_timeout(self.local_word(L::BAR_GEN), |v| v >= episode, WAKE_RECHECK)
            .is_none()
        {
            if self.meta_add(0, L::BAR_COUNT, 0)? >= episode * n {
                bump(&self.stats.missed_wakeups, 1);
                break;
            }
            self.stall_check(episode, t0, &mut said)?;
        }
        bump(&self.stats.barriers, 1);
        lock(&self.state).just_released = true;
        self.acquire()
    }

    /// Reports (or, with `SSS_DSM_STALL=abort:…`, fails) a barrier wait
    /// longer than the stall setting, once.
    fn stall_check(&self, episode: u64, t0: Instant, said: &mut bool) -> Result<(), Error> {
        if let Some(after) = self
            .cfg
            .stall
            .after
            .filter(|&a| !*said && t0.elapsed() >= a)
        {
            *said = true;
            let msg = self.stalled(episode, after)?;
            if self.cfg.stall.abort {
                return Err(Error::Stalled(msg));
            }
            eprintln!("{msg}");
        }
        Ok(())
    }

    /// The all-to-all barrier of a small job: WRITEs this task's arrival
    /// record for `episode` to every other task (its notice count and the
    /// notices published since its previous record, as many as one
    /// datagram holds; the WRITE's notify bumps this task's stamp there,
    /// after the data), then waits until every other task's stamp here
    /// reached `episode` and reads their records. The release before has
    /// fenced every write of this interval at its home, so a task that
    /// sees a record may read what it covers.
    ///
    /// A record also names the copies this task would like pushed (hot
    /// copies, see `Shared::refresh`, homed at the reader), and comes
    /// with the pages of this home the reader asked for last time that
    /// this task noticed since its previous record (a WRITE of their bytes
    /// first, applied before the record: MBCF applies one task's
    /// operations in issue order). Returns the records by rank, this
    /// task's own included (None for a record that does not hold
    /// together: the acquire then READs that task's notices).
    fn arrive(&self, episode: u64) -> Result<Vec<Option<Arrival>>, Error> {
        let mut arrivals: Vec<Option<Arrival>> = (0..self.size).map(|_| None).collect();
        if self.size == 1 {
            return Ok(arrivals);
        }
        let me = self.rank as usize;
        let (count, from, mine, wanted, hot) = {
            let mut st = lock(&self.state);
            let count = st.published;
            let from = st.bar_sent.min(count);
            st.bar_sent = count;
            // Every notice since the last record, when few (pushes are
            // chosen among them; a long list pushes nothing).
            let mine: Option<Vec<u64>> = (count - from <= PUSH_LOOK).then(|| {
                (from..count)
                    .map(|i| {
                        let slot = (i % L::LOG_CAP as u64) as usize;
                        self.local_word(L::LOG + slot * 8).load(Ordering::Relaxed)
                    })
                    .collect()
            });
            let wanted = std::mem::replace(&mut st.wanted, vec![Vec::new(); self.size as usize]);
            let mut hot: Vec<u64> = st
                .hot
                .iter()
                .filter(|&(p, &streak)| streak < st.streak_limit(*p) && st.present.contains(p))
                .map(|(&p, _)| p)
                .collect();
            hot.sort_unstable();
            (count, from, mine, wanted, hot)
        };
        let hot: Vec<(u64, u32)> = hot
            .into_iter()
            .filter_map(|p| Some((p, self.pushable(p)?)))
            .collect();
        // One datagram: the notify comes with the record's only packet.
        let payload_words = self.task.payload() / 8;
        for r in (0..self.size).filter(|&r| r != self.rank) {
            let want: Vec<u64> = hot
                .iter()
                .filter(|&&(_, h)| h == r)
                .map(|&(p, _)| p)
                .take(L::WANT_MAX)
                .collect();
            let push: Vec<u64> = match &mine {
                Some(mine) => wanted
                    .get(r as usize)
                    .into_iter()
                    .flatten()
                    .copied()
                    .filter(|p| mine.contains(p) && self.pushable(*p) == Some(self.rank))
                    .take(L::PUSH_MAX)
                    .collect(),
                None => Vec::new(),
            };
            let cap = payload_words
                .saturating_sub(L::BAR_HEAD + want.len() + push.len())
                .min(L::BAR_CAP);
            let n = (count - from).min(cap as u64);
            let words = [
                episode,
                count,
                from,
                n,
                want.len() as u64,
                push.len() as u64,
            ];
            let mut rec = Vec::with_capacity((words.len() + n as usize + L::WANT_MAX) * 8);
            for w in words {
                rec.extend_from_slice(&w.to_ne_bytes());
            }
            for i in from..from + n {
                let slot = (i % L::LOG_CAP as u64) as usize;
                let p = self.local_word(L::LOG + slot * 8).load(Ordering::Relaxed);
                rec.extend_from_slice(&p.to_ne_bytes());
            }
            for p in want.iter().chain(&push) {
                rec.extend_from_slice(&p.to_ne_bytes());
            }
            let slot = L::bar_slot(me, episode);
            if !push.is_empty() {
                let mut data = Vec::with_capacity(push.len() * PAGE);
                for &p in &push {
                    data.extend_from_slice(&self.home_read(p * PAGE as u64, PAGE)?);
                }
                let at = self.meta_at(r, slot + L::BAR_RECORD)?;
                self.task.write(at, &data, Options::default())?;
                bump(&self.stats.pages_pushed, push.len() as u64);
            }
            let stamp = self.meta_at(r, L::BAR_STAMP + me * 8)?;
            self.task
                .write(self.meta_at(r, slot)?, &rec, Options::notify(stamp))?;
            bump(&self.stats.sync_writes, 1);
        }
        // This task's own notices since its last record, complete when
        // few (whether a page pushed to it is the latest).
        arrivals[me] = Some(Arrival {
            count,
            from,
            notices: mine.unwrap_or_default(),
            pushed: Vec::new(),
            episode,
        });
        let t0 = Instant::now();
        let mut said = false;
        let mut wanted = vec![Vec::new(); self.size as usize];
        for r in (0..self.size).filter(|&r| r != self.rank) {
            let stamp = self.local_word(L::BAR_STAMP + r as usize * 8);
            // SS-Wait's spin for a task on another node: its record is
            // received by this thread, not handed over by two wake-ups.
            while self
                .task
                .wait_word_partner_timeout(stamp, r, |v| v >= episode, WAKE_RECHECK)
                .is_none()
            {
                self.stall_check(episode, t0, &mut said)?;
            }
            if let Some((a, want)) = self.arrival(r, episode) {
                arrivals[r as usize] = Some(a);
                wanted[r as usize] = want;
            }
        }
        lock(&self.state).wanted = wanted;
        Ok(arrivals)
    }

    /// The home of `page` when its copies may be pushed at barriers: a
    /// page of a lazy range outside the adopted window whose home is
    /// known here without asking (under first touch, once claimed).
    fn pushable(&self, page: u64) -> Option<u32> {
        let r = self.find_range(page)?;
        if !r.protocol.lazy()
            || self
                .window
                .get()
                .is_some_and(|w| w.holds(page * PAGE as u64))
        {
            return None;
        }
        if matches!(r.placement, Placement::FirstTouch) {
            return lock(&self.place).ft.get(&page).copied();
        }
        self.home_of(page).ok()
    }

    /// Task `from`'s arrival record for `episode` in this task's slot,
    /// checked (another task wrote it, so it may be anything), and the
    /// pages it wants pushed with this task's next record.
    fn arrival(&self, from: u32, episode: u64) -> Option<(Arrival, Vec<u64>)> {
        let at = L::bar_slot(from as usize, episode);
        let w = |i: usize| self.local_word(at + i * 8).load(Ordering::Acquire);
        let (ep, count, first, n, nwant, npush) = (w(0), w(1), w(2), w(3), w(4), w(5));
        if ep != episode
            || first > count
            || n > (L::BAR_CAP as u64).min(count - first)
            || nwant > L::WANT_MAX as u64
            || npush > L::PUSH_MAX as u64
        {
            self.bad_message(from, "barrier arrival record");
            return None;
        }
        let (n, nwant, npush) = (n as usize, nwant as usize, npush as usize);
        let list = |lo: usize, len: usize| -> Vec<u64> { (lo..lo + len).map(w).collect() };
        let notices = list(L::BAR_HEAD, n);
        let want = list(L::BAR_HEAD + n, nwant);
        let pushed = list(L::BAR_HEAD + n + nwant, npush);
        Some((
            Arrival {
                count,
                from: first,
                notices,
                pushed,
                episode,
            },
            want,
        ))
    }

    /// The bytes of the `k`th page task `from` pushed with its record for
    /// `episode` (`k` below its count of pages pushed, checked by the
    /// caller).
    pub(crate) fn pushed_page(&self, from: u32, episode: u64, k: usize) -> Result<Vec<u8>, Error> {
        let mut page = vec![0u8; PAGE];
        let at = L::bar_slot(from as usize, episode) + L::BAR_RECORD + k * PAGE;
        self.meta.read_bytes(at, &mut page)?;
        Ok(page)
    }
}

/// Notices of a task since its last record, at most, among which the
/// pages pushed with its next records are chosen.
const PUSH_LOOK: u64 = 4096;

/// What another task's barrier arrival record carried.
#[derive(Debug)]
pub(crate) struct Arrival {
    /// Notices it had published when it arrived.
    pub(crate) count: u64,
    /// Index (in its log) of the first notice carried.
    pub(crate) from: u64,
    /// Notices `[from, from + len)` of its log.
    pub(crate) notices: Vec<u64>,
    /// Pages of its home it pushed with the record, their bytes in the
    /// slot after it.
    pub(crate) pushed: Vec<u64>,
    /// The barrier.
    pub(crate) episode: u64,
}

impl Arrival {
    /// Whether it carried every notice since its last record.
    fn complete(&self) -> bool {
        self.notices.len() as u64 == self.count - self.from
    }
}

/// Of `refresh` (copies an acquire after the barrier whose records are
/// `arrivals` dropped and wants again), the pages to install from the
/// bytes their home pushed with its record, with the home and their
/// index there, and the rest (to READ). A pushed page is the home's
/// copy when the home arrived, so it holds every write before the
/// barrier only when no other task (this one included) noticed the
/// page since its last record: each other writer's bytes may have
/// reached the home after it pushed. Records that do not carry every
/// notice since the last one push nothing.
pub(crate) fn split_pushed(
    arrivals: &[Option<Arrival>],
    refresh: Vec<u64>,
) -> (Vec<(u64, u32, usize)>, Vec<u64>) {
    let all = !arrivals.is_empty()
        && arrivals
            .iter()
            .all(|a| a.as_ref().is_some_and(Arrival::complete));
    if !all || refresh.is_empty() {
        return (Vec::new(), refresh);
    }
    let wanted: HashSet<u64> = refresh.iter().copied().collect();
    // Pages of `refresh` noticed, by whom.
    let mut noticed: HashMap<u64, Vec<usize>> = HashMap::new();
    let mut offered: HashMap<u64, (usize, usize)> = HashMap::new();
    for (r, a) in arrivals.iter().enumerate() {
        let Some(a) = a else { continue };
        for p in a.notices.iter().filter(|p| wanted.contains(p)) {
            noticed.entry(*p).or_default().push(r);
        }
        for (k, p) in a.pushed.iter().enumerate() {
            if wanted.contains(p) {
                offered.entry(*p).or_insert((r, k));
            }
        }
    }
    let mut pushed = Vec::new();
    let mut rest = Vec::new();
    for p in refresh {
        match offered.get(&p) {
            Some(&(home, k))
                if noticed
                    .get(&p)
                    .is_some_and(|by| by.iter().all(|&r| r == home)) =>
            {
                pushed.push((p, home as u32, k))
            }
            _ => rest.push(p),
        }
    }
    (pushed, rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(count: u64, from: u64, notices: &[u64], pushed: &[u64]) -> Option<Arrival> {
        Some(Arrival {
            count,
            from,
            notices: notices.to_vec(),
            pushed: pushed.to_vec(),
            episode: 1,
        })
    }

    #[test]
    fn a_pushed_page_is_taken_only_when_its_home_alone_noticed_it() {
        // Rank 0 (this task) wrote page 9; rank 1 pushed 5, 6 and 9 and
        // noticed 5, 6 and 9; rank 2 noticed 6.
        let arrivals = [
            rec(1, 0, &[9], &[]),
            rec(13, 10, &[5, 6, 9], &[5, 6, 9]),
            rec(4, 3, &[6], &[]),
        ];
        let (pushed, rest) = split_pushed(&arrivals, vec![5, 6, 7, 9]);
        assert_eq!(pushed, vec![(5, 1, 0)]);
        assert_eq!(rest, vec![6, 7, 9]);
    }

    #[test]
    fn records_missing_notices_push_nothing() {
        // Rank 2 carried 1 of its 2 notices: the other may name page 5.
        let arrivals = [
            rec(0, 0, &[], &[]),
            rec(1, 0, &[5], &[5]),
            rec(2, 0, &[8], &[]),
        ];
        assert_eq!(split_pushed(&arrivals, vec![5]), (vec![], vec![5]));
        // A task without a record: nothing either.
        let arrivals = [rec(0, 0, &[], &[]), rec(1, 0, &[5], &[5]), None];
        assert_eq!(split_pushed(&arrivals, vec![5]), (vec![], vec![5]));
        // No records (a barrier of rank 0's count): nothing.
        assert_eq!(split_pushed(&[], vec![5]), (vec![], vec![5]));
    }
}
