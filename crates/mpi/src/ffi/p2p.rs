//! Point-to-point: sends, receives, probes and the request functions.

use super::requests::release;
use super::{call, empty_status, hv, mk, out, put_status, send_data, Handle, MpiStatus};
use crate::buf::{LentSrc, TypedBuf, UserBuf};
use crate::consts::{err, h, UNDEFINED};
use crate::engine::{AlonePoll, Dest, MpiErr, RecvStart, SendSrc, St};
use crate::runtime::{wait_looking, wait_until, with};
use std::ffi::{c_int, c_void};

/// How a send completes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum SendHow {
    /// Standard (or ready): the buffer is lent until the send completes.
    Plain,
    /// Synchronous: complete once matched; the buffer lent until then.
    Sync,
    /// Buffered (`MPI_Bsend`): the caller may reuse the buffer at once,
    /// so the engine copies whatever it keeps.
    Buffered,
}

/// Starts a send of `count` elements of `dt` at `buf`.
///
/// # Safety
/// MPI's contract: `buf` holds `count` readable elements of `dt`, and
/// (unless `how` is [`SendHow::Buffered`]) they stay valid and unchanged
/// until the send completes.
pub(super) unsafe fn start_send(
    buf: *const c_void,
    count: c_int,
    dt: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
    how: SendHow,
) -> Result<usize, MpiErr> {
    // SAFETY: MPI's contract: `buf` holds `count` elements of `dt`.
    let data = unsafe { send_data(buf, count, dt) }?;
    let src = match how {
        // A buffered send's buffer is the caller's again on return.
        SendHow::Buffered => SendSrc::Copy(&data),
        // SAFETY: the caller's contract: unchanged until the send completes.
        _ => unsafe { lend(&data) },
    };
    with(|e| e.isend(hv(comm), dest, tag, src, how == SendHow::Sync))
}

/// The bytes of a send: the caller's buffer itself, lent, when `data`
/// borrows it (a contiguous type); a packed copy, which lives only for
/// this call, as bytes the engine copies.
///
/// # Safety
/// A borrowed `data` stays valid and unchanged until the send completes.
// The variant, not the bytes, says whether the caller's buffer is lent.
#[allow(clippy::ptr_arg)]
unsafe fn lend<'a>(data: &'a std::borrow::Cow<'_, [u8]>) -> SendSrc<'a> {
    match data {
        // SAFETY: the caller's contract.
        std::borrow::Cow::Borrowed(b) => {
            SendSrc::Lent(unsafe { LentSrc::new(b.as_ptr(), b.len()) })
        }
        std::borrow::Cow::Owned(v) => SendSrc::Copy(v),
    }
}

/// Posts a receive into `count` elements of `dt` at `buf`.
///
/// # Safety
/// MPI's contract: `buf` holds `count` elements of `dt`, the library's
/// until the receive completes.
pub(super) unsafe fn start_recv(
    buf: *mut c_void,
    count: c_int,
    dt: Handle,
    source: c_int,
    tag: c_int,
    comm: Handle,
) -> Result<usize, MpiErr> {
    // SAFETY: the caller's contract.
    let dest = unsafe { recv_dest(buf, count, dt) }?;
    with(|e| e.irecv(hv(comm), source, tag, dest))
}

/// Where a receive of `count` elements of `dt` at `buf` goes.
///
/// # Safety
/// As [`start_recv`].
pub(super) unsafe fn recv_dest(buf: *mut c_void, count: c_int, dt: Handle) -> Result<Dest, MpiErr> {
    let l = crate::handles::layout_ref(hv(dt))?;
    let n = super::bytes_of(count, &l)?;
    if l.contiguous() && n > 0 && buf.is_null() {
        return Err(MpiErr::new(
            err::BUFFER,
            "NULL buffer with a non-zero count",
        ));
    }
    Ok(if l.contiguous() {
        // SAFETY: MPI's contract: `buf` holds `count` elements of `dt` and
        // is the library's until the receive completes.
        Dest::User(unsafe { UserBuf::new(buf.cast(), n) })
    } else {
        // SAFETY: as above, for the blocks of a non-contiguous type.
        Dest::Typed {
            buf: unsafe { TypedBuf::new(buf.cast(), super::ucount(count)?, l.into_arc()) },
            data: Vec::new(),
        }
    })
}

