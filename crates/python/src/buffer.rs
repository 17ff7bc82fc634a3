//! Memory as a writable buffer (the buffer protocol), so that Python sees
//! it itself: `memoryview(seg)`, `numpy.frombuffer(region, ...)`.

#![allow(unsafe_code)]

use std::os::raw::c_int;

use pyo3::exceptions::PyBufferError;
use pyo3::ffi;
use pyo3::prelude::*;

/// Fills `view` with the `len` bytes at `ptr` that `owner` keeps mapped,
/// writable.
///
/// # Safety
///
/// `view` is null or points to a `Py_buffer` the interpreter asks to be
/// filled (what `__getbuffer__` receives), and `ptr..ptr + len` stays
/// mapped, readable and writable as long as `owner` lives.
pub(crate) unsafe fn fill(
    owner: &Bound<'_, PyAny>,
    ptr: *mut u8,
    len: usize,
    view: *mut ffi::Py_buffer,
    flags: c_int,
) -> PyResult<()> {
    if view.is_null() {
        return Err(PyBufferError::new_err("no buffer view"));
    }
    // SAFETY: `view` is a Py_buffer to fill and the memory lives as long
    // as `owner` (the caller's contract); PyBuffer_FillInfo stores a new
    // reference to `owner` in the view, so the memory outlives every view.
    // It is one contiguous run of bytes, writable (other tasks write it
    // too: Python sees plain memory).
    let r = unsafe {
        ffi::PyBuffer_FillInfo(
            view,
            owner.as_ptr(),
            ptr.cast(),
            len as ffi::Py_ssize_t,
            0,
            flags,
        )
    };
    if r != 0 {
        return Err(PyErr::fetch(owner.py()));
    }
    Ok(())
}
