//! Lazy release consistency (`Ulrc`): at a release, this interval's noted
//! ranges and diffs against twins become runs, merged and sent to their
//! homes (one MBCF WRITE per contiguous run with one home, or diff
//! messages for a page homed elsewhere cut into many runs). Write notices
//! are published and pulled in the release and acquire of `protocol`.

use crate::layout as L;
use crate::msg::{encode_diffs, Diff, UPDATE_HEADER};
use crate::shared::{lock, page_of, Shared};
use crate::stats::bump;
use crate::sys::PAGE;
use crate::{Error, UPDATE_HANDLER};
use sss_mbcf::Options;
use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::Ordering;

impl Shared {
    /// Turns this interval's writes into runs with their bytes (noted
    /// ranges, diffs). Each dirty page is protected, copied and leaves
    /// `dirty` under the state lock: an update or invalidation handler
    /// sees it either still dirty (and updates the twin) or clean and
    /// protected (and may drop it: the bytes to send are copied already).
    /// Trapped pages cut into many runs come as [`PageDiff`]s instead.
    /// Also returns the pages of this task's home mapped here that were
    /// written (noted or trapped): their bytes are home already.
    #[allow(clippy::type_complexity)]
    pub(super) fn collect_runs(&self) -> Result<(Vec<Run>, Vec<PageDiff>, Vec<u64>), Error> {
        // Before anything is taken: an error here loses no record.
        let fresh = self.newly_copied()?;
        let noted = std::mem::take(&mut lock(&self.out).noted);
        // Note mode: the twins are those of diffed ranges, whose stores
        // not noted write whole words (see `diffed_runs`).
        let exact = !self.traps();
        // Merged only if a diffed range needs them (sorting hundreds of
        // noted rows a release otherwise).
        let mut noted_iv: Option<Vec<(u64, u64)>> = None;
        let mut own = self.take_own_dirty()?;
        own.extend(fresh);
        // Diffed ranges (note mode): mapped home pages that changed.
        own.extend(self.take_own_twins()?);
        let mut runs: Vec<Run> = Vec::with_capacity(noted.len());
        let mut page_diffs = Vec::new();
        let mapped = self.spans_mapped(&noted);
        for (&(o, l), mapped) in noted.iter().zip(mapped) {
            if mapped {
                own.extend(page_of(o)..=page_of(o + l - 1));
            } else {
                runs.push((o, self.view_read(o, l as usize)?));
            }
        }
        let (mut pages, noted_twinned) = {
            let mut st = lock(&self.state);
            let mut pages: Vec<u64> = st.dirty.keys().copied().collect();
            // Intervals with notes only: a barrier releases twice (its
            // acquire again, with nothing new).
            let now = std::mem::take(&mut st.noted_twinned);
            if !now.is_empty() {
                st.noted_open = now.union(&st.noted_twinned_prev).copied().collect();
                st.noted_twinned_prev = now;
            }
            if std::mem::take(&mut st.just_released) && !self.traps() {
                // Nothing stored since the barrier's release diffed them.
                let guarded = |p: u64| self.find_range(p).is_some_and(|r| self.guards(r.protocol));
                pages.retain(|&p| !(matches!(st.dirty.get(&p), Some(Some(_))) && guarded(p)));
            }
            (pages, st.noted_open.clone())
        };
        pages.sort_unstable();
        if !pages.is_empty() {
            let mut st = lock(&self.state);
            let older = std::mem::replace(&mut st.twin_prev1, pages.iter().copied().collect());
            st.twin_prev = older.union(&st.twin_prev1).copied().collect();
        }
        // Note mode: pages whose twins a write-protect fault took
        // (`guards`, the adopted window), diffed and protected again as
        // in trap mode.
        let guarded: Vec<bool> = if self.traps() {
            vec![true; pages.len()]
        } else {
            pages
                .iter()
                .map(|&p| {
                    self.traps_window(p)
                        || self.find_range(p).is_some_and(|r| self.guards(r.protocol))
                })
                .collect()
        };
        // Runs of diffed ranges (all `Ulrc`: one protocol, so they may
        // join across pages).
        let mut diffed: Vec<Run> = Vec::new();
        let mut i = 0;
        while i < pages.len() {
            // A run of contiguous pages, protected in one ioctl.
            let mut j = i + 1;
            while j < pages.len()
                && pages[j] == pages[j - 1] + 1
                && j - i < 64
                && guarded[j] == guarded[i]
                && self.traps_window(pages[j]) == self.traps_window(pages[i])
                && self.page_addr(pages[j])? == self.page_addr(pages[j - 1])? + PAGE
            {
                j += 1;
            }
            let (first, n) = (pages[i], j - i);
            let trapped = guarded[i];
            if trapped && !self.traps_at(first) {
                self.collect_guarded(&pages[i..j], &noted_twinned, &mut runs, &mut page_diffs)?;
                i = j;
                continue;
            }
            let (cur, twins) = {
                let mut st = lock(&self.state);
                let mut twins = Vec::with_capacity(n);
                for p in &pages[i..j] {
                    twins.push(st.dirty.remove(p).flatten());
                }
                // Protect first so the next write of a page starts a new
                // twin; this thread is the only writer, so nothing is
                // missed. Dirty pages are present: the copy cannot fault.
                // In note mode (twins of diffed ranges) nothing is
                // protected: the next stores are noted.
                if twins.iter().all(Option::is_some) {
                    if trapped {
                        self.uffd.protect(self.page_addr(first)?, n * PAGE, true)?;
                    }
                    (self.view_read(first * PAGE as u64, n * PAGE)?, twins)
                } else {
                    // Note mode: an invalidation dropped some of them
                    // since they were listed (their bytes are `saved`);
                    // the others one by one (a missing page would fault
                    // on the state lock held here).
                    let mut cur = vec![0u8; n * PAGE];
                    for (k, t) in twins.iter().enumerate() {
                        if t.is_some() {
                            let p = first + k as u64;
                            if trapped {
                                self.uffd.protect(self.page_addr(p)?, PAGE, true)?;
                            }
                            cur[k * PAGE..(k + 1) * PAGE]
                                .copy_from_slice(&self.view_read(p * PAGE as u64, PAGE)?);
                        }
                    }
                    (cur, twins)
                }
            };
            for (k, twin) in twins.into_iter().enumerate() {
                let Some(twin) = twin else { continue };
                bump(&self.stats.diffs, 1);
                let cur = &cur[k * PAGE..(k + 1) * PAGE];
                let unkept = self
                    .window
                    .get()
                    .and_then(|w| w.unkept(first + k as u64, cur, &twin));
                let cur = unkept.as_deref().unwrap_or(cur);
                let off0 = (first + k as u64) * PAGE as u64;
                // Trap mode: exactly the bytes that changed (words
                // compared first). Diffed ranges (note mode): whole
                // words, less those only notes changed.
                if exact && !trapped {
                    let noted_iv = noted_iv.get_or_insert_with(|| merged(&noted));
                    for (lo, hi) in diffed_runs(cur, &twin, off0, noted_iv) {
                        let at = off0 + lo as u64;
                        if self.cfg.combine {
                            push_run(&mut diffed, at, &cur[lo..hi]);
                        } else {
                            diffed.push((at, cur[lo..hi].to_vec()));
                        }
                    }
                } else {
                    exact_diff(first + k as u64, cur, &twin, &mut runs, &mut page_diffs);
                }
            }
            i = j;
        }
        runs.append(&mut diffed);
        // Note mode: copies invalidated under stores not yet noted, not
        // fetched again (taken after the dirty pages: one dropped while
        // they were collected is here).
        let saved = std::mem::take(&mut lock(&self.state).saved);
        for (p, (twin, cur)) in saved {
            bump(&self.stats.diffs, 1);
            exact_diff(p, &cur, &twin, &mut runs, &mut page_diffs);
        }
        Ok((runs, page_diffs, own))
    }

