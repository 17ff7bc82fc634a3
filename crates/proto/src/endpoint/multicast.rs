//! Multicast: group registration, the WRITE sent to a tree's root, and at
//! each member the forwarding to its children and the combining of their
//! acks into one for its parent.

use super::packetize::request_meta;
use super::Endpoint;
use crate::{Event, McastId, Outcome, SubmitError, Target, Time};
use sss_wire::{Body, Packet, Status, TaskId, HEADER_LEN};

/// Multicast forwarding state at an inner member.
pub(super) struct Forward {
    pub(super) parent: TaskId,
    pub(super) group: u32,
    pub(super) waiting: Vec<TaskId>,
    pub(super) count: u32,
    pub(super) status: Status,
}

impl Endpoint {
    /// Registers multicast group `group` with its members, in an order every
    /// member must agree on. Replaces an earlier registration.
    pub fn add_group(&mut self, group: u32, members: Vec<TaskId>) {
        self.groups.insert(group, members);
    }

    /// Forgets a multicast group.
    pub fn remove_group(&mut self, group: u32) {
        self.groups.remove(&group);
    }
    /// Starts a WRITE of `data` at (`key`, `addr`) in every member of
    /// `group` but this task (which applies its own copy itself, if it is a
    /// member). Completes with one [`Event::Multicast`].
    pub fn multicast(
        &mut self,
        now: Time,
        group: u32,
        key: u64,
        addr: u64,
        data: &[u8],
    ) -> Result<McastId, SubmitError> {
        let _ = now;
        let members = self.groups.get(&group).ok_or(SubmitError::UnknownGroup)?;
        if data.len() > self.cfg.payload_size {
            return Err(SubmitError::Invalid);
        }
        let receivers: Vec<TaskId> = members
            .iter()
            .copied()
            .filter(|&m| m != self.local)
            .collect();
        let id = self.mcast_next;
        self.mcast_next = self.mcast_next.wrapping_add(1);
        let mcast = McastId { group, id };
        let Some(&root) = receivers.first() else {
            self.events.push_back(Event::Multicast {
                mcast,
                members: 0,
                status: Status::Ok,
            });
            return Ok(mcast);
        };
        let arity = if receivers.len() <= self.cfg.chain_threshold {
            1
        } else {
            self.cfg.multicast_arity.max(1)
        };
        let ci = self.channel(root)?;
        let (local, epoch, send_buffer) = (self.local, self.cfg.epoch, self.cfg.send_buffer);
        let c = &mut self.chans[ci];
        if c.down {
            return Err(SubmitError::PeerDown);
        }
        if c.buffered > 0 && c.buffered + data.len() + HEADER_LEN > send_buffer {
            return Err(SubmitError::WouldBlock);
        }
        let mut meta = request_meta(
            local,
            root,
            epoch,
            Body::Multicast {
                group,
                mcast: id,
                origin: local,
                arity,
            },
        );
        meta.key = key;
        meta.addr = addr;
        meta.op = c.next_seq as u32;
        c.push(meta, data.to_vec().into());
        self.mcast_out.insert(id, (group, root));
        self.mark_ready(ci);
        Ok(mcast)
    }
    pub(super) fn multicast_received<T: Target + ?Sized>(
        &mut self,
        ci: usize,
        now: Time,
        pkt: &Packet<'_>,
        target: &mut T,
    ) {
        let _ = now;
        let Body::Multicast {
            group,
            mcast,
            origin,
            arity,
        } = pkt.body
        else {
            return;
        };
        let parent = pkt.src;
        let receivers: Option<Vec<TaskId>> = self.groups.get(&group).map(|m| {
            m.iter()
                .copied()
                .filter(|&t| t != origin)
                .collect::<Vec<_>>()
        });
        let me = receivers
            .as_ref()
            .and_then(|r| r.iter().position(|&t| t == self.local));
        let (Some(receivers), Some(me)) = (receivers, me) else {
            self.send_mcast_ack(ci, group, mcast, origin, 0, Status::NoSuchGroup);
            return;
        };
        let mut status = match self.apply(pkt, target) {
            Outcome::Failed(s) => s,
            _ => Status::Ok,
        };
        let count = u32::from(status.is_ok());
        let k = arity.max(1) as usize;
        let mut waiting = Vec::new();
        for child in receivers.iter().skip(me * k + 1).take(k).copied() {
            let Ok(cc) = self.channel(child) else {
                status = status.combine(Status::NodeDown);
                continue;
            };
            if self.chans[cc].down {
                status = status.combine(Status::NodeDown);
                continue;
            }
            let mut meta = request_meta(self.local, child, self.cfg.epoch, pkt.body);
            meta.key = pkt.key;
            meta.addr = pkt.addr;
            meta.op = self.chans[cc].next_seq as u32;
            self.send_meta(cc, meta, pkt.payload.to_vec(), false);
            waiting.push(child);
        }
        if waiting.is_empty() {
            self.send_mcast_ack(ci, group, mcast, origin, count, status);
        } else {
            self.mcast_fwd.insert(
                (origin, mcast),
                Forward {
                    parent,
                    group,
                    waiting,
                    count,
                    status,
                },
            );
        }
    }

    pub(super) fn child_acked(
        &mut self,
        key: (TaskId, u32),
        child: TaskId,
        count: u32,
        status: Status,
    ) {
        let Some(f) = self.mcast_fwd.get_mut(&key) else {
            return;
        };
        let Some(pos) = f.waiting.iter().position(|&c| c == child) else {
            return;
        };
        f.waiting.swap_remove(pos);
        f.count += count;
        f.status = f.status.combine(status);
        if !f.waiting.is_empty() {
            return;
        }
        let Some(f) = self.mcast_fwd.remove(&key) else {
            return;
        };
        if let Some(&pi) = self.index.get(&f.parent) {
            if !self.chans[pi].down {
                self.send_mcast_ack(pi, f.group, key.1, key.0, f.count, f.status);
            }
        }
    }

    fn send_mcast_ack(
        &mut self,
        ci: usize,
        group: u32,
        mcast: u32,
        origin: TaskId,
        count: u32,
        status: Status,
    ) {
        let peer = self.chans[ci].peer;
        let mut meta = request_meta(
            self.local,
            peer,
            self.cfg.epoch,
            Body::McastAck {
                group,
                mcast,
                origin,
                count,
            },
        );
        meta.status = status;
        self.send_meta(ci, meta, Vec::new(), false);
    }
}
