//! Nonblocking collectives. On an intracommunicator each is a schedule
//! (`crate::nbc`, planned by `iplan`) that every progressing MPI call
//! advances. On an intercommunicator the call records the blocking
//! collective and returns a request; it runs when that request (or a
//! later one of the same thread) is waited on or tested, or before the
//! next blocking collective of the thread, always in the order the
//! thread issued them, so every task runs them in the same order. Each
//! thread's recorded collectives form their own sequence: under
//! `MPI_THREAD_MULTIPLE`, threads of different tasks may issue theirs in
//! different interleavings.

use super::coll::*;
use super::collv::*;
use super::{call, hv, mk, out, Handle};
use crate::runtime::with;
use std::cell::Cell;
use std::collections::{HashMap, VecDeque};
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use std::thread::ThreadId;

type Job = Box<dyn FnOnce() -> c_int + Send>;

/// A collective issued and not yet finished.
struct Entry {
    id: usize,
    /// The thread that issued it: its sequence.
    owner: ThreadId,
    /// None while it runs.
    job: Option<Job>,
}

/// Collectives issued and not yet finished, in issue order.
static PENDING: Mutex<VecDeque<Entry>> = Mutex::new(VecDeque::new());
/// How many entries `PENDING` holds: the point-to-point waits check this
/// word, not the lock.
static QUEUED: AtomicUsize = AtomicUsize::new(0);
/// One runner at a time per sequence: a thread that wants a collective
/// another one is running waits here until it finished.
static RUNNERS: LazyLock<Mutex<HashMap<ThreadId, Arc<Mutex<()>>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

thread_local! {
    /// Set while this thread runs a job: the blocking collective the job
    /// calls must not start the next one.
    static IN_JOB: Cell<bool> = const { Cell::new(false) };
}

fn pending_list() -> std::sync::MutexGuard<'static, VecDeque<Entry>> {
    PENDING.lock().unwrap_or_else(|e| e.into_inner())
}

/// A C argument carried into a job.
#[derive(Clone, Copy)]
struct Arg<T>(T);

// SAFETY: one runner at a time runs a job, and MPI's contract keeps the
// buffers and arrays of a nonblocking collective valid and untouched
// until it completes, whichever thread then runs it.
unsafe impl<T> Send for Arg<T> {}

impl<T: Copy> Arg<T> {
    fn get(self) -> T {
        self.0
    }
}

/// Whether collectives wait to run.
pub(super) fn pending() -> bool {
    QUEUED.load(Ordering::Acquire) > 0
}

/// Runs pending collectives in order: those of this thread (`upto`
/// None), or those of the thread that issued request `upto`, up to and
/// including it if it is pending; returns once it finished, also when
/// another thread runs it.
pub(crate) fn run_pending(upto: Option<usize>) {
    if !pending() || IN_JOB.get() {
        return;
    }
    let owner = {
        let q = pending_list();
        match upto {
            None => std::thread::current().id(),
            Some(v) => match q.iter().find(|e| e.id == v) {
                Some(e) => e.owner,
                None => return,
            },
        }
    };
    let runner = RUNNERS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .entry(owner)
        .or_default()
        .clone();
    let _run = runner.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        let job = {
            let mut q = pending_list();
            if upto.is_some_and(|v| !q.iter().any(|e| e.id == v)) {
                break;
            }
            q.iter_mut()
                .find(|e| e.owner == owner)
                .and_then(|e| Some((e.id, e.job.take()?)))
        };
        let Some((id, f)) = job else {
            break;
        };
        // Counted by SSS_STATS as the nonblocking call it was.
        let code = {
            let _in = crate::stats::inside();
            IN_JOB.set(true);
            let c = f();
            IN_JOB.set(false);
            c
        };
        if code != 0 {
            let _ = with(|e| {
                if let Some(r) = e.reqs.get_mut(&id) {
                    r.status.error = code;
                }
                Ok(())
            });
        }
        pending_list().retain(|e| e.id != id);
        QUEUED.fetch_sub(1, Ordering::AcqRel);
        if upto == Some(id) {
            break;
        }
    }
    super::purge_freed();
}

/// Records `f` as a collective on `comm`; the request in `req`.
///
/// # Safety
/// `req` is a writable handle.
unsafe fn defer(name: &str, comm: Handle, req: *mut Handle, f: Job) -> c_int {
    call(name, hv(comm), || {
        let id = with(|e| {
            e.comm(hv(comm))?;
            Ok(e.completed(hv(comm)))
        })?;
        pending_list().push_back(Entry {
            id,
            owner: std::thread::current().id(),
            job: Some(f),
        });
        QUEUED.fetch_add(1, Ordering::AcqRel);
        // SAFETY: the caller's contract.
        unsafe { out(req, mk(id), "request") }
    })
}

