//! `SimPlan`: a virtual-time run decided. Every check of the options is made here, once, and
//! so is the split: which partition the run measures or runs on, and which runner runs it.

use crate::error::{PlanError, SimError};
use crate::options::Options;
use crate::report::RepartitionReport;
use crate::split;
use netloom_engine::sim::{Progress, SimOptions};
use netloom_engine::traffic::{self, FlowSpec, TrafficSpec};
use netloom_partition::{Assignment, FlowGraph, Method};
use netloom_route::Routes;
use netloom_time::Duration;
use netloom_topo::Topology;
use std::cell::OnceCell;

/// A virtual-time run whose options were checked and whose split was made: `run` it.
pub struct SimPlan {
    pub(crate) topo: Topology,
    pub(crate) routes: Routes,
    pub(crate) flows: Vec<FlowSpec>,
    pub(crate) options: Options,
    /// The workers the run has (a cluster's machines, with one).
    pub(crate) workers: u32,
    /// The partition measured (one engine) or run on (workers), if any.
    pub(crate) assignment: Option<Assignment>,
    /// The flow graph the split was made on, when one was needed; placing pinned workers
    /// takes it too.
    graph: OnceCell<FlowGraph>,
    /// Whether the flow graph weighs the run's own traffic (else the static weights).
    by_traffic: bool,
}

/// How far a run has got, for a progress display: the engine's `Progress`.
pub type Observer<'a> = &'a mut dyn FnMut(Progress);

impl SimPlan {
    /// Checks `options` against each other and against `topology`, expands `traffic` into its
    /// flows and makes the split the run measures or runs on.
    pub fn new(
        topology: Topology,
        traffic: &TrafficSpec,
        mut options: Options,
    ) -> Result<SimPlan, SimError> {
        // A cluster's machines are the workers, one each, as processes.
        if let Some(machines) = options.cluster().map(|c| c.machines.len()) {
            options.workers = machines as u32;
        }
        check(&options)?;
        let flows = traffic::expand(
            &traffic.pattern,
            traffic.kind,
            traffic.cap,
            &topology,
            options.seed,
        )?;
        let workers = options.workers;
        let partitioned = workers > 1;
        let cores = match options.cores {
            None if partitioned && options.assignment.is_none() => Some(workers),
            cores => cores,
        };
        // Routes and the flow graph, each computed once, when something needs them: to
        // partition (cores, workers without an assignment, a cluster without a placement) or
        // to place workers. Cores alone measure the partition ModelNet made, on its static
        // weights (every pair of hosts); the workers run on a partition of the traffic they
        // run (each flow at its max-min fair share), which crosses workers about a quarter
        // less often on inet (docs/partition.md).
        let by_traffic = options.cores.is_none();
        let cluster = options.cluster();
        let splits = cluster.is_some_and(|c| !c.placed());
        if partitioned || splits || (cores.is_some() && options.assignment.is_none()) {
            FlowGraph::check_size(&topology, !by_traffic)
                .map_err(|e| SimError::Topology(e.into()))?;
        }
        let routes = Routes::try_compute(&topology).map_err(|e| SimError::Topology(e.into()))?;
        let mut plan = SimPlan {
            topo: topology,
            routes,
            flows,
            options,
            workers,
            assignment: None,
            graph: OnceCell::new(),
            by_traffic,
        };
        plan.assignment = plan.split(cores, splits)?;
        if let Some(a) = plan.assignment.as_ref().filter(|_| partitioned) {
            if a.cores != workers {
                return Err(PlanError::AssignmentCores {
                    cores: a.cores,
                    workers,
                }
                .into());
            }
            let immovable = plan
                .options
                .repartition
                .and(netloom_engine::repartition::immovable_pipe(&plan.topo));
            if let Some(pipe) = immovable {
                return Err(PlanError::ImmovablePipe {
                    pipe: pipe.to_string(),
                }
                .into());
            }
        }
        Ok(plan)
    }

