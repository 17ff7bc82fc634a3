//! One-sided communication from C (`tests/c/rma.c`): windows over
//! allocated and registered memory, fences, passive locks, accumulates,
//! on 1–4 tasks on one node and on two hosts.

mod support;

use support::{compile, run_everywhere, scratch, LAUNCHER, PLACEMENTS};

/// Not a test of its own: the launcher when the launch variable is set.
#[test]
fn launcher_mode() {
    LAUNCHER.launcher_mode();
}

#[test]
fn windows_puts_gets_accumulates_and_locks() {
    let dir = scratch();
    let exe = compile(&dir, "rma.c", false);
    let mut places = PLACEMENTS.to_vec();
    places.push(("3 tasks, one node", &["-n", "3"]));
    run_everywhere(&exe, &[], &places, |n| format!("rma: ok {n} tasks"));
}
