//! Drivers of a live run with two workers, against in-memory hosts: h0 and its pipe on worker 0,
//! the router's pipes and h1 on worker 1. Packets cross by hand-off, are written out by the
//! worker holding their payload (their source's with payloads cached, their destination's with
//! payloads shipped), leave exactly when one driver would release them (a hand-off due at t is
//! written at t), a change reaches every worker, and every payload buffer comes back, whichever
//! worker duplicated or dropped its copies. One test runs the workers on threads of their own
//! and the system's clock, as a run does.

use crate::common::{at_us, ipv4, pair, run_until_quiet, MemIo, TestTime};
use netloom_engine::{Engine, Ownership, Payload};
use netloom_link::{LossModel, PipeConfig};
use netloom_live::{
    Clock, Controller, Direction, Driver, DriverConfig, Framing, Hybrid, Moved, Precision,
    SystemClock, TestClock, Thresholds,
};
use netloom_time::{Duration, Rate};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

const SEED: u64 = 5;

fn pipes() -> PipeConfig {
    PipeConfig::new(Rate::bps(10_000_000), Duration::from_millis(2))
}

/// The r-h1 link loses 30 % and duplicates every packet it keeps.
fn lossy(c: &mut PipeConfig) {
    c.duplicate = 1.0;
    c.loss = LossModel::Bernoulli { p: 0.3 };
}

fn config(precision: Precision) -> DriverConfig {
    DriverConfig {
        max_packet: 2048,
        max_in_flight: 1024,
        precision,
        thresholds: Thresholds::default(),
        allow_spoofing: false,
    }
}

/// One driver per worker, connected, sharing `clock`; and their controller.
fn workers<C: TestTime>(
    clock: C,
    precision: Precision,
    payload: Payload,
    tweak: impl Fn(&mut PipeConfig),
) -> (Vec<Driver<MemIo<C>, C>>, Controller<C>) {
    let (topo, addrs) = pair(pipes(), tweak);
    // Pipes in link order, a→b then b→a: h0→r, r→h0, r→h1, h1→r.
    let ownership = Arc::new(Ownership::live(&topo, &[0, 1, 1, 1], 2, payload).unwrap());
    let mut drivers: Vec<_> = (0..2)
        .map(|k| {
            let engine = Engine::partitioned(topo.clone(), SEED, ownership.clone(), k);
            let io = MemIo::new(clock.clone(), Framing::Plain);
            Driver::new(engine, io, clock.clone(), &addrs, config(precision))
        })
        .collect();
    let names = drivers[0].engine().topology().clone();
    let control = Controller::connect(&mut drivers, clock, names).unwrap();
    (drivers, control)
}

fn single(
    clock: TestClock,
    tweak: impl Fn(&mut PipeConfig),
) -> Driver<MemIo<TestClock>, TestClock> {
    let (topo, addrs) = pair(pipes(), tweak);
    let io = MemIo::new(clock.clone(), Framing::Plain);
    Driver::new(
        Engine::new(topo, SEED),
        io,
        clock,
        &addrs,
        config(Precision::Busy),
    )
}

/// Packets each way: no more than the first pipe's queue holds.
const EACH_WAY: usize = 8;

/// `EACH_WAY` packets each way, 1000 bytes, numbered by their first payload byte (h1's from
/// 100), sent by the I/O that reads each host.
fn send_both_ways<C: TestTime>(h0: &mut MemIo<C>, h1: &mut MemIo<C>) {
    for i in 0..EACH_WAY as u8 {
        h0.send(0, ipv4([198, 18, 0, 2], 1000, i));
        h1.send(1, ipv4([198, 18, 0, 1], 1000, 100 + i));
    }
}

/// (destination host, packet number) of every packet written, sorted.
fn written<C: TestTime>(drivers: &[&Driver<MemIo<C>, C>]) -> Vec<(u32, u8)> {
    let mut all: Vec<_> = drivers
        .iter()
        .flat_map(|d| d.io().delivered.iter().map(|(h, _, p)| (*h, p[20])))
        .collect();
    all.sort_unstable();
    all
}

#[test]
fn packets_cross_workers_on_time_and_are_written_where_their_payload_is() {
    for payload in [Payload::Cache, Payload::Ship] {
        crossing_on_time(payload);
    }
}

