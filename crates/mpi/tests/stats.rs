//! `SSS_STATS`: `tests/c/stats.c` sends a fixed pattern on two tasks
//! (one node and two "nodes"); with `SSS_STATS=json` each task prints
//! one JSON object on stderr at `MPI_Finalize`, parsed here and checked
//! against the counts the program implies. `SSS_STATS=1` prints one
//! readable line per task; a bad value fails `MPI_Init` with a message.

mod support;

use serde_json::Value;
use support::{compile, scratch, LAUNCHER};

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
];

/// Runs `exe` placed as `place` with `SSS_STATS=json`; checks that it
/// succeeded, printed `ok` and reported `tasks` objects; the objects.
fn stats_of(
    exe: &std::path::Path,
    (what, place): (&str, &[&str]),
    ok: &str,
    tasks: usize,
) -> Vec<Value> {
    let (code, out, err) = LAUNCHER.run(place, exe, &[], &[("SSS_STATS", "json")]);
    assert!(
        code == Some(0) && out.contains(ok),
        "{what}: exit {code:?}\n{out}\n{err}"
    );
    let t = objects(&err);
    assert_eq!(t.len(), tasks, "{what}: {err}");
    t
}

fn num(v: &Value, key: &str) -> u64 {
    v[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key} missing or not a count in {v}"))
}

