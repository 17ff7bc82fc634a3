//! Fuzz target for `Packet::parse` and `datagram_len`.
//!
//! Any input must parse or fail without panicking. An accepted input must be
//! the canonical encoding of its packet: emitting it gives the same bytes,
//! and parsing those gives the same packet.
//!
//! Random mutations almost never carry a correct CRC-32C, so on their own
//! they would stop at the checksum check. Each input is therefore parsed
//! twice: as is, and with its checksum field repaired, so the field checks
//! behind the checksum get explored too.

#![no_main]

use libfuzzer_sys::fuzz_target;
use sss_wire::{datagram_len, encode_sack, Body, EmitError, Packet, HEADER_LEN};

fuzz_target!(|data: &[u8]| {
    check(data);
    if data.len() >= HEADER_LEN {
        let mut fixed = data.to_vec();
        fixed[60..64].fill(0);
        let c = crc32c::crc32c(&fixed);
        fixed[60..64].copy_from_slice(&c.to_be_bytes());
        check(&fixed);
    }
});

fn check(data: &[u8]) {
    let declared = datagram_len(data);
    let Ok(p) = Packet::parse(data) else {
        return;
    };
    assert_eq!(declared, Some(data.len()), "a packet declares its length");
    assert_eq!(
        p.buffer_len(),
        data.len(),
        "buffer_len disagrees with input"
    );
    let out = p.to_vec().expect("a parsed packet must emit");
    assert_eq!(out, data, "accepted input is not the canonical encoding");
    let q = Packet::parse(&out).expect("re-emitted packet must parse");
    assert_eq!(p, q, "parse(emit(parse(x))) != parse(x)");

    // emit writes only the front of a larger buffer and refuses a short one.
    let mut big = vec![0xa5; data.len() + 7];
    assert_eq!(p.emit(&mut big), Ok(data.len()));
    assert_eq!(&big[..data.len()], data);
    assert!(big[data.len()..].iter().all(|&b| b == 0xa5));
    let mut short = vec![0; data.len() - 1];
    assert_eq!(p.emit(&mut short), Err(EmitError::BufferTooSmall));

    let blocks: Vec<(u32, u32)> = p.sack_blocks().collect();
    if p.body == Body::Ack {
        let mut again = Vec::new();
        encode_sack(&blocks, &mut again);
        assert_eq!(
            again, p.payload,
            "sack blocks do not re-encode to the payload"
        );
    } else {
        assert!(blocks.is_empty(), "sack blocks on a non-ACK packet");
    }
}
