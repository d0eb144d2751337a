//! Parsing the file's link parameters into `LinkPatch`es and finishing a layered patch into a pipe;
//! and the same for a change made while a link runs (`LinkPatch::from_table`, `apply`).

use crate::data::{DataFileError, DataFiles};
use crate::doc::{Fraction, LinkParams, LossSpec};
use crate::error::{ErrorKind, Issue, Seg, Subject};
use crate::patch::{refusal, AqmChoice, LinkPatch, PatchError, RedPatch};
use crate::schema::{self, did_you_mean, DATA_KEYS};
use crate::units::{self, Range, UnitError};
use netloom_link::{
    Aqm, CodelParams, FqCodelParams, LossModel, PipeConfig, PipeData, QueueLimit, RedParams,
    Standard, Wireless, DEFAULT_MTU, DEFAULT_PACKET_BYTES, DEFAULT_RETRY_LIMIT, MAX_MTU,
    MIN_IPV4_MTU, MIN_MTU,
};
use netloom_time::{Duration, Rate};
use serde_json::{Map, Value};
use std::path::Path;
use std::sync::Arc;

/// RED's minimum threshold when none is given, in packets (times 1500 bytes for a byte queue).
pub const RED_DEFAULT_MIN_TH_PACKETS: f64 = 5.0;
/// RED's maximum threshold when none is given, as a multiple of the minimum.
pub const RED_DEFAULT_MAX_TH_FACTOR: f64 = 3.0;
/// RED's drop probability at the maximum threshold when none is given.
pub const RED_DEFAULT_MAX_P: f64 = 0.1;
/// RED's weight of the average queue when none is given.
pub const RED_DEFAULT_WEIGHT: f64 = 0.002;

/// The path of `keys` (nested) under `base`.
pub(crate) fn key_path(base: &[Seg], keys: &[&str]) -> Vec<Seg> {
    let mut p = base.to_vec();
    p.extend(keys.iter().map(|k| Seg::Key(k.to_string())));
    p
}

/// Parses layers, recording problems at the path of the offending key.
struct LayerParser<'i> {
    issues: &'i mut Vec<Issue>,
    files: &'i mut DataFiles,
    path: Vec<Seg>,
    subject: Subject,
    /// Shown before key names: "" or "a_to_b.".
    prefix: String,
}

