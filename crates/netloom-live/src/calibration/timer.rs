//! Timer lateness per precision mode: a thread made ready as a worker's is (fine timer slack,
//! real-time priority unless busy) waits for deadlines under the mode's own `Waiter` policy and
//! an empty epoll, as a driver with no packets does, and records how late it finds each one and
//! how much CPU each sleep costs it.

use super::{percentiles, CalibrationError, TimerLateness};
use crate::clock::{Clock, SystemClock};
use crate::wait::{Hybrid, Precision, Waiter};
use netloom_os::{OsError, Poller};
use netloom_time::Duration;

/// Why the timer thread could not measure.
#[derive(Debug, thiserror::Error)]
enum TimerError {
    /// Its priority, or its poller or the poller's wait.
    #[error(transparent)]
    Os(#[from] OsError),
    /// The thread's CPU time could not be read.
    #[error("{THREAD_SCHEDSTAT}: {0}")]
    CpuTime(#[source] std::io::Error),
    /// The thread's CPU time is not where it should be.
    #[error("{THREAD_SCHEDSTAT}: no CPU time in {0:?}")]
    NoCpuTime(String),
}

/// Where a thread's CPU time is, ns first.
const THREAD_SCHEDSTAT: &str = "/proc/thread-self/schedstat";

/// The modes `run --precision` offers, with their names there.
pub(super) const MODES: [(&str, Precision); 3] = [
    ("busy", Precision::Busy),
    (
        "hybrid",
        Precision::Hybrid(Hybrid {
            spin: None,
            linger: crate::wait::DEFAULT_LINGER,
        }),
    ),
    ("sleep", Precision::Sleep),
];

/// Gaps between deadlines, in turn: a short one a hybrid driver spins through, a millisecond,
/// and a longer one it sleeps most of (about 0.8 s per mode in all).
const GAPS_US: [u64; 3] = [100, 1_000, 3_000];
/// Deadlines per mode.
const DEADLINES: usize = 600;

/// How late `precision` finds its deadlines on this machine.
pub(super) fn lateness(
    (name, precision): (&str, Precision),
) -> Result<TimerLateness, CalibrationError> {
    let realtime = precision != Precision::Busy;
    let thread = std::thread::Builder::new()
        .name(format!("netloom-calibrate-{name}"))
        .spawn(move || -> Result<(Vec<u64>, Option<f64>), TimerError> {
            crate::worker::prepare(None, realtime)?;
            let mut poller = Poller::new()?;
            let clock = SystemClock::start();
            let mut waiter = Waiter::new(precision);
            let mut ready = Vec::new();
            let mut late = Vec::with_capacity(DEADLINES);
            let mut sleeps = 0u64;
            let cpu_before = thread_cpu_ns()?;
            for k in 0..DEADLINES {
                // From now, so one late deadline does not make the next late too.
                let deadline = clock.now() + Duration::from_micros(GAPS_US[k % GAPS_US.len()]);
                let mut now = clock.now();
                while now < deadline {
                    let sleep = waiter.budget(now, Some(deadline));
                    if !sleep.is_zero() {
                        let timeout = std::time::Duration::from_nanos(sleep.as_nanos());
                        poller.wait(Some(timeout), &mut ready)?;
                        waiter.woke(clock.now(), true);
                        sleeps += 1;
                    }
                    now = clock.now();
                }
                late.push(now.saturating_since(deadline).as_nanos());
            }
            // Everything the thread ran, spread over its sleeps: the wait's syscall, the timer,
            // the switch back in, and the cold loop it wakes into (for hybrid, also the spin
            // before each deadline, which it pays per timed wake-up too).
            let cpu = thread_cpu_ns()?.saturating_sub(cpu_before);
            Ok((late, (sleeps > 0).then(|| cpu as f64 / sleeps as f64)))
        })
        .map_err(CalibrationError::io("start the timer thread"))?;
    let (mut late, wake_up_ns) = thread
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        .map_err(|e| CalibrationError::Io {
            what: format!("timer lateness, {name} precision"),
            error: std::io::Error::other(e),
        })?;
    let (p50_ns, p99_ns, max_ns) = percentiles(&mut late);
    Ok(TimerLateness {
        precision: name.to_string(),
        samples: late.len(),
        p50_ns,
        p99_ns,
        max_ns,
        wake_up_ns,
    })
}

/// CPU time the calling thread has run, ns: the first field of /proc/thread-self/schedstat,
/// which counts in nanoseconds (utime and stime only count scheduler ticks).
fn thread_cpu_ns() -> Result<u64, TimerError> {
    let text = std::fs::read_to_string(THREAD_SCHEDSTAT).map_err(TimerError::CpuTime)?;
    text.split_whitespace()
        .next()
        .and_then(|ns| ns.parse().ok())
        .ok_or(TimerError::NoCpuTime(text))
}