#[test]
fn json_statistics_count_what_the_program_sent() {
    let dir = scratch();
    let exe = compile(&dir, "stats.c", false);
    for (what, place) in PLACES {
        let (code, out, err) = LAUNCHER.run(place, &exe, &[], &[("SSS_STATS", "json")]);
        assert!(
            code == Some(0) && out.contains("stats: ok"),
            "{what}: exit {code:?}\n{out}\n{err}"
        );
        let tasks = objects(&err);
        assert_eq!(tasks.len(), 2, "{what}: one object per task\n{err}");
        for (r, t) in tasks.iter().enumerate() {
            assert_eq!(num(t, "rank"), r as u64);
            assert_eq!(num(t, "size"), 2);
            let colls = t["collectives"].as_object().expect("collectives");
            let counts: Vec<(&str, u64)> = colls
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_u64().unwrap_or(0)))
                .collect();
            assert_eq!(
                counts,
                [
                    ("allreduce", 1),
                    ("barrier", 1),
                    ("bcast", 2),
                    ("ibarrier", 1)
                ],
                "{what}: task {r}"
            );
            for key in ["data_rate_mb_s", "message_rate_per_s", "avg_message_bytes"] {
                assert!(t[key].as_f64().is_some(), "{key} in {t}");
            }

            assert_eq!(
                num(t, "sent_messages"),
                num(t, "eager_messages") + num(t, "rendezvous_messages")
            );
            // A signal follows a message only while a nonblocking
            // collective runs: the Ibarrier's one message, none of the
            // point-to-point and blocking collectives before it. On one
            // node not even that one when the receiver was inside MPI
            // (starting its own Ibarrier, or waiting) as it was sent.
            let signals = num(t, "nbc_signals");
            if what.contains("one node") {
                assert!(signals <= 1, "{what}: task {r}: {t}");
            } else {
                assert_eq!(signals, 1, "{what}: task {r}: {t}");
            }
        }
        // MBCF's own counters: across nodes the data went in datagrams,
        // none of them refused or malformed.
        let tr = |t: &Value, k: &str| num(&t["transport"], k);
        for t in &tasks {
            for k in [
                "packets_received",
                "retransmissions",
                "blocked_waits",
                "handovers",
                "moves",
            ] {
                tr(t, k);
            }
            assert_eq!(tr(t, "refused") + tr(t, "bad_packets"), 0, "{t}");
            if !what.contains("one node") {
                assert!(tr(t, "packets_sent") > 0, "{what}: {t}");
            }
        }
        assert!(
            tasks.iter().map(|t| tr(t, "bytes_sent")).sum::<u64>() >= 200_000
                || what.contains("one node")
        );
        // Point-to-point: the sent counts less what collectives sent.
        let p2p = |t: &Value, k: &str, c: &str| num(t, k) - num(t, c);
        let (t0, t1) = (&tasks[0], &tasks[1]);
        assert_eq!(p2p(t0, "sent_messages", "coll_messages"), 14, "{t0}");
        assert_eq!(p2p(t0, "sent_bytes", "coll_bytes"), 221_000, "{t0}");
        // The 20 000-byte message: a rendezvous on one node, copied
        // straight from the sender's staged data like the two large ones;
        // across nodes written into the receiver's ring, and the large
        // ones READ.
        let one_node = what.contains("one node");
        let (rndv, direct, ring) = if one_node { (3, 3, 0) } else { (2, 0, 1) };
        assert_eq!(num(t0, "rendezvous_messages"), rndv, "{t0}");
        assert_eq!(
            num(t0, "rendezvous_bytes"),
            200_000 + (rndv - 2) * 20_000,
            "{t0}"
        );
        // The 20 000-byte one goes into the ring, or straight into its
        // receive if task 1 posted it first and told task 0 in time
        // (`engine/direct.rs`).
        let early = num(t0, "direct_writes");
        assert!(early <= ring, "{what}: {t0}");
        assert_eq!(num(t0, "ring_messages"), ring - early, "{what}: {t0}");
        // Across nodes the two large ones are written by MBCF WRITE into
        // the receive buffers after a clear-to-send; on one node copied.
        let written = if one_node { 0 } else { 2 };
        assert_eq!(num(t0, "write_messages"), written + early, "{what}: {t0}");
        assert_eq!(
            num(t0, "write_bytes"),
            written * 100_000 + early * 20_000,
            "{t0}"
        );
        assert_eq!(num(t1, "write_messages"), 0, "{t1}");
        assert_eq!(num(t0, "ring_bytes"), (ring - early) * 20_000, "{t0}");
        assert_eq!(num(t1, "direct_copy_messages"), direct, "{what}: {t1}");
        assert_eq!(
            num(t1, "direct_copy_bytes"),
            200_000 * direct.min(2) / 2 + direct.saturating_sub(2) * 20_000,
            "{t1}"
        );
        assert_eq!(p2p(t1, "sent_messages", "coll_messages"), 1, "{t1}");
        assert_eq!(p2p(t1, "sent_bytes", "coll_bytes"), 0, "{t1}");
        // What one task sent the other received.
        assert_eq!(num(t1, "recv_messages"), num(t0, "sent_messages"));
        assert_eq!(num(t1, "recv_bytes"), num(t0, "sent_bytes"));
        assert_eq!(num(t0, "recv_messages"), num(t1, "sent_messages"));
        // Task 1 posted the eleven small receives first, not the large
        // ones; the 20 000-byte one and a collective's receive may or may
        // not have been first.
        let first = num(t1, "posted_first_messages");
        let coll_in = num(t0, "coll_messages");
        assert!((11..=12 + coll_in).contains(&first), "{t1}");
        let first_bytes = num(t1, "posted_first_bytes");
        assert!(
            (1000..=21_000 + num(t0, "coll_bytes")).contains(&first_bytes),
            "{t1}"
        );
    }
}

/// The JSON objects of a run, by rank.
fn objects(err: &str) -> Vec<Value> {
    let mut tasks: Vec<Value> = err
        .lines()
        .filter(|l| l.contains("\"sss_mpi_stats\""))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    tasks.sort_by_key(|v| num(v, "rank"));
    tasks
}

