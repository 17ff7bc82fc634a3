//! Rendezvous through files in a shared directory (protocol in the crate
//! docs). Used under foreign launchers, which give ranks but no server.

use std::fs;
use std::io::{ErrorKind, Write};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::BootError;

/// Polling starts fast (tasks usually arrive together) and backs off to
/// this, which bounds the cost of a slow task to 50 stats a second.
const MAX_POLL: Duration = Duration::from_millis(20);

/// One task's view of a rendezvous directory.
#[derive(Debug)]
pub(crate) struct FileClient {
    dir: PathBuf,
    rank: u32,
    size: u32,
    round: u32,
    timeout: Duration,
}

impl FileClient {
    pub(crate) fn new(dir: PathBuf, rank: u32, size: u32, timeout: Duration) -> FileClient {
        FileClient {
            dir,
            rank,
            size,
            round: 0,
            timeout,
        }
    }

    /// One allgather round.
    pub(crate) fn allgather(&mut self, data: &[u8]) -> Result<Vec<Vec<u8>>, BootError> {
        let rdir = self.dir.join(self.round.to_string());
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&rdir)
            .map_err(|e| BootError::io(format!("creating {}", rdir.display()), e))?;
        let own = rdir.join(self.rank.to_string());
        if self.round == 0 && own.exists() {
            return Err(BootError::Inconsistent(format!(
                "{} already exists before task {} wrote it: {} is left over from a job \
                 that died with the same key, or two tasks claim rank {}; remove the directory",
                own.display(),
                self.rank,
                self.dir.display(),
                self.rank
            )));
        }
        let tmp = rdir.join(format!(".tmp.{}", self.rank));
        write_file(&tmp, data)?;
        fs::rename(&tmp, &own)
            .map_err(|e| BootError::io(format!("renaming {}", tmp.display()), e))?;

        self.wait_for_all(&rdir)?;
        let mut parts = Vec::with_capacity(self.size as usize);
        for k in 0..self.size {
            let p = rdir.join(k.to_string());
            parts.push(
                fs::read(&p).map_err(|e| BootError::io(format!("reading {}", p.display()), e))?,
            );
        }

        // Our `done` file says we no longer need this round; whoever
        // completes the set removes the round (ours is written first, so the
        // last task to finish always sees a complete set).
        let done = rdir.join(format!("done.{}", self.rank));
        fs::File::create(&done)
            .map_err(|e| BootError::io(format!("creating {}", done.display()), e))?;
        if (0..self.size).all(|k| rdir.join(format!("done.{k}")).exists()) {
            // Two tasks may both see the complete set and race here; the
            // loser's errors mean "already gone" and are harmless.
            let _ = fs::remove_dir_all(&rdir);
            // Fails while another task has already made the next round.
            let _ = fs::remove_dir(&self.dir);
        }
        self.round += 1;
        Ok(parts)
    }

    fn wait_for_all(&self, rdir: &Path) -> Result<(), BootError> {
        let deadline = Instant::now() + self.timeout;
        let mut missing: Vec<u32> = (0..self.size).collect();
        let mut pause = Duration::from_micros(200);
        loop {
            missing.retain(|k| !rdir.join(k.to_string()).exists());
            if missing.is_empty() {
                return Ok(());
            }
            if Instant::now() >= deadline {
                let shown: Vec<String> = missing.iter().take(8).map(u32::to_string).collect();
                let more = if missing.len() > 8 { ", …" } else { "" };
                return Err(BootError::Timeout {
                    what: format!(
                        "in {} waiting for task(s) {}{more}",
                        rdir.display(),
                        shown.join(", ")
                    ),
                    secs: self.timeout.as_secs_f64(),
                });
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(MAX_POLL);
        }
    }
}

fn write_file(path: &Path, data: &[u8]) -> Result<(), BootError> {
    let res = fs::File::create(path).and_then(|mut f| f.write_all(data));
    match res {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == ErrorKind::NotFound => Err(BootError::io(
            format!(
                "writing {} (was the rendezvous directory removed?)",
                path.display()
            ),
            e,
        )),
        Err(e) => Err(BootError::io(format!("writing {}", path.display()), e)),
    }
}
