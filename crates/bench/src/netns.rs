//! Two network namespaces joined by a veth pair, for `--mode netns`.
//! Created by [`Netns::create`] and deleted when the value drops, on every
//! path out of the bench (errors included).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Address of the first namespace's end of the veth pair.
pub const ADDR0: &str = "10.213.0.1";
/// Address of the second namespace's end.
pub const ADDR1: &str = "10.213.0.2";

/// The namespaces; dropping it deletes them (and so the veth pair).
#[derive(Debug)]
pub struct Netns {
    /// Namespace names: `ADDR0` lives in `names[0]`, `ADDR1` in `names[1]`.
    pub names: [String; 2],
    /// An ssh stand-in that runs the remote command in the namespace of
    /// the host it is given, for the launcher's ssh spawner.
    pub ssh: PathBuf,
}

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

impl Netns {
    /// Creates the pair; `dir` receives the ssh stand-in. Needs root.
    pub fn create(dir: &Path) -> Result<Netns, String> {
        let id = std::process::id();
        let names = [format!("sssb{id}a"), format!("sssb{id}b")];
        let ns = Netns {
            names: names.clone(),
            ssh: dir.join("netns-ssh"),
        };
        // From here on, Drop deletes whatever was created.
        let (a, b) = (&names[0], &names[1]);
        let (va, vb) = (format!("sbv{id}a"), format!("sbv{id}b"));
        ip(&["netns", "add", a])?;
        ip(&["netns", "add", b])?;
        ip(&["link", "add", &va, "type", "veth", "peer", "name", &vb])?;
        ip(&["link", "set", &va, "netns", a])?;
        ip(&["link", "set", &vb, "netns", b])?;
        for (n, v, addr) in [(a, &va, ADDR0), (b, &vb, ADDR1)] {
            ip(&["-n", n, "addr", "add", &format!("{addr}/24"), "dev", v])?;
            ip(&["-n", n, "link", "set", v, "up"])?;
            ip(&["-n", n, "link", "set", "lo", "up"])?;
        }
        let script = format!(
            "#!/bin/sh\n# ssh stand-in: [-o OPT]... HOST COMMAND, run in HOST's namespace.\n\
             while [ \"$1\" = -o ]; do shift 2; done\nhost=$1; shift\n\
             case \"$host\" in\n  {ADDR0}) ns={a} ;;\n  {ADDR1}) ns={b} ;;\n  \
             *) echo \"netns-ssh: unknown host $host\" >&2; exit 255 ;;\nesac\n\
             exec ip netns exec \"$ns\" sh -c \"$*\"\n"
        );
        std::fs::write(&ns.ssh, script).map_err(|e| format!("cannot write ssh stand-in: {e}"))?;
        // Executable: mpirun's plm_rsh_agent runs it directly.
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&ns.ssh, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| format!("cannot make the ssh stand-in executable: {e}"))?;
        Ok(ns)
    }

    /// A command that runs `program` inside the first namespace.
    pub fn exec_in_first(&self, program: &Path) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.names[0]]).arg(program);
        c
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        for n in &self.names {
            // Deleting a namespace also deletes its end of the veth pair
            // and so the pair; a namespace never created fails harmlessly.
            let _ = ip(&["netns", "del", n]);
        }
    }
}
