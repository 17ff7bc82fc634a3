//! `MPI_Info` objects: ordered (key, value) strings, bounded by
//! `MPI_MAX_INFO_KEY` and `MPI_MAX_INFO_VAL`; `MPI_INFO_ENV`; and the
//! hints set on communicators and windows (kept and given back; no hint
//! changes what the library does).

use crate::attr::Obj;
use crate::consts::err;
use crate::objects::MpiErr;
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

pub(crate) const INFO_NULL: usize = 0x130;
pub(crate) const INFO_ENV: usize = 0x131;
/// `MPI_MAX_INFO_KEY` and `MPI_MAX_INFO_VAL` of the header: room with
/// the terminating NUL.
pub(crate) const MAX_INFO_KEY: usize = 256;
pub(crate) const MAX_INFO_VAL: usize = 1024;
/// Bounds against a runaway program: keys per object, live objects.
const MAX_KEYS: usize = 4096;
const MAX_INFOS: usize = 1 << 16;

/// One info object.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Info {
    pairs: Vec<(String, String)>,
}

/// Checks a key: not empty, shorter than `MPI_MAX_INFO_KEY`.
pub(crate) fn check_key(k: &str) -> Result<(), MpiErr> {
    if k.trim().is_empty() || k.len() >= MAX_INFO_KEY {
        return Err(MpiErr::new(
            err::INFO_KEY,
            format!(
                "invalid info key of {} bytes (at most {})",
                k.len(),
                MAX_INFO_KEY - 1
            ),
        ));
    }
    Ok(())
}

impl Info {
    pub(crate) fn set(&mut self, k: &str, v: &str) -> Result<(), MpiErr> {
        check_key(k)?;
        if v.len() >= MAX_INFO_VAL {
            return Err(MpiErr::new(
                err::INFO_VALUE,
                format!(
                    "info value of {} bytes for key {k:?} (at most {})",
                    v.len(),
                    MAX_INFO_VAL - 1
                ),
            ));
        }
        if let Some(p) = self.pairs.iter_mut().find(|p| p.0 == k) {
            p.1 = v.to_string();
        } else if self.pairs.len() >= MAX_KEYS {
            return Err(MpiErr::new(err::INFO, "too many keys in one info object"));
        } else {
            self.pairs.push((k.to_string(), v.to_string()));
        }
        Ok(())
    }

    pub(crate) fn get(&self, k: &str) -> Option<&str> {
        self.pairs.iter().find(|p| p.0 == k).map(|p| p.1.as_str())
    }

    pub(crate) fn delete(&mut self, k: &str) -> Result<(), MpiErr> {
        check_key(k)?;
        let i = self
            .pairs
            .iter()
            .position(|p| p.0 == k)
            .ok_or_else(|| MpiErr::new(err::INFO_NOKEY, format!("no info key {k:?}")))?;
        self.pairs.remove(i);
        Ok(())
    }

    pub(crate) fn nkeys(&self) -> usize {
        self.pairs.len()
    }

    pub(crate) fn nth(&self, n: i32) -> Result<&str, MpiErr> {
        usize::try_from(n)
            .ok()
            .and_then(|i| self.pairs.get(i))
            .map(|p| p.0.as_str())
            .ok_or_else(|| {
                MpiErr::new(
                    err::ARG,
                    format!("key number {n} of an info with {} keys", self.pairs.len()),
                )
            })
    }
}

#[derive(Default)]
struct Table {
    infos: HashMap<usize, Info>,
    /// Hints of communicators and windows, by handle.
    hints: HashMap<(Obj, usize), Info>,
}

static TABLE: Mutex<Option<Table>> = Mutex::new(None);

fn table() -> MutexGuard<'static, Option<Table>> {
    TABLE.lock().unwrap_or_else(|e| e.into_inner())
}

fn bad(h: usize) -> MpiErr {
    MpiErr::new(err::INFO, format!("invalid info object {h:#x}"))
}

/// `MPI_INFO_ENV`: how the process was started.
fn env_info() -> Info {
    let mut i = Info::default();
    let args: Vec<String> = std::env::args().collect();
    let mut put = |k: &str, v: String| {
        let mut v = v;
        while v.len() >= MAX_INFO_VAL {
            v.pop();
        }
        let _ = i.set(k, &v);
    };
    if let Some(c) = args.first() {
        put("command", c.clone());
    }
    put("argv", args.get(1..).unwrap_or(&[]).join(" "));
    if let Ok(n) = std::env::var("SSS_SIZE") {
        put("maxprocs", n);
    }
    if let Ok(h) = std::fs::read_to_string("/proc/sys/kernel/hostname") {
        put("host", h.trim().to_string());
    }
    put("arch", std::env::consts::ARCH.to_string());
    if let Ok(d) = std::env::current_dir() {
        put("wdir", d.display().to_string());
    }
    put("thread_level", "MPI_THREAD_SERIALIZED".into());
    i
}