fn crossing_on_time(payload: Payload) {
    let clock = TestClock::new();
    let (mut ds, _control) = workers(clock.clone(), Precision::Busy, payload, |_| {});
    let (a, b) = ds.split_at_mut(1);
    send_both_ways(a[0].io_mut(), b[0].io_mut());
    run_until_quiet(&mut ds, &clock);
    for (k, d) in ds.iter().enumerate() {
        // Cached, worker k writes its own host's packets to the other; shipped, the other's
        // packets to its own.
        let (to, from) = match payload {
            Payload::Cache => (1 - k, k),
            Payload::Ship => (k, 1 - k),
        };
        let got = &d.io().delivered;
        assert_eq!(got.len(), EACH_WAY, "{payload:?}: worker {k}");
        for (n, (host, at, packet)) in got.iter().enumerate() {
            assert_eq!(*host as usize, to);
            assert_eq!(
                packet[20],
                (n + 100 * from) as u8,
                "in order, payload intact"
            );
            assert_eq!(packet.len(), 1000);
            // Two hops of 2 ms and 0.8 ms serialization, plus n serializations queued: a
            // hand-off due at t is written at t.
            assert_eq!(
                *at,
                at_us(5_600 + 800 * n as u64),
                "{payload:?}: packet {n}"
            );
        }
        assert_eq!(d.in_flight(), 0);
    }
    let (d0, d1) = (ds[0].accuracy(), ds[1].accuracy());
    // Cached, h0's packets cross twice (to r's worker, and home to be delivered) and h1's not
    // at all; shipped, each crosses once (to r's worker, or from it to h0's).
    let n = EACH_WAY as u64;
    assert_eq!((d0.handoffs, d1.handoffs), (n, n));
    assert_eq!(
        (d0.late_handoffs, d1.late_handoffs, d0.late, d1.late),
        (0, 0, 0, 0)
    );
    assert_eq!(d0.released + d1.released, 2 * n);
    let mut merged = ds[0].final_snapshot();
    merged.merge(ds[1].final_snapshot());
    let c = &merged.hosts;
    assert_eq!((c[0].packets_in, c[0].packets_out), (n, n));
    assert_eq!((c[1].packets_in, c[1].packets_out), (n, n));
    assert_eq!(merged.accuracy.report().handoffs, 2 * n);
    // What each worker handed off: as many as the other took over.
    let sent: Vec<u64> = merged.handoffs.iter().map(|h| h.0).collect();
    assert_eq!(sent, [d1.handoffs, d0.handoffs]);
    assert_eq!(sent.iter().sum::<u64>(), merged.cross_core_hops);
    assert_eq!(merged.in_flight, 0);
}

#[test]
fn a_change_reaches_every_worker_at_the_time_it_is_made() {
    // r's pipes are worker 1's, h0's worker 0's: a delay set on r-h1 at 1 ms holds for the next
    // packet on both, though only worker 1 emulates that pipe.
    let clock = TestClock::new();
    let (mut ds, control) = workers(clock.clone(), Precision::Busy, Payload::Cache, |_| {});
    clock.set(at_us(1_000));
    let mut set = serde_json::Map::new();
    set.insert("delay".into(), "7ms".into());
    let pending = control.link_set("r", "h1", Direction::Both, &set).unwrap();
    for d in ds.iter_mut() {
        d.step().unwrap();
    }
    let change = pending.wait(std::time::Duration::ZERO).unwrap();
    assert_eq!(change.at_ns, 1_000_000);
    for d in &ds {
        let pipe = d.engine().topology().links[1].ab;
        assert_eq!(
            d.engine().pipe(pipe).config().delay,
            Duration::from_millis(7)
        );
    }
    ds[0].io_mut().send(0, ipv4([198, 18, 0, 2], 1000, 0));
    run_until_quiet(&mut ds, &clock);
    // h0 writes at 1 ms: 2.8 ms to r, then 7.8 ms.
    assert_eq!(ds[0].io().delivered[0].1, at_us(11_600));
    let snapshot = control.snapshot();
    for d in ds.iter_mut() {
        d.step().unwrap();
    }
    let all = snapshot.wait(std::time::Duration::ZERO).unwrap();
    assert!(
        all.pipes.iter().all(Option::is_some),
        "every pipe, from its owner"
    );
}

/// Both workers on threads of their own, sleeping between deadlines on the system's clock:
/// duplicates made and copies lost on worker 1 settle payloads held by worker 0, and the
/// packets that come out are those one driver lets through with the same seed.
#[test]
fn payload_holds_and_releases_cross_threads_and_match_one_driver() {
    let clock = TestClock::new();
    let mut one = single(clock.clone(), lossy);
    let mut h1 = MemIo::new(clock.clone(), Framing::Plain);
    send_both_ways(one.io_mut(), &mut h1);
    one.io_mut().sends[1] = std::mem::take(&mut h1.sends[1]);
    run_until_quiet(std::slice::from_mut(&mut one), &clock);
    let expected = written(&[&one]);
    // Each packet crosses the lossy link once, and each that survives arrives twice.
    assert!(expected.len() > EACH_WAY && expected.len() < 4 * EACH_WAY);

    for payload in [Payload::Cache, Payload::Ship] {
        assert_eq!(on_two_threads(payload), expected, "{payload:?}");
    }
}

