//! A full datagram fills the route's frame with the default settings,
//! sealed or not: in a network namespace of its own whose loopback has
//! the MTU of Ethernet (then of a jumbo frame, then loopback's own), a
//! job moves large WRITEs and READs between 127.0.0.2 and 127.0.0.3 with
//! the payload that fills the frame (at most a jumbo frame's), and the
//! kernel splits none of its datagrams into IP fragments (`FragCreates`
//! of `/proc/net/snmp`). An explicit `SSS_PAYLOAD=1408` with sealing
//! does fragment at 1500 bytes, which shows the count sees it. Needs
//! root and iproute2; skipped otherwise.

use sss_mbcf::{Options, Perm, Task, TaskConfig, ThreadBoot};
use std::process::Command;

const CHILD: &str = "SSS_MTU_TEST_CHILD";

fn sh(cmd: &[&str]) -> bool {
    Command::new(cmd[0])
        .args(&cmd[1..])
        .status()
        .is_ok_and(|s| s.success())
}

/// `FragCreates` of this network namespace.
fn frag_creates() -> u64 {
    let snmp = std::fs::read_to_string("/proc/net/snmp").unwrap();
    let mut ip = snmp.lines().filter(|l| l.starts_with("Ip:"));
    let (names, values) = (ip.next().unwrap(), ip.next().unwrap());
    let i = names
        .split_whitespace()
        .position(|n| n == "FragCreates")
        .unwrap();
    values.split_whitespace().nth(i).unwrap().parse().unwrap()
}

/// A job of two tasks: 64 KiB WRITEs one way, READs the other. Returns
/// the payload the tasks chose.
fn job() -> usize {
    let boots = ThreadBoot::group(2, &["127.0.0.2", "127.0.0.3"]);
    let hs: Vec<_> = boots
        .into_iter()
        .map(|b| {
            std::thread::spawn(move || {
                let t = Task::join(Box::new(b), TaskConfig::from_env().unwrap()).unwrap();
                let seg = t.alloc(1 << 16, Perm::ALL).unwrap();
                let all = t.exchange(&seg).unwrap();
                if t.rank() == 0 {
                    let data = vec![5u8; 1 << 16];
                    for _ in 0..8 {
                        t.write(all[1].at(0), &data, Options::default()).unwrap();
                    }
                    t.quiet().unwrap();
                    let back = t
                        .read(all[1].at(0), 1 << 16, Options::default())
                        .unwrap()
                        .wait_data()
                        .unwrap();
                    assert!(back.iter().all(|&b| b == 5));
                }
                t.barrier().unwrap();
                t.payload()
            })
        })
        .collect();
    let payloads: Vec<usize> = hs.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(payloads[0], payloads[1]);
    payloads[0]
}

/// The child's part, run inside the namespace: prints the fragments the
/// job made.
#[test]
fn child() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    let before = frag_creates();
    let payload = job();
    println!("fragments {} payload {payload}", frag_creates() - before);
}

#[test]
fn full_datagrams_fill_the_routes_frame_by_default() {
    if std::env::var_os(CHILD).is_some() {
        return;
    }
    let root = std::fs::read_to_string("/proc/self/status")
        .map(|s| {
            s.lines()
                .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
        })
        .unwrap_or(false);
    if !root || !sh(&["ip", "-V"]) {
        assert!(
            std::env::var_os("SSS_REQUIRE_NETNS").is_none(),
            "SSS_REQUIRE_NETNS is set but root or ip is missing"
        );
        eprintln!("skipped: needs root and iproute2");
        return;
    }
    let ns = format!("sss-mtu-{}", std::process::id());
    struct Gone(String);
    impl Drop for Gone {
        fn drop(&mut self) {
            sh(&["ip", "netns", "del", &self.0]);
        }
    }
    assert!(sh(&["ip", "netns", "add", &ns]));
    let _gone = Gone(ns.clone());
    assert!(sh(&[
        "ip", "-n", &ns, "link", "set", "lo", "up", "mtu", "1500"
    ]));
    let exe = std::env::current_exe().unwrap();
    let mtu = |m: &str| assert!(sh(&["ip", "-n", &ns, "link", "set", "lo", "mtu", m]));
    let run = |env: &[(&str, &str)]| -> (u64, usize) {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &ns])
            .arg(&exe)
            .args(["--exact", "child", "--nocapture", "--test-threads", "1"])
            .env(CHILD, "1")
            .env_remove("SSS_PAYLOAD")
            .env_remove("SSS_SECURITY");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{env:?}:\n{text}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let line = text
            .lines()
            .find_map(|l| l.split("fragments ").nth(1))
            .unwrap_or_else(|| panic!("no count:\n{text}"));
        let w: Vec<&str> = line.split_whitespace().collect();
        (w[0].parse().unwrap(), w[2].parse().unwrap())
    };
    assert_eq!(
        run(&[]),
        (0, 1392),
        "the default (sealed) payload made IP fragments or missed the frame"
    );
    assert_eq!(
        run(&[("SSS_SECURITY", "none")]),
        (0, 1408),
        "unsealed datagrams made IP fragments or missed the frame"
    );
    assert!(
        run(&[("SSS_PAYLOAD", "1408")]).0 > 0,
        "a sealed 1408-byte payload should not fit a 1500-byte frame"
    );
    mtu("9000");
    assert_eq!(run(&[]), (0, 8892), "a jumbo frame");
    mtu("65536");
    assert_eq!(
        run(&[]),
        (0, 8892),
        "loopback's own MTU: a jumbo frame at most"
    );
}
