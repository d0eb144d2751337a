//! The coordinator of a run over several machines (`netloom run FILE --cluster CLUSTER`): starts
//! a worker on every machine through its launcher, checks that each runs this netloom, measures
//! each machine's clock offset (NTP's exchange on the control channel, at the start and every
//! second while the run lasts), splits the topology between the machines (the file's placement,
//! or METIS with the machines' CPUs as shares), sends each its part, and answers the control
//! protocol for the whole run by asking every machine, and publishes the run's events (start,
//! link changes, the machines' accuracy alarms, a machine's failure, stop). Any machine failing stops the others; what a dead
//! worker left behind is cleaned on its machine.

use super::channel::{self, Figures, FromWorker, PartError, Start, ToWorker};
use super::file::{Cluster, ClusterError, Machine};
use crate::event::{Event, EventLines, Events};
use crate::experiment::{Ending, LiveError};
use crate::message::{LinkChange, Request, Snapshot};
use crate::moved::{merge_moved, Moved};
use crate::plan::{Options, Plan, Split};
use crate::protocol::{socket_path, Reply, VERSION};
use crate::repartition::{self, Moving, RepartitionReport, Repartitioner, Workers};
use crate::report::{LostHandoffs, Report, RunInfo};
use crate::server::{Handler, Response, Server};
use crate::traffic::Traffic;
use crate::wait::Precision;
use netloom_engine::{Ownership, Payload};
use netloom_partition::{partition_shares, Assignment, FlowGraph, Method, PartitionError};
use netloom_route::TablesTooLarge;
use netloom_time::Instant;
use netloom_topo::Topology;
use serde::Serialize;
use serde_json::Value;
use std::collections::VecDeque;
use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// How long a machine may take to say hello (SSH's connection included).
const HELLO_WAIT: Duration = Duration::from_secs(30);
/// How long a machine may take to bring its hosts up.
const READY_WAIT: Duration = Duration::from_secs(120);
/// How long a machine may take to answer a request.
const ANSWER_WAIT: Duration = Duration::from_secs(10);
/// How long a machine may take to stop and tear down.
const STOP_WAIT: Duration = Duration::from_secs(60);
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
/// Lines of a worker's standard error kept to explain its death.
const STDERR_LINES: usize = 20;
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

/// One machine's clock as last measured: its wall clock less the coordinator's, and the round
/// trip of the exchange that measured it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ClockSample {
    /// ns; positive when the machine's clock is ahead.
    pub offset_ns: i64,
    /// ns.
    pub round_trip_ns: u64,
}

/// What the run knows of one machine's clock.
#[derive(Clone, Debug, Serialize)]
pub struct MachineClock {
    /// The machine.
    pub machine: String,
    /// At the start (the offset its worker's clock was set with).
    pub start: ClockSample,
    /// The last measurement.
    pub last: ClockSample,
}

/// What went wrong with one machine's worker, as the coordinator sees it; each message names
/// the machine.
#[derive(Debug, thiserror::Error)]
pub(crate) enum MachineError {
    /// Its launcher could not be started.
    #[error("machine {machine}: starting {launcher:?}: {source}")]
    Launch {
        /// The machine.
        machine: String,
        /// The launcher's program.
        launcher: String,
        /// Why.
        source: std::io::Error,
    },
    /// It runs another netloom.
    #[error("machine {machine} runs netloom {version}; this is netloom {}: install the same version on every machine", env!("CARGO_PKG_VERSION"))]
    Version {
        /// The machine.
        machine: String,
        /// Its netloom's version.
        version: String,
    },
    /// Its first words, or its words once its part was sent, were not the protocol's.
    #[error("machine {machine}: said {said:?} instead of {expected}")]
    SaidInstead {
        /// The machine.
        machine: String,
        /// What it said.
        said: Box<FromWorker>,
        /// What it should have said ("hello", "ready").
        expected: &'static str,
    },
    /// It did not answer in time.
    #[error("machine {machine} did not answer within {wait:?}")]
    Silent {
        /// The machine.
        machine: String,
        /// How long it was given.
        wait: Duration,
    },
    /// Its part was not up in time.
    #[error("machine {machine} was not up within {wait:?}")]
    NotUp {
        /// The machine.
        machine: String,
        /// How long it was given.
        wait: Duration,
    },
    /// Its worker said it failed, or its channel broke (what it said, or the channel's error).
    #[error("machine {machine}: {why}")]
    Failed {
        /// The machine.
        machine: String,
        /// Its words.
        why: String,
    },
    /// Its worker ended without a word: its exit status and the last line it (or its
    /// launcher) wrote on stderr.
    #[error("machine {machine}: worker ended ({status}){}", last.as_ref().map_or(String::new(), |l| format!(": {l}")))]
    Ended {
        /// The machine.
        machine: String,
        /// Its exit status (or why it is not known).
        status: String,
        /// Its last line on stderr.
        last: Option<String>,
    },
    /// It answered with an answer of another kind.
    #[error("machine {machine}: answered {to}with {answer:?}")]
    Unexpected {
        /// The machine.
        machine: String,
        /// What was asked, with a space after it ("a clock exchange "), or nothing.
        to: &'static str,
        /// Its answer.
        answer: Box<FromWorker>,
    },
    /// Its part refused or failed what it was asked.
    #[error("machine {machine}: {source}")]
    Refused {
        /// The machine.
        machine: String,
        /// Its error.
        source: PartError,
    },
    /// The machines refused a request (a link that does not exist): the request's fault, not
    /// theirs, so as they said it, every machine saying the same.
    #[error(transparent)]
    Request(PartError),
    /// There is no machine to ask.
    #[error("no machine")]
    NoMachine,
}

