//! Byte buffers of the nonblocking collectives, recycled between them
//! (in any thread: a schedule may finish in the signal handler's). The
//! blocking collectives' copies of their arguments (`ffi/collarg.rs`)
//! come from here too and go back after the call.
//!
//! A collective of 64 KiB blocks allocates and frees a few hundred KiB
//! per call. Freed, they sit at the top of malloc's heap, which it
//! trims back to the kernel; the next call grows the heap again and
//! faults every page in: two `brk` and dozens of page faults per call,
//! which cost more than the messages themselves. Buffers kept here stay
//! mapped between calls.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Smallest buffer worth keeping: malloc's bins serve smaller ones
/// without going to the kernel.
const MIN_KEPT: usize = 16 << 10;
/// At most this many buffers are kept ...
const MAX_BUFS: usize = 16;
/// ... of at most this many bytes together.
const MAX_BYTES: usize = 64 << 20;

static KEPT: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());

/// Bytes nonblocking collectives copied between their caller's buffers
/// and buffers of ours: in at the call, out at completion
/// (`nbc_copied_bytes` of the statistics).
static CALLER_BYTES: AtomicU64 = AtomicU64::new(0);

/// Counts `n` bytes copied between a caller's buffer and ours.
pub(crate) fn caller_copy(n: usize) {
    CALLER_BYTES.fetch_add(n as u64, Ordering::Relaxed);
}

/// Bytes counted by [`caller_copy`] so far.
pub(crate) fn caller_bytes() -> u64 {
    CALLER_BYTES.load(Ordering::Relaxed)
}

fn kept() -> std::sync::MutexGuard<'static, Vec<Vec<u8>>> {
    KEPT.lock().unwrap_or_else(|e| e.into_inner())
}

/// A buffer with room for `n` bytes, holding what it held: the
/// smallest kept one that fits, or a new (empty) one.
fn room(n: usize) -> Vec<u8> {
    if n >= MIN_KEPT {
        let mut k = kept();
        let best = (0..k.len())
            .filter(|&i| k[i].capacity() >= n)
            .min_by_key(|&i| k[i].capacity());
        if let Some(i) = best {
            return k.swap_remove(i);
        }
    }
    Vec::with_capacity(n)
}

/// `n` zero bytes.
pub(crate) fn zeroed(n: usize) -> Vec<u8> {
    if n < MIN_KEPT {
        return vec![0; n];
    }
    let mut v = room(n);
    v.clear();
    v.resize(n, 0);
    v
}

/// `n` bytes for a caller that writes every one of them before it reads
/// any: a kept buffer's old bytes (the library's own, from an earlier
/// collective of this task), zeros where it had none.
pub(crate) fn overwritten(n: usize) -> Vec<u8> {
    if n < MIN_KEPT {
        return vec![0; n];
    }
    let mut v = room(n);
    v.truncate(n);
    v.resize(n, 0);
    v
}

/// A copy of `d`.
pub(crate) fn copied(d: &[u8]) -> Vec<u8> {
    // Old bytes stay until overwritten: only new room is zeroed first.
    let mut v = room(d.len());
    v.truncate(d.len());
    v.resize(d.len(), 0);
    sss_mbcf::copy_bytes(&mut v, d);
    v
}

/// Takes `v` back for later calls, when it is worth keeping and there
/// is room; frees it otherwise (the smallest kept one makes way for a
/// larger one).
pub(crate) fn give(v: Vec<u8>) {
    if v.capacity() < MIN_KEPT || v.capacity() > MAX_BYTES {
        return;
    }
    let mut k = kept();
    let mut bytes: usize = k.iter().map(Vec::capacity).sum();
    while !k.is_empty() && (k.len() >= MAX_BUFS || bytes + v.capacity() > MAX_BYTES) {
        let Some(i) = (0..k.len()).min_by_key(|&i| k[i].capacity()) else {
            break;
        };
        if k[i].capacity() >= v.capacity() {
            return;
        }
        bytes -= k.swap_remove(i).capacity();
    }
    k.push(v);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One test touches the pool: tests run in parallel.
    #[test]
    fn buffers_come_back_zeroed_or_copied_and_the_pool_stays_bounded() {
        let v = zeroed(100 << 10);
        let p = v.as_ptr();
        give(v);
        let mut w = copied(&[7u8; 64 << 10]);
        assert_eq!(w.as_ptr(), p, "the kept buffer serves the next call");
        assert!(w.iter().all(|&b| b == 7) && w.len() == 64 << 10);
        w.iter_mut().for_each(|b| *b = 9);
        give(w);
        let z = zeroed(80 << 10);
        assert!(z.iter().all(|&b| b == 0) && z.len() == 80 << 10);
        give(z);
        let o = overwritten(50 << 10);
        assert_eq!(o.len(), 50 << 10);
        give(o);
        assert_eq!(overwritten(200 << 10).len(), 200 << 10);
        for _ in 0..3 * MAX_BUFS {
            give(Vec::with_capacity(4 << 20));
        }
        give(Vec::with_capacity(MAX_BYTES + 1));
        give(vec![0; 100]);
        let k = kept();
        assert!(k.len() <= MAX_BUFS);
        assert!(k.iter().map(Vec::capacity).sum::<usize>() <= MAX_BYTES);
        assert!(k.iter().all(|v| v.capacity() >= MIN_KEPT));
    }
}