    /// The partition the run measures or runs on: the options' assignment, a cluster's, or
    /// one made over `cores`.
    fn split(&self, cores: Option<u32>, splits: bool) -> Result<Option<Assignment>, SimError> {
        if let Some(a) = &self.options.assignment {
            return Ok(Some(a.clone()));
        }
        if let Some(cluster) = self.options.cluster() {
            // The file's placement, or METIS with the machines' CPUs as shares over the
            // traffic (`run`, which does not know its traffic, splits over the static weights).
            let cpus: Vec<u32> = cluster
                .machines
                .iter()
                .map(|m| m.cpus.unwrap_or(1))
                .collect();
            let graph = splits.then(|| self.graph());
            return netloom_live::cluster::split(
                cluster,
                &self.topo,
                &cpus,
                self.options.seed,
                graph,
            )
            .map(Some)
            .map_err(|e| SimError::Cluster {
                file: cluster.file.clone(),
                reason: e.to_string(),
            });
        }
        match cores {
            Some(cores) => Ok(Some(split::assign(
                &self.topo,
                self.graph(),
                &self.partitioner(cores),
            )?)),
            None => Ok(None),
        }
    }

    /// The flow graph of the run's traffic, or the static one (with cores given), made once.
    pub(crate) fn graph(&self) -> &FlowGraph {
        self.graph.get_or_init(|| match self.by_traffic {
            true => split::traffic_graph(&self.topo, &self.routes, &self.flows),
            false => FlowGraph::conservative(&self.topo, &self.routes),
        })
    }

    /// The partitioner's options over `cores`, for the first split and each repartitioning.
    pub(crate) fn partitioner(&self, cores: u32) -> netloom_partition::Options {
        netloom_partition::Options {
            imbalance: self.options.imbalance,
            ..netloom_partition::Options::new(
                self.options.method.unwrap_or(Method::Metis),
                cores,
                self.options.seed,
            )
        }
    }

    /// The partition the run measures or runs on, if any.
    pub fn assignment(&self) -> Option<&Assignment> {
        self.assignment.as_ref()
    }

    /// The engine's options for this run, with `progress` called about every `every`.
    pub(crate) fn engine_options<'a>(
        &self,
        progress: Option<Observer<'a>>,
        every: std::time::Duration,
    ) -> SimOptions<'a> {
        SimOptions {
            duration: self.options.duration,
            seed: self.options.seed,
            wall_clock: self.options.wall_clock,
            progress,
            progress_every: every,
            series: self.options.series,
            tapped: None,
        }
    }

    /// The `repartition` section of a run repartitioned every `epoch`.
    pub(crate) fn repartition_report(
        &self,
        cores: u32,
        epoch: Duration,
        epochs: Vec<crate::report::EpochRow>,
    ) -> RepartitionReport {
        let partitioner = self.partitioner(cores);
        RepartitionReport {
            epoch_ns: epoch.as_nanos(),
            method: partitioner.method.name(),
            imbalance: partitioner.imbalance,
            epochs,
        }
    }

    /// Whether the engines count transitions between pipes: to measure a partition or for the
    /// options' `observe`.
    pub(crate) fn counting(&self) -> bool {
        self.assignment.is_some() || self.options.observe
    }
}

