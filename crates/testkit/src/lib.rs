//! The test kit of the workspace (a dev-dependency only, never published):
//! what the multi-process tests of several crates share, so each test
//! file keeps only its scenarios.
//!
//! - [`tree`]: the repository (or its copy for an unprivileged run,
//!   [`tree::TREE_ENV`]), built binaries, and libsss built for the test.
//! - [`cc`]: C programs compiled against libsss.
//! - [`process`]: a child waited for with a deadline, its output captured.
//! - [`job`]: a job launched by re-executing the test binary as `sss run`
//!   (and as its tasks).
//! - [`node`]: node daemons and hand-made jobs (tasks started with the
//!   launcher's variables and a boot server of the test's own).
//! - [`cleanup`]: a guard that kills children and removes a job's files
//!   however the test ends, and checks that a job left nothing behind.
//!
//! Paths of binaries come from the caller (`env!("CARGO_BIN_EXE_…")` works
//! only in the crate that owns the binary), or from `target/<profile>/`
//! beside the test binary.

pub mod cc;
pub mod cleanup;
pub mod job;
pub mod node;
pub mod process;
pub mod tree;

pub use cleanup::{assert_clean, job_processes, job_shm_files, unique_job, unique_port, Cleanup};
pub use job::{
    check, field, job_args, launcher_mode, run_job, self_args, task_mode, Launcher, Outcome,
    TaskResult,
};
pub use process::{signal, wait_bounded, Finished};
pub use tree::{built, lib_dir, root, TREE_ENV};
