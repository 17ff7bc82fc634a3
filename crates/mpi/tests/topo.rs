//! Cartesian topologies from C (`tests/c/topo.c`): Dims_create, Cart_create,
//! coordinates, shifts, sub-grids and processes past the grid,
//! on 1–4 tasks on one node and on two hosts.

mod support;

use support::{compile, run_everywhere, scratch, LAUNCHER, PLACEMENTS};

/// Not a test of its own: the launcher when the launch variable is set.
#[test]
fn launcher_mode() {
    LAUNCHER.launcher_mode();
}

#[test]
fn cartesian_grids_shifts_and_sub_grids() {
    let dir = scratch();
    let exe = compile(&dir, "topo.c", false);
    let mut places = PLACEMENTS.to_vec();
    places.push(("3 tasks, one node", &["-n", "3"]));
    run_everywhere(&exe, &[], &places, |n| format!("topo: ok {n} tasks"));
}
