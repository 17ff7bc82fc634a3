//! The replay window of one (sender, receiver, epoch) key: which
//! transmission counters were already accepted.

/// Counters this far below the highest accepted one are still taken, once
/// each; older ones are refused (the reliable layer sends those packets
/// again, under new counters).
pub const WINDOW: u64 = 1024;

const WORDS: usize = (WINDOW / 64) as usize;

/// Accepted counters: the highest, and a bitmap of the [`WINDOW`] below
/// and including it (bit `c % WINDOW` stands for counter `c`).
#[derive(Debug, Clone)]
pub(crate) struct Window {
    top: u64,
    bits: [u64; WORDS],
}

impl Window {
    pub(crate) fn new() -> Self {
        Self {
            top: 0,
            bits: [0; WORDS],
        }
    }

    /// The 64-bit counter whose low 32 bits are `low`, nearest to the
    /// highest accepted one (RFC 4303's extended sequence numbers, App. A).
    pub(crate) fn infer(&self, low: u32) -> u64 {
        let cand = (self.top & !0xffff_ffff) | u64::from(low);
        if cand + (1 << 31) < self.top {
            cand + (1 << 32)
        } else if cand > self.top + (1 << 31) && cand >= 1 << 32 {
            cand - (1 << 32)
        } else {
            cand
        }
    }

    /// True when `c` could still be accepted: above the window's floor and
    /// not seen. Checked before the tag (cheap), marked after it.
    pub(crate) fn fresh(&self, c: u64) -> bool {
        if c == 0 {
            return false;
        }
        if c > self.top {
            return true;
        }
        if self.top - c >= WINDOW {
            return false;
        }
        let b = (c % WINDOW) as usize;
        self.bits[b / 64] & (1 << (b % 64)) == 0
    }

    /// Marks `c` accepted; `fresh(c)` must have held.
    pub(crate) fn mark(&mut self, c: u64) {
        if c > self.top {
            let gap = c - self.top;
            if gap >= WINDOW {
                self.bits = [0; WORDS];
            } else {
                for x in self.top + 1..c {
                    let b = (x % WINDOW) as usize;
                    self.bits[b / 64] &= !(1 << (b % 64));
                }
            }
            self.top = c;
        }
        let b = (c % WINDOW) as usize;
        self.bits[b / 64] |= 1 << (b % 64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_counter_once_and_nothing_below_the_window() {
        let mut w = Window::new();
        assert!(!w.fresh(0));
        for c in [5, 3, 4, 1, 2] {
            assert!(w.fresh(c));
            w.mark(c);
            assert!(!w.fresh(c));
        }
        w.mark(5 + WINDOW);
        assert!(!w.fresh(5), "fell below the window");
        assert!(w.fresh(6 + WINDOW / 2), "inside the window, never seen");
        assert!(!w.fresh(5 + WINDOW));
    }

    #[test]
    fn a_jump_clears_bits_of_counters_it_skipped() {
        let mut w = Window::new();
        w.mark(10);
        w.mark(10 + WINDOW + 3);
        // 10 + WINDOW shares a bit with 10; it was never accepted.
        assert!(w.fresh(10 + WINDOW));
    }

    #[test]
    fn high_bits_are_inferred_across_the_32_bit_wrap() {
        let mut w = Window::new();
        w.mark(0xffff_fff0);
        assert_eq!(w.infer(0xffff_fff5), 0xffff_fff5);
        assert_eq!(w.infer(3), 0x1_0000_0003);
        w.mark(0x1_0000_0003);
        assert_eq!(w.infer(0xffff_fff8), 0xffff_fff8);
        assert_eq!(w.infer(9), 0x1_0000_0009);
    }
}
