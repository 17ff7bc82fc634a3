//! The cluster secret: 32 bytes every node daemon of a cluster holds, from
//! which the key of gossip tags is derived ([`crate::gossip`]).
//!
//! Where `sssd` finds it, first match wins:
//! 1. `--secret-file PATH`: a regular file owned by the daemon's user with
//!    no group or other permission bits, holding 64 hex digits
//!    (surrounding whitespace ignored);
//! 2. `SSS_CLUSTER_SECRET`: 64 hex digits (a process's environment is
//!    readable only by its user and root; `sss run` hands its daemons a
//!    fresh one per job this way);
//! 3. `$XDG_CONFIG_HOME/sss/cluster.key`, else `~/.config/sss/cluster.key`,
//!    with the same checks as 1, created on first start from the OS's
//!    random source (exclusively, mode 0600). Daemons of several hosts
//!    must share it: copy the file or share the home directory.

use std::ffi::OsString;
use std::fs::{DirBuilder, File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Bytes of a cluster secret.
pub const SECRET_LEN: usize = 32;

/// The environment variable holding the secret in hex.
pub const ENV: &str = "SSS_CLUSTER_SECRET";

/// A cluster's secret.
#[derive(Clone, PartialEq, Eq)]
pub struct ClusterSecret([u8; SECRET_LEN]);

impl std::fmt::Debug for ClusterSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ClusterSecret(…)")
    }
}

/// Why no secret could be had. Never shows the secret, even a malformed one.
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    /// A file could not be read or created.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// A secret file that anyone but its user could change or read.
    #[error("{path}: {why}; a cluster secret file must be a regular file owned by this user with no group or other permission bits (e.g. mode 0600)")]
    Unsafe {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        why: String,
    },
    /// Not 64 hex digits.
    #[error("{0}: a cluster secret is 64 hex digits")]
    Malformed(String),
    /// No file given, no variable, and nowhere to keep the default file.
    #[error("no cluster secret: give --secret-file, set SSS_CLUSTER_SECRET, or set HOME (for ~/.config/sss/cluster.key)")]
    Nowhere,
    /// The OS's random source failed.
    #[error("cannot draw a cluster secret from the OS: {0}")]
    Random(getrandom::Error),
}

/// Where a daemon's secret came from (for its log line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// `--secret-file`.
    File(PathBuf),
    /// [`ENV`].
    Env,
    /// The default file, read.
    Default(PathBuf),
    /// The default file, created now.
    Created(PathBuf),
}

impl ClusterSecret {
    /// A fresh secret from the OS's random source.
    pub fn generate() -> Result<Self, SecretError> {
        let mut b = [0u8; SECRET_LEN];
        getrandom::fill(&mut b).map_err(SecretError::Random)?;
        Ok(Self(b))
    }

    /// A secret from its bytes (tests and fuzzing use fixed ones).
    pub const fn from_bytes(b: [u8; SECRET_LEN]) -> Self {
        Self(b)
    }

    /// Parses 64 hex digits, surrounding whitespace ignored (the job
    /// secret's form).
    pub fn from_hex(s: &str) -> Option<Self> {
        sss_boot::JobSecret::from_hex(s).map(|j| Self(*j.as_bytes()))
    }

    /// The hex form, for [`ENV`] and secret files.
    pub fn to_hex(&self) -> String {
        sss_boot::JobSecret::from_bytes(self.0).to_hex()
    }

    pub(crate) fn bytes(&self) -> &[u8; SECRET_LEN] {
        &self.0
    }
}

/// The default file: `$XDG_CONFIG_HOME/sss/cluster.key`, else
/// `$HOME/.config/sss/cluster.key` (relative or empty values ignored, as
/// the XDG specification says).
pub fn default_path(xdg_config_home: Option<OsString>, home: Option<OsString>) -> Option<PathBuf> {
    let abs = |v: Option<OsString>| v.map(PathBuf::from).filter(|p| p.is_absolute());
    abs(xdg_config_home)
        .or_else(|| abs(home).map(|h| h.join(".config")))
        .map(|c| c.join("sss").join("cluster.key"))
}

