//! `sss`: the SSS command line. Each subcommand lives in its own module.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod sim;

/// SSS — a scalable cluster runtime.
#[derive(Debug, Parser)]
#[command(name = "sss", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the scheduling simulator (seed 003's model, plus free market).
    Sim(sim::SimArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Sim(args) => sim::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sss: {e}");
            ExitCode::FAILURE
        }
    }
}
