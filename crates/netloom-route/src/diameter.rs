//! The routed diameter for `netloom check`: the longest route between any two hosts, by hop
//! count and by propagation delay, following the next-hop tables.

use crate::Routes;
use netloom_time::Duration;
use netloom_topo::{NodeId, Topology};

/// One route between two hosts and its length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RouteLength {
    /// The host the route starts at.
    pub src: NodeId,
    /// The host the route ends at.
    pub dst: NodeId,
    /// Pipes crossed from `src` to `dst`, following the next-hop tables.
    pub hops: u32,
    /// Sum of the propagation delays (`config.delay`) of its pipes.
    pub delay: Duration,
}

/// The longest routes over all ordered pairs of distinct hosts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Diameter {
    /// The route with the most hops (the first such pair in host order).
    pub by_hops: RouteLength,
    /// The route with the largest delay (the first such pair in host order).
    pub by_delay: RouteLength,
    /// Ordered host pairs with no route.
    pub unreachable_pairs: u64,
}

impl Routes {
    /// The longest routes between hosts, or `None` if no two distinct hosts are connected.
    /// Walks every host pair's route: O(hosts² × route length).
    pub fn diameter(&self, topo: &Topology) -> Option<Diameter> {
        let mut longest: Option<(RouteLength, RouteLength)> = None;
        let mut unreachable_pairs = 0;
        for &src in &topo.hosts {
            for &dst in &topo.hosts {
                if src == dst {
                    continue;
                }
                let Some(path) = self.path(topo, src, dst) else {
                    unreachable_pairs += 1;
                    continue;
                };
                let route = RouteLength {
                    src,
                    dst,
                    hops: path.len() as u32,
                    delay: path
                        .iter()
                        .map(|&p| topo.pipes[p as usize].config.delay)
                        .fold(Duration::ZERO, |a, b| a + b),
                };
                let (by_hops, by_delay) = longest.get_or_insert((route, route));
                if route.hops > by_hops.hops {
                    *by_hops = route;
                }
                if route.delay > by_delay.delay {
                    *by_delay = route;
                }
            }
        }
        longest.map(|(by_hops, by_delay)| Diameter {
            by_hops,
            by_delay,
            unreachable_pairs,
        })
    }
}
