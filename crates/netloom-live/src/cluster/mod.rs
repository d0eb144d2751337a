//! Live runs over several machines (docs/cluster.md): the cluster file (`file`).

mod file;

pub use file::{Cluster, ClusterError, Machine, GENEVE_PORT};
