//! `sss run`: start the tasks of a job, watch them, end them, clean up.
//!
//! ```text
//! sss run -n N [--hosts LIST | --hostfile FILE] [--per-host K]
//!         [--spawner local|ssh] [--tag-output] [--timeout SECS] PROGRAM ARGS…
//! ```
//!
//! The `sss` command line parses [`RunArgs`] and calls [`run`]; this crate
//! also builds a stand-alone `sss-run` binary with the same arguments.
//!
//! # Hosts and placement
//!
//! Without hosts the job is a local one-node cluster: every task on
//! `127.0.0.1`. Hosts are addresses (or names): with the default `local`
//! spawner they must be loopback addresses, and tasks on `127.0.0.2` and
//! `127.0.0.3` are different nodes as far as the runtime knows (it talks
//! `udp` between them, `shm` within one). A hostfile has one host per line,
//! optionally `slots=K`, and `#` comments. Ranks are placed in blocks: with
//! `--per-host K` ranks `0..K` go to the first host, the next `K` to the
//! second, and so on; hosts that all have `slots` are filled the same way;
//! otherwise tasks are spread evenly, earlier hosts taking the remainder.
//!
//! # Environment of every task
//!
//! `SSS_JOB`, `SSS_RANK`, `SSS_SIZE`, `SSS_NODE` (the host as given),
//! `SSS_NODE_ID` (its index in the host list), `SSS_LOCAL_RANK`,
//! `SSS_LOCAL_SIZE` and `SSS_BOOT=tcp:HOST:PORT`, the rendezvous server
//! this launcher runs ([`sss_boot::BootServer`], on `127.0.0.1` for local
//! runs). Tasks read them with [`sss_boot::Boot::from_env`]; the variables
//! are documented in [`sss_boot`]. The job id is a random non-zero `u32`
//! from the OS. Local tasks inherit the launcher's whole environment; over
//! ssh, the variables above and every other `SSS_*` variable of the
//! launcher are passed on the remote command line.
//!
//! # Output and exit status
//!
//! Task stdout and stderr go to the launcher's stdout and stderr, whole
//! lines at a time, so lines never mix mid-line; `--tag-output` prefixes
//! each line with `[rank] `. Task stdin is `/dev/null`.
//!
//! The exit status is 0 when every task exits 0. Otherwise it is the first
//! failure's: its exit code, or 128+S for a task killed by signal S. When a
//! task fails, the launcher says which one and how, e.g.
//! `sss run: task 3 (pid 1234 on 127.0.0.2) was killed by signal 11
//! (SIGSEGV); terminating the other 3 tasks`, and ends the others: SIGTERM
//! to each task's process group, SIGKILL 2 s later. SIGINT, SIGTERM and
//! SIGHUP received by the launcher are forwarded the same way (a second one
//! kills at once) and the status is 128+S. `--timeout` ends the job the same
//! way with status 124, as `timeout(1)` does. A launcher that cannot start
//! the job exits 2 for a bad command line, 127 for a missing program, 126
//! for one that cannot be executed, 1 otherwise.
//!
//! # No orphans, no leftovers
//!
//! Each task leads its own process group and has the parent-death signal
//! SIGKILL, so it dies with the launcher even if the launcher is killed
//! with SIGKILL. When the job ends, however it ends, the launcher SIGKILLs
//! every task's process group (a task's own children included) and every
//! process left with `SSS_JOB=<job>` in its environment (descendants that
//! moved to a session of their own), then removes the job's shared-memory
//! files. A small guardian process, started
//! before the tasks, does the same if the launcher dies without cleaning up
//! (see `guardian.rs`).
//!
//! **Shared-memory naming contract**: the runtime names every
//! shared-memory object of job `J` `/dev/shm/sss-J-…` (`J` in decimal,
//! [`sss_boot::shm_prefix`]); after the tasks end, every file matching
//! `/dev/shm/sss-J-*` is removed, on every host of the job.
//!
//! # The ssh spawner
//!
//! `--spawner ssh` runs each task as `ssh -o BatchMode=yes HOST 'cd DIR;
//! sh -c WRAPPER sss-task env SSS_…=… PROGRAM ARGS'` (`SSS_SSH` replaces
//! `ssh`, e.g. `SSS_SSH="ssh -p 2222"`). The wrapper kills the remote task
//! when the ssh connection's stdin closes, which happens when the launcher
//! ends the task or dies. The rendezvous server listens on all addresses
//! and is advertised as `SSS_BOOT_ADDR` if set, else the local address
//! that routes to the first host. At the end the launcher runs
//! `rm -f /dev/shm/sss-J-*` on each host over ssh.
//!
//! Inside Slurm or `mpirun`, do not use `sss run` at all: start the
//! program with `srun`/`mpirun` and the tasks bootstrap from that
//! launcher's environment ([`sss_boot`]).

