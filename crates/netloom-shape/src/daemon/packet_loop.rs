//! The packet loop: queued packets through the shaper at the clock's time, verdicts at their
//! exits, and requests answered between turns, all through `LoopIo`.

use super::requests::serve;
use super::socket::Asked;
use super::DaemonError;
use crate::classifier::{Direction, Packet, Rule};
use crate::kernel::KernelError;
use crate::limits::Tenancy;
use crate::shaper::{Arrival, Shaper};
use crate::spec::Cgroup;
use netloom_os::SocketOwner;
use netloom_time::Clock;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;

/// A packet the kernel holds: its queue (header copy or whole copy) and its id there.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) struct Handle {
    /// It came through the whole-copy queue (its pipe may mark it CE).
    pub(super) whole: bool,
    /// Its id in that queue, for the verdict.
    pub(super) id: u32,
}

/// A packet the kernel queued, as the loop takes it.
pub(super) struct Queued {
    /// Which packet, for the verdict.
    pub(super) handle: Handle,
    /// Its length in bytes.
    pub(super) len: u32,
    /// What the classifier reads of it; `None` for a packet it cannot read (let go at once).
    pub(super) packet: Option<Packet>,
}

/// Everything the packet loop does outside itself: the kernel's queue, socket table and rules,
/// and waiting. The daemon's is `KernelIo`; a test's plays packets against a `TestClock`, so
/// the loop (and its timing) runs the same against either.
pub(super) trait LoopIo {
    /// Waits until a packet or a request may be ready, or `timeout` has passed; true if
    /// requests may be waiting.
    fn wait(&mut self, timeout: std::time::Duration) -> Result<bool, DaemonError>;
    /// Appends what the kernel has queued since the last call, up to about `BATCH` packets.
    fn recv(&mut self, out: &mut Vec<Queued>) -> Result<(), DaemonError>;
    /// The local socket a TCP or UDP packet between `local` and `remote` belongs to.
    fn socket(&mut self, proto: u8, local: SocketAddr, remote: SocketAddr) -> Option<SocketOwner>;
    /// The primary group of user `uid`'s account.
    fn primary_group(&mut self, uid: u32) -> Option<u32>;
    /// The ids of the cgroups among `named` that the cgroup with id `id` is below.
    fn cgroups_above(&mut self, id: u64, named: &[&Cgroup]) -> Vec<u64>;
    /// Marks CE the held packets a pipe marked (their whole copies, given back at the verdict).
    fn mark(&mut self, marked: &[Handle]);
    /// Keeps the whole copies of held packets a pipe duplicated, as they are now (marked or
    /// not), for `send_copies`.
    fn duplicate(&mut self, duplicated: &[Handle]);
    /// Sends the kept copies whose exit has come (true), or forgets them (false).
    fn send_copies(&mut self, copies: &[(Handle, bool)]);
    /// Gives the verdicts (packet, accept) on held packets.
    fn verdicts(&mut self, decided: &[(Handle, bool)]);
    /// Makes the kernel's rules `rules`.
    fn install(&mut self, rules: &[Rule]) -> Result<(), KernelError>;
    /// Removes the kernel's rules.
    fn remove(&mut self);
}

