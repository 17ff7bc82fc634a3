//! Errors that stop a job before or while it starts.

use std::io;
use std::path::PathBuf;

/// Why `sss run` could not start the job.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// `-n 0`.
    #[error("-n must be at least 1")]
    NoTasks,
    /// `-n` above [`crate::MAX_TASKS`].
    #[error("-n {0} is more than {max} tasks, the most an MBCF endpoint tracks peers for", max = crate::MAX_TASKS)]
    TooManyTasks(u32),
    /// `--per-host 0`.
    #[error("--per-host must be at least 1")]
    ZeroPerHost,
    /// `--timeout` not a positive number of seconds.
    #[error("--timeout {0:?}: expected a positive number of seconds")]
    BadTimeout(String),
    /// The hostfile could not be read.
    #[error("cannot read hostfile {path}: {source}")]
    HostfileRead {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// A malformed hostfile line.
    #[error("{path}:{line}: {msg}")]
    Hostfile {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        msg: String,
    },
    /// An empty entry in `--hosts`, or no host at all.
    #[error("{0}")]
    BadHosts(String),
    /// A host given twice.
    #[error("host {0} is listed twice; give it once with slots=K or use --per-host")]
    DuplicateHost(String),
    /// A non-loopback host with the local spawner.
    #[error(
        "host {0:?} is not a loopback address; the local spawner runs every task on this \
         machine (use 127.0.0.x addresses, or --spawner ssh for other machines)"
    )]
    NotLoopback(String),
    /// More tasks than the hosts can hold.
    #[error("{np} tasks do not fit in the {slots} slots of the given hosts")]
    NotEnoughSlots {
        /// Tasks asked for.
        np: u32,
        /// Slots available.
        slots: u64,
    },
    /// `SSS_SSH` could not be split into words.
    #[error("SSS_SSH={0:?} is not a valid command line")]
    BadSshCommand(String),
    /// The rendezvous server could not start.
    #[error("cannot start the boot server: {0}")]
    Boot(#[from] sss_boot::BootError),
    /// The OS random generator failed.
    #[error("cannot draw a job id from the OS random generator: {0}")]
    Random(String),
    /// Signal handlers could not be installed.
    #[error("cannot install signal handlers: {0}")]
    Signals(#[source] io::Error),
    /// A task could not be started.
    #[error("cannot start task {rank} ({program}): {source}")]
    Spawn {
        /// The task.
        rank: u32,
        /// The program.
        program: String,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// A thread or process of the launcher itself could not be started.
    #[error("{what}: {source}")]
    Io {
        /// What was being started.
        what: &'static str,
        /// Why.
        #[source]
        source: io::Error,
    },
}

impl RunError {
    /// The exit status `sss run` ends with: 2 for a bad command line, 127
    /// for a program that does not exist, 126 for one that cannot be run,
    /// as shells do, and 1 for anything else.
    pub fn exit_code(&self) -> i32 {
        match self {
            RunError::NoTasks
            | RunError::TooManyTasks(_)
            | RunError::ZeroPerHost
            | RunError::BadTimeout(_)
            | RunError::HostfileRead { .. }
            | RunError::Hostfile { .. }
            | RunError::BadHosts(_)
            | RunError::DuplicateHost(_)
            | RunError::NotLoopback(_)
            | RunError::NotEnoughSlots { .. }
            | RunError::BadSshCommand(_) => 2,
            RunError::Spawn { source, .. } => match source.kind() {
                io::ErrorKind::NotFound => 127,
                io::ErrorKind::PermissionDenied => 126,
                _ => 1,
            },
            _ => 1,
        }
    }
}
