//! Attributes of communicators, datatypes and windows (see
//! `crate::attr`): keyvals, set/get/delete, the deprecated MPI-1 names,
//! and the copy and delete callbacks, run with no lock held.

use super::fortran::Fint;
use super::{call, hv, mk, out, Handle};
use crate::attr::{with_attrs, Keyval, Obj, DUP_FN, NULL_FN};
use crate::consts::{err, h};
use crate::engine::MpiErr;
use std::ffi::{c_int, c_void};

/// `MPI_Comm_copy_attr_function` (and the datatype and window ones).
type CopyFn =
    unsafe extern "C" fn(Handle, c_int, *mut c_void, *mut c_void, *mut c_void, *mut c_int) -> c_int;
/// `MPI_Comm_delete_attr_function` (and the others).
type DeleteFn = unsafe extern "C" fn(Handle, c_int, *mut c_void, *mut c_void) -> c_int;
/// The Fortran copy callback: every argument by reference, then `ierr`.
type FCopyFn = unsafe extern "C" fn(
    *const Fint,
    *const Fint,
    *const i64,
    *const i64,
    *mut i64,
    *mut Fint,
    *mut Fint,
);
/// The Fortran delete callback.
type FDeleteFn = unsafe extern "C" fn(*const Fint, *const Fint, *const i64, *const i64, *mut Fint);

fn cb_err(what: &str, key: i32, rc: c_int) -> MpiErr {
    MpiErr::new(
        if rc > 0 { rc } else { err::OTHER },
        format!("the {what} callback of keyval {key} returned {rc}"),
    )
}

/// The Fortran handle of object `h`.
fn fh(h: usize) -> Fint {
    Fint::try_from(h).unwrap_or(-1)
}

/// Calls the delete callback of value `v` of `key` on object `h`.
fn run_delete(h: usize, key: i32, kv: Keyval, v: usize) -> Result<(), MpiErr> {
    if kv.delete == NULL_FN {
        return Ok(());
    }
    let rc = if kv.fortran {
        // SAFETY: a non-null address the program gave as a Fortran delete
        // function; every argument is a live local.
        unsafe {
            let f = std::mem::transmute::<usize, FDeleteFn>(kv.delete);
            let (o, k, val, x, mut ierr) = (fh(h), key, v as i64, kv.extra as i64, 0);
            f(&o, &k, &val, &x, &mut ierr);
            ierr
        }
    } else {
        // SAFETY: a non-null address the program gave as a delete
        // function of this kind (MPI_*_create_keyval's contract).
        unsafe {
            let f = std::mem::transmute::<usize, DeleteFn>(kv.delete);
            f(mk(h), key, mk(v), mk(kv.extra))
        }
    };
    if rc != 0 {
        return Err(cb_err("delete", key, rc));
    }
    Ok(())
}

/// The value the copy callback of `key` gives the copy of object `h`.
fn run_copy(h: usize, key: i32, kv: Keyval, v: usize) -> Result<Option<usize>, MpiErr> {
    match kv.copy {
        NULL_FN => return Ok(None),
        DUP_FN => return Ok(Some(v)),
        _ => {}
    }
    let (rc, flag, got) = if kv.fortran {
        // SAFETY: a Fortran copy function the program gave; live locals.
        unsafe {
            let f = std::mem::transmute::<usize, FCopyFn>(kv.copy);
            let (o, k, x, inv) = (fh(h), key, kv.extra as i64, v as i64);
            let (mut outv, mut flag, mut ierr) = (0i64, 0, 0);
            f(&o, &k, &x, &inv, &mut outv, &mut flag, &mut ierr);
            (ierr, flag, outv as usize)
        }
    } else {
        // SAFETY: a copy function of this kind the program gave; the
        // output is a live local the callback writes a pointer into.
        unsafe {
            let f = std::mem::transmute::<usize, CopyFn>(kv.copy);
            let (mut outv, mut flag): (*mut c_void, c_int) = (std::ptr::null_mut(), 0);
            let rc = f(
                mk(h),
                key,
                mk(kv.extra),
                mk(v),
                (&raw mut outv).cast(),
                &mut flag,
            );
            (rc, flag, outv as usize)
        }
    };
    if rc != 0 {
        return Err(cb_err("copy", key, rc));
    }
    Ok((flag != 0).then_some(got))
}

