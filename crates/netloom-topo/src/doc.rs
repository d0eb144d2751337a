//! The topology file as written by people and generators: TOML (native) or the same schema as JSON.
//!
//! Values keep their textual units here ("100Mbit", "5ms", "0.5%"); `load` parses and validates
//! them into the resolved `model`. Generators build a `TopologyFile` and serialize it, so what
//! they write is exactly what a person would write.

use crate::model::Position;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The whole file.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TopologyFile {
    /// Optional name and routing metric.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology: Option<Meta>,
    /// Parameters every link starts from (before its class and its own keys).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub defaults: Option<LinkParams>,
    /// Named parameter sets; a link names one with `class = "..."`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub classes: BTreeMap<String, LinkParams>,
    /// The hosts (`hosts`), in file order: where applications and traffic live; they send and
    /// receive but never forward. There must be at least one, and each needs a link.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<NodeEntry>,
    /// The routers (`routers`), in file order: nodes that forward between their links.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub routers: Vec<NodeEntry>,
    /// The links: `[[link]]` tables in TOML, the array `link` in JSON. Their order numbers them
    /// in errors (`link #3 (r1-r2)`) when parallel links join the same pair.
    #[serde(default, rename = "link", skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<LinkEntry>,
    /// How kernel routers route (`[routing]`), unless their own tables say otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub routing: Option<RoutingSection>,
}

/// The `[topology]` section: the topology's name and routing metric.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Meta {
    /// The topology's name; without it, the file name without its extension (for a document
    /// resolved in memory, its label's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// "delay" (default) or "hops".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub routing: Option<String>,
    /// Whether routers are kernel routers (a namespace each in a live run) unless their own
    /// table says `kernel = false`; default false (engine routers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_routers: Option<bool>,
    /// The IPv4 network hosts and routers take their addresses from in a live run, like
    /// "10.0.0.0/8"; default "198.18.0.0/15".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub addresses: Option<String>,
}

/// A host or router: a bare name, or a table with a name and optional attributes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum NodeEntry {
    /// A bare name, `"h1"`: a node without a group.
    Name(String),
    /// A table, `{ name = "h1", group = "g1" }`; boxed, as it has many more keys than a name
    /// and most entries of large topologies are bare names.
    Full(Box<NodeTable>),
}

impl NodeEntry {
    /// The entry of a node named `name`: its bare name when it has neither a group nor a
    /// position, else a table.
    pub fn new(name: String, group: Option<String>, position: Option<Position>) -> NodeEntry {
        if group.is_none() && position.is_none() {
            return NodeEntry::Name(name);
        }
        let (mut lat, mut lon, mut x, mut y) = (None, None, None, None);
        match position {
            Some(Position::Earth { lat: la, lon: lo }) => (lat, lon) = (Some(la), Some(lo)),
            Some(Position::Plane { x: px, y: py }) => (x, y) = (Some(px), Some(py)),
            None => {}
        }
        NodeEntry::Full(Box::new(NodeTable {
            name,
            group,
            lat,
            lon,
            x,
            y,
            ..NodeTable::default()
        }))
    }
}

/// The table form of a host or router entry.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeTable {
    /// The node's name: non-empty, without spaces, case-sensitive, and unique among hosts and
    /// routers together. A host's name is also its name in every host's /etc/hosts in a live run.
    pub name: String,
    /// A grouping label (for example the subtree a host hangs off); traffic patterns use it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// Latitude in degrees, [-90, 90]; with `lon`, where the node is on the Earth.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lat: Option<f64>,
    /// Longitude in degrees, [-180, 180]; with `lat`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lon: Option<f64>,
    /// With `y`, where the node is on a plane, in any unit (Inet's coordinates); not with
    /// `lat`/`lon`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub x: Option<f64>,
    /// With `x`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub y: Option<f64>,
    /// Routers only: whether this router is a kernel router (overrides `[topology]
    /// kernel_routers`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<bool>,
    /// Kernel routers only: "static", "ospf" or "bgp" (overrides `[routing] protocol`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub routing: Option<String>,
    /// Kernel routers only: its AS number (overrides its group's in `[routing] asn`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asn: Option<i64>,
    /// Kernel routers only: the OSPF area of its links, "0.0.0.1" or a number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub area: Option<String>,
    /// Kernel routers only: "frr" or "bird".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub daemon: Option<String>,
    /// Kernel routers only: the user's own configuration file, relative to the topology file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<String>,
    /// Kernel routers only: the OSPF hello interval, "10s".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hello: Option<String>,
    /// Kernel routers only: the OSPF dead interval, "40s".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dead: Option<String>,
    /// Hosts only: its IPv4 address in a live run, like "10.0.0.7", inside `[topology]
    /// addresses`; without it, the plan's for its place among the hosts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ipv4: Option<String>,
    /// Hosts only: the CPU time its programs may use in a live run, in CPUs (0.25: a quarter of
    /// one CPU).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<f64>,
}

