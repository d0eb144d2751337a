//! Random loss at the pipe's entry: Bernoulli, or a Gilbert-Elliott chain advanced once per packet.

use crate::config::LossModel;
use crate::rng::{chance, PipeRng};
use serde::{Deserialize, Serialize};

/// The memory a loss model needs between packets: the Gilbert-Elliott channel state.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub(crate) struct LossState {
    /// Gilbert-Elliott: is the channel in the bad state? Starts good.
    bad: bool,
}

impl LossState {
    /// Decides whether the next offered packet is lost. Gilbert-Elliott first moves the chain one
    /// step, then loses the packet with the new state's loss probability.
    #[inline]
    pub(crate) fn lose(&mut self, model: &LossModel, rng: &mut PipeRng) -> bool {
        match *model {
            LossModel::None => false,
            LossModel::Bernoulli { p } => chance(rng, p),
            LossModel::GilbertElliott {
                p,
                r,
                good_loss,
                bad_loss,
            } => {
                let leave = if self.bad { r } else { p };
                if chance(rng, leave) {
                    self.bad = !self.bad;
                }
                chance(rng, if self.bad { bad_loss } else { good_loss })
            }
        }
    }
}
