//! Reproduces Figures 8 and 10 of the ModelNet partitioning paper in virtual time: h2, h5 and
//! inet; 2 to 8 cores; random, k-cluster and METIS on the conservative static weights; every
//! host sending to 4 random hosts in other trees (AIMD, 3 Mbit/s cap). One `sim` run per
//! topology records the packet counts; each partition is then measured on those counts, which
//! is exactly what `sim --assignment` reports (the run's timing does not depend on the
//! partition). METIS is also run on those counts themselves, as dynamic repartitioning would.
//! Prints a Markdown table and writes one SVG per topology and figure.
//!
//! `cargo run --release -p netloom-partition --example paper -- OUT_DIR [DURATION]`

use netloom_engine::sim::{self, SimOptions};
use netloom_engine::{traffic, Engine};
use netloom_partition::{
    partition, CapacityModel, Evaluation, FlowGraph, Method, Observation, Options,
};
use netloom_route::Routes;
use netloom_topo::gen::{generate, GenKind, InetParams, TreeMeshParams};
use netloom_topo::{resolve, Topology};
use std::fmt::Write as _;
use std::path::Path;

const TRAFFIC: &str = "pattern=random-k k=4 source=aimd cap=3Mbit";
const METHODS: [Method; 3] = [Method::Random, Method::KCluster, Method::Metis];
const CORES: std::ops::RangeInclusive<u32> = 2..=8;
const SEED: u64 = 1;

fn topologies() -> Vec<(&'static str, Topology)> {
    // About 400 hosts on each, as in the paper: 8 leaves × 50 on h2, 64 × 6 on h5.
    let tree = |height, hosts_per_leaf| {
        GenKind::TreeMesh(TreeMeshParams {
            height,
            hosts_per_leaf,
            ..TreeMeshParams::default()
        })
    };
    [
        ("h2", tree(2, 50)),
        ("h5", tree(5, 6)),
        ("inet", GenKind::Inet(InetParams::default())),
    ]
    .into_iter()
    .map(|(name, kind)| (name, resolve(&generate(&kind).unwrap(), name).unwrap()))
    .collect()
}

/// Runs the workload and returns what it saw.
fn observe(topo: &Topology, duration: netloom_time::Duration) -> Observation {
    let spec = traffic::parse_spec(TRAFFIC).unwrap();
    let flows = traffic::expand(&spec.pattern, spec.kind, spec.cap, topo, SEED).unwrap();
    let mut engine = Engine::new(topo.clone(), SEED);
    engine.enable_transition_counts();
    for flow in flows {
        engine
            .add_flow(netloom_time::Instant::ZERO, flow, SEED)
            .unwrap();
    }
    sim::run(&mut engine, SimOptions::new(duration, SEED));
    let (packets, transitions) = engine.hop_counts();
    Observation {
        topology: topo.name.clone(),
        packets,
        transitions,
    }
}

/// One measured partition.
struct Point {
    efficiency: f64,
    /// CPU time of the busiest core over that of one core doing everything (Figure 8's
    /// "maximum CPU utilization", relative to a single core), by the §5.1 costs.
    busiest: f64,
    imbalance: f64,
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let out = Path::new(args.get(1).map_or("docs/partition", String::as_str));
    let duration = netloom_topo::units::parse_duration(args.get(2).map_or("10s", String::as_str))
        .expect("DURATION like 10s");
    std::fs::create_dir_all(out).unwrap();
    let costs = CapacityModel::default();
    let mut table = String::new();
    writeln!(
        table,
        "| topology | pipes | method | {} |",
        CORES
            .map(|k| format!("{k} cores"))
            .collect::<Vec<_>>()
            .join(" | ")
    )
    .unwrap();
    writeln!(table, "|---|---|---|{}", "---|".repeat(CORES.count())).unwrap();
    for (name, topo) in topologies() {
        let started = std::time::Instant::now();
        let obs = observe(&topo, duration);
        let observed = FlowGraph::observed(&topo, &obs).unwrap();
        let weights = FlowGraph::conservative(&topo, &Routes::compute(&topo));
        let single = cpu(&costs, &Evaluation::of(&observed, &one_core(&topo)), 0);
        eprintln!(
            "{name}: {} pipes, {} packet-hops, sim {:.1}s",
            topo.pipes.len(),
            obs.packets.iter().sum::<u64>(),
            started.elapsed().as_secs_f64()
        );
        let mut series = Vec::new();
        // The paper's three on the static weights, and METIS again on the run's own counts
        // (what the paper's dynamic repartitioning, §5.4, converges to).
        let runs = METHODS
            .map(|m| (m.name(), m, &weights))
            .into_iter()
            .chain([("metis-observed", Method::Metis, &observed)]);
        for (label, method, weights) in runs {
            let points: Vec<Point> = CORES
                .map(|cores| {
                    let a = partition(weights, &Options::new(method, cores, SEED)).unwrap();
                    let e = Evaluation::of(&observed, &a);
                    let busiest = (0..cores as usize)
                        .map(|c| cpu(&costs, &e, c))
                        .fold(0.0, f64::max);
                    Point {
                        efficiency: e.efficiency.unwrap(),
                        busiest: busiest / single,
                        imbalance: e.imbalance,
                    }
                })
                .collect();
            let cells: Vec<String> = points
                .iter()
                .map(|p| format!("{:.3} ({:.2}, {:.2})", p.efficiency, p.busiest, p.imbalance))
                .collect();
            writeln!(
                table,
                "| {name} | {} | {label} | {} |",
                topo.pipes.len(),
                cells.join(" | ")
            )
            .unwrap();
            series.push((label, points));
        }
        let svg = |title: &str, y: &str, value: fn(&Point) -> f64| {
            let lines: Vec<(&str, Vec<f64>)> = series
                .iter()
                .map(|(m, points)| (*m, points.iter().map(value).collect()))
                .collect();
            chart(title, y, &lines)
        };
        std::fs::write(
            out.join(format!("fig10-{name}.svg")),
            svg(&format!("{name}: efficiency"), "efficiency", |p| {
                p.efficiency
            }),
        )
        .unwrap();
        std::fs::write(
            out.join(format!("fig8-{name}.svg")),
            svg(
                &format!("{name}: busiest core"),
                "busiest core / one core",
                |p| p.busiest,
            ),
        )
        .unwrap();
    }
    print!("{table}");
}

