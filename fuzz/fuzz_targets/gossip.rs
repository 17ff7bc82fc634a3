//! Fuzz target for what a node daemon does with any datagram that reaches
//! its port: `sss_mbcf::nofc::decode` (the MBCF check every no-flow-control
//! WRITE outside a job goes through), then `sss_idm::gossip::page`.
//!
//! Any input must decode or be refused without panicking. An accepted
//! WRITE must be a well-formed no-flow-control WRITE for the daemon's
//! inbox; an accepted page must carry its sender's name, its accessors
//! (what the daemon, `sss status` and SS-Wait read) must not panic, and it
//! must survive another trip over the wire unchanged.
//!
//! As in `parse`, each input is also tried with its CRC-32C repaired, so
//! mutations get past the checksum to the gossip checks behind it. An input
//! starting with `P` is instead taken as the page itself (zero-padded or
//! cut to its size) in a well-formed gossip datagram, which reaches every
//! field of the page directly.

#![no_main]

use libfuzzer_sys::fuzz_target;
use sss_idm::gossip::{daemon_id, decode, encode, page, INBOX};
use sss_mbcf::idm::{NodeData, TaskState, IDM_TASKS};
use sss_mbcf::nofc;
use sss_wire::HEADER_LEN;

fuzz_target!(|data: &[u8]| {
    if let Some(page) = data.strip_prefix(b"P") {
        let mut b = page.to_vec();
        b.resize(std::mem::size_of::<NodeData>(), 0);
        let d = NodeData::from_bytes(&b).expect("a page of the right size");
        let pkt = encode(d.name(), &d);
        assert_eq!(decode(&pkt), Some(d), "a well-formed gossip page was refused");
        check(&pkt);
        return;
    }
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
    let Ok(w) = nofc::decode(data, &INBOX) else {
        assert_eq!(decode(data), None, "a refused datagram gave a page");
        return;
    };
    let p = sss_wire::Packet::parse(data).expect("decode accepted an unparsable datagram");
    assert!(p.flags.nofc && !p.flags.status_return && p.ack.is_none());
    assert_eq!((p.dst, p.key), (INBOX.dst, INBOX.key), "not for the inbox");
    assert_eq!((w.src, w.addr, w.payload), (p.src, p.addr, p.payload));
    // What an accepted WRITE carries goes back on the wire unchanged.
    assert_eq!(nofc::decode(&nofc::encode(&w).expect("re-encode"), &INBOX), Ok(w));
    let Some(d) = page(&w) else {
        assert_eq!(decode(data), None);
        return;
    };
    assert_eq!(decode(data), Some(d));
    assert_eq!(p.src, daemon_id(d.name()), "page not from its own node");
    let _ = (d.is_up(), d.oversubscribed());
    let listed = &d.tasks[..(d.ntasks as usize).min(IDM_TASKS)];
    for t in listed {
        let found = d.task(t.job, t.rank).expect("a listed task must be found");
        assert_eq!((found.job, found.rank), (t.job, t.rank));
        let _ = TaskState::from_u32(t.state);
    }
    for t in &d.tasks[listed.len()..] {
        // Entries past `ntasks` are not on the page.
        if !listed.iter().any(|l| (l.job, l.rank) == (t.job, t.rank)) {
            assert!(d.task(t.job, t.rank).is_none(), "unlisted task found");
        }
    }
    assert_eq!(decode(&encode(d.name(), &d)), Some(d), "page changed on the wire");
}
