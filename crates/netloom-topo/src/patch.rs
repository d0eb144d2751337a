//! `LinkPatch`: link parameters as far as one place sets them, what a change may set, and the
//! words a client writes them in. Parsing a table into a patch and applying a patch to a pipe are
//! `layer`'s, beside the file's own parsing.

use crate::doc::{Fraction, GilbertElliottSpec, LinkParams, LossSpec, QueueSpec, RedSpec};
use crate::import::params::{insert, typed};
use crate::schema::{did_you_mean, suggest, DATA_KEYS, LINK_KEYS, VALUE_KEYS};
use crate::units::{format_duration, format_rate};
use netloom_link::{Aqm, DelayProfile, LossModel, PipeConfig, QueueLimit, Standard, Trace};
use netloom_time::{Duration, Rate};
use serde_json::{Map, Value};
use std::sync::Arc;

/// Active queue management as a patch chooses it, before RED's and CoDel's defaults are
/// filled in.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum AqmChoice {
    DropTail,
    Red,
    Codel,
    FqCodel,
}

impl AqmChoice {
    /// The `aqm` key's value that chooses it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            AqmChoice::DropTail => "droptail",
            AqmChoice::Red => "red",
            AqmChoice::Codel => "codel",
            AqmChoice::FqCodel => "fq_codel",
        }
    }
}

/// RED keys as far as a patch sets them.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct RedPatch {
    pub(crate) min_th: Option<f64>,
    pub(crate) max_th: Option<f64>,
    pub(crate) max_p: Option<f64>,
    pub(crate) weight: Option<f64>,
}

/// A parsed partial set of link parameters, in the topology file's vocabulary: what one layer
/// of the file (`[defaults]`, a class, a link, one direction), a schedule event or Markov state,
/// or a `netloom link set` change sets, and nothing of what it leaves alone.
///
/// Merging parsed patches (instead of text) means each value is parsed once, where it is
/// written, and its error points there. Data files are read when a layer of the file is parsed
/// and shared by reference; a patch built by [`LinkPatch::from_table`] never names one.
///
/// `Default` is the patch that sets nothing.
#[derive(Clone, Debug, Default)]
pub struct LinkPatch {
    pub(crate) rate: Option<Rate>,
    pub(crate) delay: Option<Duration>,
    pub(crate) jitter: Option<Duration>,
    pub(crate) reorder: Option<bool>,
    pub(crate) loss: Option<LossModel>,
    pub(crate) queue: Option<QueueLimit>,
    pub(crate) aqm: Option<AqmChoice>,
    pub(crate) red: RedPatch,
    pub(crate) codel_target: Option<Duration>,
    pub(crate) codel_interval: Option<Duration>,
    pub(crate) fq_quantum: Option<u32>,
    pub(crate) fq_flows: Option<u32>,
    pub(crate) ecn: Option<bool>,
    pub(crate) duplicate: Option<f64>,
    pub(crate) ooo_rate: Option<f64>,
    pub(crate) ooo_delay: Option<Duration>,
    pub(crate) up: Option<bool>,
    pub(crate) mtu: Option<u32>,
    pub(crate) wireless: Option<Standard>,
    pub(crate) snr_db: Option<f64>,
    pub(crate) netload: Option<f64>,
    pub(crate) collision: Option<f64>,
    pub(crate) retry_limit: Option<u8>,
    pub(crate) mac_profile: Option<Arc<DelayProfile>>,
    pub(crate) trace: Option<Arc<Trace>>,
}

/// Why a change to a link's parameters was refused. `Display` is one line naming the key and
/// what would be valid; a value the topology file would refuse is refused with the file's words.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PatchError {
    /// No key was given.
    #[error("nothing to set; keys: {}", LinkPatch::KEYS.join(", "))]
    Empty,
    /// A word of [`LinkPatch::from_words`] without `=`.
    #[error(
        "{word:?} is not key=value{}; keys: {}",
        key_hint(.word),
        LinkPatch::KEYS.join(", ")
    )]
    NotKeyValue {
        /// The word as given.
        word: String,
    },
    /// A key the topology file does not have either.
    #[error(
        "unknown key {key:?}{}; keys: {}",
        did_you_mean(.key, LinkPatch::KEYS),
        LinkPatch::KEYS.join(", ")
    )]
    UnknownKey {
        /// The key as given.
        key: String,
    },
    /// A key of a link table that only the topology file sets: one naming a data file, or one
    /// describing the link rather than its parameters.
    #[error(
        "{key} {}; it can only be set in the topology file",
        if DATA_KEYS.contains(&.key.as_str()) {
            "names a data file, which is read once, when the topology is loaded"
        } else {
            "is part of the link's definition, not one of its parameters"
        }
    )]
    FileOnly {
        /// The key as given.
        key: String,
    },
    /// A value the topology file would refuse too, or words that do not make a table (a key
    /// given twice); the message is the loader's, starting with the key.
    #[error("{0}")]
    BadValue(String),
    /// The changed link would not be valid, as the loader would say of a link written so (RED
    /// thresholds out of order, a rate the wireless standard does not have, ...).
    #[error("{0}")]
    InvalidLink(String),
}

