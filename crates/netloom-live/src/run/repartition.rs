//! Dynamic repartitioning of a live run (ModelNet §5.4, `run --workers N --repartition EPOCH`):
//! every epoch the experiment gathers each worker's traffic, makes the next partition from it
//! with the code `sim --repartition` uses (`netloom_partition::Repartitioning`: METIS on the
//! observed counts, parts matched to workers by overlap), and orders a move at an instant a
//! little ahead. Each worker processes everything before that instant, hands over what changes
//! owner (`Transfer`: pipes, pending exits, hosts with their rations) to every other worker,
//! and goes on once it has every other worker's transfer (docs/live.md, "Dynamic
//! repartitioning").

use crate::clock::Clock;
use crate::moved::{EpochReport, MoveReport, Moved, RepartitionReport, MOVE_AHEAD};
use crate::run::control::{ControlError, Controller};
use crate::traffic::Traffic;
use netloom_engine::epoch::EpochCounter;
use netloom_engine::Ownership;
use netloom_partition::{Assignment, Observation, Repartitioning};
use netloom_time::{Duration, Instant};
use netloom_topo::{PipeId, Topology};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// The workers a repartitioning observes and moves: threads of this process (`Controller`),
/// or machines (the cluster's coordinator).
pub(crate) trait Movable: Send + 'static {
    /// Why they did not answer.
    type Error: std::error::Error + Send + Sync + 'static;
    /// The run's clock.
    fn now(&self) -> Instant;
    /// Every worker's traffic since the last look, summed.
    fn traffic(&self) -> Result<Traffic, Self::Error>;
    /// Moves every worker to `next` at `at`; what moved, summed.
    fn repartition(&self, next: Arc<Ownership>, at: Instant) -> Result<Moved, Self::Error>;
}

impl<C: Clock> Movable for Controller<C> {
    type Error = ControlError;

    fn now(&self) -> Instant {
        self.clock().now()
    }

    fn traffic(&self) -> Result<Traffic, ControlError> {
        Controller::traffic(self).wait(crate::run::control::ANSWER_TIMEOUT)
    }

    fn repartition(&self, next: Arc<Ownership>, at: Instant) -> Result<Moved, ControlError> {
        Controller::repartition(self, next, at).wait(crate::run::control::ANSWER_TIMEOUT)
    }
}

/// How a repartitioned run moves: how far ahead of the order a move is set, and whether hosts
/// (with their pipes) stay with their worker, as they must on machines, where a host's TUN
/// device is.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Moving {
    pub ahead: Duration,
    pub hosts_stay: bool,
}

impl Moving {
    /// Threads of one process: a move set `MOVE_AHEAD`, hosts moving with their pipes.
    pub const THREADS: Moving = Moving {
        ahead: MOVE_AHEAD,
        hosts_stay: false,
    };
}

/// The thread that repartitions a run every epoch.
pub(crate) struct Repartitioner {
    stop: Sender<()>,
    thread: Option<JoinHandle<()>>,
}

impl Repartitioner {
    /// Starts repartitioning every `epoch` the workers `controller` orders, which run
    /// `topology` (as their engines have it) under `ownership`, made from `initial`; each new
    /// partition is made with `options` (method, seed, imbalance). What it does goes into
    /// `report` as it goes.
    pub fn start(
        workers: impl Movable,
        topology: Topology,
        (initial, ownership): (Assignment, Arc<Ownership>),
        (options, moving): (netloom_partition::Options, Moving),
        epoch: Duration,
        report: Arc<Mutex<RepartitionReport>>,
    ) -> std::io::Result<Repartitioner> {
        let (stop, stopped) = mpsc::channel();
        lock(&report).epoch_ns = epoch.as_nanos();
        let shared = report;
        let thread = std::thread::Builder::new()
            .name("netloom-repartition".into())
            .spawn(move || {
                let mut run = Epochs::new(&workers, topology, initial, ownership, options, moving);
                let mut since = workers.now();
                loop {
                    let end = since + epoch;
                    let left = end.saturating_since(workers.now());
                    match stopped.recv_timeout(std::time::Duration::from_nanos(left.as_nanos())) {
                        Err(RecvTimeoutError::Timeout) => {}
                        _ => return,
                    }
                    if let Err(e) = run.close(since, &shared) {
                        lock(&shared).stopped = Some(e.to_string());
                        return;
                    }
                    since = end;
                }
            })?;
        Ok(Repartitioner {
            stop,
            thread: Some(thread),
        })
    }