/// Copies the attributes of `old` to `new` through their copy callbacks
/// (`MPI_Comm_dup`, `MPI_Type_dup`).
pub(super) fn copy_attrs(obj: Obj, old: usize, new: usize) -> Result<(), MpiErr> {
    for (key, kv, v) in with_attrs(|a| a.all(obj, old)) {
        if let Some(nv) = run_copy(old, key, kv, v)? {
            with_attrs(|a| a.put(obj, new, key, nv));
        }
    }
    Ok(())
}

/// Deletes every attribute of `h`, which is being freed, and its name;
/// the first failing delete callback's error (the others still run).
pub(super) fn forget(obj: Obj, h: usize) -> Result<(), MpiErr> {
    let mut first = Ok(());
    for (key, kv, v) in with_attrs(|a| a.forget(obj, h)) {
        let r = run_delete(h, key, kv, v);
        if first.is_ok() {
            first = r;
        }
    }
    first
}

/// At `MPI_Finalize`, before anything else: the delete callbacks of
/// `MPI_COMM_SELF`'s attributes, the last set first (libraries hook
/// their clean-up there).
pub(super) fn finalize_self() -> Result<(), MpiErr> {
    let mut first = Ok(());
    let all = with_attrs(|a| a.forget(Obj::Comm, h::COMM_SELF));
    for (key, kv, v) in all.into_iter().rev() {
        let r = run_delete(h::COMM_SELF, key, kv, v);
        if first.is_ok() {
            first = r;
        }
    }
    first
}

/// Checks that `h` names a live object of kind `obj`.
fn check(obj: Obj, h: usize) -> Result<(), MpiErr> {
    match obj {
        Obj::Comm => crate::runtime::with(|e| e.comm(h).map(|_| ())),
        Obj::Type => crate::handles::any_layout(h).map(|_| ()),
        Obj::Win => crate::win::with_win(h, |_, _| Ok(())),
    }
}

/// The communicator whose error handler an error on `h` goes to.
fn errcomm(obj: Obj, h: usize) -> usize {
    match obj {
        Obj::Comm => h,
        Obj::Win => crate::win::with_win(h, |w, _| Ok(w.comm)).unwrap_or(h::COMM_WORLD),
        Obj::Type => h::COMM_WORLD,
    }
}

/// `MPI_*_create_keyval`.
///
/// # Safety
/// `keyval` is writable.
pub(super) unsafe fn create_keyval(
    name: &str,
    obj: Obj,
    copy: usize,
    delete: usize,
    keyval: *mut c_int,
    extra: usize,
    fortran: bool,
) -> c_int {
    call(name, h::COMM_WORLD, || {
        let k = with_attrs(|a| {
            a.create(Keyval {
                obj,
                copy,
                delete,
                extra,
                fortran,
            })
        })?;
        // SAFETY: the caller's contract.
        unsafe { out(keyval, k, "keyval") }
    })
}

/// `MPI_*_free_keyval`: the key becomes `MPI_KEYVAL_INVALID`.
///
/// # Safety
/// `keyval` is readable and writable.
unsafe fn free_keyval(name: &str, obj: Obj, keyval: *mut c_int) -> c_int {
    call(name, h::COMM_WORLD, || {
        if keyval.is_null() {
            return Err(MpiErr::new(err::ARG, "keyval is NULL"));
        }
        // SAFETY: non-null; the caller's contract.
        let k = unsafe { keyval.read() };
        with_attrs(|a| a.free(obj, k))?;
        // SAFETY: as above.
        unsafe { out(keyval, 0, "keyval") }
    })
}

