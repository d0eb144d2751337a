//! A link's changes over time: a `Variation` (a schedule or a Markov graph) and the timeline that steps
//! through it, sans-I/O, so the virtual-time and real-time drivers apply the same changes.

use crate::markov::Markov;
use crate::rng::PipeRng;
use crate::schedule::Schedule;
use netloom_time::{Duration, Instant};
use rand::SeedableRng;
use std::sync::Arc;

/// How a link's state changes; states are indices into configurations the caller keeps.
#[derive(Clone, Debug, PartialEq)]
pub enum Variation {
    /// Fixed changes at offsets from time 0, once or every period; starts in the state of its
    /// step at offset 0 (state 0, the link's own configuration, if none was given).
    Schedule(Schedule),
    /// Random changes: states with empirical dwell times and probabilistic arcs (Dummynet on
    /// PlanetLab, Figure 10); starts in the graph's start state.
    Markov(Markov),
}

/// Where a link is in its plan: the current state and when the next change is due. Starts at
/// time zero; a Markov plan's draws come from its own generator seeded by `seed`.
pub struct Timeline {
    plan: Arc<Variation>,
    rng: PipeRng,
    state: u32,
    next_at: Option<Instant>,
    /// The next schedule step (counted over all periods).
    step: u64,
}

impl Timeline {
    /// A timeline at time 0, in the plan's first state: a schedule's step at offset 0, or a
    /// Markov graph's start state with its first dwell time already drawn from `seed`'s stream.
    pub fn new(plan: Arc<Variation>, seed: u64) -> Timeline {
        let mut t = Timeline {
            plan,
            rng: PipeRng::seed_from_u64(seed),
            state: 0,
            next_at: None,
            step: 0,
        };
        let plan = t.plan.clone();
        match &*plan {
            Variation::Schedule(s) => t.take_step(s),
            Variation::Markov(m) => {
                t.state = m.start();
                let dwell = m.dwell(t.state, &mut t.rng);
                t.next_at = Some(Instant::ZERO + Duration(dwell));
            }
        }
        t
    }

    /// The state in force now.
    pub fn state(&self) -> u32 {
        self.state
    }

    /// When the next change is due; `None` if the state is final.
    pub fn poll_at(&self) -> Option<Instant> {
        self.next_at
    }

    /// Makes every change due at or before `now`, each timed from the one before (not from
    /// `now`, so a late call does not shift the plan); returns the state then in force.
    pub fn advance(&mut self, now: Instant) -> u32 {
        while let Some(at) = self.next_at.filter(|&at| at <= now) {
            let plan = self.plan.clone();
            match &*plan {
                Variation::Schedule(s) => self.take_step(s),
                Variation::Markov(m) => match m.next(self.state, &mut self.rng) {
                    Some(next) => {
                        self.state = next;
                        self.next_at = Some(at + Duration(m.dwell(next, &mut self.rng)));
                    }
                    None => self.next_at = None,
                },
            }
        }
        self.state
    }

    /// Skips the changes of a schedule that fall due by `now` but before its last one due by
    /// then, so the next `advance` takes only that one; returns how many were skipped (never in
    /// force). For a real-time driver that cannot keep changes finer than its turns; a Markov
    /// graph's draws depend on each state in turn, so it is not skipped (0).
    pub fn skip_to(&mut self, now: Instant) -> u64 {
        let Variation::Schedule(s) = &*self.plan else {
            return 0;
        };
        if self.next_at.is_none_or(|at| at > now) {
            return 0;
        }
        let last = s.steps_through(now.saturating_since(Instant::ZERO)) - 1;
        if last <= self.step {
            return 0;
        }
        let skipped = last - self.step;
        self.step = last;
        self.next_at = s.step(last).map(|(offset, _)| Instant::ZERO + offset);
        skipped
    }

    /// Enters the next schedule step and looks up the one after it.
    fn take_step(&mut self, s: &Schedule) {
        if let Some((_, state)) = s.step(self.step) {
            self.state = state;
        }
        self.step += 1;
        self.next_at = s.step(self.step).map(|(offset, _)| Instant::ZERO + offset);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Schedules must change at most once a millisecond: the tests count in milliseconds.
    const MS: u64 = 1_000_000;

    fn at(ms: u64) -> Instant {
        Instant(ms * MS)
    }

    fn timeline(steps: Vec<(u64, u32)>, every: Option<u64>) -> Timeline {
        let steps = steps
            .into_iter()
            .map(|(o, s)| (Duration(o * MS), s))
            .collect();
        let s = Schedule::new(steps, every.map(|e| Duration(e * MS))).unwrap();
        Timeline::new(Arc::new(Variation::Schedule(s)), 1)
    }

    #[test]
    fn skipping_lands_on_the_last_change_due_as_stepping_would() {
        // Every 10 ms: state 1 at 0, 2 at 3, 3 at 7.
        let mut skipped = timeline(vec![(0, 1), (3, 2), (7, 3)], Some(10));
        let mut stepped = timeline(vec![(0, 1), (3, 2), (7, 3)], Some(10));
        assert_eq!(skipped.skip_to(at(2)), 0, "nothing due yet");
        // Due by 25: 3, 7, 10, 13, 17, 20, 23: all but 23 skipped.
        assert_eq!(skipped.skip_to(at(25)), 6);
        assert_eq!(skipped.poll_at(), Some(at(23)));
        assert_eq!(skipped.advance(at(25)), stepped.advance(at(25)));
        assert_eq!(skipped.poll_at(), stepped.poll_at());
        assert_eq!(skipped.skip_to(at(27)), 0, "one change due: kept");
        // A schedule that ends: past its end, only its last step is left.
        let mut once = timeline(vec![(5, 1), (8, 2)], None);
        assert_eq!(once.skip_to(at(1_000)), 1);
        assert_eq!(once.advance(at(1_000)), 2);
        assert_eq!(once.poll_at(), None);
    }
}
