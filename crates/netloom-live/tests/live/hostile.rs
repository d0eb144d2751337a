//! Hosts and topologies that misbehave, against the real-time driver (in memory, with a test
//! clock) and against a live `Experiment` (root, namespaces, TUN; skipped, saying why,
//! elsewhere): a schedule finer than the driver's turns does not keep a run from answering
//! `stop` and signals, and is coarsened and counted; a super-packet that would cost the engine
//! tens of thousands of packets is refused and counted; a host flooding the driver with
//! super-packets waits for its ration, and a bystander pair's ping keeps its round trip
//! (docs/limits.md, "Hosts that misbehave").

use crate::common::{
    ipv4, live_registry, pair, run_until_quiet, tcp_super_frame, unavailable, MemIo,
};
use netloom_engine::Engine;
use netloom_link::{PipeConfig, Schedule};
use netloom_live::{
    Driver, DriverConfig, Ending, Experiment, Framing, Options, Precision, TestClock, Thresholds,
};
use netloom_time::{Duration, Instant, Rate};
use netloom_topo::{LinkPlan, Topology};
use std::sync::Arc;
use std::time::Duration as StdDuration;

/// Gives link 0 of `t` the finest schedule there may be: its delay changes every millisecond
/// (`netloom_link::MIN_STEP`).
fn change_every_millisecond(t: &mut Topology) {
    let link = &t.links[0];
    let slow = PipeConfig {
        delay: Duration::from_millis(3),
        ..t.pipes[link.ab as usize].config
    };
    let fast = t.pipes[link.ab as usize].config;
    let schedule = Schedule::new(
        vec![(Duration::ZERO, 0), (Duration::from_millis(1), 1)],
        Some(Duration::from_millis(2)),
    )
    .expect("a valid schedule");
    t.plans.push(LinkPlan {
        link: 0,
        plan: Arc::new(netloom_link::Variation::Schedule(schedule)),
        states: vec![(fast, fast), (slow, slow)],
    });
}

/// Runs `f` on a thread of its own and gives its result, or `None` if it has not returned
/// within `limit` (the thread is then left behind).
fn within<T: Send + 'static>(
    limit: StdDuration,
    f: impl FnOnce() -> T + Send + 'static,
) -> Option<T> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(limit).ok()
}

/// A driver over h0 - r - h1 (10 Mbit/s, 2 ms per hop) in memory, with `framing`.
fn memory_driver(
    topo: Topology,
    addrs: &[Vec<std::net::IpAddr>],
    framing: Framing,
    allow_spoofing: bool,
) -> (Driver<MemIo<TestClock>, TestClock>, TestClock) {
    let clock = TestClock::new();
    let config = DriverConfig {
        max_packet: 2048,
        max_in_flight: 1024,
        precision: Precision::Busy,
        thresholds: Thresholds::default(),
        allow_spoofing,
    };
    let io = MemIo::new(clock.clone(), framing);
    let d = Driver::new(Engine::new(topo, 5), io, clock.clone(), addrs, config);
    (d, clock)
}

fn ten_megabits() -> PipeConfig {
    PipeConfig::new(Rate::bps(10_000_000), Duration::from_millis(2))
}

#[test]
fn a_super_packet_of_one_byte_segments_is_refused_and_counted() {
    let (topo, addrs) = pair(ten_megabits(), |_| {});
    let (mut d, clock) = memory_driver(topo, &addrs, Framing::Vnet { gso: true }, false);
    // 60,008 bytes in segments of 1 byte: 60,008 packets for the engine, before.
    d.io_mut().send(0, tcp_super_frame(1, 1, 60_008));
    // A TCP super-packet as a kernel sends it still passes.
    d.io_mut().send(0, tcp_super_frame(1, 1448, 3 * 1448));
    d.step().unwrap();
    let c = d.host_counters()[0];
    assert_eq!((c.refused_gso, c.malformed), (1, 0), "{c:?}");
    assert_eq!(c.packets_in, 1 + 3, "{c:?}");
    run_until_quiet(std::slice::from_mut(&mut d), &clock);
    assert_eq!(d.host_counters()[1].packets_out, 3);
    assert_eq!(d.accuracy().physical_drops, 0);
}

