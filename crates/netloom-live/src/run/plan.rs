//! What to start, checked and computed once: a topology and how to run it live (workers and the
//! split of pipes and hosts between them, where they run, precision, payloads, MTU), with the
//! routes computed once, the flow graph at most once (when partitioning or placement needs it),
//! the ownership, each worker's hosts and CPU, and each host's addresses. `Experiment::start`
//! runs a plan; nothing here touches the OS.

use crate::accuracy::Thresholds;
use crate::kernel::KernelRouters;
use crate::moved::MIN_EPOCH;
use crate::run::report::{HostInfo, WorkersInfo};
use crate::wait::{Hybrid, Precision};
use netloom_engine::{Ownership, OwnershipError, Payload};
use netloom_partition::{
    cross_core_traffic, partition, place, Assignment, CacheTopology, FlowGraph, Method,
    PartitionError,
};
use netloom_route::{Routes, TablesTooLarge};
use netloom_topo::Topology;
use netloom_topo::{NodeId, NodeKind};
use std::net::IpAddr;
use std::sync::Arc;

/// Most packets held inside the emulated network at once, per worker, by default.
pub const DEFAULT_MAX_IN_FLIGHT: usize = 65_536;
/// SCHED_FIFO priority of a sleeping driver: above every normal process, below the kernel's own
/// real-time threads (which use 50 and up only for interrupts on some kernels).
pub const REALTIME_PRIORITY: u8 = 40;
/// The nice value of a driver given real-time priority, for the spells it spins long at normal
/// priority: the heaviest share of its CPU a normal thread can have.
pub const NICE: i8 = -20;

/// Where the workers' threads run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Placement {
    /// Wherever the scheduler puts them.
    #[default]
    Anywhere,
    /// The one worker on this CPU.
    Cpu(usize),
    /// Each worker on a CPU of this machine, workers that exchange the most traffic (under the
    /// static weighting) on CPUs that share a cache (MX's core allocator).
    ByCache(CacheTopology),
}

/// This machine's CPUs and the caches they share, read through netloom-os, as placing workers
/// by cache (`Placement::ByCache`) takes them.
pub fn this_machine() -> CacheTopology {
    let (cpus, caches) = netloom_os::machine_cpus();
    let shared = caches.into_iter().map(|c| netloom_partition::SharedCache {
        level: c.level,
        cpus: c.cpus,
    });
    CacheTopology::new(cpus, shared)
}

/// How to split the pipes between several workers.
#[derive(Clone, Debug, PartialEq)]
pub enum Split {
    /// Partition the static flow graph with this method.
    Method(Method),
    /// Run this assignment (from `netloom partition`).
    Assignment(Assignment),
}

/// How to run a topology live.
#[derive(Clone, Debug)]
pub struct Options {
    /// The experiment's name: names its namespaces, registry entry and control socket.
    pub name: String,
    /// How many workers (driver threads).
    pub workers: usize,
    /// With several workers: how to split the pipes (default: METIS).
    pub split: Option<Split>,
    /// With several workers: what crosses between them.
    pub payload: Payload,
    /// Where the workers run.
    pub placement: Placement,
    /// How the workers wait between deadlines.
    pub precision: Precision,
    /// When releases count as late and the run as inaccurate.
    pub thresholds: Thresholds,
    /// Seed of the pipes' random choices.
    pub seed: u64,
    /// MTU of every host's interface; `None` gives each host the MTU of its links
    /// (`Plan::host_mtus`).
    pub mtu: Option<u32>,
    /// Whether hosts hand over TCP super-packets (GSO) instead of MTU-size segments.
    pub gso: bool,
    /// The TCP congestion control every host starts with (one of the machine's available
    /// algorithms; programs in a host may change it).
    pub congestion_control: String,
    /// Whether sleeping workers run at real-time priority.
    pub realtime: bool,
    /// Keep every CPU but the one worker's from halting while the run lasts (needs
    /// `Placement::Cpu`).
    pub keep_cpus_awake: bool,
    /// Most packets held inside the emulated network at once, per worker.
    pub max_in_flight: usize,
    /// Deliver packets whose source address is not their sender's own; by default they are
    /// dropped. Counted as `spoofed` either way.
    pub allow_spoofing: bool,
    /// With several workers: repartition every this long on the traffic observed (docs/live.md,
    /// "Dynamic repartitioning"); at least `MIN_EPOCH`.
    pub repartition: Option<netloom_time::Duration>,
}

