//! A blocking receive (`MPI_Recv`) matched without a request.
//!
//! When no other receive that could match the same messages is posted
//! (none on its context) and no other blocking receive holds the place,
//! `MPI_Recv` posts itself in one place of the engine ([`Alone`]) instead
//! of making a request: no handle, no boxed state, no map insertion and
//! removal. A message arriving looks at that place before the posted
//! receives: every receive posted while it is taken was posted after it
//! (or is on another context, so that no message matches both), so MPI's
//! order of matching holds. A message already unexpected when the
//! receive is called is delivered in that same look.
//!
//! Only eager messages complete it in place; a rendezvous that matches
//! it turns it into an ordinary request (the READ, the copy from the
//! sender's staged data or the clear-to-send all work by request), which
//! the waiting call then waits for.

use super::{matches, Arrived, Dest, Engine, MpiErr, St};
use crate::consts::{err, ANY_TAG, PROC_NULL};
use crate::envelope::{Env, Kind, FLAG_SYNC};

/// The blocking receive posted in place of a request.
#[derive(Debug)]
pub(crate) struct Alone {
    ctx: u32,
    /// World rank, or any.
    src: Option<u32>,
    tag: Option<i32>,
    comm: usize,
    /// The source rank the caller named, or `MPI_ANY_SOURCE`.
    rank: i32,
    buf: Dest,
    state: State,
}

#[derive(Debug, Clone, Copy)]
enum State {
    Waiting,
    Done(St),
    /// Matched by a rendezvous: request `id` completes it.
    Request(usize),
}

/// How `MPI_Recv` goes on after its first look.
#[derive(Debug)]
pub(crate) enum RecvStart {
    /// Received in that look (an eager message already here, or
    /// `MPI_PROC_NULL`).
    Done(St),
    /// Posted in place of a request: wait with [`Engine::alone_poll`].
    Alone { peer: Option<u32> },
    /// A request to wait for, and the task expected to complete it.
    Request { id: usize, peer: Option<u32> },
}

/// What [`Engine::alone_poll`] saw.
#[derive(Debug)]
pub(crate) enum AlonePoll {
    Waiting,
    Done(St),
    /// Now request `id` (matched by a rendezvous).
    Request(usize),
    /// The place is empty: it was withdrawn.
    Gone,
}

/// Status of an eager message of `env` received into `buf` (filled with
/// what fits) from communicator rank `source`.
fn eager_into(buf: &mut Dest, source: i32, env: &Env, data: &[u8]) -> St {
    let cap = buf.cap();
    let n = (env.len as usize).min(cap);
    buf.fill(data);
    St {
        source,
        tag: env.tag,
        error: if env.len as usize > cap {
            err::TRUNCATE
        } else {
            0
        },
        count: n as u64,
        cancelled: false,
    }
}

impl Alone {
    /// Whether it could take a message of `src` on `ctx`.
    pub(super) fn could_take(&self, ctx: u32, src: u32) -> bool {
        self.ctx == ctx && self.src.is_none_or(|s| s == src) && matches!(self.state, State::Waiting)
    }
}

impl Engine {
    /// `MPI_Recv`'s first look: receives at once what is here, or posts
    /// the receive in place of a request when nothing posted before it
    /// could match the same messages, or makes a request.
    pub(crate) fn recv_blocking(
        &mut self,
        comm: usize,
        src: i32,
        tag: i32,
        buf: Dest,
    ) -> Result<RecvStart, MpiErr> {
        let (ctx, w) = self.recv_args(comm, src, tag)?;
        if src == PROC_NULL {
            return Ok(RecvStart::Done(St {
                source: PROC_NULL,
                tag: ANY_TAG,
                ..St::default()
            }));
        }
        let t = (tag != ANY_TAG).then_some(tag);
        self.stats.blocking_recvs += 1;
        self.progress();
        let hit = self
            .unexpected
            .iter()
            .position(|m| matches(m.src, &m.env, ctx, w, t));
        let mut buf = buf;
        if let Some(m) = hit.and_then(|i| self.unexpected.remove(i)) {
            self.stats.received(m.env.len, false);
            if let Some(d) = m.body.eager() {
                let source = self.source_rank(comm, src, m.src);
                let st = eager_into(&mut buf, source, &m.env, d);
                self.sync_ack(m.src, &m.env);
                return Ok(RecvStart::Done(st));
            }
            let id = self.recv_request(comm, w, buf)?;
            self.deliver(id, m);
            return Ok(RecvStart::Request { id, peer: w });
        }
        // A large receive from across the network is posted as a request
        // its sender can be told of (`engine/direct.rs`).
        if self.alone.is_none()
            && !self.posted.iter().any(|p| p.ctx == ctx)
            && !self.could_notice(w, &buf)
        {
            self.alone = Some(Alone {
                ctx,
                src: w,
                tag: t,
                comm,
                rank: src,
                buf,
                state: State::Waiting,
            });
            return Ok(RecvStart::Alone { peer: w });
        }
        let id = self.recv_request(comm, w, buf)?;
        self.post(id, ctx, w, t);
        Ok(RecvStart::Request { id, peer: w })
    }

