//! The shared heap from C: compiles `examples/dsm/laplace.c` and
//! `examples/dsm/drf.c` against libsss and runs them through the launcher
//! on 1, 2, 4 and 8 tasks on one node and on 2 and 4 tasks across the
//! "hosts" 127.0.0.2 and 127.0.0.3, under each protocol and write mode
//! (the protocols added to ulrc and invalidate run on a subset of the
//! placements, [`SOME_PLACEMENTS`], to keep the suite short).
//! Laplace must print the checksum of its own sequential run (`--seq`),
//! bit for bit; the suite must print `DRF-OK`.
//!
//! The launcher is `sss_launch::run`, reached by re-executing this binary
//! with [`LAUNCH_ENV`] set, as in `c_api.rs`.

use std::path::{Path, PathBuf};
use std::process::Command;
use tempfile::TempDir;

const LAUNCH_ENV: &str = "SSS_DSM_C_TEST_LAUNCH";
const LAUNCHER: Launcher = Launcher::new(LAUNCH_ENV).with_env(&[("SSS_DSM_HEAP", "1G")]);
/// Small grid for tests (the bench uses 1024); enough sweeps that heat
/// crosses every task boundary, so stale boundary rows would show.
const N: &str = "64";
const ITERS: &str = "40";

const PLACEMENTS: &[(&str, &[&str])] = &[
    ("1 task", &["-n", "1"]),
    ("2 tasks, one node", &["-n", "2"]),
    ("4 tasks, one node", &["-n", "4"]),
    ("8 tasks, one node", &["-n", "8"]),
    (
        "2 tasks, two nodes",
        &["-n", "2", "--hosts", "127.0.0.2,127.0.0.3"],
    ),
    (
        "4 tasks, two nodes",
        &["-n", "4", "--hosts", "127.0.0.2,127.0.0.3"],
    ),
];

/// Placements for the update-family protocols: one node with 2 and 4
/// tasks, and two nodes.
const SOME_PLACEMENTS: &[(&str, &[&str])] = &[
    ("2 tasks, one node", &["-n", "2"]),
    ("4 tasks, one node", &["-n", "4"]),
    (
        "2 tasks, two nodes",
        &["-n", "2", "--hosts", "127.0.0.2,127.0.0.3"],
    ),
];

use sss_testkit::cc::cc_libsss;
use sss_testkit::{field, root, Launcher};

/// Not a test of its own: the launcher when [`LAUNCH_ENV`] is set.
#[test]
fn launcher_mode() {
    LAUNCHER.launcher_mode();
}

/// Compiles `examples/dsm/<name>.c` into `dir`.
fn compile(dir: &TempDir, name: &str) -> PathBuf {
    compile_src(
        dir,
        name,
        &root().join("examples/dsm").join(format!("{name}.c")),
    )
}

/// Compiles `src` into `dir` as `name`.
fn compile_src(dir: &TempDir, name: &str, src: &Path) -> PathBuf {
    let exe = dir.path().join(name);
    let flags = [
        "-std=c11",
        "-pedantic",
        "-O2",
        "-Wall",
        "-Wextra",
        "-Werror",
    ];
    cc_libsss(&flags, &exe, &[src]);
    exe
}

/// Laplace on every placement equals its sequential run, for `env`.
fn laplace(env: &[(&str, &str)]) {
    laplace_on(PLACEMENTS, env)
}

fn laplace_on(placements: &[(&str, &[&str])], env: &[(&str, &str)]) {
    let dir = TempDir::new().expect("tempdir");
    let exe = compile(&dir, "laplace");
    let seq = Command::new(&exe)
        .args([N, ITERS, "--seq"])
        .output()
        .expect("run laplace --seq");
    let seq = String::from_utf8_lossy(&seq.stdout).into_owned();
    let want = field(&seq, "checksum")
        .expect("sequential checksum")
        .to_string();
    for (what, p) in placements {
        let (code, out, err) = LAUNCHER.run(p, &exe, &[N, ITERS], env);
        let line = out.lines().find(|l| l.contains("LAPLACE")).unwrap_or("");
        assert!(
            code == Some(0) && field(line, "checksum") == Some(want.as_str()),
            "laplace {env:?} with {what}: exit {code:?}, want checksum {want}\nstdout:\n{out}\nstderr:\n{err}"
        );
    }
}

/// The data-race-free suite on every placement, for `env`.
fn drf(env: &[(&str, &str)]) {
    drf_on(PLACEMENTS, env)
}