/// Sends both ways through two workers on two threads and returns what was written.
fn on_two_threads(payload: Payload) -> Vec<(u32, u8)> {
    let precision = Precision::Hybrid(Hybrid::default());
    let (mut ds, _control) = workers(SystemClock::start(), precision, payload, lossy);
    let (a, b) = ds.split_at_mut(1);
    send_both_ways(a[0].io_mut(), b[0].io_mut());
    let busy = |d: &Driver<MemIo<SystemClock>, SystemClock>| {
        d.io().unsent() || d.in_flight() > 0 || d.engine().poll_at().is_some()
    };
    let quiet = AtomicBool::new(false);
    let idle: Vec<AtomicBool> = (0..2).map(|_| AtomicBool::new(false)).collect();
    std::thread::scope(|s| {
        for (k, d) in ds.iter_mut().enumerate() {
            let (quiet, idle) = (&quiet, &idle);
            s.spawn(move || {
                let start = std::time::Instant::now();
                while !quiet.load(Ordering::SeqCst)
                    && start.elapsed() < std::time::Duration::from_secs(5)
                {
                    d.step().unwrap();
                    idle[k].store(!busy(d), Ordering::SeqCst);
                    if idle.iter().all(|i| i.load(Ordering::SeqCst)) {
                        quiet.store(true, Ordering::SeqCst);
                    }
                }
            });
        }
    });
    for (k, d) in ds.iter().enumerate() {
        assert_eq!(
            d.in_flight(),
            0,
            "{payload:?}: every payload buffer of {k} came back"
        );
    }
    written(&[&ds[0], &ds[1]])
}

/// Packets sent both ways, one per serialization time (800 us), h0's for 12 ms and h1's for
/// 4 ms, through two workers
/// (on a test clock), with `payload`; with `move_at`, every pipe and host moves to worker 0 at
/// that instant (with the packets in flight, and their bytes when payloads are shipped). The
/// move must come after h1's last send (3.2 ms): each test worker has a `MemIo` of its own, so
/// what h1 sends later stays in worker 1's, which stops reading h1 at the move, and the drivers
/// never go quiet; a real TUN queue is one, and its new owner reads it.
/// Returns (destination, time written, packet number) of every packet written, in order of
/// writing per destination, what moved, and each pipe's packets in and out as the workers'
/// merged snapshot reports them.
#[allow(clippy::type_complexity)]
fn stream(
    move_at: Option<u64>,
    payload: Payload,
) -> (
    Vec<(u32, netloom_time::Instant, u8)>,
    Option<Moved>,
    Vec<(u64, u64)>,
) {
    let clock = TestClock::new();
    let (mut ds, control) = workers(clock.clone(), Precision::Busy, payload, |_| {});
    for i in 0..15u8 {
        let at = at_us(800 * u64::from(i));
        ds[0]
            .io_mut()
            .send_at(0, at, ipv4([198, 18, 0, 2], 1000, i));
        if i < 5 {
            ds[1]
                .io_mut()
                .send_at(1, at, ipv4([198, 18, 0, 1], 1000, 100 + i));
        }
    }
    let pending = move_at.map(|us| {
        let topo = ds[0].engine().topology().clone();
        let next = Ownership::live(&topo, &[0, 0, 0, 0], 2, payload).unwrap();
        control.repartition(Arc::new(next), at_us(us))
    });
    run_until_quiet(&mut ds, &clock);
    let moved = pending.map(|p| p.wait(std::time::Duration::ZERO).unwrap());
    if moved.is_some() {
        let pipes = ds[0].engine().topology().pipes.len() as u32;
        assert!((0..pipes).all(|p| ds[0].engine().owns_pipe(p)));
        assert!(ds[0].engine().owns_host(1) && !ds[1].engine().owns_host(1));
    }
    for d in &ds {
        assert_eq!(d.in_flight(), 0, "every payload buffer came back");
    }
    let mut all: Vec<_> = ds
        .iter()
        .flat_map(|d| d.io().delivered.iter().map(|(h, at, p)| (*h, *at, p[20])))
        .collect();
    all.sort_by_key(|&(h, at, _)| (h, at));
    let mut snapshot = ds[0].snapshot();
    snapshot.merge(ds[1].snapshot());
    let pipes = snapshot
        .pipes
        .iter()
        .map(|p| {
            let r = &p.as_ref().expect("every pipe has an owner").report;
            (r.packets_in, r.packets_out)
        })
        .collect();
    (all, moved, pipes)
}

