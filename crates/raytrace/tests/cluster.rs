//! End-to-end runs of `sss-raytrace` through the launcher: 1, 2 and 4
//! workers on one node, 4 workers over two nodes, and the same with
//! injected loss and duplication. Every run must print the checksum of a
//! single-process reference render and write a PNG with exactly its pixels.
//!
//! This is a `harness = false` test: the same executable also serves as the
//! launcher (`sss-run`) when started with [`LAUNCH`] as first argument, so
//! the tests can capture the job's output without depending on another
//! crate's binary. Cases run one after the other (the tasks of one job
//! already fill the machine); arguments that do not start with `-` filter
//! cases by name, as with the standard harness.

use sss_raytrace::{fnv1a64, Image, Scene};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::time::{Duration, Instant};

/// First argument that turns this executable into the launcher.
const LAUNCH: &str = "__sss_run";

/// Each job must end well within this.
const DEADLINE: Duration = Duration::from_secs(60);

/// One job to run and check.
struct Case {
    name: &'static str,
    /// Tasks (`-n`); `None` runs the binary without the launcher.
    tasks: Option<u32>,
    hosts: &'static str,
    env: &'static [(&'static str, &'static str)],
    width: u32,
    height: u32,
    chunk: u32,
    extra: &'static [&'static str],
    /// What else to check in the output.
    expect: Expect,
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Expect {
    /// The full report, with no retransmissions required.
    Report,
    /// The full report with at least one retransmission (injected loss).
    Retransmits,
    /// Only the checksum line (`--quiet`).
    QuietLine,
    /// A failed job whose error output contains this.
    Failure(&'static str),
}

const CASES: &[Case] = &[
    Case {
        name: "alone_without_launcher",
        tasks: None,
        hosts: "",
        env: &[],
        width: 160,
        height: 120,
        chunk: 64,
        extra: &[],
        expect: Expect::Report,
    },
    Case {
        name: "display_renders_alone_n1",
        tasks: Some(1),
        hosts: "",
        env: &[],
        width: 160,
        height: 120,
        chunk: 64,
        extra: &[],
        expect: Expect::Report,
    },
    Case {
        name: "one_worker_n2",
        tasks: Some(2),
        hosts: "",
        env: &[],
        width: 160,
        height: 120,
        chunk: 64,
        extra: &[],
        expect: Expect::Report,
    },
    Case {
        name: "two_workers_n3_odd_chunk",
        tasks: Some(3),
        hosts: "",
        env: &[],
        width: 160,
        height: 120,
        chunk: 37,
        extra: &[],
        expect: Expect::Report,
    },
    Case {
        name: "four_workers_n5",
        tasks: Some(5),
        hosts: "",
        env: &[],
        width: 160,
        height: 120,
        chunk: 64,
        extra: &[],
        expect: Expect::Report,
    },
    Case {
        name: "four_workers_pixel_at_a_time_quiet",
        tasks: Some(5),
        hosts: "",
        env: &[],
        width: 64,
        height: 48,
        chunk: 1,
        extra: &["--quiet"],
        expect: Expect::QuietLine,
    },
    Case {
        name: "more_workers_than_blocks",
        tasks: Some(5),
        hosts: "",
        env: &[],
        width: 3,
        height: 1,
        chunk: 1,
        extra: &[],
        expect: Expect::Report,
    },
    Case {
        name: "four_workers_two_hosts",
        tasks: Some(5),
        hosts: "127.0.0.2,127.0.0.3",
        env: &[],
        width: 160,
        height: 120,
        chunk: 64,
        extra: &["--scene", "grid"],
        expect: Expect::Report,
    },
    Case {
        name: "four_workers_two_hosts_lossy",
        tasks: Some(5),
        hosts: "127.0.0.2,127.0.0.3",
        env: &[("SSS_FAULT_DROP", "0.1"), ("SSS_FAULT_DUP", "0.05")],
        width: 160,
        height: 120,
        chunk: 64,
        extra: &[],
        expect: Expect::Retransmits,
    },
    Case {
        name: "two_workers_udp_one_host_lossy",
        tasks: Some(3),
        hosts: "",
        env: &[
            ("SSS_TRANSPORT", "udp"),
            ("SSS_FAULT_DROP", "0.1"),
            ("SSS_FAULT_DUP", "0.05"),
        ],
        width: 160,
        height: 120,
        chunk: 16,
        extra: &["--samples", "1"],
        expect: Expect::Retransmits,
    },
    Case {
        name: "unknown_scene_is_refused",
        tasks: Some(2),
        hosts: "",
        env: &[],
        width: 16,
        height: 16,
        chunk: 8,
        extra: &["--scene", "teapot"],
        expect: Expect::Failure("teapot"),
    },
    Case {
        name: "unwritable_png_is_reported",
        tasks: Some(3),
        hosts: "",
        env: &[],
        width: 16,
        height: 16,
        chunk: 8,
        extra: &["--out", "/nonexistent-dir/x.png"],
        expect: Expect::Failure("cannot write /nonexistent-dir/x.png"),
    },
    // Regression: the display used to leave the job before printing why,
    // so a worker's failure could get the display stopped first.
    Case {
        name: "unwritable_png_is_reported_many_workers",
        tasks: Some(8),
        hosts: "",
        env: &[],
        width: 16,
        height: 16,
        chunk: 8,
        extra: &["--out", "/nonexistent-dir/x.png"],
        expect: Expect::Failure("cannot write /nonexistent-dir/x.png"),
    },
];

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some(LAUNCH) {
        std::process::exit(sss_testkit::job::launcher_main(args[1..].iter().cloned()));
    }
    let sel = Selection::parse(&args[1..]);
    let picked: Vec<&Case> = CASES.iter().filter(|c| sel.wants(c.name)).collect();
    if sel.list {
        for c in &picked {
            println!("{}: test", c.name);
        }
        return;
    }
    let n = picked.len();
    println!("\nrunning {n} test{}", if n == 1 { "" } else { "s" });
    let started = Instant::now();
    let mut failed = Vec::new();
    for c in &picked {
        let t = Instant::now();
        match run_case(c) {
            Ok(()) => println!(
                "test {} ... ok ({:.1} s)",
                c.name,
                t.elapsed().as_secs_f64()
            ),
            Err(e) => {
                println!("test {} ... FAILED", c.name);
                failed.push((c.name, e));
            }
        }
    }
    for (name, e) in &failed {
        println!("\n---- {name} ----\n{e}");
    }
    println!(
        "\ntest result: {}. {} passed; {} failed; 0 ignored; 0 measured; {} filtered out; finished in {:.2}s\n",
        if failed.is_empty() { "ok" } else { "FAILED" },
        picked.len() - failed.len(),
        failed.len(),
        CASES.len() - picked.len(),
        started.elapsed().as_secs_f64()
    );
    if !failed.is_empty() {
        std::process::exit(101);
    }
}

