//! Tunables read from the environment, each parsed and checked against its
//! range: a bad value is an error naming the variable, the value and what
//! is allowed, returned from [`crate::Task::init`], never a panic later.

use crate::task::{Bind, TaskConfig, Transport};
use sss_proto::MAX_TIME_SETTING;
use sss_seal::Security;
use std::fmt::Display;
use std::ops::RangeInclusive;
use std::str::FromStr;
use std::time::Duration;

/// An environment variable whose value is not acceptable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{name}={value:?} is not valid: expected {expected}")]
pub struct SettingError {
    /// The variable.
    pub name: &'static str,
    /// Its value as given.
    pub value: String,
    /// What is allowed.
    pub expected: String,
}

/// Parses `value`, the value of variable `name`, as a number in `range`.
pub fn parse_in<T>(
    name: &'static str,
    value: &str,
    range: RangeInclusive<T>,
) -> Result<T, SettingError>
where
    T: FromStr + PartialOrd + Display,
{
    match value.trim().parse::<T>() {
        Ok(v) if range.contains(&v) => Ok(v),
        _ => Err(SettingError {
            name,
            value: value.to_string(),
            expected: format!("a number in {}..={}", range.start(), range.end()),
        }),
    }
}

/// Parses `value` of variable `name` as one of `choices`.
pub fn parse_choice<T: Copy>(
    name: &'static str,
    value: &str,
    choices: &[(&str, T)],
) -> Result<T, SettingError> {
    let v = value.trim();
    choices
        .iter()
        .find(|(k, _)| *k == v)
        .map(|&(_, t)| t)
        .ok_or_else(|| SettingError {
            name,
            value: value.to_string(),
            expected: format!(
                "one of {}",
                choices.iter().map(|c| c.0).collect::<Vec<_>>().join(", ")
            ),
        })
}

/// The value of variable `name`: `None` when unset or empty, an error
/// when not UTF-8 (exported as `env_value` for the settings of other
/// crates).
pub fn raw(name: &'static str) -> Result<Option<String>, SettingError> {
    match std::env::var(name) {
        Ok(v) if v.trim().is_empty() => Ok(None),
        Ok(v) => Ok(Some(v)),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(v)) => Err(SettingError {
            name,
            value: v.to_string_lossy().into_owned(),
            expected: "UTF-8 text".into(),
        }),
    }
}

