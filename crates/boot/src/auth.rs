//! The job secret and the authenticated HELLO of the TCP rendezvous.
//!
//! The launcher draws a fresh 32-byte secret from the OS for every job and
//! hands it to the tasks in `SSS_JOB_SECRET` (hex): a process's
//! environment is readable only by its own user and root, unlike its
//! command line. On connecting, a task gets a fresh 32-byte nonce from
//! the server (CHALLENGE) and proves it holds the secret with
//! HMAC-SHA256(secret, "sss-boot-hello" ‖ nonce ‖ job ‖ rank ‖ size) in
//! its HELLO. Another user who finds the server's port cannot join the
//! job, and a HELLO recorded from the network is worthless for the next
//! connection.

use ring::hmac;

/// Bytes of a job secret, a nonce and a HELLO tag.
pub const SECRET_LEN: usize = 32;

/// A job's secret.
#[derive(Clone, PartialEq, Eq)]
pub struct JobSecret([u8; SECRET_LEN]);

impl std::fmt::Debug for JobSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("JobSecret(…)")
    }
}

impl JobSecret {
    /// A fresh secret from the OS's random source.
    pub fn generate() -> Result<JobSecret, getrandom::Error> {
        let mut b = [0u8; SECRET_LEN];
        getrandom::fill(&mut b)?;
        Ok(JobSecret(b))
    }

    /// A secret from its bytes.
    pub const fn from_bytes(b: [u8; SECRET_LEN]) -> JobSecret {
        JobSecret(b)
    }

    /// Parses the hex form of `SSS_JOB_SECRET` (64 hex digits).
    pub fn from_hex(s: &str) -> Option<JobSecret> {
        let s = s.trim().as_bytes();
        if s.len() != 2 * SECRET_LEN {
            return None;
        }
        let mut b = [0u8; SECRET_LEN];
        for (i, pair) in s.chunks(2).enumerate() {
            let digit = |c: u8| (c as char).to_digit(16);
            b[i] = (digit(pair[0])? * 16 + digit(pair[1])?) as u8;
        }
        Some(JobSecret(b))
    }

    /// The secret's bytes, for keys derived from it.
    pub fn as_bytes(&self) -> &[u8; SECRET_LEN] {
        &self.0
    }

    /// The hex form, for `SSS_JOB_SECRET`.
    pub fn to_hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// 16 bytes in hex that show whether two tasks hold the same secret
    /// without telling it (an HMAC of a fixed message).
    pub(crate) fn fingerprint(&self) -> String {
        let tag = hmac::sign(&self.key(), b"sss-boot-secret-check");
        tag.as_ref()[..16]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    fn key(&self) -> hmac::Key {
        hmac::Key::new(hmac::HMAC_SHA256, &self.0)
    }
}

fn hello_message(nonce: &[u8; SECRET_LEN], job: u32, rank: u32, size: u32) -> Vec<u8> {
    let mut m = Vec::with_capacity(14 + SECRET_LEN + 12);
    m.extend_from_slice(b"sss-boot-hello");
    m.extend_from_slice(nonce);
    m.extend_from_slice(&job.to_le_bytes());
    m.extend_from_slice(&rank.to_le_bytes());
    m.extend_from_slice(&size.to_le_bytes());
    m
}

/// The tag a task puts in its HELLO; all zero without a secret.
pub fn hello_tag(
    secret: Option<&JobSecret>,
    nonce: &[u8; SECRET_LEN],
    job: u32,
    rank: u32,
    size: u32,
) -> [u8; SECRET_LEN] {
    let mut t = [0u8; SECRET_LEN];
    if let Some(s) = secret {
        let tag = hmac::sign(&s.key(), &hello_message(nonce, job, rank, size));
        t.copy_from_slice(tag.as_ref());
    }
    t
}

/// Whether `tag` proves the secret for this nonce and HELLO (constant
/// time).
pub fn hello_ok(
    secret: &JobSecret,
    nonce: &[u8; SECRET_LEN],
    job: u32,
    rank: u32,
    size: u32,
    tag: &[u8],
) -> bool {
    hmac::verify(&secret.key(), &hello_message(nonce, job, rank, size), tag).is_ok()
}

/// A fresh nonce for a CHALLENGE.
pub fn nonce() -> [u8; SECRET_LEN] {
    let mut n = [0u8; SECRET_LEN];
    // Without the OS's random source, a time-derived nonce still never
    // repeats within a job; only its unpredictability is lost.
    if getrandom::fill(&mut n).is_err() {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        n[..16].copy_from_slice(&t.to_le_bytes());
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_round_trip_through_hex_and_bad_hex_is_refused() {
        let s = JobSecret::generate().unwrap();
        assert_eq!(JobSecret::from_hex(&s.to_hex()), Some(s.clone()));
        assert_eq!(JobSecret::from_hex("abc"), None);
        assert_eq!(JobSecret::from_hex(&"zz".repeat(32)), None);
        assert_ne!(JobSecret::generate().unwrap(), s, "fresh every time");
        assert_eq!(format!("{s:?}"), "JobSecret(…)", "never printed");
    }

    #[test]
    fn a_tag_holds_only_for_its_secret_nonce_and_hello() {
        let s = JobSecret::generate().unwrap();
        let n = nonce();
        let t = hello_tag(Some(&s), &n, 7, 1, 2);
        assert!(hello_ok(&s, &n, 7, 1, 2, &t));
        assert!(!hello_ok(&s, &nonce(), 7, 1, 2, &t), "replayed");
        assert!(!hello_ok(&s, &n, 7, 0, 2, &t), "another rank");
        let other = JobSecret::generate().unwrap();
        assert!(!hello_ok(&other, &n, 7, 1, 2, &t), "another job");
        assert!(!hello_ok(&s, &n, 7, 1, 2, &hello_tag(None, &n, 7, 1, 2)));
    }
}
