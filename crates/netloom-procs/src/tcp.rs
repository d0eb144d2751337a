//! The lock-step exchange over TCP: one connection per pair of workers, made at the start (the
//! higher-numbered worker connects and says who it is in a sealed hello), TCP_NODELAY, and each
//! round a batch of frames (`frames`) to each peer, sent even when empty. TCP neither loses nor
//! reorders, so no round waits for a datagram that will never come. Sockets are non-blocking,
//! so a batch larger than the kernel's buffers cannot deadlock two workers writing to each
//! other: each reads while its own writes wait. Peers are addresses, here or on other machines.

use crate::exchange::{Exchange, ExchangeError};
use crate::frames::{self, Batch, Check, Ends, LENGTH_LEN};
use netloom_engine::{lockstep, Handoff, HandoffBounds};
use netloom_os::Poller;
use netloom_wire::Key;
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

/// How long a wait for peers lasts before the exchange asks its watcher about their health.
const WATCH_EVERY: Duration = Duration::from_millis(50);
/// How soon a write the kernel could not take all of is tried again (the poller tells of
/// readable sockets only).
const WRITE_RETRY: Duration = Duration::from_millis(1);
/// How long the start waits for a peer's connection, and a connection for its hello: peers
/// connect as soon as they know the addresses, so only a stalled machine takes this long.
pub const CONNECT_WAIT: Duration = Duration::from_secs(60);
/// How long an accepted connection may take to say who it is: a stranger's silent one holds
/// the start no longer.
pub const HELLO_WAIT: Duration = Duration::from_secs(1);
/// The longest hello: an empty batch, sealed, with its length (60 bytes).
const HELLO_MAX: usize = 64;
/// Bytes asked of a socket at a time.
const READ_CHUNK: usize = 64 << 10;

/// Called while waiting: an error stops the run (a peer process died).
pub type Watch = Box<dyn FnMut() -> Result<(), String>>;

/// The run a worker joins: its VNI, its secret, and what peers' hand-offs must stay below
/// (this worker's engine's).
pub struct Run {
    /// The run's VNI.
    pub vni: u32,
    /// The run's secret, which seals every frame.
    pub key: Key,
    /// What a peer's hand-offs must stay below.
    pub bounds: HandoffBounds,
}

/// Worker `me`'s listening socket, bound before the peers' addresses are known.
pub struct Listener {
    listener: TcpListener,
    me: u16,
}

/// One peer's connection and where its rounds stand.
struct Peer {
    stream: TcpStream,
    /// Frames to send, from `sent` on.
    out: Vec<u8>,
    sent: usize,
    /// Bytes received, taken up to `taken` (what is past it belongs to a later round).
    input: Vec<u8>,
    taken: usize,
    batch: Batch,
    /// Its end closed (at the end of the run, once it has everything).
    closed: bool,
}

/// Worker `me`'s end of the exchange, connected to every peer.
pub struct TcpExchange {
    me: u16,
    run: Run,
    /// Every worker's connection by worker number, none for this one.
    peers: Vec<Option<Peer>>,
    poller: Poller,
    ready: Vec<u32>,
    /// What a socket read goes through.
    scratch: Vec<u8>,
    watch: Watch,
    waited: Duration,
    /// Rounds so far: the number of the last one's batches.
    rounds: u64,
}

impl Listener {
    /// Listens for worker `me`'s peers at `addr` (port 0: any).
    pub fn bind(addr: SocketAddr, me: u16) -> std::io::Result<Listener> {
        Ok(Listener {
            listener: TcpListener::bind(addr)?,
            me,
        })
    }

