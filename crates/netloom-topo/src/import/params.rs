//! Link parameters as flat key → value maps: layering, the keys two directions share, and the
//! dotted attribute names (`red.min_th`, `a_to_b.bw`) that GraphML and DOT carry. Works on the
//! document's `LinkParams`, never on parsed units.

use crate::doc::LinkParams;
use crate::schema::PARAM_KEYS;
use serde_json::{Map, Value};

pub(crate) fn to_map(params: &LinkParams) -> Map<String, Value> {
    match serde_json::to_value(params) {
        Ok(Value::Object(map)) => map,
        _ => unreachable!("LinkParams serializes to an object"),
    }
}

/// Why flat attributes are not link parameters; each message starts with the attribute's name,
/// except serde's for a value of the wrong shape.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ParamsError {
    /// A text that is not a value of its key's type.
    #[error("{name} = \"{text}\": {source}")]
    Value {
        /// The attribute's name, dotted.
        name: String,
        /// Its text.
        text: String,
        /// What to write instead.
        source: TypeError,
    },
    /// A dotted name that does not fit in the table the others made.
    #[error("{name}: {source}")]
    Place {
        /// The attribute's name, dotted.
        name: String,
        /// Why it does not fit.
        source: PlaceError,
    },
    /// Values of the wrong shape for link parameters.
    #[error(transparent)]
    Shape(#[from] serde_json::Error),
}

/// Why a dotted name cannot take its place in a table.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum PlaceError {
    /// No name at all.
    #[error("empty name")]
    Empty,
    /// The name was given before.
    #[error("given twice")]
    Twice,
    /// A part of the name is a value and also has keys under it.
    #[error("\"{0}\" is both a value and a table")]
    ValueAndTable(String),
}

/// Why a text is not a value of its key's type, saying what to write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum TypeError {
    /// A switch's key.
    #[error("write true or false")]
    Switch,
    /// A number's key.
    #[error("write a number")]
    Number,
    /// A whole number's key.
    #[error("write a whole number")]
    WholeNumber,
}

/// Reads a map back; fails (with serde's message) when a value has the wrong shape.
pub(crate) fn from_map(map: Map<String, Value>) -> Result<LinkParams, serde_json::Error> {
    serde_json::from_value(Value::Object(map))
}

fn checked(map: Map<String, Value>) -> LinkParams {
    from_map(map).expect("a map made from LinkParams reads back")
}

/// `over` layered on `base`, as `load` layers them: key by key, `red` tables merged inside.
pub(crate) fn layer(base: &LinkParams, over: &LinkParams) -> LinkParams {
    let mut out = to_map(base);
    for (key, value) in to_map(over) {
        match (out.get_mut(&key), value) {
            (Some(Value::Object(old)), Value::Object(new)) if key == "red" => old.extend(new),
            (_, value) => {
                out.insert(key, value);
            }
        }
    }
    checked(out)
}

/// The keys set to the same value in both.
pub(crate) fn common(a: &LinkParams, b: &LinkParams) -> LinkParams {
    let b = to_map(b);
    checked(
        to_map(a)
            .into_iter()
            .filter(|(k, v)| b.get(k) == Some(v))
            .collect(),
    )
}

/// The keys of `a` that `base` does not set to the same value; `None` if there are none.
pub(crate) fn minus(a: &LinkParams, base: &LinkParams) -> Option<LinkParams> {
    let base = to_map(base);
    let rest: Map<String, Value> = to_map(a)
        .into_iter()
        .filter(|(k, v)| base.get(k) != Some(v))
        .collect();
    (!rest.is_empty()).then(|| checked(rest))
}

/// Flat `(name, text)` pairs: nested tables become dotted names, each after `prefix` (empty, or
/// ending in a dot like "a_to_b.").
pub(crate) fn flatten(params: &LinkParams, prefix: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let root = prefix.strip_suffix('.').unwrap_or(prefix);
    flatten_into(&Value::Object(to_map(params)), root, &mut out);
    out
}

fn flatten_into(value: &Value, name: &str, out: &mut Vec<(String, String)>) {
    match value {
        Value::Object(map) => {
            for (key, v) in map {
                let sub = if name.is_empty() {
                    key.clone()
                } else {
                    format!("{name}.{key}")
                };
                flatten_into(v, &sub, out);
            }
        }
        Value::String(s) => out.push((name.to_string(), s.clone())),
        other => out.push((name.to_string(), other.to_string())),
    }
}

/// Builds parameters from flat attributes whose names (after `prefix`) start with one of
/// `PARAM_KEYS` (the fields of `LinkParams`); other attributes are not parameters and are skipped. `None` if none matched.
/// A value's type follows its key: `true`/`false` for switches, numbers for thresholds,
/// a number or a text like "0.5%" for probabilities, packets or a size for `queue`.
pub(crate) fn unflatten<'a>(
    attrs: impl IntoIterator<Item = (&'a str, &'a str)>,
    prefix: &str,
) -> Result<Option<LinkParams>, ParamsError> {
    let mut root = Map::new();
    for (name, text) in attrs {
        let Some(path) = name.strip_prefix(prefix) else {
            continue;
        };
        let parts: Vec<&str> = path.split('.').collect();
        if !PARAM_KEYS.contains(&parts[0]) {
            continue;
        }
        let leaf = parts[parts.len() - 1];
        let value = typed(leaf, text).map_err(|source| ParamsError::Value {
            name: name.to_string(),
            text: text.to_string(),
            source,
        })?;
        insert(&mut root, &parts, value).map_err(|source| ParamsError::Place {
            name: name.to_string(),
            source,
        })?;
    }
    if root.is_empty() {
        return Ok(None);
    }
    Ok(Some(from_map(root)?))
}

