//! The `extern "C"` functions of `include/mpi.h` and the marshalling
//! they share: with `buf`, the only modules of this crate with unsafe
//! code.
//!
//! Every entry point
//! - checks the pointers it dereferences for null and answers the MPI
//!   error class of the bad argument otherwise;
//! - runs its body under `catch_unwind`, so no panic crosses into C (a
//!   panic becomes `MPI_ERR_INTERN`);
//! - hands a failure to the communicator's error handler: with
//!   `MPI_ERRORS_RETURN` the class is returned, otherwise the message
//!   (naming the call) is printed and the job ends with the class as
//!   exit status.
//!
//! Handles are opaque pointer-sized values: predefined ones are the
//! standard ABI's small constants, created ones are ids from the engine.
//! The SAFETY comments rely on MPI's contract that a buffer holds
//! `count` elements of its datatype and stays valid while an operation
//! on it is pending.
//!
//! Submodules: `init` (environment, communicators, errors), `p2p`
//! (point-to-point and requests), `requests` (persistent, buffered and
//! ready sends, the `some`/`any` calls), `mprobe` (matched probes),
//! `coll` (collectives), `collv` (the `v` collectives and scans),
//! `collarg` (the argument checks of both), `icoll` and `iplan`
//! (nonblocking collectives and their schedules), `dtype` (datatypes, pack/unpack),
//! `group` (groups, communicators from groups, user operations),
//! `comm` (dup, free, names, communicator attributes), `attr`
//! (keyvals and attributes), `info` (`MPI_Info` and hints),
//! `intercomm` (intercommunicators), `graph` (graph topologies and
//! neighbourhood collectives), `session` (sessions and process sets),
//! `misc` (`Alloc_mem`, `Reduce_local`, Fortran 90 types and the like),
//! `errh` (user-defined error handlers, classes and codes).

#![allow(unsafe_code)]
#![deny(unsafe_op_in_unsafe_fn)]

/// `PMPI_X` calling `MPI_X`, for the functions a macro defines (`build.rs`
/// generates the others'): the profiling interface.
macro_rules! pmpi {
    (unsafe $pname:ident => $name:ident ($($arg:ident : $ty:ty),* $(,)?) -> $ret:ty) => {
        #[doc = concat!("The profiling interface's name of [`", stringify!($name), "`].")]
        ///
        /// # Safety
        /// As the function it names.
        #[no_mangle]
        pub unsafe extern "C" fn $pname($($arg: $ty),*) -> $ret {
            // SAFETY: the caller's contract, which is the named function's.
            unsafe { $name($($arg),*) }
        }
    };
    ($pname:ident => $name:ident ($($arg:ident : $ty:ty),* $(,)?) -> $ret:ty) => {
        #[doc = concat!("The profiling interface's name of [`", stringify!($name), "`].")]
        #[no_mangle]
        pub extern "C" fn $pname($($arg: $ty),*) -> $ret {
            $name($($arg),*)
        }
    };
}
pub(crate) use pmpi;

mod attr;
mod coll;
mod collarg;
mod collv;
mod comm;
mod dtype;
mod errh;
mod fortran;
mod graph;
mod group;
mod icoll;
mod info;
mod init;
mod intercomm;
mod iplan;
mod misc;
mod mprobe;
mod p2p;
mod pscw;
mod requests;
mod session;
mod topo;
mod win;
mod windyn;

use crate::coll::Block;
use crate::consts::{err, h};
use crate::dtype::Layout;
use crate::engine::{MpiErr, St};
use crate::handles::UserFn;
use std::borrow::Cow;
use std::ffi::{c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

/// A handle as C passes it.
pub type Handle = *mut c_void;

fn hv(x: Handle) -> usize {
    x as usize
}

fn mk(v: usize) -> Handle {
    std::ptr::without_provenance_mut(v)
}

/// `MPI_Status` of the standard ABI. The library keeps the received
/// byte count in the first two internal words (low, high) and the
/// cancelled flag in the third.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct MpiStatus {
    source: c_int,
    tag: c_int,
    error: c_int,
    internal: [c_int; 5],
}

impl MpiStatus {
    fn count(&self) -> u64 {
        u64::from(self.internal[0] as u32) | (u64::from(self.internal[1] as u32) << 32)
    }
}

