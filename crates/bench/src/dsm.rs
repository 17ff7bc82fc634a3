//! `sss bench dsm`: the Jacobi laplace of `examples/dsm/laplace.c` (built
//! here against libsss) sequentially and on the shared heap — 1 task, 2
//! tasks on one node, 2 tasks on the "hosts" 127.0.0.2 and 127.0.0.3 —
//! under each protocol and write mode; with `--argo PROGRAM`, the same
//! problem on ArgoDSM too (a program the user built against their
//! ArgoDSM: it takes `N ITERS`, prints the same `LAPLACE … checksum=…
//! time=…` line from rank 0, and runs under `mpirun`), one node, each
//! allocation policy given.
//!
//! Every run must print the sequential checksum. Each of `--reps`
//! repetitions runs every row once, in rotated order. The table gives the
//! sweeps' time (min / median / max), the median wall time of the whole
//! job (launch and teardown included) and rank 0's counts (faults,
//! datagrams, bytes of written data); then the targets of
//! docs/dsm-performance.md judged on the medians.

use serde::Serialize;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const LAPLACE: &str = include_str!("../../../examples/dsm/laplace.c");

/// Arguments of `sss bench dsm`.
#[derive(Debug, Clone, clap::Args)]
pub struct DsmArgs {
    /// Grid side (doubles).
    #[arg(long, default_value_t = 1024)]
    pub n: u32,
    /// Sweeps.
    #[arg(long, default_value_t = 50)]
    pub iters: u32,
    /// Repetitions; the table shows medians.
    #[arg(long, default_value_t = 3)]
    pub reps: u32,
    /// Protocols, comma-separated (`SSS_DSM_PROTOCOL` spellings).
    #[arg(long, default_value = "ulrc,invalidate", value_delimiter = ',')]
    pub protocols: Vec<String>,
    /// Write modes, comma-separated (note, trap).
    #[arg(long, default_value = "note,trap", value_delimiter = ',')]
    pub writes: Vec<String>,
    /// Placements of the grids, comma-separated (`LAPLACE_PLACEMENT`:
    /// block, first_touch, cyclic, rank0).
    #[arg(long, default_value = "block", value_delimiter = ',')]
    pub placements: Vec<String>,
    /// An ArgoDSM laplace program to run beside: it takes `N ITERS` and
    /// prints rank 0's `LAPLACE … checksum=… time=…` line, as
    /// `examples/dsm/laplace.c` does (docs/dsm-performance.md).
    #[arg(long)]
    pub argo: Option<PathBuf>,
    /// ArgoDSM allocation policies to run (`ARGO_ALLOCATION_POLICY`:
    /// 0 naive, 1 cyclic, 4 first touch).
    #[arg(long, default_value = "0,4", value_delimiter = ',')]
    pub argo_policies: Vec<u32>,
    /// The launcher for the ArgoDSM program and its options, before
    /// `-np N` (Open MPI 4.1's default one-sided component failed in our
    /// runs on one node; UCX's works).
    #[arg(
        long,
        default_value = "mpirun --oversubscribe --mca osc ucx",
        allow_hyphen_values = true
    )]
    pub mpirun: String,
    /// Write every run as JSON here.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Seconds after which one run is given up.
    #[arg(long, default_value_t = 300)]
    pub timeout: u64,
}

/// One configuration's runs.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// What ran.
    pub name: String,
    /// Sweep seconds, one a repetition.
    pub sweep: Vec<f64>,
    /// Wall seconds of the whole job, one a repetition.
    pub wall: Vec<f64>,
    /// Rank 0's read and write faults (last repetition).
    pub faults: Option<u64>,
    /// Rank 0's datagrams sent (last repetition).
    pub packets: Option<u64>,
    /// Rank 0's bytes of written data sent (last repetition).
    pub bytes: Option<u64>,
}

/// The placements of the SSS runs: name and `sss run` options.
const PLACES: &[(&str, &[&str])] = &[
    ("1 task", &["-n", "1"]),
    ("2 tasks one node", &["-n", "2"]),
    ("2 hosts", &["-n", "2", "--hosts", "127.0.0.2,127.0.0.3"]),
];

/// One row's configuration.
enum Spec<'a> {
    /// The sequential program.
    Seq,
    /// Ours on the shared heap.
    Sss {
        proto: &'a str,
        placement: &'a str,
        writes: &'a str,
        place: &'static str,
        opts: &'static [&'static str],
    },
    /// The ArgoDSM program under `mpirun`; `hosts`: shared memory ruled
    /// out (Open MPI's TCP transport, UCX over TCP), the stand-in for two
    /// hosts, as ours talk udp over loopback between two addresses.
    Argo { np: u32, hosts: bool, pol: u32 },
}