impl LayerParser<'_> {
    fn bad(&mut self, keys: &[&str], message: String) {
        self.issues.push(Issue {
            kind: ErrorKind::BadValue,
            path: key_path(&self.path, keys),
            subject: self.subject.clone(),
            message,
        });
    }

    /// The parsed value, or `None` after recording "`key` <what is wrong>".
    fn value<T>(&mut self, keys: &[&str], parsed: Option<Result<T, UnitError>>) -> Option<T> {
        match parsed? {
            Ok(v) => Some(v),
            Err(e) => {
                let name = format!("{}{}", self.prefix, keys.join("."));
                self.bad(keys, format!("{name} {e}"));
                None
            }
        }
    }

    /// A probability: "0.5%" or a fraction in [0, 1].
    fn fraction(&mut self, keys: &[&str], f: Option<&Fraction>) -> Option<f64> {
        self.value(keys, f.map(units::parse_fraction))
    }

    /// A number in (0, 1] or (0, ∞), for RED's weight and thresholds.
    fn positive(&mut self, keys: &[&str], v: Option<f64>, at_most_one: bool) -> Option<f64> {
        let max = if at_most_one { 1.0 } else { f64::MAX };
        self.value(
            keys,
            v.map(|v| units::check_number(v, Range::above(0.0, max))),
        )
    }

    /// A data file named by `key`, read through `read`; its problem is recorded at the key.
    fn file<T>(
        &mut self,
        key: &str,
        name: Option<&String>,
        read: impl FnOnce(&mut DataFiles, &str) -> Result<Arc<T>, DataFileError>,
    ) -> Option<Arc<T>> {
        let name = name?;
        match read(self.files, name) {
            Ok(v) => Some(v),
            Err(e) => {
                self.bad(&[key], format!("{}{key} \"{name}\": {e}", self.prefix));
                None
            }
        }
    }

    fn standard(&mut self, name: Option<&str>) -> Option<Standard> {
        let known = [Standard::B, Standard::G];
        let name = name?;
        let found = known.into_iter().find(|s| s.name() == name);
        if found.is_none() {
            let names: Vec<&str> = known.iter().map(|s| s.name()).collect();
            self.bad(
                &["wireless"],
                format!(
                    "{}wireless \"{name}\" is not known{}; write \"802.11b\" or \"802.11g\"",
                    self.prefix,
                    did_you_mean(name, &names)
                ),
            );
        }
        found
    }

    fn retry_limit(&mut self, v: Option<i64>) -> Option<u8> {
        let v = v?;
        match u8::try_from(v) {
            Ok(n) if n >= 1 => Some(n),
            _ => {
                self.bad(
                    &["retry_limit"],
                    format!(
                        "{}retry_limit {v} must be a number of attempts from 1 to 255 (802.11's is 7)",
                        self.prefix
                    ),
                );
                None
            }
        }
    }

    /// An MTU in bytes, from `MIN_MTU` to `MAX_MTU`; below IPv4's own minimum the message says
    /// so as well, as IPv6's larger minimum is then not the only thing wrong.
    fn mtu(&mut self, v: Option<i64>) -> Option<u32> {
        let v = v?;
        let valid = u32::try_from(v)
            .ok()
            .filter(|n| (MIN_MTU..=MAX_MTU).contains(n));
        if valid.is_none() {
            let ipv6 = format!(
                "every link carries IPv6 (each host has an IPv6 address), which needs at least {MIN_MTU}"
            );
            let why = if v < i64::from(MIN_IPV4_MTU) {
                format!("is below {MIN_IPV4_MTU}, the smallest MTU IPv4 allows, and {ipv6}")
            } else if v < i64::from(MIN_MTU) {
                format!("is too small: {ipv6}")
            } else {
                format!("is above {MAX_MTU}, the largest IP packet and TUN device MTU")
            };
            self.bad(
                &["mtu"],
                format!(
                    "{}mtu {v} {why}; write a number of bytes from {MIN_MTU} to {MAX_MTU} (Ethernet's is {DEFAULT_MTU})",
                    self.prefix
                ),
            );
        }
        valid
    }

    /// A whole number of `key` within `valid`, or `None` after recording "`key` N must be `what`".
    fn count(
        &mut self,
        key: &str,
        v: Option<i64>,
        valid: std::ops::RangeInclusive<u32>,
        what: &str,
    ) -> Option<u32> {
        let v = v?;
        match u32::try_from(v) {
            Ok(n) if valid.contains(&n) => Some(n),
            _ => {
                self.bad(&[key], format!("{}{key} {v} must be {what}", self.prefix));
                None
            }
        }
    }

    fn parse(&mut self, p: &LinkParams) -> LinkPatch {
        let loss = match &p.loss {
            None => None,
            Some(LossSpec::Simple(f)) => self.fraction(&["loss"], Some(f)).map(|p| {
                if p == 0.0 {
                    LossModel::None
                } else {
                    LossModel::Bernoulli { p }
                }
            }),
            Some(LossSpec::GilbertElliott(ge)) => {
                let model_ok = ge.model == "gilbert-elliott";
                if !model_ok {
                    let hint = did_you_mean(&ge.model, &["gilbert-elliott"]);
                    self.bad(
                        &["loss", "model"],
                        format!(
                            "{}loss.model \"{}\" is not known{hint}; the loss table's model is \"gilbert-elliott\"",
                            self.prefix, ge.model
                        ),
                    );
                }
                let p = self.fraction(&["loss", "p"], Some(&ge.p));
                let r = self.fraction(&["loss", "r"], Some(&ge.r));
                let bad_loss = self.fraction(&["loss", "bad_loss"], ge.bad_loss.as_ref());
                let good_loss = self.fraction(&["loss", "good_loss"], ge.good_loss.as_ref());
                match (model_ok, p, r) {
                    (true, Some(p), Some(r)) => Some(LossModel::GilbertElliott {
                        p,
                        r,
                        good_loss: good_loss.unwrap_or(0.0),
                        bad_loss: bad_loss.unwrap_or(1.0),
                    }),
                    _ => None,
                }
            }
        };
        let aqm = match p.aqm.as_deref() {
            None => None,
            Some("droptail") => Some(AqmChoice::DropTail),
            Some("red") => Some(AqmChoice::Red),
            Some("codel") => Some(AqmChoice::Codel),
            Some("fq_codel") => Some(AqmChoice::FqCodel),
            Some(other) => {
                let hint = did_you_mean(other, &["droptail", "red", "codel", "fq_codel"]);
                self.bad(
                    &["aqm"],
                    format!(
                        "{}aqm \"{other}\" is not known{hint}; write \"droptail\", \"red\", \
                         \"codel\" or \"fq_codel\"",
                        self.prefix
                    ),
                );
                None
            }
        };
        let red = p.red.as_ref().map(|r| RedPatch {
            min_th: self.positive(&["red", "min_th"], r.min_th, false),
            max_th: self.positive(&["red", "max_th"], r.max_th, false),
            max_p: self
                .fraction(&["red", "max_p"], r.max_p.as_ref())
                .and_then(|v| self.positive(&["red", "max_p"], Some(v), true)),
            weight: self.positive(&["red", "weight"], r.weight, true),
        });
        LinkPatch {
            rate: self.value(&["bw"], p.bw.as_deref().map(units::parse_rate)),
            delay: self.value(&["delay"], p.delay.as_deref().map(units::parse_duration)),
            jitter: self.value(&["jitter"], p.jitter.as_deref().map(units::parse_duration)),
            reorder: p.reorder,
            loss,
            queue: self.value(&["queue"], p.queue.as_ref().map(units::parse_queue)),
            aqm,
            red: red.unwrap_or_default(),
            codel_target: self.value(
                &["codel_target"],
                p.codel_target.as_deref().map(units::parse_duration),
            ),
            codel_interval: self.value(
                &["codel_interval"],
                p.codel_interval.as_deref().map(units::parse_duration),
            ),
            fq_quantum: self.count(
                "fq_quantum",
                p.fq_quantum,
                1..=65_536,
                "a number of bytes from 1 to 65536 (the default 1514 is one full Ethernet frame)",
            ),
            fq_flows: self.count(
                "fq_flows",
                p.fq_flows,
                1..=65_536,
                "a number of flow queues from 1 to 65536 (Linux's limit; the default is 1024)",
            ),
            ecn: p.ecn,
            duplicate: self.fraction(&["duplicate"], p.duplicate.as_ref()),
            ooo_rate: self.fraction(&["ooo_rate"], p.ooo_rate.as_ref()),
            ooo_delay: self.value(
                &["ooo_delay"],
                p.ooo_delay.as_deref().map(units::parse_duration),
            ),
            up: p.up,
            mtu: self.mtu(p.mtu),
            wireless: self.standard(p.wireless.as_deref()),
            snr_db: self.value(&["snr"], p.snr.as_deref().map(units::parse_snr)),
            netload: self.fraction(&["netload"], p.netload.as_ref()),
            collision: self.fraction(&["collision"], p.collision.as_ref()),
            retry_limit: self.retry_limit(p.retry_limit),
            mac_profile: self.file("mac_profile", p.mac_profile.as_ref(), DataFiles::profile),
            trace: self.file("trace", p.trace.as_ref(), DataFiles::trace),
        }
    }
}