/// `MPI_*_set_attr`: a value it replaces is deleted first.
pub(super) fn set_attr(name: &str, obj: Obj, h: usize, key: c_int, v: usize) -> c_int {
    call(name, errcomm(obj, h), || {
        check(obj, h)?;
        if let Some((kv, old)) = with_attrs(|a| a.set(obj, h, key, v))? {
            run_delete(h, key, kv, old)?;
        }
        Ok(())
    })
}

/// A user attribute's value (`MPI_*_get_attr` for keys not predefined).
pub(super) fn user_attr(obj: Obj, h: usize, key: c_int) -> Result<Option<usize>, MpiErr> {
    check(obj, h)?;
    with_attrs(|a| a.get(obj, h, key))
}

/// `MPI_*_delete_attr`.
pub(super) fn delete_attr(name: &str, obj: Obj, h: usize, key: c_int) -> c_int {
    call(name, errcomm(obj, h), || {
        check(obj, h)?;
        match with_attrs(|a| a.remove(obj, h, key))? {
            Some((kv, v)) => run_delete(h, key, kv, v),
            None => Err(MpiErr::new(
                err::KEYVAL,
                format!("no attribute with keyval {key} on {} {h:#x}", obj.what()),
            )),
        }
    })
}

/// Writes a found value (a pointer) and the flag.
///
/// # Safety
/// `value` is null or points to a writable pointer; `flag` is writable.
pub(super) unsafe fn put_attr(
    v: Option<usize>,
    value: *mut c_void,
    flag: *mut c_int,
) -> Result<(), MpiErr> {
    // SAFETY: the caller's contract.
    unsafe {
        if let Some(v) = v {
            out(value.cast::<*mut c_void>(), mk(v), "attribute_val")?;
        }
        out(flag, c_int::from(v.is_some()), "flag")
    }
}

macro_rules! keyval_fns {
    ($obj:expr, $create:ident / $pcreate:ident, $cname:literal,
     $free:ident / $pfree:ident, $fname:literal,
     $set:ident / $pset:ident, $sname:literal, $del:ident / $pdel:ident, $dname:literal) => {
        /// The `create_keyval` of this kind of object: the callbacks
        /// are the null (0) or dup (1) functions or the program's.
        ///
        /// # Safety
        /// The callbacks are null, the dup constant or functions of the
        /// standard's types; `keyval` is writable.
        #[no_mangle]
        pub unsafe extern "C" fn $create(
            copy: *const c_void,
            delete: *const c_void,
            keyval: *mut c_int,
            extra: *mut c_void,
        ) -> c_int {
            // SAFETY: the caller's contract.
            unsafe {
                create_keyval(
                    $cname,
                    $obj,
                    copy as usize,
                    delete as usize,
                    keyval,
                    extra as usize,
                    false,
                )
            }
        }

        /// The `free_keyval` of this kind of object.
        ///
        /// # Safety
        /// `keyval` is readable and writable.
        #[no_mangle]
        pub unsafe extern "C" fn $free(keyval: *mut c_int) -> c_int {
            // SAFETY: the caller's contract.
            unsafe { free_keyval($fname, $obj, keyval) }
        }

        /// The `set_attr` of this kind of object.
        #[no_mangle]
        pub extern "C" fn $set(o: Handle, key: c_int, v: *mut c_void) -> c_int {
            set_attr($sname, $obj, hv(o), key, v as usize)
        }

        /// The `delete_attr` of this kind of object.
        #[no_mangle]
        pub extern "C" fn $del(o: Handle, key: c_int) -> c_int {
            delete_attr($dname, $obj, hv(o), key)
        }
        super::pmpi!(unsafe $pcreate => $create(
            copy: *const c_void,
            delete: *const c_void,
            keyval: *mut c_int,
            extra: *mut c_void,
        ) -> c_int);
        super::pmpi!(unsafe $pfree => $free(keyval: *mut c_int) -> c_int);
        super::pmpi!($pset => $set(o: Handle, key: c_int, v: *mut c_void) -> c_int);
        super::pmpi!($pdel => $del(o: Handle, key: c_int) -> c_int);
    };
}

