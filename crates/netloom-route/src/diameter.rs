//! The routed diameter for `netloom check`: the longest route between any two hosts, by hop
//! count and by propagation delay, following the next-hop tables.

use crate::graph::NO_ROW;
use crate::table::Dest;
use crate::Routes;
use netloom_time::Duration;
use netloom_topo::{NodeId, PipeId, Topology};

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

/// A route's length: pipes crossed and their propagation delay (ns).
type Length = (u32, u64);

fn plus(a: Length, b: Length) -> Length {
    (a.0 + b.0, a.1 + b.1)
}

/// The hosts of one column worth trying as destinations: by one measure, the two that add the
/// most to a route (earliest host first among equals), so that one remains when the other is
/// the source.
#[derive(Clone, Copy, Default)]
struct TopTwo {
    best: [Option<(Length, u32)>; 2],
}

impl TopTwo {
    /// Offers host `d`, adding `add`; hosts come in host order, so an equal one never wins.
    fn offer(&mut self, measure: fn(Length) -> u64, add: Length, d: u32) {
        let beats =
            |slot: Option<(Length, u32)>| slot.is_none_or(|(a, _)| measure(add) > measure(a));
        if beats(self.best[0]) {
            self.best = [Some((add, d)), self.best[0]];
        } else if beats(self.best[1]) {
            self.best[1] = Some((add, d));
        }
    }

    /// The best destination other than `src`.
    fn other_than(&self, src: u32) -> Option<(Length, u32)> {
        self.best.into_iter().flatten().find(|&(_, d)| d != src)
    }
}

fn by_hops(l: Length) -> u64 {
    u64::from(l.0)
}

fn by_delay(l: Length) -> u64 {
    l.1
}

impl Routes {
    /// The longest routes between hosts, or `None` if no two distinct hosts are connected.
    ///
    /// A route from host s to host d is s's link up to its router (for a stub host), the table's
    /// route from there to d's column, and d's link down (for a stub host), so the lengths of
    /// every row's route to a column, with each column's two longest links down, give every
    /// pair's: O(columns × (rows + hosts)), not O(hosts² × route length). The pairs chosen are
    /// those a walk over every ordered pair in host order would choose (the first among equals).
    pub fn diameter(&self, topo: &Topology) -> Option<Diameter> {
        let delay = |p: PipeId| topo.pipes[p as usize].config.delay.as_nanos();
        let alive = |d: &Dest| d.attach.is_none_or(|a| self.up[a.down as usize]);
        // Where each host's routes start in the table, and what its own link adds before.
        let starts: Vec<Option<(u32, Length)>> = topo
            .hosts
            .iter()
            .zip(&self.dests)
            .map(|(&h, d)| match d.attach {
                None => Some((self.row_of[h as usize], (0, 0))),
                Some(a) => self.up[a.up as usize]
                    .then(|| (self.row_of[a.router as usize], (1, delay(a.up)))),
            })
            .collect();
        let columns = self.targets.len();
        let mut members = vec![0u64; columns];
        let mut dead = vec![0u64; columns];
        let mut top = vec![(TopTwo::default(), TopTwo::default()); columns];
        for (d, dest) in self.dests.iter().enumerate() {
            let c = dest.column as usize;
            members[c] += 1;
            if !alive(dest) {
                dead[c] += 1;
                continue;
            }
            let add = dest.attach.map_or((0, 0), |a| (1, delay(a.down)));
            top[c].0.offer(by_hops, add, d as u32);
            top[c].1.offer(by_delay, add, d as u32);
        }
        let mut best: [Option<(Length, u32, u32)>; 2] = [None, None];
        let mut unreachable_pairs = 0u64;
        let mut node_of_row = vec![0; self.rows];
        for (node, &row) in self.row_of.iter().enumerate() {
            if row != NO_ROW {
                node_of_row[row as usize] = node as NodeId;
            }
        }
        let mut lengths = vec![None; self.rows];
        for c in 0..columns {
            self.route_lengths(topo, &node_of_row, c as u32, &mut lengths);
            for (s, start) in starts.iter().enumerate() {
                let s = s as u32;
                let in_column = self.dests[s as usize].column as usize == c;
                let route =
                    start.and_then(|(row, first)| Some(plus(first, lengths[row as usize]?)));
                let Some(route) = route else {
                    unreachable_pairs += members[c] - u64::from(in_column);
                    continue;
                };
                let own_dead = in_column && !alive(&self.dests[s as usize]);
                unreachable_pairs += dead[c] - u64::from(own_dead);
                for (slot, (candidates, measure)) in best.iter_mut().zip([
                    (&top[c].0, by_hops as fn(Length) -> u64),
                    (&top[c].1, by_delay),
                ]) {
                    let Some((add, d)) = candidates.other_than(s) else {
                        continue;
                    };
                    let length = plus(route, add);
                    let longer = slot.is_none_or(|(l, bs, bd)| {
                        measure(length) > measure(l)
                            || (measure(length) == measure(l) && (s, d) < (bs, bd))
                    });
                    if longer {
                        *slot = Some((length, s, d));
                    }
                }
            }
        }
        let route = |b: Option<(Length, u32, u32)>| {
            b.map(|((hops, ns), s, d)| RouteLength {
                src: topo.hosts[s as usize],
                dst: topo.hosts[d as usize],
                hops,
                delay: Duration::from_nanos(ns),
            })
        };
        Some(Diameter {
            by_hops: route(best[0])?,
            by_delay: route(best[1])?,
            unreachable_pairs,
        })
    }

