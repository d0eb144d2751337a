//! Virtual time over MPI ranks (feature `mpi`): under `mpirun -np N`, rank k is worker k and
//! rank 0 the coordinator, which broadcasts the set-up and gathers the others' remains. Each
//! round every rank sends each other one message, its batch as the same sealed frames as over
//! TCP (`frames`), and the next window's start is agreed by an all-reduce (the least of every
//! rank's earliest time). MPI's own transport (shared memory here, the cluster's network
//! elsewhere) carries them; nothing is lost.

use crate::exchange::{Exchange, ExchangeError};
use crate::frames::{self, Batch, Check, Ends};
use crate::spawn::{run, Message, VERSION};
use crate::tcp::Run;
use crate::{Outcome, ProcError, Setup};
use mpi::collective::SystemOperation;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use netloom_engine::{lockstep, Engine, Handoff};
use netloom_time::{Duration, Instant};
use std::time::Instant as WallInstant;

/// The tag of a round's message.
const ROUND: mpi::Tag = 1;
/// The tag of a rank's version, before the set-up.
const HELLO: mpi::Tag = 2;
/// The tag of a rank's remains, after the run.
const DONE: mpi::Tag = 3;

/// This process's MPI: initialized once, finalized when dropped.
pub struct Mpi {
    universe: mpi::environment::Universe,
}

impl Mpi {
    /// Initializes MPI (`mpirun` started this process, or it runs as a singleton).
    pub fn init() -> Result<Mpi, ProcError> {
        let universe = mpi::initialize().ok_or_else(|| {
            ProcError::Build("MPI could not be initialized (it already was)".into())
        })?;
        Ok(Mpi { universe })
    }

    fn world(&self) -> SimpleCommunicator {
        self.universe.world()
    }

    /// This process's rank: its worker number.
    pub fn rank(&self) -> u16 {
        self.world().rank() as u16
    }

    /// The ranks of the run: its workers.
    pub fn size(&self) -> usize {
        self.world().size() as usize
    }

    /// Ends the whole job with `code`: the other ranks wait in MPI calls that only an abort ends.
    pub fn abort(&self, code: i32) -> ! {
        self.world().abort(code)
    }

    /// Rank 0: runs `engine` with the other ranks over [0, `end`) in windows of `lookahead`:
    /// checks their versions, broadcasts `setup`, runs, and gathers their remains.
    pub fn run(
        &self,
        engine: &mut Engine,
        setup: &Setup,
        end: Instant,
        lookahead: Duration,
    ) -> Result<Outcome, ProcError> {
        let world = self.world();
        for rank in 1..self.size() {
            let (bytes, _) = world
                .process_at_rank(rank as i32)
                .receive_vec_with_tag::<u8>(HELLO);
            match serde_json::from_slice(&bytes) {
                Ok(Message::Hello { version }) if version == VERSION => {}
                Ok(Message::Hello { version }) => {
                    return Err(ProcError::Version {
                        worker: rank,
                        version,
                    })
                }
                _ => return Err(broke(rank, "did not say which netloom it is")),
            }
        }
        let mut line = serde_json::to_vec(setup).expect("a set-up serializes");
        broadcast(&world, &mut line);
        let mut exchange = MpiExchange::new(world, run(setup, engine)?);
        let windows = lockstep::run(engine, &mut exchange, (0, setup.workers), end, lookahead)?;
        let mut outcome = Outcome {
            windows,
            remains: Vec::new(),
            waited: vec![exchange.waited()],
        };
        for rank in 1..self.size() {
            let (bytes, _) = exchange
                .world
                .process_at_rank(rank as i32)
                .receive_vec_with_tag::<u8>(DONE);
            match serde_json::from_slice(&bytes) {
                Ok(Message::Done {
                    remains,
                    windows: theirs,
                    waited_ns,
                }) if theirs == windows => {
                    outcome.remains.push(*remains);
                    outcome
                        .waited
                        .push(std::time::Duration::from_nanos(waited_ns));
                }
                _ => return Err(broke(rank, "ended out of step")),
            }
        }
        Ok(outcome)
    }

    /// Another rank: says which netloom it is, takes the set-up from rank 0, builds its engine
    /// with `build` (which returns it and the run's lookahead), runs over [0, `end`), and sends
    /// its remains to rank 0.
    pub fn serve(
        &self,
        end: Instant,
        build: impl FnOnce(&Setup) -> Result<(Engine, Duration), String>,
    ) -> Result<(), ProcError> {
        let world = self.world();
        let me = self.rank();
        let hello = Message::Hello {
            version: VERSION.to_string(),
        };
        let root = world.process_at_rank(0);
        root.send_with_tag(&serde_json::to_vec(&hello).expect("serializes")[..], HELLO);
        let mut line = Vec::new();
        broadcast(&world, &mut line);
        let setup: Setup = serde_json::from_slice(&line)
            .map_err(|e| ProcError::Build(format!("a bad set-up: {e}")))?;
        let (mut engine, lookahead) = build(&setup).map_err(ProcError::Build)?;
        let mut exchange = MpiExchange::new(world, run(&setup, &engine)?);
        let windows = lockstep::run(
            &mut engine,
            &mut exchange,
            (usize::from(me), setup.workers),
            end,
            lookahead,
        )?;
        let done = Message::Done {
            remains: Box::new(engine.remains(end)),
            windows,
            waited_ns: exchange.waited().as_nanos() as u64,
        };
        let bytes = serde_json::to_vec(&done).expect("remains serialize");
        exchange
            .world
            .process_at_rank(0)
            .send_with_tag(&bytes[..], DONE);
        Ok(())
    }
}

