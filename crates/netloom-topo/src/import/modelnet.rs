//! ModelNet's XML: the `.graph` (gateway and virtnode vertices; one-way edges with a `specs`
//! class and `dbl_kbps`, `int_delayms`, `dbl_plr`, `int_qlen` overrides) and the `.model`'s
//! emulator per hop, which becomes the core of each pipe (`CoreMap`). Gateways are routers `r<idx>`, virtnodes
//! are hosts `vn<int_vn>`; each spec is a class.

use super::assignment::{pipe_ids, CoreMap};
use super::graph::{pair_directed, Graph, Names, Node, OneWay, Placed};
use super::{fail, xml};
use crate::doc::{Fraction, LinkParams, LossSpec, QueueSpec, TopologyFile};
use crate::error::{ErrorKind, TopoError};
use crate::model::Direction;
use crate::units;
use roxmltree::Node as XmlNode;
use std::collections::HashMap;

pub(crate) fn read_graph(text: &str, label: &str) -> Result<Graph, TopoError> {
    let doc = xml::parse(text, label)?;
    let root = doc.root_element();
    if root.tag_name().name() != "topology" {
        return Err(xml::error(
            label,
            root,
            &format!("<{}>", root.tag_name().name()),
            ErrorKind::Syntax,
            "is not a ModelNet graph: the root element must be <topology>".into(),
        ));
    }
    let mut graph = Graph::default();
    for specs in xml::children(root, "specs") {
        for spec in specs.children().filter(XmlNode::is_element) {
            let class = spec.tag_name().name().to_string();
            let subject = format!("spec <{class}>");
            graph.classes.insert(class, params(label, spec, &subject)?);
        }
    }

    let mut ids: HashMap<&str, usize> = HashMap::new();
    let mut names = Names::default();
    let vertices = xml::children(root, "vertices").flat_map(|v| xml::children(v, "vertex"));
    for (i, v) in vertices.enumerate() {
        let idx = v.attribute("int_idx").unwrap_or("");
        let subject = format!("vertex #{} (int_idx=\"{idx}\")", i + 1);
        let err = |kind, message| xml::error(label, v, &subject, kind, message);
        if idx.is_empty() {
            return Err(err(ErrorKind::Missing, "has no int_idx attribute".into()));
        }
        let (host, wanted) =
            match v.attribute("role") {
                Some("gateway") => (false, format!("r{idx}")),
                Some("virtnode") => (true, format!("vn{}", v.attribute("int_vn").unwrap_or(idx))),
                other => {
                    return Err(err(
                        ErrorKind::BadValue,
                        format!(
                        "role {}; write role=\"gateway\" (a router) or role=\"virtnode\" (a host)",
                        other.map_or("is missing".to_string(), |r| format!("\"{r}\" is not known"))
                    ),
                    ))
                }
            };
        if ids.insert(idx, graph.nodes.len()).is_some() {
            return Err(err(
                ErrorKind::Duplicate,
                format!("int_idx \"{idx}\" is used by an earlier vertex"),
            ));
        }
        graph.nodes.push(Node {
            name: names.claim(&wanted),
            host,
            ..Node::default()
        });
    }

    let mut one_way = Vec::new();
    let edges = xml::children(root, "edges").flat_map(|e| xml::children(e, "edge"));
    for (i, e) in edges.enumerate() {
        let end = |which: &str| e.attribute(which).unwrap_or("");
        let subject = format!(
            "edge #{} (int_src=\"{}\" int_dst=\"{}\")",
            i + 1,
            end("int_src"),
            end("int_dst")
        );
        let err = |kind, message| xml::error(label, e, &subject, kind, message);
        let vertex = |which: &str| {
            ids.get(end(which)).copied().ok_or_else(|| {
                err(
                    ErrorKind::UnknownName,
                    format!("{which} \"{}\" is not a vertex", end(which)),
                )
            })
        };
        let (from, to) = (vertex("int_src")?, vertex("int_dst")?);
        if from == to {
            return Err(err(
                ErrorKind::SelfLoop,
                "int_src and int_dst are the same vertex; an edge joins two vertices".into(),
            ));
        }
        let class = e.attribute("specs").map(str::to_string);
        if let Some(c) = &class {
            if !graph.classes.contains_key(c) {
                let known: Vec<&str> = graph.classes.keys().map(String::as_str).collect();
                return Err(err(
                    ErrorKind::UnknownName,
                    format!(
                        "specs \"{c}\" is not defined under <specs>{}",
                        crate::schema::did_you_mean(c, &known)
                    ),
                ));
            }
        }
        one_way.push(OneWay {
            from,
            to,
            class,
            params: params(label, e, &subject)?,
            id: e
                .attribute("int_idx")
                .map_or_else(|| i.to_string(), str::to_string),
        });
    }
    pair_directed(&mut graph, one_way);
    Ok(graph)
}

