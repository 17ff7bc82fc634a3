//! The lock of a same-node peer's send path: taken with one
//! compare-and-swap and given back with a plain store, where the
//! standard mutex gives it back with a second locked instruction (to
//! learn whether to wake a sleeper). A WRITE + notify to a peer on the
//! node takes it once; 5 ns of its 63. It never sleeps: a thread that
//! finds it taken spins, and yields between spins, so a holder that lost
//! its CPU gets it back.

#![allow(unsafe_code)]

use lock_api::{GuardSend, RawMutex};
use std::sync::atomic::{AtomicBool, Ordering};

/// Turns of a waiting thread between its yields.
const SPINS: u32 = 64;

/// The raw lock: `true` while held.
pub(crate) struct RawSpin(AtomicBool);

// SAFETY: `lock` and `try_lock` succeed only through this thread's own
// compare-and-swap of `false` to `true` (Acquire), so one holder at a
// time; lock_api calls `unlock` only for the holder, whose store
// (Release) makes its writes visible to the next holder's Acquire.
unsafe impl RawMutex for RawSpin {
    const INIT: RawSpin = RawSpin(AtomicBool::new(false));
    type GuardMarker = GuardSend;

    fn lock(&self) {
        let mut turns: u32 = 0;
        while !self.try_lock() {
            // Loads while it is held: the line stays shared until the
            // holder's store.
            while self.0.load(Ordering::Relaxed) {
                turns = turns.wrapping_add(1);
                if turns % SPINS == 0 {
                    std::thread::yield_now();
                } else {
                    std::hint::spin_loop();
                }
            }
        }
    }

    fn try_lock(&self) -> bool {
        self.0
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    unsafe fn unlock(&self) {
        self.0.store(false, Ordering::Release);
    }
}

/// A value behind [`RawSpin`].
pub(crate) type SpinMutex<T> = lock_api::Mutex<RawSpin, T>;

#[cfg(test)]
mod tests {
    use super::SpinMutex;
    use std::sync::Arc;

    /// Threads that add under the lock lose no addition, also when
    /// there are more of them than CPUs (a holder preempted mid-way).
    #[test]
    fn holders_exclude_each_other() {
        let m = Arc::new(SpinMutex::new(0u64));
        let hs: Vec<_> = (0..8)
            .map(|_| {
                let m = m.clone();
                std::thread::spawn(move || {
                    for _ in 0..20_000 {
                        let mut g = m.lock();
                        let v = *g;
                        std::hint::black_box(&v);
                        *g = v + 1;
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(*m.lock(), 160_000);
    }
}
