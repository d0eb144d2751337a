//! `memory`: heap bytes per pipe, per routing-table entry and per packet in flight, measured with
//! the counting allocator.

use crate::alloc;
use crate::report::table;
use anyhow::Result;
use netloom_engine::workload::{cases, topology};
use netloom_engine::Engine;
use netloom_route::Routes;
use netloom_time::Instant;
use netloom_topo::gen::{GenKind, InetParams};
use serde::Serialize;

/// Router counts of the inets whose engines are weighed (200 stubs, 400 hosts each).
const ROUTERS: [usize; 3] = [2000, 4000, 8000];

/// Virtual seconds at which the heap of each workload's run is weighed.
const CHECKPOINTS: [u64; 5] = [1, 5, 10, 20, 30];

#[derive(Debug, Serialize)]
pub struct MemoryReport {
    pub engines: Vec<EngineRow>,
    /// Engine heap without routing tables, per pipe: slope between the smallest and largest inet.
    pub bytes_per_pipe: f64,
    /// `size_of::<netloom_link::Pipe>()`, for comparison.
    pub size_of_pipe: usize,
    pub in_flight: Vec<InFlightRow>,
}

/// The heap of one engine just built (`Engine::new`, no flows).
#[derive(Debug, Serialize)]
pub struct EngineRow {
    pub routers: usize,
    pub nodes: usize,
    pub hosts: usize,
    pub links: usize,
    pub pipes: usize,
    /// The resolved `Topology` alone.
    pub topology_bytes: usize,
    /// Everything `Engine::new` allocated, routing tables included.
    pub engine_bytes: usize,
    /// `Routes::compute` alone.
    pub routes_bytes: usize,
    pub routes_bytes_per_entry: f64,
}

/// Heap growth while a workload runs, weighed at each of `CHECKPOINTS`.
#[derive(Debug, Serialize)]
pub struct InFlightRow {
    pub workload: String,
    pub samples: Vec<Sample>,
}

#[derive(Debug, Serialize)]
pub struct Sample {
    pub virtual_seconds: u64,
    /// The most packets in flight at once so far.
    pub max_in_flight: u64,
    /// Live heap now minus before the run (capacity kept by slab, queues, wheel slots).
    pub retained_bytes: usize,
}

pub fn run() -> Result<MemoryReport> {
    let mut engines = Vec::new();
    for routers in ROUTERS {
        engines.push(weigh_engine(routers)?);
    }
    let (a, b) = (&engines[0], &engines[engines.len() - 1]);
    let non_route = |r: &EngineRow| (r.engine_bytes - r.routes_bytes) as f64;
    let bytes_per_pipe = (non_route(b) - non_route(a)) / (b.pipes - a.pipes) as f64;
    let mut in_flight = Vec::new();
    for case in cases()? {
        let mut engine = case.engine()?;
        let before = alloc::live();
        let samples = CHECKPOINTS
            .iter()
            .map(|&seconds| {
                drive(&mut engine, seconds);
                Sample {
                    virtual_seconds: seconds,
                    max_in_flight: engine.counters().max_in_flight,
                    retained_bytes: alloc::live().saturating_sub(before),
                }
            })
            .collect();
        in_flight.push(InFlightRow {
            workload: case.name.to_string(),
            samples,
        });
    }
    Ok(MemoryReport {
        engines,
        bytes_per_pipe,
        size_of_pipe: size_of::<netloom_link::Pipe>(),
        in_flight,
    })
}

fn weigh_engine(routers: usize) -> Result<EngineRow> {
    let kind = GenKind::Inet(InetParams {
        routers,
        ..InetParams::default()
    });
    let before = alloc::live();
    let topo = topology(&kind)?;
    let topology_bytes = alloc::live() - before;
    let before = alloc::live();
    let routes = Routes::compute(&topo);
    let routes_bytes = alloc::live() - before;
    drop(routes);
    let (nodes, hosts, links, pipes) = (
        topo.nodes.len(),
        topo.hosts.len(),
        topo.links.len(),
        topo.pipes.len(),
    );
    let before = alloc::live();
    let engine = Engine::new(topo, 1);
    let engine_bytes = alloc::live() - before;
    drop(engine);
    Ok(EngineRow {
        routers,
        nodes,
        hosts,
        links,
        pipes,
        topology_bytes,
        engine_bytes,
        routes_bytes,
        routes_bytes_per_entry: routes_bytes as f64 / (nodes * hosts) as f64,
    })
}

/// The virtual-time driver loop of `sim::run` up to `seconds`, without building a report (which
/// allocates).
fn drive(engine: &mut Engine, seconds: u64) {
    let end = Instant(seconds * 1_000_000_000);
    while let Some(t) = engine.poll_at().filter(|&t| t < end) {
        engine.advance(t);
    }
}

pub fn markdown(r: &MemoryReport) -> String {
    let engines: Vec<Vec<String>> = r
        .engines
        .iter()
        .map(|e| {
            vec![
                format!("inet {} routers", e.routers),
                format!("{} / {} / {}", e.nodes, e.hosts, e.pipes),
                kb(e.topology_bytes),
                format!("{:.0}", e.topology_bytes as f64 / e.links as f64),
                kb(e.engine_bytes),
                kb(e.routes_bytes),
                format!("{:.2}", e.routes_bytes_per_entry),
                kb(e.engine_bytes - e.routes_bytes),
            ]
        })
        .collect();
    let flight: Vec<Vec<String>> = r
        .in_flight
        .iter()
        .map(|f| {
            let mut row = vec![f.workload.clone()];
            row.extend(f.samples.iter().map(|x| {
                format!(
                    "{} KiB, {} pkts, {:.0} B/pkt",
                    kb(x.retained_bytes),
                    x.max_in_flight,
                    x.retained_bytes as f64 / x.max_in_flight as f64
                )
            }));
            row
        })
        .collect();
    let mut flight_headers = vec!["workload".to_string()];
    flight_headers.extend(CHECKPOINTS.iter().map(|s| format!("after {s} s")));
    format!(
        "## memory: heap per pipe, per routing entry, per packet in flight\n\n\
         Heap bytes requested from the allocator (a counting `#[global_allocator]`; allocator \
         overhead not included). Engines are built with `Engine::new` on inets with 200 stubs and \
         400 hosts; routing tables are weighed separately with `Routes::compute`.\n\n{}\n\
         **Engine state per pipe** (engine heap without routing tables, slope from {} to {} \
         pipes): **{:.1} bytes**; `size_of::<Pipe>()` = {} bytes.\n\n\
         Packets in flight: live heap growth since the start of each workload's run (engine and \
         flows already built), weighed at several instants of virtual time, against the most \
         packets in flight so far (KiB retained, max in flight, bytes per packet). What grows is \
         capacity kept by the packet slab, the timing wheel's slots and the pipes' queues \
         (capacities grow by doubling).\n\n{}",
        table(
            &[
                "topology",
                "nodes / hosts / pipes",
                "topology KiB",
                "topology B/link",
                "engine KiB",
                "routes KiB",
                "routes B per node×host",
                "engine without routes KiB",
            ],
            &engines,
        ),
        r.engines[0].pipes,
        r.engines[r.engines.len() - 1].pipes,
        r.bytes_per_pipe,
        r.size_of_pipe,
        table(
            &flight_headers
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>(),
            &flight
        )
    )
}

fn kb(bytes: usize) -> String {
    format!("{:.1}", bytes as f64 / 1024.0)
}
