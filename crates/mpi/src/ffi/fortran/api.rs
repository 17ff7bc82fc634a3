//! Fortran names of the calls with strings or attribute values: object
//! names, keyvals and attributes (with the predefined callbacks as
//! Fortran subroutines), `MPI_Info`, communicator hints and sessions.
//!
//! gfortran passes the length of each `CHARACTER` argument after all
//! the others; an input string's trailing blanks are not part of it.

use super::super::attr::{create_keyval, set_attr};
use super::super::comm::*;
use super::super::dtype::{MPI_Type_get_name, MPI_Type_set_name};
use super::super::info::*;
use super::super::session::*;
use super::super::win::MPI_Win_get_attr;
use super::env::fstring;
use super::{fortran, get, handle, put_fstr, set, with_handle, Fint};
use crate::attr::Obj;
use std::ffi::{c_char, c_int, c_void, CString};

/// A Fortran `CHARACTER*(flen)` input as a C string (trailing blanks
/// dropped, cut at a NUL).
///
/// # Safety
/// `p` is null or has `flen` readable bytes.
pub(super) unsafe fn cstring(p: *const u8, flen: usize) -> CString {
    if p.is_null() {
        return CString::default();
    }
    // SAFETY: the caller's contract.
    let s = unsafe { std::slice::from_raw_parts(p, flen) };
    let s = s.split(|&c| c == 0).next().unwrap_or(&[]);
    let end = s.iter().rposition(|&c| c != b' ').map_or(0, |i| i + 1);
    CString::new(&s[..end]).unwrap_or_default()
}

macro_rules! set_name {
    ($f:ident, $c:ident) => {
        /// The Fortran form of the C call of the same name.
        ///
        /// # Safety
        /// Fortran references; `name` has `flen` bytes.
        #[no_mangle]
        pub unsafe extern "C" fn $f(o: *const Fint, name: *const u8, ierr: *mut Fint, flen: usize) {
            // SAFETY: Fortran references.
            unsafe {
                let n = cstring(name, flen);
                set(ierr, $c(handle(get(o)), n.as_ptr()));
            }
        }
    };
}

macro_rules! get_name {
    ($f:ident, $c:ident) => {
        /// The Fortran form of the C call of the same name.
        ///
        /// # Safety
        /// Fortran references; `name` has `flen` bytes.
        #[no_mangle]
        pub unsafe extern "C" fn $f(
            o: *const Fint,
            name: *mut u8,
            len: *mut Fint,
            ierr: *mut Fint,
            flen: usize,
        ) {
            // SAFETY: Fortran references; MPI_MAX_OBJECT_NAME.
            unsafe {
                let h = handle(get(o));
                fstring(name, len, ierr, flen, 128, |p, n| $c(h, p, n));
            }
        }
    };
}

set_name!(mpi_comm_set_name_, MPI_Comm_set_name);
get_name!(mpi_comm_get_name_, MPI_Comm_get_name);
set_name!(mpi_type_set_name_, MPI_Type_set_name);
get_name!(mpi_type_get_name_, MPI_Type_get_name);
set_name!(mpi_win_set_name_, MPI_Win_set_name);
get_name!(mpi_win_get_name_, MPI_Win_get_name);

macro_rules! keyvals {
    ($obj:expr, $create:ident, $cname:literal, $set:ident, $sname:literal,
     $free:ident, $cfree:path, $del:ident, $cdel:path) => {
        /// The Fortran `create_keyval`: the callbacks are Fortran
        /// subroutines (the predefined ones included).
        ///
        /// # Safety
        /// Fortran references; the callbacks are subroutine addresses.
        #[no_mangle]
        pub unsafe extern "C" fn $create(
            copy: *const c_void,
            delete: *const c_void,
            keyval: *mut Fint,
            extra: *const i64,
            ierr: *mut Fint,
        ) {
            // SAFETY: Fortran references.
            unsafe {
                let x = if extra.is_null() { 0 } else { extra.read() as usize };
                let r = create_keyval($cname, $obj, copy as usize, delete as usize, keyval, x, true);
                set(ierr, r);
            }
        }

        /// The Fortran `set_attr`: the value is an
        /// `INTEGER(KIND=MPI_ADDRESS_KIND)`.
        ///
        /// # Safety
        /// Fortran references.
        #[no_mangle]
        pub unsafe extern "C" fn $set(
            o: *const Fint,
            key: *const Fint,
            v: *const i64,
            ierr: *mut Fint,
        ) {
            // SAFETY: Fortran references.
            unsafe {
                let v = if v.is_null() { 0 } else { v.read() as usize };
                let h = handle(get(o)) as usize;
                set(ierr, set_attr($sname, $obj, h, get(key), v));
            }
        }

        fortran!(
            /// The Fortran `free_keyval`.
            $free => $cfree; keyval: p);
        fortran!(
            /// The Fortran `delete_attr`.
            $del => $cdel; o: h, key: v);
    };
}