/// Rank 0's `bytes` to every rank: its length, then the bytes.
fn broadcast(world: &SimpleCommunicator, bytes: &mut Vec<u8>) {
    let root = world.process_at_rank(0);
    let mut len = bytes.len() as u64;
    root.broadcast_into(&mut len);
    bytes.resize(len as usize, 0);
    root.broadcast_into(&mut bytes[..]);
}

fn broke(rank: usize, what: &str) -> ProcError {
    ProcError::Build(format!("rank {rank} {what}"))
}

/// A rank's end of the exchange.
pub struct MpiExchange {
    world: SimpleCommunicator,
    me: u16,
    run: Run,
    waited: std::time::Duration,
    /// Rounds so far: the number of the last one's batches.
    rounds: u64,
    /// Each peer's frames for the round, by rank.
    out: Vec<Vec<u8>>,
}

impl MpiExchange {
    fn new(world: SimpleCommunicator, run: Run) -> MpiExchange {
        let me = world.rank() as u16;
        let out = (0..world.size()).map(|_| Vec::new()).collect();
        MpiExchange {
            world,
            me,
            run,
            waited: std::time::Duration::ZERO,
            rounds: 0,
            out,
        }
    }

    fn peers(&self) -> impl Iterator<Item = u16> {
        let me = self.me;
        (0..self.out.len() as u16).filter(move |&k| k != me)
    }
}

impl lockstep::Exchange for MpiExchange {
    type Error = ExchangeError;

    fn trade(
        &mut self,
        _window: u64,
        next: u64,
        out: &mut [Vec<Handoff>],
        into: &mut Vec<Handoff>,
    ) -> Result<u64, ExchangeError> {
        self.rounds += 1;
        let window = self.rounds;
        let me = self.me;
        for k in self.peers().collect::<Vec<_>>() {
            let ends = Ends {
                vni: self.run.vni,
                from: me,
                to: k,
            };
            let bytes = &mut self.out[usize::from(k)];
            bytes.clear();
            let batch = out.get(usize::from(k)).map_or(&[][..], Vec::as_slice);
            frames::put(bytes, ends, (window, next), batch, &self.run.key).map_err(|e| {
                ExchangeError::Frame {
                    me,
                    peer: k,
                    what: format!("cannot be made: {e}"),
                }
            })?;
        }
        out.iter_mut().for_each(Vec::clear);
        let started = WallInstant::now();
        let peers: Vec<u16> = self.peers().collect();
        // Every send posted before any receive, so no two ranks wait on each other's.
        let received: Vec<Vec<u8>> = mpi::request::scope(|scope| {
            let sends: Vec<_> = peers
                .iter()
                .map(|&k| {
                    self.world
                        .process_at_rank(i32::from(k))
                        .immediate_send_with_tag(scope, &self.out[usize::from(k)][..], ROUND)
                })
                .collect();
            let received = peers
                .iter()
                .map(|&k| {
                    let from = self.world.process_at_rank(i32::from(k));
                    from.receive_vec_with_tag::<u8>(ROUND).0
                })
                .collect();
            for send in sends {
                send.wait();
            }
            received
        });
        // The next window starts at the least earliest time of all ranks.
        let mut earliest = 0u64;
        self.world
            .all_reduce_into(&next, &mut earliest, SystemOperation::min());
        self.waited += started.elapsed();
        for (&k, bytes) in peers.iter().zip(&received) {
            let check = Check {
                key: &self.run.key,
                ends: Ends {
                    vni: self.run.vni,
                    from: k,
                    to: me,
                },
                window,
                bounds: &self.run.bounds,
            };
            let (mut at, mut batch) = (0, Batch::default());
            check.take(bytes, &mut at, &mut batch, into)?;
            if !batch.done || at != bytes.len() {
                return Err(ExchangeError::Frame {
                    me,
                    peer: k,
                    what: format!(
                        "a round's message of {} bytes that is not its batch of round {window}",
                        bytes.len()
                    ),
                });
            }
        }
        Ok(earliest)
    }
}

impl Exchange for MpiExchange {
    fn waited(&self) -> std::time::Duration {
        self.waited
    }
}
