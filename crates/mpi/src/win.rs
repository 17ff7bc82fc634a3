//! One-sided communication (`MPI_Win_*`, `Put`, `Get`, `Accumulate`, …)
//! mapped onto MBCF: a window is a segment per member, published to the
//! others at creation; `Put` is a WRITE, `Get` a READ, and the locks are
//! MBCF atomics on a small lock segment each member owns.
//!
//! - Completion: operations are issued at once and complete at the next
//!   fence, flush or unlock (which wait for their MBCF requests; a
//!   `Get`'s bytes are copied into the origin buffer then).
//! - Passive target: word 0 of the target's lock segment counts shared
//!   holders, or holds [`EXCL`] for an exclusive one (CAS and FETCH_ADD
//!   with back-off).
//! - Accumulates are atomic per call against every other accumulate
//!   (`Accumulate`, `Get_accumulate`, `Fetch_and_op`,
//!   `Compare_and_swap`) to the same target: each takes word 8 of the
//!   target's lock segment (a CAS spin lock), READs the target bytes,
//!   applies the operation here, WRITEs them back and releases. `Put`
//!   and `Get` are not ordered against them, as MPI allows.
//!
//! The window table is separate from the engine: nothing here needs the
//! engine's lock while waiting for MBCF.

use crate::buf::UserBuf;
use crate::consts::err;
use crate::engine::MpiErr;
use crate::types::{reduce, Num, Op};
use sss_mbcf::{Options, Perm, RemoteAddr, Request, Segment, SegmentInfo, Task};
use std::collections::HashMap;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// The exclusive holder's value of the window lock word.
const EXCL: u64 = 1 << 62;
/// Largest single READ.
const READ_CHUNK: usize = 4 << 20;
/// Bytes of a member's record in the creation allgather.
const RECORD: usize = 96;

/// `MPI_LOCK_EXCLUSIVE` and `MPI_LOCK_SHARED`.
pub(crate) const LOCK_EXCLUSIVE: i32 = 301;
pub(crate) const LOCK_SHARED: i32 = 302;

/// What one member of a window offers.
#[derive(Debug, Clone, Copy)]
struct Member {
    /// Its window memory (none when its size is 0).
    seg: Option<SegmentInfo>,
    size: u64,
    disp_unit: u64,
    /// Its lock words.
    locks: SegmentInfo,
}

/// An issued operation not yet completed.
#[derive(Debug)]
enum Pending {
    Put {
        target: u32,
        /// The task whose memory the WRITE went to.
        holder: u32,
        req: Request,
    },
    Get {
        target: u32,
        req: Request,
        dest: UserBuf,
        off: usize,
    },
}

impl Pending {
    fn target(&self) -> u32 {
        match self {
            Pending::Put { target, .. } | Pending::Get { target, .. } => *target,
        }
    }
}

/// A window.
pub(crate) struct Win {
    /// The window's own communicator (a dup of the creator's).
    pub comm: usize,
    /// World rank of each member, by window rank.
    group: Vec<u32>,
    rank: u32,
    members: Vec<Member>,
    /// Our memory: base address and size as the user sees them.
    pub base: usize,
    pub size: u64,
    pub disp_unit: u64,
    /// Our segments (window memory when any, lock words).
    seg: Option<Segment>,
    locks: Segment,
    /// Whether the library allocated the memory (`MPI_Win_allocate`).
    pub allocated: bool,
    pending: Vec<Pending>,
    /// Locks we hold, by target: the type.
    held: HashMap<u32, i32>,
    /// Targets of the access epoch `MPI_Win_start` opened (window ranks).
    pub access: Option<Vec<u32>>,
    /// Origins of the exposure epoch `MPI_Win_post` opened.
    pub exposure: Option<Vec<u32>>,
    /// A dynamic window's attachments (`MPI_Win_create_dynamic`).
    pub dynamic: Option<crate::win_dyn::Dyn>,
    /// A shared-memory window's memory (`MPI_Win_allocate_shared`): every
    /// member's part lies in one segment of the first member.
    pub shared: Option<crate::win_shared::Shared>,
}

static WINS: Mutex<Option<HashMap<usize, Win>>> = Mutex::new(None);

