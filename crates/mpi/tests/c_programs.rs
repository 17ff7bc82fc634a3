//! libmpi from C and C++: builds `libmpi` (shared and static), compiles
//! the programs of `tests/c` with `cc`/`c++` against `include/mpi.h`, and
//! runs them through the launcher on 1–4 tasks on one node (`shm`) and
//! on the two "nodes" 127.0.0.2 and 127.0.0.3 (`udp`). Each program
//! checks its own results and prints one line on rank 0.
//!
//! The launcher is `sss_launch::run`, reached by re-executing this test
//! binary with [`LAUNCH_ENV`] set.

mod support;

use sss_testkit::cc::run_ok;
use sss_testkit::root;
use std::path::PathBuf;
use std::process::Command;
use support::{lib_dir, run_everywhere, scratch, LAUNCHER, PLACEMENTS, STATIC_LIBS};
use tempfile::TempDir;

/// Not a test of its own: the launcher when [`LAUNCH_ENV`] is set.
#[test]
fn launcher_mode() {
    LAUNCHER.launcher_mode();
}

/// Compiles `tests/c/<file>` into `dir`; `static_lib` links libmpi.a.
fn compile(dir: &TempDir, file: &str, static_lib: bool) -> PathBuf {
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

#[test]
fn point_to_point() {
    let dir = scratch();
    let exe = compile(&dir, "p2p.c", false);
    run_everywhere(&exe, &[], PLACEMENTS, |n| format!("p2p: ok {n} tasks"));
}

#[test]
fn collectives_and_communicators() {
    let dir = scratch();
    let exe = compile(&dir, "coll.c", false);
    let mut places = PLACEMENTS.to_vec();
    places.push(("3 tasks, one node", &["-n", "3"]));
    run_everywhere(&exe, &[], &places, |n| format!("coll: ok {n} tasks"));
}

#[test]
fn derived_datatypes_and_user_ops() {
    let dir = scratch();
    let exe = compile(&dir, "dtype.c", false);
    let mut places = PLACEMENTS.to_vec();
    places.push(("3 tasks, one node", &["-n", "3"]));
    run_everywhere(&exe, &[], &places, |n| format!("dtype: ok {n} tasks"));
}

#[test]
fn groups_and_communicators_from_groups() {
    let dir = scratch();
    let exe = compile(&dir, "group.c", false);
    let mut places = PLACEMENTS.to_vec();
    places.push(("3 tasks, one node", &["-n", "3"]));
    run_everywhere(&exe, &[], &places, |n| format!("group: ok {n} tasks"));
}

#[test]
fn buffered_ready_persistent_and_matched() {
    let dir = scratch();
    let exe = compile(&dir, "p2pmore.c", false);
    let mut places = PLACEMENTS.to_vec();
    places.push(("3 tasks, one node", &["-n", "3"]));
    run_everywhere(&exe, &[], &places, |n| format!("p2pmore: ok {n} tasks"));
}

#[test]
fn nonblocking_collectives() {
    let dir = scratch();
    let exe = compile(&dir, "nbc.c", false);
    let mut places = PLACEMENTS.to_vec();
    places.push(("3 tasks, one node", &["-n", "3"]));
    run_everywhere(&exe, &[], &places, |n| format!("nbc: ok {n} tasks"));
}

#[test]
fn cxx_and_static_library() {
    let dir = scratch();
    let exe = compile(&dir, "hello.cpp", false);
    run_everywhere(&exe, &[], &PLACEMENTS[2..3], |_| {
        "hello: 4 tasks, sum 6".into()
    });
    let exe = compile(&dir, "hello.cpp", true);
    run_everywhere(&exe, &[], &PLACEMENTS[3..4], |_| {
        "hello: 2 tasks, sum 1".into()
    });
}

#[test]
fn abort_and_fatal_errors_end_the_job() {
    let dir = scratch();
    let exe = compile(&dir, "abort.c", false);
    for placement in [PLACEMENTS[2].1, PLACEMENTS[4].1] {
        let (code, out, err) = LAUNCHER.run(placement, &exe, &["abort"], &[]);
        assert_eq!(code, Some(7), "MPI_Abort(7):\n{out}\n{err}");
        assert!(!out.contains("not reached"), "{out}");
        let (code, out, err) = LAUNCHER.run(placement, &exe, &["fatal"], &[]);
        assert_eq!(
            code,
            Some(6),
            "MPI_ERR_RANK under MPI_ERRORS_ARE_FATAL:\n{out}\n{err}"
        );
        assert!(
            err.contains("MPI error in MPI_Send: invalid rank 4"),
            "{err}"
        );
    }
}
