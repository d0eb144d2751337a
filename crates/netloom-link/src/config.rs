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
    /// At most this many packets, whatever their size (Dummynet's queue in slots). A packet is
    /// refused when the queue already holds this many.
    Packets(u32),
    /// At most this many bytes of packets (Dummynet's queue in Kbytes). A packet is refused if
    /// it would take the total above the limit.
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
    /// Lower threshold of the average queue, in the queue's unit: below it nothing is dropped
    /// early. The topology loader requires it above 0 and below `max_th`.
    pub min_th: f64,
    /// Upper threshold of the average queue, in the queue's unit: the drop probability reaches
    /// `max_p` here and 1 at twice this value (gentle RED).
    pub max_th: f64,
    /// Drop probability when the average queue reaches `max_th`, in (0, 1] (Dummynet's `max_p`,
    /// Floyd & Jacobson's max_p).
    pub max_p: f64,
    /// Weight of each new queue sample in the average, in (0, 1] (Floyd & Jacobson's w_q,
    /// Dummynet's `w_q`); 1 makes RED act on the instantaneous queue.
    pub weight: f64,
}

/// CoDel parameters (RFC 8289, section 4.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CodelParams {
    /// The acceptable standing queue delay (RFC 8289's TARGET, 5 ms by default): a packet that
    /// waited less is never dropped. The topology loader requires it above 0 and below
    /// `interval`.
    pub target: Duration,
    /// How long the queue delay must stay above `target` before the first drop, and the base of
    /// the control law's spacing interval/sqrt(count) (RFC 8289's INTERVAL, 100 ms by default).
    pub interval: Duration,
}

impl Default for CodelParams {
    /// RFC 8289's values for the Internet: target 5 ms, interval 100 ms.
    fn default() -> CodelParams {
        CodelParams {
            target: Duration::from_millis(5),
            interval: Duration::from_millis(100),
        }
    }
}

/// FQ-CoDel parameters (RFC 8290).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FqCodelParams {
    /// Each flow queue's CoDel.
    pub codel: CodelParams,
    /// Bytes a flow queue may send per round of the deficit round robin (RFC 8290's quantum,
    /// 1514 by default: one full-size Ethernet frame). At least 1.
    pub quantum: u32,
    /// Flow queues; a packet's flow number is reduced modulo this (1024 by default). At least 1.
    pub flows: u32,
}

impl Default for FqCodelParams {
    /// Linux's fq_codel defaults: CoDel's RFC values, a quantum of 1514 bytes, 1024 queues.
    fn default() -> FqCodelParams {
        FqCodelParams {
            codel: CodelParams::default(),
            quantum: 1514,
            flows: 1024,
        }
    }
}

/// Active queue management policy.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum Aqm {
    /// No early drops: a packet is dropped only when the queue limit would be exceeded.
    DropTail,
    /// Random Early Detection ahead of the drop-tail check, as Dummynet's `red` pipes; the
    /// queue limit still applies to the packets RED lets through.
    Red(RedParams),
    /// CoDel (RFC 8289) at the head of the queue, behind the drop-tail check at its tail: a
    /// packet is dropped as it reaches the head from how long it waited there.
    Codel(CodelParams),
    /// FQ-CoDel (RFC 8290): packets wait in per-flow queues served in deficit round robin,
    /// each under CoDel; the queue limit applies to all of them together, and a packet over it
    /// is made room for by dropping the head of the longest queue. The pipe holds the packets
    /// (`Pipe::hold`) instead of fixing their exit on arrival.
    FqCodel(FqCodelParams),
}

