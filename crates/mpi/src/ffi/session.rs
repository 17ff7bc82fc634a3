//! Sessions (the MPI 4 model) over the same job: `MPI_Session_init`
//! joins the job if `MPI_Init` has not; the process sets are
//! "mpi://WORLD" and "mpi://SELF"; `MPI_Comm_create_from_group` makes a
//! communicator of a group's members.
//!
//! The library joins a job once: after the last session is finalized
//! (when `MPI_Init` was never called) the process has left the job, and
//! neither `MPI_Init` nor a new session can follow.

use super::init::put_str;
use super::{hv, mk, out, Handle};
use crate::consts::{err, h};
use crate::engine::MpiErr;
use crate::info::Info;
use std::collections::HashMap;
use std::ffi::{c_char, c_int};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Mutex, MutexGuard};

const SESSION_NULL: usize = 0x120;
/// The process sets, as `MPI_Session_get_nth_pset` lists them.
const PSETS: [&str; 2] = ["mpi://WORLD", "mpi://SELF"];
/// `MPI_MAX_PSET_NAME_LEN` of the header.
const MAX_PSET_NAME_LEN: usize = 1024;

#[derive(Default)]
struct Sessions {
    /// Live sessions and their error handlers.
    live: HashMap<usize, usize>,
    /// The first session joined the job (MPI_Init had not).
    joined: bool,
}

static SESSIONS: Mutex<Option<Sessions>> = Mutex::new(None);

fn sessions() -> MutexGuard<'static, Option<Sessions>> {
    SESSIONS.lock().unwrap_or_else(|e| e.into_inner())
}

fn errh_of(s: usize) -> Option<usize> {
    sessions().as_ref().and_then(|t| t.live.get(&s).copied())
}

fn check_errh(e: usize) -> Result<usize, MpiErr> {
    match e {
        h::ERRHANDLER_NULL => Ok(h::ERRORS_ARE_FATAL),
        h::ERRORS_ARE_FATAL | h::ERRORS_RETURN | h::ERRORS_ABORT => Ok(e),
        _ => Err(MpiErr::new(
            err::ERRHANDLER,
            format!("invalid error handler {e:#x}"),
        )),
    }
}

/// Runs a session call: failures go to the session's error handler
/// (`errh` when the session is not known yet).
fn scall(name: &str, errh: usize, body: impl FnOnce() -> Result<(), MpiErr>) -> c_int {
    let e = match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => return err::SUCCESS,
        Ok(Err(e)) => e,
        Err(_) => MpiErr::new(err::INTERN, "internal error (a panic was caught)"),
    };
    if errh == h::ERRORS_RETURN {
        return e.class;
    }
    let class = crate::consts::error_string(e.class).unwrap_or("unknown error class");
    eprintln!("MPI error in {name}: {} ({class}); ending the job", e.msg);
    std::process::exit(e.class.clamp(1, 255));
}

fn session(s: Handle) -> Result<usize, MpiErr> {
    errh_of(hv(s))
        .map(|_| hv(s))
        .ok_or_else(|| MpiErr::new(err::SESSION, format!("invalid session {:#x}", hv(s))))
}

/// The error handler a call on session `s` reports to.
fn errh(s: Handle) -> usize {
    errh_of(hv(s)).unwrap_or(h::ERRORS_ARE_FATAL)
}

/// `MPI_Session_init`.
///
/// # Safety
/// `s` is writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Session_init(_info: Handle, eh: Handle, s: *mut Handle) -> c_int {
    let e = check_errh(hv(eh)).unwrap_or(h::ERRORS_ARE_FATAL);
    scall("MPI_Session_init", e, || {
        let e = check_errh(hv(eh))?;
        if s.is_null() {
            return Err(MpiErr::new(err::ARG, "session is NULL"));
        }
        if crate::runtime::finalized() {
            return Err(MpiErr::new(
                err::SESSION,
                "the process has left the job (MPI_Finalize or the last MPI_Session_finalize)",
            ));
        }
        let mut g = sessions();
        let t = g.get_or_insert_with(Sessions::default);
        if !crate::runtime::initialized() {
            super::init::init_common()?;
            t.joined = true;
        }
        let id = crate::handles::reg().handle();
        t.live.insert(id, e);
        // SAFETY: the caller's contract.
        unsafe { out(s, mk(id), "session") }
    })
}

/// `MPI_Session_finalize`: the last session leaves the job if a session
/// joined it.
///
/// # Safety
/// `s` is readable and writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Session_finalize(s: *mut Handle) -> c_int {
    // SAFETY: null-checked; the caller's contract.
    let v = unsafe { s.as_ref() }.map_or(SESSION_NULL, |p| hv(*p));
    scall("MPI_Session_finalize", errh(mk(v)), || {
        session(mk(v))?;
        let leave = {
            let mut g = sessions();
            let t = g.get_or_insert_with(Sessions::default);
            t.live.remove(&v);
            t.live.is_empty() && t.joined
        };
        if leave {
            crate::runtime::finalize()?;
        }
        // SAFETY: the caller's contract.
        unsafe { out(s, mk(SESSION_NULL), "session") }
    })
}

/// `MPI_Session_get_num_psets`.
///
/// # Safety
/// `n` is writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Session_get_num_psets(
    s: Handle,
    _info: Handle,
    n: *mut c_int,
) -> c_int {
    scall("MPI_Session_get_num_psets", errh(s), || {
        session(s)?;
        // SAFETY: the caller's contract.
        unsafe { out(n, PSETS.len() as c_int, "npset_names") }
    })
}