/// Waits for request `id`; its status (an error in it is returned too).
pub(super) fn finish(id: usize) -> Result<St, MpiErr> {
    let peer = with(|e| {
        e.reqs
            .get(&id)
            .map(|r| r.peer)
            .ok_or_else(|| MpiErr::new(err::REQUEST, format!("invalid request {id:#x}")))
    })?;
    finish_from(id, peer)
}

/// [`finish`] for a request whose expected partner is known: the status
/// is taken in the same look that sees it done.
pub(super) fn finish_from(id: usize, peer: Option<u32>) -> Result<St, MpiErr> {
    let mut out = None;
    wait_until(peer, |e| {
        if !e.reqs.contains_key(&id) {
            return Err(MpiErr::new(err::REQUEST, "request vanished"));
        }
        out = e.take(id);
        Ok(out.is_some())
    })?;
    out.ok_or_else(|| MpiErr::new(err::REQUEST, "request vanished"))
}

pub(super) fn status_error(st: &St, what: &str) -> Result<(), MpiErr> {
    if st.error != 0 {
        let msg = if st.error == err::TRUNCATE {
            format!("{what}: message of more bytes than the receive buffer holds")
        } else {
            format!("{what}: the operation failed")
        };
        return Err(MpiErr::new(st.error, msg));
    }
    Ok(())
}

/// `MPI_Send`.
///
/// # Safety
/// MPI's contract for the buffer.
#[no_mangle]
pub unsafe extern "C" fn MPI_Send(
    buf: *const c_void,
    count: c_int,
    dt: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
) -> c_int {
    call("MPI_Send", hv(comm), || {
        // SAFETY: MPI's contract: `buf` holds `count` elements of `dt`,
        // unchanged until this call returns, which it does once the send
        // completed.
        let data = unsafe { send_data(buf, count, dt) }?;
        let id = with(|e| {
            if e.send_now(hv(comm), dest, tag, &data)? {
                return Ok(None);
            }
            // SAFETY: as above; the wait below ends with the send.
            let src = unsafe { lend(&data) };
            let id = e.isend(hv(comm), dest, tag, src, false)?;
            Ok(Some((id, e.partner(id))))
        })?;
        match id {
            None => Ok(()),
            Some((id, peer)) => status_error(&finish_from(id, peer)?, "MPI_Send"),
        }
    })
}

/// `MPI_Ssend`: returns once the receiver matched the message.
///
/// # Safety
/// MPI's contract for the buffer.
#[no_mangle]
pub unsafe extern "C" fn MPI_Ssend(
    buf: *const c_void,
    count: c_int,
    dt: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
) -> c_int {
    call("MPI_Ssend", hv(comm), || {
        // SAFETY: the caller's buffer, as MPI's contract lends it.
        let id = unsafe { start_send(buf, count, dt, dest, tag, comm, SendHow::Sync) }?;
        status_error(&finish(id)?, "MPI_Ssend")
    })
}

/// `MPI_Recv`.
///
/// # Safety
/// MPI's contract for the buffer; `status` is writable or ignored.
#[no_mangle]
pub unsafe extern "C" fn MPI_Recv(
    buf: *mut c_void,
    count: c_int,
    dt: Handle,
    source: c_int,
    tag: c_int,
    comm: Handle,
    status: *mut MpiStatus,
) -> c_int {
    call("MPI_Recv", hv(comm), || {
        // SAFETY: the caller's buffer, as MPI's contract lends it.
        let dest = unsafe { recv_dest(buf, count, dt) }?;
        let st = recv_blocking(hv(comm), source, tag, dest)?;
        // SAFETY: the caller's contract.
        unsafe { put_status(status, &st) };
        status_error(&st, "MPI_Recv")
    })
}

