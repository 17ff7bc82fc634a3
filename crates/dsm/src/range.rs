//! Allocations: [`Placement`], the range descriptors at rank 0 and this
//! task's cache of them ([`Placements`]), the home of each page, and the
//! collective protocol switch of a range.

use crate::layout as L;
use crate::msg::{Range, RangeError};
use crate::protocol::directory::MAX_HOLDERS;
use crate::protocol::Protocol;
use crate::shared::{lock, page_of, Shared};
use crate::stats::bump;
use crate::sys::PAGE;
use crate::Error;
use sss_mbcf::Options;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::Ordering;

#[cfg(doc)]
use crate::Dsm;

/// Where the pages of an allocation live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// Contiguous equal chunks, one per task, in rank order.
    Block,
    /// Blocks of this many pages dealt round-robin over the tasks.
    Cyclic(u32),
    /// The first task to touch a page becomes its home.
    FirstTouch,
    /// Every page at this rank.
    Explicit(u32),
}

#[derive(Default)]
pub(crate) struct Placements {
    /// Known ranges by first page.
    pub(crate) ranges: BTreeMap<u64, Range>,
    /// Descriptors read from rank 0 so far.
    pub(crate) known: u64,
    /// First-touch homes learnt.
    pub(crate) ft: HashMap<u64, u32>,
    /// A range with write notices (ulrc, home_update) is known here:
    /// acquires must read other tasks' notices.
    pub(crate) lazy: bool,
    /// A range whose notes cannot wait for the release (any protocol but
    /// ulrc) is known here: [`NotePolicy::Log`] is off.
    pub(crate) eager: bool,
}

/// What a caller may do with notes of plain stores between calls into
/// the heap ([`Dsm::note_policy`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u64)]
pub enum NotePolicy {
    /// Every note goes to [`Dsm::note_write`] at once.
    Call = 0,
    /// Notes may be logged and handed over with [`Dsm::note_writes`]
    /// before the next other call: every range known here is ulrc, whose
    /// notes wait for the release anyway.
    Log = 1,
    /// Notes are not needed: a task alone (its view is every page's only
    /// copy) or trap mode (write protection records stores).
    Drop = 2,
}

impl Shared {
    pub(crate) fn malloc(
        &self,
        len: usize,
        placement: Placement,
        protocol: Protocol,
    ) -> Result<u64, Error> {
        if protocol == Protocol::Update && self.size > MAX_HOLDERS {
            return Err(Error::Invalid(
                "the update protocol supports at most 64 tasks",
            ));
        }
        if let Placement::Explicit(r) = placement {
            if r >= self.size {
                return Err(Error::Invalid("explicit home outside the job"));
            }
        }
        let pages = len.max(1).div_ceil(PAGE) as u64;
        let heap = self.view.len() as u64;
        if pages > heap / PAGE as u64 {
            return Err(Error::OutOfMemory("request larger than the heap"));
        }
        let off = self.take(L::HEAP_BUMP, pages * PAGE as u64, heap, "heap exhausted")?;
        let ft = if placement == Placement::FirstTouch {
            let full = "first-touch directory full";
            self.take(L::FT_BUMP, pages, L::FT_WORDS as u64, full)?
        } else {
            0
        };
        let idx = self.take(
            L::RANGE_COUNT,
            1,
            L::MAX_RANGES as u64,
            "too many allocations",
        )?;
        let r = Range {
            start: page_of(off),
            pages,
            placement,
            ft,
            protocol,
            idx,
        };
        let at = self.meta_at(0, L::RANGES + idx as usize * L::RANGE_BYTES)?;
        // Status return: the descriptor is in place before the address is
        // handed out, so any task that learns it can find its placement.
        self.task
            .write(at, &r.encode(), Options::status())?
            .wait()?;
        if self.learn(&mut lock(&self.place), r) {
            self.notes_eager();
        }
        Ok(off)
    }

    /// Takes `n` from the counter at `word` of rank 0's metadata, which
    /// never passes `limit`: a request that does not fit takes nothing
    /// (the heap stays usable) and fails with `full`.
    fn take(&self, word: usize, n: u64, limit: u64, full: &'static str) -> Result<u64, Error> {
        let at = self.meta_at(0, word)?;
        let mut old = self.fetch_add(at, 0)?;
        loop {
            let new = old
                .checked_add(n)
                .filter(|&e| e <= limit)
                .ok_or(Error::OutOfMemory(full))?;
            let seen = self
                .task
                .cas(at, old, new, Options::default())?
                .wait_value()?;
            if seen == old {
                return Ok(old);
            }
            old = seen;
        }
    }

