//! `Invalidate`: a noted write takes its pages' busy bits, has every
//! other holder drop its copy (acknowledged), writes the home and frees
//! the pages; trapped writes drop other copies at release; the handler
//! that drops copies on request.

use super::directory::{BUSY, SC_MAX};
use crate::config::WriteMode;
use crate::layout as L;
use crate::msg;
use crate::protocol::Protocol;
use crate::shared::{lock, page_of, Shared};
use crate::sys::PAGE;
use crate::{Error, INVALIDATE_HANDLER};
use sss_mbcf::{Options, SignalContext};
use std::sync::atomic::Ordering;

impl Shared {
    /// Invalidate protocol: every other task drops its copies of `pages`
    /// before this returns.
    pub(super) fn invalidate_others(&self, pages: &[u64]) -> Result<(), Error> {
        if self.size == 1 || pages.is_empty() {
            return Ok(());
        }
        // With the holder directory (at most 63 tasks), only the tasks
        // that ever held a page hear of it; beyond, every task does.
        let mut per_rank: Vec<Vec<u64>> = vec![Vec::new(); self.size as usize];
        if self.size <= SC_MAX {
            // Pairs with the fence after a holder registers: the written
            // bytes are at the home (send_runs fenced them), so either its
            // READ sees them or this load sees its bit.
            std::sync::atomic::fence(Ordering::SeqCst);
            for &p in pages {
                let mask = self.holders(p)?;
                for (r, list) in per_rank.iter_mut().enumerate() {
                    if r as u32 != self.rank && mask & (1 << r) != 0 {
                        list.push(p);
                    }
                }
            }
        } else {
            for (r, list) in per_rank.iter_mut().enumerate() {
                if r as u32 != self.rank {
                    list.extend_from_slice(pages);
                }
            }
        }
        self.signal_invalidations(&per_rank)
    }

    /// Sends each task its list of pages to drop and waits for the acks.
    fn signal_invalidations(&self, per_rank: &[Vec<u64>]) -> Result<(), Error> {
        let mut sent = 0u64;
        for (r, list) in per_rank.iter().enumerate() {
            for chunk in list.chunks(128) {
                let payload: Vec<u8> = chunk.iter().flat_map(|p| p.to_le_bytes()).collect();
                self.task
                    .signal(r as u32, INVALIDATE_HANDLER, &payload, Options::default())?;
                sent += 1;
            }
        }
        if sent == 0 {
            return Ok(());
        }
        let want = self.acks_expected.fetch_add(sent, Ordering::AcqRel) + sent;
        self.task.wait_word(self.local_word(L::ACK), |v| v >= want);
        Ok(())
    }

    /// A noted write under `Invalidate`: takes the busy bit of every page
    /// written (in page order, so writers cannot deadlock), has every
    /// other holder drop its copy, writes the home, and frees the pages.
    /// No task can read the new value while another still holds the old
    /// one, and writers of a page are serialized: sequential consistency.
    pub(crate) fn write_sc(&self, off: u64, data: Vec<u8>) -> Result<(), Error> {
        let len = data.len() as u64;
        self.write_sc_with(off, len, Some(data))
    }

    /// [`Shared::write_sc`] of `len` bytes at `off` on pages homed here
    /// and mapped in the view: the stores are at their home already, so
    /// nothing is read back or copied (a stencil notes every row it
    /// computes, and those reads and copies were most of a note's cost).
    pub(crate) fn write_sc_mapped(&self, off: u64, len: u64) -> Result<(), Error> {
        self.write_sc_with(off, len, None)
    }

    fn write_sc_with(&self, off: u64, len: u64, data: Option<Vec<u8>>) -> Result<(), Error> {
        if len == 0 {
            return Ok(());
        }
        let first = page_of(off);
        let last = page_of(off + len - 1);
        if self.size == 1 || self.size > SC_MAX {
            let pages = match data {
                Some(d) => self.send_runs(vec![(off, d)])?,
                None => (first..=last).collect(),
            };
            return self.invalidate_others(&pages);
        }
        let mut taken = Vec::new();
        for p in first..=last {
            let home = self.home_of(p)?;
            let mask = self.dir_take(p, home)?;
            taken.push((p, home, mask));
        }
        let r = (|| {
            let mut per_rank: Vec<Vec<u64>> = vec![Vec::new(); self.size as usize];
            for &(p, _, mask) in &taken {
                for (r, list) in per_rank.iter_mut().enumerate() {
                    if r as u32 != self.rank && mask & (1 << r) != 0 {
                        list.push(p);
                    }
                }
            }
            self.signal_invalidations(&per_rank)?;
            match data {
                Some(d) => self.send_runs(vec![(off, d)]).map(|_| ()),
                None => Ok(()),
            }
        })();
        // Free the pages even after an error: a stuck bit would stop
        // every reader of them.
        for (p, home, _) in taken {
            self.dir_add(p, home, BUSY)?;
        }
        r
    }

