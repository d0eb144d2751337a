//! Loading a topology: reads TOML or JSON, checks it against the schema, resolves each link's
//! layered parameters into pipes, and validates the graph. Every problem becomes a `Diagnostic`
//! naming the file, the line, the link or node, and what would be valid.
//!
//! Layering, per link and direction, later layers winning key by key: built-in defaults →
//! `[defaults]` → `classes[class]` → the link's own keys → its `a_to_b` / `b_to_a` table.
//! Parallel links between the same two nodes are allowed (each has its own pipes); routing
//! chooses among them by its metric and tie-breaking.

use crate::data::DataFiles;
use crate::doc::{LinkParams, NodeEntry, NodeTable, TopologyFile};
use crate::error::{Diagnostic, ErrorKind, Issue, Seg, Subject, TopoError};
pub use crate::format::Format;
use crate::import::{self, ImportOptions, InputFormat};
use crate::layer::{finish, key_path, parse_layer};
pub use crate::layer::{
    RED_DEFAULT_MAX_P, RED_DEFAULT_MAX_TH_FACTOR, RED_DEFAULT_MIN_TH_PACKETS, RED_DEFAULT_WEIGHT,
};
use crate::locate::{line_at, Lines, Source};
use crate::model::{
    LinkPlan, NodeId, NodeKind, Position, RoutingMetric, Topology, MAX_LINKS, MAX_NODES,
};
use crate::patch::LinkPatch;
use crate::plan::resolve_plan;
use crate::schema::{self, did_you_mean};
use crate::shown::shown;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// Reads, checks and resolves a topology file; the format comes from the extension (any format
/// `import` reads, with its default options).
pub fn load_path(path: &Path) -> Result<Topology, TopoError> {
    load_path_as(path, None, &ImportOptions::default()).map(|(topo, _)| topo)
}

/// Reads, checks and resolves a topology file in `format` (by default, the one its extension
/// announces). Returns the notes of what an importer assumed (none for native files).
pub fn load_path_as(
    path: &Path,
    format: Option<InputFormat>,
    options: &ImportOptions,
) -> Result<(Topology, Vec<String>), TopoError> {
    let label = path.display().to_string();
    let (format, text) = import::read_input(path, format)?;
    if let Some(native) = format.native() {
        return load_str(&text, native, &label).map(|topo| (topo, Vec::new()));
    }
    let imported = import::import_str(&text, format, &label, options)?;
    Ok((resolve(&imported.file, &label)?, imported.notes))
}

/// Checks and resolves a topology given as text. `file_label` names it in errors (and gives
/// the topology its name when `[topology] name` is not set).
pub fn load_str(text: &str, format: Format, file_label: &str) -> Result<Topology, TopoError> {
    let file = parse_str(text, format, file_label)?;
    resolve_file(&file, file_label).map_err(|issues| {
        let source = Source::new(text, format);
        report(issues, file_label, &Namer::from_file(&file), Some(source))
    })
}

/// Reads a topology file into its document form, checking keys and value types but not units
/// or the graph (`resolve` does those).
pub fn parse_str(text: &str, format: Format, file_label: &str) -> Result<TopologyFile, TopoError> {
    let syntax = |line: Option<usize>, message: String| {
        TopoError::new(vec![Diagnostic {
            kind: ErrorKind::Syntax,
            file: file_label.to_string(),
            line,
            subject: None,
            message,
        }])
    };
    let value: serde_json::Value = match format {
        Format::Toml => toml::from_str(text).map(json_of).map_err(|e| {
            let line = e.span().map(|s| line_at(text, s.start));
            syntax(line, format!("invalid TOML: {}", one_line(e.message())))
        })?,
        Format::Json => serde_json::from_str(text).map_err(|e| {
            let message = e.to_string();
            // serde_json appends " at line L column C"; the line goes in front instead.
            let message = match message.rfind(" at line ") {
                Some(i) => message[..i].to_string(),
                None => message,
            };
            syntax(Some(e.line()), format!("invalid JSON: {message}"))
        })?,
    };
    schema::read_file(&value).map_err(|issues| {
        let source = Source::new(text, format);
        report(issues, file_label, &Namer::from_value(&value), Some(source))
    })
}