use super::super::attr::{
    MPI_Comm_delete_attr, MPI_Comm_free_keyval, MPI_Type_delete_attr, MPI_Type_free_keyval,
    MPI_Type_get_attr, MPI_Win_delete_attr, MPI_Win_free_keyval,
};

keyvals!(
    Obj::Comm,
    mpi_comm_create_keyval_,
    "MPI_Comm_create_keyval",
    mpi_comm_set_attr_,
    "MPI_Comm_set_attr",
    mpi_comm_free_keyval_,
    MPI_Comm_free_keyval,
    mpi_comm_delete_attr_,
    MPI_Comm_delete_attr
);
keyvals!(
    Obj::Type,
    mpi_type_create_keyval_,
    "MPI_Type_create_keyval",
    mpi_type_set_attr_,
    "MPI_Type_set_attr",
    mpi_type_free_keyval_,
    MPI_Type_free_keyval,
    mpi_type_delete_attr_,
    MPI_Type_delete_attr
);
keyvals!(
    Obj::Win,
    mpi_win_create_keyval_,
    "MPI_Win_create_keyval",
    mpi_win_set_attr_,
    "MPI_Win_set_attr",
    mpi_win_free_keyval_,
    MPI_Win_free_keyval,
    mpi_win_delete_attr_,
    MPI_Win_delete_attr
);

/// Runs a C `get_attr` and gives Fortran the value: `deref` says whether
/// a predefined key's pointer is read (as `isize`, `c_int` or not at all).
///
/// # Safety
/// Fortran references.
unsafe fn get_attr_f(
    key: Fint,
    value: *mut i64,
    flag: *mut Fint,
    ierr: *mut Fint,
    deref: fn(Fint, *const c_void) -> i64,
    c: impl FnOnce(*mut c_void, *mut c_int) -> c_int,
) {
    let mut p: *const c_void = std::ptr::null();
    let mut f: c_int = 0;
    let r = c((&raw mut p).cast(), &mut f);
    // SAFETY: Fortran references.
    unsafe {
        if f != 0 && !value.is_null() {
            value.write(deref(key, p));
        }
        if !flag.is_null() {
            flag.write(f);
        }
        set(ierr, r);
    }
}

/// `MPI_TYPE_GET_ATTR`.
///
/// # Safety
/// Fortran references.
#[no_mangle]
pub unsafe extern "C" fn mpi_type_get_attr_(
    t: *const Fint,
    key: *const Fint,
    value: *mut i64,
    flag: *mut Fint,
    ierr: *mut Fint,
) {
    // SAFETY: Fortran references.
    unsafe {
        let (h, k) = (handle(get(t)), get(key));
        get_attr_f(
            k,
            value,
            flag,
            ierr,
            |_, p| p as i64,
            |v, f| MPI_Type_get_attr(h, k, v, f),
        );
    }
}

/// `MPI_WIN_GET_ATTR`: `MPI_WIN_BASE` is the address; the other
/// predefined keys are read.
///
/// # Safety
/// Fortran references.
#[no_mangle]
pub unsafe extern "C" fn mpi_win_get_attr_(
    w: *const Fint,
    key: *const Fint,
    value: *mut i64,
    flag: *mut Fint,
    ierr: *mut Fint,
) {
    fn deref(k: Fint, p: *const c_void) -> i64 {
        if (602..=605).contains(&k) && !p.is_null() {
            // SAFETY: the library's own values for these keys are isize.
            unsafe { p.cast::<isize>().read() as i64 }
        } else {
            p as i64
        }
    }
    // SAFETY: Fortran references.
    unsafe {
        let (h, k) = (handle(get(w)), get(key));
        get_attr_f(k, value, flag, ierr, deref, |v, f| {
            MPI_Win_get_attr(h, k, v, f)
        });
    }
}

