//! What a run counts of its hops for partitioning: nothing, packets per pair of consecutive
//! pipes (what repartitioning and `--observe` weigh a partition by), or the few counts that
//! measure a partitioned run's own partition without a count per hop.

use netloom_topo::PipeId;
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

/// Which counts a run keeps (`Engine::count_hops`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HopCounting {
    /// Packets per (pipe, next pipe) hop: `Engine::hop_counts`.
    Pairs,
    /// For a partitioned run, what measures its own partition (`Engine::crossings`) and no
    /// more: a pair count per hop cost a worker about 4 % of its time (docs/performance.md).
    Crossings,
}

/// What the engine counts now.
#[derive(Debug, Default)]
pub(crate) enum HopCounts {
    #[default]
    Off,
    /// A hash map with a multiply-and-rotate hash: every hop counts one, and a `BTreeMap`'s
    /// search took 10 % of a two-worker run's instructions (docs/performance.md).
    Pairs(FxHashMap<(PipeId, PipeId), u64>),
    Crossings(Crossings),
}

/// The hops into each pipe and across workers, as a pair count would add them up, from counts
/// kept off the per-hop path. A hop into pipe q is a packet q was offered that did not enter
/// the emulation at q, so the hops into q follow from q's offered packets once the packets
/// that entered there (`entered`) and the hops towards q that q was never offered (`unoffered`)
/// are counted; and in a run whose pipes stay where they are, a hop crosses workers exactly
/// when the pipe it leaves is not the worker's that handles its exit (`crossed`).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(crate) struct Crossings {
    /// Per pipe: packets sent into it from their source (counted where they were dispatched),
    /// whether it took them or not.
    entered: Vec<u64>,
    /// Per pipe: packets it was never offered though they were bound for it: after a hop,
    /// because a TTL ran out at the router between or no route was left; or larger than its
    /// MTU, after a hop or at their source.
    unoffered: Vec<u64>,
    /// Per worker: hops into its pipes from another worker's.
    crossed: Vec<u64>,
}

impl Crossings {
    pub(crate) fn new(pipes: usize, workers: usize) -> Crossings {
        Crossings {
            entered: vec![0; pipes],
            unoffered: vec![0; pipes],
            crossed: vec![0; workers],
        }
    }

    /// A packet from its source was sent into `pipe`.
    pub(crate) fn enter(&mut self, pipe: PipeId) {
        self.entered[pipe as usize] += 1;
    }

    /// A packet bound for `pipe` was not offered to it.
    pub(crate) fn unoffered(&mut self, pipe: PipeId) {
        self.unoffered[pipe as usize] += 1;
    }

    /// Worker `me` handled the exit of a packet from another worker's pipe into one of its own.
    pub(crate) fn hop_across(&mut self, me: usize) {
        self.crossed[me] += 1;
    }

    /// Adds another worker's counts to these.
    pub(crate) fn add(&mut self, other: &Crossings) {
        for (mine, theirs) in [
            (&mut self.entered, &other.entered),
            (&mut self.unoffered, &other.unoffered),
            (&mut self.crossed, &other.crossed),
        ] {
            for (m, t) in mine.iter_mut().zip(theirs) {
                *m += t;
            }
        }
    }

    /// The hops into each pipe, given the packets each was offered (in pipe order), and the
    /// hops each worker took in from another.
    pub(crate) fn totals(&self, offered: impl Iterator<Item = u64>) -> (Vec<u64>, Vec<u64>) {
        let arrived = offered
            .zip(self.entered.iter().zip(&self.unoffered))
            .map(|(offered, (entered, unoffered))| offered + unoffered - entered)
            .collect();
        (arrived, self.crossed.clone())
    }
}

impl HopCounts {
    /// The crossing counts, if kept.
    pub(crate) fn crossings(&self) -> Option<&Crossings> {
        match self {
            HopCounts::Crossings(c) => Some(c),
            _ => None,
        }
    }

    /// The pair counts as sorted triples, if kept.
    pub(crate) fn pairs(&self) -> Option<Vec<(PipeId, PipeId, u64)>> {
        let HopCounts::Pairs(pairs) = self else {
            return None;
        };
        let mut pairs: Vec<_> = pairs.iter().map(|(&(p, q), &n)| (p, q, n)).collect();
        // In (pipe, next pipe) order, whatever order the map keeps.
        pairs.sort_unstable();
        Some(pairs)
    }

    /// Adds another worker's pair counts to these.
    pub(crate) fn add_pairs(&mut self, pairs: impl IntoIterator<Item = ((PipeId, PipeId), u64)>) {
        if let HopCounts::Pairs(mine) = self {
            for (hop, n) in pairs {
                *mine.entry(hop).or_default() += n;
            }
        }
    }

    /// Adds another worker's counts to these, of the same kind.
    pub(crate) fn add(&mut self, other: HopCounts) {
        match (self, other) {
            (mine @ HopCounts::Pairs(_), HopCounts::Pairs(theirs)) => mine.add_pairs(theirs),
            (HopCounts::Crossings(mine), HopCounts::Crossings(theirs)) => mine.add(&theirs),
            _ => {}
        }
    }
}
