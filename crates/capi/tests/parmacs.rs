//! PARMACS programs (`examples/parmacs/*.c.in`) built with both macro
//! files: `parmacs/sss.m4` (libsss, tasks started by the launcher, CREATE
//! with fork semantics) and `parmacs/pthreads.m4` (threads on one
//! machine). LU and radix must print the same checksum in every build, on
//! every task count and under every protocol and write mode; the fork test
//! checks what a created task inherits.
//!
//! The launcher is `sss_launch::run`, reached by re-executing this binary
//! with [`LAUNCH_ENV`] set, as in `dsm_c.rs`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use tempfile::TempDir;

const LAUNCH_ENV: &str = "SSS_PARMACS_TEST_LAUNCH";
const JOB_LIMIT: Duration = Duration::from_secs(40);

mod common;
use common::{field, lib_dir, root};

/// Not a test of its own: the launcher when [`LAUNCH_ENV`] is set.
#[test]
fn launcher_mode() {
    common::launcher_mode(LAUNCH_ENV);
}

/// Runs `exe args` under `placement` with `env`; (exit code, stdout, stderr).
fn launch(placement: &[&str], exe: &Path, args: &[&str], env: &[(&str, &str)]) -> common::Outcome {
    let mut env = env.to_vec();
    env.insert(0, ("SSS_DSM_HEAP", "1G"));
    let largs = common::job_args(placement, "20", exe, args);
    common::run_job(LAUNCH_ENV, &largs, &env, JOB_LIMIT)
}

fn is_launcher() -> bool {
    std::env::var(LAUNCH_ENV).is_ok()
}

/// Expands `examples/parmacs/<prog>.c.in` with `parmacs/<macros>.m4` and
/// compiles it (`note_each`: a note after every shared store).
fn build(dir: &TempDir, prog: &str, macros: &str, note_each: bool) -> PathBuf {
    let c = dir.path().join(format!("{prog}-{macros}-{note_each}.c"));
    let exe = dir.path().join(format!("{prog}-{macros}-{note_each}"));
    let m4 = Command::new("m4")
        .arg(root().join("parmacs").join(format!("{macros}.m4")))
        .arg(root().join("examples/parmacs").join(format!("{prog}.c.in")))
        .output()
        .expect("run m4 (apt-get install m4; scripts/test.sh installs it)");
    assert!(
        m4.status.success(),
        "m4 {prog}.c.in failed:\n{}",
        String::from_utf8_lossy(&m4.stderr)
    );
    std::fs::write(&c, &m4.stdout).expect("write the expanded source");
    let mut cc = Command::new("cc");
    cc.args(["-std=gnu11", "-O2", "-Wall", "-Wextra", "-Werror"])
        .arg(format!("-I{}", root().join("include").display()))
        .arg(format!("-I{}", root().join("parmacs").display()))
        .arg("-o")
        .arg(&exe)
        .arg(&c);
    if note_each {
        cc.arg("-DSSS_PM_NOTE_EACH");
    }
    if macros == "sss" {
        let lib = lib_dir();
        cc.arg(root().join("parmacs/sss_parmacs.c"))
            .arg(format!("-L{}", lib.display()))
            .arg("-lsss")
            .arg(format!("-Wl,-rpath,{}", lib.display()));
    } else {
        cc.arg("-lpthread");
    }
    cc.arg("-lm");
    let out = cc.output().expect("run cc");
    assert!(
        out.status.success(),
        "cc {prog} ({macros}) failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

const ONE: &[&str] = &["-n", "1"];
const TWO: &[&str] = &["-n", "2"];
const FOUR_TWO_HOSTS: &[&str] = &["-n", "4", "--hosts", "127.0.0.2,127.0.0.3"];

/// The line of `out` starting with `tag`, its checksum, and whether it
/// holds every word of `ok`.
fn result<'a>(out: &'a str, tag: &str, ok: &[&str]) -> Option<(&'a str, bool)> {
    let line = out.lines().find(|l| l.starts_with(tag))?;
    Some((
        field(line, "checksum")?,
        ok.iter().all(|w| line.contains(w)),
    ))
}

/// Runs `prog` (small size `args`, the task count first) in the pthreads
/// build on 1 and 4 threads and in the SSS build on each of `runs`
/// (placement, env, note_each); every run must pass its checks and print
/// the same checksum.
fn agree(prog: &str, tag: &str, ok: &[&str], args: &[&str], runs: &[Run]) {
    let dir = TempDir::new().expect("tempdir");
    let pth = build(&dir, prog, "pthreads", false);
    let mut want: Option<String> = None;
    for threads in ["1", "4"] {
        let out = Command::new(&pth)
            .arg(threads)
            .args(args)
            .output()
            .expect("run the pthreads build");
        let out = String::from_utf8_lossy(&out.stdout).into_owned();
        let (sum, good) = result(&out, tag, ok).unwrap_or(("", false));
        assert!(good, "{prog} pthreads on {threads}: {out}");
        match &want {
            None => want = Some(sum.to_string()),
            Some(w) => assert_eq!(w, sum, "{prog} pthreads on {threads} threads"),
        }
    }
    let want = want.expect("a reference checksum");
    let mut exes = std::collections::HashMap::new();
    for (placement, env, note_each) in runs {
        let exe = exes
            .entry(*note_each)
            .or_insert_with(|| build(&dir, prog, "sss", *note_each))
            .clone();
        let mut full = vec![placement[1]];
        full.extend_from_slice(args);
        let (code, out, err) = launch(placement, &exe, &full, env);
        let got = result(&out, tag, ok);
        assert!(
            code == Some(0) && got == Some((want.as_str(), true)),
            "{prog} {placement:?} {env:?} note_each={note_each}: exit {code:?}, want checksum {want}\nstdout:\n{out}\nstderr:\n{err}"
        );
    }
}

const ULRC: &[(&str, &str)] = &[("SSS_DSM_PROTOCOL", "ulrc"), ("SSS_DSM_WRITES", "note")];
// Both programs have pages written by two tasks between synchronizations
// (LU: two 2 KiB blocks a page; radix: runs of one digit), which
// `invalidate` with notes does not allow (one writer a page); with traps
// each writer's diff is kept until its release.
const INVALIDATE: &[(&str, &str)] = &[
    ("SSS_DSM_PROTOCOL", "invalidate"),
    ("SSS_DSM_WRITES", "trap"),
];
const TRAP: &[(&str, &str)] = &[("SSS_DSM_PROTOCOL", "ulrc"), ("SSS_DSM_WRITES", "trap")];
const HOME_UPDATE: &[(&str, &str)] = &[
    ("SSS_DSM_PROTOCOL", "home_update"),
    ("SSS_DSM_WRITES", "note"),
];
const UPDATE: &[(&str, &str)] = &[("SSS_DSM_PROTOCOL", "update"), ("SSS_DSM_WRITES", "note")];
const UPDATE_DRCT: &[(&str, &str)] = &[
    ("SSS_DSM_PROTOCOL", "update_drct"),
    ("SSS_DSM_WRITES", "note"),
];
const HOME_ONLY: &[(&str, &str)] = &[
    ("SSS_DSM_PROTOCOL", "home_only"),
    ("SSS_DSM_WRITES", "note"),
];
const CYCLIC: &[(&str, &str)] = &[
    ("SSS_DSM_PROTOCOL", "ulrc"),
    ("SSS_DSM_WRITES", "note"),
    ("SSS_PARMACS_PLACEMENT", "cyclic:2"),
];

type Run = (
    &'static [&'static str],
    &'static [(&'static str, &'static str)],
    bool,
);

