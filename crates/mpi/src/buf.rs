//! User buffers: memory a C caller lends the library for the life of an
//! operation. The only module besides `ffi` with unsafe code.

#![allow(unsafe_code)]

/// A receive buffer: `len` writable bytes at `ptr`, lent by the caller
/// until the receive completes (MPI's rule for every buffer of a
/// pending operation).
#[derive(Debug, Clone, Copy)]
pub(crate) struct UserBuf {
    ptr: usize,
    len: usize,
}

impl UserBuf {
    /// # Safety
    /// `ptr` is null only when `len` is 0, and otherwise points to `len`
    /// writable bytes that stay valid, and that nobody else accesses,
    /// until the operation using this buffer completes.
    pub(crate) unsafe fn new(ptr: *mut u8, len: usize) -> UserBuf {
        UserBuf {
            ptr: ptr as usize,
            len: if ptr.is_null() { 0 } else { len },
        }
    }

    /// Capacity in bytes.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Copies `data` to the start of the buffer, at most its capacity;
    /// the number of bytes copied.
    pub(crate) fn fill(&self, data: &[u8]) -> usize {
        let n = data.len().min(self.len);
        if n > 0 {
            // SAFETY: `new`'s contract: `n <= len` writable bytes at ptr,
            // ours until the operation completes; `data` is our own
            // memory, so the ranges do not overlap.
            unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), self.ptr as *mut u8, n) };
        }
        n
    }

    /// The buffer as a mutable slice.
    pub(crate) fn as_mut(&mut self) -> &mut [u8] {
        if self.len == 0 {
            return &mut [];
        }
        // SAFETY: `new`'s contract; `&mut self` keeps this the only
        // slice made from this buffer at a time.
        unsafe { std::slice::from_raw_parts_mut(self.ptr as *mut u8, self.len) }
    }
}
