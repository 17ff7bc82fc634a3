//! A stall is not a death. Two "hosts" (127.0.0.2–3), a daemon and a task on
//! each; the tasks FETCH_ADD on each other every 10 ms. A task stopped
//! (SIGSTOP) long enough to be declared down, a daemon stopped long enough
//! for its node to be marked down, and a daemon killed and started again:
//! after each, operations in both directions succeed again, and nothing
//! hangs.

use sss_boot::BootServer;
use sss_idm::secret::ENV as SECRET_ENV;
use sss_testkit::node::{one_per_node, sssd};
use sss_testkit::process::forward_lines;
use sss_testkit::{signal, unique_job, unique_port, Cleanup};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const NODES: [&str; 2] = ["127.0.0.2", "127.0.0.3"];
const DOWN_MS: u64 = 500;

fn now_ns() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

fn daemon(n: &str, port: u16) -> Child {
    sssd(env!("CARGO_BIN_EXE_sssd"), n, &NODES, port, DOWN_MS)
        // The same secret after a restart: its gossip must be taken again.
        .env(SECRET_ENV, "22".repeat(32))
        .stderr(Stdio::null())
        .spawn()
        .expect("start sssd")
}

/// One line of a task: (rank, ok, unix ns, text).
type Line = (usize, bool, u128, String);

/// Waits until every task reported an operation that started after `t`
/// succeeded; returns how many failures were seen meanwhile.
fn both_ok_after(rx: &mpsc::Receiver<Line>, t: u128, what: &str) -> usize {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut ok = [false; 2];
    let mut errs = 0;
    while !(ok[0] && ok[1]) {
        let (r, good, at, l) = rx
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .unwrap_or_else(|_| panic!("{what}: no success in both directions: {ok:?}"));
        if good && at > t {
            ok[r] = true;
        }
        if !good {
            assert!(l.contains("down"), "{what}: unexpected failure {l}");
            errs += 1;
        }
    }
    errs
}

/// Drains lines until rank `r` reports a failure (it saw its peer down).
fn wait_err(rx: &mpsc::Receiver<Line>, r: usize, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (rank, good, _, _) = rx
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .unwrap_or_else(|_| panic!("{what}: rank {r} never saw its peer down"));
        if rank == r && !good {
            return;
        }
    }
}

#[test]
fn stalled_tasks_and_daemons_heal() {
    let port = unique_port(21_000);
    let job = unique_job(0x5100_0000);
    let mut g = Cleanup::new(job, &NODES);
    for n in NODES {
        g.children.push(daemon(n, port));
    }
    let server = BootServer::bind("127.0.0.1:0", job, 2)
        .unwrap()
        .spawn()
        .unwrap();
    let (tx, rx) = mpsc::channel::<Line>();
    for (r, n) in NODES.iter().enumerate() {
        let mut c = one_per_node(job, r, 2, n, server.addr())
            .apply(&mut Command::new(env!("CARGO_BIN_EXE_sss-idm-probe")))
            // Declared down after about a second of silence.
            .env("SSS_RETRIES", "5")
            .env("SSS_RTO_MIN_US", "20000")
            .env("SSS_RTO_MAX_US", "200000")
            .env("SSS_STALL_PROBE_SECS", "60")
            .stdout(Stdio::piped())
            .spawn()
            .expect("start probe");
        forward_lines(c.stdout.take().unwrap(), tx.clone(), move |l| {
            let mut w = l.splitn(4, ' ');
            let good = w.next() == Some("OK");
            let _rank = w.next();
            let at = w.next().and_then(|s| s.parse().ok()).unwrap_or(0);
            (r, good, at, l)
        });
        g.children.push(c);
    }
    let (d1, t1) = (2 + 1 - 2, 3);
    both_ok_after(&rx, 0, "start");

    // 1. Task 1 stops for 3 s: task 0 declares it down, then it comes back.
    signal(g.children[t1].id(), "STOP");
    wait_err(&rx, 0, "task stopped");
    std::thread::sleep(Duration::from_secs(2));
    let cont = now_ns();
    signal(g.children[t1].id(), "CONT");
    both_ok_after(&rx, cont, "after SIGCONT of a task");

    // 2. Node 1's daemon stops for 2 s: node 0 marks node 1 down (its tasks
    // are declared down), then it is up again.
    signal(g.children[d1].id(), "STOP");
    let seen_down = |node: &str| {
        sss_mbcf::idm::Idm::open(node)
            .ok()
            .and_then(|i| i.find(NODES[1]).map(|(_, d)| !d.is_up()))
            .unwrap_or(false)
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while !seen_down(NODES[0]) {
        assert!(Instant::now() < deadline, "node 1 never marked down");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(500));
    let cont = now_ns();
    signal(g.children[d1].id(), "CONT");
    both_ok_after(&rx, cont, "after SIGCONT of a daemon");

    // 3. Node 1's daemon is killed and started again.
    g.children[d1].kill().unwrap();
    g.children[d1].wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !seen_down(NODES[0]) {
        assert!(Instant::now() < deadline, "node 1 never marked down");
        std::thread::sleep(Duration::from_millis(20));
    }
    g.children[d1] = daemon(NODES[1], port);
    let back = now_ns();
    let deadline = Instant::now() + Duration::from_secs(10);
    while seen_down(NODES[0]) {
        assert!(Instant::now() < deadline, "node 1 never up again");
        std::thread::sleep(Duration::from_millis(20));
    }
    both_ok_after(&rx, back, "after a daemon restart");
    drop(server);
}
