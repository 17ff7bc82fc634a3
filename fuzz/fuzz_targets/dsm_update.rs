//! Fuzz target for the DSM's SIGNAL payloads: `Update::parse` (update
//! messages to homes and copy holders), `Diff::parse` (diffs to homes)
//! `parse_invalidation` (eager invalidations) and `Unlock::parse` (lock
//! releases to the lock's home), all fed bytes any task
//! of the job, or a forged datagram, may send.
//!
//! None may panic. An accepted update lies in one page, ends without
//! overflow and re-encodes to the input; an accepted diff re-encodes to
//! the input, its bytes lie in one page, each at most once, in order,
//! and `encode_diffs` gives them back in messages that carry exactly
//! them; an accepted invalidation names only pages of the heap, one per
//! 8 input bytes, and re-encodes to the input; an accepted release
//! names a lock of the table, carries one word per task and re-encodes
//! to the input.

#![no_main]

use libfuzzer_sys::fuzz_target;
use sss_dsm::msg::{
    encode_diffs, encode_invalidation, parse_invalidation, Diff, Unlock, Update, DIFF_BODY,
    MAX_LOCKS, UNLOCK_HEADER, UPDATE_HEADER,
};
use sss_dsm::PAGE;

/// Pages of the heap the invalidations are checked against (1 GiB).
const HEAP_PAGES: u64 = 1 << 18;

fuzz_target!(|data: &[u8]| {
    if let Some(u) = Update::parse(data) {
        assert!(!u.data.is_empty(), "an update carries bytes");
        assert_eq!(u.data.len() + UPDATE_HEADER, data.len());
        let end = u
            .off
            .checked_add(u.data.len() as u64)
            .expect("end overflows");
        assert_eq!(u.end(), end);
        assert_eq!(
            u.off / PAGE as u64,
            (end - 1) / PAGE as u64,
            "crosses a page"
        );
        assert_eq!(u.encode(), data, "not the canonical encoding");
    }
    if let Some(d) = Diff::parse(data) {
        assert_eq!(d.encode(), data, "not the canonical encoding");
        let page = d.off / PAGE as u64;
        let base = page * PAGE as u64;
        let (mut bytes, mut masks) = (vec![0u8; PAGE], vec![0u8; PAGE / 8]);
        let mut next = d.off;
        d.for_each(|at, b| {
            assert!(at >= next, "bytes out of order or twice");
            next = at + b.len() as u64;
            assert_eq!((next - 1) / PAGE as u64, page, "crosses a page");
            for (k, &x) in b.iter().enumerate() {
                let i = (at - base) as usize + k;
                bytes[i] = x;
                masks[i / 8] |= 1 << (i % 8);
            }
        });
        // The same bytes through the encoder (cut into bodies of at most
        // DIFF_BODY bytes) come back the same.
        let (mut bytes2, mut masks2) = (vec![0u8; PAGE], vec![0u8; PAGE / 8]);
        for m in encode_diffs(d.writer, base, &bytes, &masks, DIFF_BODY) {
            assert!(m.len() <= UPDATE_HEADER + DIFF_BODY, "too long");
            let e = Diff::parse(&m).expect("the encoder's diff parses");
            e.for_each(|at, b| {
                for (k, &x) in b.iter().enumerate() {
                    let i = (at - base) as usize + k;
                    assert_eq!(masks2[i / 8] & (1 << (i % 8)), 0, "a byte twice");
                    bytes2[i] = x;
                    masks2[i / 8] |= 1 << (i % 8);
                }
            });
        }
        assert!(masks == masks2 && bytes == bytes2, "re-encoded differently");
    }
    if let Some(pages) = parse_invalidation(data, HEAP_PAGES) {
        assert_eq!(pages.len() * 8, data.len());
        assert!(
            pages.iter().all(|&p| p < HEAP_PAGES),
            "page outside the heap"
        );
        assert_eq!(
            encode_invalidation(&pages),
            data,
            "not the canonical encoding"
        );
    }
    for tasks in [1, 3, 64] {
        if let Some(u) = Unlock::parse(data, tasks) {
            assert_eq!(u.view.len(), tasks);
            assert_eq!(data.len(), UNLOCK_HEADER + 8 * tasks);
            assert!((u.id as usize) < MAX_LOCKS, "no such lock");
            assert_eq!(u.encode(), data, "not the canonical encoding");
        }
    }
});
