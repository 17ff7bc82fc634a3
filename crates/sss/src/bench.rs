//! `sss bench`: MBCF latency, bandwidth and CPU cost against raw UDP,
//! TCP_NODELAY and Open MPI (the harness lives in `sss-bench`), and the
//! hidden task side it launches through `sss run`.

pub use sss_bench::{BenchArgs, TaskArgs};

/// Runs the bench; the tasks re-invoke this very binary.
pub fn run(args: BenchArgs) -> Result<(), sss_bench::BenchError> {
    let exe = std::env::current_exe()
        .map_err(|e| sss_bench::BenchError::Io("cannot find the sss binary".into(), e))?;
    sss_bench::run(&args, &exe).map(|_| ())
}

/// The task side of one bench repetition.
pub fn task(args: TaskArgs) -> Result<(), sss_bench::BenchError> {
    sss_bench::task_main(&args)
}
