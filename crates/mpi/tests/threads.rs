//! `MPI_THREAD_MULTIPLE`: `tests/c/threads.c` runs 2 and 4 threads per
//! task, each blocking in MPI (ping-pong on its own communicator or with
//! its own tag on one, `Waitall` of many requests, `Probe`, collectives
//! next to point-to-point) on two tasks of one node (`shm`) and of two
//! "nodes" (`udp`), and four tasks on either. The launcher's timeout
//! bounds a hang (before `MPI_THREAD_MULTIPLE`, a thread blocked in
//! `MPI_Recv` kept its partner thread's message from progressing).

mod support;

use support::{compile, run_everywhere, scratch, LAUNCHER};

#[test]
fn launcher_mode() {
    LAUNCHER.launcher_mode();
}

const PLACES: &[(&str, &[&str])] = &[
    ("2 tasks, one node", &["-n", "2"]),
    (
        "2 tasks, two nodes",
        &["-n", "2", "--hosts", "127.0.0.2,127.0.0.3"],
    ),
    ("4 tasks, one node", &["-n", "4"]),
    (
        "4 tasks, two nodes",
        &["-n", "4", "--hosts", "127.0.0.2,127.0.0.3"],
    ),
];

#[test]
fn threads_block_in_mpi_without_stopping_each_other() {
    let dir = scratch();
    let exe = compile(&dir, "threads.c", false);
    for t in ["2", "4"] {
        run_everywhere(&exe, &[t], PLACES, |n| {
            format!("threads: ok {n} tasks {t} threads")
        });
    }
}

/// Nonblocking collectives progress inside a receive another thread of
/// the task blocks in (`tests/c/nbcthreads.c`).
#[test]
fn nonblocking_collectives_progress_under_thread_multiple() {
    let dir = scratch();
    let exe = compile(&dir, "nbcthreads.c", false);
    run_everywhere(&exe, &[], PLACES, |n| format!("nbcthreads: ok {n} tasks"));
}
