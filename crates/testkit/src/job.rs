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
pub fn self_args(name: &str) -> [String; 5] {
    [name, "--exact", "--nocapture", "-q", "--test-threads=1"].map(String::from)
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
/// launcher, the launcher's own `--timeout`, and the hard limit after
/// which the test kills the launcher (longer, so it only catches a hung
/// launcher).
pub struct Launcher {
    /// The variable [`launcher_mode`] of this binary reads.
    pub env_var: &'static str,
    /// The launcher's `--timeout`, in seconds.
    pub timeout_s: &'static str,
    /// When the test kills the launcher.
    pub limit: Duration,
}

impl Launcher {
    /// Runs `exe args` on `placement` with `env` in the tasks' (and the
    /// launcher's) environment.
    pub fn run<S: AsRef<str>>(
        &self,
        placement: &[&str],
        exe: &Path,
        args: &[S],
        env: &[(&str, &str)],
    ) -> Outcome {
        let largs = job_args(placement, self.timeout_s, exe, args);
        run_job(self.env_var, &largs, env, self.limit)
    }

    /// Runs this test binary as the tasks on `placement`: its test
    /// `task_mode`, with `task_env` set to `scenario` and `env` added.
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

/// The launcher's arguments for `exe args` on `placement`, with the
/// launcher's own `--timeout` of `timeout_s` seconds.
pub fn job_args<S: AsRef<str>>(
    placement: &[&str],
    timeout_s: &str,
    exe: &Path,
    args: &[S],
) -> Vec<String> {
    let mut largs: Vec<String> = placement.iter().map(|s| s.to_string()).collect();
    largs.extend(["--timeout".into(), timeout_s.into()]);
    largs.push(exe.display().to_string());
    largs.extend(args.iter().map(|s| s.as_ref().to_string()));
    largs
}

/// The value of `key=value` among the words of `line`.
pub fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(key)?.strip_prefix('='))
}
