//! What IDM tells a task: node pages, peers' scheduling state, and the
//! liveness check that declares tasks on down nodes down.

use super::{Inner, Task};
use crate::idm::{Idm, NodeData, TaskState};
use sss_wire::TaskId;
use std::sync::atomic::Ordering;

impl Task {
    /// Bumps this task's progress counter, which the node daemon publishes
    /// in IDM for partners and schedulers to see.
    pub fn bump_progress(&self) {
        self.inner
            .ctl
            .ctl()
            .progress
            .fetch_add(1, Ordering::Relaxed);
    }

    /// The IDM page of node `node` as this node's daemon knows it (its own
    /// page, or the last one gossiped to it). Reads shared memory only.
    /// `None` without a node daemon or for an unknown node.
    pub fn node_page(&self, node: &str) -> Option<NodeData> {
        self.inner.node_page(node)
    }

    /// Every node page this node's daemon knows.
    pub fn node_pages(&self) -> Vec<NodeData> {
        self.inner.idm().map(|i| i.nodes()).unwrap_or_default()
    }

    /// The scheduling state of task `rank` from IDM.
    pub fn task_state(&self, rank: u32) -> TaskState {
        self.inner.task_state(rank)
    }

    /// True once `rank` was declared down.
    pub fn is_down(&self, rank: u32) -> bool {
        self.inner
            .lock_net()
            .ep
            .is_down(TaskId::new(self.inner.job, rank))
    }
}

impl Inner {
    /// This node's IDM file, mapped on first use and kept. Found, it
    /// costs a load: SS-Wait asks at the start of every wait (a mutex and
    /// a reference count here showed as 13 % of an MPI ping-pong).
    pub(super) fn idm(&self) -> Option<&Idm> {
        if let Some(i) = self.idm.get() {
            return Some(i);
        }
        // Look for a daemon's file at most once a second, one thread at a
        // time (the one that moves the stamp).
        let now = self.now();
        let last = self.idm_tried.load(Ordering::Relaxed);
        if (last == 0 || now.saturating_sub(last) >= 1_000_000_000)
            && self
                .idm_tried
                .compare_exchange(last, now.max(1), Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            if let Ok(i) = Idm::open(&self.node) {
                let _ = self.idm.set(i);
            }
        }
        self.idm.get()
    }

    pub(super) fn node_page(&self, node: &str) -> Option<NodeData> {
        let idm = self.idm()?;
        let mut slots = self.idm_slots.lock().ok()?;
        if let Some(&i) = slots.get(node) {
            if let Some(d) = idm.read(i) {
                if d.name() == node && d.flags & crate::idm::NODE_VALID != 0 {
                    return Some(d);
                }
            }
        }
        let (i, d) = idm.find(node)?;
        slots.insert(node.to_string(), i);
        Some(d)
    }

    fn task_state(&self, rank: u32) -> TaskState {
        let Some(p) = self.peers.get(rank as usize) else {
            return TaskState::Unknown;
        };
        self.node_page(&p.node)
            .and_then(|d| d.task(self.job, rank))
            .map_or(TaskState::Unknown, |t| TaskState::from_u32(t.state))
    }

    /// Liveness from IDM: tasks on nodes the daemon marked down are
    /// declared down (their pending operations fail with NodeDown); nodes
    /// that come back are let in again. At most every 50 ms.
    pub(super) fn check_liveness(&self) {
        let now = self.now();
        if now.saturating_sub(self.idm_checked.load(Ordering::Relaxed)) < 50_000_000 {
            return;
        }
        self.idm_checked.store(now, Ordering::Relaxed);
        if self.idm().is_none() {
            return;
        }
        let mut nodes: Vec<&str> = self.peers.iter().map(|p| p.node.as_str()).collect();
        nodes.sort_unstable();
        nodes.dedup();
        for node in nodes {
            if node == self.node {
                continue;
            }
            let down = self
                .node_page(node)
                .is_some_and(|d| d.flags & crate::idm::NODE_DOWN != 0);
            let Ok(mut marked) = self.idm_down.lock() else {
                return;
            };
            let was = marked.iter().any(|n| n == node);
            if down == was {
                continue;
            }
            let mut net = self.lock_net();
            for (r, p) in self.peers.iter().enumerate() {
                if p.node == node {
                    let t = TaskId::new(self.job, r as u32);
                    if down {
                        net.ep.declare_down(t);
                    } else {
                        net.ep.resume_peer(t);
                    }
                }
            }
            self.handle_events(&mut net);
            if down {
                marked.push(node.to_string());
            } else {
                marked.retain(|n| n != node);
            }
        }
    }
}
