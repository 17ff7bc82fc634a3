//! Eager writes (`HomeUpdate`, `HomeOnly`, `UpdateDirect`, and `Update`
//! through the home): noted bytes leave at once, cut where the home
//! changes, contiguous pieces for one home combined into one packet.

use super::update::UPDATE_DATA;
use crate::msg::{Update, TAG_HOME};
use crate::shared::{lock, page_of, Out, Shared};
use crate::stats::bump;
use crate::sys::PAGE;
use crate::{Error, UPDATE_HANDLER};
use sss_mbcf::Options;

/// Eager WRITEs to one home are combined up to MBCF's default datagram
/// payload when sealed (the default): one packet each.
const COMBINE: usize = 1392;

/// How an eager write leaves the writer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Via {
    /// MBCF WRITE into the home segment.
    Home,
    /// SIGNAL to the home, which applies it and forwards it to holders.
    Forward,
}

/// Contiguous noted bytes for one home, combined into one packet.
pub(crate) struct Pending {
    via: Via,
    home: u32,
    off: u64,
    data: Vec<u8>,
}

impl Shared {
    /// Sends `[off, off+len)` of the view eagerly: pieces cut where the
    /// home changes (and, for `Forward`, at pages and `UPDATE_DATA`
    /// bytes), combined with the pending packet when contiguous.
    pub(crate) fn eager(&self, off: u64, len: u64, via: Via) -> Result<(), Error> {
        let data = self.view_read(off, len as usize)?;
        self.eager_data(off, &data, via)
    }

    pub(super) fn eager_data(&self, off: u64, data: &[u8], via: Via) -> Result<(), Error> {
        let end = off + data.len() as u64;
        let mut start = off;
        while start < end {
            let home = self.home_of(page_of(start))?;
            let mut stop = ((page_of(start) + 1) * PAGE as u64).min(end);
            if via == Via::Home {
                while stop < end && self.home_of(page_of(stop))? == home {
                    stop = ((page_of(stop) + 1) * PAGE as u64).min(end);
                }
                lock(&self.out)
                    .pages
                    .extend(page_of(start)..=page_of(stop - 1));
            } else {
                stop = stop.min(start + UPDATE_DATA as u64);
            }
            let piece = &data[(start - off) as usize..(stop - off) as usize];
            self.push_eager(via, home, start, piece)?;
            start = stop;
        }
        Ok(())
    }

    /// Appends to the pending packet or sends it and starts another.
    fn push_eager(&self, via: Via, home: u32, off: u64, data: &[u8]) -> Result<(), Error> {
        let limit = match via {
            Via::Home => COMBINE,
            Via::Forward => UPDATE_DATA,
        };
        let mut out = lock(&self.out);
        if let Some(p) = out.pending.as_mut() {
            let p_end = p.off + p.data.len() as u64;
            if p.via == via
                && p.home == home
                && p_end == off
                && p.data.len() + data.len() <= limit
                && (via == Via::Home || page_of(p.off) == page_of(off + data.len() as u64 - 1))
            {
                p.data.extend_from_slice(data);
                return Ok(());
            }
        }
        if let Some(p) = out.pending.take() {
            self.send_eager(&mut out, p)?;
        }
        let p = Pending {
            via,
            home,
            off,
            data: data.to_vec(),
        };
        if data.len() >= limit {
            self.send_eager(&mut out, p)
        } else {
            out.pending = Some(p);
            Ok(())
        }
    }

    /// Sends the pending packet, if any.
    pub(super) fn flush_pending(&self) -> Result<(), Error> {
        let mut out = lock(&self.out);
        match out.pending.take() {
            Some(p) => self.send_eager(&mut out, p),
            None => Ok(()),
        }
    }

    /// One eager message: a WRITE to the home, or an update SIGNAL to it
    /// (applied at once when this task is the home).
    fn send_eager(&self, out: &mut Out, p: Pending) -> Result<(), Error> {
        bump(&self.stats.writes, 1);
        bump(&self.stats.bytes_sent, p.data.len() as u64);
        match p.via {
            // A mapped page is its home, and the bytes copied at the note
            // may be older than stores made since: nothing to write.
            Via::Home if p.home == self.rank && self.span_mapped(p.off, p.data.len() as u64) => {}
            Via::Home if p.home == self.rank => {
                self.home_write(p.off, &p.data)?;
            }
            Via::Home => {
                let at = self
                    .homes
                    .get(p.home as usize)
                    .ok_or(Error::Invalid("no such home"))?
                    .at(p.off);
                self.task.write(at, &p.data, Options::default())?;
                out.homes.insert(p.home);
            }
            Via::Forward => {
                out.forwarded += 1;
                if p.home == self.rank {
                    self.forward(&self.task, self.rank, p.off, &p.data)?;
                } else {
                    let msg = Update {
                        tag: TAG_HOME,
                        writer: self.rank,
                        off: p.off,
                        data: &p.data,
                    }
                    .encode();
                    self.task
                        .signal(p.home, UPDATE_HANDLER, &msg, Options::default())?;
                }
            }
        }
        Ok(())
    }
}
