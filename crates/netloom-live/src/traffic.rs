//! Owns a worker's `Traffic` over an epoch, what a repartitioning gathers; not the epochs' thread.
//!
//! Plain data, a leaf: the driver counts it, `Answer::Traffic` carries it, the experiment (or a
//! cluster's coordinator, which receives it through bytes) sums it, and `repartition` makes the
//! next partition from it.

use hdrhistogram::Histogram;
use netloom_topo::PipeId;
use serde::{Deserialize, Serialize};

/// A worker's traffic over an epoch: the engine's running totals (`Engine::hop_counts`) and
/// the lateness of the packets it released since the last look. Serialized for a worker on
/// another machine, the histogram as its recorded (value, count) pairs.
#[derive(Debug, Serialize, Deserialize)]
pub struct Traffic {
    pub(crate) packets: Vec<u64>,
    pub(crate) transitions: Vec<(PipeId, PipeId, u64)>,
    #[serde(with = "recorded")]
    pub(crate) lateness_ns: Histogram<u64>,
}

/// A lateness histogram as the (value, count) pairs it recorded: what merging and quantiles
/// need, within its 3 significant digits.
mod recorded {
    use hdrhistogram::Histogram;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(h: &Histogram<u64>, s: S) -> Result<S::Ok, S::Error> {
        let pairs: Vec<(u64, u64)> = h
            .iter_recorded()
            .map(|v| (v.value_iterated_to(), v.count_at_value()))
            .collect();
        pairs.serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Histogram<u64>, D::Error> {
        let mut h = super::lateness_histogram();
        for (value, count) in Vec::<(u64, u64)>::deserialize(d)? {
            h.record_n(value, count).map_err(serde::de::Error::custom)?;
        }
        Ok(h)
    }
}

impl Traffic {
    /// Adds another worker's traffic.
    pub(crate) fn merge(&mut self, other: Traffic) {
        self.packets
            .resize(self.packets.len().max(other.packets.len()), 0);
        for (mine, theirs) in self.packets.iter_mut().zip(other.packets) {
            *mine += theirs;
        }
        self.transitions.extend(other.transitions);
        self.transitions.sort_unstable_by_key(|&(p, q, _)| (p, q));
        self.transitions.dedup_by(|later, first| {
            let same = (later.0, later.1) == (first.0, first.1);
            if same {
                first.2 += later.2;
            }
            same
        });
        // Same bounds on every worker: adding cannot fail.
        let _ = self.lateness_ns.add(&other.lateness_ns);
    }
}

/// A fresh histogram of release lateness in ns, as `Accuracy` keeps (3 significant digits).
pub(crate) fn lateness_histogram() -> Histogram<u64> {
    Histogram::new(3).expect("3 significant digits are valid")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A machine's traffic through bytes, as the coordinator gathers it: the same totals, and
    /// a lateness histogram with the same count and quantiles, which still merges.
    #[test]
    fn traffic_through_bytes_keeps_its_counts_and_lateness() {
        let mut lateness_ns = lateness_histogram();
        for ns in [300, 450, 450, 2_000, 90_000, 1_500_000] {
            lateness_ns.record(ns).unwrap();
        }
        let traffic = Traffic {
            packets: vec![3, 0, 7],
            transitions: vec![(0, 2, 3)],
            lateness_ns,
        };
        let bytes = serde_json::to_vec(&traffic).unwrap();
        let mut arrived: Traffic = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(
            (&arrived.packets, &arrived.transitions),
            (&traffic.packets, &traffic.transitions)
        );
        let h = |t: &Traffic| {
            (
                t.lateness_ns.len(),
                t.lateness_ns.value_at_quantile(0.5),
                t.lateness_ns.max(),
            )
        };
        assert_eq!(h(&arrived), h(&traffic));
        arrived.merge(traffic);
        assert_eq!(arrived.lateness_ns.len(), 12);
        assert_eq!(arrived.packets, vec![6, 0, 14]);
    }
}