/// Writes `st` to `status` unless it is `MPI_STATUS_IGNORE`.
///
/// # Safety
/// `status` is null or points to a writable `MPI_Status`.
unsafe fn put_status(status: *mut MpiStatus, st: &St) {
    // SAFETY: the caller's contract.
    if let Some(s) = unsafe { status.as_mut() } {
        s.source = st.source;
        s.tag = st.tag;
        s.error = st.error;
        s.internal = [
            st.count as u32 as c_int,
            (st.count >> 32) as u32 as c_int,
            st.cancelled as c_int,
            0,
            0,
        ];
    }
}

/// The status of an empty or null request.
fn empty_status() -> St {
    St {
        source: crate::consts::ANY_SOURCE,
        tag: crate::consts::ANY_TAG,
        ..St::default()
    }
}

/// Stores `v` at `p`.
///
/// # Safety
/// `p` is null or points to a writable, aligned `T`.
unsafe fn out<T>(p: *mut T, v: T, what: &str) -> Result<(), MpiErr> {
    if p.is_null() {
        return Err(MpiErr::new(err::ARG, format!("{what} is NULL")));
    }
    // SAFETY: non-null; the caller's contract.
    unsafe { p.write(v) };
    Ok(())
}

/// Runs an entry point: failures and panics go to the error handler of
/// communicator `comm`.
fn call(name: &str, comm: usize, body: impl FnOnce() -> Result<(), MpiErr>) -> c_int {
    let _in = crate::stats::enter(name);
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => err::SUCCESS,
        Ok(Err(e)) => fail(name, comm, e),
        Err(_) => fail(
            name,
            comm,
            MpiErr::new(err::INTERN, "internal error (a panic was caught)"),
        ),
    }
}

/// Applies `comm`'s error handler to `e`.
fn fail(name: &str, comm: usize, e: MpiErr) -> c_int {
    let errh = crate::runtime::with(|g| Ok(g.comms.get(&comm).map(|c| c.errh)))
        .ok()
        .flatten();
    let (comm, errh) = match errh {
        Some(x) => (comm, x),
        // Not a communicator (or none yet): MPI_COMM_WORLD's handler.
        None => (
            h::COMM_WORLD,
            crate::runtime::with(|g| Ok(g.comms.get(&h::COMM_WORLD).map(|c| c.errh)))
                .ok()
                .flatten()
                .unwrap_or(h::ERRORS_ARE_FATAL),
        ),
    };
    if errh == h::ERRORS_RETURN {
        return e.class;
    }
    if let Some(u) = crate::errh::get(errh) {
        errh::invoke(u, comm, e.class);
        return e.class;
    }
    let class = crate::consts::error_string(e.class)
        .map(String::from)
        .or_else(|| crate::errh::lookup(e.class).map(|(_, s)| s))
        .unwrap_or_else(|| "unknown error class".into());
    eprintln!("MPI error in {name}: {} ({class}); ending the job", e.msg);
    std::process::exit(e.class.clamp(1, 255));
}

/// The committed datatype `dt`.
fn lay(dt: Handle) -> Result<Arc<Layout>, MpiErr> {
    crate::handles::layout(hv(dt))
}

fn ucount(count: c_int) -> Result<usize, MpiErr> {
    usize::try_from(count).map_err(|_| MpiErr::new(err::COUNT, format!("invalid count {count}")))
}

/// Packed bytes of `count` elements of `dt`.
fn nbytes(count: c_int, dt: Handle) -> Result<usize, MpiErr> {
    bytes_of(count, &*lay(dt)?)
}

fn bytes_of(count: c_int, t: &Layout) -> Result<usize, MpiErr> {
    ucount(count)?
        .checked_mul(t.size)
        .filter(|&n| n <= isize::MAX as usize)
        .ok_or_else(|| MpiErr::new(err::COUNT, format!("count {count} too large")))
}