#[test]
fn a_host_flooding_super_packets_waits_for_its_ration() {
    let (topo, addrs) = pair(ten_megabits(), |_| {});
    let (mut d, clock) = memory_driver(topo, &addrs, Framing::Vnet { gso: true }, false);
    // h0 floods frames of the most segments allowed (128 of 8 bytes); h1 sends one packet.
    for k in 0..10 {
        d.io_mut().send(0, tcp_super_frame(k * 1024, 8, 1024));
    }
    d.io_mut().send(1, ipv4([198, 18, 0, 1], 100, 0));
    d.step().unwrap();
    let c = d.host_counters();
    assert_eq!(
        c[0].packets_in,
        4 * 128,
        "h0 took its burst of 512 segments"
    );
    assert_eq!(c[1].packets_in, 1, "h1 had its turn too");
    d.step().unwrap();
    assert_eq!(
        d.host_counters()[0].packets_in,
        4 * 128,
        "h0 waits for its bucket to fill"
    );
    // 500 us fill its bucket again (512 segments, at up to 16 a microsecond).
    clock.advance(Duration::from_micros(500));
    d.step().unwrap();
    assert_eq!(d.host_counters()[0].packets_in, 8 * 128);
}

#[test]
fn a_schedule_finer_than_the_drivers_turns_is_coarsened_and_counted() {
    let (mut topo, addrs) = pair(ten_megabits(), |_| {});
    change_every_millisecond(&mut topo);
    let (mut d, clock) = memory_driver(topo, &addrs, Framing::Plain, false);
    // A thousand hours into the run (a driver stalled that long, or a schedule far finer than its
    // turns: the same backlog), 3.6e9 changes are due. Every turn must come back promptly;
    // applied one by one they took minutes (a 1 ns schedule spun a live engine for good).
    clock.set(Instant(3_600_000_000_000_000));
    let d = within(StdDuration::from_secs(5), move || {
        for _ in 0..10 {
            d.step().unwrap();
        }
        d
    })
    .expect("a turn never came back: the driver applied every change one by one");
    let accuracy = d.accuracy();
    assert!(accuracy.skipped_changes >= 3_599_999_990, "{accuracy:?}");
    assert!(!accuracy.accurate, "skipped changes make a run inaccurate");
    assert!(
        d.engine().poll_at().is_some_and(|at| at > d.now()),
        "caught up"
    );
}

/// Starts experiment `name` (made unique to this process): the hosts `hosts` around one router,
/// each on a 1 Gbit/s link of 1 ms of its own.
fn start_star(name: &str, hosts: &[&str], allow_spoofing: bool) -> Experiment {
    let mut t = Topology::new("star", netloom_topo::RoutingMetric::Delay);
    let r = t.add_node("r", netloom_topo::NodeKind::Router, None);
    let c = PipeConfig::new(Rate::bps(1_000_000_000), Duration::from_millis(1));
    for host in hosts {
        let h = t.add_node(*host, netloom_topo::NodeKind::Host, None);
        t.add_link(h, r, None, c, Some(c));
    }
    let options = Options {
        allow_spoofing,
        ..Options::new(format!("{name}{}", std::process::id() % 10_000))
    };
    let plan = netloom_live::Plan::new(t, options, 2).unwrap();
    Experiment::start(plan).unwrap()
}

/// Sends TCP super-packets from inside a host, as its kernel's TCP never would: through an
/// AF_PACKET socket with PACKET_VNET_HDR on `nl0`, so each reaches netloom as a GSO frame with the
/// segment size given. Arguments: source and destination IPv4 addresses, segment size, payload
/// bytes, frames per second, seconds.
const INJECT_GSO: &str = r#"
import socket, struct, sys, time
src, dst = sys.argv[1], sys.argv[2]
mss, payload, rate, seconds = int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]), float(sys.argv[6])
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
s.setsockopt(263, 15, 1)  # SOL_PACKET, PACKET_VNET_HDR
s.bind(("nl0", 0x0800))
ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 40 + payload, 1, 0x4000, 64, 6, 0,
                 socket.inet_aton(src), socket.inet_aton(dst))