    /// The address peers connect to.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Connects to the workers at `peers` (by worker number, this one's included): to each
    /// lower-numbered one, and from each higher-numbered one, whose hello must be sealed with
    /// the run's secret and come from its address; anything else is closed unread. `watch` is
    /// asked every 50 ms of waiting. Stops listening once all are connected.
    pub fn connect(
        self,
        peers: &[SocketAddr],
        run: Run,
        mut watch: Watch,
    ) -> Result<TcpExchange, ExchangeError> {
        let me = self.me;
        let mut streams: Vec<Option<TcpStream>> = peers.iter().map(|_| None).collect();
        for (k, &address) in peers.iter().enumerate().take(usize::from(me)) {
            let peer = k as u16;
            let mut stream =
                TcpStream::connect_timeout(&address, CONNECT_WAIT).map_err(|error| {
                    ExchangeError::Connect {
                        me,
                        peer,
                        address,
                        error,
                    }
                })?;
            let ends = Ends {
                vni: run.vni,
                from: me,
                to: peer,
            };
            let mut hello = Vec::new();
            frames::put(&mut hello, ends, (0, 0), &[], &run.key)
                .map_err(|e| frame_error(me, peer, e))?;
            stream
                .write_all(&hello)
                .map_err(|error| ExchangeError::Io { me, peer, error })?;
            streams[k] = Some(stream);
        }
        self.accept(peers, &run, &mut streams, &mut watch)?;
        let mut poller = Poller::new().map_err(|e| poll_error(me, e))?;
        let mut connected = Vec::with_capacity(streams.len());
        for (k, stream) in streams.into_iter().enumerate() {
            let Some(stream) = stream else {
                connected.push(None);
                continue;
            };
            let io = |error| ExchangeError::Io {
                me,
                peer: k as u16,
                error,
            };
            stream.set_nonblocking(true).map_err(io)?;
            // A round's batch is small and awaited at once: Nagle's delay would add to every
            // window.
            stream.set_nodelay(true).map_err(io)?;
            poller
                .add(stream.as_fd(), k as u32)
                .map_err(|e| poll_error(me, e))?;
            connected.push(Some(Peer {
                stream,
                out: Vec::new(),
                sent: 0,
                input: Vec::new(),
                taken: 0,
                batch: Batch::default(),
                closed: false,
            }));
        }
        Ok(TcpExchange {
            me,
            run,
            peers: connected,
            poller,
            ready: Vec::new(),
            scratch: vec![0; READ_CHUNK],
            watch,
            waited: Duration::ZERO,
            rounds: 0,
        })
    }

    /// Accepts the higher-numbered workers' connections into `streams`.
    fn accept(
        &self,
        peers: &[SocketAddr],
        run: &Run,
        streams: &mut [Option<TcpStream>],
        watch: &mut Watch,
    ) -> Result<(), ExchangeError> {
        let me = self.me;
        let io = |error: std::io::Error| poll_error(me, error);
        self.listener.set_nonblocking(true).map_err(io)?;
        let mut poller = Poller::new().map_err(|e| poll_error(me, e))?;
        poller
            .add(self.listener.as_fd(), 0)
            .map_err(|e| poll_error(me, e))?;
        let started = Instant::now();
        let mut ready = Vec::new();
        loop {
            let missing: Vec<u16> = (usize::from(me) + 1..peers.len())
                .filter(|&k| streams[k].is_none())
                .map(|k| k as u16)
                .collect();
            if missing.is_empty() {
                return Ok(());
            }
            if started.elapsed() >= CONNECT_WAIT {
                return Err(ExchangeError::NotConnected {
                    me,
                    missing,
                    waited: CONNECT_WAIT,
                });
            }
            match self.listener.accept() {
                Ok((mut stream, from)) => {
                    if let Some(k) = self.hello(&mut stream, from, peers, run, &missing) {
                        streams[usize::from(k)] = Some(stream);
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    watch().map_err(ExchangeError::Peer)?;
                    poller
                        .wait(Some(WATCH_EVERY), &mut ready)
                        .map_err(|e| poll_error(me, e))?;
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(io(e)),
            }
        }
    }

    /// Which of the `missing` workers `stream`, from `from`, is: the one whose sealed hello it
    /// sends within `HELLO_WAIT`, from that worker's address. None for anything else.
    fn hello(
        &self,
        stream: &mut TcpStream,
        from: SocketAddr,
        peers: &[SocketAddr],
        run: &Run,
        missing: &[u16],
    ) -> Option<u16> {
        stream.set_nonblocking(false).ok()?;
        stream.set_read_timeout(Some(HELLO_WAIT)).ok()?;
        let mut length = [0u8; LENGTH_LEN];
        stream.read_exact(&mut length).ok()?;
        let len = u32::from_be_bytes(length) as usize;
        if len > HELLO_MAX {
            return None;
        }
        let mut bytes = length.to_vec();
        bytes.resize(LENGTH_LEN + len, 0);
        stream.read_exact(&mut bytes[LENGTH_LEN..]).ok()?;
        stream.set_read_timeout(None).ok()?;
        missing.iter().copied().find(|&k| {
            let check = Check {
                key: &run.key,
                ends: Ends {
                    vni: run.vni,
                    from: k,
                    to: self.me,
                },
                window: 0,
                bounds: &run.bounds,
            };
            let (mut at, mut batch) = (0, Batch::default());
            peers[usize::from(k)].ip() == from.ip()
                && check
                    .take(&bytes, &mut at, &mut batch, &mut Vec::new())
                    .is_ok()
                && batch.done
        })
    }
}

fn frame_error(me: u16, peer: u16, e: netloom_wire::WireError) -> ExchangeError {
    ExchangeError::Frame {
        me,
        peer,
        what: format!("cannot be made: {e}"),
    }
}

fn poll_error(me: u16, e: impl std::fmt::Display) -> ExchangeError {
    ExchangeError::Wait {
        me,
        error: e.to_string(),
    }
}

/// Whether a socket error means the other end is gone.
fn gone(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::BrokenPipe | ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted
    )
}

impl Peer {
    /// Writes what the kernel takes of the frames to send; whether all went.
    fn flush(&mut self, me: u16, peer: u16) -> Result<bool, ExchangeError> {
        while self.sent < self.out.len() {
            match self.stream.write(&self.out[self.sent..]) {
                Ok(n) => self.sent += n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if gone(&e) => return Err(ExchangeError::Closed { me, peer }),
                Err(error) => return Err(ExchangeError::Io { me, peer, error }),
            }
        }
        self.out.clear();
        self.sent = 0;
        Ok(true)
    }

