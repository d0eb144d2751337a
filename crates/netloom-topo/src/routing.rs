//! Kernel routers' routing: the `[routing]` section and the routing keys of router tables,
//! layered (built-in defaults, then `[routing]`, then the router's own table) and checked into
//! each kernel router's `KernelRouting`.

use crate::doc::{NodeEntry, NodeTable, RoutingSection, TopologyFile};
use crate::error::{ErrorKind, Issue, Seg, Subject};
use crate::layer::key_path;
use crate::model::{NodeKind, Topology};
use crate::schema::did_you_mean;
use crate::units::parse_duration;
use netloom_time::Duration;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

/// The largest AS number: 2^32 − 2 (4294967295 is reserved, RFC 7300).
pub const MAX_ASN: u32 = u32::MAX - 1;

/// How a kernel router's routes come about (`routing`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RoutingProtocol {
    /// netloom computes the routes and installs them; no daemon runs.
    #[default]
    Static,
    /// OSPFv2 and OSPFv3 on links to routers of the same AS (or where neither has one); eBGP
    /// on links to routers of another AS.
    Ospf,
    /// eBGP on every link to another kernel router, each in another AS.
    Bgp,
}

/// Which routing suite runs a kernel router's protocol (`daemon`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RoutingDaemon {
    /// FRRouting (Debian's `frr`): OSPFv2, OSPFv3, BGP.
    #[default]
    Frr,
    /// BIRD 2 (Debian's `bird2`): OSPFv2 and OSPFv3.
    Bird,
}

/// A kernel router's routing, every layer applied and checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelRouting {
    /// The protocol.
    pub protocol: RoutingProtocol,
    /// The suite that runs it.
    pub daemon: RoutingDaemon,
    /// Its AS number, from its own `asn` or its group's in `[routing] asn`; in 1..=`MAX_ASN`.
    pub asn: Option<u32>,
    /// The OSPF area of its links (default 0.0.0.0).
    pub area: Ipv4Addr,
    /// The OSPF hello interval: whole seconds from 1 s to 65535 s (default 10 s).
    pub hello: Duration,
    /// The OSPF dead interval: whole seconds, longer than `hello` (default 40 s).
    pub dead: Duration,
    /// The user's own configuration file (relative paths resolved against the topology file's
    /// directory); it exists.
    pub config: Option<PathBuf>,
}

impl Default for KernelRouting {
    /// Static routes; for a protocol, FRR in area 0.0.0.0 with FRR's timers (10 s, 40 s).
    fn default() -> Self {
        KernelRouting {
            protocol: RoutingProtocol::Static,
            daemon: RoutingDaemon::Frr,
            asn: None,
            area: Ipv4Addr::UNSPECIFIED,
            hello: Duration::from_secs(10),
            dead: Duration::from_secs(40),
            config: None,
        }
    }
}

const PROTOCOLS: [(&str, RoutingProtocol); 3] = [
    ("static", RoutingProtocol::Static),
    ("ospf", RoutingProtocol::Ospf),
    ("bgp", RoutingProtocol::Bgp),
];
const DAEMONS: [(&str, RoutingDaemon); 2] =
    [("frr", RoutingDaemon::Frr), ("bird", RoutingDaemon::Bird)];

/// The routing keys of a node table that are set, by key.
fn set_keys(t: &NodeTable) -> Vec<&'static str> {
    [
        ("routing", t.routing.is_some()),
        ("asn", t.asn.is_some()),
        ("area", t.area.is_some()),
        ("daemon", t.daemon.is_some()),
        ("config", t.config.is_some()),
        ("hello", t.hello.is_some()),
        ("dead", t.dead.is_some()),
    ]
    .into_iter()
    .filter_map(|(key, set)| set.then_some(key))
    .collect()
}

