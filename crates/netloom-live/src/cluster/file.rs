//! The cluster file: the machines of a run over several machines, each with the address that
//! hand-offs and control reach it at, how to start a worker there (SSH by default), its CPUs,
//! and optionally which nodes it emulates (docs/cluster.md). Errors name the file and line, and
//! suggest the key or node meant.

use netloom_topo::{did_you_mean, Topology};
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use toml_edit::{ImDocument, Item, Table, Value};

/// The UDP port hand-offs arrive on by default: GENEVE's (RFC 8926), so tools decode them.
pub const GENEVE_PORT: u16 = 6081;

/// The keys of a `[[machine]]` table.
const MACHINE_KEYS: &[&str] = &[
    "name", "address", "ssh", "cpus", "nodes", "port", "launcher", "netloom",
];
/// The keys of the file's top level.
const TOP_KEYS: &[&str] = &["machine"];

/// One machine of a cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Machine {
    /// Its name, as errors and reports say it; prefixes its hosts' namespaces.
    pub name: String,
    /// Where the other workers send it hand-offs (UDP, `port`).
    pub address: IpAddr,
    /// The UDP port its hand-offs arrive on.
    pub port: u16,
    /// The command that runs a program there, to which `netloom worker ...` is appended:
    /// `ssh -o BatchMode=yes root@ADDRESS` unless the file gives `ssh` or `launcher`.
    pub launcher: Vec<String>,
    /// The netloom program there.
    pub netloom: String,
    /// How many CPUs it gives the run; `None`: asked of its worker.
    pub cpus: Option<u32>,
    /// The nodes it emulates (hosts and routers: the pipes each sends into), if placed by hand.
    pub nodes: Vec<String>,
    /// The line of its `[[machine]]` table, for later errors.
    pub line: usize,
}

impl Machine {
    /// Where its hand-offs go.
    pub fn handoff_address(&self) -> SocketAddr {
        SocketAddr::new(self.address, self.port)
    }

    /// `netloom ARGS` on this machine, through its launcher.
    pub fn netloom_command<S: AsRef<std::ffi::OsStr>>(&self, args: &[S]) -> std::process::Command {
        let mut command = std::process::Command::new(&self.launcher[0]);
        command
            .args(&self.launcher[1..])
            .arg(&self.netloom)
            .args(args);
        command
    }
}

/// A cluster file, read and checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cluster {
    /// Where it was read from, for errors.
    pub file: String,
    /// Its machines, in the file's order: machine k runs worker k.
    pub machines: Vec<Machine>,
}

/// What is wrong with a cluster file: one line, naming the file and line.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ClusterError(pub String);

impl Cluster {
    /// Reads and checks the cluster file at `path`.
    pub fn read(path: &Path) -> Result<Cluster, ClusterError> {
        let text = netloom_topo::read::read_text(path, netloom_topo::read::CLUSTER)
            .map_err(|e| ClusterError(format!("{}: {e}", path.display())))?;
        Cluster::parse(&text, &path.display().to_string())
    }