impl Options {
    /// One worker anywhere, hybrid precision, default thresholds, each host's MTU from its
    /// links, GSO on, cubic, real-time priority when sleeping, seed 1, spoofed packets dropped.
    pub fn new(name: impl Into<String>) -> Options {
        Options {
            name: name.into(),
            workers: 1,
            split: None,
            payload: Payload::Cache,
            placement: Placement::Anywhere,
            precision: Precision::Hybrid(Hybrid::default()),
            thresholds: Thresholds::default(),
            seed: 1,
            mtu: None,
            gso: true,
            congestion_control: netloom_os::DEFAULT_CONGESTION_CONTROL.to_string(),
            realtime: true,
            keep_cpus_awake: false,
            max_in_flight: DEFAULT_MAX_IN_FLIGHT,
            allow_spoofing: false,
            repartition: None,
        }
    }
}

/// Why a plan cannot run.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// Options that do not fit together.
    #[error("{0}")]
    Options(String),
    /// The partitioner failed.
    #[error(transparent)]
    Partition(#[from] PartitionError),
    /// The split does not fit the topology.
    #[error(transparent)]
    Ownership(#[from] OwnershipError),
    /// The routing tables would be too large.
    #[error(transparent)]
    Routes(#[from] TablesTooLarge),
    /// More hosts and routers than the address plan can number.
    #[error(
        "the topology has {hosts} hosts and {routers} routers; a live run gives each an address \
         from {plan} and fd6e:6c00::/{ipv6_prefix}, which has room for {max} hosts and routers \
         (netloom sim runs larger topologies; [topology] addresses can choose a larger range)",
        ipv6_prefix = netloom_os::IPV6_PREFIX_LEN,
        max = plan.capacity()
    )]
    TooManyHosts {
        /// Hosts in the topology.
        hosts: usize,
        /// Routers in the topology.
        routers: usize,
        /// The topology's address plan.
        plan: netloom_os::AddressPlan,
    },
}

/// A topology and how to run it live, checked, with everything a start needs computed.
#[derive(Clone, Debug)]
pub struct Plan {
    pub(crate) options: Options,
    /// The topology as loaded.
    pub(crate) topology: Topology,
    /// With kernel routers: the engine's topology with their ports, and what they need.
    pub(crate) kernel: Option<Arc<KernelRouters>>,
    /// The routes of the engine's topology.
    pub(crate) routes: Routes,
    /// With several workers: who owns which pipe and host.
    pub(crate) ownership: Option<Arc<Ownership>>,
    /// The hosts each worker reads (by position in `Topology::hosts`), by worker.
    pub(crate) hosts: Vec<Vec<u32>>,
    /// The CPU of each worker, if placed.
    pub(crate) cpus: Vec<Option<usize>>,
    /// With `Options::repartition`: the first partition, and how to make the next ones.
    pub(crate) repartition: Option<(Assignment, netloom_partition::Options)>,
    warnings: Vec<String>,
}

/// Why `topology` cannot be repartitioned every `epoch` over `workers` workers (or machines),
/// if it cannot.
pub(crate) fn repartitioning(
    topology: &Topology,
    workers: usize,
    epoch: netloom_time::Duration,
) -> Result<(), PlanError> {
    if let Some(why) = refusal(topology, workers) {
        return Err(PlanError::Options(why));
    }
    if epoch < MIN_EPOCH {
        return Err(PlanError::Options(format!(
            "--repartition {epoch}: too short; give an epoch of at least {MIN_EPOCH} \
             (each move stalls every worker briefly)"
        )));
    }
    Ok(())
}

