//! The graph every importer reads into, and its one way out to a native document: missing
//! rates and delays filled in (from positions where known, else from the options), classes
//! gathered, hosts attached, and a note for every assumption. Importers only read syntax.

use super::attr::{EdgeAttrs, NodeAttrs};
use super::geo::{self, Position, Speed, LIGHT_KM_PER_S};
use super::params;
use super::{fail, ImportOptions, Imported};
use crate::doc::{LinkEntry, LinkParams, Meta, NodeEntry, TopologyFile};
use crate::error::{ErrorKind, TopoError};
use crate::model::{Direction, MAX_LINKS, MAX_NODES};
use crate::units::{self, Range};
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};

/// A node as read: its unique native name, kind and position if the file gave one.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Node {
    pub name: String,
    pub host: bool,
    pub group: Option<String>,
    pub position: Option<Position>,
    /// Rates of the access links of hosts attached here (Shadow's `host_bandwidth_up/down`):
    /// host → router, router → host.
    pub access_up: Option<String>,
    pub access_down: Option<String>,
}

/// A link as read; `a` and `b` index `Graph::nodes`.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Link {
    pub a: usize,
    pub b: usize,
    pub class: Option<String>,
    pub shared: Option<bool>,
    pub params: LinkParams,
    pub a_to_b: Option<LinkParams>,
    pub b_to_a: Option<LinkParams>,
}

/// One direction of a link, for formats whose edges are one-way (ModelNet, directed GML and
/// GraphML). `pair_directed` joins opposite edges into duplex links.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct OneWay {
    pub from: usize,
    pub to: usize,
    pub class: Option<String>,
    pub params: LinkParams,
    /// The edge's own identifier in its file (ModelNet's `int_idx`).
    pub id: String,
}

/// Where a one-way edge of the file ended up: its link (index in `[[link]]`) and direction.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Placed {
    pub id: String,
    pub link: usize,
    pub direction: Direction,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Graph {
    pub name: Option<String>,
    pub routing: Option<String>,
    pub nodes: Vec<Node>,
    pub links: Vec<Link>,
    /// Classes the file defines itself (ModelNet's specs).
    pub classes: BTreeMap<String, LinkParams>,
    /// Where each one-way edge went (filled by `pair_directed`).
    pub directed_edges: Vec<Placed>,
    /// What the importer itself assumed or dropped.
    pub notes: Vec<String>,
}

/// Hands out unique node names made from the labels files give.
#[derive(Default)]
pub(crate) struct Names {
    used: HashSet<String>,
}

impl Names {
    /// `wanted` made safe (`sanitize`) and unique: a repeat gets `-2`, `-3`, ... appended.
    pub fn claim(&mut self, wanted: &str) -> String {
        let base = sanitize(wanted);
        let mut name = base.clone();
        let mut n = 1;
        while !self.used.insert(name.clone()) {
            n += 1;
            name = format!("{base}-{n}");
        }
        name
    }
}

/// A label as a node name: whitespace becomes `_`, and so do `,` `:` `=` (they separate names
/// in `--traffic` and `--hosts-per-router`); an empty label becomes `n`.
pub(crate) fn sanitize(label: &str) -> String {
    let name: String = label
        .trim()
        .chars()
        .map(|c| {
            if c.is_whitespace() || matches!(c, ',' | ':' | '=' | '"') {
                '_'
            } else {
                c
            }
        })
        .collect();
    if name.is_empty() {
        "n".into()
    } else {
        name
    }
}

