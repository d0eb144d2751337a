//! Hosts' addresses and CPU limits: `[topology] addresses` and a host table's `ipv4` and `cpu`,
//! checked into `Topology::addresses`, `Node::ipv4` and `Node::cpu`.

use crate::doc::{NodeEntry, TopologyFile};
use crate::error::{ErrorKind, Issue, Seg, Subject};
use crate::layer::key_path;
use crate::model::{NodeId, NodeKind, Topology};
use crate::shown;
use netloom_os::AddressPlan;
use std::collections::HashMap;
use std::net::Ipv4Addr;

/// The smallest CPU limit: Linux's smallest CFS quota, 1 ms, in the 100 ms period netloom uses.
pub const MIN_CPU: f64 = 0.01;
/// The largest CPU limit: more CPUs than any machine netloom runs on has; a limit above the
/// machine's CPUs limits nothing.
pub const MAX_CPU: f64 = 1024.0;

/// Resolves the address plan and every host's own address and CPU limit into `topo` (nodes
/// already made); problems go to `issues`, at the key that causes them, naming the node.
pub(crate) fn resolve(file: &TopologyFile, topo: &mut Topology, issues: &mut Vec<Issue>) {
    let mut push = |path: Vec<Seg>, subject: Subject, message: String| {
        issues.push(Issue {
            kind: ErrorKind::BadValue,
            path,
            subject,
            message,
        })
    };
    let given = file.topology.as_ref().and_then(|m| m.addresses.as_deref());
    if let Some(text) = given {
        match text.parse::<AddressPlan>() {
            Ok(plan) => topo.addresses = plan,
            Err(err) => push(
                key_path(&[], &["topology", "addresses"]),
                Subject::Text("[topology]".into()),
                format!("addresses {:?}: {err}", shown(text)),
            ),
        }
    }
    // Where each node's own `ipv4` was written, for the clash check below.
    let mut own_at: HashMap<NodeId, Vec<Seg>> = HashMap::new();
    for (key, entries) in [("hosts", &file.hosts), ("routers", &file.routers)] {
        for (i, entry) in entries.iter().enumerate() {
            let NodeEntry::Full(table) = entry else {
                continue;
            };
            let Some(id) = topo.node_id(&table.name) else {
                continue;
            };
            let kind = topo.node(id).kind;
            let path = vec![Seg::Key(key.into()), Seg::Index(i)];
            let word = match kind {
                NodeKind::Host => "host",
                NodeKind::Router => "router",
            };
            let subject = Subject::Text(format!("{word} {}", shown(&table.name)));
            if kind == NodeKind::Router {
                for (k, set) in [("ipv4", table.ipv4.is_some()), ("cpu", table.cpu.is_some())] {
                    if set {
                        push(
                            key_path(&path, &[k]),
                            subject.clone(),
                            format!(
                                "`{k}` applies to hosts only: {}",
                                if k == "ipv4" {
                                    "routers take theirs from the address plan, from the top of its range down"
                                } else {
                                    "a router runs no programs of its own"
                                }
                            ),
                        );
                    }
                }
                continue;
            }
            if let Some(cpu) = table.cpu {
                if cpu.is_finite() && (MIN_CPU..=MAX_CPU).contains(&cpu) {
                    topo.nodes[id as usize].cpu = Some(cpu);
                } else {
                    push(
                        key_path(&path, &["cpu"]),
                        subject.clone(),
                        format!(
                            "cpu = {cpu} is out of range; give the CPUs its programs may use, \
                             from {MIN_CPU} (Linux's smallest quota) to {MAX_CPU}, like 0.25 for \
                             a quarter of one CPU"
                        ),
                    );
                }
            }
            let Some(text) = &table.ipv4 else {
                continue;
            };
            match own_address(text, &topo.addresses) {
                Ok(addr) => {
                    topo.nodes[id as usize].ipv4 = Some(addr);
                    own_at.insert(id, key_path(&path, &["ipv4"]));
                }
                Err(message) => push(key_path(&path, &["ipv4"]), subject, message),
            }
        }
    }
    check_room_and_clashes(topo, given.is_some(), &own_at, &mut push);
}

