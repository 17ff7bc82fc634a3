//! One-sided communication from C (`tests/c/rma.c`): windows over
//! allocated and registered memory, fences, passive locks, accumulates,
//! shared-memory windows (`tests/c/shmwin.c`), puts, gets and
//! accumulates on derived datatypes (`tests/c/rmatypes.c`), puts
//! complete at their targets after a flush or fence
//! (`tests/c/rmaflush.c`), on 1–4 tasks on one node and on two hosts.

mod support;

use support::{compile, run_everywhere, run_everywhere_env, scratch, LAUNCHER, PLACEMENTS};

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

/// Regression: a put was complete at the origin once issued, and
/// `MPI_Win_flush` / `MPI_Win_fence` waited for nothing more, so a third
/// task told afterwards could read the target before a put lost on the
/// way and resent had landed. With a fifth of the datagrams dropped the
/// reader saw the old value within the first rounds.
#[test]
fn puts_are_complete_at_the_target_after_flush_and_fence() {
    let dir = scratch();
    let exe = compile(&dir, "rmaflush.c", false);
    let places: &[(&str, &[&str])] = &[
        ("3 tasks, one node", &["-n", "3"]),
        (
            "3 tasks, two nodes",
            &["-n", "3", "--hosts", "127.0.0.2,127.0.0.3"],
        ),
        (
            "4 tasks, two nodes",
            &["-n", "4", "--hosts", "127.0.0.2,127.0.0.3"],
        ),
    ];
    run_everywhere_env(&exe, &[("SSS_FAULT_DROP", "0.2")], places, |n| {
        format!("rmaflush: ok {n} tasks")
    });
}