/// Joins one-way edges into duplex links: an edge b→a pairs with an earlier unpaired a→b of the
/// same class, in file order. Keys both directions share stay on the link; the rest go to
/// `a_to_b` / `b_to_a`. An edge without a partner becomes a link with the same parameters both
/// ways, and is counted in a note.
pub(crate) fn pair_directed(graph: &mut Graph, edges: Vec<OneWay>) {
    let mut open: HashMap<(usize, usize, Option<String>), VecDeque<usize>> = HashMap::new();
    let mut halves: Vec<(LinkParams, Option<LinkParams>)> = Vec::new();
    let first = graph.links.len();
    for e in edges {
        let reverse = (e.to, e.from, e.class.clone());
        if let Some(i) = open.get_mut(&reverse).and_then(VecDeque::pop_front) {
            halves[i].1 = Some(e.params);
            graph.directed_edges.push(Placed {
                id: e.id,
                link: first + i,
                direction: Direction::BtoA,
            });
            continue;
        }
        open.entry((e.from, e.to, e.class.clone()))
            .or_default()
            .push_back(halves.len());
        graph.directed_edges.push(Placed {
            id: e.id,
            link: first + halves.len(),
            direction: Direction::AtoB,
        });
        halves.push((e.params.clone(), None));
        graph.links.push(Link {
            a: e.from,
            b: e.to,
            class: e.class,
            ..Link::default()
        });
    }
    let mut one_way = 0;
    for (link, (ab, ba)) in graph.links[first..].iter_mut().zip(halves) {
        match ba {
            None => {
                one_way += 1;
                link.params = ab;
            }
            Some(ba) => {
                link.params = params::common(&ab, &ba);
                link.a_to_b = params::minus(&ab, &link.params);
                link.b_to_a = params::minus(&ba, &link.params);
            }
        }
    }
    if one_way > 0 {
        graph.notes.push(format!(
            "{one_way} one-way edge(s) had no edge back: each became a link with the same \
             parameters in both directions"
        ));
    }
}

/// Collects the edges of a GraphML or GML file: undirected ones become links at once, one-way
/// ones are paired at the end (`pair_directed`), self-loops are counted and left out.
pub(crate) struct Edges {
    directed: bool,
    one_way: Vec<OneWay>,
    loops: usize,
    /// Edges between two nodes (self-loops are left out).
    kept: usize,
    /// Edges whose rate came from their `LinkLabel`, each label shown with the rate read.
    read: Labels,
    /// Edges with a `LinkLabel` that names no speed, and no rate elsewhere.
    unread: Labels,
}

/// Edges counted for a note, with their first few distinct labels to show.
#[derive(Default)]
struct Labels {
    count: usize,
    shown: Vec<String>,
    more: bool,
}

impl Labels {
    fn add(&mut self, shown: String) {
        self.count += 1;
        if !self.shown.contains(&shown) {
            if self.shown.len() < 3 {
                self.shown.push(shown);
            } else {
                self.more = true;
            }
        }
    }

    fn list(&self) -> String {
        let more = if self.more { ", ..." } else { "" };
        format!("{}{more}", self.shown.join(", "))
    }
}

impl Edges {
    pub fn new(directed: bool) -> Edges {
        Edges {
            directed,
            one_way: Vec::new(),
            loops: 0,
            kept: 0,
            read: Labels::default(),
            unread: Labels::default(),
        }
    }

    /// Adds the edge `a`–`b` (indices into `graph.nodes`); `id` names it in the file.
    pub fn add(&mut self, graph: &mut Graph, a: usize, b: usize, e: EdgeAttrs, id: String) {
        if a == b {
            self.loops += 1;
            return;
        }
        self.kept += 1;
        match (&e.label, &e.params.bw) {
            (Some((text, true)), Some(bw)) => self.read.add(format!("\"{text}\" as {bw}")),
            (Some((text, _)), _) => self.unread.add(format!("\"{text}\"")),
            (None, _) => {}
        }
        if self.directed {
            self.one_way.push(OneWay {
                from: a,
                to: b,
                class: e.class,
                params: e.params,
                id,
            });
        } else {
            graph.links.push(Link {
                a,
                b,
                class: e.class,
                shared: e.shared,
                params: e.params,
                a_to_b: e.a_to_b,
                b_to_a: e.b_to_a,
            });
        }
    }

