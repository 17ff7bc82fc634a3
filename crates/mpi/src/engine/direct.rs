//! A receive posted first, written straight into by its sender.
//!
//! A receive from one task across the network, posted before its
//! message comes, tells that sender so (a NOTICE in the sender's FIFO):
//! where it stands in the receiver's order (`seq`: how many of the
//! sender's messages the receiver had taken when it posted it), what it
//! matches (context, tag or any) and, when its buffer is large, the
//! buffer registered as an MBCF segment. The sender keeps a picture of
//! the receiver's posted receives for it ([`Toward`]) and, for each
//! message it sends, knows which of them the message will meet: MPI's
//! matching gives a message to the first receive posted before it that
//! it fits, and the sender sees the same receives in the same order (one
//! task's FIFO messages arrive in order) against the same messages. A
//! message bound for a registered receive that it fits is written there
//! with one MBCF WRITE, and a DIRECT envelope after it completes the
//! receive: no ring, no rendezvous, no copy at the receiver.
//!
//! The picture must be whole where it binds: the receiver notices a
//! receive only when every receive posted before it that could take a
//! message it could take (same context, tags equal or either any; from
//! that sender, from anyone, or the blocking receive in place of a
//! request) was noticed first; small ones are noticed then, without a
//! buffer, in order. Receives that never compete for a message may
//! reach the sender in either order. A NOTICE that reaches the
//! sender after messages it sent since the receive was posted is
//! checked against the last [`HISTORY`] of them: the first that fits
//! it took it. Older than that, or past [`MAX_NOTES`] receives kept,
//! the sender stops writing directly to that receiver for good and says
//! so (NODIRECT). A receive withdrawn (`MPI_Cancel`) asks the sender
//! first (REVOKE, answered REVOKED in order with the sender's messages):
//! the cancel succeeds only if no message was bound for it.

use super::{matches, Dest, Engine, MpiErr, Posted, Req, ReqKind, SendWait};
use crate::consts::ANY_TAG;
use crate::envelope::{Env, Kind};
use sss_mbcf::{Options, RemoteAddr, Segment};
use std::collections::{HashMap, VecDeque};

/// Messages sent to one receiver remembered for NOTICEs still on their
/// way.
pub(crate) const HISTORY: usize = 256;
/// Receives of one receiver kept noticed at most.
pub(crate) const MAX_NOTES: usize = 4096;

/// A receive posted first, as its receiver described it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Notice {
    /// The receive's request at the receiver (names it in DIRECT and
    /// REVOKE).
    pub rid: u64,
    pub ctx: u32,
    /// Its tag, or any.
    pub tag: Option<i32>,
    /// Messages of ours the receiver had taken when it posted it.
    pub seq: u64,
    /// Its buffer registered for our WRITE (0: not registered), the
    /// address and the bytes there.
    pub key: u64,
    pub addr: u64,
    pub cap: u64,
}

impl Notice {
    fn fits(&self, ctx: u32, tag: i32) -> bool {
        self.ctx == ctx && self.tag.is_none_or(|t| t == tag)
    }
}

/// A message sent, for NOTICEs that arrive after it.
#[derive(Debug, Clone, Copy)]
struct Sent {
    ctx: u32,
    tag: i32,
    /// Bound for a noticed receive (known when sent, or found since).
    taken: bool,
}

/// What became of a NOTICE.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Noticed {
    /// Kept: the next message that fits it goes there.
    Kept,
    /// A message already sent took it.
    Taken,
    /// The picture cannot be kept whole any more: direct writes to this
    /// receiver stop (tell it, once).
    Off,
    /// Direct writes to this receiver had stopped already.
    Ignored,
    /// Impossible from a well-behaved receiver (it claims messages we
    /// never sent).
    Bad,
}

/// The sender's picture of one receiver's posted receives.
#[derive(Debug, Default)]
pub(crate) struct Toward {
    /// Messages sent to it that it matches (its `seq` counts the same).
    issued: u64,
    /// Receives not yet taken, in its posting order.
    notes: VecDeque<Notice>,
    /// The last messages sent, oldest first; the last is `issued - 1`.
    sent: VecDeque<Sent>,
    /// Direct writes stopped.
    off: bool,
    /// `issued` when the last NOTICE came (`None`: none ever did).
    heard: Option<u64>,
}

