//! Deterministic counts that guard the udp latency path (no timings):
//! while an application thread spins in a wait it owns the task's socket,
//! receives and applies for itself, and no datagram wakes the progress
//! thread. Before, every datagram woke it (the kernel wakes every thread
//! polling a socket before anyone reads), about one wake-up per round
//! trip per task.

use sss_mbcf::{Options, Perm, Task, TaskConfig, ThreadBoot, WaitPolicy};
use std::time::Duration;

const HOSTS: &[&str] = &["127.0.0.2", "127.0.0.3"];
const ROUNDS: u64 = 2000;

/// One job at a time: two spinning tasks already fill a 2-CPU machine,
/// and a waiter preempted outside its wait leaves the socket to the
/// progress thread, which the counts would then see.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// What one task of a ping-pong counted.
#[derive(Debug, Clone, Copy)]
struct Counts {
    /// Progress-thread wake-ups by a datagram or a ring.
    woke: u64,
    /// Progress-thread looks at whether waiters still wait.
    looks: u64,
    /// Microseconds the rounds took.
    micros: u64,
}

/// Two tasks on two hosts ping-pong `ROUNDS` 8-byte WRITEs with notify,
/// each waiting with `wait`; returns each task's progress wake-ups.
fn pingpong(cfg: &TaskConfig, wait: fn(&Task, &std::sync::atomic::AtomicU64, u64)) -> Vec<u64> {
    counted_pingpong(cfg, wait).iter().map(|c| c.woke).collect()
}

/// [`pingpong`], with every count.
fn counted_pingpong(
    cfg: &TaskConfig,
    wait: fn(&Task, &std::sync::atomic::AtomicU64, u64),
) -> Vec<Counts> {
    on_both(HOSTS, cfg, move |t| {
        let seg = t.alloc(4096, Perm::ALL).unwrap();
        let all = t.exchange(&seg).unwrap();
        let peer = all[1 - t.rank() as usize];
        let flag = seg.word(0).unwrap();
        t.barrier().unwrap();
        let before = t.stats();
        let start = std::time::Instant::now();
        for i in 1..=ROUNDS {
            let ping = |t: &Task| {
                t.write(peer.at(64), &i.to_le_bytes(), Options::notify(peer.at(0)))
                    .unwrap()
            };
            if t.rank() == 0 {
                ping(&t);
                wait(&t, flag, i);
            } else {
                wait(&t, flag, i);
                ping(&t);
            }
        }
        let micros = start.elapsed().as_micros() as u64;
        let after = t.stats();
        t.barrier().unwrap();
        Counts {
            woke: after.progress_wakeups - before.progress_wakeups,
            looks: after.progress_looks - before.progress_looks,
            micros,
        }
    })
}

/// Runs `body` on each task of a two-task job on `nodes`, one job at a
/// time; what each returned, in rank order.
fn on_both<R: Send + 'static>(
    nodes: &[&str],
    cfg: &TaskConfig,
    body: impl Fn(Task) -> R + Send + Copy + 'static,
) -> Vec<R> {
    let _one = serial();
    let hs: Vec<_> = ThreadBoot::join_all(2, nodes, cfg)
        .into_iter()
        .map(|t| {
            let t = t.expect("join");
            std::thread::spawn(move || body(t))
        })
        .collect();
    hs.into_iter().map(|h| h.join().unwrap()).collect()
}

fn spinning() -> TaskConfig {
    // Spin for as long as any answer can take, so that no wait blocks
    // (a blocked waiter hands the socket back, which is a wake-up).
    TaskConfig {
        spin: Duration::from_secs(5),
        spin_max: Duration::from_secs(5),
        ..TaskConfig::default()
    }
}

#[test]
fn a_round_trip_between_spinning_default_waiters_wakes_no_progress_thread() {
    let woke = pingpong(&spinning(), |t, w, i| {
        t.wait_word(w, |v| v >= i);
    });
    for (rank, w) in woke.iter().enumerate() {
        assert!(
            *w <= ROUNDS / 10,
            "rank {rank}: {w} progress wake-ups in {ROUNDS} round trips"
        );
    }
}