/// The predefined copy subroutines: `MPI_*_NULL_COPY_FN` copies nothing,
/// `MPI_*_DUP_FN` the value.
macro_rules! copy_fn {
    ($f:ident, $dup:expr) => {
        /// A predefined Fortran copy callback.
        ///
        /// # Safety
        /// Fortran references.
        #[no_mangle]
        pub unsafe extern "C" fn $f(
            _o: *const Fint,
            _k: *const Fint,
            _x: *const i64,
            vin: *const i64,
            vout: *mut i64,
            flag: *mut Fint,
            ierr: *mut Fint,
        ) {
            // SAFETY: Fortran references.
            unsafe {
                if $dup && !vin.is_null() && !vout.is_null() {
                    vout.write(vin.read());
                }
                if !flag.is_null() {
                    flag.write(Fint::from($dup));
                }
                set(ierr, 0);
            }
        }
    };
}

/// The predefined delete subroutines: nothing to do.
macro_rules! delete_fn {
    ($f:ident) => {
        /// A predefined Fortran delete callback.
        ///
        /// # Safety
        /// Fortran references.
        #[no_mangle]
        pub unsafe extern "C" fn $f(
            _o: *const Fint,
            _k: *const Fint,
            _v: *const i64,
            _x: *const i64,
            ierr: *mut Fint,
        ) {
            // SAFETY: Fortran reference.
            unsafe { set(ierr, 0) };
        }
    };
}

copy_fn!(mpi_comm_null_copy_fn_, false);
copy_fn!(mpi_comm_dup_fn_, true);
copy_fn!(mpi_type_null_copy_fn_, false);
copy_fn!(mpi_type_dup_fn_, true);
copy_fn!(mpi_win_null_copy_fn_, false);
copy_fn!(mpi_win_dup_fn_, true);
delete_fn!(mpi_comm_null_delete_fn_);
delete_fn!(mpi_type_null_delete_fn_);
delete_fn!(mpi_win_null_delete_fn_);

fortran!(
    /// `MPI_INFO_CREATE`.
    mpi_info_create_ => MPI_Info_create; info: o);
fortran!(
    /// `MPI_INFO_DUP`.
    mpi_info_dup_ => MPI_Info_dup; info: h, new: o);
fortran!(
    /// `MPI_INFO_FREE`.
    mpi_info_free_ => MPI_Info_free; info: i);
fortran!(
    /// `MPI_INFO_GET_NKEYS`.
    mpi_info_get_nkeys_ => MPI_Info_get_nkeys; info: h, n: p);

/// `MPI_INFO_SET`.
///
/// # Safety
/// Fortran references; the strings have their lengths.
#[no_mangle]
pub unsafe extern "C" fn mpi_info_set_(
    info: *const Fint,
    key: *const u8,
    value: *const u8,
    ierr: *mut Fint,
    klen: usize,
    vlen: usize,
) {
    // SAFETY: Fortran references.
    unsafe {
        let (k, v) = (cstring(key, klen), cstring(value, vlen));
        set(
            ierr,
            MPI_Info_set(handle(get(info)), k.as_ptr(), v.as_ptr()),
        );
    }
}

/// `MPI_INFO_DELETE`.
///
/// # Safety
/// Fortran references; `key` has `klen` bytes.
#[no_mangle]
pub unsafe extern "C" fn mpi_info_delete_(
    info: *const Fint,
    key: *const u8,
    ierr: *mut Fint,
    klen: usize,
) {
    // SAFETY: Fortran references.
    unsafe {
        let k = cstring(key, klen);
        set(ierr, MPI_Info_delete(handle(get(info)), k.as_ptr()));
    }
}

