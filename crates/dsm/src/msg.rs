//! The DSM's messages between tasks, as bytes: update SIGNALs, diff
//! SIGNALs to homes, eager invalidation SIGNALs, lock releases to the
//! lock's home, and the allocation descriptors rank 0 keeps in
//! its metadata segment (read by every task with MBCF READ). Everything
//! here comes from the network or from memory other tasks write, so the
//! decoders are pure functions that check every field and never panic;
//! they are public for the fuzz targets (`fuzz/`).

use crate::layout as L;
use crate::{Placement, Protocol, PAGE};

/// Bytes of an allocation descriptor.
pub const RANGE_BYTES: usize = L::RANGE_BYTES;
/// Words of the first-touch directory: a first-touch range's words lie
/// below this.
pub const FT_WORDS: u64 = L::FT_WORDS as u64;

/// Update message to a home (apply it and forward it to the holders).
pub const TAG_HOME: u32 = 1;
/// Update message to a copy holder (apply it).
pub const TAG_COPY: u32 = 2;
/// Bytes before the data of an update message.
pub const UPDATE_HEADER: usize = 16;

/// An update: `data` written by `writer` at heap offset `off`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Update<'a> {
    /// [`TAG_HOME`] or [`TAG_COPY`] (others are decoded and ignored).
    pub tag: u32,
    /// The task that wrote the bytes.
    pub writer: u32,
    /// Heap offset of the first byte.
    pub off: u64,
    /// The bytes: at least one, never crossing a page.
    pub data: &'a [u8],
}

impl Update<'_> {
    /// The message: tag, writer, heap offset (little-endian), the bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut m = Vec::with_capacity(UPDATE_HEADER + self.data.len());
        m.extend_from_slice(&self.tag.to_le_bytes());
        m.extend_from_slice(&self.writer.to_le_bytes());
        m.extend_from_slice(&self.off.to_le_bytes());
        m.extend_from_slice(self.data);
        m
    }

    /// One past the last byte's offset (no overflow: checked by
    /// [`Update::parse`]).
    pub fn end(&self) -> u64 {
        self.off + self.data.len() as u64
    }

    /// Splits a message; None when it is short, empty, or its bytes would
    /// cross a page or the end of the address space. Whether they lie in
    /// the heap is for the receiver to check against its size.
    pub fn parse(m: &[u8]) -> Option<Update<'_>> {
        let tag = u32::from_le_bytes(m.get(0..4)?.try_into().ok()?);
        let writer = u32::from_le_bytes(m.get(4..8)?.try_into().ok()?);
        let off = u64::from_le_bytes(m.get(8..16)?.try_into().ok()?);
        let data = m.get(UPDATE_HEADER..)?;
        let end = off.checked_add(data.len() as u64)?;
        let page = PAGE as u64;
        if data.is_empty() || off / page != (end - 1) / page {
            return None;
        }
        Some(Update {
            tag,
            writer,
            off,
            data,
        })
    }
}

/// Diff message to a home (apply the bytes it carries).
pub const TAG_DIFF: u32 = 3;
/// The last diff message of a release to a home: apply it, then
/// acknowledge (signals of one sender run in arrival order, so the
/// earlier ones are applied by then).
pub const TAG_DIFF_LAST: u32 = 4;
/// Most bytes after the header of a diff message in the tests and the
/// fuzz target (a sender's own limit is its datagram payload).
pub const DIFF_BODY: usize = 1024;

/// A diff: bytes of a span of whole 8-byte words of one page, those
/// that changed and no other (the others may be another task's, written
/// in the same interval). The body holds, for each word from heap offset
/// `off` (8-aligned) on, a mask byte (bit k: byte k of the word is sent)
/// followed by the bytes sent, in order; a mask of 0 is followed by one
/// byte k instead: k + 1 words without a byte sent. Scattered bytes of a
/// page cost one message instead of a WRITE each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Diff<'a> {
    /// [`TAG_DIFF_LAST`]: to be acknowledged.
    pub last: bool,
    /// The task that wrote the bytes.
    pub writer: u32,
    /// Heap offset of the first word.
    pub off: u64,
    /// Masks and bytes, as above.
    pub body: &'a [u8],
}