fn drf_on(placements: &[(&str, &[&str])], env: &[(&str, &str)]) {
    let dir = TempDir::new().expect("tempdir");
    let exe = compile(&dir, "drf");
    for (what, p) in placements {
        let tasks: u64 = p[1].parse().expect("task count");
        let (code, out, err) = LAUNCHER.run(p, &exe, &[], env);
        let want = format!("DRF-OK tasks={tasks} counter={}", tasks * 25);
        assert!(
            code == Some(0) && out.contains(&want),
            "drf {env:?} with {what}: exit {code:?}, want {want:?}\nstdout:\n{out}\nstderr:\n{err}"
        );
    }
}

#[test]
fn laplace_ulrc_notes() {
    if !LAUNCHER.is_part() {
        laplace(&[("SSS_DSM_PROTOCOL", "ulrc"), ("SSS_DSM_WRITES", "note")]);
    }
}

#[test]
fn laplace_ulrc_traps() {
    if !LAUNCHER.is_part() {
        laplace(&[("SSS_DSM_PROTOCOL", "ulrc"), ("SSS_DSM_WRITES", "trap")]);
    }
}

#[test]
fn laplace_invalidate_traps() {
    if !LAUNCHER.is_part() {
        laplace(&[
            ("SSS_DSM_PROTOCOL", "invalidate"),
            ("SSS_DSM_WRITES", "trap"),
        ]);
    }
}

#[test]
fn drf_ulrc_notes() {
    if !LAUNCHER.is_part() {
        drf(&[("SSS_DSM_PROTOCOL", "ulrc"), ("SSS_DSM_WRITES", "note")]);
    }
}

#[test]
fn drf_ulrc_traps_prefetch() {
    if !LAUNCHER.is_part() {
        drf(&[
            ("SSS_DSM_PROTOCOL", "ulrc"),
            ("SSS_DSM_WRITES", "trap"),
            ("SSS_DSM_PREFETCH", "4"),
        ]);
    }
}

#[test]
fn drf_invalidate_notes() {
    if !LAUNCHER.is_part() {
        drf(&[
            ("SSS_DSM_PROTOCOL", "invalidate"),
            ("SSS_DSM_WRITES", "note"),
        ]);
    }
}

#[test]
fn laplace_home_update() {
    if !LAUNCHER.is_part() {
        laplace_on(
            SOME_PLACEMENTS,
            &[
                ("SSS_DSM_PROTOCOL", "home_update"),
                ("SSS_DSM_WRITES", "note"),
            ],
        );
        laplace_on(
            &SOME_PLACEMENTS[2..],
            &[
                ("SSS_DSM_PROTOCOL", "home_update"),
                ("SSS_DSM_WRITES", "trap"),
            ],
        );
    }
}

#[test]
fn drf_home_update() {
    if !LAUNCHER.is_part() {
        drf_on(
            SOME_PLACEMENTS,
            &[
                ("SSS_DSM_PROTOCOL", "home_update"),
                ("SSS_DSM_WRITES", "note"),
            ],
        );
        drf_on(
            &SOME_PLACEMENTS[2..],
            &[
                ("SSS_DSM_PROTOCOL", "home_update"),
                ("SSS_DSM_WRITES", "trap"),
            ],
        );
    }
}

#[test]
fn laplace_update() {
    if !LAUNCHER.is_part() {
        laplace_on(
            SOME_PLACEMENTS,
            &[("SSS_DSM_PROTOCOL", "update"), ("SSS_DSM_WRITES", "note")],
        );
        laplace_on(
            &SOME_PLACEMENTS[2..],
            &[("SSS_DSM_PROTOCOL", "update"), ("SSS_DSM_WRITES", "trap")],
        );
    }
}

#[test]
fn drf_update() {
    if !LAUNCHER.is_part() {
        drf_on(
            SOME_PLACEMENTS,
            &[("SSS_DSM_PROTOCOL", "update"), ("SSS_DSM_WRITES", "note")],
        );
        drf_on(
            &SOME_PLACEMENTS[2..],
            &[("SSS_DSM_PROTOCOL", "update"), ("SSS_DSM_WRITES", "trap")],
        );
    }
}

#[test]
fn laplace_update_drct() {
    if !LAUNCHER.is_part() {
        laplace_on(
            SOME_PLACEMENTS,
            &[
                ("SSS_DSM_PROTOCOL", "update_drct"),
                ("SSS_DSM_WRITES", "note"),
            ],
        );
        laplace_on(
            &SOME_PLACEMENTS[2..],
            &[
                ("SSS_DSM_PROTOCOL", "update_drct"),
                ("SSS_DSM_WRITES", "trap"),
            ],
        );
    }
}

#[test]
fn drf_update_drct() {
    if !LAUNCHER.is_part() {
        drf_on(
            SOME_PLACEMENTS,
            &[
                ("SSS_DSM_PROTOCOL", "update_drct"),
                ("SSS_DSM_WRITES", "note"),
            ],
        );
        drf_on(
            &SOME_PLACEMENTS[2..],
            &[
                ("SSS_DSM_PROTOCOL", "update_drct"),
                ("SSS_DSM_WRITES", "trap"),
            ],
        );
    }
}