/// `count` elements of `dt` at `p`, packed: the caller's bytes
/// themselves when the type is contiguous, a copy otherwise.
///
/// # Safety
/// MPI's contract: `p` holds `count` readable elements of `dt`, valid
/// for `'a`.
unsafe fn send_data<'a>(
    p: *const c_void,
    count: c_int,
    dt: Handle,
) -> Result<Cow<'a, [u8]>, MpiErr> {
    let l = crate::handles::layout_ref(hv(dt))?;
    let n = bytes_of(count, &l)?;
    if l.contiguous() {
        // SAFETY: the caller's contract.
        return Ok(Cow::Borrowed(unsafe { src(p, n) }?));
    }
    if n > 0 && p.is_null() && l.true_lb == 0 {
        return Err(MpiErr::new(
            err::BUFFER,
            "NULL buffer with a non-zero count",
        ));
    }
    let mut v = Vec::new();
    // SAFETY: the caller's contract: every block of the elements is
    // readable (MPI_BOTTOM with absolute addresses included).
    unsafe { crate::buf::pack(p.cast(), ucount(count)?, &l, &mut v) };
    Ok(Cow::Owned(v))
}

/// A buffer a collective writes packed bytes into: the caller's memory
/// when its datatype is contiguous, otherwise a packed copy of it
/// unpacked by [`Area::finish`].
pub(crate) enum Area<'a> {
    Direct(&'a mut [u8]),
    Packed {
        data: Vec<u8>,
        /// (address, elements, their layout) written back in order.
        segs: Vec<(usize, usize, Arc<Layout>)>,
    },
}

impl Area<'_> {
    pub(crate) fn bytes(&mut self) -> &mut [u8] {
        match self {
            Area::Direct(s) => s,
            Area::Packed { data, .. } => data,
        }
    }

    /// `send` itself when it shares no byte with this area, a copy of
    /// it otherwise: a collective reads the one while it writes the
    /// other (MPI forbids the overlap, but a program that has it must
    /// not make us read and write the same memory through two slices).
    pub(crate) fn apart<'s>(&self, send: Cow<'s, [u8]>) -> Cow<'s, [u8]> {
        let Area::Direct(r) = self else {
            return send;
        };
        let (a, b) = (r.as_ptr() as usize, send.as_ptr() as usize);
        let overlap = !r.is_empty() && !send.is_empty() && a < b + send.len() && b < a + r.len();
        match send {
            Cow::Borrowed(s) if overlap => Cow::Owned(s.to_vec()),
            s => s,
        }
    }

    /// Writes a packed area back into the caller's memory.
    pub(crate) fn finish(self) {
        if let Area::Packed { data, segs } = self {
            let mut at = 0;
            for (addr, count, l) in segs {
                let n = count * l.size;
                // SAFETY: the segments were made by `recv_area`/`recv_v`
                // from the caller's buffer, which MPI's contract keeps
                // valid and ours for the call.
                unsafe { crate::buf::unpack(addr as *mut u8, count, &l, &data[at..at + n]) };
                at += n;
            }
        }
    }
}

/// `count` elements of `dt` at `p` as an [`Area`].
///
/// # Safety
/// MPI's contract: `p` holds `count` writable elements of `dt`, the
/// library's for `'a`.
unsafe fn recv_area<'a>(p: *mut c_void, count: c_int, dt: Handle) -> Result<Area<'a>, MpiErr> {
    let l = lay(dt)?;
    let n = bytes_of(count, &l)?;
    if l.contiguous() {
        // SAFETY: the caller's contract.
        return Ok(Area::Direct(unsafe { dst(p, n) }?));
    }
    let c = ucount(count)?;
    let mut data = Vec::new();
    // SAFETY: the caller's contract; the current contents are kept where
    // nothing is received (in place, bytes between blocks).
    unsafe { crate::buf::pack(p.cast_const().cast(), c, &l, &mut data) };
    Ok(Area::Packed {
        data,
        segs: vec![(p as usize, c, l)],
    })
}

/// The (displacement, count) pairs of `n` tasks, in elements.
///
/// # Safety
/// `counts` and `displs` hold `n` readable ints each.
unsafe fn pairs(
    counts: *const c_int,
    displs: *const c_int,
    n: u32,
) -> Result<Vec<(isize, usize)>, MpiErr> {
    if counts.is_null() || displs.is_null() {
        return Err(MpiErr::new(err::ARG, "counts or displacements are NULL"));
    }
    // SAFETY: the caller's contract: `n` ints each.
    let (cs, ds) = unsafe {
        (
            std::slice::from_raw_parts(counts, n as usize),
            std::slice::from_raw_parts(displs, n as usize),
        )
    };
    cs.iter()
        .zip(ds)
        .map(|(&c, &d)| Ok((d as isize, ucount(c)?)))
        .collect()
}

