//! The coordinator of a run over several machines (`netloom run FILE --cluster CLUSTER`): starts
//! a worker on every machine through its launcher, checks that each runs this netloom, measures
//! each machine's clock offset (NTP's exchange on the control channel, at the start and every
//! second while the run lasts), splits the topology between the machines (the file's placement,
//! or METIS with the machines' CPUs as shares), sends each its part, and answers the control
//! protocol for the whole run by asking every machine, and publishes the run's events (start,
//! link changes, the machines' accuracy alarms, a machine's failure, stop). Any machine failing stops the others; what a dead
//! worker left behind is cleaned on its machine. `ClusterRun` is a `Run` (`run_view`).

use super::channel::{self, FromWorker, Start, ToWorker};
use super::clocks::{clock_warnings, MachineClock, Moment};
use super::file::{Cluster, Machine};
use super::merged::Merged;
use super::remote::{MachineError, Remote, ANSWER_WAIT};
use super::split::split;
use crate::error::LiveError;
use crate::message::{LinkChange, Request};
use crate::moved::RepartitionReport;
use crate::moved::{merge_moved, Moved};
use crate::run::ending::Ending;
use crate::run::event::{Event, EventLines, Events};
use crate::run::plan::{Options, Plan, Split};
use crate::run::protocol::{socket_path, Reply, VERSION};
use crate::run::repartition::{self, Movable, Moving, Repartitioner};
use crate::run::report::{PriorityReport, Report, RunInfo};
use crate::run::server::{Handler, Response, Server};
use crate::run::RunError;
use crate::traffic::Traffic;
use crate::wait::Precision;
use netloom_engine::{Ownership, Payload};
use netloom_time::Instant;
use netloom_topo::Topology;
use serde_json::Value;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::RecvTimeoutError;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long a machine may take to say hello (SSH's connection included).
const HELLO_WAIT: Duration = Duration::from_secs(30);
/// How long a machine may take to bring its hosts up.
const READY_WAIT: Duration = Duration::from_secs(120);
/// Clock exchanges at the start; the one of least round trip counts.
const CLOCK_EXCHANGES: usize = 8;
/// How often offsets are measured again while the run lasts.
const CLOCK_EVERY: Duration = Duration::from_secs(1);
/// How long hand-off datagrams still on their way when every machine stopped may take to
/// arrive before they count as lost, and how often what arrived is asked meanwhile.
const DRAIN: Duration = Duration::from_millis(100);
const RECOUNT: Duration = Duration::from_millis(2);
/// How long event streams may take to write the run's last event when it stops.
const STREAMS_WAIT: Duration = Duration::from_secs(1);
/// How far ahead of the order a move between machines is set: the order crosses the control
/// channel (SSH: a few milliseconds), not a mailbox.
const MOVE_AHEAD: netloom_time::Duration = netloom_time::Duration::from_millis(20);

/// What a run over several machines is made of.
pub struct Setup {
    /// The machines.
    pub cluster: Cluster,
    /// The topology, as loaded here.
    pub topology: Topology,
    /// It as every machine loads it: its document and the data files it names.
    pub bundle: netloom_topo::Bundle,
    /// How to run it: the name, precision, thresholds, seed, MTU... (`workers`, `split` and
    /// `payload` are the cluster's: one worker a machine, payloads shipped).
    pub options: Options,
}

/// What the control socket's threads and the clock thread share.
pub(super) struct Shared {
    pub(super) info: RunInfo,
    remotes: Vec<Remote>,
    stop_requested: AtomicBool,
    /// Set when the run stops, to end the clock thread.
    over: AtomicBool,
    /// The run's events, for `netloom events`.
    pub(super) events: Arc<Events>,
    /// The run's instant zero on this machine's wall clock (ns since 1970).
    zero_ns: u64,
    /// With `--repartition`: what it did so far.
    repartition: Option<Arc<Mutex<RepartitionReport>>>,
}

/// The machines, as a repartitioning orders them: every machine's traffic summed, and moves
/// ordered to all at once, answered once each has the others' transfers (which the machines'
/// workers send each other directly).
struct Machines(Arc<Shared>);

impl Movable for Machines {
    type Error = MachineError;

    fn now(&self) -> Instant {
        Instant::from_nanos(self.0.now_ns())
    }

    fn traffic(&self) -> Result<Traffic, MachineError> {
        let mut all: Option<Traffic> = None;
        for remote in &self.0.remotes {
            let answer = remote.ask(&ToWorker::Traffic, ANSWER_WAIT)?;
            let traffic = remote.carried(answer, |a| match a {
                FromWorker::Traffic(t) => Ok(t),
                other => Err(other),
            })?;
            match &mut all {
                Some(all) => all.merge(*traffic),
                None => all = Some(*traffic),
            }
        }
        all.ok_or(MachineError::NoMachine)
    }

    fn repartition(&self, next: Arc<Ownership>, at: Instant) -> Result<Moved, MachineError> {
        let remotes = &self.0.remotes;
        let answers: Vec<_> = remotes
            .iter()
            .map(|r| r.answers.lock().expect("no panics holding it"))
            .collect();
        let order = ToWorker::Move {
            assignment: next.assignment(),
            at_ns: at.as_nanos(),
        };
        for (remote, answers) in remotes.iter().zip(&answers) {
            while answers.try_recv().is_ok() {}
            remote.send(&order)?;
        }
        let mut moved = Vec::new();
        for (remote, answers) in remotes.iter().zip(&answers) {
            let answer = remote.answer(answers, ANSWER_WAIT)?;
            moved.push(*remote.carried(answer, |a| match a {
                FromWorker::Moved(m) => Ok(m),
                other => Err(other),
            })?);
        }
        Ok(merge_moved(moved))
    }
}

impl Shared {
    /// What repartitioning did so far, with `--repartition`.
    fn repartition_now(&self) -> Option<RepartitionReport> {
        self.repartition
            .as_ref()
            .map(|r| repartition::lock(r).clone())
    }

    /// Every machine's figures, merged.
    pub(super) fn stats(&self) -> Result<Report, MachineError> {
        let mut merged = Merged::default();
        for (k, remote) in self.remotes.iter().enumerate() {
            let answer = remote.ask(&ToWorker::Figures, ANSWER_WAIT)?;
            let figures = remote.carried(answer, |a| match a {
                FromWorker::Figures(f) => Ok(f),
                other => Err(other),
            })?;
            merged.add(k, *figures);
        }
        merged
            .report(&self.info, self.repartition_now(), &self.names())
            .ok_or(MachineError::NoMachine)
    }

    /// The least delay of a pipe between machines; `None` when nothing crosses.
    fn lookahead_ns(&self) -> Option<u64> {
        self.info.workers.as_ref().and_then(|w| w.lookahead_ns)
    }

    /// The machines' names, by worker.
    fn names(&self) -> Vec<&str> {
        self.remotes
            .iter()
            .map(|r| r.machine.name.as_str())
            .collect()
    }

    /// Nanoseconds since the run started, for events.
    fn now_ns(&self) -> u64 {
        channel::wall_ns().saturating_sub(self.zero_ns)
    }

    /// A link change, made by every machine (each keeps the whole network's configuration),
    /// published as the first machine's answer has it.
    fn change_link(&self, request: &Request) -> Result<Value, MachineError> {
        let answer = self.forward(request)?;
        if let Ok(change) = serde_json::from_value::<LinkChange>(answer.clone()) {
            self.events.publish(Event::LinkChanged(change.clone()));
            if let Request::LinkState { up, .. } = request {
                // Every machine applied the change, and with it recomputed its routes.
                self.events.publish(Event::RoutesRecomputed {
                    at_ns: change.at_ns,
                    link: change.link,
                    up: *up,
                });
            }
        }
        Ok(answer)
    }

    /// A request, answered by every machine; the first one's answer.
    fn forward(&self, request: &Request) -> Result<Value, MachineError> {
        let mut first = None;
        for remote in &self.remotes {
            let message = ToWorker::Request(request.clone());
            let answer = remote.ask(&message, ANSWER_WAIT)?;
            // A refusal (a link that does not exist) is the request's fault, not the
            // machine's: passed on as the machine said it, every machine saying the same.
            let answer = remote.carried(answer, |a| match a {
                FromWorker::Answer(answer) => Ok(Ok(answer)),
                other => Err(other),
            })?;
            first.get_or_insert(answer.map_err(MachineError::Request)?);
        }
        first.ok_or(MachineError::NoMachine)
    }

    /// A link change, typed (`RunView`): the machines' refusals and silences as one line.
    pub(super) fn typed_change(&self, request: &Request) -> Result<LinkChange, RunError> {
        let answer = self
            .change_link(request)
            .map_err(|e| LiveError::Machine(e.to_string()))?;
        serde_json::from_value(answer).map_err(RunError::Reply)
    }

    fn handle(&self, request: Request) -> Response {
        let body = match request {
            Request::Info => Ok(serde_json::to_value(&self.info).expect("info serializes")),
            Request::Stats => self
                .stats()
                .map(|r| serde_json::to_value(&r).expect("reports serialize"))
                .map_err(|e| e.to_string()),
            Request::LinkSet { .. } | Request::LinkState { .. } => {
                self.change_link(&request).map_err(|e| e.to_string())
            }
            Request::Stop => {
                self.stop_requested.store(true, Ordering::SeqCst);
                Ok(serde_json::json!({ "stopping": self.info.experiment }))
            }
            Request::Events => {
                return Response {
                    reply: Reply::ok(serde_json::json!({ "experiment": self.info.experiment })),
                    stream: Some(Box::new(EventLines::new(self.events.subscribe()))),
                }
            }
            Request::Capture { .. } => {
                let machines: Vec<String> = self
                    .remotes
                    .iter()
                    .map(|r| format!("{} on {}", r.experiment, r.machine.name))
                    .collect();
                Err(format!(
                    "capture is per machine in a run over several machines: capture on the machine whose worker owns the link, with its experiment's name (`netloom capture --name NAME`: {})",
                    machines.join(", ")
                ))
            }
        };
        match body {
            Ok(body) => Reply::ok(body).into(),
            Err(e) => Reply::error(e).into(),
        }
    }
}

/// A run over several machines, started. Dropping it stops every machine.
pub struct ClusterRun {
    pub(super) shared: Arc<Shared>,
    server: Option<Server>,
    clock_thread: Option<std::thread::JoinHandle<()>>,
    /// The run's entry in this machine's registry (no hosts of its own), so `stats`, `link`
    /// and `stop` find it by name; last, so it goes after everything else.
    registry: Option<netloom_os::Testbed>,
    pub(super) warnings: Vec<String>,
    /// With `--repartition`: the thread that moves pipes between the machines.
    repartitioner: Option<Repartitioner>,
    /// Where the warnings of the lookahead against the machines begin in `warnings` (the
    /// plan's come first).
    timing_from: usize,
}

impl ClusterRun {
    /// Starts a worker on every machine, splits the run between them and brings every host up
    /// on its machine. Any machine that cannot be reached, runs another netloom or cannot bring
    /// its part up is one error, and every machine is stopped and cleaned again.
    pub fn start(setup: Setup) -> Result<ClusterRun, LiveError> {
        let Setup {
            cluster,
            topology,
            bundle,
            options,
        } = setup;
        let run = options.name.clone();
        let fail = LiveError::Machine;
        // Refused before any machine is started.
        if let Some(epoch) = options.repartition {
            crate::run::plan::repartitioning(&topology, cluster.machines.len(), epoch)?;
        }
        // Launched all at once, so that slow SSH connections overlap.
        let mut remotes = Vec::new();
        let mut errors = Vec::new();
        let events = Arc::new(Events::default());
        for machine in &cluster.machines {
            match Remote::launch(machine, &run, events.clone()) {
                Ok(r) => remotes.push(r),
                Err(e) => errors.push(e),
            }
        }
        let mut cpus = Vec::new();
        for remote in &remotes {
            let hello = remote
                .answers
                .lock()
                .expect("no panics holding it")
                .recv_timeout(HELLO_WAIT);
            let machine = remote.machine.name.clone();
            match hello {
                Ok(FromWorker::Hello { version, cpus: n }) => {
                    if version != env!("CARGO_PKG_VERSION") {
                        errors.push(MachineError::Version { machine, version });
                    }
                    cpus.push(remote.machine.cpus.unwrap_or(n));
                }
                Ok(other) => errors.push(MachineError::SaidInstead {
                    machine,
                    said: Box::new(other),
                    expected: "hello",
                }),
                Err(RecvTimeoutError::Timeout) => errors.push(MachineError::Silent {
                    machine,
                    wait: HELLO_WAIT,
                }),
                Err(RecvTimeoutError::Disconnected) => errors.push(remote.why_dead()),
            }
        }
        let abandon = |remotes: &[Remote], why: String| {
            // None has started its part: closing their input ends them.
            for remote in remotes {
                remote.close();
            }
            fail(why)
        };
        if !errors.is_empty() {
            return Err(abandon(&remotes, joined(&errors)));
        }
        for remote in &remotes {
            match (0..CLOCK_EXCHANGES)
                .map(|_| remote.measure_clock())
                .collect::<Result<Vec<_>, _>>()
            {
                Ok(samples) => {
                    let best = *samples
                        .iter()
                        .min_by_key(|s| s.round_trip_ns)
                        .expect("several");
                    *remote.clock.lock().expect("no panics holding it") = Some(MachineClock {
                        machine: remote.machine.name.clone(),
                        start: best,
                        last: best,
                    });
                }
                Err(e) => return Err(abandon(&remotes, e.to_string())),
            }
        }
        let assignment = match split(&cluster, &topology, &cpus, options.seed, None) {
            Ok(a) => a,
            Err(e) => return Err(abandon(&remotes, e.to_string())),
        };
        let machines = cluster.machines.len();
        let here = std::thread::available_parallelism().map_or(1, |n| n.get());
        let plan_options = Options {
            workers: machines,
            split: Some(Split::Assignment(assignment.clone())),
            payload: Payload::Ship,
            ..options.clone()
        };
        let plan = match Plan::new(topology, plan_options, here) {
            Ok(p) => p,
            Err(e) => return Err(abandon(&remotes, format!("{}: {e}", bundle.label))),
        };
        let warnings = plan.warnings().to_vec();
        let info = RunInfo {
            experiment: run.clone(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            protocol: VERSION,
            precision: plan.precision_name().to_string(),
            // Each machine's worker decides its own, as on one machine: known once they are up.
            priority: None,
            hosts: plan.hosts(),
            links: (0..plan.topology().links.len() as u32)
                .map(|l| plan.topology().link_label(l))
                .collect(),
            workers: plan.split(),
            positions: plan
                .topology()
                .nodes
                .iter()
                .filter_map(|n| Some((n.name.clone(), n.position?)))
                .collect(),
        };
        let registry = match netloom_os::Testbed::without_hosts(&run) {
            Ok(t) => t,
            Err(e) => return Err(abandon(&remotes, e.to_string())),
        };
        let precision = match options.precision {
            Precision::Busy => "busy",
            Precision::Sleep => "sleep",
            Precision::Hybrid(_) => "hybrid",
        };
        let zero_ns = channel::wall_ns();
        let peers: Vec<_> = cluster
            .machines
            .iter()
            .map(Machine::handoff_address)
            .collect();
        // One secret for the run, made here and handed to each machine with its part.
        let key = netloom_wire::Key::random().to_hex();
        for (k, remote) in remotes.iter().enumerate() {
            let offset_ns = remote
                .clock
                .lock()
                .expect("no panics holding it")
                .as_ref()
                .map_or(0, |c| c.start.offset_ns);
            let start = Start {
                run: run.clone(),
                name: remote.experiment.clone(),
                worker: k,
                topology: bundle.clone(),
                assignment: assignment.pipes.clone(),
                peers: peers.clone(),
                key: key.clone(),
                seed: options.seed,
                mtu: options.mtu,
                gso: options.gso,
                congestion_control: options.congestion_control.clone(),
                late_ns: options.thresholds.late.as_nanos() as u64,
                max_late_fraction: options.thresholds.max_late_fraction,
                precision: precision.into(),
                realtime: options.realtime,
                allow_spoofing: options.allow_spoofing,
                zero_ns,
                offset_ns,
                repartition_ns: options.repartition.map(|d| d.as_nanos()),
            };
            // Sent to all before waiting for any: the machines bring their hosts up at once.
            if let Err(e) = remote.send(&ToWorker::Start(Box::new(start))) {
                errors.push(e);
            }
        }
        let mut priorities = Vec::with_capacity(remotes.len());
        for remote in &remotes {
            let ready = remote
                .answers
                .lock()
                .expect("no panics holding it")
                .recv_timeout(READY_WAIT);
            let machine = remote.machine.name.clone();
            match ready {
                Ok(FromWorker::Ready { priority }) => priorities.push((machine, priority)),
                Ok(FromWorker::Failed(why)) => errors.push(MachineError::Failed { machine, why }),
                Ok(other) => errors.push(MachineError::SaidInstead {
                    machine,
                    said: Box::new(other),
                    expected: "ready",
                }),
                Err(RecvTimeoutError::Timeout) => errors.push(MachineError::NotUp {
                    machine,
                    wait: READY_WAIT,
                }),
                Err(RecvTimeoutError::Disconnected) => errors.push(remote.why_dead()),
            }
        }
        let info = RunInfo {
            priority: PriorityReport::of_machines(&priorities),
            ..info
        };
        let shared = Arc::new(Shared {
            info,
            remotes,
            stop_requested: AtomicBool::new(false),
            over: AtomicBool::new(false),
            events,
            zero_ns,
            repartition: options
                .repartition
                .map(|_| Arc::new(Mutex::new(RepartitionReport::default()))),
        });
        let mut started = ClusterRun {
            shared,
            server: None,
            clock_thread: None,
            registry: Some(registry),
            timing_from: warnings.len(),
            warnings,
            repartitioner: None,
        };
        if !errors.is_empty() {
            // Dropping `started` stops the machines that came up and cleans the others.
            return Err(fail(joined(&errors)));
        }
        let lookahead_ns = started.shared.lookahead_ns();
        if let Some(warning) = started.check_lookahead(lookahead_ns) {
            started.warnings.push(warning);
        }
        if let Some(lookahead) = lookahead_ns {
            let clocks = started.clocks();
            let known = clock_warnings(&clocks, lookahead, Moment::Start);
            started.warnings.extend(known);
        }
        let map = super::forward::Forwarding::of(
            &started
                .shared
                .remotes
                .iter()
                .map(|r| (&r.machine, r.experiment.as_str()))
                .collect::<Vec<_>>(),
            &plan,
        );
        map.write(&run)
            .map_err(|e| fail(format!("writing the run's host map: {e}")))?;
        started.shared.events.publish(Event::Started {
            at_ns: started.shared.now_ns(),
            experiment: run.clone(),
            hosts: started.shared.info.hosts.len(),
            workers: machines,
        });
        let path = socket_path(&netloom_os::registry_dir(), &run);
        let handler: Handler = {
            let shared = started.shared.clone();
            Arc::new(move |request| shared.handle(request))
        };
        started.server = Some(Server::start(&path, handler).map_err(|e| LiveError::Io {
            what: format!("listening on {}", path.display()),
            source: e,
        })?);
        let shared = started.shared.clone();
        started.clock_thread = Some(std::thread::spawn(move || {
            loop {
                // Parked, not asleep: the stop unparks it rather than wait up to a second.
                let next = std::time::Instant::now() + CLOCK_EVERY;
                while let Some(left) = next.checked_duration_since(std::time::Instant::now()) {
                    if shared.over.load(Ordering::Relaxed) {
                        return;
                    }
                    std::thread::park_timeout(left);
                }
                for remote in &shared.remotes {
                    if let Ok(sample) = remote.measure_clock() {
                        if let Some(c) = remote.clock.lock().expect("no panics holding it").as_mut()
                        {
                            c.last = sample;
                        }
                    }
                }
            }
        }));
        if let (Some((initial, partitioner)), Some(ownership), Some(epoch), Some(report)) = (
            plan.repartition.clone(),
            plan.ownership.clone(),
            options.repartition,
            started.shared.repartition.clone(),
        ) {
            let moving = Moving {
                ahead: MOVE_AHEAD,
                hosts_stay: true,
            };
            started.repartitioner = Some(
                Repartitioner::start(
                    Machines(started.shared.clone()),
                    plan.topology().clone(),
                    (initial, ownership),
                    (partitioner, moving),
                    epoch,
                    report,
                )
                .map_err(|e| fail(format!("starting the repartitioning thread: {e}")))?,
            );
        }
        Ok(started)
    }

    /// Measures the round trip between every two machines' hand-off sockets (UDP probes, the
    /// least of a few) and says so when half of one is more than the lookahead: a hand-off
    /// leaves a pipe's delay before its exit time and must cross between machines within it.
    fn check_lookahead(&self, lookahead_ns: Option<u64>) -> Option<String> {
        let mut worst: Option<(u64, usize, usize)> = None;
        for (k, remote) in self.shared.remotes.iter().enumerate() {
            let Ok(FromWorker::Probed(trips)) = remote.ask(&ToWorker::Probe, ANSWER_WAIT) else {
                continue;
            };
            for (j, trip) in trips.into_iter().enumerate() {
                if let Some(trip) = trip.filter(|_| j != k) {
                    if worst.is_none_or(|(w, _, _)| trip > w) {
                        worst = Some((trip, k, j));
                    }
                }
            }
        }
        let (trip, a, b) = worst?;
        let one_way = trip / 2;
        let machine = |k: usize| &self.shared.remotes[k].machine.name;
        let lookahead = lookahead_ns?;
        (lookahead < one_way).then(|| {
            format!(
                "the least delay of a pipe between machines is {:.3} ms, less than the one-way delay measured between machines {} and {} ({:.3} ms, half the least round trip of UDP probes): hand-offs will arrive late; give those pipes more delay or keep their ends on one machine",
                lookahead as f64 / 1e6,
                machine(a),
                machine(b),
                one_way as f64 / 1e6
            )
        })
    }

    /// What the caller should tell the user before the run goes on (a lookahead shorter than
    /// the way between machines or than what is known of their clocks, a pipe of no delay
    /// between machines).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Of `warnings`, those of the lookahead against the way between machines or what is
    /// known of their clocks: the run's timing cannot be trusted.
    pub fn timing_warnings(&self) -> &[String] {
        &self.warnings[self.timing_from..]
    }

    /// The machines whose clocks moved against the coordinator's, since the start, by more
    /// than the lookahead (beyond the measurements' error): hand-offs to and from them were
    /// late by as much. Empty when nothing crosses between machines.
    pub fn drift_warnings(&self) -> Vec<String> {
        let lookahead = self.shared.lookahead_ns();
        lookahead.map_or_else(Vec::new, |l| clock_warnings(&self.clocks(), l, Moment::Now))
    }

    /// What the run is.
    pub fn info(&self) -> &RunInfo {
        &self.shared.info
    }

    /// Each machine's clock offset, at the start and as last measured.
    pub fn clocks(&self) -> Vec<MachineClock> {
        self.shared
            .remotes
            .iter()
            .filter_map(|r| r.clock.lock().expect("no panics holding it").clone())
            .collect()
    }

    /// The figures so far, every machine's merged.
    pub fn stats(&self) -> Result<Report, LiveError> {
        self.shared
            .stats()
            .map_err(|e| LiveError::Machine(e.to_string()))
    }

    /// As `Experiment::wait`; a machine whose worker ends is `WorkerFailed`.
    pub fn wait(&self, signal: &AtomicBool, deadline: Option<std::time::Instant>) -> Ending {
        loop {
            let now = std::time::Instant::now();
            let failed = || self.shared.remotes.iter().any(Remote::dead);
            let stop = &self.shared.stop_requested;
            if let Some(ending) = Ending::now(signal, deadline, now, stop, failed) {
                return ending;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Stops every machine and returns the merged last figures; a machine that died is the
    /// error (after the others stopped and it was cleaned), naming it and why.
    pub fn stop(mut self, reason: &Ending) -> Result<Report, LiveError> {
        self.shutdown(reason.name())
    }

    fn shutdown(&mut self, reason: &str) -> Result<Report, LiveError> {
        // A move under way finishes while the machines still run.
        if let Some(mut repartitioner) = self.repartitioner.take() {
            repartitioner.stop();
        }
        self.shared.over.store(true, Ordering::Relaxed);
        let mut server = self.server.take();
        if let Some(server) = &mut server {
            server.stop();
        }
        if let Some(thread) = self.clock_thread.take() {
            thread.thread().unpark();
            let _ = thread.join();
        }
        let mut merged = Merged::default();
        let mut failures = Vec::new();
        let mut stopped = Vec::new();
        for (k, remote) in self.shared.remotes.iter().enumerate() {
            match remote.stop() {
                Ok(Some(figures)) => {
                    merged.add(k, *figures);
                    stopped.push(k);
                }
                Ok(None) => {}
                Err(e) => {
                    self.shared.events.publish(Event::WorkerFailed {
                        at_ns: self.shared.now_ns(),
                        worker: k,
                        error: e.to_string(),
                    });
                    failures.push(format!("{e} ({})", remote.clean()))
                }
            }
        }
        // No machine sends any more: what is still on its way gets `DRAIN` to arrive (the
        // wait ends as soon as everything did), and what never does is lost, the last
        // datagrams of a channel included.
        let drained = std::time::Instant::now() + DRAIN;
        merged.await_arrivals(
            &stopped,
            |k| self.shared.remotes[k].count(),
            || {
                std::thread::sleep(RECOUNT);
                std::time::Instant::now() < drained
            },
        );
        for remote in &self.shared.remotes {
            remote.close();
        }
        self.shared.events.finish(Event::Stopped {
            at_ns: self.shared.now_ns(),
            reason: reason.to_string(),
        });
        if let Some(server) = server {
            server.drain(STREAMS_WAIT);
        }
        super::forward::Forwarding::remove(&self.shared.info.experiment);
        if let Some(mut registry) = self.registry.take() {
            registry.teardown()?;
        }
        if !failures.is_empty() {
            return Err(LiveError::Machine(failures.join("; ")));
        }
        merged
            .report(
                &self.shared.info,
                self.shared.repartition_now(),
                &self.shared.names(),
            )
            .ok_or_else(|| LiveError::Machine("no machine answered".into()))
    }
}

impl Drop for ClusterRun {
    fn drop(&mut self) {
        if self.registry.is_some() {
            let _ = self.shutdown("dropped");
        }
    }
}

/// The machines' errors, as one line.
fn joined(errors: &[MachineError]) -> String {
    let all: Vec<String> = errors.iter().map(ToString::to_string).collect();
    all.join("; ")
}
