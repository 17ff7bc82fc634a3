//! Agreement between the tasks creating a heap: after every step a task
//! can fail alone, all of them learn whether every task succeeded, so
//! that none waits for ever in the next collective step for one that
//! returned, and every task's error names the one that failed.

use crate::{Config, Error};
use sss_mbcf::Task;

/// Bytes of a failed task's message that travel to the others.
const MESSAGE_MAX: usize = 240;

/// What every task must hold alike: the heap's size and address range,
/// its default protocol, and whether faults or presence checks (UDSM)
/// find the missing pages.
fn settings(cfg: &Config) -> [u8; 10] {
    let mut b = [0u8; 10];
    b[..8].copy_from_slice(&(cfg.heap as u64).to_le_bytes());
    b[8] = cfg.protocol.code() as u8;
    b[9] = cfg.userfaultfd as u8;
    b
}

fn describe(b: &[u8]) -> String {
    match b {
        [h @ .., p, u] if h.len() == 8 => {
            let heap = u64::from_le_bytes(h.try_into().unwrap_or([0; 8]));
            let protocol = crate::Protocol::from_code(u32::from(*p)).map_or("?", |p| p.name());
            let mode = if *u == 1 { "ADSM" } else { "UDSM" };
            format!("heap {heap} bytes, protocol {protocol}, {mode}")
        }
        _ => "settings unreadable".into(),
    }
}

/// What a task tells the others of its step: 1 and `tail`, or 0 and
/// (the start of) its error.
fn answer<T>(r: &Result<T, Error>, tail: &[u8]) -> Vec<u8> {
    match r {
        Ok(_) => [&[1], tail].concat(),
        Err(e) => {
            let text = e.to_string();
            let mut end = text.len().min(MESSAGE_MAX);
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            [&[0], &text.as_bytes()[..end]].concat()
        }
    }
}

/// The first task whose answer is not success, with its message.
fn failed(all: &[Vec<u8>]) -> Option<(usize, String)> {
    all.iter()
        .enumerate()
        .find_map(|(rank, b)| match b.first() {
            Some(1) => None,
            _ => Some((
                rank,
                String::from_utf8_lossy(b.get(1..).unwrap_or_default()).into_owned(),
            )),
        })
}

/// Collective: whether `r`, this task's result of the step described by
/// `what` ("open its userfaultfd"), succeeded in every task. A task that
/// failed gets its own error back; the others [`Error::PeerFailed`]
/// naming the first task that failed and its error.
pub(crate) fn agree<T>(task: &Task, what: &str, r: Result<T, Error>) -> Result<T, Error> {
    agree_with(task, what, r, &[]).map(|(t, _)| t)
}

/// [`agree`], each task's success carrying `tail`: every task's tail, by
/// rank, in the same collective step.
pub(crate) fn agree_with<T>(
    task: &Task,
    what: &str,
    r: Result<T, Error>,
    tail: &[u8],
) -> Result<(T, Vec<Vec<u8>>), Error> {
    let all = task.allgather(&answer(&r, tail))?;
    let t = r?;
    if let Some((rank, why)) = failed(&all) {
        return Err(Error::PeerFailed(format!(
            "task {rank} could not {what}: {why}"
        )));
    }
    let tails = all
        .into_iter()
        .map(|b| b.get(1..).unwrap_or_default().to_vec());
    Ok((t, tails.collect()))
}

/// Collective, the heap's first step: [`agree`] on every task's local
/// checks (`r`), and that every task asks for the same heap as this one
/// ([`Error::Mismatch`] otherwise).
pub(crate) fn agree_on_settings<T>(
    task: &Task,
    cfg: &Config,
    r: Result<T, Error>,
) -> Result<T, Error> {
    let me = settings(cfg);
    let (t, all) = agree_with(task, "create the heap", r, &me)?;
    for (rank, theirs) in all.iter().enumerate() {
        if theirs[..] != me {
            return Err(Error::Mismatch(format!(
                "task {rank} asks for another heap than task {}: {} against {} \
                 (every task of a job needs the same SSS_DSM_HEAP and \
                 SSS_DSM_PROTOCOL, and all or none UDSM)",
                task.rank(),
                describe(theirs),
                describe(&me)
            )));
        }
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_failure_is_named_and_garbage_is_read_safely() {
        assert_eq!(failed(&[vec![1], vec![1]]), None);
        let f = failed(&[vec![1], vec![0, b'n', b'o'], vec![0]]);
        assert_eq!(f, Some((1, "no".into())));
        assert_eq!(failed(&[vec![]]), Some((0, String::new())));
        assert_eq!(failed(&[vec![0, 0xff, 0xfe]]).map(|f| f.0), Some(0));
        assert_eq!(describe(&[1, 2]), "settings unreadable");
        assert!(describe(&settings(&Config::default())).contains("ulrc"));
    }
}
