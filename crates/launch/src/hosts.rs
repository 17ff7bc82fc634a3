//! Host lists, hostfiles, and the placement of ranks on hosts.

use std::net::IpAddr;
use std::path::Path;

use crate::RunError;

/// A host the job may use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Host {
    /// Address or name, passed to tasks as `SSS_NODE`.
    pub name: String,
    /// `slots=K` from a hostfile.
    pub slots: Option<u32>,
}

/// Where one rank runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Slot {
    /// Index into the host list (`SSS_NODE_ID`).
    pub host: usize,
    /// Rank among the tasks on that host.
    pub local_rank: u32,
    /// Tasks on that host.
    pub local_size: u32,
}

/// Parses `--hosts a,b,c`.
pub(crate) fn parse_list(list: &[String]) -> Result<Vec<Host>, RunError> {
    let mut hosts = Vec::new();
    for name in list {
        let name = name.trim();
        if name.is_empty() {
            return Err(RunError::BadHosts("--hosts has an empty entry".into()));
        }
        hosts.push(Host {
            name: name.to_string(),
            slots: None,
        });
    }
    check_unique(&hosts)?;
    Ok(hosts)
}

/// Parses a hostfile: one host per line, optionally `slots=K`; `#` starts
/// a comment; blank lines are skipped.
pub(crate) fn parse_hostfile(path: &Path, text: &str) -> Result<Vec<Host>, RunError> {
    let mut hosts = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let err = |msg: String| RunError::Hostfile {
            path: path.to_path_buf(),
            line: i + 1,
            msg,
        };
        let line = line.split('#').next().unwrap_or("");
        let mut words = line.split_whitespace();
        let Some(name) = words.next() else { continue };
        let mut slots = None;
        for w in words {
            let Some(v) = w.strip_prefix("slots=") else {
                return Err(err(format!("unknown field {w:?} (expected slots=K)")));
            };
            match v.parse::<u32>() {
                Ok(k) if k > 0 => slots = Some(k),
                _ => return Err(err(format!("slots={v}: expected a positive integer"))),
            }
        }
        hosts.push(Host {
            name: name.to_string(),
            slots,
        });
    }
    if hosts.is_empty() {
        return Err(RunError::BadHosts(format!(
            "hostfile {} names no host",
            path.display()
        )));
    }
    check_unique(&hosts)?;
    Ok(hosts)
}

fn check_unique(hosts: &[Host]) -> Result<(), RunError> {
    for (i, h) in hosts.iter().enumerate() {
        if hosts[..i].iter().any(|o| o.name == h.name) {
            return Err(RunError::DuplicateHost(h.name.clone()));
        }
    }
    Ok(())
}

