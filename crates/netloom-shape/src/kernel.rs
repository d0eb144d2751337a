//! The kernel's half of the classifier: netloom's own chains in the `mangle` table of iptables
//! (legacy x_tables), which send exactly the packets some rule selects to the NFQUEUE, with
//! `--queue-bypass` so that they flow unshaped when no netloom process holds the queue.
//!
//! Why iptables and not an nftables table: this kernel has nftables but not its `queue`
//! expression (CONFIG_NFT_QUEUE), while x_tables' NFQUEUE target is built in (docs/shape.md).
//! netloom touches only its two chains and the one jump to each from OUTPUT and INPUT.
//!
//! Arriving packets are taken in INPUT, not PREROUTING: by then the kernel has looked up the
//! local socket of an established TCP connection or connected UDP socket (early demux), so the
//! queue reports its owner and a user's links can be kept to that user's traffic.

use crate::classifier::{Direction, Rule};
use crate::spec::{PortRange, Prefix, Proto};
use std::fmt::Write as _;
use std::io::Write as _;
use std::process::{Command, Stdio};

/// The chain for arriving packets, jumped to first from mangle INPUT.
pub const CHAIN_IN: &str = "NETLOOM-SHAPE-IN";
/// The chain for leaving packets, jumped to first from mangle OUTPUT.
pub const CHAIN_OUT: &str = "NETLOOM-SHAPE-OUT";
/// The mark (`SO_MARK`) of the duplicates the shaping process sends: each chain starts by
/// letting packets with it go, so a copy is never queued again ("nl" and 1).
pub const DUPLICATE_MARK: u32 = 0x6e6c_0001;
/// The NFQUEUE numbers a set of rules sends packets to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Queues {
    /// Packets of which only the header is copied up (their verdict is accept or drop).
    pub header: u16,
    /// Packets of `whole` rules (their pipe marks CE or duplicates): copied up whole, for the
    /// verdict to carry the marked packet back or a copy to be sent.
    pub whole: u16,
}

/// The NFQUEUE numbers of the shaping process.
pub const QUEUES: Queues = Queues {
    header: 47000,
    whole: 47001,
};

/// An IP family and the programs that manage its tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// IPv4: iptables-legacy.
    V4,
    /// IPv6: ip6tables-legacy.
    V6,
}

impl Family {
    /// Both, in order.
    pub const ALL: [Family; 2] = [Family::V4, Family::V6];

    fn tool(self) -> &'static str {
        match self {
            Family::V4 => "iptables-legacy",
            Family::V6 => "ip6tables-legacy",
        }
    }

    fn restore(self) -> &'static str {
        match self {
            Family::V4 => "iptables-legacy-restore",
            Family::V6 => "ip6tables-legacy-restore",
        }
    }

    fn holds(self, prefix: &Prefix) -> bool {
        prefix.addr.is_ipv4() == (self == Family::V4)
    }
}

/// The `iptables-restore --noflush` input that replaces netloom's chains of `family` with
/// `rules`, in order, after the rule that lets netloom's duplicates go (declaring a chain
/// empties it, so the swap is one transaction).
pub fn restore_script(family: Family, rules: &[Rule], queues: Queues) -> String {
    let mut s = format!("*mangle\n:{CHAIN_IN} - [0:0]\n:{CHAIN_OUT} - [0:0]\n");
    for chain in [CHAIN_IN, CHAIN_OUT] {
        let _ = writeln!(s, "-A {chain} -m mark --mark {DUPLICATE_MARK:#x} -j RETURN");
    }
    for rule in rules {
        let queue = match rule.whole {
            true => queues.whole,
            false => queues.header,
        };
        for line in rule_lines(family, rule, queue) {
            s.push_str(&line);
            s.push('\n');
        }
    }
    s.push_str("COMMIT\n");
    s
}