    pub fn finish(self, graph: &mut Graph) {
        if self.loops > 0 {
            graph.notes.push(format!(
                "{} edge(s) from a node to itself were left out: a link joins two nodes (Shadow's \
                 self-loops stand for traffic between hosts of one node, which here crosses only \
                 their access links)",
                self.loops
            ));
        }
        if self.read.count > 0 {
            graph.notes.push(format!(
                "{} of {} edges gave their rate only in LinkLabel, read from it: {}",
                self.read.count,
                self.kept,
                self.read.list()
            ));
        }
        if self.unread.count > 0 {
            graph.notes.push(format!(
                "{} of {} edges had no rate and a LinkLabel with no speed in it: {}",
                self.unread.count,
                self.kept,
                self.unread.list()
            ));
        }
        if self.directed {
            pair_directed(graph, self.one_way);
        }
    }
}

impl Graph {
    /// Adds a node called `name` (already unique) with what its attributes say.
    pub fn add_node(&mut self, name: String, info: NodeAttrs) {
        self.nodes.push(Node {
            name,
            host: info.host,
            group: info.group,
            position: info.position,
            access_up: info.access_up,
            access_down: info.access_down,
        });
    }

    /// The native document: fills in what is missing, gathers classes, attaches hosts.
    pub fn into_imported(
        mut self,
        label: &str,
        options: &ImportOptions,
    ) -> Result<Imported, TopoError> {
        let option = |what: &str, text: &str, rate: bool| {
            let ok = if rate {
                units::parse_rate(text).map(drop)
            } else {
                units::parse_duration(text).map(drop)
            };
            ok.map_err(|e| {
                fail(
                    label,
                    None,
                    None,
                    ErrorKind::BadValue,
                    format!("import option {what}: {e}"),
                )
            })
        };
        option("default bandwidth", &options.default_bw, true)?;
        option("default delay", &options.default_delay, false)?;
        option("access bandwidth", &options.access_bw, true)?;
        option("access delay", &options.access_delay, false)?;
        option("Inet delay per unit", &options.inet_delay_per_unit, false)?;
        // At most the speed of light: a faster signal would make delays shorter than physics.
        units::check_number(options.km_per_s, Range::above(0.0, LIGHT_KM_PER_S)).map_err(|e| {
            fail(
                label,
                None,
                None,
                ErrorKind::BadValue,
                format!("import option signal speed (km/s): {e}"),
            )
        })?;
        let mut notes = std::mem::take(&mut self.notes);
        self.gather_classes();
        self.fill_gaps(label, options, &mut notes)?;
        let mut file = TopologyFile {
            // The name is fixed here, so that the native file keeps it when renamed.
            topology: Some(Meta {
                name: self.name.clone().or_else(|| {
                    std::path::Path::new(label)
                        .file_stem()
                        .map(|s| s.to_string_lossy().into_owned())
                }),
                routing: self.routing.clone(),
                ..Meta::default()
            }),
            classes: self.classes.clone(),
            ..TopologyFile::default()
        };
        for n in &self.nodes {
            let entry = NodeEntry::new(n.name.clone(), n.group.clone(), n.position);
            if n.host {
                file.hosts.push(entry);
            } else {
                file.routers.push(entry);
            }
        }
        file.links = self
            .links
            .iter()
            .map(|l| LinkEntry {
                a: self.nodes[l.a].name.clone(),
                b: self.nodes[l.b].name.clone(),
                class: l.class.clone(),
                shared: l.shared,
                params: l.params.clone(),
                a_to_b: l.a_to_b.clone(),
                b_to_a: l.b_to_a.clone(),
                ..LinkEntry::default()
            })
            .collect();
        self.attach_hosts(&mut file, label, options, &mut notes)?;
        Ok(Imported {
            file,
            notes,
            cores: None,
        })
    }

    /// A class named by links but not defined by the file gets the parameters all its links
    /// share, which then leave the links: the class says what the kind of link is like.
    fn gather_classes(&mut self) {
        let mut shared: BTreeMap<String, LinkParams> = BTreeMap::new();
        for l in &self.links {
            let Some(c) = &l.class else { continue };
            if self.classes.contains_key(c) {
                continue;
            }
            let next = match shared.get(c) {
                None => l.params.clone(),
                Some(p) => params::common(p, &l.params),
            };
            shared.insert(c.clone(), next);
        }
        for l in &mut self.links {
            if let Some(common) = l.class.as_ref().and_then(|c| shared.get(c)) {
                l.params = params::minus(&l.params, common).unwrap_or_default();
            }
        }
        self.classes.extend(shared);
    }

