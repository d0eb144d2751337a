//! Which worker owns each pipe and each host in a partitioned run, and the lookahead the
//! partition allows: the least time between a packet entering a pipe and being handed to another
//! worker. Built from a pipe → core assignment; knows nothing of how that was computed.

use netloom_time::Duration;
use netloom_topo::{Direction, PipeId, Topology};

/// What crosses between workers when a packet's next pipe belongs to another one (ModelNet §4).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Payload {
    /// Only the descriptor crosses; the payload stays on its home worker (the one that owns the
    /// source host), so a packet delivered elsewhere takes one more hop back home.
    #[default]
    Cache,
    /// The whole packet crosses at every cross-core hop.
    Ship,
}

impl Payload {
    /// `cache` or `ship`: the choice as `--payload` names it and the `workers.payload` field of
    /// the JSON reports shows it.
    pub fn name(self) -> &'static str {
        match self {
            Payload::Cache => "cache",
            Payload::Ship => "ship",
        }
    }
}

/// Why an assignment cannot drive a partitioned run.
#[derive(Debug, thiserror::Error)]
pub enum OwnershipError {
    /// The assignment does not have exactly one core per pipe of the topology.
    #[error("the assignment names {got} pipes but the topology has {want}")]
    PipeCount {
        /// Pipes the assignment gives a core.
        got: usize,
        /// Pipes of the topology.
        want: usize,
    },
    /// The number of workers is 0 or above `MAX_WORKERS`.
    #[error("{workers} workers: a partitioned run needs 1 to {max}", max = MAX_WORKERS)]
    Workers {
        /// The number of workers asked for.
        workers: usize,
    },
    /// The assignment puts a pipe on a core that is not below the number of workers.
    #[error("pipe {pipe} is assigned to core {core}, but there are only {workers} workers")]
    Core {
        /// The pipe, as `a->b` (`a<->b` for a shared medium).
        pipe: String,
        /// The core the assignment gives it.
        core: u32,
        /// The number of workers.
        workers: usize,
    },
    /// A pipe whose exit another worker handles has a least latency (delay minus jitter, in its
    /// configuration or in any state of its link's time-varying plan) of zero, so the lookahead
    /// would be zero. Only `Ownership::new` refuses this; `Ownership::live` records the pipe in
    /// `instant_crossing` instead.
    #[error(
        "pipe {pipe} hands packets from worker {from} to worker {to} but can take no time at all \
         (delay minus jitter is 0): workers could not run ahead of each other. Give it a delay, \
         or keep both its ends on one worker"
    )]
    NoLookahead {
        /// The pipe, as `a->b` (`a<->b` for a shared medium).
        pipe: String,
        /// The worker that owns the pipe.
        from: u16,
        /// A worker that handles what follows the pipe's exit.
        to: u16,
    },
}

/// The most workers a run may have: far more than this machine's cores, and worker ids fit a
/// `u16`.
pub const MAX_WORKERS: usize = 256;

/// Pipe and host ownership for `workers` workers.
#[derive(Clone, Debug)]
pub struct Ownership {
    workers: u16,
    /// Worker of each pipe.
    pipes: Vec<u16>,
    /// Worker of each host, in `Topology::hosts` order: the one owning its outgoing pipes.
    hosts: Vec<u16>,
    /// Pipes moved to their host's worker so that a host's traffic starts where it arrives.
    moved: usize,
    lookahead: Duration,
    payload: Payload,
    /// Whether a packet from outside is delivered by its home worker (`live`).
    deliver_at_home: bool,
    /// A pipe that crosses workers in no time, when `live` allowed it (the lookahead is zero).
    instant_crossing: Option<String>,
}

impl Ownership {
    /// Everything on one worker.
    pub fn single(topo: &Topology) -> Ownership {
        Ownership::new(topo, &vec![0; topo.pipes.len()], 1, Payload::Cache)
            .expect("one worker owning everything is always valid")
    }

