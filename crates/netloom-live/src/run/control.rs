//! The experiment's side of control: a request resolved once against the topology (which link,
//! which pipes, which parameters), stamped with the time it is made, posted to every worker as
//! one order, and the workers' answers merged into one result. The workers' side is `answer`.

use crate::accuracy::AccuracyReport;
use crate::clock::Clock;
use crate::driver::Driver;
use crate::io::PacketIo;
use crate::mailbox::{mailboxes, Message, Outbound, Post};
use crate::message::{
    Answer, Change, ChangeKind, ChangeRefusal, Direction, LinkChange, Order, Snapshot,
};
use crate::moved::{merge_moved, Moved};
use crate::traffic::Traffic;
use netloom_engine::Ownership;
use netloom_packet::pcapng::Interface;
use netloom_time::Instant;
use netloom_topo::{did_you_mean, LinkId, LinkPatch, NodeId, PatchError, PipeId, Topology};
use std::sync::mpsc::{self, Receiver};
use std::sync::Arc;
use std::time::Duration;

/// How long a request waits for the workers' answers.
pub const ANSWER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// Why a request to a running experiment was refused or not answered.
#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    /// A name that no node of the topology has.
    #[error("no node is named {:?}{hint}", netloom_topo::shown(name))]
    UnknownNode {
        /// The name asked for.
        name: String,
        /// A suggestion, or nothing.
        hint: String,
    },
    /// Two nodes that no link joins.
    #[error(
        "no link joins {} and {}",
        netloom_topo::shown(a),
        netloom_topo::shown(b)
    )]
    NoLink {
        /// One end.
        a: String,
        /// The other.
        b: String,
    },
    /// Two nodes joined by several links: which one is meant cannot be told.
    #[error(
        "several links join {} and {}; change them in the topology file",
        netloom_topo::shown(a),
        netloom_topo::shown(b)
    )]
    SeveralLinks {
        /// One end.
        a: String,
        /// The other.
        b: String,
    },
    /// Parameters that are not valid link parameters.
    #[error("link {link}: {source}")]
    Patch {
        /// The link, "a-b".
        link: String,
        /// What is wrong with them.
        source: PatchError,
    },
    /// The workers refused a change that is valid on its own but not on this link (a rate a
    /// wireless link does not have, for example).
    #[error("link {link}: {reason}")]
    Refused {
        /// The link, "a-b".
        link: String,
        /// The workers' reason.
        #[source]
        reason: ChangeRefusal,
    },
    /// Some worker did not answer within the time allowed.
    #[error("the emulator did not answer within {0:?}")]
    Timeout(Duration),
    /// The workers are gone (the run stopped).
    #[error("the emulator has stopped")]
    Stopped,
}

/// Orders the workers of one run and merges their answers. Cloning it gives another handle to
/// the same workers (the control socket's threads each hold one).
#[derive(Clone)]
pub struct Controller<C: Clock> {
    posts: Vec<Post>,
    clock: C,
    topology: Arc<Topology>,
}

impl<C: Clock> Controller<C> {
    /// Connects `drivers` as the workers of one run (worker k is `drivers[k]`; their engines
    /// must be the workers of one ownership, or the one engine of a single-worker run), so that
    /// they hand packets to each other, and returns the controller that orders them. `clock` is
    /// the run's, which the drivers share. Requests name nodes of `topology`, the topology as
    /// loaded (the engines' has the same links and pipes, with kernel routers' ports).
    pub fn connect<I: PacketIo>(
        drivers: &mut [Driver<I, C>],
        clock: C,
        topology: Topology,
    ) -> std::io::Result<Controller<C>> {
        let (inboxes, posts) = mailboxes(drivers.len())?;
        for (driver, inbox) in drivers.iter_mut().zip(inboxes) {
            driver.io_mut().watch(inbox.waker()?)?;
            driver.connect(inbox, posts.clone());
        }
        Ok(Controller {
            posts,
            clock,
            topology: Arc::new(topology),
        })
    }

    /// Connects `driver` as worker `me` of a run over several machines: it posts to the other
    /// workers through `remote` (by worker; `remote[me]` is not used) and is ordered by the
    /// controller returned, alone. Also returns its post, where hand-offs from the other
    /// machines are to be posted.
    pub(crate) fn connect_part<I: PacketIo>(
        driver: &mut Driver<I, C>,
        me: usize,
        remote: Vec<Arc<dyn Outbound>>,
        clock: C,
        topology: Topology,
    ) -> std::io::Result<(Controller<C>, Post)> {
        let (mut inboxes, mut posts) = mailboxes(1)?;
        let (inbox, post) = (inboxes.remove(0), posts.remove(0));
        driver.io_mut().watch(inbox.waker()?)?;
        let all = remote
            .into_iter()
            .enumerate()
            .map(|(k, out)| match k == me {
                true => post.clone(),
                false => Post::Remote(out),
            })
            .collect();
        driver.connect(inbox, all);
        let controller = Controller {
            posts: vec![post.clone()],
            clock,
            topology: Arc::new(topology),
        };
        Ok((controller, post))
    }

