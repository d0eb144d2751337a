//! The lock-step exchange over UDP: each round (one a window: the hand-offs, and the earliest
//! time of anything the sender holds) is one batch of GENEVE datagrams (docs/wire.md) to each
//! peer, sent even when empty. The batch's window field numbers rounds. Peers are addresses, on
//! this machine or others.

use netloom_engine::lockstep::Exchange;
use netloom_engine::{Handoff, HandoffBounds};
use netloom_wire::{decode, encode_batch, Header, Key, Payload, TAG_LEN};
use std::collections::{BTreeMap, HashMap};
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

/// How long a wait for datagrams lasts before the exchange looks at its peers' health.
const WATCH_EVERY: Duration = Duration::from_millis(50);
/// The receive buffer asked for: a window's hand-offs from every peer must fit while this worker
/// is busy with its own window, or the kernel drops datagrams.
const RECEIVE_BUFFER: usize = 64 << 20;
/// Without a single datagram for this long, with every peer alive, the missing ones are lost
/// (the default of `UdpExchange::lost_after`).
const LOST_AFTER: Duration = Duration::from_secs(10);

/// Why a trade failed.
#[derive(Debug, thiserror::Error)]
pub enum ExchangeError {
    /// The socket failed.
    #[error("worker {me}: UDP: {error}")]
    Io {
        /// This worker.
        me: u16,
        /// What failed.
        error: std::io::Error,
    },
    /// A peer sent what is not a netloom datagram.
    #[error("worker {me}: a datagram from worker {from}: {error}")]
    Wire {
        /// This worker.
        me: u16,
        /// The peer.
        from: u16,
        /// Why it does not decode.
        error: netloom_wire::WireError,
    },
    /// Datagrams stopped coming though every peer was alive.
    #[error(
        "worker {me}: round {round}: nothing came for {:.1} s, so datagrams were lost (a full \
         receive buffer? see net.core.rmem_max): {}",
        waited.as_secs_f64(),
        missing.join("; ")
    )]
    Lost {
        /// This worker.
        me: u16,
        /// The round waited for (the batches' window field).
        round: u64,
        /// What is missing, a peer each: `from worker 1: parts 1 and 3 of 0 to 4`.
        missing: Vec<String>,
        /// How long nothing came.
        waited: Duration,
    },
    /// The watcher said a peer is gone.
    #[error("{0}")]
    Peer(String),
    /// A peer's hand-off names what this worker's topology has not: the workers do not run
    /// the same topology (or a peer is broken); taking it in would corrupt the run.
    #[error("worker {me}: a hand-off from worker {from}: {error}")]
    OutOfBounds {
        /// This worker.
        me: u16,
        /// The peer.
        from: u16,
        /// What it names.
        error: netloom_engine::OutOfBounds,
    },
}

/// A batch being received: its parts so far.
#[derive(Default)]
struct Partial {
    parts: BTreeMap<u16, Vec<Handoff>>,
    /// The number of the part flagged last, once it came.
    last: Option<u16>,
    next: u64,
}

impl Partial {
    fn complete(&self) -> bool {
        self.last
            .is_some_and(|l| self.parts.len() == usize::from(l) + 1)
    }

    /// What has not come of the batch, in words: which parts, as far as the parts that came
    /// tell (the last one is flagged).
    fn missing(&self) -> String {
        let Some(&seen) = self.parts.keys().next_back() else {
            return "its whole batch (no datagram came)".into();
        };
        let end = self.last.unwrap_or(seen);
        let gaps: Vec<String> = (0..=end)
            .filter(|p| !self.parts.contains_key(p))
            .map(|p| p.to_string())
            .collect();
        let gaps = match gaps.is_empty() {
            true => String::new(),
            false => format!("part(s) {} of 0 to {end}", gaps.join(", ")),
        };
        match (self.last, gaps.is_empty()) {
            (Some(_), _) => gaps,
            (None, true) => format!("the parts after {seen} (none came flagged last)"),
            (None, false) => format!("{gaps}, and the parts after {seen} (none came flagged last)"),
        }
    }
}

/// Worker `me`'s end of the exchange.
pub struct UdpExchange {
    socket: UdpSocket,
    me: u16,
    /// Every worker's address, this one's included, by worker number.
    peers: Vec<SocketAddr>,
    vni: u32,
    /// The run's secret: every datagram is sealed with it, and one without its tag is refused.
    key: Key,
    /// What a peer's hand-offs must stay below (this worker's engine's).
    bounds: Option<HandoffBounds>,
    max_datagram: usize,
    /// Datagrams refused: without the run's tag, from elsewhere than a peer's address, or of
    /// another run or another worker.
    refused: u64,
    /// Batches received ahead of the window this worker is in, by sender and window.
    early: HashMap<(u16, u64), Partial>,
    /// Called while waiting, to stop if a peer died.
    watch: Box<dyn FnMut() -> Result<(), String>>,
    /// Wall time spent waiting for peers.
    waited: Duration,
    /// Rounds so far: the number of the batches of the last one.
    rounds: u64,
    /// How long nothing may come before the missing datagrams are taken as lost.
    lost_after: Duration,
    buffer: Vec<u8>,
}