/// The `[routing]` section: how kernel routers route unless their own table says otherwise.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoutingSection {
    /// "static" (default), "ospf" or "bgp".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    /// "frr" (default) or "bird".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub daemon: Option<String>,
    /// The OSPF area, "0.0.0.0" by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub area: Option<String>,
    /// The OSPF hello interval, "10s" by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hello: Option<String>,
    /// The OSPF dead interval, "40s" by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dead: Option<String>,
    /// AS numbers by router group: `asn = { west = 65001, east = 65002 }`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub asn: BTreeMap<String, i64>,
}

/// Link parameters as written. Every key is optional; later layers override earlier ones:
/// `defaults` → `classes[class]` → the link's own keys → its `a_to_b` / `b_to_a` table.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkParams {
    /// Bandwidth: "100Mbit", "1Gbit", "512kbit", "12MB/s", ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bw: Option<String>,
    /// Propagation delay: "5ms", "100us", "250ns", "1s".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay: Option<String>,
    /// Jitter: each packet's delay varies uniformly in [delay − jitter, delay + jitter], never
    /// below 0. A duration; default "0".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter: Option<String>,
    /// May jitter reorder packets? Default false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reorder: Option<bool>,
    /// Loss: "0.5%", a fraction 0.005, or a Gilbert-Elliott table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss: Option<LossSpec>,
    /// Queue limit: packets (integer) or bytes ("64KB").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<QueueSpec>,
    /// "droptail", "red", "codel" or "fq_codel".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aqm: Option<String>,
    /// RED parameters, used only with `aqm = "red"`; layers merge them key by key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub red: Option<RedSpec>,
    /// CoDel's target queue delay, used only with `aqm = "codel"`: a duration; default "5ms".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub codel_target: Option<String>,
    /// CoDel's interval, used only with `aqm = "codel"`: a duration; default "100ms".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub codel_interval: Option<String>,
    /// FQ-CoDel's quantum in bytes, used only with `aqm = "fq_codel"`; default 1514.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fq_quantum: Option<i64>,
    /// FQ-CoDel's number of flow queues, used only with `aqm = "fq_codel"`; default 1024.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fq_flows: Option<i64>,
    /// Mark ECN-capable packets CE instead of dropping them early (needs an AQM); default false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ecn: Option<bool>,
    /// Duplication probability: "1%" or a fraction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duplicate: Option<Fraction>,
    /// NemC out-of-order generation: fraction of packets held back by `ooo_delay`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ooo_rate: Option<Fraction>,
    /// Extra delay of the packets `ooo_rate` picks: a duration; default "0".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ooo_delay: Option<String>,
    /// Administrative state at start (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub up: Option<bool>,
    /// The largest IP packet the link carries, in bytes: 1280 to 65535 (default 1500).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu: Option<i64>,
    /// An 802.11 channel: "802.11b" or "802.11g" (docs/wireless.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wireless: Option<String>,
    /// Signal-to-noise ratio of a wireless link: "12dB" (a plain number is dB too).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snr: Option<String>,
    /// Fraction of air time other stations take: "1%" or a fraction below 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub netload: Option<Fraction>,
    /// Probability that a transmission attempt collides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collision: Option<Fraction>,
    /// Transmission attempts per packet, the first included (default 7).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_limit: Option<i64>,
    /// A measured MAC delay profile file, relative to the topology file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mac_profile: Option<String>,
    /// A Mahimahi delivery trace file, relative to the topology file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<String>,
}

/// A probability: a plain fraction in [0, 1] or a percentage string "0.5%".
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Fraction {
    /// A plain number: a fraction in [0, 1], like `0.005`. Above 1 is an error that suggests the
    /// percentage (`2` → `"2%"`).
    Number(f64),
    /// A string: a percentage from 0% to 100%, like `"0.5%"`, or a fraction in [0, 1] as text.
    Text(String),
}

/// The `loss` key: random loss as packets enter the pipe. A later layer's value replaces an
/// earlier one whole, whichever form each has.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum LossSpec {
    /// Bernoulli loss: each packet is dropped independently with this probability.
    Simple(Fraction),
    /// Bursty loss: a two-state Gilbert-Elliott chain advanced once per packet.
    GilbertElliott(GilbertElliottSpec),
}

/// `loss = { model = "gilbert-elliott", p = "1%", r = "30%", bad_loss = 1.0, good_loss = 0 }`
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GilbertElliottSpec {
    /// Must be `"gilbert-elliott"`, the only loss table model; required.
    pub model: String,
    /// Probability of moving from the good to the bad state, per packet; required.
    pub p: Fraction,
    /// Probability of moving from the bad to the good state, per packet; required. The mean
    /// burst is 1 / r packets.
    pub r: Fraction,
    /// Loss probability in the bad state; default 1 (every packet is lost).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bad_loss: Option<Fraction>,
    /// Loss probability in the good state; default 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub good_loss: Option<Fraction>,
}

