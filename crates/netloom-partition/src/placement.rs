//! Which CPU each core (worker) runs on: cores that hand each other the most packets go on CPUs
//! that share the closest cache (MX's core allocator). It lives here, beside the cut, because it
//! is a decision from traffic between partitions; it reads the machine as a plain
//! `CacheTopology` that the caller gives, so it is tested on made-up machines.

use crate::assignment::Assignment;
use crate::graph::FlowGraph;
use crate::machine::CacheTopology;
use serde::Serialize;
use std::cmp::Reverse;

/// The CPU chosen for each core (worker) on a machine, and what the choice is based on.
#[derive(Clone, Debug, Serialize)]
pub struct Placement {
    /// The CPUs this process may run on and the caches two or more of them share.
    pub machine: CacheTopology,
    /// `cpu[c]`: the CPU for core c.
    pub cpu: Vec<usize>,
    /// More cores than CPUs, so some CPUs run more than one core.
    pub shared_cpus: bool,
    /// `traffic[i][j]`: flow from core i's pipes into core j's, under the weights.
    pub traffic: Vec<Vec<f64>>,
}

impl Placement {
    /// The CPUs of `machine` for the cores of `assignment`, by the traffic between them under
    /// `graph` (`place`).
    pub fn of(graph: &FlowGraph, assignment: &Assignment, machine: CacheTopology) -> Placement {
        let cores = assignment.cores as usize;
        let traffic = cross_core_traffic(graph, assignment);
        Placement {
            cpu: place(cores, &traffic, &machine),
            shared_cpus: cores > machine.cpus.len(),
            machine,
            traffic,
        }
    }
}

/// Traffic between cores under `graph`'s weights: `m[i][j]` is the flow on the flow graph's
/// edges from a pipe of core i into a pipe of core j, i ≠ j (the diagonal is 0). It is the cut
/// of `Evaluation` broken down by pair of cores, so its entries add up to `Evaluation::cut`.
/// Directed: `place` adds both directions.
pub fn cross_core_traffic(graph: &FlowGraph, assignment: &Assignment) -> Vec<Vec<f64>> {
    let cores = assignment.cores as usize;
    let mut m = vec![vec![0.0; cores]; cores];
    for (p, q, w) in graph.transitions() {
        let (from, to) = (assignment.core(p), assignment.core(q));
        if from != to {
            m[from as usize][to as usize] += w;
        }
    }
    m
}

/// A CPU of `caches.cpus` for each of `workers` workers, from `traffic[i][j]`, what worker i
/// hands worker j (`cross_core_traffic`; i and j exchange `traffic[i][j] + traffic[j][i]`).
///
/// MX (Mihailescu et al., "Towards a Cost-Effective Networking Testbed", §2.1 and §3.3) places
/// routers on cores so that a packet stays in one L2 cache: every hop to a core that does not
/// share it sends the packet through memory, and hops across sockets cost the most. Its core
/// allocator is only sketched ("use the emulated link traffic statistics ... to determine the
/// thread-to-core mapping"), so this is a greedy allocator in that spirit:
///
/// 1. Pairs of workers are taken by traffic, heaviest first, and whichever of the two is not
///    placed yet is placed (the lower-numbered first); workers without traffic come last, in order.
/// 2. A worker goes on the CPU that minimizes Σ traffic to each placed worker × the distance
///    between their CPUs: the level of the closest cache both share (1 to 3), one more than the
///    deepest level if none, 0 on the same CPU. So a heavy partner pulls it into its L2, a light
///    one only into its socket. Its partners not placed yet count too, as if they took the free
///    CPUs nearest to it, heaviest partner nearest: so a worker with heavy partners to come is not
///    pulled by light traffic into a socket without room for them.
/// 3. Only the least-loaded CPUs are candidates: no CPU gets a second worker while one has none.
///    With more workers than CPUs, CPUs are reused round by round, and then a worker joins its
///    heaviest partner's CPU. Among those, CPUs on an idle physical core (SMT siblings share an
///    L1 cache) come first: two busy workers on one core's hyperthreads share its execution
///    units, which costs more than the shared cache saves.
/// 4. Ties go to the CPU with the most free CPUs around it, socket first, then L2 (so a new group
///    of communicating workers starts where it has room to grow), then to the lowest CPU.
///
/// Deterministic. Without any cache information, worker i gets the i-th CPU,
/// wrapping around if `workers > caches.cpus.len()`: callers should say that CPUs are shared then.
///
/// Panics if `traffic` is not `workers` × `workers`, or if there are workers but no CPUs.
pub fn place(workers: usize, traffic: &[Vec<f64>], caches: &CacheTopology) -> Vec<usize> {
    assert!(
        traffic.len() == workers && traffic.iter().all(|row| row.len() == workers),
        "place: the traffic matrix must be {workers} × {workers}"
    );
    let cpus = &caches.cpus;
    assert!(
        workers == 0 || !cpus.is_empty(),
        "place: no CPU to place on"
    );
    if caches.shared.is_empty() {
        return (0..workers).map(|w| cpus[w % cpus.len()]).collect();
    }
    let exchange = |i: usize, j: usize| traffic[i][j] + traffic[j][i];
    let mut pairs: Vec<(usize, usize, f64)> = (0..workers)
        .flat_map(|i| (i + 1..workers).map(move |j| (i, j)))
        .map(|(i, j)| (i, j, exchange(i, j)))
        .filter(|&(_, _, t)| t > 0.0)
        .collect();
    // Stable, so equal traffic keeps the (i, j) order.
    pairs.sort_by(|a, b| b.2.total_cmp(&a.2));

    let mut machine = Machine::new(caches);
    let mut cpu_of: Vec<Option<usize>> = vec![None; workers];
    for w in pairs.iter().flat_map(|&(i, j, _)| [i, j]).chain(0..workers) {
        if cpu_of[w].is_some() {
            continue;
        }
        let mut placed = Vec::new();
        let mut waiting = Vec::new();
        for k in (0..workers).filter(|&k| k != w && exchange(w, k) > 0.0) {
            match cpu_of[k] {
                Some(cpu) => placed.push((cpu, exchange(w, k))),
                None => waiting.push(exchange(w, k)),
            }
        }
        waiting.sort_by(|a, b| b.total_cmp(a));
        let cpu = machine.best_cpu(|c| machine.cost(c, &placed, &waiting));
        machine.take(cpu);
        cpu_of[w] = Some(cpu);
    }
    cpu_of
        .into_iter()
        .map(|c| cpus[c.expect("every worker was placed")])
        .collect()
}

