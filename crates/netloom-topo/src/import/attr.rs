//! What the attributes of a node or an edge mean, whichever file they come from: the Topology
//! Zoo's (`Latitude`, `Longitude`, `LinkSpeedRaw`, `LinkSpeed` + `LinkSpeedUnits`, and the speed
//! in `LinkLabel` when nothing else gives one), Shadow's
//! (`latency`, `bandwidth`, `jitter`, `packet_loss`, `host_bandwidth_up/down`) and netloom's own
//! (as `convert` writes them). GraphML and GML share it; other attributes are ignored.

use super::geo::Position;
use super::label;
use super::params::{self, ParamsError};
use crate::doc::{Fraction, LinkParams, LossSpec};
use crate::units::{self, UnitError};
use netloom_time::Rate;

/// Why a node's or an edge's attribute cannot be read; the message names the attribute and
/// says what would be valid.
#[derive(Debug, thiserror::Error)]
pub(crate) enum AttrError {
    /// A latitude or longitude out of range, or not a number.
    #[error("{name} = \"{text}\" is not a number of degrees in [-{limit}, {limit}]")]
    Degrees {
        /// The attribute.
        name: &'static str,
        /// Its text.
        text: String,
        /// The largest magnitude valid.
        limit: f64,
    },
    /// A coordinate on a plane that is not a finite number.
    #[error("{name} = \"{text}\" is not a finite number")]
    NotFinite {
        /// The attribute.
        name: &'static str,
        /// Its text.
        text: String,
    },
    /// A rate, duration or probability that does not read.
    #[error("{name} = {source}")]
    Unit {
        /// The attribute.
        name: &'static str,
        /// What is wrong with the value.
        source: UnitError,
    },
    /// A node kind other than host or router.
    #[error("kind = \"{0}\"; write \"host\" or \"router\"")]
    Kind(String),
    /// A `shared` that is not a boolean.
    #[error("shared = \"{0}\"; write true or false")]
    Shared(String),
    /// A `packet_loss` that is not a number.
    #[error("packet_loss = \"{0}\" is not a probability; write a fraction in [0, 1]")]
    PacketLoss(String),
    /// A `LinkSpeedRaw` that is not a positive number.
    #[error("LinkSpeedRaw = \"{0}\" is not a positive number of bit/s")]
    LinkSpeedRaw(String),
    /// A `LinkSpeedUnits` the Zoo does not write.
    #[error("LinkSpeedUnits = \"{0}\" is not one of K, M, G, T")]
    LinkSpeedUnits(String),
    /// A `LinkSpeed` that, with its units, is not a rate.
    #[error("LinkSpeed = \"{speed}\", LinkSpeedUnits = \"{unit}\": {source}")]
    LinkSpeed {
        /// The speed's text.
        speed: String,
        /// The units' text.
        unit: String,
        /// What is wrong with the rate they make.
        source: UnitError,
    },
    /// netloom's own parameter attributes.
    #[error(transparent)]
    Params(#[from] ParamsError),
}

/// Attributes as `(name, text)` in file order.
pub(crate) type Attrs = Vec<(String, String)>;

fn get<'a>(attrs: &'a Attrs, name: &str) -> Option<&'a str> {
    attrs.iter().find(|(k, _)| k == name).map(|(_, v)| v.trim())
}

fn pairs(attrs: &Attrs) -> impl Iterator<Item = (&str, &str)> {
    attrs.iter().map(|(k, v)| (k.as_str(), v.as_str()))
}

#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct NodeAttrs {
    pub position: Option<Position>,
    pub host: bool,
    pub group: Option<String>,
    pub access_up: Option<String>,
    pub access_down: Option<String>,
}