/// The blocks of a `v` collective's buffer at `p` (counts and
/// displacements in elements of `dt`) as byte blocks of a packed
/// buffer, with the bytes they span: for a contiguous type the
/// caller's own offsets.
fn v_blocks(prs: &[(isize, usize)], l: &Layout) -> Result<(Vec<Block>, usize), MpiErr> {
    let big = || MpiErr::new(err::COUNT, "count or displacement too large");
    let mut out = Vec::with_capacity(prs.len());
    let mut end = 0usize;
    for &(d, c) in prs {
        let len = c.checked_mul(l.size).ok_or_else(big)?;
        let off = if l.contiguous() {
            let off = usize::try_from(d)
                .map_err(|_| MpiErr::new(err::COUNT, format!("negative displacement {d}")))?;
            off.checked_mul(l.size).ok_or_else(big)?
        } else {
            end
        };
        let e = off.checked_add(len).filter(|&e| e <= isize::MAX as usize);
        end = end.max(e.ok_or_else(big)?);
        out.push((off, len));
    }
    Ok((out, end))
}

/// The send side of a `v` collective: packed bytes and their blocks.
///
/// # Safety
/// MPI's contract for the buffer and arrays.
unsafe fn send_v<'a>(
    p: *const c_void,
    counts: *const c_int,
    displs: *const c_int,
    n: u32,
    dt: Handle,
) -> Result<(Cow<'a, [u8]>, Vec<Block>), MpiErr> {
    let l = lay(dt)?;
    // SAFETY: the caller's contract.
    let prs = unsafe { pairs(counts, displs, n) }?;
    let (b, end) = v_blocks(&prs, &l)?;
    if l.contiguous() {
        // SAFETY: the caller's contract: the buffer spans every block.
        return Ok((Cow::Borrowed(unsafe { src(p, end) }?), b));
    }
    let mut v = Vec::with_capacity(end);
    for &(d, c) in &prs {
        let at = (p as *const u8).wrapping_offset(d.wrapping_mul(l.extent));
        // SAFETY: the caller's contract: block i's elements are readable.
        unsafe { crate::buf::pack(at, c, &l, &mut v) };
    }
    Ok((Cow::Owned(v), b))
}

/// The receive side of a `v` collective.
///
/// # Safety
/// MPI's contract for the buffer and arrays.
unsafe fn recv_v<'a>(
    p: *mut c_void,
    counts: *const c_int,
    displs: *const c_int,
    n: u32,
    dt: Handle,
) -> Result<(Area<'a>, Vec<Block>), MpiErr> {
    let l = lay(dt)?;
    // SAFETY: the caller's contract.
    let prs = unsafe { pairs(counts, displs, n) }?;
    let (b, end) = v_blocks(&prs, &l)?;
    if l.contiguous() {
        // SAFETY: the caller's contract: the buffer spans every block.
        return Ok((Area::Direct(unsafe { dst(p, end) }?), b));
    }
    let mut data = Vec::with_capacity(end);
    let mut segs = Vec::with_capacity(prs.len());
    for &(d, c) in &prs {
        let at = (p as *mut u8).wrapping_offset(d.wrapping_mul(l.extent));
        // SAFETY: the caller's contract: block i's elements are ours.
        unsafe { crate::buf::pack(at, c, &l, &mut data) };
        segs.push((at as usize, c, l.clone()));
    }
    Ok((Area::Packed { data, segs }, b))
}