    /// Parses the text of a cluster file; `file` names it in errors.
    pub fn parse(text: &str, file: &str) -> Result<Cluster, ClusterError> {
        let doc = ImDocument::parse(text).map_err(|e| {
            let line = e.span().map_or(1, |s| line_at(text, s.start));
            ClusterError(format!("{file}:{line}: {}", e.message()))
        })?;
        let at = |span: Option<std::ops::Range<usize>>| span.map_or(1, |s| line_at(text, s.start));
        let err = |span, message: String| ClusterError(format!("{file}:{}: {message}", at(span)));
        let top = doc.as_table();
        for (key, item) in top.iter() {
            if !TOP_KEYS.contains(&key) {
                return Err(err(
                    item.span().or(top.key(key).and_then(|k| k.span())),
                    unknown_key(key, TOP_KEYS, "the file's top level"),
                ));
            }
        }
        let tables = match top.get("machine") {
            Some(Item::ArrayOfTables(a)) => a,
            Some(item) => {
                return Err(err(
                    item.span(),
                    "machine must be [[machine]] tables".into(),
                ))
            }
            None => {
                return Err(ClusterError(format!(
                    "{file}: no [[machine]] table; a cluster has at least two machines"
                )))
            }
        };
        let mut machines = Vec::new();
        let mut names: HashMap<String, usize> = HashMap::new();
        for table in tables.iter() {
            let machine = machine(table, &err, &at)?;
            if let Some(first) = names.insert(machine.name.clone(), machine.line) {
                return Err(err(
                    table.span(),
                    format!(
                        "machine {:?} is named twice (first on line {first})",
                        machine.name
                    ),
                ));
            }
            machines.push(machine);
        }
        if machines.len() < 2 {
            return Err(ClusterError(format!("{file}: one [[machine]] only; a cluster has at least two (one machine is `netloom run` without --cluster)")));
        }
        let mut handoffs: HashMap<SocketAddr, &str> = HashMap::new();
        for m in &machines {
            if let Some(other) = handoffs.insert(m.handoff_address(), &m.name) {
                return Err(ClusterError(format!("{file}:{}: machines {other} and {} both take hand-offs at {}; give each its own address or port", m.line, m.name, m.handoff_address())));
            }
        }
        Ok(Cluster {
            file: file.to_string(),
            machines,
        })
    }

    /// Whether the file places the nodes itself (some machine lists `nodes`).
    pub fn placed(&self) -> bool {
        self.machines.iter().any(|m| !m.nodes.is_empty())
    }

    /// The machine of each node of `topology`, when the file places them: every node must be
    /// named by exactly one machine, and every name must be a node.
    pub fn node_machines(&self, topology: &Topology) -> Result<Vec<u32>, ClusterError> {
        let index: HashMap<&str, usize> = topology
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.name.as_str(), i))
            .collect();
        let names: Vec<&str> = topology.nodes.iter().map(|n| n.name.as_str()).collect();
        let mut owner: Vec<Option<usize>> = vec![None; names.len()];
        for (k, m) in self.machines.iter().enumerate() {
            for node in &m.nodes {
                let Some(&i) = index.get(node.as_str()) else {
                    return Err(ClusterError(format!(
                        "{}:{}: machine {}: the topology has no node {node:?}{}",
                        self.file,
                        m.line,
                        m.name,
                        did_you_mean(node, &names)
                    )));
                };
                if let Some(other) = owner[i].replace(k) {
                    return Err(ClusterError(format!("{}:{}: node {node} is on machines {} and {}; a node is emulated by one machine", self.file, m.line, self.machines[other].name, m.name)));
                }
            }
        }
        owner.iter().zip(&names).map(|(o, name)| {
            o.map(|k| k as u32).ok_or_else(|| ClusterError(format!("{}: node {name} is on no machine; when machines list their nodes, every node is listed once", self.file)))
        }).collect()
    }
}

