//! `MPI_Info` (see `crate::info`) and the calls that take hints:
//! `Comm_set_info`/`get_info`, `Comm_dup_with_info`,
//! `Win_set_info`/`get_info`.

use super::init::put_str;
use super::{call, hv, mk, out, Handle};
use crate::attr::Obj;
use crate::consts::{err, h};
use crate::engine::MpiErr;
use crate::info::{self, Info, INFO_NULL, MAX_INFO_KEY, MAX_INFO_VAL};
use std::ffi::{c_char, c_int};

/// A C string shorter than `max` bytes (a longer one is error `class`);
/// never reads past `max` bytes.
///
/// # Safety
/// `p` is null or a NUL-terminated string.
pub(super) unsafe fn bounded_str(
    p: *const c_char,
    max: usize,
    class: i32,
    what: &str,
) -> Result<String, MpiErr> {
    if p.is_null() {
        return Err(MpiErr::new(err::ARG, format!("{what} is NULL")));
    }
    // SAFETY: the caller's contract; strnlen stops at the NUL or at `max`.
    let n = unsafe { libc::strnlen(p, max) };
    if n >= max {
        return Err(MpiErr::new(
            class,
            format!("{what} is longer than {} bytes", max - 1),
        ));
    }
    // SAFETY: `n` bytes before the NUL.
    let s = unsafe { std::slice::from_raw_parts(p.cast::<u8>(), n) };
    Ok(String::from_utf8_lossy(s).into_owned())
}

/// # Safety
/// `p` is null or a NUL-terminated string.
unsafe fn key(p: *const c_char) -> Result<String, MpiErr> {
    // SAFETY: the caller's contract.
    let k = unsafe { bounded_str(p, MAX_INFO_KEY, err::INFO_KEY, "key") }?;
    info::check_key(&k)?;
    Ok(k)
}

/// Stores a new info object's handle.
///
/// # Safety
/// `new` is writable.
unsafe fn put_info(i: Info, new: *mut Handle) -> Result<(), MpiErr> {
    if new.is_null() {
        return Err(MpiErr::new(err::ARG, "info is NULL"));
    }
    let id = info::add(i)?;
    // SAFETY: the caller's contract.
    unsafe { out(new, mk(id), "info") }
}

/// `MPI_Info_create`.
///
/// # Safety
/// `new` is writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Info_create(new: *mut Handle) -> c_int {
    // SAFETY: the caller's contract.
    call("MPI_Info_create", h::COMM_WORLD, || unsafe {
        put_info(Info::default(), new)
    })
}

/// `MPI_Info_set`.
///
/// # Safety
/// `k` and `v` are NUL-terminated strings.
#[no_mangle]
pub unsafe extern "C" fn MPI_Info_set(i: Handle, k: *const c_char, v: *const c_char) -> c_int {
    call("MPI_Info_set", h::COMM_WORLD, || {
        // SAFETY: the caller's contract.
        let (k, v) = unsafe {
            (
                key(k)?,
                bounded_str(v, MAX_INFO_VAL, err::INFO_VALUE, "value")?,
            )
        };
        info::with_info(hv(i), |i| i.set(&k, &v))
    })
}

/// `MPI_Info_delete`.
///
/// # Safety
/// `k` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn MPI_Info_delete(i: Handle, k: *const c_char) -> c_int {
    call("MPI_Info_delete", h::COMM_WORLD, || {
        // SAFETY: the caller's contract.
        let k = unsafe { key(k) }?;
        info::with_info(hv(i), |i| i.delete(&k))
    })
}

/// The value of key `k` of info `i`, if set.
///
/// # Safety
/// `k` is a NUL-terminated string.
unsafe fn value(i: Handle, k: *const c_char) -> Result<Option<String>, MpiErr> {
    // SAFETY: the caller's contract.
    let k = unsafe { key(k) }?;
    info::read(hv(i), |i| Ok(i.get(&k).map(String::from)))
}