/// `MPI_INFO_GET`: at most `valuelen` characters, blank-padded.
///
/// # Safety
/// Fortran references; the strings have their lengths.
#[no_mangle]
pub unsafe extern "C" fn mpi_info_get_(
    info: *const Fint,
    key: *const u8,
    valuelen: *const Fint,
    value: *mut u8,
    flag: *mut Fint,
    ierr: *mut Fint,
    klen: usize,
    vlen: usize,
) {
    // SAFETY: Fortran references.
    unsafe {
        let k = cstring(key, klen);
        let n = usize::try_from(get(valuelen))
            .unwrap_or(0)
            .min(vlen)
            .min(1023);
        let mut tmp = vec![0u8; n + 1];
        let mut f: c_int = 0;
        let r = MPI_Info_get(
            handle(get(info)),
            k.as_ptr(),
            n as c_int,
            tmp.as_mut_ptr().cast::<c_char>(),
            &mut f,
        );
        if r == 0 && f != 0 {
            let end = tmp.iter().position(|&c| c == 0).unwrap_or(n);
            put_fstr(&tmp[..end], value, vlen);
        }
        if !flag.is_null() {
            flag.write(f);
        }
        set(ierr, r);
    }
}

/// `MPI_INFO_GET_VALUELEN`.
///
/// # Safety
/// Fortran references; `key` has `klen` bytes.
#[no_mangle]
pub unsafe extern "C" fn mpi_info_get_valuelen_(
    info: *const Fint,
    key: *const u8,
    len: *mut Fint,
    flag: *mut Fint,
    ierr: *mut Fint,
    klen: usize,
) {
    // SAFETY: Fortran references.
    unsafe {
        let k = cstring(key, klen);
        set(
            ierr,
            MPI_Info_get_valuelen(handle(get(info)), k.as_ptr(), len, flag),
        );
    }
}

/// `MPI_INFO_GET_NTHKEY` (n counts from 0, as in C).
///
/// # Safety
/// Fortran references; `key` has `klen` bytes.
#[no_mangle]
pub unsafe extern "C" fn mpi_info_get_nthkey_(
    info: *const Fint,
    n: *const Fint,
    key: *mut u8,
    ierr: *mut Fint,
    klen: usize,
) {
    // SAFETY: Fortran references; MPI_MAX_INFO_KEY.
    unsafe {
        let (i, n) = (handle(get(info)), get(n));
        let mut len: Fint = 0;
        fstring(key, &mut len, ierr, klen, 256, |p, l| {
            let r = MPI_Info_get_nthkey(i, n, p);
            if r == 0 {
                *l = libc::strlen(p) as c_int;
            }
            r
        });
    }
}

fortran!(
    /// `MPI_COMM_SPLIT_TYPE`.
    mpi_comm_split_type_ => MPI_Comm_split_type; comm: h, t: v, key: v, info: h, new: o);
fortran!(
    /// `MPI_COMM_DUP_WITH_INFO`.
    mpi_comm_dup_with_info_ => MPI_Comm_dup_with_info; comm: h, info: h, new: o);
fortran!(
    /// `MPI_COMM_IDUP`.
    mpi_comm_idup_ => MPI_Comm_idup; comm: h, new: o, req: o);
fortran!(
    /// `MPI_COMM_SET_INFO`.
    mpi_comm_set_info_ => MPI_Comm_set_info; comm: h, info: h);
fortran!(
    /// `MPI_COMM_GET_INFO`.
    mpi_comm_get_info_ => MPI_Comm_get_info; comm: h, info: o);
fortran!(
    /// `MPI_WIN_SET_INFO`.
    mpi_win_set_info_ => MPI_Win_set_info; win: h, info: h);
fortran!(
    /// `MPI_WIN_GET_INFO`.
    mpi_win_get_info_ => MPI_Win_get_info; win: h, info: o);
fortran!(
    /// `MPI_COMM_SET_ATTR`'s MPI-1 name, `MPI_ATTR_DELETE`.
    mpi_attr_delete_ => MPI_Comm_delete_attr; comm: h, key: v);
fortran!(
    /// `MPI_SESSION_INIT`.
    mpi_session_init_ => MPI_Session_init; info: h, errh: h, s: o);
fortran!(
    /// `MPI_SESSION_FINALIZE`.
    mpi_session_finalize_ => MPI_Session_finalize; s: i);
fortran!(
    /// `MPI_SESSION_GET_NUM_PSETS`.
    mpi_session_get_num_psets_ => MPI_Session_get_num_psets; s: h, info: h, n: p);

/// `MPI_ATTR_PUT` (MPI-1: an `INTEGER` value).
///
/// # Safety
/// Fortran references.
#[no_mangle]
pub unsafe extern "C" fn mpi_attr_put_(
    comm: *const Fint,
    key: *const Fint,
    v: *const Fint,
    ierr: *mut Fint,
) {
    // SAFETY: Fortran references.
    unsafe {
        let h = handle(get(comm)) as usize;
        let r = set_attr("MPI_Attr_put", Obj::Comm, h, get(key), get(v) as usize);
        set(ierr, r);
    }
}