/// Resolves a document built in memory (by a generator, say) into the model, with the same
/// checks as loading a file. Errors carry no line numbers (there is no text); `file_label`
/// names the document.
pub fn resolve(file: &TopologyFile, file_label: &str) -> Result<Topology, TopoError> {
    resolve_file(file, file_label)
        .map_err(|issues| report(issues, file_label, &Namer::from_file(file), None))
}

/// A TOML value as the document's JSON form. TOML's `nan` and `inf` have no JSON number, and
/// serde would make them null, which reads as absent (`loss = nan` was no loss at all); they
/// become the strings "nan", "inf" and "-inf", which every number and probability key refuses
/// with its valid range.
fn json_of(value: toml::Value) -> serde_json::Value {
    use serde_json::Value as Json;
    match value {
        toml::Value::String(s) => Json::String(s),
        toml::Value::Integer(i) => Json::from(i),
        toml::Value::Float(f) => serde_json::Number::from_f64(f)
            .map_or_else(|| Json::String(f.to_string()), Json::Number),
        toml::Value::Boolean(b) => Json::Bool(b),
        // As serde hands date-times over, so that errors can say "a date-time".
        toml::Value::Datetime(d) => Json::Object(serde_json::Map::from_iter([(
            "$__toml_private_datetime".to_string(),
            Json::String(d.to_string()),
        )])),
        toml::Value::Array(items) => Json::Array(items.into_iter().map(json_of).collect()),
        toml::Value::Table(table) => {
            Json::Object(table.into_iter().map(|(k, v)| (k, json_of(v))).collect())
        }
    }
}

fn one_line(message: &str) -> String {
    message.trim().replace('\n', "; ")
}

/// Turns located issues into diagnostics: subjects become link and node names, paths become
/// lines where the text is at hand.
pub(crate) fn report(
    issues: Vec<Issue>,
    label: &str,
    namer: &Namer,
    source: Option<Source>,
) -> TopoError {
    // Positions are needed only once something is wrong, so they are looked up only here.
    let lines = source.map(Lines::new);
    let diagnostics = issues
        .into_iter()
        .map(|issue| Diagnostic {
            kind: issue.kind,
            file: label.to_string(),
            line: lines.as_ref().and_then(|l| l.line_of(&issue.path)),
            subject: namer.name(&issue.subject),
            message: issue.message,
        })
        .collect();
    TopoError::new(diagnostics)
}

/// Names links as people identify them: `link r1-r2`, or `link #3 (r1-r2)` when parallel links
/// share the pair (numbering the `[[link]]` entries from 1).
pub(crate) struct Namer {
    ends: Vec<Option<(String, String)>>,
    pairs: HashMap<(String, String), usize>,
}

impl Namer {
    fn new(ends: Vec<Option<(String, String)>>) -> Namer {
        let mut pairs = HashMap::new();
        for (a, b) in ends.iter().flatten() {
            *pairs.entry(pair(a, b)).or_insert(0) += 1;
        }
        Namer { ends, pairs }
    }

    pub(crate) fn from_file(file: &TopologyFile) -> Namer {
        Namer::new(
            file.links
                .iter()
                .map(|l| Some((l.a.clone(), l.b.clone())))
                .collect(),
        )
    }

    /// From the raw tree, when the document did not read cleanly.
    fn from_value(value: &serde_json::Value) -> Namer {
        let links = value.get("link").and_then(|l| l.as_array());
        let ends = links
            .into_iter()
            .flatten()
            .map(|l| {
                let end = |k: &str| l.get(k).and_then(|v| v.as_str()).map(str::to_string);
                end("a").zip(end("b"))
            })
            .collect();
        Namer::new(ends)
    }

