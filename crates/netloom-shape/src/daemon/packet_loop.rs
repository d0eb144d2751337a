//! The packet loop: queued packets through the shaper at the clock's time, verdicts at their
//! exits, and requests answered between turns, all through `LoopIo`; the kernel's rules are
//! made off the packet path, and a request's reply waits for them, not the packets.

use super::requests::{error_reply, kernel_rules, serve, Outcome, Undo};
use super::socket::Asked;
use super::{DaemonError, Reply, Request};
use crate::classifier::{Direction, Packet, Rule, ROOT};
use crate::kernel::KernelError;
use crate::limits::Tenancy;
use crate::shaper::Target;
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
    /// Waits until a packet, a request or the end of an installation may be ready, or
    /// `timeout` has passed.
    fn wait(&mut self, timeout: std::time::Duration) -> Result<(), DaemonError>;
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
    /// Starts making the kernel's rules `rules` (`None`: removing them) elsewhere than the
    /// packet loop, which goes on meanwhile: iptables takes seconds over a large set, and no
    /// packet may wait for it. One at a time: the loop waits for `installed` before the next.
    fn install(&mut self, rules: Option<Vec<Rule>>);
    /// How the installation started last ended, once it has (given once).
    fn installed(&mut self) -> Option<Result<(), KernelError>>;
    /// Removes the kernel's rules now, once an installation under way has ended: the process
    /// is ending.
    fn remove(&mut self);
}

/// A request whose rules are being installed: its reply waits for them.
struct Pending {
    /// Where its reply goes (none for the undoing of a failed request).
    answer: Option<mpsc::Sender<Reply>>,
    /// Its reply once the rules are in.
    reply: Reply,
    /// What to take back if they cannot be.
    undo: Option<Undo>,
    /// The first link of a process a first request started: if it fails, the process ends.
    first: bool,
}

/// Whether the loop goes on after answering requests.
enum Then {
    Go,
    End(Result<(), DaemonError>),
}

/// The requests' half of the loop: finishes the request whose rules were being installed, if
/// they now are, then, while no installation is under way, answers waiting requests, up to the
/// first that needs one.
struct Answering<'a> {
    requests: &'a mpsc::Receiver<Asked>,
    tenancy: &'a mut Tenancy,
    until_empty: bool,
    pending: Option<Pending>,
    /// Has a link's rules been in the kernel yet?
    had_links: bool,
    /// With `until_empty`: when the loop began, for `FIRST_REQUEST_WAIT`.
    began: netloom_time::Instant,
}

/// How long a process a first request started (`--until-empty`) waits for that request: the
/// caller that started it sends it within milliseconds, so a process still without a link
/// after this was started by a caller that went away (killed between the start and its
/// request) and would otherwise wait for ever.
pub(super) const FIRST_REQUEST_WAIT: netloom_time::Duration = netloom_time::Duration::from_secs(30);

