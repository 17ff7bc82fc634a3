use super::*;
use sss_wire::{Body, Flags, Frag, Packet, Status, TaskId};

const SECRET: [u8; SECRET_LEN] = [7; SECRET_LEN];
const JOB: u32 = 42;

fn salts(n: usize) -> Vec<[u8; SALT_LEN]> {
    (0..n).map(|i| [i as u8 + 1; SALT_LEN]).collect()
}

fn pair(sec: Security) -> (Seals, Seals) {
    let a = Seals::new(sec, &SECRET, JOB, 0, salts(2)).unwrap();
    let b = Seals::new(sec, &SECRET, JOB, 1, salts(2)).unwrap();
    (a, b)
}

fn datagram(fmt: Format, src: u32, dst: u32, epoch: u32, payload: &[u8]) -> Vec<u8> {
    let p = Packet {
        src: TaskId::new(JOB, src),
        dst: TaskId::new(JOB, dst),
        epoch,
        seq: 1,
        ack: None,
        op: 1,
        flags: Flags::default(),
        status: Status::Ok,
        key: 0x1234,
        addr: 0x5678,
        frag: Frag::SINGLE,
        body: Body::Write { notify: None },
        payload,
    };
    let mut v = vec![0; p.buffer_len()];
    p.emit_as(&mut v, fmt).unwrap();
    v
}

fn sealed(a: &mut Seals, epoch: u32, payload: &[u8]) -> Vec<u8> {
    let mut v = datagram(a.format(), 0, 1, epoch, payload);
    a.seal(&mut v, 0).unwrap();
    v
}

#[test]
fn none_has_no_seals() {
    assert!(Seals::new(Security::None, &SECRET, JOB, 0, salts(2)).is_none());
}

#[test]
fn sealed_datagrams_open_to_what_was_sent_in_both_modes() {
    for sec in [Security::Auth, Security::Encrypt] {
        let (mut a, mut b) = pair(sec);
        let plain = datagram(a.format(), 0, 1, 9, b"hello, world");
        let mut v = plain.clone();
        a.seal(&mut v, 0).unwrap();
        assert_eq!(v.len(), plain.len() + TAG_LEN);
        if sec == Security::Encrypt {
            assert!(!v.windows(5).any(|w| w == b"hello"), "payload hidden");
        } else {
            assert!(v.windows(5).any(|w| w == b"hello"));
        }
        let n = b.open(&mut v).unwrap();
        let p = Packet::parse_as(&v[..n], b.format()).unwrap();
        assert_eq!(p.payload, b"hello, world");
        assert_eq!(b.refused().total(), 0);
    }
}

#[test]
fn a_replay_is_refused_and_counted() {
    let (mut a, mut b) = pair(Security::Auth);
    let v = sealed(&mut a, 1, b"x");
    assert!(b.open(&mut v.clone()).is_ok());
    assert_eq!(b.open(&mut v.clone()), Err(OpenError::Replayed));
    assert_eq!(b.refused().replayed, 1);
}

#[test]
fn a_retransmission_is_a_new_transmission() {
    let (mut a, mut b) = pair(Security::Auth);
    let plain = datagram(a.format(), 0, 1, 1, b"same");
    let (mut x, mut y) = (plain.clone(), plain);
    a.seal(&mut x, 0).unwrap();
    a.seal(&mut y, 0).unwrap();
    assert_ne!(x, y, "a new counter, a new tag");
    assert!(b.open(&mut x).is_ok());
    assert!(b.open(&mut y).is_ok());
}

#[test]
fn every_flipped_bit_is_refused() {
    for sec in [Security::Auth, Security::Encrypt] {
        let (mut a, mut b) = pair(sec);
        let v = sealed(&mut a, 1, b"payload bytes");
        for bit in 0..v.len() * 8 {
            let mut w = v.clone();
            w[bit / 8] ^= 1 << (bit % 8);
            assert!(b.open(&mut w).is_err(), "{sec} bit {bit}");
        }
        assert_eq!(b.refused().total(), (v.len() * 8) as u64);
        // The genuine one still opens: refusals changed nothing.
        assert!(b.open(&mut v.clone()).is_ok());
    }
}