    /// Release, note mode: the `Invalidate` copies among `pages` twinned
    /// by a write-protect fault (`guards`) send the bytes that changed
    /// from their twins (stores not noted). Those noted this interval or
    /// the one before (`noted`) stay writable and twinned, their twin now
    /// their bytes (their next stores would fault again, a page each,
    /// every interval); the others are protected again and forgotten. Each
    /// page under the state lock: an invalidation handler finds it
    /// either still twinned or gone.
    fn collect_guarded(
        &self,
        pages: &[u64],
        noted: &HashSet<u64>,
        runs: &mut Vec<Run>,
        page_diffs: &mut Vec<PageDiff>,
    ) -> Result<(), Error> {
        for &p in pages {
            let (cur, twin) = {
                let mut st = lock(&self.state);
                if !matches!(st.dirty.get(&p), Some(Some(_))) {
                    // Dropped since listed: its bytes are `saved`.
                    st.dirty.remove(&p);
                    continue;
                }
                // Present (twinned): reading it cannot fault.
                let cur = self.view_read(p * PAGE as u64, PAGE)?;
                let keep = noted.contains(&p);
                if keep && matches!(st.dirty.get(&p), Some(Some(t)) if *t == cur) {
                    // Every store noted: nothing to send, the twin stands.
                    continue;
                }
                let twin = if keep {
                    st.dirty.insert(p, Some(cur.clone()))
                } else {
                    // Stores from here on fault and take a new twin.
                    self.uffd.protect(self.page_addr(p)?, PAGE, true)?;
                    st.dirty.remove(&p)
                };
                let Some(Some(twin)) = twin else { continue };
                (cur, twin)
            };
            bump(&self.stats.diffs, 1);
            exact_diff(p, &cur, &twin, runs, page_diffs);
        }
        Ok(())
    }

