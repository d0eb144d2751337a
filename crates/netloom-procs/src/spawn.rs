//! The processes of a run and their control channel: the coordinator starts workers 1 to N−1
//! (`Processes`), each says which netloom it is, takes the set-up, listens, learns its peers and
//! runs its windows over TCP (`serve`), and the coordinator gathers their remains; a worker that
//! dies or breaks the protocol stops them all.

use crate::tcp::{Listener, Run, TcpExchange, Watch};
use crate::{key, Exchange, ExchangeError, Outcome, ProcError, Setup};
use netloom_engine::{lockstep, Engine, Remains};
use netloom_time::{Duration, Instant};
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::rc::Rc;

/// This program's version, which every worker must run.
pub(crate) const VERSION: &str = env!("CARGO_PKG_VERSION");

/// A worker's message on its stdout.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Message {
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

/// One child process: a worker, and its control pipes.
struct Process {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

/// The worker processes of a run (workers 1 to N−1), killed if the run ends early.
pub struct Processes {
    processes: Rc<RefCell<Vec<Process>>>,
}

impl Drop for Processes {
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

impl Processes {
    /// Starts workers 1 to `workers`−1, `command(k)` being worker k's (standard input and
    /// output are taken for control; standard error is left to say why a worker failed).
    /// Each dies with this thread.
    pub fn spawn(
        workers: usize,
        command: impl Fn(usize) -> Command,
    ) -> Result<Processes, ProcError> {
        let all = Processes {
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
        let listener = listen(setup, 0)?;
        let mut peers = vec![listener.local_addr()?];
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
        let watch: Watch = Box::new(move || {
            dead(&mut processes.borrow_mut()).map_or(Ok(()), |e| Err(e.to_string()))
        });
        let mut exchange = listener
            .connect(&peers, run(setup, engine)?, watch)
            .map_err(|e| self.failed(e))?;
        let windows = lockstep::run(engine, &mut exchange, (0, setup.workers), end, lookahead)
            .map_err(|e| self.failed(e))?;
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

    /// The exchange's error in the coordinator's words: a worker whose connection closed is
    /// named with its exit status (it died, or stopped on an error of its own it printed).
    fn failed(&self, e: ExchangeError) -> ProcError {
        match e {
            ExchangeError::Closed { peer, .. } if peer > 0 => {
                self.broke(usize::from(peer) - 1, "closed its connection")
            }
            e => e.into(),
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

/// Worker `me`'s listener, at its address.
fn listen(setup: &Setup, me: u16) -> Result<Listener, ProcError> {
    let address = setup.addresses[usize::from(me)];
    Listener::bind(SocketAddr::new(address, 0), me).map_err(|error| ProcError::Bind {
        worker: usize::from(me),
        address,
        error,
    })
}

/// The run `setup` describes, as `engine` takes hand-offs.
pub(crate) fn run(setup: &Setup, engine: &Engine) -> Result<Run, ProcError> {
    Ok(Run {
        vni: setup.vni,
        key: key(setup)?,
        bounds: engine.handoff_bounds(),
    })
}

/// Worker `me`'s side, in a child process: says which netloom it is, reads the set-up on stdin,
/// builds its engine with
/// `build` (which returns it and the run's lookahead), listens, says where, learns the
/// peers, connects to them, runs over [0, `end`), and writes its remains on stdout.
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
    let listener = listen(&setup, me)?;
    say(&mut out, &Message::Ready(listener.local_addr()?))?;
    let peers: Vec<SocketAddr> = serde_json::from_str(&next_line()?)
        .map_err(|e| ProcError::Build(format!("a bad list of peers: {e}")))?;
    // A peer that dies is the coordinator's to see: it stops everyone.
    let mut exchange = listener.connect(&peers, run(&setup, &engine)?, Box::new(|| Ok(())))?;
    let windows = match lockstep::run(
        &mut engine,
        &mut exchange,
        (usize::from(me), setup.workers),
        end,
        lookahead,
    ) {
        Ok(windows) => windows,
        Err(e) => return Err(leave_to_coordinator(&mut exchange, e)),
    };
    say(
        &mut out,
        &Message::Done {
            remains: Box::new(engine.remains(end)),
            windows,
            waited_ns: exchange.waited().as_nanos() as u64,
        },
    )
}

/// A worker that saw another's connection close waits until the coordinator's closes too: the
/// coordinator sees the same death, says which worker died and how, and stops the run, so the
/// run's error names the dead worker rather than the first to notice it.
fn leave_to_coordinator(exchange: &mut TcpExchange, e: ExchangeError) -> ProcError {
    if matches!(e, ExchangeError::Closed { peer, .. } if peer > 0) {
        exchange.wait_for_close(0);
    }
    e.into()
}
