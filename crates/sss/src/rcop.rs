//! `sss cc` and `sss c++`: clang with the RCOP pass (`rcop/sss_rcop.cpp`),
//! which notes every store that may reach the DSM heap, so that an
//! unmodified shared-memory program runs on the heap in note mode. Every
//! argument is passed through; `sss.h` and libsss are added as
//! `sss mpicc` adds libmpi; `-show` prints the command.
//!
//! The pass is built once per clang into the user's cache
//! (`~/.cache/sss/rcop-<hash>/sss_rcop.so`) from the source compiled into
//! this program, with the `llvm-config` of the same LLVM. `SSS_CC` /
//! `SSS_CXX` choose the compilers (default `clang-16`, `clang++-16`),
//! `SSS_LLVM_CONFIG` the `llvm-config`. `SSS_RCOP_STATS=1` makes the pass
//! report what it instrumented. `-fsss-opt=no|mb|ia|bo|all` (default
//! `mb,ia`; a list such as `mb,ia,bo`) selects the optimizations (see
//! `docs/rcop.md`).
//! `--udsm` also checks page presence before every load and store that
//! may reach the heap, and makes the program open its heap without
//! userfaultfd (UDSM). `sss mpicc`/`sss mpicxx` given `--rcop` (or
//! `-fsss-opt=`, `--udsm`) compile the same way and link libmpi too.

use crate::mpicc::{locate_lib, WrapArgs};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The pass's source.
const SOURCE: &str = include_str!("../../../rcop/sss_rcop.cpp");

/// The LLVM version the pass is written against.
const LLVM: &str = "16";

fn cache_dir() -> PathBuf {
    std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir)
        .join("sss")
}

