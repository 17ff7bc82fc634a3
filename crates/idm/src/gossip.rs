//! What is IDM's own in gossip: a node page carried as the payload of a
//! no-flow-control MBCF WRITE ([`sss_mbcf::nofc`], which builds and checks
//! the packet) from one daemon to another. Job 0 is the system's; a
//! daemon's rank is the FNV-1a hash of its node name, and rank 0 stands
//! for whichever daemon receives the datagram (a daemon knows its peers
//! by address only). Pages are disclosed information by design (the key
//! of the WRITE is a public constant), but who sends them is not: every
//! datagram is authenticated.
//!
//! The payload is `page ‖ counter ‖ tag`. `counter` (8 bytes, big endian)
//! rises with every datagram a daemon sends, from its start time in
//! nanoseconds since the epoch, so a restarted daemon continues above
//! what it sent before. `tag` (32 bytes) is HMAC-SHA256, under a key
//! derived from the cluster secret ([`GossipKey`]), of the whole datagram
//! but the tag itself and the CRC-32C field (which covers the tag). A
//! receiver refuses a datagram whose tag is wrong (forged, modified, or of
//! another cluster) and one whose counter is not above the highest it
//! accepted from that daemon ([`Replay`]: a replay).

use crate::secret::ClusterSecret;
use ring::{hkdf, hmac};
use sss_mbcf::idm::NodeData;
use sss_mbcf::nofc::{self, Inbox, Write};
use sss_mbcf::TaskId;
use sss_wire::HEADER_LEN;
use std::collections::BTreeMap;

/// Key of gossip writes.
pub const GOSSIP_KEY: u64 = 0x5353_4944_474f_5353;

/// What a daemon accepts: gossip writes to any daemon.
pub const INBOX: Inbox = Inbox {
    dst: TaskId::new(0, 0),
    key: GOSSIP_KEY,
};

/// Bytes of the tag.
pub const TAG_LEN: usize = 32;

/// Bytes after the page: counter and tag.
pub const TRAILER_LEN: usize = 8 + TAG_LEN;

/// Where the header keeps its CRC-32C, left out of the tag.
const CRC: std::ops::Range<usize> = 60..64;

/// The key of gossip tags, derived from the cluster secret (HKDF-SHA256),
/// so the secret itself tags nothing.
#[derive(Clone)]
pub struct GossipKey(hmac::Key);

impl std::fmt::Debug for GossipKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("GossipKey(…)")
    }
}

impl GossipKey {
    /// The gossip key of a cluster.
    pub fn new(secret: &ClusterSecret) -> Self {
        let prk = hkdf::Salt::new(hkdf::HKDF_SHA256, b"sss-cluster").extract(secret.bytes());
        let okm = prk
            .expand(&[b"sss-gossip-hmac-v1"], hmac::HMAC_SHA256)
            .expect("32 bytes are within HKDF-SHA256's output limit");
        Self(hmac::Key::from(okm))
    }
}

/// The daemon id of a node.
pub fn daemon_id(node: &str) -> TaskId {
    TaskId::new(0, sss_boot::job_id_from_key(node))
}

/// The part of `datagram` the tag covers, as the tag's context after it:
/// everything but the checksum and the tag. `None` if it is too short to
/// carry a tag.
fn tag_context(key: &GossipKey, datagram: &[u8]) -> Option<hmac::Context> {
    let end = datagram.len().checked_sub(TAG_LEN)?;
    if end < HEADER_LEN {
        return None;
    }
    let mut c = hmac::Context::with_key(&key.0);
    c.update(&datagram[..CRC.start]);
    c.update(&datagram[CRC.end..end]);
    Some(c)
}

/// The tag `datagram` should end with; `None` if it is too short to carry
/// one. (The fuzz target uses it to get mutated datagrams past the tag.)
pub fn tag(key: &GossipKey, datagram: &[u8]) -> Option<[u8; TAG_LEN]> {
    let mut t = [0u8; TAG_LEN];
    t.copy_from_slice(tag_context(key, datagram)?.sign().as_ref());
    Some(t)
}