/// `MPI_Recv` and `MPI_Send` make no request when nothing else is posted
/// (`tests/c/recvalone.c`): eleven receives of messages already here
/// take one look under the library's lock each (they took two, and a
/// request each, when every receive was a request); a ping-pong's
/// receives make none either, nor `MPI_Sendrecv`'s exchanges, on one
/// node and across nodes.
#[test]
fn blocking_receives_posted_alone_make_no_request() {
    let dir = scratch();
    let exe = compile(&dir, "recvalone.c", false);
    for (what, place) in PLACES {
        let run = |mode: &str| {
            let (code, out, err) = LAUNCHER.run(place, &exe, &[mode], &[("SSS_STATS", "json")]);
            assert!(
                code == Some(0) && out.contains(&format!("recvalone: ok {mode}")),
                "{what}: exit {code:?}\n{out}\n{err}"
            );
            let t = objects(&err);
            assert_eq!(t.len(), 2, "{what}: {err}");
            t
        };
        let t = run("counts");
        for k in ["requests", "blocking_recvs", "blocking_recv_looks"] {
            assert_eq!(num(&t[0], k), 0, "{what}: {k}: {}", t[0]);
        }
        assert_eq!(num(&t[1], "requests"), 0, "{what}: {}", t[1]);
        assert_eq!(num(&t[1], "blocking_recvs"), 11, "{what}: {}", t[1]);
        assert_eq!(num(&t[1], "blocking_recv_looks"), 11, "{what}: {}", t[1]);

        let t = run("pingpong");
        for t in &t {
            assert_eq!(num(t, "requests"), 0, "{what}: {t}");
            assert_eq!(num(t, "blocking_recvs"), 1000, "{what}: {t}");
            // A receive that waits looks once more when its message came.
            let looks = num(t, "blocking_recv_looks");
            assert!((1000..=2100).contains(&looks), "{what}: {t}");
            // At most three lock round trips per round trip and task: the
            // send's, the receive's post and its completion (3000 and the
            // program's few other calls).
            let locks = num(t, "library_locks");
            assert!((2000..=3100).contains(&locks), "{what}: {t}");
        }

        // MPI_Sendrecv of a message that leaves at once sends it without
        // a request and receives it as MPI_Recv does, and so does
        // MPI_Sendrecv_replace: the 1000 exchanges of each made 2000
        // requests a task before. The rendezvous one makes at
        // most two; MPI_Comm_split a few. The 1000 allreduces' sends
        // make none either: their receives 1000 (2000 before).
        let t = run("exchange");
        for (r, t) in t.iter().enumerate() {
            assert!(num(t, "requests") <= 1010, "{what}: {t}");
            let want = 2001 + u64::from(r == 0);
            assert_eq!(num(t, "blocking_recvs"), want, "{what}: {t}");
        }
    }
}

#[test]
fn one_readable_line_per_task_and_bad_values_refused() {
    let dir = scratch();
    let exe = compile(&dir, "stats.c", false);
    let (code, out, err) = LAUNCHER.run(PLACES[0].1, &exe, &[], &[("SSS_STATS", "1")]);
    assert!(code == Some(0) && out.contains("stats: ok"), "{out}\n{err}");
    for r in 0..2 {
        let want = format!("MPI stats, task {r} of 2:");
        let line = err.lines().find(|l| l.starts_with(&want));
        let line = line.unwrap_or_else(|| panic!("no {want:?} in\n{err}"));
        assert!(line.contains("collectives: allreduce 1 barrier 1 bcast 2 ibarrier 1"));
        assert!(line.contains("MBCF WRITE 0.0%"), "one node: {line}");
        assert!(line.contains("retransmitted"), "{line}");
    }
    let (code, _, err) = LAUNCHER.run(PLACES[0].1, &exe, &[], &[("SSS_STATS", "lots")]);
    assert!(
        code != Some(0) && err.contains("SSS_STATS=\"lots\": expected json, 1 or off"),
        "exit {code:?}\n{err}"
    );
}

