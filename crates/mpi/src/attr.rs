//! Attributes (keyvals and the values programs cache on communicators,
//! datatypes and windows) and object names.
//!
//! Kept apart from the engine: none of this needs the other tasks. The
//! callbacks a keyval names are kept as the addresses the program gave
//! (0: the null function, 1: the dup function); `ffi::attr` calls them
//! with no lock held, since they may call MPI themselves.

use crate::consts::err;
use crate::objects::MpiErr;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, MutexGuard};

/// The kind of object an attribute or a name belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Obj {
    Comm,
    Type,
    Win,
}

impl Obj {
    pub(crate) fn what(self) -> &'static str {
        match self {
            Obj::Comm => "communicator",
            Obj::Type => "datatype",
            Obj::Win => "window",
        }
    }
}

/// `MPI_COMM_NULL_COPY_FN` and the other null copy functions.
pub(crate) const NULL_FN: usize = 0;
/// `MPI_COMM_DUP_FN` and the other dup functions.
pub(crate) const DUP_FN: usize = 1;

/// A key for attributes of one kind of object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Keyval {
    pub obj: Obj,
    pub copy: usize,
    pub delete: usize,
    pub extra: usize,
    /// Made from Fortran: callbacks take references, values are integers.
    pub fortran: bool,
}

/// Keyvals handed out start here, above every predefined key.
const FIRST_KEYVAL: i32 = 0x1000;
/// Bound on live keyvals and on attributes, against a runaway program.
const MAX_KEYVALS: usize = 1 << 16;
const MAX_ATTRS: usize = 1 << 20;
/// `MPI_MAX_OBJECT_NAME`: names keep at most one byte less.
pub(crate) const MAX_OBJECT_NAME: usize = 128;

#[derive(Default)]
pub(crate) struct Attrs {
    keyvals: HashMap<i32, Keyval>,
    /// Keyvals freed while attributes still used them.
    freed: HashMap<i32, Keyval>,
    next: i32,
    /// Ordered, so that callbacks run in a deterministic order.
    vals: BTreeMap<(Obj, usize, i32), usize>,
    names: HashMap<(Obj, usize), String>,
}

static ATTRS: Mutex<Option<Attrs>> = Mutex::new(None);

/// The process's attributes and names.
pub(crate) fn attrs() -> MutexGuard<'static, Option<Attrs>> {
    ATTRS.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `f` on the table.
pub(crate) fn with_attrs<T>(f: impl FnOnce(&mut Attrs) -> T) -> T {
    f(attrs().get_or_insert_with(Attrs::default))
}

fn bad_key(obj: Obj, key: i32) -> MpiErr {
    MpiErr::new(err::KEYVAL, format!("invalid {} keyval {key}", obj.what()))
}

impl Attrs {
    /// A new keyval.
    pub(crate) fn create(&mut self, kv: Keyval) -> Result<i32, MpiErr> {
        if self.keyvals.len() + self.freed.len() >= MAX_KEYVALS {
            return Err(MpiErr::new(err::KEYVAL, "too many keyvals"));
        }
        self.next = self.next.max(FIRST_KEYVAL);
        let k = self.next;
        self.next = self
            .next
            .checked_add(1)
            .ok_or_else(|| MpiErr::new(err::KEYVAL, "out of keyvals"))?;
        self.keyvals.insert(k, kv);
        Ok(k)
    }

    /// Keyval `key` for objects of kind `obj`, not freed.
    pub(crate) fn keyval(&self, obj: Obj, key: i32) -> Result<Keyval, MpiErr> {
        self.keyvals
            .get(&key)
            .copied()
            .filter(|k| k.obj == obj)
            .ok_or_else(|| bad_key(obj, key))
    }

    /// `MPI_*_free_keyval`: attributes that use it stay until their
    /// object is freed (their delete callback still runs).
    pub(crate) fn free(&mut self, obj: Obj, key: i32) -> Result<(), MpiErr> {
        let kv = self.keyval(obj, key)?;
        self.keyvals.remove(&key);
        if self.vals.keys().any(|&(_, _, k)| k == key) {
            self.freed.insert(key, kv);
        }
        Ok(())
    }

    /// Any keyval, freed or not (for the callbacks of a value).
    fn any(&self, key: i32) -> Option<Keyval> {
        self.keyvals
            .get(&key)
            .or_else(|| self.freed.get(&key))
            .copied()
    }

    /// Sets an attribute; the value it replaces, to be deleted.
    pub(crate) fn set(
        &mut self,
        obj: Obj,
        h: usize,
        key: i32,
        v: usize,
    ) -> Result<Option<(Keyval, usize)>, MpiErr> {
        let kv = self.keyval(obj, key)?;
        if self.vals.len() >= MAX_ATTRS {
            return Err(MpiErr::new(err::NO_MEM, "too many attributes"));
        }
        Ok(self.vals.insert((obj, h, key), v).map(|old| (kv, old)))
    }

