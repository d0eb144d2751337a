//! One snapshot of the run shared by every reader for `every`: a scrape or a page's poll asks
//! the workers for figures (each worker stops its loop to copy its counters), so however many
//! clients read and however often, the workers answer at most one snapshot an interval. The
//! first reader after an interval takes the snapshot while the others wait for it; a link change
//! drops the shared one, so the next read shows it.

use crate::source::{Source, SourceError};
use netloom_live::{Direction, LinkChange, Report, RunInfo};
use netloom_time::{Clock, Duration, Instant};
use serde_json::{Map, Value};
use std::sync::{Arc, Mutex, MutexGuard};

/// How long a snapshot is shared by default: a quarter of the page's poll and of Prometheus'
/// finest usual scrape interval (1 s), so each of those still sees a new one.
pub const SNAPSHOT_EVERY: Duration = Duration(250_000_000);

/// The last snapshot: when it was taken and what it was (figures or why there are none).
type Taken = (Instant, Arc<Result<Report, SourceError>>);

/// A `Source` whose `stats` is shared by every caller for `every`.
pub struct Snapshots<C: Clock> {
    source: Arc<dyn Source>,
    clock: C,
    every: Duration,
    last: Mutex<Option<Taken>>,
    /// Snapshots asked of the source so far.
    taken: std::sync::atomic::AtomicU64,
}

impl<C: Clock + Sync> Snapshots<C> {
    /// `source`, its figures shared for `every` as `clock` counts it.
    pub fn new(source: Arc<dyn Source>, clock: C, every: Duration) -> Snapshots<C> {
        Snapshots {
            source,
            clock,
            every,
            last: Mutex::new(None),
            taken: Default::default(),
        }
    }

    /// How many snapshots were asked of the source.
    pub fn taken(&self) -> u64 {
        self.taken.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn lock(&self) -> MutexGuard<'_, Option<Taken>> {
        // A reader that panicked left a whole value or none: either is fine to go on with.
        self.last.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The shared snapshot, taken now if the last is `every` old (or there is none). The lock is
    /// held while it is taken, so readers that come meanwhile wait for it instead of asking too.
    pub fn shared(&self) -> Arc<Result<Report, SourceError>> {
        let mut last = self.lock();
        let now = self.clock.now();
        if let Some((at, taken)) = last.as_ref() {
            if now.saturating_since(*at) < self.every {
                return taken.clone();
            }
        }
        self.taken
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let taken = Arc::new(self.source.stats());
        *last = Some((self.clock.now(), taken.clone()));
        taken
    }
}

impl<C: Clock + Sync> Source for Snapshots<C> {
    fn info(&self) -> Result<RunInfo, SourceError> {
        self.source.info()
    }

    fn stats(&self) -> Result<Report, SourceError> {
        match self.shared().as_ref() {
            Ok(report) => Ok(report.clone()),
            Err(e) => Err(SourceError::Shared(e.to_string())),
        }
    }

    fn link_set(
        &self,
        a: &str,
        b: &str,
        direction: Direction,
        set: &Map<String, Value>,
    ) -> Result<LinkChange, SourceError> {
        let done = self.source.link_set(a, b, direction, set)?;
        // The next read shows the change, not a snapshot from before it.
        *self.lock() = None;
        Ok(done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use netloom_time::TestClock;
    use std::sync::atomic::{AtomicU64, Ordering};

    /// A run whose every snapshot is counted, and numbered in its uptime.
    #[derive(Default)]
    struct Counting {
        asked: AtomicU64,
    }

    impl Source for Counting {
        fn info(&self) -> Result<RunInfo, SourceError> {
            Err(SourceError::NoRun)
        }

        fn stats(&self) -> Result<Report, SourceError> {
            let n = self.asked.fetch_add(1, Ordering::SeqCst) + 1;
            // Slow enough that concurrent readers overlap it.
            std::thread::sleep(std::time::Duration::from_millis(20));
            let mut report = crate::metrics::tests::report();
            report.uptime_ns = n;
            Ok(report)
        }

        fn link_set(
            &self,
            a: &str,
            b: &str,
            direction: Direction,
            set: &Map<String, Value>,
        ) -> Result<LinkChange, SourceError> {
            Ok(LinkChange {
                link: format!("{a}-{b}"),
                direction,
                set: set.clone(),
                up: None,
                at_ns: 0,
            })
        }
    }

    #[test]
    fn concurrent_readers_share_one_snapshot_an_interval() {
        let run = Arc::new(Counting::default());
        let clock = TestClock::new();
        let snapshots = Arc::new(Snapshots::new(run.clone(), clock.clone(), SNAPSHOT_EVERY));
        let readers: Vec<_> = (0..8)
            .map(|_| {
                let snapshots = snapshots.clone();
                std::thread::spawn(move || snapshots.stats().unwrap().uptime_ns)
            })
            .collect();
        let seen: Vec<u64> = readers.into_iter().map(|r| r.join().unwrap()).collect();
        assert_eq!(
            run.asked.load(Ordering::SeqCst),
            1,
            "8 readers, one snapshot"
        );
        assert!(seen.iter().all(|&n| n == 1), "{seen:?}");
        // Ten reads a second for two seconds: a snapshot at the first read 250 ms or more after
        // the last one (at 300, 600, ... 1,800 ms), never more than one a quarter second.
        for _ in 0..20 {
            clock.advance(Duration(100_000_000));
            snapshots.stats().unwrap();
        }
        assert_eq!(run.asked.load(Ordering::SeqCst), 1 + 6);
        assert_eq!(snapshots.taken(), 7);
    }

    #[test]
    fn a_link_change_is_seen_by_the_next_read() {
        let run = Arc::new(Counting::default());
        let snapshots = Snapshots::new(run.clone(), TestClock::new(), SNAPSHOT_EVERY);
        assert_eq!(snapshots.stats().unwrap().uptime_ns, 1);
        assert_eq!(snapshots.stats().unwrap().uptime_ns, 1);
        snapshots
            .link_set("h1", "r1", Direction::Both, &Map::new())
            .unwrap();
        assert_eq!(snapshots.stats().unwrap().uptime_ns, 2);
    }
}