/// The CPUs as `place` sees them, by index into `CacheTopology::cpus`, with how many workers
/// each already runs.
struct Machine {
    /// `distance[a][b]`: 0 for the same CPU, else the level of the closest shared cache, else one
    /// more than the deepest level.
    distance: Vec<Vec<f64>>,
    /// `core[a]`: the CPUs of a's physical core (those sharing its L1), a included.
    core: Vec<Vec<usize>>,
    /// `around[a]`: for each cache level, deepest (largest) first, the CPUs sharing a's cache of
    /// that level (a alone if none).
    around: Vec<Vec<Vec<usize>>>,
    load: Vec<usize>,
}

impl Machine {
    fn new(caches: &CacheTopology) -> Machine {
        let cpus = &caches.cpus;
        let index = |cpu: &usize| {
            cpus.binary_search(cpu)
                .expect("shared caches hold only cpus")
        };
        let mut levels: Vec<u8> = caches.shared.iter().map(|c| c.level).collect();
        levels.sort_unstable_by_key(|&l| Reverse(l));
        levels.dedup();
        let none = f64::from(levels.first().map_or(1, |&l| l + 1));
        let distance = (0..cpus.len())
            .map(|a| {
                (0..cpus.len())
                    .map(|b| match caches.shared_level(cpus[a], cpus[b]) {
                        _ if a == b => 0.0,
                        Some(level) => f64::from(level),
                        None => none,
                    })
                    .collect()
            })
            .collect();
        let sharing = |a: usize, level: u8| -> Vec<usize> {
            caches
                .shared
                .iter()
                .find(|c| c.level == level && c.cpus.contains(&cpus[a]))
                .map_or_else(|| vec![a], |c| c.cpus.iter().map(index).collect())
        };
        Machine {
            distance,
            core: (0..cpus.len()).map(|a| sharing(a, 1)).collect(),
            around: (0..cpus.len())
                .map(|a| levels.iter().map(|&l| sharing(a, l)).collect())
                .collect(),
            load: vec![0; cpus.len()],
        }
    }

    /// What a worker costs on CPU `c`: Σ traffic × distance to its `placed` partners (CPU,
    /// traffic), plus a guess for its `waiting` partners (traffic, heaviest first): that they
    /// will take the other CPUs nearest to c, the least loaded first, heaviest partner nearest.
    fn cost(&self, c: usize, placed: &[(usize, f64)], waiting: &[f64]) -> f64 {
        let now: f64 = placed.iter().map(|&(k, t)| t * self.distance[c][k]).sum();
        if waiting.is_empty() {
            return now;
        }
        let mut others: Vec<(usize, f64)> = (0..self.load.len())
            .filter(|&b| b != c)
            .map(|b| (self.load[b], self.distance[c][b]))
            .collect();
        others.sort_by(|x, y| x.0.cmp(&y.0).then(x.1.total_cmp(&y.1)));
        now + waiting
            .iter()
            .zip(&others)
            .map(|(t, &(_, d))| t * d)
            .sum::<f64>()
    }