/// The `-A` lines one rule makes for `family`: one per protocol, remote prefix and port range
/// (x_tables matches one of each per rule); none if its prefixes are all of the other family.
fn rule_lines(family: Family, rule: &Rule, queue: u16) -> Vec<String> {
    let chain = match rule.direction {
        Direction::In => CHAIN_IN,
        Direction::Out => CHAIN_OUT,
    };
    let (remote_flag, local_port_flag, remote_port_flag) = match rule.direction {
        Direction::Out => ("-d", "--sport", "--dport"),
        Direction::In => ("-s", "--dport", "--sport"),
    };
    let prefixes: Vec<Option<&Prefix>> = if rule.remote.is_empty() {
        vec![None]
    } else {
        let mine: Vec<_> = rule.remote.iter().filter(|p| family.holds(p)).collect();
        if mine.is_empty() {
            return Vec::new();
        }
        mine.into_iter().map(Some).collect()
    };
    let protos = match rule.proto {
        Some(p) => vec![p],
        None => vec![Proto::Tcp, Proto::Udp],
    };
    let ports = |ranges: &[PortRange]| -> Vec<Option<PortRange>> {
        match ranges.is_empty() {
            true => vec![None],
            false => ranges.iter().copied().map(Some).collect(),
        }
    };
    let mut lines = Vec::new();
    for proto in &protos {
        for prefix in &prefixes {
            for local in ports(&rule.local_ports) {
                for remote in ports(&rule.remote_ports) {
                    let mut l = format!("-A {chain} -p {}", proto.name());
                    if let Some(p) = prefix {
                        let max = if p.addr.is_ipv4() { 32 } else { 128 };
                        let _ = write!(l, " {remote_flag} {}/{}", p.addr, p.len.min(max));
                    }
                    if let Some(r) = local {
                        let _ = write!(l, " {local_port_flag} {}:{}", r.lo, r.hi);
                    }
                    if let Some(r) = remote {
                        let _ = write!(l, " {remote_port_flag} {}:{}", r.lo, r.hi);
                    }
                    // x_tables' owner match works only where packets leave; arriving packets of a
                    // user's link are checked against their socket's owner in user space.
                    if rule.direction == Direction::Out
                        && (rule.uid.is_some() || rule.gid.is_some())
                    {
                        l.push_str(" -m owner");
                        if let Some(u) = rule.uid {
                            let _ = write!(l, " --uid-owner {u}");
                        }
                        if let Some(g) = rule.gid {
                            let _ = write!(l, " --gid-owner {g}");
                        }
                    }
                    // Likewise the cgroup match (xt_cgroup reads the leaving packet's socket); an
                    // arriving packet's socket is looked up in user space (sock_diag).
                    if let (Direction::Out, Some(c)) = (rule.direction, &rule.cgroup) {
                        let _ = write!(l, " -m cgroup --path {}", c.path);
                    }
                    let _ = write!(l, " -j NFQUEUE --queue-num {queue} --queue-bypass");
                    lines.push(l);
                }
            }
        }
    }
    lines
}

/// How many iptables rules `rule` makes over both families (`rule_lines`), counted without
/// writing them: what a user's `kernel_rules` limits count.
pub fn lines(rule: &Rule) -> usize {
    let protos = if rule.proto.is_some() { 1 } else { 2 };
    let nets = match rule.remote.len() {
        0 => Family::ALL.len(),
        n => n,
    };
    let ports = |r: &[PortRange]| r.len().max(1);
    [nets, ports(&rule.local_ports), ports(&rule.remote_ports)]
        .into_iter()
        .fold(protos, usize::saturating_mul)
}

/// Why the kernel's rules could not be changed.
#[derive(Debug, thiserror::Error)]
#[error("{what}: {why}")]
pub struct KernelError {
    what: String,
    why: String,
}

impl KernelError {
    /// An error of running `what`, for tests of what uses the rules.
    #[cfg(test)]
    pub(crate) fn new(what: &str, why: &str) -> KernelError {
        KernelError {
            what: what.to_string(),
            why: why.to_string(),
        }
    }
}

/// Replaces netloom's chains with `rules` in both families and makes sure each is jumped to.
pub fn install(rules: &[Rule], queues: Queues) -> Result<(), KernelError> {
    for family in Family::ALL {
        let script = restore_script(family, rules, queues);
        run_with_input(family.restore(), &["-w", "--noflush"], &script)?;
        for (hook, chain) in [("INPUT", CHAIN_IN), ("OUTPUT", CHAIN_OUT)] {
            let jump = ["-w", "-t", "mangle", "-C", hook, "-j", chain];
            if run(family.tool(), &jump).is_err() {
                run(
                    family.tool(),
                    &["-w", "-t", "mangle", "-I", hook, "1", "-j", chain],
                )?;
            }
        }
    }
    Ok(())
}

/// Removes the jumps and netloom's chains from both families; true if anything was there.
/// Touches nothing else.
pub fn remove() -> bool {
    let mut removed = false;
    for family in Family::ALL {
        for (hook, chain) in [("INPUT", CHAIN_IN), ("OUTPUT", CHAIN_OUT)] {
            while run(
                family.tool(),
                &["-w", "-t", "mangle", "-D", hook, "-j", chain],
            )
            .is_ok()
            {
                removed = true;
            }
        }
        for chain in [CHAIN_IN, CHAIN_OUT] {
            if run(family.tool(), &["-w", "-t", "mangle", "-F", chain]).is_ok() {
                removed = true;
                let _ = run(family.tool(), &["-w", "-t", "mangle", "-X", chain]);
            }
        }
    }
    removed
}

fn run(tool: &str, args: &[&str]) -> Result<(), KernelError> {
    run_with_input(tool, args, "")
}

