//! Hostile contents of shared structures: memory peers may write (FIFO
//! headers in a segment with WRITE, control blocks and IDM pages of
//! processes that died mid-update), and hostile datagrams. Each case gets
//! a clear status, is counted, never panics, never writes outside what was
//! checked and never hangs.

use sss_mbcf::{Error, Options, Perm, Status, Task, TaskConfig, ThreadBoot};

fn cluster(n: u32, nodes: &[&str], cfg: TaskConfig) -> Vec<Task> {
    ThreadBoot::join_all(n, nodes, &cfg)
        .into_iter()
        .map(|t| t.expect("join"))
        .collect()
}

/// Two nodes over udp, and one node over shm.
fn each_transport(f: impl Fn(&[Task], &str)) {
    for (nodes, what) in [
        (&["127.0.0.2", "127.0.0.3"][..], "udp"),
        (&["127.0.0.1"][..], "shm"),
    ] {
        let t = cluster(2, nodes, TaskConfig::default());
        f(&t, what);
    }
}

const SEG: usize = 4096;
const GUARD: u8 = 0xa5;

/// Regression (issue 12, item 3): the FIFO geometry was re-read from the
/// segment on every push, so a peer with WRITE that set `slot_size = 8`
/// made the next push write past the range the receiver had checked (and
/// report success), and hostile indices hung or overflowed the pusher.
#[test]
fn a_fifo_header_rewritten_by_a_peer_is_refused_and_nothing_outside_is_written() {
    each_transport(|t, what| {
        let seg = t[0].alloc(SEG, Perm::ALL).unwrap();
        let info = seg.info();
        // 4 slots of 32-byte messages: 64-byte slots, 448 bytes in all.
        let at = t[0].fifo_create(&seg, 0, 4, 32).unwrap().addr();
        let poke = |off: u64, bytes: &[u8]| {
            t[1].write(info.at(off), bytes, Options::status())
                .unwrap()
                .wait()
                .unwrap();
        };
        let guard_from = |from: usize| {
            seg.write_bytes(from, &vec![GUARD; SEG - from]).unwrap();
        };
        let guard_intact = |from: usize| {
            let mut b = vec![0u8; SEG - from];
            seg.read_bytes(from, &mut b).unwrap();
            b.iter().all(|&x| x == GUARD)
        };
        let push = |len: usize| {
            t[1].fifo_push(at, &vec![7u8; len], Options::status())
                .unwrap()
                .wait()
        };
        let rejected0 = t[0].stats().rejected;

        // slot_size = 8: the checked ring is 192 + 4 * 8 = 224 bytes; a
        // 100-byte push used to land at 208..324.
        poke(4, &8u32.to_le_bytes());
        guard_from(224);
        let r = push(100);
        assert!(
            matches!(r, Err(Error::Remote(Status::Unsupported))),
            "{what}: slot_size 8: {r:?}"
        );
        assert!(
            guard_intact(224),
            "{what}: bytes past the checked ring written"
        );

        // A slot count that is no power of two.
        poke(4, &48u32.to_le_bytes());
        poke(8, &3u32.to_le_bytes());
        let r = push(8);
        assert!(
            matches!(r, Err(Error::Remote(Status::Unsupported))),
            "{what}: 3 slots: {r:?}"
        );

        // A huge slot count: the ring would leave the segment.
        poke(8, &0x8000_0000u32.to_le_bytes());
        let r = push(8);
        assert!(
            matches!(r, Err(Error::Remote(Status::OutOfBounds))),
            "{what}: huge ring: {r:?}"
        );

        // Sane geometry, indices out of any range: the tail far ahead of
        // every sequence word used to spin the pusher forever.
        let _q = t[0].fifo_create(&seg, 0, 4, 32).unwrap();
        guard_from(448);
        poke(128, &(u64::MAX - 1).to_le_bytes());
        poke(64, &5u64.to_le_bytes());
        let r = push(8);
        assert!(
            matches!(r, Err(Error::Remote(Status::FifoFull))),
            "{what}: hostile tail: {r:?}"
        );
        // A tail at the end of the index space with the head just behind
        // it (its slot free): the push wraps instead of overflowing, and
        // stays in the ring.
        poke(128, &u64::MAX.to_le_bytes());
        poke(64, &(u64::MAX - 1).to_le_bytes());
        push(32).unwrap_or_else(|e| panic!("{what}: wrapping push: {e:?}"));
        assert!(guard_intact(448), "{what}: bytes past the ring written");

        let refused = t[0].stats().rejected - rejected0;
        assert_eq!(refused, 4, "{what}: every refusal counted");

        // The receiver lives on: a fresh queue works.
        let mut q = t[0].fifo_create(&seg, 0, 4, 32).unwrap();
        push(32).unwrap();
        let mut out = Vec::new();
        assert_eq!(q.wait_pop(&t[0], &mut out), 1);
        assert_eq!(out, vec![7u8; 32]);
    });
}

