//! `Task::fifo_sender`: a same-node peer's FIFO opened once and pushed
//! into straight. What it must keep from `Task::fifo_push`: order, the
//! errors a push reports, the peer's counts; and what it must not do to
//! a peer that spins: write the line its blocked waiters sleep on.

use sss_mbcf::{Error, Perm, RemoteAddr, Status, Task, TaskConfig, ThreadBoot};
use std::time::Duration;

fn pair(nodes: &[&str]) -> Vec<Task> {
    ThreadBoot::join_all(2, nodes, &TaskConfig::default())
        .into_iter()
        .map(|t| t.expect("join"))
        .collect()
}

const SLOTS: u32 = 64;
const MAX: usize = 256;

/// A FIFO of task 1 in a segment with `perm`; its address, and the
/// segment (dropped: freed by the task when it ends).
fn queue(t: &Task, perm: Perm) -> (sss_mbcf::Fifo, sss_mbcf::Segment, RemoteAddr) {
    let seg = t.alloc(sss_mbcf::fifo_bytes(SLOTS, MAX), perm).unwrap();
    let f = t.fifo_create(&seg, 0, SLOTS, MAX).unwrap();
    let at = f.addr();
    (f, seg, at)
}

#[test]
fn pushes_through_an_opened_queue_arrive_in_order_and_leave_a_spinning_peer_unwoken() {
    let t = pair(&["127.0.0.1"]);
    let (mut fifo, _seg, at) = queue(&t[1], Perm::WRITE);
    let sender = t[0].fifo_sender(at).unwrap().expect("same-node queue");
    assert_eq!(sender.addr(), at);
    let view = sss_mbcf::node::TaskView::open(t[1].job(), 1, t[1].ctl_tag(1).unwrap()).unwrap();
    let (events, applied) = (view.events(), view.applied_by_peers());
    const N: u32 = 1000;
    std::thread::scope(|s| {
        s.spawn(|| {
            for i in 0..N {
                loop {
                    match sender.push(&i.to_le_bytes()) {
                        Ok(()) => break,
                        Err(Error::Remote(Status::FifoFull)) => std::thread::yield_now(),
                        Err(e) => panic!("push {i}: {e}"),
                    }
                }
            }
        });
        // Popped without waiting: no thread of task 1 ever blocks.
        let mut buf = Vec::new();
        for i in 0..N {
            let from = loop {
                if let Some(r) = fifo.pop(&mut buf) {
                    break r;
                }
                std::hint::spin_loop();
            };
            assert_eq!(from, 0);
            assert_eq!(buf, i.to_le_bytes(), "message {i}");
        }
    });
    assert_eq!(view.applied_by_peers() - applied, u64::from(N));
    // Nobody blocked: no bump of the event word, no wake-up.
    assert_eq!(view.events(), events);
}

#[test]
fn a_blocked_waiter_is_woken_by_a_push() {
    let t = pair(&["127.0.0.1"]);
    let (mut fifo, _seg, at) = queue(&t[1], Perm::WRITE);
    let sender = t[0].fifo_sender(at).unwrap().unwrap();
    let view = sss_mbcf::node::TaskView::open(t[1].job(), 1, t[1].ctl_tag(1).unwrap()).unwrap();
    std::thread::scope(|s| {
        let waiter = s.spawn(|| {
            let (mut buf, probe) = (Vec::new(), fifo.probe());
            for i in 0u32..20 {
                t[1].wait_word_with(
                    &std::sync::atomic::AtomicU64::new(0),
                    |_| probe.ready(),
                    sss_mbcf::WaitPolicy::Block,
                );
                assert_eq!(fifo.pop(&mut buf), Some(0));
                assert_eq!(buf, i.to_le_bytes());
            }
        });
        for i in 0u32..20 {
            // Until the waiter sleeps: the push must wake it.
            while view.blocked() == 0 {
                std::thread::sleep(Duration::from_millis(1));
            }
            sender.push(&i.to_le_bytes()).unwrap();
        }
        waiter.join().unwrap();
    });
}

#[test]
fn a_queue_across_the_network_is_not_opened() {
    let t = pair(&["127.0.0.2", "127.0.0.3"]);
    let (_fifo, _seg, at) = queue(&t[1], Perm::WRITE);
    assert!(t[0].fifo_sender(at).unwrap().is_none());
}

#[test]
fn a_queue_without_write_permission_is_refused_as_a_push_would_be() {
    let t = pair(&["127.0.0.1"]);
    let (_fifo, _seg, at) = queue(&t[1], Perm::READ);
    let opened = t[0].fifo_sender(at).map(|s| s.is_some());
    let opts = sss_mbcf::Options {
        status_return: true,
        ..sss_mbcf::Options::default()
    };
    let pushed = t[0]
        .fifo_push(at, b"x", opts)
        .and_then(sss_mbcf::Request::wait);
    assert!(
        matches!(opened, Err(Error::Remote(Status::NoPermission))),
        "{opened:?}"
    );
    assert!(matches!(pushed, Err(Error::Remote(Status::NoPermission))));
}

#[test]
fn a_queue_freed_after_it_was_opened_is_reported_as_a_push_would_be() {
    let t = pair(&["127.0.0.1"]);
    let (fifo, seg, at) = queue(&t[1], Perm::WRITE);
    let sender = t[0].fifo_sender(at).unwrap().unwrap();
    sender.push(b"before").unwrap();
    drop(fifo);
    t[1].free(seg).unwrap();
    let r = sender.push(b"after");
    assert!(matches!(r, Err(Error::Remote(Status::BadKey))), "{r:?}");
}