/// A fully layered direction → its pipe and the data it uses; problems as (kind, message).
pub(crate) fn finish(
    layer: &LinkPatch,
    class: Option<&str>,
) -> Result<(PipeConfig, PipeData), Vec<(ErrorKind, String)>> {
    let place = match class {
        Some(c) => format!("on the link, in its class \"{c}\" or in [defaults]"),
        None => "on the link or in [defaults]".to_string(),
    };
    let mut problems = Vec::new();
    // A trace sets the pace; its mean rate stands in for bw (default queue, reports).
    let rate = layer
        .rate
        .or_else(|| layer.trace.as_ref().map(|t| Rate::bps(t.mean_rate_bps())));
    let wireless = wireless(layer, rate, &mut problems);
    if rate.is_none() {
        problems.push((
            ErrorKind::Missing,
            format!("no bandwidth; set bw (like bw = \"100Mbit\") {place}"),
        ));
    }
    if layer.delay.is_none() {
        problems.push((
            ErrorKind::Missing,
            format!("no delay; set delay (like delay = \"5ms\") {place}"),
        ));
    }
    let (Some(rate), Some(delay), true) = (rate, layer.delay, problems.is_empty()) else {
        return Err(problems);
    };
    let queue = layer
        .queue
        .unwrap_or_else(|| QueueLimit::default_for(rate, delay));
    let aqm = match layer.aqm.unwrap_or(AqmChoice::DropTail) {
        AqmChoice::DropTail => Aqm::DropTail,
        AqmChoice::Red => {
            let unit = match queue {
                QueueLimit::Packets(_) => 1.0,
                QueueLimit::Bytes(_) => DEFAULT_PACKET_BYTES as f64,
            };
            let min_th = layer
                .red
                .min_th
                .unwrap_or(RED_DEFAULT_MIN_TH_PACKETS * unit);
            let max_th = layer
                .red
                .max_th
                .unwrap_or(RED_DEFAULT_MAX_TH_FACTOR * min_th);
            if min_th >= max_th {
                return Err(vec![(
                    ErrorKind::BadValue,
                    format!(
                        "red.min_th ({min_th}) must be below red.max_th ({max_th}); \
                         thresholds are in the queue's unit ({})",
                        if unit == 1.0 { "packets" } else { "bytes" }
                    ),
                )]);
            }
            Aqm::Red(RedParams {
                min_th,
                max_th,
                max_p: layer.red.max_p.unwrap_or(RED_DEFAULT_MAX_P),
                weight: layer.red.weight.unwrap_or(RED_DEFAULT_WEIGHT),
            })
        }
        AqmChoice::Codel => Aqm::Codel(codel(layer)?),
        AqmChoice::FqCodel => {
            let defaults = FqCodelParams::default();
            Aqm::FqCodel(FqCodelParams {
                codel: codel(layer)?,
                quantum: layer.fq_quantum.unwrap_or(defaults.quantum),
                flows: layer.fq_flows.unwrap_or(defaults.flows),
            })
        }
    };
    let ecn = layer.ecn.unwrap_or(false);
    if ecn && aqm == Aqm::DropTail {
        return Err(vec![(
            ErrorKind::BadValue,
            "ecn = true needs an AQM to mark instead of dropping; set aqm = \"red\", \
             \"codel\" or \"fq_codel\" (a full drop-tail queue can only drop)"
                .to_string(),
        )]);
    }
    let config = PipeConfig {
        rate,
        delay,
        jitter: layer.jitter.unwrap_or(Duration::ZERO),
        reorder: layer.reorder.unwrap_or(false),
        queue,
        aqm,
        ecn,
        loss: layer.loss.unwrap_or(LossModel::None),
        duplicate: layer.duplicate.unwrap_or(0.0),
        ooo_rate: layer.ooo_rate.unwrap_or(0.0),
        ooo_delay: layer.ooo_delay.unwrap_or(Duration::ZERO),
        up: layer.up.unwrap_or(true),
        mtu: layer.mtu.unwrap_or(DEFAULT_MTU),
        wireless,
    };
    let data = PipeData {
        profile: layer.mac_profile.clone(),
        trace: layer.trace.clone(),
    };
    Ok((config, data))
}

