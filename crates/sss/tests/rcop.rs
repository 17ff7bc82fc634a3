//! `sss cc`: the RCOP pass notes the stores an unmodified program makes
//! to the DSM heap. What it instruments is checked on small C functions
//! (stack and global stores left alone; heap stores, memcpy and atomics
//! noted; at -O0 and -O2), and the PARMACS LU and radix, with their
//! `ST`/`NOTE_RANGE` macros turned off (`SSS_PM_NO_NOTES`), must give the
//! pthreads build's checksum in note mode on 1, 2 and 4 tasks and on two
//! hosts, where the same program built with plain `cc` gives a wrong one.
//! Skipped with a message when clang-16 or llvm-16-dev is missing (the
//! README's commands install them).

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn sss() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_sss"))
}

fn run(cmd: &mut Command) -> (bool, String) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

fn ok(cmd: &mut Command) -> String {
    let (good, text) = run(cmd);
    assert!(good, "{cmd:?} failed:\n{text}");
    text
}

fn have_llvm() -> bool {
    let ok = Command::new("clang-16").arg("--version").output().is_ok()
        && Command::new("llvm-config-16")
            .arg("--version")
            .output()
            .is_ok();
    if !ok {
        eprintln!("skipped: needs clang-16 and llvm-16-dev");
    }
    ok
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("sss-rcop-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// libsss for the profile this test was built in.
fn build_libsss() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let profile = sss()
        .parent()
        .and_then(|d| d.file_name())
        .and_then(|n| n.to_str())
        .map(|p| {
            if p == "debug" {
                "dev".to_string()
            } else {
                p.to_string()
            }
        })
        .unwrap();
    ok(Command::new(cargo)
        .args(["build", "-p", "sss-capi", "--lib", "--profile", &profile])
        .current_dir(root()));
}

/// The pass's report for `src` at `opt`: (noted one by one, private,
/// coalesced, range notes).
fn report(dir: &Path, src: &str, opt: &str, rcop: &str) -> (u32, u32, u32, u32) {
    let c = dir.join("f.c");
    std::fs::write(&c, src).unwrap();
    let out = ok(Command::new(sss())
        .args(["cc", opt, rcop, "-c", "-o"])
        .arg(dir.join("f.o"))
        .arg(&c)
        .env("SSS_RCOP_STATS", "1"));
    let line = out
        .lines()
        .find(|l| l.starts_with("sss-rcop:"))
        .unwrap_or_else(|| panic!("no report:\n{out}"));
    let num = |word: &str| -> u32 {
        let f: Vec<&str> = line.split_whitespace().collect();
        let i = f.iter().position(|w| w.starts_with(word)).unwrap();
        f[i - 1].trim_end_matches(',').parse().unwrap()
    };
    (
        num("stores"),
        num("private"),
        num("coalesced"),
        num("range"),
    )
}

fn counts(dir: &Path, src: &str, opt: &str) -> (u32, u32) {
    let (n, p, _, _) = report(dir, src, opt, "-fsss-opt=no");
    (n, p)
}

#[test]
fn the_pass_notes_heap_stores_and_leaves_private_ones() {
    if !have_llvm() {
        return;
    }
    build_libsss();
    let dir = scratch("ir");
    for opt in ["-O0", "-O2"] {
        // Only a local and a global: nothing to note.
        let (n, _) = counts(
            &dir,
            "int g[4]; int f(int i) { int l[4]; l[i & 3] = i; g[i & 3] = i; return l[0]; }",
            opt,
        );
        assert_eq!(n, 0, "{opt}: private stores were instrumented");
        // A store through a pointer argument, memcpy, an atomic, memset.
        let (n, _) = counts(
            &dir,
            "#include <string.h>\nvoid f(long *p, const char *s, int n) { p[1] = 7; \
             memcpy(p + 2, s, n); __atomic_fetch_add(p, 1, __ATOMIC_SEQ_CST); memset(p, 0, n); }",
            opt,
        );
        assert_eq!(n, 4, "{opt}: expected 4 noted stores");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn consecutive_stores_over_whole_loops_become_one_range_note() {
    if !have_llvm() {
        return;
    }
    build_libsss();
    let dir = scratch("ia");
    // A 2-D block written row after row: one note for the whole nest.
    let rows = "void f(double *a, int n) { for (int i = 0; i < n; i++) \
                for (int j = 0; j < 16; j++) a[i * 16 + j] = i + j; }";
    let (each, _, coalesced, notes) = report(&dir, rows, "-O2", "-fsss-opt=ia");
    assert_eq!((each, notes), (0, 1), "rows: {coalesced} coalesced");
    let (each, _, coalesced, _) = report(&dir, rows, "-O2", "-fsss-opt=no");
    assert!(each > 0 && coalesced == 0);
    // A loop that may leave early writes an unknown count: store by store.
    let early = "void f(double *a, int n) { for (int i = 0; i < n; i++) \
                 { if (a[i] < 0) break; a[i] = 2.0; } }";
    assert_eq!(report(&dir, early, "-O2", "-fsss-opt=ia").3, 0);
    // A store on some iterations only is never coalesced.
    let some = "void f(double *a, int n) { for (int i = 0; i < n; i++) \
                if (i & 1) a[i] = 1.0; }";
    assert_eq!(report(&dir, some, "-O2", "-fsss-opt=ia").3, 0);
    // A strided store leaves holes: not one range.
    let strided = "void f(double *a, int n) { for (int i = 0; i < n; i++) a[2 * i] = 1.0; }";
    assert_eq!(report(&dir, strided, "-O2", "-fsss-opt=ia").3, 0);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Builds `prog` (m4 then compile) with `compiler` (`sss cc` or `cc`).
fn build_parmacs(dir: &Path, prog: &str, rcop: bool) -> PathBuf {
    let c = dir.join(format!("{prog}.c"));
    let src = ok(Command::new("m4")
        .arg(root().join("parmacs/sss.m4"))
        .arg(root().join(format!("examples/parmacs/{prog}.c.in"))));
    std::fs::write(&c, src).unwrap();
    let exe = dir.join(format!("{prog}-{}", if rcop { "rcop" } else { "plain" }));
    let lib = sss().parent().unwrap().to_path_buf();
    let mut cmd = if rcop {
        let mut c = Command::new(sss());
        c.arg("cc");
        c
    } else {
        let mut c = Command::new("cc");
        c.arg(format!("-I{}", root().join("include").display()))
            .arg(format!("-L{}", lib.display()))
            .arg(format!("-Wl,-rpath,{}", lib.display()));
        c
    };
    cmd.args(["-std=gnu11", "-O2", "-DSSS_PM_NO_NOTES"])
        .arg(format!("-I{}", root().join("parmacs").display()))
        .arg("-o")
        .arg(&exe)
        .arg(&c)
        .arg(root().join("parmacs/sss_parmacs.c"));
    if !rcop {
        cmd.arg("-lsss");
    }
    cmd.arg("-lm");
    ok(&mut cmd);
    exe
}

fn pthreads(dir: &Path, prog: &str) -> PathBuf {
    let c = dir.join(format!("{prog}-pt.c"));
    let src = ok(Command::new("m4")
        .arg(root().join("parmacs/pthreads.m4"))
        .arg(root().join(format!("examples/parmacs/{prog}.c.in"))));
    std::fs::write(&c, src).unwrap();
    let exe = dir.join(format!("{prog}-pt"));
    ok(Command::new("cc")
        .args(["-std=gnu11", "-O2", "-o"])
        .arg(&exe)
        .arg(&c)
        .args(["-lpthread", "-lm"]));
    exe
}

fn checksum(out: &str, tag: &str) -> Option<String> {
    out.lines()
        .find(|l| l.starts_with(tag))?
        .split_whitespace()
        .find_map(|w| w.strip_prefix("checksum=").map(str::to_string))
}

fn job(exe: &Path, place: &[&str], protocol: &str, args: &[&str]) -> String {
    let (_, out) = run(Command::new(sss())
        .arg("run")
        .args(place)
        .arg(exe)
        .args(args)
        .env("SSS_DSM_WRITES", "note")
        .env("SSS_DSM_PROTOCOL", protocol)
        .env("SSS_DSM_HEAP", "1G")
        .env("SSS_NO_DAEMON", "1"));
    out
}

#[test]
fn unmodified_lu_and_radix_are_right_in_note_mode() {
    if !have_llvm() || Command::new("m4").arg("--version").output().is_err() {
        return;
    }
    build_libsss();
    let dir = scratch("parmacs");
    for (prog, tag, args) in [
        ("lu", "LU", ["128", "16"]),
        ("radix", "RADIX", ["65536", "256"]),
    ] {
        let rcop = build_parmacs(&dir, prog, true);
        let plain = build_parmacs(&dir, prog, false);
        let pt = pthreads(&dir, prog);
        for (what, place, p) in [
            ("1 task", &["-n", "1"][..], 1),
            ("2 tasks", &["-n", "2"][..], 2),
            ("4 tasks", &["-n", "4"][..], 4),
            (
                "4 tasks, two hosts",
                &["-n", "4", "--hosts", "127.0.0.2,127.0.0.3"][..],
                4,
            ),
        ] {
            let n = p.to_string();
            let want = checksum(&ok(Command::new(&pt).arg(&n).args(args)), tag).unwrap();
            for protocol in ["ulrc", "home_update"] {
                let mut a = vec![n.as_str()];
                a.extend(args);
                let out = job(&rcop, place, protocol, &a);
                assert_eq!(
                    checksum(&out, tag).as_deref(),
                    Some(want.as_str()),
                    "{prog} built with sss cc, {what}, {protocol}:\n{out}"
                );
            }
        }
        // Without the pass the same program is wrong across tasks.
        let out = job(
            &plain,
            &["-n", "4", "--hosts", "127.0.0.2,127.0.0.3"],
            "ulrc",
            &["4", args[0], args[1]],
        );
        let want = checksum(&ok(Command::new(&pt).arg("4").args(args)), tag).unwrap();
        assert_ne!(
            checksum(&out, tag),
            Some(want),
            "{prog} was right without notes:\n{out}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
