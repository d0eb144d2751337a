//! The wireless stage of a pipe (Dummynet on PlanetLab, section 4): each transmission attempt
//! holds the channel for the packet at the PHY rate plus a MAC overhead drawn from the delay
//! profile, stretched by the netload; it fails by noise or collision and is retried up to the
//! retry limit, the channel busy for every attempt.

use crate::config::{PipeConfig, Wireless};
use crate::empirical::PPB;
use crate::per::{Modulation, PerTable};
use crate::profile::DelayProfile;
use crate::rng::{chance, PipeRng};
use netloom_time::{Duration, Instant};
use std::sync::Arc;

/// Bytes an 802.11 data frame adds around an IP packet: MAC header (24), FCS (4) and LLC/SNAP
/// (8). They count in the frame's error probability; their air time is in the delay profile.
pub const MAC_FRAMING_BYTES: u32 = 36;

/// A wireless pipe's channel, built from its configuration whenever that changes.
pub(crate) struct Radio {
    /// `None` only for a rate the standard does not have and no measured profile (the topology
    /// loader refuses such links): no overhead then.
    profile: Option<Arc<DelayProfile>>,
    /// `None` without noise (no SNR set) or for a rate the standard does not have.
    per: Option<PerTable>,
    netload_ppb: u64,
    collision: f64,
    retry_limit: u8,
}

/// How a transmission ended: when the channel is free again, and whether the packet got through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Transmission {
    pub end: Instant,
    pub delivered: bool,
    /// Attempts made, the first included.
    pub attempts: u8,
}

impl Radio {
    /// The channel of `config` (whose `wireless` is `w`); a measured profile replaces the
    /// bundled one.
    pub(crate) fn new(
        config: &PipeConfig,
        w: &Wireless,
        measured: Option<&Arc<DelayProfile>>,
    ) -> Radio {
        let profile = measured
            .cloned()
            .or_else(|| DelayProfile::bundled(w.standard, config.rate));
        let per = w
            .snr_db
            .zip(Modulation::of(w.standard, config.rate))
            .map(|(db, m)| PerTable::new(m, db));
        // Netload is below 1 once validated; the clamp keeps the stretch finite regardless.
        let netload_ppb = ((w.netload * PPB as f64).round() as u64).min(PPB - 1);
        Radio {
            profile,
            per,
            netload_ppb,
            collision: w.collision,
            retry_limit: w.retry_limit.max(1),
        }
    }

    /// Transmits a packet of `bytes` whose first attempt starts at `start`: `airtime` is the
    /// packet alone at the PHY rate.
    pub(crate) fn transmit(
        &mut self,
        start: Instant,
        bytes: u32,
        airtime: Duration,
        rng: &mut PipeRng,
    ) -> Transmission {
        let mut end = start;
        for attempts in 1..=self.retry_limit {
            let overhead = self.profile.as_ref().map_or(0, |p| p.overhead.sample(rng));
            end += self.stretch(airtime.as_nanos().saturating_add(overhead));
            let noise = self
                .per
                .as_mut()
                .map_or(0.0, |t| t.get((bytes + MAC_FRAMING_BYTES) as usize));
            if !chance(rng, noise) && !chance(rng, self.collision) {
                return Transmission {
                    end,
                    delivered: true,
                    attempts,
                };
            }
        }
        Transmission {
            end,
            delivered: false,
            attempts: self.retry_limit,
        }
    }

    /// Air time × 1 / (1 − netload), rounded up: other stations take that share of the channel.
    fn stretch(&self, ns: u64) -> Duration {
        let stretched =
            (u128::from(ns) * u128::from(PPB)).div_ceil(u128::from(PPB - self.netload_ppb));
        Duration(u64::try_from(stretched).unwrap_or(u64::MAX))
    }
}
