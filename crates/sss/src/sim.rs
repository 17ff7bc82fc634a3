//! `sss sim`: run a grid of scheduling simulations and write tables and plots.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use sss_sim::runner::{self, Filter, GridKind};
use sss_sim::{plot, report, Algo, Network, Params, Policy, Replacement, SetName, SimError};
use thiserror::Error;

/// Whether free-market runs are included.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FreeMarket {
    /// Kernel algorithms and free market.
    With,
    /// Kernel algorithms only.
    Without,
    /// Free market only (with and without the penalty).
    Only,
}

/// Arguments of `sss sim`.
#[derive(Debug, Args)]
pub struct SimArgs {
    /// Grid to run: `full` (80 kernel runs + 16 free-market runs) or `reduced`.
    #[arg(long, default_value = "full")]
    grid: GridKind,
    /// Directory for results.json, results.md and the SVG plots.
    #[arg(long, default_value = "sim-out")]
    out: PathBuf,
    /// Base seed; each run derives its own from it and its label.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Keep only these networks (w488, w4444); comma-separated.
    #[arg(long, value_delimiter = ',')]
    network: Vec<Network>,
    /// Keep only these kernel algorithms (algo0..algo4); comma-separated.
    #[arg(long, value_delimiter = ',')]
    algo: Vec<Algo>,
    /// Keep only these replacement policies (0, 1); comma-separated.
    #[arg(long, value_delimiter = ',')]
    replacement: Vec<Replacement>,
    /// Keep only these process sets (A, L, M, R); comma-separated.
    #[arg(long, value_delimiter = ',')]
    set: Vec<SetName>,
    /// Free-market runs: with, without, only.
    #[arg(long, value_enum, default_value = "with")]
    free_market: FreeMarket,
    /// Worker threads (0 = one per core).
    #[arg(long, default_value_t = 0)]
    threads: usize,
    /// JSON file overriding model parameters (any subset of the fields).
    #[arg(long)]
    params: Option<PathBuf>,
    /// Override the maximum number of slices per run.
    #[arg(long)]
    max_slices: Option<u64>,
    /// Skip the SVG plots.
    #[arg(long)]
    no_plots: bool,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
    /// Run the sensitivity study (parameters the paper leaves open, varied
    /// one at a time on w488, sets A and L) instead of a grid.
    #[arg(long)]
    sensitivity: bool,
}

/// Failures of `sss sim`.
#[derive(Debug, Error)]
pub enum CliError {
    /// The simulator failed.
    #[error(transparent)]
    Sim(#[from] SimError),
    /// The parameter file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// File.
        path: String,
        /// Cause.
        source: std::io::Error,
    },
    /// The parameter file is not valid JSON for the parameters.
    #[error("bad parameter file {path}: {source}")]
    Params {
        /// File.
        path: String,
        /// Cause.
        source: serde_json::Error,
    },
    /// The filters left nothing to run.
    #[error("the filters select no run")]
    Empty,
}

fn load_params(args: &SimArgs) -> Result<Params, CliError> {
    let mut p = runner::grid_params(args.grid);
    if let Some(path) = &args.params {
        let text = std::fs::read_to_string(path).map_err(|source| CliError::Read {
            path: path.display().to_string(),
            source,
        })?;
        p = serde_json::from_str(&text).map_err(|source| CliError::Params {
            path: path.display().to_string(),
            source,
        })?;
    }
    if let Some(m) = args.max_slices {
        p.max_slices = m;
    }
    p.validate()?;
    Ok(p)
}

fn progress_bar(quiet: bool, len: u64) -> ProgressBar {
    if quiet {
        return ProgressBar::hidden();
    }
    let b = ProgressBar::new(len);
    b.set_style(
        ProgressStyle::with_template(
            "{elapsed_precise} [{bar:40}] {percent}% slices {pos}/{len} eta {eta}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    b.enable_steady_tick(Duration::from_millis(500));
    b
}

fn run_sensitivity(args: &SimArgs) -> Result<(), CliError> {
    let runs = runner::sensitivity_specs(args.seed).len() * runner::variants().len();
    let bar = progress_bar(args.quiet, runs as u64 * Params::default().max_slices);
    eprintln!("sss sim --sensitivity: {runs} runs");
    let s = runner::sensitivity(args.seed, args.threads, &|n| bar.inc(n))?;
    bar.finish_and_clear();
    report::write_sensitivity(&s, &args.out)?;
    println!("{}", report::sensitivity_markdown(&s));
    let wall: f64 = s.results.iter().map(|r| r.wall_seconds).sum();
    println!(
        "{runs} runs in {wall:.1} s; results in {}",
        args.out.display()
    );
    Ok(())
}

/// Run `sss sim`.
pub fn run(args: SimArgs) -> Result<(), CliError> {
    if args.sensitivity {
        return run_sensitivity(&args);
    }
    let params = load_params(&args)?;
    let mut policies: Vec<Policy> = Vec::new();
    if args.free_market != FreeMarket::Only {
        let algos = if args.algo.is_empty() {
            Algo::ALL.to_vec()
        } else {
            args.algo.clone()
        };
        policies.extend(algos.into_iter().map(Policy::Kernel));
    }
    if args.free_market != FreeMarket::Without {
        policies.push(Policy::FreeMarket { penalty: false });
        policies.push(Policy::FreeMarket { penalty: true });
    }
    let filter = Filter {
        networks: args.network.clone(),
        policies,
        replacements: args.replacement.clone(),
        sets: args.set.clone(),
    };
    let specs = runner::filtered(runner::grid(args.grid, args.seed), &filter);
    if specs.is_empty() {
        return Err(CliError::Empty);
    }
    let bar = if args.quiet {
        ProgressBar::hidden()
    } else {
        let b = ProgressBar::new(specs.len() as u64 * params.max_slices);
        b.set_style(
            ProgressStyle::with_template(
                "{elapsed_precise} [{bar:40}] {percent}% slices {pos}/{len} eta {eta}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        b.enable_steady_tick(Duration::from_millis(500));
        b
    };
    eprintln!(
        "sss sim: {} runs, up to {} slices each",
        specs.len(),
        params.max_slices
    );
    let results = runner::run_all(&specs, &params, args.threads, &|n| bar.inc(n))?;
    bar.finish_and_clear();
    report::write(&results, &args.out)?;
    if !args.no_plots {
        for p in plot::write_all(&results, &args.out)? {
            eprintln!("wrote {}", p.display());
        }
    }
    println!("{}", report::summary_markdown(&results));
    println!(
        "{} runs in {:.1} s on {} threads; {:.3e} simulated processor-clocks/s ({:.3e} machine clocks/s)",
        results.outcomes.len(),
        results.wall_seconds,
        results.threads,
        results.clocks_per_second(),
        results.machine_clocks_per_second()
    );
    println!("results in {}", args.out.display());
    Ok(())
}
