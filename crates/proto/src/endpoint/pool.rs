//! Buffers for the copies of large operations, reused once the
//! operation is acknowledged.

use std::collections::VecDeque;
use std::sync::Arc;

/// Copies of large operations, kept to be filled again once every packet
/// cut from them is acknowledged: a stream of large WRITEs then copies into
/// memory that is already mapped and warm instead of fresh pages (a page
/// fault and a zeroed page per 4 KiB, as freed large blocks go back to the
/// kernel).
#[derive(Debug, Default)]
pub(crate) struct Pool {
    /// Oldest first; each one also held by the chunks of an operation
    /// still in flight, or by this pool alone (free to reuse).
    bufs: VecDeque<Arc<[u8]>>,
    /// Bytes of `bufs`.
    bytes: usize,
    /// Copies made into a buffer filled before ([`crate::Stats::pooled_reuses`]).
    pub(crate) reused: u64,
}

/// Operations smaller than this are copied into a fresh allocation (the
/// allocator reuses small blocks well on its own).
const POOL_MIN: usize = 64 << 10;
/// Most bytes the pool keeps; it evicts the oldest copy past this.
const POOL_BYTES: usize = 16 << 20;

impl Pool {
    /// A copy of `data`, in a pooled buffer of its exact size when one is
    /// free.
    pub(crate) fn copy(&mut self, data: &[u8]) -> Arc<[u8]> {
        if data.len() < POOL_MIN || data.len() > POOL_BYTES {
            return data.into();
        }
        for i in 0..self.bufs.len() {
            if self.bufs[i].len() != data.len() {
                continue;
            }
            if let Some(b) = Arc::get_mut(&mut self.bufs[i]) {
                b.copy_from_slice(data);
                self.reused += 1;
                let b = self.bufs.remove(i).unwrap_or_else(|| data.into());
                self.bufs.push_back(b.clone());
                return b;
            }
        }
        let b: Arc<[u8]> = data.into();
        self.bytes += b.len();
        self.bufs.push_back(b.clone());
        while self.bytes > POOL_BYTES {
            match self.bufs.pop_front() {
                Some(old) => self.bytes -= old.len(),
                None => break,
            }
        }
        b
    }
}

#[cfg(test)]
mod tests {
    use super::{Pool, POOL_BYTES, POOL_MIN};

    #[test]
    fn a_released_copy_is_filled_again_and_a_held_one_never() {
        let mut pool = Pool::default();
        let a = vec![1u8; POOL_MIN];
        let first = pool.copy(&a);
        let p = first.as_ptr();
        // Still held by its packets: a second copy needs new memory.
        let second = pool.copy(&[2u8; POOL_MIN]);
        assert_ne!(second.as_ptr(), p);
        assert_eq!(&first[..], &a[..]);
        drop(first);
        let third = pool.copy(&[3u8; POOL_MIN]);
        assert_eq!(third.as_ptr(), p);
        assert!(third.iter().all(|&b| b == 3));
        assert!(second.iter().all(|&b| b == 2));
    }

    #[test]
    fn small_and_odd_sizes_are_not_pooled_and_the_pool_is_bounded() {
        let mut pool = Pool::default();
        let small = pool.copy(&[1u8; 100]);
        assert_eq!(small.len(), 100);
        assert_eq!(pool.bytes, 0);
        for i in 0..(2 * POOL_BYTES / POOL_MIN) {
            let c = pool.copy(&vec![i as u8; POOL_MIN + i]);
            assert_eq!(c.len(), POOL_MIN + i);
            assert!(pool.bytes <= POOL_BYTES);
        }
        assert_eq!(pool.bytes, pool.bufs.iter().map(|b| b.len()).sum::<usize>());
    }
}
