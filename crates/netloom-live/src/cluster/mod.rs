//! Live runs over several machines (docs/cluster.md): the cluster file (`file`), the control
//! channel between the coordinator and each machine's worker (`channel`), hand-offs between
//! machines as GENEVE datagrams (`handoff`), a move's hand-overs in binary (`handover`) on
//! connections between the workers (`links`), a machine's worker (`worker`, `netloom worker`)
//! and the coordinator that starts, answers for and stops them all (`coordinator`), with the
//! map that forwards `netloom exec` to a host's machine (`forward`).

pub(crate) mod channel;
mod coordinator;
mod file;
mod forward;
mod handoff;
mod handover;
mod links;
mod worker;

pub use coordinator::{split, ClockSample, ClusterRun, MachineClock, Setup, SplitError};
pub use file::{Cluster, ClusterError, Machine, GENEVE_PORT};
pub use forward::{Forwarding, UnknownHost};
pub use worker::serve as serve_worker;
