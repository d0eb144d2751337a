//! Scheduled changes of a link: states taken at fixed offsets from the start, once or repeating
//! every period ("at 10s set delay=50ms", "down from 20s to 25s").

use netloom_time::Duration;

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
