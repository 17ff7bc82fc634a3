//! Adopted memory: a program's global variables (its `.data` and `.bss`)
//! made a shared range. The pages are replaced by an anonymous mapping at
//! the same address, registered with the heap's userfaultfd, and stand
//! for heap offsets of an allocation homed at rank 0 with `Ulrc`: rank 0's
//! bytes at adoption are the home copy, and every task then faults pages
//! in and sends trapped diffs as for heap pages, in note mode too (stores
//! to globals are never noted). A few byte ranges (objects
//! the dynamic linker copied into the executable, such as `environ`) stay
//! each task's own: a fetched page gets this task's bytes there.

#![allow(unsafe_code)]

use crate::config::WriteMode;
use crate::protocol::Protocol;
use crate::range::Placement;
use crate::shared::{lock, page_of, Shared};
use crate::sys::{self, Adopted, PAGE};
use crate::Error;
use sss_mbcf::Options;
use std::sync::atomic::AtomicU8;
use std::sync::Mutex;

/// A static of the runtime's own, to tell whether a range to adopt holds
/// the runtime's state (see `Shared::adopt`).
static RUNTIME_PROBE: AtomicU8 = AtomicU8::new(0);

/// At most this many private ranges, each at most `MAX_KEEP_BYTES`
/// (libsss's note log, copied into a program that notes inline, is just
/// over 4 KiB).
pub(crate) const MAX_KEEP: usize = 256;
const MAX_KEEP_BYTES: usize = 64 << 10;
/// Pages fetched by one READ when the window is filled in at the end.
const FILL_PAGES: usize = 2048;

pub(crate) struct Window {
    pub(crate) map: Adopted,
    /// Heap offset of the first byte.
    pub(crate) off: u64,
    /// Private ranges: heap offset and this task's bytes.
    keep: Mutex<Vec<(u64, Vec<u8>)>>,
}

impl Window {
    /// Whether heap offset `off` is in the window.
    pub(crate) fn holds(&self, off: u64) -> bool {
        off >= self.off && off - self.off < self.map.len() as u64
    }

    /// `page` (heap page, `data` its bytes from the home) with this task's
    /// private bytes in place; None when it holds none.
    pub(crate) fn patch(&self, page: u64, data: &[u8]) -> Option<Vec<u8>> {
        self.overlay(page, data, |dst, _, kept, from| {
            dst.copy_from_slice(&kept[from..from + dst.len()]);
        })
    }

    /// `page`'s bytes `cur` with its private ranges' bytes taken from
    /// `twin`, so that a release's diff never sends them (they change
    /// often: libsss's note log); None when it holds none.
    pub(crate) fn unkept(&self, page: u64, cur: &[u8], twin: &[u8]) -> Option<Vec<u8>> {
        self.overlay(page, cur, |dst, at, _, _| {
            dst.copy_from_slice(&twin[at..at + dst.len()]);
        })
    }

    /// A copy of `base` (page `page`'s bytes) where `fill(span, at, kept,
    /// from)` wrote each span a private range covers (`at`: its offset
    /// in the page; `kept`: this task's bytes of the range, `from` the
    /// span's offset in them); None when the page holds no private range.
    fn overlay(
        &self,
        page: u64,
        base: &[u8],
        fill: impl Fn(&mut [u8], usize, &[u8], usize),
    ) -> Option<Vec<u8>> {
        let p0 = page * PAGE as u64;
        if !self.holds(p0) {
            return None;
        }
        let keep = lock(&self.keep);
        let mut out: Option<Vec<u8>> = None;
        for (o, bytes) in keep.iter() {
            if let Some((at, from, n)) = overlap(p0, base.len(), *o, bytes.len()) {
                let dst = &mut out.get_or_insert_with(|| base.to_vec())[at..at + n];
                fill(dst, at, bytes, from);
            }
        }
        out
    }

    /// Before `page` is dropped: keeps this task's private bytes from its
    /// current contents `data`.
    pub(crate) fn save(&self, page: u64, data: &[u8]) {
        let p0 = page * PAGE as u64;
        let mut keep = lock(&self.keep);
        for (o, bytes) in keep.iter_mut() {
            if let Some((at, from, n)) = overlap(p0, data.len(), *o, bytes.len()) {
                bytes[from..from + n].copy_from_slice(&data[at..at + n]);
            }
        }
    }
}

/// Where `[b, b+blen)` meets the page `[p0, p0+plen)`: offset in the
/// page, offset in b, length.
fn overlap(p0: u64, plen: usize, b: u64, blen: usize) -> Option<(usize, usize, usize)> {
    let lo = p0.max(b);
    let hi = (p0 + plen as u64).min(b + blen as u64);
    (lo < hi).then(|| ((lo - p0) as usize, (lo - b) as usize, (hi - lo) as usize))
}

