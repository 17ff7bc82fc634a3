//! Environment: init and finalize, thread levels, ranks, timers, names
//! and versions, error classes and handlers, communicator management.

use super::{call, hv, mk, out, Handle};
use crate::consts::{err, h, THREAD_MULTIPLE, THREAD_SERIALIZED};
use crate::engine::MpiErr;
use crate::runtime::{self, with};
use std::ffi::{c_char, c_int};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::OnceLock;
use std::time::Instant;

const VERSION: c_int = 3;
const SUBVERSION: c_int = 1;
/// `MPI_MAX_PROCESSOR_NAME`, `MPI_MAX_ERROR_STRING`,
/// `MPI_MAX_LIBRARY_VERSION_STRING` of the header.
const MAX_PROCESSOR_NAME: usize = 256;
const MAX_ERROR_STRING: usize = 512;
const MAX_LIBRARY_VERSION_STRING: usize = 8192;

static EPOCH: OnceLock<Instant> = OnceLock::new();

/// The thread level provided (`MPI_Init`: serialized, as calls are).
static LEVEL: AtomicI32 = AtomicI32::new(THREAD_SERIALIZED);

pub(super) fn not_initialized() -> Result<(), MpiErr> {
    if !runtime::initialized() || runtime::finalized() {
        return Err(MpiErr::new(err::OTHER, "MPI is not initialized"));
    }
    Ok(())
}

/// Copies `s` into the C string `buf` of `max` bytes (NUL-terminated,
/// truncated) and its length into `len`.
///
/// # Safety
/// `buf` points to `max` writable bytes; `len` to a writable int.
pub(super) unsafe fn put_str(
    s: &str,
    buf: *mut c_char,
    max: usize,
    len: *mut c_int,
    what: &str,
) -> Result<(), MpiErr> {
    if buf.is_null() {
        return Err(MpiErr::new(err::ARG, format!("{what} is NULL")));
    }
    let n = s.len().min(max - 1);
    // SAFETY: `buf` has `max` > n bytes by the caller's contract; `s` is
    // our own memory.
    unsafe {
        std::ptr::copy_nonoverlapping(s.as_ptr().cast::<c_char>(), buf, n);
        buf.add(n).write(0);
        super::out(len, n as c_int, "length")
    }
}

pub(super) fn init_common() -> Result<(), MpiErr> {
    EPOCH.get_or_init(Instant::now);
    runtime::init()
}

/// `MPI_Init`.
///
/// # Safety
/// MPI's contract (argc/argv are ignored).
#[no_mangle]
pub unsafe extern "C" fn MPI_Init(_argc: *mut c_int, _argv: *mut *mut *mut c_char) -> c_int {
    call("MPI_Init", h::COMM_WORLD, init_common)
}

/// `MPI_Init_thread`: every call takes the library's lock, so calls from
/// any thread one at a time are safe (up to `MPI_THREAD_SERIALIZED`);
/// `MPI_THREAD_MULTIPLE` also lets several threads wait at once (see
/// `runtime`).
///
/// # Safety
/// `provided` points to a writable int.
#[no_mangle]
pub unsafe extern "C" fn MPI_Init_thread(
    _argc: *mut c_int,
    _argv: *mut *mut *mut c_char,
    required: c_int,
    provided: *mut c_int,
) -> c_int {
    call("MPI_Init_thread", h::COMM_WORLD, || {
        let level = if required >= THREAD_MULTIPLE {
            THREAD_MULTIPLE
        } else {
            required.clamp(0, THREAD_SERIALIZED)
        };
        if level == THREAD_MULTIPLE && !runtime::initialized() {
            runtime::set_multiple();
        }
        init_common()?;
        LEVEL.store(level, Ordering::Relaxed);
        // SAFETY: the caller's contract.
        unsafe { out(provided, level, "provided") }
    })
}

/// `MPI_Query_thread`.
///
/// # Safety
/// `provided` points to a writable int.
#[no_mangle]
pub unsafe extern "C" fn MPI_Query_thread(provided: *mut c_int) -> c_int {
    // SAFETY: the caller's contract.
    call("MPI_Query_thread", h::COMM_WORLD, || unsafe {
        out(provided, LEVEL.load(Ordering::Relaxed), "provided")
    })
}

/// `MPI_Initialized`.
///
/// # Safety
/// `flag` points to a writable int.
#[no_mangle]
pub unsafe extern "C" fn MPI_Initialized(flag: *mut c_int) -> c_int {
    // SAFETY: the caller's contract.
    call("MPI_Initialized", h::COMM_WORLD, || unsafe {
        out(flag, runtime::initialized() as c_int, "flag")
    })
}