/// Resolves every kernel router's routing into `topo` (nodes already made); problems go to
/// `issues`. Routing keys on hosts and engine routers are errors. `label` is the topology
/// file's path, against whose directory `config` files are found.
pub(crate) fn resolve(
    file: &TopologyFile,
    label: &str,
    topo: &mut Topology,
    issues: &mut Vec<Issue>,
) {
    let section = file.routing.clone().unwrap_or_default();
    let mut check = Checker { issues };
    let base = check.section(&section, topo);
    let dir = Path::new(label).parent().unwrap_or(Path::new(""));
    for (key, entries) in [("hosts", &file.hosts), ("routers", &file.routers)] {
        for (i, entry) in entries.iter().enumerate() {
            let table = match entry {
                NodeEntry::Full(table) => table,
                // A bare name has nothing of its own: a kernel router takes the defaults.
                NodeEntry::Name(name) => {
                    if let Some(id) = topo.node_id(name).filter(|&id| topo.node(id).kernel) {
                        let routing = check.finish(&base, None, name, &[]);
                        topo.nodes[id as usize].routing = Some(routing);
                    }
                    continue;
                }
            };
            let Some(id) = topo.node_id(&table.name) else {
                continue;
            };
            let node = &topo.nodes[id as usize];
            let path = vec![Seg::Key(key.into()), Seg::Index(i)];
            let subject = Subject::Text(format!(
                "{} {}",
                if node.kind == NodeKind::Host {
                    "host"
                } else {
                    "router"
                },
                node.name
            ));
            let keys = set_keys(table);
            if !node.kernel {
                if let Some(first) = keys.first() {
                    let advice = if node.kind == NodeKind::Host {
                        "a host runs no routing protocol".to_string()
                    } else {
                        format!(
                            "{} is an engine router (netloom routes it); make it a kernel router with kernel = true (or [topology] kernel_routers = true) to run routing daemons",
                            node.name
                        )
                    };
                    check.push(
                        key_path(&path, &[first]),
                        &subject,
                        format!("`{first}` applies to kernel routers only: {advice}"),
                    );
                }
                continue;
            }
            let at = Place { path, subject };
            let own = check.table(
                table,
                &base,
                &at,
                topo.node(id).group.as_deref(),
                &section,
                dir,
            );
            let routing = check.finish(&own, Some(&at), &table.name, &keys);
            topo.nodes[id as usize].routing = Some(routing);
        }
    }
}

/// Where a router's keys are, for its messages.
struct Place {
    path: Vec<Seg>,
    subject: Subject,
}

struct Checker<'i> {
    issues: &'i mut Vec<Issue>,
}

