//! Deterministic counts that guard the udp operation path (no timings):
//! an 8-byte WRITE with notify, carried and applied, and its ack
//! piggybacked on the answer, allocates nothing on either side once the
//! tasks are warm. Before, every such WRITE cost three allocations at the
//! sender (the payload's shared copy and two vectors of packets) and
//! their frees, and the progress thread two vectors per poll.

use sss_mbcf::{Options, Perm, Task, TaskConfig, ThreadBoot};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Counts allocations while `COUNTING` is set, in every thread.
struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);
static COUNTING: AtomicBool = AtomicBool::new(false);

// SAFETY: forwards every call to the system allocator unchanged.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            ALLOCS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: the caller's contract is the system allocator's.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            ALLOCS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: as above.
        unsafe { System.realloc(p, l, n) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const ROUNDS: u64 = 3000;

#[test]
fn a_small_write_ping_pong_over_udp_allocates_nothing() {
    let boots = ThreadBoot::group(2, &["127.0.0.2", "127.0.0.3"]);
    let gate = std::sync::Arc::new(std::sync::Barrier::new(2));
    let hs: Vec<_> = boots
        .into_iter()
        .map(|b| {
            let gate = gate.clone();
            std::thread::spawn(move || {
                let t = Task::join(Box::new(b), TaskConfig::from_env().unwrap()).unwrap();
                let seg = t.alloc(4096, Perm::ALL).unwrap();
                let all = t.exchange(&seg).unwrap();
                let peer = all[1 - t.rank() as usize];
                let flag = seg.word(0).unwrap();
                let round = |t: &Task, i: u64| {
                    let ping = |t: &Task| {
                        t.write(peer.at(64), &i.to_le_bytes(), Options::notify(peer.at(0)))
                            .unwrap()
                    };
                    if t.rank() == 0 {
                        ping(t);
                        t.wait_word(flag, |v| v >= i);
                    } else {
                        t.wait_word(flag, |v| v >= i);
                        ping(t);
                    }
                };
                // Warm: buffers, maps and keys are made on first use.
                for i in 1..=200 {
                    round(&t, i);
                }
                gate.wait();
                if t.rank() == 0 {
                    COUNTING.store(true, Ordering::SeqCst);
                }
                gate.wait();
                let before = t.stats();
                for i in 201..=200 + ROUNDS {
                    round(&t, i);
                }
                let after = t.stats();
                gate.wait();
                COUNTING.store(false, Ordering::SeqCst);
                t.barrier().unwrap();
                (
                    after.packets_sent - before.packets_sent,
                    after.retransmissions - before.retransmissions,
                )
            })
        })
        .collect();
    let sent: Vec<(u64, u64)> = hs.into_iter().map(|h| h.join().unwrap()).collect();
    let allocs = ALLOCS.load(Ordering::SeqCst);
    eprintln!("{allocs} allocations, datagrams and retransmissions {sent:?}");
    // Acks ride on the answers: one datagram per WRITE each way on a quiet
    // machine. On a loaded one a waiter that blocks past the ack delay
    // gets a bare ack (3479 datagrams for 3000 WRITEs seen beside a build),
    // never more than one per WRITE.
    for &(packets, retx) in &sent {
        assert!(
            packets <= 2 * ROUNDS,
            "{packets} datagrams for {ROUNDS} WRITEs"
        );
        assert!(retx <= ROUNDS / 50, "{retx} retransmissions");
    }
    // Every round trip is two WRITEs; a few allocations may come from a
    // retransmission, a preempted waiter leaving the socket to the
    // progress thread, or a rare timer.
    assert!(
        allocs <= ROUNDS / 10,
        "{allocs} allocations in {ROUNDS} round trips"
    );
}
