//! One snapshot of the run shared by every reader for `every`: a scrape or a page's poll asks
//! the workers for figures (each worker stops its loop to copy its counters), so however many
//! clients read and however often, the workers answer at most one snapshot an interval. The
//! first reader after an interval takes the snapshot while the others wait for it; a link change
//! drops the shared one, so the next read shows it.

use netloom_live::{
    Direction, LinkChange, Report, RunError, RunInfo, RunView, SharedView, Subscription,
};
use netloom_time::{Clock, Duration, Instant};
use serde_json::{Map, Value};
use std::sync::{Arc, Mutex, MutexGuard};

/// How long a snapshot is shared by default: a quarter of the page's poll and of Prometheus'
/// finest usual scrape interval (1 s), so each of those still sees a new one.
pub const SNAPSHOT_EVERY: Duration = Duration(250_000_000);

/// The last snapshot: when it was taken and what it was (figures or why there are none).
type Taken = (Instant, Shared);

/// A snapshot as every reader shares it: the figures, or why there are none.
pub type Shared = Result<Arc<Report>, Arc<RunError>>;

/// A `RunView` whose `stats` is shared by every caller for `every`; its other calls go through.
pub struct Snapshots<C: Clock> {
    source: SharedView,
    clock: C,
    every: Duration,
    last: Mutex<Option<Taken>>,
    /// Snapshots asked of the source so far.
    taken: std::sync::atomic::AtomicU64,
}

impl<C: Clock + Sync> Snapshots<C> {
    /// `source`, its figures shared for `every` as `clock` counts it.
    pub fn new(source: SharedView, clock: C, every: Duration) -> Snapshots<C> {
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
    pub fn shared(&self) -> Shared {
        let mut last = self.lock();
        let now = self.clock.now();
        if let Some((at, taken)) = last.as_ref() {
            if now.saturating_since(*at) < self.every {
                return taken.clone();
            }
        }
        self.taken
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let taken = self.source.stats().map(Arc::new).map_err(Arc::new);
        *last = Some((self.clock.now(), taken.clone()));
        taken
    }
}

impl<C: Clock + Sync> RunView for Snapshots<C> {
    fn info(&self) -> Result<RunInfo, RunError> {
        self.source.info()
    }

    fn stats(&self) -> Result<Report, RunError> {
        match self.shared() {
            Ok(report) => Ok(Report::clone(&report)),
            Err(e) => Err(RunError::Shared(e)),
        }
    }

    fn link_set(
        &self,
        a: &str,
        b: &str,
        direction: Direction,
        set: &Map<String, Value>,
    ) -> Result<LinkChange, RunError> {
        let done = self.source.link_set(a, b, direction, set)?;
        // The next read shows the change, not a snapshot from before it.
        *self.lock() = None;
        Ok(done)
    }

    fn link_state(&self, a: &str, b: &str, up: bool) -> Result<LinkChange, RunError> {
        let done = self.source.link_state(a, b, up)?;
        *self.lock() = None;
        Ok(done)
    }

    fn subscribe(&self) -> Result<Subscription, RunError> {
        self.source.subscribe()
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

    impl RunView for Counting {
        fn info(&self) -> Result<RunInfo, RunError> {
            Err(RunError::NoRun)
        }

        fn stats(&self) -> Result<Report, RunError> {
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
        ) -> Result<LinkChange, RunError> {
            Ok(LinkChange {
                link: format!("{a}-{b}"),
                direction,
                set: set.clone(),
                up: None,
                at_ns: 0,
            })
        }

        fn link_state(&self, a: &str, b: &str, up: bool) -> Result<LinkChange, RunError> {
            Ok(LinkChange {
                link: format!("{a}-{b}"),
                direction: Direction::Both,
                set: Map::new(),
                up: Some(up),
                at_ns: 0,
            })
        }

        fn subscribe(&self) -> Result<Subscription, RunError> {
            Err(RunError::NoRun)
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

    #[test]
    fn a_link_going_down_is_seen_by_the_next_read() {
        let run = Arc::new(Counting::default());
        let snapshots = Snapshots::new(run.clone(), TestClock::new(), SNAPSHOT_EVERY);
        assert_eq!(snapshots.stats().unwrap().uptime_ns, 1);
        let change = snapshots.link_state("h1", "r1", false).unwrap();
        assert_eq!(change.up, Some(false));
        assert_eq!(snapshots.stats().unwrap().uptime_ns, 2);
    }

    /// A run that cannot answer: every snapshot is the same refusal.
    struct Gone;

    impl RunView for Gone {
        fn info(&self) -> Result<RunInfo, RunError> {
            Err(RunError::NoRun)
        }

        fn stats(&self) -> Result<Report, RunError> {
            Err(netloom_live::LiveError::from(netloom_live::ControlError::Stopped).into())
        }

        fn link_set(
            &self,
            _: &str,
            _: &str,
            _: Direction,
            _: &Map<String, Value>,
        ) -> Result<LinkChange, RunError> {
            Err(RunError::NoRun)
        }

        fn link_state(&self, _: &str, _: &str, _: bool) -> Result<LinkChange, RunError> {
            Err(RunError::NoRun)
        }

        fn subscribe(&self) -> Result<Subscription, RunError> {
            Err(RunError::NoRun)
        }
    }

    #[test]
    fn a_refusal_is_shared_as_the_error_it_was() {
        let snapshots = Snapshots::new(Arc::new(Gone), TestClock::new(), SNAPSHOT_EVERY);
        let (first, second) = (snapshots.stats(), snapshots.stats());
        assert_eq!(snapshots.taken(), 1);
        for e in [first, second] {
            match e.unwrap_err() {
                RunError::Shared(inner) => assert!(
                    matches!(*inner, RunError::Live(netloom_live::LiveError::Control(_))),
                    "{inner:?}"
                ),
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(
            snapshots.stats().unwrap_err().to_string(),
            "the emulator has stopped"
        );
    }
}
