//! Sealed MBCF datagrams: authentication, optional encryption and replay
//! protection, between the tasks of one job.
//!
//! Every task of a job holds the job's 32-byte secret (handed out by the
//! launcher). From it, HKDF-SHA256 derives one AES-256-GCM key per
//! direction of every pair of tasks and per sender incarnation:
//!
//! ```text
//!   key(src → dst) = HKDF(salt "sss-mbcf-seal-v1", secret,
//!                         info = format ‖ job ‖ src ‖ dst ‖ src epoch ‖ src salt)
//! ```
//!
//! where the salt is 16 random bytes each task draws at start and
//! publishes with its address, so that no two incarnations share a key
//! even with equal epochs. The nonce of a datagram is its sender's
//! transmission counter toward that receiver (64 bits, never reused: a
//! retransmission is a new transmission). Its low 32 bits travel in the
//! header's checksum field; the receiver infers the rest from its replay
//! window ([`window::WINDOW`] counters wide).
//!
//! - **Authenticated** ([`Security::Auth`], wire format 2): a 16-byte tag
//!   follows the datagram, which travels in clear. The tag is the GCM tag
//!   of encrypting the extension and payload with the header as
//!   associated data; the sender discards that ciphertext, the receiver
//!   computes it again from what it received and compares the tags (in
//!   constant time). This is GCM's own verification of (header,
//!   ciphertext), so as strong as GCM, and three times cheaper at 1408 B
//!   than hashing the whole datagram as associated data (GMAC), which
//!   takes a slower path.
//! - **Encrypted** ([`Security::Encrypt`], format 3): the extension and
//!   payload are encrypted, the 64-byte header is authenticated in clear
//!   (ranks, sequence numbers, keys and addresses are visible, not
//!   forgeable).
//!
//! [`Seals::open`] refuses, before anything else looks at a datagram, one
//! of another format or job, from a rank outside the job, with a counter
//! already seen or below the window, or whose tag does not verify; each
//! refusal is counted in [`Refusals`]. Refused datagrams are never
//! answered.

#![forbid(unsafe_code)]

mod window;

pub use window::WINDOW;

use foldhash::{HashMap, HashMapExt};
use ring::aead::{self, Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM};
use ring::hkdf;
use sss_wire::{Format, CHECK_FIELD, HEADER_LEN};
use thiserror::Error;
use window::Window;

/// Bytes of the tag after a sealed datagram.
pub const TAG_LEN: usize = sss_wire::SEAL_TAG_LEN;
/// Bytes of a job secret.
pub const SECRET_LEN: usize = 32;
/// Bytes of a task's incarnation salt.
pub const SALT_LEN: usize = 16;

/// How a job's datagrams between nodes are protected (`SSS_SECURITY`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Security {
    /// Checksummed only (CRC-32C): anyone who can send to a task's port
    /// can forge operations. Only by explicit choice.
    None,
    /// Every datagram authenticated (AES-256-GCM tag).
    #[default]
    Auth,
    /// Authenticated, and extension and payload encrypted.
    Encrypt,
}

impl Security {
    /// The wire format of datagrams under this mode.
    pub fn format(self) -> Format {
        match self {
            Security::None => Format::Checksummed,
            Security::Auth => Format::Authenticated,
            Security::Encrypt => Format::Encrypted,
        }
    }

    /// The accepted spellings, for error messages.
    pub const NAMES: &'static str = "auth, encrypt, none";
}

impl std::str::FromStr for Security {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        match s {
            "auth" => Ok(Security::Auth),
            "encrypt" => Ok(Security::Encrypt),
            "none" => Ok(Security::None),
            _ => Err(()),
        }
    }
}

impl std::fmt::Display for Security {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Security::None => "none",
            Security::Auth => "auth",
            Security::Encrypt => "encrypt",
        })
    }
}

/// Why a datagram was not sealed (a bug of the caller: it hands only
/// datagrams it emitted in the job's format).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum SealError {
    /// Shorter than a header, or not in the sealed format in use.
    #[error("not a datagram of this job's format")]
    Malformed,
    /// Addressed outside the job.
    #[error("destination is not a task of this job")]
    NotMember,
}

/// Why a received datagram was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum OpenError {
    /// Shorter than a header and a tag, or of another format.
    #[error("not a sealed datagram of this job's format")]
    Malformed,
    /// Of another job, to another task, or from a rank outside the job.
    #[error("from or to a task outside this job")]
    NotMember,
    /// A counter already accepted, or too old for the window.
    #[error("replayed")]
    Replayed,
    /// The tag does not verify: forged, modified, or another job's key.
    #[error("tag does not verify")]
    BadTag,
    /// From an older incarnation of the sender than one already heard.
    #[error("from an older incarnation of the sender")]
    Stale,
}