/// `MPI_Session_get_nth_pset`: with `*len` 0, the room the name needs
/// (with its NUL); otherwise the name, cut to `*len - 1` bytes.
///
/// # Safety
/// `len` is readable and writable; `name` has `*len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn MPI_Session_get_nth_pset(
    s: Handle,
    _info: Handle,
    n: c_int,
    len: *mut c_int,
    name: *mut c_char,
) -> c_int {
    scall("MPI_Session_get_nth_pset", errh(s), || {
        session(s)?;
        let p = usize::try_from(n)
            .ok()
            .and_then(|i| PSETS.get(i))
            .ok_or_else(|| MpiErr::new(err::ARG, format!("no process set number {n}")))?;
        if len.is_null() {
            return Err(MpiErr::new(err::ARG, "pset_len is NULL"));
        }
        // SAFETY: non-null; the caller's contract.
        let room = unsafe { len.read() };
        if room <= 0 {
            // SAFETY: as above.
            return unsafe { out(len, p.len() as c_int + 1, "pset_len") };
        }
        let room = (room as usize).min(MAX_PSET_NAME_LEN);
        let mut written = 0;
        // SAFETY: `name` has `room` bytes.
        unsafe { put_str(p, name, room, &mut written, "pset_name") }
    })
}

/// The members (world ranks) of a process set.
fn pset(name: &str) -> Result<Vec<u32>, MpiErr> {
    let (me, size) = crate::runtime::with(|e| Ok((e.rank, e.size)))?;
    if name.eq_ignore_ascii_case(PSETS[0]) {
        Ok((0..size).collect())
    } else if name.eq_ignore_ascii_case(PSETS[1]) {
        Ok(vec![me])
    } else {
        Err(MpiErr::new(
            err::ARG,
            format!("unknown process set {name:?} (known: mpi://WORLD, mpi://SELF)"),
        ))
    }
}

/// # Safety
/// `p` is null or a NUL-terminated string.
unsafe fn pset_name(p: *const c_char) -> Result<String, MpiErr> {
    // SAFETY: the caller's contract.
    unsafe { super::info::bounded_str(p, MAX_PSET_NAME_LEN, err::ARG, "pset_name") }
}

/// `MPI_Session_get_info`.
///
/// # Safety
/// `i` is writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Session_get_info(s: Handle, i: *mut Handle) -> c_int {
    scall("MPI_Session_get_info", errh(s), || {
        session(s)?;
        let mut info = Info::default();
        info.set("thread_level", "MPI_THREAD_SERIALIZED")?;
        let id = crate::info::add(info)?;
        // SAFETY: the caller's contract.
        unsafe { out(i, mk(id), "info_used") }
    })
}

/// `MPI_Session_get_pset_info`: `mpi_size`.
///
/// # Safety
/// `name` is a NUL-terminated string; `i` is writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Session_get_pset_info(
    s: Handle,
    name: *const c_char,
    i: *mut Handle,
) -> c_int {
    scall("MPI_Session_get_pset_info", errh(s), || {
        session(s)?;
        // SAFETY: the caller's contract.
        let members = pset(&unsafe { pset_name(name) }?)?;
        let mut info = Info::default();
        info.set("mpi_size", &members.len().to_string())?;
        let id = crate::info::add(info)?;
        // SAFETY: the caller's contract.
        unsafe { out(i, mk(id), "info") }
    })
}

/// `MPI_Group_from_session_pset`.
///
/// # Safety
/// `name` is a NUL-terminated string; `g` is writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Group_from_session_pset(
    s: Handle,
    name: *const c_char,
    g: *mut Handle,
) -> c_int {
    scall("MPI_Group_from_session_pset", errh(s), || {
        session(s)?;
        // SAFETY: the caller's contract.
        let members = pset(&unsafe { pset_name(name) }?)?;
        let id = crate::handles::reg().add_group(members);
        // SAFETY: the caller's contract.
        unsafe { out(g, mk(id), "newgroup") }
    })
}

/// `MPI_Comm_create_from_group`: every member of the group calls it (the
/// tag and info are not read); the communicator gets `eh`.
///
/// # Safety
/// `new` is writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_create_from_group(
    g: Handle,
    _tag: *const c_char,
    _info: Handle,
    eh: Handle,
    new: *mut Handle,
) -> c_int {
    let e = check_errh(hv(eh)).unwrap_or(h::ERRORS_ARE_FATAL);
    scall("MPI_Comm_create_from_group", e, || {
        let e = check_errh(hv(eh))?;
        let members = crate::handles::reg().group(hv(g))?;
        if members.is_empty() {
            return Err(MpiErr::new(err::GROUP, "the group is empty"));
        }
        let c = crate::coll::comm_create_group(h::COMM_WORLD, &members)?;
        crate::runtime::with(|x| {
            if let Some(c) = x.comms.get_mut(&c) {
                c.errh = e;
            }
            Ok(())
        })?;
        // SAFETY: the caller's contract.
        unsafe { out(new, mk(c), "newcomm") }
    })
}

// The profiling interface (`PMPI_…`) of the functions above (build.rs).
include!(concat!(env!("OUT_DIR"), "/pmpi_session.rs"));
