//! Node daemons (`sssd`) for the hosts of a local job: started where none
//! runs, watched for nodes going down, stopped when the job ends. They
//! share a cluster secret drawn afresh for the job, handed to them in
//! their environment (never on a command line, which every user can read).

use crate::output::say;
use crate::sys;
use nix::sys::signal::Signal;
use sss_idm::secret::{self, ClusterSecret};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The daemons this job started, and the watcher of node liveness.
pub(crate) struct Daemons {
    children: Vec<Child>,
    stop: Arc<AtomicBool>,
    watcher: Option<std::thread::JoinHandle<()>>,
}

/// Where the `sssd` binary is: `$SSS_SSSD`, beside this program, or PATH.
fn sssd_path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("SSS_SSSD") {
        return Some(PathBuf::from(p));
    }
    let exe = std::env::current_exe().ok()?;
    // Beside us, or one level up (test binaries live in deps/).
    for dir in [exe.parent()?, exe.parent()?.parent()?] {
        let p = dir.join("sssd");
        if p.is_file() {
            return Some(p);
        }
    }
    std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|d| d.join("sssd"))
            .find(|p| p.is_file())
    })
}

impl Daemons {
    /// Starts a daemon for every host that has none (unless
    /// `SSS_NO_DAEMON` is set or no `sssd` binary is found), and a thread
    /// that reports hosts the daemons mark down.
    pub(crate) fn start(hosts: &[String]) -> Daemons {
        let mut children = Vec::new();
        let off = std::env::var_os("SSS_NO_DAEMON").is_some();
        // Daemons running already (`sss up`, another job's) keep their own
        // secret: gossip between them and these is refused and counted.
        let secret = match ClusterSecret::generate() {
            Ok(s) => Some(s),
            Err(e) => {
                say!("starting no node daemons: {e}");
                None
            }
        };
        if let (false, Some(bin), Some(secret)) = (off, sssd_path(), secret) {
            let peers = hosts.join(",");
            for h in hosts {
                if sss_idm::running_daemon(h).is_some() {
                    continue;
                }
                let mut cmd = Command::new(&bin);
                cmd.args(["--node", h, "--peers", &peers])
                    .env(secret::ENV, secret.to_hex())
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null());
                sys::die_with_launcher(&mut cmd);
                if let Ok(c) = cmd.spawn() {
                    children.push(c);
                }
            }
            // Give the daemons a moment to publish, so tasks find them.
            let until = Instant::now() + Duration::from_millis(500);
            let mut nap = Backoff::new();
            while Instant::now() < until
                && hosts.iter().any(|h| sss_idm::running_daemon(h).is_none())
            {
                nap.sleep();
            }
        }
        let stop = Arc::new(AtomicBool::new(false));
        let watcher = (hosts.len() > 1 && !off).then(|| {
            let stop = stop.clone();
            let hosts = hosts.to_vec();
            std::thread::spawn(move || watch(&hosts, &stop))
        });
        Daemons {
            children,
            stop,
            watcher,
        }
    }

    /// Stops the watcher and the daemons this job started.
    pub(crate) fn stop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(w) = self.watcher.take() {
            // It naps between looks; a job's end should not wait out a nap.
            w.thread().unpark();
            let _ = w.join();
        }
        for c in &mut self.children {
            sys::signal_process(c.id(), Signal::SIGTERM);
        }
        for c in &mut self.children {
            let until = Instant::now() + Duration::from_secs(1);
            let mut nap = Backoff::new();
            loop {
                match c.try_wait() {
                    Ok(Some(_)) | Err(_) => break,
                    Ok(None) if Instant::now() >= until => {
                        let _ = c.kill();
                        let _ = c.wait();
                        break;
                    }
                    Ok(None) => nap.sleep(),
                }
            }
        }
        self.children.clear();
    }
}

/// Sleeps of a poll for something that usually takes a millisecond or
/// two (a daemon publishing itself, or leaving after SIGTERM): 100 µs
/// first, doubling up to 5 ms. A fixed 5 ms sleep made every job's start
/// and end wait for a whole one.
struct Backoff(Duration);

impl Backoff {
    fn new() -> Self {
        Backoff(Duration::from_micros(100))
    }