#[test]
fn another_job_or_secret_or_salt_does_not_verify() {
    let (_, mut b) = pair(Security::Auth);
    let mut other = Seals::new(Security::Auth, &[8; SECRET_LEN], JOB, 0, salts(2)).unwrap();
    let mut v = sealed(&mut other, 1, b"x");
    assert_eq!(b.open(&mut v), Err(OpenError::BadTag));
    let mut s = salts(2);
    s[0] = [0xee; SALT_LEN];
    let mut other = Seals::new(Security::Auth, &SECRET, JOB, 0, s).unwrap();
    let mut v = sealed(&mut other, 1, b"x");
    assert_eq!(b.open(&mut v), Err(OpenError::BadTag));
    let mut other = Seals::new(Security::Auth, &SECRET, JOB + 1, 0, salts(2)).unwrap();
    let mut v = datagram(Format::Authenticated, 0, 1, 1, b"x");
    v[8..12].copy_from_slice(&(JOB + 1).to_be_bytes());
    v[16..20].copy_from_slice(&(JOB + 1).to_be_bytes());
    other.seal(&mut v, 0).unwrap();
    assert_eq!(b.open(&mut v), Err(OpenError::NotMember));
    // An encrypted datagram is no authenticated one, and the reverse.
    let (mut e, _) = pair(Security::Encrypt);
    let mut v = sealed(&mut e, 1, b"x");
    assert_eq!(b.open(&mut v), Err(OpenError::Malformed));
    assert_eq!(b.refused().total(), 4);
}

#[test]
fn a_new_incarnation_is_taken_only_once_verified_and_old_ones_are_stale() {
    let (mut a, mut b) = pair(Security::Auth);
    assert!(b.open(&mut sealed(&mut a, 5, b"x")).is_ok());
    // A forged datagram claiming a later epoch changes nothing.
    let mut f = sealed(&mut a, 6, b"x");
    let n = f.len();
    f[n - 1] ^= 1;
    assert_eq!(b.open(&mut f), Err(OpenError::BadTag));
    assert!(b.open(&mut sealed(&mut a, 5, b"y")).is_ok());
    // The genuine restart: a new key, counters from 1 again.
    let mut a2 = Seals::new(Security::Auth, &SECRET, JOB, 0, salts(2)).unwrap();
    assert!(b.open(&mut sealed(&mut a2, 6, b"z")).is_ok());
    assert_eq!(
        b.open(&mut sealed(&mut a, 5, b"old")),
        Err(OpenError::Stale)
    );
}

#[test]
fn reordering_within_the_window_is_fine() {
    let (mut a, mut b) = pair(Security::Auth);
    let v: Vec<_> = (0..100).map(|i| sealed(&mut a, 1, &[i as u8])).collect();
    for i in (0..100).rev() {
        assert!(b.open(&mut v[i].clone()).is_ok(), "{i}");
    }
}

#[test]
fn sealing_refuses_what_is_not_ours() {
    let (mut a, _) = pair(Security::Auth);
    let mut v = datagram(Format::Checksummed, 0, 1, 1, b"x");
    assert_eq!(a.seal(&mut v, 0), Err(SealError::Malformed));
    let mut v = datagram(Format::Authenticated, 0, 7, 1, b"x");
    assert_eq!(a.seal(&mut v, 0), Err(SealError::NotMember));
    let mut v = vec![0; 10];
    assert_eq!(a.seal(&mut v, 20), Err(SealError::Malformed));
}

proptest::proptest! {
    #[test]
    fn open_never_panics(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..300)) {
        let (_, mut b) = pair(Security::Encrypt);
        let mut v = bytes;
        let _ = b.open(&mut v);
    }
}
