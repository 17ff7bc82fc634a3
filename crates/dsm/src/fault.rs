//! Page faults: the fault thread's loop over userfaultfd, and resolving a
//! fault by fetching the page (and prefetch pages) from its home or, for a
//! write-protect fault, keeping a twin.

use crate::config::WriteMode;
use crate::protocol::directory::SC_MAX;
use crate::protocol::Protocol;
use crate::shared::{lock, page_of, Shared};
use crate::stats::bump;
use crate::sys::{self, PAGE};
use crate::Error;
use sss_mbcf::Options;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

impl Shared {
    /// Handles one fault from the fault thread.
    fn handle_fault(&self, f: sys::Fault) -> Result<(), Error> {
        let t0 = Instant::now();
        let page = page_of(self.offset(f.addr, 1)?);
        let paddr = self.page_addr(page)?;
        let trap = self.traps();
        if f.wp {
            bump(&self.stats.write_faults, 1);
            let mut st = lock(&self.state);
            if !st.present.contains(&page) {
                // Dropped meanwhile (reading it here would fault on this
                // very thread): let the writer retry as a missing fault.
                drop(st);
                self.uffd.wake(paddr, PAGE)?;
            } else {
                // Present and protected: reading it cannot fault.
                if let std::collections::hash_map::Entry::Vacant(e) = st.dirty.entry(page) {
                    e.insert(Some(self.view_read(page * PAGE as u64, PAGE)?));
                }
                drop(st);
                self.uffd.protect(paddr, PAGE, false)?;
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
            self.fetch_install(page, f.write && trap)?;
        }
        bump(&self.stats.fault_ns, t0.elapsed().as_nanos() as u64);
        Ok(())
    }

    /// Fetches `page` (and prefetch pages) from the home and installs it.
    /// With `twin`, the page is installed writable and its twin kept.
    fn fetch_install(&self, page: u64, twin: bool) -> Result<(), Error> {
        let last = (self.view.len() / PAGE) as u64;
        let home = self.home_of(page)?;
        let proto = self.proto_of(page)?;
        let tracked =
            proto == Protocol::Update || (proto == Protocol::Invalidate && self.size <= SC_MAX);
        if tracked {
            // Before reading the page: updates (invalidations) the home
            // (a writer) applies after this reach this task; earlier ones
            // are in the data.
            self.register(page, home)?;
        }
        // Prefetch: following pages of the same home, not present, within
        // the same allocation (not for pages in the holder directory: each
        // would need its own registration round trip first).
        let mut n = 1u64;
        if self.cfg.prefetch > 0 && !tracked {
            let r_end = self
                .find_range(page)
                .map_or(page + 1, |r| r.start + r.pages);
            while n <= self.cfg.prefetch as u64
                && page + n < r_end.min(last)
                && !lock(&self.state).present.contains(&(page + n))
                && self.home_of(page + n)? == home
            {
                n += 1;
            }
        }
        let sc = proto == Protocol::Invalidate && tracked && self.size > 1;
        loop {
            let epoch = self.epoch.load(Ordering::Acquire);
            if sc {
                // Registered before this look: a writer that takes the
                // page after it sees our bit and invalidates (the epoch
                // then sends us round again).
                self.wait_not_busy(page, home)?;
            }
            let off = page * PAGE as u64;
            let len = n as usize * PAGE;
            let data = if home == self.rank {
                self.home_read(off, len)?
            } else {
                let at = self
                    .homes
                    .get(home as usize)
                    .ok_or(Error::Invalid("no such home"))?
                    .at(off);
                self.task.read(at, len, Options::default())?.wait_data()?
            };
            if data.len() != len {
                return Err(Error::Invalid("short read from home"));
            }
            let mut st = lock(&self.state);
            if self.epoch.load(Ordering::Acquire) != epoch {
                // An invalidation raced the fetch: the data may be older
                // than what the invalidation asked for.
                continue;
            }
            bump(&self.stats.pages_fetched, 1);
            let wp = self.traps();
            for i in 0..n {
                let p = page + i;
                let chunk = &data[i as usize * PAGE..(i as usize + 1) * PAGE];
                if i > 0 && st.present.contains(&p) {
                    continue;
                }
                let install_wp = wp && !(twin && i == 0);
                let paddr = self.page_addr(p)?;
                let patched = self.window.get().and_then(|w| w.patch(p, chunk));
                let chunk = patched.as_deref().unwrap_or(chunk);
                let fresh = self.uffd.copy(paddr, chunk, install_wp)?;
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
                if i == 0 && twin {
                    st.dirty.entry(p).or_insert_with(|| Some(chunk.to_vec()));
                }
            }
            return Ok(());
        }
    }
}

impl Shared {
    /// Whether stores are trapped: in trap mode with more than one task.
    /// A task alone keeps its copies writable (nobody else reads the
    /// homes; a dropped page is written home first, see `discard`), so a
    /// program that synchronizes often does not pay a write fault per
    /// page and release.
    pub(crate) fn traps(&self) -> bool {
        self.cfg.writes == WriteMode::Trap && self.size > 1
    }

    /// A task alone in trap mode: its copies hold its stores, not yet home.
    pub(crate) fn solo_trap(&self) -> bool {
        self.cfg.writes == WriteMode::Trap && self.size == 1
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