    /// The topology the workers emulate (as loaded; the pipes' current state is the workers').
    pub fn topology(&self) -> &Topology {
        &self.topology
    }

    /// The run's clock.
    pub fn clock(&self) -> &C {
        &self.clock
    }

    /// Changes parameters of the link between `a` and `b` from now on, in `direction`: `set` is
    /// a table of the topology file's link keys (`LinkPatch::from_table`).
    pub fn link_set(
        &self,
        a: &str,
        b: &str,
        direction: Direction,
        set: &serde_json::Map<String, serde_json::Value>,
    ) -> Result<Pending<LinkChange>, ControlError> {
        let pipes = pipes(&self.topology, a, b, direction)?;
        let label = format!("{a}-{b}");
        let patch = LinkPatch::from_table(set).map_err(|source| ControlError::Patch {
            link: label.clone(),
            source,
        })?;
        let change = Change {
            at: self.clock.now(),
            what: ChangeKind::Patch {
                pipes,
                patch: Box::new(patch),
            },
        };
        let done = LinkChange {
            link: label,
            direction,
            set: set.clone(),
            up: None,
            at_ns: change.at.as_nanos(),
        };
        Ok(self.apply(change, done))
    }

    /// Takes the link between `a` and `b` down (both directions) or brings it up, from now on;
    /// routes are recomputed.
    pub fn link_state(
        &self,
        a: &str,
        b: &str,
        up: bool,
    ) -> Result<Pending<LinkChange>, ControlError> {
        let (link, _) = link(&self.topology, a, b)?;
        let change = Change {
            at: self.clock.now(),
            what: ChangeKind::LinkUp { link, up },
        };
        let done = LinkChange {
            link: format!("{a}-{b}"),
            direction: Direction::Both,
            set: serde_json::Map::new(),
            up: Some(up),
            at_ns: change.at.as_nanos(),
        };
        Ok(self.apply(change, done))
    }

    /// Every worker's figures, merged.
    pub fn snapshot(&self) -> Pending<Snapshot> {
        self.ask(Order::Snapshot, |answers| {
            let mut merged: Option<Snapshot> = None;
            for answer in answers {
                let Answer::Snapshot(part) = answer else {
                    unreachable!("a snapshot order is answered with a snapshot")
                };
                match &mut merged {
                    Some(all) => all.merge(*part),
                    None => merged = Some(*part),
                }
            }
            merged.ok_or(ControlError::Stopped)
        })
    }

    /// Every worker's accuracy so far (one report per worker, in worker order).
    pub fn accuracy(&self) -> Pending<Vec<AccuracyReport>> {
        self.ask(Order::Accuracy, |answers| {
            Ok(answers
                .into_iter()
                .map(|answer| match answer {
                    Answer::Accuracy(report) => report,
                    _ => unreachable!("an accuracy order is answered with a report"),
                })
                .collect())
        })
    }

    /// Every worker's traffic since the last look, summed (the drivers must count it:
    /// `Driver::count_traffic`).
    pub(crate) fn traffic(&self) -> Pending<Traffic> {
        self.ask(Order::Traffic, |answers| {
            let mut merged: Option<Traffic> = None;
            for answer in answers {
                let Answer::Traffic(part) = answer else {
                    unreachable!("a traffic order is answered with traffic")
                };
                match &mut merged {
                    Some(all) => all.merge(*part),
                    None => merged = Some(*part),
                }
            }
            merged.ok_or(ControlError::Stopped)
        })
    }

    /// Moves the workers to `next` (the same workers, other owners) at `at` on the run's clock:
    /// each hands over what changes owner and goes on once it has every other's transfer
    /// (docs/live.md, "Dynamic repartitioning"). The answer sums what moved.
    pub fn repartition(&self, next: Arc<Ownership>, at: Instant) -> Pending<Moved> {
        self.ask(Order::Move(next, at), |answers| {
            Ok(merge_moved(answers.into_iter().map(
                |answer| match answer {
                    Answer::Moved(moved) => moved,
                    _ => unreachable!("a move is answered with what moved"),
                },
            )))
        })
    }

    /// Starts a capture on every worker (only the owners of its pipes see their packets).
    pub(crate) fn capture(&self, tap: crate::tap::Tap) -> Pending<()> {
        self.ask(Order::Capture(tap), |_| Ok(()))
    }

    /// Posts `change` to every worker; `done` is the result once all applied it.
    fn apply(&self, change: Change, done: LinkChange) -> Pending<LinkChange> {
        let change = Arc::new(change);
        let link = done.link.clone();
        self.ask(Order::Apply(change.clone()), move |answers| {
            for answer in answers {
                if let Answer::Applied(Err(reason)) = answer {
                    return Err(ControlError::Refused {
                        link: link.clone(),
                        reason,
                    });
                }
            }
            Ok(done.clone())
        })
    }

