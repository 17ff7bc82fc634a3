//! Fuzz target for the receive path of a sealed job: `sss_seal::Seals::open`
//! on any datagram, then `Packet::parse_as` on what it accepts.
//!
//! Any input must be refused or opened without panicking, and every
//! refusal counted. The first byte picks the mode (auth or encrypt) and
//! whether the input is taken as is or first sealed genuinely by the peer
//! (with the rest of the input as the datagram), so the fuzzer reaches the
//! checks behind the tag: a genuine datagram opens to exactly what was
//! sealed, once (its replay is refused), and any single flipped byte of it
//! is refused.

#![no_main]

use libfuzzer_sys::fuzz_target;
use sss_seal::{Seals, Security, TAG_LEN};
use sss_wire::{Packet, HEADER_LEN};

const JOB: u32 = 7;

fn seals(sec: Security, rank: u32) -> Seals {
    Seals::new(sec, &[3; 32], JOB, rank, vec![[1; 16], [2; 16], [3; 16]]).expect("sealed mode")
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let sec = if mode & 1 == 0 {
        Security::Auth
    } else {
        Security::Encrypt
    };
    let mut rx = seals(sec, 1);
    if mode & 2 == 0 {
        let mut b = rest.to_vec();
        let before = rx.refused().total();
        match rx.open(&mut b) {
            Ok(n) => {
                assert!(n + TAG_LEN == rest.len());
                let _ = Packet::parse_as(&b[..n], rx.format());
            }
            Err(_) => assert_eq!(rx.refused().total(), before + 1),
        }
        return;
    }
    // A genuine datagram from rank 0: the header fields that name the job
    // and the ranks are forced, the rest comes from the input.
    if rest.len() < HEADER_LEN {
        return;
    }
    let mut b = rest.to_vec();
    b[2] = sec.format() as u8;
    b[8..12].copy_from_slice(&JOB.to_be_bytes());
    b[12..16].copy_from_slice(&0u32.to_be_bytes());
    b[16..20].copy_from_slice(&JOB.to_be_bytes());
    b[20..24].copy_from_slice(&1u32.to_be_bytes());
    let plain = b.clone();
    let mut tx = seals(sec, 0);
    tx.seal(&mut b, 0).expect("seal");
    let sealed = b.clone();
    for i in [0usize, 25, 61, sealed.len() / 2, sealed.len() - 1] {
        let mut x = sealed.clone();
        x[i] ^= 0x01;
        assert!(rx.open(&mut x).is_err(), "flipped byte {i} accepted");
    }
    let n = rx.open(&mut b).expect("genuine datagram refused");
    assert_eq!(n, plain.len());
    // The counter field is the sealer's, the rest is what was sealed.
    assert_eq!(&b[..60], &plain[..60]);
    assert_eq!(&b[64..n], &plain[64..]);
    let mut again = sealed;
    assert!(rx.open(&mut again).is_err(), "replay accepted");
});
