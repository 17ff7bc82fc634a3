//! Large messages to a task on the same node that the receiver reads
//! straight from the sender's buffer (`process_vm_readv`): one copy where
//! staging makes two (into the segment, then out of it, mapped), and no
//! staging memory to fault in. Only for sends whose caller leaves the
//! buffer alone until the send completes, at the receiver's FIN, as
//! all-to-all does (it waits for its sends before it returns); any other
//! send is staged, since it may complete before its receiver took it.
//! The read itself is `buf::read_peer`.

use super::{Engine, Req, ReqKind, SendWait};
use crate::envelope::{Env, Kind, FLAG_PEER_READ};
use crate::objects::St;

/// Smallest message read from the sender's buffer. Below it the two
/// copies through staging mostly stay in the caches and a ping-pong
/// measured them faster than `process_vm_readv` (docs/mpi.md); from about
/// 1 MiB on the single copy wins (8 MiB: 1.2 ms against 1.8).
pub(crate) const PEER_READ_MIN: usize = 1 << 20;

impl Engine {
    /// Starts send `id` of `data` to world rank `w` announced for the
    /// receiver to read from `data` itself; false (nothing sent) when
    /// `w` is not another task on this node, `data` is shorter than
    /// [`PEER_READ_MIN`] or the node does not let peers read this
    /// process (`buf::peer_reads_allowed`, which the receiver's read
    /// needs of the sender). The caller keeps `data` unchanged and in place
    /// until the request completes (at the receiver's FIN).
    pub(crate) fn send_lent(
        &mut self,
        comm: usize,
        ctx: u32,
        w: u32,
        tag: i32,
        data: &[u8],
        id: usize,
    ) -> bool {
        if w == self.rank
            || data.len() < PEER_READ_MIN
            || self.task.transport_to(w) != Some(sss_mbcf::TransportKind::Shm)
            || self.task.pid_of(w).is_none()
            || !crate::buf::peer_reads_allowed()
        {
            return false;
        }
        let env = Env {
            kind: Kind::Rts,
            flags: FLAG_PEER_READ,
            ctx,
            tag,
            len: data.len() as u64,
            sreq: id as u64,
            key: 0,
            addr: data.as_ptr() as u64,
        };
        self.stats.sent(data.len(), false);
        self.add_req(
            id,
            Req {
                comm,
                done: false,
                status: St::default(),
                peer: Some(w),
                kind: ReqKind::Send {
                    dest: w,
                    wait: SendWait::Fin,
                },
            },
        );
        self.enqueue(w, env.encode(&[]), None);
        true
    }

    /// The process of same-node task `src`, to read a message from.
    pub(super) fn peer_pid(&self, src: u32) -> Option<u32> {
        if self.task.transport_to(src) != Some(sss_mbcf::TransportKind::Shm) {
            return None;
        }
        self.task.pid_of(src)
    }
}