/// `MPI_Info_get` (deprecated in MPI 4): at most `valuelen` characters
/// and a NUL.
///
/// # Safety
/// `v` has `valuelen + 1` writable bytes; `flag` is writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Info_get(
    i: Handle,
    k: *const c_char,
    valuelen: c_int,
    v: *mut c_char,
    flag: *mut c_int,
) -> c_int {
    call("MPI_Info_get", h::COMM_WORLD, || {
        let room = usize::try_from(valuelen)
            .map_err(|_| MpiErr::new(err::ARG, format!("invalid valuelen {valuelen}")))?;
        // SAFETY: the caller's contract.
        let got = unsafe { value(i, k) }?;
        if let Some(s) = &got {
            let mut n = 0;
            // SAFETY: `v` has room + 1 bytes.
            unsafe { put_str(s, v, room + 1, &mut n, "value") }?;
        }
        // SAFETY: the caller's contract.
        unsafe { out(flag, c_int::from(got.is_some()), "flag") }
    })
}

/// `MPI_Info_get_string`: `*buflen` in: room in `v` (NUL included);
/// out: the value's length plus one. A value longer than the room is
/// cut.
///
/// # Safety
/// `buflen` is readable and writable; `v` has `*buflen` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn MPI_Info_get_string(
    i: Handle,
    k: *const c_char,
    buflen: *mut c_int,
    v: *mut c_char,
    flag: *mut c_int,
) -> c_int {
    call("MPI_Info_get_string", h::COMM_WORLD, || {
        if buflen.is_null() {
            return Err(MpiErr::new(err::ARG, "buflen is NULL"));
        }
        // SAFETY: non-null; the caller's contract.
        let room = unsafe { buflen.read() };
        let room = usize::try_from(room)
            .map_err(|_| MpiErr::new(err::ARG, format!("invalid buflen {room}")))?;
        // SAFETY: the caller's contract.
        let got = unsafe { value(i, k) }?;
        if let Some(s) = &got {
            if room > 0 {
                let mut n = 0;
                // SAFETY: `v` has `room` bytes.
                unsafe { put_str(s, v, room, &mut n, "value") }?;
            }
            // SAFETY: as above.
            unsafe { out(buflen, (s.len() + 1) as c_int, "buflen") }?;
        }
        // SAFETY: the caller's contract.
        unsafe { out(flag, c_int::from(got.is_some()), "flag") }
    })
}

/// `MPI_Info_get_valuelen`: the length without the NUL.
///
/// # Safety
/// `len` and `flag` are writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Info_get_valuelen(
    i: Handle,
    k: *const c_char,
    len: *mut c_int,
    flag: *mut c_int,
) -> c_int {
    call("MPI_Info_get_valuelen", h::COMM_WORLD, || {
        // SAFETY: the caller's contract.
        let got = unsafe { value(i, k) }?;
        // SAFETY: the caller's contract.
        unsafe {
            if let Some(s) = &got {
                out(len, s.len() as c_int, "valuelen")?;
            }
            out(flag, c_int::from(got.is_some()), "flag")
        }
    })
}

/// `MPI_Info_get_nkeys`.
///
/// # Safety
/// `n` is writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Info_get_nkeys(i: Handle, n: *mut c_int) -> c_int {
    call("MPI_Info_get_nkeys", h::COMM_WORLD, || {
        let k = info::read(hv(i), |i| Ok(i.nkeys()))?;
        // SAFETY: the caller's contract.
        unsafe { out(n, k as c_int, "nkeys") }
    })
}

/// `MPI_Info_get_nthkey`.
///
/// # Safety
/// `k` has `MPI_MAX_INFO_KEY` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn MPI_Info_get_nthkey(i: Handle, n: c_int, k: *mut c_char) -> c_int {
    call("MPI_Info_get_nthkey", h::COMM_WORLD, || {
        let s = info::read(hv(i), |i| i.nth(n).map(String::from))?;
        let mut len = 0;
        // SAFETY: the caller's contract.
        unsafe { put_str(&s, k, MAX_INFO_KEY, &mut len, "key") }
    })
}

