//! The objects the engine hands out and keeps: communicators, statuses,
//! receive destinations, and the error every call may return.

use crate::buf::{TypedBuf, UserBuf};
use std::sync::Arc;

/// A communicator.
#[derive(Debug, Clone)]
pub(crate) struct Comm {
    /// Context of point-to-point traffic; collectives use `ctx + 1`.
    pub ctx: u32,
    /// World rank of each member, by communicator rank.
    pub group: Arc<Vec<u32>>,
    /// Our rank in it.
    pub rank: u32,
    /// `MPI_ERRORS_ARE_FATAL`, `MPI_ERRORS_RETURN` or `MPI_ERRORS_ABORT`.
    pub errh: usize,
}

impl Comm {
    pub(crate) fn size(&self) -> u32 {
        self.group.len() as u32
    }

    /// The communicator rank of world rank `w`.
    pub(crate) fn rank_of(&self, w: u32) -> Option<u32> {
        self.group.iter().position(|&g| g == w).map(|r| r as u32)
    }
}

/// Where a receive puts the data: the caller's memory, or a vector the
/// library owns (collectives), handed out by [`Engine::take_data`].
#[derive(Debug)]
pub(crate) enum Dest {
    User(UserBuf),
    Own {
        cap: usize,
        data: Vec<u8>,
    },
    /// The caller's memory in a non-contiguous datatype: data READ in
    /// pieces lands in `data` and is unpacked by [`Dest::commit`].
    Typed {
        buf: TypedBuf,
        data: Vec<u8>,
    },
}

impl Dest {
    pub(crate) fn cap(&self) -> usize {
        match self {
            Dest::User(u) => u.len(),
            Dest::Own { cap, .. } => *cap,
            Dest::Typed { buf, .. } => buf.len(),
        }
    }

    pub(crate) fn fill(&mut self, d: &[u8]) {
        match self {
            Dest::User(u) => {
                u.fill(d);
            }
            Dest::Own { cap, data } => {
                data.clear();
                data.extend_from_slice(&d[..d.len().min(*cap)]);
            }
            Dest::Typed { buf, .. } => buf.fill(d),
        }
    }

    /// Unpacks what [`Dest::slice`] received into a typed buffer.
    pub(crate) fn commit(&mut self) {
        if let Dest::Typed { buf, data } = self {
            buf.fill(data);
            *data = Vec::new();
        }
    }

    /// The first `n` bytes, to be written.
    pub(crate) fn slice(&mut self, n: usize) -> &mut [u8] {
        match self {
            Dest::User(u) => {
                let s = u.as_mut();
                let n = n.min(s.len());
                &mut s[..n]
            }
            Dest::Own { cap, data } => {
                data.resize(n.min(*cap), 0);
                data
            }
            Dest::Typed { buf, data } => {
                data.resize(n.min(buf.len()), 0);
                data
            }
        }
    }
}

/// What `MPI_Status` reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct St {
    pub source: i32,
    pub tag: i32,
    pub error: i32,
    pub count: u64,
    pub cancelled: bool,
}

/// Why an operation failed: an MPI error class and what to say.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{msg}")]
pub(crate) struct MpiErr {
    pub class: i32,
    pub msg: String,
}

impl MpiErr {
    pub(crate) fn new(class: i32, msg: impl Into<String>) -> MpiErr {
        MpiErr {
            class,
            msg: msg.into(),
        }
    }
}

/// An on/off setting `name` with value `v` (unset: on): `on`, `1` or
/// empty, `off` or `0`; anything else is an error naming the variable.
pub(crate) fn on_off(name: &str, v: Option<&str>) -> Result<bool, MpiErr> {
    match v.map(str::trim) {
        None | Some("" | "on" | "1") => Ok(true),
        Some("off" | "0") => Ok(false),
        Some(other) => Err(MpiErr::new(
            crate::consts::err::OTHER,
            format!(
                "{name}={:?}: expected on or off",
                other.chars().take(40).collect::<String>()
            ),
        )),
    }
}

/// The rank in `group` of world rank `w`, or -1.
pub(crate) fn group_rank(group: &[u32], w: u32) -> i32 {
    group.iter().position(|&g| g == w).map_or(-1, |r| r as i32)
}
