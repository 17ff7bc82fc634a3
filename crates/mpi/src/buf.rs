//! User buffers: memory a C caller lends the library for the life of an
//! operation. The only module besides `ffi` with unsafe code.

#![allow(unsafe_code)]

use crate::dtype::Layout;
use std::sync::Arc;

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
            unsafe { sss_mbcf::copy_raw(data.as_ptr(), self.ptr as *mut u8, n) };
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

/// A send buffer: `len` readable bytes at `ptr`, lent by the caller
/// until the send completes (MPI's rule for the buffer of a pending
/// send): a rendezvous across the network WRITEs from it when the
/// receiver is ready, with no staged copy.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LentSrc {
    ptr: usize,
    len: usize,
}

impl LentSrc {
    /// # Safety
    /// `ptr` is null only when `len` is 0, and otherwise points to `len`
    /// readable bytes that stay valid and unchanged until the send using
    /// this buffer completes.
    pub(crate) unsafe fn new(ptr: *const u8, len: usize) -> LentSrc {
        LentSrc {
            ptr: ptr as usize,
            len: if ptr.is_null() { 0 } else { len },
        }
    }

    /// The bytes.
    pub(crate) fn bytes(&self) -> &[u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: `new`'s contract: `len` readable bytes at `ptr`,
        // unchanged while the send is pending, which it is while the
        // engine holds this value.
        unsafe { std::slice::from_raw_parts(self.ptr as *const u8, self.len) }
    }
}

/// A buffer a collective lends to its receives in flight: each posted
/// into one of its blocks (no copy of the library's own in between),
/// and every one of them over before the loan ends. [`Lent::settled`]
/// ends it after the receives completed; dropped earlier (an error
/// cut the collective short), it hands their requests to its `settle`,
/// which must end them (cancel, or wait for) before it returns.
pub(crate) struct Lent<'a> {
    ptr: *mut u8,
    len: usize,
    ids: Vec<usize>,
    settle: fn(&[usize]),
    _buf: std::marker::PhantomData<&'a mut [u8]>,
}

impl<'a> Lent<'a> {
    pub(crate) fn new(buf: &'a mut [u8], settle: fn(&[usize])) -> Self {
        Lent {
            ptr: buf.as_mut_ptr(),
            len: buf.len(),
            ids: Vec::new(),
            settle,
            _buf: std::marker::PhantomData,
        }
    }

    /// Posts a receive into `len` bytes at `off` with `post` (which
    /// returns its request); `false` when the block is not inside the
    /// buffer (nothing posted).
    pub(crate) fn post<E>(
        &mut self,
        off: usize,
        len: usize,
        post: impl FnOnce(UserBuf) -> Result<usize, E>,
    ) -> Result<bool, E> {
        if off.checked_add(len).is_none_or(|e| e > self.len) {
            return Ok(false);
        }
        // SAFETY: inside the buffer, which is ours for 'a; the receive is
        // over before 'a ends (`settled`, or `settle` on drop). Blocks
        // may overlap (MPI forbids it): writes through raw pointers,
        // one at a time under the engine's lock.
        let u = unsafe { UserBuf::new(self.ptr.wrapping_add(off), len) };
        self.ids.push(post(u)?);
        Ok(true)
    }

    /// Copies `data` to `off` (our own block of an exchange); `false`
    /// when it does not fit inside the buffer.
    pub(crate) fn copy_in(&mut self, off: usize, data: &[u8]) -> bool {
        if off.checked_add(data.len()).is_none_or(|e| e > self.len) {
            return false;
        }
        // SAFETY: inside the buffer, which is ours; `data` is borrowed
        // apart from it (no `&mut` of it exists while lent).
        unsafe { std::ptr::copy(data.as_ptr(), self.ptr.wrapping_add(off), data.len()) };
        true
    }

    /// Ends the loan with `wait`, which returns when every receive
    /// posted completed.
    pub(crate) fn settled<T>(mut self, wait: impl FnOnce(&[usize]) -> T) -> T {
        let ids = std::mem::take(&mut self.ids);
        wait(&ids)
    }
}

impl Drop for Lent<'_> {
    fn drop(&mut self) {
        if !self.ids.is_empty() {
            (self.settle)(&std::mem::take(&mut self.ids));
        }
    }
}