/// Reads a node's attributes; the error names the attribute and says what would be valid.
pub(crate) fn node(attrs: &Attrs) -> Result<NodeAttrs, AttrError> {
    let degrees = |name: &'static str, limit: f64| -> Result<Option<f64>, AttrError> {
        get(attrs, name)
            .map(|text| match text.parse::<f64>() {
                Ok(v) if v.abs() <= limit => Ok(v),
                _ => Err(AttrError::Degrees {
                    name,
                    text: text.to_string(),
                    limit,
                }),
            })
            .transpose()
    };
    let lat = degrees("Latitude", 90.0)?;
    let lon = degrees("Longitude", 180.0)?;
    // A point on a plane, as netloom's own export writes Inet's coordinates.
    let plane = |name: &'static str| -> Result<Option<f64>, AttrError> {
        get(attrs, name)
            .map(|text| match text.parse::<f64>() {
                Ok(v) if v.is_finite() => Ok(v),
                _ => Err(AttrError::NotFinite {
                    name,
                    text: text.to_string(),
                }),
            })
            .transpose()
    };
    let (x, y) = (plane("x")?, plane("y")?);
    let rate = |name: &'static str| -> Result<Option<String>, AttrError> {
        get(attrs, name)
            .map(|text| {
                units::parse_rate(text)
                    .map(|_| text.to_string())
                    .map_err(|source| AttrError::Unit { name, source })
            })
            .transpose()
    };
    let host = match get(attrs, "kind") {
        None | Some("router") => false,
        Some("host") => true,
        Some(other) => return Err(AttrError::Kind(other.to_string())),
    };
    Ok(NodeAttrs {
        position: lat
            .zip(lon)
            .map(|(lat, lon)| Position::Earth { lat, lon })
            .or_else(|| x.zip(y).map(|(x, y)| Position::Plane { x, y })),
        host,
        group: get(attrs, "group").map(str::to_string),
        access_up: rate("host_bandwidth_up")?,
        access_down: rate("host_bandwidth_down")?,
    })
}

#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct EdgeAttrs {
    pub class: Option<String>,
    pub shared: Option<bool>,
    pub params: LinkParams,
    pub a_to_b: Option<LinkParams>,
    pub b_to_a: Option<LinkParams>,
    /// The `LinkLabel` of an edge whose rate no other attribute gave, and whether its rate came
    /// from it: the notes count both.
    pub label: Option<(String, bool)>,
}

/// Reads an edge's attributes. netloom's own keys win over the Zoo's and Shadow's.
pub(crate) fn edge(attrs: &Attrs) -> Result<EdgeAttrs, AttrError> {
    let mut p = params::unflatten(pairs(attrs), "")?.unwrap_or_default();
    if p.bw.is_none() {
        p.bw = zoo_rate(attrs)?;
    }
    let checked = |name: &'static str, rate: bool| -> Result<Option<String>, AttrError> {
        get(attrs, name)
            .map(|text| {
                let ok = if rate {
                    units::parse_rate(text).map(drop)
                } else {
                    units::parse_duration(text).map(drop)
                };
                ok.map(|()| text.to_string())
                    .map_err(|source| AttrError::Unit { name, source })
            })
            .transpose()
    };
    if p.bw.is_none() {
        p.bw = checked("bandwidth", true)?;
    }
    // A label is read last: it is prose, and the Zoo's own numbers say more when it has them.
    let mut label = None;
    if p.bw.is_none() {
        if let Some(text) = get(attrs, "LinkLabel").filter(|t| !t.is_empty()) {
            let bps = label::rate(text);
            p.bw = bps.map(|bps| units::format_rate(Rate(bps)));
            label = Some((text.to_string(), bps.is_some()));
        }
    }
    if p.delay.is_none() {
        p.delay = checked("latency", false)?;
    }
    if p.loss.is_none() {
        if let Some(text) = get(attrs, "packet_loss") {
            let loss = Fraction::Number(
                text.parse::<f64>()
                    .map_err(|_| AttrError::PacketLoss(text.to_string()))?,
            );
            units::parse_fraction(&loss).map_err(|source| AttrError::Unit {
                name: "packet_loss",
                source,
            })?;
            p.loss = Some(LossSpec::Simple(loss));
        }
    }
    let shared = match get(attrs, "shared") {
        None => None,
        Some("true" | "1") => Some(true),
        Some("false" | "0") => Some(false),
        Some(other) => return Err(AttrError::Shared(other.to_string())),
    };
    Ok(EdgeAttrs {
        class: get(attrs, "class").map(str::to_string),
        shared,
        params: p,
        a_to_b: params::unflatten(pairs(attrs), "a_to_b.")?,
        b_to_a: params::unflatten(pairs(attrs), "b_to_a.")?,
        label,
    })
}

