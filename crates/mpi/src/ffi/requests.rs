//! The rest of point-to-point: persistent requests, buffered and ready
//! sends, `Sendrecv_replace`, and the `some`/`any` completion calls.

use super::p2p::{
    collect_all, exchange_at_once, finish, ids, recv_dest, start_recv, start_send, status_error,
    SendHow,
};
use super::{call, empty_status, hv, mk, nbytes, out, put_status, send_data, Handle, MpiStatus};
use crate::consts::{err, h, PROC_NULL, UNDEFINED};
use crate::engine::{Dest, MpiErr};
use crate::runtime::{wait_until, with};
use std::collections::HashMap;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{LazyLock, Mutex, MutexGuard};

/// `MPI_BSEND_OVERHEAD`.
const BSEND_OVERHEAD: usize = 512;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Standard,
    Sync,
    Buffered,
    Recv,
}

/// A persistent request: its arguments and the operation it started.
#[derive(Debug)]
struct Persist {
    mode: Mode,
    buf: usize,
    count: c_int,
    dt: usize,
    peer: c_int,
    tag: c_int,
    comm: usize,
    active: Option<usize>,
}

#[derive(Default)]
struct State {
    persist: HashMap<usize, Persist>,
    /// The attached buffer (address, bytes) and the buffered sends that
    /// hold part of it (request, bytes).
    attached: Option<(usize, usize)>,
    bsends: Vec<(usize, usize)>,
}

static STATE: LazyLock<Mutex<State>> = LazyLock::new(|| Mutex::new(State::default()));

fn state() -> MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

/// How many persistent requests exist: the point-to-point waits check
/// this word, not the lock.
static PERSISTENT: AtomicUsize = AtomicUsize::new(0);

/// Whether any persistent request exists.
pub(super) fn persistent() -> bool {
    PERSISTENT.load(Ordering::Acquire) > 0
}

/// The engine request handle `v` stands for: itself, a persistent
/// request's active operation, or None (null or inactive).
pub(super) fn resolve(v: usize) -> Option<usize> {
    if v == h::REQUEST_NULL {
        return None;
    }
    if !persistent() {
        return Some(v);
    }
    match state().persist.get(&v) {
        Some(p) => p.active,
        None => Some(v),
    }
}

/// Marks the request at `req` complete: a persistent one becomes
/// inactive, any other `MPI_REQUEST_NULL`.
///
/// # Safety
/// `req` is a readable and writable handle.
pub(super) unsafe fn release(req: *mut Handle) {
    // SAFETY: the caller's contract.
    let v = hv(unsafe { req.read() });
    if persistent() {
        if let Some(p) = state().persist.get_mut(&v) {
            p.active = None;
            return;
        }
    }
    // SAFETY: the caller's contract.
    unsafe { req.write(mk(h::REQUEST_NULL)) };
}

/// Frees the persistent request at `req`, if it is one (its active
/// operation completes on its own); whether it was.
///
/// # Safety
/// `req` is null or a readable and writable handle.
pub(super) unsafe fn free_persistent(req: *mut Handle) -> Result<bool, MpiErr> {
    if req.is_null() || !persistent() {
        return Ok(false);
    }
    // SAFETY: the caller's contract.
    let v = hv(unsafe { req.read() });
    let Some(p) = state().persist.remove(&v) else {
        return Ok(false);
    };
    PERSISTENT.fetch_sub(1, Ordering::AcqRel);
    if let Some(id) = p.active {
        with(|e| e.detach(id))?;
    }
    super::purge_freed();
    // SAFETY: the caller's contract.
    unsafe { req.write(mk(h::REQUEST_NULL)) };
    Ok(true)
}

/// Buffered send: the data is copied at once (as every send of this
/// library does), and counted against the attached buffer until it is
/// delivered.
///
/// # Safety
/// MPI's contract: `buf` holds `count` readable elements of `dt`.
unsafe fn bsend(
    buf: *const c_void,
    count: c_int,
    dt: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
) -> Result<usize, MpiErr> {
    let need = nbytes(count, dt)? + BSEND_OVERHEAD;
    {
        let mut s = state();
        let live: Vec<(usize, usize)> = std::mem::take(&mut s.bsends);
        s.bsends = with(|e| {
            Ok(live
                .into_iter()
                .filter(|(id, _)| e.undelivered(*id))
                .collect())
        })?;
        let used: usize = s.bsends.iter().map(|b| b.1).sum();
        let cap = s.attached.map_or(0, |a| a.1);
        if used + need > cap {
            return Err(MpiErr::new(
                err::BUFFER,
                format!("buffered send of {need} bytes (with overhead): {} of {cap} attached bytes free", cap - used.min(cap)),
            ));
        }
    }
    // SAFETY: the caller's contract; buffered: the caller may reuse
    // `buf` as soon as this returns.
    let id = unsafe { start_send(buf, count, dt, dest, tag, comm, SendHow::Buffered) }?;
    with(|e| e.detach(id))?;
    state().bsends.push((id, need));
    with(|e| Ok(e.completed(hv(comm))))
}