impl Spec<'_> {
    fn name(&self, by_placement: bool) -> String {
        match self {
            Spec::Seq => "sequential (--seq)".into(),
            Spec::Sss {
                proto,
                placement,
                writes,
                place,
                ..
            } => {
                let by = if by_placement {
                    format!(" ({placement})")
                } else {
                    String::new()
                };
                format!("SSS {proto}, {writes}, {place}{by}")
            }
            Spec::Argo { np, hosts, pol } => {
                let place = if *hosts {
                    "TCP over loopback only (as two hosts)"
                } else {
                    "one node"
                };
                format!("ArgoDSM, {np} rank(s) {place}, policy {pol}")
            }
        }
    }

    fn command(
        &self,
        args: &DsmArgs,
        sss: &Path,
        exe: &Path,
        n: &str,
        iters: &str,
    ) -> Result<Command, String> {
        Ok(match self {
            Spec::Seq => {
                let mut cmd = Command::new(exe);
                cmd.args([n, iters, "--seq"]);
                cmd
            }
            Spec::Sss {
                proto,
                placement,
                writes,
                opts,
                ..
            } => {
                let mut cmd = Command::new(sss);
                cmd.arg("run")
                    .args(*opts)
                    .args(["--timeout", &args.timeout.to_string()])
                    .arg(exe)
                    .args([n, iters])
                    .env("SSS_DSM_PROTOCOL", proto)
                    .env("SSS_DSM_WRITES", writes)
                    .env("LAPLACE_PLACEMENT", placement)
                    .env("SSS_STATS", "json");
                cmd
            }
            Spec::Argo { np, hosts, pol } => {
                let prog = args.argo.as_ref().ok_or("--argo is not given")?;
                let mut launcher = args.mpirun.split_whitespace();
                let mpirun = launcher.next().ok_or("--mpirun is empty")?;
                let tcp_only = ["--mca", "btl", "self,tcp", "-x", "UCX_TLS=tcp,self"];
                let mut cmd = Command::new(mpirun);
                cmd.args(launcher)
                    .args(if *hosts { &tcp_only[..] } else { &[][..] })
                    .args(["-np", &np.to_string()])
                    .arg(prog)
                    .args([n, iters])
                    .env("ARGO_ALLOCATION_POLICY", pol.to_string())
                    .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
                    .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
                cmd
            }
        })
    }
}

/// The value after `key=` in `line`.
fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(key)?.strip_prefix('='))
}

/// The number after `"name":` in `json`.
fn count(json: &str, name: &str) -> Option<u64> {
    json.split(&format!("\"{name}\":"))
        .nth(1)?
        .split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

/// Runs `cmd` with its output in `dir`, killed after `timeout` seconds;
/// its stdout+stderr, the LAPLACE line's checksum and time, and the wall
/// time.
fn run_one(
    cmd: &mut Command,
    dir: &Path,
    timeout: u64,
) -> Result<(String, String, f64, f64), String> {
    let path = dir.join("out");
    let file = std::fs::File::create(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let err = file.try_clone().map_err(|e| e.to_string())?;
    let t0 = Instant::now();
    let mut child = cmd
        .stdout(file)
        .stderr(err)
        .spawn()
        .map_err(|e| format!("{cmd:?}: {e}"))?;
    let status = loop {
        match child.try_wait().map_err(|e| e.to_string())? {
            Some(s) => break s,
            None if t0.elapsed() > Duration::from_secs(timeout) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("{cmd:?}: no end after {timeout} s"));
            }
            None => std::thread::sleep(Duration::from_millis(5)),
        }
    };
    let wall = t0.elapsed().as_secs_f64();
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let line = text.lines().find(|l| l.starts_with("LAPLACE"));
    let (Some(sum), Some(t)) = (
        line.and_then(|l| field(l, "checksum")),
        line.and_then(|l| field(l, "time"))
            .and_then(|t| t.parse().ok()),
    ) else {
        return Err(format!("{cmd:?}: no LAPLACE line ({status})\n{text}"));
    };
    Ok((text.clone(), sum.to_string(), t, wall))
}

fn median(v: &[f64]) -> f64 {
    crate::plan::median_of(&mut v.to_vec())
}

