//! Run one configuration and print its breakdown (for calibration).
use sss_sim::*;
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let net: Network = args
        .get(1)
        .map(|s| s.parse().expect("net"))
        .unwrap_or(Network::W488);
    let pol: Policy = args
        .get(2)
        .map(|s| s.parse().expect("policy"))
        .unwrap_or(Policy::Kernel(Algo::Algo4));
    let rep: Replacement = args
        .get(3)
        .map(|s| s.parse().expect("repl"))
        .unwrap_or(Replacement::Classed);
    let set: SetName = args
        .get(4)
        .map(|s| s.parse().expect("set"))
        .unwrap_or(SetName::A);
    let spec = RunSpec {
        network: net,
        policy: pol,
        replacement: rep,
        set,
        seed: 1,
    };
    let o = model::run(
        spec,
        std::env::var("P")
            .map(|s| serde_json::from_str(&s).expect("params"))
            .unwrap_or_default(),
        &|| {},
    );
    let f = o.time.fractions();
    println!(
        "{} slices={} eff={:.3} page={:.3} sync={:.3} idle={:.3} wall={:.2}s clk/s={:.2e} {:?}",
        o.spec.label(),
        o.slices,
        f[0],
        f[1],
        f[2],
        f[3],
        o.wall_seconds,
        o.clocks_per_second(),
        o.counters
    );
}
