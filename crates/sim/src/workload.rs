//! Turning a Table 3 row into concrete processes: page spaces and
//! access-frequency tables.

use serde::{Deserialize, Serialize};

use crate::config::{Params, SetSpec};

/// One parallel process of fixed parallelism.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProcSpec {
    /// Threads (= clusters requested).
    pub parallelism: usize,
    /// Private pages of each thread.
    pub private_pages: Vec<u32>,
    /// Pages in the process's shared space.
    pub shared_pages: u32,
    /// Shared pages each thread's access table covers (its window).
    pub window: u32,
    /// Barrier interval range in effective clocks.
    pub sync_interval: (u64, u64),
}

impl ProcSpec {
    /// First shared page of thread `j`'s window. Windows are spread evenly
    /// over the shared space and overlap their neighbours, so every shared
    /// page is in about `parallelism * window / shared_pages` windows.
    pub fn window_start(&self, j: usize) -> u32 {
        (j as u64 * self.shared_pages as u64 / self.parallelism as u64) as u32
    }
    /// Offset of shared page `g` in thread `j`'s window, if it is in it.
    pub fn window_offset(&self, j: usize, g: u32) -> Option<u32> {
        let start = self.window_start(j);
        let d = (g + self.shared_pages - start) % self.shared_pages;
        (d < self.window).then_some(d)
    }
}

/// Split `total` over `weights` proportionally, integer parts exact.
fn split(total: usize, weights: &[usize]) -> Vec<usize> {
    let sum: usize = weights.iter().sum();
    let mut out: Vec<usize> = weights.iter().map(|w| total * w / sum).collect();
    let mut rest = total - out.iter().sum::<usize>();
    let mut i = 0;
    while rest > 0 {
        let len = out.len();
        out[i % len] += 1;
        rest -= 1;
        i += 1;
    }
    out
}

/// Build the processes of a set. Private and shared space sizes are split
/// in proportion to parallelism so Table 3's totals hold exactly. The
/// per-thread shared window is sized so that the set's maximum memory
/// demand (every thread's private pages plus a copy of its window) equals
/// Table 3's ratio of total real memory.
pub fn build(set: &SetSpec, params: &Params) -> Vec<ProcSpec> {
    let par = &set.parallelism;
    let total_par = set.total_parallelism();
    let privs = split(set.private_pages, par);
    let shareds = split(set.shared_pages, par);
    let memory = (params.processors * params.pages_per_cluster) as f64;
    let window = ((set.max_demand * memory - set.private_pages as f64) / total_par as f64)
        .round()
        .max(1.0) as u32;
    par.iter()
        .zip(privs.iter().zip(&shareds))
        .map(|(&p, (&pv, &sh))| {
            let per: Vec<u32> = split(pv, &vec![1; p])
                .into_iter()
                .map(|x| x as u32)
                .collect();
            let sh = sh.max(1) as u32;
            ProcSpec {
                parallelism: p,
                private_pages: per,
                shared_pages: sh,
                window: window.min(sh),
                sync_interval: set.sync_interval,
            }
        })
        .collect()
}

/// Normalised Zipf weights `1/(k+1)^alpha` for `n` pages.
pub fn zipf(n: usize, alpha: f64) -> Vec<f64> {
    let raw: Vec<f64> = (0..n).map(|k| 1.0 / ((k + 1) as f64).powf(alpha)).collect();
    let sum: f64 = raw.iter().sum();
    raw.into_iter().map(|w| w / sum).collect()
}

/// Zipf tables for every size up to `max`, indexed by size.
#[derive(Debug, Clone)]
pub struct ZipfTables(Vec<Vec<f64>>);

impl ZipfTables {
    /// Tables for sizes 0..=max.
    pub fn new(max: usize, alpha: f64) -> Self {
        ZipfTables((0..=max).map(|n| zipf(n, alpha)).collect())
    }
    /// Weight of page `k` in a table of `n` pages.
    #[inline]
    pub fn w(&self, n: u32, k: u32) -> f64 {
        self.0[n as usize][k as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SetName;

    #[test]
    fn totals_match_table3() {
        let params = Params::default();
        for name in SetName::ALL {
            let set = SetSpec::table3(name);
            let procs = build(&set, &params);
            assert_eq!(procs.len(), set.parallelism.len());
            let pv: u32 = procs.iter().flat_map(|p| p.private_pages.iter()).sum();
            let sh: u32 = procs.iter().map(|p| p.shared_pages).sum();
            assert_eq!(pv as usize, set.private_pages, "{name}");
            assert_eq!(sh as usize, set.shared_pages, "{name}");
            let demand: f64 = procs
                .iter()
                .map(|p| {
                    p.private_pages.iter().sum::<u32>() as f64
                        + (p.parallelism as u32 * p.window) as f64
                })
                .sum::<f64>()
                / 102_400.0;
            assert!((demand - set.max_demand).abs() < 0.02, "{name}: {demand}");
        }
        assert_eq!(SetSpec::table3(SetName::R).total_parallelism(), 1514);
        assert_eq!(SetSpec::table3(SetName::M).parallelism.len(), 23);
    }

    #[test]
    fn windows_wrap_and_overlap() {
        let p = ProcSpec {
            parallelism: 4,
            private_pages: vec![1; 4],
            shared_pages: 100,
            window: 40,
            sync_interval: (1000, 1000),
        };
        assert_eq!(p.window_start(3), 75);
        assert_eq!(p.window_offset(3, 10), Some(35));
        assert_eq!(p.window_offset(3, 20), None);
        assert_eq!(p.window_offset(0, 30), Some(30));
        let z = zipf(5, 1.0);
        assert!((z.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        assert!(z[0] > z[4]);
    }
}