    /// Ownership from `assignment` (pipe → core, core < `workers`). A host and all the pipes it
    /// sends into must share a worker, because a host answers a packet (an ACK, a reply) at the
    /// very instant it receives it; where the assignment splits them, the host's pipes move to
    /// the worker of its first one (`moved` counts them).
    pub fn new(
        topo: &Topology,
        assignment: &[u32],
        workers: usize,
        payload: Payload,
    ) -> Result<Ownership, OwnershipError> {
        let mut ownership = Ownership::assign(topo, assignment, workers, payload)?;
        ownership.lookahead = ownership.compute_lookahead(topo)?;
        Ok(ownership)
    }

    /// Ownership for a live run. With payloads cached, a packet from outside is delivered by its
    /// home worker (the one that read it and holds its payload), which writes it out on time
    /// without another hop; shipped, the payload travels with the packet and the destination's
    /// worker delivers it. Live workers never wait for each other, so a pipe that crosses
    /// workers in no time is allowed: packets crossing it are released late by the hand-off
    /// (and measured so); `instant_crossing` says which.
    pub fn live(
        topo: &Topology,
        assignment: &[u32],
        workers: usize,
        payload: Payload,
    ) -> Result<Ownership, OwnershipError> {
        let mut ownership = Ownership::assign(topo, assignment, workers, payload)?;
        ownership.deliver_at_home = payload == Payload::Cache;
        match ownership.compute_lookahead(topo) {
            Ok(lookahead) => ownership.lookahead = lookahead,
            Err(OwnershipError::NoLookahead { pipe, .. }) => {
                ownership.lookahead = Duration::ZERO;
                ownership.instant_crossing = Some(pipe);
            }
            Err(e) => return Err(e),
        }
        Ok(ownership)
    }

    /// Pipe and host owners from `assignment`, without the lookahead.
    fn assign(
        topo: &Topology,
        assignment: &[u32],
        workers: usize,
        payload: Payload,
    ) -> Result<Ownership, OwnershipError> {
        if assignment.len() != topo.pipes.len() {
            return Err(OwnershipError::PipeCount {
                got: assignment.len(),
                want: topo.pipes.len(),
            });
        }
        if workers == 0 || workers > MAX_WORKERS {
            return Err(OwnershipError::Workers { workers });
        }
        let mut pipes = Vec::with_capacity(assignment.len());
        for (p, &core) in assignment.iter().enumerate() {
            if core as usize >= workers {
                return Err(OwnershipError::Core {
                    pipe: pipe_name(topo, p as PipeId),
                    core,
                    workers,
                });
            }
            pipes.push(core as u16);
        }
        // Each node's outgoing (pipe, far end) pairs; a shared medium appears at both its ends.
        let adjacency = topo.adjacency();
        let mut moved = 0;
        let hosts = topo
            .hosts
            .iter()
            .map(|&h| {
                let out = &adjacency[h as usize];
                let Some(&(first, _)) = out.first() else {
                    return 0; // an isolated host sends nothing
                };
                let owner = pipes[first as usize];
                for &(p, _) in out {
                    if pipes[p as usize] != owner {
                        pipes[p as usize] = owner;
                        moved += 1;
                    }
                }
                owner
            })
            .collect();
        Ok(Ownership {
            workers: workers as u16,
            pipes,
            hosts,
            moved,
            lookahead: Duration(u64::MAX),
            payload,
            deliver_at_home: false,
            instant_crossing: None,
        })
    }

