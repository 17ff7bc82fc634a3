//! `libmpi`: an MPI library over MBCF, declared in `include/mpi.h`.
//!
//! The header follows the MPI 5.0 standard ABI: handles are pointers to
//! incomplete structs, predefined handles are the ABI's small constants,
//! `MPI_Status` is `{MPI_SOURCE, MPI_TAG, MPI_ERROR, 5 internal ints}`;
//! a program built against another standard-ABI `mpi.h` links against
//! this library for the functions it implements.
//!
//! Layout of the crate:
//! - `consts` — handle values, sentinels, error classes and strings;
//! - `types` — predefined datatypes and reduction operations;
//! - `dtype` — every datatype flattened to byte blocks (pack/unpack);
//! - `handles` — datatypes, operations and groups the program creates;
//! - `envelope` — the header of every message in a receiver's FIFO;
//! - `objects` — communicators, statuses, receive destinations, errors;
//! - `engine` — requests, matching, eager and rendezvous
//!   protocols over MBCF FIFO, READ and WRITE (safe Rust);
//! - `staging` — the memory rendezvous sends are READ from;
//! - `runtime` — the process-wide state and waiting (SS-Wait);
//! - `stats` — what `SSS_STATS` prints at finalize;
//! - `coll` — collectives and communicator constructors; `nbc` —
//!   nonblocking collectives as schedules the progress engine advances;
//! - `topo` — Cartesian topologies; `graph` — graph and distributed
//!   graph topologies, neighbourhood collectives;
//! - `attr` — keyvals, attributes and object names; `info` — `MPI_Info`;
//! - `inter` — intercommunicators and their collectives,
//!   `Comm_split_type`;
//! - `win` — one-sided communication over MBCF WRITE, READ and atomics;
//! - `buf` and `ffi` — user buffers and the `extern "C"` functions, the
//!   only unsafe code.

mod attr;
mod buf;
mod coll;
mod consts;
mod dtype;
mod engine;
mod envelope;
mod errh;
mod ffi;
mod graph;
mod handles;
mod idmap;
mod info;
mod inter;
mod nbc;
mod objects;
mod rma_blocks;
mod runtime;
mod staging;
mod stats;
mod topo;
mod types;
mod win;
mod win_dyn;
mod win_shared;

/// Decodes `msg` as a message of a task's FIFO (what another task wrote:
/// never trusted) and checks what a decoded one promises, for the fuzz
/// target `fuzz/fuzz_targets/mpi_envelope.rs`; panics only if the decoder
/// broke a promise. True when it decoded.
#[doc(hidden)]
pub fn fuzz_envelope(msg: &[u8]) -> bool {
    use envelope::{Env, Kind};
    let Some((env, data)) = Env::decode(msg) else {
        return false;
    };
    match env.kind {
        Kind::Eager => assert_eq!(env.len, data.len() as u64),
        Kind::Notice => assert_eq!(data.len(), 8),
        _ => assert!(data.is_empty()),
    }
    // Encoding what was decoded gives a message that decodes the same
    // (the short envelope drops what an eager message without flags does
    // not need).
    let again = env.encode(data);
    let (env2, data2) = Env::decode(&again).expect("an encoded envelope decodes");
    assert_eq!(
        (env2.kind, env2.flags, env2.ctx, env2.tag, env2.len),
        (env.kind, env.flags, env.ctx, env.tag, env.len)
    );
    assert_eq!(data2, data);
    true
}