impl UdpExchange {
    /// Binds worker `me`'s socket at `addr` (port 0: any), with a receive buffer as large as
    /// allowed.
    pub fn bind(addr: SocketAddr, me: u16) -> std::io::Result<UdpExchange> {
        let socket = UdpSocket::bind(addr)?;
        netloom_os::set_receive_buffer(&socket, RECEIVE_BUFFER)?;
        socket.set_read_timeout(Some(WATCH_EVERY))?;
        Ok(UdpExchange {
            socket,
            me,
            peers: Vec::new(),
            vni: 0,
            key: Key::random(),
            bounds: None,
            max_datagram: 0,
            refused: 0,
            early: HashMap::new(),
            watch: Box::new(|| Ok(())),
            waited: Duration::ZERO,
            rounds: 0,
            lost_after: LOST_AFTER,
            buffer: vec![0; 1 << 16],
        })
    }

    /// The address peers send to.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.socket.local_addr()
    }

    /// Joins the run `vni` with secret `key` whose workers are at `peers` (by worker number,
    /// this one's included), sending datagrams of at most `max_datagram` bytes (the tag
    /// included) and taking in hand-offs within `bounds`; `watch` is called every 50 ms of
    /// waiting and stops the run with its error.
    pub fn connect(
        &mut self,
        peers: Vec<SocketAddr>,
        (vni, key): (u32, Key),
        (max_datagram, bounds): (usize, HandoffBounds),
        watch: Box<dyn FnMut() -> Result<(), String>>,
    ) {
        (self.peers, self.vni, self.key) = (peers, vni, key);
        (self.max_datagram, self.bounds, self.watch) = (max_datagram, Some(bounds), watch);
    }

    /// Datagrams refused so far (a stranger's, or not this run's).
    pub fn refused(&self) -> u64 {
        self.refused
    }

    /// Takes datagrams as lost after `wait` without any (10 s unless set).
    pub fn lost_after(&mut self, wait: Duration) {
        self.lost_after = wait;
    }

    /// Wall time spent waiting for the others so far.
    pub fn waited(&self) -> Duration {
        self.waited
    }

    fn io(&self, error: std::io::Error) -> ExchangeError {
        ExchangeError::Io { me: self.me, error }
    }

    /// One round: sends `out[k]` (nothing if `out` is empty) and `next` to each other worker
    /// k as a batch numbered by this round, receives theirs into `into`, and returns the least
    /// `next`, this worker's included. Rounds are numbered alike on every worker: each makes
    /// the same calls.
    fn round(
        &mut self,
        out: &mut [Vec<Handoff>],
        next: u64,
        into: &mut Vec<Handoff>,
    ) -> Result<u64, ExchangeError> {
        self.rounds += 1;
        let window = self.rounds;
        for to in 0..self.peers.len() {
            if to == usize::from(self.me) {
                continue;
            }
            let header = Header {
                vni: self.vni,
                from: self.me,
                to: to as u16,
                window,
                part: 0,
                last: true,
                next_ns: next,
            };
            let batch = out.get(to).map_or(&[][..], Vec::as_slice);
            let room = self.max_datagram.saturating_sub(TAG_LEN);
            let datagrams =
                encode_batch(&header, batch, room).map_err(|error| ExchangeError::Wire {
                    me: self.me,
                    from: self.me,
                    error,
                })?;
            for mut d in datagrams {
                self.key.seal(&mut d);
                self.socket
                    .send_to(&d, self.peers[to])
                    .map_err(|e| self.io(e))?;
            }
        }
        out.iter_mut().for_each(Vec::clear);
        let mut earliest = next;
        for (_, partial) in self.gather(window)? {
            earliest = earliest.min(partial.next);
            into.extend(partial.parts.into_values().flatten());
        }
        Ok(earliest)
    }

    /// Receives until the batch of `window` from every peer is complete.
    fn gather(&mut self, window: u64) -> Result<BTreeMap<u16, Partial>, ExchangeError> {
        let others: Vec<u16> = (0..self.peers.len() as u16)
            .filter(|&k| k != self.me)
            .collect();
        let mut batches: BTreeMap<u16, Partial> = others
            .iter()
            .map(|&k| (k, self.early.remove(&(k, window)).unwrap_or_default()))
            .collect();
        let started = Instant::now();
        let mut heard = started;
        while !batches.values().all(Partial::complete) {
            let (len, from_addr) = match self.socket.recv_from(&mut self.buffer) {
                Ok(got) => got,
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    (self.watch)().map_err(ExchangeError::Peer)?;
                    if heard.elapsed() >= self.lost_after {
                        return Err(ExchangeError::Lost {
                            me: self.me,
                            round: window,
                            missing: batches
                                .iter()
                                .filter(|(_, p)| !p.complete())
                                .map(|(k, p)| format!("from worker {k}: {}", p.missing()))
                                .collect(),
                            waited: self.lost_after,
                        });
                    }
                    continue;
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(self.io(e)),
            };
            heard = Instant::now();
            // Only peers are heard, and only with the run's tag: anything else on the port is
            // not this run's (a stranger can send from a peer's address, not seal).
            let from = self.peers.iter().position(|a| *a == from_addr);
            let opened = self.key.open(&self.buffer[..len]);
            let (Some(from), Ok(opened)) = (from, opened) else {
                self.refused += 1;
                continue;
            };
            let datagram = decode(opened).map_err(|error| ExchangeError::Wire {
                me: self.me,
                from: from as u16,
                error,
            })?;
            let h = datagram.header;
            if h.vni != self.vni || h.to != self.me || h.from != from as u16 {
                self.refused += 1;
                continue;
            }
            let Payload::Descriptors(handoffs) = datagram.payload else {
                self.refused += 1;
                continue;
            };
            if let Some(bounds) = &self.bounds {
                for handoff in &handoffs {
                    handoff
                        .check(bounds)
                        .map_err(|error| ExchangeError::OutOfBounds {
                            me: self.me,
                            from: h.from,
                            error,
                        })?;
                }
            }
            let partial = match h.window.cmp(&window) {
                std::cmp::Ordering::Equal => batches.get_mut(&h.from).expect("a peer"),
                // A peer already a window ahead (never more: it waits for this worker's batch
                // of the window between): keep its batch for the next trade.
                std::cmp::Ordering::Greater if h.window == window + 1 => {
                    self.early.entry((h.from, h.window)).or_default()
                }
                _ => continue,
            };
            partial.parts.insert(h.part, handoffs);
            partial.next = h.next_ns;
            if h.last {
                partial.last = Some(h.part);
            }
        }
        self.waited += started.elapsed();
        Ok(batches)
    }
}