fn run_with_input(tool: &str, args: &[&str], input: &str) -> Result<(), KernelError> {
    let what = format!("{tool} {}", args.join(" "));
    let error = |why: String| KernelError {
        what: what.clone(),
        why,
    };
    let mut child = Command::new(tool)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            error(format!(
                "{e}; netloom shape needs {tool} (Debian package iptables)"
            ))
        })?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(input.as_bytes())
            .map_err(|e| error(e.to_string()))?;
    }
    let out = child.wait_with_output().map_err(|e| error(e.to_string()))?;
    if !out.status.success() {
        return Err(error(
            String::from_utf8_lossy(&out.stderr).trim().to_string(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classifier::Rule;
    use crate::spec::{LinkSpec, Pipes};

    const NINE: Queues = Queues {
        header: 9,
        whole: 10,
    };

    fn rules(words: &str) -> Vec<Rule> {
        let words: Vec<&str> = words.split_whitespace().collect();
        let spec = LinkSpec::parse(&words, &[]).expect("valid");
        let dirs = match spec.pipes {
            Pipes::Shared(_) => vec![Direction::In, Direction::Out],
            Pipes::Split { inbound, outbound } => {
                let mut d = Vec::new();
                if inbound.is_some() {
                    d.push(Direction::In);
                }
                if outbound.is_some() {
                    d.push(Direction::Out);
                }
                d
            }
        };
        Rule::from_selector(&spec.selector, 1, &dirs)
    }

    #[test]
    fn a_client_link_queues_replies_from_its_servers_and_requests_to_them() {
        let r = rules("client 18080@127.0.0.1 proto=tcp IN delay=20ms OUT delay=20ms");
        let v4 = restore_script(Family::V4, &r, NINE);
        assert_eq!(
            v4,
            "*mangle\n:NETLOOM-SHAPE-IN - [0:0]\n:NETLOOM-SHAPE-OUT - [0:0]\n\
             -A NETLOOM-SHAPE-IN -m mark --mark 0x6e6c0001 -j RETURN\n\
             -A NETLOOM-SHAPE-OUT -m mark --mark 0x6e6c0001 -j RETURN\n\
             -A NETLOOM-SHAPE-IN -p tcp -s 127.0.0.1/32 --sport 18080:18080 -j NFQUEUE --queue-num 9 --queue-bypass\n\
             -A NETLOOM-SHAPE-OUT -p tcp -d 127.0.0.1/32 --dport 18080:18080 -j NFQUEUE --queue-num 9 --queue-bypass\n\
             COMMIT\n"
        );
        // An IPv4 peer makes no IPv6 rule: the IPv6 chains have only the duplicates' rules.
        assert_eq!(
            restore_script(Family::V6, &r, NINE).matches("-A ").count(),
            2
        );
    }

    #[test]
    fn a_server_without_protocol_makes_tcp_and_udp_rules_per_port_range_and_owner() {
        let r = rules("server 80,8000-8099 uid=1000 OUT bw=1Mbit");
        let lines = rule_lines(Family::V6, &r[0], 9);
        assert_eq!(lines.len(), 4, "{lines:?}");
        assert_eq!(
            lines[1],
            "-A NETLOOM-SHAPE-OUT -p tcp --sport 8000:8099 -m owner --uid-owner 1000 -j NFQUEUE --queue-num 9 --queue-bypass"
        );
        assert!(lines[2].contains("-p udp --sport 80:80"));
    }

    #[test]
    fn lines_counts_the_rules_both_families_make_without_writing_them() {
        for words in [
            "client 18080@127.0.0.1 proto=tcp IN delay=20ms OUT delay=20ms",
            "server 80,8000-8099 uid=1000 OUT bw=1Mbit",
            "service 1,2,3@10.0.0.0/8,::1,192.0.2.0/24 SHARED delay=1ms",
            "server 5 IN delay=1ms",
        ] {
            for rule in rules(words) {
                let written: usize = Family::ALL
                    .iter()
                    .map(|&f| rule_lines(f, &rule, 9).len())
                    .sum();
                assert_eq!(lines(&rule), written, "{words}");
            }
        }
    }

    #[test]
    fn a_cgroup_owner_is_matched_by_the_kernel_on_leaving_packets_only() {
        let mut r = rules("server 80 proto=tcp IN delay=1ms OUT delay=1ms");
        for rule in &mut r {
            rule.cgroup = Some(crate::spec::Cgroup {
                path: "/system.slice/web.service".into(),
                id: 99,
                owner: 0,
            });
        }
        let script = restore_script(Family::V4, &r, NINE);
        assert!(script.contains(
            "-A NETLOOM-SHAPE-OUT -p tcp --sport 80:80 -m cgroup --path /system.slice/web.service -j NFQUEUE"
        ), "{script}");
        assert!(
            script.contains("-A NETLOOM-SHAPE-IN -p tcp --dport 80:80 -j NFQUEUE"),
            "{script}"
        );
    }

    #[test]
    fn rules_of_pipes_that_mark_ce_send_their_packets_to_the_whole_copy_queue() {
        let mut r = rules("server 80 proto=tcp IN delay=1ms OUT delay=1ms");
        r[1].whole = true;
        let script = restore_script(Family::V4, &r, NINE);
        assert!(
            script.contains("-A NETLOOM-SHAPE-IN -p tcp --dport 80:80 -j NFQUEUE --queue-num 9 ")
                && script.contains(
                    "-A NETLOOM-SHAPE-OUT -p tcp --sport 80:80 -j NFQUEUE --queue-num 10 "
                ),
            "{script}"
        );
    }
}
