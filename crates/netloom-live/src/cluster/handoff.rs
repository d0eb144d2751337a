//! Hand-offs between machines: each shipped hand-off is one GENEVE datagram over UDP with the
//! packet inside and the hand-off in netloom's option (netloom-wire, docs/wire.md), so tshark's
//! GENEVE dissector shows the traffic between machines. The sending worker's thread sends it
//! as it posts the hand-off; one thread per machine receives them and posts them to the
//! worker's inbox, as another worker thread of the same process would. The same sockets echo
//! probes (not GENEVE: their first byte says version 1), which measure the round trip between
//! machines for the lookahead check. Each sender numbers its datagrams to each machine from 0
//! (the option's window field); the receiving thread counts the numbers that never came as
//! hand-offs lost between the machines.

use crate::mailbox::{Message, Outbound, Post};
use crate::run::report::RefusedHandoffs;
use netloom_engine::HandoffBounds;
use netloom_packet::segment::{finish_checksum, VNET_HDR_LEN};
use netloom_wire::{decode, encode_packet, Arrival, Arrivals, Header, Key, Payload};
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// The largest UDP payload a hand-off makes: GENEVE and the option before a 64 KB IP packet.
const MAX_DATAGRAM: usize = 65_535;
/// How often the receiving thread looks at its stop flag.
const STOP_LOOK: Duration = Duration::from_millis(100);
/// The hand-off socket's receive buffer: a second of 100 Mbit/s, so that datagrams wait there,
/// not get dropped, while the receiving thread waits for a CPU.
const RECEIVE_BUFFER: usize = 16 << 20;

/// A probe's first bytes; as GENEVE, version 1, which no netloom datagram has.
const PROBE: &[u8; 7] = b"NLPROBE";
/// A probe: the magic, whether it is the echo, the sender's wall clock (ns).
const PROBE_LEN: usize = PROBE.len() + 1 + 8;

/// A probe to send (`echo` false) or its echo, carrying `sent_ns`, sealed with `key`.
fn probe(key: &Key, echo: bool, sent_ns: u64) -> Vec<u8> {
    let mut p = Vec::with_capacity(PROBE_LEN + netloom_wire::TAG_LEN);
    p.extend_from_slice(PROBE);
    p.push(u8::from(echo));
    p.extend_from_slice(&sent_ns.to_be_bytes());
    key.seal(&mut p);
    p
}

/// The round trips of echoed probes: from each address, the least so far (ns).
pub(crate) type RoundTrips = Arc<std::sync::Mutex<std::collections::HashMap<SocketAddr, u64>>>;

/// Sends `count` probes sealed with `key` to each of `peers` from `socket`, `gap` apart; their
/// echoes reach the socket's `Receiver`, which keeps the round trips.
pub(crate) fn send_probes(
    socket: &UdpSocket,
    key: &Key,
    peers: &[SocketAddr],
    count: usize,
    gap: Duration,
) {
    for _ in 0..count {
        for &peer in peers {
            let _ = socket.send_to(&probe(key, false, super::channel::wall_ns()), peer);
        }
        std::thread::sleep(gap);
    }
}

/// The run's GENEVE VNI: 24 bits of a hash of its name (FNV-1a), so that datagrams of another
/// run reaching the same port are told apart.
pub(crate) fn vni(run: &str) -> u32 {
    let hash = run.bytes().fold(0x811c_9dc5u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    });
    hash & netloom_wire::MAX_VNI
}

/// What arrived from each machine's worker, by worker.
pub(crate) type Arrived = Arc<std::sync::Mutex<Vec<Arrivals>>>;

/// Sends hand-offs for one other machine's worker.
pub(crate) struct Sender {
    socket: Arc<UdpSocket>,
    to: SocketAddr,
    header: Header,
    /// The run's secret, which seals each datagram.
    key: Key,
    /// Datagrams sent so far: each one's sequence number (`window`, a counter live), taken
    /// before it is sent, so that one the socket refuses is a gap the receiver counts too.
    sent: AtomicU64,
}