/// Starts one operation of `mode`; its engine request.
///
/// # Safety
/// `p`'s buffer is valid as MPI's contract for persistent requests
/// keeps it.
unsafe fn start(p: &Persist) -> Result<usize, MpiErr> {
    let (b, dt, comm) = (p.buf as *mut c_void, mk(p.dt), mk(p.comm));
    match p.mode {
        // SAFETY: the caller's contract for the buffer.
        Mode::Recv => unsafe { start_recv(b, p.count, dt, p.peer, p.tag, comm) },
        // SAFETY: as above.
        Mode::Buffered => unsafe { bsend(b, p.count, dt, p.peer, p.tag, comm) },
        m => {
            let how = if m == Mode::Sync {
                SendHow::Sync
            } else {
                SendHow::Plain
            };
            // SAFETY: as above.
            unsafe { start_send(b, p.count, dt, p.peer, p.tag, comm, how) }
        }
    }
}

/// Makes a persistent request.
///
/// # Safety
/// `req` is writable.
#[allow(clippy::too_many_arguments)]
unsafe fn init(
    name: &str,
    mode: Mode,
    buf: *const c_void,
    count: c_int,
    dt: Handle,
    peer: c_int,
    tag: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    call(name, hv(comm), || {
        nbytes(count, dt)?;
        with(|e| e.comm(hv(comm)).map(|_| ()))?;
        let id = crate::handles::reg().handle() + 4;
        let p = Persist {
            mode,
            buf: buf as usize,
            count,
            dt: hv(dt),
            peer,
            tag,
            comm: hv(comm),
            active: None,
        };
        state().persist.insert(id, p);
        PERSISTENT.fetch_add(1, Ordering::AcqRel);
        // SAFETY: the caller's contract.
        unsafe { out(req, mk(id), "request") }
    })
}

macro_rules! send_init {
    ($name:ident / $pname:ident, $mode:expr) => {
        /// A persistent send (`MPI_Start` begins it).
        ///
        /// # Safety
        /// MPI's contract for the buffer while active; `req` is writable.
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            buf: *const c_void,
            count: c_int,
            dt: Handle,
            dest: c_int,
            tag: c_int,
            comm: Handle,
            req: *mut Handle,
        ) -> c_int {
            // SAFETY: the caller's contract.
            unsafe {
                init(
                    stringify!($name),
                    $mode,
                    buf,
                    count,
                    dt,
                    dest,
                    tag,
                    comm,
                    req,
                )
            }
        }
        super::pmpi!(unsafe $pname => $name(
            buf: *const c_void,
            count: c_int,
            dt: Handle,
            dest: c_int,
            tag: c_int,
            comm: Handle,
            req: *mut Handle,
        ) -> c_int);
    };
}

send_init!(MPI_Send_init / PMPI_Send_init, Mode::Standard);
send_init!(MPI_Ssend_init / PMPI_Ssend_init, Mode::Sync);
send_init!(MPI_Bsend_init / PMPI_Bsend_init, Mode::Buffered);
send_init!(MPI_Rsend_init / PMPI_Rsend_init, Mode::Standard);

/// `MPI_Recv_init`.
///
/// # Safety
/// MPI's contract for the buffer while active; `req` is writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Recv_init(
    buf: *mut c_void,
    count: c_int,
    dt: Handle,
    source: c_int,
    tag: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    // SAFETY: the caller's contract.
    unsafe {
        init(
            "MPI_Recv_init",
            Mode::Recv,
            buf,
            count,
            dt,
            source,
            tag,
            comm,
            req,
        )
    }
}

/// Starts persistent request `v`.
fn start_one(v: usize) -> Result<(), MpiErr> {
    let mut s = state();
    let p = s
        .persist
        .get_mut(&v)
        .ok_or_else(|| MpiErr::new(err::REQUEST, format!("{v:#x} is not a persistent request")))?;
    if p.active.is_some() {
        return Err(MpiErr::new(err::REQUEST, "the request is already active"));
    }
    let snapshot = Persist { active: None, ..*p };
    drop(s);
    // SAFETY: MPI's contract keeps a persistent request's buffer valid
    // while the request exists.
    let id = unsafe { start(&snapshot) }?;
    if let Some(p) = state().persist.get_mut(&v) {
        p.active = Some(id);
    }
    Ok(())
}

