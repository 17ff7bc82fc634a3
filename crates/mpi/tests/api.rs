//! The MPI calls beyond point-to-point and collectives, from C
//! (`tests/c/`): names and attributes, `MPI_Info`, `Comm_split_type`,
//! intercommunicators, graph topologies, sessions and the small calls,
//! on 1–4 tasks on one node and on two hosts; and that libmpi exports
//! exactly what `include/mpi.h` declares.

mod support;

use sss_testkit::root;
use std::collections::BTreeSet;
use std::process::Command;
use support::{compile, lib_dir, run_everywhere, scratch, LAUNCHER, PLACEMENTS};

/// Not a test of its own: the launcher when the launch variable is set.
#[test]
fn launcher_mode() {
    LAUNCHER.launcher_mode();
}

fn run(file: &str, tag: &str) {
    let dir = scratch();
    let exe = compile(&dir, file, false);
    let mut places = PLACEMENTS.to_vec();
    places.push(("3 tasks, one node", &["-n", "3"]));
    run_everywhere(&exe, &[], &places, |n| format!("{tag}: ok {n} tasks"));
}

#[test]
fn names_and_attributes() {
    run("attr.c", "attr");
    // MPI_COMM_SELF's delete callback ran in MPI_Finalize.
    let dir = scratch();
    let exe = compile(&dir, "attr.c", false);
    let (code, out, err) = LAUNCHER.run(PLACEMENTS[1].1, &exe, &[], &[]);
    assert!(
        code == Some(0) && out.contains("attr: MPI_COMM_SELF attribute deleted at finalize"),
        "exit {code:?}\n{out}\n{err}"
    );
}

/// Every `MPI_` and `PMPI_` function the header declares is exported by
/// libmpi.so, every exported one is declared, and every `MPI_` function
/// has its `PMPI_` name.
#[test]
fn exports_match_header() {
    let header = std::fs::read_to_string(root().join("include/mpi.h")).expect("mpi.h");
    let mut declared = BTreeSet::new();
    for l in header.lines() {
        let Some(rest) = l
            .strip_prefix("int ")
            .or_else(|| l.strip_prefix("double "))
            .or_else(|| l.strip_prefix("MPI_Aint "))
        else {
            continue;
        };
        if let Some((name, _)) = rest.split_once('(') {
            if name.starts_with("MPI_") || name.starts_with("PMPI_") {
                declared.insert(name.to_string());
            }
        }
    }
    let out = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(lib_dir().join("libmpi.so"))
        .output()
        .expect("nm");
    let exported: BTreeSet<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2))
        .filter(|s| s.starts_with("MPI_") || s.starts_with("PMPI_"))
        .map(String::from)
        .collect();
    assert!(declared.len() > 300, "parsed only {}", declared.len());
    // The profiling interface: a PMPI_ name for every MPI_ one.
    let unprofiled: Vec<_> = declared
        .iter()
        .filter(|n| n.starts_with("MPI_") && !declared.contains(&format!("P{n}")))
        .collect();
    assert!(unprofiled.is_empty(), "no PMPI_ name: {unprofiled:?}");
    // Fortran's too: every `mpi_…_` but the predefined callbacks
    // (`mpi_comm_dup_fn_` …) has its `pmpi_…_`.
    let fortran: BTreeSet<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2))
        .filter(|s| s.starts_with("mpi_") || s.starts_with("pmpi_"))
        .map(String::from)
        .collect();
    let f_unprofiled: Vec<_> = fortran
        .iter()
        .filter(|n| n.starts_with("mpi_") && !n.ends_with("_fn_"))
        .filter(|n| !fortran.contains(&format!("p{n}")))
        .collect();
    assert!(
        fortran.len() > 400 && f_unprofiled.is_empty(),
        "{} Fortran names; no pmpi_ name: {f_unprofiled:?}",
        fortran.len()
    );
    let missing: Vec<_> = declared.difference(&exported).collect();
    let undeclared: Vec<_> = exported.difference(&declared).collect();
    assert!(
        missing.is_empty() && undeclared.is_empty(),
        "declared, not exported: {missing:?}\nexported, not declared: {undeclared:?}"
    );
}

#[test]
fn info_hints_and_split_type() {
    let dir = scratch();
    let exe = compile(&dir, "info.c", false);
    for (what, placement) in PLACEMENTS {
        let n: u32 = placement[1].parse().unwrap();
        // Two hosts: the tasks are split over both nodes.
        let nodes = if placement.len() > 2 && n > 1 { 2 } else { 1 };
        let want = format!("info: ok {n} tasks ({nodes} nodes)");
        let (code, out, err) = LAUNCHER.run(placement, &exe, &[], &[]);
        assert!(
            code == Some(0) && out.contains(&want),
            "{what}: exit {code:?}, want {want:?}\n{out}\n{err}"
        );
    }
}

#[test]
fn user_error_handlers_classes_and_codes() {
    run("errh.c", "errh");
}

#[test]
fn intercommunicators() {
    run("inter.c", "inter");
}

#[test]
fn graph_topologies_and_neighbourhood_collectives() {
    run("graph.c", "graph");
}

#[test]
fn sessions_without_mpi_init() {
    run("session.c", "session");
}

#[test]
fn alloc_mem_reduce_local_and_f90_kinds() {
    run("misc.c", "misc");
}

/// The profiling interface: a program that defines `MPI_Send` and others
/// itself and calls the `PMPI_` names sees its own calls counted once and
/// the library's internal traffic not at all.
#[test]
fn profiling_interface() {
    let dir = scratch();
    let exe = compile(&dir, "pmpi.c", false);
    run_everywhere(&exe, &[], PLACEMENTS, |n| format!("pmpi: ok {n} tasks"));
}
