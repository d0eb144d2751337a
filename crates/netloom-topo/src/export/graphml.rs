//! GraphML writer: nodes with `label`, `kind` (host or router) and `group`; links with every
//! parameter under netloom's names (`bw`, `delay`, `red.min_th`, `a_to_b.bw`, ...), which
//! `import` reads back to the same topology; given the core of each pipe, `core` per node and
//! `core_a_to_b` / `core_b_to_a` per link, for colouring in a viewer.

use super::{effective_links, link_attrs, link_cores, node_cores, nodes};
use crate::doc::TopologyFile;
use std::collections::BTreeMap;
use std::fmt::Write;

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&apos;")
}

/// Data of one element, `(attribute name, text)`.
type Data = Vec<(String, String)>;

/// The topology as GraphML; `name` names the graph unless the document does; `cores[p]`, if
/// given, is the core of pipe `p`.
pub fn to_graphml(file: &TopologyFile, name: &str, cores: Option<&[u32]>) -> String {
    let meta = file.topology.clone().unwrap_or_default();
    let mut graph: Data = vec![("name".into(), meta.name.unwrap_or_else(|| name.to_string()))];
    if let Some(r) = meta.routing {
        graph.push(("routing".into(), r));
    }
    let node_core = cores.map(|c| node_cores(file, c)).unwrap_or_default();
    let links_core = cores.map(|c| link_cores(file, c)).unwrap_or_default();
    let node_data: Vec<(&str, Data)> = nodes(file)
        .into_iter()
        .map(|(n, host, group, coordinates)| {
            let mut d: Data = vec![
                ("label".into(), n.to_string()),
                ("kind".into(), if host { "host" } else { "router" }.into()),
            ];
            if let Some(g) = group {
                d.push(("group".into(), g.to_string()));
            }
            if let Some(&c) = node_core.get(n) {
                d.push(("core".into(), c.to_string()));
            }
            d.extend(
                coordinates
                    .into_iter()
                    .map(|(k, v)| (k.into(), v.to_string())),
            );
            (n, d)
        })
        .collect();
    let links = effective_links(file);
    let edge_data: Vec<Data> = links
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let mut d = link_attrs(l);
            if let Some(&(ab, ba)) = links_core.get(i) {
                for (key, core) in [("core_a_to_b", ab), ("core_b_to_a", ba)] {
                    if let Some(c) = core {
                        d.push((key.into(), c.to_string()));
                    }
                }
            }
            d
        })
        .collect();

    // One key per (domain, attribute name), numbered in sorted order so output is stable.
    let mut keys: BTreeMap<(&str, String), String> = BTreeMap::new();
    let domains = [("graph", vec![&graph])]
        .into_iter()
        .chain([("node", node_data.iter().map(|(_, d)| d).collect())])
        .chain([("edge", edge_data.iter().collect())]);
    for (domain, datas) in domains {
        for d in datas {
            for (k, _) in d {
                keys.entry((domain, k.clone())).or_default();
            }
        }
    }
    for (i, id) in keys.values_mut().enumerate() {
        *id = format!("d{i}");
    }

    let mut out = String::new();
    out.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    out.push_str("<graphml xmlns=\"http://graphml.graphdrawing.org/xmlns\">\n");
    for ((domain, name), id) in &keys {
        let _ = writeln!(
            out,
            "  <key id=\"{id}\" for=\"{domain}\" attr.name=\"{}\" attr.type=\"string\"/>",
            escape(name)
        );
    }
    out.push_str("  <graph edgedefault=\"undirected\">\n");
    let data = |out: &mut String, domain: &str, d: &Data, indent: &str| {
        for (k, v) in d {
            let id = &keys[&(domain, k.clone())];
            let _ = writeln!(out, "{indent}<data key=\"{id}\">{}</data>", escape(v));
        }
    };
    data(&mut out, "graph", &graph, "    ");
    for (n, d) in &node_data {
        let _ = writeln!(out, "    <node id=\"{}\">", escape(n));
        data(&mut out, "node", d, "      ");
        out.push_str("    </node>\n");
    }
    for (i, (l, d)) in links.iter().zip(&edge_data).enumerate() {
        let _ = writeln!(
            out,
            "    <edge id=\"e{i}\" source=\"{}\" target=\"{}\">",
            escape(&l.a),
            escape(&l.b)
        );
        data(&mut out, "edge", d, "      ");
        out.push_str("    </edge>\n");
    }
    out.push_str("  </graph>\n</graphml>\n");
    out
}