/// The buffers of `MPI_Alltoallw`: `n` blocks of `counts[i]` elements
/// of `types[i]` at byte displacement `displs[i]` from `p`, packed, with
/// their blocks in the packed buffer; `send`: only read.
///
/// # Safety
/// MPI's contract: the arrays hold `n` values each; every block's
/// elements are readable (and, unless `send`, the library's to write
/// for the call).
unsafe fn blocks_w<'a>(
    p: *mut c_void,
    counts: *const c_int,
    displs: *const c_int,
    types: *const Handle,
    n: u32,
) -> Result<(Area<'a>, Vec<Block>), MpiErr> {
    if types.is_null() {
        return Err(MpiErr::new(err::ARG, "array of datatypes is NULL"));
    }
    // SAFETY: the caller's contract.
    let prs = unsafe { pairs(counts, displs, n) }?;
    let mut data = Vec::new();
    let mut segs = Vec::with_capacity(prs.len());
    let mut blocks = Vec::with_capacity(prs.len());
    for (i, &(d, c)) in prs.iter().enumerate() {
        // SAFETY: the caller's contract: `n` datatypes.
        let l = lay(unsafe { types.add(i).read() })?;
        let len = c
            .checked_mul(l.size)
            .ok_or_else(|| MpiErr::new(err::COUNT, "count too large"))?;
        let at = (p as *mut u8).wrapping_offset(d);
        blocks.push((data.len(), len));
        // SAFETY: the caller's contract: block i's elements are readable.
        unsafe { crate::buf::pack(at, c, &l, &mut data) };
        segs.push((at as usize, c, l));
    }
    Ok((Area::Packed { data, segs }, blocks))
}

/// Whether a nonblocking collective or a persistent request may still
/// name a datatype or operation being freed.
fn handles_in_use() -> bool {
    crate::nbc::active() || requests::persistent()
}

/// Drops freed datatypes and operations once nothing can name them.
fn purge_freed() {
    if !handles_in_use() {
        crate::handles::reg().purge();
    }
}

/// Calls a user-defined operation: `inout = inv (op) inout` on packed
/// elements of datatype `dt` (laid out as `l`), in the type's own
/// layout when it is not contiguous.
pub(crate) fn user_op(f: UserFn, dt: usize, l: &Layout, inv: &[u8], inout: &mut [u8]) {
    if l.size == 0 {
        return;
    }
    let count = inv.len().min(inout.len()) / l.size;
    let mut len = count as c_int;
    let mut h = mk(dt);
    if l.contiguous() {
        let mut a = inv[..count * l.size].to_vec();
        // SAFETY: `f` is an MPI_User_function (MPI_Op_create's contract);
        // both vectors hold `count` elements of `dt`.
        unsafe {
            f(
                a.as_mut_ptr().cast(),
                inout.as_mut_ptr().cast(),
                &mut len,
                &mut h,
            )
        };
        return;
    }
    let Some((lo, span)) = crate::dtype::span(l, count) else {
        return;
    };
    let (mut a, mut b) = (vec![0u8; span], vec![0u8; span]);
    // Element 0's address, so that every block lies inside the vector.
    let pa = a.as_mut_ptr().wrapping_offset(-lo);
    let pb = b.as_mut_ptr().wrapping_offset(-lo);
    let mut out = Vec::with_capacity(count * l.size);
    // SAFETY: `span` covers every block of `count` elements from element
    // 0 at `pa`/`pb`; `f` is an MPI_User_function on them.
    unsafe {
        crate::buf::unpack(pa, count, l, inv);
        crate::buf::unpack(pb, count, l, inout);
        f(pa.cast(), pb.cast(), &mut len, &mut h);
        crate::buf::pack(pb, count, l, &mut out);
    }
    inout[..out.len()].copy_from_slice(&out);
}

/// `len` bytes at `p` (null only for zero bytes).
///
/// # Safety
/// `p` points to `len` readable bytes valid for `'a` when not null.
unsafe fn src<'a>(p: *const c_void, len: usize) -> Result<&'a [u8], MpiErr> {
    if len == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(MpiErr::new(
            err::BUFFER,
            "NULL buffer with a non-zero count",
        ));
    }
    // SAFETY: the caller's contract; len fits isize (nbytes).
    Ok(unsafe { std::slice::from_raw_parts(p.cast::<u8>(), len) })
}

/// `len` writable bytes at `p` (null only for zero bytes).
///
/// # Safety
/// `p` points to `len` writable bytes valid for `'a`, not otherwise
/// accessed meanwhile, when not null.
unsafe fn dst<'a>(p: *mut c_void, len: usize) -> Result<&'a mut [u8], MpiErr> {
    if len == 0 {
        return Ok(&mut []);
    }
    if p.is_null() {
        return Err(MpiErr::new(
            err::BUFFER,
            "NULL buffer with a non-zero count",
        ));
    }
    // SAFETY: the caller's contract; len fits isize (nbytes).
    Ok(unsafe { std::slice::from_raw_parts_mut(p.cast::<u8>(), len) })
}
