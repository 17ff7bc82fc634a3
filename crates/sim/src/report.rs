//! Markdown and JSON tables of a grid's results.

use std::fmt::Write as _;
use std::path::Path;

use crate::config::{Algo, Network, Policy, Replacement, SetName};
use crate::error::SimError;
use crate::runner::Results;

fn pct(x: f64) -> String {
    format!("{:.1}", 100.0 * x)
}

/// Policies present in the results, kernel algorithms first.
fn policies(r: &Results) -> Vec<Policy> {
    let mut ps: Vec<Policy> = r.outcomes.iter().map(|o| o.spec.policy).collect();
    ps.sort();
    ps.dedup();
    ps
}

fn present<T: PartialEq + Copy + Ord>(
    r: &Results,
    f: impl Fn(&crate::model::Outcome) -> T,
) -> Vec<T> {
    let mut v: Vec<T> = r.outcomes.iter().map(f).collect();
    v.sort();
    v.dedup();
    v
}

/// Effective-execution summary: one table per (network, replacement),
/// policies as rows, sets as columns.
pub fn summary_markdown(r: &Results) -> String {
    let mut s = String::new();
    let sets = present(r, |o| o.spec.set);
    for net in present(r, |o| o.spec.network) {
        for repl in present(r, |o| o.spec.replacement) {
            let rows: Vec<Policy> = policies(r)
                .into_iter()
                .filter(|&p| {
                    r.find(net, p, repl, sets[0]).is_some()
                        || sets.iter().any(|&x| r.find(net, p, repl, x).is_some())
                })
                .collect();
            if rows.is_empty() {
                continue;
            }
            let _ = writeln!(s, "\n**Effective execution %, {net}, {repl}**\n");
            let _ = write!(s, "| policy |");
            for set in &sets {
                let _ = write!(s, " {set} |");
            }
            let _ = write!(s, "\n|---|");
            for _ in &sets {
                let _ = write!(s, "---:|");
            }
            s.push('\n');
            for p in rows {
                let _ = write!(s, "| {p} |");
                for &set in &sets {
                    let cell = r
                        .find(net, p, repl, set)
                        .map(|o| pct(o.time.fractions()[0]))
                        .unwrap_or_default();
                    let _ = write!(s, " {cell} |");
                }
                s.push('\n');
            }
        }
    }
    s
}

/// Full breakdown: one row per run.
pub fn breakdown_markdown(r: &Results) -> String {
    let mut s = String::from(
        "| network | policy | repl | set | effective % | page+comm % | sync % | idle % | slices | page moves | disk reads | evictions | Mclk/s |\n\
         |---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for o in &r.outcomes {
        let f = o.time.fractions();
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.0} |",
            o.spec.network,
            o.spec.policy,
            o.spec.replacement,
            o.spec.set,
            pct(f[0]),
            pct(f[1]),
            pct(f[2]),
            pct(f[3]),
            o.slices,
            o.counters.page_moves,
            o.counters.disk_reads,
            o.counters.evictions,
            o.clocks_per_second() / 1e6,
        );
    }
    s
}

/// The paper's qualitative findings checked against the results.
pub fn findings_markdown(r: &Results) -> String {
    let mut s = String::new();
    let eff = |n, p, rp, set| r.find(n, p, rp, set).map(|o| o.time.fractions()[0]);
    let k = Policy::Kernel;
    let sets = present(r, |o| o.spec.set);
    let nets = present(r, |o| o.spec.network);
    let _ = writeln!(
        s,
        "| finding | network | set | holds | numbers (effective %) |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|");
    for &n in &nets {
        for &set in &sets {
            let c = Replacement::Classed;
            let all: Vec<(Algo, f64)> = Algo::ALL
                .iter()
                .filter_map(|&a| eff(n, k(a), c, set).map(|e| (a, e)))
                .collect();
            if let Some(&(best, _)) = all.iter().max_by(|a, b| a.1.total_cmp(&b.1)) {
                let nums: Vec<String> = all
                    .iter()
                    .map(|(a, e)| format!("{a} {}", pct(*e)))
                    .collect();
                let _ = writeln!(
                    s,
                    "| algo4 best (repl1) | {n} | {set} | {} | {} |",
                    yes(best == Algo::Algo4),
                    nums.join(", ")
                );
            }
            if let (Some(a2), Some(a3), Some(a4)) = (
                eff(n, k(Algo::Algo2), c, set),
                eff(n, k(Algo::Algo3), c, set),
                eff(n, k(Algo::Algo4), c, set),
            ) {
                let _ = writeln!(
                    s,
                    "| algo2 < algo3 < algo4 | {n} | {set} | {} | {} < {} < {} |",
                    yes(a2 < a3 && a3 < a4),
                    pct(a2),
                    pct(a3),
                    pct(a4)
                );
            }
            if let (Some(r0), Some(r1)) = (
                eff(n, k(Algo::Algo4), Replacement::Lru, set),
                eff(n, k(Algo::Algo4), Replacement::Classed, set),
            ) {
                let _ = writeln!(
                    s,
                    "| repl1 beats repl0 (algo4) | {n} | {set} | {} | {} vs {} |",
                    yes(r1 > r0),
                    pct(r1),
                    pct(r0)
                );
            }
            if let Some(a4) = eff(n, k(Algo::Algo4), Replacement::Classed, set) {
                let _ = writeln!(
                    s,
                    "| algo4+repl1 in 50–68 % | {n} | {set} | {} | {} |",
                    yes((0.5..=0.68).contains(&a4)),
                    pct(a4)
                );
            }
        }
    }
    s
}

fn yes(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "**no**"
    }
}