/// Runs `f` on a thread of its own and waits at most `secs` for it: a
/// reader that spins forever fails the test instead of hanging it.
fn bounded<T: Send + 'static>(secs: u64, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(std::time::Duration::from_secs(secs))
        .expect("returned in bounded time")
}

fn write_at(path: &std::path::Path, off: u64, bytes: &[u8]) {
    use std::os::unix::fs::FileExt;
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .expect("open the shared file");
    f.write_all_at(bytes, off).expect("write into it");
}

/// Regression (issue 12, item 4): an IDM slot whose sequence word a dying
/// daemon left odd made every reader (the progress threads polling node
/// liveness) spin forever. Now the page reads as stale after a bounded
/// number of tries.
#[test]
fn an_idm_page_left_mid_update_reads_stale_instead_of_spinning() {
    use sss_mbcf::idm::{idm_name, Idm, IdmWriter, NodeData, NODE_VALID, SLOT_BYTES};
    /// Removes the IDM file however the test ends.
    struct Unlink(String);
    impl Drop for Unlink {
        fn drop(&mut self) {
            IdmWriter::unlink(&self.0);
        }
    }
    let node = format!("test-stale-{}", std::process::id());
    let _unlink = Unlink(node.clone());
    let daemon = IdmWriter::create(&node).expect("create the IDM file");
    let mut d = NodeData {
        flags: NODE_VALID,
        ..NodeData::default()
    };
    d.set_name("a-node");
    daemon.write(3, &d);
    daemon.write(4, &d);
    // The daemon dies between making slot 3's word odd and even again.
    let path = sss_mbcf::shm_dir().unwrap().join(idm_name(&node));
    write_at(&path, (64 + 3 * SLOT_BYTES) as u64, &7u64.to_ne_bytes());
    let reader = Idm::open(&node).expect("open");
    let (stale, plain, other, found) = bounded(20, move || {
        (
            reader.read_slot(3),
            reader.read(3),
            reader.read(4),
            reader.find("a-node").map(|(i, _)| i),
        )
    });
    assert_eq!(stale, Err(sss_mbcf::Stale));
    assert_eq!(plain, None, "a stale page is unknown");
    assert_eq!(other, Some(d), "other pages read fine");
    assert_eq!(found, Some(4), "lookups skip the stale page");
    // The next write repairs the slot.
    daemon.write(3, &d);
    assert_eq!(daemon.read(3), Some(d));
}

/// Regression (issue 12, item 4): a same-node peer's segment table entry
/// left mid-update (its task died while publishing) made a sender spin
/// forever. Now the lookup gives up after bounded tries and the operation
/// goes over udp, where the owner checks it itself.
#[test]
fn a_segment_table_left_mid_update_sends_over_udp_instead_of_spinning() {
    use sss_mbcf::node::testing::{ctl_path, SEG_ENTRIES, SEG_ENTRY_BYTES, SEG_TABLE_AT};
    let t = cluster(2, &["127.0.0.1"], TaskConfig::default());
    let seg = t[1].alloc(4096, Perm::ALL).unwrap();
    let info = seg.info();
    t[0].write(info.at(0), b"before", Options::status())
        .unwrap()
        .wait()
        .unwrap();
    let path = ctl_path(t[1].job(), 1, t[1].ctl_tag(1).unwrap()).unwrap();
    for i in 0..SEG_ENTRIES {
        // An odd sequence word: the entry is mid-update.
        let off = SEG_TABLE_AT + i * SEG_ENTRY_BYTES;
        write_at(&path, off as u64, &1u64.to_ne_bytes());
    }
    let (t, r) = bounded(30, move || {
        let r = t[0]
            .write(info.at(0), b"after!", Options::status())
            .and_then(|r| r.wait())
            .and_then(|_| t[0].fetch_add(info.at(8), 5, Options::default()))
            .and_then(|r| r.wait_value());
        (t, r)
    });
    assert_eq!(r.expect("applied over udp"), 0);
    let mut b = [0u8; 6];
    seg.read_bytes(0, &mut b).unwrap();
    assert_eq!(&b, b"after!");
    assert_eq!(
        seg.word(8)
            .unwrap()
            .load(std::sync::atomic::Ordering::Acquire),
        5
    );
    drop(t);
}

