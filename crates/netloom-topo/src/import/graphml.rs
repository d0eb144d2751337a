//! GraphML reader: the Topology Zoo's files and the ones `convert` writes. Keys (`<key>`) map
//! `<data>` to attribute names, including `<default>` values; `attr` says what they mean.
//! Nodes are named by their `label` (else their id); parallel edges stay parallel links.

use super::attr::{self, Attrs};
use super::graph::{Edges, Graph, Names};
use super::xml;
use crate::error::{ErrorKind, TopoError};
use roxmltree::Node as XmlNode;
use std::collections::{HashMap, HashSet};

/// A declared `<key>`: the attribute it names, what it is for, and its default.
struct Key {
    name: String,
    domain: String,
    default: Option<String>,
}

pub(crate) fn read(text: &str, label: &str) -> Result<Graph, TopoError> {
    let doc = xml::parse(text, label)?;
    let root = doc.root_element();
    if root.tag_name().name() != "graphml" {
        return Err(xml::error(
            label,
            root,
            &format!("<{}>", root.tag_name().name()),
            ErrorKind::Syntax,
            "is not GraphML: the root element must be <graphml>".into(),
        ));
    }
    let mut keys: HashMap<&str, Key> = HashMap::new();
    // Every declared key id, including keys without an attribute name.
    let declared: HashSet<&str> = xml::children(root, "key")
        .filter_map(|k| k.attribute("id"))
        .collect();
    for k in xml::children(root, "key") {
        let (Some(id), Some(name)) = (k.attribute("id"), k.attribute("attr.name")) else {
            // Keys without an attribute name (yEd's graphics) carry nothing netloom reads.
            continue;
        };
        let default = xml::children(k, "default")
            .next()
            .map(|d| d.text().unwrap_or("").to_string());
        keys.insert(
            id,
            Key {
                name: name.to_string(),
                domain: k.attribute("for").unwrap_or("all").to_string(),
                default,
            },
        );
    }
    let Some(g) = xml::children(root, "graph").next() else {
        return Err(xml::error(
            label,
            root,
            "<graphml>",
            ErrorKind::Missing,
            "has no <graph> element".into(),
        ));
    };
    let attrs_of = |el: XmlNode, domain: &str, subject: &str| -> Result<Attrs, TopoError> {
        let mut attrs = Attrs::new();
        for d in xml::children(el, "data") {
            let Some(id) = d.attribute("key") else {
                return Err(xml::error(
                    label,
                    d,
                    subject,
                    ErrorKind::Missing,
                    "a <data> element has no key attribute".into(),
                ));
            };
            let Some(key) = keys.get(id) else {
                if declared.contains(id) {
                    continue;
                }
                return Err(xml::error(
                    label,
                    d,
                    subject,
                    ErrorKind::UnknownName,
                    format!("<data key=\"{id}\"> names no <key>; declare it with <key id=\"{id}\" attr.name=\"...\">"),
                ));
            };
            attrs.push((key.name.clone(), d.text().unwrap_or("").to_string()));
        }
        for key in keys.values() {
            if let Some(default) = &key.default {
                let applies = key.domain == domain || key.domain == "all";
                if applies && !attrs.iter().any(|(k, _)| *k == key.name) {
                    attrs.push((key.name.clone(), default.clone()));
                }
            }
        }
        Ok(attrs)
    };

    let mut graph = Graph::default();
    let meta = attrs_of(g, "graph", "<graph>")?;
    let find = |name: &str| meta.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
    graph.name = find("name")
        .or_else(|| find("Network"))
        .or_else(|| find("label"));
    graph.routing = find("routing");

    let mut ids: HashMap<&str, usize> = HashMap::new();
    let mut names = Names::default();
    for (i, n) in xml::children(g, "node").enumerate() {
        let Some(id) = n.attribute("id") else {
            return Err(xml::error(
                label,
                n,
                &format!("node #{}", i + 1),
                ErrorKind::Missing,
                "has no id attribute".into(),
            ));
        };
        let subject = format!("node #{} (id=\"{id}\")", i + 1);
        if ids.insert(id, graph.nodes.len()).is_some() {
            return Err(xml::error(
                label,
                n,
                &subject,
                ErrorKind::Duplicate,
                format!("id \"{id}\" is used by an earlier node; node ids must be unique"),
            ));
        }
        let attrs = attrs_of(n, "node", &subject)?;
        let info = attr::node(&attrs)
            .map_err(|e| xml::error(label, n, &subject, ErrorKind::BadValue, e.to_string()))?;
        let wanted = attrs
            .iter()
            .find(|(k, _)| k == "label")
            .map_or(id, |(_, v)| v.as_str());
        graph.add_node(names.claim(wanted), info);
    }

    let directed = g.attribute("edgedefault") == Some("directed");
    let mut edges = Edges::new(directed);
    for (i, e) in xml::children(g, "edge").enumerate() {
        let end = |which: &str| e.attribute(which).unwrap_or("");
        let subject = format!(
            "edge #{} (source=\"{}\" target=\"{}\")",
            i + 1,
            end("source"),
            end("target")
        );
        let node_of = |which: &str| {
            let id = end(which);
            ids.get(id).copied().ok_or_else(|| {
                let message = if e.attribute(which).is_none() {
                    format!("has no {which} attribute")
                } else {
                    format!("{which} \"{id}\" is not a node")
                };
                xml::error(label, e, &subject, ErrorKind::UnknownName, message)
            })
        };
        let (a, b) = (node_of("source")?, node_of("target")?);
        let info = attr::edge(&attrs_of(e, "edge", &subject)?)
            .map_err(|m| xml::error(label, e, &subject, ErrorKind::BadValue, m.to_string()))?;
        edges.add(
            &mut graph,
            a,
            b,
            info,
            e.attribute("id").unwrap_or("").to_string(),
        );
    }
    edges.finish(&mut graph);
    let hyperedges = xml::children(g, "hyperedge").count();
    if hyperedges > 0 {
        graph.notes.push(format!(
            "{hyperedges} <hyperedge> element(s) were left out (not supported)"
        ));
    }
    Ok(graph)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = r#"<?xml version="1.0"?>
<graphml xmlns="http://graphml.graphdrawing.org/xmlns">
  <key attr.name="label" attr.type="string" for="node" id="d0"/>
  <key attr.name="LinkSpeedRaw" attr.type="double" for="edge" id="d1"/>
  <key attr.name="Latitude" attr.type="double" for="node" id="d2"/>
  <key attr.name="Longitude" attr.type="double" for="node" id="d3"/>
  <key attr.name="LinkLabel" attr.type="string" for="edge" id="d4">
    <default>unknown</default>
  </key>
"#;

    fn doc(body: &str) -> String {
        format!("{HEAD}  <graph edgedefault=\"undirected\">\n{body}  </graph>\n</graphml>\n")
    }

    #[test]
    fn reads_labels_coordinates_speeds_and_parallel_edges() {
        let text = doc(
            r#"    <node id="0"><data key="d0">Paris</data><data key="d2">48.85</data><data key="d3">2.35</data></node>
    <node id="1"><data key="d0">Paris</data></node>
    <edge source="0" target="1"><data key="d1">1e9</data></edge>
    <edge source="0" target="1"/>
"#,
        );
        let g = read(&text, "t.graphml").unwrap();
        assert_eq!(g.nodes[0].name, "Paris");
        assert_eq!(g.nodes[1].name, "Paris-2");
        assert!(g.nodes[0].position.is_some() && g.nodes[1].position.is_none());
        assert_eq!(g.links.len(), 2);
        assert_eq!(g.links[0].params.bw.as_deref(), Some("1Gbit"));
        assert_eq!(g.links[1].params.bw, None);
    }

    #[test]
    fn errors_name_the_element_and_its_line() {
        let text = doc("    <node id=\"n3\"/>\n    <edge source=\"n3\" target=\"n99\"/>\n");
        let err = read(&text, "zoo.graphml").unwrap_err().to_string();
        assert_eq!(
            err,
            "zoo.graphml:12: edge #1 (source=\"n3\" target=\"n99\"): target \"n99\" is not a node"
        );
        let text = doc("    <node id=\"a\"><data key=\"d2\">north</data></node>\n");
        let err = read(&text, "z.graphml").unwrap_err().to_string();
        assert!(
            err.contains("node #1 (id=\"a\"): Latitude = \"north\""),
            "{err}"
        );
        let err = read("<graphml><graph>", "z.graphml")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("z.graphml:1: invalid XML"), "{err}");
        let err = read("<graph/>", "z.graphml").unwrap_err().to_string();
        assert!(err.contains("root element must be <graphml>"), "{err}");
        let text = doc("    <node id=\"a\"><data key=\"zz\">1</data></node>\n");
        let err = read(&text, "z.graphml").unwrap_err().to_string();
        assert!(err.contains("<data key=\"zz\"> names no <key>"), "{err}");
    }
}
