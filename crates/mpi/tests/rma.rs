//! One-sided communication from C (`tests/c/rma.c`): windows over
//! allocated and registered memory, fences, passive locks, accumulates,
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
fn windows_puts_gets_accumulates_and_locks() {
    let dir = scratch();
    let exe = dir.path().join("rma");
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
            .arg(root().join("crates/mpi/tests/c/rma.c"))
            .arg(format!("-L{}", lib.display()))
            .arg("-lmpi")
            .arg(format!("-Wl,-rpath,{}", lib.display())),
    );
    let mut places = PLACEMENTS.to_vec();
    places.push(("3 tasks, one node", &["-n", "3"]));
    run_everywhere(&exe, &[], &places, |n| format!("rma: ok {n} tasks"));
}
