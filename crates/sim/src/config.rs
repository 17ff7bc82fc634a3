//! Model parameters, policies and the process sets of seed 003 Table 3.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

use crate::error::SimError;

/// Interconnect / resource-management-tree shape (seed 003 §4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
pub enum Network {
    /// 3-level tree, fan-out 8-8-4 from the root.
    W488,
    /// 4-level tree, fan-out 4-4-4-4 from the root.
    W4444,
}

impl Network {
    /// Fan-outs from the root down to the clusters.
    pub fn fanouts(self) -> &'static [usize] {
        match self {
            Network::W488 => &[8, 8, 4],
            Network::W4444 => &[4, 4, 4, 4],
        }
    }
    /// Both networks, in the paper's order.
    pub const ALL: [Network; 2] = [Network::W488, Network::W4444];
}

impl fmt::Display for Network {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Network::W488 => "w488",
            Network::W4444 => "w4444",
        })
    }
}

impl FromStr for Network {
    type Err = SimError;
    fn from_str(s: &str) -> Result<Self, SimError> {
        match s {
            "w488" => Ok(Network::W488),
            "w4444" => Ok(Network::W4444),
            _ => Err(SimError::Parse {
                what: "network",
                value: s.to_string(),
                expected: "w488 or w4444",
            }),
        }
    }
}

/// Kernel placement algorithm of seed 003 §2.2.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
pub enum Algo {
    /// Random clusters.
    Algo0,
    /// Clusters in index order from one end.
    Algo1,
    /// Home subtree first, then the whole system, clusters holding own pages first.
    Algo2,
    /// Home subtree only: own-page clusters first, then page-less ones.
    Algo3,
    /// Home subtree only and strictly the clusters holding own pages.
    Algo4,
}

impl Algo {
    /// All five, in order.
    pub const ALL: [Algo; 5] = [
        Algo::Algo0,
        Algo::Algo1,
        Algo::Algo2,
        Algo::Algo3,
        Algo::Algo4,
    ];
}

impl fmt::Display for Algo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "algo{}", *self as u8)
    }
}

impl FromStr for Algo {
    type Err = SimError;
    fn from_str(s: &str) -> Result<Self, SimError> {
        let n = s.strip_prefix("algo").unwrap_or(s);
        match n {
            "0" => Ok(Algo::Algo0),
            "1" => Ok(Algo::Algo1),
            "2" => Ok(Algo::Algo2),
            "3" => Ok(Algo::Algo3),
            "4" => Ok(Algo::Algo4),
            _ => Err(SimError::Parse {
                what: "algorithm",
                value: s.to_string(),
                expected: "algo0..algo4",
            }),
        }
    }
}

/// Page replacement policy of seed 003 §2.3.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
pub enum Replacement {
    /// Global LRU within the cluster, no page classes.
    Lru,
    /// Class order (copies before last-one before private), low-priority processes first.
    Classed,
}

impl Replacement {
    /// Both, in order.
    pub const ALL: [Replacement; 2] = [Replacement::Lru, Replacement::Classed];
    /// The paper's number for the policy.
    pub fn number(self) -> u8 {
        match self {
            Replacement::Lru => 0,
            Replacement::Classed => 1,
        }
    }
}

impl fmt::Display for Replacement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "repl{}", self.number())
    }
}

impl FromStr for Replacement {
    type Err = SimError;
    fn from_str(s: &str) -> Result<Self, SimError> {
        match s.strip_prefix("repl").unwrap_or(s) {
            "0" => Ok(Replacement::Lru),
            "1" => Ok(Replacement::Classed),
            _ => Err(SimError::Parse {
                what: "replacement",
                value: s.to_string(),
                expected: "0 or 1 (repl0, repl1)",
            }),
        }
    }
}

/// Who decides placement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
pub enum Policy {
    /// A global kernel scheduler using one of algo0–algo4.
    Kernel(Algo),
    /// No global placement: each process picks and moves its own clusters
    /// (seed 000 §5, seed 002 §3); `penalty` adds the saturated-resource aging term.
    FreeMarket {
        /// Whether users of saturated resources are aged faster.
        penalty: bool,
    },
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Policy::Kernel(a) => write!(f, "{a}"),
            Policy::FreeMarket { penalty: false } => f.write_str("fm"),
            Policy::FreeMarket { penalty: true } => f.write_str("fm+pen"),
        }
    }
}

