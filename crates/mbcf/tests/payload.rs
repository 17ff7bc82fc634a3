//! Datagrams sized to the routes: on loopback "hosts" (127.0.0.2 and
//! 127.0.0.3) a task fills a jumbo frame, an explicit payload wins, and a
//! 64 KiB WRITE leaves in as many datagrams as its payload makes.

use sss_mbcf::{payload_for_mtu, Options, Perm, Security, Task, TaskConfig, ThreadBoot};

/// Loopback's MTU, as the kernel's routes over it have it.
fn lo_mtu() -> usize {
    std::fs::read_to_string("/sys/class/net/lo/mtu")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(65536)
}

/// Two tasks on two loopback hosts; rank 0 WRITEs 64 KiB `writes` times.
/// Returns (payload, datagrams rank 0 sent).
fn job(cfg: TaskConfig, writes: usize) -> (usize, u64) {
    let boots = ThreadBoot::group(2, &["127.0.0.2", "127.0.0.3"]);
    let hs: Vec<_> = boots
        .into_iter()
        .map(|b| {
            let cfg = cfg.clone();
            std::thread::spawn(move || {
                let t = Task::join(Box::new(b), cfg).unwrap();
                let seg = t.alloc(1 << 16, Perm::ALL).unwrap();
                let all = t.exchange(&seg).unwrap();
                t.barrier().unwrap();
                let before = t.stats().packets_sent;
                if t.rank() == 0 {
                    let data = vec![9u8; 1 << 16];
                    for _ in 0..writes {
                        t.write(all[1].at(0), &data, Options::default()).unwrap();
                    }
                    t.quiet().unwrap();
                }
                let sent = t.stats().packets_sent - before;
                t.barrier().unwrap();
                if t.rank() == 1 {
                    let mut b = vec![0u8; 1 << 16];
                    seg.read_bytes(0, &mut b).unwrap();
                    assert!(writes == 0 || b.iter().all(|&x| x == 9));
                }
                (t.payload(), sent)
            })
        })
        .collect();
    let mut out = hs.into_iter().map(|h| h.join().unwrap());
    out.next().unwrap()
}

#[test]
fn loopback_hosts_fill_a_jumbo_frame() {
    let cfg = TaskConfig::default();
    let want = payload_for_mtu(lo_mtu(), false, Security::Auth);
    let writes = 20;
    let (payload, sent) = job(cfg, writes);
    assert_eq!(payload, want);
    // Data datagrams, and a few acknowledgements or probes at most.
    let data = (writes * (1usize << 16).div_ceil(payload)) as u64;
    assert!(
        sent >= data && sent <= data + data / 4 + 8,
        "{sent} datagrams for {data} of data"
    );
}

#[test]
fn an_explicit_payload_is_kept() {
    let mut cfg = TaskConfig {
        route_payload: false,
        ..TaskConfig::default()
    };
    cfg.proto.payload_size = 1000;
    let (payload, sent) = job(cfg, 2);
    assert_eq!(payload, 1000);
    assert!(sent >= 2 * 66, "{sent}");
}