/// A host's `ipv4`, checked: an address, not reserved, inside `plan`.
fn own_address(text: &str, plan: &AddressPlan) -> Result<Ipv4Addr, String> {
    let addr: Ipv4Addr = match text.trim().parse() {
        Ok(addr) => addr,
        Err(_) => {
            let advice = match text.split_once('/') {
                Some((addr, _)) if addr.parse::<Ipv4Addr>().is_ok() => format!(
                    "write the address alone, ipv4 = {:?}: every host's prefix length is that of \
                     [topology] addresses ({plan})",
                    shown(addr)
                ),
                _ => "write an IPv4 address like \"10.0.0.7\"".to_string(),
            };
            return Err(format!(
                "ipv4 {:?} is not an IPv4 address; {advice}",
                shown(text)
            ));
        }
    };
    if let Some(what) = AddressPlan::reserved(addr) {
        return Err(format!("ipv4 {addr} is in {what}, which hosts cannot use"));
    }
    if !plan.contains(addr) {
        return Err(format!(
            "ipv4 {addr} is outside the address plan {plan} (or is its network or broadcast \
             address); choose an address inside it, or set [topology] addresses to a range that \
             holds {addr}"
        ));
    }
    Ok(addr)
}

/// The plan has room for every host and router, and no two nodes share an address. Only when
/// the topology chose its addresses (a range or a host's own): netloom's default plan is checked
/// by a live run, since `sim` runs topologies larger than any plan.
fn check_room_and_clashes(
    topo: &Topology,
    range_given: bool,
    own_at: &HashMap<NodeId, Vec<Seg>>,
    push: &mut impl FnMut(Vec<Seg>, Subject, String),
) {
    if !range_given && own_at.is_empty() {
        return;
    }
    let routers = topo.nodes.len() - topo.hosts.len();
    let plan = topo.addresses;
    if topo.nodes.len() > plan.capacity() {
        if range_given {
            push(
                key_path(&[], &["topology", "addresses"]),
                Subject::Text("[topology]".into()),
                format!(
                    "addresses {plan} has room for {} hosts and routers, and the topology has {} \
                     hosts and {routers} routers; give a shorter prefix",
                    plan.capacity(),
                    topo.hosts.len()
                ),
            );
        }
        // Past the plan's end nothing can be numbered; a live run refuses it.
        return;
    }
    let mut taken: HashMap<Ipv4Addr, NodeId> = HashMap::new();
    let hosts = (0..topo.hosts.len()).map(|i| (topo.hosts[i], topo.host_address(i).0));
    let router_ids =
        (0..topo.nodes.len() as NodeId).filter(|&n| topo.node(n).kind == NodeKind::Router);
    let routers = router_ids
        .enumerate()
        .map(|(j, n)| (n, topo.router_address(j).0));
    for (node, addr) in hosts.chain(routers) {
        let Some(&first) = taken.get(&addr) else {
            taken.insert(addr, node);
            continue;
        };
        // Reported at the own address that made the clash (a plan's address cannot meet
        // another plan address within the capacity).
        let (at, other) = if own_at.contains_key(&node) {
            (node, first)
        } else {
            (first, node)
        };
        let describe = |n: NodeId| {
            let how = if own_at.contains_key(&n) {
                "its own ipv4"
            } else {
                "the plan's for its place"
            };
            let kind = match topo.node(n).kind {
                NodeKind::Host => "host",
                NodeKind::Router => "router",
            };
            format!("{kind} {}'s too ({how})", shown(&topo.node(n).name))
        };
        push(
            own_at[&at].clone(),
            Subject::Text(format!("host {}", shown(&topo.node(at).name))),
            format!(
                "address {addr} is {}; every host and router needs its own, so give one \
                 of them another",
                describe(other)
            ),
        );
    }
}
