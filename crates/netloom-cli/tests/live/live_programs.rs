//! Live emulation measured with real programs (root, namespaces, TUN; ping, iperf3): TCP fills a
//! 10 Mbit/s link, random loss matches the configured rate within a binomial bound, delays add up
//! along a chain of routers, two TCP flows share a bottleneck fairly, and a 100 us delay is
//! emulated to within 30 us of round trip; CoDel with ECN marks instead of dropping and TCP
//! retransmits nothing; FQ-CoDel keeps pings beside a TCP transfer near the idle round trip. The
//! tolerances, and why they are what they are, are in docs/live.md ("Tests and their
//! tolerances"). Each test skips, saying why, where it cannot run.

use crate::live_common::{
    self, iperf3_client, least, mean, median, ping_rtts, received_mbps, trimmed_mean, Lab,
};
use serde_json::Value;

/// The accuracy section of the final report, for failure messages.
fn accuracy(report: &Value) -> String {
    report["accuracy"].to_string()
}

#[test]
fn iperf3_tcp_fills_a_10mbit_link() {
    require_live!("iperf3", "ss");
    let mut lab = Lab::new(
        "tcp",
        r#"hosts = ["h1", "h2"]
[[link]]
a = "h1"
b = "h2"
bw = "10Mbit"
delay = "5ms"
"#,
    );
    // The default precision, which sleeps at real-time priority between packets: busy precision
    // spins at normal priority, and with six CPU hogs beside the test got 1.9 Mbit/s (hybrid
    // since the learned linger: 9.49 with four hogs).
    lab.start(&[]);
    lab.spawn("h2", &["iperf3", "-s", "-1"]);
    lab.wait_listening("h2", 5201);
    // BBR, named (hosts start with cubic, which on this one-BDP queue reaches about 8.4 Mbit/s):
    // what this checks is that the emulated link carries TCP at its rate.
    let report = iperf3_client(&lab, "h1", &["-c", "h2", "-t", "5", "-C", "bbr"]);
    let mbps = received_mbps(&report);
    let run = lab.stop();
    eprintln!("measured: TCP over 10 Mbit/s: {mbps:.3} Mbit/s received");
    // docs/live.md: 9.0 to 10.0 Mbit/s. TCP payload is at most 1448 of every 1500 bytes on the
    // wire (IPv4, TCP with timestamps), so the link's goodput ceiling is 9.65 Mbit/s; slow start
    // costs a little of the first second.
    assert!(
        (9.0..=10.0).contains(&mbps),
        "received {mbps:.3} Mbit/s; accuracy {}",
        accuracy(&run)
    );
    assert_eq!(run["accuracy"]["physical_drops"], 0);
}

#[test]
fn udp_loss_over_a_10_percent_link_is_within_the_binomial_bound() {
    require_live!("iperf3", "ss");
    // Loss only from h1 to h2, so iperf3's control connection and the server's report come
    // back unharmed; the data all go h1 -> h2.
    let mut lab = Lab::new(
        "udp",
        r#"hosts = ["h1", "h2"]
[[link]]
a = "h1"
b = "h2"
bw = "100Mbit"
delay = "1ms"
a_to_b = { loss = "10%" }
"#,
    );
    // The default precision, as below: busy spins at normal priority, and a busy worker
    // starved beside other work failed this test once in four with four CPU hogs.
    lab.start(&[]);
    lab.spawn("h2", &["iperf3", "-s", "-1"]);
    lab.wait_listening("h2", 5201);
    let report = iperf3_client(
        &lab,
        "h1",
        &["-c", "h2", "-u", "-b", "2M", "-l", "1000", "-t", "3"],
    );
    let run = lab.stop();
    // iperf3 counts a datagram lost when its sequence number never arrives (the server's
    // figures, which the client's JSON carries in end.sum).
    let sum = &report["end"]["sum"];
    let (lost, total) = (
        sum["lost_packets"].as_f64().expect("end.sum.lost_packets"),
        sum["packets"].as_f64().expect("end.sum.packets"),
    );
    assert!(total >= 600.0, "only {total} datagrams: {sum}");
    let fraction = lost / total;
    eprintln!("measured: UDP over 10 % loss: lost {lost} of {total} = {fraction:.4}");
    // docs/live.md: within the two-sided 99.9 % normal bound of Binomial(n, 0.1):
    // 0.1 ± 3.29 × sqrt(0.1 × 0.9 / n) (n = 750: 0.064 to 0.136).
    let bound = 3.29 * (0.1f64 * 0.9 / total).sqrt();
    assert!(
        (fraction - 0.1).abs() <= bound,
        "lost {lost} of {total} = {fraction:.4}, outside 0.1 ± {bound:.4}; accuracy {}",
        accuracy(&run)
    );
    assert_eq!(run["accuracy"]["physical_drops"], 0);
}