/// A blocking receive into `dest`: posted in the wait's first look,
/// without a request when nothing posted before could match the same
/// messages (`engine/alone.rs`); its status.
fn recv_blocking(comm: usize, source: c_int, tag: c_int, dest: Dest) -> Result<St, MpiErr> {
    // Until the receive completes or becomes a request, the engine's
    // place for it names the caller's buffer: however the wait ends, the
    // place is then withdrawn.
    struct Placed(bool);
    impl Drop for Placed {
        fn drop(&mut self) {
            if self.0 {
                let _ = with(|e| {
                    e.alone_withdraw();
                    Ok(())
                });
            }
        }
    }
    let mut placed = Placed(false);
    let mut dest = Some(dest);
    let (mut req, mut peer, mut out) = (None, None, None);
    wait_looking(|e| {
        e.stats.blocking_recv_looks += 1;
        if let Some(d) = dest.take() {
            match e.recv_blocking(comm, source, tag, d)? {
                RecvStart::Done(st) => {
                    out = Some(st);
                    return Ok(None);
                }
                RecvStart::Alone { peer: p } => {
                    (placed.0, peer) = (true, p);
                    return Ok(Some(p));
                }
                RecvStart::Request { id, peer: p } => {
                    (req, peer) = (Some(id), p);
                }
            }
        } else {
            e.progress();
        }
        if req.is_none() {
            match e.alone_poll() {
                AlonePoll::Waiting => return Ok(Some(peer)),
                AlonePoll::Done(st) => {
                    placed.0 = false;
                    out = Some(st);
                    return Ok(None);
                }
                AlonePoll::Request(id) => {
                    placed.0 = false;
                    req = Some(id);
                }
                AlonePoll::Gone => {
                    placed.0 = false;
                    return Err(MpiErr::new(err::INTERN, "blocking receive withdrawn"));
                }
            }
        }
        let id = req.unwrap_or_default();
        if !e.reqs.contains_key(&id) {
            return Err(MpiErr::new(err::REQUEST, "request vanished"));
        }
        out = e.take(id);
        Ok(out.is_none().then_some(peer))
    })?;
    out.ok_or_else(|| MpiErr::new(err::REQUEST, "request vanished"))
}

/// `MPI_Isend`.
///
/// # Safety
/// MPI's contract for the buffer; `req` is writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Isend(
    buf: *const c_void,
    count: c_int,
    dt: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    call("MPI_Isend", hv(comm), || {
        // SAFETY: the caller's buffer, as MPI's contract lends it.
        let id = unsafe { start_send(buf, count, dt, dest, tag, comm, SendHow::Plain) }?;
        // SAFETY: the caller's contract.
        unsafe { out(req, mk(id), "request") }
    })
}

/// `MPI_Issend`.
///
/// # Safety
/// MPI's contract for the buffer; `req` is writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Issend(
    buf: *const c_void,
    count: c_int,
    dt: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    call("MPI_Issend", hv(comm), || {
        // SAFETY: the caller's buffer, as MPI's contract lends it.
        let id = unsafe { start_send(buf, count, dt, dest, tag, comm, SendHow::Sync) }?;
        // SAFETY: the caller's contract.
        unsafe { out(req, mk(id), "request") }
    })
}

/// `MPI_Irecv`.
///
/// # Safety
/// MPI's contract for the buffer; `req` is writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Irecv(
    buf: *mut c_void,
    count: c_int,
    dt: Handle,
    source: c_int,
    tag: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    call("MPI_Irecv", hv(comm), || {
        // SAFETY: the caller's buffer, as MPI's contract lends it.
        let id = unsafe { start_recv(buf, count, dt, source, tag, comm) }?;
        // SAFETY: the caller's contract.
        unsafe { out(req, mk(id), "request") }
    })
}

/// `MPI_Sendrecv(_replace)` without requests: `data` sent to `dest`
/// when it leaves at once (eager, to another task, nothing queued, a
/// credit free; the receive's arguments checked before), then the reply
/// received into `into` as `MPI_Recv` does; its status. None when
/// nothing was sent: the send takes the general path. Two looks under
/// the library's lock where two requests took six. `data` is let go
/// before anything is written into `into` (they may be one buffer).
pub(super) fn exchange_at_once(
    comm: usize,
    data: std::borrow::Cow<'_, [u8]>,
    ((dest, sendtag), (source, recvtag)): ((c_int, c_int), (c_int, c_int)),
    into: Dest,
) -> Result<Option<St>, MpiErr> {
    let sent = with(|e| {
        e.recv_args(comm, source, recvtag)?;
        e.send_now(comm, dest, sendtag, &data)
    })?;
    drop(data);
    if !sent {
        return Ok(None);
    }
    recv_blocking(comm, source, recvtag, into).map(Some)
}

