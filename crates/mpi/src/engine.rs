//! The point-to-point engine: communicators, requests, matching and the
//! protocols over MBCF, in safe Rust.
//!
//! Every task owns one segment holding two credit arrays (one u64 per
//! peer each: how many of our messages that peer consumed, how far it
//! freed our region of its ring) and a FIFO every peer pushes into. A
//! message of at most [`EAGER_MAX`] bytes goes in one FIFO push with its
//! envelope; to a task across the network, one of up to 64 KiB is
//! written into the receiver's ring and announced after it
//! (`engine/ring.rs`); a larger one (or one the ring has no room for) is
//! copied to a staging segment and announced (RTS); once matched, a
//! receiver on the same node copies it from the staging segment mapped
//! there and answers FIN, one across the network registers its receive
//! buffer and answers CTS, and the sender WRITEs the data into it and
//! sends DONE. A sender may have [`CREDITS`] messages unconsumed in a
//! receiver's FIFO (the FIFO has room for all peers' credits, so a push
//! never overflows it); beyond that messages wait in an outbox, in
//! order. The receiver writes back its consumed count every half of the
//! credits.
//!
//! Matching follows MPI: a message matches the first posted receive (in
//! posting order) with its context, source and tag, or waits in the
//! unexpected queue; a receive matches the first unexpected message in
//! arrival order. One sender's messages arrive in issue order (MBCF
//! applies them in order and the FIFO keeps it), so messages do not
//! overtake.

use crate::consts::{err, h, ANY_SOURCE, ANY_TAG};
use crate::envelope::{Env, Kind, FLAG_PEER_READ, FLAG_SYNC};
use crate::idmap::IdMap;
use sss_mbcf::{Fifo, Options, Perm, RemoteAddr, Segment, Task};
use std::collections::VecDeque;
use std::sync::Arc;

pub(crate) use crate::objects::{Comm, Dest, MpiErr, St};

/// What a send's bytes are: borrowed for the call (the engine copies
/// what it keeps), or the caller's buffer, lent until the send completes.
#[derive(Clone, Copy)]
pub(crate) enum SendSrc<'a> {
    Copy(&'a [u8]),
    Lent(crate::buf::LentSrc),
}

impl SendSrc<'_> {
    fn bytes(&self) -> &[u8] {
        match self {
            SendSrc::Copy(d) => d,
            SendSrc::Lent(l) => l.bytes(),
        }
    }
}

/// Where a rendezvous send's data waits for its receiver.
enum Held {
    /// Copied into staging.
    Staged(crate::staging::Slot),
    /// The caller's buffer, across the network: WRITTEN from it at the
    /// clear-to-send, with no copy before.
    Lent(crate::buf::LentSrc),
}

mod alone;
mod direct;
mod matched;
mod peer_read;
mod ring;

pub(crate) use alone::{AlonePoll, RecvStart};

/// Largest message sent eagerly, in bytes.
pub(crate) const EAGER_MAX: usize = 8192;
/// Messages a sender may have unconsumed in one receiver's FIFO.
pub(crate) const CREDITS: u64 = 32;
/// Bytes of rendezvous sends staged and not yet released by their
/// receivers up to which a standard send completes as soon as its data
/// is staged (see [`Engine::send_ctx`]); past it a send waits for its
/// receiver's FIN, so that a sender far ahead of its receivers does not
/// stage without end.
pub(crate) const STAGED_AHEAD: usize = 64 << 20;
/// Largest single READ of a rendezvous.
const READ_CHUNK: usize = 4 << 20;
/// Same-node segments kept mapped for rendezvous copies.
const PEER_MAPS: usize = 64;
/// Messages popped per progress call before the rest of the work.
const POP_BATCH: usize = 256;

#[derive(Debug)]
enum SendWait {
    /// In the outbox; done once pushed.
    Outbox,
    /// Pushed; done at the receiver's SyncAck.
    SyncAck,
    /// Announced; done at the receiver's FIN.
    Fin,
    /// Written into a receive posted first (`engine/direct.rs`); done
    /// when the receiver applied the WRITE.
    Written(sss_mbcf::Request),
}

#[derive(Debug)]
struct RecvState {
    buf: Dest,
    group: Arc<Vec<u32>>,
    /// READs of a matched rendezvous: the request and its offset.
    reads: Vec<(sss_mbcf::Request, usize)>,
    /// The FIN to send when the READs completed: sender and its request.
    fin: Option<(u32, u64)>,
}

#[derive(Debug)]
enum ReqKind {
    Send {
        dest: u32,
        wait: SendWait,
    },
    /// Not boxed: a box was an allocation and a free for every receive,
    /// which showed in a stream of small messages.
    Recv(RecvState),
}

/// A pending operation.
#[derive(Debug)]
pub(crate) struct Req {
    /// Handle of its communicator, for the error handler.
    pub comm: usize,
    pub done: bool,
    pub status: St,
    /// The task expected to complete it, for SS-Wait.
    pub peer: Option<u32>,
    kind: ReqKind,
}

enum Body {
    /// Bytes up to [`INLINE`] long, kept in the message itself: most
    /// unexpected messages are small, and a vector each was an
    /// allocation and a free per message.
    Small {
        len: u8,
        bytes: [u8; INLINE],
    },
    Eager(Vec<u8>),
    Rts {
        key: u64,
        addr: u64,
    },
}

/// Longest eager message an unexpected [`Msg`] holds inline.
const INLINE: usize = 48;

impl Body {
    /// An eager message's bytes; `None` for a rendezvous.
    fn eager(&self) -> Option<&[u8]> {
        match self {
            Body::Small { len, bytes } => bytes.get(..*len as usize),
            Body::Eager(d) => Some(d),
            Body::Rts { .. } => None,
        }
    }
}

struct Msg {
    src: u32,
    env: Env,
    body: Body,
}

/// A matched message's body, borrowed.
enum Arrived<'a> {
    Eager(&'a [u8]),
    Rts { key: u64, addr: u64 },
}

impl Msg {
    /// An arrived message kept for later: its eager bytes copied.
    fn new(src: u32, env: Env, data: &[u8]) -> Msg {
        let body = if env.kind == Kind::Eager && data.len() <= INLINE {
            let mut bytes = [0; INLINE];
            bytes[..data.len()].copy_from_slice(data);
            Body::Small {
                len: data.len() as u8,
                bytes,
            }
        } else if env.kind == Kind::Eager {
            Body::Eager(data.to_vec())
        } else {
            Body::Rts {
                key: env.key,
                addr: env.addr,
            }
        };
        Msg { src, env, body }
    }
}

/// A posted receive: its request and what it matches, kept beside the
/// id so that matching an arrival reads no request.
#[derive(Debug, Clone, Copy)]
struct Posted {
    id: usize,
    ctx: u32,
    /// World rank, or any.
    src: Option<u32>,
    tag: Option<i32>,
    /// Messages of `src` taken when it was posted (`engine/direct.rs`).
    seq: u64,
    /// What its sender was told of it.
    note: direct::Note,
}