impl FromStr for Policy {
    type Err = SimError;
    fn from_str(s: &str) -> Result<Self, SimError> {
        match s {
            "fm" => Ok(Policy::FreeMarket { penalty: false }),
            "fm+pen" | "fm-pen" | "fmpen" => Ok(Policy::FreeMarket { penalty: true }),
            _ => s
                .parse::<Algo>()
                .map(Policy::Kernel)
                .map_err(|_| SimError::Parse {
                    what: "policy",
                    value: s.to_string(),
                    expected: "algo0..algo4, fm or fm+pen",
                }),
        }
    }
}

/// Process set of seed 003 Table 3.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
pub enum SetName {
    /// 12 processes, light memory demand.
    A,
    /// 11 large processes.
    L,
    /// 23 processes, many small ones and one of 256.
    M,
    /// 14 processes, mixed.
    R,
}

impl SetName {
    /// All four, in order.
    pub const ALL: [SetName; 4] = [SetName::A, SetName::L, SetName::M, SetName::R];
}

impl fmt::Display for SetName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self:?}")
    }
}

impl FromStr for SetName {
    type Err = SimError;
    fn from_str(s: &str) -> Result<Self, SimError> {
        match s {
            "A" | "a" => Ok(SetName::A),
            "L" | "l" => Ok(SetName::L),
            "M" | "m" => Ok(SetName::M),
            "R" | "r" => Ok(SetName::R),
            _ => Err(SimError::Parse {
                what: "process set",
                value: s.to_string(),
                expected: "A, L, M or R",
            }),
        }
    }
}

/// One row of Table 3.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SetSpec {
    /// Set name.
    pub name: SetName,
    /// Parallelism of each process.
    pub parallelism: Vec<usize>,
    /// Total private pages over all processes.
    pub private_pages: usize,
    /// Total shared pages over all processes.
    pub shared_pages: usize,
    /// Maximum memory demand as a fraction of total real memory.
    pub max_demand: f64,
    /// Barrier interval range in effective clocks (inclusive).
    pub sync_interval: (u64, u64),
}

fn rep(v: usize, n: usize) -> impl Iterator<Item = usize> {
    std::iter::repeat_n(v, n)
}

impl SetSpec {
    /// Table 3 of seed 003. Set R's parallelism list is truncated in the
    /// paper (8 of 14 values, 430 of 1514); the missing six are chosen as
    /// 100, 128, 192, 200, 208, 256 so count and total match.
    pub fn table3(name: SetName) -> SetSpec {
        let (par, private_pages, shared_pages, max_demand, sync_interval): (
            Vec<usize>,
            _,
            _,
            _,
            _,
        ) = match name {
            SetName::A => (
                vec![16, 36, 48, 50, 50, 64, 70, 96, 100, 128, 192, 200],
                35_500,
                10_120,
                1.00,
                (1000, 2000),
            ),
            SetName::L => (
                rep(64, 5)
                    .chain(rep(128, 2))
                    .chain(rep(192, 2))
                    .chain(rep(256, 2))
                    .collect(),
                68_480,
                7_280,
                1.68,
                (1000, 1000),
            ),
            SetName::M => (
                rep(16, 16).chain(rep(50, 6)).chain(rep(256, 1)).collect(),
                35_480,
                30_320,
                1.70,
                (1000, 1000),
            ),
            SetName::R => (
                vec![16, 36, 48, 50, 50, 64, 70, 96, 100, 128, 192, 200, 208, 256],
                65_320,
                14_980,
                1.67,
                (1000, 3000),
            ),
        };
        SetSpec {
            name,
            parallelism: par,
            private_pages,
            shared_pages,
            max_demand,
            sync_interval,
        }
    }

    /// Sum of parallelism.
    pub fn total_parallelism(&self) -> usize {
        self.parallelism.iter().sum()
    }
}