impl Sender {
    /// From worker `from` (on `socket`) to worker `to_worker` at `to`, in run `vni` whose
    /// secret is `key`.
    pub fn new(
        socket: Arc<UdpSocket>,
        (vni, key): (u32, Key),
        from: u16,
        to_worker: u16,
        to: SocketAddr,
    ) -> Sender {
        Sender {
            socket,
            to,
            key,
            header: Header {
                vni,
                from,
                to: to_worker,
                window: 0,
                part: 0,
                last: true,
                next_ns: u64::MAX,
            },
            sent: AtomicU64::new(0),
        }
    }
}

impl Sender {
    /// Datagrams sent so far (refused by the socket included).
    pub fn sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }
}

impl Outbound for Sender {
    fn send(&self, message: Message) -> bool {
        let Message::Shipped(handoff, mut frame) = message else {
            // Payloads are shipped between machines: nothing else is posted to one.
            debug_assert!(false, "only shipped hand-offs go to another machine");
            return false;
        };
        // The receiving machine writes the packet without the sender's offload header: a
        // checksum the sending host's kernel left to finish is finished here.
        finish_checksum(&mut frame);
        let header = Header {
            window: self.sent.fetch_add(1, Ordering::Relaxed),
            ..self.header
        };
        let mut datagram = Vec::with_capacity(frame.len() + 128);
        if encode_packet(&header, &handoff, &frame[VNET_HDR_LEN..], &mut datagram).is_err() {
            return false;
        }
        self.key.seal(&mut datagram);
        self.socket.send_to(&datagram, self.to).is_ok()
    }
}

/// What a datagram must be to be taken: sealed with the run's `key`, of run `vni`, for worker
/// `me`, from the address of the worker it names (`peers[k]` is worker k's), and with a
/// descriptor within `bounds`.
pub(crate) struct Gate {
    /// The run's network identifier.
    pub vni: u32,
    /// The run's secret, whose tag every datagram must carry.
    pub key: Key,
    /// This machine's worker.
    pub me: u16,
    /// Each worker's hand-off address, by worker.
    pub peers: Vec<SocketAddr>,
    /// What a descriptor's numbers must stay below.
    pub bounds: HandoffBounds,
}

/// The counts of datagrams refused, by cause.
pub(crate) type Refused = Arc<std::sync::Mutex<RefusedHandoffs>>;