    fn name(&self, subject: &Subject) -> Option<String> {
        match subject {
            Subject::None => None,
            Subject::Text(t) => Some(t.clone()),
            Subject::Link(i) => Some(match self.ends.get(*i).cloned().flatten() {
                Some((a, b)) if self.pairs.get(&pair(&a, &b)) == Some(&1) => {
                    format!("link {}-{}", shown(&a), shown(&b))
                }
                Some((a, b)) => format!("link #{} ({}-{})", i + 1, shown(&a), shown(&b)),
                None => format!("link #{}", i + 1),
            }),
        }
    }
}

fn pair(a: &str, b: &str) -> (String, String) {
    if a <= b {
        (a.to_string(), b.to_string())
    } else {
        (b.to_string(), a.to_string())
    }
}

/// A node table's position: `lat` and `lon` (degrees, in range), or `x` and `y`, or neither;
/// otherwise the key at fault and why.
fn position(t: &NodeTable) -> Result<Option<Position>, (&'static str, String)> {
    const EXAMPLE: &str =
        "{ name = \"r1\", lat = 48.85, lon = 2.35 } or { name = \"r1\", x = 10, y = 20 }";
    let pair =
        |(ka, a): (&'static str, Option<f64>), (kb, b): (&'static str, Option<f64>)| match (a, b) {
            (Some(a), Some(b)) => Ok(Some((a, b))),
            (None, None) => Ok(None),
            (Some(_), None) => Err((ka, format!("{ka} needs {kb} too: {EXAMPLE}"))),
            (None, Some(_)) => Err((kb, format!("{kb} needs {ka} too: {EXAMPLE}"))),
        };
    let earth = pair(("lat", t.lat), ("lon", t.lon))?;
    let plane = pair(("x", t.x), ("y", t.y))?;
    let within = |key: &'static str, v: f64, limit: f64| {
        if (-limit..=limit).contains(&v) {
            Ok(v)
        } else {
            let range = if limit == f64::MAX {
                "a finite number".into()
            } else {
                format!("in [-{limit}, {limit}] degrees")
            };
            Err((key, format!("{key} = {v} is not {range}")))
        }
    };
    match (earth, plane) {
        (Some(_), Some(_)) => Err((
            "x",
            "a node is on the Earth (lat, lon) or on a plane (x, y), not both".into(),
        )),
        (Some((lat, lon)), None) => Ok(Some(Position::Earth {
            lat: within("lat", lat, 90.0)?,
            lon: within("lon", lon, 180.0)?,
        })),
        (None, Some((x, y))) => Ok(Some(Position::Plane {
            x: within("x", x, f64::MAX)?,
            y: within("y", y, f64::MAX)?,
        })),
        (None, None) => Ok(None),
    }
}

fn kind_word(kind: NodeKind) -> &'static str {
    match kind {
        NodeKind::Host => "host",
        NodeKind::Router => "router",
    }
}

/// Every check after the schema: names, units, layering, links, connectivity.
fn resolve_file(file: &TopologyFile, label: &str) -> Result<Topology, Vec<Issue>> {
    resolve_with(file, label, &mut DataFiles::new(label))
}