impl Exchange for UdpExchange {
    type Error = ExchangeError;

    fn trade(
        &mut self,
        _window: u64,
        next: u64,
        out: &mut [Vec<Handoff>],
        into: &mut Vec<Handoff>,
    ) -> Result<u64, ExchangeError> {
        self.round(out, next, into)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use netloom_engine::lockstep::Exchange;

    fn localhost() -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], 0))
    }

    /// Worker 0's exchange, its peer worker 1 a bare socket the test speaks for.
    fn pair(watch: Box<dyn FnMut() -> Result<(), String>>) -> (UdpExchange, UdpSocket, SocketAddr) {
        let mut exchange = UdpExchange::bind(localhost(), 0).unwrap();
        let peer = UdpSocket::bind(localhost()).unwrap();
        let peers = vec![exchange.local_addr().unwrap(), peer.local_addr().unwrap()];
        let bounds = HandoffBounds {
            pipes: 1,
            nodes: 1,
            hosts: 1,
            flows: 1,
            workers: 2,
        };
        exchange.connect(peers, (7, key()), (1400, bounds), watch);
        let to = exchange.local_addr().unwrap();
        (exchange, peer, to)
    }

    /// The test run's secret.
    fn key() -> Key {
        Key::from_hex(&"07".repeat(32)).unwrap()
    }

    fn batch(window: u64, next_ns: u64, vni: u32) -> Vec<u8> {
        let header = Header {
            vni,
            from: 1,
            to: 0,
            window,
            part: 0,
            last: true,
            next_ns,
        };
        let mut d = encode_batch(&header, &[], 1400).unwrap().remove(0);
        key().seal(&mut d);
        d
    }

    #[test]
    fn only_the_peers_datagrams_of_this_run_count() {
        let (mut exchange, peer, to) = pair(Box::new(|| Ok(())));
        let stranger = UdpSocket::bind(localhost()).unwrap();
        // From a stranger, from the peer for another run, from the peer's address without the
        // run's tag, and two windows ahead: none ends the round.
        stranger.send_to(&batch(1, 5, 7), to).unwrap();
        peer.send_to(&batch(1, 5, 8), to).unwrap();
        let unsealed = batch(1, 5, 7);
        peer.send_to(&unsealed[..unsealed.len() - TAG_LEN], to)
            .unwrap();
        peer.send_to(&batch(3, 5, 7), to).unwrap();
        // The peer's own, for this round and the next (a peer a round ahead).
        peer.send_to(&batch(1, 300, 7), to).unwrap();
        peer.send_to(&batch(2, 20, 7), to).unwrap();
        let mut none = Vec::new();
        assert_eq!(exchange.trade(0, 1000, &mut [], &mut none).unwrap(), 300);
        assert_eq!(
            exchange.trade(1, 1000, &mut [], &mut none).unwrap(),
            20,
            "the early batch was kept"
        );
        assert_eq!(
            exchange.refused(),
            3,
            "the stranger's, another run's, the unsealed one"
        );
        // What the exchange sent the peer: its bound, in a sealed batch of the same run.
        let mut buf = [0u8; 1500];
        let (len, _) = peer.recv_from(&mut buf).unwrap();
        let d = decode(key().open(&buf[..len]).unwrap()).unwrap();
        assert_eq!(
            (d.header.vni, d.header.window, d.header.next_ns),
            (7, 1, 1000)
        );
    }

    /// The peer's batch for round 1, of `parts` datagrams of one hand-off each.
    fn split_batch(parts: usize) -> Vec<Vec<u8>> {
        let handoff = netloom_engine::Handoff::from_bytes(&[0; netloom_engine::DESCRIPTOR_LEN])
            .expect("a hand-off of zeros decodes");
        let header = Header {
            vni: 7,
            from: 1,
            to: 0,
            window: 1,
            part: 0,
            last: true,
            next_ns: 0,
        };
        let one = encode_batch(&header, &[handoff], 1400).unwrap()[0].len();
        let mut batch = encode_batch(&header, &vec![handoff; parts], one).unwrap();
        batch.iter_mut().for_each(|d| key().seal(d));
        batch
    }

    #[test]
    fn a_lost_datagram_stops_the_round_naming_the_worker_and_the_parts_missing() {
        let lost = |dropped: &[usize]| {
            let (mut exchange, peer, to) = pair(Box::new(|| Ok(())));
            exchange.lost_after(Duration::from_millis(200));
            for (k, d) in split_batch(4).iter().enumerate() {
                if !dropped.contains(&k) {
                    peer.send_to(d, to).unwrap();
                }
            }
            let mut into = Vec::new();
            let err = exchange.trade(0, u64::MAX, &mut [], &mut into).unwrap_err();
            assert!(matches!(
                err,
                ExchangeError::Lost {
                    me: 0,
                    round: 1,
                    ..
                }
            ));
            err.to_string()
        };
        assert_eq!(
            lost(&[1]),
            "worker 0: round 1: nothing came for 0.2 s, so datagrams were lost (a full receive \
             buffer? see net.core.rmem_max): from worker 1: part(s) 1 of 0 to 3"
        );
        assert!(
            lost(&[3]).ends_with("from worker 1: the parts after 2 (none came flagged last)"),
            "{}",
            lost(&[3])
        );
        assert!(lost(&[0, 1, 2, 3]).ends_with("from worker 1: its whole batch (no datagram came)"));
    }

    #[test]
    fn a_peers_hand_off_past_this_workers_topology_stops_the_run_instead_of_the_engine() {
        let (mut exchange, peer, to) = pair(Box::new(|| Ok(())));
        // split_batch's hand-off of zeros enters pipe 0 at node 0 for host 0: within bounds.
        for d in split_batch(1) {
            peer.send_to(&d, to).unwrap();
        }
        let mut into = Vec::new();
        exchange.trade(0, u64::MAX, &mut [], &mut into).unwrap();
        assert_eq!(into.len(), 1);
        // The same naming host 5 of a topology of one.
        let mut past = [0u8; netloom_engine::DESCRIPTOR_LEN];
        past[48..52].copy_from_slice(&5u32.to_be_bytes());
        let past = netloom_engine::Handoff::from_bytes(&past).unwrap();
        let header = Header {
            vni: 7,
            from: 1,
            to: 0,
            window: 2,
            part: 0,
            last: true,
            next_ns: 0,
        };
        let mut d = encode_batch(&header, &[past], 1400).unwrap().remove(0);
        key().seal(&mut d);
        peer.send_to(&d, to).unwrap();
        let err = exchange.trade(1, u64::MAX, &mut [], &mut into).unwrap_err();
        assert_eq!(
            err.to_string(),
            "worker 0: a hand-off from worker 1: host 5 is not a host of the topology"
        );
    }

    #[test]
    fn a_dead_peer_ends_the_wait() {
        let (mut exchange, _peer, _) = pair(Box::new(|| Err("worker 1 died".to_string())));
        let err = exchange.trade(0, 0, &mut [], &mut Vec::new()).unwrap_err();
        assert_eq!(err.to_string(), "worker 1 died");
    }
}