fn number<T>(name: &'static str, range: RangeInclusive<T>) -> Result<Option<T>, SettingError>
where
    T: FromStr + PartialOrd + Display,
{
    raw(name)?.map(|v| parse_in(name, &v, range)).transpose()
}

/// Microseconds, at most `MAX_TIME_SETTING`.
const MAX_US: u64 = MAX_TIME_SETTING / 1000;
/// Waiting policy durations, at most 10 s.
const MAX_WAIT_US: u64 = 10_000_000;

impl TaskConfig {
    /// Defaults overridden by `SSS_TRANSPORT` (`auto`: shm within a node,
    /// udp across; `udp`: udp everywhere; `shm` means `auto`, as shm cannot
    /// reach other nodes), `SSS_SPIN_US`, `SSS_SPIN_MAX_US`, `SSS_SOCKBUF`,
    /// `SSS_RETRIES` (retry budget), `SSS_RTO_MIN_US`, `SSS_RTO_MAX_US`,
    /// `SSS_WINDOW`, `SSS_PAYLOAD` (bytes per packet), SS-Wait's
    /// `SSS_SSWAIT_SPIN_US`, `SSS_SSWAIT_BLOCK_US`, `SSS_SSWAIT_YIELDS`,
    /// `SSS_SSWAIT_YIELD_US`, `SSS_SSWAIT_CPUS` ([`crate::SsWaitTuning`]),
    /// `SSS_BIND` ([`Bind`]: `auto`, `core` or `none`), `SSS_SECURITY`
    /// ([`Security`]: `auth`, `encrypt` or `none`), and the fault
    /// injector's `SSS_FAULT_DROP` / `SSS_FAULT_DUP` (fractions of outgoing
    /// udp datagrams dropped / duplicated). Unset or empty variables keep
    /// the default; any other value out of range is an error.
    pub fn from_env() -> Result<Self, SettingError> {
        let mut c = Self::default();
        if let Some(v) = number("SSS_SPIN_US", 0..=MAX_WAIT_US)? {
            c.spin = Duration::from_micros(v);
        }
        if let Some(v) = number("SSS_SPIN_MAX_US", 0..=MAX_WAIT_US)? {
            c.spin_max = Duration::from_micros(v);
        }
        if let Some(v) = raw("SSS_BIND")? {
            let choices = [
                ("auto", Bind::Auto),
                ("core", Bind::Core),
                ("none", Bind::None),
            ];
            c.bind = parse_choice("SSS_BIND", &v, &choices)?;
        }
        if let Some(v) = raw("SSS_TRANSPORT")? {
            let choices = [
                ("auto", Transport::Auto),
                ("shm", Transport::Auto),
                ("udp", Transport::Udp),
            ];
            c.transport = parse_choice("SSS_TRANSPORT", &v, &choices)?;
        }
        if let Some(v) = number("SSS_FAULT_DROP", 0.0..=1.0)? {
            c.fault_drop = v;
        }
        if let Some(v) = number("SSS_FAULT_DUP", 0.0..=1.0)? {
            c.fault_dup = v;
        }
        if let Some(v) = number("SSS_SOCKBUF", 4096..=1 << 30)? {
            c.sockbuf = v;
        }
        if let Some(v) = number("SSS_RETRIES", 0..=1_000_000)? {
            c.proto.max_retries = v;
        }
        let min_us = number("SSS_RTO_MIN_US", 1..=MAX_US)?;
        let max_us = number("SSS_RTO_MAX_US", 1..=MAX_US)?;
        if let Some(v) = min_us {
            c.proto.min_rto = v * 1000;
        }
        if let Some(v) = max_us {
            c.proto.max_rto = v * 1000;
        }
        if c.proto.min_rto > c.proto.max_rto {
            // Name the variable that was set (both, if both were).
            let (name, value, expected) = match (min_us, max_us) {
                (Some(v), _) => (
                    "SSS_RTO_MIN_US",
                    v,
                    format!("at most SSS_RTO_MAX_US ({} us)", c.proto.max_rto / 1000),
                ),
                (None, Some(v)) => (
                    "SSS_RTO_MAX_US",
                    v,
                    format!("at least SSS_RTO_MIN_US ({} us)", c.proto.min_rto / 1000),
                ),
                (None, None) => unreachable!("the defaults are ordered"),
            };
            return Err(SettingError {
                name,
                value: value.to_string(),
                expected,
            });
        }
        // The first timeout, before any round trip was measured, stays
        // within the bounds chosen.
        c.proto.initial_rto = c.proto.initial_rto.clamp(c.proto.min_rto, c.proto.max_rto);
        if let Some(v) = number("SSS_WINDOW", 1..=1 << 16)? {
            c.proto.window = v;
        }
        if let Some(v) = raw("SSS_SECURITY")? {
            let choices = [
                ("auth", Security::Auth),
                ("encrypt", Security::Encrypt),
                ("none", Security::None),
            ];
            c.security = parse_choice("SSS_SECURITY", &v, &choices)?;
        }
        c.proto.payload_size = match number("SSS_PAYLOAD", 64..=sss_proto::MAX_PAYLOAD)? {
            Some(v) => {
                c.route_payload = false;
                v
            }
            None => crate::task::default_payload(c.security),
        };
        if let Some(v) = number("SSS_SSWAIT_SPIN_US", 0..=MAX_WAIT_US)? {
            c.sswait.spin = Duration::from_micros(v);
        }
        if let Some(v) = number("SSS_SSWAIT_BLOCK_US", 1..=MAX_WAIT_US)? {
            c.sswait.block = Duration::from_micros(v);
        }
        if let Some(v) = number("SSS_SSWAIT_YIELDS", 0..=1_000_000)? {
            c.sswait.yields = v;
        }
        if let Some(v) = number("SSS_SSWAIT_YIELD_US", 0..=MAX_WAIT_US)? {
            c.sswait.yield_for = Duration::from_micros(v);
        }
        if let Some(v) = number("SSS_SSWAIT_CPUS", 1..=1 << 16)? {
            c.sswait.cpus = Some(v);
        }
        debug_assert_eq!(c.proto.validate(), Ok(()));
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_parsed_within_their_range() {
        assert_eq!(parse_in("X", " 42 ", 0u64..=100), Ok(42));
        assert_eq!(parse_in("X", "0", 0u64..=100), Ok(0));
        for bad in [
            "",
            "-1",
            "101",
            "1e3",
            "0x10",
            "18446744073709551616",
            "abc",
        ] {
            let e = parse_in("SSS_X", bad, 0u64..=100).unwrap_err();
            assert_eq!(e.name, "SSS_X");
            assert_eq!(e.value, bad);
            assert_eq!(e.expected, "a number in 0..=100");
            let msg = e.to_string();
            assert!(msg.contains("SSS_X") && msg.contains("0..=100"), "{msg}");
        }
        assert_eq!(parse_in("F", "0.25", 0.0..=1.0), Ok(0.25));
        for bad in ["NaN", "inf", "-0.1", "1.5"] {
            assert!(parse_in("F", bad, 0.0..=1.0).is_err(), "{bad}");
        }
        // Wider than the target type: refused, not truncated.
        assert!(parse_in("R", "4294967296", 0u32..=u32::MAX).is_err());
    }

    #[test]
    fn choices_name_the_alternatives() {
        let c = [("a", 1), ("b", 2)];
        assert_eq!(parse_choice("V", " b", &c), Ok(2));
        let e = parse_choice("V", "c", &c).unwrap_err();
        assert_eq!(e.to_string(), "V=\"c\" is not valid: expected one of a, b");
    }
}