struct Out {
    bytes: Vec<u8>,
    /// A request done when this leaves the outbox.
    completes: Option<usize>,
}

#[derive(Debug, Clone, Copy)]
struct Peer {
    fifo: RemoteAddr,
    /// Our slot in its credit array.
    credit: RemoteAddr,
    /// Our slot in its array of ring space freed (see `engine/ring.rs`).
    ring_credit: RemoteAddr,
}

/// What a wait needs outside the library's lock: the task, and a look
/// at the FIFO. One reference count for a wait instead of one per part.
pub(crate) struct Waiter {
    pub task: Task,
    pub probe: sss_mbcf::FifoProbe,
}

/// The library's state in one process.
pub(crate) struct Engine {
    pub task: Task,
    pub waiter: Arc<Waiter>,
    pub rank: u32,
    pub size: u32,
    seg: Segment,
    fifo: Fifo,
    peers: Vec<Peer>,
    /// Same-node peers' FIFOs opened for pushes into their slots, once
    /// `opened` says the first push tried.
    senders: Vec<Option<sss_mbcf::FifoSender>>,
    opened: Vec<bool>,
    /// Largest message sent eagerly to each task: [`EAGER_MAX`] (MBCF
    /// carries FIFO messages that long over udp too, in fragments it
    /// joins before they reach the queue).
    eager: Vec<usize>,
    sent: Vec<u64>,
    consumed: Vec<u64>,
    returned: Vec<u64>,
    outbox: Vec<VecDeque<Out>>,
    self_inbox: VecDeque<Vec<u8>>,
    /// Receives posted, in posting order.
    posted: Vec<Posted>,
    /// A blocking receive posted in place of a request (`engine/alone.rs`):
    /// matched before `posted`, as every receive there was posted after
    /// it or cannot match what it matches.
    alone: Option<alone::Alone>,
    unexpected: VecDeque<Msg>,
    pub reqs: IdMap<Req>,
    next_handle: usize,
    /// Receives with READs in flight.
    reading: Vec<usize>,
    /// Sends written into receives posted first, until their WRITE is
    /// applied.
    writing: Vec<usize>,
    /// Same-node peers' segments mapped here, by (rank, key).
    peer_maps: std::collections::HashMap<(u32, u64), (sss_mbcf::PeerMap, u64)>,
    /// Staged data of rendezvous sends, by request (the RTS's `sreq`),
    /// with the task it was sent to: kept until that task's FIN or CTS,
    /// after the request may have completed and gone.
    staged: IdMap<(u32, Held)>,
    /// Bytes in `staged`.
    staged_bytes: usize,
    staging: crate::staging::Staging,
    pub comms: IdMap<Comm>,
    pub next_ctx: u32,
    scratch: Vec<u8>,
    /// Envelope and data of a send made without a request.
    send_buf: Vec<u8>,
    /// Receives across the network waiting for the sender's WRITE after
    /// our clear-to-send: by the key of their registered buffer, the
    /// request, the sender and the segment.
    awaiting: std::collections::HashMap<u64, (usize, u32, Segment)>,
    /// Eager messages over udp above the FIFO's slot.
    rings: ring::Rings,
    /// Set while a nonblocking collective's receive is posted: its
    /// sender gets no notice, so nothing is written straight into it.
    /// A WRITE straight in completes the sender's send by MBCF's
    /// acknowledgement, which no signal follows, and a schedule that
    /// waits for that send then stood still between MPI calls.
    unnoticed: bool,
    /// Receives posted first, written straight into (`engine/direct.rs`).
    direct: direct::Direct,
    /// A ring message's bytes on their way to a receive.
    ring_buf: Vec<u8>,
    /// Malformed or unexpected FIFO messages dropped.
    pub bad_msgs: u64,
    /// In `MPI_Finalize`: credits are no longer returned. Every message a
    /// peer still sends (the final barrier's, at most one per round)
    /// fits the credits it has, and a WRITE to a peer that already left
    /// would fail.
    pub closing: bool,
    /// Requests freed by the application before they completed: removed
    /// once they do.
    detached: Vec<usize>,
    /// Messages taken by `MPI_Mprobe`: communicator, its group, message.
    matched: IdMap<(usize, Arc<Vec<u32>>, Msg)>,
    /// Requests completed or removed and messages queued unexpected:
    /// other threads' waits look again when it moves.
    pub events: u64,
    /// Traffic, for `SSS_STATS`.
    pub stats: crate::stats::Counters,
    pub started: std::time::Instant,
}

fn mbcf_err(e: sss_mbcf::Error) -> MpiErr {
    let class = match e {
        sss_mbcf::Error::PeerDown(_) => err::PROC_ABORTED,
        _ => err::OTHER,
    };
    MpiErr::new(class, e.to_string())
}

