//! The partitioners: random, k-cluster (BFS-grown connected pieces of equal size, best of
//! several runs) and METIS multilevel k-way on the weighted flow graph. Each is deterministic
//! for a seed.

use crate::assignment::Assignment;
use crate::error::PartitionError;
use crate::evaluation::Evaluation;
use crate::graph::{FlowGraph, Undirected};
use netloom_topo::PipeId;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;
use std::collections::VecDeque;
use std::str::FromStr;
use std::sync::Mutex;

/// How to split the pipes between cores.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// Pipes shuffled and dealt to the cores in turn: equal counts, no regard for flow.
    Random,
    /// k connected pieces of equal pipe count grown by breadth-first search from random seeds;
    /// the run with the smallest cut wins.
    KCluster,
    /// METIS multilevel k-way partitioning, minimizing the cut under a balance constraint.
    Metis,
}

impl Method {
    /// The methods' names as `--method` and the assignment file's `method` spell them (parsing
    /// also accepts `k-cluster`).
    pub const NAMES: [&'static str; 3] = ["random", "kcluster", "metis"];

    /// This method's entry in `NAMES`.
    pub fn name(self) -> &'static str {
        match self {
            Method::Random => "random",
            Method::KCluster => "kcluster",
            Method::Metis => "metis",
        }
    }
}

impl FromStr for Method {
    type Err = String;

    fn from_str(s: &str) -> Result<Method, String> {
        match s {
            "random" => Ok(Method::Random),
            "kcluster" | "k-cluster" => Ok(Method::KCluster),
            "metis" => Ok(Method::Metis),
            _ => Err(format!(
                "unknown method {s:?}; expected one of {}",
                Method::NAMES.join(", ")
            )),
        }
    }
}

/// Parameters of a partitioning run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Options {
    /// Which partitioner to run.
    pub method: Method,
    /// How many cores to split the pipes over; 0 is refused with `NoCores`.
    pub cores: u32,
    /// Seeds the random shuffle, k-cluster's seed pipes (one generator stream per run) and
    /// METIS's generator (taken modulo `i32::MAX`); the same seed gives the same assignment.
    pub seed: u64,
    /// METIS: the largest core load may be this many times the mean (METIS's default is 1.03).
    pub imbalance: f64,
    /// k-cluster: how many runs to pick the best from (the paper used 5).
    pub kcluster_runs: u32,
}

impl Options {
    /// Options with the defaults for the rest: imbalance 1.03 and 5 k-cluster runs, as in the
    /// paper.
    pub fn new(method: Method, cores: u32, seed: u64) -> Options {
        Options {
            method,
            cores,
            seed,
            imbalance: 1.03,
            kcluster_runs: 5,
        }
    }
}

/// Assigns every pipe of `graph` to one of `opts.cores` cores.
pub fn partition(graph: &FlowGraph, opts: &Options) -> Result<Assignment, PartitionError> {
    partition_shares(graph, opts, &[])
}

/// `partition`, core k taking `shares[k]` of the load (its capacity, in any unit: a machine's
/// CPUs), one positive share per core; empty for equal shares. Only METIS weighs shares:
/// random and k-cluster split equally.
pub fn partition_shares(
    graph: &FlowGraph,
    opts: &Options,
    shares: &[f64],
) -> Result<Assignment, PartitionError> {
    if opts.cores == 0 {
        return Err(PartitionError::NoCores);
    }
    let pipes = match opts.method {
        Method::Random => random(graph.pipes(), opts.cores, opts.seed),
        Method::KCluster => kcluster(graph, opts),
        Method::Metis => metis(graph, opts, shares)?,
    };
    Ok(Assignment {
        cores: opts.cores,
        pipes,
        topology: None,
        method: Some(opts.method.name().to_string()),
    })
}

fn rng(seed: u64, stream: u64) -> Xoshiro256PlusPlus {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    for _ in 0..stream {
        rng.jump();
    }
    rng
}

fn random(pipes: usize, cores: u32, seed: u64) -> Vec<u32> {
    let mut order: Vec<usize> = (0..pipes).collect();
    order.shuffle(&mut rng(seed, 0));
    let mut part = vec![0; pipes];
    for (i, p) in order.into_iter().enumerate() {
        part[p] = (i % cores as usize) as u32;
    }
    part
}

fn kcluster(graph: &FlowGraph, opts: &Options) -> Vec<u32> {
    let g = graph.undirected();
    let (mut best, mut best_cut) = (Vec::new(), f64::INFINITY);
    for run in 0..opts.kcluster_runs.max(1) {
        let part = grow_clusters(&g, opts.cores, &mut rng(opts.seed, u64::from(run)));
        let assignment = Assignment {
            cores: opts.cores,
            pipes: part,
            topology: None,
            method: None,
        };
        let cut = Evaluation::of(graph, &assignment).cut;
        if cut < best_cut {
            (best, best_cut) = (assignment.pipes, cut);
        }
    }
    best
}

