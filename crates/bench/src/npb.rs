//! `sss bench npb --source DIR`: the NAS Parallel Benchmarks (MPI
//! version, a source tree the user supplies) built with `sss mpif90` /
//! `sss mpicc` and with Open MPI's and MPICH's wrappers, then run side
//! by side, interleaved, in three conditions (the layout of seed 000's
//! Table 6):
//!
//! - **dedicated**: one job of `--np` ranks;
//! - **oversubscribed**: one job of `--over` ranks (default 4 × `--np`);
//! - **time-shared**: two jobs of `--np` ranks at once.
//!
//! Every run must print NPB's `Verification = SUCCESSFUL`; the table
//! gives the median "Time in seconds" and each contender's time over
//! ours (above 1 we are faster), with geometric means per condition.
//! Nothing of the suite is kept: it is copied, configured and built
//! under a temporary directory.

use crate::load::{Load, Monitor};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// Arguments of `sss bench npb`.
#[derive(Debug, Clone, clap::Args)]
pub struct NpbArgs {
    /// The suite's MPI directory (`NPB3.4-MPI`, with `config/` and the
    /// kernels' directories).
    #[arg(long)]
    pub source: PathBuf,
    /// Problem class (S, W, A, …).
    #[arg(long, default_value = "W")]
    pub class: String,
    /// Kernels, comma-separated.
    #[arg(long, default_value = "ep,mg,cg,is,ft,lu,sp,bt", value_delimiter = ',')]
    pub kernels: Vec<String>,
    /// Ranks of a dedicated job (a square and a power of two suits
    /// every kernel).
    #[arg(long, default_value_t = 4)]
    pub np: u32,
    /// Ranks of the oversubscribed job (default 4 × np).
    #[arg(long)]
    pub over: Option<u32>,
    /// Repetitions, interleaved; the table shows medians.
    #[arg(long, default_value_t = 3)]
    pub reps: u32,
    /// Skip the Open MPI rows.
    #[arg(long)]
    pub no_ompi: bool,
    /// Skip the MPICH rows.
    #[arg(long)]
    pub no_mpich: bool,
    /// Write every figure as JSON here.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Seconds after which one run is given up.
    #[arg(long, default_value_t = 600)]
    pub timeout: u64,
}

/// An MPI implementation under test: how it compiles and how it runs.
#[derive(Debug, Clone)]
struct Contender {
    name: &'static str,
    fc: Vec<String>,
    cc: Vec<String>,
    fflags: &'static str,
    /// The launch command for `n` ranks, before the program.
    launch: fn(&Path, u32) -> Vec<String>,
    /// Which build it runs (contenders may share one).
    build: &'static str,
}

fn sss_launch(sss: &Path, n: u32) -> Vec<String> {
    vec![
        sss.display().to_string(),
        "run".into(),
        "-n".into(),
        n.to_string(),
    ]
}

