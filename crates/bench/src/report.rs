//! Medians, ratios and targets of one bench run, rendered as Markdown
//! tables, JSON and SVG plots.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use plotters::prelude::*;
use serde_json::json;

use crate::fair::{spread, Fair};
use crate::load::Load;
use crate::plan::{
    bw_key, cpu_key, lat_key, rtt_key, LatOp, BW_SIZES, GSO_SEND, LAT_SIZES, RTT_SIZES,
    TCP_BW_LARGE, TCP_BW_SIZE,
};
use crate::{BenchArgs, BenchError, Figures, Mode};

/// The machine a run came from.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Machine {
    /// Logical CPUs available to the bench.
    pub nproc: usize,
    /// `model name` of the first processor in `/proc/cpuinfo`.
    pub cpu: String,
    /// Kernel release.
    pub kernel: String,
}

impl Machine {
    /// Reads the current machine.
    pub fn current() -> Self {
        let cpu = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split_once(':'))
                    .map(|(_, v)| v.trim().to_string())
            })
            .unwrap_or_else(|| "unknown".into());
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "unknown".into());
        Machine {
            nproc: std::thread::available_parallelism().map_or(1, |n| n.get()),
            cpu,
            kernel,
        }
    }
}

/// A SPEC §3 target and how this run fared.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Target {
    /// Short stable name.
    pub name: &'static str,
    /// What is compared.
    pub what: &'static str,
    /// The measured ratio (or figure, for CPU cost).
    pub value: Option<f64>,
    /// The limit, as text.
    pub limit: &'static str,
    /// Met, missed, or `None` when not judged in this mode.
    pub met: Option<bool>,
}

/// The results of one run.
#[derive(Debug, Clone)]
pub struct Report {
    mode: Mode,
    quick: bool,
    reps: u32,
    samples: Figures,
    med: BTreeMap<String, f64>,
    stats: String,
    mpi_ok: bool,
    mpi_note: String,
    failures: Vec<String>,
    elapsed: Duration,
    machine: Machine,
    load: Load,
    busy_cpus: f64,
}

fn median(v: &[f64]) -> Option<f64> {
    let mut s: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    if s.is_empty() {
        return None;
    }
    s.sort_by(f64::total_cmp);
    let n = s.len();
    Some(if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    })
}

fn f(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "—".to_string(), |x| format!("{x:.digits$}"))
}

fn size_name(s: usize) -> String {
    match s {
        s if s >= 1 << 20 && s % (1 << 20) == 0 => format!("{} MiB", s >> 20),
        s if s >= 4096 && s % 1024 == 0 => format!("{} KiB", s >> 10),
        s => format!("{s} B"),
    }
}

