//! `sss_status_t`: the status every C entry point returns, and how MBCF
//! errors map onto it.
//!
//! Remote statuses mirror the MBCF wire statuses: `-(wire code)`, so
//! `SSS_ERR_BAD_KEY` is −1 because `BadKey` is 1 on the wire. Local
//! failures start at −64 so the wire can grow without renumbering them.

use sss_mbcf::Error;
use std::borrow::Cow;
use std::ffi::CStr;

/// `sss_status_t` of `include/sss.h`; the values must match the header
/// (a test compiles the header and compares).
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Status {
    /// `SSS_OK`: success.
    Ok = 0,
    /// `SSS_INPROGRESS`: the operation has not completed yet (not an error).
    InProgress = 1,
    /// `SSS_ERR_BAD_KEY`: the key does not match a segment of the target.
    BadKey = -1,
    /// `SSS_ERR_OUT_OF_BOUNDS`: the range is not inside the segment.
    OutOfBounds = -2,
    /// `SSS_ERR_NO_PERMISSION`: the segment does not allow this access.
    NoPermission = -3,
    /// `SSS_ERR_FIFO_FULL`: the queue is full; the message was not stored.
    FifoFull = -4,
    /// `SSS_ERR_NO_SUCH_HANDLER`: no signal handler at that index.
    NoSuchHandler = -5,
    /// `SSS_ERR_NODE_DOWN`: the target's node did not answer.
    NodeDown = -6,
    /// `SSS_ERR_NO_SUCH_TASK`: no task with that rank.
    NoSuchTask = -7,
    /// `SSS_ERR_MISALIGNED`: an atomic on an address not 8-byte aligned.
    Misaligned = -8,
    /// `SSS_ERR_NO_SUCH_GROUP`: the multicast group is unknown.
    NoSuchGroup = -9,
    /// `SSS_ERR_TOO_LARGE`: larger than the receiver or protocol accepts.
    TooLarge = -10,
    /// `SSS_ERR_UNSUPPORTED`: the receiver does not implement this.
    Unsupported = -11,
    /// `SSS_ERR_TIMED_OUT`: no answer or event within the deadline.
    TimedOut = -12,
    /// `SSS_ERR_INVALID_PARAM`: a bad argument (null pointer, bad flag, …).
    InvalidParam = -64,
    /// `SSS_ERR_NO_MESSAGE`: the FIFO queue is empty.
    NoMessage = -65,
    /// `SSS_ERR_NO_MEMORY`: memory or shared memory exhausted.
    NoMemory = -66,
    /// `SSS_ERR_BOOT`: joining the job failed.
    Boot = -67,
    /// `SSS_ERR_IO`: a system call failed.
    Io = -68,
    /// `SSS_ERR_SHUTDOWN`: the task is shutting down.
    Shutdown = -69,
    /// `SSS_ERR_TRUNCATED`: the caller's buffer is smaller than the message.
    Truncated = -70,
    /// `SSS_ERR_IN_HANDLER`: a collective or `sss_finalize` inside a
    /// signal handler.
    InHandler = -71,
    /// `SSS_ERR_INTERNAL`: a bug in the library, caught at the boundary.
    Internal = -72,
}

impl Status {
    /// Every status, for tests and tables.
    pub const ALL: [Status; 23] = [
        Status::Ok,
        Status::InProgress,
        Status::BadKey,
        Status::OutOfBounds,
        Status::NoPermission,
        Status::FifoFull,
        Status::NoSuchHandler,
        Status::NodeDown,
        Status::NoSuchTask,
        Status::Misaligned,
        Status::NoSuchGroup,
        Status::TooLarge,
        Status::Unsupported,
        Status::TimedOut,
        Status::InvalidParam,
        Status::NoMessage,
        Status::NoMemory,
        Status::Boot,
        Status::Io,
        Status::Shutdown,
        Status::Truncated,
        Status::InHandler,
        Status::Internal,
    ];

    /// The status with this numeric value.
    pub fn from_i32(v: i32) -> Option<Status> {
        Self::ALL.into_iter().find(|s| *s as i32 == v)
    }

    /// The status of a remote (wire) status.
    pub fn from_wire(s: sss_mbcf::Status) -> Status {
        use sss_mbcf::Status as W;
        match s {
            W::Ok => Status::Ok,
            W::BadKey => Status::BadKey,
            W::OutOfBounds => Status::OutOfBounds,
            W::NoPermission => Status::NoPermission,
            W::FifoFull => Status::FifoFull,
            W::NoSuchHandler => Status::NoSuchHandler,
            W::NodeDown => Status::NodeDown,
            W::NoSuchTask => Status::NoSuchTask,
            W::Misaligned => Status::Misaligned,
            W::NoSuchGroup => Status::NoSuchGroup,
            W::TooLarge => Status::TooLarge,
            W::Unsupported => Status::Unsupported,
            W::TimedOut => Status::TimedOut,
        }
    }

