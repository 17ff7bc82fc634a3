//! Locks: a ticket lock in one word at each lock's home (tickets handed
//! out in its high half, the ticket served in its low half), a slot per
//! waiter for the releaser's doorbell, and lazy acquires: the releaser
//! leaves at the home what it had seen of every task's write notices,
//! and the next holder asks only the tasks it is behind on.

use crate::layout as L;
use crate::msg::Unlock;
use crate::protocol::ASK_ALL;
use crate::shared::{lock, Shared};
use crate::stats::bump;
use crate::sync::WAKE_RECHECK;
use crate::{Error, LOCK_HANDLER};
use sss_mbcf::{Options, SignalContext, Task, TransportKind};
use std::sync::atomic::Ordering;

impl Shared {
    fn lock_at(&self, id: u32) -> Result<(u32, usize), Error> {
        if id as usize >= L::MAX_LOCKS {
            return Err(Error::Invalid("lock id too large"));
        }
        if self.size as usize > L::LOCK_SLOTS {
            return Err(Error::Invalid("locks support at most 64 tasks"));
        }
        Ok((id % self.size, L::LOCKS + id as usize * L::LOCK_BYTES))
    }

    /// Takes lock `id`: one fetch-and-add at its home takes a ticket and
    /// reads whose turn it is, so a free lock costs one round trip (it
    /// took three: ticket, waiter slot, turn). Only a task that must
    /// wait puts itself in a waiter slot for the releaser's doorbell.
    ///
    /// Lazy release consistency: the acquire looks only at the write
    /// notices of tasks the lock's last releaser had seen more of than
    /// this task has (what it had seen, READ with the ticket: MBCF
    /// applies the READ after the ticket, so it is the releaser of the
    /// turn the ticket read). A lock passed between two tasks asks one,
    /// not every task, and a free lock whose releaser saw nothing new
    /// takes one round trip with its acquire.
    pub(crate) fn lock(&self, id: u32) -> Result<(), Error> {
        let (home, at) = self.lock_at(id)?;
        let lazy = lock(&self.place).lazy;
        let size = self.size as usize;
        let (old, seen) = if home == self.rank {
            let old = self
                .local_word(at)
                .fetch_add(L::LOCK_TICKET, Ordering::AcqRel);
            (Ok(old), None)
        } else {
            bump(&self.stats.sync_requests, 1);
            let t =
                self.task
                    .fetch_add(self.meta_at(home, at)?, L::LOCK_TICKET, Options::default())?;
            let seen = if lazy {
                bump(&self.stats.sync_requests, 1);
                Some(self.task.read(
                    self.meta_at(home, at + L::LOCK_SEEN)?,
                    size * 8,
                    Options::default(),
                )?)
            } else {
                None
            };
            (Err(t), seen)
        };
        let old = match old {
            Ok(v) => v,
            Err(r) => r.wait_value()?,
        };
        let (ticket, serving) = L::lock_turn(old);
        let mut need = match seen {
            Some(r) => Some(words(&r.wait_data()?)),
            None => None,
        };
        // This task's own release still on its way: the lock is its own,
        // and so is what the last releaser had seen.
        let own = {
            let st = lock(&self.state);
            st.released
                .get(&id)
                .is_some_and(|&t| t == serving && t.wrapping_add(1) == ticket)
        };
        if own {
            need = Some(Vec::new());
        } else if serving != ticket {
            self.wait_turn(home, at, ticket)?;
            need = None;
        }
        lock(&self.state).held.insert(id, ticket);
        bump(&self.stats.locks, 1);
        if !lazy {
            return self.acquire();
        }
        let need = match need {
            Some(n) => n,
            None => self.lock_seen(home, at)?,
        };
        let asks = self.ask_behind(&need)?;
        self.acquire_with(&[], Some((asks, need)))
    }