fn table() -> MutexGuard<'static, Option<HashMap<usize, Win>>> {
    WINS.lock().unwrap_or_else(|e| e.into_inner())
}

fn mbcf(what: &str, e: sss_mbcf::Error) -> MpiErr {
    let class = match e {
        sss_mbcf::Error::PeerDown(_) => err::PROC_ABORTED,
        _ => err::OTHER,
    };
    MpiErr::new(class, format!("{what}: {e}"))
}

fn bad_win(h: usize) -> MpiErr {
    MpiErr::new(err::WIN, format!("invalid window {h:#x}"))
}

/// Windows taken out of the table by a call in progress; another
/// thread's call on one waits on [`BACK`] until it is returned.
static OUT: Mutex<Vec<usize>> = Mutex::new(Vec::new());
static BACK: Condvar = Condvar::new();

fn out_list() -> MutexGuard<'static, Vec<usize>> {
    OUT.lock().unwrap_or_else(|e| e.into_inner())
}

/// The window whose own communicator is `comm` (for its error handler).
pub(crate) fn of_comm(comm: usize) -> Option<usize> {
    table()
        .as_ref()?
        .iter()
        .find_map(|(&h, w)| (w.comm == comm).then_some(h))
}

/// Runs `f` on window `h`, taken out of the table meanwhile so that no
/// lock is held while MBCF operations complete.
pub(crate) fn with_win<T>(
    h: usize,
    f: impl FnOnce(&mut Win, &Task) -> Result<T, MpiErr>,
) -> Result<T, MpiErr> {
    let mut w = loop {
        // Lock order: the table, then the list of windows out.
        let mut t = table();
        let mut out = out_list();
        if let Some(w) = t.as_mut().and_then(|t| t.remove(&h)) {
            out.push(h);
            break w;
        }
        if !out.contains(&h) {
            return Err(bad_win(h));
        }
        drop(t);
        let _ = BACK.wait_timeout(out, Duration::from_millis(10));
    };
    let task = crate::runtime::with(|e| Ok(e.task.clone()));
    let r = task.and_then(|t| f(&mut w, &t));
    let mut t = table();
    t.get_or_insert_with(HashMap::new).insert(h, w);
    out_list().retain(|&x| x != h);
    BACK.notify_all();
    r
}

/// Creates a window over `seg` (ours, `None` for size 0) on `comm`;
/// collective. Returns its handle.
pub(crate) fn create(
    comm: usize,
    seg: Option<Segment>,
    base: usize,
    size: u64,
    disp_unit: u64,
    allocated: bool,
) -> Result<usize, MpiErr> {
    create_in(comm, seg, None, base, size, disp_unit, allocated, None)
}