/// Regression (issue 12, item 10): over shm, a valid FETCH_ADD (or any
/// operation) on a segment the sender did not find in the owner's
/// published table — beyond its first 256 segments, or moved while the
/// owner republished — was refused with BAD_KEY by the sender's own check.
/// Now the sender hands it to the owner over udp, which applies it.
#[test]
fn over_shm_valid_operations_on_unpublished_segments_are_applied() {
    let t = cluster(2, &["127.0.0.1"], TaskConfig::default());
    let segs: Vec<_> = (0..300)
        .map(|_| t[1].alloc(64, Perm::ALL).unwrap())
        .collect();
    let first = segs[0].info();
    let last = segs[299].info();
    let add = |at| {
        t[0].fetch_add(at, 3, Options::default())
            .unwrap()
            .wait_value()
    };
    assert_eq!(add(first.at(0)).unwrap(), 0, "in the table");
    assert_eq!(add(last.at(0)).unwrap(), 0, "beyond the table");
    assert_eq!(add(last.at(0)).unwrap(), 3);
    t[0].write(last.at(8), b"12345678", Options::status())
        .unwrap()
        .wait()
        .unwrap();
    let mut b = [0u8; 8];
    segs[299].read_bytes(8, &mut b).unwrap();
    assert_eq!(&b, b"12345678");
    // A key that is nowhere is still refused, by the owner, and counted.
    let rejected = t[1].stats().rejected;
    let bad = sss_mbcf::RemoteAddr {
        key: last.key ^ 1,
        ..last.at(0)
    };
    let r = t[0].fetch_add(bad, 1, Options::default()).unwrap().wait();
    assert!(matches!(r, Err(Error::Remote(Status::BadKey))), "{r:?}");
    assert_eq!(t[1].stats().rejected, rejected + 1);
}

/// Read-only memory of this process (a `static` without interior
/// mutability lands in a read-only section).
static READ_ONLY: [u8; 8192] = [7; 8192];

/// Regression (issue 12, item 10): registering an unmapped range was
/// accepted, and the first remote WRITE then killed the owner. Now the
/// range must be mapped with the access the permissions give peers.
#[test]
#[allow(unsafe_code)]
fn registering_unmapped_or_read_only_memory_is_refused() {
    let t = cluster(1, &["127.0.0.1"], TaskConfig::default());
    let invalid = |r: Result<sss_mbcf::Segment, Error>| matches!(r, Err(Error::Invalid(_)));
    // SAFETY (all below): register is refused before anything is exposed,
    // or the range is a static that lives for the whole process and is
    // only exposed for READ.
    // Page 1 is never mapped in a Linux process.
    assert!(invalid(unsafe {
        t[0].register(4096 as *mut u8, 4096, Perm::READ)
    }));
    let ro = READ_ONLY.as_ptr() as *mut u8;
    assert!(invalid(unsafe { t[0].register(ro, 4096, Perm::ALL) }));
    assert!(invalid(unsafe { t[0].register(ro, 4096, Perm::WRITE) }));
    assert!(invalid(unsafe {
        t[0].register(ro, usize::MAX - ro as usize + 2, Perm::READ)
    }));
    let seg = unsafe { t[0].register(ro, 4096, Perm::READ) }.expect("readable");
    let data = t[0]
        .read(seg.info().at(0), 8, Options::default())
        .unwrap()
        .wait_data()
        .unwrap();
    assert_eq!(data, [7; 8]);
    let mut heap = vec![0u64; 1024];
    let rw = unsafe { t[0].register(heap.as_mut_ptr().cast(), 8192, Perm::ALL) };
    assert!(rw.is_ok(), "{rw:?}");
    t[0].free(rw.unwrap()).unwrap();
    drop(heap);
}

