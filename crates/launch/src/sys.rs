//! Process plumbing that needs the OS directly: the child-side hook that
//! ties a task's life to the launcher, and signals to process groups.
//!
//! The only unsafe code of the crate is here: `CommandExt::pre_exec` is
//! unsafe because its closure runs in the forked child, where only
//! async-signal-safe calls are allowed.
#![allow(unsafe_code)]

use std::io;
use std::os::unix::process::CommandExt;
use std::process::Command;

use nix::errno::Errno;
use nix::sys::signal::{self, Signal};
use nix::unistd::{self, Pid};

/// Makes the child of `cmd` the leader of a new process group and asks the
/// kernel to SIGKILL it when the launcher dies, however it dies.
///
/// The parent-death signal fires when the *thread* that forked the child
/// exits, so callers spawn from the thread that waits for the job.
pub(crate) fn die_with_launcher(cmd: &mut Command) {
    cmd.process_group(0);
    let launcher = unistd::getpid();
    // SAFETY: the closure runs in the child between fork and exec. It only
    // makes the prctl(2) and getppid(2) system calls and builds an
    // io::Error from an errno, none of which allocates, locks or touches
    // state shared with other threads of the parent, so it is
    // async-signal-safe.
    unsafe {
        cmd.pre_exec(move || {
            nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).map_err(io::Error::from)?;
            // The launcher may have died between fork and prctl, in which
            // case the signal was never armed: refuse to start orphaned.
            if unistd::getppid() != launcher {
                return Err(io::Error::from(Errno::ESRCH));
            }
            Ok(())
        });
    }
}

/// Sends `sig` to the process group `pgid`. True if any process got it.
pub(crate) fn signal_group(pgid: u32, sig: Signal) -> bool {
    match i32::try_from(pgid) {
        Ok(p) if p > 1 => signal::killpg(Pid::from_raw(p), sig).is_ok(),
        _ => false,
    }
}

/// Sends `sig` to the process `pid`. True if it got it.
pub(crate) fn signal_process(pid: u32, sig: Signal) -> bool {
    match i32::try_from(pid) {
        Ok(p) if p > 1 => signal::kill(Pid::from_raw(p), sig).is_ok(),
        _ => false,
    }
}

/// True while the process `pid` exists, but not as a zombie (a reparented
/// zombie is its new parent's to reap and holds no resources).
pub(crate) fn process_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the parenthesized command name.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X'])),
        Err(_) => false,
    }
}

/// True while the process group `pgid` has members (zombies included).
pub(crate) fn group_alive(pgid: u32) -> bool {
    match i32::try_from(pgid) {
        Ok(p) if p > 1 => !matches!(signal::killpg(Pid::from_raw(p), None), Err(Errno::ESRCH)),
        _ => false,
    }
}

/// `SIGSEGV` for signal 11, or `signal 77` for numbers without a name.
pub(crate) fn signal_name(sig: i32) -> String {
    Signal::try_from(sig)
        .map(|s| s.as_str().to_string())
        .unwrap_or_else(|_| format!("signal {sig}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(signal_name(11), "SIGSEGV");
        assert_eq!(signal_name(9), "SIGKILL");
        assert_eq!(signal_name(77), "signal 77");
    }

    #[test]
    fn refuses_to_signal_init_or_everyone() {
        // killpg(0) or (1) would hit the launcher's own group or init.
        assert!(!signal_group(0, Signal::SIGTERM));
        assert!(!signal_group(1, Signal::SIGTERM));
    }
}