    /// Sends `runs` to their homes: runs are sorted and merged, then cut
    /// where the home changes; each piece is one MBCF WRITE. Waits until
    /// every home applied them. Returns the pages.
    pub(super) fn send_runs(&self, runs: Vec<Run>) -> Result<Vec<u64>, Error> {
        self.send_all(runs, Vec::new())
    }

    /// [`Shared::send_runs`] with trapped pages' diffs besides.
    pub(super) fn send_all(
        &self,
        runs: Vec<Run>,
        page_diffs: Vec<PageDiff>,
    ) -> Result<Vec<u64>, Error> {
        if runs.is_empty() && page_diffs.is_empty() {
            return Ok(Vec::new());
        }
        // Uncombined (the seeds' rows without MB): a WRITE a note (or a
        // run of a trapped page), neither merged nor packed in messages.
        let (runs, mut diffs) = if self.cfg.combine {
            self.diff_pages(merge_runs(runs), page_diffs)?
        } else {
            let mut runs = runs;
            runs.extend(page_diffs.iter().flat_map(PageDiff::to_runs));
            (runs, Vec::new())
        };
        let mut pages = Vec::new();
        let mut homes_hit = HashSet::new();
        // The last message to each home is acknowledged (counted with
        // updates): signals of one sender run in order at the home.
        diffs.sort_by_key(|d| (d.1, d.0));
        let mut acks = 0u64;
        for k in 0..diffs.len() {
            if k + 1 == diffs.len() || diffs[k + 1].1 != diffs[k].1 {
                if let Some(m) = diffs[k].2.last_mut() {
                    Diff::mark_last(m);
                    acks += 1;
                }
            }
        }
        let want = self
            .local_word(L::UPD_WANT)
            .fetch_add(acks, Ordering::AcqRel)
            + acks;
        for (page, home, msgs) in diffs {
            pages.push(page);
            for m in msgs {
                self.task
                    .signal(home, UPDATE_HANDLER, &m, Options::default())?;
                bump(&self.stats.writes, 1);
                bump(&self.stats.bytes_sent, (m.len() - UPDATE_HEADER) as u64);
            }
        }
        for (o, data) in runs {
            let end = o + data.len() as u64;
            let mut start = o;
            while start < end {
                let home = self.home_of(page_of(start))?;
                let mut stop = ((page_of(start) + 1) * PAGE as u64).min(end);
                pages.push(page_of(start));
                while stop < end && self.home_of(page_of(stop))? == home {
                    pages.push(page_of(stop));
                    stop = ((page_of(stop) + 1) * PAGE as u64).min(end);
                }
                let piece = &data[(start - o) as usize..(stop - o) as usize];
                if home == self.rank && self.span_mapped(start, piece.len() as u64) {
                    // A mapped page is its home: nothing to copy.
                    start = stop;
                    continue;
                } else if home == self.rank {
                    self.home_write(start, piece)?;
                } else {
                    let at = self
                        .homes
                        .get(home as usize)
                        .ok_or(Error::Invalid("no such home"))?
                        .at(start);
                    self.task.write(at, piece, Options::default())?;
                    homes_hit.insert(home);
                }
                bump(&self.stats.writes, 1);
                bump(&self.stats.bytes_sent, piece.len() as u64);
                start = stop;
            }
        }
        if !homes_hit.is_empty() {
            // Every home's ACK asked for at once: the round trips overlap.
            let homes: Vec<u32> = homes_hit.into_iter().collect();
            self.task.fence_many(&homes)?;
        }
        if acks > 0 {
            self.task
                .wait_word(self.local_word(L::UPD_ACK), |v| v >= want);
        }
        pages.sort_unstable();
        pages.dedup();
        Ok(pages)
    }