/// Messages sent to a receiver since its last NOTICE after which the
/// sender stops looking for one before a large send.
const QUIET_AFTER: u64 = 64;

impl Toward {
    /// The next message to the receiver (context `ctx`, tag `tag`) is
    /// sent: the noticed receive it will meet there, if one is known. It
    /// is taken either way; only a receive with a registered buffer that
    /// the message fits can be written directly.
    pub(crate) fn issue(&mut self, ctx: u32, tag: i32) -> Option<Notice> {
        self.issued += 1;
        if self.off {
            return None;
        }
        let hit = self
            .notes
            .iter()
            .position(|n| n.fits(ctx, tag))
            .and_then(|i| self.notes.remove(i));
        if self.sent.len() == HISTORY {
            self.sent.pop_front();
        }
        self.sent.push_back(Sent {
            ctx,
            tag,
            taken: hit.is_some(),
        });
        hit
    }

    /// A NOTICE arrived.
    pub(crate) fn noticed(&mut self, n: Notice) -> Noticed {
        if self.off {
            return Noticed::Ignored;
        }
        self.heard = Some(self.issued);
        if n.seq > self.issued {
            return Noticed::Bad;
        }
        let since = (self.issued - n.seq) as usize;
        if since > self.sent.len() || self.notes.len() >= MAX_NOTES {
            self.stop();
            return Noticed::Off;
        }
        let first = self.sent.len() - since;
        // Earlier receives were noticed (and took their messages) first:
        // the first message since that fits it and nothing took is its.
        if let Some(s) = self
            .sent
            .range_mut(first..)
            .find(|s| !s.taken && n.fits(s.ctx, s.tag))
        {
            s.taken = true;
            return Noticed::Taken;
        }
        self.notes.push_back(n);
        Noticed::Kept
    }

    /// The receiver withdraws receive `rid`: no message of ours may go
    /// to it any more (ours in flight have been decided already).
    pub(crate) fn revoke(&mut self, rid: u64) {
        self.notes.retain(|n| n.rid != rid);
    }

    /// Direct writes to this receiver end.
    pub(crate) fn stop(&mut self) {
        self.off = true;
        self.notes = VecDeque::new();
        self.sent = VecDeque::new();
    }

    /// Whether the receiver sent NOTICEs lately: worth a look for one
    /// before a large send (it stops when notices do not pay it).
    pub(crate) fn expects_notices(&self) -> bool {
        !self.off
            && self
                .heard
                .is_some_and(|h| self.issued.saturating_sub(h) < QUIET_AFTER)
    }

    /// Direct writes stopped.
    #[cfg(test)]
    pub(crate) fn is_off(&self) -> bool {
        self.off
    }
}

/// Whether two receives could take the same message (of one sender).
/// The sender's picture needs, before a noticed receive, every receive
/// posted earlier that overlaps it; others never compete with it.
fn overlap(ctx: u32, tag: Option<i32>, ctx2: u32, tag2: Option<i32>) -> bool {
    ctx == ctx2 && (tag.is_none() || tag2.is_none() || tag == tag2)
}

/// What notices to one sender have earned: a registered receive its
/// message was written into earns [`GAIN`]; one it filled with a plain
/// message (too small to write, or sent before our NOTICE reached it:
/// a blocking ping-pong, where the notice races the answer) costs
/// [`COST`] above the ring's sizes and [`COST_SMALL`] within them, where
/// a write saves only a copy and a notice costs a datagram that wakes
/// the sender's progress thread. At 0 we stop noticing that sender...
const START: i32 = 8;
const MAX_SCORE: i32 = 32;
const GAIN: i32 = 1;
const COST: i32 = 1;
const COST_SMALL: i32 = 3;
/// ...until this many of its receives later, when we try again.
const RETRY_AFTER: u32 = 256;

/// What a posted receive's sender was told of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Note {
    No,
    Sent,
    /// Sent, then REVOKE: cancelled at the REVOKED, unless a message
    /// takes it first.
    Revoking,
}

/// Both sides of the protocol in one task, per peer.
#[derive(Debug)]
pub(super) struct Direct {
    /// Across the network: the only peers it runs with.
    remote: Vec<bool>,
    /// As their sender: our picture of their receives.
    toward: Vec<Toward>,
    /// As their receiver: their messages we took.
    taken: Vec<u64>,
    /// They write nothing directly any more (their NODIRECT).
    off: Vec<bool>,
    /// What notices to them earned (see [`START`]).
    score: Vec<i32>,
    /// Receives not noticed since the score fell to 0.
    skipped: Vec<u32>,
    /// Registered buffers of noticed receives, by request.
    segs: HashMap<usize, Segment>,
}