/// `MPI_Start`.
///
/// # Safety
/// `req` is a readable handle.
#[no_mangle]
pub unsafe extern "C" fn MPI_Start(req: *mut Handle) -> c_int {
    call("MPI_Start", h::COMM_WORLD, || {
        if req.is_null() {
            return Err(MpiErr::new(err::REQUEST, "request pointer is NULL"));
        }
        // SAFETY: non-null; the caller's contract.
        start_one(hv(unsafe { req.read() }))
    })
}

/// `MPI_Startall`.
///
/// # Safety
/// `reqs` holds `count` readable handles.
#[no_mangle]
pub unsafe extern "C" fn MPI_Startall(count: c_int, reqs: *mut Handle) -> c_int {
    call("MPI_Startall", h::COMM_WORLD, || {
        let n = super::ucount(count)?;
        if n > 0 && reqs.is_null() {
            return Err(MpiErr::new(err::REQUEST, "request array is NULL"));
        }
        for i in 0..n {
            // SAFETY: the caller's contract: i < count handles.
            start_one(hv(unsafe { reqs.add(i).read() }))?;
        }
        Ok(())
    })
}

/// `MPI_Bsend`.
///
/// # Safety
/// MPI's contract for the buffer.
#[no_mangle]
pub unsafe extern "C" fn MPI_Bsend(
    buf: *const c_void,
    count: c_int,
    dt: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
) -> c_int {
    call("MPI_Bsend", hv(comm), || {
        // SAFETY: the caller's buffer, as MPI's contract lends it.
        let id = unsafe { bsend(buf, count, dt, dest, tag, comm) }?;
        finish(id).map(|_| ())
    })
}

/// `MPI_Ibsend`: complete at once (the data is buffered).
///
/// # Safety
/// MPI's contract for the buffer; `req` is writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Ibsend(
    buf: *const c_void,
    count: c_int,
    dt: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    call("MPI_Ibsend", hv(comm), || {
        // SAFETY: the caller's buffer, as MPI's contract lends it.
        let id = unsafe { bsend(buf, count, dt, dest, tag, comm) }?;
        // SAFETY: the caller's contract.
        unsafe { out(req, mk(id), "request") }
    })
}

/// `MPI_Rsend`: a standard send (correct whenever a ready send is).
///
/// # Safety
/// MPI's contract for the buffer.
#[no_mangle]
pub unsafe extern "C" fn MPI_Rsend(
    buf: *const c_void,
    count: c_int,
    dt: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
) -> c_int {
    call("MPI_Rsend", hv(comm), || {
        // SAFETY: the caller's buffer, as MPI's contract lends it.
        let id = unsafe { start_send(buf, count, dt, dest, tag, comm, SendHow::Plain) }?;
        status_error(&finish(id)?, "MPI_Rsend")
    })
}

/// `MPI_Irsend`.
///
/// # Safety
/// MPI's contract for the buffer; `req` is writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Irsend(
    buf: *const c_void,
    count: c_int,
    dt: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    call("MPI_Irsend", hv(comm), || {
        // SAFETY: the caller's buffer, as MPI's contract lends it.
        let id = unsafe { start_send(buf, count, dt, dest, tag, comm, SendHow::Plain) }?;
        // SAFETY: the caller's contract.
        unsafe { out(req, mk(id), "request") }
    })
}

/// `MPI_Buffer_attach`.
///
/// # Safety
/// `buf` holds `size` bytes the library may use until detached.
#[no_mangle]
pub unsafe extern "C" fn MPI_Buffer_attach(buf: *mut c_void, size: c_int) -> c_int {
    call("MPI_Buffer_attach", h::COMM_WORLD, || {
        let n = super::ucount(size)?;
        let mut s = state();
        if s.attached.is_some() {
            return Err(MpiErr::new(err::BUFFER, "a buffer is already attached"));
        }
        s.attached = Some((buf as usize, n));
        Ok(())
    })
}

