//! The one-sided operations of [`Task`]: WRITE, READ, atomics, FIFO
//! push, SIGNAL and multicast, and FENCE/QUIET that wait for them.

use super::{Handler, Options, ReqState, Request, Task};
use crate::segment::Perm;
use crate::{Error, RemoteAddr};
use sss_proto::{Op, SubmitError};
use sss_wire::{Status, TaskId};

impl Task {
    /// Stores `data` at `at`. See the crate docs for buffer reuse and
    /// visibility.
    pub fn write(&self, at: RemoteAddr, data: &[u8], opts: Options) -> Result<Request, Error> {
        let op = Op::Write {
            key: at.key,
            addr: at.addr,
            data,
            notify: opts.notify,
        };
        self.submit(at.rank, op, opts)
    }

    /// Fetches `len` bytes at `at`.
    pub fn read(&self, at: RemoteAddr, len: usize, opts: Options) -> Result<Request, Error> {
        let len = u32::try_from(len).map_err(|_| Error::Invalid("read too large"))?;
        let op = Op::Read {
            key: at.key,
            addr: at.addr,
            len,
        };
        self.submit(at.rank, op, opts)
    }

    /// Atomically stores `value` at `at` (8-byte aligned); the request
    /// yields the old value.
    pub fn swap(&self, at: RemoteAddr, value: u64, opts: Options) -> Result<Request, Error> {
        let op = Op::Swap {
            key: at.key,
            addr: at.addr,
            operand: value,
        };
        self.submit(at.rank, op, opts)
    }

    /// Atomically replaces `expected` by `new` at `at`; yields the old value.
    pub fn cas(
        &self,
        at: RemoteAddr,
        expected: u64,
        new: u64,
        opts: Options,
    ) -> Result<Request, Error> {
        let op = Op::Cas {
            key: at.key,
            addr: at.addr,
            expected,
            new,
        };
        self.submit(at.rank, op, opts)
    }

    /// Atomically adds `value` at `at`; yields the old value.
    pub fn fetch_add(&self, at: RemoteAddr, value: u64, opts: Options) -> Result<Request, Error> {
        let op = Op::FetchAdd {
            key: at.key,
            addr: at.addr,
            operand: value,
        };
        self.submit(at.rank, op, opts)
    }

    /// Pushes `msg` into the FIFO queue at `queue`.
    pub fn fifo_push(
        &self,
        queue: RemoteAddr,
        msg: &[u8],
        opts: Options,
    ) -> Result<Request, Error> {
        let op = Op::Fifo {
            key: queue.key,
            addr: queue.addr,
            data: msg,
        };
        self.submit(queue.rank, op, opts)
    }

    /// Runs handler `handler` of task `rank` with `payload`.
    pub fn signal(
        &self,
        rank: u32,
        handler: u32,
        payload: &[u8],
        opts: Options,
    ) -> Result<Request, Error> {
        let key = self
            .inner
            .peers
            .get(rank as usize)
            .ok_or(Error::NoSuchTask(rank))?
            .signal_key;
        let op = Op::Signal {
            key,
            handler,
            data: payload,
        };
        self.submit(rank, op, opts)
    }

    /// Registers handler `index` of this task.
    pub fn set_handler(&self, index: u32, h: Handler) -> Result<(), Error> {
        self.inner
            .handlers
            .write()
            .map_err(|_| Error::Shutdown)?
            .insert(index, h);
        // Release: a runner that sees the new version copies the table
        // with the handler in it.
        self.inner
            .handlers_version
            .fetch_add(1, std::sync::atomic::Ordering::Release);
        self.inner.ctl.set_handler(index);
        Ok(())
    }

    /// Declares a multicast group; every member must declare it with the
    /// same ranks in the same order.
    pub fn group_create(&self, group: u32, ranks: &[u32]) -> Result<(), Error> {
        if ranks.iter().any(|&r| r >= self.inner.size) {
            return Err(Error::Invalid("rank outside the job"));
        }
        let members = ranks
            .iter()
            .map(|&r| TaskId::new(self.inner.job, r))
            .collect();
        self.inner.lock_net().ep.add_group(group, members);
        self.inner
            .groups
            .lock()
            .map_err(|_| Error::Shutdown)?
            .insert(group, ranks.to_vec());
        Ok(())
    }

