//! Virtual-time runs whose workers are processes (`netloom sim --workers N --processes`): the
//! coordinator is worker 0 and starts workers 1 to N−1 as child processes, which trade
//! hand-offs in lock-step windows as GENEVE batches over UDP (`udp`), and send their remains
//! back for the merge. Control (the worker's version, the set-up with the topology itself, the
//! peers' addresses, the remains) goes over each child's stdin and stdout as JSON lines, so a
//! worker on another machine needs none of the coordinator's files.

pub mod udp;

use netloom_engine::{lockstep, Engine, Remains};
use netloom_time::{Duration, Instant};
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::io::{BufRead, BufReader, Write};
use std::net::{IpAddr, SocketAddr};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::rc::Rc;
pub use udp::{ExchangeError, UdpExchange};

/// The largest UDP payload over loopback (65,535 less the IPv4 and UDP headers).
pub const LOOPBACK_DATAGRAM: usize = 65_507;
/// The largest UDP payload that crosses an Ethernet path (MTU 1500) unfragmented, over IPv4 or
/// IPv6 (1500 less IPv6's 40-byte and UDP's 8-byte headers): between machines, where one lost
/// fragment would lose a whole datagram.
pub const NETWORK_DATAGRAM: usize = 1_452;

/// What the coordinator tells every worker process before the run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Setup {
    /// Workers of the run, the coordinator (worker 0) included.
    pub workers: usize,
    /// The pipe → worker assignment, as the coordinator computed it.
    pub assignment: Vec<u32>,
    /// The run's GENEVE VNI.
    pub vni: u32,
    /// The run's secret, as hex (`netloom_wire::Key`), which seals every datagram between the
    /// workers. It travels only here, on the worker's standard input (its launcher's channel).
    pub key: String,
    /// The largest datagram to send.
    pub max_datagram: usize,
    /// The address each worker binds to, worker 0 first (ports chosen by the system).
    pub addresses: Vec<IpAddr>,
    /// The topology, with the data files it names.
    pub topology: netloom_topo::Bundle,
}

/// This program's version, which every worker must run.
const VERSION: &str = env!("CARGO_PKG_VERSION");

/// A worker's message on its stdout.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Message {
    /// The first line, before the set-up: which netloom the worker is.
    Hello { version: String },
    /// Bound, at this address.
    Ready(SocketAddr),
    /// Done: its remains (boxed: they are most of the message's size), windows, and wall time
    /// spent waiting (ns).
    Done {
        remains: Box<Remains>,
        windows: u64,
        waited_ns: u64,
    },
}

/// Why a run over processes failed.
#[derive(Debug, thiserror::Error)]
pub enum ProcError {
    /// A worker process could not be started.
    #[error("cannot start worker {worker}: {error}")]
    Spawn {
        /// The worker.
        worker: usize,
        /// Why.
        error: std::io::Error,
    },
    /// A worker process died or broke the protocol; the others were stopped.
    #[error("worker {worker} (pid {pid}) {what}; the run was stopped")]
    Worker {
        /// The worker.
        worker: usize,
        /// Its process id.
        pid: u32,
        /// What happened: died with which status, or said what.
        what: String,
    },
    /// A worker runs another netloom.
    #[error("worker {worker} runs netloom {version}; this is netloom {VERSION}")]
    Version {
        /// The worker.
        worker: usize,
        /// Its version.
        version: String,
    },
    /// A worker cannot bind its socket at its address.
    #[error("worker {worker} cannot take hand-offs at {address}: {error}")]
    Bind {
        /// The worker.
        worker: usize,
        /// Its address.
        address: IpAddr,
        /// Why.
        error: std::io::Error,
    },
    /// The exchange failed.
    #[error(transparent)]
    Exchange(#[from] ExchangeError),
    /// This process's own I/O failed (the socket, stdin, stdout).
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The worker's set-up (its engine) failed.
    #[error("{0}")]
    Build(String),
}

/// What a run over processes leaves: every worker's figures.
pub struct Outcome {
    /// Windows of the run (the same on every worker).
    pub windows: u64,
    /// Remains of workers 1 to N−1, in order.
    pub remains: Vec<Remains>,
    /// Wall time each worker spent waiting for the others, worker 0 first.
    pub waited: Vec<std::time::Duration>,
}

/// One child process: a worker, and its control pipes.
struct Process {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

/// The worker processes of a run (workers 1 to N−1), killed if the run ends early.
pub struct Workers {
    processes: Rc<RefCell<Vec<Process>>>,
}

impl Drop for Workers {
    fn drop(&mut self) {
        // A run that ended well already reaped them; one that did not leaves nothing behind.
        for p in self.processes.borrow_mut().iter_mut() {
            if matches!(p.child.try_wait(), Ok(None)) {
                let _ = p.child.kill();
            }
            let _ = p.child.wait();
        }
    }
}

/// The worker that died, if one did: a worker that exits before the coordinator is done with
/// it does so only on failure.
fn dead(processes: &mut [Process]) -> Option<ProcError> {
    processes
        .iter_mut()
        .enumerate()
        .find_map(|(i, p)| match p.child.try_wait() {
            Ok(Some(status)) if !status.success() => Some(ProcError::Worker {
                worker: i + 1,
                pid: p.child.id(),
                what: format!("died ({status})"),
            }),
            _ => None,
        })
}

impl Workers {
    /// Starts workers 1 to `workers`−1, `command(k)` being worker k's (standard input and
    /// output are taken for control; standard error is left to say why a worker failed).
    /// Each dies with this thread.
    pub fn spawn(workers: usize, command: impl Fn(usize) -> Command) -> Result<Workers, ProcError> {
        let all = Workers {
            processes: Rc::new(RefCell::new(Vec::with_capacity(workers - 1))),
        };
        for worker in 1..workers {
            let mut c = command(worker);
            c.stdin(Stdio::piped()).stdout(Stdio::piped());
            netloom_os::die_with_parent(&mut c);
            let mut child = c
                .spawn()
                .map_err(|error| ProcError::Spawn { worker, error })?;
            let (stdin, stdout) = (child.stdin.take(), child.stdout.take());
            all.processes.borrow_mut().push(Process {
                child,
                stdin: stdin.expect("piped"),
                stdout: BufReader::new(stdout.expect("piped")),
            });
        }
        Ok(all)
    }