fn ompi_launch(_: &Path, n: u32) -> Vec<String> {
    [
        "mpirun.openmpi",
        "--allow-run-as-root",
        "--oversubscribe",
        "-np",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([n.to_string()])
    .collect()
}

fn ompi_yield_launch(p: &Path, n: u32) -> Vec<String> {
    let mut v = ompi_launch(p, n);
    v.splice(
        1..1,
        ["--mca".into(), "mpi_yield_when_idle".into(), "1".into()],
    );
    v
}

fn mpich_launch(_: &Path, n: u32) -> Vec<String> {
    vec!["mpiexec.mpich".into(), "-n".into(), n.to_string()]
}

fn have(cmd: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {cmd}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Every contender compiles with the same options. `-fallow-invalid-boz`:
/// NPB 3.4's `randi8.f` writes hexadecimal constants as `X'…'`, which
/// gfortran refuses since version 10 unless told (3.4.1 has `Z'…'`).
fn contenders(args: &NpbArgs, sss: &Path) -> Vec<Contender> {
    let s = sss.display().to_string();
    let mut v = vec![Contender {
        name: "SSS",
        fc: vec![s.clone(), "mpif90".into()],
        cc: vec![s, "mpicc".into()],
        fflags: "-O2 -fallow-invalid-boz",
        launch: sss_launch,
        build: "sss",
    }];
    if !args.no_ompi && have("mpif90.openmpi") && have("mpirun.openmpi") {
        for (name, launch) in [
            ("Open MPI", ompi_launch as fn(&Path, u32) -> Vec<String>),
            ("Open MPI, yield when idle", ompi_yield_launch),
        ] {
            v.push(Contender {
                name,
                fc: vec!["mpif90.openmpi".into()],
                cc: vec!["mpicc.openmpi".into()],
                fflags: "-O2 -fallow-argument-mismatch -fallow-invalid-boz",
                launch,
                build: "ompi",
            });
        }
    }
    if !args.no_mpich && have("mpif90.mpich") && have("mpiexec.mpich") {
        v.push(Contender {
            name: "MPICH",
            fc: vec!["mpif90.mpich".into()],
            cc: vec!["mpicc.mpich".into()],
            fflags: "-O2 -fallow-argument-mismatch -fallow-invalid-boz",
            launch: mpich_launch,
            build: "mpich",
        });
    }
    v
}

fn copy_tree(from: &Path, to: &Path) -> Result<(), String> {
    let st = Command::new("cp")
        .arg("-r")
        .arg(from)
        .arg(to)
        .status()
        .map_err(|e| format!("cp: {e}"))?;
    if !st.success() {
        return Err(format!("copying {} failed", from.display()));
    }
    Ok(())
}

/// Copies the suite for `c` and writes its `config/make.def`.
fn prepare(src: &Path, root: &Path, c: &Contender) -> Result<PathBuf, String> {
    let dir = root.join(c.build);
    if dir.exists() {
        return Ok(dir);
    }
    copy_tree(src, &dir)?;
    // Objects and modules of an earlier build (maybe with another MPI's
    // headers) must not be reused.
    clean(&dir)?;
    let def = format!(
        "MPIFC = {}\nFLINK = $(MPIFC)\nFMPI_LIB =\nFMPI_INC =\nFFLAGS = {}\nFLINKFLAGS = $(FFLAGS)\n\
         MPICC = {}\nCLINK = $(MPICC)\nCMPI_LIB =\nCMPI_INC =\nCFLAGS = -O2\nCLINKFLAGS = $(CFLAGS)\n\
         CC = cc -g\nBINDIR = ../bin\nRAND = randi8\n",
        c.fc.join(" "),
        c.fflags,
        c.cc.join(" ")
    );
    std::fs::write(dir.join("config/make.def"), def).map_err(|e| format!("make.def: {e}"))?;
    std::fs::create_dir_all(dir.join("bin")).map_err(|e| format!("bin: {e}"))?;
    Ok(dir)
}

/// Removes build products under `dir`: objects, modules, libraries,
/// NPB's generated parameters and binaries.
fn clean(dir: &Path) -> Result<(), String> {
    for e in std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))? {
        let p = e.map_err(|e| e.to_string())?.path();
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if p.is_dir() {
            if name == "bin" {
                std::fs::remove_dir_all(&p).map_err(|e| format!("{}: {e}", p.display()))?;
            } else {
                clean(&p)?;
            }
        } else if name.ends_with(".o")
            || name.ends_with(".mod")
            || name.ends_with(".a")
            || name == "npbparams.h"
        {
            std::fs::remove_file(&p).map_err(|e| format!("{}: {e}", p.display()))?;
        }
    }
    Ok(())
}

/// Builds `kernel` for `n` ranks; the binary.
fn build(dir: &Path, kernel: &str, class: &str, n: u32) -> Result<PathBuf, String> {
    let exe = dir.join("bin").join(format!("{kernel}.{class}.x"));
    let tagged = dir.join("bin").join(format!("{kernel}.{class}.{n}.x"));
    if tagged.is_file() {
        return Ok(tagged);
    }
    let out = Command::new("make")
        .arg(kernel)
        .arg(format!("NPROCS={n}"))
        .arg(format!("CLASS={class}"))
        .current_dir(dir)
        .output()
        .map_err(|e| format!("make: {e}"))?;
    if !out.status.success() || !exe.is_file() {
        let err = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = err.lines().rev().take(8).collect();
        return Err(format!(
            "building {kernel} (class {class}, {n} ranks) in {} failed:\n{}",
            dir.display(),
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        ));
    }
    std::fs::rename(&exe, &tagged).map_err(|e| format!("{}: {e}", exe.display()))?;
    Ok(tagged)
}

/// NPB's own verdict and time, from its report.
fn parse(out: &str) -> Option<f64> {
    let ok = out
        .lines()
        .any(|l| l.contains("Verification") && l.split_whitespace().last() == Some("SUCCESSFUL"));
    let t = out
        .lines()
        .find(|l| l.contains("Time in seconds"))?
        .rsplit('=')
        .next()?
        .trim()
        .parse()
        .ok()?;
    ok.then_some(t)
}

/// Starts one job; its child.
fn spawn(c: &Contender, sss: &Path, exe: &Path, n: u32) -> Result<std::process::Child, String> {
    let mut argv = (c.launch)(sss, n);
    argv.push(exe.display().to_string());
    Command::new(&argv[0])
        .args(&argv[1..])
        .current_dir(exe.parent().unwrap_or(Path::new(".")))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("{}: {e}", argv[0]))
}

