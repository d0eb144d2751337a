//! Dynamic repartitioning (ModelNet §5.4): every epoch, a new partition from the traffic observed
//! in the last one, each new part matched to the core that already holds most of its pipes, and
//! the efficiency of the static and the dynamic partition epoch by epoch (Figure 11).

use crate::assignment::Assignment;
use crate::error::PartitionError;
use crate::evaluation::Evaluation;
use crate::graph::FlowGraph;
use crate::method::{partition, Options};
use crate::observation::Observation;
use netloom_topo::Topology;
use serde::Serialize;

/// One epoch of a repartitioned run: how the static and the dynamic partition did on its
/// traffic, and what the dynamic one changed for the next epoch.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Epoch {
    /// Efficiency of the initial (static) partition on this epoch's traffic; `None` if no
    /// packet entered.
    pub static_efficiency: Option<f64>,
    /// Efficiency of the partition the dynamic scheme ran this epoch with (made from the last
    /// epoch's traffic; the static one in the first epoch).
    pub dynamic_efficiency: Option<f64>,
    /// The static partition's busiest core over its mean core, in packets offered to their
    /// pipes this epoch.
    pub static_imbalance: f64,
    /// The same for the dynamic partition.
    pub dynamic_imbalance: f64,
    /// Pipes whose core the dynamic scheme changes for the next epoch.
    pub moved_pipes: usize,
}

/// The dynamic scheme's state: the partition in force, and how to make the next.
pub struct Repartitioning {
    initial: Assignment,
    current: Assignment,
    options: Options,
}

impl Repartitioning {
    /// Starts from `initial` (the static partition, checked against the topology), making each
    /// later one with `options` (method, seed, imbalance) over as many cores.
    pub fn new(initial: Assignment, options: Options) -> Repartitioning {
        let options = Options {
            cores: initial.cores,
            ..options
        };
        Repartitioning {
            current: initial.clone(),
            initial,
            options,
        }
    }

    /// The partition the dynamic scheme runs with now.
    pub fn current(&self) -> &Assignment {
        &self.current
    }

    /// Replaces the partition in force by what actually runs (pipe → core): the one `epoch`
    /// made, adjusted by the caller (a host's pipes kept together).
    pub fn set_current(&mut self, pipes: Vec<u32>) {
        self.current.pipes = pipes;
    }

    /// Closes an epoch whose traffic was `observed`: measures both partitions on it, then
    /// repartitions on it for the next epoch (an epoch where nothing entered keeps the
    /// partition: there is nothing to weigh it by).
    pub fn epoch(
        &mut self,
        topo: &Topology,
        observed: &Observation,
    ) -> Result<Epoch, PartitionError> {
        let graph = FlowGraph::observed(topo, observed)?;
        let (fixed, dynamic) = (
            Evaluation::of(&graph, &self.initial),
            Evaluation::of(&graph, &self.current),
        );
        let (static_efficiency, dynamic_efficiency) = (fixed.efficiency, dynamic.efficiency);
        let mut moved_pipes = 0;
        if dynamic_efficiency.is_some() {
            let next = partition(&graph, &self.options)?;
            let pipes = match_overlap(&self.current.pipes, &next.pipes, self.options.cores);
            moved_pipes = pipes
                .iter()
                .zip(&self.current.pipes)
                .filter(|(a, b)| a != b)
                .count();
            self.current = Assignment {
                pipes,
                method: next.method.map(|m| format!("{m} (observed)")),
                ..self.current.clone()
            };
        }
        Ok(Epoch {
            static_efficiency,
            dynamic_efficiency,
            static_imbalance: fixed.imbalance,
            dynamic_imbalance: dynamic.imbalance,
            moved_pipes,
        })
    }
}

