//! `sss bench`: MBCF latency, bandwidth and CPU cost against raw UDP,
//! TCP_NODELAY and Open MPI (the harness lives in `sss-bench`), and the
//! hidden task side it launches through `sss run`.

pub use sss_bench::{BenchArgs, TaskArgs};

/// `sss bench [sswait]`: the MBCF comparison, or the SS-Wait one.
#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct BenchCli {
    #[command(subcommand)]
    which: Option<Which>,
    #[command(flatten)]
    args: BenchArgs,
}

#[derive(Debug, clap::Subcommand)]
enum Which {
    /// Ring pass and barrier on one node: spin, block, SS-Wait, Open MPI.
    Sswait(sss_bench::sswait::SswaitArgs),
    /// The NAS Parallel Benchmarks (a source tree you give) on SSS, Open MPI and MPICH.
    Npb(sss_bench::npb::NpbArgs),
    /// Laplace on the shared heap: every protocol, write mode and
    /// placement (and ArgoDSM, given its program), side by side.
    Dsm(sss_bench::dsm::DsmArgs),
}

/// Dispatches `sss bench`, `sss bench sswait`, `sss bench npb` and
/// `sss bench dsm`.
pub fn run_cli(cli: BenchCli) -> Result<(), String> {
    match cli.which {
        None => run(cli.args).map_err(|e| e.to_string()),
        Some(Which::Sswait(a)) => {
            let exe = std::env::current_exe().map_err(|e| e.to_string())?;
            let md = sss_bench::sswait::run(&a, &exe)?;
            print!("{md}");
            Ok(())
        }
        Some(Which::Dsm(a)) => {
            let exe = std::env::current_exe().map_err(|e| e.to_string())?;
            let (inc, lib) = crate::mpicc::locate_lib("sss.h", "sss")?;
            let md = sss_bench::dsm::run(&a, &exe, &inc, &lib)?;
            print!("{md}");
            Ok(())
        }
        Some(Which::Npb(a)) => {
            let exe = std::env::current_exe().map_err(|e| e.to_string())?;
            let md = sss_bench::npb::run(&a, &exe)?;
            print!("{md}");
            Ok(())
        }
    }
}

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