/// Waits (bounded) until `done` holds for the task's statistics.
fn stats_until(t: &Task, done: impl Fn(&sss_mbcf::TaskStats) -> bool) -> sss_mbcf::TaskStats {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let s = t.stats();
        if done(&s) || std::time::Instant::now() > deadline {
            return s;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}

/// Regression (issue 12, item 10): a zero-length datagram from anywhere
/// was taken for a same-node doorbell and not counted. Now doorbells are
/// one-byte datagrams no packet can be, and an empty datagram is a bad
/// (or, from a stranger, foreign) packet.
#[test]
fn zero_length_datagrams_are_bad_packets_and_doorbells_are_not() {
    let t = cluster(2, &["127.0.0.1"], TaskConfig::default());
    let to = t[1].local_addr().unwrap();
    let before = t[1].stats();
    let s = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    s.send_to(&[0xdb], to).unwrap(); // a doorbell: wakes, not counted
    s.send_to(&[], to).unwrap();
    s.send_to(&[], to).unwrap();
    // From an address of no member they are dropped as foreign before
    // parsing; either way each is counted, and the doorbell is not.
    let counted = |a: &sss_mbcf::TaskStats| a.bad_packets + a.foreign;
    let after = stats_until(&t[1], |a| counted(a) >= counted(&before) + 2);
    assert_eq!(counted(&after), counted(&before) + 2, "empty datagrams");
    // Real doorbells: signals over shm while the receiver's progress
    // thread sleeps ring it; none of them counts as bad.
    let ran = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let r2 = ran.clone();
    t[1].set_handler(
        1,
        std::sync::Arc::new(move |_: &sss_mbcf::SignalContext<'_>, _: &[u8]| {
            r2.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }),
    )
    .unwrap();
    for _ in 0..20 {
        t[0].signal(1, 1, b"x", Options::status())
            .unwrap()
            .wait()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while ran.load(std::sync::atomic::Ordering::Relaxed) < 20
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    assert_eq!(ran.load(std::sync::atomic::Ordering::Relaxed), 20);
    assert_eq!(counted(&t[1].stats()), counted(&before) + 2);
}

/// Mappings of task `rank`'s segments in this process whose files are
/// gone (freed segments still held).
fn freed_still_mapped(job: u32, rank: u32) -> usize {
    let prefix = format!("/sss-{job}-{rank}-seg");
    std::fs::read_to_string("/proc/self/maps")
        .unwrap()
        .lines()
        .filter(|l| l.contains(&prefix) && l.ends_with("(deleted)"))
        .count()
}

/// Regression: a task kept its mapping of every same-node peer's segment
/// it had ever reached, also after the peer freed it, so the freed pages
/// stayed allocated. An MPI rank streaming 4 MiB messages to a rank on
/// its node (the sender's staging cycles through segments) grew to
/// gigabytes. Mappings of freed segments are now dropped.
#[test]
fn mappings_of_freed_peer_segments_are_dropped() {
    let ts = cluster(2, &["127.0.0.1"], TaskConfig::default());
    let job = ts[0].job();
    for round in 0..200u64 {
        let seg = ts[0].alloc(1 << 16, Perm::ALL).unwrap();
        let info = seg.info();
        ts[1]
            .write(info.at(8), &round.to_le_bytes(), Options::default())
            .unwrap();
        ts[1].quiet().unwrap();
        assert_eq!(
            seg.word(8)
                .unwrap()
                .load(std::sync::atomic::Ordering::Acquire),
            round
        );
        let (map, base) = ts[1].map_peer_key(0, info.key).unwrap();
        assert_eq!(base, info.base);
        drop(map);
        ts[0].free(seg).unwrap();
    }
    let held = freed_still_mapped(job, 0);
    assert!(held <= 32, "{held} freed segments still mapped");
}

/// A peer's table entry left mid-update made every prune of the mappings
/// give up, so freed segments piled up again. An entry that cannot be
/// read now counts as not published.
#[test]
fn a_table_entry_left_mid_update_does_not_stop_pruning() {
    use sss_mbcf::node::testing::{ctl_path, SEG_ENTRIES, SEG_ENTRY_BYTES, SEG_TABLE_AT};
    let ts = cluster(2, &["127.0.0.1"], TaskConfig::default());
    let job = ts[0].job();
    let path = ctl_path(job, 0, ts[0].ctl_tag(0).unwrap()).unwrap();
    // The last entry: never used by the few segments alive here.
    let stuck = (SEG_TABLE_AT + (SEG_ENTRIES - 1) * SEG_ENTRY_BYTES) as u64;
    for _ in 0..200 {
        let seg = ts[0].alloc(1 << 16, Perm::ALL).unwrap();
        // Every publish rewrites every entry: leave it odd again.
        write_at(&path, stuck, &1u64.to_ne_bytes());
        let (map, _) = ts[1].map_peer_key(0, seg.info().key).unwrap();
        drop(map);
        ts[0].free(seg).unwrap();
    }
    let held = freed_still_mapped(job, 0);
    assert!(held <= 32, "{held} freed segments still mapped");
}