/// `MPI_Info_dup`.
///
/// # Safety
/// `new` is writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Info_dup(i: Handle, new: *mut Handle) -> c_int {
    call("MPI_Info_dup", h::COMM_WORLD, || {
        let copy = info::read(hv(i), |i| Ok(i.clone()))?;
        // SAFETY: the caller's contract.
        unsafe { put_info(copy, new) }
    })
}

/// `MPI_Info_free`: the handle becomes `MPI_INFO_NULL`.
///
/// # Safety
/// `i` is readable and writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Info_free(i: *mut Handle) -> c_int {
    call("MPI_Info_free", h::COMM_WORLD, || {
        if i.is_null() {
            return Err(MpiErr::new(err::ARG, "info is NULL"));
        }
        // SAFETY: non-null; the caller's contract.
        info::free(hv(unsafe { i.read() }))?;
        // SAFETY: as above.
        unsafe { out(i, mk(INFO_NULL), "info") }
    })
}

/// `MPI_Info_create_env`: the same keys as `MPI_INFO_ENV`.
///
/// # Safety
/// `new` is writable (argc and argv are not read).
#[no_mangle]
pub unsafe extern "C" fn MPI_Info_create_env(
    _argc: c_int,
    _argv: *mut *mut c_char,
    new: *mut Handle,
) -> c_int {
    call("MPI_Info_create_env", h::COMM_WORLD, || {
        let i = info::get(info::INFO_ENV)?;
        // SAFETY: the caller's contract.
        unsafe { put_info(i, new) }
    })
}

/// `MPI_Comm_set_info`: kept; no hint changes what the library does.
#[no_mangle]
pub extern "C" fn MPI_Comm_set_info(comm: Handle, i: Handle) -> c_int {
    call("MPI_Comm_set_info", hv(comm), || {
        crate::runtime::with(|e| e.comm(hv(comm)).map(|_| ()))?;
        info::set_hints(Obj::Comm, hv(comm), hv(i))
    })
}

/// `MPI_Comm_get_info`: a new info object with the hints set.
///
/// # Safety
/// `new` is writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_get_info(comm: Handle, new: *mut Handle) -> c_int {
    call("MPI_Comm_get_info", hv(comm), || {
        crate::runtime::with(|e| e.comm(hv(comm)).map(|_| ()))?;
        // SAFETY: the caller's contract.
        unsafe { put_info(info::hints(Obj::Comm, hv(comm)), new) }
    })
}

/// `MPI_Comm_dup_with_info`: `MPI_Comm_dup` (attributes copied) with
/// these hints instead of the communicator's.
///
/// # Safety
/// `new` is writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_dup_with_info(
    comm: Handle,
    i: Handle,
    new: *mut Handle,
) -> c_int {
    call("MPI_Comm_dup_with_info", hv(comm), || {
        info::get(hv(i))?;
        let c = super::comm::dup(hv(comm))?;
        info::set_hints(Obj::Comm, c, hv(i))?;
        // SAFETY: the caller's contract.
        unsafe { out(new, mk(c), "newcomm") }
    })
}

/// `MPI_Win_set_info`: kept, as for communicators.
#[no_mangle]
pub extern "C" fn MPI_Win_set_info(win: Handle, i: Handle) -> c_int {
    let comm = crate::win::with_win(hv(win), |w, _| Ok(w.comm)).unwrap_or(h::COMM_WORLD);
    call("MPI_Win_set_info", comm, || {
        crate::win::with_win(hv(win), |_, _| Ok(()))?;
        info::set_hints(Obj::Win, hv(win), hv(i))
    })
}

/// `MPI_Win_get_info`.
///
/// # Safety
/// `new` is writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_get_info(win: Handle, new: *mut Handle) -> c_int {
    let comm = crate::win::with_win(hv(win), |w, _| Ok(w.comm)).unwrap_or(h::COMM_WORLD);
    call("MPI_Win_get_info", comm, || {
        crate::win::with_win(hv(win), |_, _| Ok(()))?;
        // SAFETY: the caller's contract.
        unsafe { put_info(info::hints(Obj::Win, hv(win)), new) }
    })
}

// The profiling interface (`PMPI_…`) of the functions above (build.rs).
include!(concat!(env!("OUT_DIR"), "/pmpi_info.rs"));