/// `SSS_MPI_DIRECT` (read at `MPI_Init`): `on` (default) or `off`, which
/// sends no notice and writes nothing directly.
pub(super) fn enabled_from_env() -> Result<bool, MpiErr> {
    parse_enabled(std::env::var("SSS_MPI_DIRECT").ok().as_deref())
}

fn parse_enabled(v: Option<&str>) -> Result<bool, MpiErr> {
    crate::objects::on_off("SSS_MPI_DIRECT", v)
}

impl Direct {
    /// `remote`: per task, across the network from us and the protocol
    /// on (nothing is noticed to or written directly to the others).
    pub(super) fn new(remote: Vec<bool>) -> Direct {
        let n = remote.len();
        Direct {
            remote,
            toward: (0..n).map(|_| Toward::default()).collect(),
            taken: vec![0; n],
            off: vec![false; n],
            score: vec![START; n],
            skipped: vec![0; n],
            segs: HashMap::new(),
        }
    }

    /// A message to `w` is sent: the noticed receive it meets there.
    pub(super) fn issue(&mut self, w: u32, ctx: u32, tag: i32) -> Option<Notice> {
        let w = w as usize;
        if !self.remote.get(w).copied().unwrap_or(false) {
            return None;
        }
        self.toward[w].issue(ctx, tag)
    }

    /// A message of `src` was taken (matched, or queued unexpected).
    pub(super) fn took(&mut self, src: u32) {
        if let Some(t) = self.taken.get_mut(src as usize) {
            *t += 1;
        }
    }

    /// Whether a NOTICE from `w` may be on its way: `w` is across the
    /// network and sent some lately.
    pub(super) fn expects_notices(&self, w: u32) -> bool {
        self.remote(w) && self.toward[w as usize].expects_notices()
    }

    fn remote(&self, w: u32) -> bool {
        self.remote.get(w as usize).copied().unwrap_or(false)
    }
}

impl Engine {
    /// Posts receive `id` (last in order) and tells its sender when that
    /// can pay.
    pub(super) fn post(&mut self, id: usize, ctx: u32, src: Option<u32>, tag: Option<i32>) {
        let notice = self.wants_notice(id, ctx, src, tag);
        self.posted.push(Posted {
            id,
            ctx,
            src,
            tag,
            seq: src.map_or(0, |s| {
                self.direct.taken.get(s as usize).copied().unwrap_or(0)
            }),
            note: Note::No,
        });
        if notice {
            self.notice_last();
        }
    }

    /// Whether a receive from `src` into `buf` may be worth a notice: a
    /// task across the network that still writes directly, a contiguous
    /// buffer above what goes eagerly, and notices to it paying.
    pub(super) fn could_notice(&self, src: Option<u32>, buf: &Dest) -> bool {
        let Some(s) = src else { return false };
        let i = s as usize;
        !self.unnoticed
            && self.direct.remote(s)
            && !self.direct.off[i]
            && matches!(buf, Dest::User(u) if u.len() > self.eager[i])
            && self.direct.score[i] > 0
    }

    /// Whether receive `id`, about to be posted, gets a notice: worth it,
    /// and every receive before it that could take its sender's messages
    /// can be noticed too (none from any source, nor the blocking one).
    fn wants_notice(&mut self, id: usize, ctx: u32, src: Option<u32>, tag: Option<i32>) -> bool {
        let Some(Req {
            kind: ReqKind::Recv(r),
            ..
        }) = self.reqs.get(&id)
        else {
            return false;
        };
        if !self.could_notice(src, &r.buf) {
            if let Some(i) = src.map(|s| s as usize).filter(|&i| self.direct.remote[i]) {
                if self.direct.score[i] <= 0 {
                    self.direct.skipped[i] += 1;
                    if self.direct.skipped[i] >= RETRY_AFTER {
                        self.direct.skipped[i] = 0;
                        self.direct.score[i] = START;
                    }
                }
            }
            return false;
        }
        let s = src.unwrap_or(u32::MAX);
        if self.alone.as_ref().is_some_and(|a| a.could_take(ctx, s)) {
            return false;
        }
        !self
            .posted
            .iter()
            .any(|p| p.src.is_none() && overlap(p.ctx, p.tag, ctx, tag))
    }

