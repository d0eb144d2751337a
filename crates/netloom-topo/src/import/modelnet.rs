//! ModelNet's XML as its own tools write it: the `.graph` (`inet2xml`, `hiergen`: vertices of
//! role gateway, transit, stub or virtnode; one-way edges with a `specs` class and `dbl_kbps`,
//! `int_delayms`, `dbl_plr`, `int_qlen` overrides) and the `.model` (`mkmodel`): the emulators,
//! each hop's emulator (`int_emul`), and the parameters ModelNet emulates (the model's `<specs>`
//! under each hop's own attributes), which win over the graph's. Virtnodes are hosts
//! `vn<int_vn>`, other vertices routers `r<idx>`; each spec is a class; each emulator a core.

use super::assignment::{pipe_ids, CoreMap};
use super::graph::{pair_directed, Graph, Names, Node, OneWay, Placed};
use super::{fail, params as layers, xml};
use crate::doc::{Fraction, LinkParams, LossSpec, QueueSpec, TopologyFile};
use crate::error::{ErrorKind, TopoError};
use crate::model::Direction;
use crate::units;
use roxmltree::Node as XmlNode;
use std::collections::{BTreeMap, HashMap};

/// The roles ModelNet's tools give vertices: `virtnode` is a host; `inet2xml` writes `transit`
/// and `gateway` (a transit vertex with virtnodes), `hiergen` `transit` and `stub`. ModelNet
/// itself only asks whether a vertex is a virtnode.
const ROUTER_ROLES: [&str; 3] = ["gateway", "transit", "stub"];

/// A `.graph` as read, before its one-way edges are paired into links: what a `.model` applies to.
pub(crate) struct GraphFile {
    graph: Graph,
    edges: Vec<Edge>,
    rounded: Rounded,
}

/// An `<edge>`: its one direction of a link, and its ends as the file names them.
struct Edge {
    one_way: OneWay,
    src: String,
    dst: String,
}

/// How many values were finer than netloom keeps (a bit/s, a nanosecond) and were rounded.
#[derive(Default)]
struct Rounded {
    kbps: usize,
    delayms: usize,
}

impl Rounded {
    fn note(&self, file: &str) -> Option<String> {
        (self.kbps + self.delayms > 0).then(|| {
            format!(
                "{file}: {} dbl_kbps value(s) finer than a bit/s and {} int_delayms value(s) finer \
                 than a nanosecond were rounded to the nearest (ModelNet truncates them to whole \
                 kbit/s and ms)",
                self.kbps, self.delayms
            )
        })
    }
}

pub(crate) fn read_graph(text: &str, label: &str) -> Result<GraphFile, TopoError> {
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
    let mut rounded = Rounded::default();
    let mut graph = Graph {
        classes: read_specs(root, label, &mut rounded)?,
        ..Graph::default()
    };

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
        let (host, wanted) = match v.attribute("role") {
            Some("virtnode") => (true, format!("vn{}", v.attribute("int_vn").unwrap_or(idx))),
            Some(role) if ROUTER_ROLES.contains(&role) => (false, format!("r{idx}")),
            other => {
                let found = other.map_or("is missing".to_string(), |r| {
                    format!(
                        "\"{r}\" is not known{}",
                        crate::schema::did_you_mean(
                            r,
                            &[&["virtnode"], &ROUTER_ROLES[..]].concat()
                        )
                    )
                });
                return Err(err(
                    ErrorKind::BadValue,
                    format!(
                        "role {found}; ModelNet's roles are virtnode (a host) and {} (routers)",
                        ROUTER_ROLES.join(", ")
                    ),
                ));
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

    let mut edges: Vec<Edge> = Vec::new();
    let mut edge_ids: HashMap<String, usize> = HashMap::new();
    let xml_edges = xml::children(root, "edges").flat_map(|e| xml::children(e, "edge"));
    for (i, e) in xml_edges.enumerate() {
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
                return Err(err(
                    ErrorKind::UnknownName,
                    format!(
                        "specs \"{c}\" is not defined under <specs>{}",
                        did_you_mean_class(c, &graph.classes)
                    ),
                ));
            }
        }
        let id = e
            .attribute("int_idx")
            .map_or_else(|| i.to_string(), str::to_string);
        // A hop of the .model names its edge by this number, as ModelNet's hop table does.
        if edge_ids.insert(id.clone(), edges.len()).is_some() {
            return Err(err(
                ErrorKind::Duplicate,
                format!("int_idx \"{id}\" is used by an earlier edge"),
            ));
        }
        edges.push(Edge {
            one_way: OneWay {
                from,
                to,
                class,
                params: params(label, e, &subject, &mut rounded)?,
                id,
            },
            src: end("int_src").to_string(),
            dst: end("int_dst").to_string(),
        });
    }
    Ok(GraphFile {
        graph,
        edges,
        rounded,
    })
}