/// [`create`], where our memory may be `part`, a range of another
/// member's segment (a shared-memory window, `shared`), instead of `seg`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn create_in(
    comm: usize,
    seg: Option<Segment>,
    part: Option<SegmentInfo>,
    base: usize,
    size: u64,
    disp_unit: u64,
    allocated: bool,
    shared: Option<crate::win_shared::Shared>,
) -> Result<usize, MpiErr> {
    if disp_unit == 0 {
        return Err(MpiErr::new(err::DISP, "disp_unit must be positive"));
    }
    // Windows live on intracommunicators (their all-gathers too).
    crate::inter::no_collectives(comm)?;
    let task = crate::runtime::with(|e| Ok(e.task.clone()))?;
    let locks = task
        .alloc(64, Perm::ALL)
        .map_err(|e| MpiErr::new(err::NO_MEM, format!("window lock words: {e}")))?;
    let wcomm = crate::coll::comm_dup(comm)?;
    let (group, rank) = crate::runtime::with(|e| {
        let c = e.comm(wcomm)?;
        Ok((c.group.to_vec(), c.rank))
    })?;
    let mut mine = [0u8; RECORD];
    if let Some(info) = part.or_else(|| seg.as_ref().map(|s| s.info())) {
        mine[0] = 1;
        mine[1..38].copy_from_slice(&info.to_bytes());
    }
    mine[38..46].copy_from_slice(&size.to_le_bytes());
    mine[46..54].copy_from_slice(&disp_unit.to_le_bytes());
    mine[54..91].copy_from_slice(&locks.info().to_bytes());
    let mut all = vec![0u8; RECORD * group.len()];
    crate::coll::allgather(wcomm, Some(&mine), &mut all, RECORD)?;
    let members = all
        .chunks_exact(RECORD)
        .map(|r| {
            let u64_at = |i: usize| u64::from_le_bytes(r[i..i + 8].try_into().unwrap_or([0; 8]));
            let locks = SegmentInfo::from_bytes(&r[54..91])
                .ok_or_else(|| MpiErr::new(err::INTERN, "window record"))?;
            Ok(Member {
                seg: (r[0] == 1)
                    .then(|| SegmentInfo::from_bytes(&r[1..38]))
                    .flatten(),
                size: u64_at(38),
                disp_unit: u64_at(46).max(1),
                locks,
            })
        })
        .collect::<Result<Vec<_>, MpiErr>>()?;
    // Every part of a shared window lies in the first member's segment;
    // operations on any part go to that member.
    if shared.is_some()
        && members
            .iter()
            .any(|m| m.seg.is_some_and(|s| s.rank != group[0]))
    {
        return Err(MpiErr::new(
            err::INTERN,
            "shared window part outside the first member's segment",
        ));
    }
    let h = crate::runtime::with(|e| {
        // A window starts with its communicator's handler, unless that is
        // a program's communicator handler, which cannot take a window:
        // then with MPI's default.
        if let Some(c) = e.comms.get_mut(&wcomm) {
            if crate::errh::get(c.errh).is_some() {
                c.errh = crate::consts::h::ERRORS_ARE_FATAL;
            }
        }
        Ok(e.handle())
    })?;
    let w = Win {
        comm: wcomm,
        group,
        rank,
        members,
        base,
        size,
        disp_unit,
        seg,
        locks,
        allocated,
        pending: Vec::new(),
        held: HashMap::new(),
        access: None,
        exposure: None,
        dynamic: None,
        shared,
    };
    table().get_or_insert_with(HashMap::new).insert(h, w);
    Ok(h)
}

impl Win {
    /// The remote address of `len` bytes at displacement `disp` plus
    /// `extra` bytes (a piece of a derived target datatype; may be
    /// negative) in `target`'s window, checked against its size. A dynamic
    /// window's displacement is the target's absolute address, looked up
    /// in what it attached.
    fn at_plus(
        &mut self,
        task: &Task,
        target: i32,
        disp: i64,
        extra: i64,
        len: usize,
    ) -> Result<(u32, RemoteAddr), MpiErr> {
        let t = u32::try_from(target)
            .ok()
            .filter(|&t| (t as usize) < self.members.len())
            .ok_or_else(|| MpiErr::new(err::RANK, format!("invalid target rank {target}")))?;
        let (world, me) = (self.world(t), self.rank);
        if let Some(d) = self.dynamic.as_mut() {
            let addr = (disp as u64).wrapping_add(extra as u64);
            return Ok((t, d.resolve(task, t, world, me, addr, len)?));
        }
        let m = &self.members[t as usize];
        let off = u64::try_from(disp)
            .ok()
            .and_then(|d| d.checked_mul(m.disp_unit))
            .and_then(|o| o.checked_add_signed(extra))
            .ok_or_else(|| MpiErr::new(err::DISP, format!("invalid displacement {disp}")))?;
        let end = off.checked_add(len as u64);
        if end.is_none_or(|e| e > m.size) {
            return Err(MpiErr::new(
                err::RMA_RANGE,
                format!(
                    "{len} bytes at displacement {disp} are outside rank {t}'s window of {} bytes",
                    m.size
                ),
            ));
        }
        let seg = m
            .seg
            .ok_or_else(|| MpiErr::new(err::RMA_RANGE, format!("rank {t}'s window is empty")))?;
        Ok((t, seg.at(off)))
    }

    fn world(&self, t: u32) -> u32 {
        self.group[t as usize]
    }

    /// The task whose memory holds `t`'s window: `t`, or in a shared
    /// window the first member.
    fn holder(&self, t: u32) -> u32 {
        if self.shared.is_some() {
            self.group[0]
        } else {
            self.world(t)
        }
    }

