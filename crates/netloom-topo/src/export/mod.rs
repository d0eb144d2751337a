//! Exports for viewing and for other tools: Graphviz DOT and GraphML, each link with its
//! parameters (after defaults and classes) as attributes, optionally coloured by the core that
//! owns each pipe (a per-pipe core list, as in the partition crate's assignment file). The
//! GraphML reads back through `import` without loss.

mod dot;
mod graphml;

pub use dot::to_dot;
pub use graphml::to_graphml;

use crate::doc::{LinkEntry, LinkParams, NodeEntry, TopologyFile};
use crate::import::params;
use crate::import::pipe_ids;
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

/// A node's coordinates as GraphML attributes (Topology Zoo's `Latitude` and `Longitude`, or
/// `x` and `y`), those it has.
type Coordinates = Vec<(&'static str, f64)>;

/// Every node as `(name, is_host, group, coordinates)`, hosts first, in file order.
fn nodes(file: &TopologyFile) -> Vec<(&str, bool, Option<&str>, Coordinates)> {
    file.hosts
        .iter()
        .map(|e| (e, true))
        .chain(file.routers.iter().map(|e| (e, false)))
        .map(|(e, host)| match e {
            NodeEntry::Name(n) => (n.as_str(), host, None, Vec::new()),
            NodeEntry::Full(t) => {
                let coordinates = [
                    ("Latitude", t.lat),
                    ("Longitude", t.lon),
                    ("x", t.x),
                    ("y", t.y),
                ]
                .into_iter()
                .filter_map(|(k, v)| v.map(|v| (k, v)))
                .collect();
                (t.name.as_str(), host, t.group.as_deref(), coordinates)
            }
        })
        .collect()
}

/// Per link, the cores of its a→b and b→a pipes; `cores[p]` is the core of pipe `p` as
/// `pipe_ids` numbers them (the partition crate's assignment file lists them so).
fn link_cores(file: &TopologyFile, cores: &[u32]) -> Vec<(Option<u32>, Option<u32>)> {
    let core = |p: u32| cores.get(p as usize).copied();
    pipe_ids(file)
        .into_iter()
        .map(|(ab, ba)| (core(ab), core(ba)))
        .collect()
}

/// The core each node is drawn in: the one that owns most of the pipes leaving it (the lower
/// core on a tie).
fn node_cores(file: &TopologyFile, cores: &[u32]) -> BTreeMap<String, u32> {
    let mut counts: BTreeMap<&str, BTreeMap<u32, usize>> = BTreeMap::new();
    for (l, (ab, ba)) in file.links.iter().zip(link_cores(file, cores)) {
        for (node, core) in [(&l.a, ab), (&l.b, ba)] {
            if let Some(c) = core {
                *counts.entry(node).or_default().entry(c).or_default() += 1;
            }
        }
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

fn colour(core: u32) -> &'static str {
    PALETTE[core as usize % PALETTE.len()]
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
