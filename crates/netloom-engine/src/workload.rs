//! The known workloads the engine is timed on (built in-process: generator → resolve → flows):
//! the benchmarks report them, and `netloom calibrate` times one to learn a packet-hop's cost.

use crate::sim::SimOptions;
use crate::traffic::{expand, parse_spec, TrafficError};
use crate::{Engine, EngineError};
use netloom_time::{Duration, Instant};
use netloom_topo::gen::{self, DumbbellParams, GenError, GenKind, InetParams, TreeMeshParams};
use netloom_topo::{TopoError, Topology};

/// The paper's workload (ModelNet §5): each host runs AIMD flows to 4 random hosts elsewhere.
pub const PAPER_TRAFFIC: &str = "pattern=random-k k=4 source=aimd cap=3Mbit";

/// The seed of every run: the same work on every repeat, only the timing varies.
pub const SEED: u64 = 1;

/// Why a workload could not be built (a bug in its definition, never the user's input).
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    /// The generator refused its parameters.
    #[error(transparent)]
    Gen(#[from] GenError),
    /// The generated file did not resolve.
    #[error(transparent)]
    Topo(#[from] TopoError),
    /// The traffic spec did not parse or expand.
    #[error(transparent)]
    Traffic(#[from] TrafficError),
    /// A flow could not be added.
    #[error(transparent)]
    Engine(#[from] EngineError),
}

/// A topology with the traffic to run on it.
pub struct Case {
    /// What reports call it.
    pub name: &'static str,
    /// The resolved topology.
    pub topo: Topology,
    /// Its traffic, as `sim --traffic` takes it.
    pub traffic: &'static str,
}

impl Case {
    /// A fresh engine for this case with its flows added (routing is computed here, not timed).
    pub fn engine(&self) -> Result<Engine, WorkloadError> {
        let spec = parse_spec(self.traffic)?;
        let flows = expand(&spec.pattern, spec.kind, spec.cap, &self.topo, SEED)?;
        let mut engine = Engine::new(self.topo.clone(), SEED);
        for flow in flows {
            engine.add_flow(Instant::ZERO, flow, SEED)?;
        }
        Ok(engine)
    }
}

/// tree-mesh h5 with the paper's workload: ModelNet's toy topology, the engine's reference.
pub fn tree_mesh() -> Result<Case, WorkloadError> {
    Ok(Case {
        name: "tree-mesh h5",
        topo: topology(&GenKind::TreeMesh(TreeMeshParams::default()))?,
        traffic: PAPER_TRAFFIC,
    })
}

/// tree-mesh h5 and inet with the paper's workload, and a dumbbell with 2 AIMD flows for contrast.
pub fn cases() -> Result<Vec<Case>, WorkloadError> {
    Ok(vec![
        tree_mesh()?,
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
pub fn topology(kind: &GenKind) -> Result<Topology, WorkloadError> {
    let file = gen::generate(kind)?;
    Ok(netloom_topo::resolve(&file, "generated")?)
}
