//! How a task finds its job: rank, size, node, and a PMI-like allgather.
//!
//! Every SSS task starts by calling [`Boot::from_env`]. It learns who it is
//! (job id, rank, size, node, rank among the tasks of its node) from the
//! environment its launcher left, and gets a rendezvous with the other tasks
//! of the job: [`Boot::allgather`] (every task contributes bytes, every task
//! gets everybody's) and [`Boot::barrier`]. The runtime uses one allgather to
//! exchange endpoint addresses; after that it talks MBCF and never comes back
//! here.
//!
//! # Launchers, in the order they are detected
//!
//! 1. **`sss run`** (ours): `SSS_RANK` is set. Every variable of the table
//!    below is read; the rendezvous is the launcher's TCP server
//!    ([`BootServer`]) named by `SSS_BOOT=tcp:HOST:PORT`.
//! 2. **PMI** (MPICH Hydra `mpiexec`, `srun --mpi=pmi2`): `PMI_RANK` and
//!    `PMI_SIZE`; `MPI_LOCALRANKID`/`MPI_LOCALNRANKS` when present.
//! 3. **Open MPI** `mpirun`: `OMPI_COMM_WORLD_RANK`, `OMPI_COMM_WORLD_SIZE`,
//!    `OMPI_COMM_WORLD_LOCAL_RANK`, `OMPI_COMM_WORLD_LOCAL_SIZE`.
//! 4. **Slurm** `srun`: `SLURM_PROCID`, `SLURM_STEP_NUM_TASKS` (else
//!    `SLURM_NTASKS`, else `SLURM_NPROCS`), `SLURM_LOCALID`, and a step id
//!    (`SLURM_STEP_ID` or `SLURM_STEPID`). A batch script has `SLURM_PROCID`
//!    but no step id: it is one process, so it is treated as a singleton
//!    rather than waiting for tasks that will never come.
//! 5. Otherwise a **singleton**: rank 0 of 1, with a random job id.
//!
//! Inner launchers come before Slurm on purpose: `mpirun` inside a Slurm
//! allocation starts its daemons with `srun`, so its tasks also carry the
//! daemons' `SLURM_PROCID` (one per node), which is not the task's rank.
//!
//! Under a foreign launcher (2–4) [`Boot::node`] is `SSS_NODE` if set, else
//! `SLURMD_NODENAME` under Slurm, else the host name; the rendezvous is a
//! shared directory (below) and [`Boot::from_env`] is collective: it runs
//! one allgather of every task's node name to compute [`Boot::node_id`] and
//! any local rank or size the launcher did not give, and to check that all
//! tasks agree on the job and its size.
//!
//! # Environment set by `sss run` for every task
//!
//! | variable | meaning |
//! |---|---|
//! | `SSS_JOB` | job id, decimal `u32`, the same in every task of the job |
//! | `SSS_RANK` | this task's rank, `0..SSS_SIZE` |
//! | `SSS_SIZE` | number of tasks in the job |
//! | `SSS_NODE` | this task's host as given to the launcher (an address such as `127.0.0.2`, or a name); tasks with equal `SSS_NODE` share a node |
//! | `SSS_NODE_ID` | index of that host in the launcher's host list, `0..` |
//! | `SSS_LOCAL_RANK` | rank among the tasks on this node, `0..SSS_LOCAL_SIZE` |
//! | `SSS_LOCAL_SIZE` | number of tasks on this node |
//! | `SSS_BOOT` | rendezvous: `tcp:HOST:PORT` (the launcher's [`BootServer`]) or `file:/dir` |
//!
//! Read by this crate under any launcher:
//!
//! | variable | meaning |
//! |---|---|
//! | `SSS_BOOT_TIMEOUT` | seconds a rendezvous may wait before failing with [`BootError::Timeout`] (default 120, fractions allowed) |
//! | `SSS_BOOT` | under a foreign launcher: `file:/dir` picks the shared directory (it must be the same for all tasks) |
//! | `SSS_BOOT_DIR` | base of the default directory, default `/tmp` (use a shared file system across nodes) |
//! | `SSS_BOOT_KEY` | overrides the job key derived from the foreign launcher |
//! | `SSS_JOB_SECRET` | under a foreign launcher: the job's secret, if the user exported one (the same in every task); otherwise rank 0 draws one (below) |
//!
//! # Job key and id under foreign launchers
//!
//! All tasks of one job must derive the same *job key*, and different
//! concurrent jobs different keys. In order: `SSS_BOOT_KEY`; the directory
//! of `SSS_BOOT=file:…`; PMI: `pmi-<PMI_PORT>` (Hydra's PMI server address,
//! unique per running `mpiexec`); Open MPI: `ompi-<OMPI_MCA_ess_base_jobid>`;
//! Slurm: `slurm-<SLURM_JOB_ID>.<SLURM_STEP_ID>`. When PMI or Open MPI give
//! no id, the fallback is `ppid-<parent pid>`: on one node every task is a
//! child of the same launcher daemon (Hydra's proxy, Open MPI's `prted`),
//! which makes the key unique for the job's lifetime, but across nodes the
//! parents differ and `SSS_BOOT_KEY` or `SSS_BOOT=file:` must be set.
//! The job id is [`job_id_from_key`]: FNV-1a (32 bit) of the key, never 0.
//! The default directory is `${SSS_BOOT_DIR:-/tmp}/sss-boot-<key>` with
//! every character outside `[A-Za-z0-9._-]` of the key replaced by `_`.
//!
//! # Shared-memory naming contract
//!
//! Every shared-memory object of job `J` is named `/dev/shm/sss-J-…` (`J` in
//! decimal, see [`shm_prefix`]). The launcher removes every such file after
//! the job's tasks have ended, however they ended, so the runtime must not
//! put anything there that is meant to outlive the job, and must not use
//! the prefix for anything else.
//!
//! # TCP wire format (`SSS_BOOT=tcp:`)
//!
//! Every message is a frame: a little-endian `u64` length `L`, then `L`
//! bytes: a kind byte and its body (integers little-endian):
//!
//! | kind | direction | body |
//! |---|---|---|
//! | 6 CHALLENGE | server → task, first | a 32-byte nonce, fresh per connection |
//! | 1 HELLO | task → server | magic `b"SSSB"`, version `u8` = 2, job `u32`, rank `u32`, size `u32`, 32-byte tag (see [`auth`]) |
//! | 2 WELCOME | server → task | empty |
//! | 3 ROUND | task → server | round `u32` (0, 1, … per task), the task's bytes |
//! | 4 GATHERED | server → task | round `u32`, count `u32`, then per rank: length `u32`, bytes |
//! | 5 ERROR | server → task | UTF-8 message; the server closes the connection |
//!
//! A task connects once, reads the CHALLENGE, sends HELLO, waits for
//! WELCOME (a server given the job's secret refuses a HELLO whose tag does
//! not prove it), then sends one
//! ROUND per [`Boot::allgather`]; the server answers GATHERED to everybody
//! once all `size` tasks sent that round. A contribution is at most
//! [`MAX_CONTRIBUTION`] bytes. If a task disconnects before a round that
//! another task entered, everybody waiting for that round gets an ERROR
//! naming it (see [`ServerReport::early_disconnects`]).
//!
//! # File rendezvous (`SSS_BOOT=file:` and foreign launchers)
//!
//! Round `r` of task `k` writes `<dir>/<r>/<k>` atomically (a temporary
//! `.tmp.<k>` then a rename) and polls until all `size` files exist, then
//! reads them and creates `<dir>/<r>/done.<k>`. The task that completes the
//! set of `done` files removes `<dir>/<r>`, and then `<dir>` if empty, so a
//! finished job leaves nothing behind. A task that finds its own round-0
//! file already present stops with [`BootError::Inconsistent`]: the
//! directory is left over from a dead job with the same key (or two tasks
//! claim one rank).
//!
//! `<dir>` must be private: a directory (not a link) owned by the task's
//! user with no group or other permission bits; it is created so, and
//! anything else, such as a directory another user made first under the
//! predictable name, is refused with [`BootError::UnsafeDir`] before
//! anything is written. Records are created with `O_EXCL` and mode 0600.
//!
//! Under a foreign launcher the first round (in [`Boot::from_env`]) carries
//! `key\nsize\noffer\nnode` from every task. Without `SSS_JOB_SECRET`,
//! rank 0's offer is a fresh secret in hex, which every task takes as
//! [`Boot::secret`]; with it, every task uses its own and rank 0 offers
//! only `=` and a fingerprint (an HMAC of a fixed message) so that tasks
//! with different or missing exports stop with [`BootError::Inconsistent`].
//! Other ranks offer nothing.
#![forbid(unsafe_code)]

