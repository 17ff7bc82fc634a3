//! `sss top`: a live view of the cluster from the IDM pages, refreshing in
//! place (in the spirit of `htop` and MOSIX's `mosmon`). Without a daemon
//! for the node it shows the node itself from /proc. Keys: `q`, Esc or
//! Ctrl-C quit.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Row, Table};
use ratatui::Frame;
use sss_mbcf::idm::{Idm, NodeData, TaskState, IDM_TASKS};

/// Arguments of `sss top`.
#[derive(Debug, clap::Args)]
pub struct TopArgs {
    /// The node whose daemon to read (its address).
    #[arg(long, default_value = "127.0.0.1")]
    node: String,
    /// Time between refreshes, in milliseconds.
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u64).range(50..=60_000))]
    interval_ms: u64,
    /// Stop after this many refreshes (for scripts and tests).
    #[arg(long)]
    frames: Option<u64>,
    /// Print one view as plain text (120 columns) instead of taking the
    /// terminal.
    #[arg(long)]
    once: bool,
}

/// One refresh: the nodes and where they came from.
pub struct View {
    /// The node asked about.
    pub node: String,
    /// True when its daemon's pages are shown, false for /proc.
    pub daemon: bool,
    /// The nodes.
    pub nodes: Vec<NodeData>,
    /// Progress per second of each task (job, rank) since the last view.
    pub rates: HashMap<(u32, u32), f64>,
}

/// Reads the pages now (the daemon's, else the node from /proc).
fn read(node: &str, sampler: &mut Option<sss_idm::sample::Sampler>) -> (bool, Vec<NodeData>) {
    if sss_idm::running_daemon(node).is_some() {
        if let Ok(idm) = Idm::open(node) {
            return (true, idm.nodes());
        }
    }
    let s = sampler.get_or_insert_with(|| sss_idm::sample::Sampler::new(node));
    (false, vec![s.sample()])
}

fn tasks(d: &NodeData) -> &[sss_mbcf::idm::TaskEntry] {
    &d.tasks[..(d.ntasks as usize).min(IDM_TASKS)]
}

/// Draws `v` into `f`.
pub fn draw(f: &mut Frame<'_>, v: &View) {
    let [head, nodes, tasks_area] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(v.nodes.len() as u16 + 3),
        Constraint::Min(3),
    ])
    .areas(f.area());
    let source = if v.daemon {
        format!("the daemon of {}", v.node)
    } else {
        format!("{} from /proc (no daemon serves it)", v.node)
    };
    f.render_widget(
        Line::from(format!("SSS top — {source} — q quits"))
            .style(Style::new().add_modifier(Modifier::BOLD)),
        head,
    );
    let header = Row::new([
        "node",
        "state",
        "cpus",
        "runnable",
        "load",
        "mem free MiB",
        "tasks",
        "packets",
        "retrans",
        "rejected",
        "refused",
    ])
    .style(Style::new().add_modifier(Modifier::BOLD));
    let rows = v.nodes.iter().map(|d| {
        Row::new([
            d.name().to_string(),
            if d.is_up() { "up" } else { "down" }.to_string(),
            d.ncpus.to_string(),
            d.runnable.to_string(),
            format!("{:.2}", f64::from(d.load[0]) / 1000.0),
            format!("{} / {}", d.mem_free_kb / 1024, d.mem_total_kb / 1024),
            d.ntasks.to_string(),
            d.packets.to_string(),
            d.retransmissions.to_string(),
            d.rejected.to_string(),
            d.refused.to_string(),
        ])
    });
    let widths = [
        Constraint::Min(12),
        Constraint::Length(5),
        Constraint::Length(4),
        Constraint::Length(8),
        Constraint::Length(6),
        Constraint::Length(15),
        Constraint::Length(5),
        Constraint::Length(10),
        Constraint::Length(8),
        Constraint::Length(8),
        Constraint::Length(8),
    ];
    f.render_widget(
        Table::new(rows, widths)
            .header(header)
            .block(Block::new().borders(Borders::ALL).title("nodes")),
        nodes,
    );
    let header = Row::new(["node", "task", "pid", "state", "progress", "progress/s"])
        .style(Style::new().add_modifier(Modifier::BOLD));
    let rows = v.nodes.iter().flat_map(|d| {
        tasks(d).iter().map(move |t| {
            Row::new([
                d.name().to_string(),
                format!("{}.{}", t.job, t.rank),
                t.pid.to_string(),
                format!("{:?}", TaskState::from_u32(t.state)),
                t.progress.to_string(),
                v.rates
                    .get(&(t.job, t.rank))
                    .map_or("—".into(), |r| format!("{r:.0}")),
            ])
        })
    });
    let widths = [
        Constraint::Min(12),
        Constraint::Length(16),
        Constraint::Length(8),
        Constraint::Length(10),
        Constraint::Length(12),
        Constraint::Length(12),
    ];
    f.render_widget(
        Table::new(rows, widths)
            .header(header)
            .block(Block::new().borders(Borders::ALL).title("tasks")),
        tasks_area,
    );
}

