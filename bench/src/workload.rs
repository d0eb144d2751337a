//! The topologies and traffic the benchmarks run, built in-process (generator → resolve).

use anyhow::Result;
use netloom_engine::sim::SimOptions;
use netloom_engine::traffic::{expand, parse_spec};
use netloom_engine::Engine;
use netloom_time::Duration;
use netloom_topo::gen::{self, DumbbellParams, GenKind, InetParams, TreeMeshParams};
use netloom_topo::Topology;

/// The paper's workload (ModelNet §5): each host runs AIMD flows to 4 random hosts elsewhere.
pub const PAPER_TRAFFIC: &str = "pattern=random-k k=4 source=aimd cap=3Mbit";

/// The seed of every run: the same work on every repeat, only the timing varies.
pub const SEED: u64 = 1;

/// A topology with the traffic to run on it.
pub struct Case {
    pub name: &'static str,
    pub topo: Topology,
    pub traffic: &'static str,
}

impl Case {
    /// A fresh engine for this case with its flows added (routing is computed here, not timed).
    pub fn engine(&self) -> Result<Engine> {
        let spec = parse_spec(self.traffic)?;
        let flows = expand(&spec.pattern, spec.kind, spec.cap, &self.topo, SEED)?;
        let mut engine = Engine::new(self.topo.clone(), SEED);
        for flow in flows {
            engine.add_flow(flow, SEED)?;
        }
        Ok(engine)
    }
}

/// tree-mesh h5 and inet with the paper's workload, and a dumbbell with 2 AIMD flows for contrast.
pub fn cases() -> Result<Vec<Case>> {
    Ok(vec![
        Case {
            name: "tree-mesh h5",
            topo: topology(&GenKind::TreeMesh(TreeMeshParams::default()))?,
            traffic: PAPER_TRAFFIC,
        },
        Case {
            name: "inet",
            topo: topology(&GenKind::Inet(InetParams::default()))?,
            traffic: PAPER_TRAFFIC,
        },
        Case {
            name: "dumbbell",
            topo: topology(&GenKind::Dumbbell(DumbbellParams::default()))?,
            traffic: "pattern=pairs pairs=h1:h5,h2:h6 source=aimd",
        },
    ])
}

/// A timed virtual-time run of `seconds` without progress output.
pub fn timed(seconds: u64) -> SimOptions<'static> {
    SimOptions {
        duration: Duration::from_secs(seconds),
        seed: SEED,
        wall_clock: true,
        progress: None,
        progress_every: std::time::Duration::MAX,
        series: None,
        tapped: None,
    }
}

/// Generates and resolves a topology of `kind`.
pub fn topology(kind: &GenKind) -> Result<Topology> {
    let file = gen::generate(kind)?;
    Ok(netloom_topo::resolve(&file, "generated")?)
}