/// The `queue` key: how much a pipe's queue holds. Without it, the pipe holds its
/// bandwidth-delay product (rate × 2 × delay), at least 15 000 bytes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum QueueSpec {
    /// An integer: a number of packets, from 1 to `u32::MAX`.
    Packets(i64),
    /// A string: bytes with a unit, like `"1500B"`, `"64KB"` (64 000) or `"64KiB"` (65 536); a
    /// number without a unit in quotes is an error.
    Size(String),
}

/// RED thresholds in the queue's unit (packets, or bytes for a byte queue).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RedSpec {
    /// Average queue below which nothing is dropped; above 0 and below `max_th`. Default 5
    /// packets, or 7 500 bytes for a byte queue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_th: Option<f64>,
    /// Average queue at which the drop probability reaches `max_p`; it then rises to 1 at twice
    /// `max_th`. Default 3 × `min_th`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_th: Option<f64>,
    /// Drop probability at `max_th`, in (0, 1]; default 0.1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_p: Option<Fraction>,
    /// Weight of each new sample in the moving average of the queue length, in (0, 1];
    /// default 0.002.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<f64>,
}

/// One link between two nodes.
///
/// `Deserialize` is written by hand (through `schema`): serde's `deny_unknown_fields` is silently
/// ignored next to the flattened `params`, and an unknown key in a link must be an error.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LinkEntry {
    /// One end: the name of a host or router. The a→b direction leaves from here.
    pub a: String,
    /// The other end: the name of a host or router other than `a` (a node cannot link to itself).
    pub b: String,
    /// The `[classes.NAME]` whose parameters the link starts from, over `[defaults]`; it must be
    /// defined.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<String>,
    /// One pipe shared by both directions (a shared medium) instead of one pipe per direction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared: Option<bool>,
    /// The link's own parameter keys, written in the link table itself; they override its class
    /// and `[defaults]` for both directions.
    #[serde(flatten)]
    pub params: LinkParams,
    /// Overrides for the a→b direction only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub a_to_b: Option<LinkParams>,
    /// Overrides for the b→a direction only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub b_to_a: Option<LinkParams>,
    /// Changes at fixed times, once or repeating.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<ScheduleSpec>,
    /// Changes as a Markov graph of states.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub markov: Option<MarkovSpec>,
}

/// `schedule = { every = "60s", events = [{ at = "10s", set = { delay = "50ms" } }] }`
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScheduleSpec {
    /// Repeat the events with this period; without it they happen once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub every: Option<String>,
    /// The changes, each to both directions. With `every`, each `at` and `from` must fall before
    /// the period and each `to` at or before it.
    #[serde(default)]
    pub events: Vec<ScheduleEvent>,
}

/// One change: `set` from `at` on, or `set` from `from` until `to` (then what was before).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScheduleEvent {
    /// Time from the start (`"10s"`) from which `set` applies for good; not with `from` or `to`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
    /// Start of a window (`"20s"`) in which `set` applies; needs `to`, not with `at`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// End of the window, after `from`; then what was in force before comes back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// The parameters that change, over the link's own: any link parameter key but the data files
    /// `mac_profile` and `trace`. Required.
    #[serde(default)]
    pub set: LinkParams,
}

/// `markov = { start = "good", states = { good = { dwell = "5s", next = { bad = 1 }, set = {...} } } }`
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MarkovSpec {
    /// The state the link is in at time 0; must be a key of `states`.
    pub start: String,
    /// The states by name (`markov.states.NAME`); the resolved plan numbers them in name order.
    pub states: BTreeMap<String, MarkovStateSpec>,
}

/// One state of a Markov graph: how long it lasts, where it goes next, and the link
/// parameters it sets.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MarkovStateSpec {
    /// How long each visit to the state lasts; required, and never 0.
    pub dwell: DwellSpec,
    /// Next state name → probability; empty: the state lasts forever.
    #[serde(default)]
    pub next: BTreeMap<String, Fraction>,
    /// Link parameters in this state, over the link's own.
    #[serde(default)]
    pub set: LinkParams,
}

/// How long a Markov state lasts: a fixed "5s", or CDF points `[[0, "1s"], [1, "9s"]]`
/// (probability, duration), linear in between.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum DwellSpec {
    /// Every visit lasts this duration, like `"5s"`.
    Fixed(String),
    /// CDF points (probability, duration) like `[[0, "1s"], [1, "9s"]]`: neither may decrease,
    /// and the last probability is 1; a dwell is drawn linearly between points.
    Points(Vec<(Fraction, String)>),
}

impl<'de> Deserialize<'de> for LinkEntry {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = serde_json::Value::deserialize(deserializer)?;
        crate::schema::read_link(&value).map_err(|issues| {
            // The first problem's message, as the loader would say it.
            serde::de::Error::custom(issues.first().map_or("invalid link", |i| &i.message))
        })
    }
}