/// A standard send of a rendezvous message to a task on the same node
/// completes once its data is staged, before the receiver takes it
/// (`tests/c/stagedahead.c`, which would wait for ever otherwise): the
/// blocking send and the waited Isend count, the synchronous send does
/// not. Across nodes every rendezvous send waits for its receiver (the
/// clear-to-send needs the sender's WRITE), so the program runs on one.
#[test]
fn rendezvous_sends_complete_once_staged() {
    let dir = scratch();
    let exe = compile(&dir, "stagedahead.c", false);
    let t = stats_of(&exe, PLACES[0], "stagedahead: ok", 2);
    assert_eq!(num(&t[0], "rendezvous_messages"), 3, "{}", t[0]);
    assert_eq!(num(&t[0], "staged_ahead_messages"), 2, "{}", t[0]);
    assert_eq!(num(&t[1], "staged_ahead_messages"), 0, "{}", t[1]);
    assert_eq!(num(&t[1], "direct_copy_messages"), 3, "{}", t[1]);
    for t in &t {
        num(&t["transport"], "sswait_idle_blocks");
        num(&t["transport"], "prewakes");
    }
}

/// Regression: a window of large sends on one node staged 96 MiB a
/// round; the 32 MiB beyond what the library keeps idle were freed and
/// allocated again every round, and the receiver kept its mappings of
/// every freed segment: a 4 MiB stream fell from 2.1 to 0.44 GB/s,
/// clearing pages, while the receiver grew by gigabytes
/// (`tests/c/stagingreuse.c`, 8 rounds of 24 × 4 MiB). The segments are
/// now reused: the first round's twelve 8 MiB segments, no more.
#[test]
fn staging_segments_are_reused_round_after_round() {
    let dir = scratch();
    let exe = compile(&dir, "stagingreuse.c", false);
    let t = stats_of(&exe, PLACES[0], "stagingreuse: ok", 2);
    assert_eq!(num(&t[0], "rendezvous_messages"), 8 * 24, "{}", t[0]);
    let made = num(&t[0], "staging_segments");
    assert!(
        (1..=16).contains(&made),
        "{made} staging segments: {}",
        t[0]
    );
}

/// Allreduce and allgather on 4 tasks take log2(4) = 2 messages a task
/// each (recursive doubling; `tests/c/collcount.c`), where a reduce and
/// a broadcast, or a gather and a broadcast, took up to 4 a task one
/// after the other; an allgather's blocks are received in place, and
/// one on this node arrives copied from the sender's staging, no READ.
#[test]
fn allreduce_and_allgather_take_log2_messages_a_task() {
    let dir = scratch();
    let exe = compile(&dir, "collcount.c", false);
    for (what, place) in [
        ("4 tasks, one node", &["-n", "4"][..]),
        (
            "4 tasks, two nodes",
            &["-n", "4", "--hosts", "127.0.0.2,127.0.0.3"][..],
        ),
    ] {
        for t in &stats_of(&exe, (what, place), "collcount: ok", 4) {
            assert_eq!(num(&t["collectives"], "allreduce"), 100, "{what}: {t}");
            assert_eq!(num(&t["collectives"], "allgather"), 10, "{what}: {t}");
            assert_eq!(num(t, "coll_messages"), 2 * 110, "{what}: {t}");
        }
    }
}