    /// Takes out of `runs` (sorted, disjoint) and `page_diffs` the pages
    /// homed elsewhere whose runs would cost more packets as WRITEs (one a
    /// datagram's payload) than as diff messages (one a payload, and an
    /// acknowledgement a release and home): trap mode sends exactly the
    /// bytes that changed, so a page whose values keep some of their bytes
    /// (doubles with short mantissas, bytes dealt to tasks round-robin) is
    /// many runs. Returns the runs left and, per page taken, its home and
    /// messages.
    #[allow(clippy::type_complexity)]
    fn diff_pages(
        &self,
        mut runs: Vec<Run>,
        page_diffs: Vec<PageDiff>,
    ) -> Result<(Vec<Run>, Vec<(u64, u32, Vec<Vec<u8>>)>), Error> {
        let payload = self.task.payload().max(UPDATE_HEADER + 9);
        let write_packets = |len: usize| len.div_ceil(payload);
        // Candidates: page -> (home, packets as WRITEs, bytes, masks).
        let mut taken: BTreeMap<u64, (u32, usize, Vec<u8>, Vec<u8>)> = BTreeMap::new();
        let mut converted = false;
        for d in page_diffs {
            let home = self.home_of(d.page)?;
            if home == self.rank {
                // Not mapped here (else no twin): its runs, written here.
                converted = true;
                runs.extend(d.to_runs());
                continue;
            }
            let c = d.runs.iter().map(|&(lo, hi)| write_packets(hi - lo)).sum();
            taken.insert(d.page, (home, c, d.bytes, d.masks));
        }
        if converted {
            runs = merge_runs(runs);
        }
        // Runs touching each page (runs are sorted: pages in order),
        // counted from 3 runs on (fewer: not worth a message).
        let mut cost: Vec<(u64, usize, usize)> = Vec::new();
        for (o, d) in &runs {
            let end = o + d.len() as u64;
            let mut at = *o;
            while at < end {
                let p = page_of(at);
                let stop = ((p + 1) * PAGE as u64).min(end);
                let packets = write_packets((stop - at) as usize);
                match cost.last_mut() {
                    Some((q, n, c)) if *q == p => {
                        *n += 1;
                        *c += packets;
                    }
                    _ => cost.push((p, 1, packets)),
                }
                at = stop;
            }
        }
        for (p, n, c) in cost {
            if let Some(t) = taken.get_mut(&p) {
                t.1 += c;
            } else if n >= MANY_RUNS {
                let home = self.home_of(p)?;
                if home != self.rank {
                    taken.insert(p, (home, c, vec![0; PAGE], vec![0; PAGE / 8]));
                }
            }
        }
        if taken.is_empty() {
            return Ok((runs, Vec::new()));
        }
        // The taken pages' bytes and masks get their runs' bytes; the
        // rest stays runs.
        let mut kept: Vec<Run> = Vec::with_capacity(runs.len());
        for (o, d) in runs {
            let end = o + d.len() as u64;
            let mut at = o;
            while at < end {
                let p = page_of(at);
                let stop = ((p + 1) * PAGE as u64).min(end);
                let bytes = &d[(at - o) as usize..(stop - o) as usize];
                match taken.get_mut(&p) {
                    Some((_, _, page, masks)) => {
                        let lo = (at - p * PAGE as u64) as usize;
                        page[lo..lo + bytes.len()].copy_from_slice(bytes);
                        set_mask(masks, lo, lo + bytes.len());
                    }
                    None => kept.push((at, bytes.to_vec())),
                }
                at = stop;
            }
        }
        let mut diffs = Vec::with_capacity(taken.len());
        for (p, (home, c, page, masks)) in taken {
            let msgs = encode_diffs(
                self.rank,
                p * PAGE as u64,
                &page,
                &masks,
                payload - UPDATE_HEADER,
            );
            if msgs.len() < c {
                diffs.push((p, home, msgs));
                continue;
            }
            // Not worth it: the page's runs again.
            let off0 = p * PAGE as u64;
            kept.extend(
                mask_runs(&masks)
                    .into_iter()
                    .map(|(lo, hi)| (off0 + lo as u64, page[lo..hi].to_vec())),
            );
        }
        // Pieces of a run cut at a taken page's edge join again.
        Ok((merge_runs(kept), diffs))
    }
}