    /// Reads descriptors rank 0 holds that this task has not seen.
    fn refresh_ranges(&self) -> Result<(), Error> {
        let count = self.fetch_add(self.meta_at(0, L::RANGE_COUNT)?, 0)?;
        let known = lock(&self.place).known;
        let count = count.min(L::MAX_RANGES as u64);
        if count <= known {
            return Ok(());
        }
        let at = self.meta_at(0, L::RANGES + known as usize * L::RANGE_BYTES)?;
        let n = (count - known) as usize;
        let data = self
            .task
            .read(at, n * L::RANGE_BYTES, Options::default())?
            .wait_data()?;
        let mut p = lock(&self.place);
        let mut eager = false;
        let mut done = known;
        for c in data.chunks_exact(L::RANGE_BYTES) {
            // A descriptor still being written ends what we take this time.
            let r = match Range::decode(c, done, self.heap_pages(), self.size) {
                Ok(r) => r,
                Err(RangeError::Pending) => break,
                Err(RangeError::Invalid) => {
                    self.bad_message(0, "allocation descriptor");
                    break;
                }
            };
            eager |= self.learn(&mut p, r);
            done += 1;
        }
        p.known = p.known.max(done);
        drop(p);
        if eager {
            self.notes_eager();
        }
        Ok(())
    }

    /// Records a range now known here; true when notes must now reach
    /// the heap at once (the caller then calls `notes_eager`, with the
    /// placements unlocked).
    fn learn(&self, p: &mut Placements, r: Range) -> bool {
        p.lazy |= r.protocol.lazy();
        p.ranges.insert(r.start, r);
        if r.protocol != Protocol::Ulrc {
            p.eager = true;
            return true;
        }
        false
    }

    /// Notes must reach the heap at once from now on: tells the caller's
    /// note log ([`Dsm::watch_notes`]). Called from any thread, the fault
    /// thread too, so the word must never lie in memory that can fault
    /// (libsss keeps it out of the program's copy of the log); and, as a
    /// second guard, never with a lock of the heap held.
    fn notes_eager(&self) {
        if !self.notes_needed() {
            return;
        }
        if let Some(w) = self.note_mode.get() {
            w.store(NotePolicy::Call as u64, Ordering::Release);
        }
    }

    /// Whether notes do anything: not for a task alone, nor in trap mode.
    fn notes_needed(&self) -> bool {
        self.size > 1 && self.cfg.writes == crate::WriteMode::Note
    }

    /// See [`Dsm::note_policy`].
    pub(crate) fn note_policy(&self) -> NotePolicy {
        if !self.notes_needed() {
            NotePolicy::Drop
        } else if !self.cfg.combine || lock(&self.place).eager {
            NotePolicy::Call
        } else {
            NotePolicy::Log
        }
    }

    pub(crate) fn find_range(&self, page: u64) -> Option<Range> {
        bump(&self.stats.range_lookups, 1);
        let p = lock(&self.place);
        let (_, r) = p.ranges.range(..=page).next_back()?;
        (page < r.start + r.pages).then_some(*r)
    }

    /// The allocation containing `page`, learning new ones from rank 0.
    pub(crate) fn range_of(&self, page: u64) -> Result<Option<Range>, Error> {
        if let Some(r) = self.find_range(page) {
            return Ok(Some(r));
        }
        self.refresh_ranges()?;
        Ok(self.find_range(page))
    }

    /// [`Shared::proto_of`] of each of `pages` (sorted, as a release
    /// has them): one lookup per allocation met, not one per page.
    pub(crate) fn protos_of(&self, pages: &[u64]) -> Result<Vec<Protocol>, Error> {
        let mut last: Option<Range> = None;
        let mut out = Vec::with_capacity(pages.len());
        for &p in pages {
            let r = match last {
                Some(r) if r.start <= p && p < r.start + r.pages => Some(r),
                _ => self.range_of(p)?,
            };
            out.push(r.map_or(self.cfg.protocol, |r| r.protocol));
            last = r;
        }
        Ok(out)
    }

    /// The protocol of `page` (the default for memory nobody allocated).
    pub(crate) fn proto_of(&self, page: u64) -> Result<Protocol, Error> {
        Ok(self
            .range_of(page)?
            .map_or(self.cfg.protocol, |r| r.protocol))
    }

