//! Shortest-path routing: per-destination-host next-hop tables over the topology's pipes.
//!
//! `Routes::compute` runs one reverse Dijkstra per destination host over the usable pipes
//! (compressed sparse rows, a radix heap, buffers reused, destinations split over the cores) and keeps, for
//! every (destination host, node), the pipe to take: `nodes × hosts` entries, never a path per
//! pair. Routes minimize the sum of propagation delays (ties: fewer hops) or the hop count, as
//! `Topology::routing` says; remaining ties go to the lowest pipe id, so tables are
//! deterministic. Hosts send and receive but never forward. A link going down or up recomputes
//! the tables (`Routes::set_link_up`).

mod diameter;
mod graph;
mod heap;
mod search;
mod table;

pub use diameter::{Diameter, RouteLength};
pub use table::Routes;