    /// What the last releaser of the lock at `home`/`at` had seen.
    fn lock_seen(&self, home: u32, at: usize) -> Result<Vec<u64>, Error> {
        let n = self.size as usize;
        if home == self.rank {
            return Ok((0..n)
                .map(|r| {
                    self.local_word(at + L::LOCK_SEEN + r * 8)
                        .load(Ordering::Acquire)
                })
                .collect());
        }
        bump(&self.stats.sync_requests, 1);
        let at = self.meta_at(home, at + L::LOCK_SEEN)?;
        Ok(words(
            &self.task.read(at, n * 8, Options::default())?.wait_data()?,
        ))
    }

    /// Waits until lock word `at` at `home` serves `ticket`.
    fn wait_turn(&self, home: u32, at: usize, ticket: u32) -> Result<(), Error> {
        let grant = self.local_word(L::GRANT);
        let mut g = grant.load(Ordering::Acquire);
        let slot = at + L::LOCK_WAITERS + (ticket as usize % L::LOCK_SLOTS) * 8;
        self.meta_swap(home, slot, self.rank as u64 + 1)?;
        // The slot is in place before we look: a releaser that served us
        // after this sees it and rings our doorbell. The wait is bounded
        // all the same, so a doorbell that goes missing costs a re-read
        // of the word, not the job.
        let serving = || Ok::<u32, Error>(L::lock_turn(self.meta_add(home, at, 0)?).1);
        while serving()? != ticket {
            if self
                .task
                .wait_word_timeout(grant, |v| v != g, WAKE_RECHECK)
                .is_none()
                && serving()? == ticket
            {
                bump(&self.stats.missed_wakeups, 1);
                break;
            }
            g = grant.load(Ordering::Acquire);
        }
        Ok(())
    }

    /// Releases lock `id`: one SIGNAL to the lock's home, not waited
    /// for, carries what this task has seen of every task's notices for
    /// the next holder; the home's handler ([`Shared::on_unlock`]) stores
    /// it, serves the next ticket and rings its waiter. The release's
    /// writes are at their homes before (`release` fences them). A later
    /// ticket of this task may be applied before the handler runs (MBCF
    /// runs handlers after the atomics of their batch): `lock` then
    /// finds the ticket released here still served (`State::released`)
    /// and has the lock. At its own home the task does the same with
    /// plain atomics; on one node it serves from here
    /// ([`Shared::serve_from_here`]).
    pub(crate) fn unlock(&self, id: u32) -> Result<(), Error> {
        let (home, at) = self.lock_at(id)?;
        self.release()?;
        let lazy = lock(&self.place).lazy;
        // The ticket being served: ours, or (a lock this task did not
        // take) the one the word says. What this task has seen, or, when
        // that may miss what happened before (no range with notices known
        // here, or not yet looked at every task since), "ask everyone":
        // left even by a task without such ranges, for holders with them.
        let (ticket, view) = {
            let mut st = lock(&self.state);
            let view = if lazy && st.seen_whole {
                let mut view = st.seen.clone();
                if let Some(v) = view.get_mut(self.rank as usize) {
                    *v = self.local_word(L::NOTICES).load(Ordering::Acquire);
                }
                view
            } else {
                vec![ASK_ALL; self.size as usize]
            };
            (st.held.remove(&id), view)
        };
        if home == self.rank {
            self.serve(at, ticket, &view, &self.task);
            return Ok(());
        }
        if self.task.transport_to(home) != Some(TransportKind::Udp) {
            // On one node a SIGNAL waits in a ring for the home's thread
            // while the atomics below do not: the holder's next ticket
            // would overtake it.
            return self.serve_from_here(home, at, ticket, &view);
        }
        if let Some(t) = ticket {
            lock(&self.state).released.insert(id, t);
        }
        let m = Unlock { id, ticket, view }.encode();
        bump(&self.stats.sync_writes, 1);
        self.task
            .signal(home, LOCK_HANDLER, &m, Options::default())?;
        Ok(())
    }