#[test]
fn a_round_trip_between_spin_policy_waiters_wakes_no_progress_thread() {
    let woke = pingpong(&spinning(), |t, w, i| {
        t.wait_word_with(w, |v| v >= i, WaitPolicy::Spin);
    });
    for (rank, w) in woke.iter().enumerate() {
        assert!(
            *w <= ROUNDS / 10,
            "rank {rank}: {w} progress wake-ups in {ROUNDS} round trips"
        );
    }
}

/// While the application keeps waiting, the progress thread looks at it
/// ever less often (each look preempts a spinner): after 200 µs, then
/// every 400 µs (about 54 looks in 27.5 ms, the wake-up's own delay
/// included). Looking every 200 µs, as before, breaks the bound (163 looks
/// in 46.5 ms against at most 126).
#[test]
fn a_ping_pong_between_spinning_waiters_is_looked_at_seldom() {
    let counts = counted_pingpong(&spinning(), |t, w, i| {
        t.wait_word(w, |v| v >= i);
    });
    for (rank, c) in counts.iter().enumerate() {
        assert!(
            c.looks <= c.micros / 380 + 4,
            "rank {rank}: {} looks in {} µs",
            c.looks,
            c.micros
        );
    }
}

/// A waiter that spins briefly, then blocks, hands the socket back: the
/// progress thread watches it at once rather than take the waits that
/// keep starting for a waiting application and look only later (each
/// round trip would then wait for a look).
#[test]
fn a_waiter_that_blocks_is_not_left_to_looks() {
    let cfg = TaskConfig {
        spin: Duration::from_micros(1),
        spin_max: Duration::from_micros(1),
        ..TaskConfig::default()
    };
    let counts = counted_pingpong(&cfg, |t, w, i| {
        t.wait_word(w, |v| v >= i);
    });
    let looks: u64 = counts.iter().map(|c| c.looks).sum();
    assert!(
        looks <= ROUNDS / 10,
        "{looks} looks in {ROUNDS} round trips: {counts:?}"
    );
}

/// A waiter that blocks gives the socket back: the progress thread, woken
/// by the datagram, applies it and wakes the waiter. Nothing is lost.
#[test]
fn blocking_waiters_are_served_by_the_progress_thread() {
    let cfg = TaskConfig {
        spin: Duration::ZERO,
        ..TaskConfig::default()
    };
    let woke = pingpong(&cfg, |t, w, i| {
        t.wait_word(w, |v| v >= i);
    });
    // Every datagram that reaches a blocked waiter wakes the progress
    // thread (that is what blocking costs); the count shows the two
    // regimes are told apart.
    assert!(woke.iter().sum::<u64>() >= ROUNDS, "{woke:?}");
}

/// Signal ping-pong: each side's handler counts the signal and rank 1's
/// echoes it; both sides spin on their count. Returns each task's
/// progress wake-ups and signals run straight from the same-node ring.
fn signal_pingpong(nodes: &[&str]) -> Vec<(u64, u64)> {
    signal_pingpong_with(nodes, &spinning(), true)
}

/// [`signal_pingpong`] with the tasks configured by `cfg`; rank 1 echoes
/// from its handler when `in_handler`, else from its application thread
/// once its wait saw the signal.
fn signal_pingpong_with(nodes: &[&str], cfg: &TaskConfig, in_handler: bool) -> Vec<(u64, u64)> {
    signal_pingpong_waiting(nodes, cfg, in_handler, |t, count, i| {
        t.wait_word(count, |v| v >= i);
    })
}

