//! The file's schema: reads a parsed document (TOML or JSON, as a `serde_json::Value` tree) into
//! `doc` types, checking every key and value type on the way, so that a mistake is reported with
//! its path, the valid keys and a "did you mean". Units are parsed later, by `load`.
//!
//! Reading by hand instead of through derived `Deserialize` is deliberate: serde's
//! `deny_unknown_fields` does not work with the flattened `LinkEntry::params`, and its messages
//! for untagged enums ("data did not match any variant") do not say what would be valid.

use crate::doc::{
    DwellSpec, Fraction, GilbertElliottSpec, LinkEntry, LinkParams, LossSpec, MarkovSpec,
    MarkovStateSpec, Meta, NodeEntry, NodeTable, QueueSpec, RedSpec, RoutingSection, ScheduleEvent,
    ScheduleSpec, TopologyFile,
};
use crate::error::{ErrorKind, Issue, Seg, Subject};
use serde_json::{Map, Value};

mod params;

/// Keys of a parameter table (`[defaults]`, a class, a link, `a_to_b`, `b_to_a`); the ones
/// naming data files come last (`DATA_KEYS`).
pub(crate) const PARAM_KEYS: &[&str] = &[
    "bw",
    "delay",
    "jitter",
    "reorder",
    "loss",
    "queue",
    "aqm",
    "red",
    "codel_target",
    "codel_interval",
    "fq_quantum",
    "fq_flows",
    "ecn",
    "duplicate",
    "ooo_rate",
    "ooo_delay",
    "up",
    "mtu",
    "wireless",
    "snr",
    "netload",
    "collision",
    "retry_limit",
    "mac_profile",
    "trace",
];
/// Where `PARAM_KEYS` splits into the keys holding values and those naming data files.
const FIRST_DATA_KEY: usize = PARAM_KEYS.len() - 2;
/// The parameter keys that hold values (numbers, switches, names), as opposed to data files.
pub(crate) const VALUE_KEYS: &[&str] = PARAM_KEYS.split_at(FIRST_DATA_KEY).0;
/// The parameter keys naming data files, which are read once, when the topology is loaded.
pub(crate) const DATA_KEYS: &[&str] = PARAM_KEYS.split_at(FIRST_DATA_KEY).1;
/// The keys of a `[[link]]` table besides its parameters.
pub(crate) const LINK_KEYS: &[&str] = &[
    "a", "b", "class", "shared", "a_to_b", "b_to_a", "schedule", "markov",
];
const SCHEDULE_KEYS: &[&str] = &["every", "events"];
const EVENT_KEYS: &[&str] = &["at", "from", "to", "set"];
const MARKOV_KEYS: &[&str] = &["start", "states"];
const STATE_KEYS: &[&str] = &["dwell", "next", "set"];
const TOP_KEYS: &[&str] = &[
    "topology", "defaults", "classes", "hosts", "routers", "link", "routing",
];
const META_KEYS: &[&str] = &["name", "routing", "kernel_routers", "addresses"];
const NODE_KEYS: &[&str] = &[
    "name", "group", "lat", "lon", "x", "y", "kernel", "routing", "asn", "area", "daemon",
    "config", "hello", "dead", "ipv4", "cpu",
];
/// The keys of `[routing]`: what kernel routers run unless their own tables say otherwise.
const ROUTING_KEYS: &[&str] = &["protocol", "daemon", "area", "hello", "dead", "asn"];
const RED_KEYS: &[&str] = &["min_th", "max_th", "max_p", "weight"];
const GE_KEYS: &[&str] = &["model", "p", "r", "bad_loss", "good_loss"];

/// Words people write for a key, mapped to the key: "did you mean" finds them even when the
/// spelling is far from the key itself ("bandwidth" → "bw").
const ALIASES: &[(&str, &str)] = &[
    ("bandwidth", "bw"),
    ("rate", "bw"),
    ("latency", "delay"),
    ("buffer", "queue"),
    ("limit", "queue"),
    ("queue_size", "queue"),
    ("dup", "duplicate"),
    ("links", "link"),
    ("host", "hosts"),
    ("router", "routers"),
    ("class", "classes"),
    ("default", "defaults"),
];

