//! Routing daemons in router namespaces: FRR (OSPFv2, OSPFv3, BGP) or BIRD (OSPF) configured
//! from the topology, or from a user's own file, started inside a kernel router's network
//! namespace with their sockets, pid files and logs in the router's own directory, and stopped
//! with the run.
//!
//! The crate knows nothing of how the namespaces were made: a caller describes each router
//! (`RouterSpec`: its namespace, addresses, interfaces and what is at their other ends) and
//! gets configuration text (`frr_config`, `bird_config`) and running daemons
//! (`RouterDaemons`).

mod bird;
mod check;
mod control;
mod daemons;
mod error;
mod frr;
mod spec;

pub use bird::bird_config;
pub use check::{check_installation, check_user_config};
pub use control::{router_dir, RoutingControl};
pub use daemons::{socket_mount, RouterDaemons, BIRD_RUN_DIR, FRR_RUN_DIR};
pub use error::RoutingError;
pub use frr::frr_config;
pub use spec::{ospf_cost, Interface, Neighbour, RouterSpec, MAX_OSPF_COST};