/// Runs the matrix. `sss` is the sss binary; `include` and `lib` hold
/// `sss.h` and libsss. Returns the Markdown report.
pub fn run(args: &DsmArgs, sss: &Path, include: &Path, lib: &Path) -> Result<String, String> {
    let dir =
        crate::Scratch(std::env::temp_dir().join(format!("sss-bench-dsm-{}", std::process::id())));
    std::fs::create_dir_all(&dir.0).map_err(|e| format!("{}: {e}", dir.0.display()))?;
    let d = dir.0.as_path();
    let src = d.join("laplace.c");
    std::fs::write(&src, LAPLACE).map_err(|e| format!("{}: {e}", src.display()))?;
    let exe = d.join("laplace");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let st = Command::new(&cc)
        .args(["-std=c11", "-O2", "-o"])
        .arg(&exe)
        .arg(&src)
        .arg(format!("-I{}", include.display()))
        .arg(format!("-L{}", lib.display()))
        .arg("-lsss")
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .status()
        .map_err(|e| format!("{cc}: {e}"))?;
    if !st.success() {
        return Err(format!("{cc} failed to build laplace ({st})"));
    }
    let (n, iters) = (args.n.to_string(), args.iters.to_string());
    let mut specs = vec![Spec::Seq];
    for (proto, placement) in args
        .protocols
        .iter()
        .flat_map(|p| args.placements.iter().map(move |pl| (p, pl)))
    {
        for writes in &args.writes {
            for &(place, opts) in PLACES {
                specs.push(Spec::Sss {
                    proto,
                    placement,
                    writes,
                    place,
                    opts,
                });
            }
        }
    }
    if args.argo.is_some() {
        for (np, hosts) in [(1u32, false), (2, false), (2, true)] {
            for &pol in &args.argo_policies {
                specs.push(Spec::Argo { np, hosts, pol });
            }
        }
    }
    let mut rows: Vec<Row> = specs
        .iter()
        .map(|s| Row {
            name: s.name(args.placements.len() > 1),
            sweep: vec![],
            wall: vec![],
            faults: None,
            packets: None,
            bytes: None,
        })
        .collect();
    // Every repetition runs every row once, starting one row further on
    // each time: a slow spell of the machine hits all rows alike, not the
    // repetitions of one.
    let mut want = String::new();
    for rep in 0..args.reps as usize {
        // The sequential row first in every repetition: its checksum is
        // the one every other run must print.
        for k in std::iter::once(0)
            .chain((0..specs.len() - 1).map(|i| 1 + (i + rep) % (specs.len() - 1)))
        {
            let row = &mut rows[k];
            let mut cmd = specs[k].command(args, sss, &exe, &n, &iters)?;
            let limit = match specs[k] {
                Spec::Sss { .. } => args.timeout + 10,
                _ => args.timeout,
            };
            let (text, sum, t, w) = run_one(&mut cmd, d, limit)?;
            if k == 0 {
                want = sum;
            } else if sum != want {
                return Err(format!(
                    "{}: checksum {sum}, sequential {want}\n{text}",
                    row.name
                ));
            }
            if let Spec::Sss { .. } = specs[k] {
                let json = text.lines().find(|l| l.contains("\"rank\":0,"));
                row.faults =
                    json.and_then(|j| Some(count(j, "read_faults")? + count(j, "write_faults")?));
                row.packets = json.and_then(|j| count(j, "packets"));
                row.bytes = json.and_then(|j| count(j, "bytes_sent"));
            }
            row.sweep.push(t);
            row.wall.push(w);
        }
    }
    if let Some(path) = &args.json {
        let j = serde_json::to_string_pretty(&rows).map_err(|e| e.to_string())?;
        std::fs::write(path, j).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(table(&rows, args) + &targets(&specs, &rows))
}

/// The Markdown table of `rows` (medians; the first row is sequential).
pub fn table(rows: &[Row], args: &DsmArgs) -> String {
    let seq = rows.first().map_or(f64::NAN, |r| median(&r.sweep));
    let opt = |v: Option<u64>| v.map_or("—".to_string(), |x| x.to_string());
    let mut s = format!(
        "Laplace {n} × {n} doubles, {it} sweeps, {r} repetitions, each running every row \
         once (rank 0's counts)\n\n\
         | run | sweep s min / median / max | wall s (median) | sequential / sweep | faults | packets | bytes |\n\
         |---|---:|---:|---:|---:|---:|---:|\n",
        n = args.n,
        it = args.iters,
        r = args.reps
    );
    for r in rows {
        let t = median(&r.sweep);
        let lo = r.sweep.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = r.sweep.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        s += &format!(
            "| {} | {lo:.3} / {t:.3} / {hi:.3} | {:.3} | {:.2} | {} | {} | {} |\n",
            r.name,
            median(&r.wall),
            seq / t,
            opt(r.faults),
            opt(r.packets),
            opt(r.bytes)
        );
    }
    s
}

/// The targets of docs/dsm-performance.md, judged on the medians: one
/// task against the sequential program, two tasks against ArgoDSM's best
/// policy in the same place, and the time outside the sweeps.
fn targets(specs: &[Spec<'_>], rows: &[Row]) -> String {
    let med = |k: usize| median(&rows[k].sweep);
    let seq = med(0);
    let argo_best = |two_hosts: bool| {
        specs
            .iter()
            .enumerate()
            .filter(|(_, s)| matches!(s, Spec::Argo { np: 2, hosts, .. } if *hosts == two_hosts))
            .map(|(k, _)| med(k))
            .fold(f64::INFINITY, f64::min)
    };
    let mut s = String::from(
        "\nTargets (ratios of medians):\n\n| run | ratio | against | target |\n|---|---:|---|---:|\n",
    );
    let mut outside: f64 = 0.0;
    for (k, spec) in specs.iter().enumerate() {
        let Spec::Sss { writes, place, .. } = spec else {
            continue;
        };
        outside = outside.max(median(&rows[k].wall) - med(k));
        let trap = *writes == "trap";
        let (against, base, target) = match *place {
            "1 task" => ("sequential", seq, if trap { 1.5 } else { 1.2 }),
            "2 tasks one node" => (
                "ArgoDSM's best, 2 ranks one node",
                argo_best(false),
                if trap { 1.0 } else { 0.7 },
            ),
            _ => (
                "ArgoDSM's best, 2 ranks TCP only",
                argo_best(true),
                if trap { 1.0 } else { 0.7 },
            ),
        };
        if !base.is_finite() {
            continue;
        }
        let ratio = med(k) / base;
        let verdict = if ratio <= target { "met" } else { "missed" };
        s += &format!(
            "| {} | {ratio:.2} | {against} | ≤ {target} ({verdict}) |\n",
            rows[k].name
        );
    }
    let verdict = if outside <= 0.3 { "met" } else { "missed" };
    s +=
        &format!("| most wall − sweep of any SSS row | {outside:.3} s | | ≤ 0.3 s ({verdict}) |\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_laplace_line_and_counts() {
        let l = "LAPLACE n=64 iters=4 tasks=2 checksum=00ff time=0.012500";
        assert_eq!(field(l, "checksum"), Some("00ff"));
        assert_eq!(field(l, "time"), Some("0.012500"));
        assert_eq!(field(l, "tasks"), Some("2"));
        let j = r#"{"dsm":{"rank":0,"read_faults":12,"write_faults":3,"packets":7}}"#;
        assert_eq!(count(j, "read_faults"), Some(12));
        assert_eq!(count(j, "packets"), Some(7));
        assert_eq!(count(j, "bytes_sent"), None);
    }

    #[test]
    fn targets_compare_with_argodsm_best_policy_in_the_same_place() {
        let row = |name: &str, sweep: f64, wall: f64| Row {
            name: name.into(),
            sweep: vec![sweep],
            wall: vec![wall],
            faults: None,
            packets: None,
            bytes: None,
        };
        let sss = |writes, place| Spec::Sss {
            proto: "ulrc",
            placement: "block",
            writes,
            place,
            opts: &[],
        };
        let specs = [
            Spec::Seq,
            sss("note", "1 task"),
            sss("note", "2 hosts"),
            sss("trap", "2 tasks one node"),
            Spec::Argo {
                np: 2,
                hosts: true,
                pol: 0,
            },
            Spec::Argo {
                np: 2,
                hosts: true,
                pol: 4,
            },
            Spec::Argo {
                np: 2,
                hosts: false,
                pol: 4,
            },
        ];
        let rows = [
            row("seq", 0.040, 0.05),
            row("note 1", 0.044, 0.10),
            row("note hosts", 0.030, 0.50),
            row("trap node", 0.041, 0.09),
            row("argo naive", 2.0, 2.5),
            row("argo ft", 0.040, 0.8),
            row("argo node", 0.040, 0.5),
        ];
        let t = targets(&specs, &rows);
        assert!(
            t.contains("| note 1 | 1.10 | sequential | ≤ 1.2 (met) |"),
            "{t}"
        );
        assert!(
            t.contains("| note hosts | 0.75 | ArgoDSM's best, 2 ranks TCP only | ≤ 0.7 (missed) |"),
            "{t}"
        );
        assert!(
            t.contains("| trap node | 1.02 | ArgoDSM's best, 2 ranks one node | ≤ 1 (missed) |"),
            "{t}"
        );
        assert!(t.contains("| 0.470 s | | ≤ 0.3 s (missed) |"), "{t}");
    }
}
