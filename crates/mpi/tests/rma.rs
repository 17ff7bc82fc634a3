//! One-sided communication from C (`tests/c/rma.c`): windows over
//! allocated and registered memory, fences, passive locks, accumulates,
//! shared-memory windows (`tests/c/shmwin.c`), puts, gets and
//! accumulates on derived datatypes (`tests/c/rmatypes.c`),
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

#[test]
fn post_start_complete_wait() {
    let dir = scratch();
    let exe = compile(&dir, "pscw.c", false);
    let mut places = PLACEMENTS.to_vec();
    places.push(("3 tasks, one node", &["-n", "3"]));
    run_everywhere(&exe, &[], &places, |n| format!("pscw: ok {n} tasks"));
}

#[test]
fn dynamic_windows() {
    let dir = scratch();
    let exe = compile(&dir, "dynwin.c", false);
    run_everywhere(&exe, &[], PLACEMENTS, |n| format!("dynwin: ok {n} tasks"));
}

#[test]
fn shared_memory_windows() {
    let dir = scratch();
    let exe = compile(&dir, "shmwin.c", false);
    let mut places = PLACEMENTS.to_vec();
    places.push(("3 tasks, one node", &["-n", "3"]));
    run_everywhere(&exe, &[], &places, |n| format!("shmwin: ok {n} tasks"));
}

#[test]
fn puts_gets_and_accumulates_on_derived_datatypes() {
    let dir = scratch();
    let exe = compile(&dir, "rmatypes.c", false);
    let mut places = PLACEMENTS.to_vec();
    places.push(("3 tasks, one node", &["-n", "3"]));
    run_everywhere(&exe, &[], &places, |n| format!("rmatypes: ok {n} tasks"));
}