    /// A member's part of a shared window: size, displacement unit, and
    /// offset from the start of the shared segment.
    pub(crate) fn part(&self, t: u32) -> Option<(u64, u64, u64)> {
        let m = self.members.get(t as usize)?;
        let first = self.members.first()?.seg?;
        let off = m.seg.map_or(0, |s| s.base.wrapping_sub(first.base));
        Some((m.size, m.disp_unit, off))
    }

    /// The window's members.
    pub(crate) fn len(&self) -> usize {
        self.members.len()
    }

    /// `MPI_Put`.
    pub(crate) fn put(
        &mut self,
        task: &Task,
        data: &[u8],
        target: i32,
        disp: i64,
    ) -> Result<(), MpiErr> {
        self.put_plus(task, data, target, disp, 0)
    }

    /// [`Win::put`] `extra` bytes past the displacement.
    pub(crate) fn put_plus(
        &mut self,
        task: &Task,
        data: &[u8],
        target: i32,
        disp: i64,
        extra: i64,
    ) -> Result<(), MpiErr> {
        if data.is_empty() {
            return Ok(());
        }
        let (t, at) = self.at_plus(task, target, disp, extra, data.len())?;
        let at = RemoteAddr {
            rank: self.holder(t),
            ..at
        };
        let req = task
            .write(at, data, Options::default())
            .map_err(|e| mbcf("MPI_Put", e))?;
        self.pending.push(Pending::Put {
            target: t,
            holder: at.rank,
            req,
        });
        Ok(())
    }

    /// `MPI_Get`: the bytes land in `dest` when the operation completes.
    pub(crate) fn get(
        &mut self,
        task: &Task,
        dest: UserBuf,
        target: i32,
        disp: i64,
    ) -> Result<(), MpiErr> {
        self.get_plus(task, dest, target, disp, 0)
    }

    /// [`Win::get`] `extra` bytes past the displacement.
    pub(crate) fn get_plus(
        &mut self,
        task: &Task,
        dest: UserBuf,
        target: i32,
        disp: i64,
        extra: i64,
    ) -> Result<(), MpiErr> {
        let n = dest.len();
        if n == 0 {
            return Ok(());
        }
        let (t, at) = self.at_plus(task, target, disp, extra, n)?;
        let at = RemoteAddr {
            rank: self.holder(t),
            ..at
        };
        for off in (0..n).step_by(READ_CHUNK) {
            let req = task
                .read(
                    at.offset(off as u64),
                    (n - off).min(READ_CHUNK),
                    Options::default(),
                )
                .map_err(|e| mbcf("MPI_Get", e))?;
            self.pending.push(Pending::Get {
                target: t,
                req,
                dest,
                off,
            });
        }
        Ok(())
    }

    /// Completes what was issued to `target` (every target: `None`), at
    /// the origin and at the target: a WRITE is done at the origin once
    /// issued, so the tasks that puts went to are fenced too. Without
    /// that, a third task told after a flush could READ the target before
    /// a put lost on the way and resent had landed there.
    pub(crate) fn complete(&mut self, task: &Task, target: Option<u32>) -> Result<(), MpiErr> {
        let mut first: Result<(), MpiErr> = Ok(());
        let (now, later): (Vec<_>, Vec<_>) = std::mem::take(&mut self.pending)
            .into_iter()
            .partition(|p| target.is_none_or(|t| p.target() == t));
        self.pending = later;
        let mut fence: Vec<u32> = Vec::new();
        for p in now {
            let r = match p {
                Pending::Put { req, holder, .. } => {
                    if !fence.contains(&holder) {
                        fence.push(holder);
                    }
                    req.wait().map(|_| ())
                }
                Pending::Get {
                    req, mut dest, off, ..
                } => req.wait_data().map(|d| {
                    let out = dest.as_mut();
                    let end = (off + d.len()).min(out.len());
                    if off < end {
                        out[off..end].copy_from_slice(&d[..end - off]);
                    }
                }),
            };
            if let (Err(e), Ok(())) = (r, &first) {
                first = Err(mbcf("completing a one-sided operation", e));
            }
        }
        // A same-node WRITE is in place already: nothing in flight.
        if !fence.is_empty() {
            let r = task.fence_many(&fence);
            if let (Err(e), Ok(())) = (r, &first) {
                first = Err(mbcf("completing a put at its target", e));
            }
        }
        first
    }

