//! The fair comparison: every contender's min / median / max over the
//! repetitions, MBCF as a ratio (of medians) to each floor and baseline,
//! and the targets of the udp and shm paths, judged only when the load
//! check found the machine quiet.

use std::fmt::Write as _;

use crate::load::Load;
use crate::plan::{
    bw_key, copied_key, delivered_key, lat_key, rtt_key, BW_SIZES, FLOOR_SIZE, GSO_SEG, GSO_SEND,
};
use crate::{Figures, Mode};

/// Smallest, middle and largest of a contender's samples.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Spread {
    /// Smallest sample.
    pub min: f64,
    /// Median (mean of the two middle samples when even).
    pub median: f64,
    /// Largest sample.
    pub max: f64,
    /// Finite samples.
    pub n: usize,
}

/// The spread of the finite values of `v`; `None` when there are none.
pub fn spread(v: &[f64]) -> Option<Spread> {
    let mut s: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    if s.is_empty() {
        return None;
    }
    s.sort_by(f64::total_cmp);
    let n = s.len();
    let median = if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    };
    Some(Spread {
        min: s[0],
        median,
        max: s[n - 1],
        n,
    })
}

/// What a target asks of its ratio.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub enum Limit {
    /// At most this.
    AtMost(f64),
    /// Strictly below this.
    Below(f64),
    /// At least this.
    AtLeast(f64),
}

impl Limit {
    fn holds(self, v: f64) -> bool {
        match self {
            Limit::AtMost(l) => v <= l,
            Limit::Below(l) => v < l,
            Limit::AtLeast(l) => v >= l,
        }
    }

    /// As printed in the tables (`≤ 1.3`).
    pub fn text(self) -> String {
        match self {
            Limit::AtMost(l) => format!("≤ {l}"),
            Limit::Below(l) => format!("< {l}"),
            Limit::AtLeast(l) => format!("≥ {l}"),
        }
    }
}

/// The judgement of one target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Verdict {
    /// The ratio is within the limit.
    Met,
    /// It is not.
    Missed,
    /// A figure is missing (not measured in this mode, or failed).
    NotMeasured,
    /// Other processes used the machine: no verdict.
    Busy,
}

impl Verdict {
    /// Judges `value` against `limit`; a busy machine gets no verdict.
    pub fn of(value: Option<f64>, limit: Limit, busy: bool) -> Verdict {
        match value {
            None => Verdict::NotMeasured,
            Some(_) if busy => Verdict::Busy,
            Some(v) if limit.holds(v) => Verdict::Met,
            Some(_) => Verdict::Missed,
        }
    }

    /// As printed in the table.
    pub fn text(self) -> &'static str {
        match self {
            Verdict::Met => "met",
            Verdict::Missed => "MISSED",
            Verdict::NotMeasured => "not measured",
            Verdict::Busy => "machine busy: no verdict",
        }
    }
}

/// One target of the fair comparison.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Goal {
    /// What is compared.
    pub what: &'static str,
    /// The ratio of medians.
    pub value: Option<f64>,
    /// What it must be.
    pub limit: Limit,
    /// How this run fared.
    pub verdict: Verdict,
}

/// Medians of a run with the ratios between them.
pub struct Fair<'a> {
    samples: &'a Figures,
    mode: Mode,
    load: &'a Load,
    busy: bool,
}

fn cell(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "—".to_string(), |x| format!("{x:.digits$}"))
}

impl<'a> Fair<'a> {
    /// `busy_limit`: others' average CPUs above which no verdict is given.
    pub fn new(samples: &'a Figures, mode: Mode, load: &'a Load, busy_limit: f64) -> Self {
        Fair {
            samples,
            mode,
            load,
            busy: load.busy(busy_limit),
        }
    }

    /// Whether the machine was busy during the run.
    pub fn busy(&self) -> bool {
        self.busy
    }

    fn spread(&self, key: &str) -> Option<Spread> {
        spread(self.samples.get(key)?)
    }

    fn med(&self, key: &str) -> Option<f64> {
        self.spread(key).map(|s| s.median)
    }

    fn ratio(&self, a: &str, b: &str) -> Option<f64> {
        let (x, y) = (self.med(a)?, self.med(b)?);
        (y > 0.0).then(|| x / y)
    }

