//! A live run's `Report` in Prometheus' text exposition format 0.0.4: every family with its HELP
//! and TYPE lines, `netloom_` names in base units, `_total` counters, pipes labelled by link and
//! direction as the report names them (a-b, b-a, shared), and the release lateness as a
//! histogram over the report's fixed buckets.

use netloom_live::Report;
use std::fmt::Write;

/// The content type of the exposition.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// One family being written: its samples follow its HELP and TYPE lines.
struct Family<'a> {
    out: &'a mut String,
    name: &'static str,
}

impl Family<'_> {
    fn sample(&mut self, labels: &[(&str, &str)], value: impl std::fmt::Display) {
        self.suffixed("", labels, value);
    }

    fn suffixed(&mut self, suffix: &str, labels: &[(&str, &str)], value: impl std::fmt::Display) {
        let _ = write!(self.out, "{}{suffix}", self.name);
        if !labels.is_empty() {
            self.out.push('{');
            for (k, (name, value)) in labels.iter().enumerate() {
                if k > 0 {
                    self.out.push(',');
                }
                let _ = write!(self.out, "{name}=\"{}\"", escape(value));
            }
            self.out.push('}');
        }
        let _ = writeln!(self.out, " {value}");
    }
}

/// Starts family `name` of `kind` (counter, gauge, histogram).
fn family<'a>(out: &'a mut String, name: &'static str, kind: &str, help: &str) -> Family<'a> {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
    Family { out, name }
}

/// A label value as the format quotes it.
fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn seconds(ns: u64) -> f64 {
    ns as f64 / 1e9
}

/// The exposition of `report`.
pub fn exposition(report: &Report) -> String {
    let mut out = String::new();
    let o = &mut out;
    family(
        o,
        "netloom_uptime_seconds",
        "gauge",
        "Time since the run started.",
    )
    .sample(&[], seconds(report.uptime_ns));
    family(
        o,
        "netloom_in_flight_packets",
        "gauge",
        "Packets inside the emulated network now.",
    )
    .sample(&[], report.in_flight);
    pipes(o, report);
    hosts(o, report);
    accuracy(o, report);
    workers(o, report);
    out
}

fn pipes(o: &mut String, report: &Report) {
    let each =
        |o: &mut String, name, kind, help, value: &dyn Fn(&netloom_live::PipeState) -> String| {
            let mut f = family(o, name, kind, help);
            for p in &report.pipes {
                f.sample(
                    &[("link", &p.report.link), ("direction", &p.report.direction)],
                    value(p),
                );
            }
        };
    each(
        o,
        "netloom_pipe_packets_in_total",
        "counter",
        "Packets offered to the pipe, those it dropped included.",
        &|p| p.report.packets_in.to_string(),
    );
    each(
        o,
        "netloom_pipe_packets_out_total",
        "counter",
        "Packets that left the pipe at its far end.",
        &|p| p.report.packets_out.to_string(),
    );
    each(
        o,
        "netloom_pipe_bytes_out_total",
        "counter",
        "Bytes on the wire of the packets that left the pipe.",
        &|p| p.report.bytes_out.to_string(),
    );
    let mut f = family(
        o,
        "netloom_pipe_drops_total",
        "counter",
        "Packets the pipe dropped, by cause (the model's drops, not losses outside it).",
    );
    for p in &report.pipes {
        // Every cause the report has, by its JSON name, so a new cause needs no change here.
        let causes = serde_json::to_value(&p.report.drops_by_cause).expect("drops serialize");
        for (cause, n) in causes.as_object().into_iter().flatten() {
            f.sample(
                &[
                    ("link", &p.report.link),
                    ("direction", &p.report.direction),
                    ("cause", cause),
                ],
                n,
            );
        }
    }
    each(
        o,
        "netloom_pipe_ecn_marks_total",
        "counter",
        "ECN-capable packets the pipe's AQM marked CE instead of dropping them.",
        &|p| p.report.marks.to_string(),
    );
    each(
        o,
        "netloom_pipe_queue_packets",
        "gauge",
        "Packets queued in the pipe now, the one being serialized included.",
        &|p| p.queue_packets.to_string(),
    );
    each(
        o,
        "netloom_pipe_queue_bytes",
        "gauge",
        "Bytes queued in the pipe now.",
        &|p| p.queue_bytes.to_string(),
    );
    each(
        o,
        "netloom_pipe_queue_hwm_packets",
        "gauge",
        "Most packets the pipe's queue held since the run started.",
        &|p| p.report.queue_hwm_packets.to_string(),
    );
    each(
        o,
        "netloom_pipe_queue_hwm_bytes",
        "gauge",
        "Most bytes the pipe's queue held since the run started.",
        &|p| p.report.queue_hwm_bytes.to_string(),
    );
    each(
        o,
        "netloom_pipe_utilization_ratio",
        "gauge",
        "Bytes out times 8 over rate times uptime: the pipe's busy fraction since the run started.",
        &|p| p.report.utilization.to_string(),
    );
}

