//! Tunables of a heap: [`Config`] and [`WriteMode`], and the settings
//! read from the environment (`SSS_DSM_*`, `SSS_STATS`), each parsed with
//! its range checked so that a bad value is an error naming the variable
//! at initialization, never a silent default.

use crate::protocol::Protocol;
use crate::sys::PAGE;
use sss_mbcf::{env_value, parse_choice, parse_in, SettingError};
use std::ops::RangeInclusive;

#[cfg(doc)]
use crate::{Dsm, WAKE_RECHECK};

/// How writes are recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WriteMode {
    /// The program calls [`Dsm::note_write`] after its stores.
    #[default]
    Note,
    /// Write-protect faults with twins and diffs (unmodified code).
    Trap,
}

/// Which thread resolves a page fault on the heap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FaultMode {
    /// The thread that touched the page, in a SIGBUS handler
    /// (`UFFD_FEATURE_SIGBUS`): no hand-off to another thread and back.
    /// x86-64 only (the handler reads the access kind from the fault's
    /// error code); elsewhere, or where the kernel refuses the feature,
    /// [`FaultMode::Thread`].
    #[default]
    Signal,
    /// The task's fault thread, reading userfaultfd events; the faulting
    /// thread sleeps until it is done.
    Thread,
}

/// Tunables, from [`Config::from_env`] or set by hand.
#[derive(Debug, Clone)]
pub struct Config {
    /// Bytes of heap reserved in every task (`SSS_DSM_HEAP`, default 64 GiB;
    /// suffixes K, M, G).
    pub heap: usize,
    /// The protocol of allocations that name none (`SSS_DSM_PROTOCOL=
    /// ulrc|invalidate|home_update|update|update_drct|home_only`).
    pub protocol: Protocol,
    /// How writes are recorded (`SSS_DSM_WRITES=note|trap`).
    pub writes: WriteMode,
    /// Pages fetched after a missing page with the same home, in one READ
    /// (`SSS_DSM_PREFETCH`, default 0).
    pub prefetch: usize,
    /// Fault injection: releasers never wake lock and barrier waiters
    /// (`SSS_DSM_FAULT_NO_WAKEUPS=1`), so every such wait ends by looking
    /// again after [`WAKE_RECHECK`]. For tests of that path.
    pub fault_no_wakeups: bool,
    /// What a barrier that waits long does (`SSS_DSM_STALL`).
    pub stall: Stall,
    /// Whether missing pages are fetched on userfaultfd faults (the
    /// default, ADSM) or only by explicit [`Dsm::fetch`] calls (`false`,
    /// UDSM: the code compiled by `sss cc --udsm` checks the presence
    /// map before every access to the heap; no userfaultfd is opened, so
    /// the heap works where the kernel or a container forbids it). UDSM
    /// needs [`WriteMode::Note`]. Not an environment setting: a program
    /// built with `--udsm` selects it itself.
    pub userfaultfd: bool,
    /// Which thread resolves faults (`SSS_DSM_FAULTS=signal|thread`).
    pub faults: FaultMode,
    /// Whether a release combines what it sends (the default): notes
    /// merged with their neighbours, runs for one home packed into as few
    /// packets as they fill, pages cut into many runs sent as diff
    /// messages. `false` sends every `Ulrc` note, and every run of a
    /// diffed or trapped page, as a WRITE of its own: the seeds' rows
    /// without MB (seed 000 Tables 7–8). Not an environment setting: a
    /// program built with `sss cc -fsss-opt=no` or `-fsss-opt=ia` selects
    /// it itself in note mode.
    pub combine: bool,
}

/// A barrier wait that lasts: after `after`, the waiter names the tasks
/// that have not arrived (and says what a spin on a shared variable does
/// under release consistency); with `abort`, the barrier then fails.
/// `SSS_DSM_STALL=SECONDS` (warn; default 60), `abort:SECONDS`, or `off`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stall {
    /// How long a barrier waits before it says so; `None`: never.
    pub after: Option<std::time::Duration>,
    /// Fail the barrier with [`crate::Error::Stalled`] instead of
    /// waiting on.
    pub abort: bool,
}

