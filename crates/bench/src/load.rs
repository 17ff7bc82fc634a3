//! The load check: how much CPU other processes used while the bench
//! ran. A thread samples `/proc/stat` (every CPU's busy time) and the CPU
//! time of our own processes (this one, its descendants, and anything
//! whose command line names the bench's temporary directory, as the
//! tasks' does); the difference is the others' share.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often the load is sampled.
const PERIOD: Duration = Duration::from_millis(100);

/// Busy ticks of all CPUs from the `cpu` line of `/proc/stat`: user,
/// nice, system, irq and softirq (guest time is inside user; idle,
/// iowait and steal are not busy here).
pub fn parse_proc_stat(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    let at = |i: usize| v.get(i).copied().unwrap_or(0);
    Some(at(0) + at(1) + at(2) + at(5) + at(6))
}

/// (parent pid, utime + stime ticks) from `/proc/PID/stat`; the command
/// name may hold spaces and parentheses, so fields count from the last
/// `)`.
pub fn parse_pid_stat(text: &str) -> Option<(u32, u64)> {
    let rest = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state(0) ppid(1) … utime(11) stime(12).
    let ppid = f.get(1)?.parse().ok()?;
    let ut: u64 = f.get(11)?.parse().ok()?;
    let st: u64 = f.get(12)?.parse().ok()?;
    Some((ppid, ut + st))
}

/// One look at the machine.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// Busy ticks of all CPUs.
    pub busy: u64,
    /// CPU ticks of each of our processes.
    pub ours: HashMap<u32, u64>,
    /// When it was taken, in seconds from the start.
    pub at: f64,
}

/// CPUs the others kept busy between two snapshots: all busy time minus
/// what our processes used (a process first seen in `cur` counts whole:
/// it started during the run). Never negative.
pub fn others_cpus(prev: &Snapshot, cur: &Snapshot, hz: u64) -> f64 {
    let secs = cur.at - prev.at;
    if secs <= 0.0 || hz == 0 {
        return 0.0;
    }
    let ours: u64 = cur
        .ours
        .iter()
        .map(|(pid, t)| t.saturating_sub(prev.ours.get(pid).copied().unwrap_or(0)))
        .sum();
    let busy = cur.busy.saturating_sub(prev.busy);
    busy.saturating_sub(ours) as f64 / hz as f64 / secs
}

/// What the load check found.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Load {
    /// Average CPUs used by other processes over the run.
    pub others_avg: f64,
    /// The highest one-second average.
    pub others_peak: f64,
    /// `/proc/loadavg` at the start and at the end.
    pub loadavg_start: String,
    /// See `loadavg_start`.
    pub loadavg_end: String,
    /// Seconds sampled.
    pub seconds: f64,
}

impl Load {
    /// Busy when the others used more than `limit` CPUs on average.
    pub fn busy(&self, limit: f64) -> bool {
        self.others_avg > limit
    }
}

/// Summarizes snapshots taken every `PERIOD` (100 ms): the overall average and
/// the highest average over about a second.
pub fn summarize(snaps: &[Snapshot], hz: u64) -> (f64, f64) {
    let (Some(first), Some(last)) = (snaps.first(), snaps.last()) else {
        return (0.0, 0.0);
    };
    let secs = last.at - first.at;
    if secs <= 0.0 {
        return (0.0, 0.0);
    }
    // Summing per interval keeps processes that came and went counted.
    let mut total = 0.0;
    for w in snaps.windows(2) {
        total += others_cpus(&w[0], &w[1], hz) * (w[1].at - w[0].at);
    }
    let mut peak: f64 = 0.0;
    let mut start = 0;
    for (i, s) in snaps.iter().enumerate() {
        while s.at - snaps[start].at > 1.0 {
            start += 1;
        }
        if s.at - snaps[start].at >= 0.5 || i + 1 == snaps.len() {
            let mut part = 0.0;
            for w in snaps[start..=i].windows(2) {
                part += others_cpus(&w[0], &w[1], hz) * (w[1].at - w[0].at);
            }
            let span = s.at - snaps[start].at;
            if span > 0.0 {
                peak = peak.max(part / span);
            }
        }
    }
    (total / secs, peak)
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

fn snapshot(me: u32, marker: &str, t0: Instant) -> Snapshot {
    let busy = std::fs::read_to_string("/proc/stat")
        .ok()
        .and_then(|s| parse_proc_stat(&s))
        .unwrap_or(0);
    let mut procs: BTreeMap<u32, (u32, u64)> = BTreeMap::new();
    let mut marked = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Some(st) = std::fs::read_to_string(e.path().join("stat"))
            .ok()
            .and_then(|s| parse_pid_stat(&s))
        else {
            continue;
        };
        procs.insert(pid, st);
        if std::fs::read(e.path().join("cmdline"))
            .is_ok_and(|c| String::from_utf8_lossy(&c).contains(marker))
        {
            marked.push(pid);
        }
    }
    // Ours: this process, what names our directory, and their descendants.
    let mut ours: HashMap<u32, u64> = HashMap::new();
    let mut roots = marked;
    roots.push(me);
    for pid in roots {
        if let Some(&(_, t)) = procs.get(&pid) {
            ours.insert(pid, t);
        }
    }
    loop {
        let before = ours.len();
        for (&pid, &(ppid, t)) in &procs {
            if ours.contains_key(&ppid) {
                ours.entry(pid).or_insert(t);
            }
        }
        if ours.len() == before {
            break;
        }
    }
    Snapshot {
        busy,
        ours,
        at: t0.elapsed().as_secs_f64(),
    }
}