/// The checks of options against each other, before anything is loaded.
fn check(o: &Options) -> Result<(), PlanError> {
    let workers = o.workers;
    if workers == 0 {
        return Err(PlanError::NoWorkers);
    }
    if o.series.is_some() && workers > 1 {
        return Err(PlanError::SeriesNeedOneWorker { workers });
    }
    if !o.captures.is_empty() && workers > 1 {
        return Err(PlanError::CapturesNeedOneWorker { workers });
    }
    if o.method.is_some() && o.cores.is_none() && workers == 1 {
        return Err(PlanError::MethodWithoutCores);
    }
    if let Some(cores) = o.cores.filter(|&c| workers > 1 && c != workers) {
        return Err(PlanError::CoresAndWorkers { cores, workers });
    }
    if o.processes.is_some() && workers < 2 {
        return Err(PlanError::ProcessesNeedWorkers);
    }
    if o.repartition.is_some() {
        if o.assignment.is_none() && o.cores.is_none() && workers == 1 {
            return Err(PlanError::RepartitionWithoutPartition);
        }
        if o.series.is_some() || !o.captures.is_empty() {
            return Err(PlanError::RepartitionWithSeriesOrCaptures);
        }
        if o.processes.is_some() {
            return Err(PlanError::RepartitionWithProcesses);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use netloom_engine::traffic::parse_spec;
    use netloom_topo::load::Format;

    /// Four hosts on two routers, 1 ms links between the routers.
    fn topology() -> Topology {
        let text = r#"hosts = ["h1", "h2", "h3", "h4"]
routers = ["r1", "r2"]
[defaults]
bw = "10Mbit"
delay = "1ms"
[[link]]
a = "h1"
b = "r1"
[[link]]
a = "h2"
b = "r1"
[[link]]
a = "r1"
b = "r2"
[[link]]
a = "r2"
b = "h3"
[[link]]
a = "r2"
b = "h4"
"#;
        netloom_topo::load::load_str(text, Format::Toml, "t.toml").unwrap()
    }

    fn plan(options: Options) -> Result<SimPlan, SimError> {
        let traffic = parse_spec("pattern=random-k k=1 source=aimd").unwrap();
        SimPlan::new(topology(), &traffic, options)
    }

    fn options() -> Options {
        Options::new(Duration::from_millis(200), 1)
    }

    fn refused(options: Options) -> PlanError {
        match plan(options) {
            Err(SimError::Plan(e)) => e,
            Err(e) => panic!("refused for another reason: {e}"),
            Ok(_) => panic!("planned"),
        }
    }

    #[test]
    fn options_that_do_not_go_together_are_refused_before_anything_runs() {
        let o = |f: fn(&mut Options)| {
            let mut o = options();
            f(&mut o);
            o
        };
        assert_eq!(refused(o(|o| o.workers = 0)), PlanError::NoWorkers);
        assert_eq!(
            refused(o(|o| {
                o.workers = 2;
                o.series = Some(Duration::from_millis(10));
            })),
            PlanError::SeriesNeedOneWorker { workers: 2 }
        );
        assert_eq!(
            refused(o(|o| o.method = Some(Method::Random))),
            PlanError::MethodWithoutCores
        );
        assert_eq!(
            refused(o(|o| {
                o.workers = 2;
                o.cores = Some(3);
            })),
            PlanError::CoresAndWorkers {
                cores: 3,
                workers: 2
            }
        );
        assert_eq!(
            refused(o(|o| o.repartition = Some(Duration::from_millis(50)))),
            PlanError::RepartitionWithoutPartition
        );
    }

    #[test]
    fn workers_without_a_partition_run_on_one_made_over_their_traffic() {
        let p = plan(Options {
            workers: 2,
            ..options()
        })
        .unwrap();
        assert_eq!(p.assignment().map(|a| a.cores), Some(2));
        // One engine measures nothing unless asked to.
        assert!(plan(options()).unwrap().assignment().is_none());
    }

    #[test]
    fn two_workers_report_what_one_engine_reports() {
        let json = |workers| {
            let o = Options {
                workers,
                wall_clock: false,
                ..options()
            };
            let report = plan(o)
                .unwrap()
                .run(None, std::time::Duration::MAX)
                .unwrap();
            assert_eq!(report.workers.is_some(), workers > 1);
            serde_json::to_value(&report.report).unwrap()
        };
        let (one, two) = (json(1), json(2));
        assert_eq!(one["flows"], two["flows"]);
        assert!(one["totals"]["packet_hops"].as_u64() > Some(0), "{one}");
    }
}