/// All-to-all of blocks above 1 MiB (`tests/c/alltoallbig.c`: five
/// exchanges) copies each block once: a receiver on the same node reads
/// it from the sender's buffer; nothing is staged, nothing copied out of
/// staging. Across nodes the blocks are staged as before.
#[test]
fn large_all_to_all_blocks_are_read_from_the_sender() {
    let dir = scratch();
    let exe = compile(&dir, "alltoallbig.c", false);
    let (one, two) = (PLACES[0].1, PLACES[1].1);
    let four: &[&str] = &["-n", "4"];
    // Yama's ptrace_scope 2 or 3 forbids the read, and 1 unless the
    // user asks for it (`SSS_MPI_PEER_READ=on`): everything is staged.
    let yama = std::fs::read_to_string("/proc/sys/kernel/yama/ptrace_scope")
        .map_or(0, |s| s.trim().parse::<u64>().unwrap_or(3));
    let asked = std::env::var("SSS_MPI_PEER_READ").is_ok_and(|v| v == "on");
    let k = u64::from(yama == 0 || (yama == 1 && asked));
    // Where, tasks, blocks read from the sender by each task.
    for (place, n, read) in [(four, 4u64, 15 * k), (one, 2, 5 * k), (two, 2, 0)] {
        let (code, out, err) = LAUNCHER.run(place, &exe, &[], &[("SSS_STATS", "json")]);
        assert!(
            code == Some(0) && out.contains("alltoallbig: ok"),
            "{place:?}: exit {code:?}\n{out}\n{err}"
        );
        let t = objects(&err);
        assert_eq!(t.len() as u64, n, "{place:?}: {err}");
        for t in &t {
            assert_eq!(num(t, "peer_read_messages"), read, "{place:?}: {t}");
            // Across nodes a block whose receive was posted first and
            // noticed in time is written straight into it instead.
            let rndv = num(t, "rendezvous_messages");
            assert_eq!(rndv + num(t, "direct_writes"), 5 * (n - 1), "{t}");
            assert_eq!(num(t, "direct_copy_messages"), 0, "{t}");
            if read > 0 {
                assert_eq!(rndv, 5 * (n - 1), "{t}");
                assert_eq!(num(t, "staged_bytes"), 0, "{place:?}: {t}");
                assert!(num(t, "peer_read_bytes") >= read << 20, "{t}");
            } else {
                assert!(num(t, "staged_bytes") >= rndv << 20, "{place:?}: {t}");
            }
        }
    }
}

/// Receives posted before their message are told to the sender, which
/// writes the message straight into them (`tests/c/direct.c`, which
/// checks MPI's matching and every byte): across nodes the receiver's
/// noticed receives are completed by the sender's WRITE, never into
/// another receive than MPI's order names, also with datagrams dropped;
/// on one node nothing is noticed.
#[test]
fn receives_posted_first_are_written_directly() {
    let dir = scratch();
    let exe = compile(&dir, "direct.c", false);
    let hosts = ["--hosts", "127.0.0.2,127.0.0.3"];
    let runs: [(&str, Vec<&str>, Option<&str>); 4] = [
        ("2 tasks, one node", vec!["-n", "2"], None),
        (
            "2 tasks, two nodes",
            [&["-n", "2"][..], &hosts].concat(),
            None,
        ),
        (
            "3 tasks, three nodes",
            vec!["-n", "3", "--hosts", "127.0.0.2,127.0.0.3,127.0.0.4"],
            None,
        ),
        (
            "2 tasks, two nodes, 5 % dropped",
            [&["-n", "2"][..], &hosts].concat(),
            Some("0.05"),
        ),
    ];
    for (what, place, drop) in &runs {
        let mut env = vec![("SSS_STATS", "json")];
        if let Some(d) = drop {
            env.push(("SSS_FAULT_DROP", d));
        }
        let (code, out, err) = LAUNCHER.run(place, &exe, &[], &env);
        let n = place[1];
        assert!(
            code == Some(0) && out.contains(&format!("direct: ok {n} tasks")),
            "{what}: exit {code:?}\n{out}\n{err}"
        );
        let t = objects(&err);
        for t in &t {
            assert_eq!(num(t, "bad_messages"), 0, "{what}: {t}");
            assert_eq!(num(t, "direct_misordered"), 0, "{what}: {t}");
            assert_eq!(num(t, "direct_stops"), 0, "{what}: {t}");
        }
        let (t0, t1) = (&t[0], &t[1]);
        if what.contains("one node") {
            assert_eq!(
                num(t1, "notices") + num(t0, "direct_writes"),
                0,
                "{what}: {t1}"
            );
            continue;
        }
        // The windows' 84 receives are noticed before their messages are
        // sent, so each is written directly; the other phases race (how
        // many of theirs win varies).
        assert!(num(t1, "notices") >= 84, "{what}: {t1}");
        assert!(num(t0, "direct_writes") >= 84, "{what}: {t0}");
        let written: u64 = t.iter().map(|t| num(t, "direct_writes")).sum();
        let received: u64 = t.iter().map(|t| num(t, "direct_received")).sum();
        assert_eq!(written, received, "{what}: {t0}\n{t1}");
        assert!(num(t0, "write_bytes") >= num(t0, "direct_writes") * 9000);
    }
}

