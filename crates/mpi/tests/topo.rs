//! Cartesian topologies from C (`tests/c/topo.c`): Dims_create, Cart_create,
//! coordinates, shifts, sub-grids and processes past the grid,
//! on 1–4 tasks on one node and on two hosts.

mod support;

use sss_testkit::cc::run_ok;
use sss_testkit::root;
use std::process::Command;
use support::{lib_dir, run_everywhere, scratch, LAUNCHER, PLACEMENTS};

/// Not a test of its own: the launcher when the launch variable is set.
#[test]
fn launcher_mode() {
    LAUNCHER.launcher_mode();
}

#[test]
fn cartesian_grids_shifts_and_sub_grids() {
    let dir = scratch();
    let exe = dir.path().join("topo");
    let lib = lib_dir();
    run_ok(
        Command::new("cc")
            .args([
                "-std=c11",
                "-O1",
                "-g",
                "-Wall",
                "-Wextra",
                "-Werror",
                "-pedantic",
            ])
            .arg(format!("-I{}", root().join("include").display()))
            .arg("-o")
            .arg(&exe)
            .arg(root().join("crates/mpi/tests/c/topo.c"))
            .arg(format!("-L{}", lib.display()))
            .arg("-lmpi")
            .arg(format!("-Wl,-rpath,{}", lib.display())),
    );
    let mut places = PLACEMENTS.to_vec();
    places.push(("3 tasks, one node", &["-n", "3"]));
    run_everywhere(&exe, &[], &places, |n| format!("topo: ok {n} tasks"));
}