impl Report {
    /// Medians of `samples` and everything derived from them.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        args: &BenchArgs,
        reps: u32,
        samples: Figures,
        stats: String,
        mpi_ok: bool,
        mpi_note: String,
        failures: Vec<String>,
        elapsed: Duration,
        load: Load,
    ) -> Self {
        let med = samples
            .iter()
            .filter_map(|(k, v)| Some((k.clone(), median(v)?)))
            .collect();
        Report {
            mode: args.mode,
            quick: args.quick,
            reps,
            samples,
            med,
            stats,
            mpi_ok,
            mpi_note,
            failures,
            elapsed,
            machine: Machine::current(),
            load,
            busy_cpus: args.busy_cpus,
        }
    }

    fn fair(&self) -> Fair<'_> {
        Fair::new(&self.samples, self.mode, &self.load, self.busy_cpus)
    }

    fn get(&self, key: &str) -> Option<f64> {
        self.med.get(key).copied()
    }

    /// One-way latency in µs: WRITE and the baselines are half their
    /// round trip, the other ops were halved by the tasks.
    fn one_way(&self, who: &str, size: usize) -> Option<f64> {
        match who {
            "write" => self.get(&rtt_key("mbcf", size)).map(|v| v / 2.0),
            "udp_block" | "udp_poll" | "tcp_block" | "tcp_poll" | "mpi" => {
                self.get(&rtt_key(who, size)).map(|v| v / 2.0)
            }
            op => self.get(&lat_key(op, size)),
        }
    }

    fn ratio(&self, a: &str, b: &str) -> Option<f64> {
        let (x, y) = (self.get(a)?, self.get(b)?);
        (y > 0.0).then(|| x / y)
    }

    /// Every ratio of MBCF against a baseline, by name.
    pub fn ratios(&self) -> BTreeMap<String, f64> {
        let mut r = BTreeMap::new();
        for &s in &RTT_SIZES {
            for base in [
                "udp_block",
                "udp_poll",
                "udp_hybrid",
                "tcp_block",
                "tcp_poll",
                "tcp_hybrid",
                "mpi",
                "line",
            ] {
                if let Some(v) = self.ratio(&rtt_key("mbcf", s), &rtt_key(base, s)) {
                    r.insert(format!("rtt/mbcf_over_{base}/{s}"), v);
                }
            }
        }
        for &s in &BW_SIZES {
            if let Some(v) = self.ratio(&bw_key("mbcf", s), &bw_key("mpi", s)) {
                r.insert(format!("bw/mbcf_over_mpi/{s}"), v);
            }
            for n in [TCP_BW_SIZE, TCP_BW_LARGE] {
                for w in ["block", "poll"] {
                    let b = bw_key(&format!("tcp_{w}"), n);
                    if let Some(v) = self.ratio(&bw_key("mbcf", s), &b) {
                        r.insert(format!("bw/mbcf_over_tcp_{w}{n}/{s}"), v);
                    }
                }
            }
            for (name, b) in [
                ("gso_poll", bw_key("gso_poll", GSO_SEND)),
                ("gso_block", bw_key("gso_block", GSO_SEND)),
                ("memcpy", bw_key("memcpy", s)),
            ] {
                if let Some(v) = self.ratio(&bw_key("mbcf", s), &b) {
                    r.insert(format!("bw/mbcf_over_{name}/{s}"), v);
                }
            }
        }
        for side in ["send", "recv"] {
            for base in ["udp", "tcp"] {
                if let Some(v) = self.ratio(&cpu_key("mbcf", side), &cpu_key(base, side)) {
                    r.insert(format!("cpu/mbcf_over_{base}/{side}"), v);
                }
            }
        }
        r
    }

    /// The SPEC §3 targets this run can judge.
    pub fn targets(&self) -> Vec<Target> {
        let across = self.mode != Mode::Node;
        // The fair reading: the baselines at their best, busy-polling.
        let udp = self.ratio(&rtt_key("mbcf", 8), &rtt_key("udp_poll", 8));
        let tcp = self.ratio(&rtt_key("mbcf", 8), &rtt_key("tcp_poll", 8));
        let tcp_bw = ["tcp_block", "tcp_poll"]
            .iter()
            .filter_map(|w| self.get(&bw_key(w, TCP_BW_SIZE)))
            .reduce(f64::max);
        let bw = self
            .get(&bw_key("mbcf", TCP_BW_SIZE))
            .zip(tcp_bw)
            .and_then(|(m, t)| (t > 0.0).then(|| m / t));
        let shm = self.ratio(&rtt_key("mbcf", 8), &rtt_key("mpi", 8));
        vec![
            Target {
                name: "udp_rtt_8b_vs_raw_udp",
                what: "MBCF WRITE 8 B round trip over udp / raw UDP ping-pong, busy-polling",
                value: udp.filter(|_| across),
                limit: "≤ 1.15",
                met: udp.filter(|_| across).map(|v| v <= 1.15),
            },
            Target {
                name: "udp_rtt_8b_vs_tcp",
                what: "MBCF WRITE 8 B round trip over udp / TCP_NODELAY ping-pong, busy-polling",
                value: tcp.filter(|_| across),
                limit: "< 1",
                met: tcp.filter(|_| across).map(|v| v < 1.0),
            },
            Target {
                name: "bw_1392_vs_tcp",
                what:
                    "MBCF WRITE bandwidth at 1392 B / TCP with 1392 B writes (the better receiver)",
                value: bw,
                limit: "≥ 2",
                met: bw.map(|v| v >= 2.0),
            },
            Target {
                name: "shm_rtt_8b_vs_mpi",
                what: "MBCF WRITE 8 B round trip over shm / Open MPI shared-memory ping-pong",
                value: shm.filter(|_| !across),
                limit: "≤ 2",
                met: shm.filter(|_| !across).map(|v| v <= 2.0),
            },
            Target {
                name: "cpu_send_ns",
                what: "CPU time to send one 8 B MBCF WRITE (ns)",
                value: self.get(&cpu_key("mbcf", "send")),
                limit: "reported",
                met: None,
            },
            Target {
                name: "cpu_recv_ns",
                what: "CPU time to receive one 8 B MBCF WRITE (ns)",
                value: self.get(&cpu_key("mbcf", "recv")),
                limit: "reported",
                met: None,
            },
        ]
    }

    fn section(&self, prefix: &str) -> BTreeMap<String, f64> {
        self.med
            .iter()
            .filter(|(k, _)| k.starts_with(prefix))
            .map(|(k, v)| (k.clone(), *v))
            .collect()
    }

    /// Every figure, sample, ratio and target as pretty JSON.
    pub fn json(&self) -> String {
        let mut latency = self.section("lat/");
        for &s in &LAT_SIZES {
            if let Some(v) = self.one_way("write", s) {
                latency.insert(lat_key("write", s), v);
            }
        }
        let v = json!({
            "mode": self.mode,
            "quick": self.quick,
            "reps": self.reps,
            "elapsed_s": self.elapsed.as_secs_f64(),
            "command": std::env::args().collect::<Vec<_>>().join(" "),
            "machine": self.machine,
            "units": {"latency": "us one way", "rtt": "us round trip",
                      "bandwidth": "MB/s (1e6 B/s)", "cpu": "ns of CPU per operation"},
            "mpi": {"available": self.mpi_ok, "note": self.mpi_note},
            "latency": latency,
            "rtt": self.section("rtt/"),
            "bandwidth": self.section("bw/"),
            "cpu": self.section("cpu/"),
            "ratios": self.ratios(),
            "targets": self.targets(),
            "spread": self.samples.iter()
                .filter_map(|(k, v)| Some((k.clone(), spread(v)?)))
                .collect::<BTreeMap<_, _>>(),
            "load": self.load,
            "busy_limit_cpus": self.busy_cpus,
            "machine_busy": self.fair().busy(),
            "fair_targets": self.fair().goals(),
            "samples": self.samples,
            "mbcf_stats": self.stats,
            "failures": self.failures,
        });
        serde_json::to_string_pretty(&v).unwrap_or_default()
    }

    /// The Markdown report.
    pub fn markdown(&self) -> String {
        let mut o = String::new();
        let m = &self.machine;
        let _ = writeln!(
            o,
            "## sss bench — mode `{}`{}, {} repetitions (medians), {:.0} s\n\n\
             Machine: {} CPUs, {}, Linux {}. Open MPI: {}.\n",
            self.mode.name(),
            if self.quick { " (quick)" } else { "" },
            self.reps,
            self.elapsed.as_secs_f64(),
            m.nproc,
            m.cpu,
            m.kernel,
            if self.mpi_ok {
                self.mpi_note.clone()
            } else {
                format!("not run ({})", self.mpi_note)
            },
        );

        for fail in &self.failures {
            let _ = writeln!(o, "**Failed:** {}\n", fail.lines().next().unwrap_or(""));
        }
        let _ = writeln!(o, "{}", self.fair().markdown());
        if self.mode != crate::Mode::Node {
            let _ = writeln!(
                o,
                "{}",
                crate::cost::markdown(&self.samples, self.fair().busy())
            );
        }

        // Seed 000 Table 3.
        let _ = writeln!(o, "### One-way latency (µs, half the round trip)\n");
        let head: Vec<String> = LAT_SIZES.iter().map(|s| size_name(*s)).collect();
        let _ = writeln!(o, "| | {} |", head.join(" | "));
        let _ = writeln!(o, "|---|{}", "---:|".repeat(LAT_SIZES.len()));
        let rows: [(&str, &str); 9] = [
            ("MBCF WRITE", "write"),
            ("MBCF READ", "read"),
            ("MBCF FIFO", "fifo"),
            ("MBCF SIGNAL", "signal"),
            ("raw UDP, blocking", "udp_block"),
            ("raw UDP, busy-polling", "udp_poll"),
            ("TCP_NODELAY, blocking", "tcp_block"),
            ("TCP_NODELAY, busy-polling", "tcp_poll"),
            ("Open MPI", "mpi"),
        ];
        for (label, who) in rows {
            let cells: Vec<String> = LAT_SIZES
                .iter()
                .map(|&s| f(self.one_way(who, s), 2))
                .collect();
            let _ = writeln!(o, "| {label} | {} |", cells.join(" | "));
        }
        for (label, base) in [
            ("WRITE / UDP polling", "udp_poll"),
            ("WRITE / UDP blocking", "udp_block"),
            ("WRITE / TCP polling", "tcp_poll"),
            ("WRITE / MPI", "mpi"),
        ] {
            let cells: Vec<String> = LAT_SIZES
                .iter()
                .map(|&s| f(self.ratio(&rtt_key("mbcf", s), &rtt_key(base, s)), 2))
                .collect();
            let _ = writeln!(o, "| {label} | {} |", cells.join(" | "));
        }
        let atom: Vec<String> = LatOp::ALL
            .iter()
            .filter(|op| op.is_atomic())
            .map(|op| {
                format!(
                    "MBCF {} {} µs",
                    op.name().to_uppercase(),
                    f(self.get(&lat_key(op.name(), LAT_SIZES[0])), 2)
                )
            })
            .collect();
        let _ = writeln!(o, "\n8-byte atomics, one way: {}.\n", atom.join(", "));

        // Seed 000 Table 2.
        let _ = writeln!(o, "### Peak bandwidth (MB/s, 10^6 B/s)\n");
        let head: Vec<String> = BW_SIZES.iter().map(|s| size_name(*s)).collect();
        let _ = writeln!(o, "| | {} |", head.join(" | "));
        let _ = writeln!(o, "|---|{}", "---:|".repeat(BW_SIZES.len()));
        for (label, who) in [("MBCF WRITE", "mbcf"), ("Open MPI", "mpi")] {
            let cells: Vec<String> = BW_SIZES
                .iter()
                .map(|&s| f(self.get(&bw_key(who, s)), 1))
                .collect();
            let _ = writeln!(o, "| {label} | {} |", cells.join(" | "));
        }
        let cells: Vec<String> = BW_SIZES
            .iter()
            .map(|&s| f(self.ratio(&bw_key("mbcf", s), &bw_key("mpi", s)), 2))
            .collect();
        let _ = writeln!(o, "| MBCF / MPI | {} |", cells.join(" | "));
        let _ = writeln!(
            o,
            "\nTCP with {TCP_BW_SIZE} B writes (blocking / busy-polling receiver): {} / {} MB/s; \
             with {TCP_BW_LARGE} B writes: {} / {} MB/s (see the fair comparison for ratios).\n",
            f(self.get(&bw_key("tcp_block", TCP_BW_SIZE)), 1),
            f(self.get(&bw_key("tcp_poll", TCP_BW_SIZE)), 1),
            f(self.get(&bw_key("tcp_block", TCP_BW_LARGE)), 1),
            f(self.get(&bw_key("tcp_poll", TCP_BW_LARGE)), 1),
        );

        // Seed 000 Fig. 4.
        let _ = writeln!(o, "### Round trip against size (µs)\n");
        let _ = writeln!(
            o,
            "| size | MBCF WRITE | UDP block | UDP poll | UDP hybrid | TCP block | TCP poll | \
             TCP hybrid | Open MPI | MBCF/UDP poll | MBCF/TCP poll | MBCF/MPI |\n\
             |---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
        );
        for &s in &RTT_SIZES {
            let mb = rtt_key("mbcf", s);
            let who = [
                "udp_block",
                "udp_poll",
                "udp_hybrid",
                "tcp_block",
                "tcp_poll",
                "tcp_hybrid",
                "mpi",
            ];
            let cells: Vec<String> = who
                .iter()
                .map(|w| f(self.get(&rtt_key(w, s)), 2))
                .chain(
                    ["udp_poll", "tcp_poll", "mpi"]
                        .iter()
                        .map(|w| f(self.ratio(&mb, &rtt_key(w, s)), 2)),
                )
                .collect();
            let _ = writeln!(
                o,
                "| {s} | {} | {} |",
                f(self.get(&mb), 2),
                cells.join(" | ")
            );
        }
        let _ = writeln!(
            o,
            "\n(TCP at 0 B carries 1 B: a stream has no empty message. Hybrid: poll for \
             `SSS_SPIN_US`, MBCF's spin, then block.)\n"
        );

        // Seed 001 Table 1.
        let _ = writeln!(
            o,
            "### CPU time per 8 B operation (ns, all threads of each process)\n"
        );
        let _ = writeln!(o, "| | send | receive |\n|---|---:|---:|");
        for (label, who) in [
            ("MBCF WRITE", "mbcf"),
            ("raw UDP, blocking", "udp"),
            ("TCP_NODELAY, blocking", "tcp"),
        ] {
            let _ = writeln!(
                o,
                "| {label} | {} | {} |",
                f(self.get(&cpu_key(who, "send")), 0),
                f(self.get(&cpu_key(who, "recv")), 0)
            );
        }
        for base in ["udp", "tcp"] {
            let _ = writeln!(
                o,
                "| MBCF / {} | {} | {} |",
                base.to_uppercase(),
                f(
                    self.ratio(&cpu_key("mbcf", "send"), &cpu_key(base, "send")),
                    2
                ),
                f(
                    self.ratio(&cpu_key("mbcf", "recv"), &cpu_key(base, "recv")),
                    2
                )
            );
        }

        let _ = writeln!(
            o,
            "\n### SPEC §3 targets\n\n| target | measured | limit | |\n|---|---:|---|---|"
        );
        for t in self.targets() {
            let verdict = match t.met {
                Some(_) if self.fair().busy() => "machine busy: no verdict",
                Some(true) => "met",
                Some(false) => "MISSED",
                None if t.value.is_none() => "not measured in this mode",
                None => "",
            };
            let _ = writeln!(
                o,
                "| {} | {} | {} | {verdict} |",
                t.what,
                f(t.value, 2),
                t.limit
            );
        }
        o
    }

    /// Writes `rtt-MODE.svg`, `bandwidth-MODE.svg` and `latency-MODE.svg`.
    pub fn plots(&self, dir: &Path) -> Result<(), BenchError> {
        std::fs::create_dir_all(dir)
            .map_err(|e| BenchError::Io(format!("cannot create {}", dir.display()), e))?;
        let mode = self.mode.name();
        let series = |keys: &dyn Fn(usize) -> String, sizes: &[usize], x: &dyn Fn(usize) -> f64| {
            sizes
                .iter()
                .filter_map(|&s| Some((x(s), self.get(&keys(s))?)))
                .collect::<Vec<_>>()
        };
        let lin = |s: usize| s as f64;
        let log = |s: usize| (s.max(1) as f64).log2();
        let rtt: Vec<(String, Vec<(f64, f64)>)> = [
            ("MBCF WRITE", "mbcf"),
            ("raw UDP, blocking", "udp_block"),
            ("raw UDP, busy-polling", "udp_poll"),
            ("TCP_NODELAY, busy-polling", "tcp_poll"),
            ("Open MPI", "mpi"),
        ]
        .iter()
        .map(|(l, w)| (l.to_string(), series(&|s| rtt_key(w, s), &RTT_SIZES, &lin)))
        .collect();
        line_plot(
            &dir.join(format!("rtt-{mode}.svg")),
            &format!("Round trip against size ({mode})"),
            "payload bytes",
            "round trip (µs)",
            &rtt,
            false,
        )?;
        let mut bw: Vec<(String, Vec<(f64, f64)>)> = [("MBCF WRITE", "mbcf"), ("Open MPI", "mpi")]
            .iter()
            .map(|(l, w)| (l.to_string(), series(&|s| bw_key(w, s), &BW_SIZES, &log)))
            .collect();
        bw.push((
            "TCP, busy-polling receiver".to_string(),
            series(
                &|s| bw_key("tcp_poll", s),
                &[TCP_BW_SIZE, TCP_BW_LARGE],
                &log,
            ),
        ));
        line_plot(
            &dir.join(format!("bandwidth-{mode}.svg")),
            &format!("Peak bandwidth ({mode})"),
            "bytes per operation (log2)",
            "MB/s",
            &bw,
            true,
        )?;
        let lat: Vec<(String, Vec<(f64, f64)>)> = [
            ("WRITE", "write"),
            ("READ", "read"),
            ("FIFO", "fifo"),
            ("SIGNAL", "signal"),
            ("raw UDP, busy-polling", "udp_poll"),
        ]
        .iter()
        .map(|(l, w)| {
            let pts = LAT_SIZES
                .iter()
                .filter_map(|&s| Some((log(s), self.one_way(w, s)?)))
                .collect();
            (l.to_string(), pts)
        })
        .collect();
        line_plot(
            &dir.join(format!("latency-{mode}.svg")),
            &format!("One-way latency of MBCF operations ({mode})"),
            "payload bytes (log2)",
            "one way (µs)",
            &lat,
            true,
        )
    }
}

