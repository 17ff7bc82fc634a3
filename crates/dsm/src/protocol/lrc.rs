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
        // Note mode: the twins are those of diffed ranges, whose stores
        // not noted write whole words (see `diffed_runs`).
        let exact = !self.traps();
        let noted_iv = if exact { merged(&noted) } else { Vec::new() };
        let mut own = self.take_own_dirty()?;
        own.extend(fresh);
        // Diffed ranges (note mode): mapped home pages that changed.
        own.extend(self.take_own_twins()?);
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
                // In note mode (twins of diffed ranges) nothing is
                // protected: the next stores are noted.
                if self.traps() {
                    self.uffd.protect(self.page_addr(first)?, n * PAGE, true)?;
                }
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
                // table) do not send each other's old bytes. Diffed
                // ranges (note mode): whole words, less those only notes
                // changed.
                let runs_here = if exact {
                    diffed_runs(cur, &twin, off0, &noted_iv)
                } else {
                    changed_runs(cur, &twin)
                };
                for (lo, hi) in runs_here {
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
/// changed 8-byte words, trimmed to the bytes that changed.
pub(crate) fn changed_runs(cur: &[u8], twin: &[u8]) -> Vec<(usize, usize)> {
    changed_word_runs(cur, twin)
        .into_iter()
        .map(|(lo, hi)| changed_bytes(cur, twin, lo, hi))
        .collect()
}

/// The runs of a diffed range's page (`cur`, at heap offset `off0`) to
/// send: its changed 8-byte words, whole, except those whose changed
/// bytes all lie in `noted` (this interval's noted ranges, sorted and
/// disjoint), which the notes send. Code compiled by `sss cc` diffs only
/// stores of whole aligned words and notes every other store, so a word
/// with a change outside the notes was written whole by this task: its
/// bytes that did not change are this task's too (values equal to the
/// old ones), never another task's. Whole words keep the runs of a page
/// and the next one touching, so they merge into one write (a run
/// trimmed to its changed bytes would stop short of the page's end
/// whenever its last word's high bytes kept their value).
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
        // Trap mode's diff of the same page: trimmed to the changed bytes.
        assert_eq!(
            changed_runs(&cur, &twin),
            vec![(8, 17), (100, 102), (200, 203), (PAGE - 8, PAGE - 7)]
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
