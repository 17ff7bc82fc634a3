//! What is IDM's own in gossip: a node page carried as the payload of a
//! no-flow-control MBCF WRITE ([`sss_mbcf::nofc`], which builds and checks
//! the packet) from one daemon to another. Job 0 is the system's; a
//! daemon's rank is the FNV-1a hash of its node name, and rank 0 stands
//! for whichever daemon receives the datagram (a daemon knows its peers
//! by address only). The key is public: pages are disclosed information
//! by design.

use sss_mbcf::idm::NodeData;
use sss_mbcf::nofc::{self, Inbox, Write};
use sss_mbcf::TaskId;

/// Key of gossip writes.
pub const GOSSIP_KEY: u64 = 0x5353_4944_474f_5353;

/// What a daemon accepts: gossip writes to any daemon.
pub const INBOX: Inbox = Inbox {
    dst: TaskId::new(0, 0),
    key: GOSSIP_KEY,
};

/// The daemon id of a node.
pub fn daemon_id(node: &str) -> TaskId {
    TaskId::new(0, sss_boot::job_id_from_key(node))
}

/// A gossip datagram carrying `page`.
pub fn encode(node: &str, page: &NodeData) -> Vec<u8> {
    let payload = page.to_bytes();
    nofc::encode(&Write {
        src: daemon_id(node),
        dst: INBOX.dst,
        key: INBOX.key,
        addr: 0,
        payload: &payload,
    })
    .unwrap_or_default()
}

/// The page a gossip write carries: `None` unless the payload is a page,
/// written at 0, by its own node's daemon.
pub fn page(w: &Write<'_>) -> Option<NodeData> {
    if w.addr != 0 {
        return None;
    }
    let page = NodeData::from_bytes(w.payload)?;
    (w.src == daemon_id(page.name())).then_some(page)
}

/// The page in a gossip datagram; `None` for anything else.
pub fn decode(b: &[u8]) -> Option<NodeData> {
    page(&nofc::decode(b, &INBOX).ok()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_survive_the_wire_and_garbage_is_refused() {
        let mut d = NodeData::default();
        d.set_name("127.0.0.9");
        d.ncpus = 4;
        d.tasks[0].pid = 77;
        let b = encode("127.0.0.9", &d);
        assert_eq!(decode(&b), Some(d));
        assert_eq!(decode(&b[..b.len() - 1]), None);
        assert_eq!(
            decode(&encode("127.0.0.8", &d)),
            None,
            "name must match the sender"
        );
    }
}