impl Plan {
    /// Checks `options` against `topology` and computes the run: routes, the split and the
    /// placement. `cpus_here` is how many CPUs the machine has (for the warning that busy
    /// workers take all of them).
    pub fn new(topology: Topology, options: Options, cpus_here: usize) -> Result<Plan, PlanError> {
        let workers = options.workers;
        let bad = |m: &str| Err(PlanError::Options(m.to_string()));
        if workers == 0 {
            return bad("--workers 0: give at least 1");
        }
        if options.keep_cpus_awake && !matches!(options.placement, Placement::Cpu(_)) {
            return bad("keeping CPUs awake needs the worker on one CPU (--cpu)");
        }
        // Refused before routing, so nothing is computed (or created) for a run that cannot
        // number its hosts.
        if topology.nodes.len() > topology.addresses.capacity() {
            return Err(PlanError::TooManyHosts {
                hosts: topology.hosts.len(),
                routers: topology.nodes.len() - topology.hosts.len(),
                plan: topology.addresses,
            });
        }
        if let Some(epoch) = options.repartition {
            repartitioning(&topology, workers, epoch)?;
        }
        let kernel = KernelRouters::new(&topology).map(Arc::new);
        if kernel.is_some() && workers > 1 {
            return bad("kernel routers run with one worker: leave out --workers");
        }
        let engine = kernel.as_ref().map_or(&topology, |k| &k.engine);
        let routes = Routes::try_compute(engine)?;
        let engine_hosts = engine.hosts.len() as u32;
        let mut warnings = Vec::new();
        if workers == 1 {
            if options.split.is_some() || matches!(options.placement, Placement::ByCache(_)) {
                return bad("--assignment, --method and --pin need --workers 2 or more");
            }
            if options.payload == Payload::Ship {
                return bad("--payload ship needs --workers 2 or more");
            }
            let cpu = match options.placement {
                Placement::Cpu(cpu) => Some(cpu),
                _ => None,
            };
            return Ok(Plan {
                hosts: vec![(0..engine_hosts).collect()],
                cpus: vec![cpu],
                ownership: None,
                repartition: None,
                options,
                topology,
                kernel,
                routes,
                warnings,
            });
        }
        if matches!(options.placement, Placement::Cpu(_)) {
            return bad("--cpu pins a single worker; with --workers, --pin places them");
        }
        if options.precision == Precision::Busy && workers >= cpus_here {
            warnings.push(format!(
                "{workers} busy workers spin on all {cpus_here} CPUs: the programs under test \
                 will take CPUs from them for whole time slices; use --precision hybrid"
            ));
        }
        // The static flow graph, once, if partitioning or placement needs it.
        let needs_graph = matches!(options.split, None | Some(Split::Method(_)))
            || matches!(options.placement, Placement::ByCache(_));
        if needs_graph {
            FlowGraph::check_size(&topology, true)?;
        }
        let graph = needs_graph.then(|| FlowGraph::conservative(&topology, &routes));
        let method = match options.split {
            Some(Split::Method(m)) => m,
            _ => Method::Metis,
        };
        let partitioner = netloom_partition::Options::new(method, workers as u32, options.seed);
        let assignment = match &options.split {
            Some(Split::Assignment(a)) => a.clone(),
            _ => {
                let graph = graph.as_ref().expect("computed for a method");
                partition(graph, &partitioner)?
            }
        };
        if assignment.cores as usize != workers {
            return Err(PlanError::Options(format!(
                "the assignment has {} cores and --workers is {workers}: they must be equal",
                assignment.cores
            )));
        }
        let ownership = Ownership::live(&topology, &assignment.pipes, workers, options.payload)?;
        if let Some(pipe) = ownership.instant_crossing() {
            warnings.push(format!(
                "pipe {pipe} joins two workers with no delay: packets crossing it reach the next \
                 worker late by the hand-off (a few microseconds, measured as late hand-offs); \
                 give it a delay or keep its ends on one worker"
            ));
        }
        let repartition = options
            .repartition
            .map(|_| (assignment.clone(), partitioner));
        let cpus = match &options.placement {
            Placement::ByCache(machine) => {
                // Placed by the pipes the run really has on each worker (the ownership moves
                // host pipes to their host's worker).
                let run = Assignment {
                    pipes: ownership.assignment(),
                    ..assignment
                };
                let graph = graph.as_ref().expect("computed for placement");
                let traffic = cross_core_traffic(graph, &run);
                if workers > machine.cpus.len() {
                    warnings.push(format!(
                        "{workers} workers on {} CPUs: some CPUs run two",
                        machine.cpus.len()
                    ));
                }
                place(workers, &traffic, machine)
                    .into_iter()
                    .map(Some)
                    .collect()
            }
            _ => vec![None; workers],
        };
        let mut hosts = vec![Vec::new(); workers];
        for h in 0..topology.hosts.len() as u32 {
            hosts[usize::from(ownership.host_owner(h))].push(h);
        }
        Ok(Plan {
            options,
            topology,
            kernel,
            routes,
            ownership: Some(Arc::new(ownership)),
            hosts,
            cpus,
            repartition,
            warnings,
        })
    }

    /// What the caller should tell the user before the run starts (a split that will be late
    /// at some crossing, busy workers on every CPU, CPUs shared by workers).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The CPUs the workers are pinned to (none unless `--cpu` or `--pin`): what helper threads
    /// such as the metrics server keep off.
    pub fn worker_cpus(&self) -> Vec<usize> {
        let mut cpus: Vec<usize> = self.cpus.iter().flatten().copied().collect();
        cpus.sort_unstable();
        cpus.dedup();
        cpus
    }