/// A spec's or an edge's link parameters from ModelNet's attribute names.
fn params(label: &str, el: XmlNode, subject: &str) -> Result<LinkParams, TopoError> {
    let bad = |name: &str, text: &str, valid: &str| {
        xml::error(
            label,
            el,
            subject,
            ErrorKind::BadValue,
            format!("{name} = \"{text}\" is not {valid}"),
        )
    };
    let mut p = LinkParams::default();
    if let Some(t) = el.attribute("dbl_kbps") {
        let bw = format!("{}kbit", t.trim());
        units::parse_rate(&bw).map_err(|_| bad("dbl_kbps", t, "a positive number of kbit/s"))?;
        p.bw = Some(bw);
    }
    if let Some(t) = el.attribute("int_delayms") {
        let delay = format!("{}ms", t.trim());
        units::parse_duration(&delay)
            .map_err(|_| bad("int_delayms", t, "a number of milliseconds"))?;
        p.delay = Some(delay);
    }
    if let Some(t) = el.attribute("dbl_plr") {
        let loss = t
            .trim()
            .parse::<f64>()
            .ok()
            .map(Fraction::Number)
            .filter(|f| units::parse_fraction(f).is_ok())
            .ok_or_else(|| bad("dbl_plr", t, "a loss probability in [0, 1]"))?;
        p.loss = Some(LossSpec::Simple(loss));
    }
    if let Some(t) = el.attribute("int_qlen") {
        let packets = t
            .trim()
            .parse::<i64>()
            .ok()
            .filter(|&n| n >= 1)
            .ok_or_else(|| bad("int_qlen", t, "a queue length of at least 1 packet"))?;
        p.queue = Some(QueueSpec::Packets(packets));
    }
    Ok(p)
}

/// The `.model`'s hops: which emulator (core) emulates the edge with each `int_idx`.
pub(crate) struct ModelCores {
    cores: Vec<String>,
    /// `(int_idx, core, line)` per hop, in file order.
    hops: Vec<(String, usize, usize)>,
}

/// Reads every `<hop>` of a `.model`. Its emulator is its `emul` attribute or else the
/// `hostname` of the `<emul>` element around it; cores are numbered in order of appearance.
pub(crate) fn read_model(text: &str, label: &str) -> Result<ModelCores, TopoError> {
    let doc = xml::parse(text, label)?;
    let mut model = ModelCores {
        cores: Vec::new(),
        hops: Vec::new(),
    };
    let hops = doc
        .descendants()
        .filter(|n| n.is_element() && n.tag_name().name() == "hop");
    for (i, hop) in hops.enumerate() {
        let idx = hop.attribute("int_idx").unwrap_or("");
        let subject = format!("hop #{} (int_idx=\"{idx}\")", i + 1);
        let emul = hop.attribute("emul").or_else(|| {
            hop.ancestors()
                .find(|a| a.tag_name().name() == "emul")
                .and_then(|a| a.attribute("hostname"))
        });
        let Some(emul) = emul.filter(|_| !idx.is_empty()) else {
            return Err(xml::error(
                label,
                hop,
                &subject,
                ErrorKind::Missing,
                "needs int_idx and an emulator (an emul attribute, or an enclosing \
                 <emul hostname=\"...\">)"
                    .into(),
            ));
        };
        let core = match model.cores.iter().position(|c| c == emul) {
            Some(c) => c,
            None => {
                model.cores.push(emul.to_string());
                model.cores.len() - 1
            }
        };
        model.hops.push((idx.to_string(), core, xml::line(hop)));
    }
    if model.hops.is_empty() {
        return Err(fail(
            label,
            None,
            None,
            ErrorKind::Missing,
            "no <hop> elements: a ModelNet model assigns each hop (edge) to an emulator".into(),
        ));
    }
    Ok(model)
}