/// [`signal_pingpong_with`], each side waiting for its count with `wait`.
fn signal_pingpong_waiting(
    nodes: &[&str],
    cfg: &TaskConfig,
    in_handler: bool,
    wait: fn(&Task, &std::sync::atomic::AtomicU64, u64),
) -> Vec<(u64, u64)> {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    on_both(nodes, cfg, move |t| {
        let count = Arc::new(AtomicU64::new(0));
        let c = count.clone();
        let echo = t.rank() == 1 && in_handler;
        t.set_handler(
            0,
            Arc::new(move |ctx, data| {
                if echo {
                    ctx.task
                        .signal(ctx.from, 0, data, Options::default())
                        .unwrap();
                }
                c.fetch_add(1, Ordering::Release);
            }),
        )
        .unwrap();
        t.barrier().unwrap();
        let before = t.stats();
        for i in 1..=ROUNDS {
            if t.rank() == 0 {
                t.signal(1, 0, &[7; 8], Options::default()).unwrap();
            }
            wait(&t, &count, i);
            if t.rank() == 1 && !in_handler {
                t.signal(0, 0, &[7; 8], Options::default()).unwrap();
            }
        }
        let after = t.stats();
        t.barrier().unwrap();
        (
            after.progress_wakeups - before.progress_wakeups,
            after.signals_inline - before.signals_inline,
        )
    })
}

/// A signal to a task that waits runs in the waiter's thread: neither a
/// datagram (udp) nor a doorbell (shm) wakes the progress thread.
#[test]
fn signals_to_a_spinning_waiter_run_in_its_thread() {
    for nodes in [HOSTS, &["127.0.0.1"][..]] {
        let counts = signal_pingpong(nodes);
        for (rank, (w, _)) in counts.iter().enumerate() {
            assert!(
                *w <= ROUNDS / 10,
                "{nodes:?} rank {rank}: {w} progress wake-ups in {ROUNDS} signal round trips"
            );
        }
    }
}

/// On one node the waiter runs a signal straight from the ring's slot,
/// looking at the ring on every turn of its spin: no queue, allocation or
/// second pass through the handler runner per signal. Queued, the same
/// ping-pong took 2.5–3.3 times a WRITE's one-way trip in `sss bench
/// --mode node`; straight from the ring about 1.3 times. The old code ran
/// none straight.
///
/// Each side answers from its waiting thread. When rank 1's handler
/// answered, its application thread was not needed for the ping-pong: it
/// could fall behind, find each count already reached and not wait, and
/// rank 1's progress thread, finding nobody waiting and the next signal
/// always in the ring, then ran them all (0 of 2000 straight, about one
/// run in 40 on two CPUs). Now 1978–2000 of 2000 alone on the machine;
/// beside two CPU hogs waiters get preempted and signals reach the
/// progress thread by a doorbell instead (29–48 of 2000), hence a
/// hundredth as the bound, and three tries.
#[test]
fn same_node_signals_to_a_waiter_run_straight_from_the_ring() {
    let mut tries = Vec::new();
    for _ in 0..3 {
        let counts = signal_pingpong_with(&["127.0.0.1"], &spinning(), false);
        if counts.iter().all(|&(_, inline)| inline >= ROUNDS / 100) {
            return;
        }
        tries.push(counts);
    }
    panic!("(wake-ups, signals run straight from the ring) of {ROUNDS} per rank, three tries: {tries:?}");
}

/// On one node a SIGNAL to a task waiting in an SS-Wait runs in the
/// waiter's thread, which looks at the signal ring on every turn of its
/// spins and yields: the sender rings no doorbell. SS-Wait once left the
/// ring to the progress thread, so every signal rang it awake: 2000
/// wake-ups of 2000 a task here, none run by the waiter (now 7–38, and
/// 1963–2000 run by the waiter). MPI's nonblocking collectives, whose
/// messages carry a signal, took 10–35 µs each on one node, 3 without
/// the signals.
#[test]
fn same_node_signals_to_an_sswaiter_run_in_its_thread() {
    let mut tries = Vec::new();
    for _ in 0..3 {
        let counts =
            signal_pingpong_waiting(&["127.0.0.1"], &TaskConfig::default(), false, |t, c, i| {
                t.sswait(c, 1 - t.rank(), |v| v >= i);
            });
        if counts.iter().all(|&(w, _)| w <= ROUNDS / 10) {
            return;
        }
        tries.push(counts);
    }
    panic!("(wake-ups, signals run straight from the ring) of {ROUNDS} per rank, three tries: {tries:?}");
}

