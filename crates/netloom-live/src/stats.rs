//! What `netloom stats` shows of a running experiment: each worker snapshots its own part (the
//! pipes it owns, the packets it read and wrote, its lateness), and the parts merge into one.

use crate::accuracy::Accuracy;
use crate::driver::HostCounters;
use serde_json::Value;

/// One worker's figures, or all of them once merged.
#[derive(Clone)]
pub struct Snapshot {
    pub uptime_ns: u64,
    /// Payload buffers in flight.
    pub in_flight: usize,
    pub accuracy: Accuracy,
    /// Per host (in `Topology::hosts` order): its name and the packets this worker read from it
    /// and wrote to it.
    pub hosts: Vec<(String, HostCounters)>,
    /// Per pipe: its report with the queue now, if this worker owns it.
    pub pipes: Vec<Option<Value>>,
}

impl Snapshot {
    /// Adds another worker's part: counts add up, each pipe is its owner's.
    pub fn merge(&mut self, other: Snapshot) {
        self.uptime_ns = self.uptime_ns.max(other.uptime_ns);
        self.in_flight += other.in_flight;
        self.accuracy.merge(&other.accuracy);
        for ((_, mine), (_, theirs)) in self.hosts.iter_mut().zip(&other.hosts) {
            mine.add(theirs);
        }
        for (mine, theirs) in self.pipes.iter_mut().zip(other.pipes) {
            if theirs.is_some() {
                *mine = theirs;
            }
        }
    }

    /// The JSON of `netloom stats --json` (docs/live.md).
    pub fn to_json(&self) -> Value {
        let hosts: Vec<_> = self
            .hosts
            .iter()
            .map(|(name, c)| serde_json::json!({ "name": name, "counters": c }))
            .collect();
        serde_json::json!({
            "uptime_ns": self.uptime_ns,
            "in_flight": self.in_flight,
            "accuracy": self.accuracy.report(),
            "hosts": hosts,
            "pipes": self.pipes.iter().flatten().collect::<Vec<_>>(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accuracy::Thresholds;
    use std::time::Duration;

    fn part(uptime_ns: u64, owned: &[usize], packets_in: u64) -> Snapshot {
        let mut accuracy = Accuracy::new(Thresholds::default());
        accuracy.record_release(Duration::from_micros(uptime_ns));
        let counters = HostCounters {
            packets_in,
            ..HostCounters::default()
        };
        Snapshot {
            uptime_ns,
            in_flight: 1,
            accuracy,
            hosts: vec![("h1".into(), counters), ("h2".into(), counters)],
            pipes: (0..3)
                .map(|p| owned.contains(&p).then(|| serde_json::json!({ "pipe": p })))
                .collect(),
        }
    }

    #[test]
    fn parts_merge_into_every_pipe_once_and_summed_counts() {
        let mut all = part(10, &[0, 2], 3);
        all.merge(part(12, &[1], 4));
        let json = all.to_json();
        assert_eq!(json["uptime_ns"], 12);
        assert_eq!(json["in_flight"], 2);
        assert_eq!(json["accuracy"]["released"], 2);
        assert_eq!(json["hosts"][1]["counters"]["packets_in"], 7);
        let pipes: Vec<_> = json["pipes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| &p["pipe"])
            .collect();
        assert_eq!(pipes, [0, 1, 2]);
    }
}