const COLORS: [RGBColor; 5] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
];

/// Lines with markers; `log_x` labels the x axis as powers of two.
fn line_plot(
    path: &Path,
    title: &str,
    xdesc: &str,
    ydesc: &str,
    series: &[(String, Vec<(f64, f64)>)],
    log_x: bool,
) -> Result<(), BenchError> {
    let err =
        |e: &dyn std::fmt::Display| BenchError::Plot(path.display().to_string(), e.to_string());
    let pts = series.iter().flat_map(|s| s.1.iter());
    let (mut x0, mut x1, mut y1) = (f64::MAX, f64::MIN, 0.0f64);
    for &(x, y) in pts {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y1 = y1.max(y);
    }
    if x0 >= x1 {
        (x0, x1) = (0.0, x0.max(0.0) + 1.0);
    }
    let y1 = if y1 > 0.0 { y1 * 1.1 } else { 1.0 };
    let root = SVGBackend::new(path, (760, 480)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(x0..x1, 0.0..y1)
        .map_err(|e| err(&e))?;
    let fmt_x = |x: &f64| {
        if log_x {
            size_name(2f64.powf(*x).round() as usize)
        } else {
            format!("{x:.0}")
        }
    };
    chart
        .configure_mesh()
        .x_desc(xdesc)
        .y_desc(ydesc)
        .x_label_formatter(&fmt_x)
        .draw()
        .map_err(|e| err(&e))?;
    for (i, (name, pts)) in series.iter().enumerate() {
        if pts.is_empty() {
            continue;
        }
        let c = COLORS[i % COLORS.len()];
        chart
            .draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(2)))
            .map_err(|e| err(&e))?
            .label(name.clone())
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 18, y)], c.stroke_width(2)));
        chart
            .draw_series(pts.iter().map(|&p| Circle::new(p, 3, c.filled())))
            .map_err(|e| err(&e))?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperLeft)
        .draw()
        .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::median;

    #[test]
    fn median_of_odd_even_and_nan() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&[f64::NAN]), None);
    }
}