    /// Runs `engine` (worker 0) with the workers over [0, `end`) in windows of `lookahead`,
    /// and gathers their remains. Any worker's death stops the others and says which and why.
    pub fn run(
        self,
        engine: &mut Engine,
        setup: &Setup,
        end: Instant,
        lookahead: Duration,
    ) -> Result<Outcome, ProcError> {
        // Every worker's version first: another netloom would not build the same engine.
        for k in 0..setup.workers - 1 {
            match self.hear(k)? {
                Message::Hello { version } if version == VERSION => {}
                Message::Hello { version } => {
                    return Err(ProcError::Version {
                        worker: k + 1,
                        version,
                    })
                }
                _ => return Err(self.broke(k, "did not say which netloom it is")),
            }
        }
        let mut exchange = bind(setup, 0)?;
        let mut peers = vec![exchange.local_addr()?];
        let setup_line = serde_json::to_string(setup).expect("a set-up serializes");
        for k in 0..setup.workers - 1 {
            self.tell(k, &setup_line)?;
        }
        for k in 0..setup.workers - 1 {
            match self.hear(k)? {
                Message::Ready(addr) => peers.push(addr),
                _ => return Err(self.broke(k, "was not ready")),
            }
        }
        let peers_line = serde_json::to_string(&peers).expect("addresses serialize");
        for k in 0..setup.workers - 1 {
            self.tell(k, &peers_line)?;
        }
        let processes = self.processes.clone();
        exchange.connect(
            peers,
            (setup.vni, key(setup)?),
            (setup.max_datagram, engine.handoff_bounds()),
            Box::new(move || {
                dead(&mut processes.borrow_mut()).map_or(Ok(()), |e| Err(e.to_string()))
            }),
        );
        let windows = lockstep::run(engine, &mut exchange, (0, setup.workers), end, lookahead)?;
        let mut outcome = Outcome {
            windows,
            remains: Vec::new(),
            waited: vec![exchange.waited()],
        };
        for k in 0..setup.workers - 1 {
            match self.hear(k)? {
                Message::Done {
                    remains,
                    windows: theirs,
                    waited_ns,
                } if theirs == windows => {
                    outcome.remains.push(*remains);
                    outcome
                        .waited
                        .push(std::time::Duration::from_nanos(waited_ns));
                }
                _ => return Err(self.broke(k, "ended out of step")),
            }
        }
        for p in self.processes.borrow_mut().iter_mut() {
            p.child.wait()?;
        }
        Ok(outcome)
    }

    /// Writes a line to worker k+1.
    fn tell(&self, k: usize, line: &str) -> Result<(), ProcError> {
        let mut processes = self.processes.borrow_mut();
        let p = &mut processes[k];
        if writeln!(p.stdin, "{line}")
            .and_then(|()| p.stdin.flush())
            .is_err()
        {
            drop(processes);
            return Err(self.broke(k, "stopped reading"));
        }
        Ok(())
    }

