//! The native half of the `sss` Python package (see `python/sss`).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

mod buffer;
mod dsm;

create_exception!(_native, Error, PyException, "An SSS operation failed.");

pub(crate) fn err(e: impl std::fmt::Display) -> PyErr {
    Error::new_err(e.to_string())
}

/// This process's task of its job.
#[pyclass(frozen, module = "sss")]
pub(crate) struct Task {
    pub(crate) t: sss_mbcf::Task,
}

/// A block of this task's memory that other tasks may read and write
/// (a writable buffer).
#[pyclass(frozen, module = "sss")]
pub(crate) struct Segment {
    pub(crate) seg: sss_mbcf::Segment,
}

/// How other tasks name a segment: its owner, key and length.
#[pyclass(frozen, module = "sss")]
#[derive(Clone)]
struct SegmentInfo {
    info: sss_mbcf::SegmentInfo,
}

#[pymethods]
impl SegmentInfo {
    /// The owner's rank.
    #[getter]
    fn rank(&self) -> u32 {
        self.info.rank
    }
    /// Bytes in the segment.
    #[getter]
    fn len(&self) -> u64 {
        self.info.len
    }
    fn __repr__(&self) -> String {
        format!(
            "SegmentInfo(rank={}, len={}, key={:#x})",
            self.info.rank, self.info.len, self.info.key
        )
    }
}

#[pymethods]
impl Segment {
    /// Bytes in the segment.
    fn __len__(&self) -> usize {
        self.seg.len()
    }
    /// The 64-bit word at byte `offset` (8-byte aligned).
    fn word(&self, offset: usize) -> PyResult<u64> {
        Ok(self.seg.word(offset).map_err(err)?.load(Ordering::Acquire))
    }
    /// How other tasks name this segment.
    fn info(&self) -> SegmentInfo {
        SegmentInfo {
            info: self.seg.info(),
        }
    }
    #[allow(unsafe_code)]
    // SAFETY (of the contract): the interpreter calls it with a valid view.
    unsafe fn __getbuffer__(
        slf: Bound<'_, Self>,
        view: *mut pyo3::ffi::Py_buffer,
        flags: std::os::raw::c_int,
    ) -> PyResult<()> {
        let (ptr, len) = (slf.get().seg.as_ptr(), slf.get().seg.len());
        // SAFETY: `view` as the interpreter gave it; the segment's mapping
        // lives as long as the Segment object.
        unsafe { buffer::fill(slf.as_any(), ptr, len, view, flags) }
    }
    #[allow(unsafe_code)]
    // SAFETY (of the contract): nothing to release; the view's reference
    // to the segment keeps the memory mapped.
    unsafe fn __releasebuffer__(&self, _view: *mut pyo3::ffi::Py_buffer) {}
}

fn at(info: &SegmentInfo, offset: u64, len: u64) -> PyResult<sss_mbcf::RemoteAddr> {
    if offset
        .checked_add(len)
        .is_none_or(|end| end > info.info.len)
    {
        return Err(pyo3::exceptions::PyIndexError::new_err(format!(
            "{len} bytes at offset {offset} do not fit a segment of {} bytes",
            info.info.len
        )));
    }
    Ok(info.info.at(offset))
}

fn value_of(r: Result<sss_mbcf::Reply, sss_mbcf::Error>) -> PyResult<u64> {
    match r.map_err(err)? {
        sss_mbcf::Reply::Value(v) => Ok(v),
        _ => Err(Error::new_err("atomic answered without a value")),
    }
}