/// `MPI_Sendrecv`.
///
/// # Safety
/// MPI's contract for both buffers; `status` is writable or ignored.
#[no_mangle]
pub unsafe extern "C" fn MPI_Sendrecv(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: Handle,
    dest: c_int,
    sendtag: c_int,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: Handle,
    source: c_int,
    recvtag: c_int,
    comm: Handle,
    status: *mut MpiStatus,
) -> c_int {
    call("MPI_Sendrecv", hv(comm), || {
        // SAFETY: the caller's buffer, as MPI's contract lends it.
        let rdest = unsafe { recv_dest(recvbuf, recvcount, recvtype) }?;
        // SAFETY: MPI's contract: `sendbuf` holds `sendcount` elements,
        // unchanged during the call.
        let data = unsafe { send_data(sendbuf, sendcount, sendtype) }?;
        let pair = ((dest, sendtag), (source, recvtag));
        if let Some(st) = exchange_at_once(hv(comm), data, pair, rdest)? {
            // SAFETY: the caller's contract.
            unsafe { put_status(status, &st) };
            return status_error(&st, "MPI_Sendrecv");
        }
        // SAFETY: the caller's buffer, as MPI's contract lends it.
        let r = unsafe { start_recv(recvbuf, recvcount, recvtype, source, recvtag, comm) }?;
        // SAFETY: the caller's buffer, as MPI's contract lends it.
        let s = unsafe {
            start_send(
                sendbuf,
                sendcount,
                sendtype,
                dest,
                sendtag,
                comm,
                SendHow::Plain,
            )
        }?;
        let sst = finish(s)?;
        let st = finish(r)?;
        // SAFETY: the caller's contract.
        unsafe { put_status(status, &st) };
        status_error(&sst, "MPI_Sendrecv")?;
        status_error(&st, "MPI_Sendrecv")
    })
}

/// The request id in `*req`, or None for `MPI_REQUEST_NULL`.
///
/// # Safety
/// `req` is null or a readable handle.
pub(super) unsafe fn req_id(req: *const Handle) -> Result<Option<usize>, MpiErr> {
    if req.is_null() {
        return Err(MpiErr::new(err::REQUEST, "request pointer is NULL"));
    }
    // SAFETY: non-null; the caller's contract.
    Ok(super::requests::resolve(hv(unsafe { req.read() })))
}

/// The communicator of request `id`, for its error handler.
pub(super) fn req_comm(id: Option<usize>) -> usize {
    id.and_then(|id| with(|e| Ok(e.reqs.get(&id).map(|r| r.comm))).ok().flatten())
        .unwrap_or(h::COMM_WORLD)
}

/// `MPI_Wait`.
///
/// # Safety
/// `req` is a writable handle; `status` is writable or ignored.
#[no_mangle]
pub unsafe extern "C" fn MPI_Wait(req: *mut Handle, status: *mut MpiStatus) -> c_int {
    // SAFETY: the caller's contract.
    let id = unsafe { req_id(req) };
    let comm = req_comm(id.as_ref().ok().copied().flatten());
    call("MPI_Wait", comm, || {
        let st = match id? {
            None => empty_status(),
            Some(id) => {
                let st = finish(id)?;
                // SAFETY: the caller's contract.
                unsafe { release(req) };
                st
            }
        };
        // SAFETY: the caller's contract.
        unsafe { put_status(status, &st) };
        status_error(&st, "MPI_Wait")
    })
}