/// `resolve_file` with its data files taken from `files`.
pub(crate) fn resolve_with(
    file: &TopologyFile,
    label: &str,
    files: &mut DataFiles,
) -> Result<Topology, Vec<Issue>> {
    let mut issues = Vec::new();
    // Refused before anything is built for it (names, pipes, routes).
    let nodes = file.hosts.len() + file.routers.len();
    for (count, max, what, key) in [
        (nodes, MAX_NODES, "nodes (hosts and routers)", "hosts"),
        (file.links.len(), MAX_LINKS, "links", "link"),
    ] {
        if count > max {
            issues.push(Issue {
                kind: ErrorKind::BadValue,
                path: key_path(&[], &[key]),
                subject: Subject::Text("the topology".into()),
                message: format!(
                    "has {count} {what}; the limit is {max}, what loads, routes and simulates \
                     in a few GiB (docs/limits.md)"
                ),
            });
        }
    }
    if !issues.is_empty() {
        return Err(issues);
    }
    let meta = file.topology.clone().unwrap_or_default();
    let routing = match meta.routing.as_deref() {
        None | Some("delay") => RoutingMetric::Delay,
        Some("hops") => RoutingMetric::Hops,
        Some(other) => {
            issues.push(Issue {
                kind: ErrorKind::BadValue,
                path: key_path(&[], &["topology", "routing"]),
                subject: Subject::Text("[topology]".into()),
                message: format!(
                    "routing \"{other}\" is not known{}; write \"delay\" or \"hops\"",
                    did_you_mean(other, &["delay", "hops"])
                ),
            });
            RoutingMetric::Delay
        }
    };
    let name = meta.name.unwrap_or_else(|| {
        Path::new(label)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| label.to_string())
    });
    let mut topo = Topology::new(name, routing);

    // Nodes; `node_paths[id]` is where each was declared, for errors about it later.
    let mut node_paths: Vec<Vec<Seg>> = Vec::new();
    for (kind, key, entries) in [
        (NodeKind::Host, "hosts", &file.hosts),
        (NodeKind::Router, "routers", &file.routers),
    ] {
        for (i, entry) in entries.iter().enumerate() {
            let (name, group) = match entry {
                NodeEntry::Name(n) => (n, None),
                NodeEntry::Full(t) => (&t.name, t.group.clone()),
            };
            let path = vec![Seg::Key(key.into()), Seg::Index(i)];
            let subject = Subject::Text(format!("{} {}", kind_word(kind), shown(name)));
            let position = match entry {
                NodeEntry::Name(_) => None,
                NodeEntry::Full(t) => position(t).unwrap_or_else(|(k, message)| {
                    let mut path = path.clone();
                    path.push(Seg::Key(k.into()));
                    issues.push(Issue {
                        kind: ErrorKind::BadValue,
                        path,
                        subject: subject.clone(),
                        message,
                    });
                    None
                }),
            };
            if name.trim().is_empty() || name.chars().any(char::is_whitespace) {
                issues.push(Issue {
                    kind: ErrorKind::BadValue,
                    path,
                    subject,
                    message: "a node name must be non-empty and without spaces, like \"h1\" or \"r-core\""
                        .into(),
                });
            } else if let Some(prev) = topo.node_id(name) {
                issues.push(Issue {
                    kind: ErrorKind::Duplicate,
                    path,
                    subject,
                    message: format!(
                        "the name is already used by a {}; hosts and routers share one namespace, so every name must be unique",
                        kind_word(topo.node(prev).kind)
                    ),
                });
            } else {
                let own = match entry {
                    NodeEntry::Name(_) => None,
                    NodeEntry::Full(t) => t.kernel,
                };
                if kind == NodeKind::Host && own.is_some() {
                    let mut path = path.clone();
                    path.push(Seg::Key("kernel".into()));
                    issues.push(Issue {
                        kind: ErrorKind::BadValue,
                        path,
                        subject: subject.clone(),
                        message: "`kernel` applies to routers only: every host is already a \
                                  network namespace"
                            .into(),
                    });
                }
                let id = topo.add_node(name.clone(), kind, group);
                let node = &mut topo.nodes[id as usize];
                node.position = position;
                node.kernel =
                    kind == NodeKind::Router && own.or(meta.kernel_routers).unwrap_or(false);
                node_paths.push(path);
            }
        }
    }
    crate::routing::resolve(file, label, &mut topo, &mut issues);
    crate::addressing::resolve(file, &mut topo, &mut issues);

    let before_defaults = issues.len();
    let defaults = file
        .defaults
        .as_ref()
        .map(|p| {
            parse_layer(
                &mut issues,
                files,
                p,
                key_path(&[], &["defaults"]),
                Subject::Text("[defaults]".into()),
                "",
            )
        })
        .unwrap_or_default();
    // A layer with a bad value would make every link under it look incomplete ("no bandwidth");
    // such follow-on errors are not reported.
    let defaults_ok = issues.len() == before_defaults;
    let mut bad_classes = Vec::new();
    let classes: BTreeMap<&str, LinkPatch> = file
        .classes
        .iter()
        .map(|(name, p)| {
            let before = issues.len();
            let layer = parse_layer(
                &mut issues,
                files,
                p,
                key_path(&[], &["classes", name]),
                Subject::Text(format!("class {:?}", shown(name))),
                "",
            );
            if issues.len() > before {
                bad_classes.push(name.as_str());
            }
            (name.as_str(), layer)
        })
        .collect();
    let class_names: Vec<&str> = classes.keys().copied().collect();

    for (i, link) in file.links.iter().enumerate() {
        let path = vec![Seg::Key("link".into()), Seg::Index(i)];
        let subject = Subject::Link(i);
        let mut problem = |kind: ErrorKind, keys: &[&str], message: String| {
            issues.push(Issue {
                kind,
                path: key_path(&path, keys),
                subject: subject.clone(),
                message,
            });
        };
        let mut end = |key: &str, name: &str| {
            let id = topo.node_id(name);
            if id.is_none() {
                let names: Vec<&str> = topo.nodes.iter().map(|n| n.name.as_str()).collect();
                problem(
                    ErrorKind::UnknownName,
                    &[key],
                    format!(
                        "{key} = {:?} is not a node{}; declare it in hosts or routers",
                        shown(name),
                        did_you_mean(name, &names)
                    ),
                );
            }
            id
        };
        let a = end("a", &link.a);
        let b = end("b", &link.b);
        if link.a == link.b {
            problem(
                ErrorKind::SelfLoop,
                &["b"],
                format!(
                    "a and b are both {:?}; a link joins two different nodes",
                    shown(&link.a)
                ),
            );
        }
        let class = match link.class.as_deref() {
            None => Some(LinkPatch::default()),
            Some(c) => match classes.get(c) {
                Some(layer) => Some(layer.clone()),
                None => {
                    let known = if class_names.is_empty() {
                        "no classes are defined; define it under [classes.NAME]".to_string()
                    } else {
                        format!("defined classes: {}", class_names.join(", "))
                    };
                    problem(
                        ErrorKind::UnknownName,
                        &["class"],
                        format!(
                            "class \"{c}\" is not defined{}; {known}",
                            did_you_mean(c, &class_names)
                        ),
                    );
                    None
                }
            },
        };
        let shared = link.shared.unwrap_or(false);
        if shared && (link.a_to_b.is_some() || link.b_to_a.is_some()) {
            let key = if link.a_to_b.is_some() {
                "a_to_b"
            } else {
                "b_to_a"
            };
            problem(
                ErrorKind::BadValue,
                &[key],
                format!(
                    "a shared link is one pipe for both directions, so it has no {key}; \
                     remove {key} or set shared = false"
                ),
            );
        }
        let before = issues.len();
        let own = parse_layer(
            &mut issues,
            files,
            &link.params,
            path.clone(),
            subject.clone(),
            "",
        );
        let mut direction = |p: &Option<LinkParams>, key: &str| {
            p.as_ref()
                .map(|p| {
                    parse_layer(
                        &mut issues,
                        files,
                        p,
                        key_path(&path, &[key]),
                        subject.clone(),
                        &format!("{key}."),
                    )
                })
                .unwrap_or_default()
        };
        let ab_layer = direction(&link.a_to_b, "a_to_b");
        let ba_layer = direction(&link.b_to_a, "b_to_a");
        let Some(class) = class else { continue };
        let base = defaults.under(&class).under(&own);
        let (ab_base, ba_base) = (base.under(&ab_layer), base.under(&ba_layer));
        let ab = finish(&ab_base, link.class.as_deref());
        let ba = finish(&ba_base, link.class.as_deref());
        let ab_problems = ab.as_ref().err().cloned().unwrap_or_default();
        let ba_problems = ba.as_ref().err().cloned().unwrap_or_default();
        // The same gap in both directions is one mistake, reported once; a gap in one direction
        // only says which.
        let mut problems = Vec::new();
        for (kind, message) in &ab_problems {
            let both = ba_problems.iter().any(|(_, m)| m == message);
            let prefix = if both { "" } else { "a_to_b: " };
            problems.push((*kind, format!("{prefix}{message}")));
        }
        for (kind, message) in &ba_problems {
            if !ab_problems.iter().any(|(_, m)| m == message) {
                problems.push((*kind, format!("b_to_a: {message}")));
            }
        }
        let layers_ok = issues.len() == before
            && defaults_ok
            && !link
                .class
                .as_deref()
                .is_some_and(|c| bad_classes.contains(&c));
        if !layers_ok {
            problems.clear();
        }
        for (kind, message) in problems {
            issues.push(Issue {
                kind,
                path: path.clone(),
                subject: subject.clone(),
                message,
            });
        }
        let plan = resolve_plan(
            link,
            [&ab_base, &ba_base],
            files,
            &mut issues,
            &path,
            &subject,
        );
        if let (Some(a), Some(b), Ok((ab, ab_data)), Ok((ba, ba_data))) = (a, b, ab, ba) {
            if a != b {
                let id = topo.add_link(a, b, link.class.clone(), ab, (!shared).then_some(ba));
                let l = topo.links[id as usize].clone();
                topo.pipes[l.ab as usize].data = ab_data;
                if !shared {
                    topo.pipes[l.ba as usize].data = ba_data;
                }
                if let Some((plan, states)) = plan {
                    topo.plans.push(LinkPlan {
                        link: id,
                        plan,
                        states,
                    });
                }
            }
        }
    }

    if issues.is_empty() {
        check_connected(&topo, &node_paths, &mut issues);
    }
    if issues.is_empty() {
        Ok(topo)
    } else {
        Err(issues)
    }
}

