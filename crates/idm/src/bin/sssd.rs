//! `sssd`: the SSS node daemon. See the `sss_idm` crate docs.

use clap::Parser;
use sss_idm::{Daemon, DaemonConfig, DEFAULT_PORT};
use std::net::ToSocketAddrs;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The SSS node daemon: publishes this node's IDM page and gossips with
/// the other nodes' daemons.
#[derive(Debug, Parser)]
#[command(name = "sssd", version)]
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
}

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
    let cfg = DaemonConfig {
        node: a.node.clone(),
        peers,
        port: a.port,
        sample: Duration::from_millis(a.sample_ms.max(1)),
        gossip: Duration::from_millis(a.gossip_ms.max(1)),
        down_after: Duration::from_millis(a.down_ms.max(1)),
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
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("sssd: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
