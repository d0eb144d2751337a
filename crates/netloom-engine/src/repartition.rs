//! Dynamic repartitioning of a partitioned virtual-time run (ModelNet §5.4): at each epoch's
//! end, with every worker stopped at the same instant, the workers' counts are summed, the
//! caller decides the next ownership from them, and the workers hand each other the pipes,
//! packets and hosts that change owner (`Engine::migrate_out`, `migrate_in`).

use crate::barrier::Aborted;
use crate::engine::{Engine, Migration};
use crate::epoch::{EpochCounter, EpochCounts};
use crate::ownership::Ownership;
use netloom_link::Aqm;
use netloom_time::{Duration, Instant};
use netloom_topo::{PipeId, Topology};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Decides the ownership of the next epoch from the counts of the one that ended; `None`
/// keeps the current one. Called on worker 0's thread, once per epoch, the last one included
/// (its answer is then unused).
pub type Decide<'a> = dyn FnMut(EpochCounts) -> Option<Arc<Ownership>> + 'a;

/// Worker 0's part: the running totals at the last boundary, and the caller's decision.
pub(crate) struct Chooser<'a, 'b> {
    pub counter: EpochCounter,
    /// Where the epoch being counted started.
    pub since: Instant,
    pub decide: &'a mut Decide<'b>,
    /// The least lookahead of the partitions run so far, ns.
    pub least_lookahead: u64,
}

/// Totals of one worker: `Engine::hop_counts`.
type Counts = (Vec<u64>, Vec<(PipeId, PipeId, u64)>);

/// What the workers share to repartition at epoch boundaries.
pub(crate) struct Epochs {
    /// The epoch's length, ns.
    pub epoch: u64,
    /// Each worker's totals at the boundary.
    counts: Vec<Mutex<Option<Counts>>>,
    /// The ownership worker 0 decided on at the boundary, if it changes.
    next: Mutex<Option<Arc<Ownership>>>,
    /// What each worker is handed.
    mail: Vec<Mutex<Vec<Migration>>>,
}

impl Epochs {
    /// Epochs of `epoch` for `workers` workers.
    pub fn new(epoch: Duration, workers: usize) -> Epochs {
        assert!(epoch.as_nanos() > 0, "an epoch lasts some time");
        Epochs {
            epoch: epoch.as_nanos(),
            counts: (0..workers).map(|_| Mutex::new(None)).collect(),
            next: Mutex::new(None),
            mail: (0..workers).map(|_| Mutex::new(Vec::new())).collect(),
        }
    }

    /// The boundary between [start, end) and the next epoch, on worker `me` (every worker calls
    /// it, after taking in every hand-off of the last window): counts are gathered, worker 0
    /// (`chooser`) decides and sets the new `lookahead`, then state moves. `wait` is the run's
    /// barrier.
    pub fn boundary(
        &self,
        me: usize,
        engine: &mut Engine,
        (start, end): (Instant, Instant),
        chooser: Option<&mut Chooser<'_, '_>>,
        lookahead: &AtomicU64,
        wait: &mut dyn FnMut() -> Result<(), Aborted>,
    ) -> Result<(), Aborted> {
        *lock(&self.counts[me]) = Some(engine.hop_counts());
        wait()?;
        if let Some(chooser) = chooser {
            let (packets, transitions) = self.sum();
            let counts = chooser
                .counter
                .close_totals(packets, transitions, start, end);
            chooser.since = end;
            let next = (chooser.decide)(counts);
            if let Some(o) = &next {
                lookahead.store(o.lookahead().as_nanos(), Ordering::Relaxed);
                chooser.least_lookahead = chooser.least_lookahead.min(o.lookahead().as_nanos());
            }
            *lock(&self.next) = next;
        }
        wait()?;
        let Some(next) = lock(&self.next).clone() else {
            return Ok(());
        };
        for (to, m) in engine.migrate_out(next).into_iter().enumerate() {
            if !m.is_empty() {
                lock(&self.mail[to]).push(m);
            }
        }
        wait()?;
        for m in lock(&self.mail[me]).drain(..) {
            engine.migrate_in(m);
        }
        Ok(())
    }

    /// The workers' totals added up, taking them.
    fn sum(&self) -> Counts {
        let mut packets: Vec<u64> = Vec::new();
        let mut transitions = std::collections::BTreeMap::new();
        for slot in &self.counts {
            let (p, t) = lock(slot).take().expect("every worker left its counts");
            packets.resize(p.len(), 0);
            for (sum, n) in packets.iter_mut().zip(p) {
                *sum += n;
            }
            for (a, b, n) in t {
                *transitions.entry((a, b)).or_insert(0) += n;
            }
        }
        let transitions = transitions
            .into_iter()
            .map(|((a, b), n)| (a, b, n))
            .collect();
        (packets, transitions)
    }
}

/// A mutex's contents; a worker that panicked while holding one has called the run off already.
pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A pipe of `topo` that can never move while running, by name: FQ-CoDel pipes hold their
/// packets in flow queues that refer to their worker's packets (in their configuration or in
/// any state of their link's time-varying plan). `None` if every pipe can move.
pub fn immovable_pipe(topo: &Topology) -> Option<String> {
    let fq = |c: &netloom_link::PipeConfig| matches!(c.aqm, Aqm::FqCodel(_));
    topo.pipes.iter().enumerate().find_map(|(p, spec)| {
        let planned = topo
            .plans
            .iter()
            .filter(|plan| plan.link == spec.link)
            .flat_map(|plan| plan.states.iter().flat_map(|(ab, ba)| [ab, ba]));
        let deferred = fq(&spec.config) || planned.into_iter().any(fq);
        deferred.then(|| crate::ownership::pipe_name(topo, p as PipeId))
    })
}