    /// A receive request on `comm` not yet posted or matched.
    fn recv_request(&mut self, comm: usize, src: Option<u32>, buf: Dest) -> Result<usize, MpiErr> {
        let group = self.comm(comm)?.group.clone();
        let id = self.handle();
        self.add_req(id, super::recv_req(comm, src, buf, group));
        Ok(id)
    }

    /// The communicator rank of world rank `w`, the receive having named
    /// `named` (a rank, or `MPI_ANY_SOURCE`).
    fn source_rank(&self, comm: usize, named: i32, w: u32) -> i32 {
        if named >= 0 {
            return named;
        }
        self.comms
            .get(&comm)
            .and_then(|c| c.rank_of(w))
            .map_or(-1, |r| r as i32)
    }

    /// Answers a synchronous send's message once matched.
    pub(super) fn sync_ack(&mut self, src: u32, env: &Env) {
        if env.flags & FLAG_SYNC != 0 {
            let ack = Env::control(Kind::SyncAck, env.sreq).encode(&[]);
            self.enqueue(src, ack, None);
        }
    }

    /// Matches an arrived message with the blocking receive posted in
    /// place of a request; false when it does not match (or none waits).
    pub(super) fn arrive_alone(&mut self, src: u32, env: &Env, data: &[u8]) -> bool {
        let Some(a) = self.alone.as_mut() else {
            return false;
        };
        if !matches!(a.state, State::Waiting) || !matches(src, env, a.ctx, a.src, a.tag) {
            return false;
        }
        self.stats.received(env.len, true);
        self.events += 1;
        if env.kind == Kind::Eager {
            let (comm, rank) = (a.comm, a.rank);
            let source = if rank >= 0 {
                rank
            } else {
                self.source_rank(comm, rank, src)
            };
            if let Some(a) = self.alone.as_mut() {
                a.state = State::Done(eager_into(&mut a.buf, source, env, data));
            }
            self.sync_ack(src, env);
            return true;
        }
        // A rendezvous: the receive becomes a request, which the waiting
        // call finds through the place.
        let (comm, w) = (a.comm, a.src);
        let buf = std::mem::replace(
            &mut a.buf,
            Dest::Own {
                cap: 0,
                data: Vec::new(),
            },
        );
        let Ok(id) = self.recv_request(comm, w, buf) else {
            // Its communicator was freed meanwhile (an erroneous program):
            // the receive fails rather than waiting for ever.
            if let Some(a) = self.alone.as_mut() {
                a.state = State::Done(St {
                    error: err::COMM,
                    ..St::default()
                });
            }
            return true;
        };
        if let Some(a) = self.alone.as_mut() {
            a.state = State::Request(id);
        }
        let body = Arrived::Rts {
            key: env.key,
            addr: env.addr,
        };
        self.deliver_parts(id, src, env, body);
        true
    }

    /// The blocking receive posted in place of a request: its status once
    /// received (the place is then free), or the request it became.
    pub(crate) fn alone_poll(&mut self) -> AlonePoll {
        let Some(a) = self.alone.as_ref() else {
            return AlonePoll::Gone;
        };
        match a.state {
            State::Waiting => AlonePoll::Waiting,
            State::Done(st) => {
                self.alone = None;
                AlonePoll::Done(st)
            }
            State::Request(id) => {
                self.alone = None;
                AlonePoll::Request(id)
            }
        }
    }

    /// Withdraws the blocking receive posted in place of a request (its
    /// call ends without it: its buffer is no longer the library's).
    pub(crate) fn alone_withdraw(&mut self) {
        self.alone = None;
    }
}
