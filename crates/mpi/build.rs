//! Generates the profiling interface: for every `MPI_X` a file of
//! `src/ffi/` defines with `extern "C"`, a `PMPI_X` with the same
//! signature that calls it, written to `$OUT_DIR/pmpi_<file>.rs` and
//! included at the end of that file (so the signature's types resolve as
//! they do there). A tool that defines `MPI_X` itself and calls `PMPI_X`
//! then reaches the library's `MPI_X`.

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

fn functions(src: &str) -> Vec<Sig> {
    let mut out = Vec::new();
    let mut rest = src;
    while let Some(i) = rest.find("extern \"C\" fn MPI_") {
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

fn main() {
    let out_dir = std::env::var("OUT_DIR").expect("OUT_DIR");
    let dir = Path::new("src/ffi");
    println!("cargo:rerun-if-changed=src/ffi");
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("src/ffi")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .collect();
    entries.sort();
    for path in entries {
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        let src = std::fs::read_to_string(&path).expect("read");
        let mut gen = String::new();
        for (is_unsafe, name, params, ret) in functions(&src) {
            let pname = format!("P{name}");
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
        std::fs::write(Path::new(&out_dir).join(format!("pmpi_{stem}.rs")), gen).expect("write");
    }
}