/// A running load check; [`Monitor::finish`] ends it.
pub struct Monitor {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<Vec<Snapshot>>>,
    loadavg_start: String,
}

impl Monitor {
    /// Starts sampling; `marker` is a string in our tasks' command lines.
    pub fn start(marker: String) -> Monitor {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let me = std::process::id();
        let handle = std::thread::spawn(move || {
            let t0 = Instant::now();
            let mut snaps = vec![snapshot(me, &marker, t0)];
            while !s.load(Ordering::Relaxed) {
                std::thread::sleep(PERIOD);
                snaps.push(snapshot(me, &marker, t0));
            }
            snaps
        });
        Monitor {
            stop,
            handle: Some(handle),
            loadavg_start: loadavg(),
        }
    }

    /// Stops sampling and summarizes.
    pub fn finish(mut self) -> Load {
        self.stop.store(true, Ordering::Relaxed);
        let snaps = self
            .handle
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default();
        let (avg, peak) = summarize(&snaps, crate::sys::clock_ticks());
        Load {
            others_avg: avg,
            others_peak: peak,
            loadavg_start: self.loadavg_start.clone(),
            loadavg_end: loadavg(),
            seconds: snaps.last().map_or(0.0, |s| s.at),
        }
    }
}

impl Drop for Monitor {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_files() {
        let stat = "cpu  100 5 50 1000 7 3 2 9 0 0\ncpu0 1 2 3 4\n";
        assert_eq!(parse_proc_stat(stat), Some(160));
        let pid = "42 (a (b) c) S 7 42 42 0 -1 4194560 0 0 0 0 30 12 0 0 20 0 1";
        assert_eq!(parse_pid_stat(pid), Some((7, 42)));
        assert_eq!(parse_pid_stat("garbage"), None);
    }

    fn snap(at: f64, busy: u64, ours: &[(u32, u64)]) -> Snapshot {
        Snapshot {
            busy,
            ours: ours.iter().copied().collect(),
            at,
        }
    }

    #[test]
    fn others_are_busy_time_minus_ours() {
        // 1 s at 100 Hz: 150 busy ticks, 120 of them ours → 0.3 CPUs.
        let a = snap(0.0, 1000, &[(1, 50)]);
        let b = snap(1.0, 1150, &[(1, 150), (2, 20)]);
        assert!((others_cpus(&a, &b, 100) - 0.3).abs() < 1e-9);
        // Ours above the machine's total (sampling skew) is not negative.
        let c = snap(2.0, 1160, &[(1, 300)]);
        assert_eq!(others_cpus(&b, &c, 100), 0.0);
    }

    #[test]
    fn summary_average_peak_and_busy_limit() {
        // Others idle for 1 s, then a full CPU for 1 s.
        let snaps: Vec<Snapshot> = (0..=20)
            .map(|i| {
                let at = i as f64 * 0.1;
                let busy = if i <= 10 { 0 } else { (i - 10) * 10 };
                snap(at, busy, &[])
            })
            .collect();
        let (avg, peak) = summarize(&snaps, 100);
        assert!((avg - 0.5).abs() < 1e-9, "{avg}");
        assert!((peak - 1.0).abs() < 1e-9, "{peak}");
        let load = Load {
            others_avg: avg,
            ..Load::default()
        };
        assert!(load.busy(0.1));
        assert!(!load.busy(0.6));
        assert_eq!(summarize(&[], 100), (0.0, 0.0));
    }
}
