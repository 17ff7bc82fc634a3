//! The DSM's messages between tasks, as bytes: update SIGNALs, eager
//! invalidation SIGNALs, and the allocation descriptors rank 0 keeps in
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
