//! Tunables of a heap: [`Config`] and [`WriteMode`], and the settings
//! read from the environment (`SSS_DSM_*`).

use crate::protocol::Protocol;

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
}

impl Default for Config {
    fn default() -> Self {
        Self {
            heap: 64 << 30,
            protocol: Protocol::Ulrc,
            writes: WriteMode::Note,
            prefetch: 0,
            fault_no_wakeups: false,
        }
    }
}

fn parse_size(s: &str) -> Option<usize> {
    let s = s.trim();
    let (num, mul) = match s.chars().last()? {
        'k' | 'K' => (&s[..s.len() - 1], 1 << 10),
        'm' | 'M' => (&s[..s.len() - 1], 1 << 20),
        'g' | 'G' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.trim().parse::<usize>().ok()?.checked_mul(mul)
}

impl Config {
    /// Defaults overridden by `SSS_DSM_HEAP`, `SSS_DSM_PROTOCOL`,
    /// `SSS_DSM_WRITES`, `SSS_DSM_PREFETCH` and
    /// `SSS_DSM_FAULT_NO_WAKEUPS`; unparsable values are ignored.
    pub fn from_env() -> Self {
        let mut c = Self::default();
        if let Some(v) = std::env::var("SSS_DSM_HEAP")
            .ok()
            .and_then(|v| parse_size(&v))
        {
            c.heap = v;
        }
        if let Some(p) = std::env::var("SSS_DSM_PROTOCOL")
            .ok()
            .and_then(|v| Protocol::parse(&v))
        {
            c.protocol = p;
        }
        match std::env::var("SSS_DSM_WRITES").as_deref() {
            Ok("trap") => c.writes = WriteMode::Trap,
            Ok("note") => c.writes = WriteMode::Note,
            _ => {}
        }
        if let Some(v) = std::env::var("SSS_DSM_PREFETCH")
            .ok()
            .and_then(|v| v.trim().parse().ok())
        {
            c.prefetch = std::cmp::min(v, 256);
        }
        if std::env::var("SSS_DSM_FAULT_NO_WAKEUPS").as_deref() == Ok("1") {
            c.fault_no_wakeups = true;
        }
        c
    }
}