    /// Registers the last posted receive's buffer and sends its NOTICE,
    /// after one without a buffer for each receive before it its sender
    /// was not told of yet.
    fn notice_last(&mut self) {
        let Some(&p) = self.posted.last() else { return };
        let Some(s) = p.src else { return };
        let Some(Req {
            kind: ReqKind::Recv(r),
            ..
        }) = self.reqs.get_mut(&p.id)
        else {
            return;
        };
        let cap = r.buf.cap();
        let Ok(seg) = crate::buf::register_receive(&self.task, r.buf.slice(cap)) else {
            return;
        };
        let at = seg.info().at(0);
        self.direct.segs.insert(p.id, seg);
        let last = self.posted.len() - 1;
        for i in 0..last {
            let q = self.posted[i];
            if q.src == Some(s) && q.note == Note::No && overlap(q.ctx, q.tag, p.ctx, p.tag) {
                self.posted[i].note = Note::Sent;
                self.stats.notice_placeholders += 1;
                self.send_notice(s, &q, 0, 0, 0);
            }
        }
        self.posted[last].note = Note::Sent;
        self.stats.notices += 1;
        self.send_notice(s, &p, at.key, at.addr, cap as u64);
    }

    fn send_notice(&mut self, s: u32, q: &Posted, key: u64, addr: u64, cap: u64) {
        let env = Env {
            kind: Kind::Notice,
            flags: 0,
            ctx: q.ctx,
            tag: q.tag.unwrap_or(ANY_TAG),
            len: cap,
            sreq: q.id as u64,
            key,
            addr,
        };
        self.enqueue(s, env.encode(&q.seq.to_le_bytes()), None);
    }

    /// Writes `data` into noticed receive `n` of `w` when it fits; the
    /// receive, the message's number toward `w` (for its DIRECT) and, for one above
    /// the ring's sizes, the WRITE's request (done when applied there:
    /// the send waits for it, so that its caller's wait drives a long
    /// transfer rather than the next wait, which would outlast its spin
    /// and block); `None`: send it the usual way (it meets that receive
    /// all the same).
    pub(super) fn write_direct(
        &mut self,
        w: u32,
        n: &Notice,
        data: &[u8],
    ) -> Option<(u64, u64, Option<sss_mbcf::Request>)> {
        if n.key == 0 || data.len() as u64 > n.cap {
            return None;
        }
        let at = RemoteAddr {
            rank: w,
            key: n.key,
            addr: n.addr,
        };
        let long = data.len() > super::ring::RING_MAX;
        let opts = Options {
            status_return: long,
            ..Options::default()
        };
        let q = self.task.write(at, data, opts).ok()?;
        self.stats.write_msgs += 1;
        self.stats.write_bytes += data.len() as u64;
        self.stats.direct_writes += 1;
        let number = self.direct.toward[w as usize].issued - 1;
        Some((n.rid, number, long.then_some(q)))
    }

    /// Completes sends whose direct WRITE was applied.
    pub(super) fn finish_writes(&mut self) {
        let mut i = 0;
        while i < self.writing.len() {
            let id = self.writing[i];
            let done = match self.reqs.get(&id) {
                Some(Req {
                    kind:
                        ReqKind::Send {
                            wait: SendWait::Written(q),
                            ..
                        },
                    ..
                }) => q.is_done(),
                _ => {
                    self.writing.swap_remove(i);
                    continue;
                }
            };
            if !done {
                i += 1;
                continue;
            }
            self.writing.swap_remove(i);
            if let Some(r) = self.reqs.get_mut(&id) {
                if let ReqKind::Send { wait, .. } = &mut r.kind {
                    if let SendWait::Written(q) = std::mem::replace(wait, SendWait::Outbox) {
                        if let Err(e) = q.wait() {
                            r.status.error = super::mbcf_err(e).class;
                        }
                    }
                }
            }
            self.complete_send(Some(id));
        }
    }