    /// Reads worker k+1's next message.
    fn hear(&self, k: usize) -> Result<Message, ProcError> {
        let mut line = String::new();
        let read = self.processes.borrow_mut()[k].stdout.read_line(&mut line);
        match read {
            Ok(n) if n > 0 => serde_json::from_str(&line)
                .map_err(|e| self.broke(k, &format!("sent what is not a report ({e})"))),
            _ => Err(self.broke(k, "ended without a word")),
        }
    }

    /// Worker k+1 broke off: the error, with its exit status once it has one.
    fn broke(&self, k: usize, what: &str) -> ProcError {
        let mut processes = self.processes.borrow_mut();
        let p = &mut processes[k];
        let pid = p.child.id();
        // A worker that broke off is about to exit; give it a moment to, for its status.
        let deadline = std::time::Instant::now() + std::time::Duration::from_millis(500);
        let status = loop {
            match p.child.try_wait() {
                Ok(Some(status)) => break Some(status),
                Ok(None) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(5))
                }
                _ => break None,
            }
        };
        ProcError::Worker {
            worker: k + 1,
            pid,
            what: match status {
                Some(s) => format!("{what} and died ({s})"),
                None => what.to_string(),
            },
        }
    }
}

/// The report of a run over processes from worker 0's `engine` and the others' `remains`
/// (workers 1 to N−1, in order), as `workers::run` reports it from merged engines: `engine`
/// absorbs their pipe and engine counts, and each flow's figures come from the workers that
/// own its ends.
pub fn merge(
    engine: &mut Engine,
    remains: Vec<Remains>,
    seed: u64,
    end: Instant,
    wall: Option<std::time::Duration>,
) -> (netloom_engine::Report, Vec<Remains>) {
    let mut all = vec![engine.remains(end)];
    for r in &remains {
        engine.absorb_remains(r);
    }
    all.extend(remains);
    let mut report = netloom_engine::Report::build(engine, seed, end, wall);
    report.flows = engine.merge_flows(&all);
    (report, all)
}

/// Worker `me`'s exchange, bound at its address.
fn bind(setup: &Setup, me: u16) -> Result<UdpExchange, ProcError> {
    let address = setup.addresses[usize::from(me)];
    UdpExchange::bind(SocketAddr::new(address, 0), me).map_err(|error| ProcError::Bind {
        worker: usize::from(me),
        address,
        error,
    })
}

/// The run's secret in `setup`.
fn key(setup: &Setup) -> Result<netloom_wire::Key, ProcError> {
    netloom_wire::Key::from_hex(&setup.key)
        .map_err(|e| ProcError::Build(format!("a bad set-up: {e}")))
}

/// Worker `me`'s side, in a child process: says which netloom it is, reads the set-up on stdin,
/// builds its engine with
/// `build` (which returns it and the run's lookahead), binds its socket, says where, learns the
/// peers, runs over [0, `end`), and writes its remains on stdout.
pub fn serve(
    me: u16,
    end: Instant,
    build: impl FnOnce(&Setup) -> Result<(Engine, Duration), String>,
) -> Result<(), ProcError> {
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    let mut next_line = || -> Result<String, ProcError> {
        lines
            .next()
            .unwrap_or_else(|| {
                Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "the coordinator hung up",
                ))
            })
            .map_err(ProcError::Io)
    };
    let mut out = std::io::stdout().lock();
    let say = |out: &mut std::io::StdoutLock, r: &Message| -> Result<(), ProcError> {
        writeln!(
            out,
            "{}",
            serde_json::to_string(r).expect("a report serializes")
        )?;
        Ok(out.flush()?)
    };
    let version = VERSION.to_string();
    say(&mut out, &Message::Hello { version })?;
    let setup: Setup = serde_json::from_str(&next_line()?)
        .map_err(|e| ProcError::Build(format!("a bad set-up: {e}")))?;
    let (mut engine, lookahead) = build(&setup).map_err(ProcError::Build)?;
    let mut exchange = bind(&setup, me)?;
    say(&mut out, &Message::Ready(exchange.local_addr()?))?;
    let peers: Vec<SocketAddr> = serde_json::from_str(&next_line()?)
        .map_err(|e| ProcError::Build(format!("a bad list of peers: {e}")))?;
    // A peer that dies is the coordinator's to see: it stops everyone.
    exchange.connect(
        peers,
        (setup.vni, key(&setup)?),
        (setup.max_datagram, engine.handoff_bounds()),
        Box::new(|| Ok(())),
    );
    let windows = lockstep::run(
        &mut engine,
        &mut exchange,
        (usize::from(me), setup.workers),
        end,
        lookahead,
    )?;
    say(
        &mut out,
        &Message::Done {
            remains: Box::new(engine.remains(end)),
            windows,
            waited_ns: exchange.waited().as_nanos() as u64,
        },
    )
}
