//! Matched probes (`MPI_Mprobe`: a message leaves the unexpected queue
//! and only `MPI_Mrecv` of its handle receives it) and small request
//! helpers of the other point-to-point calls.

use super::{matches, Dest, Engine, MpiErr, Msg, St};
use crate::consts::{err, ANY_TAG};

impl Engine {
    /// Takes the first unexpected message `MPI_Probe` would report; its
    /// status and a message handle for [`Engine::mrecv`].
    pub(crate) fn mprobe(
        &mut self,
        comm: usize,
        src: i32,
        tag: i32,
    ) -> Result<Option<(St, usize)>, MpiErr> {
        let c = self.comm(comm)?.clone();
        let w = self.check_source(&c, src)?;
        self.progress();
        let t = (tag != ANY_TAG).then_some(tag);
        let Some(i) = self
            .unexpected
            .iter()
            .position(|m| matches(m.src, &m.env, c.ctx, w, t))
        else {
            return Ok(None);
        };
        let Some(m) = self.unexpected.remove(i) else {
            return Ok(None);
        };
        let st = St {
            source: c.rank_of(m.src).map_or(-1, |r| r as i32),
            tag: m.env.tag,
            count: m.env.len,
            ..St::default()
        };
        let id = self.handle();
        self.matched.insert(id, (comm, c.group.clone(), m));
        Ok(Some((st, id)))
    }

    /// Receives matched message `msg` into `buf`; the request handle.
    pub(crate) fn mrecv(&mut self, msg: usize, buf: Dest) -> Result<usize, MpiErr> {
        let (comm, group, m): (usize, _, Msg) = self
            .matched
            .remove(&msg)
            .ok_or_else(|| MpiErr::new(err::REQUEST, format!("invalid message {msg:#x}")))?;
        let id = self.handle();
        self.add_req(id, super::recv_req(comm, Some(m.src), buf, group));
        self.stats.received(m.env.len, false);
        self.deliver(id, m);
        Ok(id)
    }

    /// A request already complete (a buffered send's).
    pub(crate) fn completed(&mut self, comm: usize) -> usize {
        let id = self.handle();
        self.add_req(id, super::done_req(comm, 0, 0));
        id
    }

    /// A request a nonblocking collective completes with
    /// [`Engine::nbc_complete`].
    pub(crate) fn nbc_request(&mut self, comm: usize) -> usize {
        let id = self.handle();
        let mut r = super::done_req(comm, 0, 0);
        r.done = false;
        self.add_req(id, r);
        id
    }

    /// Completes a nonblocking collective's request with error class
    /// `error` (0: success).
    pub(crate) fn nbc_complete(&mut self, id: usize, error: i32) {
        if let Some(r) = self.reqs.get_mut(&id) {
            r.done = true;
            r.status.error = error;
            self.events += 1;
        }
    }

    /// The status of request `id` if it is complete, leaving it there.
    pub(crate) fn peek(&self, id: usize) -> Result<Option<St>, MpiErr> {
        match self.reqs.get(&id) {
            None => Err(MpiErr::new(
                err::REQUEST,
                format!("invalid request {id:#x}"),
            )),
            Some(r) => Ok(r.done.then_some(r.status)),
        }
    }
}