tcp = struct.pack("!HHIIBBHHH", 40000, 5201, 1, 0, 5 << 4, 0x18, 65535, 0, 0)
vnet = struct.pack("=BBHHHH", 1, 1, 40, mss, 20, 16)  # NEEDS_CSUM, TCPV4
frame = vnet + ip + tcp + bytes(payload)
start = time.time()
n = 0
while time.time() < start + seconds:
    try:
        s.send(frame)
    except OSError:
        pass
    n += 1
    pause = start + n / rate - time.time()
    if pause > 0:
        time.sleep(pause)
print(n)
"#;

/// Loss (%) and median round trip (ms) of `ping -c 100 -i 0.01` from `from` to `to`: the
/// median, as the VM's other load moves the mean by milliseconds now and then.
fn ping(experiment: &Experiment, from: &str, to: &str) -> (f64, f64) {
    let argv = ["ping", "-c", "100", "-i", "0.01", "-W", "1", to].map(String::from);
    let out = experiment.command(from, &argv).unwrap().output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let loss = text
        .split(", ")
        .find_map(|f| f.strip_suffix("% packet loss"))
        .and_then(|l| l.parse().ok())
        .unwrap_or_else(|| panic!("no loss in: {text}"));
    let mut rtts: Vec<f64> = text
        .split_whitespace()
        .filter_map(|w| w.strip_prefix("time=")?.parse().ok())
        .collect();
    rtts.sort_by(f64::total_cmp);
    (
        loss,
        rtts.get(rtts.len() / 2).copied().unwrap_or(f64::INFINITY),
    )
}