/// `MPI_Test`.
///
/// # Safety
/// `req` is a writable handle, `flag` writable; `status` writable or ignored.
#[no_mangle]
pub unsafe extern "C" fn MPI_Test(
    req: *mut Handle,
    flag: *mut c_int,
    status: *mut MpiStatus,
) -> c_int {
    // SAFETY: the caller's contract.
    let id = unsafe { req_id(req) };
    let comm = req_comm(id.as_ref().ok().copied().flatten());
    call("MPI_Test", comm, || {
        // Nonblocking collectives move on in every polling call.
        crate::nbc::progress();
        let st = match id? {
            None => Some(empty_status()),
            Some(id) => with(|e| {
                e.progress();
                if !e.reqs.contains_key(&id) {
                    return Err(MpiErr::new(
                        err::REQUEST,
                        format!("invalid request {id:#x}"),
                    ));
                }
                Ok(e.take(id))
            })?,
        };
        // SAFETY: the caller's contract.
        unsafe { out(flag, st.is_some() as c_int, "flag")? };
        let Some(st) = st else {
            return Ok(());
        };
        // SAFETY: the caller's contract.
        unsafe {
            release(req);
            put_status(status, &st);
        }
        status_error(&st, "MPI_Test")
    })
}

/// The ids of `count` requests at `reqs` (None for null ones).
///
/// # Safety
/// `reqs` holds `count` readable handles.
pub(super) unsafe fn ids(count: c_int, reqs: *const Handle) -> Result<Vec<Option<usize>>, MpiErr> {
    let n = usize::try_from(count)
        .map_err(|_| MpiErr::new(err::COUNT, format!("invalid count {count}")))?;
    if n == 0 {
        return Ok(Vec::new());
    }
    if reqs.is_null() {
        return Err(MpiErr::new(err::REQUEST, "request array is NULL"));
    }
    // SAFETY: the caller's contract: `count` handles.
    let all = unsafe { std::slice::from_raw_parts(reqs, n) };
    Ok(all
        .iter()
        .map(|&r| super::requests::resolve(hv(r)))
        .collect())
}

/// Takes the completed requests among `ids`, writing their statuses and
/// nulling their handles; MPI_ERR_IN_STATUS if one failed.
///
/// # Safety
/// `reqs` holds `ids.len()` writable handles; `statuses` is null or
/// holds as many writable statuses.
pub(super) unsafe fn collect_all(
    ids: &[Option<usize>],
    reqs: *mut Handle,
    statuses: *mut MpiStatus,
) -> Result<(), MpiErr> {
    let sts = with(|e| {
        Ok(ids
            .iter()
            .map(|id| id.and_then(|id| e.take(id)))
            .collect::<Vec<_>>())
    })?;
    let mut failed = false;
    for (i, (id, st)) in ids.iter().zip(sts).enumerate() {
        let st = st.unwrap_or_else(empty_status);
        failed |= st.error != 0;
        // SAFETY: the caller's contract: index i < ids.len().
        unsafe {
            if id.is_some() {
                release(reqs.add(i));
            }
            if !statuses.is_null() {
                put_status(statuses.add(i), &st);
            }
        }
    }
    if failed {
        return Err(MpiErr::new(
            err::IN_STATUS,
            "a request failed; see its status",
        ));
    }
    Ok(())
}

/// `MPI_Waitall`.
///
/// # Safety
/// `reqs` holds `count` writable handles; `statuses` is ignored or holds
/// `count` writable statuses.
#[no_mangle]
pub unsafe extern "C" fn MPI_Waitall(
    count: c_int,
    reqs: *mut Handle,
    statuses: *mut MpiStatus,
) -> c_int {
    call("MPI_Waitall", h::COMM_WORLD, || {
        // SAFETY: the caller's contract.
        let ids = unsafe { ids(count, reqs) }?;
        wait_until(None, |e| {
            Ok(ids
                .iter()
                .flatten()
                .all(|id| e.reqs.get(id).is_none_or(|r| r.done)))
        })?;
        // SAFETY: the caller's contract.
        unsafe { collect_all(&ids, reqs, statuses) }
    })
}

/// `MPI_Testall`.
///
/// # Safety
/// As [`MPI_Waitall`]; `flag` is writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Testall(
    count: c_int,
    reqs: *mut Handle,
    flag: *mut c_int,
    statuses: *mut MpiStatus,
) -> c_int {
    call("MPI_Testall", h::COMM_WORLD, || {
        // Nonblocking collectives move on in every polling call.
        crate::nbc::progress();
        // SAFETY: the caller's contract.
        let ids = unsafe { ids(count, reqs) }?;
        let all = with(|e| {
            e.progress();
            Ok(ids
                .iter()
                .flatten()
                .all(|id| e.reqs.get(id).is_none_or(|r| r.done)))
        })?;
        // SAFETY: the caller's contract.
        unsafe { out(flag, all as c_int, "flag")? };
        if !all {
            return Ok(());
        }
        // SAFETY: the caller's contract.
        unsafe { collect_all(&ids, reqs, statuses) }
    })
}