#[test]
fn a_move_while_packets_are_in_flight_loses_none_reorders_none_and_delays_none() {
    for payload in [Payload::Cache, Payload::Ship] {
        moving_loses_none_reorders_none_and_delays_none(payload);
    }
}

/// With payloads cached, moved exits keep their tokens (their payloads stay home); shipped,
/// each moved exit takes its packet's bytes along and its new holder's token.
fn moving_loses_none_reorders_none_and_delays_none(payload: Payload) {
    let (baseline, _, counted) = stream(None, payload);
    assert_eq!(baseline.len(), 20, "none lost without a move");
    // Every pipe passes on what it took, counted on whichever worker handled its exits.
    assert!(counted.iter().all(|&(i, o)| i == o && i > 0), "{counted:?}");
    // At 4.5 ms packets of both directions are in flight in r's pipes (worker 1's), and h1
    // (worker 1's) moves to worker 0 with them.
    let (moved_run, moved, moved_counted) = stream(Some(4_500), payload);
    let moved = moved.expect("the move was answered");
    assert!(
        moved.packets > 0,
        "{payload:?}: pending exits moved: {moved:?}"
    );
    // Where the stall went, in order, ending with it; between threads, no way between machines.
    let p = moved.phases.expect("the phases of the move");
    assert!(p.ordered_ahead_ns > 0, "ordered before the instant: {p:?}");
    let steps = [p.paused_ns, p.extracted_ns, p.installed_ns, p.resumed_ns];
    assert!(steps.windows(2).all(|w| w[0] <= w[1]), "{p:?}");
    assert_eq!(p.resumed_ns, moved.stall_ns);
    let way = [p.sent_ns, p.read_ns, p.parsed_ns];
    assert!(way.iter().all(Option::is_none), "{p:?}");
    assert_eq!(
        moved_run, baseline,
        "{payload:?}: the same packets at the same times"
    );
    // A pipe's counters move with it: the report counts every packet of the run.
    assert_eq!(moved_counted, counted, "pipes' packets in and out");
    for host in [0, 1] {
        let ids: Vec<u8> = moved_run
            .iter()
            .filter(|(h, ..)| *h == host)
            .map(|&(.., id)| id)
            .collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "in order: {ids:?}");
    }
}

#[test]
fn a_run_that_repartitions_refuses_fq_codel_while_running() {
    // Its flow queues hold the worker's own packets and cannot move: every worker refuses.
    let clock = TestClock::new();
    let (mut ds, control) = workers(clock, Precision::Busy, Payload::Cache, |_| {});
    for d in ds.iter_mut() {
        d.count_traffic();
    }
    let mut set = serde_json::Map::new();
    set.insert("aqm".into(), "fq_codel".into());
    let pending = control.link_set("r", "h1", Direction::Both, &set).unwrap();
    for d in ds.iter_mut() {
        d.step().unwrap();
    }
    let refused = pending.wait(std::time::Duration::ZERO).unwrap_err();
    assert!(refused.to_string().contains("repartitions"), "{refused}");
}