/// Waits for `child` at most `limit`; its output, or why not.
fn finish(mut child: std::process::Child, limit: Duration) -> Result<String, String> {
    let t0 = std::time::Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if t0.elapsed() > limit => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("gave up after {} s", limit.as_secs()));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => return Err(e.to_string()),
        }
    }
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    let mut s = String::from_utf8_lossy(&out.stdout).into_owned();
    s.push_str(&String::from_utf8_lossy(&out.stderr));
    Ok(s)
}

/// One measurement: seconds of NPB's timed section (the slower job when
/// two share the node), or the failure.
fn measure(
    c: &Contender,
    sss: &Path,
    exe: &Path,
    n: u32,
    jobs: u32,
    limit: Duration,
) -> Result<f64, String> {
    let kids = (0..jobs)
        .map(|_| spawn(c, sss, exe, n))
        .collect::<Result<Vec<_>, _>>()?;
    let mut worst: f64 = 0.0;
    for k in kids {
        let out = finish(k, limit)?;
        let t = parse(&out).ok_or_else(|| {
            let tail: Vec<&str> = out.lines().rev().take(6).collect();
            format!(
                "no successful verification:\n{}",
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            )
        })?;
        worst = worst.max(t);
    }
    Ok(worst)
}

/// A condition of the table.
#[derive(Debug, Clone, Copy, serde::Serialize)]
struct Condition {
    name: &'static str,
    ranks: u32,
    jobs: u32,
}

/// Every figure of a run.
#[derive(Debug, Default, serde::Serialize)]
pub struct NpbReport {
    class: String,
    /// condition → kernel → contender → seconds of each repetition.
    times: BTreeMap<String, BTreeMap<String, BTreeMap<String, Vec<f64>>>>,
    /// What failed: (condition, kernel, contender, why).
    failures: Vec<(String, String, String, String)>,
    load: Load,
}

fn median(v: &[f64]) -> Option<f64> {
    let mut v = v.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    v.get(v.len() / 2).copied()
}

