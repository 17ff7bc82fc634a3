//! Page faults: the fault thread's loop over userfaultfd, and resolving a
//! fault by fetching the page (and prefetch pages) from its home or, for a
//! write-protect fault, keeping a twin.

use crate::config::WriteMode;
use crate::protocol::directory::SC_MAX;
use crate::protocol::lay_over;
use crate::protocol::Protocol;
use crate::shared::{lock, page_of, Shared};
use crate::stats::bump;
use crate::sync::Arrival;
use crate::sys::{self, PAGE};
use crate::Error;
use sss_mbcf::Options;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

/// Pages one write-protect fault twins and opens at most.
const MAX_TWIN_OPEN: u64 = 64;
/// Pages one read fault fetches at most in a sequential pass.
const MAX_AHEAD: u64 = 64;
/// Pages a fault opens in a sequential pass without history.
pub(crate) const SEQ_AHEAD: u64 = 16;

impl Shared {
    /// Handles one fault, from the fault thread or the faulting thread's
    /// SIGBUS handler.
    pub(crate) fn handle_fault(&self, f: sys::Fault) -> Result<(), Error> {
        let t0 = Instant::now();
        let page = page_of(self.offset(f.addr, 1)?);
        let paddr = self.page_addr(page)?;
        if f.wp {
            bump(&self.stats.write_faults, 1);
            if self.is_mapped(page) {
                self.own_write(page)?;
                bump(&self.stats.fault_ns, t0.elapsed().as_nanos() as u64);
                return Ok(());
            }
            let mut st = lock(&self.state);
            if !st.present.contains(&page) {
                // Dropped meanwhile (reading it here would fault on this
                // very thread): let the writer retry as a missing fault.
                drop(st);
                self.uffd.wake(paddr, PAGE)?;
            } else {
                // Twins for this page and, in one ioctl, the present clean
                // pages after it that were written in one of the two
                // previous intervals (or a few, in a sequential pass).
                let end = self
                    .find_range(page)
                    .map_or(page + 1, |r| r.start + r.pages);
                let ahead = if page > 0 && st.dirty.contains_key(&(page - 1)) {
                    SEQ_AHEAD
                } else {
                    1
                };
                let mut hi = page;
                while hi < end
                    && hi - page < MAX_TWIN_OPEN
                    && (hi == page
                        || ((st.twin_prev.contains(&hi) || hi - page < ahead)
                            && st.present.contains(&hi)
                            && !st.dirty.contains_key(&hi)
                            && self.page_addr(hi)? == paddr + (hi - page) as usize * PAGE))
                {
                    // Present and protected: reading it cannot fault.
                    if let std::collections::hash_map::Entry::Vacant(e) = st.dirty.entry(hi) {
                        e.insert(Some(self.view_read(hi * PAGE as u64, PAGE)?));
                        bump(&self.stats.twins, 1);
                    }
                    hi += 1;
                }
                // Under the state lock: an invalidation handler that
                // drops a twinned page (note mode) protects it first and
                // must not find it opened after.
                self.uffd
                    .protect(paddr, (hi - page) as usize * PAGE, false)?;
                drop(st);
            }
        } else {
            bump(
                if f.write {
                    &self.stats.write_faults
                } else {
                    &self.stats.read_faults
                },
                1,
            );
            self.miss(page, f.write)?;
        }
        bump(&self.stats.fault_ns, t0.elapsed().as_nanos() as u64);
        Ok(())
    }

    /// A missing page: a home page is mapped here, any other fetched;
    /// `write` (a store faulted): installed writable with its twin where
    /// stores are trapped.
    fn miss(&self, page: u64, write: bool) -> Result<(), Error> {
        if self.map_own(page)? {
            self.uffd.wake(self.page_addr(page)?, PAGE)?;
            Ok(())
        } else {
            self.fetch_install(page, write)
        }
    }

