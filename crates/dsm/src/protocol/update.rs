//! Copies kept up to date (`Update`, `UpdateDirect`): the home applies a
//! forwarded write and sends it to every holder, holders apply updates to
//! their copies, `UpdateDirect` pushes its writes to every task at
//! release, and release waits for every acknowledgement.

use super::directory::MAX_HOLDERS;
use super::lrc::{merge_runs, Run};
use crate::config::WriteMode;
use crate::layout as L;
use crate::msg::{Diff, Update, TAG_COPY, TAG_DIFF, TAG_DIFF_LAST, TAG_HOME};
use crate::shared::{lock, page_of, Shared};
use crate::stats::bump;
use crate::sys::PAGE;
use crate::{Error, UPDATE_HANDLER};
use sss_mbcf::{Options, SignalContext, Task};
use std::sync::atomic::Ordering;

/// Data bytes per update SIGNAL: with its 16-byte header it fits one
/// datagram (signals are not fragmented).
pub(super) const UPDATE_DATA: usize = 1024;

impl Shared {
    /// At the home of an `Update` page: applies `data` (within one page)
    /// written by `writer`, forwards it to every other holder, and tells
    /// the writer how many acknowledgements to expect.
    pub(super) fn forward(
        &self,
        task: &Task,
        writer: u32,
        off: u64,
        data: &[u8],
    ) -> Result<(), Error> {
        // This task's own bytes of a mapped page are in the home already
        // (and may be newer than `data`, copied at the note).
        if writer != self.rank || !self.span_mapped(off, data.len() as u64) {
            // Checked against the home segment: `off` came off the network.
            self.home_write(off, data)?;
        }
        // Pairs with the fence after a holder registers: either the
        // holder's READ sees these bytes or this load sees its bit.
        std::sync::atomic::fence(Ordering::SeqCst);
        let page = page_of(off);
        let mask = self.dir_word(page)?.load(Ordering::SeqCst);
        let mut sent = 0u64;
        let mut msg = Vec::new();
        for r in 0..self.size.min(MAX_HOLDERS) {
            if mask & (1 << r) == 0 || r == writer {
                continue;
            }
            if r == self.rank {
                self.apply_copy(off, data)?;
                continue;
            }
            if msg.is_empty() {
                msg = Update {
                    tag: TAG_COPY,
                    writer,
                    off,
                    data,
                }
                .encode();
            }
            task.signal(r, UPDATE_HANDLER, &msg, Options::default())?;
            bump(&self.stats.writes, 1);
            bump(&self.stats.bytes_sent, data.len() as u64);
            sent += 1;
        }
        if writer == self.rank {
            self.local_word(L::UPD_WANT)
                .fetch_add(sent, Ordering::AcqRel);
            self.local_word(L::UPD_HOME).fetch_add(1, Ordering::AcqRel);
        } else {
            // Same destination: WANT is applied before HOME.
            task.fetch_add(self.meta_at(writer, L::UPD_WANT)?, sent, Options::default())?;
            task.fetch_add(self.meta_at(writer, L::UPD_HOME)?, 1, Options::default())?;
        }
        Ok(())
    }

    /// At a copy holder: applies an update of `data` (within one page) to
    /// the local copy. A page not present bumps the epoch instead, so a
    /// fetch racing this update reads the page again (the home has the
    /// bytes by now). In trap mode a clean page is write-protected and is
    /// dropped instead; a page with a twin gets the bytes in both, so its
    /// diff does not claim them.
    pub(super) fn apply_copy(&self, off: u64, data: &[u8]) -> Result<(), Error> {
        let page = page_of(off);
        let mut st = lock(&self.state);
        if !st.present.contains(&page) {
            self.epoch.fetch_add(1, Ordering::AcqRel);
            return Ok(());
        }
        let in_page = (off - page * PAGE as u64) as usize;
        match st.dirty.get_mut(&page) {
            Some(Some(twin)) => {
                if let Some(t) = twin.get_mut(in_page..in_page + data.len()) {
                    t.copy_from_slice(data);
                }
                self.view_write(off, data)
            }
            _ if self.cfg.writes == WriteMode::Trap => self.discard(&mut st, &[page]),
            _ => self.view_write(off, data),
        }
    }

