//! Rendezvous through files in a shared directory (protocol in the crate
//! docs). Used under foreign launchers, which give ranks but no server.

use std::fs;
use std::io::{ErrorKind, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
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
        self.make_round_dir(&rdir)?;
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
        match new_file(&done) {
            Ok(_) => {}
            Err(e) if e.kind() == ErrorKind::AlreadyExists => {
                return Err(BootError::Inconsistent(format!(
                    "{} already exists: two tasks claim rank {}, or {} is left over from \
                     a job that died with the same key; remove the directory",
                    done.display(),
                    self.rank,
                    self.dir.display()
                )))
            }
            Err(e) => return Err(BootError::io(format!("creating {}", done.display()), e)),
        }
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

    /// Creates `<dir>/<round>`, making sure first and after that `<dir>` is
    /// private: the job's secret travels there, and its name is predictable
    /// (another user may have made it first, to read or plant records).
    fn make_round_dir(&self, rdir: &Path) -> Result<(), BootError> {
        self.make_round_dir_with(rdir, &|| {})
    }

    /// [`FileClient::make_round_dir`], calling `after_mkdir` where another
    /// task's cleanup may strike (tests).
    fn make_round_dir_with(&self, rdir: &Path, after_mkdir: &dyn Fn()) -> Result<(), BootError> {
        // The last task out of the previous round removes `<dir>` when it is
        // empty, which may happen between our mkdirs, or between our mkdir
        // and our look at it: then start over.
        for _ in 0..1000 {
            if let Err(e) = fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&self.dir)
            {
                // A link or a file in its place: say so rather than EEXIST.
                check_private(&self.dir)?;
                return Err(BootError::io(format!("creating {}", self.dir.display()), e));
            }
            after_mkdir();
            // Before anything of ours goes through it.
            match check_private(&self.dir) {
                Err(BootError::Io { source, .. }) if source.kind() == ErrorKind::NotFound => {
                    continue
                }
                r => r?,
            }
            match fs::DirBuilder::new().mode(0o700).create(rdir) {
                Ok(()) => {}
                Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
                Err(e) if e.kind() == ErrorKind::NotFound => continue,
                Err(e) => return Err(BootError::io(format!("creating {}", rdir.display()), e)),
            }
            // Again, now that `<dir>` holds our round and is not removed
            // before we are done with it: it is still the one we checked.
            check_private(&self.dir)?;
            return check_private(rdir);
        }
        Err(BootError::io(
            format!("creating {}", rdir.display()),
            std::io::Error::new(ErrorKind::NotFound, "its parent keeps disappearing"),
        ))
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

/// Whether `path` (not following a link) is a directory of our user that
/// nobody else may enter.
fn check_private(path: &Path) -> Result<(), BootError> {
    let m = fs::symlink_metadata(path)
        .map_err(|e| BootError::io(format!("examining {}", path.display()), e))?;
    let uid = nix::unistd::geteuid().as_raw();
    let problem = if m.file_type().is_symlink() {
        "it is a symbolic link".to_string()
    } else if !m.is_dir() {
        "it is not a directory".to_string()
    } else if m.uid() != uid {
        format!(
            "it is owned by uid {}, not by this task's uid {uid}",
            m.uid()
        )
    } else if m.mode() & 0o077 != 0 {
        format!(
            "its mode is {:04o}, which lets group or others in (0700 is required)",
            m.mode() & 0o7777
        )
    } else {
        return Ok(());
    };
    Err(BootError::UnsafeDir {
        path: path.display().to_string(),
        problem,
    })
}

/// A new file only our user can read (it may hold the job's secret).
fn new_file(path: &Path) -> std::io::Result<fs::File> {
    fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
}

fn write_file(path: &Path, data: &[u8]) -> Result<(), BootError> {
    // A task that died between writing and renaming may have left one; the
    // directory is private, so it can only be ours.
    let _ = fs::remove_file(path);
    let res = new_file(path).and_then(|mut f| f.write_all(data));
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    /// Regression: the last task out of a round removed the (empty)
    /// directory between this task's mkdir and its check, and the check's
    /// "No such file or directory" failed the job (seen once under Open
    /// MPI's `mpirun`). Now the task starts over.
    #[test]
    fn a_directory_removed_after_mkdir_is_made_again() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("job");
        let c = FileClient::new(dir.clone(), 0, 1, Duration::from_secs(5));
        let struck = Cell::new(0);
        let remove_once = || {
            if struck.get() == 0 {
                fs::remove_dir(&dir).unwrap();
            }
            struck.set(struck.get() + 1);
        };
        let rdir = dir.join("0");
        c.make_round_dir_with(&rdir, &remove_once).unwrap();
        assert_eq!(struck.get(), 2);
        assert!(rdir.is_dir());
    }
}