    /// Cuts `[off, off+len)` where the allocation changes: pieces with
    /// their protocol.
    pub(crate) fn split_by_range(
        &self,
        off: u64,
        len: u64,
    ) -> Result<Vec<(u64, u64, Protocol)>, Error> {
        let end = off + len;
        let mut v = Vec::with_capacity(1);
        let mut at = off;
        while at < end {
            let (stop, proto) = match self.range_of(page_of(at))? {
                Some(r) => (((r.start + r.pages) * PAGE as u64).min(end), r.protocol),
                None => (end, self.cfg.protocol),
            };
            v.push((at, stop - at, proto));
            at = stop;
        }
        Ok(v)
    }

    /// The home of heap page `page` (claims it under first touch).
    pub(crate) fn home_of(&self, page: u64) -> Result<u32, Error> {
        let Some(r) = self.range_of(page)? else {
            // Memory nobody allocated: rank 0 serves zeros.
            return Ok(0);
        };
        let rel = page - r.start;
        let n = self.size as u64;
        Ok(match r.placement {
            Placement::Block => (rel / r.pages.div_ceil(n)) as u32,
            Placement::Cyclic(b) => ((rel / b as u64) % n) as u32,
            Placement::Explicit(k) => k,
            Placement::FirstTouch => {
                if let Some(h) = lock(&self.place).ft.get(&page) {
                    return Ok(*h);
                }
                let at = self.meta_at(0, L::FT + (r.ft + rel) as usize * 8)?;
                let old = self
                    .task
                    .cas(at, 0, self.rank as u64 + 1, Options::default())?
                    .wait_value()?;
                let h = if old == 0 { self.rank } else { old as u32 - 1 };
                lock(&self.place).ft.insert(page, h);
                h
            }
        })
    }

    /// Collective protocol switch (see [`Dsm::set_protocol`]).
    pub(crate) fn set_protocol(&self, addr: usize, protocol: Protocol) -> Result<(), Error> {
        let page = page_of(self.offset(addr, 1)?);
        let r = self.range_of(page)?;
        let ok = r.is_some() && (protocol != Protocol::Update || self.size <= MAX_HOLDERS);
        // Every task takes part in both barriers even when one fails.
        self.barrier()?;
        let r = match r {
            Some(r) if ok => r,
            Some(_) => {
                return Err(Error::Invalid(
                    "the update protocol supports at most 64 tasks",
                ))
            }
            None => return Err(Error::Invalid("address outside every allocation")),
        };
        // An error here must not leave the other tasks at the barrier
        // below: it is returned after it.
        let switched = (|| -> Result<(), Error> {
            let pages = r.start..r.start + r.pages;
            {
                let mut st = lock(&self.state);
                let mine: Vec<u64> = st
                    .present
                    .iter()
                    .copied()
                    .filter(|p| pages.contains(p))
                    .collect();
                self.discard(&mut st, &mine)?;
                st.registered.retain(|p| !pages.contains(p));
            }
            if self.traps() && matches!(protocol, Protocol::Update | Protocol::UpdateDirect) {
                self.unmap_own(pages.start, pages.end)?;
            }
            if self.traps() && !matches!(protocol, Protocol::Update | Protocol::UpdateDirect) {
                self.reprotect_own(pages.start, pages.end, self.copies_marked(protocol))?;
            }
            if r.protocol != Protocol::UpdateDirect && r.protocol != Protocol::HomeOnly {
                // Nobody holds a copy any more: clear the holder bits (copy
                // marks) of the pages homed here.
                for p in pages.clone() {
                    let home = match r.placement {
                        // Pages this task claimed are in its cache; asking
                        // home_of would claim the others.
                        Placement::FirstTouch => lock(&self.place).ft.get(&p).copied(),
                        _ => Some(self.home_of(p)?),
                    };
                    if home == Some(self.rank) {
                        self.dir_word(p)?.store(0, Ordering::SeqCst);
                    }
                }
            }
            {
                let mut pl = lock(&self.place);
                pl.lazy |= protocol.lazy();
                if let Some(x) = pl.ranges.get_mut(&r.start) {
                    x.protocol = protocol;
                }
                if protocol != Protocol::Ulrc {
                    pl.eager = true;
                }
            }
            if protocol != Protocol::Ulrc {
                self.notes_eager();
            }
            if self.rank == 0 {
                let at = self.meta_at(
                    0,
                    L::RANGES + r.idx as usize * L::RANGE_BYTES + L::RANGE_PROTOCOL,
                )?;
                self.task
                    .write(at, &protocol.code().to_le_bytes(), Options::status())?
                    .wait()?;
            }
            Ok(())
        })();
        let after = self.barrier();
        switched?;
        after
    }
}