    /// Stops repartitioning; a move under way finishes first.
    pub fn stop(&mut self) {
        let _ = self.stop.send(());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Repartitioner {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A mutex's contents; the repartitioning thread never panics holding one.
pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Why an epoch could not be closed.
#[derive(Debug, thiserror::Error)]
enum EpochError {
    #[error("the workers did not answer: {0}")]
    Movable(#[source] Box<dyn std::error::Error + Send + Sync>),
    #[error("partitioning the observed traffic: {0}")]
    Partition(#[from] netloom_partition::PartitionError),
    #[error("the new partition does not fit: {0}")]
    Ownership(#[from] netloom_engine::OwnershipError),
}

/// The coordinator's state from one epoch to the next.
struct Epochs<'c, W: Movable> {
    workers: &'c W,
    moving: Moving,
    topology: Topology,
    counter: EpochCounter,
    dynamic: Repartitioning,
    current: Arc<Ownership>,
    /// Whether the epoch being counted started with a move.
    moved: bool,
}

impl<'c, W: Movable> Epochs<'c, W> {
    fn new(
        workers: &'c W,
        topology: Topology,
        initial: Assignment,
        current: Arc<Ownership>,
        options: netloom_partition::Options,
        moving: Moving,
    ) -> Epochs<'c, W> {
        // The first partition as it runs: a host's pipes with their host.
        let running = Assignment {
            pipes: current.assignment(),
            ..initial
        };
        Epochs {
            workers,
            moving,
            topology,
            counter: EpochCounter::default(),
            dynamic: Repartitioning::new(running, options),
            current,
            moved: false,
        }
    }

    /// Closes the epoch that started at `start`: gathers the workers' traffic, records the
    /// epoch, and moves to the partition its traffic asks for, if that differs.
    fn close(
        &mut self,
        start: Instant,
        report: &Mutex<RepartitionReport>,
    ) -> Result<(), EpochError> {
        let traffic = self
            .workers
            .traffic()
            .map_err(|e| EpochError::Movable(e.into()))?;
        let end = self.workers.now();
        let counts = self
            .counter
            .close_totals(traffic.packets, traffic.transitions, start, end);
        let observed = Observation {
            topology: self.topology.name.clone(),
            packets: counts.packets,
            transitions: counts.transitions,
        };
        let epoch = self.dynamic.epoch(&self.topology, &observed)?;
        lock(report).epochs.push(EpochReport {
            start_ns: start.as_nanos(),
            end_ns: end.as_nanos(),
            efficiency: epoch.dynamic_efficiency,
            static_efficiency: epoch.static_efficiency,
            moved: std::mem::take(&mut self.moved),
            releases: traffic.lateness_ns.len(),
            lateness_p99_ns: traffic.lateness_ns.value_at_quantile(0.99),
        });
        let mut pipes = self.dynamic.current().pipes.clone();
        if self.moving.hosts_stay {
            // A host's pipes stay with it on its machine.
            let adjacency = self.topology.adjacency();
            for (h, &node) in self.topology.hosts.iter().enumerate() {
                let owner = u32::from(self.current.host_owner(h as u32));
                for &(p, _) in &adjacency[node as usize] {
                    pipes[p as usize] = owner;
                }
            }
        }
        let next = Ownership::live(
            &self.topology,
            &pipes,
            self.current.workers(),
            self.current.payload(),
        )?;
        // What runs: a host's pipes stay with their host.
        self.dynamic.set_current(next.assignment());
        if next.assignment() == self.current.assignment() {
            return Ok(());
        }
        let next = Arc::new(next);
        let at = self.workers.now() + self.moving.ahead;
        let mut moved = self
            .workers
            .repartition(next.clone(), at)
            .map_err(|e| EpochError::Movable(e.into()))?;
        let (pipes, hosts) = (self.topology.pipes.len(), self.topology.hosts.len());
        moved.pipes = (0..pipes as PipeId)
            .filter(|&p| next.pipe_owner(p) != self.current.pipe_owner(p))
            .count() as u64;
        moved.hosts = (0..hosts as u32)
            .filter(|&h| next.host_owner(h) != self.current.host_owner(h))
            .count() as u64;
        self.current = next;
        self.moved = true;
        let mut r = lock(report);
        r.moves += 1;
        r.moved.add(moved);
        r.each_move.push(MoveReport {
            at_ns: at.as_nanos(),
            moved,
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::traffic::lateness_histogram;

    /// Movable whose move the test holds under way until it lets it finish.
    struct HeldMove {
        started: std::time::Instant,
        pipes: usize,
        entered: Mutex<Sender<()>>,
        release: Mutex<mpsc::Receiver<()>>,
        finished: Arc<std::sync::atomic::AtomicBool>,
    }

    impl Movable for HeldMove {
        type Error = std::convert::Infallible;

        fn now(&self) -> Instant {
            Instant::from_nanos(self.started.elapsed().as_nanos() as u64)
        }

        fn traffic(&self) -> Result<Traffic, Self::Error> {
            Ok(Traffic {
                packets: vec![1_000; self.pipes],
                transitions: Vec::new(),
                lateness_ns: lateness_histogram(),
            })
        }

        fn repartition(&self, _next: Arc<Ownership>, _at: Instant) -> Result<Moved, Self::Error> {
            let _ = lock(&self.entered).send(());
            let _ = lock(&self.release).recv();
            self.finished
                .store(true, std::sync::atomic::Ordering::SeqCst);
            Ok(Moved::default())
        }
    }

    /// A run stopped (Ctrl-C, SIGTERM, `netloom stop`) while a move is under way: stopping the
    /// repartitioning waits for the move to finish, so the workers, which the experiment (or a
    /// cluster's coordinator) halts only after that, never stop between a transfer sent and
    /// one taken.
    #[test]
    fn a_stop_during_a_move_waits_for_the_move() {
        use netloom_engine::Payload;
        use netloom_link::PipeConfig;
        use netloom_topo::{NodeKind, RoutingMetric};
        use std::sync::atomic::Ordering;
        // h0 - r0 - r1 - h1, everything on worker 0 of two: the even traffic moves half.
        let mut t = Topology::new("t", RoutingMetric::Delay);
        let c = PipeConfig::new(
            netloom_time::Rate::bps(10_000_000),
            Duration::from_millis(1),
        );
        let nodes = [
            t.add_node("h0", NodeKind::Host, None),
            t.add_node("r0", NodeKind::Router, None),
            t.add_node("r1", NodeKind::Router, None),
            t.add_node("h1", NodeKind::Host, None),
        ];
        for pair in nodes.windows(2) {
            t.add_link(pair[0], pair[1], None, c, Some(c));
        }
        let pipes = t.pipes.len();
        let initial = Assignment {
            cores: 2,
            pipes: vec![0; pipes],
            topology: None,
            method: None,
        };
        let ownership = Arc::new(Ownership::live(&t, &initial.pipes, 2, Payload::Ship).unwrap());
        let (entered, moving) = mpsc::channel();
        let (let_finish, release) = mpsc::channel();
        let finished = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let workers = HeldMove {
            started: std::time::Instant::now(),
            pipes,
            entered: Mutex::new(entered),
            release: Mutex::new(release),
            finished: finished.clone(),
        };
        let report = Arc::new(Mutex::new(RepartitionReport::default()));
        let options = netloom_partition::Options::new(netloom_partition::Method::Metis, 2, 1);
        let mut repartitioner = Repartitioner::start(
            workers,
            t,
            (initial, ownership),
            (options, Moving::THREADS),
            Duration::from_millis(1),
            report.clone(),
        )
        .unwrap();
        moving
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("a move began");
        let stopper = std::thread::spawn(move || repartitioner.stop());
        std::thread::sleep(std::time::Duration::from_millis(100));
        assert!(!stopper.is_finished(), "the stop did not wait for the move");
        let_finish.send(()).unwrap();
        stopper.join().unwrap();
        assert!(finished.load(Ordering::SeqCst));
        let report = lock(&report);
        assert_eq!((report.moves, report.each_move.len()), (1, 1));
        assert!(report.stopped.is_none(), "{:?}", report.stopped);
    }
}