    /// UDSM: makes the absent pages of `[off, off+len)` present, each as
    /// a missing fault would (`Dsm::fetch`); the pages made present.
    pub(crate) fn fetch_span(&self, off: u64, len: u64, _write: bool) -> Result<u64, Error> {
        let Some(map) = &self.presence else {
            return Ok(0);
        };
        if len == 0 {
            return Ok(0);
        }
        let t0 = Instant::now();
        let mut n = 0;
        for page in page_of(off)..=page_of(off + len - 1) {
            if !map.get(page) {
                // Note mode only: a store needs the page, never a twin.
                self.miss(page, false)?;
                n += 1;
            }
        }
        bump(&self.stats.fetches, n);
        bump(&self.stats.fault_ns, t0.elapsed().as_nanos() as u64);
        Ok(n)
    }

    /// Installs `chunk` as page `p` (at `paddr`), write-protected when
    /// `wp`; `Ok(false)`: already present. UDSM: copied into the view,
    /// then marked in the presence map.
    fn install(&self, p: u64, paddr: usize, chunk: &[u8], wp: bool) -> Result<bool, Error> {
        match &self.presence {
            None => Ok(self.uffd.copy(paddr, chunk, wp)?),
            Some(map) => {
                if map.get(p) {
                    return Ok(false);
                }
                self.view_write(p * PAGE as u64, chunk)?;
                map.set(p, true);
                Ok(true)
            }
        }
    }

