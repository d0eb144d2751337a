//! Graphviz DOT: hosts as boxes, routers as ellipses, each link an undirected edge labelled
//! with its rate and delay and carrying every parameter as an attribute. With the core of each
//! pipe, nodes are filled with their core's colour and each link drawn in its pipes' colours.

use super::{colour, effective_links, link_attrs, link_cores, node_cores, nodes};
use crate::doc::TopologyFile;
use std::fmt::Write;

/// A DOT identifier: always quoted, with `"` and `\` escaped.
fn id(text: &str) -> String {
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}

/// The topology as a DOT graph named `name`; `cores[p]`, if given, is the core of pipe `p`.
pub fn to_dot(file: &TopologyFile, name: &str, cores: Option<&[u32]>) -> String {
    let mut out = String::new();
    let node_core = cores.map(|c| node_cores(file, c)).unwrap_or_default();
    let links_core = cores.map(|c| link_cores(file, c)).unwrap_or_default();
    // Writing to a String cannot fail.
    let _ = writeln!(out, "graph {} {{", id(name));
    let _ = writeln!(out, "  node [fontsize=10]; edge [fontsize=8];");
    for (node, host, group, _) in nodes(file) {
        let mut attrs = vec![format!("shape={}", if host { "box" } else { "ellipse" })];
        if let Some(g) = group {
            attrs.push(format!("group={}", id(g)));
        }
        if let Some(&core) = node_core.get(node) {
            attrs.push(format!("style=filled, fillcolor={}", id(colour(core))));
            attrs.push(format!("core={core}"));
        }
        let _ = writeln!(out, "  {} [{}];", id(node), attrs.join(", "));
    }
    for (i, l) in effective_links(file).iter().enumerate() {
        let label = [l.params.bw.as_deref(), l.params.delay.as_deref()]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(" ");
        let mut attrs = vec![format!("label={}", id(&label))];
        attrs.extend(
            link_attrs(l)
                .iter()
                .map(|(k, v)| format!("{}={}", id(k), id(v))),
        );
        if let Some(&(ab, ba)) = links_core.get(i) {
            let mut colours: Vec<&str> = [ab, ba].into_iter().flatten().map(colour).collect();
            colours.dedup();
            if !colours.is_empty() {
                attrs.push(format!("color={}, penwidth=2", id(&colours.join(":"))));
            }
        }
        let _ = writeln!(
            out,
            "  {} -- {} [{}];",
            id(&l.a),
            id(&l.b),
            attrs.join(", ")
        );
    }
    out.push_str("}\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_carry_their_parameters_and_cores_their_colours() {
        let file: TopologyFile = toml::from_str(
            r#"hosts = ["h\"1", "h2"]
[classes.c]
bw = "10Mbit"
delay = "1ms"
[[link]]
a = "h\"1"
b = "h2"
class = "c"
b_to_a = { loss = "1%" }
"#,
        )
        .unwrap();
        let dot = to_dot(&file, "t", Some(&[0, 1]));
        assert!(dot.starts_with("graph \"t\" {\n"), "{dot}");
        assert!(
            dot.contains(
                "\"h\\\"1\" -- \"h2\" [label=\"10Mbit 1ms\", \"class\"=\"c\", \"bw\"=\"10Mbit\""
            ),
            "{dot}"
        );
        assert!(dot.contains("\"b_to_a.loss\"=\"1%\""), "{dot}");
        assert!(dot.contains("color=\"#1f77b4:#d62728\""), "{dot}");
        assert!(
            dot.contains("\"h2\" [shape=box, style=filled, fillcolor=\"#d62728\", core=1];"),
            "{dot}"
        );
    }
}
