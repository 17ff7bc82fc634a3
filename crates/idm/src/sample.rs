//! Sampling this node's state from /proc and from the tasks' control
//! blocks (`/dev/shm/sss-<job>-<rank>-ctl`).

use sss_mbcf::idm::{NodeData, TaskEntry, TaskState, IDM_TASKS, NODE_VALID};
use sss_mbcf::node::{self, TaskView};
use std::collections::BTreeMap;
use std::time::Instant;

/// Remembers the control blocks of local tasks between samples.
pub struct Sampler {
    node: String,
    views: BTreeMap<(u32, u32, u64), TaskView>,
    rescanned: Option<Instant>,
    /// The last few counts of runnable threads, to publish their least.
    recent: [u32; RECENT],
    samples: usize,
}

/// Samples whose least runnable count is published: a count is an
/// instant's, and threads that run for a moment (a daemon sampling, a
/// progress thread woken by a timer) would make a node with one spinning
/// thread per CPU look oversubscribed to SS-Wait, which then yields
/// where it should spin.
const RECENT: usize = 4;

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// (load ×1000 for 1/5/15 min, running threads) from /proc/loadavg.
pub fn loadavg() -> ([u32; 3], u32) {
    let s = read("/proc/loadavg");
    let f: Vec<&str> = s.split_whitespace().collect();
    let l = |i: usize| {
        f.get(i)
            .and_then(|x| x.parse::<f64>().ok())
            .map_or(0, |v| (v * 1000.0) as u32)
    };
    let running = f
        .get(3)
        .and_then(|x| x.split('/').next())
        .and_then(|x| x.parse().ok())
        .unwrap_or(0);
    ([l(0), l(1), l(2)], running)
}

/// (total, available) memory in KiB.
pub fn meminfo() -> (u64, u64) {
    let s = read("/proc/meminfo");
    let get = |k: &str| {
        s.lines()
            .find(|l| l.starts_with(k))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (get("MemTotal:"), get("MemAvailable:"))
}

/// The state letter of a process (R, S, D, T, Z, …).
pub fn proc_state(pid: u32) -> Option<char> {
    let s = read(&format!("/proc/{pid}/stat"));
    s.rsplit(')')
        .next()?
        .split_whitespace()
        .next()?
        .chars()
        .next()
}

impl Sampler {
    /// A sampler for the tasks of `node`.
    pub fn new(node: &str) -> Self {
        Self {
            node: node.to_string(),
            views: BTreeMap::new(),
            rescanned: None,
            recent: [0; RECENT],
            samples: 0,
        }
    }

    fn rescan(&mut self) {
        let Ok(tasks) = node::tasks() else {
            return;
        };
        for &(job, rank, tag) in &tasks {
            if self.views.contains_key(&(job, rank, tag)) {
                continue;
            }
            if let Ok(v) = TaskView::open(job, rank, tag) {
                if v.node() == self.node {
                    self.views.insert((job, rank, tag), v);
                }
            }
        }
        self.views.retain(|k, _| tasks.binary_search(k).is_ok());
    }

    /// This node's page now.
    pub fn sample(&mut self) -> NodeData {
        if self
            .rescanned
            .is_none_or(|t| t.elapsed().as_millis() >= 100)
        {
            self.rescan();
            self.rescanned = Some(Instant::now());
        }
        let mut d = NodeData {
            flags: NODE_VALID,
            ..NodeData::default()
        };
        d.set_name(&self.node);
        d.ncpus = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
        let (load, running) = loadavg();
        d.load = load;
        // The count includes us, reading it.
        self.recent[self.samples % RECENT] = running.saturating_sub(1);
        self.samples += 1;
        d.runnable = self.recent[..self.samples.min(RECENT)]
            .iter()
            .copied()
            .min()
            .unwrap_or(0);
        let (t, f) = meminfo();
        d.mem_total_kb = t;
        d.mem_free_kb = f;
        d.updated_ns = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |x| x.as_nanos() as u64);
        let over = d.runnable > d.ncpus;
        let mut n = 0;
        for v in self.views.values() {
            let pid = v.pid();
            let state = match proc_state(pid) {
                Some('R') if over => TaskState::Runnable,
                Some('R') => TaskState::Running,
                Some('S') | Some('D') | Some('I') => TaskState::Sleeping,
                _ => TaskState::Gone,
            };
            // Counters a hostile task may set to anything: never overflow.
            d.packets = d.packets.wrapping_add(v.packets());
            d.bytes = d.bytes.wrapping_add(v.bytes());
            d.retransmissions = d.retransmissions.wrapping_add(v.retransmissions());
            d.rejected = d.rejected.wrapping_add(v.rejected());
            d.refused = d.refused.wrapping_add(v.refused() as u32);
            if n < IDM_TASKS {
                d.tasks[n] = TaskEntry {
                    job: v.job(),
                    rank: v.rank(),
                    pid,
                    state: state as u32,
                    progress: v.progress(),
                };
                n += 1;
            }
        }
        d.ntasks = n as u32;
        d
    }
}
