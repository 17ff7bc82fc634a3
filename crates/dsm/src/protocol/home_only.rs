//! `HomeOnly`: reads and writes through [`crate::Dsm::read`] and
//! [`crate::Dsm::write`] go to the home; only pages faulted in by plain
//! loads are cached, until the next acquire.

use super::eager::Via;
use crate::shared::{lock, page_of, Shared};
use crate::stats::bump;
use crate::sys::PAGE;
use crate::Error;
use sss_mbcf::Options;

impl Shared {
    /// `HomeOnly` read: pages cached here (fetched since the last
    /// acquire, holding this task's own writes) from the view, the rest
    /// from their homes.
    pub(crate) fn read_home(&self, off: u64, buf: &mut [u8]) -> Result<(), Error> {
        // This task's eager writes reach each home before the READ.
        self.flush_pending()?;
        let end = off + buf.len() as u64;
        let mut at = off;
        while at < end {
            let page = page_of(at);
            let stop = ((page + 1) * PAGE as u64).min(end);
            let dst = &mut buf[(at - off) as usize..(stop - off) as usize];
            let home = self.home_of(page)?;
            // Under the state lock so the page cannot be dropped between.
            let st = lock(&self.state);
            if st.present.contains(&page) {
                dst.copy_from_slice(&self.view_read(at, dst.len())?);
            } else if home == self.rank {
                drop(st);
                dst.copy_from_slice(&self.home_read(at, dst.len())?);
            } else {
                drop(st);
                let ra = self
                    .homes
                    .get(home as usize)
                    .ok_or(Error::Invalid("no such home"))?
                    .at(at);
                let d = self
                    .task
                    .read(ra, dst.len(), Options::default())?
                    .wait_data()?;
                if d.len() != dst.len() {
                    return Err(Error::Invalid("short read from home"));
                }
                dst.copy_from_slice(&d);
                bump(&self.stats.home_reads, 1);
            }
            at = stop;
        }
        Ok(())
    }

    /// `HomeOnly` write: into the cached copy if any, and to the homes.
    pub(crate) fn write_home(&self, off: u64, data: &[u8]) -> Result<(), Error> {
        let end = off + data.len() as u64;
        let mut at = off;
        while at < end {
            let stop = ((page_of(at) + 1) * PAGE as u64).min(end);
            let piece = &data[(at - off) as usize..(stop - off) as usize];
            if self.span_mapped(at, piece.len() as u64) {
                // This task's home page, mapped: the store is the write.
                self.home_write(at, piece)?;
            } else {
                self.apply_copy(at, piece)?;
                self.eager_data(at, piece, Via::Home)?;
            }
            at = stop;
        }
        Ok(())
    }
}
