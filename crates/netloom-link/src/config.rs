//! The parameters of one pipe (one direction of a link, or a shared medium), as plain data.
//!
//! Parsing and validation of these values from a topology file live in `netloom-topo`;
//! this module only says what they mean.

use crate::profile::DelayProfile;
use crate::trace::Trace;
use netloom_time::{Duration, Rate};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// How much a pipe's queue may hold (packets waiting for or in serialization).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum QueueLimit {
    Packets(u32),
    Bytes(u64),
}

/// Random Early Detection parameters (Floyd & Jacobson, "gentle" variant).
///
/// Thresholds are in the queue's unit: packets for `QueueLimit::Packets`, bytes for
/// `QueueLimit::Bytes`. Between `min_th` and `max_th` the drop probability rises linearly from 0
/// to `max_p`; between `max_th` and `2 × max_th` (gentle) from `max_p` to 1; above, every packet
/// is dropped. The average queue is an EWMA with weight `weight`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct RedParams {
    pub min_th: f64,
    pub max_th: f64,
    pub max_p: f64,
    pub weight: f64,
}

/// Active queue management policy at the tail of the queue.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum Aqm {
    DropTail,
    Red(RedParams),
}

/// Random loss applied to each packet as it enters the pipe.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum LossModel {
    None,
    /// Each packet is lost independently with probability `p`.
    Bernoulli {
        p: f64,
    },
    /// Two-state Markov chain advanced once per packet: good→bad with probability `p`, bad→good
    /// with `r`; a packet is lost with `good_loss` in the good state and `bad_loss` in the bad one.
    /// Long-run loss = (r·good_loss + p·bad_loss) / (p + r).
    GilbertElliott {
        p: f64,
        r: f64,
        good_loss: f64,
        bad_loss: f64,
    },
}

/// Everything that defines one pipe's behaviour.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct PipeConfig {
    /// Serialization rate. Always > 0 once validated.
    pub rate: Rate,
    /// Propagation delay added after serialization.
    pub delay: Duration,
    /// Each packet's delay varies uniformly in [delay − jitter, delay + jitter] (clamped at 0).
    pub jitter: Duration,
    /// With jitter: may a packet overtake the one before it? If false, exits stay in FIFO order.
    pub reorder: bool,
    pub queue: QueueLimit,
    pub aqm: Aqm,
    pub loss: LossModel,
    /// Probability that a packet is duplicated (the copy is queued right behind it).
    pub duplicate: f64,
    /// NemC out-of-order generation: fraction of packets held back by an extra `ooo_delay`.
    pub ooo_rate: f64,
    pub ooo_delay: Duration,
    /// Administrative state; a down pipe drops everything offered and everything in flight.
    pub up: bool,
    /// An 802.11 channel: MAC overhead, noise, competing stations and retries on each packet.
    pub wireless: Option<Wireless>,
}

/// The 802.11 physical layer a wireless pipe emulates: its rates, modulations and bundled MAC
/// delay profiles.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Standard {
    /// 802.11b (DSSS and CCK): 1, 2, 5.5 and 11 Mbit/s.
    B,
    /// 802.11g (ERP-OFDM): 6, 9, 12, 18, 24, 36, 48 and 54 Mbit/s.
    G,
}

impl Standard {
    /// The PHY rates of the standard, in bit/s.
    pub fn rates_bps(self) -> &'static [u64] {
        match self {
            Standard::B => &[1_000_000, 2_000_000, 5_500_000, 11_000_000],
            Standard::G => &[
                6_000_000, 9_000_000, 12_000_000, 18_000_000, 24_000_000, 36_000_000, 48_000_000,
                54_000_000,
            ],
        }
    }

    /// As written in topology files: "802.11b", "802.11g".
    pub fn name(self) -> &'static str {
        match self {
            Standard::B => "802.11b",
            Standard::G => "802.11g",
        }
    }
}

/// The 802.11 retry limit (dot11ShortRetryLimit): transmission attempts of one frame, the first
/// included, before the sender gives up.
pub const DEFAULT_RETRY_LIMIT: u8 = 7;

/// A wireless channel (Dummynet on PlanetLab, section 4). Each attempt occupies the channel for
/// the packet at `rate` plus a MAC overhead drawn from the delay profile, stretched by
/// 1 / (1 − `netload`); it fails with the packet error rate at `snr_db` or with `collision`, and
/// is retried up to `retry_limit` attempts in all before the packet is dropped.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Wireless {
    pub standard: Standard,
    /// Signal-to-noise ratio at the receiver in dB; `None` means no noise errors.
    pub snr_db: Option<f64>,
    /// Fraction of air time taken by other stations, in [0, 1).
    pub netload: f64,
    /// Probability that an attempt collides, in [0, 1].
    pub collision: f64,
    /// Attempts per packet, at least 1.
    pub retry_limit: u8,
}

impl Wireless {
    /// A clear channel of `standard`: no noise, no other stations, the standard's retry limit.
    pub fn new(standard: Standard) -> Wireless {
        Wireless {
            standard,
            snr_db: None,
            netload: 0.0,
            collision: 0.0,
            retry_limit: DEFAULT_RETRY_LIMIT,
        }
    }
}

/// The parts of a pipe's model that are data rather than numbers (so not in the `Copy`
/// `PipeConfig`): they are loaded once and do not change when the configuration does.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PipeData {
    /// A measured MAC delay profile, replacing the bundled one of a wireless pipe's rate.
    pub profile: Option<Arc<DelayProfile>>,
    /// Mahimahi delivery opportunities, replacing serialization at `rate`.
    pub trace: Option<Arc<Trace>>,
}

/// Packet size used when a queue limit or a default is expressed in packets.
pub const DEFAULT_PACKET_BYTES: u64 = 1500;

/// The smallest default queue, in full-size packets.
pub const MIN_DEFAULT_QUEUE_PACKETS: u64 = 10;

impl QueueLimit {
    /// The default queue for a pipe: its bandwidth × round-trip propagation delay (2 × `delay`),
    /// in bytes, but never less than `MIN_DEFAULT_QUEUE_PACKETS` full-size packets.
    pub fn default_for(rate: Rate, delay: Duration) -> QueueLimit {
        let rtt = Duration(delay.0.saturating_mul(2));
        let bdp = rate.bytes_in(rtt);
        QueueLimit::Bytes(bdp.max(MIN_DEFAULT_QUEUE_PACKETS * DEFAULT_PACKET_BYTES))
    }
}

impl PipeConfig {
    /// A plain pipe: rate and delay, default queue, drop-tail, no impairments.
    pub fn new(rate: Rate, delay: Duration) -> PipeConfig {
        PipeConfig {
            rate,
            delay,
            jitter: Duration::ZERO,
            reorder: false,
            queue: QueueLimit::default_for(rate, delay),
            aqm: Aqm::DropTail,
            loss: LossModel::None,
            duplicate: 0.0,
            ooo_rate: 0.0,
            ooo_delay: Duration::ZERO,
            up: true,
            wireless: None,
        }
    }

    /// The least time any packet spends in the pipe from `offer` to its exit: the delay less the
    /// jitter. Serialization, queueing and out-of-order holding only add to it.
    pub fn min_latency(&self) -> Duration {
        Duration(self.delay.as_nanos().saturating_sub(self.jitter.as_nanos()))
    }
}