impl Default for Stall {
    fn default() -> Self {
        Self {
            after: Some(std::time::Duration::from_secs(60)),
            abort: false,
        }
    }
}

/// Longest `SSS_DSM_STALL`: a day.
const MAX_STALL_S: u64 = 86_400;

fn parse_stall(value: &str) -> Result<Stall, SettingError> {
    let v = value.trim();
    if v == "off" {
        return Ok(Stall {
            after: None,
            abort: false,
        });
    }
    let (abort, secs) = match v.strip_prefix("abort:") {
        Some(s) => (true, s),
        None => (false, v),
    };
    let s: u64 = parse_in("SSS_DSM_STALL", secs, 1..=MAX_STALL_S).map_err(|_| SettingError {
        name: "SSS_DSM_STALL",
        value: value.to_string(),
        expected: format!("SECONDS, abort:SECONDS (1..={MAX_STALL_S}) or off"),
    })?;
    Ok(Stall {
        after: Some(std::time::Duration::from_secs(s)),
        abort,
    })
}

impl Default for Config {
    fn default() -> Self {
        Self {
            heap: 64 << 30,
            protocol: Protocol::Ulrc,
            writes: WriteMode::Note,
            prefetch: 0,
            fault_no_wakeups: false,
            stall: Stall::default(),
            userfaultfd: true,
            faults: FaultMode::Signal,
            combine: true,
        }
    }
}

/// Largest `SSS_DSM_HEAP`: 64 TiB, half the 47-bit user address space.
const MAX_HEAP: u64 = 1 << 46;
/// Largest `SSS_DSM_PREFETCH`.
const MAX_PREFETCH: usize = 256;

impl Config {
    /// Defaults overridden by `SSS_DSM_HEAP` (bytes, suffix K, M or G;
    /// one page to 64 TiB), `SSS_DSM_PROTOCOL`, `SSS_DSM_WRITES`,
    /// `SSS_DSM_PREFETCH` (0 to 256), `SSS_DSM_FAULT_NO_WAKEUPS` (0 or 1),
    /// `SSS_DSM_STALL` (see [`Stall`]) and `SSS_DSM_FAULTS` (see
    /// [`FaultMode`]). Unset or empty variables keep
    /// the default; any other value out of range is an error naming the
    /// variable.
    pub fn from_env() -> Result<Self, SettingError> {
        Self::from_vars(env_value)
    }

