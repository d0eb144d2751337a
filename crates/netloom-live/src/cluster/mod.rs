//! Live runs over several machines (docs/cluster.md): the cluster file (`file`), the control
//! channel between the coordinator and each machine's worker (`channel`), hand-offs between
//! machines as GENEVE datagrams (`handoff`), a move's transfers in binary (`transfer`) on
//! connections between the workers (`links`), a machine's worker (`worker`, `netloom worker`)
//! and the coordinator that starts, answers for and stops them all (`coordinator`): it holds
//! each machine's worker as a `remote`, splits the pipes between machines (`split`), watches
//! their `clocks`, and adds up their figures (`merged`); with the map that forwards `netloom
//! exec` to a host's machine (`forward`), the cluster of a Slurm job (`slurm`), and a cluster
//! file made from Kubernetes pods (`pods`, picked by a label `selector`).

pub(crate) mod channel;
mod clocks;
mod coordinator;
mod file;
mod forward;
mod handoff;
mod links;
mod machine;
mod merged;
mod pods;
mod remote;
mod run_view;
mod selector;
pub mod slurm;
mod split;
mod transfer;

pub use clocks::{ClockSample, MachineClock};
pub use coordinator::{ClusterRun, Setup};
pub use file::{Cluster, ClusterError, Machine, GENEVE_PORT};
pub use forward::{Forwarding, UnknownHost};
pub use machine::serve as serve_worker;
pub use pods::{
    from_pods, FromPods, PodChoice, PodMachine, PodsError, DEFAULT_CONTAINER, DEFAULT_SELECTOR,
};
pub use split::{split, SplitError};