/// `MPI_ATTR_GET` (MPI-1: an `INTEGER` value).
///
/// # Safety
/// Fortran references.
#[no_mangle]
pub unsafe extern "C" fn mpi_attr_get_(
    comm: *const Fint,
    key: *const Fint,
    v: *mut Fint,
    flag: *mut Fint,
    ierr: *mut Fint,
) {
    let mut x: i64 = 0;
    // SAFETY: Fortran references.
    unsafe {
        super::env::mpi_comm_get_attr_(comm, key, &mut x, flag, ierr);
        if !v.is_null() && !flag.is_null() && flag.read() != 0 {
            v.write(x as Fint);
        }
    }
}

/// `MPI_SESSION_GET_NTH_PSET`: with `pset_len` 0, the length of the
/// name; otherwise the name, blank-padded.
///
/// # Safety
/// Fortran references; `name` has `flen` bytes.
#[no_mangle]
pub unsafe extern "C" fn mpi_session_get_nth_pset_(
    s: *const Fint,
    info: *const Fint,
    n: *const Fint,
    len: *mut Fint,
    name: *mut u8,
    ierr: *mut Fint,
    flen: usize,
) {
    // SAFETY: Fortran references.
    unsafe {
        let (s, i, n) = (handle(get(s)), handle(get(info)), get(n));
        if get(len) == 0 {
            set(
                ierr,
                MPI_Session_get_nth_pset(s, i, n, len, std::ptr::null_mut()),
            );
            return;
        }
        let mut tmp = vec![0u8; 1024];
        let mut room: c_int = 1024;
        let r = MPI_Session_get_nth_pset(s, i, n, &mut room, tmp.as_mut_ptr().cast());
        let end = tmp.iter().position(|&c| c == 0).unwrap_or(0);
        put_fstr(&tmp[..end], name, flen);
        set(ierr, r);
    }
}

/// `MPI_GROUP_FROM_SESSION_PSET`.
///
/// # Safety
/// Fortran references; `name` has `flen` bytes.
#[no_mangle]
pub unsafe extern "C" fn mpi_group_from_session_pset_(
    s: *const Fint,
    name: *const u8,
    g: *mut Fint,
    ierr: *mut Fint,
    flen: usize,
) {
    // SAFETY: Fortran references.
    unsafe {
        let n = cstring(name, flen);
        let s = handle(get(s));
        let r = with_handle(g, |g| MPI_Group_from_session_pset(s, n.as_ptr(), g));
        set(ierr, r);
    }
}

/// `MPI_COMM_CREATE_FROM_GROUP`.
///
/// # Safety
/// Fortran references; `tag` has `flen` bytes.
#[no_mangle]
pub unsafe extern "C" fn mpi_comm_create_from_group_(
    g: *const Fint,
    tag: *const u8,
    info: *const Fint,
    errh: *const Fint,
    new: *mut Fint,
    ierr: *mut Fint,
    flen: usize,
) {
    // SAFETY: Fortran references.
    unsafe {
        let t = cstring(tag, flen);
        let (g, i, e) = (handle(get(g)), handle(get(info)), handle(get(errh)));
        let r = with_handle(new, |c| MPI_Comm_create_from_group(g, t.as_ptr(), i, e, c));
        set(ierr, r);
    }
}

/// `MPI_INFO_GET_STRING`: `buflen` in: room in `value`; out: the
/// value's length (Fortran has no terminator). A value longer than the
/// room is cut.
///
/// # Safety
/// Fortran references; the strings have their lengths.
#[no_mangle]
pub unsafe extern "C" fn mpi_info_get_string_(
    info: *const Fint,
    key: *const u8,
    buflen: *mut Fint,
    value: *mut u8,
    flag: *mut Fint,
    ierr: *mut Fint,
    klen: usize,
    vlen: usize,
) {
    // SAFETY: Fortran references.
    unsafe {
        let k = cstring(key, klen);
        let room = usize::try_from(get(buflen)).unwrap_or(0).min(vlen);
        let mut tmp = vec![0u8; 1024];
        let mut n: c_int = 1024;
        let mut f: c_int = 0;
        let r = MPI_Info_get_string(
            handle(get(info)),
            k.as_ptr(),
            &mut n,
            tmp.as_mut_ptr().cast::<c_char>(),
            &mut f,
        );
        if r == 0 && f != 0 {
            let end = tmp.iter().position(|&c| c == 0).unwrap_or(0);
            if room > 0 {
                put_fstr(&tmp[..end.min(room)], value, room);
            }
            if !buflen.is_null() {
                buflen.write(end as Fint);
            }
        }
        if !flag.is_null() {
            flag.write(f);
        }
        set(ierr, r);
    }
}