/// True for names the local spawner accepts: loopback addresses.
pub(crate) fn is_loopback(name: &str) -> bool {
    name == "localhost" || name.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Places `np` ranks on `hosts` in blocks (ranks of one host are
/// consecutive). With `per_host` every host holds up to that many tasks and
/// is filled before the next; without it, hosts that all have `slots` are
/// filled the same way, and otherwise the ranks are spread evenly (earlier
/// hosts take the remainder), never beyond a host's `slots`.
pub(crate) fn place(np: u32, hosts: &[Host], per_host: Option<u32>) -> Result<Vec<Slot>, RunError> {
    if np == 0 {
        return Err(RunError::NoTasks);
    }
    if per_host == Some(0) {
        return Err(RunError::ZeroPerHost);
    }
    let caps: Vec<Option<u32>> = hosts.iter().map(|h| per_host.or(h.slots)).collect();
    let mut counts = vec![0u32; hosts.len()];
    let block = !caps.is_empty() && caps.iter().all(Option::is_some);
    if block {
        let slots: u64 = caps.iter().map(|c| u64::from(c.unwrap_or(0))).sum();
        if u64::from(np) > slots {
            return Err(RunError::NotEnoughSlots { np, slots });
        }
        let mut left = np;
        for (n, cap) in counts.iter_mut().zip(&caps) {
            *n = left.min(cap.unwrap_or(0));
            left -= *n;
        }
    } else {
        // Round-robin one task at a time over the hosts with room: an even
        // spread that respects the hosts that do have slots.
        let mut left = np;
        while left > 0 {
            let mut placed = false;
            for (n, cap) in counts.iter_mut().zip(&caps) {
                if left > 0 && cap.is_none_or(|c| *n < c) {
                    *n += 1;
                    left -= 1;
                    placed = true;
                }
            }
            if !placed {
                let slots = caps.iter().map(|c| u64::from(c.unwrap_or(0))).sum();
                return Err(RunError::NotEnoughSlots { np, slots });
            }
        }
    }
    let mut slots = Vec::with_capacity(np as usize);
    for (host, &n) in counts.iter().enumerate() {
        for local_rank in 0..n {
            slots.push(Slot {
                host,
                local_rank,
                local_size: n,
            });
        }
    }
    Ok(slots)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts(names: &[&str]) -> Vec<Host> {
        names
            .iter()
            .map(|n| Host {
                name: n.to_string(),
                slots: None,
            })
            .collect()
    }

    fn layout(s: &[Slot]) -> Vec<(usize, u32, u32)> {
        s.iter()
            .map(|s| (s.host, s.local_rank, s.local_size))
            .collect()
    }

    #[test]
    fn per_host_fills_blocks() {
        let h = hosts(&["a", "b"]);
        let s = place(4, &h, Some(2)).unwrap();
        assert_eq!(layout(&s), vec![(0, 0, 2), (0, 1, 2), (1, 0, 2), (1, 1, 2)]);
        // Fewer tasks than slots: the first host first.
        let s = place(2, &h, Some(2)).unwrap();
        assert_eq!(layout(&s), vec![(0, 0, 2), (0, 1, 2)]);
        let e = place(5, &h, Some(2)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "5 tasks do not fit in the 4 slots of the given hosts"
        );
    }

    #[test]
    fn default_spreads_evenly_in_blocks() {
        let h = hosts(&["a", "b", "c"]);
        let s = place(5, &h, None).unwrap();
        assert_eq!(
            layout(&s),
            vec![(0, 0, 2), (0, 1, 2), (1, 0, 2), (1, 1, 2), (2, 0, 1)]
        );
        // Oversubscription without slots is allowed: more tasks than hosts.
        assert_eq!(place(7, &hosts(&["a"]), None).unwrap().len(), 7);
    }

    #[test]
    fn slots_cap_hosts() {
        let mut h = hosts(&["a", "b"]);
        h[0].slots = Some(1);
        // Mixed: a is capped at 1, b takes the rest.
        let s = place(4, &h, None).unwrap();
        assert_eq!(layout(&s), vec![(0, 0, 1), (1, 0, 3), (1, 1, 3), (1, 2, 3)]);
        h[1].slots = Some(2);
        let s = place(2, &h, None).unwrap();
        assert_eq!(layout(&s), vec![(0, 0, 1), (1, 0, 1)]);
        assert!(matches!(
            place(4, &h, None).unwrap_err(),
            RunError::NotEnoughSlots { np: 4, slots: 3 }
        ));
        // --per-host overrides slots.
        assert_eq!(place(4, &h, Some(2)).unwrap().len(), 4);
    }

    #[test]
    fn zero_is_refused() {
        assert!(matches!(
            place(0, &hosts(&["a"]), None),
            Err(RunError::NoTasks)
        ));
        assert!(matches!(
            place(1, &hosts(&["a"]), Some(0)),
            Err(RunError::ZeroPerHost)
        ));
    }

    #[test]
    fn hostfile_syntax() {
        let p = Path::new("hf");
        let text = "# cluster\n127.0.0.2 slots=2  # first\n\n  127.0.0.3\n";
        let h = parse_hostfile(p, text).unwrap();
        assert_eq!(
            h,
            vec![
                Host {
                    name: "127.0.0.2".into(),
                    slots: Some(2)
                },
                Host {
                    name: "127.0.0.3".into(),
                    slots: None
                }
            ]
        );
        let e = parse_hostfile(p, "a\nb slots=0\n").unwrap_err();
        assert_eq!(e.to_string(), "hf:2: slots=0: expected a positive integer");
        let e = parse_hostfile(p, "a cpus=4\n").unwrap_err();
        assert!(e.to_string().starts_with("hf:1: unknown field"), "{e}");
        let e = parse_hostfile(p, "a\na\n").unwrap_err();
        assert!(matches!(e, RunError::DuplicateHost(_)));
        assert!(parse_hostfile(p, "# nothing\n").is_err());
    }

    #[test]
    fn host_list_and_loopback() {
        assert_eq!(parse_list(&["a".into(), " b ".into()]).unwrap().len(), 2);
        assert!(parse_list(&["a".into(), "".into()]).is_err());
        assert!(is_loopback("127.0.0.3") && is_loopback("::1") && is_loopback("localhost"));
        assert!(!is_loopback("10.0.0.1") && !is_loopback("node7"));
    }
}
