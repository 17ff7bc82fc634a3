//! Fuzz target for the DSM's SIGNAL payloads: `Update::parse` (update
//! messages to homes and copy holders) and `parse_invalidation` (eager
//! invalidations), both fed bytes any task of the job, or a forged
//! datagram, may send.
//!
//! Neither may panic. An accepted update lies in one page, ends without
//! overflow and re-encodes to the input; an accepted invalidation names
//! only pages of the heap, one per 8 input bytes, and re-encodes to the
//! input.

#![no_main]

use libfuzzer_sys::fuzz_target;
use sss_dsm::msg::{encode_invalidation, parse_invalidation, Update, UPDATE_HEADER};
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
});