    /// The header's `SSS_…` name.
    pub fn name(self) -> &'static str {
        match self {
            Status::Ok => "SSS_OK",
            Status::InProgress => "SSS_INPROGRESS",
            Status::BadKey => "SSS_ERR_BAD_KEY",
            Status::OutOfBounds => "SSS_ERR_OUT_OF_BOUNDS",
            Status::NoPermission => "SSS_ERR_NO_PERMISSION",
            Status::FifoFull => "SSS_ERR_FIFO_FULL",
            Status::NoSuchHandler => "SSS_ERR_NO_SUCH_HANDLER",
            Status::NodeDown => "SSS_ERR_NODE_DOWN",
            Status::NoSuchTask => "SSS_ERR_NO_SUCH_TASK",
            Status::Misaligned => "SSS_ERR_MISALIGNED",
            Status::NoSuchGroup => "SSS_ERR_NO_SUCH_GROUP",
            Status::TooLarge => "SSS_ERR_TOO_LARGE",
            Status::Unsupported => "SSS_ERR_UNSUPPORTED",
            Status::TimedOut => "SSS_ERR_TIMED_OUT",
            Status::InvalidParam => "SSS_ERR_INVALID_PARAM",
            Status::NoMessage => "SSS_ERR_NO_MESSAGE",
            Status::NoMemory => "SSS_ERR_NO_MEMORY",
            Status::Boot => "SSS_ERR_BOOT",
            Status::Io => "SSS_ERR_IO",
            Status::Shutdown => "SSS_ERR_SHUTDOWN",
            Status::Truncated => "SSS_ERR_TRUNCATED",
            Status::InHandler => "SSS_ERR_IN_HANDLER",
            Status::Internal => "SSS_ERR_INTERNAL",
        }
    }

    /// A short description, NUL-terminated for `sss_status_string`.
    pub fn message(self) -> &'static CStr {
        match self {
            Status::Ok => c"success",
            Status::InProgress => c"operation in progress",
            Status::BadKey => c"bad segment key",
            Status::OutOfBounds => c"address range outside the segment",
            Status::NoPermission => c"segment does not permit this access",
            Status::FifoFull => c"FIFO queue full, message not stored",
            Status::NoSuchHandler => c"no signal handler at that index",
            Status::NodeDown => c"target node is down",
            Status::NoSuchTask => c"no such task",
            Status::Misaligned => c"atomic on a misaligned address",
            Status::NoSuchGroup => c"no such multicast group",
            Status::TooLarge => c"operation too large",
            Status::Unsupported => c"operation not supported by the target",
            Status::TimedOut => c"timed out",
            Status::InvalidParam => c"invalid parameter",
            Status::NoMessage => c"no message",
            Status::NoMemory => c"out of memory",
            Status::Boot => c"joining the job failed",
            Status::Io => c"input/output error",
            Status::Shutdown => c"task is shutting down",
            Status::Truncated => c"buffer too small for the message",
            Status::InHandler => c"collective or finalize inside a signal handler",
            Status::Internal => c"internal error",
        }
    }
}

/// A failed call: the status the C caller gets and the detail kept for
/// `sss_last_error`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// What the entry point returns.
    pub status: Status,
    /// Human-readable detail.
    pub detail: Cow<'static, str>,
}

impl Failure {
    /// A failure with a fixed detail.
    pub fn new(status: Status, detail: &'static str) -> Self {
        Self {
            status,
            detail: Cow::Borrowed(detail),
        }
    }

    /// `SSS_ERR_INVALID_PARAM` with a reason.
    pub fn invalid(detail: &'static str) -> Self {
        Self::new(Status::InvalidParam, detail)
    }
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        let status = match &e {
            Error::Remote(s) => Status::from_wire(*s),
            Error::PeerDown(_) => Status::NodeDown,
            Error::NoSuchTask(_) => Status::NoSuchTask,
            // The runtime reports protocol size limits and unknown groups
            // as bad arguments; C callers get the dedicated statuses.
            Error::Invalid(m) if m.contains("too large") => Status::TooLarge,
            Error::Invalid("unknown group") => Status::NoSuchGroup,
            Error::Invalid(_) => Status::InvalidParam,
            Error::Boot(_) => Status::Boot,
            Error::Setting(_) | Error::Config(_) => Status::InvalidParam,
            Error::Io(io) => match io.kind() {
                std::io::ErrorKind::OutOfMemory | std::io::ErrorKind::StorageFull => {
                    Status::NoMemory
                }
                _ => Status::Io,
            },
            Error::Shutdown => Status::Shutdown,
        };
        Self {
            status,
            detail: Cow::Owned(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_statuses_mirror_the_wire() {
        for code in 1..=12u8 {
            let w = sss_mbcf::Status::from_u8(code).unwrap();
            assert_eq!(Status::from_wire(w) as i32, -(code as i32), "{w:?}");
        }
    }

    #[test]
    fn values_are_unique_and_round_trip() {
        let all = &Status::ALL;
        for (i, a) in all.iter().enumerate() {
            assert_eq!(Status::from_i32(*a as i32), Some(*a));
            assert!(a.name().starts_with("SSS_"));
            assert!(!a.message().to_bytes().is_empty());
            for b in &all[i + 1..] {
                assert_ne!(*a as i32, *b as i32, "{a:?} {b:?}");
            }
        }
        assert_eq!(Status::from_i32(-1000), None);
    }

    #[test]
    fn errors_map_to_statuses() {
        let f = Failure::from(Error::Remote(sss_mbcf::Status::FifoFull));
        assert_eq!(f.status, Status::FifoFull);
        assert_eq!(Failure::from(Error::PeerDown(3)).status, Status::NodeDown);
        assert_eq!(
            Failure::from(Error::Invalid("read too large")).status,
            Status::TooLarge
        );
        assert_eq!(
            Failure::from(Error::Invalid("unknown group")).status,
            Status::NoSuchGroup
        );
        let oom = std::io::Error::from(std::io::ErrorKind::OutOfMemory);
        assert_eq!(Failure::from(Error::Io(oom)).status, Status::NoMemory);
        assert_eq!(
            Failure::from(Error::Boot("x".into())).detail,
            "bootstrap failed: x"
        );
    }
}
