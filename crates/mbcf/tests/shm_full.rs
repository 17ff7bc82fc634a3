//! A full shared-memory directory (issue 12, item 5): creating a segment,
//! a control block or an IDM file there fails with a clear error naming
//! the directory and the size, and leaves no file behind — instead of a
//! sparse file whose first touched page kills the receiver (udp), the
//! sender (shm) or the daemon with SIGBUS.
//!
//! Needs root to mount a 16 MiB tmpfs on a directory of its own; the real
//! /dev/shm is never touched (`SSS_SHM_DIR` points at the small one, in a
//! child process so no other test sees it). Skips without root unless
//! `SSS_REQUIRE_ROOT` is set, as in the root CI run of scripts/test.sh.

use sss_mbcf::{Error, Options, Perm, Task, TaskConfig, ThreadBoot};
use std::path::{Path, PathBuf};

const CHILD: &str = "SSS_SHM_FULL_CHILD";
const TEST: &str = "a_full_shm_dir_is_a_clear_error_not_sigbus";

fn sh(cmd: &[&str]) -> bool {
    std::process::Command::new(cmd[0])
        .args(&cmd[1..])
        .status()
        .is_ok_and(|s| s.success())
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
    })
}

/// Unmounts and removes the directory however the test ends.
struct Tmpfs(PathBuf);

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let p = self.0.to_string_lossy().into_owned();
        sh(&["umount", "-l", &p]);
        let _ = std::fs::remove_dir(&self.0);
    }
}

#[test]
fn a_full_shm_dir_is_a_clear_error_not_sigbus() {
    if std::env::var_os(CHILD).is_some() {
        return child();
    }
    if !is_root() {
        assert!(
            std::env::var_os("SSS_REQUIRE_ROOT").is_none(),
            "SSS_REQUIRE_ROOT is set but this is not root"
        );
        eprintln!("skipped: mounting a small tmpfs needs root");
        return;
    }
    let dir = std::env::temp_dir().join(format!("sss-shm-full-{}", std::process::id()));
    std::fs::create_dir(&dir).expect("make the mount point");
    let mnt = Tmpfs(dir.clone());
    let d = dir.to_string_lossy().into_owned();
    assert!(
        sh(&[
            "mount",
            "-t",
            "tmpfs",
            "-o",
            "size=16m,mode=0700",
            "tmpfs",
            &d
        ]),
        "mount a 16 MiB tmpfs on {d}"
    );
    let st = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", TEST, "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .env("SSS_SHM_DIR", &dir)
        .status()
        .expect("run the child");
    use std::os::unix::process::ExitStatusExt;
    assert!(
        st.success(),
        "child failed: {st:?} (signal {:?}; 7 is SIGBUS)",
        st.signal()
    );
    let left = files(&dir);
    drop(mnt);
    assert!(left.is_empty(), "left behind: {left:?}");
}

fn files(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().into_string().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Fills `dir` until at most `keep` bytes are free; the file goes on drop.
struct Filler(PathBuf);

impl Filler {
    fn new(dir: &Path, keep: u64) -> Filler {
        use std::io::Write;
        let p = dir.join("filler");
        let mut f = std::fs::File::create(&p).expect("filler");
        let chunk = vec![1u8; 1 << 16];
        let mut n = 0u64;
        while let Ok(k) = f.write(&chunk) {
            if k == 0 {
                break;
            }
            n += k as u64;
        }
        f.set_len(n.saturating_sub(keep)).expect("trim the filler");
        Filler(p)
    }
}

impl Drop for Filler {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn cluster(n: u32, nodes: &[&str]) -> Result<Vec<Task>, Error> {
    ThreadBoot::join_all(n, nodes, &TaskConfig::default())
        .into_iter()
        .collect()
}

fn assert_full(e: &Error, dir: &Path, what: &str) {
    match e {
        Error::Io(io) if io.kind() == std::io::ErrorKind::StorageFull => {
            let m = io.to_string();
            assert!(
                m.contains(&*dir.to_string_lossy()) && m.contains("bytes"),
                "{what}: the message names the directory and the size: {m}"
            );
        }
        e => panic!("{what}: want a storage-full I/O error, got {e:?}"),
    }
}

fn child() {
    let dir = sss_mbcf::shm_dir().expect("SSS_SHM_DIR").to_path_buf();
    const KEEP: u64 = 64 << 10;

    // A segment on a full directory, asked for by a running task: over
    // udp its memory is written by the receiver's progress thread, over
    // shm by the sender itself.
    for (nodes, what) in [
        (&["127.0.0.2", "127.0.0.3"][..], "udp"),
        (&["127.0.0.1"][..], "shm"),
    ] {
        let t = cluster(2, nodes).expect("start with room");
        let before = files(&dir);
        let fill = Filler::new(&dir, 0);
        match t[1].alloc(1 << 20, Perm::ALL) {
            Err(e) => assert_full(&e, &dir, what),
            Ok(seg) => {
                // What used to happen: the first write kills a process.
                let r = t[0]
                    .write(seg.info().at(1 << 19), &[1; 4096], Options::status())
                    .and_then(|r| r.wait());
                panic!("{what}: a 1 MiB segment on a full directory: {r:?}");
            }
        }
        assert_eq!(
            files(&dir).len(),
            before.len() + 1,
            "{what}: no partial file"
        );
        drop(fill);
        // With room again, the same request works.
        let seg = t[1].alloc(1 << 20, Perm::ALL).expect("room again");
        t[0].write(seg.info().at(1 << 19), &[1; 4096], Options::status())
            .unwrap()
            .wait()
            .unwrap();
    }

    // A task starting on a full directory: its control block is refused.
    {
        let fill = Filler::new(&dir, KEEP);
        let e = cluster(1, &["127.0.0.1"]).expect_err("no room for a control block");
        assert_full(&e, &dir, "start");
        assert_eq!(
            files(&dir),
            vec!["filler".to_string()],
            "start: no partial file"
        );
        drop(fill);
    }

    // The node daemon's IDM file: refused, and its temporary removed.
    {
        let fill = Filler::new(&dir, 16 << 10);
        let e = sss_mbcf::idm::IdmWriter::create("shm-full-test").expect_err("no room for IDM");
        assert_full(&Error::Io(e), &dir, "idm");
        assert_eq!(files(&dir), vec!["filler".to_string()], "idm: no temporary");
        drop(fill);
    }
}