/// Builds the plugin for `llvm_config` unless built; its path.
fn plugin(llvm_config: &str) -> Result<PathBuf, String> {
    let q = |arg: &str| -> Result<String, String> {
        let o = Command::new(llvm_config).arg(arg).output().map_err(|e| {
            format!("{llvm_config}: {e} (install clang-{LLVM} and llvm-{LLVM}-dev)")
        })?;
        if !o.status.success() {
            return Err(format!("{llvm_config} {arg} failed"));
        }
        Ok(String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let version = q("--version")?;
    let cxxflags = q("--cxxflags")?;
    let bindir = q("--bindir")?;
    let mut key = std::collections::hash_map::DefaultHasher::new();
    std::hash::Hash::hash(&(SOURCE, &version, &cxxflags), &mut key);
    let key = std::hash::Hasher::finish(&key);
    let dir = cache_dir().join(format!("rcop-{key:016x}"));
    let so = dir.join("sss_rcop.so");
    if so.is_file() {
        return Ok(so);
    }
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let src = dir.join(format!("sss_rcop.{}.cpp", std::process::id()));
    let tmp = dir.join(format!("sss_rcop.{}.so", std::process::id()));
    std::fs::write(&src, SOURCE).map_err(|e| format!("{}: {e}", src.display()))?;
    let cxx = Path::new(&bindir).join("clang++");
    let st = Command::new(&cxx)
        .args(cxxflags.split_whitespace())
        .args(["-fPIC", "-shared", "-O2", "-o"])
        .arg(&tmp)
        .arg(&src)
        .status()
        .map_err(|e| format!("{}: {e}", cxx.display()))?;
    let _ = std::fs::remove_file(&src);
    if !st.success() {
        let _ = std::fs::remove_file(&tmp);
        return Err("building the RCOP pass failed".into());
    }
    // A rename is atomic: concurrent builds never see half a plugin.
    std::fs::rename(&tmp, &so).map_err(|e| format!("{}: {e}", so.display()))?;
    Ok(so)
}

/// A library added beside libsss (`sss mpicc --rcop`: libmpi): its
/// include directory, library directory and name.
pub struct Also<'a> {
    pub inc: &'a Path,
    pub lib: &'a Path,
    pub name: &'a str,
}

/// Whether `args` ask `sss mpicc` for the RCOP pass.
pub fn wanted(args: &[String]) -> bool {
    args.iter()
        .any(|a| a == "--rcop" || a == "--udsm" || a.starts_with("-fsss-opt="))
}

/// The compiler command for `args`; whether `-show` was asked.
fn command(
    compiler: &str,
    plugin: &Path,
    args: &[String],
    inc: &Path,
    lib: &Path,
    also: Option<&Also>,
) -> (Vec<String>, bool) {
    let show = args
        .iter()
        .any(|a| a == "-show" || a == "--show" || a == "-showme");
    let compile_only = args
        .iter()
        .any(|a| ["-c", "-E", "-S", "-M", "-MM"].contains(&a.as_str()));
    let mut cmd = vec![
        compiler.to_string(),
        format!("-fpass-plugin={}", plugin.display()),
        format!("-I{}", inc.display()),
    ];
    if let Some(a) = also {
        cmd.push(format!("-I{}", a.inc.display()));
    }
    cmd.extend(
        args.iter()
            .filter(|a| {
                !matches!(
                    a.as_str(),
                    "-show" | "--show" | "-showme" | "--udsm" | "--rcop"
                ) && !a.starts_with("-fsss-opt=")
            })
            .cloned(),
    );
    if !compile_only {
        if let Some(a) = also {
            cmd.push(format!("-L{}", a.lib.display()));
            cmd.push(format!("-Wl,-rpath,{}", a.lib.display()));
            cmd.push(format!("-l{}", a.name));
        }
        cmd.push(format!("-L{}", lib.display()));
        cmd.push(format!("-Wl,-rpath,{}", lib.display()));
        cmd.push("-lsss".into());
    }
    (cmd, show)
}

/// Checks a `-fsss-opt=` value: `no`, `mb`, `ia`, `bo` or `all`, or a
/// comma-separated list of them (the seeds' rows: `no`, `mb`, `ia`,
/// `mb,ia`; `no,bo`: one note per store, with back-off; `bo` alone keeps
/// the default `mb,ia`).
fn check_opt(opt: &str) -> Result<(), String> {
    let parts: Vec<&str> = opt.split(',').collect();
    if parts
        .iter()
        .any(|p| !["no", "mb", "ia", "bo", "all"].contains(p))
        || (parts.contains(&"no") && parts.iter().any(|p| ["ia", "all"].contains(p)))
    {
        return Err(format!(
            "-fsss-opt={opt}: expected no, mb, ia, bo, all or a list of them (no excludes ia and all)"
        ));
    }
    Ok(())
}

/// Runs `sss cc` (`cxx`: `sss c++`); the compiler's exit status.
pub fn run(args: WrapArgs, cxx: bool) -> Result<u8, String> {
    run_with(args.args(), cxx, None)
}

/// [`run`] with `also` linked too (`sss mpicc --rcop`).
pub fn run_with(args: &[String], cxx: bool, also: Option<&Also>) -> Result<u8, String> {
    let compiler = if cxx {
        std::env::var("SSS_CXX").unwrap_or_else(|_| format!("clang++-{LLVM}"))
    } else {
        std::env::var("SSS_CC").unwrap_or_else(|_| format!("clang-{LLVM}"))
    };
    let llvm_config =
        std::env::var("SSS_LLVM_CONFIG").unwrap_or_else(|_| format!("llvm-config-{LLVM}"));
    let so = plugin(&llvm_config)?;
    let (inc, lib) = locate_lib("sss.h", "sss")?;
    let (cmd, show) = command(&compiler, &so, args, &inc, &lib, also);
    let opt = args
        .iter()
        .rev()
        .find_map(|a| a.strip_prefix("-fsss-opt="))
        .unwrap_or("mb,ia");
    check_opt(opt)?;
    // The pass reads its options from the environment; `udsm` rides
    // along with the optimizations.
    let opt = if args.iter().any(|a| a == "--udsm") {
        format!("{opt},udsm")
    } else {
        opt.to_string()
    };
    if show {
        println!("SSS_RCOP_OPT={opt} {}", cmd.join(" "));
        return Ok(0);
    }
    let st = Command::new(&cmd[0])
        .args(&cmd[1..])
        .env("SSS_RCOP_OPT", &opt)
        .status()
        .map_err(|e| format!("{}: {e} (install clang-{LLVM})", cmd[0]))?;
    Ok(st.code().map_or(1, |c| u8::try_from(c).unwrap_or(1)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plugin_first_libsss_last_when_linking() {
        let a = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let (p, inc, lib) = (Path::new("/p.so"), Path::new("/i"), Path::new("/l"));
        let (c, show) = command("clang-16", p, &a(&["-O0", "x.c", "-show"]), inc, lib, None);
        assert!(show);
        assert_eq!(
            c.join(" "),
            "clang-16 -fpass-plugin=/p.so -I/i -O0 x.c -L/l -Wl,-rpath,/l -lsss"
        );
        let (c, _) = command("clang-16", p, &a(&["-c", "x.c"]), inc, lib, None);
        assert_eq!(c.join(" "), "clang-16 -fpass-plugin=/p.so -I/i -c x.c");
        let (c, _) = command("clang-16", p, &a(&["--udsm", "-c", "x.c"]), inc, lib, None);
        assert_eq!(c.join(" "), "clang-16 -fpass-plugin=/p.so -I/i -c x.c");
    }

    #[test]
    fn mpicc_with_the_pass_links_libmpi_before_libsss() {
        let a = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let (p, inc, lib) = (Path::new("/p.so"), Path::new("/i"), Path::new("/l"));
        let mpi = Also {
            inc: Path::new("/mi"),
            lib: Path::new("/ml"),
            name: "mpi",
        };
        let args = a(&["--rcop", "-fsss-opt=no", "x.c", "-o", "x"]);
        assert!(wanted(&args));
        assert!(!wanted(&a(&["-O2", "x.c"])));
        let (c, _) = command("clang-16", p, &args, inc, lib, Some(&mpi));
        assert_eq!(
            c.join(" "),
            "clang-16 -fpass-plugin=/p.so -I/i -I/mi x.c -o x -L/ml -Wl,-rpath,/ml -lmpi \
             -L/l -Wl,-rpath,/l -lsss"
        );
        let (c, _) = command(
            "clang-16",
            p,
            &a(&["--rcop", "-c", "x.c"]),
            inc,
            lib,
            Some(&mpi),
        );
        assert_eq!(
            c.join(" "),
            "clang-16 -fpass-plugin=/p.so -I/i -I/mi -c x.c"
        );
    }

    #[test]
    fn opt_lists_combine_back_off_with_either_row() {
        for good in [
            "no", "mb", "ia", "mb,ia", "bo", "all", "ia,bo", "no,bo", "no,mb",
        ] {
            assert!(check_opt(good).is_ok(), "{good}");
        }
        for bad in ["", "mc", "ia,", "no,ia", "no,all", "IA"] {
            assert!(check_opt(bad).is_err(), "{bad}");
        }
    }
}