/// A gossip datagram carrying `page`, the `counter`-th of its sender.
pub fn encode(key: &GossipKey, node: &str, page: &NodeData, counter: u64) -> Vec<u8> {
    let mut payload = page.to_bytes();
    payload.extend_from_slice(&counter.to_be_bytes());
    payload.extend_from_slice(&[0; TAG_LEN]);
    let src = daemon_id(node);
    let w = |payload: &[u8]| {
        nofc::encode(&Write {
            src,
            dst: INBOX.dst,
            key: INBOX.key,
            addr: 0,
            payload,
        })
    };
    let Ok(unsigned) = w(&payload) else {
        return Vec::new();
    };
    let Some(t) = tag(key, &unsigned) else {
        return Vec::new();
    };
    let n = payload.len();
    payload[n - TAG_LEN..].copy_from_slice(&t);
    // Encoded again rather than patched, so the checksum is the wire's.
    w(&payload).unwrap_or_default()
}

/// Why a gossip datagram was refused before its page was looked at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// Not a no-flow-control WRITE for a daemon.
    #[error(transparent)]
    NotGossip(#[from] nofc::Refusal),
    /// Too short for a page's counter and tag.
    #[error("no counter and tag")]
    NoTrailer,
    /// The tag is wrong: forged, modified, or of another cluster.
    #[error("bad tag")]
    Forged,
}

/// An authenticated gossip WRITE: `write.payload` is what was tagged
/// before the counter, `counter` the sender's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Authentic<'a> {
    /// The WRITE, its payload without counter and tag.
    pub write: Write<'a>,
    /// The sender's counter.
    pub counter: u64,
}

/// Checks `datagram` is a gossip WRITE tagged under `key`. Checks the
/// tag of every well-formed one in constant time, whatever it carries.
pub fn open<'a>(key: &GossipKey, datagram: &'a [u8]) -> Result<Authentic<'a>, Refusal> {
    let mut w = nofc::decode(datagram, &INBOX)?;
    let body = w
        .payload
        .len()
        .checked_sub(TRAILER_LEN)
        .ok_or(Refusal::NoTrailer)?;
    let c = tag_context(key, datagram).ok_or(Refusal::NoTrailer)?;
    let (rest, t) = w.payload.split_at(body + 8);
    // The tag covers the datagram up to its last bytes: the payload must
    // end it (the wire refuses trailing bytes; checked, not assumed).
    if !std::ptr::eq(t.as_ptr(), datagram[datagram.len() - TAG_LEN..].as_ptr()) {
        return Err(Refusal::NoTrailer);
    }
    let expected = c.sign();
    // Constant time: no early exit on the first differing byte.
    let diff = expected
        .as_ref()
        .iter()
        .zip(t)
        .fold(0u8, |acc, (x, y)| acc | (x ^ y));
    if diff != 0 || t.len() != TAG_LEN {
        return Err(Refusal::Forged);
    }
    let (page, counter) = rest.split_at(body);
    let counter = u64::from_be_bytes(counter.try_into().map_err(|_| Refusal::NoTrailer)?);
    w.payload = page;
    Ok(Authentic { write: w, counter })
}

/// The page a gossip write carries: `None` unless the payload is a page,
/// written at 0, by its own node's daemon.
pub fn page(w: &Write<'_>) -> Option<NodeData> {
    if w.addr != 0 {
        return None;
    }
    let page = NodeData::from_bytes(w.payload)?;
    (w.src == daemon_id(page.name())).then_some(page)
}

/// The counter and page in an authentic gossip datagram; `None` for
/// anything else.
pub fn decode(key: &GossipKey, b: &[u8]) -> Option<(u64, NodeData)> {
    let a = open(key, b).ok()?;
    Some((a.counter, page(&a.write)?))
}

/// The highest counter accepted from each daemon, to refuse replays.
/// Daemons are told apart by their id, which the tag covers, not by the
/// source address, which anyone can claim. At most `cap` daemons are
/// remembered: only cluster members can make a tag, and a cluster has no
/// more nodes than the IDM file holds.
#[derive(Debug, Clone)]
pub struct Replay {
    highest: BTreeMap<TaskId, u64>,
    cap: usize,
}

impl Replay {
    /// Remembering up to `cap` daemons.
    pub fn new(cap: usize) -> Self {
        Self {
            highest: BTreeMap::new(),
            cap,
        }
    }

    /// Whether `counter` is above all `src` sent before; if so it becomes
    /// the highest. A daemon past the cap is never fresh.
    pub fn fresh(&mut self, src: TaskId, counter: u64) -> bool {
        if self.highest.len() >= self.cap && !self.highest.contains_key(&src) {
            return false;
        }
        let h = self.highest.entry(src).or_insert(0);
        if counter <= *h {
            return false;
        }
        *h = counter;
        true
    }
}

