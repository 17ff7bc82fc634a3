//! The ADSM heap from Python: one address range in every task, regions of
//! it as writable buffers (`numpy.frombuffer(region, ...)`), locks and
//! barriers. Under `SSS_DSM_WRITES=trap` plain stores (numpy's too) are
//! seen by write-protect faults; under `note` (the default) call
//! `region.note(offset, len)` after writing.

use pyo3::prelude::*;

use crate::{err, Task};

/// The shared heap of this task (collective to create).
#[pyclass(unsendable, module = "sss")]
pub(crate) struct Heap {
    d: Option<sss_dsm::Dsm>,
}

/// `len` bytes of the heap at one address in every task, a writable
/// buffer. Keeps its heap alive.
#[pyclass(unsendable, module = "sss")]
pub(crate) struct Region {
    heap: Py<Heap>,
    addr: usize,
    len: usize,
}

impl Heap {
    fn dsm(&self) -> PyResult<&sss_dsm::Dsm> {
        self.d
            .as_ref()
            .ok_or_else(|| crate::Error::new_err("the heap was finalized"))
    }
}

fn placement(p: &str) -> PyResult<sss_dsm::Placement> {
    match p {
        "block" => Ok(sss_dsm::Placement::Block),
        "first_touch" => Ok(sss_dsm::Placement::FirstTouch),
        _ => match p.strip_prefix("rank:").map(str::parse) {
            Some(Ok(r)) => Ok(sss_dsm::Placement::Explicit(r)),
            _ => Err(pyo3::exceptions::PyValueError::new_err(format!(
                "placement {p:?}: expected block, first_touch or rank:N"
            ))),
        },
    }
}

#[pymethods]
impl Heap {
    /// Creates the heap in every task of `task`'s job (collective);
    /// settings from `SSS_DSM_*`.
    #[new]
    fn new(py: Python<'_>, task: &Task) -> PyResult<Self> {
        let d = py.detach(|| sss_dsm::Dsm::from_env(&task.t)).map_err(err)?;
        Ok(Heap { d: Some(d) })
    }
    /// Collective: `len` bytes placed `placement` (`block`,
    /// `first_touch` or `rank:N`), the same region in every task.
    #[pyo3(signature = (len, placement="block"))]
    fn alloc(slf: Bound<'_, Self>, len: usize, placement: &str) -> PyResult<Region> {
        let p = self::placement(placement)?;
        let addr = {
            let h = slf.borrow();
            let d = h.dsm()?;
            slf.py()
                .detach(|| d.malloc_all(len, p).map(|a| a as usize))
                .map_err(err)?
        };
        Ok(Region {
            heap: slf.unbind(),
            addr,
            len,
        })
    }
    /// Waits for every task; makes writes before it visible after it.
    fn barrier(&self, py: Python<'_>) -> PyResult<()> {
        let d = self.dsm()?;
        py.detach(|| d.barrier()).map_err(err)
    }
    /// Takes lock `id` (acquire: others' writes under it become visible).
    fn lock(&self, py: Python<'_>, id: u32) -> PyResult<()> {
        let d = self.dsm()?;
        py.detach(|| d.lock(id)).map_err(err)
    }
    /// Releases lock `id`.
    fn unlock(&self, py: Python<'_>, id: u32) -> PyResult<()> {
        let d = self.dsm()?;
        py.detach(|| d.unlock(id)).map_err(err)
    }
    /// Ends the heap; regions may not be touched afterwards.
    fn finalize(&mut self, py: Python<'_>) -> PyResult<()> {
        if let Some(d) = self.d.take() {
            py.detach(|| d.finalize()).map_err(err)?;
        }
        Ok(())
    }
}

#[pymethods]
impl Region {
    fn __len__(&self) -> usize {
        self.len
    }
    /// Records a write of `len` bytes at `offset` (note mode).
    fn note(&self, py: Python<'_>, offset: usize, len: usize) -> PyResult<()> {
        if offset.checked_add(len).is_none_or(|e| e > self.len) {
            return Err(pyo3::exceptions::PyIndexError::new_err(
                "outside the region",
            ));
        }
        let heap = self.heap.borrow(py);
        let d = heap.dsm()?;
        d.note_write((self.addr + offset) as *const u8, len)
            .map_err(err)
    }
    #[allow(unsafe_code)]
    // SAFETY (of the contract): the interpreter calls it with a valid view.
    unsafe fn __getbuffer__(
        slf: Bound<'_, Self>,
        view: *mut pyo3::ffi::Py_buffer,
        flags: std::os::raw::c_int,
    ) -> PyResult<()> {
        let (addr, len) = {
            let r = slf.borrow();
            // A finalized heap is unmapped: no new views of it.
            r.heap.borrow(slf.py()).dsm()?;
            (r.addr, r.len)
        };
        // SAFETY: `view` as the interpreter gave it; the region lies in the
        // heap's mapping, which the Region keeps alive through its heap
        // (until `finalize`, documented as ending every region).
        unsafe { crate::buffer::fill(slf.as_any(), addr as *mut u8, len, view, flags) }
    }
    #[allow(unsafe_code)]
    // SAFETY (of the contract): nothing to release.
    unsafe fn __releasebuffer__(&self, _view: *mut pyo3::ffi::Py_buffer) {}
}