/// The closest valid word to `word`, if it is close enough to be a likely typo.
pub(crate) fn suggest<'a>(word: &str, valid: &[&'a str]) -> Option<&'a str> {
    let close = |a: &str, b: &str| {
        let d = strsim::osa_distance(&a.to_lowercase(), &b.to_lowercase());
        let limit = if a.len().min(b.len()) >= 4 { 2 } else { 1 };
        (d <= limit).then_some(d)
    };
    let direct = valid
        .iter()
        .filter_map(|v| close(word, v).map(|d| (d, *v)))
        .min_by_key(|(d, _)| *d);
    let alias = ALIASES
        .iter()
        .filter(|(_, key)| valid.contains(key))
        .filter_map(|(alias, key)| close(word, alias).map(|d| (d, *key)))
        .min_by_key(|(d, _)| *d);
    match (direct, alias) {
        (Some(a), Some(b)) => Some(if b.0 < a.0 { b.1 } else { a.1 }),
        (a, b) => a.or(b).map(|(_, k)| k),
    }
}

/// ' (did you mean "x"?)' or nothing.
pub fn did_you_mean(word: &str, valid: &[&str]) -> String {
    suggest(word, valid)
        .map(|s| format!(" (did you mean {:?}?)", crate::shown(s)))
        .unwrap_or_default()
}

/// How a value looks, for "must be X, not Y" messages.
fn describe(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => format!("the number {n}"),
        Value::String(s) => format!("the string {s:?}"),
        Value::Array(_) => "an array".into(),
        // The toml crate hands date-times to serde as a one-key table with this private key.
        Value::Object(m) if m.contains_key("$__toml_private_datetime") => "a date-time".into(),
        Value::Object(_) => "a table".into(),
    }
}

/// Where a value sits: its path, who it concerns, and its key as shown in messages
/// (relative to the subject, e.g. `a_to_b.bw` for a link).
#[derive(Clone)]
struct At {
    path: Vec<Seg>,
    subject: Subject,
    prefix: String,
}

impl At {
    fn key(&self, key: &str) -> At {
        let mut path = self.path.clone();
        path.push(Seg::Key(key.to_string()));
        At {
            path,
            subject: self.subject.clone(),
            prefix: format!("{}{key}.", self.prefix),
        }
    }

    fn index(&self, i: usize) -> At {
        let mut path = self.path.clone();
        path.push(Seg::Index(i));
        At {
            path,
            subject: self.subject.clone(),
            prefix: self.prefix.clone(),
        }
    }

    /// The dotted name of `key` under this place, as shown in messages.
    fn name(&self, key: &str) -> String {
        format!("{}{key}", self.prefix)
    }
}

#[derive(Default)]
struct Reader {
    issues: Vec<Issue>,
}

impl Reader {
    fn push(&mut self, kind: ErrorKind, at: &At, message: String) {
        self.issues.push(Issue {
            kind,
            path: at.path.clone(),
            subject: at.subject.clone(),
            message,
        });
    }