/// `MPI_Waitany`.
///
/// # Safety
/// `reqs` holds `count` writable handles; `index` is writable; `status`
/// writable or ignored.
#[no_mangle]
pub unsafe extern "C" fn MPI_Waitany(
    count: c_int,
    reqs: *mut Handle,
    index: *mut c_int,
    status: *mut MpiStatus,
) -> c_int {
    call("MPI_Waitany", h::COMM_WORLD, || {
        // SAFETY: the caller's contract.
        let ids = unsafe { ids(count, reqs) }?;
        if ids.iter().all(Option::is_none) {
            // SAFETY: the caller's contract.
            unsafe {
                out(index, UNDEFINED, "index")?;
                put_status(status, &empty_status());
            }
            return Ok(());
        }
        let mut hit = 0;
        wait_until(None, |e| {
            let found = ids
                .iter()
                .position(|id| id.is_some_and(|id| e.reqs.get(&id).is_none_or(|r| r.done)));
            hit = found.unwrap_or(0);
            Ok(found.is_some())
        })?;
        let st = with(|e| Ok(ids[hit].and_then(|id| e.take(id))))?.unwrap_or_else(empty_status);
        // SAFETY: the caller's contract; hit < count.
        unsafe {
            release(reqs.add(hit));
            out(index, hit as c_int, "index")?;
            put_status(status, &st);
        }
        status_error(&st, "MPI_Waitany")
    })
}