pub mod auth;
mod env;
mod error;
mod file;
#[doc(hidden)]
pub mod frame;
mod server;
mod tcp;

use std::time::Duration;

pub use auth::JobSecret;
pub use error::BootError;
pub use server::{BootServer, BootServerHandle, EarlyDisconnect, ServerReport};

/// Names of the environment variables of the launcher contract.
pub mod vars {
    /// Job id, decimal `u32`.
    pub const JOB: &str = "SSS_JOB";
    /// Rank of the task.
    pub const RANK: &str = "SSS_RANK";
    /// Number of tasks.
    pub const SIZE: &str = "SSS_SIZE";
    /// Host address or name of the task's node.
    pub const NODE: &str = "SSS_NODE";
    /// Index of the task's host in the launcher's host list.
    pub const NODE_ID: &str = "SSS_NODE_ID";
    /// Rank among the tasks of the node.
    pub const LOCAL_RANK: &str = "SSS_LOCAL_RANK";
    /// Number of tasks on the node.
    pub const LOCAL_SIZE: &str = "SSS_LOCAL_SIZE";
    /// Rendezvous: `tcp:HOST:PORT` or `file:/dir`.
    pub const BOOT: &str = "SSS_BOOT";
    /// Rendezvous timeout in seconds.
    pub const BOOT_TIMEOUT: &str = "SSS_BOOT_TIMEOUT";
    /// Base directory of the default file rendezvous.
    pub const BOOT_DIR: &str = "SSS_BOOT_DIR";
    /// Explicit job key under foreign launchers.
    pub const BOOT_KEY: &str = "SSS_BOOT_KEY";
    /// The job's secret, 64 hex digits (see [`crate::auth`]).
    pub const JOB_SECRET: &str = "SSS_JOB_SECRET";
}