    /// Handler of an eager invalidation (progress thread).
    pub(crate) fn on_invalidate(&self, ctx: &SignalContext<'_>, payload: &[u8]) {
        let Some(pages) = msg::parse_invalidation(payload, self.heap_pages()) else {
            self.bad_message(ctx.from, "invalidation");
            return;
        };
        {
            let mut st = lock(&self.state);
            let (busy, mut victims): (Vec<u64>, Vec<u64>) =
                pages.into_iter().partition(|p| st.dirty.contains_key(p));
            if self.traps() {
                // A page this task is writing keeps its copy until its
                // own release has sent the diff (dropping it now would
                // lose the writes), and is dropped then: the rest of it
                // is stale.
                st.stale.extend(busy);
            } else {
                // Note mode (copies write-protected until their first
                // store, `Shared::guards`): the page is protected again,
                // so this task's stores stop (a store now faults, and
                // the fault thread waits for the state lock held here),
                // then its bytes and twin are kept, and it is dropped as
                // the others: this task's next access reads the new
                // bytes, its stores not yet noted laid over them.
                for p in busy {
                    let Some(twin) = st.dirty.remove(&p).flatten() else {
                        victims.push(p);
                        continue;
                    };
                    let saved = self
                        .page_addr(p)
                        .and_then(|a| Ok(self.uffd.protect(a, PAGE, true)?))
                        // Present (dirty): reading it cannot fault.
                        .and_then(|()| self.view_read(p * PAGE as u64, PAGE));
                    match saved {
                        Ok(cur) => {
                            st.saved.insert(p, (twin, cur));
                            victims.push(p);
                        }
                        Err(e) => {
                            // Kept as trap mode keeps it (its release
                            // sends the diff): stale until then.
                            eprintln!("sss-dsm: invalidation of page {p}: {e}");
                            st.dirty.insert(p, Some(twin));
                            st.stale.insert(p);
                        }
                    }
                }
            }
            // UDSM: the bytes stay (see `discard_with`).
            let _ = self.discard_with(&mut st, &victims, !self.udsm());
            // A page being fetched right now is not present yet: the
            // fetch may have read the home before the writer's data
            // landed, so it must read again.
            self.epoch.fetch_add(1, Ordering::AcqRel);
        }
        if let Ok(at) = self.meta_at(ctx.from, L::ACK) {
            let _ = ctx.task.fetch_add(at, 1, Options::default());
        }
    }

    /// Whether copies of `proto`'s pages are installed write-protected in
    /// note mode: `Invalidate` with several tasks, where the kernel has
    /// write-protect faults (not UDSM). A copy's first store then keeps
    /// a twin, so an invalidation before the store is noted can keep it
    /// (`on_invalidate`).
    pub(crate) fn guards(&self, proto: Protocol) -> bool {
        proto == Protocol::Invalidate
            && self.cfg.writes == WriteMode::Note
            && self.size > 1
            && self.wp_all
            && !self.udsm()
    }

    /// UDSM's counterpart of [`Shared::guards`]: stores are not trapped,
    /// so every `Invalidate` copy keeps the bytes it was installed with
    /// (`State::kept`).
    pub(crate) fn keeps(&self, proto: Protocol) -> bool {
        proto == Protocol::Invalidate
            && self.cfg.writes == WriteMode::Note
            && self.size > 1
            && self.udsm()
    }

    /// A noted `Invalidate` write of `data` at `off` (read from this
    /// task's view, one range): its bytes go home now, so the twins of
    /// its pages take them, and neither a release diff nor a page fetched
    /// again carries them later (over a newer write of another task).
    pub(crate) fn noted_into_twins(&self, off: u64, data: &[u8]) {
        let mut st = lock(&self.state);
        if st.dirty.is_empty() && st.saved.is_empty() && st.kept.is_empty() {
            return;
        }
        let end = off + data.len() as u64;
        let mut at = off;
        while at < end {
            let p = page_of(at);
            let stop = ((p + 1) * PAGE as u64).min(end);
            let (lo, hi) = (
                (at - p * PAGE as u64) as usize,
                (stop - p * PAGE as u64) as usize,
            );
            let bytes = &data[(at - off) as usize..(stop - off) as usize];
            if let Some(Some(t)) = st.dirty.get_mut(&p) {
                t[lo..hi].copy_from_slice(bytes);
                st.noted_twinned.insert(p);
            }
            if let Some((t, cur)) = st.saved.get_mut(&p) {
                t[lo..hi].copy_from_slice(bytes);
                cur[lo..hi].copy_from_slice(bytes);
            }
            if let Some(t) = st.kept.get_mut(&p) {
                t[lo..hi].copy_from_slice(bytes);
            }
            at = stop;
        }
    }
}

/// Lays over `chunk` (a page fetched again) the bytes of `cur` that
/// differ from `twin`: this task's stores not yet noted when its copy
/// was dropped. Words are compared first.
pub(crate) fn lay_over(chunk: &mut [u8], cur: &[u8], twin: &[u8]) {
    for ((c, n), t) in chunk
        .chunks_exact_mut(8)
        .zip(cur.chunks_exact(8))
        .zip(twin.chunks_exact(8))
    {
        if n != t {
            for k in 0..8 {
                if n[k] != t[k] {
                    c[k] = n[k];
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::lay_over;

    #[test]
    fn lay_over_takes_only_changed_bytes() {
        let twin = vec![1u8; 32];
        let mut cur = twin.clone();
        cur[3] = 9;
        cur[16..24].copy_from_slice(&[7; 8]);
        let mut chunk = vec![5u8; 32];
        lay_over(&mut chunk, &cur, &twin);
        let mut want = vec![5u8; 32];
        want[3] = 9;
        want[16..24].copy_from_slice(&[7; 8]);
        assert_eq!(chunk, want);
    }
}
