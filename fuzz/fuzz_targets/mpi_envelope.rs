//! Fuzz target for the MPI library's FIFO envelopes (`Env::decode`):
//! whatever another task writes into a receiver's FIFO decodes or is
//! refused without panicking, and what decodes keeps its promises (an
//! eager message's length is its data's, a NOTICE carries its 8-byte
//! count, the others nothing) and encodes back to the same message.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    mpi::fuzz_envelope(data);
});