/// CoDel's parameters of a layered direction (`aqm = "codel"` or `"fq_codel"`).
fn codel(layer: &LinkPatch) -> Result<CodelParams, Vec<(ErrorKind, String)>> {
    let defaults = CodelParams::default();
    let target = layer.codel_target.unwrap_or(defaults.target);
    let interval = layer.codel_interval.unwrap_or(defaults.interval);
    if target == Duration::ZERO || target >= interval {
        return Err(vec![(
            ErrorKind::BadValue,
            format!(
                "codel_target ({target}) must be above 0 and below codel_interval ({interval}), \
                 like the defaults \"5ms\" and \"100ms\""
            ),
        )]);
    }
    Ok(CodelParams { target, interval })
}

/// The wireless channel a layered direction asks for, recording what does not fit together.
fn wireless(
    layer: &LinkPatch,
    rate: Option<Rate>,
    problems: &mut Vec<(ErrorKind, String)>,
) -> Option<Wireless> {
    let Some(standard) = layer.wireless else {
        let needs_wireless = [
            ("snr", layer.snr_db.is_some()),
            ("netload", layer.netload.is_some()),
            ("collision", layer.collision.is_some()),
            ("retry_limit", layer.retry_limit.is_some()),
            ("mac_profile", layer.mac_profile.is_some()),
        ];
        if let Some((key, _)) = needs_wireless.iter().find(|(_, set)| *set) {
            problems.push((
                ErrorKind::Missing,
                format!("{key} needs a wireless link; set wireless = \"802.11b\" or \"802.11g\""),
            ));
        }
        return None;
    };
    if layer.trace.is_some() {
        problems.push((
            ErrorKind::BadValue,
            "a link is either wireless or driven by a trace, not both; remove trace or wireless"
                .into(),
        ));
    }
    if let Some(rate) = rate.filter(|r| !standard.rates_bps().contains(&r.as_bps())) {
        let rates: Vec<String> = standard
            .rates_bps()
            .iter()
            .map(|&b| Rate::bps(b).to_string())
            .collect();
        problems.push((
            ErrorKind::BadValue,
            format!(
                "bw {rate} is not a rate of {}; its rates are {}",
                standard.name(),
                rates.join(", ")
            ),
        ));
    }
    let netload = layer.netload.unwrap_or(0.0);
    if netload >= 1.0 {
        problems.push((
            ErrorKind::BadValue,
            "netload 100% leaves no air time; it must be below 1".into(),
        ));
    }
    Some(Wireless {
        standard,
        snr_db: layer.snr_db,
        netload,
        collision: layer.collision.unwrap_or(0.0),
        retry_limit: layer.retry_limit.unwrap_or(DEFAULT_RETRY_LIMIT),
    })
}