impl GraphFile {
    /// The graph with its edges paired into links (`pair_directed`).
    pub(crate) fn finish(self) -> Graph {
        let GraphFile {
            mut graph,
            edges,
            rounded,
        } = self;
        graph.notes.extend(rounded.note("the .graph"));
        pair_directed(&mut graph, edges.into_iter().map(|e| e.one_way).collect());
        graph
    }
}

/// The classes of `<specs>`, one per child element, from ModelNet's attribute names.
fn read_specs(
    root: XmlNode,
    label: &str,
    rounded: &mut Rounded,
) -> Result<BTreeMap<String, LinkParams>, TopoError> {
    let mut classes = BTreeMap::new();
    for specs in xml::children(root, "specs") {
        for spec in specs.children().filter(XmlNode::is_element) {
            let class = spec.tag_name().name().to_string();
            let subject = format!("spec <{class}>");
            classes.insert(class, params(label, spec, &subject, rounded)?);
        }
    }
    Ok(classes)
}

fn did_you_mean_class(class: &str, classes: &BTreeMap<String, LinkParams>) -> String {
    let known: Vec<&str> = classes.keys().map(String::as_str).collect();
    crate::schema::did_you_mean(class, &known)
}

/// A spec's, an edge's or a hop's link parameters from ModelNet's attribute names. Rates and
/// delays finer than a bit/s or a nanosecond (`inet2xml -l` writes delays like
/// "4.11333333333333") are rounded to the nearest, and counted in `rounded`.
fn params(
    label: &str,
    el: XmlNode,
    subject: &str,
    rounded: &mut Rounded,
) -> Result<LinkParams, TopoError> {
    let bad = |name: &str, text: &str, valid: &str| {
        xml::error(
            label,
            el,
            subject,
            ErrorKind::BadValue,
            format!("{name} = \"{text}\" {valid}"),
        )
    };
    let mut p = LinkParams::default();
    if let Some(t) = el.attribute("dbl_kbps") {
        let (bps, inexact) =
            scaled(t, 3).ok_or_else(|| bad("dbl_kbps", t, "is not a number of kbit/s"))?;
        if bps == 0 {
            return Err(bad(
                "dbl_kbps",
                t,
                "is below 1 bit/s; a rate must be positive",
            ));
        }
        rounded.kbps += usize::from(inexact);
        p.bw = Some(exact_or(t, "kbit", inexact, bps, "bit"));
    }
    if let Some(t) = el.attribute("int_delayms") {
        let (ns, inexact) =
            scaled(t, 6).ok_or_else(|| bad("int_delayms", t, "is not a number of milliseconds"))?;
        rounded.delayms += usize::from(inexact);
        let delay = exact_or(t, "ms", inexact, ns, "ns");
        units::parse_duration(&delay).map_err(|e| bad("int_delayms", t, &e.to_string()))?;
        p.delay = Some(delay);
    }
    if let Some(t) = el.attribute("dbl_plr") {
        let loss = t
            .trim()
            .parse::<f64>()
            .ok()
            .map(Fraction::Number)
            .filter(|f| units::parse_fraction(f).is_ok())
            .ok_or_else(|| bad("dbl_plr", t, "is not a loss probability in [0, 1]"))?;
        p.loss = Some(LossSpec::Simple(loss));
    }
    if let Some(t) = el.attribute("int_qlen") {
        let packets = t
            .trim()
            .parse::<i64>()
            .ok()
            .filter(|&n| n >= 1)
            .ok_or_else(|| bad("int_qlen", t, "is not a queue length of at least 1 packet"))?;
        p.queue = Some(QueueSpec::Packets(packets));
    }
    Ok(p)
}

/// The value as the file wrote it in its unit, when that is exact and plain; else the whole
/// number of the finer unit.
fn exact_or(text: &str, unit: &str, inexact: bool, whole: u64, fine: &str) -> String {
    let text = text.trim();
    if inexact || text.contains(['e', 'E', '+']) {
        format!("{whole}{fine}")
    } else {
        format!("{text}{unit}")
    }
}

