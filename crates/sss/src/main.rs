//! `sss`: the SSS command line. Each subcommand lives in its own module.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod bench;
mod gendocs;
mod info;
mod mpicc;
mod rcop;
mod sim;
mod status;
mod top;

/// SSS — a scalable cluster runtime.
#[derive(Debug, Parser)]
#[command(name = "sss", version, about)]
pub(crate) struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a parallel program: `sss run -n N [--hosts LIST] PROGRAM ARGS…`.
    Run(sss_launch::RunArgs),
    /// Run the scheduling simulator (seed 003's model, plus free market).
    Sim(sim::SimArgs),
    /// Show every node's IDM page as this node's daemon sees it.
    Status(status::StatusArgs),
    /// Show the build, what this machine offers, and every SSS_* setting.
    Info(info::InfoArgs),
    /// A live view of the nodes and tasks, refreshing in place.
    Top(top::TopArgs),
    /// Measure MBCF against raw UDP, TCP and Open MPI on two hosts.
    Bench(bench::BenchCli),
    /// Compile and link a C MPI program against libmpi (`-show` prints the command; `--rcop` compiles with `sss cc`'s pass).
    Mpicc(mpicc::WrapArgs),
    /// Compile and link a C++ MPI program against libmpi.
    Mpicxx(mpicc::WrapArgs),
    /// Compile and link a Fortran MPI program (`mpif.h` or `use mpi`) against libmpi.
    #[command(alias = "mpifort")]
    Mpif90(mpicc::WrapArgs),
    /// Compile and link a C program with the RCOP pass: stores to the DSM heap are noted.
    Cc(mpicc::WrapArgs),
    /// Compile and link a C++ program with the RCOP pass.
    #[command(name = "c++")]
    Cxx(mpicc::WrapArgs),
    /// Task side of `sss bench` (started by it through the launcher).
    #[command(name = "__bench-task", hide = true)]
    BenchTask(bench::TaskArgs),
    /// Man pages and shell completions (for installers).
    #[command(name = "__gen-docs", hide = true)]
    GenDocs(gendocs::GenDocsArgs),
}

fn wrap(args: mpicc::WrapArgs, lang: mpicc::Lang) -> ExitCode {
    exit_with(mpicc::run(args, lang))
}

fn exit_with(r: Result<u8, String>) -> ExitCode {
    match r {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("sss: {e}");
            ExitCode::FAILURE
        }
    }
}

fn main() -> ExitCode {
    // `sss run -np N …`, as mpiexec takes it (clap has no multi-letter
    // short options).
    let mut argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if argv.get(1).is_some_and(|a| a == "run") && argv.get(2).is_some_and(|a| a == "-np") {
        argv[2] = "--np".into();
    }
    let cli = Cli::parse_from(argv);
    let result = match cli.command {
        Command::Run(args) => {
            // The launcher reports its own errors; its status is the job's.
            let code = sss_launch::run(args);
            return ExitCode::from(u8::try_from(code).unwrap_or(1));
        }
        Command::Sim(args) => sim::run(args).map_err(|e| e.to_string()),
        Command::Status(args) => status::run(args),
        Command::Info(args) => info::run(args),
        Command::Top(args) => top::run(args),
        Command::Bench(cli) => bench::run_cli(cli),
        Command::Mpicc(args) => return wrap(args, mpicc::Lang::C),
        Command::Mpicxx(args) => return wrap(args, mpicc::Lang::Cxx),
        Command::Mpif90(args) => return wrap(args, mpicc::Lang::Fortran),
        Command::Cc(args) => return exit_with(rcop::run(args, false)),
        Command::Cxx(args) => return exit_with(rcop::run(args, true)),
        Command::BenchTask(args) => bench::task(args).map_err(|e| e.to_string()),
        Command::GenDocs(args) => gendocs::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sss: {e}");
            ExitCode::FAILURE
        }
    }
}