/// Which cases the command line asks for, understood as the standard
/// harness does: name filters (substrings, or whole names with `--exact`),
/// `--skip NAME`, `--ignored` (there are none), `--list`; other options are
/// accepted and ignored.
#[derive(Default)]
struct Selection {
    filters: Vec<String>,
    skips: Vec<String>,
    exact: bool,
    ignored_only: bool,
    list: bool,
}

impl Selection {
    fn parse(args: &[String]) -> Self {
        let mut s = Selection::default();
        let mut it = args.iter();
        while let Some(a) = it.next() {
            match a.as_str() {
                "--skip" => s.skips.extend(it.next().cloned()),
                "--exact" => s.exact = true,
                "--ignored" => s.ignored_only = true,
                "--list" => s.list = true,
                // Options whose value is a separate argument.
                "--test-threads" | "--color" | "--format" | "--logfile" | "-Z"
                | "--shuffle-seed" => {
                    it.next();
                }
                o if o.starts_with('-') => {}
                f => s.filters.push(f.to_string()),
            }
        }
        s
    }

    fn wants(&self, name: &str) -> bool {
        let hit = |f: &String| {
            if self.exact {
                name == f
            } else {
                name.contains(f.as_str())
            }
        };
        !self.ignored_only
            && (self.filters.is_empty() || self.filters.iter().any(hit))
            && !self.skips.iter().any(hit)
    }
}