/// `MPI_Iprobe`.
///
/// # Safety
/// `flag` is writable; `status` writable or ignored.
#[no_mangle]
pub unsafe extern "C" fn MPI_Iprobe(
    source: c_int,
    tag: c_int,
    comm: Handle,
    flag: *mut c_int,
    status: *mut MpiStatus,
) -> c_int {
    call("MPI_Iprobe", hv(comm), || {
        // Nonblocking collectives move on in every polling call.
        crate::nbc::progress();
        let st = with(|e| e.probe(hv(comm), source, tag))?;
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

/// `MPI_Probe`.
///
/// # Safety
/// `status` is writable or ignored.
#[no_mangle]
pub unsafe extern "C" fn MPI_Probe(
    source: c_int,
    tag: c_int,
    comm: Handle,
    status: *mut MpiStatus,
) -> c_int {
    call("MPI_Probe", hv(comm), || {
        let partner = with(|e| {
            let c = e.comm(hv(comm))?;
            e.check_source(c, source)
        })?;
        let mut got = None;
        wait_until(partner, |e| {
            got = e.probe(hv(comm), source, tag)?;
            Ok(got.is_some())
        })?;
        // SAFETY: the caller's contract.
        unsafe { put_status(status, &got.unwrap_or_default()) };
        Ok(())
    })
}

/// `MPI_Get_count`: elements received, or `MPI_UNDEFINED` when the bytes
/// are not a whole number of them.
///
/// # Safety
/// `status` is a readable status; `count` writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Get_count(
    status: *const MpiStatus,
    dt: Handle,
    count: *mut c_int,
) -> c_int {
    call("MPI_Get_count", h::COMM_WORLD, || {
        // SAFETY: the caller's contract.
        let st =
            unsafe { status.as_ref() }.ok_or_else(|| MpiErr::new(err::ARG, "status is NULL"))?;
        let size = super::lay(dt)?.size as u64;
        let bytes = st.count();
        let n = if size == 0 {
            0
        } else if bytes % size != 0 {
            UNDEFINED
        } else {
            c_int::try_from(bytes / size).unwrap_or(UNDEFINED)
        };
        // SAFETY: the caller's contract.
        unsafe { out(count, n, "count") }
    })
}

/// `MPI_Cancel` (receives not yet matched; a matched one or a send
/// completes normally, not cancelled).
///
/// # Safety
/// `req` is a readable handle.
#[no_mangle]
pub unsafe extern "C" fn MPI_Cancel(req: *mut Handle) -> c_int {
    call("MPI_Cancel", h::COMM_WORLD, || {
        // SAFETY: the caller's contract.
        if let Some(id) = unsafe { req_id(req) }? {
            with(|e| Ok(e.cancel_recv(id)))?;
        }
        Ok(())
    })
}

/// `MPI_Test_cancelled`.
///
/// # Safety
/// `status` is readable; `flag` writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Test_cancelled(status: *const MpiStatus, flag: *mut c_int) -> c_int {
    call("MPI_Test_cancelled", h::COMM_WORLD, || {
        // SAFETY: the caller's contract.
        let st =
            unsafe { status.as_ref() }.ok_or_else(|| MpiErr::new(err::ARG, "status is NULL"))?;
        // SAFETY: the caller's contract.
        unsafe { out(flag, (st.internal[2] != 0) as c_int, "flag") }
    })
}

/// Sets the byte count of `status` to `n` basic elements of `dt`.
///
/// # Safety
/// `status` is null or a writable `MPI_Status`.
unsafe fn set_elements(status: *mut MpiStatus, dt: Handle, n: i64) -> Result<(), MpiErr> {
    // SAFETY: the caller's contract.
    let st = unsafe { status.as_mut() }.ok_or_else(|| MpiErr::new(err::ARG, "status is NULL"))?;
    let l = super::lay(dt)?;
    let bytes = usize::try_from(n)
        .map_err(|_| MpiErr::new(err::COUNT, format!("invalid count {n}")))
        .and_then(|n| {
            l.bytes_of_elements(n)
                .ok_or_else(|| MpiErr::new(err::COUNT, format!("{n} elements do not fit a count")))
        })? as u64;
    st.internal[0] = bytes as u32 as c_int;
    st.internal[1] = (bytes >> 32) as u32 as c_int;
    Ok(())
}

/// `MPI_Status_set_elements`: `MPI_Get_elements` on the status then
/// gives `count` (and `MPI_Get_count` the whole elements of `dt`).
///
/// # Safety
/// `status` is a writable `MPI_Status`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Status_set_elements(
    status: *mut MpiStatus,
    dt: Handle,
    count: c_int,
) -> c_int {
    // SAFETY: the caller's contract.
    call("MPI_Status_set_elements", h::COMM_WORLD, || unsafe {
        set_elements(status, dt, i64::from(count))
    })
}

/// `MPI_Status_set_elements_x`.
///
/// # Safety
/// As [`MPI_Status_set_elements`].
#[no_mangle]
pub unsafe extern "C" fn MPI_Status_set_elements_x(
    status: *mut MpiStatus,
    dt: Handle,
    count: i64,
) -> c_int {
    // SAFETY: the caller's contract.
    call("MPI_Status_set_elements_x", h::COMM_WORLD, || unsafe {
        set_elements(status, dt, count)
    })
}

/// `MPI_Status_set_cancelled`.
///
/// # Safety
/// `status` is a writable `MPI_Status`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Status_set_cancelled(status: *mut MpiStatus, flag: c_int) -> c_int {
    call("MPI_Status_set_cancelled", h::COMM_WORLD, || {
        // SAFETY: the caller's contract.
        let st =
            unsafe { status.as_mut() }.ok_or_else(|| MpiErr::new(err::ARG, "status is NULL"))?;
        st.internal[2] = (flag != 0) as c_int;
        Ok(())
    })
}