    /// [`Config::from_env`] with the variables looked up by `var`.
    fn from_vars(
        var: impl Fn(&'static str) -> Result<Option<String>, SettingError>,
    ) -> Result<Self, SettingError> {
        let mut c = Self::default();
        if let Some(v) = var("SSS_DSM_HEAP")? {
            c.heap = parse_size("SSS_DSM_HEAP", &v, PAGE as u64..=MAX_HEAP)? as usize;
        }
        if let Some(v) = var("SSS_DSM_PROTOCOL")? {
            let choices = Protocol::ALL.map(|p| (p.name(), p));
            c.protocol = parse_choice("SSS_DSM_PROTOCOL", &v, &choices)?;
        }
        if let Some(v) = var("SSS_DSM_WRITES")? {
            let choices = [("note", WriteMode::Note), ("trap", WriteMode::Trap)];
            c.writes = parse_choice("SSS_DSM_WRITES", &v, &choices)?;
        }
        if let Some(v) = var("SSS_DSM_PREFETCH")? {
            c.prefetch = parse_in("SSS_DSM_PREFETCH", &v, 0..=MAX_PREFETCH)?;
        }
        if let Some(v) = var("SSS_DSM_FAULT_NO_WAKEUPS")? {
            let choices = [("0", false), ("1", true)];
            c.fault_no_wakeups = parse_choice("SSS_DSM_FAULT_NO_WAKEUPS", &v, &choices)?;
        }
        if let Some(v) = var("SSS_DSM_STALL")? {
            c.stall = parse_stall(&v)?;
        }
        if let Some(v) = var("SSS_DSM_FAULTS")? {
            let choices = [("signal", FaultMode::Signal), ("thread", FaultMode::Thread)];
            c.faults = parse_choice("SSS_DSM_FAULTS", &v, &choices)?;
        }
        Ok(c)
    }
}

/// Whether [`Dsm::finalize`] prints the statistics:
/// `SSS_STATS=json` does, `off` (or unset) does not.
pub(crate) fn stats_json_from_env() -> Result<bool, SettingError> {
    stats_json(env_value)
}

fn stats_json(
    var: impl Fn(&'static str) -> Result<Option<String>, SettingError>,
) -> Result<bool, SettingError> {
    var("SSS_STATS")?.map_or(Ok(false), |v| {
        parse_choice("SSS_STATS", &v, &[("json", true), ("off", false)])
    })
}

/// Parses `value` of variable `name` as a byte count, with an optional
/// K, M or G suffix, in `range`.
fn parse_size(
    name: &'static str,
    value: &str,
    range: RangeInclusive<u64>,
) -> Result<u64, SettingError> {
    let v = value.trim();
    let (num, shift) = match v.as_bytes().last() {
        Some(b'k' | b'K') => (&v[..v.len() - 1], 10),
        Some(b'm' | b'M') => (&v[..v.len() - 1], 20),
        Some(b'g' | b'G') => (&v[..v.len() - 1], 30),
        _ => (v, 0),
    };
    parse_in(name, num, 0..=u64::MAX >> shift)
        .ok()
        .map(|n| n << shift)
        .filter(|n| range.contains(n))
        .ok_or_else(|| SettingError {
            name,
            value: value.to_string(),
            expected: format!(
                "a size in bytes in {}..={} (suffix K, M or G allowed)",
                range.start(),
                range.end()
            ),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// A lookup of the given variables, as the environment would answer.
    fn vars(
        set: &[(&'static str, &str)],
    ) -> impl Fn(&'static str) -> Result<Option<String>, SettingError> {
        let m: HashMap<&'static str, String> =
            set.iter().map(|&(k, v)| (k, v.to_string())).collect();
        move |name| Ok(m.get(name).cloned())
    }

    fn config(set: &[(&'static str, &str)]) -> Result<Config, SettingError> {
        Config::from_vars(vars(set))
    }

    /// The error for `set`, which must name `name` and keep the value.
    fn refused(set: &[(&'static str, &str)], name: &str) -> SettingError {
        let e = config(set).expect_err("a bad value must be refused");
        assert_eq!(e.name, name);
        assert_eq!(e.value, set[0].1);
        assert!(e.to_string().contains(name), "{e}");
        e
    }

    #[test]
    fn unset_keeps_the_defaults() {
        let c = config(&[]).unwrap();
        let d = Config::default();
        assert_eq!(
            (c.heap, c.protocol, c.writes, c.prefetch, c.fault_no_wakeups),
            (d.heap, d.protocol, d.writes, d.prefetch, d.fault_no_wakeups)
        );
        assert_eq!(stats_json(vars(&[])), Ok(false));
    }

    #[test]
    fn stall_takes_seconds_abort_or_off() {
        use std::time::Duration;
        assert_eq!(config(&[]).unwrap().stall, Stall::default());
        let s = config(&[("SSS_DSM_STALL", "5")]).unwrap().stall;
        assert_eq!((s.after, s.abort), (Some(Duration::from_secs(5)), false));
        let s = config(&[("SSS_DSM_STALL", "abort:2")]).unwrap().stall;
        assert_eq!((s.after, s.abort), (Some(Duration::from_secs(2)), true));
        assert_eq!(
            config(&[("SSS_DSM_STALL", "off")]).unwrap().stall.after,
            None
        );
        for bad in ["0", "abort:", "abort:0", "-1", "soon", "86401", "abort:x"] {
            refused(&[("SSS_DSM_STALL", bad)], "SSS_DSM_STALL");
        }
    }

    #[test]
    fn heap_sizes_take_suffixes_within_range() {
        for (v, want) in [
            ("1G", 1u64 << 30),
            (" 64k ", 64 << 10),
            ("3M", 3 << 20),
            ("4096", 4096),
            ("65536G", 1 << 46),
        ] {
            let c = config(&[("SSS_DSM_HEAP", v)]).unwrap();
            assert_eq!(c.heap as u64, want, "{v}");
        }
        for bad in [
            "0",
            "1K",
            "G",
            "1T",
            "-1G",
            "1.5G",
            "65537G",
            "18446744073709551615G",
            "1GG",
            "lots",
        ] {
            let e = refused(&[("SSS_DSM_HEAP", bad)], "SSS_DSM_HEAP");
            assert!(e.expected.contains("4096..=70368744177664"), "{e}");
        }
    }

    #[test]
    fn protocols_and_write_modes_are_choices() {
        for p in Protocol::ALL {
            let c = config(&[("SSS_DSM_PROTOCOL", p.name())]).unwrap();
            assert_eq!(c.protocol, p);
        }
        let e = refused(&[("SSS_DSM_PROTOCOL", "lrc")], "SSS_DSM_PROTOCOL");
        assert_eq!(
            e.expected,
            "one of ulrc, invalidate, home_update, update, update_drct, home_only"
        );
        let c = config(&[("SSS_DSM_WRITES", "trap")]).unwrap();
        assert_eq!(c.writes, WriteMode::Trap);
        refused(&[("SSS_DSM_WRITES", "TRAP")], "SSS_DSM_WRITES");
        assert_eq!(config(&[]).unwrap().faults, FaultMode::Signal);
        let c = config(&[("SSS_DSM_FAULTS", "thread")]).unwrap();
        assert_eq!(c.faults, FaultMode::Thread);
        refused(&[("SSS_DSM_FAULTS", "sigbus")], "SSS_DSM_FAULTS");
    }

    #[test]
    fn prefetch_is_a_number_in_range() {
        let c = config(&[("SSS_DSM_PREFETCH", "256")]).unwrap();
        assert_eq!(c.prefetch, 256);
        for bad in ["257", "-1", "4 pages", "1e2"] {
            let e = refused(&[("SSS_DSM_PREFETCH", bad)], "SSS_DSM_PREFETCH");
            assert_eq!(e.expected, "a number in 0..=256");
        }
    }

    #[test]
    fn flags_are_zero_or_one() {
        let c = config(&[("SSS_DSM_FAULT_NO_WAKEUPS", "1")]).unwrap();
        assert!(c.fault_no_wakeups);
        let c = config(&[("SSS_DSM_FAULT_NO_WAKEUPS", "0")]).unwrap();
        assert!(!c.fault_no_wakeups);
        refused(
            &[("SSS_DSM_FAULT_NO_WAKEUPS", "yes")],
            "SSS_DSM_FAULT_NO_WAKEUPS",
        );
    }

    #[test]
    fn stats_output_is_json_or_off() {
        assert_eq!(stats_json(vars(&[("SSS_STATS", "json")])), Ok(true));
        assert_eq!(stats_json(vars(&[("SSS_STATS", "off")])), Ok(false));
        let e = stats_json(vars(&[("SSS_STATS", "yaml")])).unwrap_err();
        assert_eq!(
            e.to_string(),
            "SSS_STATS=\"yaml\" is not valid: expected one of json, off"
        );
    }
}
