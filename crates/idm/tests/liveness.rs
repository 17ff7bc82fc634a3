//! Three "hosts" (127.0.0.2–4), a daemon and a task on each. One host's
//! daemon and task are SIGKILLed: the survivors must see the node down
//! within the bound, their pending and new operations must fail with
//! node-down, and nothing may hang.

use sss_boot::BootServer;
use sss_idm::secret::ENV as SECRET_ENV;
use sss_testkit::node::{one_per_node, sssd};
use sss_testkit::process::forward_lines;
use sss_testkit::{unique_job, unique_port, Cleanup};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const NODES: [&str; 3] = ["127.0.0.2", "127.0.0.3", "127.0.0.4"];
const DOWN_MS: u64 = 1000;

fn now_ns() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

#[test]
fn a_killed_node_is_seen_down_within_the_bound_and_nothing_hangs() {
    let port = unique_port(20_000);
    let job = unique_job(0x5000_0000);
    let mut g = Cleanup::new(job, &NODES);
    for n in NODES {
        g.children.push(
            sssd(env!("CARGO_BIN_EXE_sssd"), n, &NODES, port, DOWN_MS)
                .env(SECRET_ENV, "11".repeat(32))
                .spawn()
                .expect("start sssd"),
        );
    }
    let server = BootServer::bind("127.0.0.1:0", job, 3)
        .unwrap()
        .spawn()
        .unwrap();
    let (tx, rx) = mpsc::channel::<(usize, String)>();
    for (r, n) in NODES.iter().enumerate() {
        let mut c = one_per_node(job, r, 3, n, server.addr())
            .apply(&mut Command::new(env!("CARGO_BIN_EXE_sss-idm-probe")))
            // Only IDM may detect the death: the retry budget is huge.
            .env("SSS_RETRIES", "100000")
            .stdout(Stdio::piped())
            .spawn()
            .expect("start probe");
        forward_lines(c.stdout.take().unwrap(), tx.clone(), move |l| (r, l));
        g.children.push(c);
    }
    // Every task ready, and the survivors' daemons know the victim's node.
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut ready = 0;
    while ready < 3 {
        let (_, l) = rx
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .expect("tasks did not get ready");
        ready += l.starts_with("READY") as usize;
    }
    let seen = |node: &str| {
        sss_mbcf::idm::Idm::open(node)
            .ok()
            .and_then(|i| i.find(NODES[2]).map(|(_, d)| d.is_up()))
            .unwrap_or(false)
    };
    while !(seen(NODES[0]) && seen(NODES[1])) {
        assert!(
            Instant::now() < deadline,
            "gossip never reached the survivors"
        );
        std::thread::sleep(Duration::from_millis(20));
    }

    // Kill host 3: its daemon (child 2) and its task (child 5).
    let killed_at = now_ns();
    for i in [2, 5] {
        g.children[i].kill().unwrap();
        g.children[i].wait().unwrap();
    }

    let mut down = Vec::new();
    let mut again = 0;
    let deadline = Instant::now() + Duration::from_secs(10);
    while down.len() < 2 || again < 2 {
        let (r, l) = rx
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .expect("a survivor hung");
        if let Some(rest) = l.strip_prefix("DOWN ") {
            let t: u128 = rest.split_whitespace().next().unwrap().parse().unwrap();
            assert!(rest.contains("down"), "rank {r}: {rest}");
            down.push((r, (t - killed_at) / 1_000_000));
        }
        if l == "AGAIN true" {
            again += 1;
        }
    }
    for i in [3, 4] {
        let st = g.children[i].wait().unwrap();
        assert!(st.success(), "survivor exit {st:?}");
    }
    // Bound: the daemon's silence limit, plus a gossip period, a sample
    // period and the tasks' 50 ms liveness check, with slack for a busy
    // machine.
    for (r, ms) in &down {
        eprintln!("rank {r} saw the node down after {ms} ms");
        assert!(*ms <= DOWN_MS as u128 + 1000, "rank {r} took {ms} ms");
    }
    // `sss status` shows it too.
    let table = sss_idm::status_table(NODES[0]).unwrap();
    assert!(
        table.contains(&format!("| {} | down |", NODES[2])),
        "{table}"
    );
    assert!(table.contains(&format!("| {} | up |", NODES[1])), "{table}");
    // The survivors' daemons show the node down.
    for n in &NODES[..2] {
        let d = sss_mbcf::idm::Idm::open(n)
            .unwrap()
            .find(NODES[2])
            .unwrap()
            .1;
        assert!(!d.is_up(), "{n} still shows {} up", NODES[2]);
    }
    drop(server);
}
