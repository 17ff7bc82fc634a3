//! A task that ends without finalizing — `exit` with the task still
//! alive, as a C program that returns from `main` without `sss_finalize`
//! under a launcher that cleans nothing up — leaves nothing in the
//! shared-memory directory.

use sss_mbcf::{Perm, TaskConfig, ThreadBoot};
use std::process::Command;

/// Set in the child process this test starts.
const CHILD: &str = "MBCF_EXIT_CLEANUP_CHILD";

const TEST: &str = "a_task_that_exits_without_finalizing_leaves_no_shm_files";

/// In the child: two tasks on one node (control blocks and segments in
/// shared memory), then `exit` without dropping them.
fn child() -> ! {
    let tasks: Vec<_> = ThreadBoot::join_all(2, &["127.0.0.1"], &TaskConfig::default())
        .into_iter()
        .map(|t| t.expect("join"))
        .collect();
    let segs: Vec<_> = tasks
        .iter()
        .map(|t| t.alloc(1 << 16, Perm::ALL).expect("alloc"))
        .collect();
    let dir = std::env::var_os("SSS_SHM_DIR").expect("SSS_SHM_DIR");
    let n = std::fs::read_dir(dir).expect("list").count();
    println!("files before exit: {n}");
    std::mem::forget(segs);
    std::mem::forget(tasks);
    std::process::exit(0);
}

#[test]
fn a_task_that_exits_without_finalizing_leaves_no_shm_files() {
    if std::env::var_os(CHILD).is_some() {
        child();
    }
    let dir = std::env::temp_dir().join(format!("sss-exit-cleanup-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", TEST, "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .env("SSS_SHM_DIR", &dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(out.status.success(), "child failed: {out:?}");
    // The child did put files there, or the test would prove nothing.
    let before: usize = stdout
        .lines()
        .find_map(|l| l.split("files before exit: ").nth(1))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no count in the child's output: {stdout}"));
    assert!(before >= 4, "only {before} files were created");
    assert!(left.is_empty(), "left behind: {left:?}");
}
