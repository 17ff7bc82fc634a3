//! `sss mpicc`, `sss mpicxx` and `sss mpif90`: the C, C++ or Fortran
//! compiler with the flags of libmpi (`include/mpi.h` or `mpif.h` and the
//! `mpi` module, `-lmpi` and its run path), every argument
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

/// Arguments of `sss mpicc` / `sss mpicxx` / `sss mpif90`.
#[derive(Debug, Args)]
#[command(disable_help_flag = true)]
pub struct WrapArgs {
    /// Compiler arguments, all passed through (`-show` prints the command).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
    args: Vec<String>,
}

impl WrapArgs {
    /// The arguments given.
    pub fn args(&self) -> &[String] {
        &self.args
    }
}

/// Where `include/mpi.h` and `libmpi` are.
fn locate() -> Result<(PathBuf, PathBuf), String> {
    locate_lib("mpi.h", "mpi")
}

/// Where `include/<header>` and `lib<lib>` are (see the module docs).
pub fn locate_lib(header: &str, lib: &str) -> Result<(PathBuf, PathBuf), String> {
    let env = |k: &str| std::env::var_os(k).map(PathBuf::from);
    if let (Some(inc), Some(lib)) = (env("SSS_MPI_INCLUDE"), env("SSS_MPI_LIBDIR")) {
        return Ok((inc, lib));
    }
    let exe = std::env::current_exe().map_err(|e| format!("where is sss: {e}"))?;
    let dir = exe.parent().unwrap_or(Path::new("."));
    let has_lib = |d: &Path| {
        d.join(format!("lib{lib}.so")).is_file() || d.join(format!("lib{lib}.a")).is_file()
    };
    let built = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../include");
    let candidates = [
        (dir.join("../include"), dir.join("../lib")),
        (dir.join("../../include"), dir.to_path_buf()),
        (built, dir.to_path_buf()),
    ];
    for (inc, dir) in candidates {
        let (inc, dir) = (
            env("SSS_MPI_INCLUDE").unwrap_or(inc),
            env("SSS_MPI_LIBDIR").unwrap_or(dir),
        );
        if inc.join(header).is_file() && has_lib(&dir) {
            let canon = |p: PathBuf| p.canonicalize().unwrap_or(p);
            return Ok((canon(inc), canon(dir)));
        }
    }
    Err(format!(
        "lib{lib} not found beside {} (build it with `cargo build --release`, or set SSS_MPI_INCLUDE and SSS_MPI_LIBDIR)",
        exe.display()
    ))
}

/// The language a wrapper compiles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    C,
    Cxx,
    Fortran,
}