impl Answering<'_> {
    fn turn(
        &mut self,
        io: &mut impl LoopIo,
        shaper: &mut Shaper<Handle>,
        now: netloom_time::Instant,
    ) -> Then {
        if self.pending.is_some() {
            let Some(result) = io.installed() else {
                return Then::Go;
            };
            let done = self.pending.take().expect("pending");
            if let Then::End(e) = self.finish(io, shaper, done, result) {
                return Then::End(e);
            }
        }
        while self.pending.is_none() {
            let Ok(asked) = self.requests.try_recv() else {
                break;
            };
            // Root's first link, in a process a first request started (only root starts one).
            let first = self.until_empty
                && !self.had_links
                && asked.uid == ROOT
                && matches!(asked.request, Ok(Request::Set { .. }));
            // The reader may have given up on a caller that went away: nothing to tell.
            match serve(asked.uid, asked.request, shaper, self.tenancy, now) {
                Outcome::Reply(reply) => {
                    let failed = reply.error.clone().filter(|_| first);
                    let _ = asked.answer.send(reply);
                    if let Some(why) = failed {
                        return Then::End(Err(DaemonError::FirstRequest(why)));
                    }
                }
                Outcome::Stop(reply) => {
                    // The rules go before the answer, so the caller finds them gone.
                    io.remove();
                    let _ = asked.answer.send(reply);
                    return Then::End(Ok(()));
                }
                Outcome::Install { rules, reply, undo } => {
                    io.install(rules);
                    self.pending = Some(Pending {
                        answer: Some(asked.answer),
                        reply,
                        undo,
                        first,
                    });
                }
            }
        }
        self.had_links |= self.pending.is_none() && !shaper.is_empty();
        let idle = self.until_empty && shaper.is_empty() && self.pending.is_none();
        match (idle, self.had_links) {
            (true, true) => Then::End(Ok(())),
            (true, false) if now >= self.began + FIRST_REQUEST_WAIT => {
                Then::End(Err(DaemonError::NoFirstRequest(FIRST_REQUEST_WAIT)))
            }
            _ => Then::Go,
        }
    }

    /// Replies to the request whose rules were being installed; if the kernel refused them,
    /// its link is taken back (and the rules before it installed again).
    fn finish(
        &mut self,
        io: &mut impl LoopIo,
        shaper: &mut Shaper<Handle>,
        done: Pending,
        result: Result<(), KernelError>,
    ) -> Then {
        let e = match result {
            Ok(()) => {
                if let Some(answer) = done.answer {
                    let _ = answer.send(done.reply);
                }
                return Then::Go;
            }
            Err(e) => e,
        };
        eprintln!("netloom shape: {e}");
        if let Some(undo) = done.undo {
            let _ = shaper.delete(Some(undo.uid), &Target::Selector(undo.selector));
            io.install(kernel_rules(shaper));
            self.pending = Some(Pending {
                answer: None,
                reply: Reply::default(),
                undo: None,
                first: false,
            });
        }
        if let Some(answer) = done.answer {
            let _ = answer.send(error_reply(e.to_string()));
        }
        match done.first {
            true => Then::End(Err(DaemonError::FirstRequest(e.to_string()))),
            false => Then::Go,
        }
    }
}

