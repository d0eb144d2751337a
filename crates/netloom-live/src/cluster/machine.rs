//! `netloom worker`: one machine's side of a run over several machines. Started by the
//! coordinator through the machine's launcher (SSH), it says which netloom it is, answers clock
//! exchanges, brings up its part when told (its hosts, its worker, the hand-off socket, and in
//! a run that repartitions the connections to the other workers for transfers), answers
//! for its part while the run lasts (forwarding its accuracy alarms), and stops, tears down and
//! sends its last figures when told or when the coordinator goes, then the hand-offs it
//! received once every machine stopped. Its worker failing, or a signal, stops it and is told.

use super::channel::{self, Figures, FromWorker, PartError, Start, ToWorker};
use super::handoff::{self, Receiver, Sender};
use super::links::{Links, LinksError, Readers};
use crate::clock::SystemClock;
use crate::error::LiveError;
use crate::mailbox::{Message, Outbound, Post};
use crate::run::ending::Ending;
use crate::run::event::Event;
use crate::run::experiment::{Experiment, Part};
use crate::run::plan::{Options, Plan, PlanError, Split};
use crate::run::repartition::Movable;
use crate::wait::{Hybrid, Precision};
use netloom_engine::{Ownership, Payload};
use netloom_partition::Assignment;
use netloom_time::Instant;
use netloom_topo::{TopoError, Topology};
use std::io::{BufRead, Write};
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long the worker waits for a message before it looks at its run again.
const LOOK: Duration = Duration::from_millis(20);
/// Probes sent to each other machine, how far apart, and how long their echoes may take.
const PROBES: usize = 5;
const PROBE_GAP: Duration = Duration::from_millis(10);
const PROBE_WAIT: Duration = Duration::from_millis(200);
/// How long a look at the run takes at most.
const GLANCE: Duration = Duration::from_millis(1);

/// The channel's writing end, shared by the thread that answers clock exchanges at once (a
/// late answer would make the offset wrong by half its delay) and the worker's loop.
type Output = Arc<Mutex<dyn Write + Send>>;

