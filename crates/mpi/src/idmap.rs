//! Maps keyed by the library's own handle numbers (requests,
//! communicators, types): hashed with one multiply instead of SipHash,
//! which took a tenth of a small message's round trip. The keys are the
//! program's own handles, so there is no one to flood a table but the
//! program itself.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A `HashMap` from handle numbers to `V` (build with `IdMap::default()`).
pub(crate) type IdMap<V> = HashMap<usize, V, BuildHasherDefault<IdHasher>>;

/// Fibonacci hashing of one integer; the high half folded into the low
/// bits, which pick the bucket (handles step by 8).
#[derive(Default)]
pub(crate) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, x: u64) {
        let h = (self.0 ^ x).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.0 = h ^ (h >> 29);
    }

    fn write_usize(&mut self, x: usize) {
        self.write_u64(x as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_spread_over_buckets() {
        // Handles step by 8: the low bits must still differ.
        let lows: std::collections::HashSet<u64> = (0..64usize)
            .map(|k| {
                let mut h = IdHasher::default();
                h.write_usize(0x1000 + 8 * k);
                h.finish() & 63
            })
            .collect();
        assert!(lows.len() > 32, "{}", lows.len());
        let mut m: IdMap<u32> = IdMap::default();
        for k in 0..1000 {
            m.insert(8 * k, k as u32);
        }
        assert!((0..1000).all(|k| m[&(8 * k)] == k as u32));
    }
}
