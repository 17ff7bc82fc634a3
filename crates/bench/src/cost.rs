//! What `SSS_SECURITY` costs: the 8 B round trip and 1392 B bandwidth of
//! MBCF over udp under `none`, `auth` and `encrypt`, each repetition
//! running the three jobs back to back (same plan, same machine state), so
//! their ratios are side by side.

use std::fmt::Write as _;

use crate::fair::{spread, Limit, Verdict};
use crate::plan::{bw_key, rtt_key, Item, Plan, Proto, Wait, FLOOR_SIZE, TCP_BW_SIZE};
use crate::Figures;

/// The modes compared, in run order.
pub const MODES: [&str; 3] = ["none", "auth", "encrypt"];

/// The plan of one security job: the two items compared, each long
/// enough to be steady even under `--quick` (a few seconds a job).
pub fn plan(base: &Plan) -> Plan {
    Plan {
        iters: base.iters.max(3000),
        bw_bytes: base.bw_bytes.max(64 << 20),
        bw_max_ops: base.bw_max_ops.max(40_000),
        items: vec![
            Item::Rtt {
                proto: Proto::Mbcf,
                size: FLOOR_SIZE,
                wait: Wait::Block,
            },
            Item::Bw {
                proto: Proto::Mbcf,
                size: TCP_BW_SIZE,
                wait: Wait::Block,
            },
        ],
        ..base.clone()
    }
}

/// The key of a security job's figure: `rtt/mbcf/8` under `auth` becomes
/// `rtt/mbcf_auth/8`. Other keys are not compared (`None`).
pub fn key(k: &str, mode: &str) -> Option<String> {
    let (kind, rest) = k.split_once('/')?;
    let size = rest.strip_prefix("mbcf/")?;
    matches!(kind, "rtt" | "bw").then(|| format!("{kind}/mbcf_{mode}/{size}"))
}

/// The cost table with the targets: `auth` within 10 % of `none`
/// on the round trip and 15 % on bandwidth.
pub fn markdown(samples: &Figures, busy: bool) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "### Cost of `SSS_SECURITY` (udp; the three jobs run back to back in every repetition)\n\n\
         | mode | 8 B round trip µs min / median / max | vs none | 1392 B WRITE MB/s min / median / max | vs none |\n\
         |---|---|---:|---|---:|"
    );
    let get = |k: &str| samples.get(k).and_then(|v| spread(v));
    let rtt = |m: &str| get(&rtt_key(&format!("mbcf_{m}"), FLOOR_SIZE));
    let bw = |m: &str| get(&bw_key(&format!("mbcf_{m}"), TCP_BW_SIZE));
    let cell = |s: Option<crate::fair::Spread>, d: usize| {
        s.map_or("—".into(), |s| {
            format!("{:.d$} / {:.d$} / {:.d$}", s.min, s.median, s.max)
        })
    };
    let ratio = |a: Option<crate::fair::Spread>, b: Option<crate::fair::Spread>| {
        Some(a?.median / b?.median).filter(|r| r.is_finite())
    };
    for m in MODES {
        let _ = writeln!(
            o,
            "| `{m}` | {} | {} | {} | {} |",
            cell(rtt(m), 2),
            ratio(rtt(m), rtt("none")).map_or("—".into(), |r| format!("{r:.3}")),
            cell(bw(m), 0),
            ratio(bw(m), bw("none")).map_or("—".into(), |r| format!("{r:.3}")),
        );
    }
    let goals = [
        (
            "auth 8 B round trip / none",
            ratio(rtt("auth"), rtt("none")),
            Limit::AtMost(1.10),
        ),
        (
            "auth 1392 B bandwidth / none",
            ratio(bw("auth"), bw("none")),
            Limit::AtLeast(0.85),
        ),
    ];
    let _ = writeln!(o, "\n| target | measured | limit | |\n|---|---:|---|---|");
    for (what, v, limit) in goals {
        let _ = writeln!(
            o,
            "| {what} | {} | {} | {} |",
            v.map_or("—".into(), |v| format!("{v:.3}")),
            limit.text(),
            Verdict::of(v, limit, busy).text()
        );
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_renamed_per_mode_and_others_dropped() {
        assert_eq!(
            key("rtt/mbcf/8", "auth").as_deref(),
            Some("rtt/mbcf_auth/8")
        );
        assert_eq!(
            key("bw/mbcf/1392", "none").as_deref(),
            Some("bw/mbcf_none/1392")
        );
        assert_eq!(key("rtt/udp_poll/8", "auth"), None);
        assert_eq!(key("mbcf_stats", "auth"), None);
    }

    #[test]
    fn the_table_judges_auth_against_none() {
        let mut s = Figures::new();
        s.insert("rtt/mbcf_none/8".into(), vec![10.0, 10.0, 10.0]);
        s.insert("rtt/mbcf_auth/8".into(), vec![10.5, 10.5, 10.5]);
        s.insert("bw/mbcf_none/1392".into(), vec![1000.0]);
        s.insert("bw/mbcf_auth/1392".into(), vec![800.0]);
        let md = markdown(&s, false);
        assert!(
            md.contains("| auth 8 B round trip / none | 1.050 | ≤ 1.1 | met |"),
            "{md}"
        );
        assert!(
            md.contains("| auth 1392 B bandwidth / none | 0.800 | ≥ 0.85 | MISSED |"),
            "{md}"
        );
        assert!(markdown(&s, true).contains("machine busy"));
    }
}