/// On one node a SIGNAL to a task whose waiter blocks wakes that waiter,
/// which runs the handler itself: one wake-up a way, as for a WRITE. It
/// once rang the progress thread's doorbell instead, which ran the
/// handler and then woke the waiter: two wake-ups a way, a progress
/// wake-up for nearly every signal (1906 of 2000) and none run by the
/// waiter. Now 1–55 wake-ups and 1950–2000 run by the waiter, or, in
/// runs where the echo often comes back before the sender has begun to
/// wait (it then rings the progress thread, and the waiter runs the
/// signal before sleeping), 390–800 wake-ups and 1550–1790 run by the
/// waiter.
#[test]
fn same_node_signals_to_a_blocked_waiter_wake_only_the_waiter() {
    let cfg = TaskConfig {
        spin: Duration::ZERO,
        ..TaskConfig::default()
    };
    let counts = signal_pingpong_with(&["127.0.0.1"], &cfg, true);
    for (rank, (w, inline)) in counts.iter().enumerate() {
        assert!(
            *w <= ROUNDS / 2 && *inline >= ROUNDS / 2,
            "rank {rank}: {w} progress wake-ups, {inline} signals run by the waiter in {ROUNDS} round trips"
        );
    }
}

/// A signal handler that runs in a spinning waiter's thread and waits
/// there itself, long enough to block (a READ across hosts with a 1 µs
/// spin): the outer wait still holds its claim on the socket, but nobody
/// spins. The progress thread must receive the READ's answer; it once
/// left the socket to the stale claim for good and the job hung (seen
/// as a DSM update handler's fetch-and-add that never completed).
#[test]
fn a_handler_that_blocks_inside_a_spinning_wait_still_gets_its_answer() {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    let cfg = TaskConfig {
        spin: Duration::from_micros(1),
        spin_max: Duration::from_micros(1),
        ..TaskConfig::default()
    };
    let got = on_both(HOSTS, &cfg, |t| {
        let seg = t.alloc(4096, Perm::ALL).unwrap();
        let all = t.exchange(&seg).unwrap();
        let peer = all[1 - t.rank() as usize];
        seg.word(8)
            .unwrap()
            .store(41 + t.rank() as u64, Ordering::SeqCst);
        let done = Arc::new(AtomicU64::new(0));
        let d = done.clone();
        t.set_handler(
            0,
            Arc::new(move |ctx, _| {
                let r = ctx.task.read(peer.at(8), 8, Options::default()).unwrap();
                // Bounded, so that a regression fails instead of hanging.
                let any = AtomicU64::new(0);
                let v = ctx
                    .task
                    .wait_word_timeout(&any, |_| r.is_done(), Duration::from_secs(10))
                    .and_then(|_| r.wait_data().ok())
                    .map_or(0, |b| u64::from_le_bytes(b[..8].try_into().unwrap()));
                d.store(v.max(1), Ordering::Release);
            }),
        )
        .unwrap();
        t.barrier().unwrap();
        let mut v = 0;
        if t.rank() == 0 {
            t.signal(1, 0, &[], Options::default()).unwrap();
        } else {
            // Spinning, so the signal runs here, nested in this wait; the
            // deadline only keeps a regression from hanging the suite.
            let until = std::time::Instant::now() + Duration::from_secs(20);
            while v == 0 && std::time::Instant::now() < until {
                let w = AtomicU64::new(0);
                let _ = t.wait_word_with(
                    &w,
                    |_| done.load(Ordering::Acquire) != 0 || std::time::Instant::now() >= until,
                    WaitPolicy::Spin,
                );
                v = done.load(Ordering::Acquire);
            }
        }
        t.barrier().unwrap();
        v
    });
    assert_eq!(got[1], 41, "the handler's READ never completed: {got:?}");
}

