//! `sss bench sswait`: a ring pass, a barrier and pairs ping-ponging among
//! N tasks on one node with spin-only, block-only, SS-Wait and the default
//! wait (the task program `sss-sswait-bench`), and the same under Open
//! MPI, default and with `--mca mpi_yield_when_idle 1`; N = 2 (cores free)
//! and N = 8 (4× oversubscribed on 2 cores).

use std::path::{Path, PathBuf};
use std::process::Command;

/// Arguments of `sss bench sswait`.
#[derive(Debug, Clone, clap::Args)]
pub struct SswaitArgs {
    /// Few rounds, for a smoke test.
    #[arg(long)]
    pub quick: bool,
    /// Skip the Open MPI rows.
    #[arg(long)]
    pub no_mpi: bool,
    /// Write every figure as JSON here.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Repetitions of every row, interleaved; the table shows medians
    /// (default 5, 1 with --quick).
    #[arg(long)]
    pub reps: Option<u32>,
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// One measured row: (tasks, policy, µs per ring hop, µs per barrier, µs
/// per pair round trip).
type Row = (u32, String, f64, f64, f64);

fn parse(out: &str, n: u32, policy: &str) -> Option<Row> {
    let mut ring = None;
    let mut bar = None;
    let mut pairs = None;
    for l in out.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() == 4 {
            let v = f[3].parse::<f64>().ok();
            match f[0] {
                "ring" => ring = v,
                "barrier" => bar = v,
                "pairs" => pairs = v,
                _ => {}
            }
        }
    }
    Some((n, policy.to_string(), ring?, bar?, pairs?))
}

fn task_program(exe: &Path) -> Option<PathBuf> {
    let dir = exe.parent()?;
    [
        dir.join("sss-sswait-bench"),
        dir.join("../sss-sswait-bench"),
    ]
    .into_iter()
    .find(|p| p.is_file())
}

