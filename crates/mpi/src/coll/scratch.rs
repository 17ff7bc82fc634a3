//! A collective's receive space for data it combines rather than keeps
//! (a reduction's operand): one buffer per thread, reused from call to
//! call, so a large reduction neither zeroes nor faults in fresh memory
//! every time.

use std::cell::Cell;
use std::ops::{Deref, DerefMut};

/// Largest buffer kept between calls; a larger one is freed after use.
const KEEP: usize = 64 << 20;

thread_local! {
    static SPARE: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
}

/// `len` bytes of the thread's reusable buffer (their content is
/// whatever an earlier call left). Taken out of the thread's slot while
/// in use: a collective nested inside (a user operation calling MPI)
/// gets a buffer of its own.
pub(crate) struct Scratch {
    buf: Vec<u8>,
    len: usize,
}

impl Scratch {
    pub(crate) fn take(len: usize) -> Scratch {
        let mut buf = SPARE.take();
        if buf.len() < len {
            buf.resize(len, 0);
        }
        Scratch { buf, len }
    }
}

impl Deref for Scratch {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

impl DerefMut for Scratch {
    fn deref_mut(&mut self) -> &mut [u8] {
        &mut self.buf[..self.len]
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if self.buf.len() <= KEEP {
            let buf = std::mem::take(&mut self.buf);
            SPARE.with(|s| {
                // Keep the larger of the two (a nested call's may be).
                let other = s.take();
                s.set(if other.len() > buf.len() { other } else { buf });
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Scratch;

    #[test]
    fn the_buffer_is_reused_and_nested_takes_get_their_own() {
        let ptr = {
            let mut a = Scratch::take(4096);
            a[0] = 7;
            {
                let b = Scratch::take(100);
                assert_eq!(b.len(), 100);
                assert_ne!(b.as_ptr(), a.as_ptr());
            }
            a.as_ptr()
        };
        let c = Scratch::take(1000);
        assert_eq!(c.len(), 1000);
        assert_eq!(c.as_ptr(), ptr);
        assert_eq!(c[0], 7);
    }
}