/// Random loss applied to each packet as it enters the pipe.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum LossModel {
    /// No random loss; draws nothing from the pipe's generator.
    None,
    /// Each packet is lost independently with probability `p`.
    Bernoulli {
        /// Probability that an offered packet is lost, in [0, 1] (Dummynet's `plr`).
        p: f64,
    },
    /// Two-state Markov chain advanced once per packet: good→bad with probability `p`, bad→good
    /// with `r`; a packet is lost with `good_loss` in the good state and `bad_loss` in the bad one.
    /// Long-run loss = (r·good_loss + p·bad_loss) / (p + r).
    GilbertElliott {
        /// Probability of moving from the good to the bad state at a packet, in [0, 1].
        p: f64,
        /// Probability of moving from the bad back to the good state at a packet, in [0, 1];
        /// the mean stay in the bad state is 1 / `r` packets.
        r: f64,
        /// Probability of losing a packet while the chain is in the good state, in [0, 1]
        /// (the topology file's default is 0).
        good_loss: f64,
        /// Probability of losing a packet while the chain is in the bad state, in [0, 1]
        /// (the topology file's default is 1).
        bad_loss: f64,
    },
}

/// A link's MTU when nothing sets one: Ethernet's payload.
pub const DEFAULT_MTU: u32 = 1500;
/// The smallest MTU a link may have: every netloom host has an IPv6 address, so every link may
/// carry IPv6, which needs 1280 bytes on every link (RFC 8200, section 5).
pub const MIN_MTU: u32 = 1280;
/// The smallest MTU IPv4 allows (RFC 791): named in the message refusing an MTU below it.
pub const MIN_IPV4_MTU: u32 = 68;
/// The largest MTU a link may have: the largest IPv4 packet (its total length is 16 bits), which
/// is also the most a TUN device takes.
pub const MAX_MTU: u32 = 65535;

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
    /// How much the queue holds, the packet being serialized included; by default the
    /// bandwidth × round-trip delay product (`QueueLimit::default_for`).
    pub queue: QueueLimit,
    /// Early-drop policy (RED before the queue limit, CoDel at the head of the queue).
    pub aqm: Aqm,
    /// Explicit Congestion Notification (RFC 3168): a packet of an ECN-capable transport (ECT(0)
    /// or ECT(1)) that the AQM would drop is marked CE and sent on instead. Drop-tail overflow
    /// still drops. The topology loader refuses it without an AQM.
    pub ecn: bool,
    /// Random loss drawn as each packet enters, before it reaches the queue.
    pub loss: LossModel,
    /// Probability that a packet is duplicated (the copy is queued right behind it).
    pub duplicate: f64,
    /// NemC out-of-order generation: fraction of packets held back by an extra `ooo_delay`.
    pub ooo_rate: f64,
    /// NemC's ooo_delay: the extra time, on top of the packet's delay and jitter, that an
    /// out-of-order packet is held back. Such a packet does not hold back the ones after it.
    pub ooo_delay: Duration,
    /// Administrative state; a down pipe drops everything offered and everything in flight.
    pub up: bool,
    /// The largest IP packet the link carries, in bytes (`DEFAULT_MTU` unless the topology file
    /// sets `mtu`). The pipe itself does not look at it: the engine, which routes packets onto
    /// links, refuses a bigger one as a router would (`Refusal::TooBig`; the live driver then
    /// fragments it or answers with ICMP).
    pub mtu: u32,
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
    /// 802.11b or 802.11g: with the pipe's `rate` it selects the modulation (hence the BER
    /// curve) and the bundled MAC delay profile. The topology loader refuses a rate the
    /// standard does not have.
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
            ecn: false,
            loss: LossModel::None,
            duplicate: 0.0,
            ooo_rate: 0.0,
            ooo_delay: Duration::ZERO,
            up: true,
            mtu: DEFAULT_MTU,
            wireless: None,
        }
    }

    /// The least time any packet spends in the pipe from `offer` to its exit: the delay less the
    /// jitter. Serialization, queueing and out-of-order holding only add to it.
    pub fn min_latency(&self) -> Duration {
        Duration(self.delay.as_nanos().saturating_sub(self.jitter.as_nanos()))
    }
}
