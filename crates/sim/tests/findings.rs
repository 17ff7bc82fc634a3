//! Seed 003's qualitative findings on the reduced configuration (w488,
//! sets A and L, 16 slices at most).

use sss_sim::runner::{self, GridKind, Results};
use sss_sim::{Algo, Network, Policy, Replacement, SetName};

fn results() -> Results {
    let specs: Vec<_> = runner::grid(GridKind::Reduced, 1)
        .into_iter()
        .filter(|s| matches!(s.policy, Policy::Kernel(_)))
        .collect();
    runner::run_all(&specs, &runner::grid_params(GridKind::Reduced), 0, &|_| {}).expect("grid runs")
}

fn eff(r: &Results, a: Algo, rp: Replacement, set: SetName) -> f64 {
    r.find(Network::W488, Policy::Kernel(a), rp, set)
        .expect("run present")
        .time
        .fractions()[0]
}

#[test]
fn paper_findings_hold_on_reduced_grid() {
    let r = results();
    for set in [SetName::A, SetName::L] {
        let a4 = eff(&r, Algo::Algo4, Replacement::Classed, set);
        for a in [Algo::Algo0, Algo::Algo2, Algo::Algo3] {
            let e = eff(&r, a, Replacement::Classed, set);
            assert!(a4 > e, "set {set}: algo4 {a4:.3} should beat {a} {e:.3}");
        }
        // Replacement 1 never loses to LRU under algo4.
        let r0 = eff(&r, Algo::Algo4, Replacement::Lru, set);
        assert!(a4 >= r0 - 0.01, "set {set}: repl1 {a4:.3} vs repl0 {r0:.3}");
        // Roughly the paper's band for algo4 + replacement 1.
        assert!(
            (0.35..=0.75).contains(&a4),
            "set {set}: algo4/repl1 at {a4:.3}"
        );
        // Random placement is far worse than any tree-based algorithm.
        assert!(
            eff(&r, Algo::Algo0, Replacement::Classed, set)
                < eff(&r, Algo::Algo2, Replacement::Classed, set)
        );
    }
    // Under memory pressure (set L) the class order wins clearly.
    let l1 = eff(&r, Algo::Algo4, Replacement::Classed, SetName::L);
    let l0 = eff(&r, Algo::Algo4, Replacement::Lru, SetName::L);
    assert!(l1 > l0 + 0.05, "set L: repl1 {l1:.3} vs repl0 {l0:.3}");
    for o in &r.outcomes {
        assert_eq!(
            o.time.total(),
            256 * 1_000_000 * o.slices,
            "{}",
            o.spec.label()
        );
    }
}
