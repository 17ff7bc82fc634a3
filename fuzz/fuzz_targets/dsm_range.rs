//! Fuzz target for `Range::decode`: the allocation descriptors rank 0
//! keeps in its metadata segment, which every task READs over MBCF (and
//! which a task with access to that segment may overwrite).
//!
//! The first 12 bytes choose the heap's size in pages (u64) and the job's
//! tasks (u32), little-endian; the rest is the descriptor. Decoding may
//! not panic. An accepted descriptor has at least one page, lies in the
//! heap, keeps a first-touch range inside the first-touch directory and an
//! explicit home inside the job, and decodes again to itself from its own
//! encoding.

#![no_main]

use libfuzzer_sys::fuzz_target;
use sss_dsm::msg::{Range, FT_WORDS};
use sss_dsm::Placement;

fuzz_target!(|data: &[u8]| {
    let Some((head, desc)) = data.split_at_checked(12) else {
        return;
    };
    let heap_pages = u64::from_le_bytes(head[..8].try_into().expect("8 bytes"));
    let tasks = u32::from_le_bytes(head[8..].try_into().expect("4 bytes"));
    let Ok(r) = Range::decode(desc, 9, heap_pages, tasks) else {
        return;
    };
    assert!(r.pages >= 1, "empty range");
    let end = r.start.checked_add(r.pages).expect("range end overflows");
    assert!(end <= heap_pages, "range outside the heap");
    match r.placement {
        Placement::FirstTouch => {
            let ft = r.ft.checked_add(r.pages).expect("directory end overflows");
            assert!(ft <= FT_WORDS, "outside the first-touch directory");
        }
        Placement::Explicit(k) => assert!(k < tasks, "home outside the job"),
        Placement::Cyclic(b) => assert!(b >= 1, "empty cyclic block"),
        Placement::Block => {}
    }
    assert_eq!(r.idx, 9);
    assert_eq!(Range::decode(&r.encode(), 9, heap_pages, tasks), Ok(r));
});