fn hosts(o: &mut String, report: &Report) {
    type Counter = fn(&netloom_live::HostReport) -> u64;
    let families: [(&'static str, &str, Counter); 9] = [
        (
            "netloom_host_packets_in_total",
            "Packets the host sent.",
            |h| h.counters.packets_in,
        ),
        ("netloom_host_bytes_in_total", "Bytes the host sent.", |h| {
            h.counters.bytes_in
        }),
        (
            "netloom_host_packets_out_total",
            "Packets written to the host.",
            |h| h.counters.packets_out,
        ),
        (
            "netloom_host_bytes_out_total",
            "Bytes written to the host.",
            |h| h.counters.bytes_out,
        ),
        (
            "netloom_host_malformed_total",
            "Packets from the host that were not IP, truncated or unsplittable; dropped.",
            |h| h.counters.malformed,
        ),
        (
            "netloom_host_unknown_destination_total",
            "Packets from the host to an address no host has; dropped.",
            |h| h.counters.unknown_destination,
        ),
        (
            "netloom_host_refused_gso_total",
            "Super-packets from the host refused whole.",
            |h| h.counters.refused_gso,
        ),
        (
            "netloom_host_spoofed_total",
            "Packets from the host whose source address is not its own.",
            |h| h.counters.spoofed,
        ),
        (
            "netloom_host_tun_queue_drops_total",
            "Packets the host sent that its full TUN queue dropped (physical drops).",
            |h| h.tun_queue_drops,
        ),
    ];
    for (name, help, value) in families {
        let mut f = family(o, name, "counter", help);
        for h in &report.hosts {
            f.sample(&[("host", &h.host.name)], value(h));
        }
    }
}

fn accuracy(o: &mut String, report: &Report) {
    let a = &report.accuracy;
    let mut f = family(
        o,
        "netloom_lateness_seconds",
        "histogram",
        "How late packets were released after their scheduled time.",
    );
    for b in &a.lateness_buckets {
        f.suffixed("_bucket", &[("le", &seconds(b.le_ns).to_string())], b.count);
    }
    f.suffixed("_bucket", &[("le", "+Inf")], a.released);
    f.suffixed("_sum", &[], seconds(a.lateness_ns_sum));
    f.suffixed("_count", &[], a.released);
    family(
        o,
        "netloom_late_threshold_seconds",
        "gauge",
        "A release later than this is late.",
    )
    .sample(&[], seconds(a.late_threshold_ns));
    family(
        o,
        "netloom_late_packets_total",
        "counter",
        "Packets released later than the threshold.",
    )
    .sample(&[], a.late);
    family(
        o,
        "netloom_physical_drops_total",
        "counter",
        "Packets lost outside the model (failed writes, no buffer, full TUN queues).",
    )
    .sample(&[], a.physical_drops);
    family(
        o,
        "netloom_skipped_changes_total",
        "counter",
        "Scheduled link changes never in force (a schedule finer than the driver's turns).",
    )
    .sample(&[], a.skipped_changes);
    family(
        o,
        "netloom_accurate",
        "gauge",
        "1 while the run is within its accuracy thresholds, else 0.",
    )
    .sample(&[], u8::from(a.accurate));
}

fn workers(o: &mut String, report: &Report) {
    let Some(w) = &report.workers else { return };
    let a = &report.accuracy;
    let mut f = family(
        o,
        "netloom_worker_hosts",
        "gauge",
        "Hosts the worker reads and writes for.",
    );
    for (k, n) in w.split.hosts.iter().enumerate() {
        f.sample(&[("worker", &k.to_string())], n);
    }
    let mut f = family(o, "netloom_worker_pipes", "gauge", "Pipes the worker owns.");
    for (k, n) in w.split.pipes.iter().enumerate() {
        f.sample(&[("worker", &k.to_string())], n);
    }
    family(
        o,
        "netloom_handoffs_total",
        "counter",
        "Packets handed from one worker to another.",
    )
    .sample(&[], w.cross_core_hops);
    family(
        o,
        "netloom_handoff_bytes_total",
        "counter",
        "Bytes the hand-offs moved.",
    )
    .sample(&[], w.cross_core_bytes);
    let mut f = family(
        o,
        "netloom_worker_handoffs_total",
        "counter",
        "Packets the worker handed to another.",
    );
    for (k, n) in w.worker_handoffs.iter().enumerate() {
        f.sample(&[("worker", &k.to_string())], n);
    }
    let mut f = family(
        o,
        "netloom_worker_handoff_bytes_total",
        "counter",
        "Bytes the worker's hand-offs moved.",
    );
    for (k, n) in w.worker_handoff_bytes.iter().enumerate() {
        f.sample(&[("worker", &k.to_string())], n);
    }
    family(
        o,
        "netloom_late_handoffs_total",
        "counter",
        "Hand-offs that arrived later than the threshold after their intended time.",
    )
    .sample(&[], a.late_handoffs);
    let r = &report.refused_handoffs;
    if !r.is_none() {
        let mut f = family(
            o,
            "netloom_refused_handoffs_total",
            "counter",
            "Datagrams refused at the machines' hand-off ports, by cause (none the run's).",
        );
        for (cause, n) in [
            ("stranger", r.strangers),
            ("malformed", r.malformed),
            ("out_of_bounds", r.out_of_bounds),
            ("replayed", r.replayed),
        ] {
            f.sample(&[("cause", cause)], n);
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A report of two hosts, one router, a link of two pipes and a shared one, two workers.
    pub(crate) fn report() -> Report {
        let pipe = |link: &str, direction: &str, from: &str, to: &str, n: u64| {
            serde_json::json!({
                "link": link, "direction": direction, "from": from, "to": to,
                "packets_in": n, "packets_out": n - 1, "bytes_out": 1500 * (n - 1), "drops": 1,
                "drops_by_cause": {"queue": 1, "red": 0, "loss": 0, "link_down": 0, "tx_fail": 0},
                "utilization": 0.25, "queue_hwm_packets": 7, "queue_hwm_bytes": 10500,
                "queue_packets": 2, "queue_bytes": 3000
            })
        };
        let host = |name: &str, i: u8| {
            serde_json::json!({
                "name": name, "ipv4": format!("198.18.0.{i}"), "ipv6": format!("fd6e:6c00::{i}"),
                "packets_in": 10, "bytes_in": 15000, "packets_out": 9, "bytes_out": 13500,
                "malformed": 0, "unknown_destination": 0, "tun_queue_drops": 0
            })
        };
        serde_json::from_value(serde_json::json!({
            "experiment": "lab", "precision": "hybrid", "uptime_ns": 2_500_000_000u64, "in_flight": 3,
            "accuracy": {
                "released": 100, "lateness_ns_p50": 3000, "lateness_ns_p99": 40000,
                "lateness_ns_p999": 90000, "lateness_ns_max": 2_000_000, "lateness_ns_sum": 500_000,
                "lateness_buckets": netloom_live::LATENESS_BUCKETS_NS.iter().enumerate()
                    .map(|(k, le)| serde_json::json!({"le_ns": le, "count": (90 + k as u64).min(100)}))
                    .collect::<Vec<_>>(),
                "late_threshold_ns": 100000, "late": 1, "physical_drops": 0, "handoffs": 4,
                "late_handoffs": 0, "handoff_lateness_ns_max": 0, "accurate": true
            },
            "hosts": [host("h1", 1), host("h\"2", 2)],
            "pipes": [pipe("h1-r1", "a-b", "h1", "r1", 10), pipe("h1-r1", "b-a", "r1", "h1", 9),
                      pipe("r1-h\"2", "shared", "r1", "h\"2", 5)],
            "workers": {"workers": 2, "lookahead_ns": 5, "hosts": [1, 1], "pipes": [2, 1],
                        "payload": "cache", "cross_core_hops": 4, "cross_core_bytes": 256,
                        "worker_handoffs": [3, 1], "worker_handoff_bytes": [192, 64]}
        }))
        .unwrap()
    }

    #[test]
    fn every_family_has_help_and_type_and_labels_name_the_pipe() {
        let text = exposition(&report());
        assert!(text.contains(
            "netloom_pipe_drops_total{link=\"h1-r1\",direction=\"b-a\",cause=\"queue\"} 1\n"
        ));
        assert!(
            text.contains("netloom_pipe_queue_hwm_packets{link=\"h1-r1\",direction=\"a-b\"} 7\n")
        );
        assert!(text.contains("direction=\"shared\""));
        assert!(
            text.contains("netloom_host_packets_in_total{host=\"h\\\"2\"} 10\n"),
            "quotes escaped"
        );
        assert!(text.contains("netloom_lateness_seconds_bucket{le=\"0.0001\"} 95\n"));
        assert!(text.contains("netloom_lateness_seconds_bucket{le=\"+Inf\"} 100\n"));
        assert!(text.contains("netloom_lateness_seconds_sum 0.0005\n"));
        assert!(text.contains("netloom_worker_pipes{worker=\"1\"} 1\n"));
        assert!(text.contains("netloom_handoffs_total 4\n"));
        assert!(text.contains("netloom_worker_handoffs_total{worker=\"0\"} 3\n"));
        assert!(text.contains("netloom_worker_handoff_bytes_total{worker=\"1\"} 64\n"));
        // Every sample belongs to the family announced last, which has HELP and TYPE.
        let mut family = String::new();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                family = rest.split(' ').next().unwrap().to_string();
            } else if !line.starts_with('#') {
                assert!(line.starts_with(&family), "{line} outside {family}");
            }
        }
        assert!(
            text.lines().filter(|l| l.starts_with("# HELP")).count()
                == text.lines().filter(|l| l.starts_with("# TYPE")).count()
        );
    }

    #[test]
    fn promtool_accepts_the_exposition() {
        let Ok(mut child) = std::process::Command::new("promtool")
            .args(["check", "metrics"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
        else {
            eprintln!("SKIPPED: promtool is not installed (Debian package prometheus)");
            return;
        };
        use std::io::Write as _;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(exposition(&report()).as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        let said = String::from_utf8_lossy(&out.stdout).to_string()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() && said.trim().is_empty(),
            "promtool: {said}"
        );
    }
}
