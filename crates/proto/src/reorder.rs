//! The receiver's out-of-order buffer of one channel, with its byte cost
//! accounted per channel and endpoint-wide.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// What one stored datagram costs besides its bytes (map node, vector
/// header): counted so that tiny datagrams cannot slip under the budget.
const ENTRY_OVERHEAD: usize = 64;

/// What holding a datagram of `len` bytes counts against the budgets.
pub(crate) fn cost(len: usize) -> usize {
    len + ENTRY_OVERHEAD
}

/// Datagrams that arrived past a hole, by sequence number. The bytes held
/// are added to a counter shared by every channel of the endpoint and
/// taken off again however the buffer empties (delivery, clear, drop).
#[derive(Default)]
pub(crate) struct Reorder {
    map: BTreeMap<u64, Vec<u8>>,
    bytes: usize,
    total: Option<Arc<AtomicUsize>>,
}

/// Why a datagram was not stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// Already held.
    Duplicate,
    /// Over the channel's or the endpoint's byte budget.
    Budget,
}

impl Reorder {
    /// Stores `data` as packet `seq` if it fits both budgets: `limit`
    /// bytes for this channel, `total_limit` for all channels sharing
    /// `total`.
    pub(crate) fn insert(
        &mut self,
        seq: u64,
        data: &[u8],
        limit: usize,
        total: &Arc<AtomicUsize>,
        total_limit: usize,
    ) -> Result<(), Refused> {
        if self.map.contains_key(&seq) {
            return Err(Refused::Duplicate);
        }
        let cost = cost(data.len());
        let held = total.load(Ordering::Relaxed);
        if self.bytes + cost > limit || held + cost > total_limit {
            return Err(Refused::Budget);
        }
        let shared = self.total.get_or_insert_with(|| total.clone());
        shared.fetch_add(cost, Ordering::Relaxed);
        self.bytes += cost;
        self.map.insert(seq, data.to_vec());
        Ok(())
    }

    /// Takes packet `seq` out, if held.
    pub(crate) fn remove(&mut self, seq: u64) -> Option<Vec<u8>> {
        let d = self.map.remove(&seq)?;
        self.release(cost(d.len()));
        Some(d)
    }

    /// Drops everything held.
    pub(crate) fn clear(&mut self) {
        self.map.clear();
        self.release(self.bytes);
    }

    /// Sequence numbers held, ascending.
    pub(crate) fn keys(&self) -> impl Iterator<Item = &u64> {
        self.map.keys()
    }

    /// Bytes held, overhead included.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    fn release(&mut self, cost: usize) {
        self.bytes -= cost;
        if let Some(t) = &self.total {
            t.fetch_sub(cost, Ordering::Relaxed);
        }
    }
}

impl Drop for Reorder {
    fn drop(&mut self) {
        self.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_hold_and_accounting_returns_to_zero() {
        let total = Arc::new(AtomicUsize::new(0));
        let mut a = Reorder::default();
        let mut b = Reorder::default();
        let d = [0u8; 100];
        let cost = 100 + ENTRY_OVERHEAD;
        assert_eq!(a.insert(1, &d, 2 * cost, &total, 3 * cost), Ok(()));
        assert_eq!(
            a.insert(1, &d, 2 * cost, &total, 3 * cost),
            Err(Refused::Duplicate)
        );
        assert_eq!(a.insert(2, &d, 2 * cost, &total, 3 * cost), Ok(()));
        assert_eq!(
            a.insert(3, &d, 2 * cost, &total, 3 * cost),
            Err(Refused::Budget)
        );
        assert_eq!(b.insert(7, &d, 2 * cost, &total, 3 * cost), Ok(()));
        assert_eq!(
            b.insert(8, &d, 2 * cost, &total, 3 * cost),
            Err(Refused::Budget)
        );
        assert_eq!(total.load(Ordering::Relaxed), 3 * cost);
        assert!(a.remove(1).is_some());
        assert_eq!(a.bytes(), cost);
        drop(a);
        b.clear();
        assert_eq!(total.load(Ordering::Relaxed), 0);
    }
}