/// The core of each pipe of the links made from `edges` (where `pair_directed` put each edge).
pub(crate) fn core_map(
    file: &TopologyFile,
    edges: &[Placed],
    model: &ModelCores,
    label: &str,
) -> Result<CoreMap, TopoError> {
    let ids = pipe_ids(file);
    let total = ids.last().map_or(0, |&(_, ba)| ba as usize + 1);
    let mut pipes = vec![None; total];
    for (i, (idx, core, line)) in model.hops.iter().enumerate() {
        let Some(placed) = edges.iter().find(|p| &p.id == idx) else {
            return Err(fail(
                label,
                Some(*line),
                Some(format!("hop #{} (int_idx=\"{idx}\")", i + 1)),
                ErrorKind::UnknownName,
                "names no edge of the graph".into(),
            ));
        };
        let (ab, ba) = ids[placed.link];
        let pipe = match placed.direction {
            Direction::AtoB => ab,
            Direction::BtoA => ba,
        };
        pipes[pipe as usize] = Some(*core as u32);
    }
    Ok(CoreMap {
        cores: model.cores.clone(),
        pipes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const GRAPH: &str = r#"<?xml version="1.0" encoding="ISO-8859-1"?>
<topology>
  <vertices>
    <vertex int_idx="0" role="gateway" />
    <vertex int_idx="1" role="virtnode" int_vn="0" />
    <vertex int_idx="2" role="virtnode" int_vn="1" />
  </vertices>
  <edges>
    <edge int_src="1" int_dst="0" int_idx="0" specs="client-stub" />
    <edge int_src="0" int_dst="1" int_idx="1" specs="client-stub" dbl_kbps="768" />
    <edge int_src="2" int_dst="0" int_idx="2" specs="client-stub" />
    <edge int_src="0" int_dst="2" int_idx="3" specs="client-stub" />
  </edges>
  <specs xmloutbug="workaround">
    <client-stub dbl_plr="0" dbl_kbps="1000" int_delayms="1" int_qlen="10" />
  </specs>
</topology>
"#;

    #[test]
    fn vertices_edges_and_specs_become_hosts_links_and_classes() {
        let g = read_graph(GRAPH, "t.graph").unwrap();
        let names: Vec<&str> = g.nodes.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(names, ["r0", "vn0", "vn1"]);
        assert_eq!(g.links.len(), 2, "edge pairs become duplex links");
        let spec = &g.classes["client-stub"];
        assert_eq!(spec.bw.as_deref(), Some("1000kbit"));
        assert_eq!(spec.queue, Some(QueueSpec::Packets(10)));
        assert_eq!(
            g.links[0].b_to_a.as_ref().and_then(|p| p.bw.as_deref()),
            Some("768kbit")
        );
    }

    #[test]
    fn a_model_assigns_each_hop_to_its_emulator() {
        let g = read_graph(GRAPH, "t.graph").unwrap();
        let edges = g.directed_edges.clone();
        let file = g
            .into_imported("t.graph", &crate::import::ImportOptions::default())
            .unwrap()
            .file;
        let model = r#"<model><emulators>
  <emul hostname="emu1"><hop int_idx="0"/><hop int_idx="1"/></emul>
  <emul hostname="emu2"><hop int_idx="2"/><hop int_idx="3" emul="emu1"/></emul>
</emulators></model>"#;
        let cores = read_model(model, "t.model").unwrap();
        let map = core_map(&file, &edges, &cores, "t.model").unwrap();
        assert_eq!(map.cores, ["emu1", "emu2"]);
        // Link 0 is vn0-r0 (hops 0 and 1), link 1 is vn1-r0 (hops 2 and 3).
        assert_eq!(map.pipes, [Some(0), Some(0), Some(1), Some(0)]);
        let err = read_model("<model><hop int_idx=\"9\" emul=\"e\"/></model>", "m")
            .map(|c| core_map(&file, &edges, &c, "m"))
            .unwrap()
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "m:1: hop #1 (int_idx=\"9\"): names no edge of the graph"
        );
    }

    #[test]
    fn malformed_graphs_name_the_element() {
        let bad = GRAPH.replace("int_dst=\"2\" int_idx=\"3\"", "int_dst=\"7\" int_idx=\"3\"");
        let err = read_graph(&bad, "t.graph").unwrap_err().to_string();
        assert_eq!(
            err,
            "t.graph:12: edge #4 (int_src=\"0\" int_dst=\"7\"): int_dst \"7\" is not a vertex"
        );
        let bad = GRAPH.replace("int_qlen=\"10\"", "int_qlen=\"ten\"");
        let err = read_graph(&bad, "t.graph").unwrap_err().to_string();
        assert!(
            err.contains("spec <client-stub>: int_qlen = \"ten\""),
            "{err}"
        );
        let bad = GRAPH.replace("role=\"gateway\"", "role=\"switch\"");
        assert!(read_graph(&bad, "t.graph")
            .unwrap_err()
            .to_string()
            .contains("role \"switch\" is not known"));
    }
}
