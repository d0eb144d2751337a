//! Phases of traffic across a repartition: what each measured, where its losses went, and
//! whether the moves delayed it against the phases without one.

use super::*;

/// What one phase of traffic measured: ping's round trips (ms) and when each echo was sent, and
/// iperf3's datagrams, lost and out of order.
pub struct Phase {
    pub rtts: Vec<f64>,
    /// When each echo of `rtts` was sent, ns since the run started (the run's own clock, which
    /// its report's epochs and moves use), to a few milliseconds (`Lab::started_at`).
    pub sent_ns: Vec<u64>,
    pub packets: u64,
    pub lost: u64,
    pub out_of_order: u64,
    /// Datagrams the receiving host's kernel dropped for want of room in a socket's receive
    /// buffer during the phase (its namespace's `Udp: RcvbufErrors` and `Udp6RcvbufErrors`):
    /// lost past netloom, which wrote them.
    pub receive_buffer_drops: u64,
    /// The receiving host kernel's other counts of packets it refused during the phase, those
    /// not zero (`Ip: InDiscards` or `Udp6InCsumErrors`, …): a packet netloom wrote that never
    /// reached the socket.
    pub kernel_drops: Vec<(String, u64)>,
    /// UDP datagrams the programs on the receiving host read during the phase (its kernel's
    /// `InDatagrams`, counted as a program takes one from its socket): iperf3's data, and its
    /// 4-byte hello, when nothing was lost on the way.
    pub udp_read: u64,
}