impl Engine {
    /// Joins the job and sets up the FIFO, credits and predefined
    /// communicators (collective: every task of the job calls it).
    pub(crate) fn new(task: Task, max_fifo: usize) -> Result<Engine, MpiErr> {
        let (rank, size) = (task.rank(), task.size());
        // Message credits, then ring space freed, one u64 per peer each.
        let credit_bytes = (2 * size as usize * 8).next_multiple_of(64);
        let slots = (size as u64 * CREDITS).next_power_of_two().max(64) as u32;
        let max_msg = crate::envelope::ENV_LEN + EAGER_MAX;
        let len = credit_bytes + sss_mbcf::fifo_bytes(slots, max_msg);
        let seg = task.alloc(len, Perm::WRITE).map_err(mbcf_err)?;
        let fifo = task
            .fifo_create(&seg, credit_bytes, slots, max_msg)
            .map_err(mbcf_err)?;
        let remote = |r: u32| task.transport_to(r) != Some(sss_mbcf::TransportKind::Shm);
        let any_udp = (0..size).any(|r| r != rank && remote(r));
        let ring_seg = ring::Rings::alloc(&task, size, any_udp);
        let ring_at = ring_seg.as_ref().map_or((0, 0), |s| {
            let a = s.info().at(0);
            (a.key, a.addr)
        });
        let mut me = fifo.addr().key.to_le_bytes().to_vec();
        me.extend_from_slice(&fifo.addr().addr.to_le_bytes());
        me.extend_from_slice(&seg.info().at(0).addr.to_le_bytes());
        me.extend_from_slice(&ring_at.0.to_le_bytes());
        me.extend_from_slice(&ring_at.1.to_le_bytes());
        let all = task.allgather(&me).map_err(mbcf_err)?;
        let mut peers = Vec::with_capacity(size as usize);
        let mut ring_to = Vec::with_capacity(size as usize);
        for (r, b) in all.iter().enumerate() {
            let word = |i: usize| {
                b.get(i..i + 8)
                    .and_then(|s| s.try_into().ok())
                    .map(u64::from_le_bytes)
            };
            let (Some(key), Some(fifo_at), Some(base), Some(ring_key), Some(ring_base)) =
                (word(0), word(8), word(16), word(24), word(32))
            else {
                return Err(MpiErr::new(err::INTERN, "malformed address exchange"));
            };
            let at = |addr| RemoteAddr {
                rank: r as u32,
                key,
                addr,
            };
            peers.push(Peer {
                fifo: at(fifo_at),
                credit: at(base + 8 * u64::from(rank)),
                ring_credit: at(base + 8 * u64::from(size + rank)),
            });
            // Our region of its ring, when it has one and we are across
            // the network from it.
            let theirs = ring_key != 0 && r as u32 != rank && remote(r as u32);
            ring_to.push(theirs.then(|| RemoteAddr {
                rank: r as u32,
                key: ring_key,
                addr: ring_base + u64::from(rank) * ring::RING,
            }));
        }
        let direct_on = direct::enabled_from_env()?;
        let remote_peers = (0..size)
            .map(|r| direct_on && r != rank && remote(r))
            .collect();
        let n = size as usize;
        let udp_eager = max_fifo
            .saturating_sub(crate::envelope::ENV_LEN)
            .min(EAGER_MAX);
        let eager = (0..size)
            .map(|r| match task.transport_to(r) {
                Some(sss_mbcf::TransportKind::Shm) => EAGER_MAX,
                _ => udp_eager,
            })
            .collect();
        let mut comms = IdMap::default();
        let world = Comm {
            ctx: 0,
            group: Arc::new((0..size).collect()),
            rank,
            errh: h::ERRORS_ARE_FATAL,
        };
        let own = Comm {
            ctx: 2,
            group: Arc::new(vec![rank]),
            rank: 0,
            errh: h::ERRORS_ARE_FATAL,
        };
        comms.insert(h::COMM_WORLD, world);
        comms.insert(h::COMM_SELF, own);
        Ok(Engine {
            waiter: Arc::new(Waiter {
                task: task.clone(),
                probe: fifo.probe(),
            }),
            task,
            rank,
            size,
            seg,
            fifo,
            peers,
            senders: (0..n).map(|_| None).collect(),
            opened: vec![false; n],
            eager,
            sent: vec![0; n],
            consumed: vec![0; n],
            returned: vec![0; n],
            outbox: (0..n).map(|_| VecDeque::new()).collect(),
            self_inbox: VecDeque::new(),
            posted: Vec::new(),
            alone: None,
            unexpected: VecDeque::new(),
            reqs: IdMap::default(),
            next_handle: h::FIRST_USER,
            reading: Vec::new(),
            writing: Vec::new(),
            peer_maps: Default::default(),
            staged: IdMap::default(),
            staged_bytes: 0,
            staging: crate::staging::Staging::default(),
            comms,
            next_ctx: 4,
            scratch: Vec::new(),
            send_buf: Vec::new(),
            awaiting: Default::default(),
            rings: ring::Rings::new(ring_seg, ring_to),
            direct: direct::Direct::new(remote_peers),
            unnoticed: false,
            ring_buf: Vec::new(),
            bad_msgs: 0,
            closing: false,
            detached: Vec::new(),
            matched: IdMap::default(),
            events: 0,
            stats: Default::default(),
            started: std::time::Instant::now(),
        })
    }

    /// Keeps request `r` as `id`, counted in the statistics.
    fn add_req(&mut self, id: usize, r: Req) {
        self.stats.requests += 1;
        self.reqs.insert(id, r);
    }

    /// A fresh handle value for a request or communicator.
    pub(crate) fn handle(&mut self) -> usize {
        let h = self.next_handle;
        self.next_handle += 8;
        h
    }

    pub(crate) fn comm(&self, c: usize) -> Result<&Comm, MpiErr> {
        self.comms
            .get(&c)
            .ok_or_else(|| MpiErr::new(err::COMM, format!("invalid communicator {c:#x}")))
    }

    /// Starts a send of `data` to `dest` of `comm` (`sync`: done only
    /// once matched); the request handle.
    pub(crate) fn isend(
        &mut self,
        comm: usize,
        dest: i32,
        tag: i32,
        data: SendSrc<'_>,
        sync: bool,
    ) -> Result<usize, MpiErr> {
        let Some((ctx, w)) = self.route(comm, dest, tag)? else {
            let id = self.handle();
            self.add_req(id, done_req(comm, crate::consts::PROC_NULL, ANY_TAG));
            return Ok(id);
        };
        let id = self.handle();
        self.send_src(comm, ctx, w, tag, data, sync, id)?;
        Ok(id)
    }

    /// The context and world rank a send to `dest` of `comm` with `tag`
    /// goes to; `None` for `MPI_PROC_NULL`.
    fn route(&self, comm: usize, dest: i32, tag: i32) -> Result<Option<(u32, u32)>, MpiErr> {
        let c = self.comm(comm)?;
        if tag < 0 {
            return Err(MpiErr::new(err::TAG, format!("invalid tag {tag}")));
        }
        if dest == crate::consts::PROC_NULL {
            return Ok(None);
        }
        let w = usize::try_from(dest)
            .ok()
            .and_then(|d| c.group.get(d).copied())
            .ok_or_else(|| {
                MpiErr::new(
                    err::RANK,
                    format!("invalid rank {dest} (communicator of {} tasks)", c.size()),
                )
            })?;
        Ok(Some((c.ctx, w)))
    }

    /// A blocking standard send (`MPI_Send`) done at once when it can be:
    /// eager, to another task, nothing queued for it and a credit free.
    /// No request is made for it. False: nothing was sent, take the
    /// general path ([`Engine::isend`], then wait).
    pub(crate) fn send_now(
        &mut self,
        comm: usize,
        dest: i32,
        tag: i32,
        data: &[u8],
    ) -> Result<bool, MpiErr> {
        let Some((ctx, w)) = self.route(comm, dest, tag)? else {
            return Ok(true);
        };
        self.send_now_ctx(ctx, w, tag, data)
    }

    /// [`Engine::send_now`] on context `ctx` to world rank `w` (a
    /// collective's message).
    pub(crate) fn send_now_ctx(
        &mut self,
        ctx: u32,
        w: u32,
        tag: i32,
        data: &[u8],
    ) -> Result<bool, MpiErr> {
        let i = w as usize;
        if i >= self.eager.len()
            || w == self.rank
            || data.len() > self.eager[i]
            || !self.outbox[i].is_empty()
            || !self.credit_ok(w)
        {
            return Ok(false);
        }
        let env = Env {
            kind: Kind::Eager,
            flags: 0,
            ctx,
            tag,
            len: data.len() as u64,
            sreq: 0,
            key: 0,
            addr: 0,
        };
        // Too small to write directly; a noticed receive it meets is taken.
        let _ = self.direct.issue(w, ctx, tag);
        let mut b = std::mem::take(&mut self.send_buf);
        env.encode_into(data, &mut b);
        self.stats.sent(data.len(), true);
        self.sent[i] += 1;
        let r = self.fifo_push_to(w, &b);
        self.send_buf = b;
        if r.is_err() {
            self.direct_lost(w);
        }
        r.map_err(mbcf_err)?;
        Ok(true)
    }

