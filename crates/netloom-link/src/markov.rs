//! Time-varying links as a Markov graph (Dummynet on PlanetLab, Figure 10): each state lasts
//! for a time drawn from its empirical dwell distribution, then the link moves to the next state
//! with the probabilities on the arcs.

use crate::empirical::Empirical;
use crate::rng::PipeRng;
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

#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum MarkovError {
    #[error("a Markov graph needs at least one state")]
    NoStates,
    #[error("state {state}: arc to state {to}, which does not exist")]
    UnknownState { state: u32, to: u32 },
    #[error("state {state}: arc probability {p} is not in [0, 1]")]
    Probability { state: u32, p: f64 },
    #[error("state {state}: the arcs' probabilities add up to {sum}, not 1")]
    Sum { state: u32, sum: f64 },
    #[error("state {state}: a dwell time of 0 would never let time pass")]
    ZeroDwell { state: u32 },
}

/// How far from 1 the arcs' probabilities of a state may add up (rounding in written decimals).
const SUM_TOLERANCE: f64 = 1e-9;

impl Markov {
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
            if s.dwell.samples().contains(&0) {
                return Err(MarkovError::ZeroDwell { state });
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

    pub fn start(&self) -> u32 {
        self.start
    }

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