    /// Reads what the socket has, through `scratch`; an end that closed is marked so.
    fn read(&mut self, me: u16, peer: u16, scratch: &mut [u8]) -> Result<(), ExchangeError> {
        loop {
            match self.stream.read(scratch) {
                Ok(0) => {
                    self.closed = true;
                    return Ok(());
                }
                Ok(n) => {
                    self.input.extend_from_slice(&scratch[..n]);
                    // Short of the buffer: most likely all there was, and a read that would
                    // only say so costs a system call a round; the poller (level-triggered)
                    // wakes again if more is there.
                    if n < scratch.len() {
                        return Ok(());
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if gone(&e) => {
                    self.closed = true;
                    return Ok(());
                }
                Err(error) => return Err(ExchangeError::Io { me, peer, error }),
            }
        }
    }
}

impl TcpExchange {
    /// Waits until worker `peer` closes its end, dropping what it sends: a worker that saw
    /// another die leaves it to the coordinator (worker 0) to stop the run and say which.
    pub fn wait_for_close(&mut self, peer: u16) {
        if let Some(Some(p)) = self.peers.get_mut(usize::from(peer)) {
            let _ = p.stream.set_nonblocking(false);
            let mut sink = [0u8; 4096];
            while matches!(p.stream.read(&mut sink), Ok(n) if n > 0) {}
        }
    }

    /// Sends this round's frames, and takes every peer's batch of round `window` into `into`.
    fn gather(&mut self, window: u64, into: &mut Vec<Handoff>) -> Result<(), ExchangeError> {
        let me = self.me;
        loop {
            let mut flushed = true;
            let mut done = true;
            for (k, peer) in self.peers.iter_mut().enumerate() {
                let Some(peer) = peer else { continue };
                flushed &= peer.flush(me, k as u16)?;
                let check = Check {
                    key: &self.run.key,
                    ends: Ends {
                        vni: self.run.vni,
                        from: k as u16,
                        to: me,
                    },
                    window,
                    bounds: &self.run.bounds,
                };
                check.take(&peer.input, &mut peer.taken, &mut peer.batch, into)?;
                if !peer.batch.done && peer.closed {
                    return Err(ExchangeError::Closed { me, peer: k as u16 });
                }
                done &= peer.batch.done;
            }
            if done && flushed {
                return Ok(());
            }
            let wait = if flushed { WATCH_EVERY } else { WRITE_RETRY };
            self.poller
                .wait(Some(wait), &mut self.ready)
                .map_err(|e| poll_error(me, e))?;
            if self.ready.is_empty() {
                (self.watch)().map_err(ExchangeError::Peer)?;
            }
            for &k in &self.ready {
                let peer = self.peers[k as usize].as_mut().expect("a peer's token");
                peer.read(me, k as u16, &mut self.scratch)?;
                if peer.closed {
                    // Level-triggered: a closed end would wake every wait from now on.
                    self.poller
                        .remove(peer.stream.as_fd())
                        .map_err(|e| poll_error(me, e))?;
                }
            }
        }
    }
}

impl lockstep::Exchange for TcpExchange {
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
        for (k, peer) in self.peers.iter_mut().enumerate() {
            let Some(peer) = peer else { continue };
            let ends = Ends {
                vni: self.run.vni,
                from: me,
                to: k as u16,
            };
            let batch = out.get(k).map_or(&[][..], Vec::as_slice);
            frames::put(&mut peer.out, ends, (window, next), batch, &self.run.key)
                .map_err(|e| frame_error(me, k as u16, e))?;
            peer.batch = Batch::default();
        }
        out.iter_mut().for_each(Vec::clear);
        let started = Instant::now();
        self.gather(window, into)?;
        self.waited += started.elapsed();
        let mut earliest = next;
        for peer in self.peers.iter_mut().flatten() {
            earliest = earliest.min(peer.batch.next);
            // What is left belongs to the next round.
            peer.input.drain(..peer.taken);
            peer.taken = 0;
        }
        Ok(earliest)
    }
}

impl Exchange for TcpExchange {
    fn waited(&self) -> Duration {
        self.waited
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockstep::Exchange as _;

    const BOUNDS: HandoffBounds = HandoffBounds {
        pipes: 1,
        nodes: 1,
        hosts: 1,
        flows: 1,
        workers: 2,
    };

    fn key() -> Key {
        Key::from_hex(&"07".repeat(32)).unwrap()
    }

    fn run() -> Run {
        Run {
            vni: 7,
            key: key(),
            bounds: BOUNDS,
        }
    }

    fn localhost() -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], 0))
    }

    /// Worker 1's frames to worker 0 of round `window`.
    fn frames(window: u64, next: u64, handoffs: &[Handoff]) -> Vec<u8> {
        let ends = Ends {
            vni: 7,
            from: 1,
            to: 0,
        };
        let mut out = Vec::new();
        frames::put(&mut out, ends, (window, next), handoffs, &key()).unwrap();
        out
    }

    /// Worker 0's exchange, its peer worker 1 a bare connection the test speaks for.
    fn pair(watch: Watch) -> (TcpExchange, TcpStream) {
        let listener = Listener::bind(localhost(), 0).unwrap();
        let at = listener.local_addr().unwrap();
        let mut peer = TcpStream::connect(at).unwrap();
        peer.write_all(&frames(0, 0, &[])).unwrap();
        let peers = [at, peer.local_addr().unwrap()];
        (listener.connect(&peers, run(), watch).unwrap(), peer)
    }

    fn zeros() -> Handoff {
        Handoff::from_bytes(&[0; netloom_engine::DESCRIPTOR_LEN]).unwrap()
    }

    #[test]
    fn a_peer_that_stalls_is_waited_for_however_long_and_its_batch_taken() {
        let (mut exchange, mut peer) = pair(Box::new(|| Ok(())));
        let stall = Duration::from_millis(400);
        let sender = std::thread::spawn(move || {
            std::thread::sleep(stall);
            // The round's batch cut in two writes with a pause between: a frame that comes in
            // pieces is put together.
            let bytes = frames(1, 300, &[zeros(), zeros()]);
            peer.write_all(&bytes[..10]).unwrap();
            std::thread::sleep(Duration::from_millis(50));
            peer.write_all(&bytes[10..]).unwrap();
            peer
        });
        let mut into = Vec::new();
        let started = Instant::now();
        assert_eq!(exchange.trade(0, 1000, &mut [], &mut into).unwrap(), 300);
        assert!(started.elapsed() >= stall);
        assert!(exchange.waited() >= stall);
        assert_eq!(into.len(), 2);
        // What the peer got: worker 0's sealed batch of round 1 with its bound.
        let mut peer = sender.join().unwrap();
        let mut got = vec![0u8; frames(1, 0, &[]).len()];
        peer.read_exact(&mut got).unwrap();
        let check = Check {
            key: &key(),
            ends: Ends {
                vni: 7,
                from: 0,
                to: 1,
            },
            window: 1,
            bounds: &BOUNDS,
        };
        let (mut at, mut batch) = (0, Batch::default());
        check.take(&got, &mut at, &mut batch, &mut into).unwrap();
        assert_eq!((batch.done, batch.next), (true, 1000));
    }

    #[test]
    fn strangers_connections_do_not_take_a_peers_place() {
        let listener = Listener::bind(localhost(), 0).unwrap();
        let at = listener.local_addr().unwrap();
        // A silent one, one sealed with another secret, one of another run, and one from the
        // coordinator's own number: each closed, and the real worker 1 is taken after them.
        let silent = TcpStream::connect(at).unwrap();
        let mut forged = TcpStream::connect(at).unwrap();
        let mut other_run = TcpStream::connect(at).unwrap();
        let stranger = Key::from_hex(&"08".repeat(32)).unwrap();
        let ends = Ends {
            vni: 7,
            from: 1,
            to: 0,
        };
        let mut bytes = Vec::new();
        frames::put(&mut bytes, ends, (0, 0), &[], &stranger).unwrap();
        forged.write_all(&bytes).unwrap();
        bytes.clear();
        frames::put(&mut bytes, Ends { vni: 8, ..ends }, (0, 0), &[], &key()).unwrap();
        other_run.write_all(&bytes).unwrap();
        let mut peer = TcpStream::connect(at).unwrap();
        peer.write_all(&frames(0, 0, &[])).unwrap();
        let peers = [at, peer.local_addr().unwrap()];
        let started = Instant::now();
        let mut exchange = listener
            .connect(&peers, run(), Box::new(|| Ok(())))
            .unwrap();
        assert!(
            started.elapsed() >= HELLO_WAIT,
            "the silent one was waited for"
        );
        peer.write_all(&frames(1, 5, &[])).unwrap();
        assert_eq!(
            exchange.trade(0, 1000, &mut [], &mut Vec::new()).unwrap(),
            5
        );
        for mut refused in [silent, forged, other_run] {
            refused.set_read_timeout(Some(HELLO_WAIT)).unwrap();
            assert!(matches!(refused.read(&mut [0u8; 64]), Ok(0) | Err(_)));
        }
    }

    #[test]
    fn a_peer_that_closes_before_its_batch_ends_the_wait_naming_it() {
        let (mut exchange, mut peer) = pair(Box::new(|| Ok(())));
        // Half a frame, then gone.
        peer.write_all(&frames(1, 5, &[])[..20]).unwrap();
        drop(peer);
        let err = exchange.trade(0, 0, &mut [], &mut Vec::new()).unwrap_err();
        assert_eq!(err.to_string(), "worker 0: worker 1 closed its connection");
    }

    #[test]
    fn a_dead_peer_process_ends_the_wait() {
        let (mut exchange, _peer) = pair(Box::new(|| Err("worker 1 died".to_string())));
        let err = exchange.trade(0, 0, &mut [], &mut Vec::new()).unwrap_err();
        assert_eq!(err.to_string(), "worker 1 died");
    }

    #[test]
    fn a_peers_hand_off_past_this_workers_topology_stops_the_run_instead_of_the_engine() {
        let (mut exchange, mut peer) = pair(Box::new(|| Ok(())));
        let mut past = [0u8; netloom_engine::DESCRIPTOR_LEN];
        past[48..52].copy_from_slice(&5u32.to_be_bytes());
        let past = Handoff::from_bytes(&past).unwrap();
        peer.write_all(&frames(1, 0, &[past])).unwrap();
        let err = exchange.trade(0, 0, &mut [], &mut Vec::new()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "worker 0: a hand-off from worker 1: host 5 is not a host of the topology"
        );
    }

    #[test]
    fn batches_larger_than_the_sockets_buffers_cross_both_ways_at_once() {
        // 300,000 hand-offs (19 MB) each way: both workers write before either reads, which
        // would block both for ever if a write waited for the kernel to take all of it.
        let listeners = [0u16, 1].map(|k| Listener::bind(localhost(), k).unwrap());
        let peers: Vec<SocketAddr> = listeners.iter().map(|l| l.local_addr().unwrap()).collect();
        let threads = listeners.map(|listener| {
            let peers = peers.clone();
            std::thread::spawn(move || {
                let me = usize::from(listener.me);
                let mut exchange = listener
                    .connect(&peers, run(), Box::new(|| Ok(())))
                    .unwrap();
                let mut out = vec![Vec::new(), Vec::new()];
                out[1 - me] = vec![zeros(); 300_000];
                let mut into = Vec::new();
                let earliest = exchange.trade(0, me as u64, &mut out, &mut into).unwrap();
                (earliest, into.len())
            })
        });
        for t in threads {
            assert_eq!(t.join().unwrap(), (0, 300_000));
        }
    }
}
