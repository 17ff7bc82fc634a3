//! C programs for the tests: `cc` with the repository's headers, linked
//! against the libsss of [`lib_dir`], and commands that must succeed.

use crate::tree::{lib_dir, root};
use std::path::Path;
use std::process::Command;

/// `cc FLAGS -I<root>/include -o EXE SOURCES`; add [`link_libsss`] (and
/// any libraries after it) before [`run_ok`].
pub fn cc(flags: &[&str], exe: &Path, sources: &[&Path]) -> Command {
    let mut cmd = Command::new("cc");
    cmd.args(flags)
        .arg(format!("-I{}", root().join("include").display()))
        .arg("-o")
        .arg(exe)
        .args(sources);
    cmd
}

/// Links `cmd` against the shared libsss, found at run time by rpath.
pub fn link_libsss(cmd: &mut Command) -> &mut Command {
    let lib = lib_dir();
    cmd.arg(format!("-L{}", lib.display()))
        .arg("-lsss")
        .arg(format!("-Wl,-rpath,{}", lib.display()))
}

/// Compiles `sources` with `flags` into `exe`, linked against libsss.
pub fn cc_libsss(flags: &[&str], exe: &Path, sources: &[&Path]) {
    run_ok(link_libsss(&mut cc(flags, exe, sources)));
}

/// Runs a command, panicking with its output on failure; its stdout.
pub fn run_ok(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}
