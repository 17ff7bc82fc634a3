//! `sss info`: the build, what this machine offers SSS and why something
//! is missing, and every `SSS_*` setting with its value, default and
//! source (like `ompi_info` / `ucx_info`). Exits non-zero when a setting
//! in the environment is invalid or not a setting at all.

use sss_mbcf::known::{self, SETTINGS};

/// Arguments of `sss info`.
#[derive(Debug, clap::Args)]
pub struct InfoArgs {}

fn first_line(cmd: &str, args: &[&str]) -> Option<String> {
    let out = std::process::Command::new(cmd).args(args).output().ok()?;
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    text.lines()
        .find(|l| !l.trim().is_empty())
        .map(|l| l.trim().to_string())
}

fn read(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

/// Prints the report; `Err` names the settings that are wrong.
pub fn run(_: InfoArgs) -> Result<(), String> {
    let mut o = String::new();
    o.push_str(&format!(
        "SSS {} ({} build)\n\n## This machine\n\n",
        env!("CARGO_PKG_VERSION"),
        if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        }
    ));
    let kernel = read("/proc/sys/kernel/osrelease").unwrap_or_else(|| "unknown".into());
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    o.push_str(&format!(
        "- Linux {kernel}, {cpus} CPUs usable by this process\n"
    ));
    let root = nix_is_root();
    let uffd = read("/proc/sys/vm/unprivileged_userfaultfd");
    o.push_str(&match (root, uffd.as_deref()) {
        (true, _) => "- ADSM heap: userfaultfd available (root)\n".to_string(),
        (false, Some("1")) => "- ADSM heap: userfaultfd open to every user\n".to_string(),
        (false, _) => "- ADSM heap: userfaultfd in user mode only (vm.unprivileged_userfaultfd = 0; enough for the heap, Linux ≥ 5.11)\n".to_string(),
    });
    match sss_mbcf::shm_dir() {
        Ok(d) => o.push_str(&format!("- shared memory in {}\n", d.display())),
        Err(e) => o.push_str(&format!("- shared memory: {e}\n")),
    }
    o.push_str("- udp: GSO batches and GRO receives when the kernel takes them (Linux ≥ 5.0; `SSS_NO_GSO` turns them off)\n");
    o.push_str("- AF_XDP, RDMA: not used by this version\n");
    o.push_str(&match first_line("mpirun", &["--version"]) {
        Some(v) => format!("- Open MPI (for `sss bench`): {v}\n"),
        None => "- Open MPI (for `sss bench`): not found in PATH\n".into(),
    });
    let daemons = sss_idm::daemons_here();
    if daemons.is_empty() {
        o.push_str(
            "- node daemons: none runs on this machine now (`sss run` starts them per job)\n",
        );
    } else {
        for (node, pid) in daemons {
            o.push_str(&format!("- node daemon for {node}: pid {pid}\n"));
        }
    }

    o.push_str("\n## Settings\n\n| variable | value | source | default | accepts | meaning | read by |\n|---|---|---|---|---|---|---|\n");
    for s in SETTINGS {
        let env = std::env::var(s.name).ok().filter(|v| !v.is_empty());
        let (value, source) = match (&env, s.secret) {
            (Some(_), true) => ("(set, hidden)".to_string(), "environment"),
            (Some(v), false) => (format!("`{v}`"), "environment"),
            (None, _) => (s.default.to_string(), "default"),
        };
        o.push_str(&format!(
            "| `{}` | {value} | {source} | {} | {} | {} | {} |\n",
            s.name,
            s.default,
            s.accepts,
            s.meaning,
            s.reader.name()
        ));
    }

    // What the runtime would refuse, it refuses here too.
    let mut problems = Vec::new();
    if let Err(e) = sss_mbcf::TaskConfig::from_env() {
        problems.push(e.to_string());
    }
    if let Err(e) = sss_dsm::Config::from_env() {
        problems.push(e.to_string());
    }
    for (name, _) in std::env::vars() {
        if name.starts_with("SSS_") && known::lookup(&name).is_none() {
            problems.push(match known::nearest(&name) {
                Some(k) => format!("{name} is not a setting; did you mean {}?", k.name),
                None => format!("{name} is not a setting of this version"),
            });
        }
    }
    if problems.is_empty() {
        o.push_str("\nEvery setting in the environment is valid.\n");
    } else {
        o.push_str("\n## Problems\n\n");
        for p in &problems {
            o.push_str(&format!("- {p}\n"));
        }
    }
    print!("{o}");
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{} setting(s) would be refused or ignored",
            problems.len()
        ))
    }
}

fn nix_is_root() -> bool {
    read("/proc/self/status")
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|u| u == "0"))
        })
        .unwrap_or(false)
}
