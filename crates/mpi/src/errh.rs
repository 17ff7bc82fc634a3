//! User-defined error handlers (`MPI_Comm_create_errhandler`,
//! `MPI_Win_create_errhandler`) and error classes and codes
//! (`MPI_Add_error_class`, `_code`, `_string`).
//!
//! A handler is a function pointer the program gave, kept with the kind
//! of object it serves and its language; freeing one only stops it from
//! being set again (objects that carry it keep calling it, as MPI wants).
//! Classes and codes the program adds are numbered above
//! `MPI_ERR_LASTCODE`; `MPI_LASTUSEDCODE` follows them.

use crate::consts::err;
use crate::engine::MpiErr;
use std::collections::HashMap;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Mutex, MutexGuard};

/// The object kind a handler serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Comm,
    Win,
}

/// How the handler is called.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lang {
    /// `void f(MPI_Comm *, int *, ...)` (or `MPI_Win *`).
    C,
    /// `SUBROUTINE F(OBJ, CODE)`, both `INTEGER`s by reference.
    Fortran,
}

/// A handler the program created.
#[derive(Debug, Clone, Copy)]
pub(crate) struct UserHandler {
    pub kind: Kind,
    pub lang: Lang,
    /// The function's address (never null).
    pub f: usize,
    freed: bool,
}

/// Handles of user handlers: far from the engine's ids (which count up
/// from `h::FIRST_USER` in steps of 8) and from the predefined values.
const FIRST: usize = 0x4000_0000;

/// Most handlers a program may create; one more is refused
/// (`MPI_ERR_NO_MEM`) rather than grow without bound.
const MAX_HANDLERS: usize = 1 << 16;
/// Most classes and codes a program may add.
const MAX_CODES: usize = 1 << 16;

#[derive(Default)]
struct Table {
    handlers: Vec<UserHandler>,
    /// Added codes: their class (a class is its own).
    class_of: HashMap<i32, i32>,
    strings: HashMap<i32, String>,
}

static TABLE: Mutex<Option<Table>> = Mutex::new(None);

/// The largest error code in use (`MPI_LASTUSEDCODE`'s value; the
/// attribute hands out a pointer to it, so it lives at a fixed address).
pub(crate) static LASTUSED: AtomicI32 = AtomicI32::new(err::LASTCODE);

fn table() -> MutexGuard<'static, Option<Table>> {
    TABLE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Registers handler `f` (non-null) for objects of `kind`.
pub(crate) fn create(kind: Kind, lang: Lang, f: usize) -> Result<usize, MpiErr> {
    if f == 0 {
        return Err(MpiErr::new(err::ARG, "error handler function is NULL"));
    }
    let mut t = table();
    let t = t.get_or_insert_with(Table::default);
    if t.handlers.len() >= MAX_HANDLERS {
        return Err(MpiErr::new(err::NO_MEM, "too many error handlers"));
    }
    t.handlers.push(UserHandler {
        kind,
        lang,
        f,
        freed: false,
    });
    Ok(FIRST + 8 * (t.handlers.len() - 1))
}

fn index(h: usize) -> Option<usize> {
    let off = h.checked_sub(FIRST)?;
    (off % 8 == 0).then_some(off / 8)
}

/// The user handler behind `h`, freed or not.
pub(crate) fn get(h: usize) -> Option<UserHandler> {
    let i = index(h)?;
    table().as_ref()?.handlers.get(i).copied()
}

/// The user handler `h` when it may be attached to an object of `kind`.
pub(crate) fn settable(h: usize, kind: Kind) -> Result<UserHandler, MpiErr> {
    match get(h) {
        Some(u) if u.freed => Err(MpiErr::new(
            err::ERRHANDLER,
            format!("error handler {h:#x} was freed"),
        )),
        Some(u) if u.kind == kind => Ok(u),
        Some(u) => Err(MpiErr::new(
            err::ERRHANDLER,
            format!(
                "error handler {h:#x} is for {:?} objects, not {kind:?}",
                u.kind
            ),
        )),
        None => Err(MpiErr::new(
            err::ERRHANDLER,
            format!("invalid error handler {h:#x}"),
        )),
    }
}

