//! Node daemons (`sssd`) for the hosts of a local job: started where none
//! runs, watched for nodes going down, stopped when the job ends.

use crate::output::say;
use crate::sys;
use nix::sys::signal::Signal;
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
        if let (false, Some(bin)) = (off, sssd_path()) {
            let peers = hosts.join(",");
            for h in hosts {
                if sss_idm::running_daemon(h).is_some() {
                    continue;
                }
                let mut cmd = Command::new(&bin);
                cmd.args(["--node", h, "--peers", &peers])
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
            while Instant::now() < until
                && hosts.iter().any(|h| sss_idm::running_daemon(h).is_none())
            {
                std::thread::sleep(Duration::from_millis(5));
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
            let _ = w.join();
        }
        for c in &mut self.children {
            sys::signal_process(c.id(), Signal::SIGTERM);
        }
        for c in &mut self.children {
            let until = Instant::now() + Duration::from_secs(1);
            loop {
                match c.try_wait() {
                    Ok(Some(_)) | Err(_) => break,
                    Ok(None) if Instant::now() >= until => {
                        let _ = c.kill();
                        let _ = c.wait();
                        break;
                    }
                    Ok(None) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        }
        self.children.clear();
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
        std::thread::sleep(Duration::from_millis(100));
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