    /// True while send `id` is pending or its data staged for a
    /// receiver that has not taken it yet (a buffered send's space in
    /// the attached buffer is in use until then).
    pub(crate) fn undelivered(&self, id: usize) -> bool {
        self.reqs.contains_key(&id) || self.staged.contains_key(&id)
    }

    /// The task expected to complete request `id` (for SS-Wait).
    pub(crate) fn partner(&self, id: usize) -> Option<u32> {
        self.reqs.get(&id).and_then(|r| r.peer)
    }

    /// A send on context `ctx` to world rank `w` as request `id`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn send_ctx(
        &mut self,
        comm: usize,
        ctx: u32,
        w: u32,
        tag: i32,
        data: &[u8],
        sync: bool,
        id: usize,
    ) -> Result<(), MpiErr> {
        self.send_src(comm, ctx, w, tag, SendSrc::Copy(data), sync, id)
    }

    /// [`Engine::send_ctx`] of bytes borrowed or lent.
    #[allow(clippy::too_many_arguments)]
    fn send_src(
        &mut self,
        comm: usize,
        ctx: u32,
        w: u32,
        tag: i32,
        src: SendSrc<'_>,
        sync: bool,
        id: usize,
    ) -> Result<(), MpiErr> {
        let data = src.bytes();
        let mut env = Env {
            kind: Kind::Eager,
            flags: if sync { FLAG_SYNC } else { 0 },
            ctx,
            tag,
            len: data.len() as u64,
            sreq: id as u64,
            key: 0,
            addr: 0,
        };
        let mut rendezvous = false;
        if data.len() > self.eager[w as usize] && self.direct.expects_notices(w) {
            // A NOTICE of the receive this message meets may be waiting
            // in our socket or FIFO, right behind the message this one
            // answers: nobody reads the socket between waits.
            self.task.poll();
            self.progress();
        }
        let bound = self.direct.issue(w, ctx, tag);
        let wait_sent = if sync {
            SendWait::SyncAck
        } else {
            SendWait::Outbox
        };
        // A message to ourselves is copied whole: no READ of our own memory.
        let (bytes, wait) = if data.len() <= self.eager[w as usize] || w == self.rank {
            (env.encode(data), wait_sent)
        } else if let Some((rid, number, q)) = bound.and_then(|n| self.write_direct(w, &n, data)) {
            env.kind = Kind::Direct;
            env.key = rid;
            env.addr = number;
            let wait = match q {
                Some(q) if !sync => {
                    self.writing.push(id);
                    SendWait::Written(q)
                }
                _ => wait_sent,
            };
            (env.encode(&[]), wait)
        } else if let Some(p) = self.ring_place(w, data.len()) {
            // Written now, announced in order: MBCF applies the WRITE
            // before the envelope, wherever the envelope waits.
            if let Err(e) = self.task.write(p.at, data, Options::default()) {
                self.direct_lost(w);
                return Err(mbcf_err(e));
            }
            env.kind = Kind::Ring;
            env.addr = p.off;
            env.key = p.end;
            self.stats.ring_msgs += 1;
            self.stats.ring_bytes += data.len() as u64;
            (env.encode(&[]), wait_sent)
        } else if let (SendSrc::Lent(l), false) = (src, self.on_node(w)) {
            // Across the network the receiver always answers with a
            // clear-to-send (its buffer registered), and the send waits
            // for the FIN: the WRITE reads the caller's buffer then, and
            // nothing is staged. No key: nothing to READ.
            env.kind = Kind::Rts;
            self.staged.insert(id, (w, Held::Lent(l)));
            self.stats.lent_msgs += 1;
            rendezvous = true;
            (env.encode(&[]), SendWait::Fin)
        } else {
            let (at, slot) = match self.staging.stage(&self.task, data) {
                Ok(s) => s,
                Err(e) => {
                    self.direct_lost(w);
                    return Err(e);
                }
            };
            env.kind = Kind::Rts;
            env.key = at.key;
            env.addr = at.addr;
            self.staged.insert(id, (w, Held::Staged(slot)));
            self.staged_bytes += data.len();
            self.stats.staged_bytes += data.len() as u64;
            self.stats.staging_segments = self.staging.segments_made();
            rendezvous = true;
            // The data is ours now: a standard send to a task on this node
            // may complete (MPI lets it return once its buffer can be
            // reused), where waiting for the FIN cost a second hand-over
            // between the two tasks for every message (oversubscribed,
            // two context switches). The receiver copies the staged data
            // itself and its FIN, coming later, frees the staging. A
            // synchronous send waits for the FIN (it says matched), and so
            // does every send past `STAGED_AHEAD`, and one across the
            // network: its receiver's clear-to-send needs our WRITE, which
            // only a pending request (a wait, a schedule's signal handler)
            // makes sure we get to.
            let local = self.on_node(w);
            let wait = if sync || !local || self.staged_bytes > STAGED_AHEAD {
                SendWait::Fin
            } else {
                self.stats.staged_ahead_msgs += 1;
                SendWait::Outbox
            };
            (env.encode(&[]), wait)
        };
        self.stats.sent(data.len(), !rendezvous);
        let plain = matches!(wait, SendWait::Outbox);
        self.add_req(
            id,
            Req {
                comm,
                done: false,
                status: St::default(),
                peer: Some(w),
                kind: ReqKind::Send { dest: w, wait },
            },
        );
        self.enqueue(w, bytes, plain.then_some(id));
        Ok(())
    }

    /// Sends `bytes` to world rank `w` in order after what waits for it.
    fn enqueue(&mut self, w: u32, bytes: Vec<u8>, completes: Option<usize>) {
        if w == self.rank {
            self.self_inbox.push_back(bytes);
            self.complete_send(completes);
            return;
        }
        let q = &mut self.outbox[w as usize];
        if q.is_empty() && self.credit_ok(w) {
            self.push(w, &bytes, completes);
        } else {
            self.outbox[w as usize].push_back(Out { bytes, completes });
        }
    }

    /// A place in `w`'s ring for `len` bytes, if it has room.
    fn ring_place(&mut self, w: u32, len: usize) -> Option<ring::Place> {
        let freed = self
            .seg
            .word((self.size + w) as usize * 8)
            .map(|a| a.load(std::sync::atomic::Ordering::Acquire))
            .ok()?;
        self.rings.place(w, len, freed)
    }

    /// Whether world rank `w` is on this node (MBCF's shm transport).
    fn on_node(&self, w: u32) -> bool {
        self.task.transport_to(w) == Some(sss_mbcf::TransportKind::Shm)
    }

    fn credit_ok(&self, w: u32) -> bool {
        let back = self
            .seg
            .word(w as usize * 8)
            .map(|a| a.load(std::sync::atomic::Ordering::Acquire))
            .unwrap_or(0);
        self.sent[w as usize].saturating_sub(back) < CREDITS
    }

    /// Pushes `bytes` into `w`'s FIFO: straight into its slots when it is
    /// on this node (the queue opened at the first push), else as an
    /// MBCF operation.
    fn fifo_push_to(&mut self, w: u32, bytes: &[u8]) -> Result<(), sss_mbcf::Error> {
        let i = w as usize;
        if !self.opened[i] {
            self.opened[i] = true;
            self.senders[i] = self.task.fifo_sender(self.peers[i].fifo).ok().flatten();
        }
        match &self.senders[i] {
            Some(s) => s.push(bytes),
            None => self
                .task
                .fifo_push(self.peers[i].fifo, bytes, Options::default())
                .map(drop),
        }?;
        // While schedules run, the receiver's part of one may wait for
        // this message: the signal after it lets the receiver advance
        // them between its MPI calls (applied after the push). Not to a
        // same-node receiver with no schedule (nothing to advance; the
        // signal woke its progress thread) or waiting in MPI (it sees the
        // message itself): there signals made a 1-byte `MPI_Iallgather`
        // of two tasks take 20 µs where 3 without them.
        if crate::nbc::signal_to(&self.task, w) {
            self.stats.nbc_signals += 1;
            // A lost signal costs only progress between calls.
            let _ = self
                .task
                .signal(w, crate::nbc::SIGNAL, &[], Options::default());
        }
        Ok(())
    }

    fn push(&mut self, w: u32, bytes: &[u8], completes: Option<usize>) {
        self.sent[w as usize] += 1;
        let r = self.fifo_push_to(w, bytes);
        if let Err(e) = r {
            if let Some(req) = completes.and_then(|id| self.reqs.get_mut(&id)) {
                req.status.error = mbcf_err(e).class;
            }
        }
        self.complete_send(completes);
    }

    fn complete_send(&mut self, id: Option<usize>) {
        if let Some(r) = id.and_then(|id| self.reqs.get_mut(&id)) {
            r.done = true;
            self.events += 1;
        }
    }

    /// Posts a receive into `buf` from `src` (a communicator rank or
    /// `MPI_ANY_SOURCE`) with `tag` (or `MPI_ANY_TAG`).
    pub(crate) fn irecv(
        &mut self,
        comm: usize,
        src: i32,
        tag: i32,
        buf: Dest,
    ) -> Result<usize, MpiErr> {
        let (ctx, w) = self.recv_args(comm, src, tag)?;
        let group = self.comm(comm)?.group.clone();
        let id = self.handle();
        if src == crate::consts::PROC_NULL {
            self.add_req(id, done_req(comm, crate::consts::PROC_NULL, ANY_TAG));
            return Ok(id);
        }
        self.recv_ctx(
            comm,
            ctx,
            group,
            w,
            (tag != ANY_TAG).then_some(tag),
            buf,
            id,
        );
        Ok(id)
    }

    /// A receive's context and source (world rank, or any) on `comm` from
    /// `src` with `tag`, checked.
    pub(crate) fn recv_args(
        &self,
        comm: usize,
        src: i32,
        tag: i32,
    ) -> Result<(u32, Option<u32>), MpiErr> {
        let c = self.comm(comm)?;
        let w = self.check_source(c, src)?;
        if tag < 0 && tag != ANY_TAG {
            return Err(MpiErr::new(err::TAG, format!("invalid tag {tag}")));
        }
        Ok((c.ctx, w))
    }

    /// The world rank `src` names (None: any); PROC_NULL passes as None.
    pub(crate) fn check_source(&self, c: &Comm, src: i32) -> Result<Option<u32>, MpiErr> {
        if src == ANY_SOURCE || src == crate::consts::PROC_NULL {
            return Ok(None);
        }
        usize::try_from(src)
            .ok()
            .and_then(|s| c.group.get(s).copied())
            .map(Some)
            .ok_or_else(|| {
                MpiErr::new(
                    err::RANK,
                    format!(
                        "invalid source rank {src} (communicator of {} tasks)",
                        c.size()
                    ),
                )
            })
    }

    /// A receive on context `ctx` as request `id`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn recv_ctx(
        &mut self,
        comm: usize,
        ctx: u32,
        group: Arc<Vec<u32>>,
        src: Option<u32>,
        tag: Option<i32>,
        buf: Dest,
        id: usize,
    ) {
        self.add_req(id, recv_req(comm, src, buf, group));
        self.progress();
        let hit = self
            .unexpected
            .iter()
            .position(|m| matches(m.src, &m.env, ctx, src, tag));
        match hit.and_then(|i| self.unexpected.remove(i)) {
            Some(m) => {
                self.stats.received(m.env.len, false);
                self.deliver(id, m);
            }
            None => self.post(id, ctx, src, tag),
        }
    }

    /// [`Engine::recv_ctx`] for a nonblocking collective's receive: its
    /// sender gets no notice (see `unnoticed`).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn recv_ctx_unnoticed(
        &mut self,
        comm: usize,
        ctx: u32,
        group: Arc<Vec<u32>>,
        src: Option<u32>,
        tag: Option<i32>,
        buf: Dest,
        id: usize,
    ) {
        self.unnoticed = true;
        self.recv_ctx(comm, ctx, group, src, tag, buf, id);
        self.unnoticed = false;
    }

    /// The status of the first unexpected message `probe` would match.
    pub(crate) fn probe(&mut self, comm: usize, src: i32, tag: i32) -> Result<Option<St>, MpiErr> {
        let c = self.comm(comm)?;
        let w = self.check_source(c, src)?;
        if src == crate::consts::PROC_NULL {
            return Ok(Some(St {
                source: crate::consts::PROC_NULL,
                tag: ANY_TAG,
                ..St::default()
            }));
        }
        let (ctx, c) = (c.ctx, c.clone());
        self.progress();
        let t = (tag != ANY_TAG).then_some(tag);
        Ok(self
            .unexpected
            .iter()
            .find(|m| matches(m.src, &m.env, ctx, w, t))
            .map(|m| St {
                source: c.rank_of(m.src).map_or(-1, |r| r as i32),
                tag: m.env.tag,
                error: 0,
                count: m.env.len,
                cancelled: false,
            }))
    }

    /// Does what can be done without waiting: takes arrived messages,
    /// returns credits, finishes READs, drains outboxes.
    pub(crate) fn progress(&mut self) {
        let mut buf = std::mem::take(&mut self.scratch);
        for _ in 0..POP_BATCH {
            let Some(src) = self.fifo.pop(&mut buf) else {
                break;
            };
            // MBCF names the sender; a rank past the job cannot occur,
            // but nothing indexes by it unchecked.
            let Some(c) = self.consumed.get_mut(src as usize) else {
                self.bad_msgs += 1;
                continue;
            };
            *c += 1;
            self.incoming(src, &buf);
        }
        self.scratch = buf;
        while let Some(m) = self.self_inbox.pop_front() {
            self.incoming(self.rank, &m);
        }
        for p in 0..self.size as usize {
            if !self.closing && self.consumed[p] - self.returned[p] >= CREDITS / 2 {
                self.returned[p] = self.consumed[p];
                let v = self.consumed[p].to_ne_bytes();
                // Completes locally; a dead peer fails its own operations.
                let _ = self
                    .task
                    .write(self.peers[p].credit, &v, Options::default());
            }
        }
        if !self.closing {
            for (p, v) in self.rings.returns() {
                let _ = self.task.write(
                    self.peers[p as usize].ring_credit,
                    &v.to_ne_bytes(),
                    Options::default(),
                );
            }
        }
        if !self.reading.is_empty() {
            self.finish_reads();
        }
        if !self.writing.is_empty() {
            self.finish_writes();
        }
        if !self.detached.is_empty() {
            let (reqs, events) = (&mut self.reqs, &mut self.events);
            self.detached.retain(|id| match reqs.get(id) {
                Some(r) if !r.done => true,
                _ => {
                    reqs.remove(id);
                    *events += 1;
                    false
                }
            });
        }
        for w in 0..self.size {
            while !self.outbox[w as usize].is_empty() && self.credit_ok(w) {
                if let Some(o) = self.outbox[w as usize].pop_front() {
                    self.push(w, &o.bytes, o.completes);
                }
            }
        }
    }

    fn incoming(&mut self, src: u32, msg: &[u8]) {
        let Some((env, data)) = Env::decode(msg) else {
            self.bad_msgs += 1;
            return;
        };
        match env.kind {
            Kind::Ring => {
                let mut d = std::mem::take(&mut self.ring_buf);
                if self.rings.take(src, &env, &mut d) {
                    let env = Env {
                        kind: Kind::Eager,
                        ..env
                    };
                    self.arrive(src, env, &d);
                } else {
                    self.bad_msgs += 1;
                }
                self.ring_buf = d;
            }
            Kind::Eager | Kind::Rts => self.arrive(src, env, data),
            Kind::Cts => self.clear_to_send(src, &env),
            Kind::Notice => self.notice_arrived(src, &env, data),
            Kind::Direct => self.direct_arrived(src, &env),
            Kind::Revoke => self.revoke_asked(src, &env),
            Kind::Revoked => self.revoked(src, &env),
            Kind::NoDirect => self.no_direct(src),
            Kind::Done => self.written(src, &env),
            Kind::Fin => {
                let id = env.sreq as usize;
                // A send read from our own buffer (`engine/peer_read.rs`)
                // staged nothing; it waits for this FIN all the same.
                let staged = self.unstage(src, id);
                if self.waits_for(id, src, SendWait::Fin) {
                    self.complete_send(Some(id));
                } else if !staged {
                    self.bad_msgs += 1;
                }
            }
            Kind::SyncAck => {
                let id = env.sreq as usize;
                if !self.waits_for(id, src, SendWait::SyncAck) {
                    self.bad_msgs += 1;
                    return;
                }
                self.complete_send(Some(id));
            }
        }
    }

    /// True when send request `id` to `dest` is pending until `wait`.
    fn waits_for(&self, id: usize, dest: u32, wait: SendWait) -> bool {
        matches!(
            self.reqs.get(&id),
            Some(Req { kind: ReqKind::Send { dest: d, wait: w }, done: false, .. })
                if *d == dest && std::mem::discriminant(w) == std::mem::discriminant(&wait)
        )
    }

    /// Frees the staging of rendezvous send `id`, which `dest` took;
    /// false when we staged no such send for it.
    fn unstage(&mut self, dest: u32, id: usize) -> bool {
        match self.staged.get(&id) {
            Some(&(d, _)) if d == dest => {}
            _ => return false,
        }
        if let Some((_, Held::Staged(slot))) = self.staged.remove(&id) {
            self.staged_bytes = self.staged_bytes.saturating_sub(slot.len());
            self.staging.release(&self.task, slot);
        }
        true
    }

    /// A receiver across the network registered its buffer for our
    /// rendezvous send `env.sreq`: WRITE the staged data there, then DONE
    /// (MBCF applies them in order); the send is complete, as MBCF copied
    /// the data (if it did not complete when staged). A failed WRITE is
    /// the request's error while it waits; after, MBCF reports it.
    fn clear_to_send(&mut self, src: u32, env: &Env) {
        let id = env.sreq as usize;
        let Some(held) = self.staged.get(&id).filter(|(d, _)| *d == src) else {
            self.bad_msgs += 1;
            return;
        };
        // The caller's buffer is ours only while the send is pending: one
        // that failed meanwhile (its peer down) gave it back. Handles are
        // never reused, so a later request cannot stand for it.
        let pending = self.reqs.get(&id).is_some_and(|r| !r.done);
        let lent = matches!(held.1, Held::Lent(_));
        let bytes = match &held.1 {
            Held::Staged(slot) => self.staging.bytes(slot),
            Held::Lent(l) if pending => Some(l.bytes()),
            Held::Lent(_) => None,
        };
        let Some(data) = bytes.and_then(|d| d.get(..env.len as usize)) else {
            if lent && !pending {
                self.unstage(src, id);
            }
            self.bad_msgs += 1;
            return;
        };
        let at = RemoteAddr {
            rank: src,
            key: env.key,
            addr: env.addr,
        };
        let n = data.len();
        if let Err(e) = self.task.write(at, data, Options::default()) {
            if let Some(r) = self.reqs.get_mut(&id) {
                r.status.error = mbcf_err(e).class;
            }
        }
        self.stats.write_msgs += 1;
        self.stats.write_bytes += n as u64;
        let mut done = Env::control(Kind::Done, 0);
        done.key = env.key;
        self.enqueue(src, done.encode(&[]), None);
        self.unstage(src, id);
        if self.waits_for(id, src, SendWait::Fin) {
            self.complete_send(Some(id));
        }
    }

    /// The sender wrote a receive's data into its registered buffer.
    fn written(&mut self, src: u32, env: &Env) {
        let Some((id, from, seg)) = self.awaiting.remove(&env.key) else {
            self.bad_msgs += 1;
            return;
        };
        if from != src {
            // Not that sender's to finish: keep waiting for the right one.
            self.awaiting.insert(env.key, (id, from, seg));
            self.bad_msgs += 1;
            return;
        }
        let _ = self.task.free(seg);
        if let Some(Req {
            kind: ReqKind::Recv(r),
            done,
            ..
        }) = self.reqs.get_mut(&id)
        {
            r.buf.commit();
            *done = true;
            self.events += 1;
        }
    }

    /// Matches an arrived message (eager, or RTS) with the first posted
    /// receive it fits, or queues it unexpected.
    fn arrive(&mut self, src: u32, env: Env, data: &[u8]) {
        self.direct.took(src);
        // The blocking receive posted in place of a request comes first.
        if self.alone.is_some() && self.arrive_alone(src, &env, data) {
            return;
        }
        let hit = self
            .posted
            .iter()
            .position(|p| matches(src, &env, p.ctx, p.src, p.tag));
        match hit {
            // A receive waits: the bytes go straight from the FIFO's (or
            // the ring's) copy into it (no copy of our own kept).
            Some(i) if env.kind == Kind::Eager => {
                let id = self.unpost(i, Some(false));
                self.stats.received(env.len, true);
                self.deliver_eager(id, src, &env, data);
            }
            Some(i) => {
                let id = self.unpost(i, Some(false));
                self.stats.received(env.len, true);
                self.deliver(id, Msg::new(src, env, data));
            }
            None => {
                self.unexpected.push_back(Msg::new(src, env, data));
                self.events += 1;
            }
        }
    }

    /// Hands message `m` to matched receive `id`.
    fn deliver(&mut self, id: usize, m: Msg) {
        let body = match &m.body {
            Body::Rts { key, addr } => Arrived::Rts {
                key: *key,
                addr: *addr,
            },
            b => Arrived::Eager(b.eager().unwrap_or_default()),
        };
        self.deliver_parts(id, m.src, &m.env, body);
    }

    /// Hands an eager message's bytes, still in the FIFO's copy, to
    /// matched receive `id`.
    fn deliver_eager(&mut self, id: usize, src: u32, env: &Env, data: &[u8]) {
        self.deliver_parts(id, src, env, Arrived::Eager(data));
    }

    /// Segment `key` of same-node task `src`, mapped here (kept for the
    /// next rendezvous from it): the mapping and where it starts in `src`.
    fn peer_map(&mut self, src: u32, key: u64) -> Option<(sss_mbcf::PeerMap, u64)> {
        if self.task.transport_to(src) != Some(sss_mbcf::TransportKind::Shm) {
            return None;
        }
        if let Some(m) = self.peer_maps.get(&(src, key)) {
            return Some(m.clone());
        }
        let m = self.task.map_peer_key(src, key).ok()?;
        // Staging segments are few and long-lived; a bounded cache keeps
        // a sender that frees and allocates them from piling up mappings.
        if self.peer_maps.len() >= PEER_MAPS {
            self.peer_maps.clear();
        }
        self.peer_maps.insert((src, key), m.clone());
        Some(m)
    }

    fn deliver_parts(&mut self, id: usize, src: u32, env: &Env, body: Arrived<'_>) {
        // Data left in a same-node sender's own buffer is read from its
        // process; staged data is copied straight from the segment,
        // mapped here: one copy fewer than a READ, and no wait.
        let peer_read = matches!(body, Arrived::Rts { .. }) && env.flags & FLAG_PEER_READ != 0;
        let pid = if peer_read { self.peer_pid(src) } else { None };
        let direct = match body {
            Arrived::Rts { .. } if peer_read => None,
            Arrived::Rts { key, addr } => self
                .peer_map(src, key)
                .map(|(m, base)| (m, addr.wrapping_sub(base))),
            Arrived::Eager(_) => None,
        };
        let Some(Req {
            status,
            kind: ReqKind::Recv(r),
            done,
            ..
        }) = self.reqs.get_mut(&id)
        else {
            return;
        };
        status.source = crate::objects::group_rank(&r.group, src);
        status.tag = env.tag;
        let cap = r.buf.cap();
        let n = (env.len as usize).min(cap);
        status.count = n as u64;
        if env.len as usize > cap {
            status.error = err::TRUNCATE;
        }
        match body {
            Arrived::Eager(d) => {
                r.buf.fill(d);
                *done = true;
                self.events += 1;
                if env.flags & FLAG_SYNC != 0 {
                    let ack = Env::control(Kind::SyncAck, env.sreq).encode(&[]);
                    self.enqueue(src, ack, None);
                }
            }
            Arrived::Rts { addr, .. } if peer_read => {
                let ok = pid.is_some_and(|p| crate::buf::read_peer(p, addr, r.buf.slice(n)));
                if ok {
                    r.buf.commit();
                } else {
                    status.error = err::OTHER;
                }
                *done = true;
                self.events += 1;
                if ok {
                    self.stats.peer_read_msgs += 1;
                    self.stats.peer_read_bytes += n as u64;
                }
                // Failed or not, the sender may have its buffer back.
                let b = Env::control(Kind::Fin, env.sreq).encode(&[]);
                self.enqueue(src, b, None);
            }
            Arrived::Rts { .. }
                if direct.as_ref().is_some_and(|(m, off)| {
                    crate::buf::copy_from_peer(m, *off, r.buf.slice(n))
                }) =>
            {
                r.buf.commit();
                *done = true;
                self.events += 1;
                self.stats.direct_msgs += 1;
                self.stats.direct_bytes += n as u64;
                let b = Env::control(Kind::Fin, env.sreq).encode(&[]);
                self.enqueue(src, b, None);
            }
            // Across the network: the sender writes it straight into
            // the receive buffer, registered for it.
            Arrived::Rts { .. }
                if n > 0
                    && self.task.transport_to(src) != Some(sss_mbcf::TransportKind::Shm)
                    && self.peers.get(src as usize).is_some() =>
            {
                match crate::buf::register_receive(&self.task, r.buf.slice(n)) {
                    Ok(seg) => {
                        let at = seg.info().at(0);
                        let mut cts = Env::control(Kind::Cts, env.sreq);
                        cts.key = at.key;
                        cts.addr = at.addr;
                        cts.len = n as u64;
                        self.awaiting.insert(at.key, (id, src, seg));
                        self.enqueue(src, cts.encode(&[]), None);
                    }
                    Err(e) => {
                        status.error = mbcf_err(e).class;
                        *done = true;
                        self.events += 1;
                        let b = Env::control(Kind::Fin, env.sreq).encode(&[]);
                        self.enqueue(src, b, None);
                    }
                }
            }
            Arrived::Rts { key, addr } => {
                let mut err_class = 0;
                for off in (0..n).step_by(READ_CHUNK) {
                    let at = RemoteAddr {
                        rank: src,
                        key,
                        addr: addr.wrapping_add(off as u64),
                    };
                    match self
                        .task
                        .read(at, (n - off).min(READ_CHUNK), Options::default())
                    {
                        Ok(q) => r.reads.push((q, off)),
                        Err(e) => err_class = mbcf_err(e).class,
                    }
                }
                if err_class != 0 {
                    status.error = err_class;
                }
                r.fin = Some((src, env.sreq));
                self.reading.push(id);
                self.finish_reads();
            }
        }
    }

    /// Completes receives whose READs are all done.
    fn finish_reads(&mut self) {
        let mut i = 0;
        while i < self.reading.len() {
            let id = self.reading[i];
            let Some(Req {
                status,
                kind: ReqKind::Recv(r),
                done,
                ..
            }) = self.reqs.get_mut(&id)
            else {
                self.reading.swap_remove(i);
                continue;
            };
            if !r.reads.iter().all(|(q, _)| q.is_done()) {
                i += 1;
                continue;
            }
            let n = status.count as usize;
            let out = r.buf.slice(n);
            for (q, off) in r.reads.drain(..) {
                match q.wait_data() {
                    Ok(d) => {
                        let end = (off + d.len()).min(out.len());
                        if off < end {
                            sss_mbcf::copy_bytes(&mut out[off..end], &d[..end - off]);
                        }
                    }
                    Err(e) => status.error = mbcf_err(e).class,
                }
            }
            r.buf.commit();
            *done = true;
            self.events += 1;
            let fin = r.fin.take();
            self.reading.swap_remove(i);
            if let Some((src, sreq)) = fin {
                let b = Env::control(Kind::Fin, sreq).encode(&[]);
                self.enqueue(src, b, None);
            }
        }
    }

    /// Whether anything may have arrived that `progress` would act on.
    pub(crate) fn has_work(&self) -> bool {
        !self.fifo.is_empty()
            || !self.self_inbox.is_empty()
            || self.reading.iter().any(|id| {
                matches!(self.reqs.get(id), Some(Req { kind: ReqKind::Recv(r), .. })
                    if r.reads.iter().all(|(q, _)| q.is_done()))
            })
            || self.writing.iter().any(|id| {
                matches!(self.reqs.get(id), Some(Req { kind: ReqKind::Send { wait: SendWait::Written(q), .. }, .. })
                    if q.is_done())
            })
            || (0..self.size).any(|w| !self.outbox[w as usize].is_empty() && self.credit_ok(w))
    }

    /// The data of a completed receive into an owned buffer (empty for
    /// any other request).
    pub(crate) fn take_data(&mut self, id: usize) -> Vec<u8> {
        match self.reqs.get_mut(&id) {
            Some(Req {
                kind: ReqKind::Recv(r),
                ..
            }) => match &mut r.buf {
                Dest::Own { data, .. } => std::mem::take(data),
                Dest::User(_) | Dest::Typed { .. } => Vec::new(),
            },
            _ => Vec::new(),
        }
    }

    /// Forgets request `id` once it completes (`MPI_Request_free`).
    pub(crate) fn detach(&mut self, id: usize) -> Result<(), MpiErr> {
        match self.reqs.get(&id) {
            None => Err(MpiErr::new(
                err::REQUEST,
                format!("invalid request {id:#x}"),
            )),
            Some(r) if r.done => {
                self.reqs.remove(&id);
                Ok(())
            }
            Some(_) => {
                self.detached.push(id);
                Ok(())
            }
        }
    }

    /// Removes a completed request; its status.
    pub(crate) fn take(&mut self, id: usize) -> Option<St> {
        match self.reqs.get(&id) {
            Some(r) if r.done => self.reqs.remove(&id).map(|r| r.status),
            _ => None,
        }
    }

    /// Cancels a receive not yet matched; false if it was matched.
    pub(crate) fn cancel_recv(&mut self, id: usize) -> bool {
        let Some(i) = self.posted.iter().position(|p| p.id == id) else {
            return false;
        };
        if self.posted[i].note != direct::Note::No {
            // Its sender may have a message bound for it: ask first.
            return self.revoke(i);
        }
        self.posted.remove(i);
        self.cancelled(id);
        true
    }

    /// Completes receive `id` as cancelled.
    fn cancelled(&mut self, id: usize) {
        if let Some(r) = self.reqs.get_mut(&id) {
            r.done = true;
            r.status.cancelled = true;
            self.events += 1;
        }
    }

    /// Messages still in outboxes (to flush at finalize).
    pub(crate) fn unsent(&self) -> usize {
        self.outbox.iter().map(VecDeque::len).sum()
    }
}