    /// The topology to run.
    pub fn topology(&self) -> &Topology {
        &self.topology
    }

    /// Its routes, as computed at the start.
    pub fn routes(&self) -> &Routes {
        &self.routes
    }

    /// The options it runs with.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// Every host with its addresses (its own or the topology's address plan's, docs/live.md),
    /// in the topology's order.
    pub fn hosts(&self) -> Vec<HostInfo> {
        self.topology
            .hosts
            .iter()
            .enumerate()
            .map(|(i, &node)| {
                let (ipv4, ipv6) = self.topology.host_address(i);
                HostInfo {
                    name: self.topology.node(node).name.clone(),
                    ipv4,
                    ipv6,
                }
            })
            .collect()
    }

    /// The MTU of each host's interface, in the topology's order: `Options::mtu` if set, else
    /// the smallest MTU of the links the host sends on (a host has one interface whichever link
    /// a packet leaves by, and none of them then refuses what it sends), else the default.
    pub fn host_mtus(&self) -> Vec<u32> {
        if let Some(mtu) = self.options.mtu {
            return vec![mtu; self.topology.hosts.len()];
        }
        let leaving = self.topology.adjacency();
        self.topology
            .hosts
            .iter()
            .map(|&node| {
                leaving[node as usize]
                    .iter()
                    .map(|&(pipe, _)| self.topology.pipes[pipe as usize].config.mtu)
                    .min()
                    .unwrap_or(netloom_link::DEFAULT_MTU)
            })
            .collect()
    }

    /// Every router with its node and addresses (one per router, `Topology::router_address`),
    /// in the topology's order.
    pub fn routers(&self) -> Vec<(NodeId, HostInfo)> {
        let nodes = self.topology.nodes.iter().enumerate();
        nodes
            .filter(|(_, n)| n.kind == NodeKind::Router)
            .enumerate()
            .map(|(j, (node, n))| {
                let (ipv4, ipv6) = self.topology.router_address(j);
                let name = n.name.clone();
                (node as NodeId, HostInfo { name, ipv4, ipv6 })
            })
            .collect()
    }

    /// Each engine host's addresses, as the driver routes them: the hosts', then none for each
    /// port of a kernel router (the router's kernel has the addresses).
    pub(crate) fn addresses(&self) -> Vec<Vec<IpAddr>> {
        let ports = self.kernel.as_ref().map_or(0, |k| k.ports.len());
        self.hosts()
            .into_iter()
            .map(|h| vec![IpAddr::V4(h.ipv4), IpAddr::V6(h.ipv6)])
            .chain(std::iter::repeat_n(Vec::new(), ports))
            .collect()
    }

    /// Each kernel router with its devices and static routes, in node order (docs/live.md,
    /// "Kernel routers"): what `Experiment::start` brings up, unless a `RouterControl`
    /// changes it.
    pub fn kernel_routers(&self) -> Vec<netloom_os::KernelRouterSpec> {
        self.kernel
            .as_ref()
            .map_or_else(Vec::new, |k| k.specs(&self.options.name))
    }

    /// How the run is split, with several workers.
    pub fn split(&self) -> Option<WorkersInfo> {
        let o = self.ownership.as_ref()?;
        let workers = self.hosts.len();
        Some(WorkersInfo {
            workers,
            lookahead_ns: Some(o.lookahead().as_nanos()).filter(|&ns| ns != u64::MAX),
            hosts: self.hosts.iter().map(Vec::len).collect(),
            pipes: o.assignment().iter().fold(vec![0; workers], |mut n, &w| {
                n[w as usize] += 1;
                n
            }),
            payload: o.payload().name().to_string(),
        })
    }

    /// The name of the precision mode.
    pub fn precision_name(&self) -> &'static str {
        match self.options.precision {
            Precision::Busy => "busy",
            Precision::Hybrid(_) => "hybrid",
            Precision::Sleep => "sleep",
        }
    }
}