/// Renumbers the parts of `next` (pipe → part) so that each part goes to the core that owns
/// the most of its pipes in `previous` (pipe → core), the fewest pipes then moving: pairs of
/// (part, core) are taken by overlap, largest first (ties to the lower part, then core), each
/// part and core used once; parts left over take the cores left over in order.
pub fn match_overlap(previous: &[u32], next: &[u32], cores: u32) -> Vec<u32> {
    let k = cores as usize;
    let mut overlap = vec![0usize; k * k];
    for (&part, &core) in next.iter().zip(previous) {
        overlap[part as usize * k + core as usize] += 1;
    }
    let mut pairs: Vec<(usize, usize)> = (0..k).flat_map(|p| (0..k).map(move |c| (p, c))).collect();
    pairs.sort_by_key(|&(p, c)| (std::cmp::Reverse(overlap[p * k + c]), p, c));
    let mut core_of = vec![None; k];
    let mut taken = vec![false; k];
    for (p, c) in pairs {
        if core_of[p].is_none() && !taken[c] && overlap[p * k + c] > 0 {
            core_of[p] = Some(c as u32);
            taken[c] = true;
        }
    }
    let mut free = (0..k as u32).filter(|&c| !taken[c as usize]);
    let core_of: Vec<u32> = core_of
        .into_iter()
        .map(|c| c.unwrap_or_else(|| free.next().expect("as many cores as parts")))
        .collect();
    next.iter().map(|&part| core_of[part as usize]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_go_to_the_cores_that_hold_most_of_their_pipes() {
        // The new partition is the old one with cores 0 and 2 swapped, and pipe 5 moved.
        let previous = [0, 0, 1, 1, 2, 2, 2];
        let next = [2, 2, 1, 1, 0, 2, 0];
        assert_eq!(match_overlap(&previous, &next, 3), [0, 0, 1, 1, 2, 0, 2]);
        // Parts left without a core (0 and 2: core 0 went to part 1) take the free cores in
        // order.
        assert_eq!(match_overlap(&[0, 0, 0, 0], &[1, 1, 2, 0], 3), [0, 0, 2, 1]);
    }

    #[test]
    fn repartitioning_follows_the_observed_traffic() {
        use netloom_topo::gen::{generate, GenKind, TreeMeshParams};
        let topo = netloom_topo::resolve(
            &generate(&GenKind::TreeMesh(TreeMeshParams {
                height: 2,
                hosts_per_leaf: 2,
                ..TreeMeshParams::default()
            }))
            .unwrap(),
            "h2",
        )
        .unwrap();
        // Pipes dealt to the cores in turn, so nearly every hop crosses; then two paths of
        // equal traffic that share no pipe (tree 0 to tree 2, tree 1 to tree 3), which a
        // partition can keep each on one core.
        let options = Options::new(crate::Method::Metis, 2, 1);
        let initial = Assignment {
            cores: 2,
            pipes: (0..topo.pipes.len() as u32).map(|p| p % 2).collect(),
            topology: None,
            method: None,
        };
        let routes = netloom_route::Routes::compute(&topo);
        let per_tree = topo.hosts.len() / 4;
        let mut packets = vec![0; topo.pipes.len()];
        let mut transitions = Vec::new();
        for (a, b) in [(0, 2), (1, 3)] {
            let (a, b) = (topo.hosts[a * per_tree], topo.hosts[b * per_tree]);
            let path = routes.path(&topo, a, b).unwrap();
            for &p in &path {
                packets[p as usize] = 1000;
            }
            transitions.extend(path.windows(2).map(|w| (w[0], w[1], 1000)));
        }
        transitions.sort_unstable();
        let observed = Observation {
            topology: topo.name.clone(),
            packets,
            transitions,
        };
        let mut dynamic = Repartitioning::new(initial.clone(), options);
        let first = dynamic.epoch(&topo, &observed).unwrap();
        assert_eq!(first.static_efficiency, first.dynamic_efficiency);
        assert!(first.moved_pipes > 0);
        let second = dynamic.epoch(&topo, &observed).unwrap();
        let (s, d) = (
            second.static_efficiency.unwrap(),
            second.dynamic_efficiency.unwrap(),
        );
        assert!(d > s, "dynamic {d} static {s}");
        assert_eq!(d, 1.0, "each path is kept on one core");
        assert_eq!(
            second.moved_pipes, 0,
            "the same traffic moves nothing again"
        );
    }
}
