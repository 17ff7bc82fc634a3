//! Constant values of the MPI standard ABI that the library itself
//! needs (the header has the full set): predefined handles, sentinels
//! and error classes.

/// Predefined handle values.
pub(crate) mod h {
    pub const COMM_NULL: usize = 0x100;
    pub const COMM_WORLD: usize = 0x101;
    pub const COMM_SELF: usize = 0x102;
    pub const ERRHANDLER_NULL: usize = 0x140;
    pub const ERRORS_ARE_FATAL: usize = 0x141;
    pub const ERRORS_ABORT: usize = 0x142;
    pub const ERRORS_RETURN: usize = 0x143;
    pub const REQUEST_NULL: usize = 0x180;
    pub const WIN_NULL: usize = 0x110;
    /// Handles this library creates start here, far above every
    /// predefined value.
    pub const FIRST_USER: usize = 0x10000;
}

/// Rank and tag sentinels.
pub(crate) const ANY_SOURCE: i32 = -1;
pub(crate) const ANY_TAG: i32 = -2;
pub(crate) const PROC_NULL: i32 = -3;
pub(crate) const UNDEFINED: i32 = -32766;

/// `MPI_IN_PLACE` as an address.
pub(crate) const IN_PLACE: usize = 1;

/// Thread levels.
pub(crate) const THREAD_SERIALIZED: i32 = 2048;
pub(crate) const THREAD_MULTIPLE: i32 = 4096;

/// Error classes.
pub(crate) mod err {
    pub const SUCCESS: i32 = 0;
    pub const BUFFER: i32 = 1;
    pub const COUNT: i32 = 2;
    pub const TYPE: i32 = 3;
    pub const TAG: i32 = 4;
    pub const COMM: i32 = 5;
    pub const RANK: i32 = 6;
    pub const REQUEST: i32 = 7;
    pub const ROOT: i32 = 8;
    pub const GROUP: i32 = 9;
    pub const OP: i32 = 10;
    pub const ARG: i32 = 13;
    pub const TRUNCATE: i32 = 15;
    pub const OTHER: i32 = 16;
    pub const INTERN: i32 = 17;
    pub const IN_STATUS: i32 = 19;
    pub const LOCKTYPE: i32 = 37;
    pub const NO_MEM: i32 = 39;
    pub const DISP: i32 = 26;
    pub const TOPOLOGY: i32 = 11;
    pub const DIMS: i32 = 12;
    pub const BASE: i32 = 24;
    pub const SIZE: i32 = 52;
    pub const RMA_RANGE: i32 = 48;
    pub const RMA_SYNC: i32 = 50;
    pub const WIN: i32 = 56;
    pub const PROC_ABORTED: i32 = 58;
    pub const ERRHANDLER: i32 = 61;
    pub const INFO_KEY: i32 = 31;
    pub const INFO_NOKEY: i32 = 32;
    pub const INFO_VALUE: i32 = 33;
    pub const INFO: i32 = 34;
    pub const KEYVAL: i32 = 36;
    pub const SESSION: i32 = 60;
    pub const LASTCODE: i32 = 0x3fff;
}

/// The text `MPI_Error_string` gives for an error class.
pub(crate) fn error_string(code: i32) -> Option<&'static str> {
    Some(match code {
        0 => "MPI_SUCCESS: no error",
        1 => "MPI_ERR_BUFFER: invalid buffer pointer",
        2 => "MPI_ERR_COUNT: invalid count argument",
        3 => "MPI_ERR_TYPE: invalid datatype",
        4 => "MPI_ERR_TAG: invalid tag",
        5 => "MPI_ERR_COMM: invalid communicator",
        6 => "MPI_ERR_RANK: invalid rank",
        7 => "MPI_ERR_REQUEST: invalid request",
        8 => "MPI_ERR_ROOT: invalid root",
        9 => "MPI_ERR_GROUP: invalid group",
        10 => "MPI_ERR_OP: invalid reduction operation",
        11 => "MPI_ERR_TOPOLOGY: invalid topology",
        12 => "MPI_ERR_DIMS: invalid dimension argument",
        13 => "MPI_ERR_ARG: invalid argument",
        14 => "MPI_ERR_UNKNOWN: unknown error",
        15 => "MPI_ERR_TRUNCATE: message truncated",
        16 => "MPI_ERR_OTHER: known error not in this list",
        17 => "MPI_ERR_INTERN: internal error",
        18 => "MPI_ERR_PENDING: pending request",
        19 => "MPI_ERR_IN_STATUS: error code is in status",
        22 => "MPI_ERR_ASSERT: invalid assertion",
        24 => "MPI_ERR_BASE: invalid base address",
        26 => "MPI_ERR_DISP: invalid displacement",
        31 => "MPI_ERR_INFO_KEY: invalid info key",
        32 => "MPI_ERR_INFO_NOKEY: no such info key",
        33 => "MPI_ERR_INFO_VALUE: invalid info value",
        34 => "MPI_ERR_INFO: invalid info object",
        36 => "MPI_ERR_KEYVAL: invalid attribute key",
        38 => "MPI_ERR_NAME: invalid name",
        60 => "MPI_ERR_SESSION: invalid session",
        37 => "MPI_ERR_LOCKTYPE: invalid lock type",
        39 => "MPI_ERR_NO_MEM: out of memory",
        46 => "MPI_ERR_RMA_ATTACH: memory cannot be attached",
        47 => "MPI_ERR_RMA_CONFLICT: conflicting accesses to a window",
        48 => "MPI_ERR_RMA_RANGE: target memory outside the window",
        49 => "MPI_ERR_RMA_SHARED: memory cannot be shared",
        50 => "MPI_ERR_RMA_SYNC: wrong synchronization of one-sided operations",
        52 => "MPI_ERR_SIZE: invalid size",
        56 => "MPI_ERR_WIN: invalid window",
        57 => "MPI_ERR_RMA_FLAVOR: wrong window flavor",
        55 => "MPI_ERR_UNSUPPORTED_OPERATION: operation not supported",
        58 => "MPI_ERR_PROC_ABORTED: a peer process failed",
        61 => "MPI_ERR_ERRHANDLER: invalid error handler",
        c if (20..=61).contains(&c) => "MPI error class (see the MPI standard)",
        _ => return None,
    })
}
