//! The parameters of `netloom link set`: `key=value` words in the topology file's vocabulary,
//! applied over a pipe's current configuration (what is not named stays as it is).

use netloom_link::{LossModel, PipeConfig};
use netloom_topo::doc::{Fraction, QueueSpec};
use netloom_topo::units::{parse_duration, parse_fraction, parse_queue, parse_rate};

/// Keys `link set` accepts.
pub const KEYS: &[&str] = &[
    "bw",
    "delay",
    "jitter",
    "loss",
    "queue",
    "duplicate",
    "reorder",
];

/// `config` with every `key=value` of `params` applied, or what is wrong with one of them.
pub fn apply(mut config: PipeConfig, params: &[String]) -> Result<PipeConfig, String> {
    if params.is_empty() {
        return Err(format!(
            "nothing to set; give key=value, keys: {}",
            KEYS.join(", ")
        ));
    }
    for word in params {
        let Some((key, value)) = word.split_once('=') else {
            return Err(format!(
                "{word:?} is not key=value (keys: {})",
                KEYS.join(", ")
            ));
        };
        let bad = |e: &dyn std::fmt::Display| format!("{key}={value}: {e}");
        let fraction = || parse_fraction(&Fraction::Text(value.to_string())).map_err(|e| bad(&e));
        match key {
            "bw" => config.rate = parse_rate(value).map_err(|e| bad(&e))?,
            "delay" => config.delay = parse_duration(value).map_err(|e| bad(&e))?,
            "jitter" => config.jitter = parse_duration(value).map_err(|e| bad(&e))?,
            "loss" => {
                let p = fraction()?;
                config.loss = if p == 0.0 {
                    LossModel::None
                } else {
                    LossModel::Bernoulli { p }
                };
            }
            "queue" => {
                let spec = match value.parse::<i64>() {
                    Ok(n) => QueueSpec::Packets(n),
                    Err(_) => QueueSpec::Size(value.to_string()),
                };
                config.queue = parse_queue(&spec).map_err(|e| bad(&e))?;
            }
            "duplicate" => config.duplicate = fraction()?,
            "reorder" => {
                config.reorder = value.parse().map_err(|_| bad(&"write true or false"))?;
            }
            _ => return Err(format!("unknown key {key:?}; keys: {}", KEYS.join(", "))),
        }
    }
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;
    use netloom_link::QueueLimit;
    use netloom_time::{Duration, Rate};

    fn words(w: &[&str]) -> Vec<String> {
        w.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn applies_named_keys_and_keeps_the_rest() {
        let base = PipeConfig::new(Rate::bps(1_000_000_000), Duration::from_millis(1));
        let c = apply(
            base,
            &words(&["delay=5ms", "bw=10Mbit", "loss=1%", "queue=64KB"]),
        )
        .unwrap();
        assert_eq!(c.delay, Duration::from_millis(5));
        assert_eq!(c.rate, Rate::bps(10_000_000));
        assert_eq!(c.loss, LossModel::Bernoulli { p: 0.01 });
        assert_eq!(c.queue, QueueLimit::Bytes(64_000));
        assert_eq!(c.jitter, base.jitter);
        let c = apply(c, &words(&["loss=0", "queue=20"])).unwrap();
        assert_eq!(
            (c.loss, c.queue),
            (LossModel::None, QueueLimit::Packets(20))
        );
    }

    #[test]
    fn says_what_is_wrong() {
        let base = PipeConfig::new(Rate::bps(1_000), Duration::ZERO);
        let err = |w: &[&str]| apply(base, &words(w)).unwrap_err();
        assert!(err(&["delay"]).contains("not key=value"));
        assert!(err(&["speed=1Mbit"]).contains("unknown key \"speed\""));
        assert!(err(&["bw=10mbps"]).contains("ambiguous"));
        assert!(err(&["reorder=maybe"]).contains("true or false"));
        assert!(err(&[]).contains("nothing to set"));
    }
}
