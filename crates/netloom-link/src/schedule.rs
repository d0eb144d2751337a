//! Scheduled changes of a link: states taken at fixed offsets from the start, once or repeating
//! every period ("at 10s set delay=50ms", "down from 20s to 25s").

use netloom_time::Duration;

/// The closest two changes of a schedule may be, within a period or across its end. Each change
/// rebuilds the link's configuration and is one engine event; a live run keeps its releases to
/// tens of microseconds, so changes a millisecond apart are kept exactly, while `every = "1ns"`
/// would be a billion events a second that no engine can keep (and that left a live engine
/// spinning).
pub const MIN_STEP: Duration = Duration::from_millis(1);

/// The most steps (distinct change times) one schedule may have. Each step holds a full
/// configuration of the link's two pipes, so this bounds a schedule's memory (100,000 steps load
/// in about a second; docs/performance.md); longer variation is what a Markov graph or a trace is
/// for.
pub const MAX_STEPS: usize = 100_000;

/// Steps (offset, state), in increasing offset order, the first at offset 0. State 0 is the
/// link's own configuration; what the other states are is the caller's business.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schedule {
    steps: Vec<(Duration, u32)>,
    every: Option<Duration>,
}

/// Why a list of steps is not a valid schedule (`Schedule::new`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ScheduleError {
    /// A step's offset is not above the previous step's (equal offsets are refused too).
    #[error("step {index}: offsets must increase")]
    NotIncreasing {
        /// The offending step's position in the list given, from 0.
        index: usize,
    },
    /// In a repeating schedule, a step's offset is at or past the period.
    #[error("step {index}: offset {offset} is not before the period {every}")]
    BeyondPeriod {
        /// The offending step's position in the list given, from 0.
        index: usize,
        /// Its offset from the start of the period.
        offset: Duration,
        /// The period.
        every: Duration,
    },
    /// The period is zero, so the schedule would repeat without time passing.
    #[error("a repeating schedule needs a period above 0")]
    ZeroPeriod,
    /// Two changes closer than [`MIN_STEP`] (the second may be the next period's first).
    #[error("a change at {at} follows the one at {previous} by {gap}; changes must be at least {min} apart", min = MIN_STEP)]
    TooFine {
        /// The earlier change's offset in the period.
        previous: Duration,
        /// The later change's offset (in the next period when it wrapped around).
        at: Duration,
        /// The time between them.
        gap: Duration,
    },
    /// More than [`MAX_STEPS`] changes.
    #[error("{steps} changes, above the limit of {max}; use a markov graph or a trace for long variation", max = MAX_STEPS)]
    TooMany {
        /// How many there are.
        steps: usize,
    },
}

impl Schedule {
    /// `steps` at strictly increasing offsets. Without a step at 0 the schedule starts in state
    /// 0; with `every`, it starts over at each multiple of `every`, and every offset must be
    /// below it.
    pub fn new(
        mut steps: Vec<(Duration, u32)>,
        every: Option<Duration>,
    ) -> Result<Schedule, ScheduleError> {
        if every == Some(Duration::ZERO) {
            return Err(ScheduleError::ZeroPeriod);
        }
        for (index, &(offset, _)) in steps.iter().enumerate() {
            if index > 0 && offset <= steps[index - 1].0 {
                return Err(ScheduleError::NotIncreasing { index });
            }
            if let Some(every) = every.filter(|&e| offset >= e) {
                return Err(ScheduleError::BeyondPeriod {
                    index,
                    offset,
                    every,
                });
            }
        }
        if steps
            .first()
            .is_none_or(|&(offset, _)| offset > Duration::ZERO)
        {
            steps.insert(0, (Duration::ZERO, 0));
        }
        if steps.len() > MAX_STEPS {
            return Err(ScheduleError::TooMany { steps: steps.len() });
        }
        let gap = |a: Duration, b: Duration| Duration(b.as_nanos() - a.as_nanos());
        let gaps = steps
            .windows(2)
            .map(|w| (w[0].0, w[1].0, gap(w[0].0, w[1].0)));
        // A repeating schedule also changes from its last step to the next period's first.
        let wrap = every.map(|e| {
            let last = steps[steps.len() - 1].0;
            (last, e, gap(last, e))
        });
        if let Some((previous, at, gap)) = gaps.chain(wrap).find(|&(_, _, gap)| gap < MIN_STEP) {
            return Err(ScheduleError::TooFine { previous, at, gap });
        }
        Ok(Schedule { steps, every })
    }

    /// How many steps (counted over all periods from 0) fall at or before `t` since the start:
    /// at least 1, the step at offset 0. Computed, not stepped through, so a real-time driver
    /// that is far behind a fine schedule finds where it is at once.
    pub(crate) fn steps_through(&self, t: Duration) -> u64 {
        let len = self.steps.len() as u64;
        let in_period = |r: u64| self.steps.partition_point(|&(o, _)| o.as_nanos() <= r) as u64;
        match self.every {
            Some(every) => {
                let (periods, rest) = (
                    t.as_nanos() / every.as_nanos(),
                    t.as_nanos() % every.as_nanos(),
                );
                periods.saturating_mul(len).saturating_add(in_period(rest))
            }
            None => in_period(t.as_nanos()),
        }
    }

    /// Step `n`, counted over all periods from 0: (time since the start, state), or `None` past
    /// the end of a schedule that does not repeat.
    pub(crate) fn step(&self, n: u64) -> Option<(Duration, u32)> {
        let len = self.steps.len() as u64;
        let (period, i) = (n / len, (n % len) as usize);
        let base = match self.every {
            Some(every) => every.as_nanos().saturating_mul(period),
            None if period == 0 => 0,
            None => return None,
        };
        let (offset, state) = self.steps[i];
        Some((Duration(base.saturating_add(offset.as_nanos())), state))
    }
}