    /// Rates and delays the file did not give: delays from positions where both ends have one,
    /// otherwise the options' defaults. Each kind of fill is one note with its count.
    fn fill_gaps(
        &mut self,
        label: &str,
        options: &ImportOptions,
        notes: &mut Vec<String>,
    ) -> Result<(), TopoError> {
        let speed = Speed {
            km_per_s: options.km_per_s,
            ns_per_unit: units::parse_duration(&options.inet_delay_per_unit)
                .expect("checked in into_imported")
                .as_nanos(),
        };
        let total = self.links.len();
        let (mut no_bw, mut by_distance, mut no_delay) = (0, 0, 0);
        let mut unplaced = BTreeMap::new();
        let mut planes = 0;
        for l in &mut self.links {
            let class = l.class.as_ref().and_then(|c| self.classes.get(c));
            let has = |l: &Link, key: fn(&LinkParams) -> bool| {
                key(&l.params)
                    || class.is_some_and(key)
                    || (l.a_to_b.as_ref().is_some_and(key) && l.b_to_a.as_ref().is_some_and(key))
            };
            if !has(l, |p| p.bw.is_some()) {
                l.params.bw = Some(options.default_bw.clone());
                no_bw += 1;
            }
            if has(l, |p| p.delay.is_some()) {
                continue;
            }
            let (a, b) = (&self.nodes[l.a], &self.nodes[l.b]);
            let delay = a.position.zip(b.position).and_then(|(pa, pb)| {
                geo::delay(pa, pb, speed).map(|d| (matches!(pa, Position::Plane { .. }), d))
            });
            match delay {
                Some((_, Err(seconds))) => {
                    return Err(fail(
                        label,
                        None,
                        Some(format!("link {}-{}", a.name, b.name)),
                        ErrorKind::BadValue,
                        format!(
                            "the distance between its ends gives a delay of {seconds:.1e} s, above \
                             the limit of {}; check their coordinates (or give the link a delay)",
                            units::format_duration(geo::MAX_DISTANCE_DELAY)
                        ),
                    ))
                }
                Some((plane, Ok(d))) => {
                    l.params.delay = Some(units::format_duration(d));
                    by_distance += 1;
                    planes += usize::from(plane);
                }
                _ => {
                    l.params.delay = Some(options.default_delay.clone());
                    no_delay += 1;
                    for n in [a, b].into_iter().filter(|n| n.position.is_none()) {
                        unplaced.insert(n.name.clone(), ());
                    }
                }
            }
        }
        if no_bw > 0 {
            notes.push(format!(
                "{no_bw} of {total} links had no rate: bw = \"{}\" assumed",
                options.default_bw
            ));
        }
        if by_distance > planes {
            notes.push(format!(
                "{} of {total} links: delay from the great-circle distance between their ends \
                 at {} km/s",
                by_distance - planes,
                options.km_per_s
            ));
        }
        if planes > 0 {
            notes.push(format!(
                "{planes} of {total} links: delay from the distance on the plane at {} per unit",
                options.inet_delay_per_unit
            ));
        }
        if no_delay > 0 {
            let names: Vec<String> = unplaced.into_keys().collect();
            let shown = names.iter().take(5).cloned().collect::<Vec<_>>().join(", ");
            let more = if names.len() > 5 { ", ..." } else { "" };
            notes.push(format!(
                "{no_delay} of {total} links had no delay and no length ({} node(s) without \
                 coordinates: {shown}{more}): delay = \"{}\" assumed",
                names.len(),
                options.default_delay
            ));
        }
        Ok(())
    }

