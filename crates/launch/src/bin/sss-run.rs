//! `sss-run`: the `sss run` launcher as a stand-alone program.

use clap::Parser;

/// Run PROGRAM as N tasks of an SSS job.
#[derive(Parser)]
#[command(name = "sss-run", version, about)]
struct Cli {
    #[command(flatten)]
    run: sss_launch::RunArgs,
}

fn main() {
    let cli = Cli::parse();
    std::process::exit(sss_launch::run(cli.run));
}