/// Serves the coordinator on `input` and `output` until it says stop or goes away. `signal`
/// is set by SIGINT or SIGTERM. Errors are only those of the channel itself: everything else
/// is told to the coordinator.
pub fn serve(
    input: impl BufRead + Send + 'static,
    output: impl Write + Send + 'static,
    signal: &'static AtomicBool,
) -> std::io::Result<()> {
    let output: Output = Arc::new(Mutex::new(output));
    let wall = Wall::from_env();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
    let hello = FromWorker::Hello {
        version: env!("CARGO_PKG_VERSION").to_string(),
        cpus,
    };
    say(&output, &hello)?;
    let (tx, rx) = mpsc::channel();
    // Reads on its own thread, so the run is watched while no line comes, and answers clock
    // exchanges there; ends with the input.
    let answers = output.clone();
    std::thread::Builder::new()
        .name("netloom-control".into())
        .spawn(move || {
            let mut input = input;
            loop {
                let Ok(Some(message)) = channel::receive::<ToWorker>(&mut input) else {
                    return;
                };
                let sent = match message {
                    ToWorker::Time { sent_ns } => {
                        let here_ns = wall.ns();
                        say(&answers, &FromWorker::Time { sent_ns, here_ns }).is_ok()
                    }
                    other => tx.send(other).is_ok(),
                };
                if !sent {
                    return;
                }
            }
        })?;
    // Before the start: clock exchanges, then the start (or the end).
    let Running {
        experiment,
        here,
        receiver,
        senders,
        socket,
        peers,
        key,
        topology,
        transfers: _transfers,
    } = loop {
        match rx.recv() {
            Ok(ToWorker::Start(start)) => match start_part(*start, wall) {
                Ok(running) => {
                    let priority = running.experiment.info().priority.clone();
                    say(&output, &FromWorker::Ready { priority })?;
                    forward_alarms(&running.experiment, output.clone())?;
                    break running;
                }
                Err(e) => return say(&output, &FromWorker::Failed(e.to_string())),
            },
            Ok(ToWorker::Stop) => {
                let nothing = FromWorker::Figures(Err(PartError::NotStarted));
                return say(&output, &nothing);
            }
            Ok(_) => continue,
            Err(_) => return Ok(()),
        }
    };
    loop {
        let ending = experiment.wait(signal, Some(std::time::Instant::now() + GLANCE));
        if ending != Ending::Deadline {
            let why = match &ending {
                Ending::WorkerFailed => "its worker failed".to_string(),
                other => format!("it was stopped ({})", other.name()),
            };
            let error = match experiment.stop_part(&ending) {
                Err(e) => e.to_string(),
                Ok(_) => why,
            };
            return say(&output, &FromWorker::Failed(error));
        }
        let message = match rx.recv_timeout(LOOK) {
            Ok(m) => m,
            Err(RecvTimeoutError::Timeout) => continue,
            // The coordinator is gone: nobody wants the figures.
            Err(RecvTimeoutError::Disconnected) => {
                let _ = experiment.stop_part(&Ending::Requested);
                return Ok(());
            }
        };
        match message {
            ToWorker::Figures => {
                let part = experiment.part_figures();
                let hosts = experiment.info().hosts.len();
                let figures = spread(part, &here, hosts, (&receiver, &senders));
                say(&output, &FromWorker::Figures(figures))?;
            }
            ToWorker::Probe => {
                let me = socket.local_addr()?;
                let others: Vec<_> = peers.iter().copied().filter(|&p| p != me).collect();
                handoff::send_probes(&socket, &key, &others, PROBES, PROBE_GAP);
                std::thread::sleep(PROBE_WAIT);
                let receiver = receiver.lock().expect("nothing panics holding it");
                let trips = receiver
                    .as_ref()
                    .map(|r| {
                        r.round_trips
                            .lock()
                            .expect("nothing panics holding it")
                            .clone()
                    })
                    .unwrap_or_default();
                let probed = peers.iter().map(|p| trips.get(p).copied()).collect();
                say(&output, &FromWorker::Probed(probed))?;
            }
            ToWorker::Request(request) => {
                let answer = experiment.answer(request);
                say(&output, &FromWorker::Answer(answer))?;
            }
            ToWorker::Traffic => {
                let traffic = Movable::traffic(experiment.part_workers())
                    .map(Box::new)
                    .map_err(PartError::from);
                say(&output, &FromWorker::Traffic(traffic))?;
            }
            ToWorker::Move { assignment, at_ns } => {
                // Answered once the other machines' transfers are in, which come to the
                // worker on its connections from them meanwhile.
                let next = topology
                    .as_ref()
                    .ok_or(PartError::NotRepartitioned)
                    .and_then(|topology| {
                        Ownership::live(topology, &assignment, peers.len(), Payload::Ship)
                            .map(Arc::new)
                            .map_err(PartError::from)
                    });
                let workers = experiment.part_workers().clone();
                let output = output.clone();
                std::thread::spawn(move || {
                    let moved = next.and_then(|next| {
                        Movable::repartition(&workers, next, Instant::from_nanos(at_ns))
                            .map_err(PartError::from)
                    });
                    let _ = say(&output, &FromWorker::Moved(moved.map(Box::new)));
                });
            }
            ToWorker::Stop => {
                let hosts = experiment.info().hosts.len();
                let part = experiment.stop_part(&Ending::Requested);
                let last = spread(part, &here, hosts, (&receiver, &senders));
                say(&output, &FromWorker::Figures(last))?;
                // The receiver still counts what arrives while the other machines stop, and
                // says so as often as asked, until the coordinator closes the channel.
                loop {
                    match rx.recv() {
                        Ok(ToWorker::Count) => {
                            say(&output, &FromWorker::Counted(received(&receiver)))?
                        }
                        Ok(_) => continue,
                        Err(_) => return Ok(()),
                    }
                }
            }
            ToWorker::Start(_) | ToWorker::Time { .. } | ToWorker::Count => continue,
        }
    }
}

/// The hand-off datagrams `receiver` took from each worker so far, by worker.
fn received(receiver: &Mutex<Option<Receiver>>) -> Vec<u64> {
    arrivals(receiver, netloom_wire::Arrivals::received)
}

/// `figure` of what `receiver` took from each worker so far, by worker.
fn arrivals(
    receiver: &Mutex<Option<Receiver>>,
    figure: fn(&netloom_wire::Arrivals) -> u64,
) -> Vec<u64> {
    receiver
        .lock()
        .expect("nothing panics holding it")
        .as_ref()
        .map(|r| {
            let arrived = r.arrived.lock().expect("nothing panics holding it");
            arrived.iter().map(figure).collect()
        })
        .unwrap_or_default()
}

/// Tells the coordinator every accuracy alarm `experiment` raises, from a thread that ends
/// with the experiment.
fn forward_alarms(experiment: &Experiment, output: Output) -> std::io::Result<()> {
    let subscription = experiment.subscribe();
    std::thread::Builder::new()
        .name("netloom-alarms".into())
        .spawn(move || {
            for event in subscription.events() {
                if matches!(event, Event::AccuracyAlarm { .. })
                    && say(&output, &FromWorker::Alarm(event)).is_err()
                {
                    return;
                }
            }
        })
        .map(drop)
}

fn say(output: &Output, message: &FromWorker) -> std::io::Result<()> {
    let mut output = output.lock().expect("nothing panics holding it");
    channel::send(&mut *output, message)
}