    /// `v` as a table whose keys are all in `valid`; unknown keys are reported (and skipped).
    /// `what` names the table in messages: "[[link]]", "[defaults]", "loss".
    fn table<'v>(
        &mut self,
        v: &'v Value,
        at: &At,
        what: &str,
        valid: &[&str],
    ) -> Option<&'v Map<String, Value>> {
        let Value::Object(map) = v else {
            self.push(
                ErrorKind::WrongType,
                at,
                format!("{what} must be a table, not {}", describe(v)),
            );
            return None;
        };
        for key in map.keys() {
            if !valid.contains(&key.as_str()) {
                self.push(
                    ErrorKind::UnknownKey,
                    &at.key(key),
                    format!(
                        "unknown key \"{}\"{}{}; valid keys: {}",
                        crate::shown(&at.name(key)),
                        // A dotted key already says where it is.
                        if at.prefix.is_empty() {
                            format!(" in {what}")
                        } else {
                            String::new()
                        },
                        did_you_mean(key, valid),
                        valid.join(", ")
                    ),
                );
            }
        }
        Some(map)
    }

    /// The value of `key`, treating JSON `null` as absent.
    fn get<'v>(map: &'v Map<String, Value>, key: &str) -> Option<&'v Value> {
        map.get(key).filter(|v| !v.is_null())
    }

    fn wrong(&mut self, at: &At, key: &str, expected: &str, v: &Value) {
        self.push(
            ErrorKind::WrongType,
            &at.key(key),
            format!("{} must be {expected}, not {}", at.name(key), describe(v)),
        );
    }

    fn string(&mut self, map: &Map<String, Value>, key: &str, at: &At) -> Option<String> {
        match Self::get(map, key)? {
            Value::String(s) => Some(s.clone()),
            v => {
                self.wrong(at, key, "a string", v);
                None
            }
        }
    }

    /// A value with a unit ("5ms"). A number is kept as its text so that the unit parser
    /// reports it with the right advice ("5" has no unit; write "5ms").
    fn with_unit(&mut self, map: &Map<String, Value>, key: &str, at: &At) -> Option<String> {
        match Self::get(map, key)? {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            v => {
                self.wrong(
                    at,
                    key,
                    "a string with a unit, like \"10Mbit\" or \"5ms\"",
                    v,
                );
                None
            }
        }
    }

    fn boolean(&mut self, map: &Map<String, Value>, key: &str, at: &At) -> Option<bool> {
        match Self::get(map, key)? {
            Value::Bool(b) => Some(*b),
            v => {
                self.wrong(at, key, "true or false", v);
                None
            }
        }
    }

    fn number(&mut self, map: &Map<String, Value>, key: &str, at: &At) -> Option<f64> {
        match Self::get(map, key)? {
            Value::Number(n) => n.as_f64(),
            // TOML's nan and inf (load.rs), kept for the range check to refuse.
            Value::String(s) if s.parse::<f64>().is_ok_and(|x| !x.is_finite()) => s.parse().ok(),
            v => {
                self.wrong(at, key, "a number", v);
                None
            }
        }
    }

    fn fraction(&mut self, map: &Map<String, Value>, key: &str, at: &At) -> Option<Fraction> {
        match Self::get(map, key)? {
            Value::Number(n) => n.as_f64().map(Fraction::Number),
            Value::String(s) => Some(Fraction::Text(s.clone())),
            v => {
                self.wrong(
                    at,
                    key,
                    "a percentage like \"0.5%\" or a fraction in [0, 1]",
                    v,
                );
                None
            }
        }
    }

    fn integer(&mut self, map: &Map<String, Value>, key: &str, at: &At) -> Option<i64> {
        match Self::get(map, key)? {
            Value::Number(n) if n.is_i64() => n.as_i64(),
            v => {
                self.wrong(at, key, "a whole number", v);
                None
            }
        }
    }

    /// A required key of a table: its value, or a "missing" problem showing `example`.
    fn required<'v>(
        &mut self,
        map: &'v Map<String, Value>,
        key: &str,
        at: &At,
        example: &str,
    ) -> Option<&'v Value> {
        let v = Self::get(map, key);
        if v.is_none() {
            self.push(
                ErrorKind::Missing,
                at,
                format!("missing key \"{}\"; {example}", at.name(key)),
            );
        }
        v
    }

    fn link(&mut self, v: &Value, at: &At) -> Option<LinkEntry> {
        let valid: Vec<&str> = LINK_KEYS.iter().chain(PARAM_KEYS).copied().collect();
        let map = self.table(v, at, "[[link]]", &valid)?;
        let a = self.string(map, "a", at);
        let b = self.string(map, "b", at);
        for (key, present) in [("a", a.is_some()), ("b", b.is_some())] {
            if !present && Self::get(map, key).is_none() {
                self.push(
                    ErrorKind::Missing,
                    at,
                    format!(
                        "missing key \"{key}\"; a link names its two ends: a = \"r1\", b = \"r2\""
                    ),
                );
            }
        }
        let class = self.string(map, "class", at);
        let shared = self.boolean(map, "shared", at);
        let params = self.params(map, at);
        let mut direction =
            |key: &str| Self::get(map, key).and_then(|v| self.param_table(v, &at.key(key), key));
        let a_to_b = direction("a_to_b");
        let b_to_a = direction("b_to_a");
        let schedule =
            Self::get(map, "schedule").and_then(|v| self.schedule(v, &at.key("schedule")));
        let markov = Self::get(map, "markov").and_then(|v| self.markov(v, &at.key("markov")));
        Some(LinkEntry {
            a: a?,
            b: b?,
            class,
            shared,
            params,
            a_to_b,
            b_to_a,
            schedule,
            markov,
        })
    }

    fn node(&mut self, v: &Value, at: &At) -> Option<NodeEntry> {
        match v {
            Value::String(s) => Some(NodeEntry::Name(s.clone())),
            Value::Object(_) => {
                let map = self.table(v, at, "a node table", NODE_KEYS)?;
                let name = self.string(map, "name", at);
                if name.is_none() && Self::get(map, "name").is_none() {
                    self.push(
                        ErrorKind::Missing,
                        at,
                        "a node table needs a name: { name = \"h1\", group = \"g1\" }".into(),
                    );
                }
                Some(NodeEntry::Full(Box::new(NodeTable {
                    name: name?,
                    group: self.string(map, "group", at),
                    lat: self.number(map, "lat", at),
                    lon: self.number(map, "lon", at),
                    x: self.number(map, "x", at),
                    y: self.number(map, "y", at),
                    kernel: self.boolean(map, "kernel", at),
                    routing: self.string(map, "routing", at),
                    asn: self.integer(map, "asn", at),
                    area: self.area(map, at),
                    daemon: self.string(map, "daemon", at),
                    config: self.string(map, "config", at),
                    hello: self.with_unit(map, "hello", at),
                    dead: self.with_unit(map, "dead", at),
                    ipv4: self.string(map, "ipv4", at),
                    cpu: self.number(map, "cpu", at),
                })))
            }
            v => {
                self.push(
                    ErrorKind::WrongType,
                    at,
                    format!(
                        "a node must be a name like \"h1\" or a table {{ name = \"h1\", group = \"g1\" }}, not {}",
                        describe(v)
                    ),
                );
                None
            }
        }
    }

    /// An OSPF area: a dotted quad like "0.0.0.1", or a number (kept as its text).
    fn area(&mut self, map: &Map<String, Value>, at: &At) -> Option<String> {
        match Self::get(map, "area")? {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) if n.is_u64() => Some(n.to_string()),
            v => {
                self.wrong(at, "area", "an area like \"0.0.0.1\" or a number like 1", v);
                None
            }
        }
    }

    /// `[routing]`: the kernel routers' defaults, with AS numbers by group.
    fn routing(&mut self, v: &Value, at: &At) -> Option<RoutingSection> {
        let m = self.table(v, at, "[routing]", ROUTING_KEYS)?;
        let mut asn = std::collections::BTreeMap::new();
        match Self::get(m, "asn") {
            None => {}
            Some(Value::Object(groups)) => {
                for group in groups.keys() {
                    if let Some(n) = self.integer(groups, group, &at.key("asn")) {
                        asn.insert(group.clone(), n);
                    }
                }
            }
            Some(other) => self.wrong(
                at,
                "asn",
                "a table of AS numbers by router group, like { west = 65001, east = 65002 }",
                other,
            ),
        }
        Some(RoutingSection {
            protocol: self.string(m, "protocol", at),
            daemon: self.string(m, "daemon", at),
            area: self.area(m, at),
            hello: self.with_unit(m, "hello", at),
            dead: self.with_unit(m, "dead", at),
            asn,
        })
    }

    /// The array under `key`, each element read by `read`.
    fn list<T>(
        &mut self,
        map: &Map<String, Value>,
        key: &str,
        expected: &str,
        mut read: impl FnMut(&mut Self, &Value, usize) -> Option<T>,
    ) -> Vec<T> {
        let Some(v) = Self::get(map, key) else {
            return Vec::new();
        };
        let Value::Array(items) = v else {
            self.wrong(&top(), key, expected, v);
            return Vec::new();
        };
        items
            .iter()
            .enumerate()
            .filter_map(|(i, item)| read(self, item, i))
            .collect()
    }

    fn file(&mut self, v: &Value) -> Option<TopologyFile> {
        let root = top();
        let map = self.table(v, &root, "the file", TOP_KEYS)?;
        let topology = Self::get(map, "topology").and_then(|v| {
            let at = section(&root, "topology", None, "[topology]");
            let m = self.table(v, &at, "[topology]", META_KEYS)?;
            Some(Meta {
                name: self.string(m, "name", &at),
                routing: self.string(m, "routing", &at),
                kernel_routers: self.boolean(m, "kernel_routers", &at),
                addresses: self.string(m, "addresses", &at),
            })
        });
        let defaults = Self::get(map, "defaults").and_then(|v| {
            let at = section(&root, "defaults", None, "[defaults]");
            self.param_table(v, &at, "[defaults]")
        });
        let mut classes = std::collections::BTreeMap::new();
        if let Some(v) = Self::get(map, "classes") {
            let at = section(&root, "classes", None, "[classes]");
            if let Some(m) = self.table_of_tables(v, &at) {
                for (name, class) in m {
                    let at = section(&root, "classes", Some(name), &format!("class \"{name}\""));
                    if let Some(params) = self.param_table(class, &at, &format!("[classes.{name}]"))
                    {
                        classes.insert(name.clone(), params);
                    }
                }
            }
        }
        let node_list = "an array of names like [\"h1\", \"h2\"]";
        let hosts = self.list(map, "hosts", node_list, |r, v, i| {
            r.node(v, &root.key("hosts").index(i))
        });
        let routers = self.list(map, "routers", node_list, |r, v, i| {
            r.node(v, &root.key("routers").index(i))
        });
        let links = self.list(
            map,
            "link",
            "an array of tables ([[link]] in TOML)",
            |r, v, i| {
                let at = At {
                    path: vec![Seg::Key("link".into()), Seg::Index(i)],
                    subject: Subject::Link(i),
                    prefix: String::new(),
                };
                r.link(v, &at)
            },
        );
        let routing = Self::get(map, "routing").and_then(|v| {
            let at = section(&root, "routing", None, "[routing]");
            self.routing(v, &at)
        });
        Some(TopologyFile {
            routing,
            topology,
            defaults,
            classes,
            hosts,
            routers,
            links,
        })
    }

    /// `[classes]`: any keys (class names), each a table.
    fn table_of_tables<'v>(&mut self, v: &'v Value, at: &At) -> Option<&'v Map<String, Value>> {
        match v {
            Value::Object(m) => Some(m),
            v => {
                self.push(
                    ErrorKind::WrongType,
                    at,
                    format!(
                        "[classes] must be a table of named parameter tables, not {}",
                        describe(v)
                    ),
                );
                None
            }
        }
    }
}