/// Why a run cannot repartition, or `None` if it can: it needs workers to move pipes between,
/// no kernel router (whose kernel forwards between its devices, which one worker reads: such
/// runs have one worker), and no pipe that holds its packets in flow queues.
fn refusal(topology: &Topology, workers: usize) -> Option<String> {
    if let Some(router) = topology.nodes.iter().find(|n| n.kernel) {
        return Some(format!(
            "--repartition: router {} is a kernel router, and runs with kernel routers have one \
             worker on one machine (docs/live.md, \"Kernel routers\"); leave out --repartition \
             or make it an engine router (kernel = false)",
            router.name
        ));
    }
    if workers < 2 {
        return Some("--repartition moves pipes between workers: give --workers 2 or more".into());
    }
    netloom_engine::repartition::immovable_pipe(topology).map(|pipe| {
        format!(
            "--repartition: pipe {pipe} holds its packets in flow queues (fq_codel), which \
             cannot move between workers yet; use another aqm"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use netloom_link::PipeConfig;
    use netloom_time::{Duration, Rate};
    use netloom_topo::{NodeKind, RoutingMetric};

    /// h1 - r - h2, 5 ms per hop.
    fn chain() -> Topology {
        let mut t = Topology::new("chain", RoutingMetric::Delay);
        let h1 = t.add_node("h1", NodeKind::Host, None);
        let r = t.add_node("r", NodeKind::Router, None);
        let h2 = t.add_node("h2", NodeKind::Host, None);
        let c = PipeConfig::new(Rate::bps(10_000_000), Duration::from_millis(5));
        t.add_link(h1, r, None, c, Some(c));
        t.add_link(r, h2, None, c, Some(c));
        t
    }

    fn options(workers: usize) -> Options {
        Options {
            workers,
            ..Options::new("lab")
        }
    }

    #[test]
    fn one_worker_reads_every_host_and_refuses_split_options() {
        let plan = Plan::new(chain(), options(1), 2).unwrap();
        assert_eq!(plan.hosts, [vec![0, 1]]);
        assert!(plan.split().is_none());
        let ship = Options {
            payload: Payload::Ship,
            ..options(1)
        };
        let err = Plan::new(chain(), ship, 2).unwrap_err().to_string();
        assert!(err.contains("--payload ship needs --workers 2"), "{err}");
        assert!(Plan::new(chain(), options(0), 2).is_err());
    }

    #[test]
    fn a_host_takes_the_smallest_mtu_it_sends_on_unless_the_options_set_one() {
        let mut t = chain();
        let (r, h2) = (1, 2);
        let c = |mtu| PipeConfig {
            mtu,
            ..PipeConfig::new(Rate::bps(10_000_000), Duration::from_millis(5))
        };
        // h2 gets a second link, smaller from h2 than towards it; h1 keeps the default.
        t.add_link(r, h2, None, c(9000), Some(c(1400)));
        let plan = Plan::new(t.clone(), options(1), 2).unwrap();
        assert_eq!(plan.host_mtus(), [netloom_link::DEFAULT_MTU, 1400]);
        let flag = Options {
            mtu: Some(9000),
            ..options(1)
        };
        assert_eq!(Plan::new(t, flag, 2).unwrap().host_mtus(), [9000, 9000]);
    }

    #[test]
    fn more_hosts_than_the_address_plan_are_refused_not_a_panic() {
        // A star just past the plan: one router, as many hosts as the plan has addresses.
        let mut t = Topology::new("big", RoutingMetric::Delay);
        let r = t.add_node("r", NodeKind::Router, None);
        let c = PipeConfig::new(Rate::bps(10_000_000), Duration::from_millis(1));
        for i in 0..netloom_os::AddressPlan::DEFAULT.capacity() {
            let h = t.add_node(format!("h{i}"), NodeKind::Host, None);
            t.add_link(h, r, None, c, Some(c));
        }
        let err = Plan::new(t, options(1), 2).unwrap_err().to_string();
        assert!(
            err.contains("131070 hosts and 1 routers") && err.contains("room for 131070"),
            "{err}"
        );
    }

    #[test]
    fn two_workers_split_by_assignment_and_place_by_cache() {
        let assignment = Assignment {
            cores: 2,
            pipes: vec![0, 1, 1, 1],
            topology: None,
            method: None,
        };
        let two = Options {
            split: Some(Split::Assignment(assignment)),
            placement: Placement::ByCache(CacheTopology::new(vec![0, 1], [])),
            ..options(2)
        };
        let plan = Plan::new(chain(), two, 2).unwrap();
        let split = plan.split().unwrap();
        assert_eq!((split.hosts, split.pipes), (vec![1, 1], vec![1, 3]));
        assert_eq!(split.lookahead_ns, Some(5_000_000));
        assert_eq!(plan.cpus, [Some(0), Some(1)]);
        assert!(plan.warnings().is_empty());
        // METIS by default; a busy pair on a 2-CPU machine is warned about.
        let busy = Options {
            precision: Precision::Busy,
            ..options(2)
        };
        let plan = Plan::new(chain(), busy, 2).unwrap();
        assert_eq!(plan.split().unwrap().workers, 2);
        assert!(plan.warnings()[0].contains("busy workers spin on all 2 CPUs"));
    }
}