/// `MPI_Finalized`.
///
/// # Safety
/// `flag` points to a writable int.
#[no_mangle]
pub unsafe extern "C" fn MPI_Finalized(flag: *mut c_int) -> c_int {
    // SAFETY: the caller's contract.
    call("MPI_Finalized", h::COMM_WORLD, || unsafe {
        out(flag, runtime::finalized() as c_int, "flag")
    })
}

/// `MPI_Finalize`: `MPI_COMM_SELF`'s attributes are deleted first.
#[no_mangle]
pub extern "C" fn MPI_Finalize() -> c_int {
    call("MPI_Finalize", h::COMM_WORLD, || {
        super::attr::finalize_self()?;
        runtime::finalize()
    })
}

/// `MPI_Abort`: the process exits with `code` (1 when it is 0 or out of
/// range), and the launcher ends every other task of the job.
#[no_mangle]
pub extern "C" fn MPI_Abort(_comm: Handle, code: c_int) -> c_int {
    eprintln!("MPI_Abort: the job ends with status {code}");
    let status = if (1..=255).contains(&code) { code } else { 1 };
    std::process::exit(status)
}

/// `MPI_Comm_rank`.
///
/// # Safety
/// `rank` points to a writable int.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_rank(comm: Handle, rank: *mut c_int) -> c_int {
    call("MPI_Comm_rank", hv(comm), || {
        let r = with(|e| Ok(e.comm(hv(comm))?.rank))?;
        // SAFETY: the caller's contract.
        unsafe { out(rank, r as c_int, "rank") }
    })
}

/// `MPI_Comm_size`.
///
/// # Safety
/// `size` points to a writable int.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_size(comm: Handle, size: *mut c_int) -> c_int {
    call("MPI_Comm_size", hv(comm), || {
        let n = crate::inter::size(hv(comm))?;
        // SAFETY: the caller's contract.
        unsafe { out(size, n as c_int, "size") }
    })
}

/// `MPI_Wtime`: seconds on the monotonic clock since initialization.
#[no_mangle]
pub extern "C" fn MPI_Wtime() -> f64 {
    EPOCH.get_or_init(Instant::now).elapsed().as_secs_f64()
}

/// `MPI_Wtick`.
#[no_mangle]
pub extern "C" fn MPI_Wtick() -> f64 {
    1e-9
}

/// `MPI_Get_processor_name`: the host name.
///
/// # Safety
/// `name` has `MPI_MAX_PROCESSOR_NAME` writable bytes; `len` is writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Get_processor_name(name: *mut c_char, len: *mut c_int) -> c_int {
    call("MPI_Get_processor_name", h::COMM_WORLD, || {
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .unwrap_or_else(|_| "localhost".into());
        // SAFETY: the caller's contract.
        unsafe { put_str(host.trim(), name, MAX_PROCESSOR_NAME, len, "name") }
    })
}

/// `MPI_Get_version`.
///
/// # Safety
/// Both pointers are writable ints.
#[no_mangle]
pub unsafe extern "C" fn MPI_Get_version(version: *mut c_int, subversion: *mut c_int) -> c_int {
    call("MPI_Get_version", h::COMM_WORLD, || {
        // SAFETY: the caller's contract.
        unsafe {
            out(version, VERSION, "version")?;
            out(subversion, SUBVERSION, "subversion")
        }
    })
}

/// `MPI_Get_library_version`.
///
/// # Safety
/// `s` has `MPI_MAX_LIBRARY_VERSION_STRING` writable bytes; `len` is writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Get_library_version(s: *mut c_char, len: *mut c_int) -> c_int {
    call("MPI_Get_library_version", h::COMM_WORLD, || {
        let v = concat!(
            "SSS MPI over MBCF ",
            env!("CARGO_PKG_VERSION"),
            " (MPI 3.1 subset, standard ABI handles)"
        );
        // SAFETY: the caller's contract.
        unsafe { put_str(v, s, MAX_LIBRARY_VERSION_STRING, len, "version string") }
    })
}

/// `MPI_Error_string`.
///
/// # Safety
/// `s` has `MPI_MAX_ERROR_STRING` writable bytes; `len` is writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Error_string(code: c_int, s: *mut c_char, len: *mut c_int) -> c_int {
    call("MPI_Error_string", h::COMM_WORLD, || {
        let text = crate::consts::error_string(code)
            .map(String::from)
            .or_else(|| crate::errh::lookup(code).map(|(_, s)| s))
            .ok_or_else(|| MpiErr::new(err::ARG, format!("unknown error code {code}")))?;
        // SAFETY: the caller's contract.
        unsafe { put_str(&text, s, MAX_ERROR_STRING, len, "string") }
    })
}

