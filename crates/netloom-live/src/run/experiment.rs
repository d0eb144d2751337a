//! `Experiment`: a live run owned by this library. It starts a `Plan` (hosts brought up as
//! namespaces with TUN devices, one driver thread per worker, a control socket, an accuracy
//! monitor), answers `stats`, link changes and `stop` as typed calls (a `Run`) and over the
//! socket alike, publishes what happens to its subscribers, and tears everything down when
//! stopped or dropped. The CLI, and any other client, only parses, prints and waits.

use crate::clock::{Clock, SystemClock};
use crate::cluster::channel::PartError;
use crate::driver::{Driver, DriverConfig};
use crate::error::{io_error, LiveError, RouterControlError};
use crate::mailbox::{Outbound, Post};
use crate::message::{Direction, LinkChange, Request, Snapshot};
use crate::moved::RepartitionReport;
use crate::run::control::{Controller, ANSWER_TIMEOUT};
use crate::run::ending::Ending;
use crate::run::event::{Event, Events, Subscription};
use crate::run::handle::{to_value, Handle, Shared};
use crate::run::monitor::Monitor;
use crate::run::plan::{Placement, Plan};
use crate::run::protocol::{socket_path, VERSION};
use crate::run::repartition::{self, Repartitioner};
use crate::run::report::{Report, RunInfo};
use crate::run::server::{Handler, Server};
use crate::run::{Run, RunError, RunView, SharedView};
use crate::tun_drops::TunDrops;
use crate::tun_io::TunIo;
use crate::worker::{Worker, WorkerError};
use netloom_engine::Engine;
use netloom_os::{HostSpec, KeepAwake, KernelRouterSpec, RouterSpec, Testbed, TestbedSpec};
use serde_json::{Map, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How often `wait` looks at the signal flag.
const SIGNAL_LOOK: Duration = Duration::from_millis(100);

/// What runs inside kernel routers besides their kernels (routing daemons): told when the
/// routers are made and when they go. `Experiment::start_with` takes one.
pub trait RouterControl: Send {
    /// Before anything is made: may check the routers' specs and change them (a router whose
    /// daemons fill its table keeps no static routes). An error stops the start, with nothing
    /// left behind.
    fn prepare(&mut self, routers: &mut [KernelRouterSpec]) -> Result<(), RouterControlError>;
    /// Once the routers' namespaces and devices are up and the workers move packets, before
    /// `start` returns (so before the caller runs anything on the hosts). An error stops the
    /// start; everything made is removed.
    fn start(&mut self, routers: &[KernelRouterSpec]) -> Result<(), RouterControlError>;
    /// When the experiment stops, while the routers still exist (whatever is left running in
    /// their namespaces is killed after).
    fn stop(&mut self);
}

/// One machine's part of a run over several machines (`Experiment::start_part`).
pub(crate) struct Part {
    /// The worker that runs here.
    pub worker: usize,
    /// The run's clock, started at the run's instant zero as every machine agrees on it.
    pub clock: SystemClock,
    /// How to reach each other machine's worker, by worker (this one's is never used).
    pub remote: Vec<Arc<dyn Outbound>>,
    /// Given this worker's post once it exists, to post the hand-offs that arrive for it.
    pub inbound: Box<dyn FnOnce(Post) -> std::io::Result<()>>,
}

/// A running live experiment. Dropping it stops it and tears it down, as `stop` does.
pub struct Experiment {
    shared: Arc<Shared>,
    /// Rung by a worker that ends and by a stop request.
    rung: Receiver<()>,
    workers: Vec<Worker<TunIo, SystemClock>>,
    halt: Arc<AtomicBool>,
    server: Option<Server>,
    monitor: Option<Monitor>,
    /// With `--repartition`: the thread that moves pipes and hosts between the workers.
    repartitioner: Option<Repartitioner>,
    _awake: Option<KeepAwake>,
    /// What runs in the kernel routers, stopped before the testbed goes.
    router_control: Option<Box<dyn RouterControl>>,
    /// Last, so the hosts outlive everything that uses their devices.
    testbed: Option<Testbed>,
}

impl Experiment {
    /// Brings every host of `plan` up, starts the workers and the control socket, and returns
    /// once the experiment answers. On any error everything started so far is stopped and
    /// removed again.
    pub fn start(plan: Plan) -> Result<Experiment, LiveError> {
        Experiment::start_with(plan, None)
    }

    /// `start`, with `router_control` told about the kernel routers (see `RouterControl`).
    pub fn start_with(
        plan: Plan,
        router_control: Option<Box<dyn RouterControl>>,
    ) -> Result<Experiment, LiveError> {
        Experiment::start_inner(plan, router_control, None)
    }

    /// One machine's part of a run over several machines: only the worker `part.worker` of
    /// `plan` runs here, with its hosts, on the run's clock; it posts hand-offs for the other
    /// machines' workers to `part.remote`, and `part.inbound` gets the post of this worker for
    /// those that arrive.
    pub(crate) fn start_part(plan: Plan, part: Part) -> Result<Experiment, LiveError> {
        Experiment::start_inner(plan, None, Some(part))
    }

    fn start_inner(
        plan: Plan,
        mut router_control: Option<Box<dyn RouterControl>>,
        part: Option<Part>,
    ) -> Result<Experiment, LiveError> {
        let options = plan.options.clone();
        let mut kernel_routers = plan.kernel_routers();
        if let Some(control) = &mut router_control {
            control
                .prepare(&mut kernel_routers)
                .map_err(LiveError::Routers)?;
        }
        let hosts = plan.hosts();
        let mtus = plan.host_mtus();
        let topology = &plan.topology;
        let cpus = topology.hosts.iter().map(|&n| topology.node(n).cpu);
        let routers = plan.routers();
        // The hosts made here: all, or on one machine of a cluster its worker's.
        let here: Option<Vec<u32>> = part.as_ref().map(|p| plan.hosts[p.worker].clone());
        let made = |i: usize| here.as_ref().is_none_or(|h| h.contains(&(i as u32)));
        let spec = TestbedSpec {
            name: options.name.clone(),
            addresses: plan.topology.addresses,
            hosts: hosts
                .iter()
                .zip(mtus.iter().zip(cpus))
                .enumerate()
                .filter(|&(i, _)| made(i))
                .map(|(_, (h, (&mtu, cpu)))| HostSpec {
                    name: h.name.clone(),
                    ipv4: h.ipv4,
                    ipv6: h.ipv6,
                    mtu,
                    cpu,
                })
                .collect(),
            congestion_control: options.congestion_control.clone(),
            // Other machines' hosts have no namespace here, but a name every host resolves, as
            // routers do.
            routers: routers
                .iter()
                .map(|(_, r)| r)
                .chain(
                    hosts
                        .iter()
                        .enumerate()
                        .filter(|&(i, _)| !made(i))
                        .map(|(_, h)| h),
                )
                .map(|r| RouterSpec {
                    name: r.name.clone(),
                    ipv4: r.ipv4,
                    ipv6: r.ipv6,
                })
                .collect(),
            kernel_routers,
        };
        let testbed = Testbed::create(&spec)?;
        let tun_drops = TunDrops::start(testbed.counter_reader())?;
        // A spinning worker never sleeps, so it never asks for real-time priority.
        let asked = options.realtime && options.precision != crate::wait::Precision::Busy;
        let (realtime, priority) = crate::worker::priority(asked, || {
            netloom_os::set_realtime_priority(crate::run::plan::REALTIME_PRIORITY)
        })?;
        let info = RunInfo {
            experiment: options.name.clone(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            protocol: VERSION,
            precision: plan.precision_name().to_string(),
            priority: Some(priority),
            hosts,
            links: (0..plan.topology.links.len() as u32)
                .map(|l| plan.topology.link_label(l))
                .collect(),
            workers: plan.split(),
            positions: plan
                .topology
                .nodes
                .iter()
                .filter_map(|n| Some((n.name.clone(), n.position?)))
                .collect(),
        };
        // Before any worker is pinned: the CPUs to keep awake come from this thread's mask.
        let awake = match (&options.placement, options.keep_cpus_awake) {
            (Placement::Cpu(cpu), true) => Some(KeepAwake::start(&KeepAwake::cpus_except(*cpu))?),
            _ => None,
        };
        let clock = part.as_ref().map_or_else(SystemClock::start, |p| p.clock);
        let addresses = plan.addresses();
        let config = DriverConfig {
            max_packet: mtus
                .iter()
                .copied()
                .max()
                .unwrap_or(netloom_link::DEFAULT_MTU) as usize,
            max_in_flight: options.max_in_flight,
            precision: options.precision,
            thresholds: options.thresholds,
            allow_spoofing: options.allow_spoofing,
        };
        let Plan {
            topology,
            kernel,
            routes,
            ownership,
            hosts: reads,
            cpus,
            repartition,
            ..
        } = plan;
        // Requests name the nodes of the topology as loaded; the engine runs its own with
        // kernel routers' ports (same links and pipes).
        let names = topology.clone();
        let topology = kernel.as_ref().map_or(topology, |k| k.engine.clone());
        let engine_topology = repartition.as_ref().map(|_| topology.clone());
        let mut engines = match &ownership {
            Some(o) => Engine::partitioned_all(&topology, &routes, options.seed, o),
            None => vec![Engine::with_routes(topology, routes, options.seed)],
        };
        let hosts_total = reads.iter().map(Vec::len).sum();
        let (engines, reads) = match &part {
            Some(p) => (
                vec![engines.swap_remove(p.worker)],
                vec![reads[p.worker].clone()],
            ),
            None => (engines, reads),
        };
        let mut drivers = Vec::with_capacity(engines.len());
        for (engine, reads) in engines.into_iter().zip(&reads) {
            let tuns = testbed.tuns().clone();
            let mut io = match &here {
                Some(here) => TunIo::part(tuns, here, hosts_total)?,
                None => TunIo::new(tuns, reads.clone())?,
            };
            if !options.gso {
                io.set_gso(false)?;
            }
            let mut driver = Driver::new(engine, io, clock, &addresses, config);
            for (node, r) in &routers {
                if !names.node(*node).kernel {
                    driver.add_router(*node, r.ipv4, r.ipv6);
                }
            }
            if let Some(k) = &kernel {
                driver.add_kernel_routers(k.clone());
            }
            if repartition.is_some() {
                driver.count_traffic();
            }
            drivers.push(driver);
        }
        // A machine's part counts its traffic; the coordinator repartitions (`cluster`).
        let whole = part.is_none();
        let (controller, first) = match part {
            Some(part) => {
                let driver = drivers.first_mut().expect("one driver here");
                let (controller, post) =
                    Controller::connect_part(driver, part.worker, part.remote, clock, names)
                        .map_err(io_error("connecting the worker"))?;
                (part.inbound)(post).map_err(io_error("receiving hand-offs"))?;
                (controller, part.worker)
            }
            None => (
                Controller::connect(&mut drivers, clock, names)
                    .map_err(io_error("connecting the workers"))?,
                0,
            ),
        };
        let (bell, rung) = mpsc::channel();
        let shared = Arc::new(Shared {
            info,
            controller,
            events: Events::default(),
            stop_requested: AtomicBool::new(false),
            bell: Mutex::new(bell.clone()),
            tun_drops,
            captures: Mutex::new(Vec::new()),
            workers: drivers.len(),
            repartition: repartition
                .as_ref()
                .map(|_| Arc::new(Mutex::new(RepartitionReport::default()))),
            epoch_ns: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64)
                .saturating_sub(clock.now().as_nanos()),
        });
        let mut experiment = Experiment {
            shared,
            rung,
            workers: Vec::with_capacity(drivers.len()),
            halt: Arc::new(AtomicBool::new(false)),
            server: None,
            monitor: None,
            repartitioner: None,
            _awake: awake,
            router_control: None,
            testbed: Some(testbed),
        };
        // From here on, an error drops `experiment`, which stops what started and tears down.
        for (k, driver) in (first..).zip(drivers) {
            let halt = experiment.halt.clone();
            let worker = Worker::spawn(k, driver, cpus[k], realtime, halt, bell.clone())
                .map_err(io_error("starting a worker thread"))?;
            experiment.workers.push(worker);
        }
        if let (Some(run), Some(topology), Some(epoch), Some(ownership), Some(report)) = (
            repartition.filter(|_| whole),
            engine_topology,
            options.repartition,
            ownership,
            experiment.shared.repartition.clone(),
        ) {
            let (initial, partitioner) = run;
            experiment.repartitioner = Some(
                Repartitioner::start(
                    experiment.shared.controller.clone(),
                    topology,
                    (initial, ownership),
                    (partitioner, repartition::Moving::THREADS),
                    epoch,
                    report,
                )
                .map_err(io_error("starting the repartitioning thread"))?,
            );
        }
        let path = socket_path(&netloom_os::registry_dir(), &options.name);
        let handler: Handler = {
            let shared = experiment.shared.clone();
            Arc::new(move |request| shared.handle(request))
        };
        experiment.server = Some(
            Server::start(&path, handler)
                .map_err(io_error(&format!("listening on {}", path.display())))?,
        );
        experiment.monitor = Some({
            let (ask, publish) = (experiment.shared.clone(), experiment.shared.clone());
            let clock = *experiment.shared.controller.clock();
            Monitor::start(
                options.thresholds,
                move || {
                    let mut parts = ask.controller.accuracy().wait(ANSWER_TIMEOUT).ok()?;
                    // The hosts' TUN queues belong to no worker: their drops count once, with
                    // the first worker's figures.
                    let dropped = ask.tun_drops.per_host().ok()?.iter().sum();
                    parts.first_mut()?.add_tun_queue_drops(dropped);
                    Some(parts)
                },
                move |event| publish.events.publish(event),
                move || clock.now(),
            )
            .map_err(io_error("starting the accuracy monitor"))?
        });
        if let Some(mut control) = router_control {
            let routers = &experiment
                .testbed
                .as_ref()
                .expect("set above")
                .spec()
                .kernel_routers;
            let started = control.start(routers);
            // Stopped with the experiment even if it started only in part.
            experiment.router_control = Some(control);
            started.map_err(LiveError::Routers)?;
        }
        experiment.shared.events.publish(Event::Started {
            at_ns: experiment.shared.now_ns(),
            experiment: options.name,
            hosts: experiment.shared.info.hosts.len(),
            workers: experiment.workers.len(),
        });
        Ok(experiment)
    }

    /// The kernel routers as they were brought up (after any `RouterControl::prepare`).
    pub fn kernel_routers(&self) -> &[KernelRouterSpec] {
        self.testbed
            .as_ref()
            .map_or(&[], |t| t.spec().kernel_routers.as_slice())
    }

    /// What the experiment is: name, hosts with their addresses, links, split.
    pub fn info(&self) -> &RunInfo {
        &self.shared.info
    }

    /// The figures so far.
    pub fn stats(&self) -> Result<Report, LiveError> {
        self.shared.stats()
    }

    /// Changes parameters of the link between `a` and `b` from now on, in `direction`; `set` has
    /// the topology file's link keys (`{"delay": "5ms"}`, docs/topology.md).
    pub fn link_set(
        &self,
        a: &str,
        b: &str,
        direction: Direction,
        set: &Map<String, Value>,
    ) -> Result<LinkChange, LiveError> {
        self.shared.link_set(a, b, direction, set)
    }

    /// Takes the link between `a` and `b` down or brings it up, from now on.
    pub fn link_state(&self, a: &str, b: &str, up: bool) -> Result<LinkChange, LiveError> {
        self.shared.link_state(a, b, up)
    }

    /// A handle that reads the figures and changes links from other threads (a metrics or web
    /// server), through the same calls as the control socket; after `stop` it answers that the
    /// emulator has stopped.
    pub fn handle(&self) -> Handle {
        Handle(self.shared.clone())
    }

    /// Events from now on: link changes, accuracy alarms, a worker's failure, the stop.
    pub fn subscribe(&self) -> Subscription {
        self.shared.events.subscribe()
    }

    /// A program to run inside host `host` (its network namespace), not yet started.
    pub fn command(&self, host: &str, argv: &[String]) -> Result<std::process::Command, LiveError> {
        let info = &self.shared.info;
        if !info.hosts.iter().any(|h| h.name == host) {
            let names: Vec<&str> = info.hosts.iter().map(|h| h.name.as_str()).collect();
            return Err(LiveError::UnknownHost {
                experiment: info.experiment.clone(),
                host: host.to_string(),
                hint: netloom_topo::did_you_mean(host, &names),
            });
        }
        let ns = netloom_os::namespace_name(&info.experiment, host);
        Ok(netloom_os::command(&ns, argv)?)
    }

    /// Waits until `signal` is set, `deadline` passes, a client asks the experiment to stop, or
    /// a worker fails, and says which. The run goes on: call `stop` next. It blocks between
    /// looks at `signal` (a signal handler can only set a flag), a tenth of a second at most.
    pub fn wait(&self, signal: &AtomicBool, deadline: Option<std::time::Instant>) -> Ending {
        loop {
            let now = std::time::Instant::now();
            let failed = || self.workers.iter().any(Worker::is_finished);
            let stop = &self.shared.stop_requested;
            if let Some(ending) = Ending::now(signal, deadline, now, stop, failed) {
                return ending;
            }
            let nap = deadline.map_or(SIGNAL_LOOK, |d| (d - now).min(SIGNAL_LOOK));
            let _ = self.rung.recv_timeout(nap);
        }
    }

    /// Stops the workers, takes the final report (packets still inside the network are dropped
    /// and counted as `in_flight`), closes the control socket and tears every host down.
    /// `reason` goes into the `stopped` event. A worker's failure is the error, after teardown.
    pub fn stop(mut self, reason: &Ending) -> Result<Report, LiveError> {
        let (snapshot, tun_queue_drops) = self.shutdown(reason.name())?;
        let mut report = Report::new(&self.shared.info, snapshot, &tun_queue_drops);
        report.repartition = self.shared.repartition_report();
        Ok(report)
    }

    /// `stop` on one machine of a cluster: its worker's last figures and its hosts' TUN-queue
    /// drops (in the order of its hosts), for the coordinator to merge.
    pub(crate) fn stop_part(mut self, reason: &Ending) -> Result<(Snapshot, Vec<u64>), LiveError> {
        self.shutdown(reason.name())
    }

    /// Answers a link change forwarded by a cluster's coordinator, as the control socket would.
    pub(crate) fn answer(&self, request: Request) -> Result<Value, PartError> {
        let change = match request {
            Request::LinkSet {
                a,
                b,
                direction,
                set,
            } => self.link_set(&a, &b, direction, &set),
            Request::LinkState { a, b, up } => self.link_state(&a, &b, up),
            other => return Err(PartError::NotForwarded(format!("{other:?}"))),
        };
        Ok(to_value(&change?))
    }

    /// The figures so far of this machine's worker and its hosts' TUN-queue drops (in the order
    /// of its hosts), on one machine of a cluster.
    pub(crate) fn part_figures(&self) -> Result<(Snapshot, Vec<u64>), LiveError> {
        let snapshot = self.shared.controller.snapshot().wait(ANSWER_TIMEOUT)?;
        Ok((snapshot, self.shared.tun_drops.per_host()?))
    }

    /// This machine's part of a repartitioned run over several machines: the workers whose
    /// traffic and moves the coordinator orders.
    pub(crate) fn part_workers(&self) -> &Controller<SystemClock> {
        &self.shared.controller
    }

    fn shutdown(&mut self, reason: &str) -> Result<(Snapshot, Vec<u64>), LiveError> {
        // Before the workers stop reading: after that, whatever the hosts still send fills their
        // queues and is dropped, which is the stop's doing, not the run's. Unreadable counters
        // (the hosts already gone) count none.
        let tun_queue_drops = self.shared.tun_drops.per_host().unwrap_or_default();
        // A move under way finishes while the workers still step.
        if let Some(mut repartitioner) = self.repartitioner.take() {
            repartitioner.stop();
        }
        self.halt.store(true, Ordering::SeqCst);
        if let Some(mut server) = self.server.take() {
            server.stop();
        }
        if let Some(monitor) = self.monitor.take() {
            monitor.stop();
        }
        let mut failure = None;
        let mut merged: Option<Snapshot> = None;
        let mut drivers = Vec::with_capacity(self.workers.len());
        for (k, worker) in self.workers.drain(..).enumerate() {
            let (driver, result) = worker.join();
            if let Err(error) = result {
                self.shared.events.publish(Event::WorkerFailed {
                    at_ns: self.shared.now_ns(),
                    worker: k,
                    error: error.to_string(),
                });
                failure.get_or_insert(LiveError::Worker { worker: k, error });
            }
            drivers.push(driver);
        }
        // Only once every worker stopped: nothing is posted to an inbox any more.
        for driver in &mut drivers {
            let part = driver.final_snapshot();
            match &mut merged {
                Some(all) => all.merge(part),
                None => merged = Some(part),
            }
        }
        drop(drivers);
        if let Some(mut control) = self.router_control.take() {
            control.stop();
        }
        self.shared.events.finish(Event::Stopped {
            at_ns: self.shared.now_ns(),
            reason: reason.to_string(),
        });
        let teardown = self.testbed.take().map(|mut t| t.teardown());
        if let Some(failure) = failure {
            return Err(failure);
        }
        if let Some(Err(e)) = teardown {
            return Err(e.into());
        }
        merged
            .map(|snapshot| (snapshot, tun_queue_drops))
            .ok_or_else(|| LiveError::Worker {
                worker: 0,
                error: WorkerError::NoneStarted,
            })
    }
}

impl Drop for Experiment {
    fn drop(&mut self) {
        if self.testbed.is_some() {
            let _ = self.shutdown("dropped");
        }
    }
}

impl RunView for Experiment {
    fn info(&self) -> Result<RunInfo, RunError> {
        Ok(self.shared.info.clone())
    }

    fn stats(&self) -> Result<Report, RunError> {
        Ok(self.shared.stats()?)
    }

    fn link_set(
        &self,
        a: &str,
        b: &str,
        direction: Direction,
        set: &Map<String, Value>,
    ) -> Result<LinkChange, RunError> {
        Ok(self.shared.link_set(a, b, direction, set)?)
    }

    fn link_state(&self, a: &str, b: &str, up: bool) -> Result<LinkChange, RunError> {
        Ok(self.shared.link_state(a, b, up)?)
    }

    fn subscribe(&self) -> Result<Subscription, RunError> {
        Ok(self.shared.subscribe()?)
    }
}

impl Run for Experiment {
    fn view(&self) -> SharedView {
        Arc::new(self.handle())
    }

    fn wait(&self, signal: &AtomicBool, deadline: Option<std::time::Instant>) -> Ending {
        Experiment::wait(self, signal, deadline)
    }

    fn stop(self: Box<Self>, reason: &Ending) -> Result<Report, RunError> {
        Ok(Experiment::stop(*self, reason)?)
    }
}