    /// Fetches `page` (and prefetch pages) from the home and installs it.
    /// With `write` where stores are trapped (trap mode, `guards`), the
    /// page is installed writable and its twin kept.
    fn fetch_install(&self, page: u64, write: bool) -> Result<(), Error> {
        let last = (self.view.len() / PAGE) as u64;
        let home = self.home_of(page)?;
        let proto = self.proto_of(page)?;
        let guard = self.guards(proto);
        let keep = self.keeps(proto);
        let trapped = self.traps_at(page);
        let twin = write && (trapped || guard);
        let tracked =
            proto == Protocol::Update || (proto == Protocol::Invalidate && self.size <= SC_MAX);
        // Prefetch: following pages of the same home, not present, within
        // the same allocation: `prefetch` of them, or more in a sequential
        // pass (read-ahead: the third fault in a row that starts where
        // the last fetch ended fetches 2 pages, then 4, ... up to
        // MAX_AHEAD), so reading a remote array costs a few round trips
        // instead of one a page.
        let want = {
            let mut st = lock(&self.state);
            st.ra_count = if page == st.ra_end {
                st.ra_count + 1
            } else {
                0
            };
            let ahead = match st.ra_count {
                0 | 1 => 1,
                c => 1u64 << (c - 1).min(MAX_AHEAD.trailing_zeros()),
            };
            ahead.max(self.cfg.prefetch as u64 + 1)
        };
        let mut n = 1u64;
        let r_end = self
            .find_range(page)
            .map_or(page + 1, |r| r.start + r.pages);
        while n < want
            && page + n < r_end.min(last)
            && !lock(&self.state).present.contains(&(page + n))
            // A home page mapped here is another mapping, not registered
            // for faults: installing into it fails.
            && !self.is_mapped(page + n)
            && self.home_of(page + n)? == home
        {
            n += 1;
        }
        {
            let mut st = lock(&self.state);
            st.ra_end = page + n;
            // Read again after an acquire dropped it: fetched again at
            // the next acquire that drops it.
            // Only lazy copies are fetched again at acquires. The whole
            // run: a hot page between cold ones would cut read-ahead runs.
            if proto.lazy() {
                for p in page..page + n {
                    if st.dropped.remove(&p) {
                        st.hot_again(p);
                    }
                }
            }
        }
        let sc = proto == Protocol::Invalidate && tracked && self.size > 1;
        // Sequential consistency at a home elsewhere: the holder bits, a
        // look at the busy bits and the READ leave together and the home
        // applies them in that order, one round trip (three in turn
        // before) when no writer holds the pages.
        let remote_sc = sc && home != self.rank;
        let mut registration = None;
        if tracked {
            // Before reading the pages: updates (invalidations) the home
            // (a writer) applies after this reach this task; earlier ones
            // are in the data.
            if remote_sc {
                registration = Some(self.register_send(page, n, home)?);
            } else {
                self.register_run(page, n, home)?;
            }
        }
        // Copy marks: the home of a lazy page notices (and, in trap mode,
        // write-protects) only pages some task copied.
        let mut marks = if proto.lazy() && home != self.rank && self.size > 1 {
            Some(self.mark_copies(page, n, home)?)
        } else {
            None
        };
        let mut waits = 0u32;
        loop {
            let epoch = self.epoch.load(Ordering::Acquire);
            // Registered before this look: a writer that takes the page
            // after it sees our bit and invalidates (the epoch then sends
            // us round again).
            let looks = if remote_sc {
                Some(self.look_send(page, n, home))
            } else {
                if sc {
                    self.wait_not_busy_run(page, n, home)?;
                }
                None
            };
            let off = page * PAGE as u64;
            let len = n as usize * PAGE;
            let read = (home != self.rank).then(|| {
                let at = self
                    .homes
                    .get(home as usize)
                    .ok_or(Error::Invalid("no such home"))?
                    .at(off);
                Ok::<_, Error>(self.task.read(at, len, Options::default())?)
            });
            // Recorded whatever became of the looks and the READ: a bit
            // sent twice would carry into the next task's.
            if let Some(r) = registration.take() {
                self.register_done(r)?;
            }
            let looks = looks.transpose()?;
            let data = match read {
                None => self.home_read(off, len)?,
                Some(r) => {
                    bump(&self.stats.fetch_trips, 1);
                    r?.wait_data()?
                }
            };
            if let Some(looks) = looks {
                if self.looks_busy(looks, &mut waits)? {
                    // A writer held a page: the data may be its half-done
                    // write; look (and read) again.
                    continue;
                }
            }
            if data.len() != len {
                return Err(Error::Invalid("short read from home"));
            }
            // Applied before the READ (issue order); their status now.
            if let Some(m) = marks.take() {
                self.marks_done(m)?;
            }
            let mut st = lock(&self.state);
            if self.epoch.load(Ordering::Acquire) != epoch {
                // An invalidation raced the fetch: the data may be older
                // than what the invalidation asked for.
                continue;
            }
            bump(&self.stats.pages_fetched, 1);
            let wp = trapped || guard;
            for i in 0..n {
                let p = page + i;
                let chunk = &data[i as usize * PAGE..(i as usize + 1) * PAGE];
                if i > 0 && st.present.contains(&p) {
                    continue;
                }
                let paddr = self.page_addr(p)?;
                let patched = self.window.get().and_then(|w| w.patch(p, chunk));
                let chunk = patched.as_deref().unwrap_or(chunk);
                // This task's stores not yet noted when another writer
                // dropped its copy go over the new bytes; the page, with
                // the bytes fetched as its twin, is being written.
                let mut saved = if guard { st.saved.remove(&p) } else { None };
                let mut over = None;
                if let Some((t, cur)) = &saved {
                    let mut c = chunk.to_vec();
                    lay_over(&mut c, cur, t);
                    over = Some(c);
                }
                if keep {
                    // UDSM: the bytes stayed in the view (a handler's drop
                    // keeps them) and the application thread, which
                    // stores there, is the one fetching.
                    if let Some(t) = st.kept.get(&p) {
                        let cur = self.view_read(p * PAGE as u64, PAGE)?;
                        let mut c = chunk.to_vec();
                        lay_over(&mut c, &cur, t);
                        over = Some(c);
                    }
                }
                let dirty_now = (twin && i == 0) || saved.is_some();
                let install_wp = wp && !dirty_now;
                let fresh = self.install(p, paddr, over.as_deref().unwrap_or(chunk), install_wp)?;
                if !fresh {
                    // Present already: its bytes stand.
                    if let Some(sv) = saved.take() {
                        st.saved.insert(p, sv);
                    }
                } else if keep {
                    st.kept.insert(p, chunk.to_vec());
                }
                if i == 0 && !fresh {
                    self.uffd.wake(paddr, PAGE)?;
                }
                if i > 0 && fresh {
                    bump(&self.stats.pages_fetched, 1);
                    bump(&self.stats.pages_prefetched, 1);
                }
                st.present.insert(p);
                if proto == Protocol::HomeOnly {
                    st.transient.insert(p);
                }
                // A page another thread installed meanwhile keeps its
                // own record: its bytes may be older than `chunk`, so a
                // twin of `chunk` would send the difference as this
                // task's writes (a store there faults again if needed).
                if (i == 0 && twin && fresh) || (fresh && saved.is_some()) {
                    st.dirty.entry(p).or_insert_with(|| {
                        bump(&self.stats.twins, 1);
                        Some(chunk.to_vec())
                    });
                } else if fresh {
                    // A page of a diffed range (note mode): its bytes as
                    // installed are its twin.
                    self.twin_installed(&mut st, p, chunk);
                }
            }
            return Ok(());
        }
    }
}

