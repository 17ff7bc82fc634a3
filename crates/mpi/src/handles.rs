//! Objects a program creates that need no agreement with other tasks:
//! derived datatypes, user-defined operations and groups, by handle.
//! Kept apart from the engine's lock: creating a type never waits.

use crate::consts::{err, h};
use crate::dtype::{predefined, Layout};
use crate::idmap::IdMap;
use crate::objects::MpiErr;
use std::ffi::{c_int, c_void};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard};

/// `MPI_GROUP_EMPTY`.
pub(crate) const GROUP_EMPTY: usize = 0x109;
pub(crate) const GROUP_NULL: usize = 0x108;
pub(crate) const DATATYPE_NULL: usize = 0x200;
pub(crate) const OP_NULL: usize = 0x20;

/// `MPI_User_function`: `inoutvec[i] = invec[i] (op) inoutvec[i]` for
/// `*len` elements of `*datatype`.
pub(crate) type UserFn =
    unsafe extern "C" fn(*mut c_void, *mut c_void, *mut c_int, *mut *mut c_void);

/// A user-defined reduction.
#[derive(Debug, Clone, Copy)]
pub(crate) struct UserOp {
    pub func: UserFn,
    pub commute: bool,
}

#[derive(Default)]
pub(crate) struct Reg {
    pub types: IdMap<Arc<Layout>>,
    pub ops: IdMap<UserOp>,
    pub groups: IdMap<Arc<Vec<u32>>>,
    /// Types and operations freed while a deferred collective or a
    /// persistent request may still name them: removed by [`purge`].
    zombies: Vec<usize>,
    next: usize,
}

impl Reg {
    /// A fresh handle value (far above every predefined one).
    pub(crate) fn handle(&mut self) -> usize {
        self.next = self.next.max(h::FIRST_USER) + 8;
        self.next
    }

    /// Frees type or operation `v` (MPI: operations already started with
    /// it go on as if it were still there).
    pub(crate) fn retire(&mut self, v: usize, in_use: bool) {
        if in_use {
            self.zombies.push(v);
        } else {
            self.types.remove(&v);
            self.ops.remove(&v);
        }
    }

    /// Drops what [`Reg::retire`] kept, once nothing can name it.
    pub(crate) fn purge(&mut self) {
        for v in std::mem::take(&mut self.zombies) {
            self.types.remove(&v);
            self.ops.remove(&v);
        }
    }

    pub(crate) fn add_type(&mut self, l: Layout) -> usize {
        let id = self.handle();
        self.types.insert(id, Arc::new(l));
        id
    }

    pub(crate) fn add_group(&mut self, g: Vec<u32>) -> usize {
        if g.is_empty() {
            return GROUP_EMPTY;
        }
        let id = self.handle();
        self.groups.insert(id, Arc::new(g));
        id
    }

    pub(crate) fn group(&self, g: usize) -> Result<Arc<Vec<u32>>, MpiErr> {
        if g == GROUP_EMPTY {
            return Ok(Arc::new(Vec::new()));
        }
        self.groups
            .get(&g)
            .cloned()
            .ok_or_else(|| MpiErr::new(err::GROUP, format!("invalid group {g:#x}")))
    }
}

static REG: LazyLock<Mutex<Reg>> = LazyLock::new(|| Mutex::new(Reg::default()));

pub(crate) fn reg() -> MutexGuard<'static, Reg> {
    REG.lock().unwrap_or_else(|e| e.into_inner())
}

/// The layout of datatype `dt`, predefined or created (committed or
/// not).
pub(crate) fn any_layout(dt: usize) -> Result<Arc<Layout>, MpiErr> {
    if let Some(l) = predefined(dt) {
        return Ok(l.clone());
    }
    reg()
        .types
        .get(&dt)
        .cloned()
        .ok_or_else(|| MpiErr::new(err::TYPE, format!("invalid datatype {dt:#x}")))
}

/// The layout of a datatype communication may use: committed.
pub(crate) fn layout(dt: usize) -> Result<Arc<Layout>, MpiErr> {
    let l = any_layout(dt)?;
    if !l.committed {
        return Err(MpiErr::new(
            err::TYPE,
            format!("datatype {dt:#x} is not committed"),
        ));
    }
    Ok(l)
}

/// A committed datatype's layout as [`layout_ref`] lends it: a
/// predefined type's borrowed from the table (no reference count moves),
/// a created type's shared.
pub(crate) enum LayoutRef {
    Predefined(&'static Arc<Layout>),
    Created(Arc<Layout>),
}

impl std::ops::Deref for LayoutRef {
    type Target = Layout;

    fn deref(&self) -> &Layout {
        match self {
            LayoutRef::Predefined(l) => l,
            LayoutRef::Created(l) => l,
        }
    }
}

impl LayoutRef {
    /// The layout, shared.
    pub(crate) fn into_arc(self) -> Arc<Layout> {
        match self {
            LayoutRef::Predefined(l) => Arc::clone(l),
            LayoutRef::Created(l) => l,
        }
    }
}

/// [`layout`] without moving a reference count for a predefined type
/// (every small send and receive names one).
pub(crate) fn layout_ref(dt: usize) -> Result<LayoutRef, MpiErr> {
    match predefined(dt) {
        Some(l) => Ok(LayoutRef::Predefined(l)),
        None => layout(dt).map(LayoutRef::Created),
    }
}
