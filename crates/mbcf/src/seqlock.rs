//! The sequence-lock protocol of the structures peers read while their
//! owner may rewrite them (the published segment tables of control blocks,
//! IDM node pages): the writer makes the sequence word odd, rewrites the
//! data, makes it even; a reader copies the data and keeps it only if the
//! word was even and did not move.
//!
//! The writer lives in another process and may die mid-update, leaving the
//! word odd forever, or a peer may scribble on it. Readers therefore give
//! up after [`READ_TRIES`] attempts and report the data as stale instead
//! of spinning; writers start from whatever they find, so a word left odd
//! is repaired by the next update.

use std::sync::atomic::{fence, AtomicU64, Ordering};

/// Attempts a reader makes before calling the data stale. An update is a
/// few dozen stores, so a live writer never keeps a reader out this long.
pub(crate) const READ_TRIES: u32 = 512;

/// The data could not be read consistently: its writer is mid-update for
/// longer than any live writer takes (dead or scribbled on).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stale;

/// A consistent copy of the data `seq` guards. `copy` reads it (and may
/// see a torn state, which is discarded).
pub(crate) fn read<T>(seq: &AtomicU64, mut copy: impl FnMut() -> T) -> Result<T, Stale> {
    for _ in 0..READ_TRIES {
        let s1 = seq.load(Ordering::Acquire);
        if s1 % 2 == 0 {
            let d = copy();
            // Acquire: the data loads above happen before the re-check.
            fence(Ordering::Acquire);
            if seq.load(Ordering::Relaxed) == s1 {
                return Ok(d);
            }
        }
        std::hint::spin_loop();
    }
    Err(Stale)
}

/// Rewrites the data `seq` guards with `update`. One writer at a time
/// (the caller's business).
pub(crate) fn write(seq: &AtomicU64, update: impl FnOnce()) {
    // Odd while updating; a word left odd by a dead writer stays odd here
    // and becomes even at the end.
    let s = seq.load(Ordering::Relaxed) | 1;
    seq.store(s, Ordering::Relaxed);
    // Release: readers that see the data change also see the odd word.
    fence(Ordering::Release);
    update();
    seq.store(s.wrapping_add(1), Ordering::Release);
}

/// The protocol on heap memory, for Miri
/// (`cargo +nightly miri test -p sss-mbcf --lib seqlock::`).
#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Guarded {
        seq: AtomicU64,
        a: AtomicU64,
        b: AtomicU64,
    }

    #[test]
    fn readers_see_whole_updates_only() {
        const N: u64 = if cfg!(miri) { 20 } else { 20_000 };
        let g = Guarded::default();
        std::thread::scope(|s| {
            s.spawn(|| {
                for i in 1..=N {
                    write(&g.seq, || {
                        g.a.store(i, Ordering::Relaxed);
                        g.b.store(2 * i, Ordering::Relaxed);
                    });
                }
            });
            let mut last = 0;
            while last < N {
                let copy = || (g.a.load(Ordering::Relaxed), g.b.load(Ordering::Relaxed));
                if let Ok((a, b)) = read(&g.seq, copy) {
                    assert_eq!(b, 2 * a, "torn read");
                    assert!(a >= last, "went back in time");
                    last = a;
                }
            }
        });
    }

    /// Regression (issue 12, item 4): a writer that died mid-update left
    /// the word odd and readers spun forever.
    #[test]
    fn a_word_left_odd_reads_stale_after_bounded_tries_and_the_next_write_repairs_it() {
        let g = Guarded::default();
        g.seq.store(7, Ordering::Relaxed);
        let mut tries = 0;
        let r = read(&g.seq, || {
            tries += 1;
        });
        assert_eq!(r, Err(Stale));
        assert_eq!(tries, 0, "never copied while odd");
        write(&g.seq, || g.a.store(1, Ordering::Relaxed));
        assert_eq!(g.seq.load(Ordering::Relaxed) % 2, 0);
        assert_eq!(read(&g.seq, || g.a.load(Ordering::Relaxed)), Ok(1));
    }
}
