//! The TCP rendezvous between tasks (threads here) and a `BootServer`.

use std::net::TcpListener;
use std::thread;
use std::time::{Duration, Instant};

use sss_boot::{Boot, BootError, BootServer, EarlyDisconnect};

/// The variables `sss run` would set for `rank` of a one-node job.
fn vars(job: u32, rank: u32, size: u32, boot: &str, timeout: &str) -> Vec<(String, String)> {
    [
        ("SSS_JOB", job.to_string()),
        ("SSS_RANK", rank.to_string()),
        ("SSS_SIZE", size.to_string()),
        ("SSS_NODE", "127.0.0.1".to_string()),
        ("SSS_NODE_ID", "0".to_string()),
        ("SSS_LOCAL_RANK", rank.to_string()),
        ("SSS_LOCAL_SIZE", size.to_string()),
        ("SSS_BOOT", boot.to_string()),
        ("SSS_BOOT_TIMEOUT", timeout.to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

fn spec(h: &sss_boot::BootServerHandle) -> String {
    format!("tcp:{}", h.addr())
}

#[test]
fn four_tasks_gather_small_large_and_barrier() {
    let server = BootServer::bind("127.0.0.1:0", 77, 4).unwrap();
    let h = server.spawn().unwrap();
    let boot = spec(&h);
    let tasks: Vec<_> = (0..4u32)
        .map(|rank| {
            let v = vars(77, rank, 4, &boot, "20");
            thread::spawn(move || {
                let mut b = Boot::from_vars(v).unwrap();
                assert_eq!((b.job(), b.rank(), b.size()), (77, rank, 4));
                let small = b.allgather(&rank.to_le_bytes()).unwrap();
                let want: Vec<Vec<u8>> = (0..4u32).map(|r| r.to_le_bytes().to_vec()).collect();
                assert_eq!(small, want);
                // Two megabytes each, different per rank.
                let big: Vec<u8> = (0..2 << 20).map(|i| (i as u32 ^ rank) as u8).collect();
                let all = b.allgather(&big).unwrap();
                for (r, part) in all.iter().enumerate() {
                    assert_eq!(part.len(), 2 << 20);
                    assert!(part
                        .iter()
                        .enumerate()
                        .all(|(i, x)| *x == (i as u32 ^ r as u32) as u8));
                }
                b.barrier().unwrap();
            })
        })
        .collect();
    for t in tasks {
        t.join().unwrap();
    }
    let report = h.shutdown();
    assert_eq!(report.joined, 4);
    assert_eq!(report.rounds, 3);
    assert!(report.early_disconnects.is_empty());
}

#[test]
fn task_fails_at_once_when_the_server_goes_away() {
    let h = BootServer::bind("127.0.0.1:0", 5, 2)
        .unwrap()
        .spawn()
        .unwrap();
    // A long timeout: the failure must come from the closed connection.
    let mut b = Boot::from_vars(vars(5, 0, 2, &spec(&h), "60")).unwrap();
    let waiter = thread::spawn(move || {
        let t = Instant::now();
        (b.allgather(b"x"), t.elapsed())
    });
    // Shut down once the server holds the task's round: the task is then
    // waiting for the answer (or about to).
    let deadline = Instant::now() + Duration::from_secs(30);
    while h.report().received == 0 {
        assert!(
            Instant::now() < deadline,
            "the round never reached the server"
        );
        thread::sleep(Duration::from_millis(1));
    }
    h.shutdown();
    let (res, took) = waiter.join().unwrap();
    let err = res.unwrap_err();
    assert!(matches!(err, BootError::ServerGone { .. }), "{err}");
    assert!(err.to_string().contains("went away"), "{err}");
    assert!(took < Duration::from_secs(10), "took {took:?}");
}

#[test]
fn task_times_out_when_the_server_hangs() {
    // Accepts connections and never answers.
    let mute = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = mute.local_addr().unwrap();
    let t = Instant::now();
    let err = Boot::from_vars(vars(5, 0, 2, &format!("tcp:{addr}"), "0.5")).unwrap_err();
    assert!(matches!(err, BootError::Timeout { .. }), "{err}");
    assert!(err.to_string().contains("SSS_BOOT_TIMEOUT"), "{err}");
    assert!(t.elapsed() < Duration::from_secs(5));
    drop(mute);
}

#[test]
fn task_times_out_when_a_peer_never_comes() {
    let h = BootServer::bind("127.0.0.1:0", 6, 2)
        .unwrap()
        .spawn()
        .unwrap();
    let mut b = Boot::from_vars(vars(6, 0, 2, &spec(&h), "0.5")).unwrap();
    let err = b.allgather(b"x").unwrap_err();
    assert!(matches!(err, BootError::Timeout { .. }), "{err}");
    // The rendezvous is out of step now: later calls fail rather than hang.
    assert!(matches!(b.barrier().unwrap_err(), BootError::Poisoned));
    h.shutdown();
}

#[test]
fn nobody_listening_times_out_with_the_address() {
    let free = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let err = Boot::from_vars(vars(1, 0, 2, &format!("tcp:{free}"), "0.3")).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("connecting") && msg.contains(&free.to_string()),
        "{msg}"
    );
}

#[test]
fn early_disconnect_fails_the_round_and_is_reported() {
    let h = BootServer::bind("127.0.0.1:0", 8, 2)
        .unwrap()
        .spawn()
        .unwrap();
    let boot = spec(&h);
    let mut b0 = Boot::from_vars(vars(8, 0, 2, &boot, "20")).unwrap();
    let mut b1 = Boot::from_vars(vars(8, 1, 2, &boot, "20")).unwrap();
    let v1 = thread::spawn(move || {
        b1.barrier().unwrap();
        // Task 1 leaves after round 0.
    });
    b0.barrier().unwrap();
    v1.join().unwrap();
    let err = b0.allgather(b"alone").unwrap_err();
    assert!(
        err.to_string()
            .contains("task 1 left the job before round 1"),
        "{err}"
    );
    let report = h.shutdown();
    assert_eq!(
        report.early_disconnects,
        vec![EarlyDisconnect { rank: 1, round: 1 }]
    );
}

#[test]
fn server_refuses_wrong_job_and_duplicate_rank() {
    let h = BootServer::bind("127.0.0.1:0", 9, 2)
        .unwrap()
        .spawn()
        .unwrap();
    let boot = spec(&h);
    let err = Boot::from_vars(vars(10, 0, 2, &boot, "5")).unwrap_err();
    assert!(err.to_string().contains("job 10"), "{err}");
    let _first = Boot::from_vars(vars(9, 0, 2, &boot, "5")).unwrap();
    let err = Boot::from_vars(vars(9, 0, 2, &boot, "5")).unwrap_err();
    assert!(err.to_string().contains("rank 0 already joined"), "{err}");
    let err = Boot::from_vars(vars(9, 1, 3, &boot, "5")).unwrap_err();
    assert!(err.to_string().contains("3 tasks"), "{err}");
    assert_eq!(h.shutdown().refused, 3);
}

const NOFILE_CHILD: &str = "SSS_BOOT_TEST_NOFILE_CHILD";

/// A task out of file descriptors cannot make the socket to reach the
/// server: that is no reason to wait out the boot timeout.
#[test]
fn out_of_file_descriptors_fails_at_once() {
    if std::env::var_os(NOFILE_CHILD).is_none() {
        // The descriptor limit is per process: use up a low one in a child
        // running only this test, not in this process's parallel tests.
        let exe = std::env::current_exe().unwrap();
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg("ulimit -n 64 && exec \"$0\" --exact out_of_file_descriptors_fails_at_once --test-threads 1")
            .arg(exe)
            .env(NOFILE_CHILD, "1")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("1 passed"),
            "{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        return;
    }
    let h = BootServer::bind("127.0.0.1:0", 11, 2)
        .unwrap()
        .spawn()
        .unwrap();
    let v = vars(11, 0, 2, &spec(&h), "30");
    let mut hog = Vec::new();
    while let Ok(f) = std::fs::File::open("/dev/null") {
        hog.push(f);
        assert!(hog.len() < 100_000, "no descriptor limit in effect");
    }
    let t = Instant::now();
    let res = Boot::from_vars(v);
    let took = t.elapsed();
    drop(hog);
    let err = res.unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("out of file descriptors"), "{msg}");
    // Generous: the point is not waiting out the 30 s timeout.
    assert!(took < Duration::from_secs(10), "took {took:?}: {msg}");
    h.shutdown();
}

/// Regression (the attack): anyone who found the rendezvous port
/// (`/proc/net/tcp`) and the job id (`/dev/shm` names) could say HELLO as
/// rank 1 before the real rank 1, receive rank 0's peer record, and make
/// the real rank 1 fail with "rank 1 already joined". A server given the
/// job's secret admits only HELLOs that prove it, for the nonce of their
/// own connection, so a HELLO recorded from the network is no use either.
#[test]
fn only_tasks_holding_the_job_secret_join() {
    use sss_boot::frame;
    use std::io::Write;
    let secret = sss_boot::JobSecret::generate().unwrap();
    let h = BootServer::bind("127.0.0.1:0", 12, 2)
        .unwrap()
        .with_secret(secret.clone())
        .spawn()
        .unwrap();
    let boot = spec(&h);
    let with = |rank: u32, s: Option<String>| {
        let mut v = vars(12, rank, 2, &boot, "5");
        if let Some(s) = s {
            v.push(("SSS_JOB_SECRET".into(), s));
        }
        v
    };
    // No secret, a wrong one, a malformed one.
    let err = Boot::from_vars(with(1, None)).unwrap_err();
    assert!(err.to_string().contains("not authenticated"), "{err}");
    let wrong = sss_boot::JobSecret::generate().unwrap().to_hex();
    let err = Boot::from_vars(with(1, Some(wrong))).unwrap_err();
    assert!(err.to_string().contains("not authenticated"), "{err}");
    let err = Boot::from_vars(with(1, Some("00".into()))).unwrap_err();
    assert!(err.to_string().contains("SSS_JOB_SECRET"), "{err}");
    assert!(!err.to_string().contains("00"), "the value is not echoed");
    // A HELLO with a tag made for another connection's nonce.
    let mut s = std::net::TcpStream::connect(h.addr()).unwrap();
    let challenge = frame::read_frame(&mut s, 1 << 10).unwrap();
    assert_eq!(challenge.kind, frame::CHALLENGE);
    let stale = sss_boot::auth::hello_tag(Some(&secret), &[7; 32], 12, 1, 2);
    frame::write_frame(&mut s, frame::HELLO, &frame::hello(12, 1, 2, &stale)).unwrap();
    s.flush().unwrap();
    let answer = frame::read_frame(&mut s, 1 << 10).unwrap();
    assert_eq!(answer.kind, frame::ERROR);
    // The real tasks still join and gather.
    let t1 = {
        let v = with(1, Some(secret.to_hex()));
        thread::spawn(move || Boot::from_vars(v).unwrap().allgather(b"one").unwrap())
    };
    let mut b0 = Boot::from_vars(with(0, Some(secret.to_hex()))).unwrap();
    let got = b0.allgather(b"zero").unwrap();
    assert_eq!(got, vec![b"zero".to_vec(), b"one".to_vec()]);
    assert_eq!(t1.join().unwrap(), got);
    assert_eq!(h.shutdown().refused, 3);
}