/// One machine's worker as the coordinator holds it.
struct Remote {
    machine: Machine,
    /// Its experiment: the run's name and the machine's.
    experiment: String,
    child: Mutex<Child>,
    /// Held while a message is written; `None` once closed.
    stdin: Mutex<Option<ChildStdin>>,
    /// Held for a whole exchange (a message and its answer), so exchanges never interleave.
    answers: Mutex<Receiver<FromWorker>>,
    /// Why it ended, once it did.
    died: Arc<Mutex<Option<String>>>,
    stderr: Arc<StderrTail>,
    clock: Mutex<Option<MachineClock>>,
}

/// The last lines a worker (or its launcher) wrote on stderr, and whether it has closed it.
#[derive(Default)]
struct StderrTail {
    /// The lines, and whether the stream has ended.
    lines: Mutex<(VecDeque<String>, bool)>,
    ended: Condvar,
}

impl StderrTail {
    /// Reads `stderr` to its end, keeping the last `STDERR_LINES` lines.
    fn read(&self, stderr: impl std::io::Read) {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let mut lines = self.lines.lock().expect("no panics holding it");
            if lines.0.len() == STDERR_LINES {
                lines.0.pop_front();
            }
            lines.0.push_back(line);
        }
        self.lines.lock().expect("no panics holding it").1 = true;
        self.ended.notify_all();
    }

    /// The last line, once the stream has ended or `wait` has passed: a process that has
    /// exited may still have its last words in the pipe, read by the other thread.
    fn last(&self, wait: Duration) -> Option<String> {
        let lines = self.lines.lock().expect("no panics holding it");
        let (lines, _) = self
            .ended
            .wait_timeout_while(lines, wait, |(_, ended)| !*ended)
            .expect("no panics holding it");
        lines.0.back().cloned()
    }
}

impl Remote {
    /// Starts the machine's worker through its launcher. The accuracy alarms it raises go to
    /// `events`.
    fn launch(machine: &Machine, run: &str, events: Arc<Events>) -> Result<Remote, MachineError> {
        let mut command = machine.netloom_command(&["worker"]);
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // Its own process group: a Ctrl-C at the coordinator's terminal is the coordinator's
        // to handle, by stopping every machine in order.
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        netloom_os::close_inherited_fds(&mut command);
        let mut child = command.spawn().map_err(|source| MachineError::Launch {
            machine: machine.name.clone(),
            launcher: machine.launcher[0].clone(),
            source,
        })?;
        let (stdin, stdout, stderr) = (
            child.stdin.take().expect("piped"),
            child.stdout.take().expect("piped"),
            child.stderr.take().expect("piped"),
        );
        let died = Arc::new(Mutex::new(None));
        let tail = Arc::new(StderrTail::default());
        {
            let tail = tail.clone();
            std::thread::spawn(move || tail.read(stderr));
        }
        let (tx, rx) = mpsc::channel();
        {
            let died = died.clone();
            let name = machine.name.clone();
            std::thread::spawn(move || {
                let mut stdout = BufReader::new(stdout);
                let why = loop {
                    match channel::receive::<FromWorker>(&mut stdout) {
                        Ok(Some(FromWorker::Failed(why))) => {
                            let _ = tx.send(FromWorker::Failed(why.clone()));
                            break why;
                        }
                        Ok(Some(FromWorker::Alarm(mut alarm))) => {
                            if let Event::AccuracyAlarm { machine, .. } = &mut alarm {
                                *machine = Some(name.clone());
                            }
                            events.publish(alarm)
                        }
                        Ok(Some(message)) => {
                            if tx.send(message).is_err() {
                                return;
                            }
                        }
                        Ok(None) => break String::new(),
                        Err(e) => break e.to_string(),
                    }
                };
                died.lock()
                    .expect("no panics holding it")
                    .get_or_insert(why);
            });
        }
        Ok(Remote {
            machine: machine.clone(),
            experiment: format!("{run}-{}", machine.name),
            child: Mutex::new(child),
            stdin: Mutex::new(Some(stdin)),
            answers: Mutex::new(rx),
            died,
            stderr: tail,
            clock: Mutex::new(None),
        })
    }