/// The packet loop: takes queued packets through the shaper at `clock`'s time, gives each its
/// verdict at its exit, answers requests, and ends on `stopping`, on `stop`, or (if
/// `until_empty`) when its last link is gone; then lets every held packet go and removes the
/// rules.
pub(super) fn serve_loop(
    io: &mut impl LoopIo,
    clock: &impl Clock,
    requests: &mpsc::Receiver<Asked>,
    stopping: &AtomicBool,
    until_empty: bool,
    tenancy: &mut Tenancy,
) -> Result<(), DaemonError> {
    let mut shaper: Shaper<Handle> = Shaper::new(std::process::id().into());
    let (mut marked, mut duplicated, mut copies) = (Vec::new(), Vec::new(), Vec::new());
    let mut queued = Vec::new();
    let (mut batch, mut fates) = (Vec::new(), Vec::new());
    let mut out = Vec::new();
    let mut had_links = false;
    let result = loop {
        if stopping.load(Ordering::Relaxed) {
            break Ok(());
        }
        // Wake at least every 100 ms to notice SIGTERM.
        let cap = std::time::Duration::from_millis(100);
        let timeout = shaper.next_due().map_or(cap, |at| {
            std::time::Duration::from_nanos(at.0.saturating_sub(clock.now().0)).min(cap)
        });
        let asked = match io.wait(timeout) {
            Ok(asked) => asked,
            Err(e) => break Err(e),
        };
        if let Err(e) = io.recv(&mut queued) {
            break Err(e);
        }
        for q in queued.drain(..) {
            match q.packet {
                Some(mut packet) => {
                    find_socket(io, &mut shaper, &mut packet);
                    batch.push((packet, q.len, q.handle));
                }
                None => out.push((q.handle, true)),
            }
        }
        shaper.arrive_batch(clock.now(), &mut batch, &mut fates);
        for (id, fate) in fates.drain(..) {
            match fate {
                Arrival::Held {
                    duplicate: Some(_), ..
                } => duplicated.push(id),
                Arrival::Held { .. } | Arrival::Waiting { .. } => {}
                Arrival::Unmatched | Arrival::Passed => out.push((id, true)),
                Arrival::Dropped(_) | Arrival::OverLimit => out.push((id, false)),
            }
        }
        shaper.due(clock.now(), &mut out);
        shaper.take_marked(&mut marked);
        io.mark(&marked);
        marked.clear();
        // After the marks, so a marked packet's copy is marked too.
        io.duplicate(&duplicated);
        duplicated.clear();
        io.verdicts(&out);
        out.clear();
        // After the verdicts, so a copy leaving in the same turn as its original follows it.
        shaper.take_copies(&mut copies);
        io.send_copies(&copies);
        copies.clear();
        if asked {
            let mut stop = false;
            while let Ok(asked) = requests.try_recv() {
                let (reply, stopped) = serve(
                    io,
                    asked.uid,
                    asked.request,
                    &mut shaper,
                    tenancy,
                    clock.now(),
                );
                // The reader may have given up on a caller that went away: nothing to tell.
                let _ = asked.answer.send(reply);
                stop |= stopped;
            }
            had_links |= !shaper.is_empty();
            if stop || (until_empty && had_links && shaper.is_empty()) {
                break Ok(());
            }
        }
    };
    // Let held packets go before the queue closes, then take the rules away.
    shaper.drain(&mut out);
    io.verdicts(&out);
    io.remove();
    result
}