/// The Zoo's link speed: `LinkSpeedRaw` in bit/s, else `LinkSpeed` with `LinkSpeedUnits`.
fn zoo_rate(attrs: &Attrs) -> Result<Option<String>, AttrError> {
    if let Some(text) = get(attrs, "LinkSpeedRaw") {
        return match text.parse::<f64>() {
            // Rounded to whole bit/s: the Zoo writes these as floats ("2500000000.0").
            Ok(bps) if (1.0..1e18).contains(&bps) => {
                Ok(Some(units::format_rate(Rate(bps.round() as u64))))
            }
            _ => Err(AttrError::LinkSpeedRaw(text.to_string())),
        };
    }
    let Some(speed) = get(attrs, "LinkSpeed") else {
        return Ok(None);
    };
    let unit = get(attrs, "LinkSpeedUnits").unwrap_or("");
    let prefix = match unit.to_ascii_uppercase().as_str() {
        "" => "",
        "K" => "k",
        "M" => "M",
        "G" => "G",
        "T" => "T",
        _ => return Err(AttrError::LinkSpeedUnits(unit.to_string())),
    };
    let text = format!("{speed}{prefix}bit");
    units::parse_rate(&text)
        .map(|_| Some(text))
        .map_err(|source| AttrError::LinkSpeed {
            speed: speed.to_string(),
            unit: unit.to_string(),
            source,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attrs(list: &[(&str, &str)]) -> Attrs {
        list.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn zoo_speeds_prefer_the_raw_bits() {
        let e = edge(&attrs(&[
            ("LinkSpeed", "2.5"),
            ("LinkSpeedUnits", "G"),
            ("LinkSpeedRaw", "2500000000.0"),
        ]))
        .unwrap();
        assert_eq!(e.params.bw.as_deref(), Some("2500Mbit"));
        let e = edge(&attrs(&[("LinkSpeed", "155"), ("LinkSpeedUnits", "M")])).unwrap();
        assert_eq!(e.params.bw.as_deref(), Some("155Mbit"));
        assert!(edge(&attrs(&[("LinkSpeedRaw", "fast")]))
            .unwrap_err()
            .to_string()
            .contains("LinkSpeedRaw"));
        assert!(edge(&attrs(&[("LinkSpeed", "1"), ("LinkSpeedUnits", "X")])).is_err());
    }

    #[test]
    fn shadow_attributes_and_netloom_keys() {
        let e = edge(&attrs(&[
            ("latency", "10 ms"),
            ("bandwidth", "100 Mbit"),
            ("packet_loss", "0.01"),
            ("jitter", "1 ms"),
        ]))
        .unwrap();
        assert_eq!(e.params.delay.as_deref(), Some("10 ms"));
        assert_eq!(e.params.bw.as_deref(), Some("100 Mbit"));
        assert_eq!(e.params.jitter.as_deref(), Some("1 ms"));
        assert!(edge(&attrs(&[("latency", "10")]))
            .unwrap_err()
            .to_string()
            .starts_with("latency"));
        assert!(edge(&attrs(&[("packet_loss", "2")])).is_err());
        let n = node(&attrs(&[("host_bandwidth_up", "1 Gbit"), ("kind", "host")])).unwrap();
        assert_eq!((n.host, n.access_up.as_deref()), (true, Some("1 Gbit")));
        assert!(node(&attrs(&[("Latitude", "91"), ("Longitude", "0")])).is_err());
        let n = node(&attrs(&[("Latitude", "1")])).unwrap();
        assert_eq!(n.position, None, "a latitude alone is not a position");
    }
}
