//! Lazy release consistency (`Ulrc`): at a release, this interval's noted
//! ranges and diffs against twins become runs, merged and sent to their
//! homes (one MBCF WRITE per contiguous run with one home). Write notices
//! are published and pulled in the release and acquire of `protocol`.

use crate::shared::{lock, page_of, Shared};
use crate::stats::bump;
use crate::sys::PAGE;
use crate::Error;
use sss_mbcf::Options;
use std::collections::HashSet;

impl Shared {
    /// Turns this interval's writes into runs with their bytes (noted
    /// ranges, diffs). Each dirty page is protected, copied and leaves
    /// `dirty` under the state lock: an update or invalidation handler
    /// sees it either still dirty (and updates the twin) or clean and
    /// protected (and may drop it: the bytes to send are copied already).
    /// Also returns the pages of this task's home mapped here that were
    /// written (noted or trapped): their bytes are home already.
    pub(super) fn collect_runs(&self) -> Result<(Vec<Run>, Vec<u64>), Error> {
        // Before anything is taken: an error here loses no record.
        let fresh = self.newly_copied()?;
        let noted = std::mem::take(&mut lock(&self.out).noted);
        let mut own = self.take_own_dirty()?;
        own.extend(fresh);
        let mut runs: Vec<Run> = Vec::with_capacity(noted.len());
        let mapped = self.spans_mapped(&noted);
        for ((o, l), mapped) in noted.into_iter().zip(mapped) {
            if mapped {
                own.extend(page_of(o)..=page_of(o + l - 1));
            } else {
                runs.push((o, self.view_read(o, l as usize)?));
            }
        }
        let mut pages: Vec<u64> = lock(&self.state).dirty.keys().copied().collect();
        pages.sort_unstable();
        if !pages.is_empty() {
            let mut st = lock(&self.state);
            let older = std::mem::replace(&mut st.twin_prev1, pages.iter().copied().collect());
            st.twin_prev = older.union(&st.twin_prev1).copied().collect();
        }
        let mut i = 0;
        while i < pages.len() {
            // A run of contiguous pages, protected in one ioctl.
            let mut j = i + 1;
            while j < pages.len()
                && pages[j] == pages[j - 1] + 1
                && j - i < 64
                && self.page_addr(pages[j])? == self.page_addr(pages[j - 1])? + PAGE
            {
                j += 1;
            }
            let (first, n) = (pages[i], j - i);
            let (cur, twins) = {
                let mut st = lock(&self.state);
                let mut twins = Vec::with_capacity(n);
                for p in &pages[i..j] {
                    twins.push(st.dirty.remove(p).flatten());
                }
                // Protect first so the next write of a page starts a new
                // twin; this thread is the only writer, so nothing is
                // missed. Dirty pages are present: the copy cannot fault.
                self.uffd.protect(self.page_addr(first)?, n * PAGE, true)?;
                (self.view_read(first * PAGE as u64, n * PAGE)?, twins)
            };
            for (k, twin) in twins.into_iter().enumerate() {
                let Some(twin) = twin else { continue };
                bump(&self.stats.diffs, 1);
                let cur = &cur[k * PAGE..(k + 1) * PAGE];
                let off0 = (first + k as u64) * PAGE as u64;
                // Runs of changed words (as TreadMarks: whole words keep
                // runs long), trimmed at both ends to the bytes that
                // changed: tasks that write neighbouring bytes or 4-byte
                // values of one word (a partition boundary in a byte
                // table) do not send each other's old bytes.
                for (lo, hi) in changed_runs(cur, &twin) {
                    runs.push((off0 + lo as u64, cur[lo..hi].to_vec()));
                }
            }
            i = j;
        }
        Ok((runs, own))
    }

    /// Sends `runs` to their homes: runs are sorted and merged, then cut
    /// where the home changes; each piece is one MBCF WRITE. Waits until
    /// every home applied them. Returns the pages.
    pub(super) fn send_runs(&self, runs: Vec<Run>) -> Result<Vec<u64>, Error> {
        if runs.is_empty() {
            return Ok(Vec::new());
        }
        let mut pages = Vec::new();
        let mut homes_hit = HashSet::new();
        for (o, data) in merge_runs(runs) {
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
        for h in homes_hit {
            self.task.fence(h)?;
        }
        pages.dedup();
        Ok(pages)
    }
}

/// The byte ranges of `cur` (a page) that differ from `twin`: runs of
/// changed 8-byte words, trimmed to the bytes that changed. Blocks of 64
/// bytes are compared first as words OR-ed together (the compiler turns
/// the loop into vector compares), so unchanged stretches cost a few
/// instructions per block.
pub(crate) fn changed_runs(cur: &[u8], twin: &[u8]) -> Vec<(usize, usize)> {
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
                out.push(changed_bytes(cur, twin, s * 8, w * 8));
                run = None;
            }
            _ => {}
        }
        w += 1;
    }
    if let Some(s) = run {
        out.push(changed_bytes(cur, twin, s * 8, words * 8));
    }
    out
}

/// The first and one past the last byte of `[lo, hi)` where `cur` and
/// `twin` differ (they differ in the first and last word).
fn changed_bytes(cur: &[u8], twin: &[u8], lo: usize, hi: usize) -> (usize, usize) {
    let first = (lo..hi).find(|&b| cur[b] != twin[b]).unwrap_or(lo);
    let last = (lo..hi)
        .rev()
        .find(|&b| cur[b] != twin[b])
        .map_or(hi, |b| b + 1);
    (first, last)
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
    fn changed_bytes_trims_a_run_to_what_changed() {
        let twin = [0u8; 24];
        let mut cur = twin;
        cur[5] = 1; // word 0
        cur[9] = 2; // word 1
        cur[17] = 3; // word 2
        assert_eq!(changed_bytes(&cur, &twin, 0, 24), (5, 18));
        assert_eq!(changed_bytes(&cur, &twin, 8, 16), (9, 10));
    }

    #[test]
    fn changed_runs_finds_every_changed_word() {
        let twin = vec![0u8; PAGE];
        let mut cur = twin.clone();
        assert!(changed_runs(&cur, &twin).is_empty());
        cur[3] = 1; // word 0
        cur[8] = 1; // word 1: same run
        cur[200] = 7; // word 25, a later block
        cur[PAGE - 1] = 9; // last word, runs to the end
        assert_eq!(
            changed_runs(&cur, &twin),
            vec![(3, 9), (200, 201), (PAGE - 1, PAGE)]
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
