//! `sss mpicc`/`mpicxx` and mpiexec's `-np` on `sss run`.

use std::process::Command;

fn sss() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sss"))
}

#[test]
fn mpicc_show_prints_the_compiler_command() {
    let dir = std::env::temp_dir().join(format!("sss-mpicc-{}", std::process::id()));
    let (inc, lib) = (dir.join("include"), dir.join("lib"));
    std::fs::create_dir_all(&inc).unwrap();
    std::fs::create_dir_all(&lib).unwrap();
    let out = sss()
        .args(["mpicxx", "-show", "-O2", "-o", "x", "x.cpp", "-lm"])
        .env("SSS_MPI_INCLUDE", &inc)
        .env("SSS_MPI_LIBDIR", &lib)
        .env("SSS_MPICXX", "g++")
        .output()
        .expect("spawn sss");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let want = format!(
        "g++ -I{i} -O2 -o x x.cpp -lm -L{l} -Wl,-rpath,{l} -lmpi\n",
        i = inc.display(),
        l = lib.display()
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), want);
}

#[test]
fn run_accepts_np_and_leaves_program_arguments_alone() {
    let out = sss()
        .args([
            "run",
            "-np",
            "2",
            "--timeout",
            "20",
            "/bin/echo",
            "-np",
            "x",
        ])
        .output()
        .expect("spawn sss");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "-np x\n-np x\n");
}