#[test]
fn rtt_along_a_chain_of_five_routers_is_twice_the_sum_of_the_hop_delays() {
    require_live!("ping");
    // h1 - r1 - r2 - r3 - r4 - r5 - h2, first with no delay (the round trip of the stacks, the
    // TUN devices and the engine through six pipes each way), then with hop delays 0.5, 1, 1.5,
    // 2, 2.5 and 3 ms set by `link set`: one way 10.5 ms more, the round trip 21 ms more.
    let mut topo = String::from(
        "hosts = [\"h1\", \"h2\"]\nrouters = [\"r1\", \"r2\", \"r3\", \"r4\", \"r5\"]\n\
         [defaults]\nbw = \"1Gbit\"\ndelay = \"0us\"\n",
    );
    let nodes = ["h1", "r1", "r2", "r3", "r4", "r5", "h2"];
    for pair in nodes.windows(2) {
        topo.push_str(&format!(
            "[[link]]\na = \"{}\"\nb = \"{}\"\n",
            pair[0], pair[1]
        ));
    }
    let mut lab = Lab::new("chain", &topo);
    // Hybrid precision (the default): it waits at real-time priority, where busy stays at
    // normal priority and, with builds beside the tests, lost whole time slices of its CPU
    // (+22.3 to +23.5 ms measured here, the run's own report INACCURATE).
    lab.start(&[]);
    let base = lab.least_rtt("h1", "h2", 20);
    for (i, pair) in nodes.windows(2).enumerate() {
        let delay = format!("delay={}us", 500 * (i + 1));
        lab.control(&["link", "set", pair[0], pair[1], &delay]);
    }
    let m = lab.least_rtt("h1", "h2", 20);
    let run = lab.stop();
    let added = m - base;
    eprintln!("measured: chain least RTT {base:.3} ms at 0, {m:.3} ms with delays: +{added:.3}");
    // docs/live.md: the least RTTs differ by 2 × 10.5 ms ± 0.1 ms.
    assert!(
        (added - 21.0).abs() <= 0.1,
        "base {base} ms, delayed {m} ms; accuracy {}",
        accuracy(&run)
    );
}