impl<'a> Diff<'a> {
    /// The message: [`TAG_DIFF`] or [`TAG_DIFF_LAST`], writer, heap
    /// offset (little-endian), the body.
    pub fn encode(&self) -> Vec<u8> {
        let mut m = Vec::with_capacity(UPDATE_HEADER + self.body.len());
        let tag = if self.last { TAG_DIFF_LAST } else { TAG_DIFF };
        m.extend_from_slice(&tag.to_le_bytes());
        m.extend_from_slice(&self.writer.to_le_bytes());
        m.extend_from_slice(&self.off.to_le_bytes());
        m.extend_from_slice(self.body);
        m
    }

    /// Splits a message; None unless it is a diff whose offset is
    /// 8-aligned and whose body is whole (every mask followed by its
    /// bytes), covers at least one word and stays in one page.
    pub fn parse(m: &'a [u8]) -> Option<Diff<'a>> {
        let tag = u32::from_le_bytes(m.get(0..4)?.try_into().ok()?);
        let writer = u32::from_le_bytes(m.get(4..8)?.try_into().ok()?);
        let off = u64::from_le_bytes(m.get(8..16)?.try_into().ok()?);
        let body = m.get(UPDATE_HEADER..)?;
        if !(tag == TAG_DIFF || tag == TAG_DIFF_LAST) || off % 8 != 0 || body.is_empty() {
            return None;
        }
        let mut words = 0u64;
        let mut i = 0usize;
        while let Some(&mask) = body.get(i) {
            if mask == 0 {
                words += 1 + u64::from(*body.get(i + 1)?);
                i += 2;
            } else {
                i += 1 + mask.count_ones() as usize;
                words += 1;
            }
        }
        let end = off.checked_add(words.checked_mul(8)?)?;
        let page = PAGE as u64;
        if i != body.len() || off / page != (end - 1) / page {
            return None;
        }
        Some(Diff {
            last: tag == TAG_DIFF_LAST,
            writer,
            off,
            body,
        })
    }

    /// Makes the encoded diff `m` the last of its release to its home.
    pub fn mark_last(m: &mut [u8]) {
        if let Some(tag) = m.get_mut(0..4) {
            tag.copy_from_slice(&TAG_DIFF_LAST.to_le_bytes());
        }
    }

    /// Calls `f` with each stretch of bytes sent within a word: its heap
    /// offset and the bytes (a whole word is one stretch).
    pub fn for_each(&self, mut f: impl FnMut(u64, &'a [u8])) {
        let body: &'a [u8] = self.body;
        let (mut i, mut at) = (0usize, self.off);
        while let Some(&mask) = body.get(i) {
            i += 1;
            if mask == 0 {
                let Some(&skip) = body.get(i) else { return };
                i += 1;
                at += 8 * (1 + u64::from(skip));
                continue;
            }
            let mut k = 0u32;
            while k < 8 {
                let run = (mask >> k).trailing_ones();
                if run == 0 {
                    k += 1;
                    continue;
                }
                let Some(bytes) = body.get(i..i + run as usize) else {
                    return;
                };
                f(at + u64::from(k), bytes);
                i += run as usize;
                k += run;
            }
            at += 8;
        }
    }
}

/// The diff messages of one page (`page`: its bytes, `masks`: one byte
/// per word, bit k for byte k to send) from `writer`, at heap offset
/// `page_off`: the words from the first with a mask to the last, cut
/// into bodies of at most `max_body` bytes (at least 9); words without
/// a mask cost 2 bytes a 256 inside a message and nothing between. None
/// is marked last.
pub fn encode_diffs(
    writer: u32,
    page_off: u64,
    page: &[u8],
    masks: &[u8],
    max_body: usize,
) -> Vec<Vec<u8>> {
    let max_body = max_body.max(9);
    let mut out = Vec::new();
    // The message being built, and words without a mask not yet in it.
    let mut msg: Vec<u8> = Vec::new();
    let mut gap = 0usize;
    for (w, &mask) in masks.iter().enumerate().take(page.len() / 8) {
        if mask == 0 {
            gap += 1;
            continue;
        }
        let need = 2 * gap.div_ceil(256) + 1 + mask.count_ones() as usize;
        if !msg.is_empty() && msg.len() - UPDATE_HEADER + need > max_body {
            out.push(std::mem::take(&mut msg));
        }
        if msg.is_empty() {
            msg = Diff {
                last: false,
                writer,
                off: page_off + 8 * w as u64,
                body: &[],
            }
            .encode();
        } else {
            while gap > 0 {
                let k = gap.min(256);
                msg.extend_from_slice(&[0, (k - 1) as u8]);
                gap -= k;
            }
        }
        gap = 0;
        msg.push(mask);
        for k in 0..8 {
            if mask & (1 << k) != 0 {
                msg.push(page[8 * w + k]);
            }
        }
    }
    if !msg.is_empty() {
        out.push(msg);
    }
    out
}

/// An eager invalidation: the page numbers, little-endian u64 each.
pub fn encode_invalidation(pages: &[u64]) -> Vec<u8> {
    pages.iter().flat_map(|p| p.to_le_bytes()).collect()
}

/// The page numbers of an invalidation that are inside a heap of
/// `heap_pages` pages; None when the message is not whole words or names
/// a page outside the heap (then none of it is applied).
pub fn parse_invalidation(m: &[u8], heap_pages: u64) -> Option<Vec<u64>> {
    if m.len() % 8 != 0 {
        return None;
    }
    m.chunks_exact(8)
        .map(|c| {
            let p = u64::from_le_bytes(c.try_into().ok()?);
            (p < heap_pages).then_some(p)
        })
        .collect()
}

/// Locks of a heap's table: a release names one below this.
pub const MAX_LOCKS: usize = L::MAX_LOCKS;
/// Bytes of a lock release before its view.
pub const UNLOCK_HEADER: usize = 12;

/// A lock's release, sent to the lock's home (which serves the next
/// ticket and rings its waiter): the lock, the ticket its releaser was
/// served (`None`: the one the lock's word says), and what the releaser
/// had seen of each task's write notices.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unlock {
    /// The lock's id, below [`MAX_LOCKS`].
    pub id: u32,
    /// The ticket being served.
    pub ticket: Option<u32>,
    /// Per task of the job, its notices the releaser had seen.
    pub view: Vec<u64>,
}

impl Unlock {
    /// The message: id, whether a ticket follows (0 or 1), the ticket (0
    /// without one), little-endian u32 each; then the view's words.
    pub fn encode(&self) -> Vec<u8> {
        let mut m = Vec::with_capacity(UNLOCK_HEADER + self.view.len() * 8);
        m.extend_from_slice(&self.id.to_le_bytes());
        m.extend_from_slice(&u32::from(self.ticket.is_some()).to_le_bytes());
        m.extend_from_slice(&self.ticket.unwrap_or(0).to_le_bytes());
        for v in &self.view {
            m.extend_from_slice(&v.to_le_bytes());
        }
        m
    }

