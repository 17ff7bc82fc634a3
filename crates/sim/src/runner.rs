//! Grids of runs, executed in parallel with results independent of the
//! number of threads (each run has its own seeded generator and results
//! are kept in grid order).

use std::time::Instant;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::config::{Algo, Network, Params, Policy, Replacement, RunSpec, SetName};
use crate::error::SimError;
use crate::model::{self, Outcome};

/// Which grid to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum GridKind {
    /// 5 algorithms × 2 replacements × 4 sets × 2 networks, plus free market
    /// (with and without penalty, replacement 1) on every set and network.
    Full,
    /// A small grid for tests and quick looks: w488, sets A and L,
    /// algo0/2/3/4 × both replacements, plus free market; fewer slices.
    Reduced,
}

impl std::str::FromStr for GridKind {
    type Err = SimError;
    fn from_str(s: &str) -> Result<Self, SimError> {
        match s {
            "full" => Ok(GridKind::Full),
            "reduced" => Ok(GridKind::Reduced),
            _ => Err(SimError::Parse {
                what: "grid",
                value: s.to_string(),
                expected: "full or reduced",
            }),
        }
    }
}

/// Filters applied to a grid (empty = keep all).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Filter {
    /// Networks to keep.
    pub networks: Vec<Network>,
    /// Policies to keep.
    pub policies: Vec<Policy>,
    /// Replacements to keep.
    pub replacements: Vec<Replacement>,
    /// Sets to keep.
    pub sets: Vec<SetName>,
}

impl Filter {
    fn keep(&self, s: &RunSpec) -> bool {
        (self.networks.is_empty() || self.networks.contains(&s.network))
            && (self.policies.is_empty() || self.policies.contains(&s.policy))
            && (self.replacements.is_empty() || self.replacements.contains(&s.replacement))
            && (self.sets.is_empty() || self.sets.contains(&s.set))
    }
}

const FM: [Policy; 2] = [
    Policy::FreeMarket { penalty: false },
    Policy::FreeMarket { penalty: true },
];

/// The runs of a grid, in a fixed order.
pub fn grid(kind: GridKind, seed: u64) -> Vec<RunSpec> {
    let mut out = Vec::new();
    let (networks, sets, algos): (&[Network], &[SetName], &[Algo]) = match kind {
        GridKind::Full => (&Network::ALL, &SetName::ALL, &Algo::ALL),
        GridKind::Reduced => (
            &[Network::W488],
            &[SetName::A, SetName::L],
            &[Algo::Algo0, Algo::Algo2, Algo::Algo3, Algo::Algo4],
        ),
    };
    for &network in networks {
        for &set in sets {
            for &replacement in &Replacement::ALL {
                for &a in algos {
                    out.push(RunSpec {
                        network,
                        policy: Policy::Kernel(a),
                        replacement,
                        set,
                        seed,
                    });
                }
            }
            for policy in FM {
                out.push(RunSpec {
                    network,
                    policy,
                    replacement: Replacement::Classed,
                    set,
                    seed,
                });
            }
        }
    }
    out
}

/// Parameters of a grid: the defaults, with fewer slices for the reduced grid.
pub fn grid_params(kind: GridKind) -> Params {
    let mut p = Params::default();
    if kind == GridKind::Reduced {
        p.max_slices = 16;
        p.finish_slices = 8;
    }
    p
}

/// Everything a grid produced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Results {
    /// Parameters used for every run.
    pub params: Params,
    /// One outcome per run, in grid order.
    pub outcomes: Vec<Outcome>,
    /// Wall-clock seconds for the whole grid.
    pub wall_seconds: f64,
    /// Worker threads used.
    pub threads: usize,
}

impl Results {
    /// Simulated processor-clocks per wall-clock second over the whole grid.
    pub fn clocks_per_second(&self) -> f64 {
        let clocks: u64 = self.outcomes.iter().map(|o| o.time.total()).sum();
        clocks as f64 / self.wall_seconds.max(1e-9)
    }
    /// Simulated (machine) clocks per second: processor-clocks / processors.
    pub fn machine_clocks_per_second(&self) -> f64 {
        self.clocks_per_second() / self.params.processors as f64
    }
    /// The outcome of one configuration, if it was run.
    pub fn find(
        &self,
        network: Network,
        policy: Policy,
        repl: Replacement,
        set: SetName,
    ) -> Option<&Outcome> {
        self.outcomes.iter().find(|o| {
            o.spec.network == network
                && o.spec.policy == policy
                && o.spec.replacement == repl
                && o.spec.set == set
        })
    }
}

