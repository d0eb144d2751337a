//! The wall clock as engine time: nanoseconds of CLOCK_MONOTONIC since the driver started.

use netloom_time::Instant;

/// Monotonic time since `start`, as the engine's `Instant`.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    start: std::time::Instant,
}

impl Clock {
    pub fn start() -> Clock {
        Clock {
            start: std::time::Instant::now(),
        }
    }

    pub fn now(&self) -> Instant {
        Instant(self.start.elapsed().as_nanos() as u64)
    }

    /// The wall-clock duration until `at` (zero if it has passed).
    pub fn until(&self, at: Instant) -> std::time::Duration {
        std::time::Duration::from_nanos(at.saturating_since(self.now()).as_nanos())
    }
}