impl LinkPatch {
    /// The keys a patch sets: every key of a link table in the topology file except the data
    /// files (`mac_profile`, `trace`) and the link's own keys (`a`, `b`, `class`, `shared`,
    /// `a_to_b`, `b_to_a`, `schedule`, `markov`).
    pub const KEYS: &'static [&'static str] = VALUE_KEYS;

    /// The patch `key=value` words set, as `netloom link set A B delay=5ms loss=1%` gives them:
    /// [`LinkPatch::table_from_words`] then [`LinkPatch::from_table`].
    pub fn from_words(words: &[impl AsRef<str>]) -> Result<LinkPatch, PatchError> {
        LinkPatch::from_table(&LinkPatch::table_from_words(words)?)
    }

    /// The table of [`LinkPatch::from_table`] that `key=value` words stand for, for a client to
    /// send as JSON. Each value is typed as the file types its key (`queue=20` an integer,
    /// `queue=64KB` a string, `reorder=true` a boolean, `red.min_th=5` a number, units as
    /// strings); dotted keys build nested tables (`loss.model=gilbert-elliott loss.p=1%
    /// loss.r=30%`). Words without `=`, unknown keys and keys a patch cannot set are refused
    /// here; values are checked by `from_table`, so a value that does not fit its key's type is
    /// passed on as a string for it to refuse in the file's words.
    pub fn table_from_words(words: &[impl AsRef<str>]) -> Result<Map<String, Value>, PatchError> {
        if words.is_empty() {
            return Err(PatchError::Empty);
        }
        let mut table = Map::new();
        for word in words {
            let word = word.as_ref();
            let Some((name, text)) = word.split_once('=') else {
                return Err(PatchError::NotKeyValue {
                    word: word.to_string(),
                });
            };
            let parts: Vec<&str> = name.split('.').collect();
            if let Some(refusal) = refusal(parts[0]) {
                return Err(refusal);
            }
            let text = text.trim();
            let leaf = parts[parts.len() - 1];
            let value = typed(leaf, text).unwrap_or_else(|_| Value::String(text.to_string()));
            insert(&mut table, &parts, value)
                .map_err(|why| PatchError::BadValue(format!("{name}: {why}")))?;
        }
        Ok(table)
    }

    /// The first key naming a data file (`mac_profile`, `trace`) this patch sets, if any.
    pub(crate) fn data_key(&self) -> Option<&'static str> {
        if self.mac_profile.is_some() {
            Some("mac_profile")
        } else if self.trace.is_some() {
            Some("trace")
        } else {
            None
        }
    }

    /// `self` with every key that `top` sets replaced (RED key by key).
    pub(crate) fn under(&self, top: &LinkPatch) -> LinkPatch {
        LinkPatch {
            rate: top.rate.or(self.rate),
            delay: top.delay.or(self.delay),
            jitter: top.jitter.or(self.jitter),
            reorder: top.reorder.or(self.reorder),
            loss: top.loss.or(self.loss),
            queue: top.queue.or(self.queue),
            aqm: top.aqm.or(self.aqm),
            red: RedPatch {
                min_th: top.red.min_th.or(self.red.min_th),
                max_th: top.red.max_th.or(self.red.max_th),
                max_p: top.red.max_p.or(self.red.max_p),
                weight: top.red.weight.or(self.red.weight),
            },
            codel_target: top.codel_target.or(self.codel_target),
            codel_interval: top.codel_interval.or(self.codel_interval),
            fq_quantum: top.fq_quantum.or(self.fq_quantum),
            fq_flows: top.fq_flows.or(self.fq_flows),
            ecn: top.ecn.or(self.ecn),
            duplicate: top.duplicate.or(self.duplicate),
            ooo_rate: top.ooo_rate.or(self.ooo_rate),
            ooo_delay: top.ooo_delay.or(self.ooo_delay),
            up: top.up.or(self.up),
            mtu: top.mtu.or(self.mtu),
            wireless: top.wireless.or(self.wireless),
            snr_db: top.snr_db.or(self.snr_db),
            netload: top.netload.or(self.netload),
            collision: top.collision.or(self.collision),
            retry_limit: top.retry_limit.or(self.retry_limit),
            mac_profile: top.mac_profile.clone().or_else(|| self.mac_profile.clone()),
            trace: top.trace.clone().or_else(|| self.trace.clone()),
        }
    }
}