/// Runs the table; returns it as Markdown.
pub fn run(args: &SswaitArgs, exe: &Path) -> Result<String, String> {
    let prog = task_program(exe)
        .ok_or("sss-sswait-bench not found beside sss (cargo build -p sss-idm)")?;
    let mut rows: Vec<Row> = Vec::new();
    let mut notes = Vec::new();
    // Open MPI's ring program lives here until the table is done.
    let scratch =
        crate::Scratch(std::env::temp_dir().join(format!("sss-sswait-{}", std::process::id())));
    let mpi = if args.no_mpi {
        notes.push("Open MPI: skipped (--no-mpi)".to_string());
        None
    } else {
        let dir = scratch.0.clone();
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        match crate::mpi::setup(&dir) {
            Ok(_) => {
                let src = dir.join("ring.c");
                let bin = dir.join("ring");
                std::fs::write(&src, include_str!("../c/ring.c")).map_err(|e| e.to_string())?;
                let ok = Command::new("mpicc")
                    .args(["-O2", "-o"])
                    .arg(&bin)
                    .arg(&src)
                    .status()
                    .is_ok_and(|s| s.success());
                if ok {
                    Some(bin)
                } else {
                    notes.push("Open MPI: mpicc failed".into());
                    None
                }
            }
            Err(e) => {
                notes.push(format!("Open MPI: {e}"));
                None
            }
        }
    };
    let reps = args.reps.unwrap_or(if args.quick { 1 } else { 5 }).max(1);
    for n in [2u32, 8] {
        let rounds = match (args.quick, n) {
            (true, 2) => 200,
            (true, _) => 10,
            (false, 2) => 4000,
            (false, _) => 400,
        };
        let mut names: Vec<&str> = vec!["spin", "block", "sswait", "default"];
        // Oversubscribed, our tasks bind to CPUs (SSS_BIND=auto): show
        // SS-Wait without it, and Open MPI with its own binding.
        if n > 2 {
            names.push("sswait-unbound");
        }
        if mpi.is_some() {
            names.extend(["mpi", "mpi-yield"]);
            if n > 2 {
                names.push("mpi-bind");
            }
        }
        let mut samples: Vec<[Vec<f64>; 3]> = vec![Default::default(); names.len()];
        for rep in 0..reps as usize {
            // Rotate the order so drift hits every contender alike.
            for k in 0..names.len() {
                let i = (k + rep) % names.len();
                let name = names[i];
                let out = if let Some(bin) = mpi.as_ref().filter(|_| name.starts_with("mpi")) {
                    let mut c = Command::new("mpirun");
                    c.args([
                        "-np",
                        &n.to_string(),
                        "--oversubscribe",
                        "--mca",
                        "btl",
                        "self,vader",
                    ]);
                    if crate::mpi::is_root() {
                        c.arg("--allow-run-as-root");
                    }
                    if name == "mpi-yield" {
                        c.args(["--mca", "mpi_yield_when_idle", "1"]);
                    }
                    if name == "mpi-bind" {
                        c.args(["--bind-to", "core:overload-allowed", "--map-by", "core"]);
                    }
                    c.arg(bin).arg(rounds.to_string()).output()
                } else {
                    let (policy, bind) = match name {
                        "sswait-unbound" => ("sswait", "none"),
                        p => (p, "auto"),
                    };
                    Command::new(exe)
                        .args(["run", "-n", &n.to_string(), "--timeout", "120"])
                        .arg(&prog)
                        .args([policy, &rounds.to_string()])
                        .env("SSS_BIND", bind)
                        .output()
                };
                match out
                    .ok()
                    .and_then(|o| parse(&String::from_utf8_lossy(&o.stdout), n, name))
                {
                    Some((_, _, r, b, p)) => {
                        samples[i][0].push(r);
                        samples[i][1].push(b);
                        samples[i][2].push(p);
                    }
                    None => notes.push(format!("{name} with {n} tasks failed (repetition {rep})")),
                }
            }
        }
        for (i, name) in names.iter().enumerate() {
            let [r, b, p] = &mut samples[i];
            if !r.is_empty() {
                rows.push((n, name.to_string(), median(r), median(b), median(p)));
            }
        }
    }
    let mut md = format!(
        "Medians of {reps} interleaved repetitions.\n\n| tasks | wait | ring hop (µs) | barrier (µs) | pairs round trip (µs) |\n|---:|---|---:|---:|---:|\n"
    );
    for (n, p, r, b, q) in &rows {
        md.push_str(&format!("| {n} | {p} | {r:.2} | {b:.2} | {q:.2} |\n"));
    }
    for n in [2u32, 8] {
        let get = |p: &str| {
            rows.iter()
                .find(|r| r.0 == n && r.1 == p)
                .map(|r| (r.2, r.3, r.4))
        };
        if let (Some(s), Some(b), Some(w)) = (get("spin"), get("block"), get("sswait")) {
            let best = (s.0.min(b.0), s.1.min(b.1));
            md.push_str(&format!(
                "\nN = {n}: SS-Wait / better of spin and block = {:.2} (ring), {:.2} (barrier); target ≤ 1.2",
                w.0 / best.0,
                w.1 / best.1
            ));
            for m in ["mpi", "mpi-yield", "mpi-bind"] {
                if let Some(x) = get(m) {
                    md.push_str(&format!("; SS-Wait / {m} ring = {:.2}", w.0 / x.0));
                }
            }
            if let (Some(u), Some(x)) = (get("sswait-unbound"), get("mpi")) {
                md.push_str(&format!("; unbound SS-Wait / mpi ring = {:.2}", u.0 / x.0));
            }
            md.push('\n');
            if let Some(d) = get("default") {
                let best = (s.0.min(b.0), s.1.min(b.1), s.2.min(b.2));
                md.push_str(&format!(
                    "\nN = {n}: default wait / better of spin and block = {:.2} (ring), {:.2} (barrier), {:.2} (pairs); target ≤ 1.2",
                    d.0 / best.0,
                    d.1 / best.1,
                    d.2 / best.2
                ));
                if let Some(x) = get("mpi") {
                    md.push_str(&format!(
                        "; default / mpi pairs = {:.2} (target ≤ 0.5 for N = 8)",
                        d.2 / x.2
                    ));
                }
                md.push('\n');
            }
        }
    }
    for note in &notes {
        md.push_str(&format!("\n{note}\n"));
    }
    if let Some(path) = &args.json {
        let v: Vec<serde_json::Value> = rows
            .iter()
            .map(|(n, p, r, b, q)| serde_json::json!({"tasks": n, "wait": p, "ring_us": r, "barrier_us": b, "pairs_us": q}))
            .collect();
        let doc = serde_json::json!({"sswait": v, "notes": notes});
        std::fs::write(
            path,
            serde_json::to_vec_pretty(&doc).map_err(|e| e.to_string())?,
        )
        .map_err(|e| e.to_string())?;
    }
    Ok(md)
}