/// Refused datagrams by reason.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Refusals {
    /// [`OpenError::Malformed`].
    pub malformed: u64,
    /// [`OpenError::NotMember`].
    pub not_member: u64,
    /// [`OpenError::Replayed`].
    pub replayed: u64,
    /// [`OpenError::BadTag`].
    pub bad_tag: u64,
    /// [`OpenError::Stale`].
    pub stale: u64,
}

impl Refusals {
    /// All refusals.
    pub fn total(&self) -> u64 {
        self.malformed + self.not_member + self.replayed + self.bad_tag + self.stale
    }
}

/// Sending state toward one peer.
struct Tx {
    epoch: u32,
    key: LessSafeKey,
    /// The next transmission counter (from 1).
    next: u64,
}

/// Receiving state from one peer: its current incarnation's key.
struct Rx {
    epoch: u32,
    key: LessSafeKey,
    window: Window,
}

/// The sealing state of one task: keys toward and from every peer, and
/// their counters and replay windows. Sans-IO: the caller seals what it
/// is about to send and opens what it received.
pub struct Seals {
    prk: hkdf::Prk,
    format: Format,
    job: u32,
    rank: u32,
    salts: Vec<[u8; SALT_LEN]>,
    tx: HashMap<u32, Tx>,
    rx: HashMap<u32, Rx>,
    refused: Refusals,
    /// Where an authenticated datagram's body is encrypted for its tag.
    scratch: Vec<u8>,
}

impl std::fmt::Debug for Seals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Seals")
            .field("format", &self.format)
            .field("job", &self.job)
            .field("rank", &self.rank)
            .field("refused", &self.refused)
            .finish_non_exhaustive()
    }
}

fn be(v: u32) -> [u8; 4] {
    v.to_be_bytes()
}

fn read32(b: &[u8], at: usize) -> u32 {
    let mut x = [0u8; 4];
    x.copy_from_slice(&b[at..at + 4]);
    u32::from_be_bytes(x)
}

/// `a == b` in time that depends on the lengths only.
fn same(a: &[u8], b: &[u8]) -> bool {
    let diff = a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y));
    a.len() == b.len() && std::hint::black_box(diff) == 0
}

fn nonce(counter: u64) -> Nonce {
    let mut n = [0u8; aead::NONCE_LEN];
    n[4..].copy_from_slice(&counter.to_be_bytes());
    Nonce::assume_unique_for_key(n)
}

impl Seals {
    /// The sealing state of task `rank` of `job` under `security` (not
    /// [`Security::None`]), with the job's `secret` and every task's
    /// incarnation salt by rank (`salts.len()` is the job's size).
    /// `None` for [`Security::None`].
    pub fn new(
        security: Security,
        secret: &[u8; SECRET_LEN],
        job: u32,
        rank: u32,
        salts: Vec<[u8; SALT_LEN]>,
    ) -> Option<Seals> {
        if security == Security::None {
            return None;
        }
        let prk = hkdf::Salt::new(hkdf::HKDF_SHA256, b"sss-mbcf-seal-v1").extract(secret);
        Some(Seals {
            prk,
            format: security.format(),
            job,
            rank,
            salts,
            tx: HashMap::new(),
            rx: HashMap::new(),
            refused: Refusals::default(),
            scratch: Vec::new(),
        })
    }

    /// The wire format sealed and opened.
    pub fn format(&self) -> Format {
        self.format
    }

    /// Datagrams refused so far, by reason.
    pub fn refused(&self) -> Refusals {
        self.refused
    }

    /// The key of datagrams from `src` to `dst` sent in `src`'s `epoch`.
    fn key(&self, src: u32, dst: u32, epoch: u32) -> Option<LessSafeKey> {
        let salt = self.salts.get(src as usize)?;
        let (f, job, s, d, e) = (
            [self.format as u8],
            be(self.job),
            be(src),
            be(dst),
            be(epoch),
        );
        let info: [&[u8]; 6] = [&f, &job, &s, &d, &e, salt];
        let okm = self.prk.expand(&info, &AES_256_GCM).ok()?;
        Some(LessSafeKey::new(UnboundKey::from(okm)))
    }

