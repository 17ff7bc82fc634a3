//! Fuzz target for what a node daemon does with any datagram that reaches
//! its port from a peer's address: `sss_idm::gossip::open` (the MBCF
//! check of `sss_mbcf::nofc::decode`, then the tag), the replay check,
//! then `sss_idm::gossip::page`.
//!
//! Any input must be taken or refused without panicking. An accepted
//! datagram must be a well-formed no-flow-control WRITE for the daemon's
//! inbox ending with a counter and the tag of everything before it but
//! the checksum; a refused one as forged must not carry that tag. A
//! counter is fresh once only. An accepted page must carry its sender's
//! name, its accessors (what the daemon, `sss status` and SS-Wait read)
//! must not panic, and it must survive another trip over the wire.
//!
//! The secret is fixed (32 bytes of 0x5a, as the seed corpus of
//! `cargo run -p sss-idm --example gen_gossip_corpus`). Each input is also
//! tried with its CRC-32C repaired (to reach the tag check) and with tag
//! and CRC-32C repaired (to reach everything behind it). An input starting
//! with `P` is instead taken as the page itself (zero-padded or cut to its
//! size) in a well-formed gossip datagram, which reaches every field of
//! the page directly.

#![no_main]

use libfuzzer_sys::fuzz_target;
use sss_idm::gossip::{
    daemon_id, decode, encode, open, page, tag, GossipKey, Refusal, Replay, INBOX, TAG_LEN,
    TRAILER_LEN,
};
use sss_idm::secret::ClusterSecret;
use sss_mbcf::idm::{NodeData, TaskState, IDM_TASKS};
use sss_mbcf::nofc;
use sss_wire::HEADER_LEN;

fn key() -> GossipKey {
    GossipKey::new(&ClusterSecret::from_bytes([0x5a; 32]))
}

fuzz_target!(|data: &[u8]| {
    let key = key();
    if let Some(page) = data.strip_prefix(b"P") {
        let mut b = page.to_vec();
        b.resize(std::mem::size_of::<NodeData>(), 0);
        let d = NodeData::from_bytes(&b).expect("a page of the right size");
        let pkt = encode(&key, d.name(), &d, 7);
        assert_eq!(
            decode(&key, &pkt),
            Some((7, d)),
            "a well-formed gossip page was refused"
        );
        check(&key, &pkt);
        return;
    }
    check(&key, data);
    if data.len() >= HEADER_LEN {
        let mut fixed = data.to_vec();
        fix_crc(&mut fixed);
        check(&key, &fixed);
        if let Some(t) = tag(&key, &fixed) {
            let n = fixed.len();
            fixed[n - TAG_LEN..].copy_from_slice(&t);
            fix_crc(&mut fixed);
            check(&key, &fixed);
        }
    }
});

fn fix_crc(b: &mut [u8]) {
    b[60..64].fill(0);
    let c = crc32c::crc32c(b);
    b[60..64].copy_from_slice(&c.to_be_bytes());
}

fn check(key: &GossipKey, data: &[u8]) {
    let got = open(key, data);
    let Ok(w) = nofc::decode(data, &INBOX) else {
        assert!(matches!(got, Err(Refusal::NotGossip(_))), "{got:?}");
        assert_eq!(decode(key, data), None, "a refused datagram gave a page");
        return;
    };
    let p = sss_wire::Packet::parse(data).expect("nofc accepted an unparsable datagram");
    assert!(p.flags.nofc && !p.flags.status_return && p.ack.is_none());
    assert_eq!((p.dst, p.key), (INBOX.dst, INBOX.key), "not for the inbox");
    assert_eq!((w.src, w.addr, w.payload), (p.src, p.addr, p.payload));
    let a = match got {
        Ok(a) => a,
        Err(Refusal::NoTrailer) => {
            assert!(w.payload.len() < TRAILER_LEN);
            return;
        }
        Err(Refusal::Forged) => {
            let t = tag(key, data).expect("room for a tag");
            assert_ne!(&data[data.len() - TAG_LEN..], &t, "a right tag refused");
            return;
        }
        Err(Refusal::NotGossip(r)) => panic!("nofc took what open refused: {r}"),
    };
    // What was accepted is what the tag covers, and the tag is the last bytes.
    let t = tag(key, data).expect("an accepted datagram has a tag");
    assert_eq!(&data[data.len() - TAG_LEN..], &t);
    let body = w.payload.len() - TRAILER_LEN;
    assert_eq!(a.write.payload, &w.payload[..body]);
    assert_eq!(a.counter.to_be_bytes(), w.payload[body..body + 8]);
    assert_eq!(
        (a.write.src, a.write.dst, a.write.key, a.write.addr),
        (w.src, w.dst, w.key, w.addr)
    );
    let mut r = Replay::new(1);
    assert_eq!(r.fresh(a.write.src, a.counter), a.counter > 0);
    assert!(!r.fresh(a.write.src, a.counter), "a counter fresh twice");
    let Some(d) = page(&a.write) else {
        assert_eq!(decode(key, data), None);
        return;
    };
    assert_eq!(decode(key, data), Some((a.counter, d)));
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
    let again = encode(key, d.name(), &d, a.counter);
    assert_eq!(
        decode(key, &again),
        Some((a.counter, d)),
        "page changed on the wire"
    );
}
