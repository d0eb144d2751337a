//! Tables printed by more than one command, each as wide as its longest name, so that long
//! names (Topology Zoo's "Mainz-Wiesbaden-h1") never push the columns out of line.

use netloom_engine::report::PipeReport;
use netloom_live::HostReport;
use std::fmt::Write;

/// The width of a table's first column: its longest entry or its heading, at least `least`.
fn width<'a>(heading: &str, least: usize, names: impl Iterator<Item = &'a str>) -> usize {
    names
        .map(|n| n.chars().count())
        .chain([heading.len(), least])
        .max()
        .unwrap_or(least)
}

/// The table of the hosts: packets and bytes through each host's TUN device.
pub fn format_hosts(hosts: &[HostReport]) -> String {
    let mut out = String::new();
    let w = width("host", 12, hosts.iter().map(|h| h.host.name.as_str()));
    let _ = writeln!(
        out,
        "{:<w$} {:<16} {:>10} {:>10} {:>10} {:>10} {:>11} {:>10} {:>10} {:>10}",
        "host",
        "address",
        "pkts in",
        "pkts out",
        "malformed",
        "unknown",
        "gso refused",
        "spoofed",
        "tun drops",
        "MB in"
    );
    for h in hosts {
        let c = &h.counters;
        let _ = writeln!(
            out,
            "{:<w$} {:<16} {:>10} {:>10} {:>10} {:>10} {:>11} {:>10} {:>10} {:>10.3}",
            h.host.name,
            h.host.ipv4.to_string(),
            c.packets_in,
            c.packets_out,
            c.malformed,
            c.unknown_destination,
            c.refused_gso,
            c.spoofed,
            h.tun_queue_drops,
            c.bytes_in as f64 / 1e6
        );
    }
    out
}

/// The table of the pipes, busiest first (by utilization, then drops); `top` of them, or all
/// with 0. With `queued` (packets queued now, per pipe, in the same order), a column shows it.
pub fn format_pipes(pipes: &[PipeReport], queued: Option<&[u64]>, top: usize) -> String {
    let mut out = String::new();
    let mut order: Vec<usize> = (0..pipes.len()).collect();
    order.sort_by(|&a, &b| {
        let (a, b) = (&pipes[a], &pipes[b]);
        b.utilization
            .total_cmp(&a.utilization)
            .then(b.drops.cmp(&a.drops))
    });
    let shown = if top == 0 {
        pipes.len()
    } else {
        top.min(pipes.len())
    };
    let queue_head = if queued.is_some() { "queued" } else { "" };
    let names: Vec<String> = order[..shown]
        .iter()
        .map(|&i| format!("{}->{}", pipes[i].from, pipes[i].to))
        .collect();
    let w = width("pipe", 24, names.iter().map(String::as_str));
    let _ = writeln!(
        out,
        "{:<w$} {:>8} {:>12} {:>7} {:>10} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}   ({} of {} pipes, busiest first)",
        "pipe",
        "util %",
        "packets out",
        queue_head,
        "drops",
        "queue",
        "red",
        "codel",
        "loss",
        "down",
        "tx fail",
        "marks",
        shown,
        pipes.len()
    );
    for (&i, name) in order[..shown].iter().zip(&names) {
        let p = &pipes[i];
        let queue = queued.map_or(String::new(), |q| q[i].to_string());
        let _ = writeln!(
            out,
            "{:<w$} {:>8.2} {:>12} {:>7} {:>10} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}",
            name,
            p.utilization * 100.0,
            p.packets_out,
            queue,
            p.drops,
            p.drops_by_cause.queue,
            p.drops_by_cause.red,
            p.drops_by_cause.codel,
            p.drops_by_cause.loss,
            p.drops_by_cause.link_down,
            p.drops_by_cause.tx_fail,
            p.marks
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use netloom_live::{HostCounters, HostInfo};

    fn host(name: &str, packets: u64) -> HostReport {
        HostReport {
            host: HostInfo {
                name: name.into(),
                ipv4: "198.18.0.1".parse().unwrap(),
                ipv6: "fd6e:6c00::1".parse().unwrap(),
            },
            counters: HostCounters {
                packets_in: packets,
                ..HostCounters::default()
            },
            tun_queue_drops: 0,
        }
    }

    /// Where each line's second column starts, by the first run of spaces after the name.
    fn second_column(table: &str) -> Vec<usize> {
        table
            .lines()
            .map(|l| {
                let name_end = l.find(' ').unwrap();
                name_end + l[name_end..].find(|c| c != ' ').unwrap()
            })
            .collect()
    }

    #[test]
    fn long_host_names_keep_every_column_in_line() {
        let hosts = [
            host("h1", 7),
            host("Mainz-Wiesbaden-h1", 123_456),
            host(&"x".repeat(63), 0),
        ];
        let table = format_hosts(&hosts);
        let starts = second_column(&table);
        assert!(starts.iter().all(|&s| s == 64), "{starts:?}\n{table}");
        // So do the columns after it: every line is as long as the heading.
        let lengths: Vec<usize> = table.lines().map(str::len).collect();
        assert!(lengths.iter().all(|&n| n == lengths[0]), "{table}");
        // Short names keep the old width.
        assert_eq!(second_column(&format_hosts(&hosts[..1])), [13, 13]);
    }
}