/// Rank 1 answers rank 0's wait after `delay`; rank 0 waits with `wait`.
/// Returns rank 0's blocked waits.
fn late_answer(cfg: &TaskConfig, wait: fn(&Task, &std::sync::atomic::AtomicU64)) -> u64 {
    let r = on_both(HOSTS, cfg, move |t| {
        let seg = t.alloc(4096, Perm::ALL).unwrap();
        let all = t.exchange(&seg).unwrap();
        let peer = all[1 - t.rank() as usize];
        t.barrier().unwrap();
        let before = t.stats().blocked_waits;
        if t.rank() == 0 {
            wait(&t, seg.word(0).unwrap());
        } else {
            std::thread::sleep(Duration::from_millis(1));
            t.write(peer.at(64), &[1], Options::notify(peer.at(0)))
                .unwrap();
        }
        let blocked = t.stats().blocked_waits - before;
        t.barrier().unwrap();
        blocked
    });
    r[0]
}

#[test]
fn an_sswait_on_a_partner_across_the_network_spins_through_a_longer_answer() {
    // A default wait spins 250 µs at most: a 1 ms answer finds it blocked.
    let blocked = late_answer(&TaskConfig::default(), |t, w| {
        t.wait_word(w, |v| v >= 1);
    });
    assert_eq!(blocked, 1);
    // SS-Wait on the partner spins for its own spin while the node has a
    // CPU for it (here 50 ms: the answer is never that late).
    let mut cfg = TaskConfig::default();
    cfg.sswait.spin = Duration::from_millis(50);
    let blocked = late_answer(&cfg, |t, w| {
        t.sswait(w, 1, |v| v >= 1);
    });
    assert_eq!(blocked, 0);
    // The same with a deadline (the DSM's barriers wait so).
    let blocked = late_answer(&cfg, |t, w| {
        let got = t.wait_word_partner_timeout(w, 1, |v| v >= 1, Duration::from_secs(10));
        assert_eq!(got, Some(1));
    });
    assert_eq!(blocked, 0);
}

/// A handler replaced while signals run straight from the ring takes
/// over at the next signal: the thread running handlers keeps its own
/// copy of the table and must see the change.
#[test]
fn a_replaced_handler_runs_from_the_next_signal_on() {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    let got = on_both(&["127.0.0.1"], &spinning(), |t| {
        let first = Arc::new(AtomicU64::new(0));
        let second = Arc::new(AtomicU64::new(0));
        let f = first.clone();
        t.set_handler(
            3,
            Arc::new(move |_, _| {
                f.fetch_add(1, Ordering::Release);
            }),
        )
        .unwrap();
        t.barrier().unwrap();
        for round in 1..=20u64 {
            if t.rank() == 0 {
                t.signal(1, 3, &[], Options::default()).unwrap();
            }
            if t.rank() == 1 {
                let c = if round <= 10 { &first } else { &second };
                let want = if round <= 10 { round } else { round - 10 };
                // Bounded, and no early return: the peer waits at the
                // barrier below, and the counts say what went wrong.
                let _ = t.wait_word_timeout(c, |v| v >= want, Duration::from_secs(2));
                if round == 10 {
                    let s = second.clone();
                    t.set_handler(
                        3,
                        Arc::new(move |_, _| {
                            s.fetch_add(1, Ordering::Release);
                        }),
                    )
                    .unwrap();
                }
            }
            t.barrier().unwrap();
        }
        (
            first.load(Ordering::Acquire),
            second.load(Ordering::Acquire),
        )
    });
    assert_eq!(got[1], (10, 10), "signals per handler");
}