    /// A release for a job of `tasks` tasks; None unless the message is
    /// exactly that long, names a lock below [`MAX_LOCKS`] and is in
    /// the canonical encoding.
    pub fn parse(m: &[u8], tasks: usize) -> Option<Unlock> {
        if m.len() != UNLOCK_HEADER.checked_add(tasks.checked_mul(8)?)? {
            return None;
        }
        let word = |i: usize| Some(u32::from_le_bytes(m.get(i..i + 4)?.try_into().ok()?));
        let (id, has, ticket) = (word(0)?, word(4)?, word(8)?);
        if id as usize >= L::MAX_LOCKS {
            return None;
        }
        let ticket = match (has, ticket) {
            (0, 0) => None,
            (1, t) => Some(t),
            _ => return None,
        };
        let view = m[UNLOCK_HEADER..]
            .chunks_exact(8)
            .map(|c| Some(u64::from_le_bytes(c.try_into().ok()?)))
            .collect::<Option<Vec<u64>>>()?;
        Some(Unlock { id, ticket, view })
    }
}

/// One allocation: pages `[start, start+pages)` of the heap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Range {
    /// First page.
    pub start: u64,
    /// Pages, at least one.
    pub pages: u64,
    /// Where its pages' homes are.
    pub placement: Placement,
    /// First first-touch directory word (FirstTouch only).
    pub ft: u64,
    /// Consistency protocol; changed by [`crate::Dsm::set_protocol`].
    pub protocol: Protocol,
    /// Index of the descriptor in rank 0's table (not encoded).
    pub idx: u64,
}

/// Why a descriptor cannot be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RangeError {
    /// Not written yet (its placement or protocol word is still zero):
    /// look again later.
    #[error("descriptor not written yet")]
    Pending,
    /// Written, but a field is out of range (unknown placement or
    /// protocol, no pages, pages outside the heap or the first-touch
    /// directory, an explicit home outside the job).
    #[error("descriptor out of range")]
    Invalid,
}