    /// The lock word `word` (0: window lock, 8: accumulate lock) of `t`.
    fn lock_word(&self, t: u32, word: u64) -> RemoteAddr {
        RemoteAddr {
            rank: self.world(t),
            ..self.members[t as usize].locks.at(word)
        }
    }

    /// One attempt at `MPI_Win_lock`: whether the lock was taken.
    fn try_lock(&mut self, task: &Task, kind: i32, target: i32) -> Result<bool, MpiErr> {
        let t = self.at_rank(target)?;
        if self.held.contains_key(&t) {
            return Err(MpiErr::new(
                err::RMA_SYNC,
                format!("rank {t} is already locked"),
            ));
        }
        let at = self.lock_word(t, 0);
        let taken = match kind {
            LOCK_EXCLUSIVE => {
                wait_value(task.cas(at, 0, EXCL, Options::default()), "MPI_Win_lock")? == 0
            }
            LOCK_SHARED => {
                let old = wait_value(task.fetch_add(at, 1, Options::default()), "MPI_Win_lock")?;
                if old & EXCL != 0 {
                    wait_value(
                        task.fetch_add(at, u64::MAX, Options::default()),
                        "MPI_Win_lock",
                    )?;
                }
                old & EXCL == 0
            }
            _ => {
                return Err(MpiErr::new(
                    err::LOCKTYPE,
                    format!("invalid lock type {kind}"),
                ))
            }
        };
        if taken {
            self.held.insert(t, kind);
        }
        Ok(taken)
    }

    /// `MPI_Win_unlock`: completes what was issued to `target`, then
    /// releases.
    pub(crate) fn unlock(&mut self, task: &Task, target: i32) -> Result<(), MpiErr> {
        let t = self.at_rank(target)?;
        let kind = self
            .held
            .remove(&t)
            .ok_or_else(|| MpiErr::new(err::RMA_SYNC, format!("rank {t} is not locked")))?;
        let done = self.complete(task, Some(t));
        let at = self.lock_word(t, 0);
        let back = if kind == LOCK_EXCLUSIVE {
            EXCL.wrapping_neg()
        } else {
            u64::MAX
        };
        wait_value(
            task.fetch_add(at, back, Options::default()),
            "MPI_Win_unlock",
        )?;
        done
    }

    /// Targets we hold a lock on.
    /// Window ranks of the tasks with world ranks `world` (a group);
    /// an error names one that is not a member.
    pub(crate) fn ranks_of(&self, world: &[u32], what: &str) -> Result<Vec<u32>, MpiErr> {
        world
            .iter()
            .map(|w| {
                self.group
                    .iter()
                    .position(|g| g == w)
                    .map(|r| r as u32)
                    .ok_or_else(|| {
                        MpiErr::new(
                            err::GROUP,
                            format!("{what}: task {w} of the group is not in the window"),
                        )
                    })
            })
            .collect()
    }

    pub(crate) fn held(&self) -> Vec<u32> {
        self.held.keys().copied().collect()
    }

    pub(crate) fn size(&self) -> u32 {
        self.members.len() as u32
    }

    fn at_rank(&self, target: i32) -> Result<u32, MpiErr> {
        u32::try_from(target)
            .ok()
            .filter(|&t| (t as usize) < self.members.len())
            .ok_or_else(|| MpiErr::new(err::RANK, format!("invalid target rank {target}")))
    }

    /// Read-modify-write of `len` bytes at `disp` in `target` under its
    /// accumulate lock: `f` gets the current bytes and returns the new
    /// ones (`None`: leave them). Returns the old bytes.
    pub(crate) fn atomic(
        &mut self,
        task: &Task,
        target: i32,
        disp: i64,
        len: usize,
        f: impl FnOnce(&[u8]) -> Result<Option<Vec<u8>>, MpiErr>,
    ) -> Result<Vec<u8>, MpiErr> {
        self.atomic_plus(task, target, disp, 0, len, f)
    }