    /// The least time from a packet entering a pipe to its hand-off to another worker: a
    /// partitioned virtual-time run lets workers run this far ahead of each other. `u64::MAX`
    /// when nothing crosses.
    fn compute_lookahead(&self, topo: &Topology) -> Result<Duration, OwnershipError> {
        let adjacency = topo.adjacency();
        let mut host_of = vec![None; topo.nodes.len()];
        for (i, &h) in topo.hosts.iter().enumerate() {
            host_of[h as usize] = Some(i);
        }
        // Who may deliver at a host: its own worker, or, when packets are delivered at home,
        // the worker of any host that sends (of just the sender, on a pipe from a host: hosts
        // never forward, so only their own packets leave them).
        let mut homes = self.hosts.clone();
        homes.sort_unstable();
        homes.dedup();
        let mut lookahead = Duration(u64::MAX);
        let pipes = adjacency
            .iter()
            .enumerate()
            .flat_map(|(tail, out)| out.iter().map(move |&(p, head)| (tail, p, head)));
        for (tail, p, head) in pipes {
            let owner = self.pipes[p as usize];
            // Who handles what follows the exit at `head`: a host's deliverer (whose answers
            // leave on its own pipes), or the owner of the pipe a router forwards into.
            let forwarders: Vec<u16>;
            let after: &[u16] = match (host_of[head as usize], host_of[tail]) {
                (None, _) => {
                    forwarders = adjacency[head as usize]
                        .iter()
                        .map(|&(q, _)| self.pipes[q as usize])
                        .collect();
                    &forwarders
                }
                (Some(_), Some(sender)) if self.deliver_at_home => {
                    std::slice::from_ref(&self.hosts[sender])
                }
                (Some(_), None) if self.deliver_at_home => &homes,
                (Some(h), _) => std::slice::from_ref(&self.hosts[h]),
            };
            let Some(&to) = after.iter().find(|&&w| w != owner) else {
                continue;
            };
            let spec = &topo.pipes[p as usize];
            let plan_configs = topo
                .plans
                .iter()
                .filter(|plan| plan.link == spec.link)
                .flat_map(|plan| plan.states.iter().flat_map(|(ab, ba)| [ab, ba]));
            let least = std::iter::once(&spec.config)
                .chain(plan_configs)
                .map(|c| c.min_latency())
                .min()
                .expect("the pipe's own configuration is there");
            if least == Duration::ZERO {
                return Err(OwnershipError::NoLookahead {
                    pipe: pipe_name(topo, p),
                    from: owner,
                    to,
                });
            }
            lookahead = lookahead.min(least);
        }
        Ok(lookahead)
    }

    /// Workers of the run, 1 to `MAX_WORKERS`.
    pub fn workers(&self) -> usize {
        usize::from(self.workers)
    }

    /// Pipes of the partitioned topology.
    pub fn pipes(&self) -> usize {
        self.pipes.len()
    }

    /// The worker that owns `pipe`, after host pipes moved: the only one that offers it packets.
    pub fn pipe_owner(&self, pipe: PipeId) -> u16 {
        self.pipes[pipe as usize]
    }

    /// The worker of the host at position `host` of `Topology::hosts`.
    pub fn host_owner(&self, host: u32) -> u16 {
        self.hosts[host as usize]
    }

    /// Pipes that changed worker to join their host's.
    pub fn moved(&self) -> usize {
        self.moved
    }

    /// The least time from a packet entering a pipe to its hand-off to another worker, over
    /// every crossing pipe and every state of its time-varying plan: how far the workers of a
    /// virtual-time run may run apart. `u64::MAX` ns when no pipe crosses workers; zero for a
    /// live ownership with an `instant_crossing`.
    pub fn lookahead(&self) -> Duration {
        self.lookahead
    }

    /// What a hand-off between workers carries: the descriptor only, or the payload too.
    pub fn payload(&self) -> Payload {
        self.payload
    }

    /// Whether a packet from outside is delivered by the worker that took it in (`live`).
    pub fn delivers_at_home(&self) -> bool {
        self.deliver_at_home
    }

    /// Why a live ownership's lookahead is zero: the name of a pipe that crosses workers in no
    /// time.
    pub fn instant_crossing(&self) -> Option<&str> {
        self.instant_crossing.as_deref()
    }

    /// The assignment actually run (pipe → worker), after host pipes moved.
    pub fn assignment(&self) -> Vec<u32> {
        self.pipes.iter().map(|&w| u32::from(w)).collect()
    }
}

/// "a->b" (or "a<->b" for a shared medium), for messages.
pub(crate) fn pipe_name(topo: &Topology, pipe: PipeId) -> String {
    let spec = &topo.pipes[pipe as usize];
    let l = &topo.links[spec.link as usize];
    let (a, b) = (&topo.node(l.a).name, &topo.node(l.b).name);
    match (l.ab == l.ba, spec.direction) {
        (true, _) => format!("{a}<->{b}"),
        (false, Direction::AtoB) => format!("{a}->{b}"),
        (false, Direction::BtoA) => format!("{b}->{a}"),
    }
}