impl Range {
    /// The descriptor (see `layout::RANGE_*`).
    pub fn encode(&self) -> [u8; RANGE_BYTES] {
        let (kind, param) = match self.placement {
            Placement::Block => (1u32, 0u32),
            Placement::Cyclic(b) => (2, b),
            Placement::FirstTouch => (3, 0),
            Placement::Explicit(r) => (4, r),
        };
        let mut b = [0u8; L::RANGE_BYTES];
        b[0..8].copy_from_slice(&self.start.to_le_bytes());
        b[8..16].copy_from_slice(&self.pages.to_le_bytes());
        b[16..20].copy_from_slice(&kind.to_le_bytes());
        b[20..24].copy_from_slice(&param.to_le_bytes());
        b[24..32].copy_from_slice(&self.ft.to_le_bytes());
        b[L::RANGE_PROTOCOL..L::RANGE_PROTOCOL + 4]
            .copy_from_slice(&self.protocol.code().to_le_bytes());
        b
    }

    /// Decodes descriptor `idx` of a job of `tasks` tasks whose heap has
    /// `heap_pages` pages.
    pub fn decode(b: &[u8], idx: u64, heap_pages: u64, tasks: u32) -> Result<Range, RangeError> {
        let u64_at = |o: usize| {
            b.get(o..o + 8)
                .and_then(|s| s.try_into().ok())
                .map(u64::from_le_bytes)
                .ok_or(RangeError::Invalid)
        };
        let u32_at = |o: usize| {
            b.get(o..o + 4)
                .and_then(|s| s.try_into().ok())
                .map(u32::from_le_bytes)
                .ok_or(RangeError::Invalid)
        };
        let (kind, param, code) = (u32_at(16)?, u32_at(20)?, u32_at(L::RANGE_PROTOCOL)?);
        if kind == 0 || code == 0 {
            return Err(RangeError::Pending);
        }
        let placement = match (kind, param) {
            (1, _) => Placement::Block,
            (2, p) => Placement::Cyclic(p.max(1)),
            (3, _) => Placement::FirstTouch,
            (4, r) if r < tasks => Placement::Explicit(r),
            _ => return Err(RangeError::Invalid),
        };
        let r = Range {
            start: u64_at(0)?,
            pages: u64_at(8)?,
            placement,
            ft: u64_at(24)?,
            protocol: Protocol::from_code(code).ok_or(RangeError::Invalid)?,
            idx,
        };
        let fits = |first: u64, limit: u64| first.checked_add(r.pages).is_some_and(|e| e <= limit);
        if r.pages == 0
            || !fits(r.start, heap_pages)
            || (placement == Placement::FirstTouch && !fits(r.ft, FT_WORDS))
        {
            return Err(RangeError::Invalid);
        }
        Ok(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_releases_round_trip_and_are_checked() {
        let u = Unlock {
            id: 7,
            ticket: Some(u32::MAX),
            view: vec![1, u64::MAX, 0],
        };
        let m = u.encode();
        assert_eq!(Unlock::parse(&m, 3), Some(u.clone()));
        assert_eq!(Unlock::parse(&m, 2), None, "another job size");
        assert_eq!(Unlock::parse(&m[..m.len() - 1], 3), None, "short");
        let none = Unlock { ticket: None, ..u };
        assert_eq!(Unlock::parse(&none.encode(), 3), Some(none));
        let mut bad = m.clone();
        bad[4] = 2;
        assert_eq!(Unlock::parse(&bad, 3), None, "flag neither 0 nor 1");
        let mut bad = m.clone();
        bad[0..4].copy_from_slice(&(L::MAX_LOCKS as u32).to_le_bytes());
        assert_eq!(Unlock::parse(&bad, 3), None, "no such lock");
        let mut bad = Unlock {
            ticket: None,
            ..Unlock::parse(&m, 3).unwrap()
        }
        .encode();
        bad[8] = 1;
        assert_eq!(Unlock::parse(&bad, 3), None, "a ticket without its flag");
        assert_eq!(Unlock::parse(&m, usize::MAX), None, "overflowing size");
    }

    #[test]
    fn updates_round_trip_and_stay_in_a_page() {
        let u = Update {
            tag: TAG_COPY,
            writer: 3,
            off: 8190,
            data: &[1, 2],
        };
        assert_eq!(Update::parse(&u.encode()), Some(u));
        let cross = Update { off: 8191, ..u };
        assert_eq!(Update::parse(&cross.encode()), None);
        assert_eq!(Update::parse(&[0; 16]), None, "no data");
        assert_eq!(Update::parse(&[0; 15]), None, "short");
    }

    #[test]
    fn updates_at_the_end_of_the_address_space_are_refused() {
        for (off, len) in [(u64::MAX - 15, 16), (u64::MAX, 1), (u64::MAX - 4095, 4096)] {
            let data = vec![7u8; len];
            let u = Update {
                tag: TAG_HOME,
                writer: 0,
                off,
                data: &data,
            };
            assert_eq!(Update::parse(&u.encode()), None, "off {off:#x} len {len}");
        }
        let last = Update {
            tag: TAG_HOME,
            writer: 0,
            off: u64::MAX - 1,
            data: &[1],
        };
        assert_eq!(
            Update::parse(&last.encode()).map(|u| u.end()),
            Some(u64::MAX)
        );
    }

    #[test]
    fn diffs_carry_exactly_the_masked_bytes() {
        // A page with pseudo-random masks (many words without one).
        let page: Vec<u8> = (0..PAGE).map(|i| (i * 31 + 7) as u8).collect();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let masks: Vec<u8> = (0..PAGE / 8)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                if x % 3 == 0 {
                    0
                } else {
                    (x >> 8) as u8
                }
            })
            .collect();
        // And a page with only its first and last words (gaps over 256).
        let mut sparse = vec![0u8; PAGE / 8];
        sparse[0] = 0x81;
        sparse[PAGE / 8 - 1] = 0xff;
        let off0 = 5 * PAGE as u64;
        for (masks, max) in [9, 100, DIFF_BODY]
            .into_iter()
            .map(|m| (&masks, m))
            .chain([(&sparse, DIFF_BODY), (&sparse, 9)])
        {
            let msgs = encode_diffs(4, off0, &page, masks, max);
            let mut got = vec![None; PAGE];
            for m in &msgs {
                assert!(m.len() <= UPDATE_HEADER + max);
                let d = Diff::parse(m).expect("parses");
                assert_eq!(d.encode(), *m);
                assert_eq!(d.writer, 4);
                d.for_each(|at, bytes| {
                    for (k, &b) in bytes.iter().enumerate() {
                        let i = (at - off0) as usize + k;
                        assert!(got[i].is_none(), "byte {i} twice");
                        got[i] = Some(b);
                    }
                });
            }
            for i in 0..PAGE {
                let sent = masks[i / 8] & (1 << (i % 8)) != 0;
                assert_eq!(got[i], sent.then_some(page[i]), "byte {i}, max {max}");
            }
        }
        assert!(encode_diffs(0, 0, &page, &vec![0; PAGE / 8], DIFF_BODY).is_empty());
    }

