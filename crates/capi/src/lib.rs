//! `libsss`: the C ABI of the SSS runtime, declared in `include/sss.h`.
//!
//! This crate builds `libsss.so` and `libsss.a` for C and C++ programs,
//! with `sss.pc` (from `sss.pc.in`) for pkg-config. The header is the
//! reference for C callers: every function, when buffers may be reused,
//! what makes data visible remotely, and thread safety.
//!
//! The entry points are thin: they check pointers, catch panics and
//! convert statuses, then call the MBCF Rust API. Rust programs use that
//! API directly — re-exported here as [`mbcf`] — rather than the C
//! functions.
//!
//! Layout of the crate:
//! - `status` — `sss_status_t` ([`Status`]) and the mapping of MBCF errors;
//! - `types` — the `#[repr(C)]` structs of the header;
//! - `handle` — the objects behind the opaque handles, in safe Rust;
//! - `ffi` — the `extern "C"` functions, one submodule per object family
//!   (`ffi::dsm` is `sss_dsm_*`, the shared heap over `sss-dsm`).
//!
//! `ffi` holds the only unsafe code.

pub use sss_mbcf as mbcf;

mod ffi;
mod handle;
pub mod status;
pub mod types;

pub use status::{Failure, Status};
