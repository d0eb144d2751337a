//! Shortest-path routing: per-destination-host next-hop tables over the topology's pipes.
//!
//! `Routes::compute` runs one reverse Dijkstra per destination over the usable pipes
//! (compressed sparse rows, a radix heap, buffers reused, destinations split over the cores) and
//! keeps, for every (destination, router or multi-homed host), the pipe to take, never a path
//! per pair. A destination is a router with stub hosts (hosts with one link, to a router: they
//! are routed to through it) or a host that is not a stub, so a million hosts on a thousand
//! routers need a table of about a thousand × a thousand entries, not nodes × hosts. Routes
//! minimize the sum of propagation delays (ties: fewer hops) or the hop count, as
//! `Topology::routing` says; remaining ties go to the lowest pipe id, so tables are
//! deterministic. Hosts send and receive but never forward. Pipes going down or coming up
//! recompute the tables (`Routes::recompute`); the routes only reflect that state, whose owner
//! is the caller (the engine's pipes).

mod diameter;
mod graph;
mod heap;
mod search;
mod table;

pub use diameter::{Diameter, RouteLength};
pub use table::{Routes, TablesTooLarge, MAX_TABLE_BYTES};
