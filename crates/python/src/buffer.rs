//! `Segment` as a writable buffer (the buffer protocol), so that Python
//! sees the segment's memory itself: `memoryview(seg)`,
//! `numpy.frombuffer(seg, ...)`.

#![allow(unsafe_code)]

use std::os::raw::c_int;

use pyo3::exceptions::PyBufferError;
use pyo3::ffi;
use pyo3::prelude::*;

use crate::Segment;

/// Fills `view` with the segment's bytes, writable.
///
/// # Safety
///
/// `view` is null or points to a `Py_buffer` the interpreter asks to be
/// filled (what `__getbuffer__` receives).
pub(crate) unsafe fn fill(
    slf: Bound<'_, Segment>,
    view: *mut ffi::Py_buffer,
    flags: c_int,
) -> PyResult<()> {
    if view.is_null() {
        return Err(PyBufferError::new_err("no buffer view"));
    }
    let (ptr, len) = {
        let s = slf.get();
        (s.seg.as_ptr(), s.seg.len())
    };
    // SAFETY: `view` is a Py_buffer to fill (the caller's contract). The
    // memory is the segment's mapping, which lives as long as the Segment
    // object; PyBuffer_FillInfo stores a new reference to it in the view,
    // so the mapping outlives every view. It is one contiguous run of
    // bytes, writable (other tasks write it too: Python sees plain memory).
    let r = unsafe {
        ffi::PyBuffer_FillInfo(
            view,
            slf.as_ptr(),
            ptr.cast(),
            len as ffi::Py_ssize_t,
            0,
            flags,
        )
    };
    if r != 0 {
        return Err(PyErr::fetch(slf.py()));
    }
    Ok(())
}
