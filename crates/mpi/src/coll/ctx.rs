//! Agreeing on a communicator's context: the largest next context of
//! every member. Under `MPI_THREAD_MULTIPLE` two threads may construct
//! communicators from different parents at once and reach the same
//! value; a second round checks that no member has it in use, and the
//! agreement is retried otherwise.

use super::{bcast_in, reduce_in, Coll, Reduction};
use crate::consts::err;
use crate::engine::MpiErr;
use crate::runtime::with;
use crate::types::{Num, Op};
use std::sync::Mutex;

/// Contexts agreed by an unfinished construction, until the
/// communicator holding them exists.
static CLAIMED: Mutex<Vec<u32>> = Mutex::new(Vec::new());

/// A context no member of `c` uses (collective over `c`).
pub(super) fn agree_ctx(c: &Coll) -> Result<u32, MpiErr> {
    if !crate::runtime::multiple() {
        return agree_once(c);
    }
    let mut tries = 0u32;
    loop {
        let ctx = agree_once(c)?;
        let mine = with(|e| {
            let mut claimed = CLAIMED.lock().unwrap_or_else(|p| p.into_inner());
            let used = |x: u32| e.comms.values().any(|m| m.ctx.abs_diff(x) <= 1);
            claimed.retain(|&x| !used(x));
            let free = !used(ctx) && !claimed.iter().any(|&x| x.abs_diff(ctx) <= 1);
            if free {
                claimed.push(ctx);
            }
            Ok(free)
        })?;
        let mut acc = u64::from(mine).to_ne_bytes();
        let min = Reduction::Pre {
            op: Op::Min,
            num: Num::U64,
            size: 8,
        };
        reduce_in(c, &mut acc, &min, 0)?;
        bcast_in(c, &mut acc, 0)?;
        if u64::from_ne_bytes(acc) == 1 {
            return Ok(ctx);
        }
        if mine {
            let mut claimed = CLAIMED.lock().unwrap_or_else(|p| p.into_inner());
            claimed.retain(|&x| x != ctx);
        }
        // Threads of different tasks that collided in the same order
        // would again: a pause of a length of their own breaks the tie.
        tries = tries.wrapping_add(1);
        let jitter = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos() % 1000);
        std::thread::sleep(std::time::Duration::from_micros(
            u64::from(jitter) * u64::from(tries.min(8)),
        ));
    }
}

/// A context no member of `comm` has used: the largest next context of
/// every member.
fn agree_once(c: &Coll) -> Result<u32, MpiErr> {
    let mine = with(|e| Ok(e.next_ctx))?;
    let mut acc = u64::from(mine).to_ne_bytes();
    let red = Reduction::Pre {
        op: Op::Max,
        num: Num::U64,
        size: 8,
    };
    reduce_in(c, &mut acc, &red, 0)?;
    bcast_in(c, &mut acc, 0)?;
    let ctx = u32::try_from(u64::from_ne_bytes(acc))
        .ok()
        .filter(|&x| x < u32::MAX - 4)
        .ok_or_else(|| MpiErr::new(err::INTERN, "out of communicator contexts"))?;
    with(|e| {
        e.next_ctx = e.next_ctx.max(ctx + 2);
        Ok(ctx)
    })
}
