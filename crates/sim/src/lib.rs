//! SSS scheduling simulator: the detailed probabilistic model of seed 003
//! (SSS-CORE kernel scheduling algo0–algo4 and page replacement 0/1 on a
//! 256-processor NUMA cluster), plus free-market self-placement.
//!
//! [`model::Sim`] runs one configuration; [`runner`] runs grids of them in
//! parallel (deterministically); [`report`] and [`plot`] write Markdown,
//! JSON and SVG.

pub mod config;
pub mod error;
pub mod model;
pub mod plot;
pub mod report;
pub mod runner;
pub mod sched;
pub mod topology;
pub mod workload;

pub use config::{Algo, Network, Params, Policy, Replacement, RunSpec, SetName, SetSpec};
pub use error::SimError;
pub use model::{Breakdown, Counters, Outcome, Sim};