/// `v` drawn `width` columns wide, as lines of text.
pub fn text(v: &View, width: u16) -> String {
    let rows: usize = v.nodes.iter().map(|d| tasks(d).len()).sum::<usize>() + v.nodes.len() + 8;
    let backend = ratatui::backend::TestBackend::new(width, rows as u16);
    let Ok(mut t) = ratatui::Terminal::new(backend) else {
        return String::new();
    };
    if t.draw(|f| draw(f, v)).is_err() {
        return String::new();
    }
    let buf = t.backend().buffer();
    let mut out = String::new();
    for y in 0..buf.area.height {
        let line: String = (0..buf.area.width)
            .map(|x| buf[(x, y)].symbol().to_string())
            .collect();
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// Runs the view until a quit key, or `--frames` refreshes.
pub fn run(a: TopArgs) -> Result<(), String> {
    if a.once {
        let (daemon, nodes) = read(&a.node, &mut None);
        let v = View {
            node: a.node.clone(),
            daemon,
            nodes,
            rates: HashMap::new(),
        };
        print!("{}", text(&v, 120));
        return Ok(());
    }
    let mut terminal = ratatui::try_init().map_err(|e| format!("terminal: {e}"))?;
    let result = run_in(&mut terminal, &a);
    ratatui::restore();
    result
}

fn run_in(terminal: &mut ratatui::DefaultTerminal, a: &TopArgs) -> Result<(), String> {
    let mut sampler = None;
    let mut last: HashMap<(u32, u32), (u64, Instant)> = HashMap::new();
    let interval = Duration::from_millis(a.interval_ms);
    let mut frames = 0u64;
    loop {
        let (daemon, nodes) = read(&a.node, &mut sampler);
        let now = Instant::now();
        let mut rates = HashMap::new();
        for d in &nodes {
            for t in tasks(d) {
                let key = (t.job, t.rank);
                if let Some((p, at)) = last.get(&key) {
                    let secs = now.duration_since(*at).as_secs_f64();
                    if secs > 0.0 {
                        rates.insert(key, t.progress.saturating_sub(*p) as f64 / secs);
                    }
                }
                last.insert(key, (t.progress, now));
            }
        }
        let view = View {
            node: a.node.clone(),
            daemon,
            nodes,
            rates,
        };
        terminal
            .draw(|f| draw(f, &view))
            .map_err(|e| format!("terminal: {e}"))?;
        frames += 1;
        if a.frames.is_some_and(|n| frames >= n) {
            return Ok(());
        }
        let deadline = Instant::now() + interval;
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            if !event::poll(left).map_err(|e| format!("terminal: {e}"))? {
                break;
            }
            if let Event::Key(k) = event::read().map_err(|e| format!("terminal: {e}"))? {
                let ctrl_c =
                    k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL);
                if k.kind == KeyEventKind::Press
                    && (ctrl_c || matches!(k.code, KeyCode::Char('q') | KeyCode::Esc))
                {
                    return Ok(());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;

    #[test]
    fn the_view_shows_nodes_and_tasks() {
        let mut d = NodeData {
            flags: sss_mbcf::idm::NODE_VALID,
            ncpus: 2,
            ntasks: 1,
            ..NodeData::default()
        };
        d.set_name("127.0.0.2");
        d.tasks[0].job = 7;
        d.tasks[0].rank = 3;
        d.tasks[0].pid = 4242;
        d.tasks[0].progress = 99;
        let v = View {
            node: "127.0.0.2".into(),
            daemon: true,
            nodes: vec![d],
            rates: HashMap::from([((7, 3), 12.0)]),
        };
        let mut t = Terminal::new(TestBackend::new(110, 14)).unwrap();
        t.draw(|f| draw(f, &v)).unwrap();
        let text: String = t
            .backend()
            .buffer()
            .content()
            .iter()
            .map(|c| c.symbol())
            .collect();
        for want in [
            "SSS top",
            "the daemon of 127.0.0.2",
            "127.0.0.2",
            "7.3",
            "4242",
            "99",
            "12",
        ] {
            assert!(text.contains(want), "{want} missing:\n{text}");
        }
    }
}