macro_rules! status_field {
    ($get:ident, $pget:ident, $set:ident, $pset:ident, $field:ident) => {
        #[doc = concat!("`", stringify!($get), "`.")]
        ///
        /// # Safety
        /// `status` is an `MPI_Status`; the output is writable.
        #[no_mangle]
        pub unsafe extern "C" fn $get(status: *const MpiStatus, v: *mut c_int) -> c_int {
            call(stringify!($get), h::COMM_WORLD, || {
                // SAFETY: the caller's contract.
                let st = unsafe { status.as_ref() }
                    .ok_or_else(|| MpiErr::new(err::ARG, "status is NULL"))?;
                // SAFETY: the caller's contract.
                unsafe { out(v, st.$field, stringify!($field)) }
            })
        }

        #[doc = concat!("`", stringify!($set), "`.")]
        ///
        /// # Safety
        /// `status` is a writable `MPI_Status`.
        #[no_mangle]
        pub unsafe extern "C" fn $set(status: *mut MpiStatus, v: c_int) -> c_int {
            call(stringify!($set), h::COMM_WORLD, || {
                // SAFETY: the caller's contract.
                let st = unsafe { status.as_mut() }
                    .ok_or_else(|| MpiErr::new(err::ARG, "status is NULL"))?;
                st.$field = v;
                Ok(())
            })
        }

        super::pmpi!(unsafe $pget => $get(status: *const MpiStatus, v: *mut c_int) -> c_int);
        super::pmpi!(unsafe $pset => $set(status: *mut MpiStatus, v: c_int) -> c_int);
    };
}

status_field!(
    MPI_Status_get_source,
    PMPI_Status_get_source,
    MPI_Status_set_source,
    PMPI_Status_set_source,
    source
);
status_field!(
    MPI_Status_get_tag,
    PMPI_Status_get_tag,
    MPI_Status_set_tag,
    PMPI_Status_set_tag,
    tag
);
status_field!(
    MPI_Status_get_error,
    PMPI_Status_get_error,
    MPI_Status_set_error,
    PMPI_Status_set_error,
    error
);

/// `MPI_Request_free`: the handle becomes `MPI_REQUEST_NULL`; the
/// operation completes on its own (a receive still fills its buffer).
///
/// # Safety
/// `req` is a writable handle.
#[no_mangle]
pub unsafe extern "C" fn MPI_Request_free(req: *mut Handle) -> c_int {
    call("MPI_Request_free", h::COMM_WORLD, || {
        // SAFETY: the caller's contract.
        if unsafe { super::requests::free_persistent(req) }? {
            return Ok(());
        }
        // SAFETY: the caller's contract.
        let Some(id) = (unsafe { req_id(req) })? else {
            return Err(MpiErr::new(
                err::REQUEST,
                "MPI_REQUEST_NULL cannot be freed",
            ));
        };
        with(|e| e.detach(id))?;
        // SAFETY: the caller's contract.
        unsafe { out(req, mk(h::REQUEST_NULL), "request") }
    })
}

/// `MPI_Get_elements`: basic elements received, or `MPI_UNDEFINED`
/// when the bytes end inside one.
///
/// # Safety
/// `status` is a readable status; `count` writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Get_elements(
    status: *const MpiStatus,
    dt: Handle,
    count: *mut c_int,
) -> c_int {
    call("MPI_Get_elements", h::COMM_WORLD, || {
        // SAFETY: the caller's contract.
        let st =
            unsafe { status.as_ref() }.ok_or_else(|| MpiErr::new(err::ARG, "status is NULL"))?;
        let l = super::lay(dt)?;
        let n = usize::try_from(st.count())
            .ok()
            .and_then(|b| l.elements(b))
            .and_then(|n| c_int::try_from(n).ok())
            .unwrap_or(UNDEFINED);
        // SAFETY: the caller's contract.
        unsafe { out(count, n, "count") }
    })
}

/// `MPI_Get_elements_x`.
///
/// # Safety
/// As [`MPI_Get_elements`], `count` an `MPI_Count`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Get_elements_x(
    status: *const MpiStatus,
    dt: Handle,
    count: *mut i64,
) -> c_int {
    call("MPI_Get_elements_x", h::COMM_WORLD, || {
        // SAFETY: the caller's contract.
        let st =
            unsafe { status.as_ref() }.ok_or_else(|| MpiErr::new(err::ARG, "status is NULL"))?;
        let l = super::lay(dt)?;
        let n = usize::try_from(st.count())
            .ok()
            .and_then(|b| l.elements(b))
            .and_then(|n| i64::try_from(n).ok())
            .unwrap_or(i64::from(UNDEFINED));
        // SAFETY: the caller's contract.
        unsafe { out(count, n, "count") }
    })
}

// The profiling interface (`PMPI_…`) of the functions above (build.rs).
include!(concat!(env!("OUT_DIR"), "/pmpi_p2p.rs"));