fn top() -> At {
    At {
        path: Vec::new(),
        subject: Subject::None,
        prefix: String::new(),
    }
}

/// A top-level section (or a class inside `[classes]`) as the subject of its own messages.
fn section(root: &At, key: &str, class: Option<&str>, subject: &str) -> At {
    let mut at = root.key(key);
    if let Some(name) = class {
        at.path.push(Seg::Key(name.to_string()));
    }
    At {
        subject: Subject::Text(subject.to_string()),
        prefix: String::new(),
        ..at
    }
}

/// Reads a whole document; all problems found, in document order, if any.
pub(crate) fn read_file(v: &Value) -> Result<TopologyFile, Vec<Issue>> {
    let mut reader = Reader::default();
    let file = reader.file(v);
    match file {
        Some(file) if reader.issues.is_empty() => Ok(file),
        _ => Err(reader.issues),
    }
}

/// Reads the parameter keys of a table on its own (a `netloom link set` change) whose keys the
/// caller has already checked; every problem found.
pub(crate) fn read_params(map: &Map<String, Value>) -> Result<LinkParams, Vec<Issue>> {
    let mut reader = Reader::default();
    let params = reader.params(map, &top());
    if reader.issues.is_empty() {
        Ok(params)
    } else {
        Err(reader.issues)
    }
}

/// Reads one `[[link]]` table (for `LinkEntry`'s `Deserialize`); every problem found (none
/// when the reader gave up without saying why).
pub(crate) fn read_link(v: &Value) -> Result<LinkEntry, Vec<Issue>> {
    let mut reader = Reader::default();
    match reader.link(v, &top()) {
        Some(link) if reader.issues.is_empty() => Ok(link),
        _ => Err(reader.issues),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions_catch_typos_and_synonyms() {
        let valid: Vec<&str> = LINK_KEYS.iter().chain(PARAM_KEYS).copied().collect();
        assert_eq!(suggest("dealy", &valid), Some("delay"));
        assert_eq!(suggest("bandwith", &valid), Some("bw"));
        assert_eq!(suggest("bandwidth", &valid), Some("bw"));
        assert_eq!(suggest("latency", &valid), Some("delay"));
        assert_eq!(suggest("jiter", &valid), Some("jitter"));
        assert_eq!(suggest("colour", &valid), None);
    }

    #[test]
    fn data_keys_are_the_tail_of_the_parameter_keys() {
        assert_eq!(DATA_KEYS, ["mac_profile", "trace"]);
        assert_eq!([VALUE_KEYS, DATA_KEYS].concat(), PARAM_KEYS);
    }
}
