//! Writes the seed corpus of the `gossip` fuzz target.
//!
//! ```text
//! cargo run -p sss-idm --example gen_gossip_corpus [OUT_DIR]
//! ```
//!
//! Gossip datagrams of a few node pages (empty, busy with tasks, down, a
//! name of the full 32 bytes), tagged under the target's fixed secret (32
//! bytes of 0x5a), each also as a bare page behind the `P` prefix the
//! target reads as "page in a well-formed datagram". `OUT_DIR` defaults to
//! `fuzz/corpus/gossip` at the workspace root.

use std::path::PathBuf;

use sss_idm::gossip::{encode, GossipKey};
use sss_idm::secret::ClusterSecret;
use sss_mbcf::idm::{NodeData, TaskEntry, NODE_DOWN, NODE_VALID};

fn main() {
    let out = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/gossip")
        });
    std::fs::create_dir_all(&out).expect("create output directory");
    let mut pages = Vec::new();
    let mut empty = NodeData::default();
    empty.set_name("127.0.0.1");
    pages.push(("empty", empty));
    let mut busy = empty;
    busy.set_name("10.1.2.3");
    busy.flags = NODE_VALID;
    busy.ncpus = 8;
    busy.runnable = 9;
    busy.ntasks = 3;
    busy.load = [1500, 1200, 900];
    busy.mem_total_kb = 16 << 20;
    busy.mem_free_kb = 3 << 20;
    for (i, t) in busy.tasks.iter_mut().take(3).enumerate() {
        *t = TaskEntry {
            job: 77,
            rank: i as u32,
            pid: 1000 + i as u32,
            state: 1 + i as u32,
            progress: 5 * i as u64,
        };
    }
    pages.push(("busy", busy));
    let mut down = busy;
    down.flags = NODE_VALID | NODE_DOWN;
    down.ntasks = u32::MAX;
    pages.push(("down-ntasks-max", down));
    let mut long = empty;
    long.set_name("node-with-a-name-of-32-bytes.lab");
    pages.push(("long-name", long));
    for (name, page) in &pages {
        let write = |kind: &str, bytes: Vec<u8>| {
            let path = out.join(format!("seed-{kind}-{name}"));
            std::fs::write(&path, bytes)
                .unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
        };
        // The fuzz target's secret (fuzz_targets/gossip.rs).
        let key = GossipKey::new(&ClusterSecret::from_bytes([0x5a; 32]));
        write("datagram", encode(&key, page.name(), page, 1 << 60));
        let mut p = b"P".to_vec();
        p.extend_from_slice(&page.to_bytes());
        write("page", p);
    }
    eprintln!("wrote {} seeds to {}", 2 * pages.len(), out.display());
}