/// A directory removed when dropped, pass or fail.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Result<Self, String> {
        let p = std::env::temp_dir().join(format!("sss-raytrace-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&p).map_err(|e| format!("temp dir {}: {e}", p.display()))?;
        Ok(Self(p))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

struct Output {
    status: ExitStatus,
    stdout: String,
    stderr: String,
}

/// Runs `cmd` to its end with output captured, killing it after
/// [`DEADLINE`].
fn run_bounded(mut cmd: Command) -> Result<Output, String> {
    let f = sss_testkit::process::run_bounded(&mut cmd, DEADLINE)
        .map_err(|e| format!("cannot start {cmd:?}: {e}"))?;
    let Some(status) = f.status else {
        return Err(format!("no end after {DEADLINE:?}: {cmd:?}"));
    };
    Ok(Output {
        status,
        stdout: f.stdout,
        stderr: f.stderr,
    })
}

fn run_case(c: &Case) -> Result<(), String> {
    let dir = TempDir::new(c.name)?;
    let png = dir.0.join("out.png");
    let prog = env!("CARGO_BIN_EXE_sss-raytrace");
    let mut prog_args: Vec<String> = vec![
        "--width".into(),
        c.width.to_string(),
        "--height".into(),
        c.height.to_string(),
        "--chunk".into(),
        c.chunk.to_string(),
        "--out".into(),
        png.display().to_string(),
    ];
    // A later --out in `extra` wins.
    prog_args.extend(c.extra.iter().map(|s| s.to_string()));
    let mut cmd = match c.tasks {
        Some(n) => {
            let exe = std::env::current_exe().map_err(|e| e.to_string())?;
            let mut cmd = Command::new(exe);
            cmd.args([LAUNCH, "-n", &n.to_string(), "--timeout", "50"]);
            if !c.hosts.is_empty() {
                cmd.args(["--hosts", c.hosts]);
            }
            cmd.arg(prog);
            cmd
        }
        None => Command::new(prog),
    };
    cmd.args(&prog_args);
    // Only the case's own runtime settings: none from the caller's
    // environment (a surrounding job, fault injection, transport).
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("SSS_") {
            cmd.env_remove(k);
        }
    }
    cmd.envs(c.env.iter().copied());
    let shown = format!("{cmd:?}");
    let out = run_bounded(cmd)?;
    let context = || {
        format!(
            "command: {shown}\nstatus: {}\nstdout:\n{}\nstderr:\n{}",
            out.status, out.stdout, out.stderr
        )
    };
    if let Expect::Failure(msg) = c.expect {
        if out.status.success() || !out.stderr.contains(msg) {
            return Err(format!(
                "expected a failure mentioning {msg:?}\n{}",
                context()
            ));
        }
        return Ok(());
    }
    if !out.status.success() {
        return Err(format!("the job failed\n{}", context()));
    }
    check_output(c, &out.stdout, &png).map_err(|e| format!("{e}\n{}", context()))
}

fn scene_of(c: &Case) -> Scene {
    let name = c
        .extra
        .iter()
        .position(|a| *a == "--scene")
        .and_then(|i| c.extra.get(i + 1))
        .copied()
        .unwrap_or("spheres");
    Scene::by_name(name).unwrap_or_else(Scene::spheres)
}

fn samples_of(c: &Case) -> u32 {
    c.extra
        .iter()
        .position(|a| *a == "--samples")
        .and_then(|i| c.extra.get(i + 1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(2)
}

fn check_output(c: &Case, stdout: &str, png: &Path) -> Result<(), String> {
    let reference = Image {
        scene: scene_of(c),
        width: c.width,
        height: c.height,
        samples: samples_of(c),
    }
    .render();
    let want = format!("checksum fnv1a64 {:016x}", fnv1a64(&reference));
    let lines: Vec<&str> = stdout.lines().collect();
    if !lines.contains(&want.as_str()) {
        return Err(format!("expected the line {want:?}"));
    }
    let pixels = decode_png(png)?;
    if pixels != (c.width, c.height, reference) {
        return Err(format!(
            "{} does not hold the reference pixels",
            png.display()
        ));
    }
    let tasks = c.tasks.unwrap_or(1) as usize;
    match c.expect {
        Expect::QuietLine => {
            if lines != [want.as_str()] {
                return Err("--quiet must print the checksum line only".into());
            }
        }
        Expect::Failure(_) => unreachable!("checked before"),
        Expect::Report | Expect::Retransmits => {
            let workers = tasks - 1;
            let head = format!("image {}x{}, ", c.width, c.height);
            let count = match workers {
                1 => " 1 worker,".to_string(),
                w => format!(" {w} workers"),
            };
            if !lines
                .first()
                .is_some_and(|l| l.starts_with(&head) && l.contains(&count))
            {
                return Err(format!("expected a first line with {head:?} and {count:?}"));
            }
            let rows = table_rows(&lines);
            if rows.len() != tasks + 1 {
                return Err(format!(
                    "expected {} table rows, one per task and a total",
                    tasks + 1
                ));
            }
            check_rows(c, &rows)?;
        }
    }
    Ok(())
}

/// The data rows of the Markdown table, split into cells.
fn table_rows<'a>(lines: &[&'a str]) -> Vec<Vec<&'a str>> {
    lines
        .iter()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| task"))
        .map(|l| l.trim_matches('|').split('|').map(str::trim).collect())
        .collect()
}

