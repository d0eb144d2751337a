//! The connections that carry transfers between machines at a move: one TCP connection from
//! each machine's worker to each other's, made at the start of a run that repartitions, on the
//! address and port of its hand-off socket (TCP's, beside GENEVE's UDP). TCP delivers a
//! transfer of any size whole and in order, with no retransmission of netloom's own; the
//! coordinator only orders moves and hears they are done (docs/cluster.md). Every frame after
//! the hello is sealed with the run's secret and numbered on its connection: one that is not
//! the sender's next is refused and counted with the hand-off datagrams' refusals.

use super::handoff::Refused;
use super::transfer::{self, Malformed, Route, MAGIC, SEALED_HEADER_LEN};
use crate::clock::{Clock, SystemClock};
use crate::mailbox::{Message, Post};
use crate::moved::Transfer;
use crate::run::report::RefusedHandoffs;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::Mutex;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long the workers have to reach each other at the start: they are told to start at
/// once, so it is the spread of their start-ups.
const MEET: Duration = Duration::from_secs(10);
/// How often a connection refused (the other worker not listening yet) is tried again, and an
/// accept that found none.
const RETRY: Duration = Duration::from_millis(10);
/// How long a connection has to say its hello: a worker writes it as soon as it connects, and
/// a connection that says nothing holds the accepting worker no longer than this.
const HELLO_WAIT: Duration = Duration::from_secs(1);
/// A connection's first bytes: the magic, the run's VNI, the connecting worker, sealed with the
/// run's secret (its tag after them).
const HELLO_LEN: usize = 10 + netloom_wire::TAG_LEN;