#[test]
fn two_tcp_flows_share_a_dumbbell_bottleneck_fairly() {
    require_live!("iperf3", "ss");
    // Access links get a long queue, as a host's own qdisc would be: a TUN device has no rate,
    // so a sender's burst reaches the emulated access link at once, and with the default
    // (BDP, 16-packet) queue each flow would also lose packets there, at random, before the
    // bottleneck. The bottleneck keeps its BDP queue (25 KB), as in examples/dumbbell.toml.
    let mut lab = Lab::new(
        "dumb",
        r#"hosts = ["h1", "h2", "h3", "h4"]
routers = ["rl", "rr"]
[defaults]
bw = "1Gbit"
delay = "100us"
queue = 1000
[[link]]
a = "h1"
b = "rl"
[[link]]
a = "h2"
b = "rl"
[[link]]
a = "rl"
b = "rr"
bw = "10Mbit"
delay = "10ms"
queue = "25KB"
[[link]]
a = "rr"
b = "h3"
[[link]]
a = "rr"
b = "h4"
"#,
    );
    // The default precision (hybrid: it sleeps at real-time priority). Busy spins at normal
    // priority and lost its CPU to the machine's other work: at load 12 to 16 it gave the two
    // flows 7.1 Mbit/s in all without hogs and 3.4 with four (default: 9.2 and 8.9 to 9.2).
    lab.start(&[]);
    lab.spawn("h3", &["iperf3", "-s", "-1"]);
    lab.spawn("h4", &["iperf3", "-s", "-1"]);
    lab.wait_listening("h3", 5201);
    lab.wait_listening("h4", 5201);
    // Both clients at once, for 10 s each, with Reno: its AIMD converges to equal shares in a
    // few of its cycles, where CUBIC's convergence on this shallow bottleneck varies from run
    // to run (shares 0.35-0.56 over 14 runs, one outside the band, against 0.46-0.56 over 16
    // with Reno: docs/live.md). The test is about the emulated link sharing fairly.
    let lab_ref = &lab;
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| iperf3_client(lab_ref, "h1", &["-c", "h3", "-t", "10", "-C", "reno"]));
        let b = s.spawn(|| iperf3_client(lab_ref, "h2", &["-c", "h4", "-t", "10", "-C", "reno"]));
        (a.join().unwrap(), b.join().unwrap())
    });
    let run = lab.stop();
    let (a, b) = (received_mbps(&a), received_mbps(&b));
    let total = a + b;
    let share = a / total;
    eprintln!("measured: dumbbell flows {a:.3} and {b:.3} Mbit/s, share {share:.3}");
    // docs/live.md: each flow between 35 % and 65 % of the total, and the total at least
    // 8.5 Mbit/s (the goodput ceiling is 9.65 Mbit/s; the two clients start a few ms apart).
    let drops: Vec<String> = run["pipes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["drops"].as_u64().unwrap_or(0) > 0)
        .map(|p| format!("{} {}: {}", p["link"], p["direction"], p["drops"]))
        .collect();
    assert!(
        total >= 8.5 && (0.35..=0.65).contains(&share),
        "flows got {a:.3} and {b:.3} Mbit/s (share {share:.3}, total {total:.3}); \
         drops {drops:?}; accuracy {}",
        accuracy(&run)
    );
}

/// h1 – r – h2 and r – h3, 1 Gbit/s, no delay but 100 µs on r – h3: the paths to h2 and h3
/// differ by that link's delay alone.
const FORK_100US: &str = r#"hosts = ["h1", "h2", "h3"]
routers = ["r"]
[defaults]
bw = "1Gbit"
delay = "0us"
[[link]]
a = "h1"
b = "r"
[[link]]
a = "r"
b = "h2"
[[link]]
a = "r"
b = "h3"
delay = "100us"
"#;

#[test]
fn a_100us_delay_adds_200us_to_the_round_trip() {
    require_live!("ping");
    // h1 pings h2 (no delay: the round trip of the stacks, the TUN devices and the engine) and
    // h3 (100 us more each way) at once, five rounds of 40 echoes each, and each round's figure is
    // the difference of its two least RTTs. The zero-delay round trip moves between regimes on a
    // VM (about 50 and 125 us here, from one second to the next, and wider beside builds); when
    // the two paths were measured one after the other, a round whose base fell in one regime and
    // whose delayed echoes fell in the other was off by their gap, and a fresh-clone CI run's
    // median of such rounds came to 123 us. Measured at once, both paths see the same regime.
    // Hybrid precision and the least of each set of echoes, for the reasons the chain test gives
    // (busy lost time slices to builds beside the tests: baselines moved by milliseconds).
    let mut lab = Lab::new("us", FORK_100US);
    lab.start(&[]);
    lab.exec("h1", &["ping", "-c", "3", "-i", "0.01", "h3"]);
    let mut added = Vec::new();
    for _ in 0..5 {
        let ping = |to: &str| {
            lab.exec_cmd("h1", &["ping", "-c", "40", "-i", "0.01", to])
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        };
        let (base, delayed) = (ping("h2"), ping("h3"));
        let rtts = |child: std::process::Child| {
            let rtts = ping_rtts(&child.wait_with_output().unwrap());
            assert_eq!(rtts.len(), 40, "every echo answered: {rtts:?}");
            least(rtts)
        };
        let (base, delayed) = (rtts(base), rtts(delayed));
        added.push((delayed - base) * 1000.0);
    }
    let run = lab.stop();
    let m = median(added.clone());
    eprintln!("measured: 100 us adds {m:.1} us to the least RTT (rounds {added:.1?})");
    // docs/live.md: 200 us ± 30 us.
    assert!(
        (m - 200.0).abs() <= 30.0,
        "added {m:.1} us (rounds {added:.1?}); accuracy {}",
        accuracy(&run)
    );
}