    /// Removes posted receive `i`, freeing what was registered for it;
    /// `written`: taken by a DIRECT or by a plain message (`None`:
    /// cancelled).
    pub(super) fn unpost(&mut self, i: usize, written: Option<bool>) -> usize {
        let p = self.posted.remove(i);
        if let Some(seg) = self.direct.segs.remove(&p.id) {
            let small = seg.info().len <= super::ring::RING_MAX as u64;
            let _ = self.task.free(seg);
            let score = p.src.and_then(|s| self.direct.score.get_mut(s as usize));
            match (score, written) {
                (Some(v), Some(true)) => *v = (*v + GAIN).min(MAX_SCORE),
                (Some(v), Some(false)) => *v -= if small { COST_SMALL } else { COST },
                _ => {}
            }
        }
        p.id
    }

    /// A message counted for `w` did not leave: its picture of our
    /// messages is no longer ours; direct writes to it stop.
    pub(super) fn direct_lost(&mut self, w: u32) {
        let Some(t) = self.direct.toward.get_mut(w as usize) else {
            return;
        };
        if self.direct.remote[w as usize] && !t.off {
            t.stop();
            self.stats.direct_stops += 1;
            self.enqueue(w, Env::control(Kind::NoDirect, 0).encode(&[]), None);
        }
    }

    /// A receiver's NOTICE of a receive for us.
    pub(super) fn notice_arrived(&mut self, src: u32, env: &Env, data: &[u8]) {
        let seq = data.try_into().map(u64::from_le_bytes);
        let tag = match env.tag {
            ANY_TAG => Some(None),
            t if t >= 0 => Some(Some(t)),
            _ => None,
        };
        let (true, Ok(seq), Some(tag)) = (self.direct.remote(src), seq, tag) else {
            self.bad_msgs += 1;
            return;
        };
        let n = Notice {
            rid: env.sreq,
            ctx: env.ctx,
            tag,
            seq,
            key: env.key,
            addr: env.addr,
            cap: env.len,
        };
        match self.direct.toward[src as usize].noticed(n) {
            Noticed::Off => {
                self.stats.direct_stops += 1;
                self.enqueue(src, Env::control(Kind::NoDirect, 0).encode(&[]), None);
            }
            Noticed::Bad => self.bad_msgs += 1,
            Noticed::Kept | Noticed::Taken | Noticed::Ignored => {}
        }
    }

    /// A message written into noticed receive `env.key`.
    pub(super) fn direct_arrived(&mut self, src: u32, env: &Env) {
        self.direct.took(src);
        let i = self
            .posted
            .iter()
            .position(|p| p.id as u64 == env.key && p.src == Some(src) && p.note != Note::No);
        let fits = |e: &Engine, id: usize| {
            e.direct
                .segs
                .get(&id)
                .is_some_and(|s| env.len <= s.info().len)
        };
        let Some(i) = i.filter(|&i| fits(self, self.posted[i].id)) else {
            self.bad_msgs += 1;
            return;
        };
        // The sender's picture bound it to the first receive it matches:
        // check, and count any disagreement (none is possible from a
        // well-behaved sender).
        let first = self
            .posted
            .iter()
            .position(|p| matches(src, env, p.ctx, p.src, p.tag));
        let alone = self
            .alone
            .as_ref()
            .is_some_and(|a| a.could_take(env.ctx, src));
        if first != Some(i) || alone || self.direct.taken[src as usize] != env.addr.wrapping_add(1)
        {
            self.stats.direct_misordered += 1;
        }
        let id = self.unpost(i, Some(true));
        self.stats.received(env.len, true);
        self.stats.direct_received += 1;
        if let Some(Req {
            status,
            kind: ReqKind::Recv(r),
            done,
            ..
        }) = self.reqs.get_mut(&id)
        {
            status.source = crate::objects::group_rank(&r.group, src);
            status.tag = env.tag;
            status.count = env.len;
            r.buf.commit();
            *done = true;
            self.events += 1;
        }
        self.sync_ack(src, env);
    }

    /// Cancels noticed receive `i`: asks its sender first.
    pub(super) fn revoke(&mut self, i: usize) -> bool {
        let p = self.posted[i];
        if p.note == Note::Sent {
            if let Some(s) = p.src {
                self.posted[i].note = Note::Revoking;
                let b = Env::control(Kind::Revoke, p.id as u64).encode(&[]);
                self.enqueue(s, b, None);
            }
        }
        true
    }

