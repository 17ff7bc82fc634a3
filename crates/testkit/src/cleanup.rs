//! Leaving nothing behind: a guard that kills and reaps a test's children
//! and removes its job's shared-memory files and its daemons' IDM files
//! however the test ends, checks that a job left no process or file, and
//! job ids and ports of this test process that concurrent runs do not
//! share.

use std::path::PathBuf;
use std::process::Child;
use std::time::{Duration, Instant};

/// Kills (after a SIGCONT, in case it was stopped) and reaps every child,
/// and removes the shared-memory files of `job` and the IDM files of the
/// daemons of `nodes`, when dropped.
pub struct Cleanup {
    /// The processes to end.
    pub children: Vec<Child>,
    /// The job whose files (`sss-<job>-*`) to remove.
    pub job: u32,
    /// The nodes whose daemons' IDM files to remove.
    pub nodes: Vec<String>,
}

impl Cleanup {
    /// A guard for `job` on `nodes`, with no children yet.
    pub fn new(job: u32, nodes: &[&str]) -> Cleanup {
        Cleanup {
            children: Vec::new(),
            job,
            nodes: nodes.iter().map(|n| n.to_string()).collect(),
        }
    }
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        for c in &mut self.children {
            crate::process::signal(c.id(), "CONT");
            let _ = c.kill();
            let _ = c.wait();
        }
        let Ok(dir) = sss_mbcf::shm_dir() else {
            return;
        };
        let idm: Vec<String> = self
            .nodes
            .iter()
            .map(|h| sss_mbcf::idm::idm_name(h))
            .collect();
        for n in job_shm_files(self.job).into_iter().chain(idm) {
            let _ = std::fs::remove_file(dir.join(n));
        }
    }
}

/// The names of the shared-memory files of `job` (`sss-<job>-*`).
pub fn job_shm_files(job: u32) -> Vec<String> {
    let prefix = format!("sss-{job}-");
    let dir: PathBuf = sss_mbcf::shm_dir().expect("shm dir").into();
    std::fs::read_dir(dir)
        .expect("read the shm dir")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(&prefix))
        .collect()
}

/// Processes whose environment has `SSS_JOB=<job>`: the job's tasks and
/// anything they started.
pub fn job_processes(job: u32) -> Vec<u32> {
    let want = format!("SSS_JOB={job}");
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        // Unreadable (gone, or a zombie with no memory) means not running.
        let Ok(env) = std::fs::read(e.path().join("environ")) else {
            continue;
        };
        if env.split(|b| *b == 0).any(|v| v == want.as_bytes()) {
            found.push(pid);
        }
    }
    found
}

/// Asserts that the job left nothing behind, allowing `within` for the
/// kernel (or the guardian) to finish.
pub fn assert_clean(job: u32, within: Duration) {
    let t = Instant::now();
    loop {
        let procs = job_processes(job);
        let files = job_shm_files(job);
        if procs.is_empty() && files.is_empty() {
            return;
        }
        if t.elapsed() > within {
            panic!("job {job} left processes {procs:?} and shm files {files:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A job id of this test process: `tag` (high bits, one per test) with
/// the low 16 bits of the pid.
pub fn unique_job(tag: u32) -> u32 {
    tag | (std::process::id() & 0xffff)
}

/// A port of this test process: `base` plus the pid modulo 20 000.
pub fn unique_port(base: u16) -> u16 {
    base + (std::process::id() % 20_000) as u16
}