    /// [`Win::atomic`] `extra` bytes past the displacement (a piece of a
    /// derived target datatype).
    pub(crate) fn atomic_plus(
        &mut self,
        task: &Task,
        target: i32,
        disp: i64,
        extra: i64,
        len: usize,
        f: impl FnOnce(&[u8]) -> Result<Option<Vec<u8>>, MpiErr>,
    ) -> Result<Vec<u8>, MpiErr> {
        // Nothing to do, even on an empty window (as for puts and gets).
        if len == 0 {
            return Ok(Vec::new());
        }
        let (t, at) = self.at_plus(task, target, disp, extra, len)?;
        let at = RemoteAddr {
            rank: self.holder(t),
            ..at
        };
        // Earlier puts to the same place land first.
        self.complete(task, Some(t))?;
        let lock = self.lock_word(t, 8);
        let me = u64::from(self.rank) + 1;
        let mut backoff = Backoff::default();
        while wait_value(task.cas(lock, 0, me, Options::default()), "accumulate lock")? != 0 {
            backoff.pause();
        }
        let body = || -> Result<Vec<u8>, MpiErr> {
            let mut old = Vec::with_capacity(len);
            for off in (0..len).step_by(READ_CHUNK) {
                let d = task
                    .read(
                        at.offset(off as u64),
                        (len - off).min(READ_CHUNK),
                        Options::default(),
                    )
                    .and_then(Request::wait_data)
                    .map_err(|e| mbcf("accumulate", e))?;
                old.extend_from_slice(&d);
            }
            if let Some(new) = f(&old)? {
                task.write(at, &new, Options::default())
                    .and_then(Request::wait)
                    .map_err(|e| mbcf("accumulate", e))?;
            }
            Ok(old)
        };
        let r = body();
        wait_value(task.swap(lock, 0, Options::default()), "accumulate unlock")?;
        r
    }

    /// Frees our segments; the window is gone.
    pub(crate) fn release(self, task: &Task) -> Option<Segment> {
        let _ = task.free(self.locks);
        if let Some(d) = self.dynamic {
            d.release(task);
        }
        if self.allocated {
            if let Some(s) = self.seg {
                let _ = task.free(s);
            }
            None
        } else {
            self.seg
        }
    }
}

/// `target = origin (op) target` element-wise for an accumulate; the new
/// target bytes (`None` for `MPI_NO_OP`).
pub(crate) fn combine(
    op: Op,
    num: Num,
    size: usize,
    origin: &[u8],
    target: &[u8],
) -> Result<Option<Vec<u8>>, MpiErr> {
    match op {
        Op::Nothing => Ok(None),
        Op::Replace => Ok(Some(origin.to_vec())),
        _ => {
            let mut out = target.to_vec();
            reduce(op, num, size, origin, &mut out)
                .map_err(|class| MpiErr::new(class, "operation not defined on this datatype"))?;
            Ok(Some(out))
        }
    }
}

fn wait_value(r: Result<Request, sss_mbcf::Error>, what: &str) -> Result<u64, MpiErr> {
    r.and_then(Request::wait_value).map_err(|e| mbcf(what, e))
}

/// Exponential back-off between lock attempts (1 µs to 1 ms), so that
/// a contended lock costs the holder little.
#[derive(Default)]
struct Backoff(u32);

impl Backoff {
    fn pause(&mut self) {
        self.0 = (self.0 + 1).min(10);
        std::thread::sleep(Duration::from_micros(1 << self.0));
    }
}

/// `MPI_Win_lock` of `target` in window `h`. Between attempts the
/// window goes back to the table: another thread of this task may need
/// it to release what the target's holder waits for.
pub(crate) fn lock(h: usize, kind: i32, target: i32) -> Result<(), MpiErr> {
    let mut backoff = Backoff::default();
    while !with_win(h, |w, t| w.try_lock(t, kind, target))? {
        backoff.pause();
    }
    Ok(())
}

/// Removes window `h` from the table (`MPI_Win_free`).
pub(crate) fn take(h: usize) -> Result<Win, MpiErr> {
    table()
        .as_mut()
        .and_then(|t| t.remove(&h))
        .ok_or_else(|| bad_win(h))
}