/// Starts the schedule `plan` made as the collective on `comm`; the
/// request in `req`.
///
/// # Safety
/// `req` is a writable handle.
unsafe fn schedule(
    name: &str,
    comm: Handle,
    req: *mut Handle,
    plan: impl FnOnce() -> Result<super::iplan::Plan, crate::engine::MpiErr>,
) -> c_int {
    call(name, hv(comm), || {
        let (sched, finish) = plan()?;
        let id = crate::nbc::start(hv(comm), sched, finish)?;
        // SAFETY: the caller's contract.
        unsafe { out(req, mk(id), "request") }
    })
}

macro_rules! nonblocking {
    ($(#[$doc:meta])* $name:ident / $pname:ident => $blocking:ident ($($arg:ident : $ty:ty),*) on $comm:ident
        by $plan:ident $(($($extra:expr),*))?) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// MPI's contract for the buffers and arrays until completion;
        /// `req` is writable.
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty,)* req: *mut Handle) -> c_int {
            if !crate::inter::is_inter(hv($comm)) {
                // SAFETY: the caller's contract.
                return unsafe {
                    schedule(stringify!($name), $comm, req, || {
                        super::iplan::$plan($($arg,)* $($($extra),*)?)
                    })
                };
            }
            $(let $arg = Arg($arg);)*
            #[allow(unused_unsafe)]
            let job: Job = Box::new(move || {
                // SAFETY: the arguments the caller gave, valid until the
                // request completes (MPI's contract).
                unsafe { $blocking($($arg.get()),*) }
            });
            // SAFETY: the caller's contract.
            unsafe { defer(stringify!($name), $comm.get(), req, job) }
        }
        super::pmpi!(unsafe $pname => $name($($arg: $ty,)* req: *mut Handle) -> c_int);
    };
}

nonblocking!(
    /// `MPI_Ibarrier`.
    MPI_Ibarrier / PMPI_Ibarrier => MPI_Barrier(comm: Handle) on comm by ibarrier
);
nonblocking!(
    /// `MPI_Ibcast`.
    MPI_Ibcast / PMPI_Ibcast => MPI_Bcast(buf: *mut c_void, count: c_int, dt: Handle, root: c_int, comm: Handle) on comm by ibcast
);
nonblocking!(
    /// `MPI_Ireduce`.
    MPI_Ireduce / PMPI_Ireduce => MPI_Reduce(s: *const c_void, r: *mut c_void, count: c_int, dt: Handle, op: Handle,
        root: c_int, comm: Handle) on comm by ireduce
);
nonblocking!(
    /// `MPI_Iallreduce`.
    MPI_Iallreduce / PMPI_Iallreduce => MPI_Allreduce(s: *const c_void, r: *mut c_void, count: c_int, dt: Handle, op: Handle,
        comm: Handle) on comm by iallreduce
);
nonblocking!(
    /// `MPI_Igather`.
    MPI_Igather / PMPI_Igather => MPI_Gather(s: *const c_void, sc: c_int, st: Handle, r: *mut c_void, rc: c_int,
        rt: Handle, root: c_int, comm: Handle) on comm by igather
);
nonblocking!(
    /// `MPI_Igatherv`.
    MPI_Igatherv / PMPI_Igatherv => MPI_Gatherv(s: *const c_void, sc: c_int, st: Handle, r: *mut c_void,
        rcs: *const c_int, ds: *const c_int, rt: Handle, root: c_int, comm: Handle) on comm by igatherv
);
nonblocking!(
    /// `MPI_Iscatter`.
    MPI_Iscatter / PMPI_Iscatter => MPI_Scatter(s: *const c_void, sc: c_int, st: Handle, r: *mut c_void, rc: c_int,
        rt: Handle, root: c_int, comm: Handle) on comm by iscatter
);
nonblocking!(
    /// `MPI_Iscatterv`.
    MPI_Iscatterv / PMPI_Iscatterv => MPI_Scatterv(s: *const c_void, scs: *const c_int, ds: *const c_int, st: Handle,
        r: *mut c_void, rc: c_int, rt: Handle, root: c_int, comm: Handle) on comm by iscatterv
);
nonblocking!(
    /// `MPI_Iallgather`.
    MPI_Iallgather / PMPI_Iallgather => MPI_Allgather(s: *const c_void, sc: c_int, st: Handle, r: *mut c_void, rc: c_int,
        rt: Handle, comm: Handle) on comm by iallgather
);
nonblocking!(
    /// `MPI_Iallgatherv`.
    MPI_Iallgatherv / PMPI_Iallgatherv => MPI_Allgatherv(s: *const c_void, sc: c_int, st: Handle, r: *mut c_void,
        rcs: *const c_int, ds: *const c_int, rt: Handle, comm: Handle) on comm by iallgatherv
);
nonblocking!(
    /// `MPI_Ialltoall`.
    MPI_Ialltoall / PMPI_Ialltoall => MPI_Alltoall(s: *const c_void, sc: c_int, st: Handle, r: *mut c_void, rc: c_int,
        rt: Handle, comm: Handle) on comm by ialltoall
);
nonblocking!(
    /// `MPI_Ialltoallv`.
    MPI_Ialltoallv / PMPI_Ialltoallv => MPI_Alltoallv(s: *const c_void, scs: *const c_int, sds: *const c_int, st: Handle,
        r: *mut c_void, rcs: *const c_int, rds: *const c_int, rt: Handle, comm: Handle) on comm by ialltoallv
);
nonblocking!(
    /// `MPI_Ireduce_scatter_block`.
    MPI_Ireduce_scatter_block / PMPI_Ireduce_scatter_block => MPI_Reduce_scatter_block(s: *const c_void, r: *mut c_void, rc: c_int,
        dt: Handle, op: Handle, comm: Handle) on comm by ireduce_scatter_block
);
nonblocking!(
    /// `MPI_Ireduce_scatter`.
    MPI_Ireduce_scatter / PMPI_Ireduce_scatter => MPI_Reduce_scatter(s: *const c_void, r: *mut c_void, rcs: *const c_int,
        dt: Handle, op: Handle, comm: Handle) on comm by ireduce_scatter
);
nonblocking!(
    /// `MPI_Iscan`.
    MPI_Iscan / PMPI_Iscan => MPI_Scan(s: *const c_void, r: *mut c_void, count: c_int, dt: Handle, op: Handle,
        comm: Handle) on comm by iscan(false)
);
nonblocking!(
    /// `MPI_Iexscan`.
    MPI_Iexscan / PMPI_Iexscan => MPI_Exscan(s: *const c_void, r: *mut c_void, count: c_int, dt: Handle, op: Handle,
        comm: Handle) on comm by iscan(true)
);
nonblocking!(
    /// `MPI_Ialltoallw`.
    MPI_Ialltoallw / PMPI_Ialltoallw => MPI_Alltoallw(s: *const c_void, scs: *const c_int, sds: *const c_int,
        sts: *const Handle, r: *mut c_void, rcs: *const c_int, rds: *const c_int, rts: *const Handle,
        comm: Handle) on comm by ialltoallw
);