/// Default rendezvous timeout when `SSS_BOOT_TIMEOUT` is not set.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// Largest contribution of one task to one allgather round, in bytes.
pub const MAX_CONTRIBUTION: usize = 64 << 20;

/// The launcher that started this task, as detected by [`Boot::from_env`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Launcher {
    /// `sss run`.
    Sss,
    /// A PMI launcher such as MPICH Hydra.
    Pmi,
    /// Open MPI `mpirun`.
    OpenMpi,
    /// Slurm `srun`.
    Slurm,
    /// No launcher: a job of one task.
    Singleton,
}

/// Prefix of the names of every shared-memory object of `job` under
/// `/dev/shm` (`sss-<job>-`); see the crate docs for the contract.
pub fn shm_prefix(job: u32) -> String {
    format!("sss-{job}-")
}

/// Job id of a foreign-launcher job: 32-bit FNV-1a of `key`, 0 mapped to 1.
///
/// FNV is written out here rather than taken from `std`'s hasher because
/// every task, whatever build it runs, must compute the same value.
pub fn job_id_from_key(key: &str) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in key.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h.max(1)
}

/// A task's place in its job and its rendezvous with the other tasks.
#[derive(Debug)]
pub struct Boot {
    launcher: Launcher,
    job: u32,
    rank: u32,
    size: u32,
    node: String,
    node_id: u32,
    local_rank: u32,
    local_size: u32,
    timeout: Duration,
    rdv: Rendezvous,
    poisoned: bool,
    /// The job's secret, when the launcher gave one (keys of MBCF's
    /// authenticated datagrams are derived from it).
    secret: Option<JobSecret>,
}

/// How allgather rounds travel.
#[derive(Debug)]
enum Rendezvous {
    /// One task: nothing to exchange.
    Single,
    Tcp(tcp::TcpClient),
    File(file::FileClient),
}

impl Boot {
    /// Detects the environment: our launcher (SSS_* variables), else PMI
    /// (PMI_RANK, PMI_SIZE), else Open MPI (OMPI_COMM_WORLD_RANK,
    /// OMPI_COMM_WORLD_SIZE, OMPI_COMM_WORLD_LOCAL_RANK), else Slurm
    /// (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, SLURM_JOB_ID/SLURM_STEP_ID);
    /// else a singleton job (rank 0 of 1). See the crate docs for why inner
    /// launchers are tried before Slurm.
    ///
    /// With our launcher this connects to its server; under a foreign one it
    /// is collective (one allgather of node names).
    pub fn from_env() -> Result<Boot, BootError> {
        env::detect(&|name: &str| std::env::var_os(name).map(|v| v.to_string_lossy().into_owned()))
    }

