//! The topology file as written by people and generators: TOML (native) or the same schema as JSON.
//!
//! Values keep their textual units here ("100Mbit", "5ms", "0.5%"); `load` parses and validates
//! them into the resolved `model`. Generators build a `TopologyFile` and serialize it, so what
//! they write is exactly what a person would write.

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
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<NodeEntry>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub routers: Vec<NodeEntry>,
    #[serde(default, rename = "link", skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<LinkEntry>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Meta {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// "delay" (default) or "hops".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub routing: Option<String>,
}

/// A host or router: a bare name, or a table with a name and optional attributes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum NodeEntry {
    Name(String),
    Full(NodeTable),
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeTable {
    pub name: String,
    /// A grouping label (for example the subtree a host hangs off); traffic patterns use it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
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
    /// "droptail" or "red".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aqm: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub red: Option<RedSpec>,
    /// Duplication probability: "1%" or a fraction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duplicate: Option<Fraction>,
    /// NemC out-of-order generation: fraction of packets held back by `ooo_delay`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ooo_rate: Option<Fraction>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ooo_delay: Option<String>,
    /// Administrative state at start (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub up: Option<bool>,
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
    Number(f64),
    Text(String),
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum LossSpec {
    Simple(Fraction),
    GilbertElliott(GilbertElliottSpec),
}

/// `loss = { model = "gilbert-elliott", p = "1%", r = "30%", bad_loss = 1.0, good_loss = 0 }`
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GilbertElliottSpec {
    pub model: String,
    pub p: Fraction,
    pub r: Fraction,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bad_loss: Option<Fraction>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub good_loss: Option<Fraction>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum QueueSpec {
    Packets(i64),
    Size(String),
}

/// RED thresholds in the queue's unit (packets, or bytes for a byte queue).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RedSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_th: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_th: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_p: Option<Fraction>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<f64>,
}

/// One link between two nodes.
///
/// `Deserialize` is written by hand (through `schema`): serde's `deny_unknown_fields` is silently
/// ignored next to the flattened `params`, and an unknown key in a link must be an error.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LinkEntry {
    pub a: String,
    pub b: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<String>,
    /// One pipe shared by both directions (a shared medium) instead of one pipe per direction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared: Option<bool>,
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
    #[serde(default)]
    pub events: Vec<ScheduleEvent>,
}

/// One change: `set` from `at` on, or `set` from `from` until `to` (then what was before).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScheduleEvent {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    #[serde(default)]
    pub set: LinkParams,
}

/// `markov = { start = "good", states = { good = { dwell = "5s", next = { bad = 1 }, set = {...} } } }`
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MarkovSpec {
    pub start: String,
    pub states: BTreeMap<String, MarkovStateSpec>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MarkovStateSpec {
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
    Fixed(String),
    Points(Vec<(Fraction, String)>),
}

impl<'de> Deserialize<'de> for LinkEntry {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = serde_json::Value::deserialize(deserializer)?;
        crate::schema::read_link(&value).map_err(serde::de::Error::custom)
    }
}