/// The compiler command for `args`; whether `-show` was asked. `extra`
/// goes before the user's arguments (Fortran: the module directory and
/// `-fallow-argument-mismatch`).
fn command(
    compiler: &str,
    extra: &[String],
    args: &[String],
    inc: &Path,
    lib: &Path,
) -> (Vec<String>, bool) {
    let show = args
        .iter()
        .any(|a| a == "-show" || a == "--show" || a == "-showme");
    let compile_only = args
        .iter()
        .any(|a| ["-c", "-E", "-S", "-M", "-MM"].contains(&a.as_str()));
    let mut cmd = vec![compiler.to_string(), format!("-I{}", inc.display())];
    cmd.extend(extra.iter().cloned());
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
pub fn run(args: WrapArgs, lang: Lang) -> Result<u8, String> {
    let (var, default) = match lang {
        Lang::C => ("SSS_MPICC", "cc"),
        Lang::Cxx => ("SSS_MPICXX", "c++"),
        Lang::Fortran => ("SSS_MPIF90", "gfortran"),
    };
    let compiler = std::env::var(var).unwrap_or_else(|_| default.into());
    let (inc, lib) = locate()?;
    if crate::rcop::wanted(&args.args) {
        if lang == Lang::Fortran {
            return Err(
                "--rcop, -fsss-opt= and --udsm are for C and C++ (sss mpicc, sss mpicxx): \
                 the RCOP pass is a clang pass"
                    .into(),
            );
        }
        let mpi = crate::rcop::Also {
            inc: &inc,
            lib: &lib,
            name: "mpi",
        };
        return crate::rcop::run_with(&args.args, lang == Lang::Cxx, Some(&mpi));
    }
    let extra = match lang {
        Lang::Fortran => fortran_flags(&compiler, &inc)?,
        _ => Vec::new(),
    };
    let (cmd, show) = command(&compiler, &extra, &args.args, &inc, &lib);
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

/// Flags for a Fortran compiler: where the `mpi` module is, and, for
/// gfortran 10 and later, `-fallow-argument-mismatch` (MPI's choice
/// buffers take any type).
fn fortran_flags(compiler: &str, inc: &Path) -> Result<Vec<String>, String> {
    let version = Command::new(compiler)
        .arg("-dumpversion")
        .output()
        .map_err(|e| format!("{compiler}: {e}"))?;
    let version = String::from_utf8_lossy(&version.stdout).trim().to_string();
    let major: u32 = version
        .split('.')
        .next()
        .and_then(|m| m.parse().ok())
        .unwrap_or(0);
    let mut flags = vec![format!(
        "-I{}",
        module_dir(compiler, &version, inc)?.display()
    )];
    if compiler.contains("gfortran") && major >= 10 {
        flags.push("-fallow-argument-mismatch".into());
    }
    Ok(flags)
}

/// The directory holding `mpi.mod` for this compiler: beside `mpif.h` in
/// an install prefix, else built once into the user's cache (a module
/// file belongs to one compiler version).
fn module_dir(compiler: &str, version: &str, inc: &Path) -> Result<PathBuf, String> {
    if inc.join("mpi.mod").is_file() {
        return Ok(inc.to_path_buf());
    }
    let header = std::fs::read(inc.join("mpif.h"))
        .map_err(|e| format!("{}: {e}", inc.join("mpif.h").display()))?;
    let mut key = std::collections::hash_map::DefaultHasher::new();
    std::hash::Hash::hash(&(&header, compiler, version), &mut key);
    let key = std::hash::Hasher::finish(&key);
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir)
        .join("sss");
    let dir = cache.join(format!("fortran-{key:016x}"));
    if dir.join("mpi.mod").is_file() {
        return Ok(dir);
    }
    // Built in a directory of its own and renamed, so that concurrent
    // builds never see half a module.
    std::fs::create_dir_all(&cache).map_err(|e| format!("{}: {e}", cache.display()))?;
    let tmp = tempdir_in(&cache)?;
    std::fs::write(
        tmp.join("mpi.f90"),
        "module mpi\n  implicit none\n  include 'mpif.h'\nend module mpi\n",
    )
    .map_err(|e| format!("{}: {e}", tmp.display()))?;
    let st = Command::new(compiler)
        .arg(format!("-I{}", inc.display()))
        .arg("-c")
        .arg("mpi.f90")
        .current_dir(&tmp)
        .status()
        .map_err(|e| format!("{compiler}: {e}"))?;
    if !st.success() {
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(format!(
            "{compiler} could not build the mpi module from {}",
            inc.join("mpif.h").display()
        ));
    }
    if std::fs::rename(&tmp, &dir).is_err() {
        // Another wrapper got there first.
        let _ = std::fs::remove_dir_all(&tmp);
    }
    Ok(dir)
}

/// A fresh private directory in `dir`.
fn tempdir_in(dir: &Path) -> Result<PathBuf, String> {
    for i in 0..100u32 {
        let p = dir.join(format!(".build-{}-{i}", std::process::id()));
        match std::fs::create_dir(&p) {
            Ok(()) => return Ok(p),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(format!("{}: {e}", p.display())),
        }
    }
    Err(format!("no temporary directory in {}", dir.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_only_when_linking_and_strips_show() {
        let a = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let (inc, lib) = (Path::new("/i"), Path::new("/l"));
        let (c, show) = command("cc", &[], &a(&["-O2", "x.c", "-o", "x", "-show"]), inc, lib);
        assert!(show);
        assert_eq!(c.join(" "), "cc -I/i -O2 x.c -o x -L/l -Wl,-rpath,/l -lmpi");
        let (c, show) = command("cc", &[], &a(&["-c", "x.c"]), inc, lib);
        assert!(!show);
        assert_eq!(c.join(" "), "cc -I/i -c x.c");
    }
}