fn one_core(topo: &Topology) -> netloom_partition::Assignment {
    netloom_partition::Assignment {
        cores: 1,
        pipes: vec![0; topo.pipes.len()],
        topology: None,
        method: None,
    }
}

/// CPU seconds core `c` spends by the §5.1 costs: a hop per packet offered to its pipes, an
/// entry per packet it receives from a host or another core.
fn cpu(costs: &CapacityModel, e: &Evaluation, c: usize) -> f64 {
    let core = &e.cores[c];
    core.hops * costs.hop_cost_s + core.packets * costs.entry_cost_s
}

/// A line chart of `lines` over 2..=8 cores, as a small standalone SVG.
fn chart(title: &str, y_label: &str, lines: &[(&str, Vec<f64>)]) -> String {
    let (w, h, left, right, top, bottom) = (480.0, 300.0, 60.0, 110.0, 30.0, 40.0);
    let max = lines
        .iter()
        .flat_map(|(_, v)| v.iter().copied())
        .fold(0.0, f64::max);
    // Gridlines at a round step, at most six of them.
    let step = [0.05, 0.1, 0.2, 0.25, 0.5, 1.0, 2.0, 5.0]
        .into_iter()
        .find(|s| max / s <= 6.0)
        .unwrap_or(10.0);
    let ticks = (max / step).ceil().max(1.0) as u32;
    let y_max = step * f64::from(ticks);
    let x = |k: f64| left + (k - 2.0) / 6.0 * (w - left - right);
    let y = |v: f64| h - bottom - v / y_max * (h - top - bottom);
    let colours = ["#d62728", "#1f77b4", "#2ca02c", "#9467bd"];
    let mut s = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">
<rect width="{w}" height="{h}" fill="white"/>
<text x="{}" y="18" text-anchor="middle" font-size="14">{title}</text>
<line x1="{left}" y1="{}" x2="{}" y2="{}" stroke="black"/>
<line x1="{left}" y1="{top}" x2="{left}" y2="{}" stroke="black"/>
<text x="14" y="{}" transform="rotate(-90 14 {})" text-anchor="middle">{y_label}</text>
<text x="{}" y="{}" text-anchor="middle">cores</text>
"#,
        w / 2.0,
        h - bottom,
        w - right,
        h - bottom,
        h - bottom,
        (top + h - bottom) / 2.0,
        (top + h - bottom) / 2.0,
        (left + w - right) / 2.0,
        h - 6.0,
    );
    for k in 2..=8 {
        let xk = x(k as f64);
        writeln!(
            s,
            r#"<text x="{xk}" y="{}" text-anchor="middle">{k}</text>"#,
            h - bottom + 15.0
        )
        .unwrap();
    }
    for i in 0..=ticks {
        let v = step * f64::from(i);
        writeln!(s, r##"<line x1="{left}" y1="{0}" x2="{1}" y2="{0}" stroke="#ddd"/><text x="{2}" y="{3}" text-anchor="end">{v:.2}</text>"##, y(v), w - right, left - 4.0, y(v) + 4.0).unwrap();
    }
    for (i, (name, values)) in lines.iter().enumerate() {
        let points: Vec<String> = values
            .iter()
            .enumerate()
            .map(|(j, &v)| format!("{:.1},{:.1}", x(j as f64 + 2.0), y(v)))
            .collect();
        let c = colours[i % colours.len()];
        writeln!(
            s,
            r#"<polyline fill="none" stroke="{c}" stroke-width="2" points="{}"/>"#,
            points.join(" ")
        )
        .unwrap();
        let ly = top + 16.0 * i as f64 + 10.0;
        writeln!(s, r#"<line x1="{0}" y1="{ly}" x2="{1}" y2="{ly}" stroke="{c}" stroke-width="2"/><text x="{2}" y="{3}">{name}</text>"#, w - right + 10.0, w - right + 30.0, w - right + 35.0, ly + 4.0).unwrap();
    }
    s.push_str("</svg>\n");
    s
}
