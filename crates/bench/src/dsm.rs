//! `sss bench dsm`: the Jacobi laplace of `examples/dsm/laplace.c` (built
//! here against libsss) sequentially and on the shared heap — 1 task, 2
//! tasks on one node, 2 tasks on the "hosts" 127.0.0.2 and 127.0.0.3 —
//! under each protocol and write mode; with `--argo PROGRAM`, the same
//! problem on ArgoDSM too (a program the user built against their
//! ArgoDSM: it takes `N ITERS`, prints the same `LAPLACE … checksum=…
//! time=…` line from rank 0, and runs under `mpirun`), one node, each
//! allocation policy given.
//!
//! Every run must print the sequential checksum. The table gives medians
//! of `--reps`: the sweeps' time, the wall time of the whole job (launch
//! and teardown included), and rank 0's counts (faults, datagrams, bytes
//! of written data).

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

/// A directory removed on drop.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
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
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    s.get(s.len() / 2).copied().unwrap_or(f64::NAN)
}

/// Runs the matrix. `sss` is the sss binary; `include` and `lib` hold
/// `sss.h` and libsss. Returns the Markdown report.
pub fn run(args: &DsmArgs, sss: &Path, include: &Path, lib: &Path) -> Result<String, String> {
    let dir = Scratch(std::env::temp_dir().join(format!("sss-bench-dsm-{}", std::process::id())));
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
    let mut rows = Vec::new();
    let mut want = String::new();
    let mut seq = Row {
        name: "sequential (--seq)".into(),
        sweep: vec![],
        wall: vec![],
        faults: None,
        packets: None,
        bytes: None,
    };
    for _ in 0..args.reps {
        let (_, sum, t, w) = run_one(
            Command::new(&exe).args([&n, &iters, "--seq"]),
            d,
            args.timeout,
        )?;
        want = sum;
        seq.sweep.push(t);
        seq.wall.push(w);
    }
    rows.push(seq);
    for (proto, placement) in args
        .protocols
        .iter()
        .flat_map(|p| args.placements.iter().map(move |pl| (p, pl)))
    {
        for writes in &args.writes {
            for (place, opts) in PLACES {
                let by = if args.placements.len() > 1 {
                    format!(" ({placement})")
                } else {
                    String::new()
                };
                let mut row = Row {
                    name: format!("SSS {proto}, {writes}, {place}{by}"),
                    sweep: vec![],
                    wall: vec![],
                    faults: None,
                    packets: None,
                    bytes: None,
                };
                for _ in 0..args.reps {
                    let mut cmd = Command::new(sss);
                    cmd.arg("run")
                        .args(*opts)
                        .args(["--timeout", &args.timeout.to_string()])
                        .arg(&exe)
                        .args([&n, &iters])
                        .env("SSS_DSM_PROTOCOL", proto)
                        .env("SSS_DSM_WRITES", writes)
                        .env("LAPLACE_PLACEMENT", placement)
                        .env("SSS_STATS", "json");
                    let (text, sum, t, w) = run_one(&mut cmd, d, args.timeout + 10)?;
                    if sum != want {
                        return Err(format!(
                            "{}: checksum {sum}, sequential {want}\n{text}",
                            row.name
                        ));
                    }
                    let json = text.lines().find(|l| l.contains("\"rank\":0,"));
                    row.faults = json
                        .and_then(|j| Some(count(j, "read_faults")? + count(j, "write_faults")?));
                    row.packets = json.and_then(|j| count(j, "packets"));
                    row.bytes = json.and_then(|j| count(j, "bytes_sent"));
                    row.sweep.push(t);
                    row.wall.push(w);
                }
                rows.push(row);
            }
        }
    }
    if let Some(prog) = &args.argo {
        let mut launcher = args.mpirun.split_whitespace();
        let mpirun = launcher.next().ok_or("--mpirun is empty")?;
        let opts: Vec<&str> = launcher.collect();
        // Two ranks once more with shared memory ruled out (Open MPI's TCP
        // transport, UCX over TCP): the stand-in for two hosts, as ours
        // talk udp over loopback between two addresses.
        let tcp_only = ["--mca", "btl", "self,tcp", "-x", "UCX_TLS=tcp,self"];
        for (np, hosts) in [(1u32, false), (2, false), (2, true)] {
            for &pol in &args.argo_policies {
                let place = if hosts {
                    "TCP over loopback only (as two hosts)"
                } else {
                    "one node"
                };
                let mut row = Row {
                    name: format!("ArgoDSM, {np} rank(s) {place}, policy {pol}"),
                    sweep: vec![],
                    wall: vec![],
                    faults: None,
                    packets: None,
                    bytes: None,
                };
                for _ in 0..args.reps {
                    let mut cmd = Command::new(mpirun);
                    cmd.args(&opts)
                        .args(if hosts { &tcp_only[..] } else { &[][..] })
                        .args(["-np", &np.to_string()])
                        .arg(prog)
                        .args([&n, &iters])
                        .env("ARGO_ALLOCATION_POLICY", pol.to_string())
                        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
                        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
                    let (text, sum, t, w) = run_one(&mut cmd, d, args.timeout)?;
                    if sum != want {
                        return Err(format!(
                            "{}: checksum {sum}, sequential {want}\n{text}",
                            row.name
                        ));
                    }
                    row.sweep.push(t);
                    row.wall.push(w);
                }
                rows.push(row);
            }
        }
    }
    if let Some(path) = &args.json {
        let j = serde_json::to_string_pretty(&rows).map_err(|e| e.to_string())?;
        std::fs::write(path, j).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(table(&rows, args))
}

/// The Markdown table of `rows` (medians; the first row is sequential).
pub fn table(rows: &[Row], args: &DsmArgs) -> String {
    let seq = rows.first().map_or(f64::NAN, |r| median(&r.sweep));
    let opt = |v: Option<u64>| v.map_or("—".to_string(), |x| x.to_string());
    let mut s = format!(
        "Laplace {n} × {n} doubles, {it} sweeps, medians of {r} (rank 0's counts)\n\n\
         | run | sweep s | wall s | sequential / sweep | faults | packets | bytes |\n\
         |---|---:|---:|---:|---:|---:|---:|\n",
        n = args.n,
        it = args.iters,
        r = args.reps
    );
    for r in rows {
        let t = median(&r.sweep);
        s += &format!(
            "| {} | {:.3} | {:.3} | {:.2} | {} | {} | {} |\n",
            r.name,
            t,
            median(&r.wall),
            seq / t,
            opt(r.faults),
            opt(r.packets),
            opt(r.bytes)
        );
    }
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
}