/// A wait whose condition already holds still sends what was held back
/// for batching: the peer may wait for it. A barrier's last arrival
/// record, held behind the pages it pushed until the peer's delayed ack
/// came (200 µs later), cost DSM laplace across two hosts a third of its
/// time.
#[test]
fn a_wait_already_over_sends_what_was_held_back() {
    let sent = on_both(HOSTS, &TaskConfig::default(), |t| {
        let seg = t.alloc(1 << 16, Perm::ALL).unwrap();
        let all = t.exchange(&seg).unwrap();
        let peer = all[1 - t.rank() as usize];
        t.barrier().unwrap();
        let sent = if t.rank() == 0 {
            let before = t.stats().packets_sent;
            // The second is held while the first is unacknowledged.
            t.write(peer.at(4096), &[7u8; 4096], Options::default())
                .unwrap();
            t.write(
                peer.at(64),
                &1u64.to_le_bytes(),
                Options::notify(peer.at(0)),
            )
            .unwrap();
            let over = std::sync::atomic::AtomicU64::new(1);
            t.wait_word(&over, |v| v == 1);
            t.stats().packets_sent - before
        } else {
            t.wait_word(seg.word(0).unwrap(), |v| v >= 1);
            0
        };
        t.barrier().unwrap();
        sent
    });
    assert!(
        sent[0] >= 2,
        "datagrams sent before the wait returned: {}",
        sent[0]
    );
}

/// Pins the calling thread to the first CPU it may use.
fn pin_to_first_cpu() {
    #[allow(unsafe_code)]
    // SAFETY: an all-zero cpu_set_t is the empty set; the kernel writes
    // and reads size_of::<cpu_set_t>() bytes of `set`; CPU_ISSET and
    // CPU_SET are given indices below CPU_SETSIZE.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        let size = std::mem::size_of::<libc::cpu_set_t>();
        assert_eq!(libc::sched_getaffinity(0, size, &mut set), 0);
        let cpu = (0..libc::CPU_SETSIZE as usize)
            .find(|&i| libc::CPU_ISSET(i, &set))
            .expect("a CPU");
        let mut one: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut one);
        assert_eq!(libc::sched_setaffinity(0, size, &one), 0);
    }
}

/// Two tasks that start on one CPU, free to run on every CPU, end on
/// different ones: their waits move a thread whose hand-overs keep
/// giving its CPU away (the kernel left two ping-ponging tasks on one
/// CPU for whole runs: 0.38 µs an MPI message one way against 0.15).
/// Once apart, waits no longer last: few hand-overs.
#[test]
fn waiters_sharing_a_cpu_move_apart() {
    if allowed_cpus().len() < 2 {
        return;
    }
    const ROUNDS: u64 = 20_000;
    let got = on_both(&["127.0.0.1"], &TaskConfig::default(), move |t| {
        let cpus = allowed_cpus();
        pin_to_first_cpu();
        let seg = t.alloc(4096, Perm::ALL).unwrap();
        let all = t.exchange(&seg).unwrap();
        let peer = all[1 - t.rank() as usize];
        let flag = seg.word(0).unwrap();
        t.barrier().unwrap();
        // Both on the first CPU, allowed on all of them again.
        unpin(&cpus);
        let before = t.stats();
        for i in 1..=ROUNDS {
            let ping = || {
                t.write(peer.at(64), &i.to_le_bytes(), Options::notify(peer.at(0)))
                    .unwrap()
            };
            if t.rank() == 0 {
                ping();
                t.wait_word(flag, |v| v >= i);
            } else {
                t.wait_word(flag, |v| v >= i);
                ping();
            }
        }
        let after = t.stats();
        // SAFETY: no arguments.
        #[allow(unsafe_code)]
        let cpu = unsafe { libc::sched_getcpu() };
        t.barrier().unwrap();
        (
            cpu,
            after.moves - before.moves,
            after.handovers - before.handovers,
        )
    });
    let (cpu0, cpu1) = (got[0].0, got[1].0);
    assert_ne!(cpu0, cpu1, "both tasks still on CPU {cpu0}: {got:?}");
    let handovers: u64 = got.iter().map(|g| g.2).sum();
    assert!(
        handovers < ROUNDS / 10,
        "hand-overs in {ROUNDS} round trips: {got:?}"
    );
}

