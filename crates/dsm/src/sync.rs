//! Locks and barriers: ticket locks at each lock's home and a counting
//! barrier at rank 0, built on MBCF atomics and WRITEs, waiting with
//! SS-Wait and a bounded recheck, with release and acquire semantics.

use crate::layout as L;
use crate::shared::{lock, Shared};
use crate::stats::bump;
use crate::Error;
use sss_mbcf::Options;
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
    fn meta_add(&self, rank: u32, off: usize, v: u64) -> Result<u64, Error> {
        if rank == self.rank {
            return Ok(self.local_word(off).fetch_add(v, Ordering::AcqRel));
        }
        bump(&self.stats.sync_requests, 1);
        self.fetch_add(self.meta_at(rank, off)?, v)
    }

    /// Swap on word `off` of task `rank`'s metadata (see `meta_add`).
    fn meta_swap(&self, rank: u32, off: usize, v: u64) -> Result<u64, Error> {
        if rank == self.rank {
            return Ok(self.local_word(off).swap(v, Ordering::AcqRel));
        }
        bump(&self.stats.sync_requests, 1);
        Ok(self
            .task
            .swap(self.meta_at(rank, off)?, v, Options::default())?
            .wait_value()?)
    }

    fn lock_at(&self, id: u32) -> Result<(u32, usize), Error> {
        if id as usize >= L::MAX_LOCKS {
            return Err(Error::Invalid("lock id too large"));
        }
        if self.size as usize > L::LOCK_SLOTS {
            return Err(Error::Invalid("locks support at most 64 tasks"));
        }
        Ok((id % self.size, L::LOCKS + id as usize * L::LOCK_BYTES))
    }

    pub(crate) fn lock(&self, id: u32) -> Result<(), Error> {
        let (home, at) = self.lock_at(id)?;
        let serving = at + 8;
        let ticket = self.meta_add(home, at, 1)?;
        let grant = self.local_word(L::GRANT);
        let mut g = grant.load(Ordering::Acquire);
        let slot = at + 16 + (ticket as usize % L::LOCK_SLOTS) * 8;
        self.meta_swap(home, slot, self.rank as u64 + 1)?;
        // The slot is in place before we look: a releaser that bumped
        // `serving` after this sees it and rings our doorbell. The wait
        // is bounded all the same, so a doorbell that goes missing costs
        // a re-read of `serving`, not the job.
        while self.meta_add(home, serving, 0)? != ticket {
            if self
                .task
                .wait_word_timeout(grant, |v| v != g, WAKE_RECHECK)
                .is_none()
                && self.meta_add(home, serving, 0)? == ticket
            {
                bump(&self.stats.missed_wakeups, 1);
                break;
            }
            g = grant.load(Ordering::Acquire);
        }
        bump(&self.stats.locks, 1);
        self.acquire()
    }

    pub(crate) fn unlock(&self, id: u32) -> Result<(), Error> {
        let (home, at) = self.lock_at(id)?;
        self.release()?;
        let now = self.meta_add(home, at + 8, 1)? + 1;
        let who = self.meta_swap(home, at + 16 + (now as usize % L::LOCK_SLOTS) * 8, 0)?;
        if who != 0 && who <= self.size as u64 && !self.cfg.fault_no_wakeups {
            self.meta_add(who as u32 - 1, L::GRANT, 1)?;
        }
        Ok(())
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
    /// sees a record may read what it covers. Returns the records, by
    /// rank (None for this task and for a record that does not hold
    /// together: the acquire then READs that task's notices).
    fn arrive(&self, episode: u64) -> Result<Vec<Option<Arrival>>, Error> {
        let mut arrivals: Vec<Option<Arrival>> = (0..self.size).map(|_| None).collect();
        if self.size == 1 {
            return Ok(arrivals);
        }
        let record = {
            let mut st = lock(&self.state);
            let count = st.published;
            let from = st.bar_sent.min(count);
            // One datagram: the notify comes with the record's only packet.
            let cap = (self.task.payload() / 8).saturating_sub(L::BAR_HEAD);
            let n = (count - from).min(cap.min(L::BAR_CAP) as u64);
            let mut rec = Vec::with_capacity((L::BAR_HEAD + n as usize) * 8);
            for w in [episode, count, from, n] {
                rec.extend_from_slice(&w.to_ne_bytes());
            }
            for i in from..from + n {
                let slot = (i % L::LOG_CAP as u64) as usize;
                let p = self.local_word(L::LOG + slot * 8).load(Ordering::Relaxed);
                rec.extend_from_slice(&p.to_ne_bytes());
            }
            st.bar_sent = count;
            rec
        };
        let me = self.rank as usize;
        for r in (0..self.size).filter(|&r| r != self.rank) {
            let stamp = self.meta_at(r, L::BAR_STAMP + me * 8)?;
            let at = self.meta_at(r, L::bar_slot(me, episode))?;
            self.task.write(at, &record, Options::notify(stamp))?;
            bump(&self.stats.sync_writes, 1);
        }
        let t0 = Instant::now();
        let mut said = false;
        for r in (0..self.size).filter(|&r| r != self.rank) {
            let stamp = self.local_word(L::BAR_STAMP + r as usize * 8);
            while self
                .task
                .wait_word_timeout(stamp, |v| v >= episode, WAKE_RECHECK)
                .is_none()
            {
                self.stall_check(episode, t0, &mut said)?;
            }
            arrivals[r as usize] = self.arrival(r, episode);
        }
        Ok(arrivals)
    }

    /// Task `from`'s arrival record for `episode` in this task's slot,
    /// checked: another task wrote it, so it may be anything.
    fn arrival(&self, from: u32, episode: u64) -> Option<Arrival> {
        let at = L::bar_slot(from as usize, episode);
        let w = |i: usize| self.local_word(at + i * 8).load(Ordering::Acquire);
        let (ep, count, first, n) = (w(0), w(1), w(2), w(3));
        if ep != episode || first > count || n > (L::BAR_CAP as u64).min(count - first) {
            self.bad_message(from, "barrier arrival record");
            return None;
        }
        Some(Arrival {
            count,
            from: first,
            notices: (0..n as usize).map(|i| w(L::BAR_HEAD + i)).collect(),
        })
    }
}

/// The write notices another task's barrier arrival record carried.
#[derive(Debug)]
pub(crate) struct Arrival {
    /// Notices it had published when it arrived.
    pub(crate) count: u64,
    /// Index (in its log) of the first notice carried.
    pub(crate) from: u64,
    /// Notices `[from, from + len)` of its log.
    pub(crate) notices: Vec<u64>,
}