    /// Fills `lengths[row]` with the length of the table's route from each row to column
    /// `column`'s target, or `None` where there is none. Routes form a tree towards the target,
    /// so each row is walked once.
    fn route_lengths(
        &self,
        topo: &Topology,
        node_of_row: &[NodeId],
        column: u32,
        lengths: &mut [Option<Length>],
    ) {
        const UNKNOWN: Option<Length> = Some((u32::MAX, u64::MAX));
        lengths.fill(UNKNOWN);
        lengths[self.targets[column as usize] as usize] = Some((0, 0));
        let mut chain = Vec::new();
        for row in 0..self.rows as u32 {
            let mut at = row;
            // Walk towards the target until a row whose length is known, then unwind.
            while lengths[at as usize] == UNKNOWN {
                let Some(pipe) = self.table(column, at) else {
                    lengths[at as usize] = None;
                    break;
                };
                chain.push((at, pipe));
                at = self.row_of[topo.far_end(pipe, node_of_row[at as usize]) as usize];
            }
            let mut next = lengths[at as usize];
            while let Some((r, pipe)) = chain.pop() {
                next =
                    next.map(|l| plus(l, (1, topo.pipes[pipe as usize].config.delay.as_nanos())));
                lengths[r as usize] = next;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::tests::grid;
    use netloom_link::PipeConfig;
    use netloom_time::Rate;
    use netloom_topo::{NodeKind, RoutingMetric};

    /// The diameter as it was computed before: every ordered pair's route walked, the first
    /// longest kept.
    fn every_pair(routes: &Routes, topo: &Topology) -> Option<Diameter> {
        let mut longest: Option<(RouteLength, RouteLength)> = None;
        let mut unreachable_pairs = 0;
        for &src in &topo.hosts {
            for &dst in topo.hosts.iter().filter(|&&d| d != src) {
                let Some(path) = routes.path(topo, src, dst) else {
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

    #[test]
    fn equals_walking_every_pair() {
        for metric in [RoutingMetric::Delay, RoutingMetric::Hops] {
            let topo = grid(metric, 9);
            let mut routes = Routes::compute(&topo);
            assert_eq!(
                routes.diameter(&topo),
                every_pair(&routes, &topo),
                "{metric:?}"
            );
            let mut up = routes.up.clone();
            for link in [2, 30, topo.links.len() - 3] {
                let l = &topo.links[link];
                (up[l.ab as usize], up[l.ba as usize]) = (false, false);
                routes.recompute(&topo, &up);
                let want = every_pair(&routes, &topo);
                assert_eq!(routes.diameter(&topo), want, "{metric:?} link {link}");
            }
        }
    }

    #[test]
    fn the_longest_link_down_is_not_its_own_destination() {
        // A star whose longest spoke is one host's: its farthest destination is the next
        // longest; a host whose spoke is down is unreachable both ways.
        let mut topo = Topology::new("star", RoutingMetric::Delay);
        let hub = topo.add_node("hub", NodeKind::Router, None);
        for ms in [1, 9, 3, 9, 2] {
            let h = topo.add_node(format!("h{ms}"), NodeKind::Host, None);
            let c = PipeConfig::new(Rate::bps(1_000_000), Duration::from_millis(ms));
            topo.add_link(h, hub, None, c, Some(c));
        }
        let lone = topo.add_node("lone", NodeKind::Host, None);
        let mut off = PipeConfig::new(Rate::bps(1_000_000), Duration::from_millis(50));
        off.up = false;
        topo.add_link(hub, lone, None, off, Some(off));
        let routes = Routes::compute(&topo);
        let d = routes.diameter(&topo).unwrap();
        assert_eq!(Some(d), every_pair(&routes, &topo));
        assert_eq!(d.by_delay.delay, Duration::from_millis(18));
        assert_eq!(d.unreachable_pairs, 10);
    }
}