/// `MPI_Buffer_detach`: waits until the buffered sends are delivered.
///
/// # Safety
/// `buf` points to a writable `void *`, `size` to a writable int.
#[no_mangle]
pub unsafe extern "C" fn MPI_Buffer_detach(buf: *mut c_void, size: *mut c_int) -> c_int {
    call("MPI_Buffer_detach", h::COMM_WORLD, || {
        let pending: Vec<usize> = state().bsends.iter().map(|b| b.0).collect();
        wait_until(None, |e| Ok(pending.iter().all(|&id| !e.undelivered(id))))?;
        let mut s = state();
        s.bsends.clear();
        let (p, n) = s.attached.take().unwrap_or((0, 0));
        drop(s);
        // SAFETY: the caller's contract: `buf` is really a `void **`.
        unsafe {
            out(buf.cast::<*mut c_void>(), p as *mut c_void, "buffer_addr")?;
            out(size, n as c_int, "size")
        }
    })
}

/// `MPI_Sendrecv_replace`: the message received replaces the one sent.
///
/// # Safety
/// MPI's contract for the buffer; `status` is writable or ignored.
#[no_mangle]
pub unsafe extern "C" fn MPI_Sendrecv_replace(
    buf: *mut c_void,
    count: c_int,
    dt: Handle,
    dest: c_int,
    sendtag: c_int,
    source: c_int,
    recvtag: c_int,
    comm: Handle,
    status: *mut MpiStatus,
) -> c_int {
    call("MPI_Sendrecv_replace", hv(comm), || {
        // A send that leaves at once takes its bytes with it: the reply
        // is then received straight into the buffer.
        // SAFETY: MPI's contract: `count` elements of `dt` at `buf`,
        // written only once the send's read of them ended.
        let (data, into) = unsafe { (send_data(buf, count, dt)?, recv_dest(buf, count, dt)?) };
        let pair = ((dest, sendtag), (source, recvtag));
        if let Some(st) = exchange_at_once(hv(comm), data, pair, into)? {
            // SAFETY: the caller's contract.
            unsafe { put_status(status, &st) };
            return status_error(&st, "MPI_Sendrecv_replace");
        }
        let cap = nbytes(count, dt)?;
        let r = with(|e| {
            e.irecv(
                hv(comm),
                source,
                recvtag,
                Dest::Own {
                    cap,
                    data: Vec::new(),
                },
            )
        })?;
        // SAFETY: the caller's buffer, as MPI's contract lends it.
        let s = unsafe { start_send(buf, count, dt, dest, sendtag, comm, SendHow::Plain) }?;
        let sst = finish(s)?;
        wait_until(None, |e| Ok(e.reqs.get(&r).is_none_or(|q| q.done)))?;
        let (data, st) = with(|e| {
            let d = e.take_data(r);
            Ok((d, e.take(r).unwrap_or_default()))
        })?;
        if st.source != PROC_NULL {
            // SAFETY: MPI's contract: `count` elements of `dt` at buf.
            let mut a = unsafe { super::recv_area(buf, count, dt) }?;
            let b = a.bytes();
            let n = data.len().min(b.len());
            b[..n].copy_from_slice(&data[..n]);
            a.finish();
        }
        // SAFETY: the caller's contract.
        unsafe { put_status(status, &st) };
        status_error(&sst, "MPI_Sendrecv_replace")?;
        status_error(&st, "MPI_Sendrecv_replace")
    })
}

/// Completes every finished request of `ids`, writing their indices
/// and statuses; how many (`MPI_UNDEFINED` when all are null).
///
/// # Safety
/// `reqs` holds `ids.len()` handles; `indices` and `statuses` (unless
/// ignored) room for as many.
unsafe fn some(
    ids: &[Option<usize>],
    reqs: *mut Handle,
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: *mut MpiStatus,
) -> Result<(), MpiErr> {
    if ids.iter().all(Option::is_none) {
        // SAFETY: the caller's contract.
        return unsafe { out(outcount, UNDEFINED, "outcount") };
    }
    let done: Vec<usize> = with(|e| {
        Ok((0..ids.len())
            .filter(|&i| ids[i].is_some_and(|id| e.reqs.get(&id).is_none_or(|r| r.done)))
            .collect())
    })?;
    if !done.is_empty() && indices.is_null() {
        return Err(MpiErr::new(err::ARG, "array_of_indices is NULL"));
    }
    let mut failed = false;
    for (k, &i) in done.iter().enumerate() {
        let one = [ids[i]];
        let mut st = MpiStatus::default();
        // SAFETY: the caller's contract: i < count handles, k < count
        // indices and statuses; `st` is ours.
        unsafe {
            let r = collect_all(&one, reqs.add(i), &mut st);
            failed |= r.is_err();
            indices.add(k).write(i as c_int);
            if !statuses.is_null() {
                statuses.add(k).write(st);
            }
        }
    }
    // SAFETY: the caller's contract.
    unsafe { out(outcount, done.len() as c_int, "outcount")? };
    if failed {
        return Err(MpiErr::new(
            err::IN_STATUS,
            "a request failed; see its status",
        ));
    }
    Ok(())
}