/// Every tunable of the model. Defaults are seed 003 Table 1/2 where the
/// paper gives a number, and documented choices (docs/scheduling.md) where not.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Params {
    /// Processors (= clusters).
    pub processors: usize,
    /// Page frames per cluster.
    pub pages_per_cluster: usize,
    /// Quantum in clocks.
    pub quantum: u64,
    /// Disk access in clocks.
    pub disk_access: u64,
    /// Per-hop base cost of a page move.
    pub page_move_cost: u64,
    /// Per-hop base cost of any other message.
    pub comm_cost: u64,
    /// Bandwidth multiplier of a link per tree level, counted upward from the
    /// cluster links (index 0 = cluster–leaf-switch link). Hop cost is base / multiplier.
    pub link_multipliers: Vec<f64>,
    /// Parallel copies of every link (the duplicated network).
    pub network_planes: usize,
    /// Fraction of memory accesses that go to the shared space.
    pub shared_fraction: f64,
    /// Fraction of shared accesses that are writes.
    pub write_fraction: f64,
    /// Zipf exponent of the private-page access-frequency table.
    pub private_zipf: f64,
    /// Zipf exponent of the shared-page access-frequency table (per thread window).
    pub shared_zipf: f64,
    /// Threads per barrier group: each barrier round splits a process's
    /// threads into random groups of this size (1 = no barriers).
    pub barrier_group: usize,
    /// Priority coefficient C_p (Table 1).
    pub c_p: f64,
    /// Priority coefficient C_m (Table 1).
    pub c_m: f64,
    /// Priority coefficient C_wp (Table 1).
    pub c_wp: f64,
    /// Priority coefficient C_r (Table 1).
    pub c_r: f64,
    /// Effective slices after which a process finishes (ends the run).
    pub finish_slices: u64,
    /// Maximum slices per run.
    pub max_slices: u64,
    /// Free market: slices of look-ahead a process uses to weigh a move.
    pub fm_horizon: f64,
    /// Free market: weight of the saturated-resource aging penalty.
    pub fm_penalty: f64,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            processors: 256,
            pages_per_cluster: 400,
            quantum: 1_000_000,
            disk_access: 100_000,
            page_move_cost: 500,
            comm_cost: 50,
            link_multipliers: vec![1.0, 2.0, 4.0, 8.0],
            network_planes: 2,
            shared_fraction: 0.0005,
            write_fraction: 0.125,
            private_zipf: 1.0,
            shared_zipf: 1.0,
            barrier_group: 2,
            c_p: 1.0,
            c_m: 0.005,
            c_wp: 1.0,
            c_r: 1.0,
            finish_slices: 20,
            max_slices: 100,
            fm_horizon: 5.0,
            fm_penalty: 1.0,
        }
    }
}

impl Params {
    /// Check that the parameters describe a runnable model.
    pub fn validate(&self) -> Result<(), SimError> {
        let bad = |m: &str| Err(SimError::InvalidParams(m.to_string()));
        if self.processors != 256 {
            return bad("the networks are defined for 256 processors");
        }
        if self.pages_per_cluster == 0 || self.quantum == 0 || self.max_slices == 0 {
            return bad("pages_per_cluster, quantum and max_slices must be positive");
        }
        if self.link_multipliers.len() < 4 || self.link_multipliers.iter().any(|m| *m <= 0.0) {
            return bad("link_multipliers needs 4 positive entries");
        }
        if self.network_planes == 0 {
            return bad("network_planes must be at least 1");
        }
        for (name, v) in [
            ("shared_fraction", self.shared_fraction),
            ("write_fraction", self.write_fraction),
        ] {
            if !(0.0..=1.0).contains(&v) {
                return Err(SimError::InvalidParams(format!("{name} must be in [0, 1]")));
            }
        }
        Ok(())
    }
}

/// One simulation run: what to simulate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSpec {
    /// Network.
    pub network: Network,
    /// Placement policy.
    pub policy: Policy,
    /// Replacement policy.
    pub replacement: Replacement,
    /// Process set.
    pub set: SetName,
    /// Base seed.
    pub seed: u64,
}

impl RunSpec {
    /// Short stable label, e.g. `w488/algo4/repl1/A`.
    pub fn label(&self) -> String {
        format!(
            "{}/{}/{}/{}",
            self.network, self.policy, self.replacement, self.set
        )
    }
}