/// A copy of info object `h` (`MPI_INFO_NULL`: empty).
pub(crate) fn get(h: usize) -> Result<Info, MpiErr> {
    match h {
        INFO_NULL => Ok(Info::default()),
        INFO_ENV => Ok(env_info()),
        _ => table()
            .as_ref()
            .and_then(|t| t.infos.get(&h).cloned())
            .ok_or_else(|| bad(h)),
    }
}

/// Runs `f` on info object `h`, which the program created.
pub(crate) fn with_info<T>(
    h: usize,
    f: impl FnOnce(&mut Info) -> Result<T, MpiErr>,
) -> Result<T, MpiErr> {
    if h == INFO_ENV {
        return Err(MpiErr::new(err::INFO, "MPI_INFO_ENV cannot be changed"));
    }
    let mut g = table();
    let i = g
        .as_mut()
        .and_then(|t| t.infos.get_mut(&h))
        .ok_or_else(|| bad(h))?;
    f(i)
}

/// Reads info object `h` (`MPI_INFO_ENV` included).
pub(crate) fn read<T>(h: usize, f: impl FnOnce(&Info) -> Result<T, MpiErr>) -> Result<T, MpiErr> {
    if h == INFO_ENV || h == INFO_NULL {
        if h == INFO_NULL {
            return Err(bad(h));
        }
        return f(&env_info());
    }
    let g = table();
    let i = g
        .as_ref()
        .and_then(|t| t.infos.get(&h))
        .ok_or_else(|| bad(h))?;
    f(i)
}

/// A new info object holding `i`; its handle.
pub(crate) fn add(i: Info) -> Result<usize, MpiErr> {
    let id = crate::handles::reg().handle();
    let mut g = table();
    let t = g.get_or_insert_with(Table::default);
    if t.infos.len() >= MAX_INFOS {
        return Err(MpiErr::new(err::NO_MEM, "too many info objects"));
    }
    t.infos.insert(id, i);
    Ok(id)
}

/// `MPI_Info_free`.
pub(crate) fn free(h: usize) -> Result<(), MpiErr> {
    if h == INFO_ENV {
        return Err(MpiErr::new(err::INFO, "MPI_INFO_ENV cannot be freed"));
    }
    table()
        .as_mut()
        .and_then(|t| t.infos.remove(&h))
        .map(|_| ())
        .ok_or_else(|| bad(h))
}

/// Keeps the hints `info` (a handle) of communicator or window `obj`.
pub(crate) fn set_hints(kind: Obj, obj: usize, info: usize) -> Result<(), MpiErr> {
    let i = get(info)?;
    table()
        .get_or_insert_with(Table::default)
        .hints
        .insert((kind, obj), i);
    Ok(())
}

/// The hints kept for `obj`.
pub(crate) fn hints(kind: Obj, obj: usize) -> Info {
    table()
        .as_ref()
        .and_then(|t| t.hints.get(&(kind, obj)).cloned())
        .unwrap_or_default()
}

/// Gives `new` the hints of `old` (`MPI_Comm_dup`).
pub(crate) fn copy_hints(old: usize, new: usize) {
    let i = hints(Obj::Comm, old);
    if i.nkeys() > 0 {
        table()
            .get_or_insert_with(Table::default)
            .hints
            .insert((Obj::Comm, new), i);
    }
}

/// Forgets the hints of communicator or window `c`, being freed.
pub(crate) fn forget(kind: Obj, c: usize) {
    if let Some(t) = table().as_mut() {
        t.hints.remove(&(kind, c));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_values_and_bounds() {
        let mut i = Info::default();
        i.set("a", "1").unwrap();
        i.set("b", "2").unwrap();
        i.set("a", "3").unwrap();
        assert_eq!(i.nkeys(), 2);
        assert_eq!(i.get("a"), Some("3"));
        assert_eq!(i.nth(1).unwrap(), "b");
        assert_eq!(i.nth(2).unwrap_err().class, err::ARG);
        assert_eq!(i.delete("c").unwrap_err().class, err::INFO_NOKEY);
        let long = "k".repeat(MAX_INFO_KEY);
        assert_eq!(i.set(&long, "v").unwrap_err().class, err::INFO_KEY);
        assert_eq!(i.set("", "v").unwrap_err().class, err::INFO_KEY);
        let big = "v".repeat(MAX_INFO_VAL);
        assert_eq!(i.set("k", &big).unwrap_err().class, err::INFO_VALUE);
        i.set("k", &big[1..]).unwrap();
    }
}