#[test]
fn laplace_home_only() {
    if !LAUNCHER.is_part() {
        laplace_on(
            SOME_PLACEMENTS,
            &[
                ("SSS_DSM_PROTOCOL", "home_only"),
                ("SSS_DSM_WRITES", "note"),
            ],
        );
        laplace_on(
            &SOME_PLACEMENTS[2..],
            &[
                ("SSS_DSM_PROTOCOL", "home_only"),
                ("SSS_DSM_WRITES", "trap"),
            ],
        );
    }
}

#[test]
fn drf_home_only() {
    if !LAUNCHER.is_part() {
        drf_on(
            SOME_PLACEMENTS,
            &[
                ("SSS_DSM_PROTOCOL", "home_only"),
                ("SSS_DSM_WRITES", "note"),
            ],
        );
        drf_on(
            &SOME_PLACEMENTS[2..],
            &[
                ("SSS_DSM_PROTOCOL", "home_only"),
                ("SSS_DSM_WRITES", "trap"),
            ],
        );
    }
}

#[test]
fn laplace_invalidate_notes() {
    if !LAUNCHER.is_part() {
        laplace_on(
            SOME_PLACEMENTS,
            &[
                ("SSS_DSM_PROTOCOL", "invalidate"),
                ("SSS_DSM_WRITES", "note"),
            ],
        );
    }
}

/// Regression (issue 12): `sss_dsm_malloc(SIZE_MAX)` and
/// `sss_dsm_malloc(0xfffffffffffff000)` returned SSS_OK, and the next
/// allocation overlapped a live block. Now SSS_ERR_NO_MEMORY, in every
/// task for `sss_dsm_malloc_all`, and the heap stays usable.
#[test]
fn huge_allocations_are_no_memory() {
    if LAUNCHER.is_part() {
        return;
    }
    let dir = TempDir::new().expect("tempdir");
    let src = root().join("crates/capi/tests/c/dsm_huge.c");
    let exe = compile_src(&dir, "dsm_huge", &src);
    for p in [
        &["-n", "1"][..],
        &["-n", "2", "--hosts", "127.0.0.2,127.0.0.3"],
    ] {
        let (code, out, err) = LAUNCHER.run(p, &exe, &[], &[]);
        assert!(
            code == Some(0) && out.contains("HUGE-OK"),
            "dsm_huge with {p:?}: exit {code:?}\nstdout:\n{out}\nstderr:\n{err}"
        );
    }
}

/// The `notes` count of a `NOTES-OK` line.
fn notes_of(out: &str) -> u64 {
    let line = out.lines().find(|l| l.contains("NOTES-OK")).unwrap_or("");
    field(line, "notes")
        .and_then(|v| v.parse().ok())
        .unwrap_or(u64::MAX)
}

/// Regression (issue 20): every `sss_dsm_note_write` was a call into the
/// runtime (a lock and a vector push per store, or a write-through).
/// Now a task alone needs none, and under ulrc the header's inline note
/// merges adjacent stores in its log, which the next barrier hands over:
/// 4 sweeps × 4096 noted stores reach the runtime as a handful of ranges.
/// With `SSS_NO_INLINE_NOTES` every note is still a call.
#[test]
fn inline_notes_stay_out_of_the_runtime() {
    if LAUNCHER.is_part() {
        return;
    }
    let dir = TempDir::new().expect("tempdir");
    let src = root().join("crates/capi/tests/c/dsm_notes.c");
    let exe = compile_src(&dir, "dsm_notes", &src);
    let called = dir.path().join("dsm_notes_called");
    let flags = [
        "-std=c11",
        "-O2",
        "-Wall",
        "-Werror",
        "-DSSS_NO_INLINE_NOTES",
    ];
    cc_libsss(&flags, &called, &[&src]);
    let ulrc = [("SSS_DSM_PROTOCOL", "ulrc")];
    let two_hosts = &["-n", "2", "--hosts", "127.0.0.2,127.0.0.3"][..];
    for (what, exe, p, want) in [
        ("1 task", &exe, &["-n", "1"][..], 0..=0),
        ("2 tasks", &exe, &["-n", "2"][..], 1..=8),
        ("2 hosts", &exe, two_hosts, 1..=8),
        (
            "2 tasks, no inline",
            &called,
            &["-n", "2"][..],
            16384..=16384,
        ),
    ] {
        let (code, out, err) = LAUNCHER.run(p, exe, &[], &ulrc);
        let notes = notes_of(&out);
        assert!(
            code == Some(0) && want.contains(&notes),
            "{what}: exit {code:?}, notes {notes}, want {want:?}\nstdout:\n{out}\nstderr:\n{err}"
        );
    }
}
