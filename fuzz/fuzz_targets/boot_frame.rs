//! Fuzz target for the boot rendezvous framing (`sss_boot::frame`): the
//! bytes a boot server reads from any process that connects to its port,
//! and a task reads from its server.
//!
//! The input is a byte stream, read frame by frame with the server's and
//! then the task's size bound, until the first error. Nothing may panic; a
//! frame read must be exactly what `write_frame` makes of its kind and body,
//! and every body the HELLO, ROUND and GATHERED parsers accept must be the
//! canonical encoding of what they return.

#![no_main]

use libfuzzer_sys::fuzz_target;
use sss_boot::frame::{
    gathered, hello, parse_gathered, parse_hello, parse_round, read_frame, round, write_frame,
    MAX_TO_SERVER, MAX_TO_TASK,
};

fuzz_target!(|data: &[u8]| {
    for max in [MAX_TO_SERVER, MAX_TO_TASK] {
        let mut rest = data;
        while let Ok(f) = read_frame(&mut rest, max) {
            let used = data.len() - rest.len();
            let mut again = Vec::new();
            write_frame(&mut again, f.kind, &f.body).expect("writing to a Vec");
            let start = used - again.len();
            assert_eq!(&data[start..used], &again[..], "frame does not re-encode");
            check_body(&f.body);
        }
    }
    check_body(data);
});

fn check_body(b: &[u8]) {
    if let Ok(h) = parse_hello(b) {
        assert_eq!(
            hello(h.job, h.rank, h.size, &h.tag),
            b,
            "HELLO does not re-encode"
        );
    }
    if let Ok((r, d)) = parse_round(b) {
        assert_eq!(round(r, d), b, "ROUND does not re-encode");
    }
    if let Ok((r, parts)) = parse_gathered(b) {
        let again = gathered(r, parts.iter().map(Vec::as_slice));
        assert_eq!(again, b, "GATHERED does not re-encode");
    }
}
