//! Conservation invariants and determinism of the model.

use sss_sim::config::SetSpec;
use sss_sim::runner::{self, GridKind};
use sss_sim::{Algo, Network, Params, Policy, Replacement, RunSpec, SetName, Sim};

fn spec(network: Network, policy: Policy, replacement: Replacement, set: SetName) -> RunSpec {
    RunSpec {
        network,
        policy,
        replacement,
        set,
        seed: 7,
    }
}

fn short() -> Params {
    Params {
        max_slices: 6,
        finish_slices: 4,
        ..Params::default()
    }
}

/// Configurations that stress different paths: random placement moves
/// everything, LRU evicts private pages to disk, L and M overflow memory,
/// the free market migrates.
fn cases() -> Vec<RunSpec> {
    vec![
        spec(
            Network::W488,
            Policy::Kernel(Algo::Algo0),
            Replacement::Lru,
            SetName::L,
        ),
        spec(
            Network::W4444,
            Policy::Kernel(Algo::Algo2),
            Replacement::Classed,
            SetName::M,
        ),
        spec(
            Network::W488,
            Policy::Kernel(Algo::Algo4),
            Replacement::Lru,
            SetName::R,
        ),
        spec(
            Network::W4444,
            Policy::FreeMarket { penalty: true },
            Replacement::Classed,
            SetName::A,
        ),
    ]
}

#[test]
fn breakdown_sums_to_total_and_pages_are_conserved() {
    for s in cases() {
        let params = short();
        let set = SetSpec::table3(s.set);
        let mut sim = Sim::new(s.clone(), params.clone());
        for _ in 0..4 {
            sim.step(1);
            let t = sim.time();
            let expect = params.processors as u64 * params.quantum * sim.slices_done();
            assert_eq!(
                t.total(),
                expect,
                "{}: breakdown does not sum to total",
                s.label()
            );
            sim.check_invariants()
                .unwrap_or_else(|e| panic!("{}: {e}", s.label()));
            let c = sim.page_census();
            assert_eq!(
                c[0] + c[1] + c[2],
                set.private_pages as u64,
                "{}: private pages",
                s.label()
            );
            assert_eq!(
                c[3] + c[5] + c[6],
                set.shared_pages as u64,
                "{}: shared pages",
                s.label()
            );
            assert!(
                c[4] >= c[3],
                "{}: every resident shared page has a copy",
                s.label()
            );
            let resident = c[0] + c[4];
            assert!(
                resident
                    <= (params.processors * params.pages_per_cluster) as u64
                        + sim.counters().overcommits,
                "{}: more pages resident than frames",
                s.label()
            );
        }
    }
}

#[test]
fn memory_pressure_exercises_replacement() {
    let params = Params {
        max_slices: 20,
        ..Params::default()
    };
    let mut sim = Sim::new(
        spec(
            Network::W488,
            Policy::Kernel(Algo::Algo0),
            Replacement::Lru,
            SetName::L,
        ),
        params,
    );
    sim.step(15);
    sim.check_invariants().unwrap_or_else(|e| panic!("{e}"));
    let c = sim.counters();
    assert!(c.evictions > 0, "set L must overflow memory");
    assert!(c.page_moves > 0);
    assert!(
        c.disk_reads > 0,
        "LRU must push private pages to disk and read them back"
    );
    assert!(c.copies_dropped > 0, "random placement drops shared copies");
}

#[test]
fn same_seed_same_result_regardless_of_threads() {
    let specs: Vec<RunSpec> = runner::grid(GridKind::Reduced, 3)
        .into_iter()
        .step_by(5)
        .collect();
    let params = short();
    let one = runner::run_all(&specs, &params, 1, &|_| {}).expect("run");
    let two = runner::run_all(&specs, &params, 2, &|_| {}).expect("run");
    for (a, b) in one.outcomes.iter().zip(&two.outcomes) {
        assert_eq!(a.spec, b.spec);
        assert_eq!(a.time, b.time, "{}", a.spec.label());
        assert_eq!(a.counters, b.counters, "{}", a.spec.label());
        assert_eq!(a.proc_effective_slices, b.proc_effective_slices);
    }
    // A different seed changes the outcome.
    let mut other = specs[0].clone();
    other.seed = 4;
    let o = sss_sim::model::run(other, params, &|| {});
    assert_ne!(o.time, one.outcomes[0].time);
}