impl Shared {
    /// Installs pages their homes pushed with their barrier arrival
    /// records (`(page, home, index)`, see `split_pushed`); returns those
    /// not installed that way (a copy not marked at its home, or a home
    /// that is not the page's), for [`Shared::refresh`] to READ.
    pub(crate) fn install_pushed(
        &self,
        arrivals: &[Option<Arrival>],
        pushed: Vec<(u64, u32, usize)>,
    ) -> Result<Vec<u64>, Error> {
        let mut rest = Vec::new();
        let wp = self.traps();
        for (p, home, k) in pushed {
            let Some(a) = arrivals.get(home as usize).and_then(Option::as_ref) else {
                rest.push(p);
                continue;
            };
            // Its home, asked before the state lock (it may look at the
            // allocations).
            if self.home_of(p)? != home {
                self.bad_message(home, "pushed page");
                rest.push(p);
                continue;
            }
            let data = self.pushed_page(home, a.episode, k)?;
            let mut st = lock(&self.state);
            // Marked at its home (a protocol switch clears the marks), so
            // the home notices its next writes.
            if st.present.contains(&p) || !st.registered.contains(&p) {
                rest.push(p);
                continue;
            }
            if self.install(p, self.page_addr(p)?, &data, wp)? {
                st.present.insert(p);
                self.twin_installed(&mut st, p, &data);
                bump(&self.stats.pages_fetched, 1);
                bump(&self.stats.pages_refreshed, 1);
            }
        }
        Ok(rest)
    }