/// Grows core after core by breadth-first search until it holds its share of the pipes; when a
/// piece runs out of unassigned neighbours it continues from a new random seed.
fn grow_clusters(g: &Undirected, cores: u32, rng: &mut Xoshiro256PlusPlus) -> Vec<u32> {
    const FREE: u32 = u32::MAX;
    let n = g.offsets.len() - 1;
    let mut seeds: Vec<PipeId> = (0..n as PipeId).collect();
    seeds.shuffle(rng);
    let mut seeds = seeds.into_iter();
    let mut part = vec![FREE; n];
    let mut queue = VecDeque::new();
    for core in 0..cores {
        let share = n / cores as usize + usize::from((core as usize) < n % cores as usize);
        let mut size = 0;
        queue.clear();
        while size < share {
            let v = match queue.pop_front() {
                Some(v) => v,
                None => seeds
                    .by_ref()
                    .find(|&s| part[s as usize] == FREE)
                    .expect("fewer pipes assigned than exist"),
            };
            if part[v as usize] != FREE {
                continue;
            }
            part[v as usize] = core;
            size += 1;
            let around = &g.neighbours[g.offsets[v as usize]..g.offsets[v as usize + 1]];
            queue.extend(around.iter().filter(|&&u| part[u as usize] == FREE));
        }
    }
    part
}

/// Total weight METIS sees for vertices and for edges: integer weights keep three to four
/// significant digits on graphs of a million vertices and stay far from `i32` overflow.
const METIS_TOTAL: f64 = 1e8;

/// METIS keeps its random generator in C globals: two calls at once would race on it and lose
/// determinism, so calls take turns.
static METIS_TURN: Mutex<()> = Mutex::new(());

fn metis(graph: &FlowGraph, opts: &Options, shares: &[f64]) -> Result<Vec<u32>, PartitionError> {
    let n = graph.pipes();
    if opts.cores == 1 || n == 0 {
        return Ok(vec![0; n]);
    }
    let g = graph.undirected();
    let idx = |v: usize| metis::Idx::try_from(v).map_err(|_| PartitionError::TooLarge);
    let xadj = g
        .offsets
        .iter()
        .map(|&o| idx(o))
        .collect::<Result<Vec<_>, _>>()?;
    let adjncy: Vec<metis::Idx> = g.neighbours.iter().map(|&q| q as metis::Idx).collect();
    // METIS wants positive integer weights: scale to METIS_TOTAL and give zero flows a weight
    // of 1, which keeps unused pipes attached to their neighbours at no real cost.
    let scaled = |w: &[f64]| -> Vec<metis::Idx> {
        let total: f64 = w.iter().sum();
        let scale = if total > 0.0 {
            METIS_TOTAL / total
        } else {
            0.0
        };
        w.iter()
            .map(|&x| ((x * scale).round() as metis::Idx).max(1))
            .collect()
    };
    let vwgt = scaled(&graph.load);
    let adjwgt = scaled(&g.weights);
    let ufactor = ((opts.imbalance - 1.0) * 1000.0).round().max(1.0) as metis::Idx;
    let mut part = vec![0 as metis::Idx; n];
    let total: f64 = shares.iter().sum();
    if !shares.is_empty() && (shares.len() != opts.cores as usize || total <= 0.0) {
        return Err(PartitionError::Metis(format!(
            "{} shares for {} cores: give one positive share per core",
            shares.len(),
            opts.cores
        )));
    }
    let shares: Vec<metis::Real> = shares.iter().map(|&s| (s / total) as metis::Real).collect();
    let _turn = METIS_TURN
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let graph = metis::Graph::new(1, opts.cores as metis::Idx, &xadj, &adjncy)
        .map_err(|e| PartitionError::Metis(e.to_string()))?;
    let graph = match shares.is_empty() {
        true => graph,
        false => graph.set_tpwgts(&shares),
    };
    graph
        .set_vwgt(&vwgt)
        .set_adjwgt(&adjwgt)
        .set_option(metis::option::Seed(
            (opts.seed % i32::MAX as u64) as metis::Idx,
        ))
        .set_option(metis::option::UFactor(ufactor))
        .part_kway(&mut part)
        .map_err(|e| PartitionError::Metis(format!("{e:?}")))?;
    Ok(part.into_iter().map(|c| c as u32).collect())
}
