//! Time-varying links as a Markov graph (Dummynet on PlanetLab, Figure 10): each state lasts
//! for a time drawn from its empirical dwell distribution, then the link moves to the next state
//! with the probabilities on the arcs.

use crate::empirical::Empirical;
use crate::rng::PipeRng;
use crate::schedule::MIN_STEP;
use rand::Rng;

/// One node of the graph: how long the link stays, and where it goes next.
#[derive(Clone, Debug, PartialEq)]
pub struct MarkovState {
    /// Dwell time in nanoseconds; every sample is above 0.
    pub dwell: Empirical,
    /// (next state, probability); the probabilities sum to 1. Empty: the state lasts forever.
    pub next: Vec<(u32, f64)>,
}

/// The graph and its start state.
#[derive(Clone, Debug, PartialEq)]
pub struct Markov {
    states: Vec<MarkovState>,
    start: u32,
}

/// Why a list of states is not a valid Markov graph (`Markov::new`). States are named by their
/// index in `Display`; `describe` names them as the caller says (the loader: by their names).
#[derive(Clone, Debug, PartialEq)]
pub enum MarkovError {
    /// The graph has no states.
    NoStates,
    /// An arc of `state` leads to `to`, which is not an index of the graph. Also returned, with
    /// `state` and `to` both the start index, when the start state does not exist.
    UnknownState {
        /// Index of the state whose arc is wrong.
        state: u32,
        /// The arc's target index, at or past the number of states.
        to: u32,
    },
    /// An arc's probability is outside [0, 1] (or NaN).
    Probability {
        /// Index of the state the arc leaves.
        state: u32,
        /// The arc's probability as given.
        p: f64,
    },
    /// A state's arcs are not empty and their probabilities do not add up to 1 (within 1e-9).
    Sum {
        /// Index of the state.
        state: u32,
        /// The sum of its arcs' probabilities.
        sum: f64,
    },
    /// A state's dwell distribution has a sample below [`MIN_STEP`] (0 would let the timeline
    /// change state without time passing; 1 ns, a billion changes a second that no run keeps).
    ShortDwell {
        /// Index of the state.
        state: u32,
    },
}

impl MarkovError {
    /// The message, with each state named by `name` (`Display` numbers them; a topology file
    /// names them).
    pub fn describe(&self, name: impl Fn(u32) -> String) -> String {
        match *self {
            MarkovError::NoStates => "a Markov graph needs at least one state".to_string(),
            MarkovError::UnknownState { state, to } => format!(
                "state {}: arc to state {}, which does not exist",
                name(state),
                name(to)
            ),
            MarkovError::Probability { state, p } => {
                format!(
                    "state {}: arc probability {p} is not in [0, 1]",
                    name(state)
                )
            }
            MarkovError::Sum { state, sum } => format!(
                "state {}: the arcs' probabilities add up to {sum}, not 1",
                name(state)
            ),
            MarkovError::ShortDwell { state } => format!(
                "state {}: a dwell time below {MIN_STEP} changes state faster than a run can \
                 keep; dwell times must be at least {MIN_STEP}",
                name(state)
            ),
        }
    }
}

impl std::fmt::Display for MarkovError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe(|i| i.to_string()))
    }
}

impl std::error::Error for MarkovError {}

/// How far from 1 the arcs' probabilities of a state may add up (rounding in written decimals).
const SUM_TOLERANCE: f64 = 1e-9;

impl Markov {
    /// The graph of `states`, indexed from 0, entered at `start`. Checks that every arc leads
    /// to a state, its probability is in [0, 1] and each state's arcs add up to 1, and that no
    /// dwell time is below [`MIN_STEP`] (as a schedule's changes).
    pub fn new(states: Vec<MarkovState>, start: u32) -> Result<Markov, MarkovError> {
        if states.is_empty() {
            return Err(MarkovError::NoStates);
        }
        if start as usize >= states.len() {
            return Err(MarkovError::UnknownState {
                state: start,
                to: start,
            });
        }
        for (i, s) in states.iter().enumerate() {
            let state = i as u32;
            if s.dwell.samples().iter().any(|&d| d < MIN_STEP.as_nanos()) {
                return Err(MarkovError::ShortDwell { state });
            }
            for &(to, p) in &s.next {
                if to as usize >= states.len() {
                    return Err(MarkovError::UnknownState { state, to });
                }
                if !(0.0..=1.0).contains(&p) {
                    return Err(MarkovError::Probability { state, p });
                }
            }
            let sum: f64 = s.next.iter().map(|&(_, p)| p).sum();
            if !s.next.is_empty() && (sum - 1.0).abs() > SUM_TOLERANCE {
                return Err(MarkovError::Sum { state, sum });
            }
        }
        Ok(Markov { states, start })
    }

    /// Index of the state the link is in at time 0.
    pub fn start(&self) -> u32 {
        self.start
    }

    /// The states, by index (the numbers arcs and `Timeline::state` use).
    pub fn states(&self) -> &[MarkovState] {
        &self.states
    }

    /// A dwell time in `state`, in nanoseconds.
    pub(crate) fn dwell(&self, state: u32, rng: &mut PipeRng) -> u64 {
        self.states[state as usize].dwell.sample(rng)
    }

    /// The state after `state`, or `None` if it has no arcs. A single arc draws nothing.
    pub(crate) fn next(&self, state: u32, rng: &mut PipeRng) -> Option<u32> {
        let arcs = &self.states[state as usize].next;
        match arcs.as_slice() {
            [] => None,
            [(to, _)] => Some(*to),
            _ => {
                let r: f64 = rng.gen();
                let mut acc = 0.0;
                let chosen = arcs.iter().find(|&&(_, p)| {
                    acc += p;
                    r < acc
                });
                // Rounding may leave r just above the sum: the last arc takes it.
                Some(chosen.unwrap_or(&arcs[arcs.len() - 1]).0)
            }
        }
    }
}