impl Checker<'_> {
    fn push(&mut self, path: Vec<Seg>, subject: &Subject, message: String) {
        self.issues.push(Issue {
            kind: ErrorKind::BadValue,
            path,
            subject: subject.clone(),
            message,
        });
    }

    /// `[routing]` over the built-in defaults (AS numbers by group are applied per router).
    fn section(&mut self, s: &RoutingSection, topo: &Topology) -> KernelRouting {
        let subject = Subject::Text("[routing]".into());
        let at = |key: &str| key_path(&[], &["routing", key]);
        let mut r = KernelRouting::default();
        if let Some(text) = &s.protocol {
            r.protocol = self
                .choice(text, &PROTOCOLS, at("protocol"), &subject, "protocol")
                .unwrap_or_default();
        }
        if let Some(text) = &s.daemon {
            r.daemon = self
                .choice(text, &DAEMONS, at("daemon"), &subject, "daemon")
                .unwrap_or_default();
        }
        if let Some(text) = &s.area {
            r.area = self.area(text, at("area"), &subject).unwrap_or(r.area);
        }
        if let Some(text) = &s.hello {
            r.hello = self
                .seconds(text, at("hello"), &subject, "hello")
                .unwrap_or(r.hello);
        }
        if let Some(text) = &s.dead {
            r.dead = self
                .seconds(text, at("dead"), &subject, "dead")
                .unwrap_or(r.dead);
        }
        let groups: Vec<&str> = topo
            .nodes
            .iter()
            .filter(|n| n.kind == NodeKind::Router)
            .filter_map(|n| n.group.as_deref())
            .collect();
        for (group, asn) in &s.asn {
            let path = key_path(&[], &["routing", "asn", group]);
            self.asn(*asn, path.clone(), &subject);
            if !groups.contains(&group.as_str()) {
                self.push(
                    path,
                    &subject,
                    format!(
                        "no router is in group \"{group}\"{}; asn = {{ ... }} gives AS numbers to the groups of routers (routers = [{{ name = \"r1\", group = \"{group}\" }}])",
                        did_you_mean(group, &groups)
                    ),
                );
            }
        }
        r
    }

    /// A router's own keys over `base` (and its group's AS number from `section`).
    fn table(
        &mut self,
        t: &NodeTable,
        base: &KernelRouting,
        at: &Place,
        group: Option<&str>,
        section: &RoutingSection,
        dir: &Path,
    ) -> KernelRouting {
        let path = |key: &str| key_path(&at.path, &[key]);
        let s = &at.subject;
        let mut r = base.clone();
        if let Some(text) = &t.routing {
            r.protocol = self
                .choice(text, &PROTOCOLS, path("routing"), s, "routing")
                .unwrap_or(r.protocol);
        }
        if let Some(text) = &t.daemon {
            r.daemon = self
                .choice(text, &DAEMONS, path("daemon"), s, "daemon")
                .unwrap_or(r.daemon);
        }
        if let Some(text) = &t.area {
            r.area = self.area(text, path("area"), s).unwrap_or(r.area);
        }
        if let Some(text) = &t.hello {
            r.hello = self
                .seconds(text, path("hello"), s, "hello")
                .unwrap_or(r.hello);
        }
        if let Some(text) = &t.dead {
            r.dead = self
                .seconds(text, path("dead"), s, "dead")
                .unwrap_or(r.dead);
        }
        r.asn = match t.asn {
            Some(asn) => self.asn(asn, path("asn"), s),
            None => group
                .and_then(|g| section.asn.get(g))
                .and_then(|&asn| u32::try_from(asn).ok()),
        };
        if let Some(name) = &t.config {
            let file = dir.join(name);
            if file.is_file() {
                r.config = Some(file);
            } else {
                self.push(
                    path("config"),
                    s,
                    format!(
                        "config file {} does not exist (a relative path is taken from the topology file's directory)",
                        file.display()
                    ),
                );
            }
        }
        r
    }

    /// Checks what only the layers together say; `at` is where the router's own keys are
    /// (`None`: a bare name, where nothing of its own can be wrong).
    fn finish(
        &mut self,
        r: &KernelRouting,
        at: Option<&Place>,
        name: &str,
        own_keys: &[&str],
    ) -> KernelRouting {
        let (path, subject) = match at {
            Some(at) => (at.path.clone(), at.subject.clone()),
            None => (
                Vec::new(),
                Subject::Text(format!("router {}", crate::shown(name))),
            ),
        };
        // A problem of the layers together is told at the router's key if it set it.
        let key = |k: &str| {
            if own_keys.contains(&k) {
                key_path(&path, &[k])
            } else {
                path.clone()
            }
        };
        if r.dead <= r.hello {
            self.push(
                key("dead"),
                &subject,
                format!(
                    "dead = {} must be longer than hello = {} (a neighbour would die between two hellos; 4 hellos is usual)",
                    r.dead, r.hello
                ),
            );
        }
        if r.protocol == RoutingProtocol::Bgp && r.asn.is_none() {
            self.push(
                key("routing"),
                &subject,
                format!("routing = \"bgp\" needs the router's AS number: asn = 65001 on {name}, or for its group in [routing] asn"),
            );
        }
        if r.protocol == RoutingProtocol::Bgp
            && r.daemon == RoutingDaemon::Bird
            && r.config.is_none()
        {
            self.push(
                key("daemon"),
                &subject,
                "netloom generates BGP configurations for daemon = \"frr\" only; BIRD runs OSPF here (or give it your own config)".into(),
            );
        }
        r.clone()
    }

    fn choice<T: Copy>(
        &mut self,
        text: &str,
        choices: &[(&str, T)],
        path: Vec<Seg>,
        subject: &Subject,
        key: &str,
    ) -> Option<T> {
        if let Some((_, value)) = choices.iter().find(|(name, _)| *name == text) {
            return Some(*value);
        }
        let names: Vec<&str> = choices.iter().map(|(n, _)| *n).collect();
        let quoted: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
        self.push(
            path,
            subject,
            format!(
                "{key} \"{text}\" is not known{}; write {}",
                did_you_mean(text, &names),
                quoted.join(", ")
            ),
        );
        None
    }

    fn asn(&mut self, asn: i64, path: Vec<Seg>, subject: &Subject) -> Option<u32> {
        match u32::try_from(asn) {
            Ok(n) if (1..=MAX_ASN).contains(&n) => Some(n),
            _ => {
                self.push(path, subject, format!("asn {asn} is out of range; AS numbers go from 1 to {MAX_ASN} (private ones: 64512 to 65534)"));
                None
            }
        }
    }

    fn area(&mut self, text: &str, path: Vec<Seg>, subject: &Subject) -> Option<Ipv4Addr> {
        let area = text
            .parse::<Ipv4Addr>()
            .ok()
            .or_else(|| text.parse::<u32>().ok().map(Ipv4Addr::from));
        if area.is_none() {
            self.push(path, subject, format!("area \"{text}\" is not an OSPF area; write a dotted quad like \"0.0.0.1\" or a number like 1"));
        }
        area
    }

    fn seconds(
        &mut self,
        text: &str,
        path: Vec<Seg>,
        subject: &Subject,
        key: &str,
    ) -> Option<Duration> {
        let problem = match parse_duration(text) {
            Err(e) => format!("{key} {} {}", e.input, e.problem),
            Ok(d) if d.as_nanos() % 1_000_000_000 == 0 && (1..=u64::from(u16::MAX)).contains(&(d.as_nanos() / 1_000_000_000)) => return Some(d),
            Ok(_) => format!("{key} \"{text}\" is not a whole number of seconds from 1s to 65535s (OSPF carries its timers in seconds)"),
        };
        self.push(path, subject, problem);
        None
    }
}