    /// Sends `message` and waits `wait` at most for the answer.
    fn ask(&self, message: &ToWorker, wait: Duration) -> Result<FromWorker, MachineError> {
        let answers = self.answers.lock().expect("no panics holding it");
        // An answer that came too late for an earlier exchange is not this one's.
        while answers.try_recv().is_ok() {}
        self.send(message)?;
        self.answer(&answers, wait)
    }

    /// The worker's next answer, waiting `wait` at most.
    fn answer(
        &self,
        answers: &Receiver<FromWorker>,
        wait: Duration,
    ) -> Result<FromWorker, MachineError> {
        match answers.recv_timeout(wait) {
            Ok(FromWorker::Failed(why)) => Err(MachineError::Failed {
                machine: self.machine.name.clone(),
                why,
            }),
            Ok(answer) => Ok(answer),
            Err(RecvTimeoutError::Timeout) => Err(MachineError::Silent {
                machine: self.machine.name.clone(),
                wait,
            }),
            Err(RecvTimeoutError::Disconnected) => Err(self.why_dead()),
        }
    }

    /// What `answer` carries in the kind of answer `pick` takes out; the worker's error, or
    /// an answer of another kind, becomes an error naming the machine.
    fn carried<T>(
        &self,
        answer: FromWorker,
        pick: impl FnOnce(FromWorker) -> Result<Result<T, PartError>, FromWorker>,
    ) -> Result<T, MachineError> {
        match pick(answer) {
            Ok(carried) => carried.map_err(|source| MachineError::Refused {
                machine: self.machine.name.clone(),
                source,
            }),
            Err(other) => Err(MachineError::Unexpected {
                machine: self.machine.name.clone(),
                to: "",
                answer: Box::new(other),
            }),
        }
    }

    /// Writes `message` to the worker, without waiting for an answer.
    fn send(&self, message: &ToWorker) -> Result<(), MachineError> {
        let mut stdin = self.stdin.lock().expect("no panics holding it");
        match stdin.as_mut() {
            Some(input) => channel::send(input, message).map_err(|_| self.why_dead()),
            None => Err(self.why_dead()),
        }
    }

    /// Whether its worker has ended.
    fn dead(&self) -> bool {
        self.died.lock().expect("no panics holding it").is_some()
    }

    /// Why its worker ended, in one line: what it said, or its exit status and the last thing
    /// it (or its launcher: SSH, a shell without netloom) wrote.
    fn why_dead(&self) -> MachineError {
        let said = self.died.lock().expect("no panics holding it").clone();
        let status = {
            let mut child = self.child.lock().expect("no panics holding it");
            // The worker closed its output; it exits right after.
            (0..50)
                .find_map(|_| match child.try_wait() {
                    Ok(None) => {
                        std::thread::sleep(Duration::from_millis(10));
                        None
                    }
                    Ok(Some(status)) => Some(status.to_string()),
                    Err(e) => Some(e.to_string()),
                })
                .unwrap_or_else(|| "still running".into())
        };
        // Not forever: a process the worker started may hold its stderr open.
        let last = self.stderr.last(Duration::from_millis(500));
        let machine = self.machine.name.clone();
        match said.filter(|s| !s.is_empty()) {
            Some(why) => MachineError::Failed { machine, why },
            None => MachineError::Ended {
                machine,
                status,
                last,
            },
        }
    }

    /// NTP's exchange: the offset of this machine's wall clock, assuming the two legs of the
    /// exchange take equally long (their difference is the error, at most half the round trip).
    fn measure_clock(&self) -> Result<ClockSample, MachineError> {
        let sent_ns = channel::wall_ns();
        let answer = self.ask(&ToWorker::Time { sent_ns }, ANSWER_WAIT)?;
        let back_ns = channel::wall_ns();
        let FromWorker::Time { here_ns, .. } = answer else {
            return Err(MachineError::Unexpected {
                machine: self.machine.name.clone(),
                to: "a clock exchange ",
                answer: Box::new(answer),
            });
        };
        let middle = (i128::from(sent_ns) + i128::from(back_ns)) / 2;
        Ok(ClockSample {
            offset_ns: (i128::from(here_ns) - middle) as i64,
            round_trip_ns: back_ns.saturating_sub(sent_ns),
        })
    }

