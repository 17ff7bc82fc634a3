//! The holder directory: one word per page at the page's home, a bit per
//! task holding a copy (`Update`, `Invalidate`), and for `Invalidate` the
//! busy bit that serializes writers of a page.

use crate::layout as L;
use crate::shared::{lock, Shared};
use crate::stats::bump;
use crate::sys;
use crate::Error;
use sss_mbcf::{Options, Request};
use std::sync::atomic::{AtomicU64, Ordering};

/// The holder directory has one bit per task.
pub(crate) const MAX_HOLDERS: u32 = 64;

/// Top bit of an `Invalidate` page's directory word: a writer is changing
/// the page (its holders are being invalidated, then its home written).
/// Fetchers wait while it is set; writers take it in turn.
pub(crate) const BUSY: u64 = 1 << 63;

/// Copy marks issued and not yet known applied ([`Shared::mark_copies`]).
#[must_use]
pub(crate) struct Marks {
    /// The status-returning last WRITE of the marks.
    last: Option<sss_mbcf::Request>,
    /// The pages marked.
    pages: Vec<u64>,
}

/// `Invalidate` is sequentially consistent through the directory with at
/// most this many tasks (the busy bit takes the last holder bit).
pub(crate) const SC_MAX: u32 = MAX_HOLDERS - 1;

impl Shared {
    /// Sets this task's holder bit for `page` at its home (once).
    pub(crate) fn register(&self, page: u64, home: u32) -> Result<(), Error> {
        if lock(&self.state).registered.contains(&page) {
            return Ok(());
        }
        if self.rank >= MAX_HOLDERS {
            return Err(Error::Invalid(
                "the update protocol supports at most 64 tasks",
            ));
        }
        let bit = 1u64 << self.rank;
        if home == self.rank {
            self.dir_word(page)?.fetch_or(bit, Ordering::SeqCst);
        } else {
            let at = self
                .dirs
                .get(home as usize)
                .ok_or(Error::Invalid("no such home"))?
                .at(page * 8);
            // The bit is clear (only this task sets or clears it). Then,
            // in issue order, `MARKS`: a home that sees it move looks for
            // newly held pages (`Shared::newly_copied`).
            let set = self.task.fetch_add(at, bit, Options::default())?;
            let moved =
                self.task
                    .fetch_add(self.meta_at(home, L::MARKS)?, 1, Options::default())?;
            bump(&self.stats.fetch_trips, 1);
            set.wait_value()?;
            moved.wait_value()?;
        }
        std::sync::atomic::fence(Ordering::SeqCst);
        lock(&self.state).registered.insert(page);
        Ok(())
    }

    /// [`Shared::register`] for `n` pages from `first` (all homed at
    /// `home`): the FETCH_ADDs go out together, then are waited for.
    pub(crate) fn register_run(&self, first: u64, n: u64, home: u32) -> Result<(), Error> {
        if n == 1 || home == self.rank {
            for p in first..first + n {
                self.register(p, home)?;
            }
            return Ok(());
        }
        let r = self.register_send(first, n, home)?;
        self.register_done(r)
    }

    /// Sends this task's holder bits for the pages of `n` from `first`
    /// not registered yet, at `home` (another task), then a bump of its
    /// `MARKS`, and returns without waiting: what the caller issues to
    /// `home` next is applied after them (MBCF applies one task's
    /// operations in issue order). [`Shared::register_done`] waits.
    pub(crate) fn register_send(
        &self,
        first: u64,
        n: u64,
        home: u32,
    ) -> Result<Registration, Error> {
        if self.rank >= MAX_HOLDERS {
            return Err(Error::Invalid(
                "the update protocol supports at most 64 tasks",
            ));
        }
        let todo: Vec<u64> = {
            let st = lock(&self.state);
            (first..first + n)
                .filter(|p| !st.registered.contains(p))
                .collect()
        };
        let dir = self
            .dirs
            .get(home as usize)
            .ok_or(Error::Invalid("no such home"))?;
        let bit = 1u64 << self.rank;
        let mut reqs = todo
            .iter()
            .map(|&p| self.task.fetch_add(dir.at(p * 8), bit, Options::default()))
            .collect::<Result<Vec<_>, _>>()?;
        if !todo.is_empty() {
            // After the bits, as in `register`.
            reqs.push(
                self.task
                    .fetch_add(self.meta_at(home, L::MARKS)?, 1, Options::default())?,
            );
        }
        Ok(Registration { todo, reqs })
    }