/// This machine's figures, during the run or at its stop, from its part's (`part`: its
/// snapshot and its hosts' TUN-queue drops, of the hosts `here`): the drops at their places
/// among all `hosts`, the hand-offs from each worker that `receiver` took and found lost, and
/// those `senders` sent to each worker; or why not.
fn spread(
    part: Result<(crate::Snapshot, Vec<u64>), crate::LiveError>,
    here: &[u32],
    hosts: usize,
    (receiver, senders): (&Mutex<Option<Receiver>>, &[Arc<Sender>]),
) -> Result<Box<Figures>, PartError> {
    let (snapshot, drops) = part?;
    let mut tun_queue_drops = vec![0; hosts];
    for (&h, &d) in here.iter().zip(&drops) {
        tun_queue_drops[h as usize] = d;
    }
    Ok(Box::new(Figures {
        snapshot,
        tun_queue_drops,
        lost_handoffs: arrivals(receiver, netloom_wire::Arrivals::lost),
        sent_handoffs: senders.iter().map(|s| s.sent()).collect(),
        received_handoffs: received(receiver),
        refused_handoffs: receiver
            .lock()
            .expect("nothing panics holding it")
            .as_ref()
            .map(|r| *r.refused.lock().expect("nothing panics holding it"))
            .unwrap_or_default(),
    }))
}

/// Sends what this machine's worker posts to another machine's: hand-offs as GENEVE datagrams,
/// a move's transfer on the connection to it (in a run that repartitions).
struct Peer {
    handoffs: Arc<Sender>,
    to: u16,
    transfers: Option<Arc<Links>>,
    /// The run's clock, to stamp a transfer as it is sent.
    clock: SystemClock,
}

impl Outbound for Peer {
    fn send(&self, message: Message) -> bool {
        match message {
            Message::Transfer(transfer) => self
                .transfers
                .as_ref()
                .is_some_and(|links| links.send(self.to, *transfer, &self.clock)),
            other => self.handoffs.send(other),
        }
    }
}

/// This machine's part, running.
struct Running {
    experiment: Experiment,
    /// Its hosts (indices among all hosts).
    here: Vec<u32>,
    /// The thread taking hand-offs, stopped when dropped (after the experiment stopped).
    receiver: Arc<Mutex<Option<Receiver>>>,
    /// What sends hand-offs to each worker (itself included, which it never sends to).
    senders: Vec<Arc<Sender>>,
    /// The hand-off socket, and every worker's.
    socket: Arc<UdpSocket>,
    peers: Vec<std::net::SocketAddr>,
    /// The run's secret, which seals the probes.
    key: netloom_wire::Key,
    /// The topology as loaded, for the ownerships of moves: only in a run that repartitions
    /// (a copy of a large topology costs memory and start-up time for nothing otherwise).
    topology: Option<Topology>,
    /// The threads reading the other workers' transfers (a run that repartitions), stopped
    /// when dropped (after the experiment stopped).
    transfers: Arc<Mutex<Option<Readers>>>,
}

/// The variable that makes a worker's wall clock drift, for tests only.
const DRIFT: &str = "NETLOOM_TEST_CLOCK_DRIFT_PPM";

/// This machine's wall clock as its worker tells it (ns since 1970). Machines as namespaces
/// share one kernel's clock, so a test of the check of clocks that moved apart during a run
/// sets `NETLOOM_TEST_CLOCK_DRIFT_PPM` in one worker's environment (its launcher): its clock
/// then runs fast by that many parts per million from the worker's start, as a machine's
/// clock that is not kept synchronised does (docs/cluster.md).
#[derive(Clone, Copy)]
struct Wall {
    start: std::time::Instant,
    drift_ppm: i64,
}

impl Wall {
    fn from_env() -> Wall {
        let drift = std::env::var(DRIFT).ok().and_then(|v| v.parse().ok());
        Wall {
            start: std::time::Instant::now(),
            drift_ppm: drift.unwrap_or(0),
        }
    }

    fn ns(&self) -> u64 {
        let drifted = self.start.elapsed().as_nanos() as i128 * i128::from(self.drift_ppm);
        (i128::from(channel::wall_ns()) + drifted / 1_000_000) as u64
    }
}