    /// Handler of update messages (progress thread).
    pub(crate) fn on_update(&self, ctx: &SignalContext<'_>, payload: &[u8]) {
        let tag = payload.get(0..4);
        if tag == Some(&TAG_DIFF.to_le_bytes()[..]) || tag == Some(&TAG_DIFF_LAST.to_le_bytes()[..])
        {
            return self.on_diff(ctx, payload);
        }
        let u = Update::parse(payload)
            .filter(|u| u.end() <= self.view.len() as u64 && u.writer < self.size);
        let Some(Update {
            tag,
            writer,
            off,
            data,
        }) = u
        else {
            self.bad_message(ctx.from, "update");
            return;
        };
        let r = match tag {
            TAG_HOME => self.forward(ctx.task, writer, off, data),
            TAG_COPY => {
                bump(&self.stats.updates, 1);
                // Acknowledged even if not applied: the writer waits.
                let applied = self.apply_copy(off, data);
                self.meta_at(writer, L::UPD_ACK)
                    .and_then(|at| {
                        ctx.task.fetch_add(at, 1, Options::default())?;
                        Ok(())
                    })
                    .and(applied)
            }
            _ => Ok(()),
        };
        if let Err(e) = r {
            eprintln!("sss-dsm: update from task {}: {e}", ctx.from);
        }
    }

    /// At a home: applies a diff (`send_all`), only the bytes it
    /// carries; the last of a release is acknowledged to the writer.
    fn on_diff(&self, ctx: &SignalContext<'_>, payload: &[u8]) {
        let Some(d) =
            Diff::parse(payload).filter(|d| d.off < self.view.len() as u64 && d.writer < self.size)
        else {
            self.bad_message(ctx.from, "diff");
            return;
        };
        let mut applied = Ok(());
        d.for_each(|at, bytes| {
            if applied.is_ok() {
                // Checked against the home segment: off the network.
                applied = self.home_write(at, bytes);
            }
        });
        if !d.last {
            if let Err(e) = applied {
                eprintln!("sss-dsm: diff from task {}: {e}", ctx.from);
            }
            return;
        }
        // Acknowledged even if not applied: the writer waits.
        let r = self
            .meta_at(d.writer, L::UPD_ACK)
            .and_then(|at| {
                ctx.task.fetch_add(at, 1, Options::default())?;
                Ok(())
            })
            .and(applied);
        if let Err(e) = r {
            eprintln!("sss-dsm: diff from task {}: {e}", ctx.from);
        }
    }

    /// `UpdateDirect` at release: `runs` go to every other task.
    pub(super) fn push_direct(&self, runs: Vec<Run>) -> Result<(), Error> {
        if self.size == 1 || runs.is_empty() {
            return Ok(());
        }
        let mut sent = 0u64;
        for (o, bytes) in merge_runs(runs) {
            let end = o + bytes.len() as u64;
            let mut at = o;
            while at < end {
                let stop = ((page_of(at) + 1) * PAGE as u64)
                    .min(end)
                    .min(at + UPDATE_DATA as u64);
                let data = &bytes[(at - o) as usize..(stop - o) as usize];
                let msg = Update {
                    tag: TAG_COPY,
                    writer: self.rank,
                    off: at,
                    data,
                }
                .encode();
                for r in (0..self.size).filter(|&r| r != self.rank) {
                    self.task
                        .signal(r, UPDATE_HANDLER, &msg, Options::default())?;
                    bump(&self.stats.writes, 1);
                    bump(&self.stats.bytes_sent, data.len() as u64);
                    sent += 1;
                }
                at = stop;
            }
        }
        self.local_word(L::UPD_WANT)
            .fetch_add(sent, Ordering::AcqRel);
        Ok(())
    }

    /// Waits until every update this task sent is applied at every copy.
    pub(super) fn wait_updates(&self) -> Result<(), Error> {
        let forwarded = lock(&self.out).forwarded;
        // Each home answers a forwarded update with WANT, then HOME.
        self.task
            .wait_word(self.local_word(L::UPD_HOME), |v| v >= forwarded);
        let want = self.local_word(L::UPD_WANT).load(Ordering::Acquire);
        self.task
            .wait_word(self.local_word(L::UPD_ACK), |v| v >= want);
        Ok(())
    }
}