/// Fills in what the queue did not say of a packet's local socket and some rule needs, asked
/// of the kernel's socket table: the owner of the socket an arriving packet will reach (the
/// kernel looks it up after INPUT on loopback), so a user's IN pipes take only packets for
/// that user's sockets and IN rules with an owner can match, and, while a rule names a
/// cgroup, the socket's cgroup in either direction (the queue never reports it), and, the
/// first time a cgroup is seen since the links changed, which of the named cgroups it is below.
/// sock_diag gives a socket's uid, not a group: an arriving packet's group is its owner's
/// primary group (`u32::MAX`, which no gid rule matches, for a uid with no account). Leaving
/// packets carry their owner and group from the queue.
pub(super) fn find_socket(io: &mut impl LoopIo, shaper: &mut Shaper<Handle>, packet: &mut Packet) {
    let classifier = shaper.classifier();
    let owner = packet.owner.is_none() && classifier.needs_receivers();
    if !(owner || classifier.has_cgroups()) || !matches!(packet.proto, 6 | 17) {
        return;
    }
    let (local, remote) = match packet.direction {
        Direction::In => (
            SocketAddr::new(packet.dst, packet.dport),
            SocketAddr::new(packet.src, packet.sport),
        ),
        Direction::Out => (
            SocketAddr::new(packet.src, packet.sport),
            SocketAddr::new(packet.dst, packet.dport),
        ),
    };
    if let Some(socket) = io.socket(packet.proto, local, remote) {
        if packet.owner.is_none() && packet.direction == Direction::In {
            let gid = io.primary_group(socket.uid).unwrap_or(u32::MAX);
            packet.owner = Some((socket.uid, gid));
        }
        packet.cgroup = socket.cgroup;
        let unknown = |id: &u64| classifier.has_cgroups() && !classifier.knows_cgroup(*id);
        if let Some(id) = socket.cgroup.filter(unknown) {
            let above = io.cgroups_above(id, &classifier.cgroups());
            shaper.learn_cgroup(id, above);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classifier::ROOT;
    use crate::daemon::{Reply, Request};
    use netloom_time::Instant;
    use netloom_time::{Duration, TestClock};
    use std::collections::VecDeque;

    /// A `LoopIo` that plays packets and requests at given times on a `TestClock` (moved on in
    /// `wait`, where the daemon sleeps) and records each verdict with the time it was given.
    struct TestIo {
        clock: TestClock,
        packets: VecDeque<(Instant, Queued)>,
        requests: VecDeque<(Instant, Request)>,
        post: mpsc::Sender<Asked>,
        replies: Vec<mpsc::Receiver<Reply>>,
        verdicts: Vec<(Instant, u32, bool)>,
        marked: Vec<u32>,
        /// Copies kept, then sent (with the time) or forgotten.
        duplicated: Vec<u32>,
        sent: Vec<(Instant, u32, bool)>,
        installs: usize,
        removed: bool,
        /// The socket every lookup finds, and the cgroup ids whose place was asked for.
        socket: Option<SocketOwner>,
        placed: Vec<u64>,
    }

    impl TestIo {
        /// Plays `packets` and root's `requests` on `clock`, posting the requests to `post`.
        fn new(
            clock: &TestClock,
            packets: Vec<(Instant, Queued)>,
            requests: Vec<(Instant, Request)>,
            post: mpsc::Sender<Asked>,
        ) -> TestIo {
            TestIo {
                clock: clock.clone(),
                packets: packets.into(),
                requests: requests.into(),
                post,
                replies: Vec::new(),
                verdicts: Vec::new(),
                marked: Vec::new(),
                duplicated: Vec::new(),
                sent: Vec::new(),
                installs: 0,
                removed: false,
                socket: None,
                placed: Vec::new(),
            }
        }
    }

    impl LoopIo for TestIo {
        fn wait(&mut self, timeout: std::time::Duration) -> Result<bool, DaemonError> {
            let now = self.clock.now();
            let next = [
                self.packets.front().map(|p| p.0),
                self.requests.front().map(|r| r.0),
            ];
            let until = next
                .into_iter()
                .flatten()
                .fold(now + Duration(timeout.as_nanos() as u64), Instant::min);
            self.clock.set(until);
            let mut asked = false;
            while self.requests.front().is_some_and(|r| r.0 <= until) {
                let (_, request) = self.requests.pop_front().expect("a request");
                let (answer, reply) = mpsc::channel();
                let uid = ROOT;
                let request = Ok(request);
                self.post
                    .send(Asked {
                        uid,
                        request,
                        answer,
                    })
                    .expect("the loop");
                self.replies.push(reply);
                asked = true;
            }
            Ok(asked)
        }

        fn recv(&mut self, out: &mut Vec<Queued>) -> Result<(), DaemonError> {
            while self
                .packets
                .front()
                .is_some_and(|p| p.0 <= self.clock.now())
            {
                out.push(self.packets.pop_front().expect("a packet").1);
            }
            Ok(())
        }

        fn socket(&mut self, _: u8, _: SocketAddr, _: SocketAddr) -> Option<SocketOwner> {
            self.socket
        }

        fn primary_group(&mut self, _: u32) -> Option<u32> {
            None
        }

        /// Every cgroup is below every named one.
        fn cgroups_above(&mut self, id: u64, named: &[&Cgroup]) -> Vec<u64> {
            self.placed.push(id);
            named.iter().map(|c| c.id).collect()
        }

        fn mark(&mut self, marked: &[Handle]) {
            self.marked.extend(marked.iter().map(|h| h.id));
        }

        fn duplicate(&mut self, duplicated: &[Handle]) {
            self.duplicated.extend(duplicated.iter().map(|h| h.id));
        }

        fn send_copies(&mut self, copies: &[(Handle, bool)]) {
            let now = self.clock.now();
            self.sent
                .extend(copies.iter().map(|&(h, send)| (now, h.id, send)));
        }

        fn verdicts(&mut self, decided: &[(Handle, bool)]) {
            let now = self.clock.now();
            self.verdicts
                .extend(decided.iter().map(|&(h, accept)| (now, h.id, accept)));
        }

        fn install(&mut self, _: &[Rule]) -> Result<(), KernelError> {
            self.installs += 1;
            Ok(())
        }

        fn remove(&mut self) {
            self.removed = true;
        }
    }

    const MS: u64 = 1_000_000;

    fn to_port(id: u32, dport: u16) -> Queued {
        let packet = Packet {
            direction: Direction::Out,
            proto: 6,
            src: "127.0.0.1".parse().unwrap(),
            dst: "127.0.0.1".parse().unwrap(),
            sport: 40000,
            dport,
            owner: Some((0, 0)),
            cgroup: None,
            ecn: netloom_link::Ecn::NotEct,
        };
        Queued {
            handle: Handle { whole: false, id },
            len: 60,
            packet: Some(packet),
        }
    }

    /// A request to make the link `text` describes.
    fn set(text: &str) -> Request {
        Request::Set {
            words: text.split_whitespace().map(String::from).collect(),
            profiles: Vec::new(),
        }
    }

    /// A request to delete the link `text` names.
    fn delete(text: &str) -> Request {
        Request::Delete {
            words: text.split_whitespace().map(String::from).collect(),
        }
    }

    /// Runs the loop over `io` on `clock`, with no limits, until it ends.
    fn serve(
        io: &mut TestIo,
        clock: &TestClock,
        requests: &mpsc::Receiver<Asked>,
        until_empty: bool,
    ) {
        let mut tenancy = Tenancy::load(std::path::Path::new("/nonexistent")).unwrap();
        let stopping = AtomicBool::new(false);
        serve_loop(io, clock, requests, &stopping, until_empty, &mut tenancy).unwrap();
    }

    #[test]
    fn the_loop_gives_each_verdict_at_its_packets_exit_on_the_clock_it_is_given() {
        let clock = TestClock::new();
        let (post, requests) = mpsc::channel();
        let mut io = TestIo::new(
            &clock,
            vec![
                (Instant(MS), to_port(1, 80)),
                (Instant(2 * MS), to_port(2, 81)),
                (Instant(5 * MS), to_port(3, 80)),
            ],
            vec![
                (
                    Instant(0),
                    set("client 80@127.0.0.1 IN delay=20ms OUT delay=20ms"),
                ),
                (Instant(40 * MS), delete("1")),
            ],
            post,
        );
        // Until empty: the loop ends with the delete at 40 ms.
        serve(&mut io, &clock, &requests, true);
        // An unlimited pipe takes 1 ns to serialize.
        let one_ns = crate::spec::UNLIMITED.tx_time(60).0;
        assert_eq!(
            io.verdicts,
            vec![
                (Instant(2 * MS), 2, true),
                (Instant(21 * MS + one_ns), 1, true),
                (Instant(25 * MS + one_ns), 3, true),
            ]
        );
        assert_eq!(clock.now(), Instant(40 * MS));
        assert_eq!((io.installs, io.removed), (1, true));
        let messages: Vec<Option<String>> = io
            .replies
            .iter()
            .map(|r| r.try_recv().expect("answered").message)
            .collect();
        assert_eq!(
            messages,
            vec![Some("link 1 made".into()), Some("link 1 deleted".into())]
        );
    }

    #[test]
    fn the_loop_sends_a_duplicate_at_its_exit_after_its_originals_verdict() {
        let clock = TestClock::new();
        let (post, requests) = mpsc::channel();
        let mut io = TestIo::new(
            &clock,
            vec![(Instant(MS), to_port(1, 80)), (Instant(MS), to_port(2, 81))],
            vec![
                (
                    Instant(0),
                    set("client 80@127.0.0.1 OUT bw=12Mbit delay=20ms duplicate=100%"),
                ),
                (Instant(40 * MS), delete("1")),
            ],
            post,
        );
        serve(&mut io, &clock, &requests, true);
        // 60 bytes at 12 Mbit/s: 40 µs each; the copy is serialized behind its original.
        let tx = netloom_time::Rate::bps(12_000_000).tx_time(60).0;
        assert_eq!(
            io.verdicts,
            vec![(Instant(MS), 2, true), (Instant(21 * MS + tx), 1, true)]
        );
        assert_eq!(io.duplicated, vec![1]);
        assert_eq!(io.sent, vec![(Instant(21 * MS + 2 * tx), 1, true)]);
    }

    /// A packet arriving from 127.0.0.1:`sport`, whose socket the queue did not report.
    fn from_port(id: u32, sport: u16) -> Queued {
        let mut queued = to_port(id, 40000);
        let packet = queued.packet.as_mut().expect("a packet");
        packet.direction = Direction::In;
        (packet.sport, packet.dport, packet.owner) = (sport, 40000, None);
        queued
    }

    #[test]
    fn the_loop_places_a_sockets_cgroup_once_and_only_while_a_rule_names_a_cgroup() {
        if netloom_os::cgroup2_mount().is_none() {
            eprintln!("skipped: no cgroup v2 here");
            return;
        }
        let clock = TestClock::new();
        let (post, requests) = mpsc::channel();
        let mut io = TestIo::new(
            &clock,
            vec![
                (Instant(MS), from_port(1, 80)),
                (Instant(2 * MS), from_port(2, 80)),
                (Instant(11 * MS), from_port(3, 81)),
                (Instant(12 * MS), from_port(4, 81)),
            ],
            vec![
                // A group on IN: each arriving packet's socket is looked up, for its owner.
                (Instant(0), set("client 80@127.0.0.1 gid=5 IN delay=1ms")),
                (
                    Instant(10 * MS),
                    set("client 81@127.0.0.1 cgroup=/ IN delay=1ms"),
                ),
                (Instant(20 * MS), Request::Stop),
            ],
            post,
        );
        io.socket = Some(SocketOwner {
            uid: 0,
            inode: 1,
            cgroup: Some(7),
        });
        serve(&mut io, &clock, &requests, false);
        // Cgroup 7 is placed once, after a rule names a cgroup; its packets then take that rule.
        assert_eq!(io.placed, vec![7]);
        let one_ns = crate::spec::UNLIMITED.tx_time(60).0;
        assert_eq!(
            io.verdicts,
            vec![
                (Instant(MS), 1, true),
                (Instant(2 * MS), 2, true),
                (Instant(12 * MS + one_ns), 3, true),
                (Instant(13 * MS + one_ns), 4, true),
            ]
        );
    }
}