    /// [`Shared::serve`] done from the releaser with MBCF atomics on the
    /// home's words: `view` written (not waited for: MBCF applies it
    /// before what follows), the next ticket served with one
    /// fetch-and-add, which also says whether anyone waits, then the
    /// waiter's slot taken and its doorbell rung.
    fn serve_from_here(
        &self,
        home: u32,
        at: usize,
        ticket: Option<u32>,
        view: &[u64],
    ) -> Result<(), Error> {
        let bytes: Vec<u8> = view.iter().flat_map(|v| v.to_le_bytes()).collect();
        bump(&self.stats.sync_writes, 1);
        drop(self.task.write(
            self.meta_at(home, at + L::LOCK_SEEN)?,
            &bytes,
            Options::default(),
        )?);
        let serving = match ticket {
            Some(t) => t,
            None => L::lock_turn(self.meta_add(home, at, 0)?).1,
        };
        let (next, _) = L::lock_turn(self.meta_add(home, at, L::lock_serve_next(serving))?);
        let now = serving.wrapping_add(1);
        if next == now {
            return Ok(());
        }
        let slot = at + L::LOCK_WAITERS + (now as usize % L::LOCK_SLOTS) * 8;
        let who = self.meta_swap(home, slot, 0)?;
        if who != 0 && who <= self.size as u64 && !self.cfg.fault_no_wakeups {
            self.meta_add(who as u32 - 1, L::GRANT, 1)?;
        }
        Ok(())
    }

    /// A lock release from task `ctx.from` (see [`Shared::unlock`]).
    pub(crate) fn on_unlock(&self, ctx: &SignalContext<'_>, payload: &[u8]) {
        let Some(u) = Unlock::parse(payload, self.size as usize) else {
            self.bad_message(ctx.from, "lock release");
            return;
        };
        match self.lock_at(u.id) {
            Ok((home, at)) if home == self.rank => self.serve(at, u.ticket, &u.view, ctx.task),
            _ => self.bad_message(ctx.from, "lock release"),
        }
    }

    /// At the home of the lock at `at`: stores `view` for the next
    /// holder, serves the ticket after `ticket` (or after the one the
    /// word says) and, when that ticket is taken, rings its holder's
    /// doorbell (an operation not waited for; a doorbell lost costs the
    /// waiter a look after `WAKE_RECHECK`).
    fn serve(&self, at: usize, ticket: Option<u32>, view: &[u64], task: &Task) {
        for (r, v) in view.iter().enumerate() {
            self.local_word(at + L::LOCK_SEEN + r * 8)
                .store(*v, Ordering::Release);
        }
        let word = self.local_word(at);
        let serving = ticket.unwrap_or_else(|| L::lock_turn(word.load(Ordering::Acquire)).1);
        let (next, _) = L::lock_turn(word.fetch_add(L::lock_serve_next(serving), Ordering::AcqRel));
        let now = serving.wrapping_add(1);
        if next == now {
            return;
        }
        let slot = at + L::LOCK_WAITERS + (now as usize % L::LOCK_SLOTS) * 8;
        let who = self.local_word(slot).swap(0, Ordering::AcqRel);
        if who == 0 || who > self.size as u64 || self.cfg.fault_no_wakeups {
            return;
        }
        let r = who as u32 - 1;
        if r == self.rank {
            // The home's own thread waits: MBCF wakes waiters after it
            // runs a handler.
            self.local_word(L::GRANT).fetch_add(1, Ordering::AcqRel);
        } else if let Ok(at) = self.meta_at(r, L::GRANT) {
            bump(&self.stats.sync_writes, 1);
            let _ = task.fetch_add(at, 1, Options::default());
        }
    }
}

/// Little-endian words of `b` (a whole number of them: what a READ of
/// whole words answers).
fn words(b: &[u8]) -> Vec<u64> {
    b.chunks_exact(8)
        .filter_map(|c| c.try_into().ok().map(u64::from_le_bytes))
        .collect()
}