/// h1 - r - h2 at 10 Mbit/s and 5 ms per hop, and an assignment that puts h1's pipe on worker 0
/// and the rest on worker 1: every packet from h1 crosses to worker 1 at r and back home to be
/// written out, so both tests below go through hand-offs.
const SPLIT_CHAIN: &str = r#"hosts = ["h1", "h2"]
routers = ["r"]
[defaults]
bw = "10Mbit"
delay = "5ms"
[[link]]
a = "h1"
b = "r"
[[link]]
a = "r"
b = "h2"
"#;

/// Starts `SPLIT_CHAIN` on two workers with payloads cached or shipped (default precision:
/// hybrid, at real-time priority; two busy workers would leave a 2-vCPU machine no CPU for the
/// programs under test).
fn split_lab(tag: &str, payload: &str) -> Lab {
    let mut lab = Lab::new(tag, SPLIT_CHAIN);
    let assignment = lab.dir.join("assignment.json");
    std::fs::write(&assignment, r#"{"cores": 2, "pipes": [0, 1, 1, 1]}"#).unwrap();
    let assignment = assignment.to_str().unwrap();
    lab.start(&[
        "--workers",
        "2",
        "--assignment",
        assignment,
        "--payload",
        payload,
    ]);
    lab
}

/// The hand-offs of a two-worker run's report, after checking it ran split as asked.
fn handoffs(run: &Value) -> u64 {
    let w = &run["workers"];
    assert_eq!(w["workers"], 2, "{w}");
    assert_eq!(w["hosts"], serde_json::json!([1, 1]), "{w}");
    assert_eq!(w["pipes"], serde_json::json!([1, 3]), "{w}");
    run["accuracy"]["handoffs"].as_u64().unwrap()
}

#[test]
fn two_workers_give_ping_the_rtt_of_one_and_obey_link_set() {
    require_live!("ping");
    // One worker, then two, on the same chain in the same test: what the split adds is what
    // the means differ by (each run's own overhead is the machine's, and both pay it alike).
    let ones = {
        let mut lab = Lab::new("w1p", SPLIT_CHAIN);
        lab.start(&[]);
        let rtts = lab.exact_rtts("h1", "h2", 40);
        lab.stop();
        rtts
    };
    let mut lab = split_lab("w2p", "cache");
    let twos = lab.exact_rtts("h1", "h2", 40);
    let (one, two) = (trimmed_mean(ones.clone()), trimmed_mean(twos.clone()));
    eprintln!(
        "measured: RTT with one worker {one:.3} ms (mean {:.3}), with two {two:.3} ms (mean {:.3})",
        mean(&ones),
        mean(&twos)
    );
    // docs/live.md: two workers give the RTT of one within 0.1 ms. Trimmed means: a systematic
    // cost of the split moves them (a worker asleep when its host answered did, by 0.1-0.2 ms),
    // a single echo the VM stalls for milliseconds does not.
    assert!(
        (two - one).abs() <= 0.1,
        "one worker {one} ms ({ones:?}), two {two} ms ({twos:?})"
    );
    // A change reaches every worker: r's pipes run on worker 1, but each worker routes with
    // its own copy of every pipe's configuration.
    lab.control(&["link", "set", "r", "h2", "delay=10ms"]);
    let after = trimmed_mean(lab.exact_rtts("h1", "h2", 40));
    eprintln!(
        "measured: two workers after link set, RTT {after:.3} ms (+{:.3})",
        after - two
    );
    assert!(
        (after - two - 10.0).abs() <= 0.1,
        "after link set {after} ms, before {two}"
    );
    // Stats merge both workers' parts: every pipe once, each host's packets counted.
    let out = lab.control(&["stats", "--json"]);
    let stats: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(stats["pipes"].as_array().unwrap().len(), 4, "{stats}");
    assert!(stats["hosts"][0]["packets_in"].as_u64().unwrap() >= 80);
    assert!(stats["hosts"][1]["packets_out"].as_u64().unwrap() >= 80);
    let run = lab.stop();
    assert!(handoffs(&run) >= 160, "each request crosses twice: {run}");
    assert_eq!(run["accuracy"]["physical_drops"], 0, "{}", accuracy(&run));
}

#[test]
fn two_workers_let_iperf3_tcp_fill_a_10mbit_link() {
    let _turn = live_common::turn();
    tcp_on_two_workers("cache");
}

/// The same with payloads shipped at every crossing: TCP's super-packets cross segment by
/// segment, each rebuilt as its own packet.
#[test]
fn two_workers_shipping_payloads_let_iperf3_tcp_fill_a_10mbit_link() {
    let _turn = live_common::turn();
    tcp_on_two_workers("ship");
}

fn tcp_on_two_workers(payload: &str) {
    require_live!("iperf3", "ss");
    let mut lab = split_lab(&format!("w2{payload}"), payload);
    lab.spawn("h2", &["iperf3", "-s", "-1"]);
    lab.wait_listening("h2", 5201);
    let report = iperf3_client(&lab, "h1", &["-c", "h2", "-t", "5", "-C", "bbr"]);
    let mbps = received_mbps(&report);
    let run = lab.stop();
    eprintln!("measured: two workers ({payload}), TCP over 10 Mbit/s: {mbps:.3} Mbit/s received");
    // As with one worker (docs/live.md): 9.0 to 10.0 Mbit/s.
    assert!(
        (9.0..=10.0).contains(&mbps),
        "received {mbps:.3} Mbit/s; accuracy {}",
        accuracy(&run)
    );
    assert!(
        handoffs(&run) > 4_000,
        "segments cross twice: {}",
        run["accuracy"]
    );
    assert_eq!(run["accuracy"]["physical_drops"], 0);
}

/// Sets `net.ipv4.tcp_ecn` in `host`: through `netloom exec` where the host may set its own
/// sysctls, else from outside its namespace.
fn set_tcp_ecn(lab: &Lab, host: &str, value: u8) {
    let setting = format!("net.ipv4.tcp_ecn={value}");
    if lab
        .exec(host, &["sysctl", "-qw", &setting])
        .status
        .success()
    {
        return;
    }
    let ns = format!("nl-{}-{host}", lab.name);
    let out = std::process::Command::new("ip")
        .args(["netns", "exec", &ns, "sysctl", "-qw", &setting])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{setting} in {ns}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The counters of the h1 -> h2 pipe, from `netloom stats`.
fn h1_to_h2(lab: &Lab) -> Value {
    let out = lab.control(&["stats", "--json"]);
    let stats: Value = serde_json::from_slice(&out.stdout).unwrap();
    stats["pipes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["from"] == "h1" && p["to"] == "h2")
        .cloned()
        .unwrap_or_else(|| panic!("no h1 -> h2 pipe in {stats}"))
}

#[test]
fn ecn_turns_codel_drops_into_marks_and_tcp_retransmits_nothing() {
    require_live!("iperf3", "ss", "sysctl");
    // A deep queue, so only CoDel signals congestion. First TCP without ECN (the baseline): CoDel
    // drops and TCP retransmits; then with ECN negotiated by both hosts: CoDel marks, the
    // receiver echoes, the sender slows down, and nothing is lost.
    let mut lab = Lab::new(
        "ecn",
        r#"hosts = ["h1", "h2"]
[[link]]
a = "h1"
b = "h2"
bw = "10Mbit"
delay = "5ms"
queue = 1000
aqm = "codel"
ecn = true
"#,
    );
    // The default precision: busy, at normal priority, carried 8.7 Mbit/s with ECN at load 14
    // and 4.0 with four CPU hogs beside it (default: 9.5, and 9.1 to 9.3 with four hogs).
    lab.start(&[]);
    let transfer = |lab: &mut Lab, ecn: u8| {
        for host in ["h1", "h2"] {
            set_tcp_ecn(lab, host, ecn);
        }
        lab.spawn("h2", &["iperf3", "-s", "-1"]);
        lab.wait_listening("h2", 5201);
        let report = iperf3_client(lab, "h1", &["-c", "h2", "-t", "4"]);
        let retransmits = report["end"]["sum_sent"]["retransmits"]
            .as_u64()
            .expect("end.sum_sent.retransmits");
        (retransmits, received_mbps(&report), h1_to_h2(lab))
    };
    let (lost, mbps_drops, before) = transfer(&mut lab, 0);
    let (resent, mbps_marks, after) = transfer(&mut lab, 1);
    let run = lab.stop();
    let count = |p: &Value, key: &str| p.pointer(key).and_then(Value::as_u64).unwrap();
    let codel_drops =
        count(&after, "/drops_by_cause/codel") - count(&before, "/drops_by_cause/codel");
    let marks = count(&after, "/marks") - count(&before, "/marks");
    eprintln!(
        "measured: without ECN {} CoDel drops, {lost} retransmits, {mbps_drops:.2} Mbit/s; \
         with ECN {marks} marks, {codel_drops} drops, {resent} retransmits, {mbps_marks:.2} Mbit/s",
        count(&before, "/drops_by_cause/codel")
    );
    assert!(
        count(&before, "/drops_by_cause/codel") > 0 && lost > 0,
        "{before}"
    );
    assert!(marks > 0, "{after}");
    // With ECN, CoDel marks every packet that carries ECT and still drops those that cannot
    // (RFC 3168 6.1.4-6.1.5: pure ACKs, SYNs and FINs carry no ECT). A fresh-clone CI run saw
    // 1 such drop against 16 marks, with no retransmission: most likely the client's FIN, sent
    // while the queue was still long. So: no drop of another cause, and CoDel's very few.
    let drops = count(&after, "/drops") - count(&before, "/drops");
    assert_eq!(
        drops, codel_drops,
        "drops of another cause than CoDel: {after}"
    );
    assert!(
        codel_drops <= 2 && codel_drops < marks,
        "with ECN {codel_drops} CoDel drops against {marks} marks: {after}"
    );
    assert_eq!(resent, 0, "TCP retransmitted with ECN: {after}");
    assert!(mbps_marks >= 9.0, "with ECN {mbps_marks:.3} Mbit/s");
    assert_eq!(run["accuracy"]["physical_drops"], 0, "{}", accuracy(&run));
}

#[test]
fn fq_codel_keeps_pings_beside_a_tcp_transfer_near_the_idle_round_trip() {
    require_live!("iperf3", "ss", "ping");
    // Pings from h1 to h2 idle (the baseline), then beside a Reno transfer from h1 to h2 through
    // a drop-tail queue of 500 packets (600 ms at 10 Mbit/s: Reno fills it), then the same with
    // `link set ... aqm=fq_codel`: the pings' flow queue is served between the transfer's
    // packets, so they wait for at most one of them (1.2 ms at 10 Mbit/s).
    let mut lab = Lab::new(
        "fq",
        r#"hosts = ["h1", "h2"]
[[link]]
a = "h1"
b = "h2"
bw = "10Mbit"
delay = "5ms"
queue = 500
"#,
    );
    // The default precision: busy, at normal priority, made the idle round trip 24 ms for 10
    // at load 16, and 100 ms with four CPU hogs (default: 10.3 ms either way).
    lab.start(&[]);
    let idle = median(lab.rtts("h1", "h2", 20, "0.05"));
    let loaded = |lab: &mut Lab| {
        lab.spawn("h2", &["iperf3", "-s", "-1"]);
        lab.wait_listening("h2", 5201);
        let client = lab.spawn("h1", &["iperf3", "-c", "h2", "-t", "8", "-C", "reno"]);
        // Past slow start, so the queue stands.
        std::thread::sleep(std::time::Duration::from_secs(3));
        // Drop-tail may drop a ping at the tail of the full queue: the answered ones count.
        let out = lab.exec("h1", &["ping", "-c", "30", "-i", "0.1", "h2"]);
        let rtts = ping_rtts(&out);
        assert!(rtts.len() >= 15, "{} of 30 echoes answered", rtts.len());
        lab.background[client].wait().unwrap();
        median(rtts)
    };
    let tail = loaded(&mut lab);
    lab.control(&["link", "set", "h1", "h2", "aqm=fq_codel"]);
    let fq = loaded(&mut lab);
    let run = lab.stop();
    eprintln!("measured: ping median idle {idle:.3} ms, beside Reno: drop-tail {tail:.3} ms, FQ-CoDel {fq:.3} ms");
    assert!(fq - idle < 2.0, "FQ-CoDel {fq} ms against {idle} ms idle");
    assert!(
        tail - idle > 10.0,
        "drop-tail {tail} ms against {idle} ms idle"
    );
    assert_eq!(run["accuracy"]["physical_drops"], 0, "{}", accuracy(&run));
}