/// Handles a job owns (their values are ids, not addresses).
struct Handles(Vec<Handle>);

// SAFETY: a handle is an id the library looks up, never dereferenced.
unsafe impl Send for Handles {}

/// `MPI_Ialltoallw` with datatype arrays the job owns: for callers whose
/// arrays are converted copies that would be gone before the collective
/// runs (the Fortran binding).
///
/// # Safety
/// As `MPI_Ialltoallw` for the buffers and the count and displacement
/// arrays; `sts` and `rts` hold one datatype per task of `comm`.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn ialltoallw_owned(
    s: *const c_void,
    scs: *const c_int,
    sds: *const c_int,
    sts: Vec<Handle>,
    r: *mut c_void,
    rcs: *const c_int,
    rds: *const c_int,
    rts: Vec<Handle>,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    if !crate::inter::is_inter(hv(comm)) {
        // The schedule reads the datatypes only now.
        // SAFETY: the caller's contract.
        return unsafe {
            schedule("MPI_Ialltoallw", comm, req, || {
                super::iplan::ialltoallw(s, scs, sds, sts.as_ptr(), r, rcs, rds, rts.as_ptr(), comm)
            })
        };
    }
    let (s, scs, sds, r, rcs, rds, c) = (
        Arg(s),
        Arg(scs),
        Arg(sds),
        Arg(r),
        Arg(rcs),
        Arg(rds),
        Arg(comm),
    );
    let (sts, rts) = (Handles(sts), Handles(rts));
    let job: Job = Box::new(move || {
        let (sts, rts) = (sts, rts);
        // SAFETY: the caller's buffers and arrays, valid until the
        // request completes (MPI's contract); the datatypes are ours.
        unsafe {
            MPI_Alltoallw(
                s.get(),
                scs.get(),
                sds.get(),
                sts.0.as_ptr(),
                r.get(),
                rcs.get(),
                rds.get(),
                rts.0.as_ptr(),
                c.get(),
            )
        }
    });
    // SAFETY: the caller's contract.
    unsafe { defer("MPI_Ialltoallw", comm, req, job) }
}
