//! SVG stacked-bar plots laid out like seed 003 Figs 4–6: the breakdown
//! of processor time, one bar per configuration, one panel per network.

use std::path::{Path, PathBuf};

use plotters::prelude::*;

use crate::config::{Algo, Network, Policy, Replacement, SetName};
use crate::error::SimError;
use crate::runner::Results;

/// Category colours: effective, page+comm, sync, idle.
const COLORS: [RGBColor; 4] = [
    RGBColor(54, 113, 176),
    RGBColor(230, 140, 50),
    RGBColor(200, 70, 70),
    RGBColor(190, 190, 190),
];
const NAMES: [&str; 4] = ["effective", "page+comm", "sync wait", "idle"];

/// One bar: a label and the four fractions.
pub type Bar = (String, [f64; 4]);

/// Draw panels of stacked bars side by side into an SVG file.
pub fn stacked(path: &Path, title: &str, panels: &[(String, Vec<Bar>)]) -> Result<(), SimError> {
    let err = |e: &dyn std::fmt::Display| SimError::Plot {
        path: path.display().to_string(),
        message: e.to_string(),
    };
    let bars_max = panels.iter().map(|p| p.1.len()).max().unwrap_or(1).max(1);
    let panel_w = (90 + 34 * bars_max) as u32;
    let width = (panel_w * panels.len().max(1) as u32).max(600);
    let root = SVGBackend::new(path, (width, 460)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let (top, body) = root.split_vertically(60);
    top.titled(title, ("sans-serif", 18)).map_err(|e| err(&e))?;
    // Legend along the top strip.
    for (i, name) in NAMES.iter().enumerate() {
        let x = 10 + 130 * i as i32;
        top.draw(&Rectangle::new([(x, 35), (x + 14, 49)], COLORS[i].filled()))
            .map_err(|e| err(&e))?;
        top.draw(&Text::new(*name, (x + 18, 36), ("sans-serif", 13)))
            .map_err(|e| err(&e))?;
    }
    let areas = body.split_evenly((1, panels.len().max(1)));
    for (area, (name, bars)) in areas.iter().zip(panels) {
        let n = bars.len().max(1);
        let mut chart = ChartBuilder::on(area)
            .caption(name, ("sans-serif", 15))
            .margin(8)
            .x_label_area_size(95)
            .y_label_area_size(45)
            .build_cartesian_2d(0.0..n as f64, 0.0..1.0)
            .map_err(|e| err(&e))?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .light_line_style(TRANSPARENT)
            .x_labels(0)
            .y_desc("fraction of processor time")
            .y_label_formatter(&|y| format!("{:.0}%", y * 100.0))
            .draw()
            .map_err(|e| err(&e))?;
        // Bar labels drawn by hand, reading downwards under each bar.
        let style = ("sans-serif", 11)
            .into_font()
            .transform(FontTransform::Rotate90);
        for (i, (label, _)) in bars.iter().enumerate() {
            let (px, py) = chart.backend_coord(&(i as f64 + 0.5, 0.0));
            root.draw(&Text::new(label.clone(), (px + 5, py + 6), style.clone()))
                .map_err(|e| err(&e))?;
        }
        for (i, (_, f)) in bars.iter().enumerate() {
            let mut base = 0.0;
            for (k, v) in f.iter().enumerate() {
                let x0 = i as f64 + 0.12;
                let x1 = i as f64 + 0.88;
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(x0, base), (x1, base + v)],
                        COLORS[k].filled(),
                    )))
                    .map_err(|e| err(&e))?;
                base += v;
            }
        }
    }
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

fn bar(
    r: &Results,
    n: Network,
    p: Policy,
    rp: Replacement,
    s: SetName,
    label: String,
) -> Option<Bar> {
    r.find(n, p, rp, s).map(|o| (label, o.time.fractions()))
}

/// Write fig4 (set A, all algorithms and replacements, per network), fig5
/// (replacement 0 vs 1 under algo4 on w488, all sets), fig6 (replacement
/// 1, all sets and algorithms, per network) and fig7 (free market vs
/// algo4). Figures whose runs are missing are skipped. Returns the paths.
pub fn write_all(r: &Results, dir: &Path) -> Result<Vec<PathBuf>, SimError> {
    std::fs::create_dir_all(dir).map_err(|source| SimError::Io {
        path: dir.display().to_string(),
        source,
    })?;
    let mut out = Vec::new();
    let nets = crate::report::networks(r);
    let sets = crate::report::sets(r);
    let k = Policy::Kernel;
    let mut emit =
        |name: &str, title: &str, panels: Vec<(String, Vec<Bar>)>| -> Result<(), SimError> {
            let panels: Vec<_> = panels.into_iter().filter(|p| !p.1.is_empty()).collect();
            if panels.is_empty() {
                return Ok(());
            }
            let path = dir.join(name);
            stacked(&path, title, &panels)?;
            out.push(path);
            Ok(())
        };
    // Fig 4: process set A.
    let panels = nets
        .iter()
        .map(|&n| {
            let bars = Replacement::ALL
                .iter()
                .flat_map(|&rp| Algo::ALL.iter().map(move |&a| (a, rp)))
                .filter_map(|(a, rp)| bar(r, n, k(a), rp, SetName::A, format!("{a} {rp}")))
                .collect();
            (n.to_string(), bars)
        })
        .collect();
    emit(
        "fig4_set_a.svg",
        "Process set A: breakdown of processor time",
        panels,
    )?;
    // Fig 5: replacement policies under algo4, w488.
    let bars = sets
        .iter()
        .flat_map(|&s| Replacement::ALL.iter().map(move |&rp| (s, rp)))
        .filter_map(|(s, rp)| bar(r, Network::W488, k(Algo::Algo4), rp, s, format!("{s} {rp}")))
        .collect();
    emit(
        "fig5_replacement.svg",
        "Page replacement 0 vs 1 (algo4, w488)",
        vec![("w488, algo4".to_string(), bars)],
    )?;
    // Fig 6: all sets and algorithms, replacement 1.
    let panels = nets
        .iter()
        .map(|&n| {
            let bars = sets
                .iter()
                .flat_map(|&s| Algo::ALL.iter().map(move |&a| (s, a)))
                .filter_map(|(s, a)| bar(r, n, k(a), Replacement::Classed, s, format!("{s} {a}")))
                .collect();
            (n.to_string(), bars)
        })
        .collect();
    emit(
        "fig6_sets.svg",
        "Process sets A, L, M, R (replacement 1)",
        panels,
    )?;
    // Fig 7: free market.
    let pols = [
        k(Algo::Algo4),
        Policy::FreeMarket { penalty: false },
        Policy::FreeMarket { penalty: true },
    ];
    let panels = nets
        .iter()
        .map(|&n| {
            let bars = sets
                .iter()
                .flat_map(|&s| pols.iter().map(move |&p| (s, p)))
                .filter_map(|(s, p)| bar(r, n, p, Replacement::Classed, s, format!("{s} {p}")))
                .collect();
            (n.to_string(), bars)
        })
        .collect();
    emit(
        "fig7_free_market.svg",
        "Free market vs algo4 (replacement 1)",
        panels,
    )?;
    Ok(out)
}
