//! Generates the profiling interface: for every `MPI_X` a file of
//! `src/ffi/` defines with `extern "C"`, a `PMPI_X` with the same
//! signature that calls it, written to `$OUT_DIR/pmpi_<file>.rs` and
//! included at the end of that file (so the signature's types resolve as
//! they do there); and for every Fortran `mpi_x_` of `src/ffi/fortran/`
//! (written out or made by its `fortran!` macro) a `pmpi_x_`, in
//! `$OUT_DIR/pmpi_fortran_<file>.rs`. A tool that defines `MPI_X` (or
//! `mpi_x_`) itself and calls the `PMPI_`/`pmpi_` name then reaches the
//! library's function.

use std::fmt::Write as _;
use std::path::Path;

/// Splits `s` at commas outside brackets.
fn split_top(s: &str) -> Vec<String> {
    let (mut out, mut cur, mut depth) = (Vec::new(), String::new(), 0i32);
    for c in s.chars() {
        match c {
            '<' | '(' | '[' => depth += 1,
            '>' | ')' | ']' => depth -= 1,
            ',' if depth == 0 => {
                out.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    out.push(cur);
    out.into_iter()
        .map(|p| p.trim().to_string())
        .filter(|p| !p.is_empty())
        .collect()
}

/// The `extern "C" fn MPI_…` definitions of `src`: (unsafe, name,
/// parameters as (name, type), return type).
type Sig = (bool, String, Vec<(String, String)>, String);

fn functions(src: &str, prefix_of_name: &str) -> Vec<Sig> {
    let needle = format!("extern \"C\" fn {prefix_of_name}");
    let mut out = Vec::new();
    let mut rest = src;
    while let Some(i) = rest.find(&needle) {
        let before = &rest[..i];
        let line_start = before.rfind('\n').map_or(0, |n| n + 1);
        let prefix = before[line_start..].trim();
        let after = &rest[i + "extern \"C\" fn ".len()..];
        rest = after;
        // Only items at the top of a file (`pub`), not macro bodies.
        if !(prefix == "pub" || prefix == "pub unsafe") {
            continue;
        }
        let Some(open) = after.find('(') else {
            continue;
        };
        let name = after[..open].trim().to_string();
        if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        let mut depth = 0;
        let mut close = None;
        for (k, c) in after[open..].char_indices() {
            match c {
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        close = Some(open + k);
                        break;
                    }
                }
                _ => {}
            }
        }
        let Some(close) = close else { continue };
        let params = split_top(&after[open + 1..close])
            .into_iter()
            .filter_map(|p| {
                let (n, t) = p.split_once(':')?;
                Some((n.trim().to_string(), t.trim().to_string()))
            })
            .collect();
        let tail = &after[close + 1..];
        let Some(body) = tail.find('{') else { continue };
        let ret = tail[..body]
            .trim()
            .trim_start_matches("->")
            .trim()
            .to_string();
        out.push((prefix.contains("unsafe"), name, params, ret));
    }
    out
}

/// The Rust type of a `fortran!` argument kind (the macro's `@ty` arms).
fn fortran_ty(kind: &str) -> Option<&'static str> {
    Some(match kind {
        "v" | "h" => "*const crate::ffi::fortran::Fint",
        "b" => "*mut std::ffi::c_void",
        "p" | "s" | "o" | "i" | "w" => "*mut crate::ffi::fortran::Fint",
        "a" => "*const i64",
        "q" => "*mut i64",
        "c" => "*mut i64",
        "x" => "*const i64",
        _ => return None,
    })
}

/// The functions `fortran!(… name => C; arg: kind, …)` invocations in
/// `src` make, as signatures (with the `ierr` every one ends with).
fn fortran_macro_functions(src: &str) -> Vec<Sig> {
    let mut out = Vec::new();
    let mut rest = src;
    while let Some(i) = rest.find("\nfortran!(") {
        rest = &rest[i + "\nfortran!(".len()..];
        let Some(end) = rest.find(");") else { break };
        let body: String = rest[..end]
            .lines()
            .filter(|l| !l.trim_start().starts_with("///"))
            .collect::<Vec<_>>()
            .join(" ");
        let Some((name, tail)) = body.split_once("=>") else {
            continue;
        };
        let Some((_, args)) = tail.split_once(';') else {
            continue;
        };
        let mut params = Vec::new();
        for a in split_top(args) {
            // A kind this table lacks would leave the function without its
            // pmpi_ name: stop the build instead.
            let (n, t) = a
                .split_once(':')
                .and_then(|(n, k)| Some((n.trim(), fortran_ty(k.trim())?)))
                .unwrap_or_else(|| panic!("fortran!({}): unknown argument {a:?}", name.trim()));
            params.push((n.to_string(), t.to_string()));
        }
        params.push(("ierr".into(), "*mut crate::ffi::fortran::Fint".into()));
        out.push((true, name.trim().to_string(), params, String::new()));
    }
    out
}

fn rs_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("source directory")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .collect();
    entries.sort();
    entries
}

fn main() {
    let out_dir = std::env::var("OUT_DIR").expect("OUT_DIR");
    println!("cargo:rerun-if-changed=src/ffi");
    let mut jobs: Vec<(String, Vec<Sig>)> = Vec::new();
    for path in rs_files(Path::new("src/ffi")) {
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        let src = std::fs::read_to_string(&path).expect("read");
        jobs.push((format!("pmpi_{stem}.rs"), functions(&src, "MPI_")));
    }
    for path in rs_files(Path::new("src/ffi/fortran")) {
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        let src = std::fs::read_to_string(&path).expect("read");
        let mut sigs = functions(&src, "mpi_");
        sigs.extend(fortran_macro_functions(&src));
        jobs.push((format!("pmpi_fortran_{stem}.rs"), sigs));
    }
    for (file, sigs) in jobs {
        let mut gen = String::new();
        for (is_unsafe, name, params, ret) in sigs {
            let pname = format!("p{name}");
            let pname = if name.starts_with("MPI_") {
                format!("P{name}")
            } else {
                pname
            };
            let decl: Vec<String> = params.iter().map(|(n, t)| format!("{n}: {t}")).collect();
            let args: Vec<&str> = params.iter().map(|(n, _)| n.as_str()).collect();
            let ret = if ret.is_empty() {
                String::new()
            } else {
                format!(" -> {ret}")
            };
            let _ = writeln!(gen, "/// The profiling interface's name of [`{name}`].");
            if is_unsafe {
                let _ = writeln!(gen, "///\n/// # Safety\n/// As [`{name}`].");
            }
            let _ = writeln!(gen, "#[no_mangle]");
            if is_unsafe {
                let _ = writeln!(
                    gen,
                    "pub unsafe extern \"C\" fn {pname}({}){ret} {{\n    \
                     // SAFETY: the caller's contract, which is {name}'s.\n    \
                     unsafe {{ {name}({}) }}\n}}\n",
                    decl.join(", "),
                    args.join(", ")
                );
            } else {
                let _ = writeln!(
                    gen,
                    "pub extern \"C\" fn {pname}({}){ret} {{\n    {name}({})\n}}\n",
                    decl.join(", "),
                    args.join(", ")
                );
            }
        }
        std::fs::write(Path::new(&out_dir).join(file), gen).expect("write");
    }
}