    /// WRITEs `data` at byte `offset` of the segment with key `key` in
    /// every member of `group` (the caller included, if it is a member);
    /// members hold such a segment from [`Task::alloc_shared_key`] or
    /// [`Task::alloc_symmetric`]. Completes with the number of other
    /// members that applied it.
    pub fn multicast(
        &self,
        group: u32,
        key: u64,
        offset: u64,
        data: &[u8],
    ) -> Result<Request, Error> {
        let addr = offset;
        let member = self
            .inner
            .groups
            .lock()
            .map_err(|_| Error::Shutdown)?
            .get(&group)
            .ok_or(Error::Invalid("unknown group"))?
            .contains(&self.inner.rank);
        if member {
            let segs = self.inner.segs.read().map_err(|_| Error::Shutdown)?;
            segs.check_offset(key, addr, data.len(), Perm::WRITE)
                .map_err(Error::Remote)?
                .write(data);
        }
        let st = ReqState::new(None);
        let mut net = self.inner.lock_net();
        loop {
            let now = self.inner.now();
            match net.ep.multicast(now, group, key, addr, data) {
                Ok(id) => {
                    net.mreqs.insert(id, st.clone());
                    break;
                }
                Err(SubmitError::WouldBlock) => {
                    drop(net);
                    self.inner.wait_progress();
                    net = self.inner.lock_net();
                }
                Err(SubmitError::PeerDown) => return Err(Error::Remote(Status::NodeDown)),
                Err(_) => return Err(Error::Invalid("multicast too large or unknown group")),
            }
        }
        self.inner.flush(&mut net);
        // A group with no other member completes at once.
        self.inner.handle_events(&mut net);
        drop(net);
        self.inner.wake_if_needed();
        Ok(Request {
            state: Some((st, self.inner.clone())),
        })
    }

    pub(super) fn submit(&self, rank: u32, op: Op<'_>, opts: Options) -> Result<Request, Error> {
        self.inner.submit(rank, op, opts)
    }

    /// Waits until every earlier operation to `rank` is acknowledged, then
    /// reports the first asynchronous error, if any.
    pub fn fence(&self, rank: u32) -> Result<(), Error> {
        self.fence_many(&[rank])
    }

    /// [`Task::fence`] toward each of `ranks` at once: every ACK is asked
    /// for before any is waited for, so the round trips overlap instead
    /// of following one another.
    pub fn fence_many(&self, ranks: &[u32]) -> Result<(), Error> {
        let job = self.inner.job;
        self.ask_acks(|ep| {
            ranks
                .iter()
                .fold(false, |any, &r| ep.request_ack(TaskId::new(job, r)) | any)
        });
        self.inner.wait_until(
            || {
                let net = self.inner.lock_net();
                ranks
                    .iter()
                    .all(|&r| net.ep.in_flight(TaskId::new(job, r)) == 0)
            },
            None,
        );
        self.take_error()
    }

    /// Waits until every earlier operation to every task is acknowledged,
    /// then reports the first asynchronous error, if any.
    pub fn quiet(&self) -> Result<(), Error> {
        self.ask_acks(|ep| ep.request_acks());
        self.inner
            .wait_until(|| self.inner.lock_net().ep.total_in_flight() == 0, None);
        self.take_error()
    }

    /// Asks the peers a fence waits on for their ACKs now: each would
    /// hold it for its ack delay (200 µs) when nothing of ours comes to
    /// piggyback on, and a WRITE then a fence across nodes took 230–420
    /// µs where a round trip takes 10. One small datagram per peer with
    /// unacknowledged packets.
    fn ask_acks(&self, ask: impl FnOnce(&mut sss_proto::Endpoint) -> bool) {
        let mut net = self.inner.lock_net();
        if ask(&mut net.ep) {
            self.inner.flush(&mut net);
        }
    }

    fn take_error(&self) -> Result<(), Error> {
        let mut e = self.inner.errors.lock().map_err(|_| Error::Shutdown)?;
        if e.is_empty() {
            Ok(())
        } else {
            Err(e.remove(0))
        }
    }
}