/// The secret as `sssd` finds it: `file`, else the value of [`ENV`], else
/// the default file at `default` (created when missing).
pub fn load(
    file: Option<&Path>,
    env: Option<String>,
    default: Option<PathBuf>,
) -> Result<(ClusterSecret, Source), SecretError> {
    if let Some(f) = file {
        return Ok((read_file(f)?, Source::File(f.to_path_buf())));
    }
    if let Some(v) = env.filter(|v| !v.is_empty()) {
        let s = ClusterSecret::from_hex(&v).ok_or_else(|| SecretError::Malformed(ENV.into()))?;
        return Ok((s, Source::Env));
    }
    let path = default.ok_or(SecretError::Nowhere)?;
    match read_file(&path) {
        Err(SecretError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            create_default(&path)
        }
        Ok(s) => Ok((s, Source::Default(path))),
        Err(e) => Err(e),
    }
}

/// Reads a secret file, refusing one that is not a regular file of ours
/// that only we can read.
pub fn read_file(path: &Path) -> Result<ClusterSecret, SecretError> {
    let io = |source| SecretError::Io {
        path: path.to_path_buf(),
        source,
    };
    let unsafe_file = |why: String| SecretError::Unsafe {
        path: path.to_path_buf(),
        why,
    };
    // Non-blocking, so a FIFO planted at the path cannot hang the daemon;
    // checked on the open file, so it cannot be swapped after the check.
    let f = OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NONBLOCK)
        .open(path)
        .map_err(io)?;
    let m = f.metadata().map_err(io)?;
    if !m.is_file() {
        return Err(unsafe_file("not a regular file".into()));
    }
    let me = nix::unistd::geteuid().as_raw();
    if m.uid() != me {
        return Err(unsafe_file(format!("owned by uid {}, not {me}", m.uid())));
    }
    if m.mode() & 0o077 != 0 {
        return Err(unsafe_file(format!(
            "mode {:o} lets others in",
            m.mode() & 0o7777
        )));
    }
    let mut text = String::new();
    // Bounded: a secret file is one line.
    f.take(256).read_to_string(&mut text).map_err(|e| {
        if e.kind() == std::io::ErrorKind::InvalidData {
            SecretError::Malformed(path.display().to_string())
        } else {
            io(e)
        }
    })?;
    ClusterSecret::from_hex(&text).ok_or_else(|| SecretError::Malformed(path.display().to_string()))
}