/// Every pipe's drops over the whole run of `report`: what the model dropped (a full queue, a
/// loss rate), as opposed to a datagram that vanished.
pub fn pipe_drops(report: &Value) -> u64 {
    report["pipes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["drops"].as_u64().unwrap())
        .sum()
}

/// Where a phase's lost datagrams may have gone: past netloom, the receiver's socket buffer
/// (`Phase::receive_buffer_drops`); in netloom (over the whole run), each pipe's drops by cause,
/// the accuracy's physical and TUN-queue drops, hand-offs passed on after a move, and where
/// packets between pipes, or from pipes to hosts, do not add up (`unbalanced`).
pub fn where_lost(p: &Phase, report: &Value) -> String {
    let pipes = report["pipes"].as_array().unwrap();
    let drops: Vec<String> = pipes
        .iter()
        .filter(|p| p["drops"].as_u64() > Some(0))
        .map(|p| format!("{}->{} {}", p["from"], p["to"], p["drops_by_cause"]))
        .collect();
    let a = &report["accuracy"];
    let kernel: Vec<String> = p
        .kernel_drops
        .iter()
        .map(|(name, n)| format!("{name} {n}"))
        .collect();
    format!(
        "{} UDP datagrams read at the receiver, {} dropped for its socket buffer, by its kernel otherwise [{}]; pipes' drops: [{}]; in flight at the stop {}; physical drops {}, TUN-queue drops {}, hand-offs passed on {}, handoff lateness max {} ns; where packets do not add up: [{}]",
        p.udp_read,
        p.receive_buffer_drops,
        kernel.join(", "),
        drops.join(", "),
        report["in_flight"],
        a["physical_drops"],
        a["tun_queue_drops"],
        a["forwarded_handoffs"],
        a["handoff_lateness_ns_max"],
        unbalanced(report).join(", ")
    )
}

/// Where the packets do not add up, as `r0->r1 in 10 out 8 dropped 1` (a pipe that let out
/// and dropped fewer than it took in: one lost inside it, its exit never handled), `r0 in 10
/// out 9` (a router whose pipes in let out more than its pipes out took in: one lost between
/// two pipes), `h2 in 10 written 9` (a host whose pipes in let out more than was written to
/// it) or `h1 read 10 refused 0 into pipes 9` (a packet read from a host that neither entered
/// its pipes out nor was refused: malformed, to an unknown address, spoofed). Routers answer
/// pings to other hosts only, which these tests do not send; a packet in flight at the stop
/// shows as one lost inside its pipe.
fn unbalanced(report: &Value) -> Vec<String> {
    let mut nodes = std::collections::BTreeMap::<&str, (u64, u64)>::new();
    let mut found = Vec::new();
    let mut sent = std::collections::BTreeMap::<&str, u64>::new();
    for p in report["pipes"].as_array().unwrap() {
        let count = |k: &str| p[k].as_u64().unwrap();
        let (from, to) = (p["from"].as_str().unwrap(), p["to"].as_str().unwrap());
        let (taken, left, dropped) = (count("packets_in"), count("packets_out"), count("drops"));
        if taken != left + dropped {
            found.push(format!(
                "{from}->{to} in {taken} out {left} dropped {dropped}"
            ));
        }
        nodes.entry(to).or_default().0 += count("packets_out");
        match from.starts_with('r') {
            true => nodes.entry(from).or_default().1 += count("packets_in"),
            false => *sent.entry(from).or_default() += taken,
        }
    }
    for h in report["hosts"].as_array().unwrap() {
        let name = h["name"].as_str().unwrap();
        let count = |k: &str| h[k].as_u64().unwrap_or(0);
        nodes.entry(name).or_default().1 = count("packets_out");
        let refused = ["malformed", "unknown_destination", "refused_gso", "spoofed"]
            .iter()
            .map(|&k| count(k))
            .sum::<u64>();
        let (read, into) = (count("packets_in"), sent.get(name).copied().unwrap_or(0));
        if read != refused + into {
            found.push(format!(
                "{name} read {read} refused {refused} into pipes {into}"
            ));
        }
    }
    found.extend(
        nodes
            .into_iter()
            .filter(|(_, (into, out))| into != out)
            .map(|(name, (into, out))| match name.starts_with('r') {
                true => format!("{name} in {into} out {out}"),
                false => format!("{name} in {into} written {out}"),
            }),
    );
    found
}

/// Prints, phase by phase, what the run with moves (`moving`, `report`) and the same traffic
/// without (`fixed`, `baseline`) lost, and where.
pub fn print_losses(moving: &[Phase], report: &Value, fixed: &[Phase], baseline: &Value) {
    for (k, (p, base)) in moving.iter().zip(fixed).enumerate() {
        eprintln!(
            "measured: phase {k}: {} lost of {} with moves ({}), {} of {} without ({})",
            p.lost,
            p.packets,
            where_lost(p, report),
            base.lost,
            base.packets,
            where_lost(base, baseline)
        );
    }
}

/// Checks that a repartitioned run's moves did not delay its round trips, against the run
/// itself: the echoes sent in epochs that began with a move against those sent in the others,
/// which alternate with them second by second, so a machine whose load changes between two runs
/// (a loaded CI VM moved a median by 0.3 ms between the run without moves and the one with)
/// moves both sides alike. A move stalls the workers for its `stall_ns` (a few hundred
/// microseconds) once, at its epoch's start: the median of the epoch's 50 echoes stays within
/// `slack_ms` of the others' unless the move slowed the path for the epoch. The path itself is
/// the one the run without moves (`fixed`) took: the least echo of each, which the machine's
/// load cannot lower, within 0.5 ms (a wrong path adds a link's 1 ms each way).
pub fn assert_moves_did_not_delay(
    fixed: &[Phase],
    moving: &[Phase],
    report: &Value,
    slack_ms: f64,
) {
    let epochs = report["repartition"]["epochs"].as_array().unwrap();
    let moved_at = |sent: u64| {
        epochs.iter().find_map(|e| {
            let (start, end) = (e["start_ns"].as_u64()?, e["end_ns"].as_u64()?);
            (start..end).contains(&sent).then(|| e["moved"] == true)
        })
    };
    let (mut with, mut without) = (Vec::new(), Vec::new());
    for p in moving {
        for (&rtt, &sent) in p.rtts.iter().zip(&p.sent_ns) {
            match moved_at(sent) {
                Some(true) => with.push(rtt),
                Some(false) => without.push(rtt),
                None => {}
            }
        }
    }
    let all = |phases: &[Phase]| {
        phases
            .iter()
            .flat_map(|p| p.rtts.clone())
            .collect::<Vec<_>>()
    };
    let (least_fixed, least_moving) = (least(all(fixed)), least(all(moving)));
    eprintln!(
        "measured: least RTT {least_fixed:.3} ms without moves, {least_moving:.3} with; \
         {} echoes in epochs that began with a move, {} in the others",
        with.len(),
        without.len()
    );
    assert!(
        (least_moving - least_fixed).abs() <= 0.5,
        "the least round trip was {least_moving} ms with moves and {least_fixed} ms without: \
         not the same path"
    );
    // An epoch holds about 50 echoes; fewer on a side (the phases' 6 s fell in epochs of one
    // kind) leave nothing to compare.
    if with.len() < 20 || without.len() < 20 {
        eprintln!("measured: too few echoes on one side to compare medians");
        return;
    }
    let (m_with, m_without) = (median(with), median(without));
    eprintln!(
        "measured: RTT median {m_with:.3} ms in epochs with a move, {m_without:.3} in the others"
    );
    assert!(
        m_with <= m_without + slack_ms,
        "the round trips' median was {m_with} ms in epochs that began with a move and \
         {m_without} ms in the others"
    );
}

/// 3 s of UDP at 5 Mbit/s (1000-byte datagrams) from h1 to `to`, with a ping every 20 ms
/// beside it.
pub fn phase(lab: &mut Lab, to: &str) -> Phase {
    let before = snmp(lab, to);
    let started = lab.started_at();
    lab.spawn(to, &["iperf3", "-s", "-1"]);
    lab.wait_listening(to, 5201);
    let ping = lab
        .exec_cmd("h1", &["ping", "-D", "-i", "0.02", "-c", "150", to])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let udp = iperf3_client(
        lab,
        "h1",
        &["-c", to, "-u", "-b", "5M", "-l", "1000", "-t", "3"],
    );
    let echoes = ping.wait_with_output().unwrap();
    let rtts = ping_rtts(&echoes);
    let sent_ns = ping_answered_at(&echoes)
        .iter()
        .zip(&rtts)
        .map(|(at, rtt)| ((at - rtt / 1e3 - started) * 1e9).max(0.0) as u64)
        .collect();
    let sum = &udp["end"]["sum"];
    let count = |v: &Value| v.as_u64().unwrap_or_else(|| panic!("iperf3: {udp}"));
    let after = snmp(lab, to);
    let delta = |name: &&str| after[*name] - before[*name];
    Phase {
        rtts,
        sent_ns,
        packets: count(&sum["packets"]),
        lost: count(&sum["lost_packets"]),
        out_of_order: count(&udp["end"]["streams"][0]["udp"]["out_of_order"]),
        receive_buffer_drops: BUFFER_DROPS.iter().map(delta).sum(),
        kernel_drops: KERNEL_DROPS
            .iter()
            .map(|name| (name.to_string(), delta(name)))
            .filter(|(_, n)| *n > 0)
            .collect(),
        udp_read: UDP_READ.iter().map(delta).sum(),
    }
}

/// The counts of a host's kernel of UDP datagrams its programs read, over IPv4 and IPv6.
const UDP_READ: &[&str] = &["Udp: InDatagrams", "Udp6InDatagrams"];

/// The counts of a host's kernel that say it dropped a UDP datagram for want of room in a
/// socket's receive buffer, over IPv4 and IPv6 (iperf3 picks the IPv6 address of a host's
/// name).
const BUFFER_DROPS: &[&str] = &["Udp: RcvbufErrors", "Udp6RcvbufErrors"];

/// The counts of a host's kernel that say it refused a packet arriving for it for another
/// reason, over IPv4 and IPv6.
const KERNEL_DROPS: &[&str] = &[
    "Ip: InHdrErrors",
    "Ip: InAddrErrors",
    "Ip: InDiscards",
    "Udp: InErrors",
    "Udp: InCsumErrors",
    "Udp: NoPorts",
    "Ip6InHdrErrors",
    "Ip6InAddrErrors",
    "Ip6InDiscards",
    "Ip6InTruncatedPkts",
    "Udp6InErrors",
    "Udp6InCsumErrors",
    "Udp6NoPorts",
];

/// Every count of `host`'s namespace's /proc/net/snmp, as `Protocol: Field`, and of its
/// /proc/net/snmp6, by its own name, read at once.
fn snmp(lab: &Lab, host: &str) -> std::collections::HashMap<String, u64> {
    let out = lab.exec(host, &["cat", "/proc/net/snmp", "/proc/net/snmp6"]);
    let text = String::from_utf8_lossy(&out.stdout);
    let mut counts = std::collections::HashMap::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let mut words = line.split_whitespace();
        match words.next() {
            // /proc/net/snmp: a line of names, then one of values, each led by `Protocol:`.
            Some(protocol) if protocol.ends_with(':') => {
                let values = lines.next().unwrap_or_default().split_whitespace().skip(1);
                for (name, value) in words.zip(values) {
                    counts.insert(format!("{protocol} {name}"), value.parse().unwrap_or(0));
                }
            }
            // /proc/net/snmp6: a name and its value a line.
            Some(name) => {
                let value = words.next().and_then(|v| v.parse().ok()).unwrap_or(0);
                counts.insert(name.to_string(), value);
            }
            None => {}
        }
    }
    for name in BUFFER_DROPS.iter().chain(KERNEL_DROPS).chain(UDP_READ) {
        assert!(
            counts.contains_key(*name),
            "no {name} in {host}'s counts: {text}"
        );
    }
    counts
}