    /// The value of an attribute, if set. A key no keyval ever had is
    /// reported absent (as before user attributes existed); a keyval of
    /// another kind of object is an error.
    pub(crate) fn get(&self, obj: Obj, h: usize, key: i32) -> Result<Option<usize>, MpiErr> {
        match self.keyvals.get(&key) {
            None => Ok(None),
            Some(k) if k.obj != obj => Err(bad_key(obj, key)),
            Some(_) => Ok(self.vals.get(&(obj, h, key)).copied()),
        }
    }

    /// Removes an attribute; its keyval and value, to be deleted.
    pub(crate) fn remove(
        &mut self,
        obj: Obj,
        h: usize,
        key: i32,
    ) -> Result<Option<(Keyval, usize)>, MpiErr> {
        let kv = self.keyval(obj, key)?;
        Ok(self.vals.remove(&(obj, h, key)).map(|v| (kv, v)))
    }

    /// Every attribute of an object: (key, keyval, value).
    pub(crate) fn all(&self, obj: Obj, h: usize) -> Vec<(i32, Keyval, usize)> {
        self.vals
            .range((obj, h, i32::MIN)..=(obj, h, i32::MAX))
            .filter_map(|(&(_, _, k), &v)| Some((k, self.any(k)?, v)))
            .collect()
    }

    /// Sets what a copy callback produced, with no callback for a value
    /// replaced (the new object has none yet).
    pub(crate) fn put(&mut self, obj: Obj, h: usize, key: i32, v: usize) {
        self.vals.insert((obj, h, key), v);
    }

    /// Forgets an object being freed: its attributes, to be deleted,
    /// and its name.
    pub(crate) fn forget(&mut self, obj: Obj, h: usize) -> Vec<(i32, Keyval, usize)> {
        let all = self.all(obj, h);
        for (k, _, _) in &all {
            self.vals.remove(&(obj, h, *k));
        }
        self.names.remove(&(obj, h));
        let used: Vec<i32> = self.freed.keys().copied().collect();
        for k in used {
            if !self.vals.keys().any(|&(_, _, x)| x == k) {
                self.freed.remove(&k);
            }
        }
        all
    }

    /// Names an object (cut to `MPI_MAX_OBJECT_NAME - 1` bytes, on a
    /// character boundary).
    pub(crate) fn set_name(&mut self, obj: Obj, h: usize, name: &str) {
        let mut n = name.len().min(MAX_OBJECT_NAME - 1);
        while !name.is_char_boundary(n) {
            n -= 1;
        }
        self.names.insert((obj, h), name[..n].to_string());
    }

    /// The name of an object, if it was given one.
    pub(crate) fn name(&self, obj: Obj, h: usize) -> Option<&str> {
        self.names.get(&(obj, h)).map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kv(obj: Obj) -> Keyval {
        Keyval {
            obj,
            copy: DUP_FN,
            delete: NULL_FN,
            extra: 7,
            fortran: false,
        }
    }

    #[test]
    fn keyvals_values_and_freeing() {
        let mut a = Attrs::default();
        let k = a.create(kv(Obj::Comm)).unwrap();
        assert!(k >= FIRST_KEYVAL);
        assert_eq!(a.get(Obj::Comm, 5, k).unwrap(), None);
        assert!(a.get(Obj::Win, 5, k).is_err(), "keyval of another kind");
        assert_eq!(a.set(Obj::Comm, 5, k, 11).unwrap(), None);
        assert_eq!(
            a.set(Obj::Comm, 5, k, 12).unwrap(),
            Some((kv(Obj::Comm), 11))
        );
        assert_eq!(a.get(Obj::Comm, 5, k).unwrap(), Some(12));
        assert_eq!(a.get(Obj::Comm, 5, k + 1).unwrap(), None, "unknown key");
        a.free(Obj::Comm, k).unwrap();
        assert!(a.set(Obj::Comm, 5, k, 1).is_err(), "freed keyval");
        assert_eq!(a.all(Obj::Comm, 5), vec![(k, kv(Obj::Comm), 12)]);
        assert_eq!(a.forget(Obj::Comm, 5).len(), 1);
        assert!(a.freed.is_empty() && a.vals.is_empty());
    }

    #[test]
    fn names_are_bounded() {
        let mut a = Attrs::default();
        a.set_name(Obj::Win, 1, &"é".repeat(100));
        let n = a.name(Obj::Win, 1).unwrap();
        assert!(n.len() < MAX_OBJECT_NAME && n.chars().all(|c| c == 'é'));
    }
}
