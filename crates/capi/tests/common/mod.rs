//! What the C-program tests share: the launcher reached by re-executing
//! the test binary, libsss built for the test's profile, and running one
//! job with a hard time limit. Each test binary uses only part of it.

#![allow(dead_code)]

use clap::Parser;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

#[derive(Parser)]
struct LauncherCli {
    #[command(flatten)]
    run: sss_launch::RunArgs,
}

/// When `launch_env` is set (to the launcher's arguments separated by
/// 0x1f), this process is the launcher of a job (`sss run` with those
/// arguments) and exits with its status; otherwise this returns.
pub fn launcher_mode(launch_env: &str) {
    let Ok(args) = std::env::var(launch_env) else {
        return;
    };
    let argv = std::iter::once("sss-run".to_string()).chain(args.split('\x1f').map(String::from));
    let code = match LauncherCli::try_parse_from(argv) {
        Ok(cli) => sss_launch::run(cli.run),
        Err(e) => {
            eprintln!("{e}");
            2
        }
    };
    std::process::exit(code);
}

/// Names a copy of the files these tests read (headers, examples, C
/// sources), laid out as in the repository, with the test binaries in its
/// `target/<profile>/deps` beside a built libsss: how `scripts/test.sh`
/// runs them as an ordinary user who may not reach the source tree.
pub const TREE_ENV: &str = "SSS_TEST_TREE";

/// The repository root (or its copy named by [`TREE_ENV`]).
pub fn root() -> PathBuf {
    match std::env::var_os(TREE_ENV) {
        Some(tree) => PathBuf::from(tree),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."),
    }
}

/// Builds libsss with this binary's profile and target directory (a no-op
/// when fresh) and returns the directory holding `libsss.so`/`libsss.a`.
pub fn lib_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let exe = std::env::current_exe().expect("current_exe");
        let dir = exe
            .parent()
            .and_then(Path::parent)
            .expect("test binary in target/<profile>/deps")
            .to_path_buf();
        let target = dir.parent().expect("target dir");
        let profile = match dir.file_name().and_then(|n| n.to_str()) {
            Some("debug") | None => "dev".to_string(),
            Some(p) => p.to_string(),
        };
        // A copy ([`TREE_ENV`]) comes with libsss built: nothing to build,
        // and its user may have neither cargo nor a writable target.
        if std::env::var_os(TREE_ENV).is_none() {
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
            let out = Command::new(cargo)
                .args(["build", "-p", "sss-capi", "--lib", "--profile", &profile])
                .arg("--target-dir")
                .arg(target)
                .current_dir(root())
                .output()
                .expect("run cargo build");
            assert!(
                out.status.success(),
                "cargo build -p sss-capi failed:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        for lib in ["libsss.so", "libsss.a"] {
            assert!(
                dir.join(lib).is_file(),
                "{lib} missing in {}",
                dir.display()
            );
        }
        dir
    })
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
    cmd.args([
        "launcher_mode",
        "--exact",
        "--nocapture",
        "-q",
        "--test-threads=1",
    ])
    .env(launch_env, largs.join("\x1f"))
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("start the launcher");
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut s = Vec::new();
            let _ = r.read_to_end(&mut s);
            String::from_utf8_lossy(&s).into_owned()
        })
    };
    let out = drain(Box::new(child.stdout.take().expect("stdout")));
    let err = drain(Box::new(child.stderr.take().expect("stderr")));
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait for the launcher") {
            break Some(s);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (
        status.and_then(|s| s.code()),
        out.join().unwrap_or_default(),
        err.join().unwrap_or_default(),
    )
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