    /// Asks the worker (when alive) to stop, for its last figures.
    fn stop(&self) -> Result<Option<Box<Figures>>, MachineError> {
        match self.dead() {
            true => Err(self.why_dead()),
            false => {
                let answer = self.ask(&ToWorker::Stop, STOP_WAIT)?;
                let figures = self.carried(answer, |a| match a {
                    FromWorker::Figures(f) => Ok(f),
                    other => Err(other),
                })?;
                Ok(Some(figures))
            }
        }
    }

    /// The hand-off datagrams a stopped worker received from each worker, if it says.
    fn count(&self) -> Option<Vec<u64>> {
        match self.ask(&ToWorker::Count, ANSWER_WAIT) {
            Ok(FromWorker::Counted(received)) => Some(received),
            _ => None,
        }
    }

    /// Closes the worker's input, which ends one that has not started its part (and one that
    /// does not speak this version's protocol, so it is not asked to stop) or one that has
    /// stopped, and waits a moment for it to exit before killing it.
    fn close(&self) {
        self.stdin.lock().expect("no panics holding it").take();
        let mut child = self.child.lock().expect("no panics holding it");
        let waited = (0..100).any(|_| {
            let done = matches!(child.try_wait(), Ok(Some(_)));
            if !done {
                std::thread::sleep(Duration::from_millis(50));
            }
            done
        });
        if !waited {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Removes whatever this machine's experiment left behind (its worker died): `netloom
    /// clean --name` there, through the launcher.
    fn clean(&self) -> String {
        let out = self
            .machine
            .netloom_command(&["clean", "--name", &self.experiment])
            .stdin(Stdio::null())
            .output();
        match out {
            Ok(o) if o.status.success() => format!("cleaned machine {}", self.machine.name),
            Ok(o) => format!(
                "cleaning machine {} failed ({}): {}",
                self.machine.name,
                o.status,
                String::from_utf8_lossy(&o.stderr).trim()
            ),
            Err(e) => format!("cleaning machine {}: {e}", self.machine.name),
        }
    }
}

/// What the control socket's threads and the clock thread share.
struct Shared {
    info: RunInfo,
    remotes: Vec<Remote>,
    stop_requested: AtomicBool,
    /// Set when the run stops, to end the clock thread.
    over: AtomicBool,
    /// The run's events, for `netloom events`.
    events: Arc<Events>,
    /// The run's instant zero on this machine's wall clock (ns since 1970).
    zero_ns: u64,
    /// With `--repartition`: what it did so far.
    repartition: Option<Arc<Mutex<RepartitionReport>>>,
}

/// The machines, as a repartitioning orders them: every machine's traffic summed, and moves
/// ordered to all at once, answered once each has the others' hand-overs (which the machines'
/// workers send each other directly).
struct Machines(Arc<Shared>);

impl Workers for Machines {
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
    /// Every machine's figures, merged.
    fn stats(&self) -> Result<Report, MachineError> {
        let mut merged = Merged::default();
        for (k, remote) in self.remotes.iter().enumerate() {
            let answer = remote.ask(&ToWorker::Figures, ANSWER_WAIT)?;
            let figures = remote.carried(answer, |a| match a {
                FromWorker::Figures(f) => Ok(f),
                other => Err(other),
            })?;
            merged.add(k, *figures);
        }
        merged.report(self).ok_or(MachineError::NoMachine)
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

/// Every machine's figures, added up as they come, by machine in worker order.
#[derive(Default)]
struct Merged {
    snapshot: Option<Snapshot>,
    /// Per host.
    tun_queue_drops: Vec<u64>,
    /// Per machine (the receiver), per worker (the sender).
    lost_handoffs: Vec<Vec<u64>>,
    /// Datagrams sent, per machine (the sender), per worker (the receiver).
    sent_handoffs: Vec<Vec<u64>>,
    /// Datagrams received so far as the figures said, per machine (the receiver), per worker
    /// (the sender).
    arrived_handoffs: Vec<Vec<u64>>,
    /// Datagrams received once every machine stopped, per machine (the receiver), per worker
    /// (the sender): with `sent_handoffs`, those lost after the last one to arrive count too.
    received_handoffs: Vec<Option<Vec<u64>>>,
    /// Datagrams refused, per machine.
    refused_handoffs: Vec<crate::report::RefusedHandoffs>,
}

impl Merged {
    /// Adds the figures of worker `k`'s machine.
    fn add(&mut self, k: usize, figures: Figures) {
        if self.tun_queue_drops.len() < figures.tun_queue_drops.len() {
            self.tun_queue_drops
                .resize(figures.tun_queue_drops.len(), 0);
        }
        for (d, more) in self
            .tun_queue_drops
            .iter_mut()
            .zip(&figures.tun_queue_drops)
        {
            *d += more;
        }
        if self.lost_handoffs.len() <= k {
            self.lost_handoffs.resize(k + 1, Vec::new());
            self.sent_handoffs.resize(k + 1, Vec::new());
            self.arrived_handoffs.resize(k + 1, Vec::new());
            self.refused_handoffs.resize(k + 1, Default::default());
        }
        self.refused_handoffs[k] = figures.refused_handoffs;
        self.lost_handoffs[k] = figures.lost_handoffs;
        self.sent_handoffs[k] = figures.sent_handoffs;
        self.arrived_handoffs[k] = figures.received_handoffs;
        match &mut self.snapshot {
            Some(all) => all.merge(figures.snapshot),
            None => self.snapshot = Some(figures.snapshot),
        }
    }

    /// Adds the datagrams machine `k` received by the end.
    fn add_received(&mut self, k: usize, received: Vec<u64>) {
        if self.received_handoffs.len() <= k {
            self.received_handoffs.resize(k + 1, None);
        }
        self.received_handoffs[k] = Some(received);
    }

    /// Asks the `stopped` machines what they received (`count`) until each has every hand-off
    /// datagram the others sent it, pausing with `wait` in between, which says `false` once
    /// it is too late: what has not arrived by then is lost.
    fn await_arrivals(
        &mut self,
        stopped: &[usize],
        mut count: impl FnMut(usize) -> Option<Vec<u64>>,
        mut wait: impl FnMut() -> bool,
    ) {
        let mut waiting = stopped.to_vec();
        loop {
            waiting.retain(|&to| {
                if let Some(received) = count(to) {
                    self.add_received(to, received);
                }
                stopped
                    .iter()
                    .any(|&from| from != to && self.lost(from, to) > 0)
            });
            if waiting.is_empty() || !wait() {
                return;
            }
        }
    }

    /// Hand-off datagrams from worker `from` to worker `to` lost on their way: sent less
    /// received once both machines said, else the gaps in what arrived so far. A machine that
    /// never gave its figures (it died) has an empty row of sent counts, which says nothing: not
    /// that it sent none.
    fn lost(&self, from: usize, to: usize) -> u64 {
        let said_sent = self.sent_handoffs.get(from).is_some_and(|s| s.len() > to);
        match (said_sent, self.received_handoffs.get(to)) {
            (true, Some(Some(received))) => cell(&self.sent_handoffs, from, to)
                .saturating_sub(received.get(from).copied().unwrap_or(0)),
            _ => cell(&self.lost_handoffs, to, from),
        }
    }

    /// While the run lasts (the machines not yet counted at the stop): hand-off datagrams from
    /// worker `from` to worker `to` neither arrived nor found lost so far, on their way or
    /// lost after the last one to arrive (which the stop tells apart). Machines answer one
    /// after another, so what was sent is counted at another moment than what arrived: a
    /// figure, not an exact count.
    fn in_flight(&self, from: usize, to: usize) -> Option<u64> {
        let counted = matches!(self.received_handoffs.get(to), Some(Some(_)));
        (!counted).then(|| {
            let seen = cell(&self.arrived_handoffs, to, from) + cell(&self.lost_handoffs, to, from);
            cell(&self.sent_handoffs, from, to).saturating_sub(seen)
        })
    }

    /// The run's report, with the hand-offs lost between every two of its machines; `None`
    /// when no machine answered.
    fn report(mut self, shared: &Shared) -> Option<Report> {
        let snapshot = self.snapshot.take()?;
        let mut report = Report::new(&shared.info, snapshot, &self.tun_queue_drops);
        report.repartition = shared
            .repartition
            .as_ref()
            .map(|r| repartition::lock(r).clone());
        let names = shared.names();
        for (from, &from_name) in names.iter().enumerate() {
            for (to, &to_name) in names.iter().enumerate().filter(|&(k, _)| k != from) {
                report.lost_handoffs.push(LostHandoffs {
                    from: from_name.to_string(),
                    to: to_name.to_string(),
                    lost: self.lost(from, to),
                    in_flight: self.in_flight(from, to),
                });
            }
        }
        let lost = report.lost_handoffs.iter().map(|l| l.lost).sum();
        report.accuracy.add_lost_handoffs(lost);
        for refused in &self.refused_handoffs {
            report.refused_handoffs.add(refused);
        }
        Some(report)
    }
}

/// `table[k][of]`, 0 where it says nothing.
fn cell(table: &[Vec<u64>], k: usize, of: usize) -> u64 {
    table.get(k).and_then(|t| t.get(of)).copied().unwrap_or(0)
}

/// A run over several machines, started. Dropping it stops every machine.
pub struct ClusterRun {
    shared: Arc<Shared>,
    server: Option<Server>,
    clock_thread: Option<std::thread::JoinHandle<()>>,
    /// The run's entry in this machine's registry (no hosts of its own), so `stats`, `link`
    /// and `stop` find it by name; last, so it goes after everything else.
    registry: Option<netloom_os::Testbed>,
    warnings: Vec<String>,
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
            crate::plan::repartitioning(&topology, cluster.machines.len(), epoch)?;
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
        for remote in &remotes {
            let ready = remote
                .answers
                .lock()
                .expect("no panics holding it")
                .recv_timeout(READY_WAIT);
            let machine = remote.machine.name.clone();
            match ready {
                Ok(FromWorker::Ready) => {}
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
        self.shared.events.publish(Event::Stopped {
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
            .report(&self.shared)
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

/// When clocks are judged against the lookahead.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Moment {
    /// At the start: how well each offset is known, half the round trip of the exchange that
    /// measured it (its error at most), against the lookahead.
    Start,
    /// As last measured: how far each offset moved since the start, less both measurements'
    /// error, against the lookahead.
    Now,
}

/// One line with the numbers for each machine whose clock, at `moment`, is further from the
/// coordinator's than `lookahead_ns` allows: a hand-off leaves a pipe's delay before its exit
/// time by the sender's clock and is judged by the receiver's.
fn clock_warnings(clocks: &[MachineClock], lookahead_ns: u64, moment: Moment) -> Vec<String> {
    let ms = |ns: u64| ns as f64 / 1e6;
    let signed_ms = |ns: i64| ns as f64 / 1e6;
    clocks
        .iter()
        .filter_map(|c| {
            let (start, last) = (c.start, c.last);
            match moment {
                Moment::Start => {
                    let error = start.round_trip_ns / 2;
                    (error > lookahead_ns).then(|| format!(
                        "machine {}'s clock is known to within {:.3} ms only (half the least round trip of the clock exchanges with it), more than the least delay of a pipe between machines ({:.3} ms): hand-offs may arrive late by as much; give those pipes more delay or reach the machine by a quicker way",
                        c.machine, ms(error), ms(lookahead_ns)
                    ))
                }
                Moment::Now => {
                    let moved = last.offset_ns.abs_diff(start.offset_ns);
                    let error = start.round_trip_ns / 2 + last.round_trip_ns / 2;
                    (moved.saturating_sub(error) > lookahead_ns).then(|| format!(
                        "machine {}'s clock moved {:.3} ms against the coordinator's during the run (offset {:+.3} ms at the start, {:+.3} ms at the end, each within {:.3} ms), more than the least delay of a pipe between machines ({:.3} ms): hand-offs to and from it were late by as much; keep the machines' clocks synchronised (chrony, PTP)",
                        c.machine, ms(moved), signed_ms(start.offset_ns), signed_ms(last.offset_ns), ms(error), ms(lookahead_ns)
                    ))
                }
            }
        })
        .collect()
}

/// Why the pipes could not be split between the machines.
#[derive(Debug, thiserror::Error)]
pub enum SplitError {
    /// The cluster file places a node that the topology does not have, or not every node.
    #[error(transparent)]
    Placement(#[from] ClusterError),
    /// The topology is too large to partition, or METIS failed.
    #[error(transparent)]
    Partition(#[from] PartitionError),
    /// The routes the flow graph needs are too large to compute.
    #[error(transparent)]
    Routes(#[from] TablesTooLarge),
}

/// Which machine owns each pipe: by the file's placement (a pipe is its sending node's
/// machine's), or METIS with each machine's CPUs as its share, over `weighed` (`sim`: the
/// traffic it runs) or, without one, the static flow graph (a live run does not know its
/// traffic).
pub fn split(
    cluster: &Cluster,
    topology: &Topology,
    cpus: &[u32],
    seed: u64,
    weighed: Option<&FlowGraph>,
) -> Result<Assignment, SplitError> {
    let machines = cluster.machines.len() as u32;
    let pipes = if cluster.placed() {
        let owner = cluster.node_machines(topology)?;
        let mut pipes = vec![0; topology.pipes.len()];
        for link in &topology.links {
            pipes[link.ab as usize] = owner[link.a as usize];
            if link.ba != link.ab {
                pipes[link.ba as usize] = owner[link.b as usize];
            }
        }
        pipes
    } else {
        let conservative;
        let graph = match weighed {
            Some(graph) => graph,
            None => {
                FlowGraph::check_size(topology, true)?;
                let routes = netloom_route::Routes::try_compute(topology)?;
                conservative = FlowGraph::conservative(topology, &routes);
                &conservative
            }
        };
        let opts = netloom_partition::Options::new(Method::Metis, machines, seed);
        let shares: Vec<f64> = cpus.iter().map(|&c| f64::from(c)).collect();
        partition_shares(graph, &opts, &shares)?.pipes
    };
    Ok(Assignment {
        cores: machines,
        pipes,
        topology: None,
        method: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clock(start: (i64, u64), last: (i64, u64)) -> MachineClock {
        let sample = |(offset_ns, round_trip_ns)| ClockSample {
            offset_ns,
            round_trip_ns,
        };
        MachineClock {
            machine: "m2".into(),
            start: sample(start),
            last: sample(last),
        }
    }

    #[test]
    fn clocks_known_less_well_than_the_lookahead_are_warned_about_with_the_numbers() {
        // Offset known to 0.05 ms (a 0.1 ms round trip): fine at 1 ms, not at 0.01 ms.
        let clocks = [clock((3_000_000, 100_000), (3_000_000, 100_000))];
        assert!(clock_warnings(&clocks, 1_000_000, Moment::Start).is_empty());
        let warned = clock_warnings(&clocks, 10_000, Moment::Start);
        assert_eq!(warned.len(), 1);
        assert!(
            warned[0].starts_with("machine m2's clock is known to within 0.050 ms only")
                && warned[0].contains("(0.010 ms)"),
            "{}",
            warned[0]
        );
        // A large offset alone is no fault: each worker's clock is set with it.
        let far = [clock((-9_000_000_000, 100_000), (-9_000_000_000, 100_000))];
        assert!(clock_warnings(&far, 1_000_000, Moment::Now).is_empty());
    }

    #[test]
    fn a_clock_that_drifted_more_than_the_lookahead_is_warned_about_with_the_numbers() {
        // Moved 2 ms, measured within 0.1 ms each time: more than a 1 ms lookahead.
        let drifted = [clock((500_000, 200_000), (2_500_000, 200_000))];
        let warned = clock_warnings(&drifted, 1_000_000, Moment::Now);
        assert_eq!(warned.len(), 1);
        assert!(
            warned[0].starts_with("machine m2's clock moved 2.000 ms against the coordinator's during the run (offset +0.500 ms at the start, +2.500 ms at the end, each within 0.200 ms)"),
            "{}",
            warned[0]
        );
        // Not when the lookahead covers it, nor when the measurements' error could explain it.
        assert!(clock_warnings(&drifted, 2_000_000, Moment::Now).is_empty());
        let unsure = [clock((0, 3_000_000), (2_000_000, 3_000_000))];
        assert!(clock_warnings(&unsure, 1_000_000, Moment::Now).is_empty());
    }

    /// Gives its bytes only after a pause, as a pipe whose writer exited a moment ago.
    struct Late(&'static [u8]);

    impl std::io::Read for Late {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            std::thread::sleep(Duration::from_millis(100));
            let n = self.0.len().min(buf.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    #[test]
    fn a_workers_last_words_are_waited_for_until_its_stderr_ends() {
        let tail = Arc::new(StderrTail::default());
        let reader = tail.clone();
        std::thread::spawn(move || {
            reader.read(Late(b"first\nsh: 1: /nonexistent/netloom: not found\n"))
        });
        assert_eq!(
            tail.last(Duration::from_secs(10)).as_deref(),
            Some("sh: 1: /nonexistent/netloom: not found")
        );
        // A stream that does not end is waited for no longer than asked.
        let open = StderrTail::default();
        let start = std::time::Instant::now();
        assert_eq!(open.last(Duration::from_millis(50)), None);
        assert!(start.elapsed() >= Duration::from_millis(50));
    }

    /// Without placed nodes, METIS splits the pipes with the machines' CPUs as shares: over the
    /// graph given (`sim`: the traffic it runs), else over the static weights (`run`).
    #[test]
    fn an_unplaced_cluster_splits_by_the_graph_given_else_by_the_static_weights() {
        let cluster = Cluster::parse(
            "[[machine]]\nname = \"m1\"\naddress = \"10.0.0.1\"\n\n\
             [[machine]]\nname = \"m2\"\naddress = \"10.0.0.2\"\n",
            "c.toml",
        )
        .unwrap();
        let topo = netloom_topo::load_str(
            include_str!("../../../../examples/dumbbell.toml"),
            netloom_topo::Format::Toml,
            "dumbbell.toml",
        )
        .unwrap();
        let cpus = [3, 1];
        let metis = |graph: &FlowGraph| {
            let opts = netloom_partition::Options::new(Method::Metis, 2, 7);
            partition_shares(graph, &opts, &[3.0, 1.0]).unwrap().pipes
        };
        let uniform = FlowGraph::uniform(&topo);
        let routes = netloom_route::Routes::try_compute(&topo).unwrap();
        let by_static = metis(&FlowGraph::conservative(&topo, &routes));
        let given = split(&cluster, &topo, &cpus, 7, Some(&uniform)).unwrap();
        assert_eq!(given.pipes, metis(&uniform));
        assert_ne!(
            given.pipes, by_static,
            "the two weightings split the dumbbell otherwise"
        );
        assert_eq!(
            split(&cluster, &topo, &cpus, 7, None).unwrap().pipes,
            by_static
        );
    }

    #[test]
    fn the_wait_for_hand_offs_on_their_way_ends_once_all_arrived_or_when_too_late() {
        // Worker 0 sent machine 1 ten datagrams, worker 1 sent machine 0 four.
        let sent = || Merged {
            sent_handoffs: vec![vec![0, 10], vec![4, 0]],
            lost_handoffs: vec![vec![0, 0], vec![0, 0]],
            ..Merged::default()
        };
        // Machine 1 has 8, then all 10, at its second count: two rounds of counts, one pause.
        let mut merged = sent();
        let (mut asked, mut waits) = (vec![0, 0], 0);
        let machine_1_has = [8, 10];
        merged.await_arrivals(
            &[0, 1],
            |k| {
                asked[k] += 1;
                Some(match k {
                    0 => vec![0, 4],
                    _ => vec![machine_1_has[asked[1] - 1], 0],
                })
            },
            || {
                waits += 1;
                true
            },
        );
        assert_eq!((asked, waits), (vec![1, 2], 1), "machine 0 had all at once");
        assert_eq!((merged.lost(0, 1), merged.lost(1, 0)), (0, 0));
        // Two never arrive: asked until the wait says it is too late, then lost.
        let mut merged = sent();
        let mut waits = 0;
        merged.await_arrivals(
            &[0, 1],
            |k| Some(if k == 0 { vec![0, 4] } else { vec![8, 0] }),
            || {
                waits += 1;
                waits < 5
            },
        );
        assert_eq!((waits, merged.lost(0, 1)), (5, 2));
    }

    #[test]
    fn hand_offs_lost_are_sent_less_received_once_counted_else_the_gaps() {
        let mut merged = Merged {
            // Machine 1 saw a gap of 2 in what worker 0 sent it; worker 0 sent it 10.
            lost_handoffs: vec![vec![0, 0], vec![2, 0]],
            sent_handoffs: vec![vec![0, 10], vec![4, 0]],
            ..Merged::default()
        };
        assert_eq!(merged.lost(0, 1), 2, "while the run lasts: the gaps");
        // Machine 1 said it had 5 from worker 0 so far: 3 of the 10 neither arrived nor lost.
        merged.arrived_handoffs = vec![vec![0, 4], vec![5, 0]];
        assert_eq!(
            (merged.in_flight(0, 1), merged.in_flight(1, 0)),
            (Some(3), Some(0))
        );
        // At the end machine 1 received 7 of the 10: 3 lost, one after the last arrival.
        merged.add_received(0, vec![0, 4]);
        merged.add_received(1, vec![7, 0]);
        assert_eq!(merged.lost(0, 1), 3);
        assert_eq!(merged.lost(1, 0), 0);
        assert_eq!(
            merged.in_flight(0, 1),
            None,
            "at the end, none is on its way"
        );
        // Machine 0 died before giving its figures: what machine 1 found missing still counts.
        // (`add` leaves its rows empty.)
        let mut merged = Merged {
            lost_handoffs: vec![vec![], vec![2, 0]],
            sent_handoffs: vec![vec![], vec![4, 0]],
            ..Merged::default()
        };
        merged.add_received(1, vec![7, 0]);
        assert_eq!(
            merged.lost(0, 1),
            2,
            "the gaps, not sent (unknown) less received"
        );
    }
}
