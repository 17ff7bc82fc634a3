//! libmpi from Fortran: compiles the programs of `tests/f` with gfortran
//! against `include/mpif.h` and the `mpi` module (built here from it, as
//! `sss mpif90` does), and runs them on 1–4 tasks on one node and on two
//! hosts. Each program checks its own results and prints one line on
//! rank 0. Skipped with a message when gfortran is missing.

mod support;

use sss_testkit::cc::run_ok;
use sss_testkit::root;
use std::path::PathBuf;
use std::process::Command;
use support::{lib_dir, run_everywhere, scratch, LAUNCHER, PLACEMENTS, STATIC_LIBS};
use tempfile::TempDir;

/// Not a test of its own: the launcher when the launch variable is set.
#[test]
fn launcher_mode() {
    LAUNCHER.launcher_mode();
}

fn have_gfortran() -> bool {
    let ok = Command::new("gfortran").arg("--version").output().is_ok();
    if !ok {
        eprintln!("skipped: gfortran is not installed");
    }
    ok
}

/// Compiles `tests/f/<file>` into `dir` (the `mpi` module too);
/// `static_lib` links libmpi.a.
fn compile(dir: &TempDir, file: &str, static_lib: bool) -> PathBuf {
    let inc = root().join("include");
    std::fs::write(
        dir.path().join("mpi.f90"),
        "module mpi\n  implicit none\n  include 'mpif.h'\nend module mpi\n",
    )
    .expect("module source");
    run_ok(
        Command::new("gfortran")
            .arg(format!("-I{}", inc.display()))
            .args(["-c", "mpi.f90"])
            .current_dir(dir.path()),
    );
    let src = root().join("crates/mpi/tests/f").join(file);
    let exe = dir.path().join(file.replace('.', "_"));
    let lib = lib_dir();
    let mut cmd = Command::new("gfortran");
    cmd.args(["-O1", "-g", "-Wall", "-fallow-argument-mismatch"])
        .arg(format!("-I{}", inc.display()))
        .arg(format!("-I{}", dir.path().display()))
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
fn fixed_form_with_mpif_h() {
    if !have_gfortran() {
        return;
    }
    let dir = scratch();
    let exe = compile(&dir, "basics.f", false);
    let mut places = PLACEMENTS.to_vec();
    places.push(("3 tasks, one node", &["-n", "3"]));
    run_everywhere(&exe, &[], &places, |n| format!("basics: ok {n} tasks"));
}

#[test]
fn free_form_with_use_mpi_and_the_static_library() {
    if !have_gfortran() {
        return;
    }
    let dir = scratch();
    let exe = compile(&dir, "modern.f90", false);
    run_everywhere(&exe, &[], PLACEMENTS, |n| format!("modern: ok {n} tasks"));
    let exe = compile(&dir, "modern.f90", true);
    run_everywhere(&exe, &[], &PLACEMENTS[3..4], |n| {
        format!("modern: ok {n} tasks")
    });
}

#[test]
fn abort_from_fortran_ends_the_job_with_its_code() {
    if !have_gfortran() {
        return;
    }
    let dir = scratch();
    let exe = compile(&dir, "modern.f90", false);
    for placement in [PLACEMENTS[2].1, PLACEMENTS[4].1] {
        let (code, out, err) = LAUNCHER.run(placement, &exe, &["abort"], &[]);
        assert_eq!(code, Some(5), "MPI_ABORT(5):\n{out}\n{err}");
        assert!(!out.contains("modern: ok"), "{out}");
    }
}

/// Every constant of mpif.h that the C header also has carries the same
/// value, and every Fortran datatype of the C header is in mpif.h.
#[test]
fn mpif_h_agrees_with_mpi_h() {
    let c = std::fs::read_to_string(root().join("include/mpi.h")).unwrap();
    let f = std::fs::read_to_string(root().join("include/mpif.h")).unwrap();
    let mut checked = 0;
    for line in f.lines() {
        let Some(rest) = line.trim().strip_prefix("parameter (") else {
            continue;
        };
        assert!(line.len() <= 72, "longer than fixed form allows: {line}");
        let (name, value) = rest.trim_end_matches(')').split_once('=').unwrap();
        let value: i64 = value.parse().unwrap();
        let hex = format!("{name} ((");
        let en = format!("    {name} = ");
        if let Some(l) = c
            .lines()
            .find(|l| l.contains(&hex) && l.starts_with("#define"))
        {
            let v = l.rsplit(')').nth(1).unwrap();
            let v = i64::from_str_radix(v.trim_start_matches("0x"), 16).unwrap();
            assert_eq!(v, value, "{name}");
            checked += 1;
        } else if let Some(l) = c.lines().find(|l| l.starts_with(&en)) {
            let v = l[en.len()..].trim_end_matches(',').trim();
            let v = match v.strip_prefix("0x") {
                Some(h) => i64::from_str_radix(h, 16).unwrap(),
                None => v.parse().unwrap(),
            };
            assert_eq!(v, value, "{name}");
            checked += 1;
        }
    }
    assert!(checked > 140, "only {checked} constants compared");
    for t in [
        "MPI_INTEGER ",
        "MPI_REAL ",
        "MPI_DOUBLE_PRECISION ",
        "MPI_LOGICAL ",
        "MPI_DOUBLE_COMPLEX ",
    ] {
        assert!(f.contains(&format!("integer {}", t.trim())), "{t} missing");
    }
}

#[test]
fn names_attributes_info_intercomms_and_nonblocking_collectives() {
    if !have_gfortran() {
        return;
    }
    let dir = scratch();
    let exe = compile(&dir, "api.f90", false);
    let mut places = PLACEMENTS.to_vec();
    places.push(("3 tasks, one node", &["-n", "3"]));
    run_everywhere(&exe, &[], &places, |n| format!("fapi: ok {n} tasks"));
}

#[test]
fn arrays_of_handles_and_addresses() {
    if !have_gfortran() {
        return;
    }
    let dir = scratch();
    let exe = compile(&dir, "types.f90", false);
    run_everywhere(&exe, &[], PLACEMENTS, |n| format!("ftypes: ok {n} tasks"));
}

#[test]
fn user_error_handlers_and_codes() {
    if !have_gfortran() {
        return;
    }
    let dir = scratch();
    let exe = compile(&dir, "errh.f90", false);
    run_everywhere(&exe, &[], PLACEMENTS, |n| format!("ferrh: ok {n} tasks"));
}