/// The CPUs the calling thread may run on.
fn allowed_cpus() -> Vec<usize> {
    #[allow(unsafe_code)]
    // SAFETY: an all-zero cpu_set_t is the empty set; the kernel writes
    // at most size_of::<cpu_set_t>() bytes into it; CPU_ISSET gets
    // indices below CPU_SETSIZE.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        let size = std::mem::size_of::<libc::cpu_set_t>();
        assert_eq!(libc::sched_getaffinity(0, size, &mut set), 0);
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&i| libc::CPU_ISSET(i, &set))
            .collect()
    }
}

/// Lets the calling thread run on `cpus` again.
fn unpin(cpus: &[usize]) {
    #[allow(unsafe_code)]
    // SAFETY: an all-zero cpu_set_t is the empty set; CPU_SET gets
    // indices below CPU_SETSIZE (they came from the kernel's own set);
    // the kernel reads size_of::<cpu_set_t>() bytes of `set`.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus {
            libc::CPU_SET(c, &mut set);
        }
        assert_eq!(
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set),
            0
        );
    }
}

/// Round trips between two tasks on `nodes` pinned to one CPU, each
/// waiting with `wait` (given the flag, the value and the partner);
/// returns what `count` grew by in each task.
fn one_cpu_pingpong(
    nodes: &[&str],
    wait: fn(&Task, &std::sync::atomic::AtomicU64, u64, u32),
    count: fn(&sss_mbcf::TaskStats) -> u64,
) -> Vec<u64> {
    on_both(nodes, &TaskConfig::default(), move |t| {
        pin_to_first_cpu();
        let seg = t.alloc(4096, Perm::ALL).unwrap();
        let all = t.exchange(&seg).unwrap();
        let peer = all[1 - t.rank() as usize];
        let flag = seg.word(0).unwrap();
        let other = 1 - t.rank();
        t.barrier().unwrap();
        let before = count(&t.stats());
        for i in 1..=ONE_CPU_ROUNDS {
            let ping = || {
                t.write(peer.at(64), &i.to_le_bytes(), Options::notify(peer.at(0)))
                    .unwrap()
            };
            if t.rank() == 0 {
                ping();
                wait(&t, flag, i, other);
            } else {
                wait(&t, flag, i, other);
                ping();
            }
        }
        let grew = count(&t.stats()) - before;
        t.barrier().unwrap();
        grew
    })
}

const ONE_CPU_ROUNDS: u64 = 200;

/// Two tasks that ping-pong on one CPU (the kernel puts a woken thread
/// where its waker runs, and left both there for milliseconds while the
/// other CPU idled) hand the CPU over: a wait that lasts yields. Before,
/// each wait spun its whole budget while the answer could not be
/// computed, then blocked: every wait blocked, 0.26 ms a message on one
/// node, 0.49 ms a round trip over udp.
#[test]
fn waiters_sharing_a_cpu_hand_it_over() {
    for nodes in [&["127.0.0.1"][..], HOSTS] {
        let blocked = one_cpu_pingpong(
            nodes,
            |t, flag, i, _| {
                t.wait_word(flag, |v| v >= i);
            },
            |s| s.blocked_waits,
        );
        let all: u64 = blocked.iter().sum();
        assert!(
            all <= ONE_CPU_ROUNDS / 10,
            "blocked waits in {ONE_CPU_ROUNDS} round trips on one CPU ({nodes:?}): {blocked:?}"
        );
    }
}

/// SS-Wait on one node spins while its partner is awake. With both
/// tasks on one CPU the partner is awake but cannot run: each wait spun
/// `SSS_SSWAIT_SPIN_US` (2 ms) at a time until the kernel preempted it,
/// 8 ms a round trip. A wait that lasts now hands the CPU over.
#[test]
fn sswaiters_sharing_a_cpu_hand_it_over() {
    let handed = one_cpu_pingpong(
        &["127.0.0.1"],
        |t, flag, i, other| {
            t.sswait(flag, other, |v| v >= i);
        },
        |s| s.handovers,
    );
    // On one CPU most waits find the answer only after handing over.
    let all: u64 = handed.iter().sum();
    assert!(
        all >= ONE_CPU_ROUNDS,
        "hand-overs in {ONE_CPU_ROUNDS} round trips: {handed:?}"
    );
}
