//! The Open MPI baseline: install it when missing (as root), build the
//! ping-pong program with `mpicc`, run it with `mpirun` on the same hosts.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::plan::{self, Plan, BW_SIZES, RTT_SIZES};

/// The ping-pong program, compiled at run time.
const SOURCE: &str = include_str!("../c/pingpong.c");

/// A built baseline, ready to run.
#[derive(Debug, Clone)]
pub struct Mpi {
    /// The compiled program.
    pub exe: PathBuf,
    /// `ompi_info` version line, for the report.
    pub version: String,
    /// An ssh stand-in that runs the command on this machine, so that
    /// `mpirun` puts its ranks on the loopback hosts 127.0.0.2 and
    /// 127.0.0.3 as two nodes (and so talks TCP between them).
    pub rsh: PathBuf,
}

/// The local ssh stand-in: `[-o OPT]... [-x] HOST COMMAND`.
const LOCAL_RSH: &str = "#!/bin/sh\n# ssh stand-in for loopback hosts: run COMMAND here.\n\
while [ \"$1\" = -o ]; do shift 2; done\n\
[ \"$1\" = -x ] && shift\nshift\nexec sh -c \"$*\"\n";

fn have(cmd: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {cmd}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Whether this process runs as root (needed for apt-get and netns).
pub fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// Installs Open MPI if `mpicc`/`mpirun` are missing (idempotent), then
/// builds the program into `dir`. `Err` says why the baseline is skipped.
pub fn setup(dir: &Path) -> Result<Mpi, String> {
    if !(have("mpicc") && have("mpirun")) {
        if !is_root() {
            return Err("Open MPI is not installed and installing it needs root".into());
        }
        let st = Command::new("apt-get")
            .args(["install", "-y", "openmpi-bin", "libopenmpi-dev"])
            .env("DEBIAN_FRONTEND", "noninteractive")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        if !st.is_ok_and(|s| s.success()) || !have("mpicc") {
            return Err("apt-get install openmpi-bin libopenmpi-dev failed".into());
        }
    }
    let src = dir.join("pingpong.c");
    let exe = dir.join("pingpong");
    std::fs::write(&src, SOURCE).map_err(|e| format!("cannot write {}: {e}", src.display()))?;
    let out = Command::new("mpicc")
        .args(["-O2", "-o"])
        .arg(&exe)
        .arg(&src)
        .output()
        .map_err(|e| format!("cannot run mpicc: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "mpicc failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let rsh = dir.join("local-rsh");
    std::fs::write(&rsh, LOCAL_RSH).map_err(|e| format!("cannot write {}: {e}", rsh.display()))?;
    // Executable: mpirun's plm_rsh_agent runs it directly.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&rsh, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| format!("cannot make {} executable: {e}", rsh.display()))?;
    let version = Command::new("mpirun")
        .arg("--version")
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .next()
                .unwrap_or("")
                .to_string()
        })
        .unwrap_or_default();
    Ok(Mpi { exe, version, rsh })
}

fn list(sizes: &[usize]) -> String {
    sizes
        .iter()
        .map(|s| s.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

impl Mpi {
    /// The `mpirun` command line for `btl` (`self,vader` or `self,tcp`);
    /// `tcp_if` is the network the TCP transport may use.
    pub fn command(&self, plan: &Plan, btl: &str, tcp_if: &str, extra: &[String]) -> Command {
        let mut c = Command::new("mpirun");
        c.args(["-np", "2", "--oversubscribe", "--mca", "btl", btl]);
        if is_root() {
            c.arg("--allow-run-as-root");
        }
        if btl.contains("tcp") {
            // Keep the TCP transport on the network our hosts live on.
            c.args(["--mca", "btl_tcp_if_include", tcp_if]);
        }
        c.args(extra);
        c.arg(&self.exe).args([
            plan.iters.to_string(),
            plan.warmup.to_string(),
            plan.bw_bytes.to_string(),
            plan.bw_max_ops.to_string(),
            list(&RTT_SIZES),
            list(&BW_SIZES),
        ]);
        c
    }
}

/// Parses the program's output into (key, value) figures: `mpi/rtt/SIZE`
/// in µs and `mpi/bw/SIZE` in MB/s.
pub fn parse(stdout: &str) -> Vec<(String, f64)> {
    stdout
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let kind = w.next()?;
            let size: usize = w.next()?.parse().ok()?;
            let v: f64 = w.next()?.parse().ok()?;
            match kind {
                "rtt" => Some((plan::rtt_key("mpi", size), v)),
                "bw" => Some((plan::bw_key("mpi", size), v)),
                _ => None,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn parses_output() {
        let v = super::parse("rtt 8 1.5\nnoise\nbw 1392 900.0\n");
        assert_eq!(
            v,
            vec![("rtt/mpi/8".into(), 1.5), ("bw/mpi/1392".into(), 900.0)]
        );
    }
}