/// Runs the comparison; the markdown report.
pub fn run(args: &NpbArgs, sss: &Path) -> Result<String, String> {
    if !args.source.join("config").is_dir() {
        return Err(format!(
            "{} is not an NPB MPI directory (no config/)",
            args.source.display()
        ));
    }
    let tmp = std::env::temp_dir().join(format!("sss-npb-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).map_err(|e| format!("{}: {e}", tmp.display()))?;
    let r = run_in(args, sss, &tmp);
    let _ = std::fs::remove_dir_all(&tmp);
    r
}

fn run_in(args: &NpbArgs, sss: &Path, tmp: &Path) -> Result<String, String> {
    let cs = contenders(args, sss);
    let over = args.over.unwrap_or(args.np * 4);
    let conds = [
        Condition {
            name: "dedicated",
            ranks: args.np,
            jobs: 1,
        },
        Condition {
            name: "oversubscribed",
            ranks: over,
            jobs: 1,
        },
        Condition {
            name: "time-shared (2 jobs)",
            ranks: args.np,
            jobs: 2,
        },
    ];
    let limit = Duration::from_secs(args.timeout);
    let mut rep = NpbReport {
        class: args.class.clone(),
        ..NpbReport::default()
    };
    // Builds first, so that the timed runs are not disturbed by them.
    let mut exes: BTreeMap<(String, String, u32), PathBuf> = BTreeMap::new();
    let total = (cs.len() * args.kernels.len() * 2) as u64;
    let bar = indicatif::ProgressBar::new(total).with_message("building");
    for c in &cs {
        let dir = prepare(&args.source, tmp, c)?;
        for k in &args.kernels {
            for n in [args.np, over] {
                bar.inc(1);
                match build(&dir, k, &args.class, n) {
                    Ok(exe) => {
                        exes.insert((c.build.to_string(), k.clone(), n), exe);
                    }
                    Err(e) => rep
                        .failures
                        .push(("build".into(), k.clone(), c.name.into(), e)),
                }
            }
        }
    }
    bar.finish_and_clear();
    let monitor = Monitor::start(tmp.display().to_string());
    let bar = indicatif::ProgressBar::new(
        (args.reps as usize * conds.len() * args.kernels.len() * cs.len()) as u64,
    )
    .with_message("running");
    for _ in 0..args.reps {
        for cond in &conds {
            for k in &args.kernels {
                for c in &cs {
                    bar.inc(1);
                    let Some(exe) = exes.get(&(c.build.to_string(), k.clone(), cond.ranks)) else {
                        continue;
                    };
                    match measure(c, sss, exe, cond.ranks, cond.jobs, limit) {
                        Ok(t) => rep
                            .times
                            .entry(cond.name.into())
                            .or_default()
                            .entry(k.clone())
                            .or_default()
                            .entry(c.name.into())
                            .or_default()
                            .push(t),
                        Err(e) => {
                            rep.failures
                                .push((cond.name.into(), k.clone(), c.name.into(), e))
                        }
                    }
                }
            }
        }
    }
    bar.finish_and_clear();
    rep.load = monitor.finish();
    if let Some(j) = &args.json {
        let s = serde_json::to_string_pretty(&rep).map_err(|e| e.to_string())?;
        std::fs::write(j, s).map_err(|e| format!("{}: {e}", j.display()))?;
    }
    Ok(markdown(&rep, &cs, &conds, args))
}

fn markdown(rep: &NpbReport, cs: &[Contender], conds: &[Condition], args: &NpbArgs) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "## NPB {} class {}, {} repetitions (median seconds of NPB's timed section)\n",
        args.kernels.join(", "),
        rep.class,
        args.reps
    );
    let others: Vec<&Contender> = cs.iter().filter(|c| c.name != "SSS").collect();
    for cond in conds {
        let _ = writeln!(
            s,
            "### {} ({} ranks{})\n",
            cond.name,
            cond.ranks,
            if cond.jobs > 1 {
                " per job, the slower job"
            } else {
                ""
            }
        );
        let mut head = String::from("| kernel | SSS |");
        let mut sep = String::from("|---|---:|");
        for o in &others {
            let _ = write!(head, " {} | {} / SSS |", o.name, o.name);
            sep.push_str("---:|---:|");
        }
        let _ = writeln!(s, "{head}\n{sep}");
        let mut logs: Vec<Vec<f64>> = vec![Vec::new(); others.len()];
        for k in &args.kernels {
            let row = rep.times.get(cond.name).and_then(|m| m.get(k));
            let get = |name: &str| row.and_then(|r| r.get(name)).and_then(|v| median(v));
            let ours = get("SSS");
            let cell = |v: Option<f64>| v.map_or("failed".to_string(), |v| format!("{v:.3}"));
            let mut line = format!("| {} | {} |", k.to_uppercase(), cell(ours));
            for (i, o) in others.iter().enumerate() {
                let theirs = get(o.name);
                let ratio = match (theirs, ours) {
                    (Some(t), Some(u)) if u > 0.0 => {
                        logs[i].push((t / u).ln());
                        format!("{:.2}", t / u)
                    }
                    _ => "—".into(),
                };
                let _ = write!(line, " {} | {} |", cell(theirs), ratio);
            }
            let _ = writeln!(s, "{line}");
        }
        let mut line = String::from("| geometric mean | |");
        for l in &logs {
            let g = if l.is_empty() {
                "—".to_string()
            } else {
                format!("{:.2}", (l.iter().sum::<f64>() / l.len() as f64).exp())
            };
            let _ = write!(line, " | {g} |");
        }
        let _ = writeln!(s, "{line}\n");
    }
    let _ = writeln!(
        s,
        "Above 1 SSS is faster. Load: other processes used {:.2} CPUs on average ({:.2} at most over about 1 s); load average {} at the start, {} at the end{}.\n",
        rep.load.others_avg,
        rep.load.others_peak,
        rep.load.loadavg_start,
        rep.load.loadavg_end,
        if rep.load.busy(0.2) { ": BUSY, the figures are not comparable" } else { ": quiet" }
    );
    if !rep.failures.is_empty() {
        let _ = writeln!(s, "Failures:\n");
        for (cond, k, c, why) in &rep.failures {
            let _ = writeln!(s, "- {k} ({c}, {cond}): {}", why.replace('\n', " / "));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_npb_verdicts() {
        let ok = " Time in seconds =                     0.29\n Verification    =               SUCCESSFUL\n";
        assert_eq!(parse(ok), Some(0.29));
        let bad = " Time in seconds =                     0.29\n Verification    =             UNSUCCESSFUL\n";
        assert_eq!(parse(bad), None);
        assert_eq!(parse("Verification = SUCCESSFUL"), None);
    }

    #[test]
    fn yield_mode_is_an_mca_setting() {
        let v = ompi_yield_launch(Path::new("sss"), 4);
        assert_eq!(
            v[..4],
            ["mpirun.openmpi", "--mca", "mpi_yield_when_idle", "1"]
        );
        assert_eq!(v.last().map(String::as_str), Some("4"));
    }
}