    /// A receiver withdraws a receive it noticed us.
    pub(super) fn revoke_asked(&mut self, src: u32, env: &Env) {
        if !self.direct.remote(src) {
            self.bad_msgs += 1;
            return;
        }
        self.direct.toward[src as usize].revoke(env.sreq);
        let b = Env::control(Kind::Revoked, env.sreq).encode(&[]);
        self.enqueue(src, b, None);
    }

    /// The sender answered our REVOKE: the receive, if no message took
    /// it meanwhile, is cancelled.
    pub(super) fn revoked(&mut self, src: u32, env: &Env) {
        let i = self.posted.iter().position(|p| {
            p.id as u64 == env.sreq && p.src == Some(src) && p.note == Note::Revoking
        });
        if let Some(i) = i {
            let id = self.unpost(i, None);
            self.cancelled(id);
        }
    }

    /// `src` writes nothing directly any more: its noticed receives are
    /// plain ones (those being cancelled, cancelled: no message of it is
    /// bound for them after this one).
    pub(super) fn no_direct(&mut self, src: u32) {
        let Some(off) = self.direct.off.get_mut(src as usize) else {
            self.bad_msgs += 1;
            return;
        };
        *off = true;
        let mut i = 0;
        while i < self.posted.len() {
            let p = self.posted[i];
            if p.src != Some(src) || p.note == Note::No {
                i += 1;
                continue;
            }
            if let Some(seg) = self.direct.segs.remove(&p.id) {
                let _ = self.task.free(seg);
            }
            if p.note == Note::Revoking {
                self.posted.remove(i);
                self.cancelled(p.id);
            } else {
                self.posted[i].note = Note::No;
                i += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn note(rid: u64, ctx: u32, tag: Option<i32>, seq: u64) -> Notice {
        Notice {
            rid,
            ctx,
            tag,
            seq,
            key: rid,
            addr: 0,
            cap: 100,
        }
    }

    #[test]
    fn the_switch_reads_on_and_off_and_refuses_the_rest() {
        assert!(parse_enabled(None).unwrap());
        assert!(parse_enabled(Some(" on ")).unwrap());
        assert!(!parse_enabled(Some("off")).unwrap());
        assert!(!parse_enabled(Some("0")).unwrap());
        let e = parse_enabled(Some("maybe")).unwrap_err();
        assert!(e.msg.contains("SSS_MPI_DIRECT"), "{}", e.msg);
    }

    #[test]
    fn a_notice_arriving_late_is_checked_against_what_was_sent() {
        let mut t = Toward::default();
        assert_eq!(t.issue(0, 5), None);
        assert_eq!(t.issue(0, 7), None);
        // Posted before both messages arrived: the tag-7 one took it.
        assert_eq!(t.noticed(note(1, 0, Some(7), 0)), Noticed::Taken);
        // Posted after it and also fitting tag 7: that message was taken,
        // so it waits for the next.
        assert_eq!(t.noticed(note(2, 0, None, 0)), Noticed::Taken);
        assert_eq!(t.noticed(note(3, 0, None, 0)), Noticed::Kept);
        assert_eq!(t.issue(1, 7), None, "other context");
        assert_eq!(t.issue(0, 9).map(|n| n.rid), Some(3));
        assert_eq!(t.noticed(note(4, 0, None, 9)), Noticed::Bad);
    }

    #[test]
    fn a_sender_looks_for_notices_only_while_they_come() {
        let mut t = Toward::default();
        assert!(!t.expects_notices(), "none ever came");
        t.issue(0, 0);
        assert_eq!(t.noticed(note(1, 0, None, 1)), Noticed::Kept);
        assert!(t.expects_notices());
        for _ in 0..QUIET_AFTER {
            t.issue(0, 0);
        }
        assert!(!t.expects_notices(), "the receiver went quiet");
        t.noticed(note(2, 0, None, QUIET_AFTER + 1));
        assert!(t.expects_notices());
        t.stop();
        assert!(!t.expects_notices());
    }

    #[test]
    fn a_notice_older_than_the_history_stops_direct_writes() {
        let mut t = Toward::default();
        for _ in 0..=HISTORY {
            t.issue(0, 0);
        }
        assert_eq!(t.noticed(note(1, 0, None, 0)), Noticed::Off);
        assert!(t.is_off());
        assert_eq!(t.noticed(note(2, 0, None, 300)), Noticed::Ignored);
        assert_eq!(t.issue(0, 0), None);
    }

    /// A model of the receiver (MPI's matching, message by message) and
    /// the sender's picture, with FIFOs between them delivering in order
    /// at random moments: every message the picture binds to a receive
    /// meets that receive at the receiver, and a cancel succeeds only
    /// when no message was bound for the receive.
    #[test]
    fn the_picture_agrees_with_the_receivers_matching() {
        // A small deterministic generator: no dependency for one test.
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        #[derive(Debug)]
        enum ToS {
            Notice(Notice),
            Revoke(u64),
        }
        #[derive(Debug)]
        enum ToR {
            /// A message and the receive the picture bound it to.
            Msg(u32, i32, Option<u64>),
            Revoked(u64),
        }
        let mut bound = 0;
        for _round in 0..300 {
            let mut t = Toward::default();
            let (mut to_s, mut to_r) = (VecDeque::new(), VecDeque::new());
            // Receiver: taken count, posted (rid, ctx, tag, revoking,
            // noticed, seq), unexpected (ctx, tag).
            let mut seen = 0u64;
            #[allow(clippy::type_complexity)]
            let mut posted: Vec<(u64, u32, Option<i32>, bool, bool, u64)> = Vec::new();
            let mut unexpected: VecDeque<(u32, i32)> = VecDeque::new();
            let mut rid = 0;
            for _ in 0..200 {
                match next(6) {
                    0 | 1 => {
                        let (ctx, tag) = (next(2) as u32, next(3) as i32);
                        let hit = t.issue(ctx, tag).map(|n| n.rid);
                        bound += u64::from(hit.is_some());
                        to_r.push_back(ToR::Msg(ctx, tag, hit));
                    }
                    2 => {
                        let ctx = next(2) as u32;
                        let tag = match next(4) {
                            3 => None,
                            t => Some(t as i32),
                        };
                        let fits = |&(c, g): &(u32, i32)| c == ctx && tag.is_none_or(|t| t == g);
                        if let Some(i) = unexpected.iter().position(fits) {
                            unexpected.remove(i);
                        } else {
                            // Small receives are noticed only before a
                            // later one they overlap, as the engine does.
                            rid += 1;
                            let noticed = next(3) != 0;
                            posted.push((rid, ctx, tag, false, noticed, seen));
                            if noticed {
                                let last = posted.len() - 1;
                                for q in &mut posted[..last] {
                                    if !q.4 && overlap(q.1, q.2, ctx, tag) {
                                        q.4 = true;
                                        to_s.push_back(ToS::Notice(note(q.0, q.1, q.2, q.5)));
                                    }
                                }
                                to_s.push_back(ToS::Notice(note(rid, ctx, tag, seen)));
                            }
                        }
                    }
                    3 if !posted.is_empty() => {
                        let i = next(posted.len() as u64) as usize;
                        if !posted[i].4 {
                            // Never noticed: cancelled at once.
                            posted.remove(i);
                        } else if !posted[i].3 {
                            posted[i].3 = true;
                            to_s.push_back(ToS::Revoke(posted[i].0));
                        }
                    }
                    4 => match to_s.pop_front() {
                        Some(ToS::Notice(n)) => {
                            assert_ne!(t.noticed(n), Noticed::Bad);
                        }
                        Some(ToS::Revoke(r)) => {
                            t.revoke(r);
                            to_r.push_back(ToR::Revoked(r));
                        }
                        None => {}
                    },
                    _ => match to_r.pop_front() {
                        Some(ToR::Msg(ctx, tag, hit)) => {
                            seen += 1;
                            let first = posted
                                .iter()
                                .position(|p| p.1 == ctx && p.2.is_none_or(|g| g == tag));
                            match first {
                                Some(i) => {
                                    let r = posted.remove(i).0;
                                    if let Some(h) = hit {
                                        assert_eq!(r, h, "bound to another receive");
                                    }
                                }
                                None => {
                                    assert_eq!(hit, None, "bound to a receive gone");
                                    unexpected.push_back((ctx, tag));
                                }
                            }
                        }
                        Some(ToR::Revoked(r)) => {
                            // Still posted: cancelled; taken: the cancel failed.
                            posted.retain(|p| p.0 != r);
                        }
                        None => {}
                    },
                }
            }
            assert!(!t.is_off(), "the history was enough");
        }
        assert!(bound > 200, "{bound} messages bound: the test saw too few");
    }
}