    /// The next nap.
    fn next(&mut self) -> Duration {
        let d = self.0;
        self.0 = (d * 2).min(Duration::from_millis(5));
        d
    }

    fn sleep(&mut self) {
        std::thread::sleep(self.next());
    }
}

impl Drop for Daemons {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Reports, once each, hosts that the first host's daemon marks down or
/// back up.
fn watch(hosts: &[String], stop: &AtomicBool) {
    let mut down: Vec<String> = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        std::thread::park_timeout(Duration::from_millis(100));
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let Ok(idm) = sss_mbcf::idm::Idm::open(&hosts[0]) else {
            continue;
        };
        for h in &hosts[1..] {
            let Some((_, d)) = idm.find(h) else { continue };
            let is_down = !d.is_up();
            let was = down.contains(h);
            if is_down && !was {
                say!("node {h} is down (its daemon stopped gossiping)");
                down.push(h.clone());
            } else if !is_down && was {
                say!("node {h} is up again");
                down.retain(|x| x != h);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn naps_double_from_100_us_up_to_5_ms() {
        let mut b = Backoff::new();
        let us: Vec<u128> = (0..9).map(|_| b.next().as_micros()).collect();
        assert_eq!(us, [100, 200, 400, 800, 1600, 3200, 5000, 5000, 5000]);
    }

    fn proc_file(pid: u32, what: &str) -> Vec<u8> {
        std::fs::read(format!("/proc/{pid}/{what}")).unwrap_or_default()
    }

    fn secret_in_env(pid: u32) -> Option<String> {
        let env = proc_file(pid, "environ");
        env.split(|&b| b == 0)
            .filter_map(|kv| std::str::from_utf8(kv).ok())
            .find_map(|kv| kv.strip_prefix("SSS_CLUSTER_SECRET=").map(String::from))
    }

    /// The daemons of a job get one fresh secret, in their environment and
    /// not on their command line, and take each other's gossip with it.
    #[test]
    fn a_jobs_daemons_share_a_fresh_secret_from_their_environment() {
        if sssd_path().is_none() || std::env::var_os("SSS_NO_DAEMON").is_some() {
            eprintln!("no sssd built (cargo build -p sss-idm): nothing to test");
            return;
        }
        let pid = std::process::id();
        let hosts = |a: u32| -> Vec<String> {
            (1..=2)
                .map(|i| format!("127.{a}.{}.{}", (pid >> 8) & 0xff, (pid & 0x3f) * 4 + i))
                .collect()
        };
        let (h, other) = (hosts(13), hosts(14));
        let mut d = Daemons::start(&h);
        let mut o = Daemons::start(&other);
        assert_eq!((d.children.len(), o.children.len()), (2, 2));
        let deadline = Instant::now() + Duration::from_secs(20);
        let sees = |a: &str, b: &str| {
            sss_mbcf::idm::Idm::open(a)
                .ok()
                .is_some_and(|i| i.find(b).is_some())
        };
        while !(sees(&h[0], &h[1]) && sees(&h[1], &h[0])) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let exchanged = sees(&h[0], &h[1]) && sees(&h[1], &h[0]);
        let secrets: Vec<Option<String>> = d
            .children
            .iter()
            .chain(&o.children)
            .map(|c| secret_in_env(c.id()))
            .collect();
        let cmdlines: Vec<Vec<u8>> = d
            .children
            .iter()
            .map(|c| proc_file(c.id(), "cmdline"))
            .collect();
        d.stop();
        o.stop();
        assert!(exchanged, "the job's daemons took each other's gossip");
        let s: Vec<&str> = secrets.iter().map(|s| s.as_deref().unwrap_or("")).collect();
        assert!(
            s.iter().all(|s| s.len() == 64),
            "a secret in each environment"
        );
        assert_eq!(s[0], s[1], "one secret per job");
        assert_eq!(s[2], s[3]);
        assert_ne!(s[0], s[2], "a fresh secret for every job");
        for c in &cmdlines {
            assert!(!c.is_empty(), "the daemon ran");
            let c = String::from_utf8_lossy(c);
            assert!(!c.contains(s[0]), "the secret on a command line: {c}");
        }
    }
}
