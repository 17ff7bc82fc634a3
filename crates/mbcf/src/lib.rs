//! The MBCF runtime: tasks, segments and one-sided operations.
//!
//! A [`Task`] is one process of a job, with a logical id (job, rank). It
//! exposes [`Segment`]s — memory allocated from shared memory or registered
//! from existing memory — each with a random 64-bit key from the OS CSPRNG
//! and read/write/atomic permissions. Peers address a segment by
//! (rank, key, address): a [`RemoteAddr`]. Every operation is checked by
//! the receiver against its segment table (key, bounds, permission,
//! alignment) before memory is touched; a refused operation is answered
//! with its [`Status`], counted, and never applied.
//!
//! Incoming operations are applied by a per-task progress thread that
//! blocks in `poll` when idle; the application thread is never needed on
//! the receive side.
//!
//! # Operations and buffer reuse
//!
//! | operation | local buffer reusable | remotely visible when |
//! |---|---|---|
//! | [`Task::write`] | on return (the data is copied into the sender's retransmission copy) | the target's progress thread applied it; with `notify`, the counter bump comes after the data, and the operations applied after it load after the bump (a full fence); the returned [`Request`] (status return) or [`Task::fence`] tells the origin |
//! | [`Task::read`] | — (the data arrives in the [`Request`]) | — |
//! | [`Task::swap`], [`Task::cas`], [`Task::fetch_add`] | on return | applied atomically (a native 8-byte atomic at the target) before the reply is sent |
//! | [`Task::fifo_push`] | on return | the message is in the queue once the target applied it; `FifoFull` comes back as an error, the message is not stored |
//! | [`Task::signal`] | on return | the handler has been queued to run in the target's progress thread |
//! | [`Task::multicast`] | on return | every member applied it when the request completes |
//!
//! Ordering: reliable operations from one task to another are applied in
//! issue order, exactly once. [`Task::fence`] waits until every earlier
//! operation to one task is acknowledged, [`Task::quiet`] for all tasks.

#![warn(missing_docs)]

mod fifo;
pub mod idm;
pub mod known;
mod mem;
pub mod node;
pub mod nofc;
mod segment;
mod seqlock;
mod settings;
mod shm;
mod spin;
mod sys;
mod task;

pub use fifo::{fifo_bytes, FifoHeader, FIFO_HEADER, FIFO_MAGIC};
pub use mem::{copy_bytes, copy_raw};
pub use segment::{Perm, Segment, SegmentInfo};
pub use seqlock::Stale;
pub use settings::{parse_choice, parse_in, raw as env_value, SettingError};
pub use sss_seal::Security;
pub use sss_wire::{Notify, Status, TaskId};
pub use sys::shm_dir;
pub use task::{
    default_payload, payload_for_mtu, Bind, Bootstrap, Fifo, FifoProbe, FifoSender, Handler,
    Options, PeerMap, Reply, Request, SignalContext, Sink, SsWaitTuning, Task, TaskConfig,
    TaskStats, ThreadBoot, Transport, TransportKind, WaitPolicy, JUMBO_MTU,
};

/// An address in another task: (rank, segment key, virtual address).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RemoteAddr {
    /// The task.
    pub rank: u32,
    /// Key of the segment holding `addr`.
    pub key: u64,
    /// Virtual address in that task.
    pub addr: u64,
}

impl RemoteAddr {
    /// The address `bytes` further on.
    pub fn offset(self, bytes: u64) -> Self {
        Self {
            addr: self.addr.wrapping_add(bytes),
            ..self
        }
    }
}

/// Why an operation failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The target refused or could not apply the operation.
    #[error("remote error: {0}")]
    Remote(Status),
    /// The target task's node is down (retry budget exhausted).
    #[error("task {0} is down")]
    PeerDown(u32),
    /// No such rank in this job.
    #[error("no task {0} in this job")]
    NoSuchTask(u32),
    /// A bad argument.
    #[error("invalid argument: {0}")]
    Invalid(&'static str),
    /// Joining the job failed.
    #[error("bootstrap failed: {0}")]
    Boot(String),
    /// A system call failed.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
    /// The task is shutting down.
    #[error("task is shutting down")]
    Shutdown,
    /// A setting from the environment is out of range.
    #[error("bad setting: {0}")]
    Setting(#[from] SettingError),
    /// The protocol configuration is out of range.
    #[error("bad protocol configuration: {0}")]
    Config(sss_proto::ConfigError),
}

impl Error {
    /// The MBCF status this error stands for, if any.
    pub fn status(&self) -> Option<Status> {
        match self {
            Error::Remote(s) => Some(*s),
            Error::PeerDown(_) => Some(Status::NodeDown),
            _ => None,
        }
    }
}