/// One `[[machine]]` table, checked.
fn machine(
    table: &Table,
    err: &impl Fn(Option<std::ops::Range<usize>>, String) -> ClusterError,
    at: &impl Fn(Option<std::ops::Range<usize>>) -> usize,
) -> Result<Machine, ClusterError> {
    for (key, _) in table.iter() {
        if !MACHINE_KEYS.contains(&key) {
            return Err(err(
                table.key(key).and_then(|k| k.span()),
                unknown_key(key, MACHINE_KEYS, "a [[machine]]"),
            ));
        }
    }
    let span = |key: &str| table.get(key).and_then(|i| i.span());
    let string = |key: &str| -> Result<Option<String>, ClusterError> {
        match table.get(key) {
            None => Ok(None),
            Some(Item::Value(Value::String(s))) if !s.value().is_empty() => {
                Ok(Some(s.value().clone()))
            }
            Some(item) => Err(err(
                item.span(),
                format!("{key} must be a non-empty string"),
            )),
        }
    };
    let strings = |key: &str| -> Result<Vec<String>, ClusterError> {
        match table.get(key) {
            None => Ok(Vec::new()),
            Some(Item::Value(Value::Array(a))) => a
                .iter()
                .map(|v| match v {
                    Value::String(s) if !s.value().is_empty() => Ok(s.value().clone()),
                    _ => Err(err(
                        v.span(),
                        format!("{key} must be a list of non-empty strings"),
                    )),
                })
                .collect(),
            Some(item) => Err(err(item.span(), format!("{key} must be a list of strings"))),
        }
    };
    let line = at(table.span());
    let name =
        string("name")?.ok_or_else(|| err(table.span(), "a [[machine]] needs a name".into()))?;
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        || name.len() > 8
    {
        return Err(err(span("name"), format!("machine name {name:?}: 1 to 8 letters, digits, - or _ (it prefixes the names of its hosts' namespaces)")));
    }
    let address = string("address")?.ok_or_else(|| {
        err(
            table.span(),
            format!("machine {name} needs an address (where the other machines send it hand-offs)"),
        )
    })?;
    let address: IpAddr = address.parse().map_err(|_| {
        err(
            span("address"),
            format!("machine {name}: address {address:?} is not an IPv4 or IPv6 address"),
        )
    })?;
    let number = |key: &str, max: i64| -> Result<Option<i64>, ClusterError> {
        match table.get(key) {
            None => Ok(None),
            Some(Item::Value(Value::Integer(i))) if (1..=max).contains(i.value()) => {
                Ok(Some(*i.value()))
            }
            Some(item) => Err(err(
                item.span(),
                format!("machine {name}: {key} must be a whole number from 1 to {max}"),
            )),
        }
    };
    let cpus = number("cpus", 4096)?.map(|n| n as u32);
    let port = number("port", 65535)?.map_or(GENEVE_PORT, |n| n as u16);
    let ssh = string("ssh")?;
    let launcher = strings("launcher")?;
    if ssh.is_some() && !launcher.is_empty() {
        return Err(err(
            span("launcher"),
            format!("machine {name}: give ssh or launcher, not both"),
        ));
    }
    let launcher = match (launcher.is_empty(), ssh) {
        (false, _) => launcher,
        (true, ssh) => {
            let dest = ssh.unwrap_or_else(|| format!("root@{address}"));
            ["ssh", "-o", "BatchMode=yes", dest.as_str()]
                .map(String::from)
                .to_vec()
        }
    };
    Ok(Machine {
        netloom: string("netloom")?.unwrap_or_else(|| "netloom".into()),
        nodes: strings("nodes")?,
        name,
        address,
        port,
        launcher,
        cpus,
        line,
    })
}

fn unknown_key(key: &str, valid: &[&str], place: &str) -> String {
    format!(
        "unknown key {key:?} in {place}{}; valid: {}",
        did_you_mean(key, valid),
        valid.join(", ")
    )
}