/// Why the connections for transfers could not be made.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LinksError {
    /// This worker's listener.
    #[error("taking transfers at {here}: {source}")]
    Listen {
        /// Its address.
        here: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The connection to another worker.
    #[error("handing over to worker {worker} at {peer}: {source}")]
    Connect {
        /// The other worker.
        worker: usize,
        /// Its address.
        peer: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// Other workers that did not connect in time.
    #[error("taking transfers at {here}: {missing} other workers never connected within {MEET:?}")]
    NeverConnected {
        /// This worker's address.
        here: SocketAddr,
        /// How many did not.
        missing: usize,
    },
}

/// A connection to another worker, and the sequence number of the next frame on it.
struct Out {
    stream: TcpStream,
    seq: u64,
}

/// This worker's connections to and from every other worker.
pub(crate) struct Links {
    me: u16,
    vni: u32,
    /// The run's secret, which seals every frame.
    key: netloom_wire::Key,
    /// To each worker, by worker (`None` for this one).
    to: Vec<Option<Mutex<Out>>>,
    /// From each other worker (by the worker it says it is), in the order they connected.
    from: Vec<(u16, TcpStream)>,
}

impl Links {
    /// Listens at `peers[me]`, connects to every other worker of run `vni` whose secret is
    /// `key`, and accepts every other worker's connection: each listens before it connects, so
    /// a connection waits in the listener's backlog until its accept. A connection is taken
    /// for worker k's only with a hello sealed with the key, from worker k's address, and
    /// once: whoever connects first without them is let go, and cannot take a worker's place.
    pub fn open(
        me: usize,
        peers: &[SocketAddr],
        (vni, key): (u32, netloom_wire::Key),
    ) -> Result<Links, LinksError> {
        let here = peers[me];
        let failed = |source| LinksError::Listen { here, source };
        let listener = TcpListener::bind(here).map_err(failed)?;
        let deadline = Instant::now() + MEET;
        let mut to = Vec::with_capacity(peers.len());
        for (k, &peer) in peers.iter().enumerate() {
            if k == me {
                to.push(None);
                continue;
            }
            let failed = |source| LinksError::Connect {
                worker: k,
                peer,
                source,
            };
            let mut stream = loop {
                // Bounded by what is left of the wait: a machine that does not answer at all
                // would otherwise hold the start for TCP's own minutes.
                let left = deadline
                    .saturating_duration_since(Instant::now())
                    .max(RETRY);
                match TcpStream::connect_timeout(&peer, left) {
                    Ok(s) => break s,
                    Err(_) if Instant::now() < deadline => std::thread::sleep(RETRY),
                    Err(e) => return Err(failed(e)),
                }
            };
            stream.set_nodelay(true).map_err(failed)?;
            stream
                .write_all(&hello(vni, me as u16, &key))
                .map_err(failed)?;
            to.push(Some(Mutex::new(Out { stream, seq: 0 })));
        }
        let mut from = Vec::with_capacity(peers.len() - 1);
        listener.set_nonblocking(true).map_err(failed)?;
        while from.len() + 1 < peers.len() {
            match listener.accept() {
                Ok((mut stream, address)) => {
                    stream.set_nonblocking(false).map_err(failed)?;
                    stream.set_read_timeout(Some(HELLO_WAIT)).map_err(failed)?;
                    let mut said = [0u8; HELLO_LEN];
                    // Only this run's workers count; anything else that connected is let go.
                    let worker = match stream.read_exact(&mut said) {
                        Ok(()) => greeted(&said, (vni, &key), address, peers, me, &from),
                        Err(_) => None,
                    };
                    if let Some(worker) = worker {
                        stream.set_read_timeout(None).map_err(failed)?;
                        from.push((worker, stream));
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    if Instant::now() >= deadline {
                        let missing = peers.len() - 1 - from.len();
                        return Err(LinksError::NeverConnected { here, missing });
                    }
                    std::thread::sleep(RETRY);
                }
                Err(e) => return Err(failed(e)),
            }
        }
        Ok(Links {
            me: me as u16,
            vni,
            key,
            to,
            from,
        })
    }

    /// Sends `transfer` to worker `to`, stamped `sent` on `clock` as its encoding begins; false
    /// when it cannot go (that worker is gone).
    pub fn send(&self, to: u16, mut transfer: Transfer, clock: &SystemClock) -> bool {
        let Some(Some(out)) = self.to.get(usize::from(to)) else {
            return false;
        };
        transfer.stamps.sent = Some(clock.now().as_nanos());
        let route = Route {
            vni: self.vni,
            from: self.me,
            to,
        };
        // Numbered and written under one lock: frames go out in the order of their numbers.
        let mut out = out.lock().expect("nothing panics holding it");
        let Ok(frame) = transfer::encode(&transfer, route, out.seq, &self.key) else {
            return false;
        };
        out.seq += 1;
        out.stream.write_all(&frame).is_ok()
    }

    /// Starts reading the other workers' transfers, posting each to `post` stamped `read` (its
    /// first bytes in) and `parsed` on `clock`, and counting the frames refused in `refused`;
    /// at real-time priority if `realtime`, as the drivers sleep while they wait for them.
    pub fn start_reading(
        &self,
        post: Post,
        clock: SystemClock,
        realtime: bool,
        refused: Refused,
    ) -> std::io::Result<Readers> {
        let mut readers = Readers {
            streams: Vec::new(),
            threads: Vec::new(),
        };
        for &(from, ref stream) in &self.from {
            let mut input = Input {
                stream: stream.try_clone()?,
                route: Route {
                    vni: self.vni,
                    from,
                    to: self.me,
                },
                key: self.key,
                seq: 0,
                refused: refused.clone(),
            };
            readers.streams.push(stream.try_clone()?);
            let post = post.clone();
            let thread = std::thread::Builder::new()
                .name("netloom-transfers".into())
                .spawn(move || {
                    if realtime {
                        // Normal priority still moves transfers, only later.
                        let _ =
                            netloom_os::set_realtime_priority(crate::run::plan::REALTIME_PRIORITY);
                    }
                    loop {
                        match input.read(&clock) {
                            Ok(Some(transfer)) => {
                                if !post.send(Message::Transfer(Box::new(transfer))) {
                                    return;
                                }
                            }
                            Ok(None) => return,
                            // Nothing after it can be read in step: the worker stops the run.
                            Err(e) => {
                                let why = e.to_string();
                                post.send(Message::Unreadable { from, why });
                                return;
                            }
                        }
                    }
                })?;
            readers.threads.push(thread);
        }
        Ok(readers)
    }
}

/// One other worker's connection, as its reading thread takes it.
struct Input {
    stream: TcpStream,
    /// The run, that worker and this one.
    route: Route,
    key: netloom_wire::Key,
    /// The sequence number of the frame due next.
    seq: u64,
    refused: Refused,
}

impl Input {
    /// The next transfer, stamped; `None` once the connection ends (the sender is gone: its
    /// machine's end stops the run), an error when what came is not the sender's next
    /// transfer. A frame of the sender's seen before (replayed into the stream) is refused,
    /// counted and skipped: its length is the sender's, so the next frame is found. Any other
    /// is refused, counted and ends the reading, as nothing after it can be found for sure.
    fn read(&mut self, clock: &SystemClock) -> Result<Option<Transfer>, Malformed> {
        loop {
            let mut sealed = [0u8; SEALED_HEADER_LEN];
            if self.stream.read_exact(&mut sealed).is_err() {
                return Ok(None);
            }
            let read = clock.now().as_nanos();
            let head = transfer::open_header(&sealed, self.route, &self.key)
                .map_err(|e| self.refuse(e))?;
            if head.seq < self.seq {
                // Read past, not into memory.
                let skipped = std::io::copy(
                    &mut (&mut self.stream).take(head.rest as u64),
                    &mut std::io::sink(),
                );
                self.refuse(Malformed::OutOfOrder {
                    got: head.seq,
                    awaited: self.seq,
                });
                match skipped {
                    Ok(n) if n == head.rest as u64 => continue,
                    _ => return Ok(None),
                }
            }
            if head.seq > self.seq {
                let awaited = self.seq;
                return Err(self.refuse(Malformed::OutOfOrder {
                    got: head.seq,
                    awaited,
                }));
            }
            // The length is the sender's (the header's tag says so): this much was sent.
            let mut frame = sealed.to_vec();
            frame.resize(SEALED_HEADER_LEN + head.rest, 0);
            if self
                .stream
                .read_exact(&mut frame[SEALED_HEADER_LEN..])
                .is_err()
            {
                return Ok(None);
            }
            let mut transfer = transfer::decode(&frame, &self.key).map_err(|e| self.refuse(e))?;
            self.seq += 1;
            transfer.stamps.read = Some(read);
            transfer.stamps.parsed = Some(clock.now().as_nanos());
            return Ok(Some(transfer));
        }
    }

    /// Counts `why` a frame was refused under its cause, and gives it back.
    fn refuse(&self, why: Malformed) -> Malformed {
        let count: fn(&mut RefusedHandoffs) = match why {
            Malformed::Unauthentic => |r| r.unauthentic += 1,
            Malformed::OutOfOrder { .. } => |r| r.replayed += 1,
            _ => |r| r.malformed += 1,
        };
        count(&mut self.refused.lock().expect("nothing panics holding it"));
        why
    }
}

/// A connection's first bytes from worker `from` of run `vni`.
fn hello(vni: u32, from: u16, key: &netloom_wire::Key) -> Vec<u8> {
    let mut h = vec![0u8; 10];
    h[..4].copy_from_slice(&MAGIC);
    h[5..8].copy_from_slice(&vni.to_be_bytes()[1..]);
    h[8..].copy_from_slice(&from.to_be_bytes());
    key.seal(&mut h);
    h
}

/// The worker whose connection from `address` said `said`, if it is one of run `vni`'s other
/// workers (sealed with `key`, from its own address) that has not connected yet (`from`).
fn greeted(
    said: &[u8; HELLO_LEN],
    (vni, key): (u32, &netloom_wire::Key),
    address: SocketAddr,
    peers: &[SocketAddr],
    me: usize,
    from: &[(u16, TcpStream)],
) -> Option<u16> {
    let inner = key.open(said).ok()?;
    if inner[..8] != hello(vni, 0, key)[..8] {
        return None;
    }
    let worker = u16::from_be_bytes([inner[8], inner[9]]);
    let k = usize::from(worker);
    let known = k != me && peers.get(k).is_some_and(|p| p.ip() == address.ip());
    (known && from.iter().all(|&(w, _)| w != worker)).then_some(worker)
}

/// The threads reading transfers, stopped (their connections shut) when dropped.
pub(crate) struct Readers {
    streams: Vec<TcpStream>,
    threads: Vec<JoinHandle<()>>,
}

impl Drop for Readers {
    fn drop(&mut self) {
        for stream in &self.streams {
            let _ = stream.shutdown(Shutdown::Both);
        }
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mailbox::mailboxes;
    use crate::moved::Stamps;
    use netloom_engine::Migration;

    /// Run 77's secret.
    fn key() -> netloom_wire::Key {
        netloom_wire::Key::from_hex(&"77".repeat(32)).unwrap()
    }

    /// Two free addresses on this machine (bound once and let go).
    fn addresses() -> Vec<SocketAddr> {
        let free = || {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap()
        };
        vec![free(), free()]
    }

    /// Workers 0 and 1 of run 77 at `peers`, worker 1 starting 50 ms later.
    fn meet(peers: &[SocketAddr]) -> (Links, Links) {
        let later = peers.to_vec();
        let one = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            Links::open(1, &later, (77, key())).unwrap()
        });
        let zero = Links::open(0, peers, (77, key())).unwrap();
        (zero, one.join().unwrap())
    }

    /// The next message in `inbox`, waiting up to 5 s for it.
    fn next(inbox: &mut crate::mailbox::Inbox) -> Message {
        let give_up = Instant::now() + Duration::from_secs(5);
        loop {
            inbox.awake();
            if let Some(m) = inbox.take() {
                return m;
            }
            assert!(Instant::now() < give_up, "nothing came");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Two workers meet whichever starts first, a stranger that connects too is let go, and a
    /// transfer from one reaches the other's inbox, stamped on its way in order.
    #[test]
    fn a_hand_over_goes_straight_to_the_other_worker_stamped_in_order() {
        let peers = addresses();
        // Worker 1 first: it listens, then tries to reach worker 0, which starts only once a
        // stranger and an impostor have connected to worker 1 (they wait in its backlog), so
        // both come before worker 0's hello however slow the machine. (Started in the other
        // order, a stranger the scheduler kept off the CPU until worker 1 had met worker 0
        // found its listener gone and retried for ever: the test hung at load.)
        let one = std::thread::spawn({
            let peers = peers.clone();
            move || Links::open(1, &peers, (77, key())).unwrap()
        });
        let knock = |to: SocketAddr, says: Vec<u8>| {
            std::thread::spawn(move || {
                let give_up = Instant::now() + MEET;
                loop {
                    if let Ok(mut s) = TcpStream::connect(to) {
                        let _ = s.write_all(&says);
                        return s;
                    }
                    assert!(Instant::now() < give_up, "worker 1 never listened");
                    std::thread::sleep(RETRY);
                }
            })
        };
        // One that sends something else, and one that knows the run's network identifier (a
        // hash of its name) and says it is worker 0, without the secret: neither is taken for
        // worker 0.
        let stranger = knock(peers[1], b"GET / HTTP/1.0\r\n\r\n".to_vec());
        let impostor = knock(
            peers[1],
            hello(77, 0, &netloom_wire::Key::random()).to_vec(),
        );
        let (stranger, impostor) = (stranger.join().unwrap(), impostor.join().unwrap());
        let zero = Links::open(0, &peers, (77, key())).unwrap();
        let one = one.join().unwrap();
        drop((stranger, impostor));
        let (mut inboxes, posts) = mailboxes(2).unwrap();
        let clock = SystemClock::start();
        let _readers = one
            .start_reading(posts[1].clone(), clock, false, Refused::default())
            .unwrap();
        let transfer = Transfer {
            migration: Migration::default(),
            hosts: Vec::new(),
            payloads: vec![vec![4; 3000].into()],
            stamps: Stamps {
                paused: clock.now().as_nanos(),
                extracted: clock.now().as_nanos(),
                ..Stamps::default()
            },
        };
        assert!(zero.send(1, transfer, &clock));
        let got = next(&mut inboxes[1]);
        let Message::Transfer(got) = got else {
            panic!("{got:?}")
        };
        assert_eq!(got.payloads, vec![vec![4u8; 3000].into_boxed_slice()]);
        let s = got.stamps;
        let steps = [
            s.paused,
            s.extracted,
            s.sent.unwrap(),
            s.read.unwrap(),
            s.parsed.unwrap(),
        ];
        assert!(steps.windows(2).all(|w| w[0] <= w[1]), "{s:?}");
        assert!(!zero.send(0, empty(), &clock), "no connection to itself");
    }

    /// Bytes that are not a transfer, where one was due, reach the worker as news that names
    /// the sender and says what was wrong, so it stops the run instead of waiting for the move;
    /// they are counted as refused.
    #[test]
    fn what_is_not_a_hand_over_is_reported_with_its_sender() {
        let (zero, one) = meet(&addresses());
        let (mut inboxes, posts) = mailboxes(2).unwrap();
        let refused = Refused::default();
        let _readers = one
            .start_reading(
                posts[1].clone(),
                SystemClock::start(),
                false,
                refused.clone(),
            )
            .unwrap();
        let garbage = [0x5au8; SEALED_HEADER_LEN];
        inject(&zero, 1, &garbage);
        let Message::Unreadable { from, why } = next(&mut inboxes[1]) else {
            panic!("expected news of an unreadable transfer");
        };
        assert_eq!(from, 0);
        assert!(why.contains("tag is not the run's secret's"), "{why}");
        assert_eq!(refused.lock().unwrap().unauthentic, 1);
    }

    /// Writes `bytes` into worker `from`'s established connection to worker `to`, as one on
    /// the path between them could, between two of its frames.
    fn inject(from: &Links, to: usize, bytes: &[u8]) {
        let out = from.to[to].as_ref().unwrap();
        out.lock().unwrap().stream.write_all(bytes).unwrap();
    }

    /// A transfer carrying `byte` in its one shipped packet.
    fn carrying(byte: u8) -> Transfer {
        Transfer {
            payloads: vec![vec![byte; 100].into()],
            ..empty()
        }
    }

    /// Frames injected into an established transfer stream after the hello: one of the
    /// sender's own replayed is refused, counted and skipped (the sender's next still comes);
    /// one forged without the run's secret, however well made, is refused and counted, and
    /// never reaches the worker as a transfer: it hears the stream could not be read instead.
    /// (Before, frames after the hello carried no tag: both were taken as transfers.)
    #[test]
    fn a_frame_injected_into_a_hand_over_stream_is_refused_and_counted() {
        let (zero, one) = meet(&addresses());
        let (mut inboxes, posts) = mailboxes(2).unwrap();
        let refused = Refused::default();
        let clock = SystemClock::start();
        let _readers = one
            .start_reading(posts[1].clone(), clock, false, refused.clone())
            .unwrap();
        let payload = |m: Message| match m {
            Message::Transfer(h) => h.payloads[0][0],
            other => panic!("{other:?}"),
        };
        assert!(zero.send(1, carrying(1), &clock));
        assert_eq!(payload(next(&mut inboxes[1])), 1);
        let route = Route {
            vni: 77,
            from: 0,
            to: 1,
        };
        // Frame 0 again, as recorded on the wire (sealed with the run's secret).
        let replayed = transfer::encode(&carrying(6), route, 0, &key()).unwrap();
        inject(&zero, 1, &replayed);
        assert!(zero.send(1, carrying(2), &clock));
        assert_eq!(payload(next(&mut inboxes[1])), 2, "the sender's next");
        assert_eq!(refused.lock().unwrap().replayed, 1);
        // Frame 2 as the sender would make it, but sealed without the run's secret.
        let forged = transfer::encode(&carrying(6), route, 2, &netloom_wire::Key::random());
        inject(&zero, 1, &forged.unwrap());
        assert!(zero.send(1, carrying(3), &clock));
        let Message::Unreadable { from, why } = next(&mut inboxes[1]) else {
            panic!("a forged frame was taken");
        };
        assert_eq!(from, 0);
        assert!(why.contains("forged"), "{why}");
        let counted = *refused.lock().unwrap();
        assert_eq!(
            (counted.unauthentic, counted.replayed, counted.total()),
            (1, 1, 2)
        );
        std::thread::sleep(Duration::from_millis(50));
        inboxes[1].awake();
        assert!(
            inboxes[1].take().is_none(),
            "nothing after the forged frame"
        );
    }

    fn empty() -> Transfer {
        Transfer {
            migration: Migration::default(),
            hosts: Vec::new(),
            payloads: Vec::new(),
            stamps: Stamps::default(),
        }
    }
}