    /// Attaches `options.hosts` to the routers of the largest connected part (hosts elsewhere
    /// could not reach the others, and the loader refuses that).
    fn attach_hosts(
        &self,
        file: &mut TopologyFile,
        label: &str,
        options: &ImportOptions,
        notes: &mut Vec<String>,
    ) -> Result<(), TopoError> {
        let plan = &options.hosts;
        for name in plan.per_router.keys() {
            let known = self.nodes.iter().any(|n| !n.host && &n.name == name);
            if !known {
                let routers: Vec<&str> = self
                    .nodes
                    .iter()
                    .filter(|n| !n.host)
                    .map(|n| n.name.as_str())
                    .collect();
                return Err(fail(
                    label,
                    None,
                    None,
                    ErrorKind::UnknownName,
                    format!(
                        "hosts per router: \"{name}\" is not a router{}",
                        crate::schema::did_you_mean(name, &routers)
                    ),
                ));
            }
        }
        if plan.is_empty() {
            return Ok(());
        }
        let main = self.largest_part();
        // Counted before any is attached: `--hosts-per-router 100000000` is refused, not built.
        let adding = self
            .nodes
            .iter()
            .zip(&main)
            .filter(|(n, &in_main)| !n.host && in_main)
            .fold(0usize, |sum, (n, _)| {
                sum.saturating_add(plan.count(&n.name))
            });
        let (nodes, links) = (
            self.nodes.len().saturating_add(adding),
            self.links.len().saturating_add(adding),
        );
        if nodes > MAX_NODES || links > MAX_LINKS {
            return Err(fail(
                label,
                None,
                None,
                ErrorKind::BadValue,
                format!(
                    "hosts per router: attaching {adding} hosts makes {nodes} nodes and {links} \
                     links; the limit is {MAX_NODES} nodes and {MAX_LINKS} links, what loads in \
                     a few GiB (docs/limits.md)"
                ),
            ));
        }
        let mut names = Names::default();
        for n in &self.nodes {
            names.claim(&n.name);
        }
        let class = names.claim("access");
        file.classes.insert(
            class.clone(),
            LinkParams {
                bw: Some(options.access_bw.clone()),
                delay: Some(options.access_delay.clone()),
                ..LinkParams::default()
            },
        );
        let (mut attached, mut left_out, mut shaped) = (0, 0, 0);
        for (i, router) in self.nodes.iter().enumerate().filter(|(_, n)| !n.host) {
            let count = plan.count(&router.name);
            if count == 0 {
                continue;
            }
            if !main[i] {
                left_out += 1;
                continue;
            }
            for k in 1..=count {
                let host = names.claim(&format!("{}-h{k}", router.name));
                // No position: the host is drawn beside its router.
                file.hosts.push(NodeEntry::new(
                    host.clone(),
                    Some(router.name.clone()),
                    None,
                ));
                let direction = |bw: &Option<String>| {
                    bw.as_ref().map(|bw| LinkParams {
                        bw: Some(bw.clone()),
                        ..LinkParams::default()
                    })
                };
                shaped += usize::from(router.access_up.is_some() || router.access_down.is_some());
                file.links.push(LinkEntry {
                    a: host,
                    b: router.name.clone(),
                    class: Some(class.clone()),
                    a_to_b: direction(&router.access_up),
                    b_to_a: direction(&router.access_down),
                    ..LinkEntry::default()
                });
                attached += 1;
            }
        }
        notes.push(format!(
            "{attached} host(s) attached (group = their router), each by a link of class \
             \"{class}\": bw = \"{}\", delay = \"{}\"",
            options.access_bw, options.access_delay
        ));
        if shaped > 0 {
            notes.push(format!(
                "{shaped} access link(s) take their rates from their node's \
                 host_bandwidth_up / host_bandwidth_down"
            ));
        }
        if left_out > 0 {
            notes.push(format!(
                "{left_out} router(s) outside the largest connected part got no hosts (they \
                 could not reach the others)"
            ));
        }
        Ok(())
    }