/// The packet loop: takes queued packets through the shaper at `clock`'s time (holding at most
/// `capacity` packets over all pipes), gives each its verdict at its exit, answers requests,
/// and ends on `stopping`, on `stop`, or (if `until_empty`) when its last link is gone or its
/// first request failed; then lets every held packet go and removes the rules.
pub(super) fn serve_loop(
    io: &mut impl LoopIo,
    clock: &impl Clock,
    requests: &mpsc::Receiver<Asked>,
    stopping: &AtomicBool,
    until_empty: bool,
    tenancy: &mut Tenancy,
    capacity: u64,
) -> Result<(), DaemonError> {
    let mut shaper: Shaper<Handle> = Shaper::new(std::process::id().into()).with_capacity(capacity);
    let (mut marked, mut duplicated, mut copies) = (Vec::new(), Vec::new(), Vec::new());
    let mut queued = Vec::new();
    let (mut batch, mut fates) = (Vec::new(), Vec::new());
    let mut out = Vec::new();
    let mut answering = Answering {
        requests,
        tenancy,
        until_empty,
        pending: None,
        had_links: false,
        began: clock.now(),
    };
    let result = loop {
        if stopping.load(Ordering::Relaxed) {
            break Ok(());
        }
        // Wake at least every 100 ms to notice SIGTERM.
        let cap = std::time::Duration::from_millis(100);
        let timeout = shaper.next_due().map_or(cap, |at| {
            std::time::Duration::from_nanos(at.0.saturating_sub(clock.now().0)).min(cap)
        });
        if let Err(e) = io.wait(timeout) {
            break Err(e);
        }
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
        if let Then::End(result) = answering.turn(io, &mut shaper, clock.now()) {
            break result;
        }
    };
    // Let held packets go before the queue closes, then take the rules away.
    shaper.drain(&mut out);
    io.verdicts(&out);
    io.remove();
    // What the limits turned away, per user, for the log.
    for u in shaper.users(None) {
        if u.dropped_over_limit + u.passed_when_full > 0 {
            eprintln!(
                "netloom shape: uid {}: {} packets dropped over its limits, {} passed unshaped with the queue full",
                u.uid, u.dropped_over_limit, u.passed_when_full
            );
        }
    }
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
        /// Rules installed (removals not counted), and whether the rules were removed at last.
        installs: usize,
        removed: bool,
        /// How long each installation takes on the clock (none: at once), and whether each
        /// fails; the one under way ends at the time given.
        install_takes: VecDeque<(Duration, bool)>,
        installing: Option<(Instant, bool)>,
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
                install_takes: VecDeque::new(),
                installing: None,
                socket: None,
                placed: Vec::new(),
            }
        }
    }

    impl LoopIo for TestIo {
        fn wait(&mut self, timeout: std::time::Duration) -> Result<(), DaemonError> {
            let now = self.clock.now();
            let next = [
                self.packets.front().map(|p| p.0),
                self.requests.front().map(|r| r.0),
                self.installing.map(|i| i.0),
            ];
            let until = next
                .into_iter()
                .flatten()
                .fold(now + Duration(timeout.as_nanos() as u64), Instant::min);
            self.clock.set(until);
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
            }
            Ok(())
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

        fn install(&mut self, rules: Option<Vec<Rule>>) {
            self.installs += usize::from(rules.is_some());
            let (takes, fails) = self.install_takes.pop_front().unwrap_or_default();
            self.installing = Some((self.clock.now() + takes, fails));
        }

        fn installed(&mut self) -> Option<Result<(), KernelError>> {
            let (_, fails) = self.installing.filter(|i| i.0 <= self.clock.now())?;
            self.installing = None;
            match fails {
                true => Some(Err(KernelError::new(
                    "iptables-legacy-restore",
                    "No such file or directory",
                ))),
                false => Some(Ok(())),
            }
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
        served(io, clock, requests, until_empty).unwrap();
    }

    /// `serve`, giving back how the loop ended.
    fn served(
        io: &mut TestIo,
        clock: &TestClock,
        requests: &mpsc::Receiver<Asked>,
        until_empty: bool,
    ) -> Result<(), DaemonError> {
        let mut tenancy = Tenancy::load(std::path::Path::new("/nonexistent")).unwrap();
        let stopping = AtomicBool::new(false);
        serve_loop(
            io,
            clock,
            requests,
            &stopping,
            until_empty,
            &mut tenancy,
            u64::MAX,
        )
    }

    /// The replies given so far: their messages, or their errors.
    fn answers(io: &TestIo) -> Vec<String> {
        io.replies
            .iter()
            .map(|r| match r.try_recv() {
                Ok(Reply { error: Some(e), .. }) => format!("error: {e}"),
                Ok(reply) => reply.message.unwrap_or_default(),
                Err(_) => "no answer".to_string(),
            })
            .collect()
    }

    #[test]
    fn a_request_whose_rules_take_seconds_to_install_delays_no_packet() {
        let clock = TestClock::new();
        let (post, requests) = mpsc::channel();
        let mut io = TestIo::new(
            &clock,
            vec![
                (Instant(20 * MS), to_port(1, 81)),
                (Instant(1000 * MS), to_port(2, 81)),
                (Instant(2500 * MS), to_port(3, 81)),
            ],
            vec![
                (Instant(0), set("client 81@127.0.0.1 OUT delay=1ms")),
                // Many iptables rules: iptables-restore takes 3 s over them.
                (
                    Instant(10 * MS),
                    set("client 1-300@127.0.0.1 OUT delay=1ms"),
                ),
                (Instant(20 * MS), Request::Show),
                (Instant(4000 * MS), Request::Stop),
            ],
            post,
        );
        io.install_takes = [(Duration(0), false), (Duration::from_secs(3), false)].into();
        serve(&mut io, &clock, &requests, false);
        // Root's 1 ms pipe: each packet leaves 1 ms after it came, while the rules go in.
        let one_ns = crate::spec::UNLIMITED.tx_time(60).0;
        assert_eq!(
            io.verdicts,
            vec![
                (Instant(21 * MS + one_ns), 1, true),
                (Instant(1001 * MS + one_ns), 2, true),
                (Instant(2501 * MS + one_ns), 3, true),
            ]
        );
        // The request is answered once its rules are in; the next one after it.
        assert_eq!(io.installs, 2);
        assert_eq!(
            answers(&io)[..2],
            ["link 1 made".to_string(), "link 2 made".to_string()]
        );
    }

    #[test]
    fn a_first_request_that_fails_ends_the_process_it_started_with_its_reason() {
        let clock = TestClock::new();
        let (post, requests) = mpsc::channel();
        let mut io = TestIo::new(
            &clock,
            Vec::new(),
            vec![
                (Instant(0), Request::Show),
                (Instant(MS), set("client 81@127.0.0.1 OUT delay=1ms")),
            ],
            post,
        );
        io.install_takes = [(Duration(MS), true)].into();
        let result = served(&mut io, &clock, &requests, true);
        let e = result.unwrap_err().to_string();
        assert!(
            e.contains("the first request failed") && e.contains("iptables-legacy-restore"),
            "{e}"
        );
        let said = answers(&io);
        assert!(
            said[1].starts_with("error: iptables-legacy-restore"),
            "{said:?}"
        );
        assert!(io.removed);
        // Within a moment, not never: the loop ended when the install failed.
        assert_eq!(clock.now(), Instant(2 * MS));
    }

    #[test]
    fn a_process_started_for_a_first_request_that_never_comes_ends_after_the_wait() {
        // A show (no link) at 1 s, then nothing: the caller that started it went away.
        let clock = TestClock::new();
        let (post, requests) = mpsc::channel();
        let mut io = TestIo::new(
            &clock,
            Vec::new(),
            vec![(Instant(1000 * MS), Request::Show)],
            post,
        );
        let result = served(&mut io, &clock, &requests, true);
        let e = result.unwrap_err().to_string();
        assert!(e.contains("did not come within 30s"), "{e}");
        assert_eq!(answers(&io).len(), 1, "the show was answered");
        // Within a turn (100 ms) of the wait, not for ever.
        let ended = clock.now();
        assert!(ended >= Instant(0) + FIRST_REQUEST_WAIT, "{ended:?}");
        assert!(
            ended <= Instant(0) + FIRST_REQUEST_WAIT + Duration(100 * MS),
            "{ended:?}"
        );
    }

    #[test]
    fn a_later_request_that_fails_is_undone_and_the_process_stays() {
        let clock = TestClock::new();
        let (post, requests) = mpsc::channel();
        let mut io = TestIo::new(
            &clock,
            Vec::new(),
            vec![
                (Instant(0), set("client 81@127.0.0.1 OUT delay=1ms")),
                (Instant(MS), set("client 82@127.0.0.1 OUT delay=1ms")),
                (Instant(10 * MS), Request::Show),
                (Instant(20 * MS), delete("1")),
            ],
            post,
        );
        io.install_takes = [(Duration(0), false), (Duration(MS), true)].into();
        serve(&mut io, &clock, &requests, true);
        let said = answers(&io);
        assert_eq!(said[0], "link 1 made");
        assert!(said[1].starts_with("error: iptables"), "{said:?}");
        // Link 2 is gone again and its rules with it (installed anew without them).
        assert_eq!(io.installs, 3);
        assert_eq!(said[3], "link 1 deleted");
        assert_eq!(clock.now(), Instant(20 * MS));
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