/// Puts `value` at the dotted name `parts` in `map`, making the tables on the way.
pub(crate) fn insert(
    map: &mut Map<String, Value>,
    parts: &[&str],
    value: Value,
) -> Result<(), PlaceError> {
    match parts {
        [] => Err(PlaceError::Empty),
        [last] => {
            if map.insert(last.to_string(), value).is_some() {
                return Err(PlaceError::Twice);
            }
            Ok(())
        }
        [first, rest @ ..] => match map
            .entry(first.to_string())
            .or_insert_with(|| Value::Object(Map::new()))
        {
            Value::Object(inner) => insert(inner, rest, value),
            _ => Err(PlaceError::ValueAndTable(first.to_string())),
        },
    }
}

/// `text` as the value the file writes for a key named `leaf` (the last part of a dotted name);
/// why not, when the key's type is a switch or a number and `text` is not one.
pub(crate) fn typed(leaf: &str, text: &str) -> Result<Value, TypeError> {
    let text = text.trim();
    let number = || {
        text.parse::<f64>()
            .ok()
            .filter(|n| n.is_finite())
            .and_then(|n| serde_json::Number::from_f64(n).map(Value::Number))
    };
    Ok(match leaf {
        "reorder" | "up" | "ecn" => match text {
            "true" | "1" => Value::Bool(true),
            "false" | "0" => Value::Bool(false),
            _ => return Err(TypeError::Switch),
        },
        "min_th" | "max_th" | "weight" => number().ok_or(TypeError::Number)?,
        "retry_limit" | "mtu" | "fq_quantum" | "fq_flows" => {
            Value::from(text.parse::<i64>().map_err(|_| TypeError::WholeNumber)?)
        }
        "queue" => match text.parse::<i64>() {
            Ok(n) => Value::from(n),
            Err(_) => Value::String(text.to_string()),
        },
        "loss" | "duplicate" | "ooo_rate" | "max_p" | "p" | "r" | "bad_loss" | "good_loss"
        | "netload" | "collision" => number().unwrap_or_else(|| Value::String(text.to_string())),
        _ => Value::String(text.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::{Fraction, QueueSpec, RedSpec};

    fn params() -> LinkParams {
        LinkParams {
            bw: Some("10Mbit".into()),
            delay: Some("0".into()),
            queue: Some(QueueSpec::Packets(50)),
            loss: Some(crate::doc::LossSpec::Simple(Fraction::Number(0.25))),
            red: Some(RedSpec {
                min_th: Some(5.0),
                max_p: Some(Fraction::Text("2%".into())),
                ..RedSpec::default()
            }),
            up: Some(false),
            wireless: Some("802.11b-11".into()),
            snr: Some("12dB".into()),
            netload: Some(Fraction::Number(0.01)),
            collision: Some(Fraction::Text("4%".into())),
            retry_limit: Some(4),
            ..LinkParams::default()
        }
    }

    #[test]
    fn flat_attributes_read_back_with_their_types() {
        let flat = flatten(&params(), "a_to_b.");
        assert!(flat.contains(&("a_to_b.red.min_th".into(), "5.0".into())));
        let back = unflatten(
            flat.iter().map(|(k, v)| (k.as_str(), v.as_str())),
            "a_to_b.",
        );
        assert_eq!(back.unwrap(), Some(params()));
        assert_eq!(unflatten([("label", "x")], "").unwrap(), None);
        assert!(unflatten([("up", "maybe")], "")
            .unwrap_err()
            .to_string()
            .contains("up"));
        assert!(unflatten([("red", "1"), ("red.min_th", "2")], "").is_err());
    }

    #[test]
    fn layering_merges_red_and_directions_split_into_common_and_rest() {
        let over = LinkParams {
            red: Some(RedSpec {
                weight: Some(0.5),
                ..RedSpec::default()
            }),
            bw: Some("1Gbit".into()),
            ..LinkParams::default()
        };
        let merged = layer(&params(), &over);
        assert_eq!(merged.bw.as_deref(), Some("1Gbit"));
        let red = merged.red.clone().unwrap();
        assert_eq!((red.min_th, red.weight), (Some(5.0), Some(0.5)));
        let both = common(&params(), &merged);
        assert_eq!(both.delay.as_deref(), Some("0"));
        assert_eq!(both.bw, None);
        assert_eq!(minus(&merged, &both).unwrap().bw.as_deref(), Some("1Gbit"));
        assert_eq!(minus(&both, &both), None);
    }
}