    /// Posts `order` (one per worker; a change is shared) and returns the answers to come,
    /// merged by `merge`.
    fn ask<T>(
        &self,
        order: Order,
        merge: impl FnOnce(Vec<Answer>) -> Result<T, ControlError> + Send + 'static,
    ) -> Pending<T> {
        let (tx, rx) = mpsc::channel();
        let mut posted = 0;
        for post in &self.posts {
            let copy = match &order {
                Order::Apply(change) => Order::Apply(change.clone()),
                Order::Snapshot => Order::Snapshot,
                Order::Accuracy => Order::Accuracy,
                Order::Capture(tap) => Order::Capture(tap.clone()),
                Order::Traffic => Order::Traffic,
                Order::Move(next, at) => Order::Move(next.clone(), *at),
            };
            if post.send(Message::Order(copy, tx.clone())) {
                posted += 1;
            }
        }
        Pending {
            rx,
            expected: posted,
            stopped: posted < self.posts.len(),
            answers: Vec::with_capacity(posted),
            merge: Box::new(merge),
        }
    }
}

/// The pipes of the link joining the nodes named `a` and `b`, in `direction` relative to
/// the order they are named in.
fn pipes(
    topo: &Topology,
    a: &str,
    b: &str,
    direction: Direction,
) -> Result<Vec<PipeId>, ControlError> {
    let (link, forward) = link(topo, a, b)?;
    let l = &topo.links[link as usize];
    // The pipes in the directions a→b and b→a as the request named the ends.
    let (ab, ba) = if forward { (l.ab, l.ba) } else { (l.ba, l.ab) };
    Ok(match direction {
        Direction::Both if ab == ba => vec![ab],
        Direction::Both => vec![ab, ba],
        Direction::AToB => vec![ab],
        Direction::BToA => vec![ba],
    })
}

/// The pipes a capture of `a` and `b` (a link, in `direction`) or of `a` alone (a node:
/// every link it has, both directions) means, each named for the capture file.
pub fn capture_pipes(
    topo: &Topology,
    a: &str,
    b: Option<&str>,
    direction: Direction,
) -> Result<Vec<(PipeId, Interface)>, ControlError> {
    let pipes = match b {
        Some(b) => pipes(topo, a, b, direction)?,
        None => {
            let node = node(topo, a)?;
            let mut pipes = Vec::new();
            for l in topo.links.iter().filter(|l| l.a == node || l.b == node) {
                pipes.push(l.ab);
                if l.ba != l.ab {
                    pipes.push(l.ba);
                }
            }
            pipes
        }
    };
    Ok(pipes
        .into_iter()
        .map(|p| {
            let spec = &topo.pipes[p as usize];
            let l = &topo.links[spec.link as usize];
            let (x, y) = (&topo.node(l.a).name, &topo.node(l.b).name);
            let (name, way) = match spec.direction {
                _ if l.ab == l.ba => (format!("{x}<->{y}"), "shared"),
                netloom_topo::Direction::AtoB => (format!("{x}->{y}"), "a-b"),
                netloom_topo::Direction::BtoA => (format!("{y}->{x}"), "b-a"),
            };
            let interface = Interface {
                name,
                description: format!("netloom link {x}-{y}, pipe {way}"),
                speed_bps: spec.config.rate.as_bps(),
            };
            (p, interface)
        })
        .collect())
}

/// The link joining the nodes named `a` and `b`, and whether it is written `a`→`b`.
fn link(topo: &Topology, a: &str, b: &str) -> Result<(LinkId, bool), ControlError> {
    let (na, nb) = (node(topo, a)?, node(topo, b)?);
    let mut found = topo.links_between(na, nb);
    match (found.next(), found.next()) {
        (Some(link), None) => Ok(link),
        (None, _) => Err(ControlError::NoLink {
            a: a.into(),
            b: b.into(),
        }),
        (Some(_), Some(_)) => Err(ControlError::SeveralLinks {
            a: a.into(),
            b: b.into(),
        }),
    }
}

fn node(topo: &Topology, name: &str) -> Result<NodeId, ControlError> {
    topo.node_id(name).ok_or_else(|| {
        let names: Vec<&str> = topo.nodes.iter().map(|n| n.name.as_str()).collect();
        ControlError::UnknownNode {
            name: name.into(),
            hint: did_you_mean(name, &names),
        }
    })
}

/// The answers of every worker to one order, still to come: `wait` for them (or, when the test
/// steps the drivers itself, step them first and then `wait`).
pub struct Pending<T> {
    rx: Receiver<Answer>,
    expected: usize,
    /// Some worker could not be posted to: the run is stopping.
    stopped: bool,
    answers: Vec<Answer>,
    merge: Box<dyn FnOnce(Vec<Answer>) -> Result<T, ControlError> + Send>,
}

impl<T> Pending<T> {
    /// Waits up to `timeout` for every answer and merges them.
    pub fn wait(mut self, timeout: Duration) -> Result<T, ControlError> {
        if self.stopped {
            return Err(ControlError::Stopped);
        }
        let deadline = std::time::Instant::now() + timeout;
        while self.answers.len() < self.expected {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(answer) => self.answers.push(answer),
                Err(mpsc::RecvTimeoutError::Timeout) => return Err(ControlError::Timeout(timeout)),
                Err(mpsc::RecvTimeoutError::Disconnected) => return Err(ControlError::Stopped),
            }
        }
        (self.merge)(self.answers)
    }
}