/// The 1-based line of byte `offset` of `text`.
fn line_at(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO: &str = r#"
[[machine]]
name = "m1"
address = "10.0.0.1"
cpus = 4

[[machine]]
name = "m2"
address = "10.0.0.2"
ssh = "me@m2.example"
port = 7000
"#;

    #[test]
    fn two_machines_with_defaults_for_what_is_left_out() {
        let c = Cluster::parse(TWO, "c.toml").unwrap();
        let (m1, m2) = (&c.machines[0], &c.machines[1]);
        assert_eq!(m1.launcher, ["ssh", "-o", "BatchMode=yes", "root@10.0.0.1"]);
        assert_eq!((m1.cpus, m1.port, m1.line), (Some(4), GENEVE_PORT, 2));
        assert_eq!(m2.launcher.last().unwrap(), "me@m2.example");
        assert_eq!(
            (m2.cpus, m2.port, m2.netloom.as_str()),
            (None, 7000, "netloom")
        );
        assert!(!c.placed());
    }

    fn error(text: &str) -> String {
        Cluster::parse(text, "c.toml").unwrap_err().to_string()
    }

    #[test]
    fn errors_name_the_line_and_suggest_the_key() {
        let bad = TWO.replace("cpus = 4", "cpu = 4");
        assert_eq!(error(&bad), "c.toml:5: unknown key \"cpu\" in a [[machine]] (did you mean \"cpus\"?); valid: name, address, ssh, cpus, nodes, port, launcher, netloom");
        let bad = TWO.replace("10.0.0.2", "m2.local");
        assert!(
            error(&bad).starts_with("c.toml:9: machine m2: address \"m2.local\" is not"),
            "{}",
            error(&bad)
        );
        let bad = TWO.replace("port = 7000", "port = 70000");
        assert!(
            error(&bad).starts_with("c.toml:11: machine m2: port must be"),
            "{}",
            error(&bad)
        );
        let bad = TWO.replace("\"m2\"", "\"m1\"");
        assert_eq!(
            error(&bad),
            "c.toml:7: machine \"m1\" is named twice (first on line 2)"
        );
        let bad = TWO.replace("port = 7000", "launcher = [\"true\"]");
        assert!(error(&bad).contains("give ssh or launcher, not both"));
        assert!(error("[[machine]]\nname = \"a\"\naddress = \"::1\"\n").contains("at least two"));
        assert!(error("[[machine]\n").starts_with("c.toml:1: "));
        let bad = TWO
            .replace(
                "address = \"10.0.0.2\"",
                "address = \"10.0.0.1\"\nport = 6081",
            )
            .replace("port = 7000", "");
        assert!(
            error(&bad).contains("both take hand-offs at 10.0.0.1:6081"),
            "{}",
            error(&bad)
        );
    }

    #[test]
    fn placed_nodes_are_checked_against_the_topology() {
        use netloom_link::PipeConfig;
        use netloom_time::{Duration, Rate};
        use netloom_topo::{NodeKind, RoutingMetric};
        let mut t = Topology::new("t", RoutingMetric::Delay);
        let c = PipeConfig::new(Rate::bps(10_000_000), Duration::from_millis(5));
        let h1 = t.add_node("h1", NodeKind::Host, None);
        let r1 = t.add_node("r1", NodeKind::Router, None);
        let h2 = t.add_node("h2", NodeKind::Host, None);
        t.add_link(h1, r1, None, c, Some(c));
        t.add_link(r1, h2, None, c, Some(c));
        let placed = TWO
            .replace("cpus = 4", "nodes = [\"h1\", \"r1\"]")
            .replace("port = 7000", "nodes = [\"h2\"]");
        let c = Cluster::parse(&placed, "c.toml").unwrap();
        assert_eq!(c.node_machines(&t).unwrap(), [0, 0, 1]);
        let typo = Cluster::parse(&placed.replace("\"h2\"]", "\"h3\"]"), "c.toml").unwrap();
        assert_eq!(
            typo.node_machines(&t).unwrap_err().to_string(),
            "c.toml:7: machine m2: the topology has no node \"h3\" (did you mean \"h1\"?)"
        );
        let missing = Cluster::parse(&placed.replace(", \"r1\"", ""), "c.toml").unwrap();
        assert!(missing
            .node_machines(&t)
            .unwrap_err()
            .to_string()
            .contains("node r1 is on no machine"));
        let twice =
            Cluster::parse(&placed.replace("[\"h2\"]", "[\"h2\", \"r1\"]"), "c.toml").unwrap();
        assert!(twice
            .node_machines(&t)
            .unwrap_err()
            .to_string()
            .contains("node r1 is on machines m1 and m2"));
    }
}