#[pymethods]
impl Task {
    /// Joins the job this process was started in.
    #[new]
    fn new(py: Python<'_>) -> PyResult<Self> {
        let t = py.detach(sss_mbcf::Task::init).map_err(err)?;
        Ok(Task { t })
    }
    /// This task's rank.
    #[getter]
    fn rank(&self) -> u32 {
        self.t.rank()
    }
    /// Tasks in the job.
    #[getter]
    fn size(&self) -> u32 {
        self.t.size()
    }
    /// The job's id.
    #[getter]
    fn job(&self) -> u32 {
        self.t.job()
    }
    /// This task's node.
    #[getter]
    fn node(&self) -> String {
        self.t.node().to_string()
    }
    /// A new zeroed segment of `len` bytes that every task may read and
    /// write.
    fn alloc(&self, len: usize) -> PyResult<Segment> {
        let seg = self.t.alloc(len, sss_mbcf::Perm::ALL).map_err(err)?;
        Ok(Segment { seg })
    }
    /// Every task's `seg`, by rank (collective).
    fn exchange(&self, py: Python<'_>, seg: &Segment) -> PyResult<Vec<SegmentInfo>> {
        let all = py.detach(|| self.t.exchange(&seg.seg)).map_err(err)?;
        Ok(all.into_iter().map(|info| SegmentInfo { info }).collect())
    }
    /// Every task's `data`, by rank (collective).
    fn allgather<'py>(&self, py: Python<'py>, data: &[u8]) -> PyResult<Vec<Bound<'py, PyBytes>>> {
        let all = py.detach(|| self.t.allgather(data)).map_err(err)?;
        Ok(all.iter().map(|b| PyBytes::new(py, b)).collect())
    }
    /// Waits until every task calls it.
    fn barrier(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| self.t.barrier()).map_err(err)
    }
    /// WRITEs `data` at `offset` of segment `dst`; with `notify` (a
    /// segment of the same task), adds 1 to its word at `notify_offset`
    /// after the data landed. Returns once sent; `quiet()` waits for
    /// delivery.
    #[pyo3(signature = (dst, offset, data, notify=None, notify_offset=0))]
    fn write(
        &self,
        py: Python<'_>,
        dst: &SegmentInfo,
        offset: u64,
        data: &[u8],
        notify: Option<PyRef<'_, SegmentInfo>>,
        notify_offset: u64,
    ) -> PyResult<()> {
        let to = at(dst, offset, data.len() as u64)?;
        let opts = match &notify {
            Some(s) => sss_mbcf::Options::notify(at(s, notify_offset, 8)?),
            None => sss_mbcf::Options::default(),
        };
        py.detach(|| self.t.write(to, data, opts).map(drop))
            .map_err(err)
    }
    /// READs `len` bytes at `offset` of segment `src`.
    fn read<'py>(
        &self,
        py: Python<'py>,
        src: &SegmentInfo,
        offset: u64,
        len: u64,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let from = at(src, offset, len)?;
        let reply = py
            .detach(|| {
                self.t
                    .read(from, len as usize, sss_mbcf::Options::default())?
                    .wait()
            })
            .map_err(err)?;
        match reply {
            sss_mbcf::Reply::Data(d) => Ok(PyBytes::new(py, &d)),
            _ => Err(Error::new_err("READ answered without data")),
        }
    }
    /// Atomically adds `value` to the word at `offset` of `dst`; the old
    /// value.
    fn fetch_add(
        &self,
        py: Python<'_>,
        dst: &SegmentInfo,
        offset: u64,
        value: u64,
    ) -> PyResult<u64> {
        let to = at(dst, offset, 8)?;
        let reply = py
            .detach(|| {
                self.t
                    .fetch_add(to, value, sss_mbcf::Options::default())?
                    .wait()
            })
            .map_err(err)?;
        match reply {
            sss_mbcf::Reply::Value(v) => Ok(v),
            _ => Err(Error::new_err("FETCH_ADD answered without a value")),
        }
    }
    /// Atomically replaces the word at `offset` of `dst` by `value`; the
    /// old value.
    fn swap(&self, py: Python<'_>, dst: &SegmentInfo, offset: u64, value: u64) -> PyResult<u64> {
        let to = at(dst, offset, 8)?;
        value_of(py.detach(|| self.t.swap(to, value, sss_mbcf::Options::default())?.wait()))
    }
    /// Atomically sets the word at `offset` of `dst` to `new` if it is
    /// `expected`; the old value (equal to `expected` when it did).
    fn cas(
        &self,
        py: Python<'_>,
        dst: &SegmentInfo,
        offset: u64,
        expected: u64,
        new: u64,
    ) -> PyResult<u64> {
        let to = at(dst, offset, 8)?;
        value_of(py.detach(|| {
            self.t
                .cas(to, expected, new, sss_mbcf::Options::default())?
                .wait()
        }))
    }
    /// Names the tasks `ranks` group `group` (for `multicast`).
    fn group_create(&self, group: u32, ranks: Vec<u32>) -> PyResult<()> {
        self.t.group_create(group, &ranks).map_err(err)
    }
    /// WRITEs `data` at `offset` of the segment `seg` names in every
    /// member of `group` (members' segments share one key: see
    /// `alloc_shared`); the number of other members that applied it.
    fn multicast(
        &self,
        py: Python<'_>,
        group: u32,
        seg: &SegmentInfo,
        offset: u64,
        data: &[u8],
    ) -> PyResult<u32> {
        at(seg, offset, data.len() as u64)?;
        let r = py
            .detach(|| self.t.multicast(group, seg.info.key, offset, data)?.wait())
            .map_err(err)?;
        match r {
            sss_mbcf::Reply::Members(n) => Ok(n),
            _ => Err(Error::new_err("multicast answered without a count")),
        }
    }
    /// A segment of `len` bytes under one key in every task (collective),
    /// for multicast.
    fn alloc_shared(&self, py: Python<'_>, len: usize) -> PyResult<Segment> {
        let seg = py
            .detach(|| self.t.alloc_shared_key(len, sss_mbcf::Perm::ALL))
            .map_err(err)?;
        Ok(Segment { seg })
    }
    /// Waits until every operation this task issued was delivered; raises
    /// the first failure among those nobody waited for.
    fn quiet(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| self.t.quiet()).map_err(err)
    }
    /// Waits until the word at `offset` of this task's `seg` is at least
    /// `value`; returns it.
    fn wait_at_least(
        &self,
        py: Python<'_>,
        seg: &Segment,
        offset: usize,
        value: u64,
    ) -> PyResult<u64> {
        let w = seg.seg.word(offset).map_err(err)?;
        Ok(py.detach(|| self.t.wait_word(w, |v| v >= value)))
    }
    /// Runs handler `handler` of task `rank` with `payload`.
    fn signal(&self, py: Python<'_>, rank: u32, handler: u32, payload: &[u8]) -> PyResult<()> {
        py.detach(|| {
            self.t
                .signal(rank, handler, payload, sss_mbcf::Options::default())
                .map(drop)
        })
        .map_err(err)
    }
    /// Makes `callable(from_rank, payload: bytes)` handler `index` of this
    /// task. It runs in whichever of this task's threads receives the
    /// signal, holding the interpreter lock; an exception it raises is
    /// printed and otherwise ignored.
    fn set_handler(&self, index: u32, callable: Py<PyAny>) -> PyResult<()> {
        let h: sss_mbcf::Handler = Arc::new(move |ctx, data| {
            Python::attach(|py| {
                if let Err(e) = callable.call1(py, (ctx.from, PyBytes::new(py, data))) {
                    e.print(py);
                }
            });
        });
        self.t.set_handler(index, h).map_err(err)
    }
    /// A FIFO queue of `slots` (a power of two) messages of at most
    /// `max_msg` bytes at `offset` (64-byte aligned) of this task's `seg`;
    /// other tasks push with `fifo_push(info, offset, msg)`.
    fn fifo_create(
        &self,
        seg: &Segment,
        offset: usize,
        slots: u32,
        max_msg: usize,
    ) -> PyResult<Fifo> {
        let q = self
            .t
            .fifo_create(&seg.seg, offset, slots, max_msg)
            .map_err(err)?;
        Ok(Fifo {
            q: std::sync::Mutex::new(q),
        })
    }
    /// Pushes `msg` into the FIFO at `offset` of segment `dst`.
    fn fifo_push(
        &self,
        py: Python<'_>,
        dst: &SegmentInfo,
        offset: u64,
        msg: &[u8],
    ) -> PyResult<()> {
        let to = at(dst, offset, 64)?;
        py.detach(|| {
            self.t
                .fifo_push(to, msg, sss_mbcf::Options::status())?
                .wait()
                .map(drop)
        })
        .map_err(err)
    }
    /// The nodes as this node's daemon sees them (IDM pages): a list of
    /// dicts; empty when no daemon serves the node.
    fn nodes<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let mut v = Vec::new();
        for n in self.t.node_pages() {
            let d = PyDict::new(py);
            d.set_item("name", n.name())?;
            d.set_item("up", n.is_up())?;
            d.set_item("cpus", n.ncpus)?;
            d.set_item("runnable", n.runnable)?;
            d.set_item("load1", f64::from(n.load[0]) / 1000.0)?;
            d.set_item("mem_free_kb", n.mem_free_kb)?;
            d.set_item("tasks", n.ntasks)?;
            d.set_item("packets", n.packets)?;
            d.set_item("retransmissions", n.retransmissions)?;
            v.push(d);
        }
        Ok(v)
    }
    /// The task's counters.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.t.stats();
        let d = PyDict::new(py);
        d.set_item("packets_sent", s.packets_sent)?;
        d.set_item("bytes_sent", s.bytes_sent)?;
        d.set_item("packets_received", s.packets_received)?;
        d.set_item("retransmissions", s.retransmissions)?;
        d.set_item("applied", s.applied)?;
        d.set_item("rejected", s.rejected)?;
        d.set_item("refused", s.refused)?;
        Ok(d)
    }
}

/// A FIFO queue in this task's memory that other tasks push into.
#[pyclass(frozen, module = "sss")]
struct Fifo {
    q: std::sync::Mutex<sss_mbcf::Fifo>,
}

#[pymethods]
impl Fifo {
    /// The oldest message as `(from_rank, bytes)`, or `None` when empty.
    fn pop<'py>(&self, py: Python<'py>) -> PyResult<Option<(u32, Bound<'py, PyBytes>)>> {
        let mut q = self
            .q
            .lock()
            .map_err(|_| Error::new_err("queue poisoned"))?;
        let mut out = Vec::new();
        Ok(q.pop(&mut out).map(|from| (from, PyBytes::new(py, &out))))
    }
    /// Messages waiting.
    fn __len__(&self) -> PyResult<usize> {
        Ok(self
            .q
            .lock()
            .map_err(|_| Error::new_err("queue poisoned"))?
            .len())
    }
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("Error", m.py().get_type::<Error>())?;
    m.add_class::<Task>()?;
    m.add_class::<Segment>()?;
    m.add_class::<SegmentInfo>()?;
    m.add_class::<Fifo>()?;
    m.add_class::<dsm::Heap>()?;
    m.add_class::<dsm::Region>()?;
    Ok(())
}