/// The bytes of page `page` that changed from `twin` to `cur`, exactly
/// (trap mode, and `Invalidate` copies twinned by write-protect faults
/// in note mode): runs, or one [`PageDiff`] for a page cut into many.
fn exact_diff(
    page: u64,
    cur: &[u8],
    twin: &[u8],
    runs: &mut Vec<Run>,
    page_diffs: &mut Vec<PageDiff>,
) {
    let runs_here = changed_runs(cur, twin);
    if runs_here.len() >= MANY_RUNS {
        // One piece, not a run each (sent as diff messages or cut into
        // runs by `send_all`).
        let mut masks = vec![0u8; PAGE / 8];
        for &(lo, hi) in &runs_here {
            set_mask(&mut masks, lo, hi);
        }
        page_diffs.push(PageDiff {
            page,
            bytes: cur.to_vec(),
            masks,
            runs: runs_here,
        });
        return;
    }
    let off0 = page * PAGE as u64;
    for (lo, hi) in runs_here {
        runs.push((off0 + lo as u64, cur[lo..hi].to_vec()));
    }
}

/// Trap mode's diff of a page cut into many runs: kept whole until the
/// release knows its home and protocol.
pub(super) struct PageDiff {
    /// The page.
    pub page: u64,
    /// Its bytes at the release.
    pub bytes: Vec<u8>,
    /// A byte a word: bit k, byte k of the word changed.
    pub masks: Vec<u8>,
    /// The runs `[lo, hi)` of bytes that changed.
    pub runs: Vec<(usize, usize)>,
}

impl PageDiff {
    /// Its runs with their bytes.
    pub fn to_runs(&self) -> Vec<Run> {
        let off0 = self.page * PAGE as u64;
        self.runs
            .iter()
            .map(|&(lo, hi)| (off0 + lo as u64, self.bytes[lo..hi].to_vec()))
            .collect()
    }
}

/// Sets the bits of bytes `[lo, hi)` in `masks` (a byte a word).
fn set_mask(masks: &mut [u8], lo: usize, hi: usize) {
    let mut b = lo;
    while b < hi {
        if b % 8 == 0 && hi - b >= 8 {
            masks[b / 8] = 0xff;
            b += 8;
        } else {
            masks[b / 8] |= 1 << (b % 8);
            b += 1;
        }
    }
}

/// Runs of a page from which on it is a [`PageDiff`] (and a page of runs
/// a candidate for diff messages).
const MANY_RUNS: usize = 3;

/// The byte ranges of `cur` (a page) that differ from `twin`, exactly:
/// no byte that kept its value is sent, since another task may have
/// written it in the same interval (bytes of one word dealt to different
/// tasks) and this task's copy of it is old. Words are compared first
/// (`changed_word_runs`); only changed words whose bytes did not all
/// change are looked at byte by byte.
pub(crate) fn changed_runs(cur: &[u8], twin: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for (lo, hi) in changed_word_runs(cur, twin) {
        let mut start: Option<usize> = None;
        for w in (lo..hi).step_by(8) {
            let x = word_at(cur, w) ^ word_at(twin, w);
            if !has_zero_byte(x) {
                // Every byte changed: the run goes on.
                start.get_or_insert(w);
                continue;
            }
            for b in w..w + 8 {
                match (cur[b] != twin[b], start) {
                    (true, None) => start = Some(b),
                    (false, Some(s)) => {
                        out.push((s, b));
                        start = None;
                    }
                    _ => {}
                }
            }
        }
        if let Some(s) = start {
            out.push((s, hi));
        }
    }
    out
}