    /// Marks the nodes of the largest connected part (the first such part on a tie).
    fn largest_part(&self) -> Vec<bool> {
        let n = self.nodes.len();
        let mut adj = vec![Vec::new(); n];
        for l in &self.links {
            adj[l.a].push(l.b);
            adj[l.b].push(l.a);
        }
        let mut part = vec![usize::MAX; n];
        let mut sizes = Vec::new();
        for start in 0..n {
            if part[start] != usize::MAX {
                continue;
            }
            let id = sizes.len();
            let mut queue = VecDeque::from([start]);
            part[start] = id;
            let mut size = 0;
            while let Some(x) = queue.pop_front() {
                size += 1;
                for &y in &adj[x] {
                    if part[y] == usize::MAX {
                        part[y] = id;
                        queue.push_back(y);
                    }
                }
            }
            sizes.push(size);
        }
        let best = (0..sizes.len()).max_by_key(|&i| (sizes[i], std::cmp::Reverse(i)));
        part.iter().map(|&p| Some(p) == best).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::HostPlan;

    fn router(name: &str, position: Option<Position>) -> Node {
        Node {
            name: name.into(),
            position,
            ..Node::default()
        }
    }

    #[test]
    fn names_are_sanitized_and_made_unique() {
        let mut names = Names::default();
        assert_eq!(names.claim("New York"), "New_York");
        assert_eq!(names.claim("New York"), "New_York-2");
        assert_eq!(names.claim(" "), "n");
        assert_eq!(names.claim("a:b,c=d"), "a_b_c_d");
    }

    #[test]
    fn gaps_are_filled_and_counted_and_hosts_go_to_the_main_part() {
        let earth = |lat, lon| Some(Position::Earth { lat, lon });
        let mut g = Graph {
            nodes: vec![
                router("a", earth(0.0, 0.0)),
                router("b", earth(0.0, 1.0)),
                router("c", None),
                router("lonely", None),
            ],
            ..Graph::default()
        };
        for (a, b) in [(0, 1), (1, 2)] {
            g.links.push(Link {
                a,
                b,
                ..Link::default()
            });
        }
        let options = ImportOptions {
            hosts: HostPlan::parse("1,b=2").unwrap(),
            ..ImportOptions::default()
        };
        let out = g.into_imported("t", &options).unwrap();
        // One degree of longitude at the equator: 111.19 km, 556 us at 200 000 km/s.
        assert_eq!(out.file.links[0].params.delay.as_deref(), Some("556us"));
        assert_eq!(out.file.links[1].params.delay.as_deref(), Some("1ms"));
        assert_eq!(out.file.hosts.len(), 4, "a: 1, b: 2, c: 1, lonely: 0");
        let notes = out.notes.join("\n");
        assert!(notes.contains("2 of 2 links had no rate"), "{notes}");
        assert!(
            notes.contains("1 node(s) without coordinates: c)"),
            "{notes}"
        );
        assert!(notes.contains("1 router(s) outside"), "{notes}");
        crate::resolve(&out.file, "t").unwrap();
    }

    #[test]
    fn opposite_one_way_edges_become_one_link_with_direction_overrides() {
        let mut g = Graph {
            nodes: vec![router("a", None), router("b", None)],
            ..Graph::default()
        };
        let edge = |from, to, bw: &str, id: &str| OneWay {
            from,
            to,
            class: None,
            params: LinkParams {
                bw: Some(bw.into()),
                delay: Some("1ms".into()),
                ..LinkParams::default()
            },
            id: id.into(),
        };
        pair_directed(
            &mut g,
            vec![
                edge(0, 1, "1Mbit", "e0"),
                edge(1, 0, "2Mbit", "e1"),
                edge(0, 1, "1Mbit", "e2"),
            ],
        );
        assert_eq!(g.links.len(), 2);
        assert_eq!(g.links[0].params.delay.as_deref(), Some("1ms"));
        assert_eq!(
            g.links[0].b_to_a.as_ref().unwrap().bw.as_deref(),
            Some("2Mbit")
        );
        assert_eq!(g.directed_edges[1].direction, Direction::BtoA);
        assert_eq!(g.directed_edges[2].link, 1);
        assert!(g.notes[0].starts_with("1 one-way edge"));
    }
}