const RUNS: &[Run] = &[
    (ONE, ULRC, false),
    (TWO, ULRC, false),
    (FOUR_TWO_HOSTS, ULRC, false),
    (FOUR_TWO_HOSTS, ULRC, true),
    (FOUR_TWO_HOSTS, INVALIDATE, false),
    (FOUR_TWO_HOSTS, TRAP, false),
    (TWO, HOME_UPDATE, true),
    (FOUR_TWO_HOSTS, HOME_UPDATE, false),
    (FOUR_TWO_HOSTS, UPDATE, false),
    (FOUR_TWO_HOSTS, UPDATE_DRCT, false),
    (FOUR_TWO_HOSTS, HOME_ONLY, false),
    (FOUR_TWO_HOSTS, CYCLIC, false),
];

#[test]
fn lu_every_build_gives_the_same_factors() {
    if !is_launcher() {
        agree("lu", "LU ", &["RESIDUAL-OK"], &["128", "16"], RUNS);
    }
}

#[test]
fn radix_every_build_gives_the_same_order() {
    if !is_launcher() {
        agree(
            "radix",
            "RADIX ",
            &["SORTED", "KEYS-OK"],
            &["65536", "1024"],
            RUNS,
        );
    }
}

#[test]
fn create_forks_the_creators_globals() {
    if is_launcher() {
        return;
    }
    let dir = TempDir::new().expect("tempdir");
    for (placement, env, note_each) in [
        (FOUR_TWO_HOSTS, ULRC, false),
        (&["-n", "3"][..], TRAP, false),
        (
            TWO,
            &[
                ("SSS_DSM_PROTOCOL", "invalidate"),
                ("SSS_DSM_WRITES", "note"),
            ][..],
            true,
        ),
    ] {
        let exe = build(&dir, "forktest", "sss", note_each);
        let n = placement[1];
        let (code, out, err) = launch(placement, &exe, &[n], env);
        assert!(
            code == Some(0) && out.contains(&format!("FORK-OK {n} tasks")),
            "forktest {placement:?} {env:?}: exit {code:?}\nstdout:\n{out}\nstderr:\n{err}"
        );
        // Round-robin over hosts: the first CREATE goes to the other host.
        if placement == FOUR_TWO_HOSTS {
            assert!(
                out.contains("before=101 after=0 rank=2"),
                "CREATE order:\n{out}"
            );
            assert!(
                out.contains("before=102 after=0 rank=1"),
                "CREATE order:\n{out}"
            );
            assert!(
                out.contains("before=103 after=0 rank=3"),
                "CREATE order:\n{out}"
            );
        }
    }
}

#[test]
fn more_creates_than_tasks_is_a_clear_error() {
    if is_launcher() {
        return;
    }
    let dir = TempDir::new().expect("tempdir");
    let exe = build(&dir, "forktest", "sss", false);
    let (code, _out, err) = launch(TWO, &exe, &["3"], ULRC);
    // Two tasks race to the error: the creator at its second CREATE, or the
    // created task at its BARRIER of 3. Either message names the cause.
    assert!(
        code != Some(0)
            && (err.contains("the job has only 2 tasks")
                || err.contains("BARRIER of 3 tasks in a job of 2: run with sss run -n 3")),
        "exit {code:?}, stderr:\n{err}"
    );
}