    /// Fetches `pages` (just dropped at an acquire, of lazy ranges, not
    /// present, sorted or not) again from their homes, every READ at once,
    /// and installs them, so the reads that follow do not fault. Pages
    /// installed meanwhile by a fault are left as they are; after an
    /// invalidation meanwhile nothing is installed (the faults fetch).
    pub(crate) fn refresh(&self, mut pages: Vec<u64>) -> Result<(), Error> {
        if pages.is_empty() {
            return Ok(());
        }
        pages.sort_unstable();
        pages.dedup();
        let epoch = self.epoch.load(Ordering::Acquire);
        let mut asks = Vec::new();
        let mut i = 0;
        while i < pages.len() {
            let home = self.home_of(pages[i])?;
            let mut j = i + 1;
            while j < pages.len()
                && j - i < MAX_AHEAD as usize
                && pages[j] == pages[j - 1] + 1
                && self.home_of(pages[j])? == home
            {
                j += 1;
            }
            let (first, n) = (pages[i], (j - i) as u64);
            let off = first * PAGE as u64;
            let len = n as usize * PAGE;
            let read = if home == self.rank {
                None
            } else {
                // Marked before: a copy dropped by a notice was fetched.
                // A protocol switch since cleared the marks: mark again.
                let marks = self.mark_copies(first, n, home)?;
                let at = self
                    .homes
                    .get(home as usize)
                    .ok_or(Error::Invalid("no such home"))?
                    .at(off);
                bump(&self.stats.sync_requests, 1);
                Some((marks, self.task.read(at, len, Options::default())?))
            };
            asks.push((first, n, read));
            i = j;
        }
        let wp = self.traps();
        for (first, n, read) in asks {
            let off = first * PAGE as u64;
            let len = n as usize * PAGE;
            let data = match read {
                Some((marks, r)) => {
                    let d = r.wait_data()?;
                    self.marks_done(marks)?;
                    d
                }
                None => self.home_read(off, len)?,
            };
            if data.len() != len {
                return Err(Error::Invalid("short read from home"));
            }
            let mut st = lock(&self.state);
            if self.epoch.load(Ordering::Acquire) != epoch {
                continue;
            }
            for k in 0..n {
                let p = first + k;
                if st.present.contains(&p) {
                    continue;
                }
                let chunk = &data[k as usize * PAGE..(k as usize + 1) * PAGE];
                if self.install(p, self.page_addr(p)?, chunk, wp)? {
                    st.present.insert(p);
                    self.twin_installed(&mut st, p, chunk);
                    bump(&self.stats.pages_fetched, 1);
                    bump(&self.stats.pages_refreshed, 1);
                }
            }
        }
        Ok(())
    }

    /// Whether stores are trapped: in trap mode with more than one task.
    /// A task alone keeps its copies writable (nobody else reads the
    /// homes; a dropped page is written home first, see `discard`), so a
    /// program that synchronizes often does not pay a write fault per
    /// page and release.
    pub(crate) fn traps(&self) -> bool {
        self.cfg.writes == WriteMode::Trap && self.size > 1
    }

    /// Whether stores to `page` are trapped: [`Shared::traps`], or a page
    /// of the adopted window with more than one task. In note mode the
    /// window is trapped too: no compiler notes stores to globals (and
    /// libc writes them), and adoption there needs write-protect faults.
    pub(crate) fn traps_at(&self, page: u64) -> bool {
        self.traps() || self.traps_window(page)
    }

    /// A page of the adopted window, with more than one task.
    pub(crate) fn traps_window(&self, page: u64) -> bool {
        self.size > 1
            && self
                .window
                .get()
                .is_some_and(|w| w.holds(page * PAGE as u64))
    }

    /// A task alone: its copies hold its stores, not yet home (neither
    /// trapped nor noted).
    pub(crate) fn solo(&self) -> bool {
        self.size == 1
    }
}

/// The fault-handling thread: resolves faults until told to stop. A fault
/// it cannot resolve leaves the application thread blocked; the error is
/// printed and the job's timeout ends it.
pub(crate) fn fault_loop(s: Arc<Shared>, stop: std::os::fd::RawFd) {
    loop {
        match sys::poll2(s.uffd.fd(), stop, 1000) {
            Ok((_, true)) => return,
            Ok((true, _)) => {}
            Ok(_) => continue,
            Err(e) => {
                eprintln!("sss-dsm: poll: {e}");
                return;
            }
        }
        loop {
            match s.uffd.next() {
                Ok(Some(f)) => {
                    if let Err(e) = s.handle_fault(f) {
                        bump(&s.stats.fault_errors, 1);
                        eprintln!("sss-dsm: fault at {:#x}: {e}", f.addr);
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    eprintln!("sss-dsm: userfaultfd: {e}");
                    return;
                }
            }
        }
    }
}