/// `MPI_Waitsome`.
///
/// # Safety
/// `reqs` holds `count` writable handles; `indices` and `statuses`
/// (unless ignored) room for `count`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Waitsome(
    count: c_int,
    reqs: *mut Handle,
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: *mut MpiStatus,
) -> c_int {
    call("MPI_Waitsome", h::COMM_WORLD, || {
        // SAFETY: the caller's contract.
        let ids = unsafe { ids(count, reqs) }?;
        if ids.iter().any(Option::is_some) {
            wait_until(None, |e| {
                Ok(ids
                    .iter()
                    .flatten()
                    .any(|id| e.reqs.get(id).is_none_or(|r| r.done)))
            })?;
        }
        // SAFETY: the caller's contract.
        unsafe { some(&ids, reqs, outcount, indices, statuses) }
    })
}

/// `MPI_Testsome`.
///
/// # Safety
/// As [`MPI_Waitsome`].
#[no_mangle]
pub unsafe extern "C" fn MPI_Testsome(
    count: c_int,
    reqs: *mut Handle,
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: *mut MpiStatus,
) -> c_int {
    call("MPI_Testsome", h::COMM_WORLD, || {
        // Nonblocking collectives move on in every polling call.
        crate::nbc::progress();
        // SAFETY: the caller's contract.
        let ids = unsafe { ids(count, reqs) }?;
        with(|e| {
            e.progress();
            Ok(())
        })?;
        // SAFETY: the caller's contract.
        unsafe { some(&ids, reqs, outcount, indices, statuses) }
    })
}

/// `MPI_Testany`.
///
/// # Safety
/// `reqs` holds `count` writable handles; `index`, `flag` writable;
/// `status` writable or ignored.
#[no_mangle]
pub unsafe extern "C" fn MPI_Testany(
    count: c_int,
    reqs: *mut Handle,
    index: *mut c_int,
    flag: *mut c_int,
    status: *mut MpiStatus,
) -> c_int {
    call("MPI_Testany", h::COMM_WORLD, || {
        // Nonblocking collectives move on in every polling call.
        crate::nbc::progress();
        // SAFETY: the caller's contract.
        let ids = unsafe { ids(count, reqs) }?;
        let hit = with(|e| {
            e.progress();
            Ok(ids
                .iter()
                .position(|id| id.is_some_and(|id| e.reqs.get(&id).is_none_or(|r| r.done))))
        })?;
        // SAFETY: the caller's contract.
        unsafe {
            match hit {
                None => {
                    let all_null = ids.iter().all(Option::is_none);
                    out(flag, all_null as c_int, "flag")?;
                    out(index, UNDEFINED, "index")?;
                    if all_null {
                        put_status(status, &empty_status());
                    }
                    Ok(())
                }
                Some(i) => {
                    out(flag, 1, "flag")?;
                    out(index, i as c_int, "index")?;
                    let mut st = MpiStatus::default();
                    let r = collect_all(&[ids[i]], reqs.add(i), &mut st);
                    if !status.is_null() {
                        status.write(st);
                    }
                    r.map_err(|_| MpiErr::new(st.error, "MPI_Testany: the request failed"))
                }
            }
        }
    })
}

/// `MPI_Request_get_status`: like `MPI_Test` but the request stays.
///
/// # Safety
/// `flag` writable; `status` writable or ignored.
#[no_mangle]
pub unsafe extern "C" fn MPI_Request_get_status(
    req: Handle,
    flag: *mut c_int,
    status: *mut MpiStatus,
) -> c_int {
    call("MPI_Request_get_status", h::COMM_WORLD, || {
        // Nonblocking collectives move on in every polling call.
        crate::nbc::progress();
        let st = match resolve(hv(req)) {
            None => Some(empty_status()),
            Some(id) => with(|e| {
                e.progress();
                e.peek(id)
            })?,
        };
        // SAFETY: the caller's contract.
        unsafe {
            out(flag, st.is_some() as c_int, "flag")?;
            if let Some(st) = st {
                put_status(status, &st);
            }
        }
        Ok(())
    })
}

// The profiling interface (`PMPI_…`) of the functions above (build.rs).
include!(concat!(env!("OUT_DIR"), "/pmpi_requests.rs"));