/// The thread that takes the hand-offs arriving for this machine's worker.
pub(crate) struct Receiver {
    /// The least round trip of the probes this machine sent, by peer.
    pub round_trips: RoundTrips,
    /// The hand-offs that arrived from each worker, and those lost on the way.
    pub arrived: Arrived,
    /// The datagrams refused, by cause.
    pub refused: Refused,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Receiver {
    /// Receives on `socket` the hand-offs that pass `gate`, posting them to `post`; at
    /// real-time priority if `realtime`, as the workers sleep (a hand-off waiting for this
    /// thread to get a CPU is late by as much).
    pub fn start(
        socket: Arc<UdpSocket>,
        gate: Gate,
        post: Post,
        realtime: bool,
    ) -> std::io::Result<Receiver> {
        socket.set_read_timeout(Some(STOP_LOOK))?;
        netloom_os::set_receive_buffer(&*socket, RECEIVE_BUFFER)?;
        let stop = Arc::new(AtomicBool::new(false));
        let halt = stop.clone();
        let round_trips = RoundTrips::default();
        let trips = round_trips.clone();
        let arrived = Arrived::new(std::sync::Mutex::new(vec![
            Arrivals::default();
            gate.peers.len()
        ]));
        let arrivals = arrived.clone();
        let refused = Refused::default();
        let refusals = refused.clone();
        let thread = std::thread::Builder::new()
            .name("netloom-handoffs".into())
            .spawn(move || {
                if realtime {
                    // Normal priority still moves hand-offs, only later.
                    let _ = netloom_os::set_realtime_priority(crate::run::plan::REALTIME_PRIORITY);
                }
                let mut buf = vec![0u8; MAX_DATAGRAM];
                // Once the worker stopped taking hand-offs, those still arriving are counted
                // (they were not lost on the way), not posted.
                let mut posting = true;
                while !halt.load(Ordering::Relaxed) {
                    let Ok((n, from)) = socket.recv_from(&mut buf) else {
                        continue;
                    };
                    let Ok(opened) = gate.key.open(&buf[..n]) else {
                        refusals
                            .lock()
                            .expect("nothing panics holding it")
                            .unauthentic += 1;
                        continue;
                    };
                    if opened.len() == PROBE_LEN && opened.starts_with(PROBE) {
                        // Only the run's machines are answered or measured: an echo to anyone
                        // would reflect traffic at a third party.
                        if !gate.peers.contains(&from) {
                            refusals
                                .lock()
                                .expect("nothing panics holding it")
                                .strangers += 1;
                            continue;
                        }
                        let sent_ns = u64::from_be_bytes(
                            opened[PROBE.len() + 1..].try_into().expect("8 bytes"),
                        );
                        match opened[PROBE.len()] {
                            0 => {
                                let _ = socket.send_to(&probe(&gate.key, true, sent_ns), from);
                            }
                            _ => {
                                let trip = super::channel::wall_ns().saturating_sub(sent_ns);
                                let mut trips = trips.lock().expect("nothing panics holding it");
                                let least = trips.entry(from).or_insert(trip);
                                *least = (*least).min(trip);
                            }
                        }
                        continue;
                    }
                    let taken = gate.take(opened, from, &arrivals);
                    let (handoff, ip) = match taken {
                        Ok(taken) => taken,
                        Err(cause) => {
                            cause(&mut refusals.lock().expect("nothing panics holding it"));
                            continue;
                        }
                    };
                    if posting {
                        let mut frame = vec![0u8; VNET_HDR_LEN + ip.len()];
                        frame[VNET_HDR_LEN..].copy_from_slice(ip);
                        posting = post.send(Message::Shipped(handoff, frame.into()));
                    }
                }
            })?;
        Ok(Receiver {
            round_trips,
            arrived,
            refused,
            stop,
            thread: Some(thread),
        })
    }
}

/// Counts one refused datagram under its cause.
type Cause = fn(&mut RefusedHandoffs);

impl Gate {
    /// The hand-off and IP packet of `datagram` (its tag checked), received from `from`, if it
    /// passes; else the cause to count it under. Its sequence number is noted in `arrivals` only when it came
    /// from its worker's address, so a stranger can neither fill nor spoil the window.
    fn take<'d>(
        &self,
        datagram: &'d [u8],
        from: SocketAddr,
        arrivals: &Arrived,
    ) -> Result<(netloom_engine::Handoff, &'d [u8]), Cause> {
        let d =
            decode(datagram).map_err(|_| (|r: &mut RefusedHandoffs| r.malformed += 1) as Cause)?;
        let malformed: Cause = |r| r.malformed += 1;
        if d.header.vni != self.vni || d.header.to != self.me {
            return Err(malformed);
        }
        let sender = usize::from(d.header.from);
        if sender == usize::from(self.me) || self.peers.get(sender) != Some(&from) {
            return Err(|r| r.strangers += 1);
        }
        let Payload::Packet { handoff, ip } = d.payload else {
            // Machines ship packets; batches of descriptors are the sim's.
            return Err(malformed);
        };
        if handoff.check(&self.bounds).is_err() {
            return Err(|r| r.out_of_bounds += 1);
        }
        let fresh =
            arrivals.lock().expect("nothing panics holding it")[sender].arrive(d.header.window);
        match fresh {
            Arrival::Fresh => Ok((handoff, ip)),
            Arrival::Replayed | Arrival::TooFarAhead => Err(|r| r.replayed += 1),
        }
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::mailbox::mailboxes;
    use std::io::Read;

    /// A shipped hand-off as a worker posts it: an IPv4 packet behind an offload header.
    fn shipped() -> (netloom_engine::Handoff, Box<[u8]>) {
        let handoff = crate::calibration::handoff(netloom_engine::Payload::Ship, 7).0;
        (handoff, frame())
    }

    /// An IPv4 packet behind an offload header.
    fn frame() -> Box<[u8]> {
        let mut frame = vec![0u8; VNET_HDR_LEN + 28];
        frame[VNET_HDR_LEN] = 0x45;
        frame[VNET_HDR_LEN + 3] = 28;
        frame[VNET_HDR_LEN + 9] = 17;
        frame.into()
    }

    /// Run "lab"'s secret.
    fn key() -> Key {
        Key::from_hex(&"5a".repeat(32)).unwrap()
    }

    /// The gate of run "lab"'s worker `me` whose workers are at `peers`, for the topology of
    /// `shipped`'s hand-off.
    fn gate(me: u16, peers: &[&Arc<UdpSocket>]) -> Gate {
        let topo = crate::calibration::handoff(netloom_engine::Payload::Ship, 7).1;
        Gate {
            vni: vni("lab"),
            key: key(),
            me,
            peers: peers.iter().map(|s| s.local_addr().unwrap()).collect(),
            bounds: HandoffBounds {
                pipes: topo.pipes.len() as u32,
                nodes: topo.nodes.len() as u32,
                hosts: topo.hosts.len() as u32,
                flows: 0,
                workers: peers.len() as u16,
            },
        }
    }

    #[test]
    fn a_hand_off_crosses_as_a_datagram_and_arrives_in_the_workers_inbox() {
        let udp = || Arc::new(UdpSocket::bind("127.0.0.1:0").unwrap());
        let (a, b, stranger) = (udp(), udp(), udp());
        let (mut inboxes, posts) = mailboxes(1).unwrap();
        let mut woken = inboxes[0].waker().unwrap();
        woken.set_nonblocking(false).unwrap();
        assert!(inboxes[0].may_sleep());
        let _receiver =
            Receiver::start(b.clone(), gate(1, &[&a, &b]), posts[0].clone(), false).unwrap();
        let to = b.local_addr().unwrap();
        // Another run's hand-off to the same port is not taken; this run's is.
        let other = Sender::new(stranger, (vni("other"), key()), 0, 1, to);
        let (handoff, frame) = shipped();
        assert!(other.send(Message::Shipped(handoff, frame.clone())));
        let sender = Sender::new(a, (vni("lab"), key()), 0, 1, to);
        assert!(sender.send(Message::Shipped(handoff, frame.clone())));
        woken.read_exact(&mut [0u8; 1]).unwrap();
        inboxes[0].awake();
        match inboxes[0].take() {
            Some(Message::Shipped(got, bytes)) => {
                assert_eq!(got.at(), handoff.at());
                assert_eq!(got.token(), handoff.token());
                assert_eq!(bytes, frame, "the packet behind a fresh offload header");
            }
            other => panic!("{other:?}"),
        }
        assert!(
            inboxes[0].take().is_none(),
            "the other run's hand-off was dropped"
        );
    }

    #[test]
    fn a_datagram_that_never_arrives_is_counted_lost_by_its_sender() {
        let udp = || Arc::new(UdpSocket::bind("127.0.0.1:0").unwrap());
        let (a, b) = (udp(), udp());
        let (mut inboxes, posts) = mailboxes(1).unwrap();
        let peers = [&b, &b, &b, &a];
        let receiver =
            Receiver::start(b.clone(), gate(1, &peers), posts[0].clone(), false).unwrap();
        let sender = Sender::new(a, (vni("lab"), key()), 3, 1, b.local_addr().unwrap());
        let (handoff, frame) = shipped();
        let send = || assert!(sender.send(Message::Shipped(handoff, frame.clone())));
        send();
        // Two datagrams lost on the way: numbered, never sent.
        sender.sent.fetch_add(2, Ordering::Relaxed);
        send();
        let arrived = || receiver.arrived.lock().unwrap().get(3).copied();
        let give_up = std::time::Instant::now() + Duration::from_secs(5);
        while arrived().map_or(0, |a| a.received()) < 2 {
            assert!(std::time::Instant::now() < give_up, "{:?}", arrived());
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(arrived().unwrap().lost(), 2, "from worker 3");
        inboxes[0].awake();
        assert!(inboxes[0].take().is_some());
    }

    /// Waits (5 s at most) until `receiver` has refused `n` datagrams in all.
    fn refused(receiver: &Receiver, n: u64) -> RefusedHandoffs {
        let give_up = std::time::Instant::now() + Duration::from_secs(5);
        loop {
            let refused = *receiver.refused.lock().unwrap();
            if refused.total() >= n || std::time::Instant::now() > give_up {
                return refused;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn strangers_replays_and_numbers_past_the_topology_are_refused_and_counted() {
        let udp = || Arc::new(UdpSocket::bind("127.0.0.1:0").unwrap());
        let (a, b, stranger) = (udp(), udp(), udp());
        let (mut inboxes, posts) = mailboxes(1).unwrap();
        let receiver =
            Receiver::start(b.clone(), gate(1, &[&a, &b]), posts[0].clone(), false).unwrap();
        let to = b.local_addr().unwrap();
        let (handoff, frame) = shipped();
        let unsealed = |window: u64, handoff: &netloom_engine::Handoff| {
            let header = Header {
                vni: vni("lab"),
                from: 0,
                to: 1,
                window,
                part: 0,
                last: true,
                next_ns: u64::MAX,
            };
            let mut d = Vec::new();
            encode_packet(&header, handoff, &frame[VNET_HDR_LEN..], &mut d).unwrap();
            d
        };
        let datagram = |window: u64, handoff: &netloom_engine::Handoff| {
            let mut d = unsealed(window, handoff);
            key().seal(&mut d);
            d
        };
        // Without the run's secret, or with another's: refused before anything is read.
        stranger.send_to(&unsealed(0, &handoff), to).unwrap();
        let mut other = unsealed(0, &handoff);
        Key::random().seal(&mut other);
        stranger.send_to(&other, to).unwrap();
        // Sealed, but from an address that is not worker 0's (a datagram of the run's, sent
        // again from elsewhere): refused, and its sequence number spoils nothing.
        stranger.send_to(&datagram(1 << 40, &handoff), to).unwrap();
        // Worker 0's, twice: the second is a replay.
        a.send_to(&datagram(0, &handoff), to).unwrap();
        a.send_to(&datagram(0, &handoff), to).unwrap();
        // A sequence number far past the last: refused, so nothing counts as lost.
        a.send_to(&datagram(u64::MAX, &handoff), to).unwrap();
        // A descriptor naming a host the topology has not.
        let mut past = handoff.to_bytes();
        past[48..52].copy_from_slice(&99u32.to_be_bytes());
        let past = netloom_engine::Handoff::from_bytes(&past).unwrap();
        a.send_to(&datagram(1, &past), to).unwrap();
        // Sealed, but not a hand-off at all.
        let mut hello = b"hello".to_vec();
        key().seal(&mut hello);
        a.send_to(&hello, to).unwrap();
        // A stranger's probe is not echoed, sealed or not.
        stranger.send_to(&probe(&key(), false, 1), to).unwrap();
        stranger
            .send_to(&probe(&Key::random(), false, 1), to)
            .unwrap();
        let counted = refused(&receiver, 9);
        assert_eq!(
            counted,
            RefusedHandoffs {
                unauthentic: 3,
                strangers: 2,
                malformed: 1,
                out_of_bounds: 1,
                replayed: 2,
            }
        );
        let arrivals = receiver.arrived.lock().unwrap()[0];
        assert_eq!((arrivals.received(), arrivals.lost()), (1, 0));
        inboxes[0].awake();
        assert!(inboxes[0].take().is_some(), "worker 0's first datagram");
        assert!(inboxes[0].take().is_none(), "nothing else");
        stranger
            .set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        assert!(
            stranger.recv(&mut [0u8; 64]).is_err(),
            "no echo to a stranger"
        );
    }

    #[test]
    fn runs_of_other_names_have_other_vnis_within_24_bits() {
        assert_ne!(vni("lab"), vni("lab2"));
        assert!(vni("a-much-longer-experiment-name") <= netloom_wire::MAX_VNI);
    }
}