/// `MPI_Error_class`: codes are classes.
///
/// # Safety
/// `class` is a writable int.
#[no_mangle]
pub unsafe extern "C" fn MPI_Error_class(code: c_int, class: *mut c_int) -> c_int {
    call("MPI_Error_class", h::COMM_WORLD, || {
        let c =
            if (0..=err::LASTCODE).contains(&code) && crate::consts::error_string(code).is_some() {
                code
            } else {
                crate::errh::lookup(code)
                    .ok_or_else(|| MpiErr::new(err::ARG, format!("unknown error code {code}")))?
                    .0
            };
        // SAFETY: the caller's contract.
        unsafe { out(class, c, "class") }
    })
}

/// Checks that `e` may be attached to an object of `kind`: a predefined
/// handler or the program's for that kind.
pub(super) fn settable_errh(e: usize, kind: crate::errh::Kind) -> Result<(), MpiErr> {
    if [h::ERRORS_ARE_FATAL, h::ERRORS_RETURN, h::ERRORS_ABORT].contains(&e) {
        return Ok(());
    }
    crate::errh::settable(e, kind).map(|_| ())
}

/// `MPI_Comm_set_errhandler`: a predefined handler or one from
/// `MPI_Comm_create_errhandler`.
#[no_mangle]
pub extern "C" fn MPI_Comm_set_errhandler(comm: Handle, errh: Handle) -> c_int {
    call("MPI_Comm_set_errhandler", hv(comm), || {
        let e = hv(errh);
        settable_errh(e, crate::errh::Kind::Comm)?;
        with(|g| {
            let c = g.comms.get_mut(&hv(comm)).ok_or_else(|| {
                MpiErr::new(err::COMM, format!("invalid communicator {:#x}", hv(comm)))
            })?;
            c.errh = e;
            Ok(())
        })
    })
}

/// `MPI_Comm_get_errhandler`.
///
/// # Safety
/// `errh` is a writable handle.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_get_errhandler(comm: Handle, errh: *mut Handle) -> c_int {
    call("MPI_Comm_get_errhandler", hv(comm), || {
        let e = with(|g| Ok(g.comm(hv(comm))?.errh))?;
        // SAFETY: the caller's contract.
        unsafe { out(errh, mk(e), "errhandler") }
    })
}

/// `MPI_Errhandler_free`: the handle becomes null; a program's handler
/// can no longer be set, while objects that carry it keep it.
///
/// # Safety
/// `errh` is a writable handle.
#[no_mangle]
pub unsafe extern "C" fn MPI_Errhandler_free(errh: *mut Handle) -> c_int {
    call("MPI_Errhandler_free", h::COMM_WORLD, || {
        if errh.is_null() {
            return Err(MpiErr::new(err::ARG, "errhandler is NULL"));
        }
        // SAFETY: non-null; the caller's contract.
        let e = hv(unsafe { errh.read() });
        let predefined = [h::ERRORS_ARE_FATAL, h::ERRORS_RETURN, h::ERRORS_ABORT].contains(&e);
        if !predefined && !crate::errh::free(e) {
            return Err(MpiErr::new(
                err::ERRHANDLER,
                format!("invalid error handler {e:#x}"),
            ));
        }
        // SAFETY: the caller's contract.
        unsafe { out(errh, mk(h::ERRHANDLER_NULL), "errhandler") }
    })
}

/// `MPI_Comm_split`.
///
/// # Safety
/// `newcomm` is a writable handle.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_split(
    comm: Handle,
    color: c_int,
    key: c_int,
    newcomm: *mut Handle,
) -> c_int {
    call("MPI_Comm_split", hv(comm), || {
        not_initialized()?;
        let c = crate::coll::comm_split(hv(comm), color, key)?;
        // SAFETY: the caller's contract.
        unsafe { out(newcomm, mk(c), "newcomm") }
    })
}

/// `MPI_Comm_compare`: identical handles, the same members in the same
/// order (congruent), the same members (similar), or not.
///
/// # Safety
/// `result` is a writable int.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_compare(a: Handle, b: Handle, result: *mut c_int) -> c_int {
    call("MPI_Comm_compare", hv(a), || {
        let r = with(|e| {
            let (x, y) = (e.comm(hv(a))?, e.comm(hv(b))?);
            Ok(if hv(a) == hv(b) {
                201
            } else if x.group == y.group {
                202
            } else {
                let (mut p, mut q) = (x.group.to_vec(), y.group.to_vec());
                p.sort_unstable();
                q.sort_unstable();
                if p == q {
                    203
                } else {
                    204
                }
            })
        })?;
        // SAFETY: the caller's contract.
        unsafe { out(result, r, "result") }
    })
}

// The profiling interface (`PMPI_…`) of the functions above (build.rs).
include!(concat!(env!("OUT_DIR"), "/pmpi_init.rs"));