/// `MPI_SESSION_GET_PSET_INFO`.
///
/// # Safety
/// Fortran references; `name` has `flen` bytes.
#[no_mangle]
pub unsafe extern "C" fn mpi_session_get_pset_info_(
    s: *const Fint,
    name: *const u8,
    info: *mut Fint,
    ierr: *mut Fint,
    flen: usize,
) {
    // SAFETY: Fortran references.
    unsafe {
        let n = cstring(name, flen);
        let s = handle(get(s));
        let r = with_handle(info, |i| MPI_Session_get_pset_info(s, n.as_ptr(), i));
        set(ierr, r);
    }
}

// The profiling interface of the functions the macros above make.
super::fpmpi! {
    pmpi_comm_set_name_ => mpi_comm_set_name_(o: *const Fint, name: *const u8, ierr: *mut Fint, flen: usize);
    pmpi_comm_get_name_ => mpi_comm_get_name_(o: *const Fint, name: *mut u8, len: *mut Fint, ierr: *mut Fint, flen: usize);
    pmpi_comm_create_keyval_ => mpi_comm_create_keyval_(copy: *const c_void, delete: *const c_void, keyval: *mut Fint, extra: *const i64, ierr: *mut Fint);
    pmpi_comm_set_attr_ => mpi_comm_set_attr_(o: *const Fint, key: *const Fint, v: *const i64, ierr: *mut Fint);
    pmpi_comm_free_keyval_ => mpi_comm_free_keyval_(keyval: *mut Fint, ierr: *mut Fint);
    pmpi_comm_delete_attr_ => mpi_comm_delete_attr_(o: *const Fint, key: *const Fint, ierr: *mut Fint);
    pmpi_type_set_name_ => mpi_type_set_name_(o: *const Fint, name: *const u8, ierr: *mut Fint, flen: usize);
    pmpi_type_get_name_ => mpi_type_get_name_(o: *const Fint, name: *mut u8, len: *mut Fint, ierr: *mut Fint, flen: usize);
    pmpi_type_create_keyval_ => mpi_type_create_keyval_(copy: *const c_void, delete: *const c_void, keyval: *mut Fint, extra: *const i64, ierr: *mut Fint);
    pmpi_type_set_attr_ => mpi_type_set_attr_(o: *const Fint, key: *const Fint, v: *const i64, ierr: *mut Fint);
    pmpi_type_free_keyval_ => mpi_type_free_keyval_(keyval: *mut Fint, ierr: *mut Fint);
    pmpi_type_delete_attr_ => mpi_type_delete_attr_(o: *const Fint, key: *const Fint, ierr: *mut Fint);
    pmpi_win_set_name_ => mpi_win_set_name_(o: *const Fint, name: *const u8, ierr: *mut Fint, flen: usize);
    pmpi_win_get_name_ => mpi_win_get_name_(o: *const Fint, name: *mut u8, len: *mut Fint, ierr: *mut Fint, flen: usize);
    pmpi_win_create_keyval_ => mpi_win_create_keyval_(copy: *const c_void, delete: *const c_void, keyval: *mut Fint, extra: *const i64, ierr: *mut Fint);
    pmpi_win_set_attr_ => mpi_win_set_attr_(o: *const Fint, key: *const Fint, v: *const i64, ierr: *mut Fint);
    pmpi_win_free_keyval_ => mpi_win_free_keyval_(keyval: *mut Fint, ierr: *mut Fint);
    pmpi_win_delete_attr_ => mpi_win_delete_attr_(o: *const Fint, key: *const Fint, ierr: *mut Fint);
}

// The profiling interface (`pmpi_…_`) of the functions above (build.rs).
include!(concat!(env!("OUT_DIR"), "/pmpi_fortran_api.rs"));