/// With payloads shipped, hand-offs that reach a worker after it handed over the pipe that
/// takes them are passed on, bytes and all, to the worker that handles them now: worker 1's
/// clock is at the move's instant (as a machine's may be ahead of another's, within the
/// lookahead) and hands over the router's pipes while worker 0's is still before it, reading
/// h0's packets and posting their hand-offs to worker 1 under the old ownership. Every packet
/// reaches h1, in order, with the bytes h0 sent, and worker 1 counts what it passed on.
#[test]
fn hand_offs_passed_on_after_a_move_take_their_bytes_along() {
    let (topo, addrs) = pair(pipes(), |_| {});
    let first = Arc::new(Ownership::live(&topo, &[0, 1, 1, 1], 2, Payload::Ship).unwrap());
    let clocks = [TestClock::new(), TestClock::new()];
    let mut ds: Vec<_> = (0..2)
        .map(|k| {
            let engine = Engine::partitioned(topo.clone(), SEED, first.clone(), k);
            let io = MemIo::new(clocks[k].clone(), Framing::Plain);
            Driver::new(
                engine,
                io,
                clocks[k].clone(),
                &addrs,
                config(Precision::Busy),
            )
        })
        .collect();
    let control = Controller::connect(&mut ds, clocks[0].clone(), topo.clone()).unwrap();
    let sent: Vec<Vec<u8>> = (0..5u8).map(|i| ipv4([198, 18, 0, 2], 1000, i)).collect();
    for (i, packet) in sent.iter().enumerate() {
        ds[0]
            .io_mut()
            .send_at(0, at_us(100 * i as u64), packet.clone());
    }
    let next = Ownership::live(&topo, &[0, 0, 0, 0], 2, Payload::Ship).unwrap();
    let pending = control.repartition(Arc::new(next), at_us(1_000));
    clocks[1].set(at_us(1_000));
    ds[1].step().unwrap();
    for i in 0..5 {
        clocks[0].set(at_us(100 * i));
        ds[0].step().unwrap();
    }
    // From the move on, one time for both, until two turns in a row find nothing to do (a
    // hand-off passed on waits a turn in its mailbox).
    clocks[0].set(at_us(1_000));
    let mut quiet = 0;
    while quiet < 2 {
        for d in ds.iter_mut() {
            d.step().unwrap();
        }
        let next = ds
            .iter()
            .flat_map(|d| [d.engine().poll_at(), d.io().next_send()])
            .flatten()
            .min();
        quiet = if next.is_some() { 0 } else { quiet + 1 };
        if let Some(at) = next {
            clocks.iter().for_each(|c| c.set(at));
        }
    }
    pending.wait(std::time::Duration::ZERO).unwrap();
    let forwarded = ds[1].accuracy();
    assert_eq!(forwarded.forwarded_handoffs, 5, "{forwarded:?}");
    let written: Vec<&Vec<u8>> = ds
        .iter()
        .flat_map(|d| d.io().delivered.iter().map(|(_, _, p)| p))
        .collect();
    assert_eq!(written.len(), 5, "none lost");
    for (got, want) in written.iter().zip(&sent) {
        assert_eq!(got[20..], want[20..], "in order, the bytes h0 sent");
    }
    for d in &ds {
        assert_eq!(d.in_flight(), 0, "every payload buffer came back");
    }
}

/// A clock that moves on by a step each time it is read, as the system's does while a driver
/// works: the reads of one turn straddle a move's instant.
#[derive(Clone)]
struct Ticking(TestClock, Duration);

impl Clock for Ticking {
    fn now(&self) -> netloom_time::Instant {
        self.0.advance(self.1);
        self.0.now()
    }
}

impl TestTime for Ticking {
    fn pass(&self, d: Duration) {
        self.0.advance(d);
    }
}

/// A host that moves is read by its old worker only before the move's instant, whatever the
/// clock does within a turn: h1 sends to h0 every 3 µs around the instant, when h1 moves from
/// worker 1 to worker 0, with the engine's events falling due in between. A frame read once the
/// worker handed the host over would enter an engine that no longer owns the host (its debug
/// assertion says so; a TUN device's frame is its new owner's to read). With a clock of 154 ns
/// a read, worker 1 did so when it checked for the move before releasing what fell due, and
/// releasing handed over.
#[test]
fn a_host_that_moves_is_never_read_by_its_old_worker_after_the_instant() {
    let fast = |c: &mut PipeConfig| {
        c.rate = Rate::bps(1_000_000_000);
        c.delay = Duration::from_nanos(7_300);
    };
    for step_ns in [100, 154, 250, 400, 1_000] {
        let step = Duration::from_nanos(step_ns);
        let clock = Ticking(TestClock::new(), step);
        let (mut ds, control) = workers(clock.clone(), Precision::Busy, Payload::Cache, fast);
        for i in 0..400u64 {
            let packet = ipv4([198, 18, 0, 1], 100, i as u8);
            ds[1].io_mut().send_at(1, at_us(1_000 + 3 * i), packet);
        }
        let at = at_us(2_000);
        let topo = ds[0].engine().topology().clone();
        let next = Ownership::live(&topo, &[0, 0, 0, 0], 2, Payload::Cache).unwrap();
        let pending = control.repartition(Arc::new(next), at);
        clock.0.set(at_us(900));
        while clock.0.now() < at_us(3_000) {
            for d in ds.iter_mut() {
                d.step().unwrap();
            }
        }
        pending.wait(std::time::Duration::ZERO).unwrap();
        let read = &ds[1].io().read;
        assert!(read.len() > 100, "step {step_ns} ns: {} read", read.len());
        // A frame found due before the instant is read one clock read later.
        let late: Vec<_> = read.iter().filter(|&&(_, t)| t >= at + step).collect();
        assert!(
            late.is_empty(),
            "step {step_ns} ns: worker 1 read h1 after handing it over at {at:?}: {late:?}"
        );
    }
}