/// The counter of a daemon's datagrams: from the time it started (ns since
/// the epoch) up, by one at least per datagram.
#[derive(Debug, Clone)]
pub struct Counter(u64);

impl Counter {
    /// Starting at the current time.
    pub fn new() -> Self {
        Self(now_ns())
    }

    /// The next value: above the last, and not below the clock, so a
    /// daemon restarted later continues above its old values.
    pub fn take(&mut self) -> u64 {
        self.0 = (self.0 + 1).max(now_ns());
        self.0
    }
}

impl Default for Counter {
    fn default() -> Self {
        Self::new()
    }
}

fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(b: u8) -> GossipKey {
        GossipKey::new(&ClusterSecret::from_bytes([b; 32]))
    }

    fn page_of(name: &str) -> NodeData {
        let mut d = NodeData::default();
        d.set_name(name);
        d.ncpus = 4;
        d.tasks[0].pid = 77;
        d
    }

    #[test]
    fn pages_survive_the_wire_and_garbage_is_refused() {
        let (k, d) = (key(1), page_of("127.0.0.9"));
        let b = encode(&k, "127.0.0.9", &d, 42);
        assert_eq!(decode(&k, &b), Some((42, d)));
        assert_eq!(decode(&k, &b[..b.len() - 1]), None);
        assert_eq!(
            decode(&k, &encode(&k, "127.0.0.8", &d, 1)),
            None,
            "name must match the sender"
        );
        assert_eq!(
            open(&k, b"junk"),
            Err(Refusal::NotGossip(nofc::Refusal::Malformed(
                sss_wire::ParseError::Truncated
            )))
        );
    }

    #[test]
    fn another_clusters_or_an_untagged_datagram_is_forged() {
        let d = page_of("n");
        let b = encode(&key(1), "n", &d, 7);
        assert_eq!(open(&key(2), &b), Err(Refusal::Forged));
        // The old format: a bare page, no counter or tag.
        let bare = nofc::encode(&Write {
            src: daemon_id("n"),
            dst: INBOX.dst,
            key: INBOX.key,
            addr: 0,
            payload: &d.to_bytes(),
        })
        .unwrap();
        assert_eq!(open(&key(1), &bare), Err(Refusal::Forged));
        let short = nofc::encode(&Write {
            src: daemon_id("n"),
            dst: INBOX.dst,
            key: INBOX.key,
            addr: 0,
            payload: &[0; TRAILER_LEN - 1],
        })
        .unwrap();
        assert_eq!(open(&key(1), &short), Err(Refusal::NoTrailer));
    }

    /// Every bit of the datagram is covered: flipped as sent, the MBCF
    /// checksum refuses it; with the checksum repaired as a forger would,
    /// the tag does (or, for a header field, the inbox).
    #[test]
    fn every_flipped_bit_is_refused() {
        let k = key(1);
        let b = encode(&k, "127.0.0.9", &page_of("127.0.0.9"), 99);
        for i in 0..b.len() {
            let mut m = b.clone();
            m[i] ^= 1 << (i % 8);
            assert!(open(&k, &m).is_err(), "byte {i} as sent");
            if CRC.contains(&i) {
                continue;
            }
            m[CRC].fill(0);
            let c = crc32c::crc32c(&m);
            m[CRC].copy_from_slice(&c.to_be_bytes());
            let r = open(&k, &m);
            if i >= HEADER_LEN {
                assert_eq!(r, Err(Refusal::Forged), "byte {i}");
            } else {
                assert!(r.is_err(), "byte {i}");
            }
        }
    }

    #[test]
    fn replays_and_counters() {
        let (a, b) = (daemon_id("a"), daemon_id("b"));
        let mut r = Replay::new(2);
        assert!(r.fresh(a, 10));
        assert!(!r.fresh(a, 10), "the same counter again");
        assert!(!r.fresh(a, 9), "an older one");
        assert!(r.fresh(a, 11));
        assert!(r.fresh(b, 5), "per daemon");
        assert!(!r.fresh(daemon_id("c"), 100), "past the cap");
        assert!(r.fresh(b, 6));
        let mut c = Counter::new();
        let (x, y) = (c.take(), c.take());
        assert!(y > x && x > 1_600_000_000_000_000_000);
        std::thread::sleep(std::time::Duration::from_millis(1));
        assert!(Counter::new().take() > y, "a later start continues above");
    }
}
