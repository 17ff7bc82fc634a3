//! `sssd`: the SSS node daemon. See the `sss_idm` crate docs.

use clap::Parser;
use sss_idm::secret::{self, Source};
use sss_idm::{Daemon, DaemonConfig, DEFAULT_PORT};
use std::net::ToSocketAddrs;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The SSS node daemon: publishes this node's IDM page and gossips with
/// the other nodes' daemons.
#[derive(Debug, Parser)]
#[command(name = "sssd", version, after_help = SECRET_HELP)]
struct Args {
    /// This node's address (e.g. 127.0.0.2).
    #[arg(long)]
    node: String,
    /// Other nodes, comma-separated addresses (daemons on the same port).
    #[arg(long, value_delimiter = ',')]
    peers: Vec<String>,
    /// UDP port of the daemons.
    #[arg(long, default_value_t = DEFAULT_PORT)]
    port: u16,
    /// Sampling period of local tasks, milliseconds.
    #[arg(long, default_value_t = 10)]
    sample_ms: u64,
    /// Gossip period, milliseconds.
    #[arg(long, default_value_t = 100)]
    gossip_ms: u64,
    /// Silence after which a node is marked down, milliseconds.
    #[arg(long, default_value_t = 1000)]
    down_ms: u64,
    /// File holding the cluster secret: 64 hex digits, a regular file
    /// owned by this user with no group or other permission bits (see below).
    #[arg(long, value_name = "PATH")]
    secret_file: Option<PathBuf>,
}

const SECRET_HELP: &str = "\
Cluster secret:
  Gossip is authenticated (HMAC-SHA256 under a key derived from a 32-byte
  cluster secret, with a counter against replays); pages from daemons
  without the same secret, or from addresses not in --peers, are dropped,
  counted and never answered. The secret is taken, first match wins, from:
    1. --secret-file PATH  (64 hex digits; must be a regular file owned by
       this user with no group or other permission bits)
    2. SSS_CLUSTER_SECRET  (64 hex digits in the environment; `sss run`
       gives the daemons it starts a fresh one per job this way)
    3. $XDG_CONFIG_HOME/sss/cluster.key, else ~/.config/sss/cluster.key
       (same checks as 1; created with a random secret, mode 0600, on
       first start)
  Every node's daemon must have the same secret: copy the file to each
  node, or make one with `(umask 077; openssl rand -hex 32 > cluster.key)`
  and copy that, or share the home directory.";

fn main() -> std::process::ExitCode {
    let a = Args::parse();
    let mut peers = Vec::new();
    for p in &a.peers {
        if p == &a.node || p.is_empty() {
            continue;
        }
        match (p.as_str(), a.port).to_socket_addrs() {
            Ok(mut it) => peers.extend(it.next()),
            Err(e) => {
                eprintln!("sssd: peer {p}: {e}");
                return std::process::ExitCode::from(2);
            }
        }
    }
    let default = secret::default_path(
        std::env::var_os("XDG_CONFIG_HOME"),
        std::env::var_os("HOME"),
    );
    let env = std::env::var(secret::ENV).ok();
    let secret = match secret::load(a.secret_file.as_deref(), env, default) {
        Ok((s, how)) => {
            if let Source::Created(p) = how {
                eprintln!(
                    "sssd: created the cluster secret {}; copy it to the other nodes",
                    p.display()
                );
            }
            s
        }
        Err(e) => {
            eprintln!("sssd: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    let cfg = DaemonConfig {
        node: a.node.clone(),
        peers,
        port: a.port,
        sample: Duration::from_millis(a.sample_ms.max(1)),
        gossip: Duration::from_millis(a.gossip_ms.max(1)),
        down_after: Duration::from_millis(a.down_ms.max(1)),
        secret,
    };
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGHUP,
    ] {
        if let Err(e) = signal_hook::flag::register(sig, stop.clone()) {
            eprintln!("sssd: cannot handle signal {sig}: {e}");
        }
    }
    match Daemon::new(cfg) {
        Ok(mut d) => {
            d.run(|| stop.load(Ordering::Relaxed));
            let s = d.stats();
            if s.refused() > 0 {
                eprintln!(
                    "sssd: refused gossip: {} from strangers, {} malformed, {} forged, {} replayed, {} bad pages",
                    s.strangers, s.malformed, s.forged, s.replayed, s.bad_pages
                );
            }
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("sssd: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