/// The runs `[lo, hi)` of bytes whose bits are set in `masks` (a byte a
/// word, bit k for byte k).
pub(crate) fn mask_runs(masks: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    for (w, &m) in masks.iter().enumerate() {
        let at = 8 * w;
        match (m, start) {
            (0, None) | (0xff, Some(_)) => continue,
            (0, Some(s)) => {
                out.push((s, at));
                start = None;
                continue;
            }
            (0xff, None) => {
                start = Some(at);
                continue;
            }
            _ => {}
        }
        for k in 0..8 {
            match (m & (1 << k) != 0, start) {
                (true, None) => start = Some(at + k),
                (false, Some(s)) => {
                    out.push((s, at + k));
                    start = None;
                }
                _ => {}
            }
        }
    }
    if let Some(s) = start {
        out.push((s, 8 * masks.len()));
    }
    out
}

/// The 8 bytes at `at` as a word (native order: only compared).
fn word_at(b: &[u8], at: usize) -> u64 {
    u64::from_ne_bytes(b[at..at + 8].try_into().unwrap_or([0; 8]))
}

/// Whether a byte of `x` is zero (the classic bit trick: exact as a yes
/// or no, though not as to which byte).
fn has_zero_byte(x: u64) -> bool {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    x.wrapping_sub(LO) & !x & HI != 0
}

/// The runs of a diffed range's page (`cur`, at heap offset `off0`) to
/// send: its changed 8-byte words, whole, except those whose changed
/// bytes all lie in `noted` (this interval's noted ranges, sorted and
/// disjoint), which the notes send. Code compiled by `sss cc` diffs only
/// stores of whole aligned words and notes every other store, so a word
/// with a change outside the notes was written whole by this task: its
/// bytes that did not change are this task's too (values equal to the
/// old ones), never another task's. So whole words are safe here, unlike
/// in trap mode's diffs (`changed_runs`), whose stores have any width.
/// Whole words keep the runs of a page and the next one touching, so
/// they merge into one write (a run cut to its changed bytes would stop
/// short of the page's end whenever its last word's high bytes kept
/// their value).
pub(crate) fn diffed_runs(
    cur: &[u8],
    twin: &[u8],
    off0: u64,
    noted: &[(u64, u64)],
) -> Vec<(usize, usize)> {
    let covered = |x: u64| {
        let i = noted.partition_point(|&(_, e)| e <= x);
        i < noted.len() && noted[i].0 <= x
    };
    let mut out = Vec::new();
    for (lo, hi) in changed_word_runs(cur, twin) {
        let (a, b) = (off0 + lo as u64, off0 + hi as u64);
        let i = noted.partition_point(|&(_, e)| e <= a);
        if i == noted.len() || noted[i].0 >= b {
            out.push((lo, hi));
            continue;
        }
        let mut start = None;
        for w in (lo..hi).step_by(8) {
            let keep = (w..w + 8).any(|x| cur[x] != twin[x] && !covered(off0 + x as u64));
            match (keep, start) {
                (true, None) => start = Some(w),
                (false, Some(s)) => {
                    out.push((s, w));
                    start = None;
                }
                _ => {}
            }
        }
        if let Some(s) = start {
            out.push((s, hi));
        }
    }
    out
}

