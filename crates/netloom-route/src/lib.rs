//! Shortest-path routing: per-destination-host next-hop tables over the topology's pipes.