/// The patch that sets every key to `config`'s value (the wireless keys only when it is
/// wireless), so that finishing it gives `config` back.
impl From<&PipeConfig> for LinkPatch {
    fn from(config: &PipeConfig) -> LinkPatch {
        let fq = match config.aqm {
            Aqm::FqCodel(p) => Some(p),
            _ => None,
        };
        let (aqm, red, codel) = match config.aqm {
            Aqm::DropTail => (AqmChoice::DropTail, RedPatch::default(), None),
            Aqm::FqCodel(p) => (AqmChoice::FqCodel, RedPatch::default(), Some(p.codel)),
            Aqm::Red(r) => (
                AqmChoice::Red,
                RedPatch {
                    min_th: Some(r.min_th),
                    max_th: Some(r.max_th),
                    max_p: Some(r.max_p),
                    weight: Some(r.weight),
                },
                None,
            ),
            Aqm::Codel(c) => (AqmChoice::Codel, RedPatch::default(), Some(c)),
        };
        let wireless = config.wireless;
        LinkPatch {
            rate: Some(config.rate),
            delay: Some(config.delay),
            jitter: Some(config.jitter),
            reorder: Some(config.reorder),
            loss: Some(config.loss),
            queue: Some(config.queue),
            aqm: Some(aqm),
            red,
            codel_target: codel.map(|c| c.target),
            codel_interval: codel.map(|c| c.interval),
            fq_quantum: fq.map(|p| p.quantum),
            fq_flows: fq.map(|p| p.flows),
            ecn: Some(config.ecn),
            duplicate: Some(config.duplicate),
            ooo_rate: Some(config.ooo_rate),
            ooo_delay: Some(config.ooo_delay),
            up: Some(config.up),
            mtu: Some(config.mtu),
            wireless: wireless.map(|w| w.standard),
            snr_db: wireless.and_then(|w| w.snr_db),
            netload: wireless.map(|w| w.netload),
            collision: wireless.map(|w| w.collision),
            retry_limit: wireless.map(|w| w.retry_limit),
            mac_profile: None,
            trace: None,
        }
    }
}

/// A pipe's parameters now, written as a link table of the topology file has them (every key,
/// the wireless ones only when it is wireless): what a live run reports of each pipe, and what
/// `LinkPatch::from_table` reads back into the same configuration. Values are exact: rates and
/// durations in the largest unit that divides them, probabilities as plain fractions.
impl From<&PipeConfig> for LinkParams {
    fn from(config: &PipeConfig) -> LinkParams {
        let patch = LinkPatch::from(config);
        let number = |x: Option<f64>| x.map(Fraction::Number);
        let loss = patch.loss.map(|loss| match loss {
            LossModel::None => LossSpec::Simple(Fraction::Number(0.0)),
            LossModel::Bernoulli { p } => LossSpec::Simple(Fraction::Number(p)),
            LossModel::GilbertElliott {
                p,
                r,
                good_loss,
                bad_loss,
            } => LossSpec::GilbertElliott(GilbertElliottSpec {
                model: "gilbert-elliott".into(),
                p: Fraction::Number(p),
                r: Fraction::Number(r),
                bad_loss: Some(Fraction::Number(bad_loss)),
                good_loss: Some(Fraction::Number(good_loss)),
            }),
        });
        let red = (patch.aqm == Some(AqmChoice::Red)).then(|| RedSpec {
            min_th: patch.red.min_th,
            max_th: patch.red.max_th,
            max_p: number(patch.red.max_p),
            weight: patch.red.weight,
        });
        LinkParams {
            bw: patch.rate.map(format_rate),
            delay: patch.delay.map(format_duration),
            jitter: patch.jitter.map(format_duration),
            reorder: patch.reorder,
            loss,
            queue: patch.queue.map(|q| match q {
                QueueLimit::Packets(n) => QueueSpec::Packets(n.into()),
                QueueLimit::Bytes(b) => QueueSpec::Size(format!("{b}B")),
            }),
            aqm: patch.aqm.map(|a| a.name().into()),
            red,
            codel_target: patch.codel_target.map(format_duration),
            codel_interval: patch.codel_interval.map(format_duration),
            fq_quantum: patch.fq_quantum.map(i64::from),
            fq_flows: patch.fq_flows.map(i64::from),
            ecn: patch.ecn,
            duplicate: number(patch.duplicate),
            ooo_rate: number(patch.ooo_rate),
            ooo_delay: patch.ooo_delay.map(format_duration),
            up: patch.up,
            mtu: patch.mtu.map(i64::from),
            wireless: patch.wireless.map(|w| w.name().into()),
            snr: patch.snr_db.map(|db| format!("{db}dB")),
            netload: number(patch.netload),
            collision: number(patch.collision),
            retry_limit: patch.retry_limit.map(i64::from),
            mac_profile: None,
            trace: None,
        }
    }
}