    /// Seals the datagram at `buf[start..]` (emitted in this format by
    /// this task) in place: writes its counter and, encrypting, encrypts
    /// it, then appends the tag. On error `buf` is left as it was.
    pub fn seal(&mut self, buf: &mut Vec<u8>, start: usize) -> Result<(), SealError> {
        let d = buf.get(start..).ok_or(SealError::Malformed)?;
        if d.len() < HEADER_LEN || d[2] != self.format as u8 {
            return Err(SealError::Malformed);
        }
        let (sjob, srank, djob, drank, epoch) = (
            read32(d, 8),
            read32(d, 12),
            read32(d, 16),
            read32(d, 20),
            read32(d, 24),
        );
        if sjob != self.job
            || srank != self.rank
            || djob != self.job
            || drank as usize >= self.salts.len()
        {
            return Err(SealError::NotMember);
        }
        let tx = match self.tx.get_mut(&drank) {
            Some(t) if t.epoch == epoch => t,
            known => {
                // Counters go on across epochs: a nonce is never reused
                // even if an epoch came back.
                let next = known.map_or(1, |t| t.next);
                let key = self
                    .key(self.rank, drank, epoch)
                    .ok_or(SealError::NotMember)?;
                self.tx.insert(drank, Tx { epoch, key, next });
                self.tx.get_mut(&drank).ok_or(SealError::NotMember)?
            }
        };
        let counter = tx.next;
        tx.next += 1;
        let d = &mut buf[start..];
        d[CHECK_FIELD..CHECK_FIELD + 4].copy_from_slice(&(counter as u32).to_be_bytes());
        let (hdr, body) = d.split_at_mut(HEADER_LEN);
        let sealed = if self.format == Format::Encrypted {
            tx.key
                .seal_in_place_separate_tag(nonce(counter), Aad::from(&*hdr), body)
        } else {
            self.scratch.clear();
            self.scratch.extend_from_slice(body);
            tx.key
                .seal_in_place_separate_tag(nonce(counter), Aad::from(&*hdr), &mut self.scratch)
        };
        // Sealing fails only past 2^36 bytes in one datagram.
        let tag = sealed.map_err(|_| SealError::Malformed)?;
        buf.extend_from_slice(tag.as_ref());
        Ok(())
    }

    /// Opens a received datagram in place: checks it comes from a task
    /// of this job to this task, that its counter is fresh and its tag
    /// verifies, decrypts it when encrypted, and returns the length of the
    /// datagram without its tag (what the protocol parses). Refusals are
    /// counted. Never panics, whatever `buf` holds.
    pub fn open(&mut self, buf: &mut [u8]) -> Result<usize, OpenError> {
        let r = self.open_inner(buf);
        if let Err(e) = r {
            let c = &mut self.refused;
            match e {
                OpenError::Malformed => c.malformed += 1,
                OpenError::NotMember => c.not_member += 1,
                OpenError::Replayed => c.replayed += 1,
                OpenError::BadTag => c.bad_tag += 1,
                OpenError::Stale => c.stale += 1,
            }
        }
        r
    }

    fn open_inner(&mut self, buf: &mut [u8]) -> Result<usize, OpenError> {
        if buf.len() < HEADER_LEN + TAG_LEN || buf[2] != self.format as u8 {
            return Err(OpenError::Malformed);
        }
        let (sjob, srank, djob, drank, epoch) = (
            read32(buf, 8),
            read32(buf, 12),
            read32(buf, 16),
            read32(buf, 20),
            read32(buf, 24),
        );
        if sjob != self.job
            || djob != self.job
            || drank != self.rank
            || srank as usize >= self.salts.len()
        {
            return Err(OpenError::NotMember);
        }
        let low = read32(buf, CHECK_FIELD);
        // A new incarnation of the peer gets a fresh window, but only once
        // a datagram of it verifies; until then the current one stays.
        let mut fresh_rx = None;
        let (key, counter) = match self.rx.get(&srank) {
            Some(rx) if rx.epoch == epoch => {
                let c = rx.window.infer(low);
                if !rx.window.fresh(c) {
                    return Err(OpenError::Replayed);
                }
                (&rx.key, c)
            }
            Some(rx) if epoch < rx.epoch => return Err(OpenError::Stale),
            _ => {
                let key = self
                    .key(srank, self.rank, epoch)
                    .ok_or(OpenError::NotMember)?;
                let window = Window::new();
                let c = window.infer(low);
                if !window.fresh(c) {
                    return Err(OpenError::Replayed);
                }
                fresh_rx = Some(Rx { epoch, key, window });
                (&fresh_rx.as_ref().ok_or(OpenError::Malformed)?.key, c)
            }
        };
        let n = buf.len() - TAG_LEN;
        let (msg, tag) = buf.split_at_mut(n);
        let (hdr, body) = msg.split_at_mut(HEADER_LEN);
        let ok = if self.format == Format::Encrypted {
            let tag = aead::Tag::try_from(&tag[..]).map_err(|_| OpenError::Malformed)?;
            key.open_in_place_separate_tag(nonce(counter), Aad::from(&*hdr), tag, body, 0..)
                .is_ok()
        } else {
            self.scratch.clear();
            self.scratch.extend_from_slice(body);
            key.seal_in_place_separate_tag(nonce(counter), Aad::from(&*hdr), &mut self.scratch)
                .is_ok_and(|t| same(t.as_ref(), tag))
        };
        if !ok {
            return Err(OpenError::BadTag);
        }
        if let Some(rx) = fresh_rx {
            self.rx.insert(srank, rx);
        }
        if let Some(rx) = self.rx.get_mut(&srank) {
            rx.window.mark(counter);
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests;
