//! A job launched from a test: the test binary re-executed as the launcher
//! (`sss_launch::run`, so no separately built `sss-run` is needed and its
//! output is captured), optionally running the test binary again as the
//! tasks, with a hard time limit.

use crate::process::run_bounded;
use clap::Parser;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

#[derive(Parser)]
struct LauncherCli {
    #[command(flatten)]
    run: sss_launch::RunArgs,
}

/// For the `#[test] fn launcher_mode()` of a test binary: when
/// `launch_env` is set (to the launcher's arguments separated by 0x1f),
/// this process is the launcher of a job (`sss run` with those arguments)
/// and exits with its status; otherwise this returns.
pub fn launcher_mode(launch_env: &str) {
    let Ok(args) = std::env::var(launch_env) else {
        return;
    };
    let argv = std::iter::once("sss-run".to_string()).chain(args.split('\x1f').map(String::from));
    std::process::exit(launcher_main(argv));
}

/// `sss run` in this process: `argv` (its first item the program name)
/// parsed as the launcher's command line; the exit status (2 for a usage
/// error).
pub fn launcher_main(argv: impl IntoIterator<Item = String>) -> i32 {
    match LauncherCli::try_parse_from(argv) {
        Ok(cli) => sss_launch::run(cli.run),
        Err(e) => {
            eprintln!("{e}");
            2
        }
    }
}

/// The arguments that make a re-executed test binary run only its test
/// `name`, quietly and with output shown (`launcher_mode`, `task_mode`).
pub fn self_args(name: &str) -> [&str; 5] {
    [name, "--exact", "--nocapture", "-q", "--test-threads=1"]
}

/// One job's outcome: exit code (None when killed at the time limit),
/// standard output, standard error.
pub type Outcome = (Option<i32>, String, String);

/// Runs the launcher (this binary re-executed with `launch_env` set to
/// `largs`) with `env`, killing it after `limit` — its tasks die with it.
pub fn run_job(
    launch_env: &str,
    largs: &[String],
    env: &[(&str, &str)],
    limit: Duration,
) -> Outcome {
    let mut cmd = Command::new(std::env::current_exe().expect("current_exe"));
    cmd.args(self_args("launcher_mode"))
        .env(launch_env, largs.join("\x1f"))
        .envs(env.iter().copied());
    let f = run_bounded(&mut cmd, limit).expect("start the launcher");
    (f.code(), f.stdout, f.stderr)
}

/// How a test binary launches its jobs: the variable that makes it the
/// launcher, the launcher's own `--timeout`, the hard limit after which
/// the test kills the launcher (longer, so it only catches a hung
/// launcher), and variables every job gets.
pub struct Launcher {
    /// The variable [`launcher_mode`] of this binary reads.
    pub env_var: &'static str,
    /// The launcher's `--timeout`, in seconds.
    pub timeout_s: &'static str,
    /// When the test kills the launcher.
    pub limit: Duration,
    /// Set for every job, before (so overridden by) the job's own.
    pub env: &'static [(&'static str, &'static str)],
}

impl Launcher {
    /// A launcher read from `env_var`, with a `--timeout` of 20 s and a
    /// hard limit of 25 s.
    pub const fn new(env_var: &'static str) -> Launcher {
        Launcher {
            env_var,
            timeout_s: "20",
            limit: Duration::from_secs(25),
            env: &[],
        }
    }

    /// The same with a hard limit of `secs`.
    pub const fn limit_secs(self, secs: u64) -> Launcher {
        Launcher {
            limit: Duration::from_secs(secs),
            ..self
        }
    }

    /// The same with `env` set for every job.
    pub const fn with_env(self, env: &'static [(&'static str, &'static str)]) -> Launcher {
        Launcher { env, ..self }
    }

    /// For the `#[test] fn launcher_mode()` of the binary: see
    /// [`launcher_mode`].
    pub fn launcher_mode(&self) {
        launcher_mode(self.env_var)
    }

    /// Runs `exe args` on `placement` with `env` in the tasks' (and the
    /// launcher's) environment.
    pub fn run(
        &self,
        placement: &[&str],
        exe: &Path,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Outcome {
        let largs = job_args(placement, self.timeout_s, exe, args);
        let mut all = self.env.to_vec();
        all.extend_from_slice(env);
        run_job(self.env_var, &largs, &all, self.limit)
    }

    /// Runs this test binary as the tasks on `placement`: its test
    /// `task_mode` (see [`task_mode`]), with `task_env` set to `scenario`
    /// and `env` added.
    pub fn run_self(
        &self,
        placement: &[&str],
        task_env: &str,
        scenario: &str,
        env: &[(&str, &str)],
    ) -> Outcome {
        let exe = std::env::current_exe().expect("current_exe");
        let mut all = vec![(task_env, scenario)];
        all.extend_from_slice(env);
        self.run(placement, &exe, &self_args("task_mode"), &all)
    }

    /// Whether this process is the launcher (or a task) of such a job,
    /// not the test driver.
    pub fn is_part(&self) -> bool {
        std::env::var_os(self.env_var).is_some()
    }
}

/// What a task scenario returns: an error ends the task with status 1.
pub type TaskResult = Result<(), Box<dyn std::error::Error>>;

/// For the `#[test] fn task_mode()` of a test binary whose tasks it also
/// is: when `task_env` names a scenario, runs `scenario` on it and exits
/// (0, or 1 after printing the error); otherwise this returns.
pub fn task_mode(task_env: &str, scenario: impl FnOnce(&str) -> TaskResult) {
    let Ok(name) = std::env::var(task_env) else {
        return;
    };
    let code = match scenario(&name) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("task failed: {e}");
            1
        }
    };
    std::process::exit(code);
}

/// `Ok` if `cond`, else an error saying `what`.
pub fn check(cond: bool, what: &str) -> TaskResult {
    if cond {
        Ok(())
    } else {
        Err(what.to_string().into())
    }
}

/// The launcher's arguments for `exe args` on `placement`, with the
/// launcher's own `--timeout` of `timeout_s` seconds.
pub fn job_args(placement: &[&str], timeout_s: &str, exe: &Path, args: &[&str]) -> Vec<String> {
    let mut largs: Vec<String> = placement.iter().map(|s| s.to_string()).collect();
    largs.extend(["--timeout".into(), timeout_s.into()]);
    largs.push(exe.display().to_string());
    largs.extend(args.iter().map(|s| s.to_string()));
    largs
}

/// The value of `key=value` among the words of `line`.
pub fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(key)?.strip_prefix('='))
}