/// Frees user handler `h`; false when it is none (or already freed).
pub(crate) fn free(h: usize) -> bool {
    let Some(i) = index(h) else { return false };
    let mut t = table();
    match t.as_mut().and_then(|t| t.handlers.get_mut(i)) {
        Some(u) if !u.freed => {
            u.freed = true;
            true
        }
        _ => false,
    }
}

/// A new error class (`MPI_Add_error_class`).
pub(crate) fn add_class() -> Result<i32, MpiErr> {
    add(None)
}

/// A new error code of `class` (`MPI_Add_error_code`).
pub(crate) fn add_code(class: i32) -> Result<i32, MpiErr> {
    let known = crate::consts::error_string(class).is_some()
        || table()
            .as_ref()
            .is_some_and(|t| t.class_of.get(&class) == Some(&class));
    if !known || class == err::SUCCESS {
        return Err(MpiErr::new(
            err::ARG,
            format!("{class} is not an error class"),
        ));
    }
    add(Some(class))
}

fn add(class: Option<i32>) -> Result<i32, MpiErr> {
    let mut t = table();
    let t = t.get_or_insert_with(Table::default);
    if t.class_of.len() >= MAX_CODES {
        return Err(MpiErr::new(err::NO_MEM, "too many error classes and codes"));
    }
    let code = LASTUSED.load(Ordering::Relaxed) + 1;
    t.class_of.insert(code, class.unwrap_or(code));
    LASTUSED.store(code, Ordering::Relaxed);
    Ok(code)
}

/// Longest error string kept (`MPI_MAX_ERROR_STRING` less the NUL).
pub(crate) const MAX_STRING: usize = 511;

/// Sets the string of an added class or code (`MPI_Add_error_string`).
pub(crate) fn set_string(code: i32, s: String) -> Result<(), MpiErr> {
    let mut t = table();
    let Some(t) = t.as_mut().filter(|t| t.class_of.contains_key(&code)) else {
        return Err(MpiErr::new(
            err::ARG,
            format!("{code} is not an error class or code the program added"),
        ));
    };
    let mut s = s;
    if s.len() > MAX_STRING {
        let mut cut = MAX_STRING;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
    }
    t.strings.insert(code, s);
    Ok(())
}

/// The class of an added code, and its string ("" until set).
pub(crate) fn lookup(code: i32) -> Option<(i32, String)> {
    let t = table();
    let t = t.as_ref()?;
    let class = *t.class_of.get(&code)?;
    Some((class, t.strings.get(&code).cloned().unwrap_or_default()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handlers_keep_their_kind_and_freeing_stops_new_uses_only() {
        let a = create(Kind::Comm, Lang::C, 0x1000).unwrap();
        let b = create(Kind::Win, Lang::Fortran, 0x2000).unwrap();
        assert_ne!(a, b);
        assert!(settable(a, Kind::Comm).is_ok());
        assert_eq!(settable(a, Kind::Win).unwrap_err().class, err::ERRHANDLER);
        assert!(create(Kind::Comm, Lang::C, 0).is_err());
        assert!(free(a));
        assert!(!free(a));
        assert_eq!(settable(a, Kind::Comm).unwrap_err().class, err::ERRHANDLER);
        assert_eq!(get(a).unwrap().f, 0x1000);
        assert!(get(a + 1).is_none() && get(0x141).is_none());
    }

    #[test]
    fn added_codes_count_up_past_the_last_code() {
        let c = add_class().unwrap();
        assert!(c > err::LASTCODE);
        let d = add_code(c).unwrap();
        assert_eq!(d, c + 1);
        assert!(LASTUSED.load(Ordering::Relaxed) >= d);
        assert!(add_code(err::TAG).is_ok());
        assert!(add_code(d).is_err(), "a code is not a class");
        assert!(add_code(err::SUCCESS).is_err());
        set_string(d, "x".repeat(2000)).unwrap();
        let (class, s) = lookup(d).unwrap();
        assert_eq!((class, s.len()), (c, MAX_STRING));
        assert!(set_string(err::TAG, "no".into()).is_err());
    }
}