/// Parses one layer, recording its problems at `path` under `subject`.
pub(crate) fn parse_layer(
    issues: &mut Vec<Issue>,
    files: &mut DataFiles,
    p: &LinkParams,
    path: Vec<Seg>,
    subject: Subject,
    prefix: &str,
) -> LinkPatch {
    LayerParser {
        issues,
        files,
        path,
        subject,
        prefix: prefix.to_string(),
    }
    .parse(p)
}

impl LinkPatch {
    /// The patch a table of link parameters sets, with keys and values as in a link table of
    /// the topology file (`{"delay": "5ms", "red": {"min_th": 5}}`), checked by the same code
    /// and refused with the same messages. JSON `null` counts as an absent key, as in the file.
    pub fn from_table(table: &Map<String, Value>) -> Result<LinkPatch, PatchError> {
        if let Some(refusal) = table.keys().find_map(|key| refusal(key)) {
            return Err(refusal);
        }
        // No data file is named (their keys were refused), so none is read from this directory.
        LinkPatch::read_table(table, "")
    }

    /// [`LinkPatch::from_table`] for a table read from the file `file` (a profile of link
    /// parameters): it may also name data files (`mac_profile`, `trace`), read as a topology
    /// file's link reads them, relative to `file`'s directory.
    pub fn from_file_table(
        table: &Map<String, Value>,
        file: &Path,
    ) -> Result<LinkPatch, PatchError> {
        let refused = table
            .keys()
            .filter(|key| !DATA_KEYS.contains(&key.as_str()))
            .find_map(|key| refusal(key));
        if let Some(refusal) = refused {
            return Err(refusal);
        }
        LinkPatch::read_table(table, &file.to_string_lossy())
    }

    /// The patch of a table whose keys are checked, with data files read relative to the
    /// directory of the file `label` names.
    fn read_table(table: &Map<String, Value>, label: &str) -> Result<LinkPatch, PatchError> {
        if table.values().all(Value::is_null) {
            return Err(PatchError::Empty);
        }
        let params = schema::read_params(table).map_err(loader_error)?;
        let mut issues = Vec::new();
        let mut files = DataFiles::new(label);
        let patch = parse_layer(
            &mut issues,
            &mut files,
            &params,
            Vec::new(),
            Subject::None,
            "",
        );
        if issues.is_empty() {
            Ok(patch)
        } else {
            Err(loader_error(issues))
        }
    }

    /// `current` with every key this patch sets replaced, checked as a finished link of the file
    /// is. What the patch does not set stays exactly as it is, a queue limit that was defaulted
    /// from the rate and delay included, and RED thresholds too: they keep their numbers when
    /// `queue` changes between packets and bytes, so a patch doing that should set them as well.
    ///
    /// Data files are not part of a `PipeConfig`, so the pipe keeps its own, and the checks that
    /// involve them are the caller's: the file refuses a link that is both wireless and driven
    /// by a trace, and this cannot see a trace.
    pub fn apply(&self, current: &PipeConfig) -> Result<PipeConfig, PatchError> {
        self.apply_with_data(current).map(|(config, _)| config)
    }

    /// [`LinkPatch::apply`], with the data files this patch names (a patch of
    /// [`LinkPatch::from_file_table`]): the wireless-or-trace check then sees the trace.
    pub fn apply_with_data(
        &self,
        current: &PipeConfig,
    ) -> Result<(PipeConfig, PipeData), PatchError> {
        let layered = LinkPatch::from(current).under(self);
        match finish(&layered, None) {
            Ok(both) => Ok(both),
            Err(problems) => {
                let messages: Vec<String> = problems.into_iter().map(|(_, m)| m).collect();
                Err(PatchError::InvalidLink(messages.join("; ")))
            }
        }
    }
}

/// The loader's messages of what is wrong, on one line.
fn loader_error(issues: Vec<Issue>) -> PatchError {
    let messages: Vec<String> = issues.into_iter().map(|i| i.message).collect();
    PatchError::BadValue(messages.join("; "))
}