/// `ranges` (offset, length) sorted and merged where they meet or touch.
fn merged(ranges: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut v: Vec<(u64, u64)> = ranges
        .iter()
        .filter(|r| r.1 > 0)
        .map(|&(o, l)| (o, o + l))
        .collect();
    v.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(v.len());
    for (s, e) in v {
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

/// The runs `[lo, hi)` of changed 8-byte words of `cur` (a page) against
/// `twin`, word-aligned. Blocks of 64 bytes are compared first as words
/// OR-ed together (the compiler turns the loop into vector compares), so
/// unchanged stretches cost a few instructions per block.
fn changed_word_runs(cur: &[u8], twin: &[u8]) -> Vec<(usize, usize)> {
    const BLOCK: usize = 64;
    let n = cur.len().min(twin.len()) / BLOCK * BLOCK;
    let word =
        |b: &[u8], w: usize| u64::from_ne_bytes(b[w * 8..w * 8 + 8].try_into().unwrap_or([0; 8]));
    let block_same = |at: usize| {
        let (c, t) = (&cur[at..at + BLOCK], &twin[at..at + BLOCK]);
        let mut x = 0u64;
        for (a, b) in c.chunks_exact(8).zip(t.chunks_exact(8)) {
            x |= u64::from_ne_bytes(a.try_into().unwrap_or([0; 8]))
                ^ u64::from_ne_bytes(b.try_into().unwrap_or([0; 8]));
        }
        x == 0
    };
    let words = n / 8;
    let mut out = Vec::new();
    let mut run: Option<usize> = None;
    let mut w = 0;
    while w < words {
        if run.is_none() && w % (BLOCK / 8) == 0 && block_same(w * 8) {
            w += BLOCK / 8;
            continue;
        }
        let same = word(cur, w) == word(twin, w);
        match (run, same) {
            (None, false) => run = Some(w),
            (Some(s), true) => {
                out.push((s * 8, w * 8));
                run = None;
            }
            _ => {}
        }
        w += 1;
    }
    if let Some(s) = run {
        out.push((s * 8, words * 8));
    }
    out
}

/// Adds the run of `bytes` at `at` to `runs`, into the last run when it
/// ends there: the pages of a diffed range changed throughout are then
/// one run, not a run a page copied again when runs merge.
fn push_run(runs: &mut Vec<Run>, at: u64, bytes: &[u8]) {
    match runs.last_mut() {
        Some((o, d)) if *o + d.len() as u64 == at => d.extend_from_slice(bytes),
        _ => runs.push((at, bytes.to_vec())),
    }
}

/// Heap offset and the bytes written there.
pub(super) type Run = (u64, Vec<u8>);

/// Sorts runs and merges touching or overlapping ones (the later run's
/// bytes win where they overlap; runs of one release agree there).
pub(super) fn merge_runs(mut runs: Vec<Run>) -> Vec<Run> {
    runs.sort_by_key(|r| r.0);
    let mut merged: Vec<Run> = Vec::with_capacity(runs.len());
    for (o, d) in runs {
        match merged.last_mut() {
            Some((mo, md)) if o <= *mo + md.len() as u64 => {
                let at = (o - *mo) as usize;
                let end = at + d.len();
                if end > md.len() {
                    md.resize(end, 0);
                }
                md[at..end].copy_from_slice(&d);
            }
            _ => merged.push((o, d)),
        }
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changed_runs_send_no_byte_that_kept_its_value() {
        let twin: Vec<u8> = (0..PAGE).map(|i| i as u8).collect();
        let mut cur = twin.clone();
        // Bytes 0 and 2 of word 0 (byte 1 is another task's).
        cur[0] ^= 1;
        cur[2] ^= 1;
        // Word 1 whole, word 2's first byte: one run across the words.
        for b in &mut cur[8..17] {
            *b ^= 0x80;
        }
        // Word 3 with bytes 1..7 changed, word 4 whole but byte 0.
        for b in &mut cur[25..32] {
            *b ^= 2;
        }
        for b in &mut cur[33..40] {
            *b ^= 2;
        }
        // The page's last byte.
        cur[PAGE - 1] ^= 4;
        assert_eq!(
            changed_runs(&cur, &twin),
            vec![
                (0, 1),
                (2, 3),
                (8, 17),
                (25, 32),
                (33, 40),
                (PAGE - 1, PAGE)
            ]
        );
        // Every changed byte is in a run, no unchanged byte is.
        let mut sent = vec![false; PAGE];
        for (lo, hi) in changed_runs(&cur, &twin) {
            sent[lo..hi].iter_mut().for_each(|x| *x = true);
        }
        assert!((0..PAGE).all(|i| sent[i] == (cur[i] != twin[i])));
    }

    #[test]
    fn masks_and_their_runs_agree() {
        let twin: Vec<u8> = (0..PAGE).map(|i| (i * 5) as u8).collect();
        let mut cur = twin.clone();
        for i in (0..PAGE).filter(|i| (i * 7 / 3) % 5 < 2 || (900..1300).contains(i)) {
            cur[i] ^= 0x10;
        }
        let mut masks = vec![0u8; PAGE / 8];
        for (lo, hi) in changed_runs(&cur, &twin) {
            set_mask(&mut masks, lo, hi);
        }
        for i in 0..PAGE {
            assert_eq!(
                masks[i / 8] & (1 << (i % 8)) != 0,
                cur[i] != twin[i],
                "byte {i}"
            );
        }
        let runs = mask_runs(&masks);
        let mut sent = vec![false; PAGE];
        for w in runs.windows(2) {
            assert!(w[0].1 < w[1].0, "runs sorted, apart: {w:?}");
        }
        for &(lo, hi) in &runs {
            assert!(lo < hi);
            sent[lo..hi].iter_mut().for_each(|x| *x = true);
        }
        assert!((0..PAGE).all(|i| sent[i] == (cur[i] != twin[i])));
        assert_eq!(
            mask_runs(&[0xff, 0xff, 0x01, 0x80, 0]),
            vec![(0, 17), (31, 32)]
        );
        assert_eq!(mask_runs(&[0x0f, 0xf0]), vec![(0, 4), (12, 16)]);
        assert_eq!(mask_runs(&[0xf0, 0x0f, 0xff]), vec![(4, 12), (16, 24)]);
    }

    #[test]
    fn has_zero_byte_is_exact() {
        assert!(has_zero_byte(0));
        assert!(has_zero_byte(0x0101_0101_0101_0100));
        assert!(has_zero_byte(0x0001_0101_0101_0101));
        assert!(has_zero_byte(0x8000_8080_8080_8080));
        assert!(!has_zero_byte(0x0101_0101_0101_0101));
        assert!(!has_zero_byte(u64::MAX));
        assert!(!has_zero_byte(0x0180_0101_ff01_0101));
        // Every single zero byte among others of every value.
        for v in 1..=255u64 {
            let all = v * 0x0101_0101_0101_0101;
            assert!(!has_zero_byte(all));
            for k in 0..8 {
                assert!(has_zero_byte(all & !(0xff << (8 * k))));
            }
        }
    }

    #[test]
    fn changed_runs_finds_every_changed_word() {
        let twin = vec![0u8; PAGE];
        let mut cur = twin.clone();
        assert!(changed_runs(&cur, &twin).is_empty());
        cur[3] = 1; // word 0
        cur[8] = 1; // word 1: bytes 4..8 kept their value
        cur[200] = 7; // word 25, a later block
        cur[PAGE - 1] = 9; // last word, runs to the end
        assert_eq!(
            changed_runs(&cur, &twin),
            vec![(3, 4), (8, 9), (200, 201), (PAGE - 1, PAGE)]
        );
    }

    #[test]
    fn diffed_runs_send_whole_words_but_not_what_notes_send() {
        let twin = vec![0u8; PAGE];
        let mut cur = twin.clone();
        // Two longs whose high bytes kept their value: whole words.
        cur[8] = 1;
        cur[16] = 2;
        // A word changed only by a noted store (bytes 100..102): left to
        // the note, though its neighbour's bytes are in the word.
        cur[100] = 3;
        cur[101] = 3;
        // A word changed by both (a whole-word store, then a note of its
        // byte 202): whole.
        cur[200] = 4;
        cur[202] = 5;
        // The last word: a run to the page's end.
        cur[PAGE - 8] = 6;
        let off0 = 10 * PAGE as u64;
        let noted = merged(&[(off0 + 100, 2), (off0 + 202, 1), (off0 + 101, 1)]);
        assert_eq!(
            noted,
            vec![(off0 + 100, off0 + 102), (off0 + 202, off0 + 203)]
        );
        assert_eq!(
            diffed_runs(&cur, &twin, off0, &noted),
            vec![(8, 24), (200, 208), (PAGE - 8, PAGE)]
        );
        // Trap mode's diff of the same page: the changed bytes only.
        assert_eq!(
            changed_runs(&cur, &twin),
            vec![
                (8, 9),
                (16, 17),
                (100, 102),
                (200, 201),
                (202, 203),
                (PAGE - 8, PAGE - 7)
            ]
        );
    }

    #[test]
    fn merge_runs_keeps_every_byte() {
        let m = merge_runs(vec![
            (10, vec![1; 10]),
            (0, vec![2; 4]),
            (12, vec![3; 2]),
            (20, vec![4; 2]),
            (30, vec![5; 1]),
        ]);
        let mut want = vec![1u8; 10];
        want[2] = 3;
        want[3] = 3;
        want.extend([4, 4]);
        assert_eq!(m, vec![(0, vec![2; 4]), (10, want), (30, vec![5])]);
    }
}