/// A receive request into `buf` not yet matched; `peer` is the task
/// expected to complete it, `group` the communicator's (for the source).
fn recv_req(comm: usize, peer: Option<u32>, buf: Dest, group: Arc<Vec<u32>>) -> Req {
    Req {
        comm,
        done: false,
        status: St::default(),
        peer,
        kind: ReqKind::Recv(RecvState {
            buf,
            group,
            reads: Vec::new(),
            fin: None,
        }),
    }
}

/// A request already complete (`MPI_PROC_NULL`).
fn done_req(comm: usize, source: i32, tag: i32) -> Req {
    Req {
        comm,
        done: true,
        status: St {
            source,
            tag,
            ..St::default()
        },
        peer: None,
        kind: ReqKind::Send {
            dest: u32::MAX,
            wait: SendWait::Outbox,
        },
    }
}

fn matches(src: u32, env: &Env, ctx: u32, want_src: Option<u32>, want_tag: Option<i32>) -> bool {
    env.ctx == ctx && want_src.is_none_or(|s| s == src) && want_tag.is_none_or(|t| t == env.tag)
}

#[cfg(test)]
mod tests {
    use super::{Body, Kind, Msg, INLINE};
    use crate::envelope::Env;

    fn eager(len: usize) -> Env {
        Env {
            kind: Kind::Eager,
            flags: 0,
            ctx: 1,
            tag: 2,
            len: len as u64,
            sreq: 0,
            key: 0,
            addr: 0,
        }
    }

    /// An unexpected eager message keeps its bytes inline up to
    /// [`INLINE`], in a vector beyond; a rendezvous keeps none.
    #[test]
    fn unexpected_messages_keep_their_bytes() {
        for len in [0, 1, INLINE - 1, INLINE, INLINE + 1, 4096] {
            let data: Vec<u8> = (0..len).map(|i| i as u8 ^ 0x5a).collect();
            let m = Msg::new(3, eager(len), &data);
            assert_eq!(m.body.eager(), Some(&data[..]), "{len} bytes");
            assert_eq!(matches!(m.body, Body::Small { .. }), len <= INLINE);
        }
        let rts = Env {
            kind: Kind::Rts,
            ..eager(1 << 20)
        };
        let m = Msg::new(3, rts, &[]);
        assert!(m.body.eager().is_none());
    }
}
