//! Real time as a `Clock` passed in: a loop that runs against the system's clock (a live run's
//! driver, the shaping daemon) never reads it itself, so it runs the same against
//! `SystemClock` and against a `TestClock` that a test sets by hand (as quinn-proto and
//! s2n-quic test theirs).

use crate::{Duration, Instant};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A source of engine time: nanoseconds since the run started, never going backwards. Every
/// worker of a run shares one, so hand-offs carry times the others agree on.
pub trait Clock: Clone + Send + 'static {
    /// The time now.
    fn now(&self) -> Instant;
}

/// CLOCK_MONOTONIC since the clock was started.
#[derive(Clone, Copy, Debug)]
pub struct SystemClock {
    start: std::time::Instant,
}

impl SystemClock {
    /// A clock that reads 0 now.
    pub fn start() -> SystemClock {
        SystemClock::since(std::time::Instant::now())
    }

    /// A clock that read 0 at `start` (the run's instant zero as another process has it).
    pub fn since(start: std::time::Instant) -> SystemClock {
        SystemClock { start }
    }
}

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Instant(self.start.elapsed().as_nanos() as u64)
    }
}

/// A clock that moves only when told: clones share one time, so a test holds one and the
/// driver under test another. A test's `PacketIo` usually advances it in `wait`, which is where
/// a real driver would sleep.
#[derive(Clone, Debug, Default)]
pub struct TestClock {
    ns: Arc<AtomicU64>,
}

impl TestClock {
    /// A clock at 0.
    pub fn new() -> TestClock {
        TestClock::default()
    }

    /// Moves the clock to `at`; a time before now leaves it where it is (it never goes back).
    pub fn set(&self, at: Instant) {
        self.ns.fetch_max(at.as_nanos(), Ordering::SeqCst);
    }

    /// Moves the clock on by `d`.
    pub fn advance(&self, d: Duration) {
        self.ns.fetch_add(d.as_nanos(), Ordering::SeqCst);
    }
}

impl Clock for TestClock {
    fn now(&self) -> Instant {
        Instant(self.ns.load(Ordering::SeqCst))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_test_clock_is_shared_by_its_clones_and_never_goes_back() {
        let clock = TestClock::new();
        let driver_side = clock.clone();
        clock.set(Instant(5_000));
        clock.advance(Duration::from_micros(1));
        assert_eq!(driver_side.now(), Instant(6_000));
        clock.set(Instant(1_000));
        assert_eq!(driver_side.now(), Instant(6_000));
    }

    #[test]
    fn the_system_clock_starts_at_zero_and_moves_on() {
        let clock = SystemClock::start();
        let (a, b) = (clock.now(), clock.now());
        assert!(a <= b && a.as_nanos() < 1_000_000_000);
    }
}