/// Why a patch cannot set `key`, if it cannot.
pub(crate) fn refusal(key: &str) -> Option<PatchError> {
    let key = key.to_string();
    if VALUE_KEYS.contains(&key.as_str()) {
        None
    } else if DATA_KEYS.contains(&key.as_str()) || LINK_KEYS.contains(&key.as_str()) {
        Some(PatchError::FileOnly { key })
    } else {
        Some(PatchError::UnknownKey { key })
    }
}

/// ' (did you mean "delay=..."?)' for a word that looks like a key without its value.
fn key_hint(word: &str) -> String {
    suggest(word, LinkPatch::KEYS)
        .map(|key| format!(" (did you mean \"{key}=...\"?)"))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::params::to_map;
    use netloom_link::{RedParams, Wireless};
    use serde_json::json;

    fn words(w: &[&str]) -> Result<Value, PatchError> {
        LinkPatch::table_from_words(w).map(Value::Object)
    }

    fn error(w: &[&str]) -> String {
        match LinkPatch::from_words(w) {
            Ok(p) => panic!("{w:?} gave {p:?}"),
            Err(e) => e.to_string(),
        }
    }

    /// A pipe that sets something of every kind, none of it to its default.
    fn busy() -> PipeConfig {
        PipeConfig {
            jitter: Duration::from_millis(2),
            reorder: true,
            queue: QueueLimit::Packets(77),
            aqm: Aqm::Red(RedParams {
                min_th: 7.0,
                max_th: 30.0,
                max_p: 0.05,
                weight: 0.01,
            }),
            loss: LossModel::GilbertElliott {
                p: 0.01,
                r: 0.3,
                good_loss: 0.0,
                bad_loss: 0.5,
            },
            duplicate: 0.02,
            ooo_rate: 0.1,
            ooo_delay: Duration::from_millis(3),
            ..PipeConfig::new(Rate::bps(100_000_000), Duration::from_millis(10))
        }
    }

    #[test]
    fn words_are_typed_as_the_file_types_their_keys() {
        assert_eq!(
            words(&[
                "bw=10Mbit",
                "queue=20",
                "reorder=true",
                "up=false",
                "retry_limit=3",
                "loss=0.01",
                "duplicate=1%",
                "red.min_th=5",
                "red.max_th=15",
                "red.weight=0.01",
                "red.max_p=2%",
            ]),
            Ok(json!({
                "bw": "10Mbit",
                "queue": 20,
                "reorder": true,
                "up": false,
                "retry_limit": 3,
                "loss": 0.01,
                "duplicate": "1%",
                "red": { "min_th": 5.0, "max_th": 15.0, "weight": 0.01, "max_p": "2%" },
            }))
        );
        assert_eq!(words(&["queue=64KB"]), Ok(json!({ "queue": "64KB" })));
        assert_eq!(
            words(&["loss.model=gilbert-elliott", "loss.p=1%", "loss.r=30%"]),
            Ok(json!({ "loss": { "model": "gilbert-elliott", "p": "1%", "r": "30%" } }))
        );
        // Left for the file's checks to refuse in the file's words.
        assert_eq!(words(&["reorder=maybe"]), Ok(json!({ "reorder": "maybe" })));
    }

    #[test]
    fn words_that_cannot_be_a_patch_say_why() {
        assert_eq!(
            error(&["dealy"]),
            format!(
                "\"dealy\" is not key=value (did you mean \"delay=...\"?); keys: {}",
                LinkPatch::KEYS.join(", ")
            )
        );
        assert_eq!(
            error(&["bandwidth=10Mbit"]),
            format!(
                "unknown key \"bandwidth\" (did you mean \"bw\"?); keys: {}",
                LinkPatch::KEYS.join(", ")
            )
        );
        assert!(error(&["speed=1Mbit"]).starts_with("unknown key \"speed\"; keys: bw, delay,"));
        assert_eq!(
            error(&["trace=up.trace"]),
            "trace names a data file, which is read once, when the topology is loaded; \
             it can only be set in the topology file"
        );
        assert_eq!(
            error(&["delay=5ms", "class=x"]),
            "class is part of the link's definition, not one of its parameters; \
             it can only be set in the topology file"
        );
        assert!(error(&[] as &[&str]).starts_with("nothing to set; keys: bw, delay, jitter,"));
        assert_eq!(error(&["delay=5ms", "delay=6ms"]), "delay: given twice");
        assert_eq!(
            error(&["reorder=maybe"]),
            "reorder must be true or false, not the string \"maybe\""
        );
        assert_eq!(
            error(&["red.min_tn=5"]),
            "unknown key \"red.min_tn\" (did you mean \"min_th\"?); valid keys: min_th, max_th, max_p, weight"
        );
        assert!(LinkPatch::from_table(&Map::new()).is_err());
        let only_null = json!({ "delay": null });
        assert_eq!(
            LinkPatch::from_table(only_null.as_object().unwrap()).unwrap_err(),
            PatchError::Empty
        );
    }

    #[test]
    fn link_set_switches_to_codel_and_fq_codel_with_ecn_and_back() {
        use netloom_link::{CodelParams, FqCodelParams};
        let base = busy();
        let set = |config: &PipeConfig, w: &[&str]| {
            LinkPatch::from_words(w).unwrap().apply(config).unwrap()
        };
        let codel = set(&base, &["aqm=codel", "codel_target=2ms", "ecn=true"]);
        let want = CodelParams {
            target: Duration::from_millis(2),
            interval: Duration::from_millis(100),
        };
        assert_eq!((codel.aqm, codel.ecn), (Aqm::Codel(want), true));
        // CoDel's keys carry over to FQ-CoDel; its own take their defaults unless set.
        let fq = set(&codel, &["aqm=fq_codel", "fq_flows=16"]);
        let want = FqCodelParams {
            codel: want,
            flows: 16,
            ..FqCodelParams::default()
        };
        assert_eq!(fq.aqm, Aqm::FqCodel(want));
        // Back to drop-tail, ECN must go too.
        let e = LinkPatch::from_words(&["aqm=droptail"]).unwrap().apply(&fq);
        assert!(matches!(e, Err(PatchError::InvalidLink(m)) if m.contains("ecn = true needs")));
        let tail = set(&fq, &["aqm=droptail", "ecn=false"]);
        assert_eq!((tail.aqm, tail.ecn), (Aqm::DropTail, false));
    }

    #[test]
    fn apply_changes_what_is_set_and_keeps_the_rest() {
        let base = busy();
        let patch = LinkPatch::from_words(&["delay=5ms", "bw=20Mbit"]).unwrap();
        assert_eq!(
            patch.apply(&base),
            Ok(PipeConfig {
                rate: Rate::bps(20_000_000),
                delay: Duration::from_millis(5),
                ..base
            })
        );
        // A queue defaulted from the old rate and delay is kept, not defaulted again.
        let plain = PipeConfig::new(Rate::bps(1_000_000_000), Duration::from_millis(1));
        let slower = LinkPatch::from_words(&["bw=10Mbit"]).unwrap().apply(&plain);
        assert_eq!(slower.unwrap().queue, plain.queue);

        let red = LinkPatch::from_words(&["red.max_th=40"])
            .unwrap()
            .apply(&base);
        let Aqm::Red(r) = red.unwrap().aqm else {
            panic!("RED was dropped")
        };
        assert_eq!((r.min_th, r.max_th, r.max_p), (7.0, 40.0, 0.05));
        let off = LinkPatch::from_words(&["aqm=droptail", "loss=0", "up=false"]).unwrap();
        let off = off.apply(&base).unwrap();
        assert_eq!(
            (off.aqm, off.loss, off.up),
            (Aqm::DropTail, LossModel::None, false)
        );
        // RED chosen now gets the file's defaults for the queue's unit.
        let on = LinkPatch::from_words(&["aqm=red"])
            .unwrap()
            .apply(&off)
            .unwrap();
        let Aqm::Red(r) = on.aqm else {
            panic!("RED was not chosen")
        };
        assert_eq!((r.min_th, r.max_th), (5.0, 15.0));
        let wifi = LinkPatch::from_words(&["wireless=802.11b", "bw=11Mbit", "snr=20dB"]).unwrap();
        assert_eq!(
            wifi.apply(&plain).unwrap().wireless,
            Some(Wireless {
                snr_db: Some(20.0),
                ..Wireless::new(Standard::B)
            })
        );
    }

    #[test]
    fn apply_checks_the_result_as_a_finished_link() {
        let invalid =
            |base: &PipeConfig, w: &[&str]| match LinkPatch::from_words(w).unwrap().apply(base) {
                Err(PatchError::InvalidLink(m)) => m,
                other => panic!("{w:?} gave {other:?}"),
            };
        let plain = PipeConfig::new(Rate::bps(1_000_000_000), Duration::from_millis(1));
        assert_eq!(
            invalid(&plain, &["aqm=red", "queue=100", "red.min_th=20", "red.max_th=10"]),
            "red.min_th (20) must be below red.max_th (10); thresholds are in the queue's unit (packets)"
        );
        // Against the thresholds the pipe already has.
        assert!(invalid(&busy(), &["red.min_th=30"]).starts_with("red.min_th (30) must be below"));
        assert_eq!(
            invalid(&plain, &["wireless=802.11g"]),
            "bw 1Gbit is not a rate of 802.11g; its rates are 6Mbit, 9Mbit, 12Mbit, 18Mbit, \
             24Mbit, 36Mbit, 48Mbit, 54Mbit"
        );
        assert!(invalid(&plain, &["snr=20dB"]).starts_with("snr needs a wireless link"));
    }

    #[test]
    fn a_pipe_as_a_patch_finishes_into_itself() {
        let wireless = PipeConfig {
            wireless: Some(Wireless {
                snr_db: Some(12.0),
                netload: 0.1,
                collision: 0.02,
                retry_limit: 4,
                ..Wireless::new(Standard::G)
            }),
            queue: QueueLimit::Bytes(64_000),
            ..PipeConfig::new(Rate::bps(54_000_000), Duration::from_millis(1))
        };
        for config in [busy(), wireless] {
            assert_eq!(LinkPatch::default().apply(&config), Ok(config));
        }
    }

    #[test]
    fn a_pipe_written_as_a_link_table_reads_back_into_itself() {
        let wireless = PipeConfig {
            wireless: Some(Wireless {
                snr_db: Some(12.5),
                netload: 0.1,
                ..Wireless::new(Standard::B)
            }),
            queue: QueueLimit::Bytes(64_000),
            ..PipeConfig::new(Rate::bps(11_000_000), Duration::from_micros(1500))
        };
        let bernoulli = PipeConfig {
            loss: LossModel::Bernoulli { p: 0.125 },
            up: false,
            mtu: 9000,
            ..PipeConfig::new(Rate::bps(1_500_000), Duration::from_nanos(2500))
        };
        let plain = PipeConfig::new(Rate::bps(1), Duration::ZERO);
        for config in [busy(), wireless, bernoulli, plain] {
            let table = to_map(&LinkParams::from(&config));
            let patch = LinkPatch::from_table(&table).unwrap();
            // Over a pipe that differs in every key, so nothing is left from it.
            assert_eq!(patch.apply(&busy()), Ok(config), "{table:?}");
        }
        let table = to_map(&LinkParams::from(&busy()));
        assert_eq!(table["bw"], "100Mbit");
        assert_eq!(table["delay"], "10ms");
        assert_eq!(table["aqm"], "red");
        assert!(!table.contains_key("wireless"));
    }
}