/// Run `specs` on `threads` workers (0 = rayon's default). `progress` is
/// called once per simulated slice and once per finished run with the
/// number of slices the run did not need, so `specs.len() * max_slices`
/// calls' worth of ticks are delivered in total.
pub fn run_all(
    specs: &[RunSpec],
    params: &Params,
    threads: usize,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Results, SimError> {
    params.validate()?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| SimError::InvalidParams(format!("thread pool: {e}")))?;
    let start = Instant::now();
    let outcomes: Vec<Outcome> = pool.install(|| {
        specs
            .par_iter()
            .map(|s| {
                let o = model::run(s.clone(), params.clone(), &|| progress(1));
                progress(params.max_slices.saturating_sub(o.slices));
                o
            })
            .collect()
    });
    Ok(Results {
        params: params.clone(),
        outcomes,
        wall_seconds: start.elapsed().as_secs_f64(),
        threads: pool.current_num_threads(),
    })
}

/// Apply a filter to a grid.
pub fn filtered(specs: Vec<RunSpec>, f: &Filter) -> Vec<RunSpec> {
    specs.into_iter().filter(|s| f.keep(s)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_sizes() {
        assert_eq!(grid(GridKind::Full, 1).len(), 80 + 16);
        assert_eq!(grid(GridKind::Reduced, 1).len(), 2 * (8 + 2));
        let f = Filter {
            sets: vec![SetName::A],
            ..Default::default()
        };
        assert_eq!(
            grid(GridKind::Full, 1).iter().filter(|s| f.keep(s)).count(),
            24
        );
    }
}

/// One parameter variation of the sensitivity study.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Variant {
    /// Short name.
    pub name: String,
    /// Parameters of the variant.
    pub params: Params,
}

/// The parameters the paper leaves open, each varied alone around the defaults.
pub fn variants() -> Vec<Variant> {
    let d = Params::default();
    let v = |name: &str, f: &dyn Fn(&mut Params)| {
        let mut p = d.clone();
        f(&mut p);
        Variant {
            name: name.to_string(),
            params: p,
        }
    };
    vec![
        v("defaults", &|_| {}),
        v("shared fraction x2 (0.001)", &|p| p.shared_fraction *= 2.0),
        v("shared fraction x1/2 (0.00025)", &|p| {
            p.shared_fraction /= 2.0
        }),
        v("write fraction 0.25", &|p| p.write_fraction = 0.25),
        v("links all x1 (thin tree)", &|p| {
            p.link_multipliers = vec![1.0; 4]
        }),
        v("links x2,4,8,16 (fatter)", &|p| {
            p.link_multipliers = vec![2.0, 4.0, 8.0, 16.0]
        }),
        v("one network plane", &|p| p.network_planes = 1),
        v("barrier groups of 4", &|p| p.barrier_group = 4),
        v("uniform access tables (zipf 0)", &|p| {
            p.private_zipf = 0.0;
            p.shared_zipf = 0.0
        }),
        v("skewed access tables (zipf 2)", &|p| {
            p.private_zipf = 2.0;
            p.shared_zipf = 2.0
        }),
    ]
}

/// The runs of each sensitivity variant: w488, sets A and L, algo2/3/4
/// with replacement 1 and algo4 with replacement 0.
pub fn sensitivity_specs(seed: u64) -> Vec<RunSpec> {
    let mut out = Vec::new();
    for set in [SetName::A, SetName::L] {
        for (a, replacement) in [
            (Algo::Algo2, Replacement::Classed),
            (Algo::Algo3, Replacement::Classed),
            (Algo::Algo4, Replacement::Classed),
            (Algo::Algo4, Replacement::Lru),
        ] {
            out.push(RunSpec {
                network: Network::W488,
                policy: Policy::Kernel(a),
                replacement,
                set,
                seed,
            });
        }
    }
    out
}

/// Results of a sensitivity study: one grid per variant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sensitivity {
    /// Variant names, in order.
    pub names: Vec<String>,
    /// One result set per variant.
    pub results: Vec<Results>,
}

/// Run every variant of [`variants`] on [`sensitivity_specs`].
pub fn sensitivity(
    seed: u64,
    threads: usize,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Sensitivity, SimError> {
    let specs = sensitivity_specs(seed);
    let mut names = Vec::new();
    let mut results = Vec::new();
    for v in variants() {
        results.push(run_all(&specs, &v.params, threads, progress)?);
        names.push(v.name);
    }
    Ok(Sensitivity { names, results })
}