/// Buffers a nonblocking collective owns from its start to its end,
/// whose blocks it lends to its receives across MPI calls (no copy of
/// the library's own in between). While a loan is out nothing hands out
/// a reference to the buffers: [`Lender::bufs`] refuses, sends read
/// through [`Lender::bytes`] only blocks apart from every loan, and a
/// lender dropped with loans out leaks its buffers rather than free
/// memory a delivery may still write.
pub(crate) struct Lender {
    bufs: Vec<Vec<u8>>,
    /// The caller's memory standing for one buffer (its index; the
    /// vector there stays empty): receives land in it and sends read
    /// from it, no local step touches it.
    caller: Option<(usize, &'static mut [u8])>,
    /// The caller's send buffer standing for another (its index; the
    /// vector there stays empty): sends read from it, nothing writes it.
    source: Option<(usize, &'static [u8])>,
    /// Start and length of each buffer, taken when the first loan of a
    /// round went out (no `&mut` of `bufs` exists until the last returns).
    bases: Vec<(usize, usize)>,
    /// Blocks out on loan (buffer, offset, length) and their receives.
    lent: Vec<((usize, usize, usize), usize)>,
}

impl Lender {
    /// A lender of `bufs`, of `caller` (MPI lends the library a
    /// receive buffer until the collective completes) as one of them, and
    /// of `source` (a send buffer, lent the same way) as another.
    pub(crate) fn new(
        bufs: Vec<Vec<u8>>,
        caller: Option<(usize, &'static mut [u8])>,
        source: Option<(usize, &'static [u8])>,
    ) -> Lender {
        Lender {
            bufs,
            caller,
            source,
            bases: Vec::new(),
            lent: Vec::new(),
        }
    }

    /// The buffers, when no block is out on loan.
    pub(crate) fn bufs(&mut self) -> Option<&mut Vec<Vec<u8>>> {
        self.lent.is_empty().then_some(&mut self.bufs)
    }

    /// Lends `len` bytes at `at` of buffer `buf` to the receive `post`
    /// makes (it returns the receive's request); `Ok(false)` when the
    /// block is not inside the buffer or overlaps one out on loan (the
    /// caller receives into memory of its own then).
    pub(crate) fn lend<E>(
        &mut self,
        (buf, at, len): (usize, usize, usize),
        post: impl FnOnce(UserBuf) -> Result<usize, E>,
    ) -> Result<bool, E> {
        if self.lent.is_empty() {
            self.bases = self
                .bufs
                .iter_mut()
                .map(|b| (b.as_mut_ptr() as usize, b.len()))
                .collect();
            if let Some((i, m)) = &mut self.caller {
                if let Some(b) = self.bases.get_mut(*i) {
                    *b = (m.as_mut_ptr() as usize, m.len());
                }
            }
            if let Some((i, d)) = self.source {
                if let Some(b) = self.bases.get_mut(i) {
                    *b = (d.as_ptr() as usize, d.len());
                }
            }
        }
        if self.source.is_some_and(|(i, _)| i == buf) {
            return Ok(false);
        }
        let inside = self
            .bases
            .get(buf)
            .is_some_and(|&(_, l)| at.checked_add(len).is_some_and(|e| e <= l));
        if !inside || len == 0 || self.overlaps((buf, at, len)) {
            return Ok(false);
        }
        let base = self.bases[buf].0 as *mut u8;
        // SAFETY: inside buffer `buf` (checked above), which this lender
        // owns and keeps alive, unresized and unreferenced, until the
        // receive returns the loan (`returned`) or forever (`drop`); no
        // other loan covers these bytes.
        let u = unsafe { UserBuf::new(base.wrapping_add(at), len) };
        let id = post(u)?;
        self.lent.push(((buf, at, len), id));
        Ok(true)
    }

    fn overlaps(&self, (buf, at, len): (usize, usize, usize)) -> bool {
        self.lent
            .iter()
            .any(|&((b, a, l), _)| b == buf && a < at + len && at < a + l)
    }

    /// `len` bytes at `at` of buffer `buf`, to send; `None` when outside
    /// the buffer or overlapping a block out on loan.
    pub(crate) fn bytes(&self, buf: usize, at: usize, len: usize) -> Option<&[u8]> {
        let end = at.checked_add(len)?;
        if self.lent.is_empty() {
            return match (&self.caller, self.source) {
                (Some((i, m)), _) if *i == buf => m.get(at..end),
                (_, Some((i, d))) if i == buf => d.get(at..end),
                _ => self.bufs.get(buf)?.get(at..end),
            };
        }
        let &(base, l) = self.bases.get(buf)?;
        if end > l || self.overlaps((buf, at, len)) {
            return None;
        }
        if len == 0 {
            return Some(&[]);
        }
        // SAFETY: inside buffer `buf`, alive while `self` is borrowed
        // (the caller's, by MPI's contract until the collective ends);
        // no loan covers these bytes, so no delivery writes them.
        Some(unsafe { std::slice::from_raw_parts((base as *const u8).wrapping_add(at), len) })
    }

    /// Takes the loans back once every receive holding one completed
    /// (the engine writes nothing into its block after, and frees its
    /// registration first); whether it did.
    pub(crate) fn returned(&mut self, e: &crate::engine::Engine) -> bool {
        if self
            .lent
            .iter()
            .all(|(_, id)| e.reqs.get(id).is_none_or(|q| q.done))
        {
            self.lent.clear();
            return true;
        }
        false
    }

    /// Copies `data` to `at` of buffer `buf` (a receive that landed in
    /// memory of its own); false when no block may be written now (one
    /// is out on loan) or it does not fit.
    pub(crate) fn put(&mut self, buf: usize, at: usize, data: &[u8]) -> bool {
        if !self.lent.is_empty() {
            return false;
        }
        let dst = match &mut self.caller {
            Some((i, m)) if *i == buf => Some(&mut **m),
            _ => self.bufs.get_mut(buf).map(Vec::as_mut_slice),
        };
        match dst.and_then(|d| d.get_mut(at..at.checked_add(data.len())?)) {
            Some(d) => {
                sss_mbcf::copy_bytes(d, data);
                true
            }
            None => false,
        }
    }

    /// The buffers, when no block is out on loan (dropped otherwise).
    pub(crate) fn into_bufs(mut self) -> Option<Vec<Vec<u8>>> {
        self.lent.is_empty().then(|| std::mem::take(&mut self.bufs))
    }
}

impl Drop for Lender {
    fn drop(&mut self) {
        if !self.lent.is_empty() {
            // A receive may still write into them.
            std::mem::forget(std::mem::take(&mut self.bufs));
        }
    }
}

/// Appends `count` elements of layout `l` at `base` to `out`, packed.
///
/// # Safety
/// Every block of the `count` elements at `base` (element i at
/// `base + i * extent`) is readable.
pub(crate) unsafe fn pack(base: *const u8, count: usize, l: &Layout, out: &mut Vec<u8>) {
    out.reserve(l.size.saturating_mul(count));
    for i in 0..count as isize {
        let e = base.wrapping_offset(i * l.extent);
        for &(o, n) in &l.blocks {
            // SAFETY: the caller's contract for this block.
            let s = unsafe { std::slice::from_raw_parts(e.wrapping_offset(o), n) };
            out.extend_from_slice(s);
        }
    }
}

/// Writes packed `data` into elements of layout `l` at `base`, in
/// type-map order, as far as `data` and `count` elements go.
///
/// # Safety
/// Every block of the `count` elements at `base` is writable and not
/// otherwise accessed meanwhile; `data` does not overlap them.
pub(crate) unsafe fn unpack(base: *mut u8, count: usize, l: &Layout, data: &[u8]) {
    let mut at = 0;
    for i in 0..count as isize {
        let e = base.wrapping_offset(i * l.extent);
        for &(o, n) in &l.blocks {
            let k = n.min(data.len() - at);
            if k == 0 {
                return;
            }
            // SAFETY: the caller's contract for this block; `k` bytes
            // remain in `data` from `at`.
            unsafe {
                std::ptr::copy_nonoverlapping(data.as_ptr().add(at), e.wrapping_offset(o), k)
            };
            at += k;
        }
    }
}

/// A receive buffer of `count` elements of a non-contiguous datatype,
/// lent by the caller until the receive completes.
#[derive(Debug, Clone)]
pub(crate) struct TypedBuf {
    base: usize,
    count: usize,
    layout: Arc<Layout>,
}

impl TypedBuf {
    /// # Safety
    /// The blocks of `count` elements of `layout` at `base` are writable
    /// and stay the library's until the operation using this buffer
    /// completes.
    pub(crate) unsafe fn new(base: *mut u8, count: usize, layout: Arc<Layout>) -> TypedBuf {
        TypedBuf {
            base: base as usize,
            count,
            layout,
        }
    }

    /// Capacity in packed bytes.
    pub(crate) fn len(&self) -> usize {
        self.layout.size * self.count
    }

    /// Unpacks `data` (at most the capacity) into the buffer.
    pub(crate) fn fill(&self, data: &[u8]) {
        let n = data.len().min(self.len());
        // SAFETY: `new`'s contract; `data` is the library's memory.
        unsafe { unpack(self.base as *mut u8, self.count, &self.layout, &data[..n]) };
    }
}

/// Copies `out.len()` bytes from `off` in a same-node peer's segment
/// mapped here; false (nothing copied) when that range is not inside it.
pub(crate) fn copy_from_peer(map: &sss_mbcf::PeerMap, off: u64, out: &mut [u8]) -> bool {
    let fits = off
        .checked_add(out.len() as u64)
        .is_some_and(|end| end <= map.len());
    if !fits {
        return false;
    }
    if !out.is_empty() {
        // SAFETY: `off + out.len()` lies inside the mapping, which the
        // `PeerMap` keeps mapped; the peer may write its own memory
        // meanwhile (its data, then), but the range is never unmapped,
        // and `out` is our own memory, disjoint from a shared mapping.
        unsafe {
            sss_mbcf::copy_raw(
                map.as_ptr().add(off as usize).cast_const(),
                out.as_mut_ptr(),
                out.len(),
            )
        };
    }
    true
}

/// Reads `out.len()` bytes at `addr` of process `pid` into `out`; false
/// when the process or the range cannot be read (some of `out` may have
/// been written).
pub(crate) fn read_peer(pid: u32, addr: u64, out: &mut [u8]) -> bool {
    let Ok(pid) = i32::try_from(pid) else {
        return false;
    };
    let mut done = 0;
    while done < out.len() {
        let Some(at) = addr.checked_add(done as u64) else {
            return false;
        };
        let rest = &mut out[done..];
        let local = libc::iovec {
            iov_base: rest.as_mut_ptr().cast(),
            iov_len: rest.len(),
        };
        let remote = libc::iovec {
            iov_base: at as usize as *mut libc::c_void,
            iov_len: rest.len(),
        };
        // SAFETY: `local` is `rest`, our own writable memory, for its
        // length; `remote` is only read, by the kernel, in the other
        // process (a bad address there fails the call, nothing here).
        let n = unsafe { libc::process_vm_readv(pid, &local, 1, &remote, 1, 0) };
        match usize::try_from(n) {
            Ok(n) if n > 0 => done += n,
            _ => return false,
        }
    }
    true
}

/// Whether this process's peers on the node may read its memory with
/// [`read_peer`], found once. Yama's `ptrace_scope` 1 lets a process
/// read only its descendants unless the target names the reader as a
/// tracer; naming any (as Open MPI's shared memory does for the same
/// copy) would let every process of this user attach to it, so it is
/// done only when the user asks (`SSS_MPI_PEER_READ=on`), and blocks
/// are staged otherwise; 2 and 3 refuse all but privileged readers: no.
/// A seccomp filter may refuse the call itself: it is tried on this
/// process's own memory.
pub(crate) fn peer_reads_allowed() -> bool {
    static OK: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *OK.get_or_init(|| {
        let scope = std::fs::read_to_string("/proc/sys/kernel/yama/ptrace_scope")
            .ok()
            .and_then(|s| s.trim().parse::<u32>().ok())
            .unwrap_or(0);
        if scope >= 2 {
            return false;
        }
        if scope == 1 {
            match peer_read_opt_in(std::env::var("SSS_MPI_PEER_READ").ok().as_deref()) {
                Ok(true) => {}
                Ok(false) => return false,
                Err(e) => {
                    eprintln!("sss-mpi: {e}; large all-to-all blocks are staged");
                    return false;
                }
            }
        }
        // SAFETY: PR_SET_PTRACER takes a pid (or PR_SET_PTRACER_ANY) and
        // touches no memory of ours.
        if scope == 1
            && unsafe { libc::prctl(libc::PR_SET_PTRACER, libc::PR_SET_PTRACER_ANY, 0, 0, 0) } != 0
        {
            return false;
        }
        let probe = [7u8; 64];
        let mut out = [0u8; 64];
        read_peer(std::process::id(), probe.as_ptr() as u64, &mut out) && out == probe
    })
}

/// `SSS_MPI_PEER_READ`: `on` lets any process of this user attach to
/// this one where Yama would refuse it (see [`peer_reads_allowed`]);
/// unset or `off` does not.
fn peer_read_opt_in(v: Option<&str>) -> Result<bool, String> {
    match v {
        None | Some("off") => Ok(false),
        Some("on") => Ok(true),
        Some(other) => Err(format!("SSS_MPI_PEER_READ={other:?}: expected on or off")),
    }
}

/// `len` bytes at `off` of one of our own staging segments, which peers
/// may only READ; `None` outside it.
pub(crate) fn segment_bytes(seg: &sss_mbcf::Segment, off: usize, len: usize) -> Option<&[u8]> {
    if off.checked_add(len)? > seg.len() {
        return None;
    }
    if len == 0 {
        return Some(&[]);
    }
    // SAFETY: the range lies inside the segment, mapped while `seg` lives
    // (the borrow keeps it); nobody writes it meanwhile: peers have READ
    // permission only, and we wrote it before announcing it.
    Some(unsafe { std::slice::from_raw_parts(seg.as_ptr().add(off).cast_const(), len) })
}

/// Registers `out` (a receive's buffer) as a segment peers may WRITE, for
/// a sender to write a message straight into it after a clear-to-send.
pub(crate) fn register_receive(
    task: &sss_mbcf::Task,
    out: &mut [u8],
) -> Result<sss_mbcf::Segment, sss_mbcf::Error> {
    // SAFETY: `out` is a live `&mut [u8]` (mapped, writable) into the
    // buffer of a receive request (matched, or posted and noticed to its
    // sender: `engine/direct.rs`), which owns it (or the caller's memory
    // it names) until the request completes; the engine frees the
    // segment before it completes the request (cancelled included) or
    // drops it, and reads the bytes only after the sender's DONE or
    // DIRECT, which MBCF delivers after the WRITE.
    unsafe { task.register_mapped(out.as_mut_ptr(), out.len(), sss_mbcf::Perm::WRITE) }
}

/// A landing ring of `len` bytes (`engine/ring.rs`): private memory,
/// backed only where senders write (no shared-memory space reserved, as
/// `Task::alloc` would), registered for peers to WRITE. It is never
/// freed: a WRITE still in flight when the library shuts down must land
/// in memory that stays.
pub(crate) fn ring_segment(
    task: &sss_mbcf::Task,
    len: usize,
) -> Result<sss_mbcf::Segment, sss_mbcf::Error> {
    let mem: *mut [u8] = Box::into_raw(vec![0u8; len].into_boxed_slice());
    // SAFETY: the allocation is leaked, so it stays valid and writable
    // for the life of the process; nothing else refers to it but the
    // segment (read through `Segment::read_bytes`).
    unsafe { task.register_mapped(mem.cast::<u8>(), len, sss_mbcf::Perm::WRITE) }
}

#[cfg(test)]
mod tests {
    use super::read_peer;

    #[test]
    fn reads_a_process_memory_and_refuses_a_bad_range() {
        let src: Vec<u8> = (0..5000u32).map(|i| i as u8).collect();
        let mut out = vec![0u8; src.len()];
        let me = std::process::id();
        assert!(read_peer(me, src.as_ptr() as u64, &mut out));
        assert_eq!(out, src);
        assert!(read_peer(me, 0, &mut []), "nothing to read");
        assert!(!read_peer(me, 8, &mut out), "unmapped");
        assert!(!read_peer(me, u64::MAX - 4, &mut out), "wraps");
        let scope = std::fs::read_to_string("/proc/sys/kernel/yama/ptrace_scope")
            .map_or(0, |s| s.trim().parse::<u32>().unwrap_or(3));
        let asked = std::env::var("SSS_MPI_PEER_READ").is_ok_and(|v| v == "on");
        assert_eq!(
            super::peer_reads_allowed(),
            scope == 0 || (scope == 1 && asked)
        );
    }

    /// Yama's protection is given up only when asked for in so many words.
    #[test]
    fn peer_reads_under_yama_are_asked_for_explicitly() {
        use super::peer_read_opt_in as opt;
        assert_eq!(opt(None), Ok(false));
        assert_eq!(opt(Some("off")), Ok(false));
        assert_eq!(opt(Some("on")), Ok(true));
        for bad in ["1", "yes", "", "ON "] {
            let e = opt(Some(bad)).unwrap_err();
            assert!(
                e.contains("SSS_MPI_PEER_READ") && e.contains("on or off"),
                "{e}"
            );
        }
    }

    /// A schedule's buffers lent to its receives: no reference to them
    /// while a block is out, sends read only blocks apart from every
    /// loan, overlapping or outside blocks are refused (the receive then
    /// lands in memory of its own), the caller's memory stands for its
    /// buffer, its send buffer is read and never written, and a lender
    /// dropped with loans out frees nothing.
    #[test]
    fn a_lender_keeps_loaned_blocks_apart_from_everything_else() {
        use super::Lender;
        let mem: &'static mut [u8] = Box::leak(vec![5u8; 32].into_boxed_slice());
        let src: &'static [u8] = Box::leak(vec![3u8; 8].into_boxed_slice());
        let mut l = Lender::new(
            vec![vec![1u8; 64], Vec::new(), Vec::new()],
            Some((1, mem)),
            Some((2, src)),
        );
        assert!(l.bufs().is_some());
        assert_eq!(l.bytes(1, 30, 2), Some(&[5u8, 5][..]));
        assert_eq!(l.bytes(2, 6, 2), Some(&[3u8, 3][..]));
        let mut ids = 0;
        let mut post = |u: super::UserBuf| {
            ids += 1;
            assert_eq!(u.len(), 16);
            Ok::<_, ()>(ids)
        };
        assert_eq!(l.lend((0, 16, 16), &mut post), Ok(true));
        assert_eq!(l.lend((1, 0, 16), &mut post), Ok(true));
        assert!(l.bufs().is_none(), "no reference while lent");
        assert!(!l.put(0, 0, &[9]), "no copy in while lent");
        // Overlapping a loan, outside the buffer, empty: refused.
        assert_eq!(l.lend((0, 31, 16), |_| Ok::<_, ()>(9)), Ok(false));
        assert_eq!(l.lend((0, 60, 16), |_| Ok::<_, ()>(9)), Ok(false));
        assert_eq!(l.lend((3, 0, 16), |_| Ok::<_, ()>(9)), Ok(false));
        assert_eq!(l.lend((0, 0, 0), |_| Ok::<_, ()>(9)), Ok(false));
        // The caller's send buffer: read, never received into.
        assert_eq!(l.lend((2, 0, 4), |_| Ok::<_, ()>(9)), Ok(false));
        assert_eq!(l.bytes(2, 0, 8), Some(&[3u8; 8][..]));
        assert_eq!(l.bytes(2, 4, 8), None, "outside");
        assert_eq!(l.bytes(0, 0, 16), Some(&[1u8; 16][..]));
        assert_eq!(l.bytes(0, 8, 16), None, "overlaps a loan");
        assert_eq!(l.bytes(1, 8, 16), None, "overlaps a loan");
        assert_eq!(l.bytes(1, 16, 16), Some(&[5u8; 16][..]));
        assert_eq!(l.bytes(0, 60, 16), None, "outside");
        // Dropped with loans out: the buffers are left alone.
        drop(l);
        let mut l = Lender::new(vec![vec![0u8; 8], Vec::new()], None, Some((1, src)));
        assert!(l.put(0, 4, &[7, 7]) && !l.put(0, 7, &[1, 1]));
        assert!(!l.put(1, 0, &[1]), "the send buffer is not written");
        assert_eq!(src, &[3u8; 8][..]);
        assert_eq!(
            l.into_bufs(),
            Some(vec![vec![0, 0, 0, 0, 7, 7, 0, 0], Vec::new()])
        );
    }
}
