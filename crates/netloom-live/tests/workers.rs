//! Drivers of a live run with two workers, against in-memory hosts: h0 and its pipe on worker 0,
//! the router's pipes and h1 on worker 1. Packets cross by hand-off, are written out by the
//! worker holding their payload (their source's with payloads cached, their destination's with
//! payloads shipped), leave at the time one driver would release them, and every payload buffer
//! comes back, whichever worker duplicated or dropped its copies.

mod common;

use common::{ipv4, pair, MemIo};
use netloom_engine::{Engine, Ownership, Payload};
use netloom_link::{LossModel, PipeConfig};
use netloom_live::mailbox::mailboxes;
use netloom_live::{Clock, Driver, Framing, Precision, Thresholds};
use netloom_time::{Duration as NsDuration, Rate};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const SEED: u64 = 5;

fn pipes() -> PipeConfig {
    PipeConfig::new(Rate::bps(10_000_000), NsDuration::from_millis(2))
}

/// The r-h1 link loses 30 % and duplicates every packet it keeps.
fn lossy(c: &mut PipeConfig) {
    c.duplicate = 1.0;
    c.loss = LossModel::Bernoulli { p: 0.3 };
}

/// One driver per worker, connected and sharing one clock.
fn workers(
    precision: Precision,
    payload: Payload,
    tweak: impl Fn(&mut PipeConfig),
) -> Vec<Driver<MemIo>> {
    let (topo, addrs) = pair(pipes(), tweak);
    // Pipes in link order, a→b then b→a: h0→r, r→h0, r→h1, h1→r.
    let ownership = Arc::new(Ownership::live(&topo, &[0, 1, 1, 1], 2, payload).unwrap());
    let (inboxes, posts) = mailboxes(2).unwrap();
    let clock = Clock::start();
    inboxes
        .into_iter()
        .enumerate()
        .map(|(k, inbox)| {
            let engine = Engine::partitioned(topo.clone(), SEED, ownership.clone(), k);
            let mut d = Driver::new(
                engine,
                MemIo::new(Framing::Plain),
                &addrs,
                2048,
                1024,
                precision,
                Thresholds::default(),
            );
            d.connect(inbox, posts.clone(), clock);
            d
        })
        .collect()
}

fn single(tweak: impl Fn(&mut PipeConfig)) -> Driver<MemIo> {
    let (topo, addrs) = pair(pipes(), tweak);
    Driver::new(
        Engine::new(topo, SEED),
        MemIo::new(Framing::Plain),
        &addrs,
        2048,
        1024,
        Precision::Busy,
        Thresholds::default(),
    )
}

/// Whether the drivers still have work: unread packets, payloads held or events pending.
fn busy(d: &Driver<MemIo>) -> bool {
    d.io().inbox.iter().any(|q| !q.is_empty())
        || d.in_flight() > 0
        || d.engine().poll_at().is_some()
}

/// Packets each way: no more than the first pipe's queue holds.
const EACH_WAY: usize = 8;

/// `EACH_WAY` packets each way, 1000 bytes, numbered by their first payload byte (h1's from
/// 100).
fn send_both_ways(h0: &mut MemIo, h1: &mut MemIo) {
    for i in 0..EACH_WAY as u8 {
        h0.inbox[0].push_back(ipv4([198, 18, 0, 2], 1000, i));
        h1.inbox[1].push_back(ipv4([198, 18, 0, 1], 1000, 100 + i));
    }
}

/// (destination host, packet number) of every packet written, sorted.
fn written(drivers: &[&Driver<MemIo>]) -> Vec<(u32, u8)> {
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
    let mut ds = workers(Precision::Busy, payload, |_| {});
    let sent = Instant::now();
    let (a, b) = ds.split_at_mut(1);
    send_both_ways(a[0].io_mut(), b[0].io_mut());
    let start = Instant::now();
    while ds.iter().any(busy) && start.elapsed() < Duration::from_secs(3) {
        for d in ds.iter_mut() {
            d.step().unwrap();
        }
    }
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
            // Two hops of 2 ms and 0.8 ms serialization, plus n serializations queued.
            let due = Duration::from_micros(5_600 + 800 * n as u64);
            let took = *at - sent;
            assert!(
                took >= due && took < due + Duration::from_millis(50),
                "{took:?}"
            );
        }
        assert_eq!(d.in_flight(), 0);
    }
    let (d0, d1) = (ds[0].accuracy(), ds[1].accuracy());
    // Cached, h0's packets cross twice (to r's worker, and home to be delivered) and h1's not
    // at all; shipped, each crosses once (to r's worker, or from it to h0's).
    let n = EACH_WAY as u64;
    assert_eq!((d0.handoffs, d1.handoffs), (n, n));
    // Handed over 2.8 ms ahead or more: late only if a thread lost its CPU that long.
    for a in [&d0, &d1] {
        assert!(a.handoff_lateness_ns_max < 2_000_000, "{a:?}");
    }
    assert_eq!(d0.released + d1.released, 2 * n);
    let d1 = ds.pop().unwrap();
    let mut merged = ds.pop().unwrap();
    merged.absorb(d1);
    let c = merged.host_counters();
    assert_eq!((c[0].packets_in, c[0].packets_out), (n, n));
    assert_eq!((c[1].packets_in, c[1].packets_out), (n, n));
    assert_eq!(merged.accuracy().handoffs, 2 * n);
}

/// Both workers on threads of their own, sleeping between deadlines: duplicates made and
/// copies lost on worker 1 settle payloads held by worker 0, and the packets that come out are
/// those one driver lets through with the same seed.
#[test]
fn payload_holds_and_releases_cross_threads_and_match_one_driver() {
    let mut one = single(lossy);
    let mut h1 = MemIo::new(Framing::Plain);
    send_both_ways(one.io_mut(), &mut h1);
    one.io_mut().inbox[1] = std::mem::take(&mut h1.inbox[1]);
    let start = Instant::now();
    while busy(&one) && start.elapsed() < Duration::from_secs(3) {
        one.step().unwrap();
    }
    let expected = written(&[&one]);
    // Each packet crosses the lossy link once, and each that survives arrives twice.
    assert!(expected.len() > EACH_WAY && expected.len() < 4 * EACH_WAY);

    for payload in [Payload::Cache, Payload::Ship] {
        assert_eq!(on_two_threads(payload), expected, "{payload:?}");
    }
}

/// Sends both ways through two workers on two threads and returns what was written.
fn on_two_threads(payload: Payload) -> Vec<(u32, u8)> {
    let spin = Duration::from_micros(100);
    let mut ds = workers(Precision::Hybrid { spin }, payload, lossy);
    let (a, b) = ds.split_at_mut(1);
    send_both_ways(a[0].io_mut(), b[0].io_mut());
    let quiet = AtomicBool::new(false);
    let idle: Vec<AtomicBool> = (0..2).map(|_| AtomicBool::new(false)).collect();
    std::thread::scope(|s| {
        for (k, d) in ds.iter_mut().enumerate() {
            let (quiet, idle) = (&quiet, &idle);
            s.spawn(move || {
                let start = Instant::now();
                while !quiet.load(Ordering::SeqCst) && start.elapsed() < Duration::from_secs(5) {
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