    /// The fuzz target's checks on many pseudo-random messages, most of
    /// them diffs by their tag, some at the end of a page or of the
    /// address space.
    #[test]
    fn random_diffs_never_panic_and_stay_in_their_page() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut accepted = 0;
        for _ in 0..50_000 {
            let r = next();
            let tag = [TAG_DIFF, TAG_DIFF_LAST, TAG_HOME][(r % 3) as usize];
            let off = match (r >> 8) % 4 {
                0 => (r >> 16) % (4 * PAGE as u64),
                1 => PAGE as u64 - 8 * ((r >> 16) % 4 + 1),
                2 => u64::MAX - (r >> 16) % 64,
                _ => next(),
            };
            let len = (r >> 32) as usize % 40;
            let mut m = Vec::with_capacity(16 + len);
            m.extend_from_slice(&tag.to_le_bytes());
            m.extend_from_slice(&1u32.to_le_bytes());
            m.extend_from_slice(&off.to_le_bytes());
            for _ in 0..len {
                // Sparse masks and skips are likelier than at random.
                let b = next();
                m.push(if b % 4 == 0 { 0 } else { (b >> 8) as u8 });
            }
            let Some(d) = Diff::parse(&m) else { continue };
            accepted += 1;
            assert_eq!(d.encode(), m);
            let page = d.off / PAGE as u64;
            let mut prev = d.off;
            d.for_each(|at, b| {
                assert!(at >= prev && !b.is_empty());
                prev = at + b.len() as u64;
                assert_eq!((prev - 1) / PAGE as u64, page);
            });
        }
        assert!(accepted > 500, "{accepted} accepted");
    }

    #[test]
    fn diffs_are_checked() {
        let d = |off: u64, body: &[u8]| {
            let m = Diff {
                last: false,
                writer: 1,
                off,
                body,
            }
            .encode();
            Diff::parse(&m).map(|_| ()).ok_or(())
        };
        assert!(d(0, &[0b101, 1, 2]).is_ok());
        assert!(d(8, &[0, 0, 0xff, 1, 2, 3, 4, 5, 6, 7, 8]).is_ok());
        assert!(d(0, &[0, 255, 1, 1]).is_ok(), "256 words skipped");
        assert!(
            d(0, &[0, 255, 0, 254, 1, 1]).is_ok(),
            "the page's last word"
        );
        assert!(d(0, &[0, 255, 0, 255, 1, 1]).is_err(), "past the page");
        assert!(d(0, &[1, 1, 0]).is_err(), "a skip without its count");
        assert!(d(4, &[1, 1]).is_err(), "unaligned");
        assert!(d(0, &[]).is_err(), "no word");
        assert!(d(0, &[0b11, 1]).is_err(), "a byte short");
        assert!(d(0, &[1, 1, 2]).is_err(), "a mask without its byte");
        // The last word of a page, then one word too many.
        let last = PAGE as u64 - 8;
        assert!(d(last, &[0x80, 9]).is_ok());
        assert!(d(last, &[0x80, 9, 1, 9]).is_err(), "crosses a page");
        assert!(d(u64::MAX - 7, &[1, 1]).is_err(), "wraps");
        let up = Update {
            tag: TAG_HOME,
            writer: 0,
            off: 0,
            data: &[1, 1],
        };
        assert_eq!(Diff::parse(&up.encode()), None, "not a diff");
        // Bits past the stretch's bytes: each bit's byte, in order.
        let mut m = Diff {
            last: false,
            writer: 0,
            off: 16,
            body: &[0b1100_0101, 1, 2, 3, 4, 0, 1, 0b1000_0000, 5],
        }
        .encode();
        assert!(!Diff::parse(&m).is_some_and(|d| d.last));
        Diff::mark_last(&mut m);
        let mut got = Vec::new();
        Diff::parse(&m)
            .filter(|d| d.last)
            .expect("parses")
            .for_each(|at, b| got.push((at, b.to_vec())));
        assert_eq!(
            got,
            vec![
                (16, vec![1]),
                (18, vec![2]),
                (22, vec![3, 4]),
                (47, vec![5])
            ]
        );
    }

    #[test]
    fn invalidations_name_heap_pages_only() {
        assert_eq!(
            parse_invalidation(&encode_invalidation(&[0, 5, 9]), 10),
            Some(vec![0, 5, 9])
        );
        assert_eq!(parse_invalidation(&encode_invalidation(&[10]), 10), None);
        assert_eq!(
            parse_invalidation(&encode_invalidation(&[u64::MAX]), 10),
            None
        );
        assert_eq!(parse_invalidation(&[0; 9], 10), None);
        assert_eq!(parse_invalidation(&[], 10), Some(vec![]));
    }

    #[test]
    fn descriptors_round_trip_and_are_checked() {
        let r = Range {
            start: 2,
            pages: 3,
            placement: Placement::Cyclic(4),
            ft: 0,
            protocol: Protocol::Update,
            idx: 7,
        };
        assert_eq!(Range::decode(&r.encode(), 7, 5, 2), Ok(r));
        assert_eq!(
            Range::decode(&r.encode(), 7, 4, 2),
            Err(RangeError::Invalid),
            "past the heap"
        );
        let wrap = Range {
            start: u64::MAX,
            pages: 2,
            ..r
        };
        assert_eq!(
            Range::decode(&wrap.encode(), 7, u64::MAX, 2),
            Err(RangeError::Invalid)
        );
        let empty = Range { pages: 0, ..r };
        assert_eq!(
            Range::decode(&empty.encode(), 7, 5, 2),
            Err(RangeError::Invalid)
        );
        let ft = Range {
            placement: Placement::FirstTouch,
            ft: L::FT_WORDS as u64 - 1,
            ..r
        };
        assert_eq!(
            Range::decode(&ft.encode(), 7, 5, 2),
            Err(RangeError::Invalid)
        );
        let far = Range {
            placement: Placement::Explicit(2),
            ..r
        };
        assert_eq!(
            Range::decode(&far.encode(), 7, 5, 2),
            Err(RangeError::Invalid)
        );
        assert_eq!(
            Range::decode(&[0; L::RANGE_BYTES], 0, 5, 2),
            Err(RangeError::Pending)
        );
        assert_eq!(Range::decode(&[1; 10], 0, 5, 2), Err(RangeError::Invalid));
    }
}