    /// Like [`Boot::from_env`], but reads the variables from `vars` instead
    /// of the process environment (for tests and embedders that run several
    /// tasks in one process).
    pub fn from_vars<I, K, V>(vars: I) -> Result<Boot, BootError>
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        let map: std::collections::HashMap<String, String> = vars
            .into_iter()
            .map(|(k, v)| (k.into(), v.into()))
            .collect();
        env::detect(&|name: &str| map.get(name).cloned())
    }

    /// The job's secret: from `SSS_JOB_SECRET` under `sss run`, drawn by
    /// rank 0 and shared in the first allgather under foreign launchers;
    /// `None` for a task alone.
    pub fn secret(&self) -> Option<&JobSecret> {
        self.secret.as_ref()
    }

    /// Job id, the same in every task of the job.
    pub fn job(&self) -> u32 {
        self.job
    }

    /// This task's rank, `0..size()`.
    pub fn rank(&self) -> u32 {
        self.rank
    }

    /// Number of tasks in the job.
    pub fn size(&self) -> u32 {
        self.size
    }

    /// This task's host address or name: `SSS_NODE` from our launcher (e.g.
    /// "127.0.0.2"); under other launchers the host name. Tasks with equal
    /// `node()` are on the same node.
    pub fn node(&self) -> &str {
        &self.node
    }

    /// Index of this task's node: `SSS_NODE_ID` from our launcher, else the
    /// order in which node names first appear by rank. Equal for tasks with
    /// equal [`Boot::node`].
    pub fn node_id(&self) -> u32 {
        self.node_id
    }

    /// Rank among the tasks of this node, `0..local_size()`.
    pub fn local_rank(&self) -> u32 {
        self.local_rank
    }

    /// Number of tasks on this node.
    pub fn local_size(&self) -> u32 {
        self.local_size
    }

    /// The launcher that was detected.
    pub fn launcher(&self) -> Launcher {
        self.launcher
    }

    /// How long a rendezvous may wait before failing.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Prefix of this job's shared-memory object names, see [`shm_prefix`].
    pub fn shm_prefix(&self) -> String {
        shm_prefix(self.job)
    }

    /// Collective: every task calls it with its bytes (at most
    /// [`MAX_CONTRIBUTION`]); returns every task's bytes indexed by rank.
    /// Also a barrier: no task returns before all have called it.
    ///
    /// Fails with [`BootError::Timeout`] after [`Boot::timeout`] without an
    /// answer, and at once when the launcher's server goes away. The
    /// timeout also bounds the wait for the slowest task, so this is meant
    /// for start-up and shutdown exchanges, not as a barrier after long,
    /// unbalanced computation. After a failure the rendezvous is unusable
    /// and every later call fails.
    pub fn allgather(&mut self, data: &[u8]) -> Result<Vec<Vec<u8>>, BootError> {
        if self.poisoned {
            return Err(BootError::Poisoned);
        }
        if data.len() > MAX_CONTRIBUTION {
            return Err(BootError::TooLarge {
                len: data.len(),
                max: MAX_CONTRIBUTION,
            });
        }
        let out = match &mut self.rdv {
            Rendezvous::Single => Ok(vec![data.to_vec()]),
            Rendezvous::Tcp(c) => c.allgather(data),
            Rendezvous::File(f) => f.allgather(data),
        };
        if out.is_err() {
            self.poisoned = true;
        }
        out
    }

    /// Collective: returns once every task of the job has called it.
    pub fn barrier(&mut self) -> Result<(), BootError> {
        self.allgather(&[]).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_is_stable_and_nonzero() {
        // Reference values of 32-bit FNV-1a.
        assert_eq!(job_id_from_key(""), 0x811c_9dc5);
        assert_eq!(job_id_from_key("a"), 0xe40c_292c);
        assert_eq!(job_id_from_key("foobar"), 0xbf9c_f968);
    }

    #[test]
    fn shm_prefix_ends_with_dash() {
        // The dash keeps job 12 from matching job 123's files.
        assert_eq!(shm_prefix(12), "sss-12-");
    }

    #[test]
    fn singleton_without_launcher() {
        let b = Boot::from_vars(Vec::<(String, String)>::new()).unwrap();
        assert_eq!((b.rank(), b.size()), (0, 1));
        assert_eq!(b.launcher(), Launcher::Singleton);
        assert_ne!(b.job(), 0);
        assert_eq!((b.local_rank(), b.local_size(), b.node_id()), (0, 1, 0));
        let mut b = b;
        assert_eq!(b.allgather(b"x").unwrap(), vec![b"x".to_vec()]);
        b.barrier().unwrap();
    }
}
