//! Which machine owns each pipe (`split`): the cluster file's placement, or METIS with the
//! machines' CPUs as their shares.

use super::file::{Cluster, ClusterError};
use netloom_partition::{partition_shares, Assignment, FlowGraph, Method, PartitionError};
use netloom_route::TablesTooLarge;
use netloom_topo::Topology;

/// Why the pipes could not be split between the machines.
#[derive(Debug, thiserror::Error)]
pub enum SplitError {
    /// The cluster file places a node that the topology does not have, or not every node.
    #[error(transparent)]
    Placement(#[from] ClusterError),
    /// The topology is too large to partition, or METIS failed.
    #[error(transparent)]
    Partition(#[from] PartitionError),
    /// The routes the flow graph needs are too large to compute.
    #[error(transparent)]
    Routes(#[from] TablesTooLarge),
}

/// Which machine owns each pipe: by the file's placement (a pipe is its sending node's
/// machine's), or METIS with each machine's CPUs as its share, over `weighed` (`sim`: the
/// traffic it runs) or, without one, the static flow graph (a live run does not know its
/// traffic).
pub fn split(
    cluster: &Cluster,
    topology: &Topology,
    cpus: &[u32],
    seed: u64,
    weighed: Option<&FlowGraph>,
) -> Result<Assignment, SplitError> {
    let machines = cluster.machines.len() as u32;
    let pipes = if cluster.placed() {
        let owner = cluster.node_machines(topology)?;
        let mut pipes = vec![0; topology.pipes.len()];
        for link in &topology.links {
            pipes[link.ab as usize] = owner[link.a as usize];
            if link.ba != link.ab {
                pipes[link.ba as usize] = owner[link.b as usize];
            }
        }
        pipes
    } else {
        let conservative;
        let graph = match weighed {
            Some(graph) => graph,
            None => {
                FlowGraph::check_size(topology, true)?;
                let routes = netloom_route::Routes::try_compute(topology)?;
                conservative = FlowGraph::conservative(topology, &routes);
                &conservative
            }
        };
        let opts = netloom_partition::Options::new(Method::Metis, machines, seed);
        let shares: Vec<f64> = cpus.iter().map(|&c| f64::from(c)).collect();
        partition_shares(graph, &opts, &shares)?.pipes
    };
    Ok(Assignment {
        cores: machines,
        pipes,
        topology: None,
        method: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Without placed nodes, METIS splits the pipes with the machines' CPUs as shares: over the
    /// graph given (`sim`: the traffic it runs), else over the static weights (`run`).
    #[test]
    fn an_unplaced_cluster_splits_by_the_graph_given_else_by_the_static_weights() {
        let cluster = Cluster::parse(
            "[[machine]]\nname = \"m1\"\naddress = \"10.0.0.1\"\n\n\
             [[machine]]\nname = \"m2\"\naddress = \"10.0.0.2\"\n",
            "c.toml",
        )
        .unwrap();
        let topo = netloom_topo::load_str(
            include_str!("../../../../examples/dumbbell.toml"),
            netloom_topo::Format::Toml,
            "dumbbell.toml",
        )
        .unwrap();
        let cpus = [3, 1];
        let metis = |graph: &FlowGraph| {
            let opts = netloom_partition::Options::new(Method::Metis, 2, 7);
            partition_shares(graph, &opts, &[3.0, 1.0]).unwrap().pipes
        };
        let uniform = FlowGraph::uniform(&topo);
        let routes = netloom_route::Routes::try_compute(&topo).unwrap();
        let by_static = metis(&FlowGraph::conservative(&topo, &routes));
        let given = split(&cluster, &topo, &cpus, 7, Some(&uniform)).unwrap();
        assert_eq!(given.pipes, metis(&uniform));
        assert_ne!(
            given.pipes, by_static,
            "the two weightings split the dumbbell otherwise"
        );
        assert_eq!(
            split(&cluster, &topo, &cpus, 7, None).unwrap().pipes,
            by_static
        );
    }
}
