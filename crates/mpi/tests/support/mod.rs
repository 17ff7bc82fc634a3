//! What the test programs of libmpi share: the launcher, libmpi built
//! for this profile, scratch directories, and running a program on every
//! placement.

#![allow(dead_code)]

use sss_testkit::cc::run_ok;
use sss_testkit::tree::profile_dir;
use sss_testkit::{root, Launcher, TREE_ENV};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use tempfile::TempDir;

pub const LAUNCH_ENV: &str = "SSS_MPI_TEST_LAUNCH";
pub const LAUNCHER: Launcher = Launcher::new(LAUNCH_ENV);

pub const PLACEMENTS: &[(&str, &[&str])] = &[
    ("1 task", &["-n", "1"]),
    ("2 tasks, one node", &["-n", "2"]),
    ("4 tasks, one node", &["-n", "4"]),
    (
        "2 tasks, two nodes",
        &["-n", "2", "--hosts", "127.0.0.2,127.0.0.3"],
    ),
    (
        "4 tasks, two nodes",
        &["-n", "4", "--hosts", "127.0.0.2,127.0.0.3"],
    ),
];

/// Libraries libmpi.a needs.
pub const STATIC_LIBS: &[&str] = &[
    "-lpthread",
    "-ldl",
    "-lm",
    "-lrt",
    "-lutil",
    "-lgcc_s",
    "-lc",
];

/// Builds libmpi for this profile (not in a copied tree, which comes
/// with it) and returns its directory.
pub fn lib_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = profile_dir();
        if std::env::var_os(TREE_ENV).is_none() {
            let profile = match dir.file_name().and_then(|n| n.to_str()) {
                Some("debug") | None => "dev".to_string(),
                Some(p) => p.to_string(),
            };
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
            run_ok(
                Command::new(cargo)
                    .args(["build", "-p", "sss-mpi", "--lib", "--profile", &profile])
                    .arg("--target-dir")
                    .arg(dir.parent().expect("target dir"))
                    .current_dir(root()),
            );
        }
        for lib in ["libmpi.so", "libmpi.a"] {
            assert!(
                dir.join(lib).is_file(),
                "{lib} missing in {}",
                dir.display()
            );
        }
        dir
    })
}

pub fn scratch() -> TempDir {
    tempfile::Builder::new()
        .prefix("sss-mpi-")
        .tempdir()
        .expect("temp dir")
}

/// Runs `exe` everywhere; rank 0 must print one line `expect(tasks)`.
pub fn run_everywhere(
    exe: &Path,
    args: &[&str],
    placements: &[(&str, &[&str])],
    expect: impl Fn(u32) -> String,
) {
    run_with(exe, args, &[], placements, expect)
}

/// [`run_everywhere`] with `env` set for the tasks.
pub fn run_everywhere_env(
    exe: &Path,
    env: &[(&str, &str)],
    placements: &[(&str, &[&str])],
    expect: impl Fn(u32) -> String,
) {
    run_with(exe, &[], env, placements, expect)
}

fn run_with(
    exe: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    placements: &[(&str, &[&str])],
    expect: impl Fn(u32) -> String,
) {
    for (what, placement) in placements {
        let n: u32 = placement[1].parse().expect("task count");
        let (code, out, err) = LAUNCHER.run(placement, exe, args, env);
        let want = expect(n);
        let lines = out.lines().filter(|l| l.contains(&want)).count();
        assert!(
            code == Some(0) && lines == 1,
            "{} on {what}: exit {code:?}, expected one line {want:?}\nstdout:\n{out}\nstderr:\n{err}",
            exe.display()
        );
    }
}

/// Compiles `tests/c/<file>` into `dir`; `static_lib` links libmpi.a.
pub fn compile(dir: &TempDir, file: &str, static_lib: bool) -> PathBuf {
    let src = root().join("crates/mpi/tests/c").join(file);
    let exe = dir.path().join(file.replace('.', "_"));
    let lib = lib_dir();
    let (compiler, std) = if file.ends_with(".cpp") {
        ("c++", "-std=c++17")
    } else {
        ("cc", "-std=c11")
    };
    let mut cmd = Command::new(compiler);
    cmd.args([std, "-O1", "-g", "-Wall", "-Wextra", "-Werror", "-pedantic"])
        .arg(format!("-I{}", root().join("include").display()))
        .arg("-o")
        .arg(&exe)
        .arg(&src);
    if static_lib {
        cmd.arg(lib.join("libmpi.a")).args(STATIC_LIBS);
    } else {
        cmd.arg(format!("-L{}", lib.display()))
            .arg("-lmpi")
            .arg(format!("-Wl,-rpath,{}", lib.display()));
    }
    run_ok(&mut cmd);
    exe
}