    fn mpi_label(&self) -> &'static str {
        match self.mode {
            Mode::Node => "Open MPI, shared memory (btl self,vader)",
            _ => "Open MPI, TCP transport (btl self,tcp) across the two hosts",
        }
    }

    /// Rows of the 8 B round-trip table: (label, key).
    pub fn rtt_rows(&self) -> Vec<(String, String)> {
        let s = FLOOR_SIZE;
        let mut rows = vec![
            ("MBCF WRITE + notify".to_string(), rtt_key("mbcf", s)),
            (
                "floor (shm): 2 processes spinning on one cache line".into(),
                rtt_key("line", s),
            ),
            (
                "floor (udp): raw UDP, both sides busy-polling".into(),
                rtt_key("udp_poll", s),
            ),
            ("raw UDP, blocking in recv".into(), rtt_key("udp_block", s)),
            (
                "raw UDP, spin SSS_SPIN_US then block".into(),
                rtt_key("udp_hybrid", s),
            ),
            ("TCP_NODELAY, busy-polling".into(), rtt_key("tcp_poll", s)),
            (
                "TCP_NODELAY, blocking in recv".into(),
                rtt_key("tcp_block", s),
            ),
            (
                "TCP_NODELAY, spin SSS_SPIN_US then block".into(),
                rtt_key("tcp_hybrid", s),
            ),
        ];
        rows.push((self.mpi_label().into(), rtt_key("mpi", s)));
        rows
    }

    /// Rows of the bandwidth table: (label, key).
    pub fn bw_rows(&self) -> Vec<(String, String)> {
        let k64 = 65536;
        let m1 = 1 << 20;
        vec![
            ("MBCF WRITE, 1392 B".into(), bw_key("mbcf", 1392)),
            ("MBCF WRITE, 64 KiB".into(), bw_key("mbcf", k64)),
            ("MBCF WRITE, 1 MiB".into(), bw_key("mbcf", m1)),
            (
                format!(
                    "floor (udp): GSO UDP, {GSO_SEG} B segments, {GSO_SEND} B sends, GRO receiver busy-polling"
                ),
                bw_key("gso_poll", GSO_SEND),
            ),
            (
                "GSO UDP, GRO receiver blocking".into(),
                bw_key("gso_block", GSO_SEND),
            ),
            (
                "GSO UDP, MSG_ZEROCOPY sends, GRO receiver busy-polling".into(),
                bw_key("gsozc_poll", GSO_SEND),
            ),
            ("floor: memcpy 64 KiB".into(), bw_key("memcpy", k64)),
            ("floor: memcpy 1 MiB".into(), bw_key("memcpy", m1)),
            (
                "TCP, 64 KiB writes, receiver blocking".into(),
                bw_key("tcp_block", k64),
            ),
            (
                "TCP, 64 KiB writes, receiver busy-polling".into(),
                bw_key("tcp_poll", k64),
            ),
            (
                "TCP, 1392 B writes, receiver blocking".into(),
                bw_key("tcp_block", 1392),
            ),
            (
                "TCP, 1392 B writes, receiver busy-polling".into(),
                bw_key("tcp_poll", 1392),
            ),
            (format!("{}, 64 KiB", self.mpi_label()), bw_key("mpi", k64)),
            (format!("{}, 1 MiB", self.mpi_label()), bw_key("mpi", m1)),
        ]
    }

    /// The targets this mode can judge.
    pub fn goals(&self) -> Vec<Goal> {
        let s = FLOOR_SIZE;
        let mb = rtt_key("mbcf", s);
        let mut g: Vec<(&'static str, Option<f64>, Limit)> = Vec::new();
        if self.mode == Mode::Node {
            g.push((
                "shm 8 B round trip / cache-line floor",
                self.ratio(&mb, &rtt_key("line", s)),
                Limit::AtMost(3.0),
            ));
            g.push((
                "shm 8 B round trip / Open MPI shared memory",
                self.ratio(&mb, &rtt_key("mpi", s)),
                Limit::Below(1.0),
            ));
        } else {
            g.push((
                "udp 8 B round trip / busy-polled raw UDP",
                self.ratio(&mb, &rtt_key("udp_poll", s)),
                Limit::AtMost(1.3),
            ));
            g.push((
                "udp 8 B round trip / Open MPI TCP transport",
                self.ratio(&mb, &rtt_key("mpi", s)),
                Limit::AtMost(0.6),
            ));
            let gso = bw_key("gso_poll", GSO_SEND);
            let worst = [65536, 1 << 20]
                .iter()
                .map(|&n| self.ratio(&bw_key("mbcf", n), &gso))
                .collect::<Option<Vec<f64>>>()
                .and_then(|v| v.into_iter().reduce(f64::min));
            g.push((
                "udp bandwidth, 64 KiB and 1 MiB WRITEs (the lower) / GSO UDP",
                worst,
                Limit::AtLeast(0.8),
            ));
            let tcp = [bw_key("tcp_block", 65536), bw_key("tcp_poll", 65536)]
                .iter()
                .filter_map(|k| self.med(k))
                .reduce(f64::max);
            g.push((
                "udp bandwidth, 64 KiB WRITEs / TCP with 64 KiB writes (the better)",
                tcp.and_then(|t| Some(self.med(&bw_key("mbcf", 65536))? / t))
                    .filter(|_| tcp.is_some_and(|t| t > 0.0)),
                Limit::AtLeast(1.5),
            ));
            let top = bw_key("mbcf", 1 << 20);
            let flat = BW_SIZES
                .iter()
                .filter(|&&n| n >= 1024)
                .map(|&n| self.ratio(&bw_key("mbcf", n), &top))
                .collect::<Option<Vec<f64>>>()
                .and_then(|v| v.into_iter().reduce(f64::min));
            g.push((
                "udp bandwidth, lowest size from 1 KiB up / 1 MiB",
                flat,
                Limit::AtLeast(0.5),
            ));
        }
        // SIGNAL one way against WRITE one way (half its round trip).
        let sig = self
            .med(&lat_key("signal", 4))
            .zip(self.med(&rtt_key("mbcf", 4)))
            .and_then(|(s, w)| (w > 0.0).then(|| s / (w / 2.0)));
        g.push((
            "SIGNAL one way / WRITE one way (4 B)",
            sig,
            Limit::AtMost(1.5),
        ));
        g.into_iter()
            .map(|(what, value, limit)| Goal {
                what,
                value,
                limit,
                verdict: Verdict::of(value, limit, self.busy),
            })
            .collect()
    }

    fn load_line(&self) -> String {
        let l = self.load;
        format!(
            "Load check: other processes used {:.2} CPUs on average ({:.2} at most over about 1 s) \
             during {:.0} s; load average {} at the start, {} at the end: {}.",
            l.others_avg,
            l.others_peak,
            l.seconds,
            if l.loadavg_start.is_empty() { "?" } else { &l.loadavg_start },
            if l.loadavg_end.is_empty() { "?" } else { &l.loadavg_end },
            if self.busy {
                "**machine busy: no verdict**"
            } else {
                "quiet"
            }
        )
    }

    fn table(
        &self,
        o: &mut String,
        unit: &str,
        rows: &[(String, String)],
        mbcf: &[(&str, String)],
    ) {
        let heads: Vec<String> = mbcf.iter().map(|(l, _)| format!("{l} / this")).collect();
        let _ = writeln!(
            o,
            "| contender ({unit}) | min | median | max | n | {} |",
            heads.join(" | ")
        );
        let _ = writeln!(o, "|---|---:|---:|---:|---:|{}", "---:|".repeat(mbcf.len()));
        for (label, key) in rows {
            let sp = self.spread(key);
            let ratios: Vec<String> = mbcf
                .iter()
                .map(|(_, m)| {
                    if m == key {
                        "—".to_string()
                    } else {
                        cell(self.ratio(m, key), 2)
                    }
                })
                .collect();
            let _ = writeln!(
                o,
                "| {label} | {} | {} | {} | {} | {} |",
                cell(sp.map(|s| s.min), 2),
                cell(sp.map(|s| s.median), 2),
                cell(sp.map(|s| s.max), 2),
                sp.map_or(0, |s| s.n),
                ratios.join(" | ")
            );
        }
    }

    /// The fair comparison as Markdown: load line, round-trip and
    /// bandwidth tables, targets.
    pub fn markdown(&self) -> String {
        let mut o = String::new();
        let _ = writeln!(
            o,
            "### Fair comparison (min / median / max over repetitions; ratios of medians)\n\n{}\n",
            self.load_line()
        );
        let _ = writeln!(o, "#### 8 B round trip (µs)\n");
        self.table(
            &mut o,
            "µs",
            &self.rtt_rows(),
            &[("MBCF", rtt_key("mbcf", FLOOR_SIZE))],
        );
        let spin = sss_mbcf::TaskConfig::from_env()
            .map(|c| format!("{} µs", c.spin.as_micros()))
            .unwrap_or_else(|e| format!("unreadable: {e}"));
        let _ = writeln!(
            o,
            "\nBelow 1 MBCF is faster. Busy-polling sockets never sleep, as MBCF's waiters do not \
             while they spin; a blocking socket pays a wake-up per message; SSS_SPIN_US: {spin}.\n"
        );
        let _ = writeln!(o, "#### Bandwidth (MB/s, 10^6 B/s)\n");
        self.table(
            &mut o,
            "MB/s",
            &self.bw_rows(),
            &[
                ("MBCF 64 KiB", bw_key("mbcf", 65536)),
                ("MBCF 1 MiB", bw_key("mbcf", 1 << 20)),
            ],
        );
        let got = |w: &str| cell(self.med(&delivered_key(w, GSO_SEND)).map(|f| f * 100.0), 0);
        let _ = writeln!(
            o,
            "\nAbove 1 MBCF is faster. GSO UDP counts what the receiver got (the kernel drops \
             what overflows its buffer): {} % of the bytes busy-polling, {} % blocking, {} % \
             with MSG_ZEROCOPY sends, whose completions said \"copied\" (the kernel copied the \
             data after all) for {} % of the sends.\n",
            got("gso_poll"),
            got("gso_block"),
            got("gsozc_poll"),
            cell(
                self.med(&copied_key("gsozc_poll", GSO_SEND))
                    .map(|f| f * 100.0),
                0
            )
        );
        let _ = writeln!(
            o,
            "#### Targets\n\n| target | ratio | limit | verdict |\n|---|---:|---|---|"
        );
        for g in self.goals() {
            let _ = writeln!(
                o,
                "| {} | {} | {} | {} |",
                g.what,
                cell(g.value, 2),
                g.limit.text(),
                g.verdict.text()
            );
        }
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn spread_of_samples() {
        let s = spread(&[3.0, 1.0, f64::NAN, 2.0]).unwrap();
        assert_eq!((s.min, s.median, s.max, s.n), (1.0, 2.0, 3.0, 3));
        assert_eq!(spread(&[4.0, 1.0, 2.0, 3.0]).unwrap().median, 2.5);
        assert_eq!(spread(&[f64::INFINITY]), None);
        assert_eq!(spread(&[]), None);
    }

    #[test]
    fn verdicts() {
        assert_eq!(
            Verdict::of(Some(1.3), Limit::AtMost(1.3), false),
            Verdict::Met
        );
        assert_eq!(
            Verdict::of(Some(1.0), Limit::Below(1.0), false),
            Verdict::Missed
        );
        assert_eq!(
            Verdict::of(Some(0.8), Limit::AtLeast(0.8), false),
            Verdict::Met
        );
        assert_eq!(
            Verdict::of(Some(0.1), Limit::AtMost(1.3), true),
            Verdict::Busy
        );
        assert_eq!(
            Verdict::of(None, Limit::AtMost(1.3), true),
            Verdict::NotMeasured
        );
    }

    fn figures(pairs: &[(&str, &[f64])]) -> Figures {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_vec()))
            .collect::<BTreeMap<_, _>>()
    }

    #[test]
    fn ratios_tables_and_busy_refusal() {
        let f = figures(&[
            ("rtt/mbcf/8", &[12.0, 10.0, 30.0]),
            ("rtt/udp_poll/8", &[9.0, 8.0, 10.0]),
            ("rtt/mpi/8", &[20.0, 20.0, 20.0]),
            ("lat/signal/4", &[6.0]),
            ("rtt/mbcf/4", &[10.0]),
        ]);
        let quiet = Load {
            others_avg: 0.02,
            ..Load::default()
        };
        let fair = Fair::new(&f, Mode::Hosts, &quiet, 0.1);
        assert!(!fair.busy());
        let g = fair.goals();
        // Medians 12 / 9 and 12 / 20.
        assert!((g[0].value.unwrap() - 12.0 / 9.0).abs() < 1e-12);
        assert_eq!(g[0].verdict, Verdict::Missed);
        assert_eq!(g[1].verdict, Verdict::Met);
        // Bandwidth not measured here.
        assert_eq!(g[2].verdict, Verdict::NotMeasured);
        // SIGNAL 6 against half of 10.
        let sig = g.last().unwrap();
        assert!((sig.value.unwrap() - 1.2).abs() < 1e-12);
        let md = fair.markdown();
        assert!(md.contains("| MBCF WRITE + notify | 10.00 | 12.00 | 30.00 | 3 | — |"));
        assert!(md.contains(
            "| floor (udp): raw UDP, both sides busy-polling | 8.00 | 9.00 | 10.00 | 3 | 1.33 |"
        ));
        assert!(md.contains("| udp 8 B round trip / busy-polled raw UDP | 1.33 | ≤ 1.3 | MISSED |"));
        assert!(md.contains(": quiet."));

        let busy = Load {
            others_avg: 0.5,
            ..Load::default()
        };
        let fair = Fair::new(&f, Mode::Hosts, &busy, 0.1);
        let md = fair.markdown();
        assert!(md.contains("machine busy: no verdict"));
        assert!(!md.contains("| met |") && !md.contains("MISSED"));
        // The table is still there.
        assert!(md.contains("| 10.00 | 12.00 | 30.00 |"));
    }

    #[test]
    fn node_mode_judges_shm_targets() {
        let f = figures(&[
            ("rtt/mbcf/8", &[0.9]),
            ("rtt/line/8", &[0.2]),
            ("rtt/mpi/8", &[1.0]),
        ]);
        let load = Load::default();
        let fair = Fair::new(&f, Mode::Node, &load, 0.1);
        let g = fair.goals();
        assert_eq!(g[0].verdict, Verdict::Missed); // 4.5 > 3
        assert_eq!(g[1].verdict, Verdict::Met); // 0.9 < 1
        assert!(fair.markdown().contains("shared memory (btl self,vader)"));
    }
}
