//! Gossip packets: a node page carried as a no-flow-control MBCF WRITE
//! from one daemon to another (job 0 is the system's; a daemon's rank is
//! the FNV-1a hash of its node name). The key is public: pages are
//! disclosed information by design.

use sss_mbcf::idm::NodeData;
use sss_wire::{Body, Flags, Frag, Packet, Status, TaskId};

/// Key of gossip writes.
pub const GOSSIP_KEY: u64 = 0x5353_4944_474f_5353;

/// The daemon id of a node.
pub fn daemon_id(node: &str) -> TaskId {
    TaskId::new(0, sss_boot::job_id_from_key(node))
}

/// A gossip datagram carrying `page`.
pub fn encode(node: &str, page: &NodeData) -> Vec<u8> {
    let payload = page.to_bytes();
    let p = Packet {
        src: daemon_id(node),
        dst: TaskId::new(0, 0),
        epoch: 0,
        seq: 0,
        ack: None,
        op: 0,
        flags: Flags {
            nofc: true,
            status_return: false,
        },
        status: Status::Ok,
        key: GOSSIP_KEY,
        addr: 0,
        frag: Frag::SINGLE,
        body: Body::Write { notify: None },
        payload: &payload,
    };
    p.to_vec().unwrap_or_default()
}

/// The page in a gossip datagram; `None` for anything else.
pub fn decode(b: &[u8]) -> Option<NodeData> {
    let p = Packet::parse(b).ok()?;
    if p.key != GOSSIP_KEY || !p.flags.nofc || p.body != (Body::Write { notify: None }) {
        return None;
    }
    let page = NodeData::from_bytes(p.payload)?;
    (p.src == daemon_id(page.name())).then_some(page)
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