/// `text`, a number ≥ 0 as Perl prints it ("1500", "4.11333333333333", "1e-05"), times
/// 10^`shift`, rounded half up to a whole number, and whether that changed it. Exact decimal
/// arithmetic: no binary rounding on the way. `None` if it is not such a number or passes u64.
fn scaled(text: &str, shift: i64) -> Option<(u64, bool)> {
    let t = text.trim();
    let t = t.strip_prefix('+').unwrap_or(t);
    let (mantissa, exp) = match t.split_once(['e', 'E']) {
        Some((m, e)) => (m, e.parse::<i64>().ok()?),
        None => (t, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits: Vec<u64> = int
        .bytes()
        .chain(frac.bytes())
        .map(|b| u64::from(b.wrapping_sub(b'0')))
        .collect();
    if digits.is_empty() || digits.iter().any(|&d| d > 9) {
        return None;
    }
    // The decimal point after scaling sits before digits[point] (point may be past either end).
    let point = (int.len() as i64).checked_add(shift)?.checked_add(exp)?;
    let mut whole: u64 = 0;
    for i in 0..point.max(0) {
        let d = usize::try_from(i)
            .ok()
            .and_then(|i| digits.get(i))
            .copied()
            .unwrap_or(0);
        whole = whole.checked_mul(10)?.checked_add(d)?;
        if whole == 0 && i >= digits.len() as i64 {
            break; // only zeros follow
        }
    }
    let rest = usize::try_from(point).map_or(&digits[..], |p| digits.get(p..).unwrap_or(&[]));
    let inexact = rest.iter().any(|&d| d != 0);
    let half_up = point >= 0 && rest.first().is_some_and(|&d| d >= 5);
    Some((whole.checked_add(u64::from(half_up))?, inexact))
}

/// A `.model` as `mkmodel` writes it and `modelload` reads it: `<emulators>` of
/// `<emul int_idx hostname>`, `<hops>` of `<hop int_idx int_emul specs ...>` (each hop an edge
/// of the graph, by its `int_idx`), and `<specs>`.
pub(crate) struct Model {
    /// The emulators' host names, in file order: core `i` is the `i`th `<emul>`.
    cores: Vec<String>,
    specs: BTreeMap<String, LinkParams>,
    hops: Vec<Hop>,
    rounded: Rounded,
}

struct Hop {
    idx: String,
    core: u32,
    class: Option<String>,
    /// The hop's own parameter attributes (`mkmodel` copies the edge's).
    params: LinkParams,
    src: Option<String>,
    dst: Option<String>,
    line: usize,
    subject: String,
}

pub(crate) fn read_model(text: &str, label: &str) -> Result<Model, TopoError> {
    let doc = xml::parse(text, label)?;
    let root = doc.root_element();
    if root.tag_name().name() != "model" {
        return Err(xml::error(
            label,
            root,
            &format!("<{}>", root.tag_name().name()),
            ErrorKind::Syntax,
            "is not a ModelNet model: the root element must be <model>".into(),
        ));
    }
    let mut rounded = Rounded::default();
    let specs = read_specs(root, label, &mut rounded)?;

    let mut cores = Vec::new();
    let mut emulators: BTreeMap<&str, u32> = BTreeMap::new();
    let emuls = xml::children(root, "emulators").flat_map(|e| xml::children(e, "emul"));
    for (i, emul) in emuls.enumerate() {
        let idx = emul.attribute("int_idx").unwrap_or("");
        let subject = format!("emul #{} (int_idx=\"{idx}\")", i + 1);
        let err = |kind, message| xml::error(label, emul, &subject, kind, message);
        let Some(host) = emul.attribute("hostname").filter(|_| !idx.is_empty()) else {
            return Err(err(
                ErrorKind::Missing,
                "needs int_idx (the number hops give as int_emul) and hostname".into(),
            ));
        };
        if emulators.insert(idx, cores.len() as u32).is_some() {
            return Err(err(
                ErrorKind::Duplicate,
                format!("int_idx \"{idx}\" is used by an earlier emul"),
            ));
        }
        cores.push(host.to_string());
    }

    let mut hops = Vec::new();
    let xml_hops = xml::children(root, "hops").flat_map(|h| xml::children(h, "hop"));
    for (i, hop) in xml_hops.enumerate() {
        let idx = hop.attribute("int_idx").unwrap_or("");
        let subject = format!("hop #{} (int_idx=\"{idx}\")", i + 1);
        let err = |kind, message| xml::error(label, hop, &subject, kind, message);
        let Some(emul) = hop.attribute("int_emul").filter(|_| !idx.is_empty()) else {
            return Err(err(
                ErrorKind::Missing,
                "needs int_idx (its edge in the .graph) and int_emul (the int_idx of its \
                 <emulators><emul>)"
                    .into(),
            ));
        };
        let Some(&core) = emulators.get(emul) else {
            let known: Vec<&str> = emulators.keys().copied().collect();
            return Err(err(
                ErrorKind::UnknownName,
                format!(
                    "int_emul \"{emul}\" names no emulator: the <emul> int_idx under <emulators> \
                     are {}",
                    if known.is_empty() {
                        "none".to_string()
                    } else {
                        known.join(", ")
                    }
                ),
            ));
        };
        hops.push(Hop {
            idx: idx.to_string(),
            core,
            class: hop.attribute("specs").map(str::to_string),
            params: params(label, hop, &subject, &mut rounded)?,
            src: hop.attribute("int_src").map(str::to_string),
            dst: hop.attribute("int_dst").map(str::to_string),
            line: xml::line(hop),
            subject,
        });
    }
    if hops.is_empty() {
        return Err(fail(
            label,
            None,
            None,
            ErrorKind::Missing,
            "no <hops><hop> elements: a ModelNet model assigns each hop (edge) to an emulator"
                .into(),
        ));
    }
    Ok(Model {
        cores,
        specs,
        hops,
        rounded,
    })
}

impl Model {
    /// Gives each edge of `graph` that has a hop the parameters ModelNet emulates for it: per
    /// parameter, the hop's attribute, else the model's spec of its class, else the edge's
    /// attribute, else the graph's spec. The model's specs go over the graph's classes of the
    /// same name, so the native file keeps its classes and each edge keeps only what differs.
    /// Notes say which file each parameter came from. Returns each hop's edge and core.
    pub(crate) fn apply(
        &self,
        graph: &mut GraphFile,
        graph_label: &str,
        model_label: &str,
    ) -> Result<Vec<(String, u32)>, TopoError> {
        let fail_at = |hop: &Hop, kind, message| {
            fail(
                model_label,
                Some(hop.line),
                Some(hop.subject.clone()),
                kind,
                message,
            )
        };
        let graph_specs = graph.graph.classes.clone();
        for (class, spec) in &self.specs {
            let merged = match graph_specs.get(class) {
                Some(g) => layers::layer(g, spec),
                None => spec.clone(),
            };
            graph.graph.classes.insert(class.clone(), merged);
        }
        let spec_of = |specs: &BTreeMap<String, LinkParams>, class: &Option<String>| {
            class
                .as_ref()
                .and_then(|c| specs.get(c))
                .cloned()
                .unwrap_or_default()
        };
        let by_id: HashMap<String, usize> = graph
            .edges
            .iter()
            .enumerate()
            .map(|(i, e)| (e.one_way.id.clone(), i))
            .collect();
        let mut first_hop: Vec<Option<usize>> = vec![None; graph.edges.len()];
        // Per parameter: how many hops took it from the model, and from the graph.
        let mut sources: BTreeMap<String, (usize, usize)> = BTreeMap::new();
        let mut differ = Vec::new();
        let mut placed = Vec::new();
        for hop in &self.hops {
            let Some(&e) = by_id.get(hop.idx.as_str()) else {
                return Err(fail_at(
                    hop,
                    ErrorKind::UnknownName,
                    format!(
                        "int_idx \"{}\" is no edge of {graph_label}: a hop for a link the graph \
                         lacks (was the .model made from another .graph?)",
                        hop.idx
                    ),
                ));
            };
            if let Some(line) = first_hop[e] {
                return Err(fail_at(
                    hop,
                    ErrorKind::Duplicate,
                    format!(
                        "edge int_idx \"{}\" already has a hop, at line {line}",
                        hop.idx
                    ),
                ));
            }
            first_hop[e] = Some(hop.line);
            let edge = &mut graph.edges[e];
            for (name, hop_end, edge_end) in [
                ("int_src", &hop.src, &edge.src),
                ("int_dst", &hop.dst, &edge.dst),
            ] {
                if let Some(end) = hop_end.as_ref().filter(|end| *end != edge_end) {
                    return Err(fail_at(
                        hop,
                        ErrorKind::BadValue,
                        format!(
                            "{name} = \"{end}\", but edge int_idx \"{}\" of {graph_label} has \
                             {name} = \"{edge_end}\": a hop for a link the graph lacks (was the \
                             .model made from another .graph?)",
                            hop.idx
                        ),
                    ));
                }
            }
            let class = hop.class.clone().or_else(|| edge.one_way.class.clone());
            if let Some(c) = class
                .as_ref()
                .filter(|c| !graph.graph.classes.contains_key(*c))
            {
                return Err(fail_at(
                    hop,
                    ErrorKind::UnknownName,
                    format!(
                        "specs \"{c}\" is defined under the <specs> of neither {model_label} nor \
                         {graph_label}{}",
                        did_you_mean_class(c, &graph.graph.classes)
                    ),
                ));
            }
            let from_graph = layers::layer(
                &spec_of(&graph_specs, &edge.one_way.class),
                &edge.one_way.params,
            );
            let from_model = layers::layer(&spec_of(&self.specs, &class), &hop.params);
            let graph_keys = layers::flatten(&from_graph, "");
            let model_keys = layers::flatten(&from_model, "");
            let mut changes = Vec::new();
            for (key, value) in &model_keys {
                sources.entry(key.clone()).or_default().0 += 1;
                match graph_keys.iter().find(|(k, _)| k == key) {
                    Some((_, old)) if old != value => {
                        changes.push(format!("{key} {value} ({graph_label}: {old})"))
                    }
                    _ => {}
                }
            }
            for (key, _) in &graph_keys {
                if !model_keys.iter().any(|(k, _)| k == key) {
                    sources.entry(key.clone()).or_default().1 += 1;
                }
            }
            if !changes.is_empty() {
                differ.push(format!("hop {}: {}", hop.idx, changes.join(", ")));
            }
            let emulated = layers::layer(&from_graph, &from_model);
            edge.one_way.params = layers::minus(&emulated, &spec_of(&graph.graph.classes, &class))
                .unwrap_or_default();
            edge.one_way.class = class;
            placed.push((edge.one_way.id.clone(), hop.core));
        }
        // Edges without a hop keep the graph's parameters, under their class as merged.
        let mut missing = Vec::new();
        for (edge, _) in graph
            .edges
            .iter_mut()
            .zip(&first_hop)
            .filter(|(_, h)| h.is_none())
        {
            let own = layers::layer(
                &spec_of(&graph_specs, &edge.one_way.class),
                &edge.one_way.params,
            );
            edge.one_way.params =
                layers::minus(&own, &spec_of(&graph.graph.classes, &edge.one_way.class))
                    .unwrap_or_default();
            missing.push(edge.one_way.id.clone());
        }

        let notes = &mut graph.graph.notes;
        let counts: Vec<String> = sources
            .iter()
            .map(|(key, (model, graph))| {
                format!("{key} {model} from the .model, {graph} from the .graph")
            })
            .collect();
        notes.push(format!(
            "{model_label} gives the parameters ModelNet emulates; where it gives none, \
             {graph_label} does (per parameter, of {} hops: {})",
            self.hops.len(),
            counts.join("; ")
        ));
        if !differ.is_empty() {
            notes.push(format!(
                "{} of {} hops differ from {graph_label}, which ModelNet does not emulate: {}{}",
                differ.len(),
                self.hops.len(),
                differ[..differ.len().min(3)].join("; "),
                more(differ.len(), 3)
            ));
        }
        if !missing.is_empty() {
            notes.push(format!(
                "{} edge(s) of {graph_label} have no hop in {model_label} (ModelNet would not \
                 emulate them) and keep the .graph's parameters: int_idx {}{}",
                missing.len(),
                missing[..missing.len().min(5)].join(", "),
                more(missing.len(), 5)
            ));
        }
        notes.extend(self.rounded.note(model_label));
        Ok(placed)
    }

    /// The emulators' host names: core `i` is the `i`th.
    pub(crate) fn cores(&self) -> &[String] {
        &self.cores
    }
}

/// ", ... and N more" when `total` things were listed only up to `shown`.
fn more(total: usize, shown: usize) -> String {
    if total > shown {
        format!(" ... and {} more", total - shown)
    } else {
        String::new()
    }
}

/// The core of each pipe of the links made from `edges` (where `pair_directed` put each edge),
/// for the `(edge id, core)` of each hop.
pub(crate) fn core_map(
    file: &TopologyFile,
    edges: &[Placed],
    cores: &[String],
    hops: &[(String, u32)],
) -> CoreMap {
    let ids = pipe_ids(file);
    let total = ids.last().map_or(0, |&(_, ba)| ba as usize + 1);
    let at: HashMap<&str, &Placed> = edges.iter().map(|p| (p.id.as_str(), p)).collect();
    let mut pipes = vec![None; total];
    for (id, core) in hops {
        let placed = at[id.as_str()];
        let (ab, ba) = ids[placed.link];
        let pipe = match placed.direction {
            Direction::AtoB => ab,
            Direction::BtoA => ba,
        };
        pipes[pipe as usize] = Some(*core);
    }
    CoreMap {
        cores: cores.to_vec(),
        pipes,
    }
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
        let g = read_graph(GRAPH, "t.graph").unwrap().finish();
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
    fn malformed_graphs_name_the_element() {
        let bad = GRAPH.replace("int_dst=\"2\" int_idx=\"3\"", "int_dst=\"7\" int_idx=\"3\"");
        let err = read_graph(&bad, "t.graph").err().unwrap().to_string();
        assert_eq!(
            err,
            "t.graph:12: edge #4 (int_src=\"0\" int_dst=\"7\"): int_dst \"7\" is not a vertex"
        );
        let bad = GRAPH.replace("int_qlen=\"10\"", "int_qlen=\"ten\"");
        let err = read_graph(&bad, "t.graph").err().unwrap().to_string();
        assert!(
            err.contains("spec <client-stub>: int_qlen = \"ten\""),
            "{err}"
        );
        let bad = GRAPH.replace("role=\"gateway\"", "role=\"virtnod\"");
        assert_eq!(
            read_graph(&bad, "t.graph").err().unwrap().to_string(),
            "t.graph:4: vertex #1 (int_idx=\"0\"): role \"virtnod\" is not known (did you mean \
             \"virtnode\"?); ModelNet's roles are virtnode (a host) and gateway, transit, stub \
             (routers)"
        );
        for (kbps, why) in [
            ("-5", "is not a number of kbit/s"),
            ("fast", "is not a number of kbit/s"),
            ("0.0004", "is below 1 bit/s; a rate must be positive"),
        ] {
            let bad = GRAPH.replace("dbl_kbps=\"768\"", &format!("dbl_kbps=\"{kbps}\""));
            let err = read_graph(&bad, "t.graph").err().unwrap().to_string();
            assert!(
                err.ends_with(&format!("dbl_kbps = \"{kbps}\" {why}")),
                "{err}"
            );
        }
    }

    #[test]
    fn every_role_modelnet_writes_is_a_host_or_a_router() {
        for (role, name, host) in [
            ("virtnode", "vn0", true),
            ("gateway", "r0", false),
            ("transit", "r0", false),
            ("stub", "r0", false),
        ] {
            let text = GRAPH.replace(
                "int_idx=\"0\" role=\"gateway\"",
                &format!("int_idx=\"0\" role=\"{role}\" int_vn=\"9\""),
            );
            let g = read_graph(&text, "t.graph").unwrap().finish();
            let name = if host { "vn9" } else { name };
            assert_eq!(
                (g.nodes[0].name.as_str(), g.nodes[0].host),
                (name, host),
                "{role}"
            );
        }
    }

    #[test]
    fn numbers_as_perl_prints_them_scale_exactly_and_round_half_up() {
        for (text, shift, want) in [
            ("1000", 3, Some((1_000_000, false))),
            ("1523.47812659231", 3, Some((1_523_478, true))),
            ("987.6545", 3, Some((987_655, true))),
            ("4.11333333333333", 6, Some((4_113_333, true))),
            ("0.186666666666667", 6, Some((186_667, true))),
            ("0.0000004", 6, Some((0, true))),
            ("1e-05", 6, Some((10, false))),
            ("2.5E3", 3, Some((2_500_000, false))),
            ("0e99999", 3, Some((0, false))),
            (".5", 3, Some((500, false))),
            ("18446744073709551616", 0, None),
            ("1e30", 3, None),
            ("-1", 3, None),
            ("", 3, None),
            ("1.2.3", 3, None),
        ] {
            assert_eq!(scaled(text, shift), want, "{text}");
        }
    }
}
