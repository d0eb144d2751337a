//! The real-time loop against in-memory hosts: packets are routed by address, released at their
//! scheduled time (measured against the wall clock, with generous bounds: this runs on shared
//! CI machines), bad packets are counted, and payloads survive duplication and drops.

use netloom_engine::Engine;
use netloom_link::{LossModel, PipeConfig};
use netloom_live::{Driver, PacketIo, Precision, Thresholds};
use netloom_time::{Duration as NsDuration, Rate};
use netloom_topo::{NodeKind, RoutingMetric, Topology};
use std::collections::VecDeque;
use std::io;
use std::net::IpAddr;
use std::time::{Duration, Instant};

/// Hosts as queues: what they send waits in `inbox`, what they receive lands in `delivered`.
#[derive(Default)]
struct MemIo {
    inbox: Vec<VecDeque<Vec<u8>>>,
    delivered: Vec<(u32, Instant, Vec<u8>)>,
}

impl PacketIo for MemIo {
    fn wait(&mut self, timeout: Option<Duration>, ready: &mut Vec<u32>) -> io::Result<()> {
        ready.extend((0..self.inbox.len() as u32).filter(|&h| !self.inbox[h as usize].is_empty()));
        if ready.is_empty() {
            // Sleep as a poller would, a little, so the sleeping modes are exercised too.
            std::thread::sleep(
                timeout
                    .unwrap_or(Duration::ZERO)
                    .min(Duration::from_micros(200)),
            );
        }
        Ok(())
    }

    fn recv(&mut self, host: u32, buf: &mut [u8]) -> io::Result<usize> {
        let p = self.inbox[host as usize]
            .pop_front()
            .ok_or_else(|| io::Error::from(io::ErrorKind::WouldBlock))?;
        buf[..p.len()].copy_from_slice(&p);
        Ok(p.len())
    }

    fn send(&mut self, host: u32, packet: &[u8]) -> io::Result<()> {
        self.delivered.push((host, Instant::now(), packet.to_vec()));
        Ok(())
    }
}

fn ipv4(dst: [u8; 4], len: usize, id: u8) -> Vec<u8> {
    let mut p = vec![0u8; len];
    p[0] = 0x45;
    p[2..4].copy_from_slice(&(len as u16).to_be_bytes());
    p[16..20].copy_from_slice(&dst);
    p[20] = id;
    p
}

/// h0 - r - h1, 10 Mbit/s and 2 ms per hop; `tweak` adjusts the r-h1 pipes.
fn driver(precision: Precision, tweak: impl Fn(&mut PipeConfig)) -> Driver<MemIo> {
    let mut t = Topology::new("pair", RoutingMetric::Delay);
    let h0 = t.add_node("h0", NodeKind::Host, None);
    let r = t.add_node("r", NodeKind::Router, None);
    let h1 = t.add_node("h1", NodeKind::Host, None);
    let c = PipeConfig::new(Rate::bps(10_000_000), NsDuration::from_millis(2));
    let mut last = c;
    tweak(&mut last);
    t.add_link(h0, r, None, c, Some(c));
    t.add_link(r, h1, None, last, Some(last));
    let addrs: Vec<Vec<IpAddr>> = vec![
        vec!["198.18.0.1".parse().unwrap()],
        vec!["198.18.0.2".parse().unwrap()],
    ];
    let io = MemIo {
        inbox: vec![VecDeque::new(), VecDeque::new()],
        delivered: Vec::new(),
    };
    Driver::new(
        Engine::new(t, 5),
        io,
        &addrs,
        2048,
        1024,
        precision,
        Thresholds::default(),
    )
}

/// Steps until every host's inbox is read and nothing is left in flight.
fn run_until_quiet(d: &mut Driver<MemIo>, limit: Duration) {
    let start = Instant::now();
    loop {
        d.step().unwrap();
        let unread = d.io().inbox.iter().any(|q| !q.is_empty());
        let busy = d.in_flight() > 0 || d.engine().poll_at().is_some();
        if !(unread || busy) || start.elapsed() > limit {
            break;
        }
    }
}

#[test]
fn packets_are_released_at_their_scheduled_time_in_every_mode() {
    for precision in [
        Precision::Busy,
        Precision::Hybrid {
            spin: Duration::from_micros(100),
        },
        Precision::Sleep,
    ] {
        let mut d = driver(precision, |_| {});
        let sent = Instant::now();
        for i in 0..5 {
            d.io_mut().inbox[0].push_back(ipv4([198, 18, 0, 2], 1000, i));
        }
        run_until_quiet(&mut d, Duration::from_secs(2));
        let got = &d.io().delivered;
        assert_eq!(got.len(), 5, "{precision:?}");
        for (k, (host, at, packet)) in got.iter().enumerate() {
            assert_eq!(*host, 1);
            assert_eq!(packet[20], k as u8, "FIFO order");
            // Two hops of 2 ms and 0.8 ms serialization each, plus k more serializations of
            // 0.8 ms queued at the first hop.
            let due = Duration::from_micros(4_000 + 1_600 + 800 * k as u64);
            let took = *at - sent;
            assert!(
                took >= due,
                "{precision:?}: packet {k} after {took:?}, due at {due:?}"
            );
            assert!(
                took < due + Duration::from_millis(50),
                "{precision:?}: packet {k} after {took:?}"
            );
        }
        let acc = d.accuracy();
        assert_eq!(acc.released, 5);
        assert_eq!(acc.physical_drops, 0);
    }
}

#[test]
fn bad_and_unroutable_packets_are_counted_and_dropped() {
    let mut d = driver(Precision::Busy, |_| {});
    d.io_mut().inbox[0].push_back(vec![0x99; 30]);
    d.io_mut().inbox[0].push_back(ipv4([198, 18, 0, 2], 100, 1)[..50].to_vec());
    d.io_mut().inbox[0].push_back(ipv4([192, 0, 2, 7], 100, 2));
    d.io_mut().inbox[0].push_back(ipv4([198, 18, 0, 2], 100, 3));
    run_until_quiet(&mut d, Duration::from_secs(2));
    let c = d.host_counters()[0];
    assert_eq!(
        (c.packets_in, c.malformed, c.unknown_destination),
        (4, 2, 1)
    );
    assert_eq!(d.io().delivered.len(), 1);
    assert_eq!(d.in_flight(), 0);
}

#[test]
fn payloads_survive_duplication_and_loss_and_are_all_returned() {
    let mut d = driver(Precision::Busy, |c| {
        c.duplicate = 1.0;
        c.loss = LossModel::Bernoulli { p: 0.3 };
    });
    for i in 0..40 {
        d.io_mut().inbox[0].push_back(ipv4([198, 18, 0, 2], 200, i));
    }
    run_until_quiet(&mut d, Duration::from_secs(3));
    let got = &d.io().delivered;
    // Every packet is offered to the lossy pipe once; survivors arrive twice with their payload.
    assert!(
        got.len() > 20 && got.len() % 2 == 0,
        "{} delivered",
        got.len()
    );
    for (_, _, p) in got {
        assert_eq!(p.len(), 200);
    }
    assert_eq!(d.in_flight(), 0, "every buffer came back");
}