#[test]
fn a_host_flooding_super_packets_does_not_starve_a_bystander_pair() {
    if let Some(why) = unavailable() {
        eprintln!("SKIPPED: needs root and TUN: {why}");
        return;
    }
    let have = |tool: &str| {
        std::process::Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if !have("python3") || !have("ping") {
        eprintln!("SKIPPED: needs python3 and ping");
        return;
    }
    let _registry = live_registry("fair");
    // A star: the flooder f and its sink s, the bystanders a and b, each on a link of its own,
    // so whatever the flood does to a and b is the driver's doing, not the model's.
    let experiment = start_star("hsfair", &["f", "s", "a", "b"], false);
    let hosts = experiment.info().hosts.clone();
    let addr = |n: &str| hosts.iter().find(|h| h.name == n).unwrap().ipv4.to_string();
    let (f, s) = (addr("f"), addr("s"));

    let baseline = ping(&experiment, "a", "b");
    let mut floods = Vec::new();
    // Segments of 1 byte (60,008 per frame), then 2.5 million 8-byte segments a second in
    // frames of 128 and of the most a frame may hold (1,024).
    let floods_of = [
        ("1", "60008", "200"),
        ("8", "1024", "20000"),
        ("8", "8192", "2500"),
    ];
    for (mss, payload, rate) in floods_of {
        let argv = [
            "python3", "-c", INJECT_GSO, &f, &s, mss, payload, rate, "2.5",
        ]
        .map(String::from);
        let mut flood = experiment.command("f", &argv).unwrap();
        let flood = flood.stdout(std::process::Stdio::piped()).spawn().unwrap();
        std::thread::sleep(StdDuration::from_millis(300));
        let during = ping(&experiment, "a", "b");
        let sent = flood.wait_with_output().unwrap();
        floods.push((
            mss,
            during,
            String::from_utf8_lossy(&sent.stdout).trim().to_string(),
        ));
    }
    let report = experiment.stop(&Ending::Done).unwrap();
    let f_counters = report
        .hosts
        .iter()
        .find(|h| h.host.name == "f")
        .unwrap()
        .counters;
    eprintln!("baseline {baseline:?}, floods {floods:?}, f {f_counters:?}");
    // The one-byte segments reached netloom through f's TUN device as GSO frames, and were
    // refused there.
    assert!(f_counters.refused_gso > 0, "{f_counters:?}");
    // What a flood may still add to the bystander's round trip, ms. The ration halves the
    // flooder's rate only after a millisecond in which a release was more than 500 us late
    // (`ration::OVERLOADED`, one `PERIOD` of 1 ms), so while f floods the run's releases run up
    // to about that late (here, debug build, Intel Xeon: 18 % of 6 million releases over 100 us,
    // p99 0.48-0.67 ms), and a ping's round trip is four releases (a-r, r-b and back): 4 x 0.5
    // ms and the millisecond of reaction. Measured: +0.3 to +2.4 ms for the 128-segment frames,
    // so the 2 ms this was failed 1 run in 6 (2.24, 2.31, 2.42), with or without the driver's
    // nice -20. Without the ration the bystander's median was 8 to 18 ms above its baseline
    // (docs/limits.md, "Fairness between hosts").
    let allowed = 4.0 * 0.5 + 1.0;
    for (mss, (loss, avg), sent) in floods {
        assert!(
            loss <= baseline.0 + 5.0,
            "segment size {mss} ({sent} frames): bystander loss {loss} %, {} % before the flood",
            baseline.0
        );
        assert!(
            avg <= baseline.1 + allowed,
            "segment size {mss} ({sent} frames): bystander RTT median {avg} ms, {} ms before the flood",
            baseline.1
        );
    }
}

#[test]
fn a_packet_with_another_source_address_is_counted_and_dropped_unless_allowed() {
    let (topo, addrs) = pair(ten_megabits(), |_| {});
    for allow in [false, true] {
        let (mut d, clock) = memory_driver(topo.clone(), &addrs, Framing::Plain, allow);
        // h0 sends to h1 as h1 itself, then as an address no host has.
        for (k, src) in [[198, 18, 0, 2], [10, 9, 9, 9]].into_iter().enumerate() {
            let mut p = ipv4([198, 18, 0, 2], 100, k as u8);
            p[12..16].copy_from_slice(&src);
            d.io_mut().send(0, p);
        }
        d.io_mut().send(0, ipv4([198, 18, 0, 2], 100, 2));
        run_until_quiet(std::slice::from_mut(&mut d), &clock);
        let c = d.host_counters();
        assert_eq!((c[0].packets_in, c[0].spoofed), (3, 2), "allow {allow}");
        let delivered: Vec<u8> = d.io().delivered.iter().map(|(_, _, p)| p[20]).collect();
        let expected = if allow { vec![0, 1, 2] } else { vec![2] };
        assert_eq!(delivered, expected, "allow {allow}");
    }
}

#[test]
fn a_live_host_spoofing_its_source_is_counted_and_dropped_unless_allowed() {
    if let Some(why) = unavailable() {
        eprintln!("SKIPPED: needs root and TUN: {why}");
        return;
    }
    let _registry = live_registry("spoof");
    for allow in [false, true] {
        let experiment = start_star("hsspoof", &["a", "b", "c"], allow);
        let c_addr = experiment.info().hosts[2].ipv4.to_string();
        // a pings b as c, then as an address no host has (198.18.255.1 lies in the hosts'
        // subnet, so a's kernel sends it out of nl0).
        let script = format!(
            "ip addr add {c_addr}/32 dev nl0 && ip addr add 198.18.255.1/32 dev nl0 && \
             ping -4 -c 3 -i 0.2 -W 1 -I {c_addr} b; \
             ping -4 -c 3 -i 0.2 -W 1 -I 198.18.255.1 b; true"
        );
        let argv = ["sh", "-c", &script].map(String::from);
        let out = experiment.command("a", &argv).unwrap().output().unwrap();
        let said = [out.stdout, out.stderr].concat();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&said));
        let report = experiment.stop(&Ending::Done).unwrap();
        let host = |n: &str| {
            report
                .hosts
                .iter()
                .find(|h| h.host.name == n)
                .unwrap()
                .counters
        };
        let (a, b, c) = (host("a"), host("b"), host("c"));
        assert_eq!(a.spoofed, 6, "allow {allow}: {a:?}");
        if allow {
            assert!(b.packets_out >= 6, "b got the echo requests: {b:?}");
            assert!(c.packets_out >= 3, "c got b's replies to it: {c:?}");
            assert!(b.unknown_destination >= 3, "the replies to nobody: {b:?}");
        } else {
            assert_eq!(b.packets_out, 0, "b got nothing: {b:?}");
            assert_eq!(c.packets_out, 0, "{c:?}");
        }
    }
}