fn check_rows(c: &Case, rows: &[Vec<&str>]) -> Result<(), String> {
    let num = |row: &Vec<&str>, col: usize| -> Result<u64, String> {
        row.get(col)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| format!("column {col} of {row:?} is not a number"))
    };
    let (tasks, total) = rows.split_at(rows.len() - 1);
    let blocks: u64 = tasks.iter().map(|r| num(r, 3)).sum::<Result<_, _>>()?;
    let want_blocks = (u64::from(c.width) * u64::from(c.height)).div_ceil(u64::from(c.chunk));
    if blocks != want_blocks || num(&total[0], 3)? != want_blocks {
        return Err(format!(
            "{blocks} blocks rendered, {want_blocks} in the image"
        ));
    }
    if !c.hosts.is_empty() {
        // Blocks of ranks: the first half on the first host.
        let first = c.hosts.split(',').next().unwrap_or_default();
        if tasks[0].get(1) != Some(&first) || tasks.last().and_then(|r| r.get(1)) == Some(&first) {
            return Err(format!("tasks are not spread over {}", c.hosts));
        }
    }
    let retrans = num(&total[0], 7)?;
    if c.expect == Expect::Retransmits && retrans == 0 {
        return Err("loss was injected but nothing was retransmitted".into());
    }
    Ok(())
}

/// Width, height and RGB8 pixels of a PNG file.
fn decode_png(path: &Path) -> Result<(u32, u32, Vec<u8>), String> {
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut r = png::Decoder::new(std::io::BufReader::new(file))
        .read_info()
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let mut buf = vec![0; r.output_buffer_size()];
    let info = r
        .next_frame(&mut buf)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if (info.color_type, info.bit_depth) != (png::ColorType::Rgb, png::BitDepth::Eight) {
        return Err(format!("{}: not RGB8", path.display()));
    }
    buf.truncate(info.buffer_size());
    Ok((info.width, info.height, buf))
}