mod daemons;
mod error;
mod guardian;
mod hosts;
mod job;
mod output;
mod ssh;
mod sys;

use std::path::PathBuf;
use std::time::Duration;

pub use error::RunError;

/// How tasks are started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Spawner {
    /// Child processes of the launcher; every host is a loopback address.
    Local,
    /// One `ssh` per task.
    Ssh,
}

/// Most tasks in a job: the peers an MBCF endpoint tracks
/// (`sss_proto::Config::max_peers`, 65 536).
pub const MAX_TASKS: u32 = 1 << 16;

/// Arguments of `sss run`.
#[derive(Debug, Clone, clap::Args)]
pub struct RunArgs {
    /// Number of tasks, at most [`MAX_TASKS`].
    #[arg(short = 'n', long = "np", value_name = "N")]
    pub np: u32,

    /// Hosts to run on, comma-separated addresses or names (default: a
    /// local one-node cluster on 127.0.0.1).
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        conflicts_with = "hostfile"
    )]
    pub hosts: Vec<String>,

    /// File with one host per line, optionally `slots=K`; `#` comments.
    #[arg(long, value_name = "FILE")]
    pub hostfile: Option<PathBuf>,

    /// Tasks per host, placed in blocks: ranks 0..K-1 on the first host,
    /// and so on (default: spread evenly over the hosts).
    #[arg(long, value_name = "K")]
    pub per_host: Option<u32>,

    /// How to start tasks.
    #[arg(long, value_enum, default_value_t = Spawner::Local)]
    pub spawner: Spawner,

    /// Prefix every line of output with `[rank] `.
    #[arg(long)]
    pub tag_output: bool,

    /// End the job after this many seconds (exit status 124).
    #[arg(long, value_name = "SECS", value_parser = parse_secs)]
    pub timeout: Option<Duration>,

    /// The program to run, then its arguments.
    #[arg(
        value_name = "PROGRAM",
        required = true,
        num_args = 1..,
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    pub command: Vec<String>,
}

fn parse_secs(s: &str) -> Result<Duration, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v <= 1e9 => Ok(Duration::from_secs_f64(v)),
        _ => Err(format!("{s:?} is not a positive number of seconds")),
    }
}

/// Runs the job described by `args` to its end and returns the exit status
/// for the launcher (see the crate docs). Problems are reported on stderr,
/// prefixed `sss run:`.
///
/// Call it from a thread that stays alive until it returns (the main
/// thread, normally): tasks die when the thread that started them exits.
/// It installs handlers for SIGINT, SIGTERM and SIGHUP that stay installed
/// (doing nothing) after it returns.
pub fn run(args: RunArgs) -> i32 {
    job::run(args)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        run: RunArgs,
    }

    #[test]
    fn parses_the_command_line() {
        let c = Cli::try_parse_from([
            "sss-run",
            "-n",
            "4",
            "--hosts",
            "127.0.0.2,127.0.0.3",
            "--per-host",
            "2",
            "--tag-output",
            "--timeout",
            "1.5",
            "prog",
            "-x",
            "--np",
            "9",
        ])
        .unwrap();
        let r = c.run;
        assert_eq!(r.np, 4);
        assert_eq!(r.hosts, ["127.0.0.2", "127.0.0.3"]);
        assert_eq!(r.per_host, Some(2));
        assert!(r.tag_output);
        assert_eq!(r.spawner, Spawner::Local);
        assert_eq!(r.timeout, Some(Duration::from_millis(1500)));
        // Everything after PROGRAM belongs to the program.
        assert_eq!(r.command, ["prog", "-x", "--np", "9"]);
    }

    #[test]
    fn rejects_bad_command_lines() {
        assert!(Cli::try_parse_from(["sss-run", "prog"]).is_err());
        assert!(Cli::try_parse_from(["sss-run", "-n", "2"]).is_err());
        assert!(Cli::try_parse_from(["sss-run", "-n", "2", "--timeout", "0", "p"]).is_err());
        assert!(Cli::try_parse_from([
            "sss-run",
            "-n",
            "2",
            "--hosts",
            "a",
            "--hostfile",
            "f",
            "p"
        ])
        .is_err());
        assert!(Cli::try_parse_from(["sss-run", "-n", "2", "--spawner", "rsh", "p"]).is_err());
    }
}
