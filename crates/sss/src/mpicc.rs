//! `sss mpicc` and `sss mpicxx`: the C or C++ compiler with the flags of
//! libmpi (`include/mpi.h`, `-lmpi` and its run path), every argument
//! passed through, as Open MPI's and MPICH's wrappers do. `-show` prints
//! the command instead of running it; `-c`, `-E`, `-S` and `-M`/`-MM`
//! compile without the link flags.
//!
//! Where libmpi is: `SSS_MPI_INCLUDE` and `SSS_MPI_LIBDIR` if set, else
//! beside this program — a build tree (`target/<profile>/sss` with
//! `libmpi.so` next to it, headers in the repository's `include/`) or an
//! install prefix (`bin/sss`, `lib/libmpi.so`, `include/mpi.h`).

use clap::Args;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Arguments of `sss mpicc` / `sss mpicxx`.
#[derive(Debug, Args)]
#[command(disable_help_flag = true)]
pub struct WrapArgs {
    /// Compiler arguments, all passed through (`-show` prints the command).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
    args: Vec<String>,
}

/// Where `include/mpi.h` and `libmpi` are.
fn locate() -> Result<(PathBuf, PathBuf), String> {
    let env = |k: &str| std::env::var_os(k).map(PathBuf::from);
    if let (Some(inc), Some(lib)) = (env("SSS_MPI_INCLUDE"), env("SSS_MPI_LIBDIR")) {
        return Ok((inc, lib));
    }
    let exe = std::env::current_exe().map_err(|e| format!("where is sss: {e}"))?;
    let dir = exe.parent().unwrap_or(Path::new("."));
    let has_lib = |d: &Path| d.join("libmpi.so").is_file() || d.join("libmpi.a").is_file();
    let built = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../include");
    let candidates = [
        (dir.join("../include"), dir.join("../lib")),
        (dir.join("../../include"), dir.to_path_buf()),
        (built, dir.to_path_buf()),
    ];
    for (inc, lib) in candidates {
        let (inc, lib) = (
            env("SSS_MPI_INCLUDE").unwrap_or(inc),
            env("SSS_MPI_LIBDIR").unwrap_or(lib),
        );
        if inc.join("mpi.h").is_file() && has_lib(&lib) {
            let canon = |p: PathBuf| p.canonicalize().unwrap_or(p);
            return Ok((canon(inc), canon(lib)));
        }
    }
    Err(format!(
        "libmpi not found beside {} (build it with `cargo build --release -p sss-mpi`, or set SSS_MPI_INCLUDE and SSS_MPI_LIBDIR)",
        exe.display()
    ))
}

/// The compiler command for `args`; whether `-show` was asked.
fn command(compiler: &str, args: &[String], inc: &Path, lib: &Path) -> (Vec<String>, bool) {
    let show = args
        .iter()
        .any(|a| a == "-show" || a == "--show" || a == "-showme");
    let compile_only = args
        .iter()
        .any(|a| ["-c", "-E", "-S", "-M", "-MM"].contains(&a.as_str()));
    let mut cmd = vec![compiler.to_string(), format!("-I{}", inc.display())];
    cmd.extend(
        args.iter()
            .filter(|a| !matches!(a.as_str(), "-show" | "--show" | "-showme"))
            .cloned(),
    );
    if !compile_only {
        cmd.push(format!("-L{}", lib.display()));
        cmd.push(format!("-Wl,-rpath,{}", lib.display()));
        cmd.push("-lmpi".into());
    }
    (cmd, show)
}

/// Runs the wrapper for `lang` (`cc` or `c++`, overridden by
/// `SSS_MPICC` / `SSS_MPICXX`); the compiler's exit status.
pub fn run(args: WrapArgs, cxx: bool) -> Result<u8, String> {
    let (var, default) = if cxx {
        ("SSS_MPICXX", "c++")
    } else {
        ("SSS_MPICC", "cc")
    };
    let compiler = std::env::var(var).unwrap_or_else(|_| default.into());
    let (inc, lib) = locate()?;
    let (cmd, show) = command(&compiler, &args.args, &inc, &lib);
    if show {
        println!("{}", cmd.join(" "));
        return Ok(0);
    }
    let st = Command::new(&cmd[0])
        .args(&cmd[1..])
        .status()
        .map_err(|e| format!("{}: {e}", cmd[0]))?;
    Ok(st.code().map_or(1, |c| u8::try_from(c).unwrap_or(1)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_only_when_linking_and_strips_show() {
        let a = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let (inc, lib) = (Path::new("/i"), Path::new("/l"));
        let (c, show) = command("cc", &a(&["-O2", "x.c", "-o", "x", "-show"]), inc, lib);
        assert!(show);
        assert_eq!(c.join(" "), "cc -I/i -O2 x.c -o x -L/l -Wl,-rpath,/l -lmpi");
        let (c, show) = command("cc", &a(&["-c", "x.c"]), inc, lib);
        assert!(!show);
        assert_eq!(c.join(" "), "cc -I/i -c x.c");
    }
}