impl Shared {
    /// Collective adoption (see `Dsm::adopt`).
    ///
    /// # Safety
    /// As `Dsm::adopt`.
    pub(crate) unsafe fn adopt(
        &self,
        addr: usize,
        len: usize,
        keep: &[(usize, usize)],
    ) -> Result<(), Error> {
        let end = addr.checked_add(len);
        // The runtime's own statics inside: libsss linked statically
        // into the program. Its threads would fault on their own state.
        let probe = &RUNTIME_PROBE as *const AtomicU8 as usize;
        let own = probe >= addr && end.is_some_and(|e| probe < e);
        let valid = !own
            && addr % PAGE == 0
            && len % PAGE == 0
            && len > 0
            && end.is_some()
            && keep.len() <= MAX_KEEP
            && keep.iter().all(|&(a, n)| {
                n <= MAX_KEEP_BYTES && a >= addr && a.checked_add(n).is_some_and(|e| Some(e) <= end)
            })
            && self.offset(addr, len).is_err()
            && self.window.get().is_none();
        let can = self.can_adopt();
        // Every task learns whether all agree, so all fail alike.
        let mut mine = vec![(valid && can) as u8];
        mine.extend((addr as u64).to_le_bytes());
        mine.extend((len as u64).to_le_bytes());
        let all = self.task.allgather(&mine)?;
        if all.iter().any(|v| v.first() != Some(&1)) {
            return Err(Error::Invalid(if own {
                "adopted memory holds the DSM runtime's own state (libsss linked \
                 statically into the program: link libsss.so)"
            } else if can {
                "adopted memory: not page-aligned, private ranges outside it, \
                 overlapping the heap, or adopted already (in some task)"
            } else {
                "adopting memory needs write-protect faults: trap mode, or \
                 note mode where userfaultfd has them (not UDSM)"
            }));
        }
        if all.iter().any(|v| v[1..] != mine[1..]) {
            return Err(Error::Invalid(
                "adopted memory is not at the same address in every task",
            ));
        }
        let off = self.malloc_all(len, Placement::Explicit(0), Protocol::Ulrc)?;
        // Learn the range now: acquires must read write notices.
        self.proto_of(page_of(off))?;
        if self.rank == 0 {
            // The home copy: rank 0's bytes; zero pages stay holes.
            for i in (0..len).step_by(PAGE) {
                // SAFETY: `[addr, addr+len)` is mapped and readable (the
                // caller's guarantee); plain bytes.
                let page = unsafe { sys::copy_out(addr + i, PAGE) };
                if page.iter().any(|&b| b != 0) {
                    self.home_write(off + i as u64, &page)?;
                }
            }
        }
        let saved = keep
            .iter()
            .map(|&(a, n)| {
                // SAFETY: inside `[addr, addr+len)` (checked above).
                (off + (a - addr) as u64, unsafe { sys::copy_out(a, n) })
            })
            .collect();
        // SAFETY: the caller guarantees nothing else touches the range
        // until this returns; what is needed of it was copied above.
        let map = unsafe { Adopted::replace(addr, len)? };
        let w = Window {
            map,
            off,
            keep: Mutex::new(saved),
        };
        if self.window.set(w).is_err() {
            return Err(Error::Invalid("memory adopted already"));
        }
        self.uffd.register(addr, len)?;
        // Nobody reads a page before rank 0's bytes are at the home.
        self.task.barrier()?;
        Ok(())
    }

    /// Collective `malloc_all_with` returning the heap offset.
    fn malloc_all(&self, len: usize, placement: Placement, proto: Protocol) -> Result<u64, Error> {
        let mine = if self.rank == 0 {
            match self.malloc(len, placement, proto) {
                Ok(off) => off.to_le_bytes().to_vec(),
                Err(e) => {
                    self.task.allgather(&[])?;
                    return Err(e);
                }
            }
        } else {
            Vec::new()
        };
        let all = self.task.allgather(&mine)?;
        all.first()
            .and_then(|b| <[u8; 8]>::try_from(b.as_slice()).ok())
            .map(u64::from_le_bytes)
            .ok_or(Error::OutOfMemory("no room in the heap for adopted memory"))
    }

    /// At the end: every page of the window not present here is fetched
    /// and installed, and write protection is cleared, so the program's
    /// globals stay whole once the fault thread stops (exit handlers read
    /// them). Call after a barrier, before peers leave.
    pub(crate) fn fill_window(&self) -> Result<(), Error> {
        let Some(w) = self.window.get() else {
            return Ok(());
        };
        let first = page_of(w.off);
        let pages = (w.map.len() / PAGE) as u64;
        let mut p = first;
        while p < first + pages {
            if lock(&self.state).present.contains(&p) {
                p += 1;
                continue;
            }
            let mut n = 1u64;
            while p + n < first + pages
                && n < FILL_PAGES as u64
                && !lock(&self.state).present.contains(&(p + n))
            {
                n += 1;
            }
            let off = p * PAGE as u64;
            let len = n as usize * PAGE;
            let data = if self.rank == 0 {
                self.home_read(off, len)?
            } else {
                let at = self
                    .homes
                    .first()
                    .ok_or(Error::Invalid("no such home"))?
                    .at(off);
                self.task.read(at, len, Options::default())?.wait_data()?
            };
            if data.len() != len {
                return Err(Error::Invalid("short read from home"));
            }
            let mut st = lock(&self.state);
            for i in 0..n {
                let q = p + i;
                let chunk = &data[i as usize * PAGE..(i as usize + 1) * PAGE];
                let patched = w.patch(q, chunk);
                let addr = self.page_addr(q)?;
                if !st.present.contains(&q) {
                    self.uffd
                        .copy(addr, patched.as_deref().unwrap_or(chunk), false)?;
                    st.present.insert(q);
                }
            }
            drop(st);
            p += n;
        }
        if self.cfg.writes == WriteMode::Trap || self.traps_window(first) {
            self.uffd.protect(w.map.base(), w.map.len(), false)?;
        }
        Ok(())
    }

    /// Whether memory can be adopted: its stores are trapped, in trap
    /// mode or, in note mode, by write-protect faults of the window
    /// alone (see [`Shared::traps_at`]).
    pub(crate) fn can_adopt(&self) -> bool {
        self.cfg.writes == WriteMode::Trap || (self.wp_all && !self.udsm())
    }
}