/// Why this machine's part could not be brought up.
#[derive(Debug, thiserror::Error)]
enum StartError {
    /// The topology sent does not load.
    #[error(transparent)]
    Topology(#[from] TopoError),
    /// The plan every machine computes does not fit.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// The hand-off socket could not be bound.
    #[error("taking hand-offs at {address}: {source}")]
    Handoffs {
        /// Its address.
        address: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The connections for transfers could not be made.
    #[error(transparent)]
    Links(#[from] LinksError),
    /// The part's experiment did not start.
    #[error(transparent)]
    Live(#[from] LiveError),
    /// The run's secret did not arrive whole.
    #[error(transparent)]
    Key(#[from] netloom_wire::BadKey),
}

/// Brings this machine's part up: the plan as every machine computes it from the same
/// topology and assignment, the hand-off socket, the connections to and from every other
/// worker for transfers when the run repartitions, the clock at the run's zero (by `wall`).
fn start_part(start: Start, wall: Wall) -> Result<Running, StartError> {
    let topology = start.topology.load()?;
    let precision = match start.precision.as_str() {
        "busy" => Precision::Busy,
        "sleep" => Precision::Sleep,
        _ => Precision::Hybrid(Hybrid::default()),
    };
    let workers = start.peers.len();
    let options = Options {
        workers,
        split: Some(Split::Assignment(Assignment {
            cores: workers as u32,
            pipes: start.assignment.clone(),
            topology: None,
            method: None,
        })),
        payload: Payload::Ship,
        precision,
        thresholds: crate::Thresholds {
            late: Duration::from_nanos(start.late_ns),
            max_late_fraction: start.max_late_fraction,
        },
        seed: start.seed,
        mtu: start.mtu,
        gso: start.gso,
        congestion_control: start.congestion_control.clone(),
        realtime: start.realtime,
        allow_spoofing: start.allow_spoofing,
        repartition: start.repartition_ns.map(netloom_time::Duration::from_nanos),
        ..Options::new(start.name.clone())
    };
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let plan = Plan::new(topology, options, cpus)?;
    let me = start.worker;
    let address = start.peers[me];
    let socket = UdpSocket::bind(address)
        .map(Arc::new)
        .map_err(|source| StartError::Handoffs { address, source })?;
    let vni = handoff::vni(&start.run);
    let key = netloom_wire::Key::from_hex(&start.key)?;
    let senders: Vec<Arc<Sender>> = start
        .peers
        .iter()
        .enumerate()
        .map(|(k, &to)| {
            Arc::new(Sender::new(
                socket.clone(),
                (vni, key),
                me as u16,
                k as u16,
                to,
            ))
        })
        .collect();
    let links = match start.repartition_ns {
        Some(_) => Some(Arc::new(Links::open(me, &start.peers, (vni, key))?)),
        None => None,
    };
    // The run's zero on this machine's monotonic clock: the coordinator's wall-clock zero,
    // moved by the offset between the two wall clocks.
    let coordinator_now = wall.ns() as i128 - i128::from(start.offset_ns);
    let since_zero = (coordinator_now - i128::from(start.zero_ns)).max(0) as u64;
    let now = std::time::Instant::now();
    let zero = now
        .checked_sub(Duration::from_nanos(since_zero))
        .unwrap_or(now);
    let clock = SystemClock::since(zero);
    let remote = senders
        .iter()
        .enumerate()
        .map(|(k, handoffs)| {
            Arc::new(Peer {
                handoffs: handoffs.clone(),
                to: k as u16,
                transfers: links.clone(),
                clock,
            }) as Arc<dyn Outbound>
        })
        .collect();
    let receiver = Arc::new(Mutex::new(None));
    let transfers = Arc::new(Mutex::new(None));
    let realtime = start.realtime;
    let topo = plan.topology();
    let gate = handoff::Gate {
        vni,
        key,
        me: me as u16,
        peers: start.peers.clone(),
        // A live run has no synthetic flows; each machine runs one worker.
        bounds: netloom_engine::HandoffBounds {
            pipes: topo.pipes.len() as u32,
            nodes: topo.nodes.len() as u32,
            hosts: topo.hosts.len() as u32,
            flows: 0,
            workers: start.peers.len() as u16,
        },
    };
    let inbound = {
        let receiver = receiver.clone();
        let transfers = transfers.clone();
        let socket = socket.clone();
        Box::new(move |post: Post| {
            let r = Receiver::start(socket, gate, post.clone(), realtime)?;
            // Transfer frames refused count with the datagrams refused (the same figures).
            let refused = r.refused.clone();
            *receiver.lock().expect("nothing panics holding it") = Some(r);
            if let Some(links) = &links {
                let readers = links.start_reading(post, clock, realtime, refused)?;
                *transfers.lock().expect("nothing panics holding it") = Some(readers);
            }
            Ok(())
        })
    };
    let part = Part {
        worker: me,
        clock,
        remote,
        inbound,
    };
    let here = plan.hosts[me].clone();
    let topology = start.repartition_ns.map(|_| plan.topology().clone());
    let experiment = Experiment::start_part(plan, part)?;
    Ok(Running {
        experiment,
        here,
        receiver,
        senders,
        socket,
        peers: start.peers,
        key,
        topology,
        transfers,
    })
}