/// Free market versus algo4 (replacement 1).
pub fn freemarket_markdown(r: &Results) -> String {
    let mut s = String::from(
        "| network | set | algo4 eff % | fm eff % | fm+pen eff % | algo4 idle % | fm idle % | fm+pen idle % | fm migrations | fm+pen migrations |\n\
         |---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    let c = Replacement::Classed;
    for n in present(r, |o| o.spec.network) {
        for set in present(r, |o| o.spec.set) {
            let a4 = r.find(n, Policy::Kernel(Algo::Algo4), c, set);
            let fm = r.find(n, Policy::FreeMarket { penalty: false }, c, set);
            let fp = r.find(n, Policy::FreeMarket { penalty: true }, c, set);
            if fm.is_none() && fp.is_none() {
                continue;
            }
            let e = |o: Option<&crate::model::Outcome>, i: usize| {
                o.map(|o| pct(o.time.fractions()[i])).unwrap_or_default()
            };
            let m = |o: Option<&crate::model::Outcome>| {
                o.map(|o| o.counters.migrations.to_string())
                    .unwrap_or_default()
            };
            let _ = writeln!(
                s,
                "| {n} | {set} | {} | {} | {} | {} | {} | {} | {} | {} |",
                e(a4, 0),
                e(fm, 0),
                e(fp, 0),
                e(a4, 3),
                e(fm, 3),
                e(fp, 3),
                m(fm),
                m(fp)
            );
        }
    }
    s
}

/// The whole report as one Markdown document.
pub fn markdown(r: &Results) -> String {
    let mut s = String::from("# Scheduling simulation results\n");
    let _ = writeln!(
        s,
        "\n{} runs in {:.1} s on {} threads; {:.3e} simulated processor-clocks/s ({:.3e} machine clocks/s).\n",
        r.outcomes.len(),
        r.wall_seconds,
        r.threads,
        r.clocks_per_second(),
        r.machine_clocks_per_second()
    );
    s.push_str("\n## Effective execution\n");
    s.push_str(&summary_markdown(r));
    s.push_str("\n## Findings of seed 003\n\n");
    s.push_str(&findings_markdown(r));
    if r.outcomes
        .iter()
        .any(|o| matches!(o.spec.policy, Policy::FreeMarket { .. }))
    {
        s.push_str("\n## Free market versus algo4 (replacement 1)\n\n");
        s.push_str(&freemarket_markdown(r));
    }
    s.push_str("\n## Breakdown of processor time\n\n");
    s.push_str(&breakdown_markdown(r));
    s
}

/// Write `results.json` and `results.md` into `dir`.
pub fn write(r: &Results, dir: &Path) -> Result<(), SimError> {
    let io = |path: &Path| {
        let p = path.display().to_string();
        move |source| SimError::Io { path: p, source }
    };
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let json = dir.join("results.json");
    std::fs::write(&json, serde_json::to_string_pretty(r)?).map_err(io(&json))?;
    let md = dir.join("results.md");
    std::fs::write(&md, markdown(r)).map_err(io(&md))?;
    Ok(())
}

/// Networks present, for callers that lay out per-network output.
pub fn networks(r: &Results) -> Vec<Network> {
    present(r, |o| o.spec.network)
}

/// Sets present.
pub fn sets(r: &Results) -> Vec<SetName> {
    present(r, |o| o.spec.set)
}

/// Sensitivity table: effective execution % per variant.
pub fn sensitivity_markdown(s: &crate::runner::Sensitivity) -> String {
    let mut out = String::from(
        "| variant | A algo2 | A algo3 | A algo4 | A algo4 repl0 | L algo2 | L algo3 | L algo4 | L algo4 repl0 | findings hold |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n",
    );
    let k = Policy::Kernel;
    for (name, r) in s.names.iter().zip(&s.results) {
        let e = |a: Algo, rp: Replacement, set: SetName| {
            r.find(Network::W488, k(a), rp, set)
                .map(|o| o.time.fractions()[0])
                .unwrap_or(f64::NAN)
        };
        let mut cells = Vec::new();
        let mut holds = Vec::new();
        for set in [SetName::A, SetName::L] {
            let a2 = e(Algo::Algo2, Replacement::Classed, set);
            let a3 = e(Algo::Algo3, Replacement::Classed, set);
            let a4 = e(Algo::Algo4, Replacement::Classed, set);
            let r0 = e(Algo::Algo4, Replacement::Lru, set);
            cells.extend([a2, a3, a4, r0].map(pct));
            let mut miss = Vec::new();
            if !(a4 > a2 && a4 > a3) {
                miss.push("algo4 best");
            }
            if !(a2 < a3 && a3 < a4) {
                miss.push("2<3<4");
            }
            if a4 <= r0 {
                miss.push("repl1>repl0");
            }
            if miss.is_empty() {
                holds.push(format!("{set}: all"));
            } else {
                holds.push(format!("{set}: not {}", miss.join(", ")));
            }
        }
        let _ = writeln!(
            out,
            "| {name} | {} | {} |",
            cells.join(" | "),
            holds.join("; ")
        );
    }
    out
}

/// Write `sensitivity.json` and `sensitivity.md` into `dir`.
pub fn write_sensitivity(s: &crate::runner::Sensitivity, dir: &Path) -> Result<(), SimError> {
    let io = |path: &Path| {
        let p = path.display().to_string();
        move |source| SimError::Io { path: p, source }
    };
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let json = dir.join("sensitivity.json");
    std::fs::write(&json, serde_json::to_string_pretty(s)?).map_err(io(&json))?;
    let md = dir.join("sensitivity.md");
    std::fs::write(&md, sensitivity_markdown(s)).map_err(io(&md))?;
    Ok(())
}