keyval_fns!(
    Obj::Comm,
    MPI_Comm_create_keyval / PMPI_Comm_create_keyval,
    "MPI_Comm_create_keyval",
    MPI_Comm_free_keyval / PMPI_Comm_free_keyval,
    "MPI_Comm_free_keyval",
    MPI_Comm_set_attr / PMPI_Comm_set_attr,
    "MPI_Comm_set_attr",
    MPI_Comm_delete_attr / PMPI_Comm_delete_attr,
    "MPI_Comm_delete_attr"
);
keyval_fns!(
    Obj::Type,
    MPI_Type_create_keyval / PMPI_Type_create_keyval,
    "MPI_Type_create_keyval",
    MPI_Type_free_keyval / PMPI_Type_free_keyval,
    "MPI_Type_free_keyval",
    MPI_Type_set_attr / PMPI_Type_set_attr,
    "MPI_Type_set_attr",
    MPI_Type_delete_attr / PMPI_Type_delete_attr,
    "MPI_Type_delete_attr"
);
keyval_fns!(
    Obj::Win,
    MPI_Win_create_keyval / PMPI_Win_create_keyval,
    "MPI_Win_create_keyval",
    MPI_Win_free_keyval / PMPI_Win_free_keyval,
    "MPI_Win_free_keyval",
    MPI_Win_set_attr / PMPI_Win_set_attr,
    "MPI_Win_set_attr",
    MPI_Win_delete_attr / PMPI_Win_delete_attr,
    "MPI_Win_delete_attr"
);

/// `MPI_Type_get_attr`.
///
/// # Safety
/// `value` points to a writable pointer; `flag` is writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_attr(
    dt: Handle,
    key: c_int,
    value: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    call("MPI_Type_get_attr", h::COMM_WORLD, || {
        let v = user_attr(Obj::Type, hv(dt), key)?;
        // SAFETY: the caller's contract.
        unsafe { put_attr(v, value, flag) }
    })
}

/// `MPI_Keyval_create` (deprecated): a communicator keyval.
///
/// # Safety
/// As `MPI_Comm_create_keyval`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Keyval_create(
    copy: *const c_void,
    delete: *const c_void,
    keyval: *mut c_int,
    extra: *mut c_void,
) -> c_int {
    // SAFETY: the caller's contract.
    unsafe {
        create_keyval(
            "MPI_Keyval_create",
            Obj::Comm,
            copy as usize,
            delete as usize,
            keyval,
            extra as usize,
            false,
        )
    }
}

/// `MPI_Keyval_free` (deprecated).
///
/// # Safety
/// `keyval` is readable and writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Keyval_free(keyval: *mut c_int) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { free_keyval("MPI_Keyval_free", Obj::Comm, keyval) }
}

/// `MPI_Attr_put` (deprecated).
#[no_mangle]
pub extern "C" fn MPI_Attr_put(comm: Handle, key: c_int, v: *mut c_void) -> c_int {
    set_attr("MPI_Attr_put", Obj::Comm, hv(comm), key, v as usize)
}

/// `MPI_Attr_get` (deprecated): as `MPI_Comm_get_attr`.
///
/// # Safety
/// As `MPI_Comm_get_attr`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Attr_get(
    comm: Handle,
    key: c_int,
    value: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { super::comm::MPI_Comm_get_attr(comm, key, value, flag) }
}

/// `MPI_Attr_delete` (deprecated).
#[no_mangle]
pub extern "C" fn MPI_Attr_delete(comm: Handle, key: c_int) -> c_int {
    delete_attr("MPI_Attr_delete", Obj::Comm, hv(comm), key)
}

// The profiling interface (`PMPI_…`) of the functions above (build.rs).
include!(concat!(env!("OUT_DIR"), "/pmpi_attr.rs"));