/// Windows of 64 nonblocking messages of 1 B, 32 KiB and 128 KiB
/// (`tests/c/streams.c`, the pattern of `osu_bw`) across two nodes, with
/// direct writes and with rendezvous: no wait may end by its safety-net
/// timeout. A wait woken by a completed WRITE or READ used to look at
/// the library's work only on every 16th turn, and so blocked again
/// until enough 20 ms timeouts passed (windows of 50–110 ms; 8–26
/// timeouts in 100 rounds). Rendezvous sends across the network are
/// written from the sender's buffer, except buffered ones (the program
/// overwrites their buffer at once and checks what arrived).
#[test]
fn waits_see_what_woke_them() {
    let dir = scratch();
    let exe = compile(&dir, "streams.c", false);
    let place = ["-n", "2", "--hosts", "127.0.0.2,127.0.0.3"];
    for direct in ["on", "off"] {
        let env = [("SSS_STATS", "json"), ("SSS_MPI_DIRECT", direct)];
        let (code, out, err) = LAUNCHER.run(&place, &exe, &[], &env);
        assert!(
            code == Some(0) && out.contains("streams: ok"),
            "direct {direct}: exit {code:?}\n{out}\n{err}"
        );
        let t = objects(&err);
        assert_eq!(t.len(), 2, "direct {direct}: {err}");
        // One is allowed: a task descheduled for 20 ms by a busy machine.
        let timeouts: u64 = t
            .iter()
            .map(|t| num(&t["transport"], "wait_timeouts"))
            .sum();
        assert!(timeouts <= 1, "direct {direct}: {}\n{}", t[0], t[1]);
        if direct == "off" {
            // Every 128 KiB message goes by rendezvous, written from the
            // sender's buffer: nothing staged but the buffered sends'.
            assert!(num(&t[0], "lent_messages") >= 40 * 64, "{}", t[0]);
            assert!(num(&t[0], "staged_bytes") <= 4 * 131_072, "{}", t[0]);
        }
    }
}

/// Nonblocking rooted collectives and Iallgather of contiguous types on
/// an intracommunicator send from and receive into the program's
/// buffers (`tests/c/nbccopy.c`): no byte copied between those and the
/// library's (`nbc_copied_bytes`), where the root of Iscatter copied its
/// whole send buffer, every receiver its block out, and every sender of
/// Igather its block in. A strided receive is still packed and copied
/// out: its N ints on every task.
#[test]
fn contiguous_rooted_nonblocking_collectives_copy_nothing() {
    let dir = scratch();
    let exe = compile(&dir, "nbccopy.c", false);
    let mut places = PLACES.to_vec();
    places.push(("3 tasks, one node", &["-n", "3"]));
    for &(what, place) in &places {
        let tasks = if what.starts_with('3') { 3 } else { 2 };
        for (mode, bytes) in [("contiguous", 0), ("strided", 4096 * 4)] {
            let (code, out, err) = LAUNCHER.run(place, &exe, &[mode], &[("SSS_STATS", "json")]);
            assert!(
                code == Some(0) && out.contains(&format!("nbccopy: ok {mode} {tasks} tasks")),
                "{what}: exit {code:?}\n{out}\n{err}"
            );
            let t = objects(&err);
            assert_eq!(t.len(), tasks, "{what}: {err}");
            for t in &t {
                assert_eq!(num(t, "nbc_copied_bytes"), bytes, "{what} {mode}: {t}");
            }
        }
    }
}