/// Every host has a link, and the links that are up connect every pair of hosts.
fn check_connected(topo: &Topology, node_paths: &[Vec<Seg>], issues: &mut Vec<Issue>) {
    let host_subject = |id: NodeId| Subject::Text(format!("host {}", shown(&topo.node(id).name)));
    if topo.hosts.is_empty() {
        issues.push(Issue {
            kind: ErrorKind::Missing,
            path: Vec::new(),
            subject: Subject::None,
            message:
                "no hosts; list them with hosts = [\"h1\", \"h2\"] and connect them with [[link]]"
                    .into(),
        });
        return;
    }
    let mut degree = vec![0usize; topo.nodes.len()];
    let mut parent: Vec<usize> = (0..topo.nodes.len()).collect();
    fn root(parent: &mut [usize], mut x: usize) -> usize {
        while parent[x] != x {
            parent[x] = parent[parent[x]];
            x = parent[x];
        }
        x
    }
    let mut down = 0;
    for l in &topo.links {
        degree[l.a as usize] += 1;
        degree[l.b as usize] += 1;
        let up = topo.pipes[l.ab as usize].config.up && topo.pipes[l.ba as usize].config.up;
        if !up {
            down += 1;
            continue;
        }
        let (ra, rb) = (
            root(&mut parent, l.a as usize),
            root(&mut parent, l.b as usize),
        );
        parent[ra] = rb;
    }
    let mut lonely = false;
    for &h in &topo.hosts {
        if degree[h as usize] == 0 {
            lonely = true;
            issues.push(Issue {
                kind: ErrorKind::Unconnected,
                path: node_paths[h as usize].clone(),
                subject: host_subject(h),
                message: format!(
                    "has no link; connect it with a [[link]] (a = {:?}, b = \"r1\")",
                    shown(&topo.node(h).name)
                ),
            });
        }
    }
    if lonely {
        return;
    }
    let first = topo.hosts[0];
    let first_root = root(&mut parent, first as usize);
    let apart = topo
        .hosts
        .iter()
        .copied()
        .find(|&h| root(&mut parent, h as usize) != first_root);
    if let Some(h) = apart {
        let note = if down > 0 {
            format!(" ({down} link(s) start with up = false and do not count)")
        } else {
            String::new()
        };
        issues.push(Issue {
            kind: ErrorKind::Unconnected,
            path: node_paths[h as usize].clone(),
            subject: host_subject(h),
            message: format!(
                "cannot reach host {} over links that are up{note}; every pair of hosts must be connected",
                topo.node(first).name
            ),
        });
    }
}