/// Creates the default file with a fresh secret. Written in full to a
/// private file first (exclusive, 0600) and then linked into place, so
/// two daemons starting at once agree on one secret and neither ever
/// reads a half-written file.
fn create_default(path: &Path) -> Result<(ClusterSecret, Source), SecretError> {
    let io = |p: &Path| {
        let p = p.to_path_buf();
        move |source| SecretError::Io { path: p, source }
    };
    let dir = path.parent().ok_or(SecretError::Nowhere)?;
    DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(io(dir))?;
    let secret = ClusterSecret::generate()?;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let tmp = dir.join(format!(".cluster.key.{}.{nanos}", std::process::id()));
    let written = (|| {
        let mut f: File = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        writeln!(f, "{}", secret.to_hex())?;
        f.sync_all()
    })();
    let linked = written.and_then(|()| std::fs::hard_link(&tmp, path));
    let _ = std::fs::remove_file(&tmp);
    match linked {
        Ok(()) => Ok((secret, Source::Created(path.to_path_buf()))),
        // Another daemon created it first: use theirs.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            Ok((read_file(path)?, Source::Default(path.to_path_buf())))
        }
        Err(e) => Err(io(path)(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("sss-secret-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn hex_round_trips_and_malformed_secrets_are_refused() {
        let s = ClusterSecret::generate().unwrap();
        assert_eq!(ClusterSecret::from_hex(&s.to_hex()), Some(s.clone()));
        assert_eq!(
            ClusterSecret::from_hex(&format!(" {}\n", s.to_hex())),
            Some(s.clone())
        );
        assert_eq!(ClusterSecret::from_hex(&s.to_hex()[1..]), None);
        assert_eq!(ClusterSecret::from_hex(&"g".repeat(64)), None);
        assert_eq!(ClusterSecret::from_hex("ü".repeat(32).as_str()), None);
        assert!(!format!("{s:?}").contains(&s.to_hex()[..8]));
        let e = load(None, Some("oops".into()), None).unwrap_err();
        assert!(matches!(e, SecretError::Malformed(_)));
        assert!(!e.to_string().contains("oops"), "the value is not echoed");
    }

    #[test]
    fn the_default_path_follows_xdg() {
        let p =
            |x: Option<&str>, h: Option<&str>| default_path(x.map(Into::into), h.map(Into::into));
        assert_eq!(p(Some("/x"), Some("/h")), Some("/x/sss/cluster.key".into()));
        assert_eq!(
            p(Some("rel"), Some("/h")),
            Some("/h/.config/sss/cluster.key".into())
        );
        assert_eq!(
            p(None, Some("/h")),
            Some("/h/.config/sss/cluster.key".into())
        );
        assert_eq!(p(Some(""), None), None);
    }

    #[test]
    fn the_sources_are_tried_in_order() {
        let d = scratch("order");
        let f = d.join("given.key");
        let given = ClusterSecret::from_bytes([1; SECRET_LEN]);
        std::fs::write(&f, given.to_hex()).unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
        let env = ClusterSecret::from_bytes([2; SECRET_LEN]);
        let def = d.join("cfg/sss/cluster.key");
        let got = load(Some(&f), Some(env.to_hex()), Some(def.clone())).unwrap();
        assert_eq!(got, (given, Source::File(f.clone())));
        let got = load(None, Some(env.to_hex()), Some(def.clone())).unwrap();
        assert_eq!(got, (env, Source::Env));
        assert!(!def.exists());
        // First start: created, private; later starts read the same one.
        let (made, how) = load(None, Some(String::new()), Some(def.clone())).unwrap();
        assert_eq!(how, Source::Created(def.clone()));
        let m = std::fs::metadata(&def).unwrap();
        assert_eq!(m.mode() & 0o777, 0o600);
        let parent = std::fs::metadata(def.parent().unwrap()).unwrap();
        assert_eq!(parent.mode() & 0o077, 0, "the directory is private");
        let again = load(None, None, Some(def.clone())).unwrap();
        assert_eq!(again, (made, Source::Default(def.clone())));
        assert_eq!(
            std::fs::read_dir(def.parent().unwrap()).unwrap().count(),
            1,
            "no temporary left"
        );
        assert!(matches!(load(None, None, None), Err(SecretError::Nowhere)));
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn unsafe_or_malformed_secret_files_are_refused_clearly() {
        let d = scratch("unsafe");
        let f = d.join("k");
        let s = ClusterSecret::from_bytes([3; SECRET_LEN]);
        std::fs::write(&f, s.to_hex()).unwrap();
        for mode in [0o640, 0o604, 0o660, 0o777] {
            std::fs::set_permissions(&f, std::fs::Permissions::from_mode(mode)).unwrap();
            let e = read_file(&f).unwrap_err();
            assert!(
                matches!(e, SecretError::Unsafe { .. }),
                "mode {mode:o}: {e}"
            );
            assert!(e.to_string().contains("lets others in"), "{e}");
        }
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o400)).unwrap();
        assert_eq!(read_file(&f).unwrap(), s);
        let e = read_file(&d).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        nix::unistd::mkfifo(&d.join("fifo"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        let e = read_file(&d.join("fifo")).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        let bad = d.join("bad");
        std::fs::write(&bad, [0xffu8; 64]).unwrap();
        std::fs::set_permissions(&bad, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(matches!(read_file(&bad), Err(SecretError::Malformed(_))));
        std::fs::write(&bad, "0".repeat(10_000)).unwrap();
        assert!(matches!(read_file(&bad), Err(SecretError::Malformed(_))));
        let e = read_file(&d.join("missing")).unwrap_err();
        assert!(matches!(e, SecretError::Io { .. }));
        if nix::unistd::geteuid().is_root() {
            // Someone else's file, however private, is not ours to trust.
            let other = d.join("other");
            std::fs::write(&other, s.to_hex()).unwrap();
            std::fs::set_permissions(&other, std::fs::Permissions::from_mode(0o600)).unwrap();
            nix::unistd::chown(&other, Some(nix::unistd::Uid::from_raw(65534)), None).unwrap();
            let e = read_file(&other).unwrap_err();
            assert!(e.to_string().contains("owned by uid 65534"), "{e}");
        }
        std::fs::remove_dir_all(&d).unwrap();
    }
}