    /// Waits for the holder bits of [`Shared::register_send`].
    /// Recorded even when one failed: sent once, a bit must never be
    /// sent again (a second FETCH_ADD would carry into the next task's).
    pub(crate) fn register_done(&self, r: Registration) -> Result<(), Error> {
        if !r.reqs.is_empty() {
            bump(&self.stats.fetch_trips, 1);
        }
        let mut res = Ok(());
        for q in r.reqs {
            if let Err(e) = q.wait_value() {
                res = Err(e.into());
            }
        }
        std::sync::atomic::fence(Ordering::SeqCst);
        lock(&self.state).registered.extend(r.todo);
        res
    }

    /// Sends a look at the directory words of `n` pages from `first` at
    /// `home` (another task), for the READ of the pages the caller issues
    /// next: the home applies the looks, then the READ, so the data is of
    /// a moment the looks describe. [`Shared::looks_busy`] tells.
    pub(crate) fn look_send(&self, first: u64, n: u64, home: u32) -> Result<Vec<Request>, Error> {
        let dir = self
            .dirs
            .get(home as usize)
            .ok_or(Error::Invalid("no such home"))?;
        (first..first + n)
            .map(|p| self.task.fetch_add(dir.at(p * 8), 0, Options::default()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(Error::from)
    }

    /// Whether a writer held any page the looks of [`Shared::look_send`]
    /// saw (backing off when one did: the caller looks again).
    pub(crate) fn looks_busy(&self, looks: Vec<Request>, waits: &mut u32) -> Result<bool, Error> {
        let mut busy = false;
        for r in looks {
            busy |= r.wait_value()? & BUSY != 0;
        }
        if busy {
            backoff(waits);
        }
        Ok(busy)
    }

    /// Copy marks for `n` pages of a lazy range from `first`, homed at
    /// `home` (another task), not marked before: their directory words
    /// set to 1 by one WRITE per run of such pages, the last of which
    /// also adds 1 to the home's `MARKS` (its notify) and returns its
    /// status. Issued before the READ of the pages, so the home applies
    /// them first (MBCF applies one task's operations in issue order, and
    /// orders the loads of operations after a notify after it): a home
    /// that misses the mark when it publishes notices (it stores, fences,
    /// then loads the marks) wrote nothing this READ misses. The caller
    /// hands the result to [`Shared::marks_done`] after its READ.
    pub(crate) fn mark_copies(&self, first: u64, n: u64, home: u32) -> Result<Marks, Error> {
        let pages: Vec<u64> = {
            let st = lock(&self.state);
            (first..first + n)
                .filter(|p| !st.registered.contains(p))
                .collect()
        };
        if pages.is_empty() {
            return Ok(Marks { last: None, pages });
        }
        let dir = self
            .dirs
            .get(home as usize)
            .ok_or(Error::Invalid("no such home"))?;
        let mut last = None;
        let mut i = 0;
        while i < pages.len() {
            let mut j = i + 1;
            while j < pages.len() && pages[j] == pages[j - 1] + 1 {
                j += 1;
            }
            let ones: Vec<u8> = (i..j).flat_map(|_| 1u64.to_le_bytes()).collect();
            let opts = if j == pages.len() {
                Options {
                    status_return: true,
                    ..Options::notify(self.meta_at(home, L::MARKS)?)
                }
            } else {
                Options::default()
            };
            last = Some(self.task.write(dir.at(pages[i] * 8), &ones, opts)?);
            i = j;
        }
        Ok(Marks { last, pages })
    }

    /// Waits for the last mark's status (applied in issue order after the
    /// others, so it answers for all) and only then counts the pages as
    /// marked: a mark the home refused is set again at the next fetch,
    /// instead of leaving a copy nobody will notice.
    pub(crate) fn marks_done(&self, m: Marks) -> Result<(), Error> {
        if let Some(r) = m.last {
            r.wait()?;
        }
        bump(&self.stats.copy_marks, m.pages.len() as u64);
        lock(&self.state).registered.extend(m.pages);
        Ok(())
    }

    /// [`Shared::wait_not_busy`] for `n` pages from `first` (homed at
    /// `home`), their words read together.
    pub(crate) fn wait_not_busy_run(&self, first: u64, n: u64, home: u32) -> Result<(), Error> {
        if n == 1 || home == self.rank {
            for p in first..first + n {
                self.wait_not_busy(p, home)?;
            }
            return Ok(());
        }
        let mut waits = 0u32;
        loop {
            let looks = self.look_send(first, n, home)?;
            bump(&self.stats.fetch_trips, 1);
            if !self.looks_busy(looks, &mut waits)? {
                return Ok(());
            }
        }
    }

    /// Adds `v` (wrapping) to `page`'s directory word at `home`; returns
    /// the old word.
    pub(super) fn dir_add(&self, page: u64, home: u32, v: u64) -> Result<u64, Error> {
        if home == self.rank {
            return Ok(self.dir_word(page)?.fetch_add(v, Ordering::SeqCst));
        }
        let at = self
            .dirs
            .get(home as usize)
            .ok_or(Error::Invalid("no such home"))?
            .at(page * 8);
        self.fetch_add(at, v)
    }

    /// Compare-and-swap on `page`'s directory word at `home`; the old word.
    fn dir_cas(&self, page: u64, home: u32, old: u64, new: u64) -> Result<u64, Error> {
        if home == self.rank {
            let w = self.dir_word(page)?;
            return Ok(
                match w.compare_exchange(old, new, Ordering::SeqCst, Ordering::SeqCst) {
                    Ok(v) | Err(v) => v,
                },
            );
        }
        let at = self
            .dirs
            .get(home as usize)
            .ok_or(Error::Invalid("no such home"))?
            .at(page * 8);
        Ok(self
            .task
            .cas(at, old, new, Options::default())?
            .wait_value()?)
    }

    /// Sets `page`'s busy bit (waiting for another writer to clear it);
    /// returns the holder mask at that moment.
    pub(super) fn dir_take(&self, page: u64, home: u32) -> Result<u64, Error> {
        let mut guess = 0;
        let mut waits = 0u32;
        loop {
            let old = self.dir_cas(page, home, guess, guess | BUSY)?;
            if old == guess {
                return Ok(guess);
            }
            if old & BUSY != 0 {
                backoff(&mut waits);
            }
            guess = old & !BUSY;
        }
    }

    /// Waits until no writer holds `page`.
    pub(crate) fn wait_not_busy(&self, page: u64, home: u32) -> Result<(), Error> {
        let mut waits = 0u32;
        loop {
            if home != self.rank {
                bump(&self.stats.fetch_trips, 1);
            }
            if self.dir_add(page, home, 0)? & BUSY == 0 {
                break;
            }
            backoff(&mut waits);
        }
        Ok(())
    }

    /// This task's holder-directory word of `page` (homed here). Checked:
    /// the directory is followed in memory by other mappings, which a
    /// page number outside the heap would silently corrupt.
    pub(crate) fn dir_word(&self, page: u64) -> Result<&AtomicU64, Error> {
        if page >= self.dir.info().len / 8 {
            return Err(Error::Invalid("holder directory: page outside the heap"));
        }
        #[allow(unsafe_code)]
        // SAFETY: `page` indexes a word of the directory segment (checked
        // above; its length is a multiple of 8 and its base page-aligned),
        // which `self` keeps mapped as long as the borrow; directory words
        // are only accessed atomically (here and by MBCF atomics).
        let w = unsafe { sys::word(self.dir.as_ptr() as usize + page as usize * 8) };
        Ok(w)
    }

    /// The holder mask of `page`, read at its home.
    pub(super) fn holders(&self, page: u64) -> Result<u64, Error> {
        let home = self.home_of(page)?;
        if home == self.rank {
            return Ok(self.dir_word(page)?.load(Ordering::SeqCst));
        }
        let at = self
            .dirs
            .get(home as usize)
            .ok_or(Error::Invalid("no such home"))?
            .at(page * 8);
        self.fetch_add(at, 0)
    }
}

/// Short waits first, then sleeps: the other side is a remote round trip
/// or two away.
fn backoff(waits: &mut u32) {
    *waits += 1;
    if *waits < 16 {
        std::thread::yield_now();
    } else {
        std::thread::sleep(std::time::Duration::from_micros(20));
    }
}

/// Holder bits in flight ([`Shared::register_send`]).
pub(crate) struct Registration {
    /// Pages whose bits were sent.
    todo: Vec<u64>,
    /// The FETCH_ADDs, the `MARKS` bump last.
    reqs: Vec<Request>,
}
