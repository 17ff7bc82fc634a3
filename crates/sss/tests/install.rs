//! `scripts/install.sh --prefix DIR` lays out a usable installation: the
//! C examples build against it with pkg-config alone (shared, and static
//! with `--static`) and run under the installed `sss run`; the library
//! carries its soname; man pages and completions are there.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn ok(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn have(tool: &str) -> bool {
    Command::new(tool).arg("--version").output().is_ok()
}

#[test]
fn an_installed_prefix_builds_and_runs_the_c_examples_with_pkg_config_alone() {
    if !have("pkg-config") || !have("cc") {
        eprintln!("skipped: needs pkg-config and cc (the README's commands install them)");
        return;
    }
    let dir = std::env::temp_dir().join(format!("sss-install-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let prefix = dir.join("prefix");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let cargo_dir = Path::new(&cargo).parent().map(Path::to_path_buf);
    let mut path = std::env::var_os("PATH").unwrap_or_default();
    if let Some(d) = cargo_dir {
        path = std::env::join_paths(std::iter::once(d).chain(std::env::split_paths(&path)))
            .expect("PATH");
    }
    ok(Command::new("bash")
        .arg(root().join("scripts/install.sh"))
        .arg("--prefix")
        .arg(&prefix)
        .env("PATH", &path)
        .current_dir(root()));

    for f in [
        "bin/sss",
        "bin/sssd",
        "bin/sss-run",
        "lib/libsss.so",
        "lib/libsss.so.0",
        "lib/libsss.a",
        "lib/pkgconfig/sss.pc",
        "include/sss.h",
        "share/sss/parmacs/sss.m4",
        "share/sss/examples/c/pingpong.c",
        "share/man/man1/sss.1",
        "share/man/man1/sss-run.1",
        "share/bash-completion/completions/sss",
        "bin/mpicc",
        "bin/mpif90",
        "include/mpif.h",
        "bin/mpiexec",
        "lib/libmpi.so",
        "include/mpi.h",
    ] {
        assert!(prefix.join(f).exists(), "{f} not installed");
    }
    if have("readelf") {
        let d = ok(Command::new("readelf")
            .arg("-d")
            .arg(prefix.join("lib/libsss.so")));
        assert!(d.contains("[libsss.so.0]"), "soname:\n{d}");
    }

    let pc = prefix.join("lib/pkgconfig");
    let pkg = |args: &[&str]| -> Vec<String> {
        ok(Command::new("pkg-config")
            .args(args)
            .arg("sss")
            .env("PKG_CONFIG_PATH", &pc))
        .split_whitespace()
        .map(String::from)
        .collect()
    };
    let src = prefix.join("share/sss/examples/c/counter.c");
    // Shared: found at run time through the soname in the prefix.
    let shared = dir.join("counter");
    ok(Command::new("cc")
        .args(["-std=c11", "-O1", "-o"])
        .arg(&shared)
        .arg(&src)
        .args(pkg(&["--cflags", "--libs"])));
    // Static: libsss.a from the libdir pkg-config names, with the
    // libraries it needs from `--static`.
    let libdir = pkg(&["--variable=libdir"]).join("");
    let static_exe = dir.join("counter-static");
    let private: Vec<String> = pkg(&["--static", "--libs-only-l"])
        .into_iter()
        .filter(|l| l != "-lsss")
        .collect();
    ok(Command::new("cc")
        .args(["-std=c11", "-O1", "-o"])
        .arg(&static_exe)
        .arg(&src)
        .args(pkg(&["--cflags"]))
        .arg(Path::new(&libdir).join("libsss.a"))
        .args(&private));
    if have("ldd") {
        let deps = ok(Command::new("ldd").arg(&static_exe));
        assert!(!deps.contains("libsss"), "linked dynamically:\n{deps}");
    }
    let lib = prefix.join("lib");
    for exe in [&shared, &static_exe] {
        let out = ok(Command::new(prefix.join("bin/sss"))
            .args(["run", "-n", "2", "--timeout", "60"])
            .arg(exe)
            .arg("50")
            .env("LD_LIBRARY_PATH", &lib)
            .env("SSS_NO_DAEMON", "1"));
        assert!(
            out.contains("counter: 2 tasks x 50 adds = 100"),
            "{}:\n{out}",
            exe.display()
        );
    }
    // MPI as its users spell it: the prefix's mpicc and mpiexec.
    let mpi_src = dir.join("allreduce.c");
    std::fs::write(
        &mpi_src,
        "#include <mpi.h>\n#include <stdio.h>\nint main(int c, char **v) { int r, s = 0; \
         MPI_Init(&c, &v); MPI_Comm_rank(MPI_COMM_WORLD, &r); \
         MPI_Allreduce(&r, &s, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD); \
         if (r == 0) printf(\"sum %d\\n\", s); MPI_Finalize(); return 0; }\n",
    )
    .unwrap();
    let mpi_exe = dir.join("allreduce");
    ok(Command::new(prefix.join("bin/mpicc"))
        .arg("-o")
        .arg(&mpi_exe)
        .arg(&mpi_src));
    let out = ok(Command::new(prefix.join("bin/mpiexec"))
        .args(["-np", "3"])
        .arg(&mpi_exe)
        .env("SSS_NO_DAEMON", "1"));
    assert!(out.contains("sum 3"), "{out}");
    // Fortran: the prefix's mpif90 and its `use mpi` module.
    if Command::new("gfortran").arg("--version").output().is_ok() {
        let f_src = dir.join("allreduce.f90");
        std::fs::write(
            &f_src,
            "program p\n  use mpi\n  integer :: r, s, ierr\n  call MPI_Init(ierr)\n  \
             call MPI_Comm_rank(MPI_COMM_WORLD, r, ierr)\n  \
             call MPI_Allreduce(r, s, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)\n  \
             if (r == 0) print '(a, i0)', 'fortran sum ', s\n  call MPI_Finalize(ierr)\nend program p\n",
        )
        .unwrap();
        let f_exe = dir.join("allreduce_f");
        ok(Command::new(prefix.join("bin/mpif90"))
            .arg("-o")
            .arg(&f_exe)
            .arg(&f_src));
        let out = ok(Command::new(prefix.join("bin/mpiexec"))
            .args(["-np", "3"])
            .arg(&f_exe)
            .env("SSS_NO_DAEMON", "1"));
        assert!(out.contains("fortran sum 3"), "{out}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