    fn take(&mut self, cpu: usize) {
        self.load[cpu] += 1;
    }

    /// The CPU (index) `place` puts the next worker on, `cost` giving what each candidate costs.
    fn best_cpu(&self, cost: impl Fn(usize) -> f64) -> usize {
        let least = *self.load.iter().min().expect("at least one CPU");
        let free = |cpus: &[usize]| cpus.iter().filter(|&&c| self.load[c] == least).count();
        let core_load = |a: usize| self.core[a].iter().map(|&c| self.load[c]).sum::<usize>();
        (0..self.load.len())
            .filter(|&a| self.load[a] == least)
            .map(|a| {
                let room: Vec<Reverse<usize>> =
                    self.around[a].iter().map(|g| Reverse(free(g))).collect();
                (core_load(a), cost(a), room, a)
            })
            .min_by(|x, y| {
                x.0.cmp(&y.0)
                    .then(x.1.total_cmp(&y.1))
                    .then_with(|| x.2.cmp(&y.2))
                    .then(x.3.cmp(&y.3))
            })
            .map(|(.., a)| a)
            .expect("the least-loaded CPUs are never none")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evaluation::Evaluation;
    use crate::machine::SharedCache;
    use crate::weight::tests::chain;

    fn cache(level: u8, cpus: impl IntoIterator<Item = usize>) -> SharedCache {
        SharedCache {
            level,
            cpus: cpus.into_iter().collect(),
        }
    }

    /// Two sockets of four CPUs (an L3 each), each pair of CPUs sharing an L2: the paper's
    /// machine (two quad-core Xeon X5472).
    fn two_sockets() -> CacheTopology {
        CacheTopology::new(
            (0..8).collect(),
            [
                cache(3, 0..4),
                cache(3, 4..8),
                cache(2, 0..2),
                cache(2, 2..4),
                cache(2, 4..6),
                cache(2, 6..8),
            ],
        )
    }

    /// A symmetric matrix of `n` workers from (i, j, traffic) entries, every other pair at `noise`.
    fn matrix(n: usize, noise: f64, entries: &[(usize, usize, f64)]) -> Vec<Vec<f64>> {
        let mut m = vec![vec![noise; n]; n];
        for (i, row) in m.iter_mut().enumerate() {
            row[i] = 0.0;
        }
        for &(i, j, t) in entries {
            m[i][j] = t;
            m[j][i] = t;
        }
        m
    }

    fn level(caches: &CacheTopology, a: usize, b: usize) -> Option<u8> {
        caches.shared_level(a, b)
    }

    #[test]
    fn heavy_pairs_share_an_l2() {
        let caches = two_sockets();
        let pairs = [(0, 7, 1000.0), (1, 6, 900.0), (2, 5, 800.0), (3, 4, 700.0)];
        let cpus = place(8, &matrix(8, 1.0, &pairs), &caches);
        let mut sorted = cpus.clone();
        sorted.sort_unstable();
        assert_eq!(
            sorted,
            (0..8).collect::<Vec<_>>(),
            "one worker per CPU: {cpus:?}"
        );
        for (i, j, _) in pairs {
            assert_eq!(
                level(&caches, cpus[i], cpus[j]),
                Some(2),
                "{i}-{j}: {cpus:?}"
            );
        }
    }

    #[test]
    fn two_busy_groups_each_stay_on_one_socket() {
        let caches = two_sockets();
        let mut entries = Vec::new();
        for group in [[0, 2, 4, 6], [1, 3, 5, 7]] {
            for (x, &i) in group.iter().enumerate() {
                entries.extend(
                    group[x + 1..]
                        .iter()
                        .map(|&j| (i, j, 100.0 + (i + j) as f64)),
                );
            }
        }
        let cpus = place(8, &matrix(8, 1.0, &entries), &caches);
        for (i, j, _) in entries {
            assert!(
                level(&caches, cpus[i], cpus[j]).is_some(),
                "{i}-{j}: {cpus:?}"
            );
        }
    }

    #[test]
    fn a_chain_of_pairs_stays_on_one_socket_with_each_pair_in_an_l2() {
        // 0 = 1 - 2 = 3: heavy pairs joined by a lighter hop; nothing else talks.
        let caches = two_sockets();
        let cpus = place(
            4,
            &matrix(4, 0.0, &[(0, 1, 100.0), (2, 3, 100.0), (1, 2, 10.0)]),
            &caches,
        );
        assert_eq!(level(&caches, cpus[0], cpus[1]), Some(2), "{cpus:?}");
        assert_eq!(level(&caches, cpus[2], cpus[3]), Some(2), "{cpus:?}");
        assert_eq!(level(&caches, cpus[1], cpus[2]), Some(3), "{cpus:?}");
    }

    #[test]
    fn unrelated_groups_start_on_the_emptiest_socket() {
        // Two triangles that never talk: each gets a socket of its own.
        let caches = two_sockets();
        let t = 50.0;
        let entries = [
            (0, 1, t),
            (1, 2, t),
            (0, 2, t),
            (3, 4, t),
            (4, 5, t),
            (3, 5, t),
        ];
        let cpus = place(6, &matrix(6, 0.0, &entries), &caches);
        for (i, j, _) in entries {
            assert_eq!(
                level(&caches, cpus[i], cpus[j]).map(|_| ()),
                Some(()),
                "{cpus:?}"
            );
        }
        assert_eq!(level(&caches, cpus[0], cpus[3]), None, "{cpus:?}");
    }

    #[test]
    fn directed_traffic_counts_both_ways() {
        let caches = two_sockets();
        let mut m = vec![vec![0.0; 4]; 4];
        m[0][3] = 60.0;
        m[3][0] = 60.0;
        m[1][2] = 100.0; // one way only, yet the heaviest pair
        m[0][1] = 50.0;
        let cpus = place(4, &m, &caches);
        assert_eq!(level(&caches, cpus[1], cpus[2]), Some(2), "{cpus:?}");
        assert_eq!(level(&caches, cpus[0], cpus[3]), Some(2), "{cpus:?}");
    }

    #[test]
    fn hyperthreads_of_one_core_are_used_last() {
        // Four cores of two hyperthreads (siblings n and n + 4, sharing L1 and L2), one L3.
        let mut caches: Vec<SharedCache> = (0..4)
            .flat_map(|c| [cache(1, [c, c + 4]), cache(2, [c, c + 4])])
            .collect();
        caches.push(cache(3, 0..8));
        let caches = CacheTopology::new((0..8).collect(), caches);
        let cpus = place(4, &matrix(4, 1.0, &[(0, 1, 100.0), (2, 3, 100.0)]), &caches);
        let cores: Vec<usize> = cpus.iter().map(|c| c % 4).collect();
        let mut distinct = cores.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(
            distinct.len(),
            4,
            "four busy workers on four cores: {cpus:?}"
        );
        // With eight workers every hyperthread is used, and a heavy pair shares a core.
        let cpus = place(8, &matrix(8, 1.0, &[(0, 1, 100.0), (2, 3, 90.0)]), &caches);
        let mut sorted = cpus.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..8).collect::<Vec<_>>());
    }

    #[test]
    fn more_workers_than_cpus_wrap_and_partners_share_a_cpu() {
        let caches = two_sockets();
        let pairs = [(0, 1), (2, 3), (4, 5), (6, 7), (8, 9)].map(|(i, j)| (i, j, 100.0));
        let cpus = place(10, &matrix(10, 1.0, &pairs), &caches);
        let mut per_cpu = [0; 8];
        cpus.iter().for_each(|&c| per_cpu[c] += 1);
        assert!(per_cpu.iter().all(|&n| n == 1 || n == 2), "{cpus:?}");
        // The last pair cannot share a CPU while another runs one worker only, but shares an L2.
        assert_eq!(level(&caches, cpus[8], cpus[9]), Some(2), "{cpus:?}");
        // Once every CPU runs as many workers, a worker joins its heaviest partner's.
        let two = CacheTopology::new(vec![0, 1], [cache(2, [0, 1])]);
        let cpus = place(3, &matrix(3, 0.0, &[(0, 1, 100.0), (0, 2, 50.0)]), &two);
        assert_ne!(cpus[0], cpus[1]);
        assert_eq!(cpus[2], cpus[0], "{cpus:?}");
    }

    #[test]
    fn without_cache_information_workers_take_the_cpus_in_order() {
        let caches = CacheTopology::new(vec![9, 3, 5], []);
        let heavy = matrix(5, 1.0, &[(0, 4, 1000.0)]);
        assert_eq!(place(5, &heavy, &caches), [3, 5, 9, 3, 5]);
        assert_eq!(place(0, &[], &caches), Vec::<usize>::new());
    }

    #[test]
    fn placement_is_deterministic_and_one_worker_takes_the_first_cpu() {
        let caches = two_sockets();
        let m = matrix(6, 2.0, &[(0, 5, 30.0), (1, 2, 30.0), (3, 4, 10.0)]);
        assert_eq!(place(6, &m, &caches), place(6, &m, &caches));
        assert_eq!(place(1, &matrix(1, 0.0, &[]), &caches), [0]);
    }

    #[test]
    fn cross_core_traffic_is_the_cut_by_pair_of_cores() {
        let topo = chain(3);
        let graph = FlowGraph::uniform(&topo);
        // h1 - r1 - r2 - r3 - h2; the r1-r2 link's pipes on core 1, the rest on core 0.
        let assignment = Assignment {
            cores: 3,
            pipes: vec![0, 0, 1, 1, 0, 0, 0, 0],
            topology: None,
            method: None,
        };
        let m = cross_core_traffic(&graph, &assignment);
        // Cross: h1→r1 into r1→r2 and r3→r2 into r2→r1 (0 → 1), r1→r2 into r2→r3 and r2→r1
        // into r1→h1 (1 → 0).
        assert_eq!(m, [[0.0, 2.0, 0.0], [2.0, 0.0, 0.0], [0.0, 0.0, 0.0]]);
        let cut: f64 = m.iter().flatten().sum();
        assert_eq!(cut, Evaluation::of(&graph, &assignment).cut);
    }

    /// Σ traffic × distance of a placement (CPU indices): what `place` tries to keep small.
    fn spread(machine: &Machine, m: &[Vec<f64>], cpus: &[usize]) -> f64 {
        (0..cpus.len())
            .flat_map(|i| (0..cpus.len()).map(move |j| (i, j)))
            .map(|(i, j)| m[i][j] * machine.distance[cpus[i]][cpus[j]])
            .sum()
    }

    /// The smallest `spread` over every placement of `m.len()` workers on distinct CPUs; the
    /// partial sum prunes placements already worse than the best found.
    fn best_spread(machine: &Machine, m: &[Vec<f64>]) -> f64 {
        fn search(machine: &Machine, m: &[Vec<f64>], cpus: &mut Vec<usize>, best: &mut f64) {
            if spread(machine, m, cpus) >= *best {
                return;
            }
            if cpus.len() == m.len() {
                *best = spread(machine, m, cpus);
                return;
            }
            for cpu in 0..machine.load.len() {
                if !cpus.contains(&cpu) {
                    cpus.push(cpu);
                    search(machine, m, cpus, best);
                    cpus.pop();
                }
            }
        }
        let mut best = f64::INFINITY;
        search(machine, m, &mut Vec::new(), &mut best);
        best
    }

    #[test]
    fn random_traffic_is_placed_close_to_the_best_placement() {
        use rand::{Rng, SeedableRng};
        let caches = two_sockets();
        let machine = Machine::new(&caches);
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(7);
        let (mut worst, mut total) = (1.0f64, 0.0);
        let trials = 30;
        for trial in 0..trials {
            // 4 to 6 workers; 40% of pairs talk a lot (up to 10^4), the rest a little.
            let n = 4 + trial % 3;
            let entries: Vec<(usize, usize, f64)> = (0..n)
                .flat_map(|i| (i + 1..n).map(move |j| (i, j)))
                .map(|(i, j)| {
                    let t = if rng.gen_bool(0.4) {
                        rng.gen_range(0.0..100.0f64).powi(2)
                    } else {
                        rng.gen_range(0.0..3.0)
                    };
                    (i, j, t)
                })
                .collect();
            let m = matrix(n, 0.0, &entries);
            // `two_sockets` numbers its CPUs 0 to 7, so CPUs are their own indices.
            let ratio = spread(&machine, &m, &place(n, &m, &caches)) / best_spread(&machine, &m);
            worst = worst.max(ratio);
            total += ratio;
        }
        let mean = total / trials as f64;
        eprintln!("placement / best: worst {worst:.3}, mean {mean:.3}");
        assert!(
            worst < 1.15 && mean < 1.02,
            "worst {worst:.3}, mean {mean:.3}"
        );
    }

    #[test]
    #[should_panic(expected = "traffic matrix must be 3 × 3")]
    fn a_traffic_matrix_of_the_wrong_shape_is_a_bug() {
        place(3, &matrix(2, 1.0, &[]), &two_sockets());
    }
}
