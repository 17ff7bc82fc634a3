//! Where the tests find things: the repository (or its copy named by
//! [`TREE_ENV`]), the binaries cargo built, and libsss built for the test
//! binary's profile.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// Names a copy of the files these tests read (headers, examples, C
/// sources), laid out as in the repository, with the test binaries in its
/// `target/<profile>/deps` beside a built libsss and the built programs:
/// how `scripts/test-as-user.sh` runs them as an ordinary user who may
/// not reach the source tree.
pub const TREE_ENV: &str = "SSS_TEST_TREE";

/// The repository root (or its copy named by [`TREE_ENV`]).
pub fn root() -> PathBuf {
    match std::env::var_os(TREE_ENV) {
        Some(tree) => PathBuf::from(tree),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."),
    }
}

/// `target/<profile>`: the parent of the running test binary's `deps/`.
pub fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    exe.parent()
        .and_then(Path::parent)
        .expect("test binary in target/<profile>/deps")
        .to_path_buf()
}

/// The program `name`: where cargo built it (`at_build`, from the owning
/// crate's `env!("CARGO_BIN_EXE_<name>")`), or in `target/<profile>` of a
/// copy of the build ([`TREE_ENV`]).
pub fn built(name: &str, at_build: &str) -> PathBuf {
    if std::env::var_os(TREE_ENV).is_none() {
        return at_build.into();
    }
    profile_dir().join(name)
}

/// Builds libsss with this binary's profile and target directory (a no-op
/// when fresh) and returns the directory holding `libsss.so`/`libsss.a`.
pub fn lib_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = profile_dir();
        let target = dir.parent().expect("target dir");
        let profile = match dir.file_name().and_then(|n| n.to_str()) {
            Some("debug") | None => "dev".to_string(),
            Some(p) => p.to_string(),
        };
        // A copy ([`TREE_ENV`]) comes with libsss built: nothing to build,
        // and its user may have neither cargo nor a writable target.
        if std::env::var_os(TREE_ENV).is_none() {
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
            let out = Command::new(cargo)
                .args(["build", "-p", "sss-capi", "--lib", "--profile", &profile])
                .arg("--target-dir")
                .arg(target)
                .current_dir(root())
                .output()
                .expect("run cargo build");
            assert!(
                out.status.success(),
                "cargo build -p sss-capi failed:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        for lib in ["libsss.so", "libsss.a"] {
            assert!(
                dir.join(lib).is_file(),
                "{lib} missing in {}",
                dir.display()
            );
        }
        dir
    })
}
