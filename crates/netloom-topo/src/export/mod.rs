//! Exports for viewing and for other tools: Graphviz DOT and GraphML, each link with its
//! parameters (after defaults and classes) as attributes, optionally coloured by the core that
//! owns each pipe. The GraphML reads back through `import` without loss.

mod dot;
mod graphml;

pub use dot::to_dot;
pub use graphml::to_graphml;

use crate::doc::{LinkEntry, LinkParams, NodeEntry, TopologyFile};
use crate::import::params;
use crate::import::Assignment;
use std::collections::BTreeMap;

/// Each link with `[defaults]` and its class folded into its own keys, so that an exported
/// link shows every parameter it has; `a_to_b` / `b_to_a` stay as they are.
fn effective_links(file: &TopologyFile) -> Vec<LinkEntry> {
    let defaults = file.defaults.clone().unwrap_or_default();
    file.links
        .iter()
        .map(|l| {
            let class = l
                .class
                .as_ref()
                .and_then(|c| file.classes.get(c))
                .cloned()
                .unwrap_or_default();
            LinkEntry {
                params: params::layer(&params::layer(&defaults, &class), &l.params),
                ..l.clone()
            }
        })
        .collect()
}

/// Every node as `(name, is_host, group)`, hosts first, in file order.
fn nodes(file: &TopologyFile) -> Vec<(&str, bool, Option<&str>)> {
    file.hosts
        .iter()
        .map(|e| (e, true))
        .chain(file.routers.iter().map(|e| (e, false)))
        .map(|(e, host)| match e {
            NodeEntry::Name(n) => (n.as_str(), host, None),
            NodeEntry::Full(t) => (t.name.as_str(), host, t.group.as_deref()),
        })
        .collect()
}

/// The core each node is drawn in: the one that owns most of the pipes leaving it (the lower
/// core on a tie); nodes with no assigned pipe have none.
fn node_cores(assignment: &Assignment) -> BTreeMap<String, usize> {
    let mut counts: BTreeMap<&str, BTreeMap<usize, usize>> = BTreeMap::new();
    for p in &assignment.pipes {
        *counts
            .entry(&p.from)
            .or_default()
            .entry(p.core)
            .or_default() += 1;
    }
    counts
        .into_iter()
        .filter_map(|(node, cores)| {
            let best = cores
                .iter()
                .max_by_key(|(core, n)| (**n, std::cmp::Reverse(**core)))?;
            Some((node.to_string(), *best.0))
        })
        .collect()
}

/// Colours for cores, distinguishable and readable on white (Graphviz names).
const PALETTE: [&str; 12] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf", "#393b79", "#637939",
];

fn colour(core: usize) -> &'static str {
    PALETTE[core % PALETTE.len()]
}

/// Flat `(name, text)` pairs of a link: class, shared, its parameters and its directions.
fn link_attrs(l: &LinkEntry) -> Vec<(String, String)> {
    let mut out = Vec::new();
    if let Some(c) = &l.class {
        out.push(("class".to_string(), c.clone()));
    }
    if let Some(s) = l.shared {
        out.push(("shared".to_string(), s.to_string()));
    }
    out.extend(params::flatten(&l.params, ""));
    let empty = LinkParams::default();
    for (prefix, dir) in [("a_to_b.", &l.a_to_b), ("b_to_a.", &l.b_to_a)] {
        out.extend(params::flatten(dir.as_ref().unwrap_or(&empty), prefix));
    }
    out
}
