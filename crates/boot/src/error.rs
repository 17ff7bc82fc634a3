//! Errors of the bootstrap.

use std::io;

/// Why the bootstrap or a rendezvous failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BootError {
    /// A launcher variable is set but its value is unusable.
    #[error("environment variable {var}={value:?}: {reason}")]
    BadEnv {
        /// The variable.
        var: &'static str,
        /// Its value.
        value: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A variable the detected launcher must set is missing.
    #[error("environment variable {var} is not set, but {context}")]
    MissingEnv {
        /// The missing variable.
        var: &'static str,
        /// Why it is needed.
        context: &'static str,
    },
    /// An operating-system call failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// The rendezvous did not complete in time.
    #[error(
        "boot rendezvous timed out after {secs:.1} s {what} (SSS_BOOT_TIMEOUT sets the limit)"
    )]
    Timeout {
        /// What was being waited for.
        what: String,
        /// The limit, in seconds.
        secs: f64,
    },
    /// The launcher's server closed the connection: it has ended the job
    /// or died.
    #[error("the boot server at {addr} went away {what}; the launcher has ended the job or died")]
    ServerGone {
        /// The server's address.
        addr: String,
        /// What was being done.
        what: String,
    },
    /// The server refused the task or failed the round, with its reason.
    #[error("boot server: {0}")]
    Refused(String),
    /// The peer broke the wire format.
    #[error("boot protocol error: {0}")]
    Protocol(String),
    /// Tasks disagree about the job, or the rendezvous directory is stale.
    #[error("inconsistent job: {0}")]
    Inconsistent(String),
    /// A contribution larger than [`crate::MAX_CONTRIBUTION`].
    #[error("allgather contribution of {len} bytes exceeds the limit of {max} bytes")]
    TooLarge {
        /// Bytes offered.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The rendezvous directory could be read or changed by another user.
    #[error(
        "the rendezvous directory {path} is not private: {problem}; remove it, or set \
         SSS_BOOT_DIR (or SSS_BOOT=file:) to a directory only you can reach"
    )]
    UnsafeDir {
        /// The directory.
        path: String,
        /// What is wrong: a link, another owner, group or other access.
        problem: String,
    },
    /// An earlier rendezvous failed, which leaves the tasks out of step.
    #[error("an earlier boot rendezvous failed; the job cannot continue")]
    Poisoned,
}

impl BootError {
    pub(crate) fn io(what: impl Into<String>, source: io::Error) -> Self {
        BootError::Io {
            what: what.into(),
            source,
        }
    }
}
