//! Bit and packet error rates from the SNR, per 802.11 modulation: ns-3's DSSS model for
//! 802.11b and the NIST model for 802.11g's OFDM rates, tabulated by frame length so that a
//! packet's error probability is one lookup.

use crate::config::Standard;
use netloom_time::Rate;

/// Convolutional code rate of an OFDM mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CodeRate {
    /// R = 1/2, the mother code (6, 12 and 24 Mbit/s).
    Half,
    /// R = 2/3, punctured (48 Mbit/s).
    TwoThirds,
    /// R = 3/4, punctured (9, 18, 36 and 54 Mbit/s).
    ThreeQuarters,
}

/// How one 802.11 rate puts bits on the air.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Modulation {
    /// 802.11b 1 Mbit/s.
    Dbpsk,
    /// 802.11b 2 Mbit/s.
    Dqpsk,
    /// 802.11b 5.5 Mbit/s.
    Cck5_5,
    /// 802.11b 11 Mbit/s.
    Cck11,
    /// 802.11g: BPSK (2), QPSK (4), 16-QAM or 64-QAM, with a code rate.
    Ofdm {
        /// Constellation size M, the points per subcarrier symbol: 2 (BPSK), 4 (QPSK), 16 or 64
        /// (QAM).
        constellation: u16,
        /// The convolutional code's rate, which sets the coded BER (Viterbi union bound).
        code: CodeRate,
    },
}

impl Modulation {
    /// The modulation `standard` uses at `rate`; `None` if the standard has no such rate.
    pub fn of(standard: Standard, rate: Rate) -> Option<Modulation> {
        use CodeRate::*;
        let ofdm = |constellation, code| Modulation::Ofdm {
            constellation,
            code,
        };
        Some(match (standard, rate.as_bps()) {
            (Standard::B, 1_000_000) => Modulation::Dbpsk,
            (Standard::B, 2_000_000) => Modulation::Dqpsk,
            (Standard::B, 5_500_000) => Modulation::Cck5_5,
            (Standard::B, 11_000_000) => Modulation::Cck11,
            (Standard::G, 6_000_000) => ofdm(2, Half),
            (Standard::G, 9_000_000) => ofdm(2, ThreeQuarters),
            (Standard::G, 12_000_000) => ofdm(4, Half),
            (Standard::G, 18_000_000) => ofdm(4, ThreeQuarters),
            (Standard::G, 24_000_000) => ofdm(16, Half),
            (Standard::G, 36_000_000) => ofdm(16, ThreeQuarters),
            (Standard::G, 48_000_000) => ofdm(64, TwoThirds),
            (Standard::G, 54_000_000) => ofdm(64, ThreeQuarters),
            _ => return None,
        })
    }

    /// Bit error rate at a linear signal-to-noise ratio `snr` (after decoding, for OFDM).
    pub fn ber(self, snr: f64) -> f64 {
        // DSSS spreads over the 22 MHz channel: Eb/N0 = SNR × bandwidth / bit rate.
        const CHIP_RATE: f64 = 22.0;
        match self {
            Modulation::Dbpsk => 0.5 * (-snr * CHIP_RATE).exp(),
            Modulation::Dqpsk => {
                let ebn0 = snr * CHIP_RATE / 2.0;
                (2f64.sqrt() + 1.0) / (8.0 * std::f64::consts::PI * 2f64.sqrt()).sqrt()
                    * (-(2.0 - 2f64.sqrt()) * ebn0).exp()
                    / ebn0.sqrt()
            }
            Modulation::Cck5_5 | Modulation::Cck11 => cck_ber(self, snr),
            Modulation::Ofdm {
                constellation,
                code,
            } => {
                let raw = match constellation {
                    2 => 0.5 * erfc(snr.sqrt()),
                    4 => 0.5 * erfc((snr / 2.0).sqrt()),
                    m => {
                        let root = f64::from(m).sqrt();
                        let z = (snr / (2.0 * (f64::from(m) - 1.0) / 3.0)).sqrt();
                        (root - 1.0) / (root * root.log2()) * erfc(z)
                    }
                };
                if raw == 0.0 {
                    0.0
                } else {
                    coded_ber(raw, code).min(1.0)
                }
            }
        }
    }
}

/// ns-3's curve fits (Matlab berfit) for CCK, valid between −10 and +10 dB; beyond, the channel
/// is hopeless (BER ½) or perfect.
fn cck_ber(m: Modulation, snr: f64) -> f64 {
    if snr > 10.0 {
        return 0.0;
    }
    if snr < 0.1 {
        return 0.5;
    }
    if m == Modulation::Cck5_5 {
        let (a1, a2, a3, a4) = (
            5.368_163_434_405_62e-1,
            3.309_243_002_560_858_6e-3,
            4.165_437_236_100_4e-1,
            1.028_898_143_435_886_6,
        );
        a1 * (-((snr - a2) / a3).powf(a4)).exp()
    } else {
        let (a1, a2, a3) = (
            7.905_674_226_533_346e-3,
            -1.839_744_939_917_636e-1,
            1.074_068_946_870_724,
        );
        let (a4, a5, a6) = (
            1.052_331_690_450_255_3,
            3.055_229_874_649_668_7e-1,
            2.203_271_512_869_843_5,
        );
        (a1 * snr * snr + a2 * snr + a3) / (snr * snr * snr + a4 * snr * snr + a5 * snr + a6)
    }
}

/// Bit error rate after Viterbi decoding of a channel with raw error rate `p`: the union bound
/// over the code's distance spectrum (the NIST model's tables).
fn coded_ber(p: f64, code: CodeRate) -> f64 {
    let d = (4.0 * p * (1.0 - p)).sqrt();
    let series = |first: i32, step: i32, weights: &[f64]| -> f64 {
        weights
            .iter()
            .enumerate()
            .map(|(i, w)| w * d.powi(first + step * i as i32))
            .sum()
    };
    match code {
        CodeRate::Half => {
            0.5 * series(
                10,
                2,
                &[
                    36.0,
                    211.0,
                    1404.0,
                    11633.0,
                    77433.0,
                    502690.0,
                    3322763.0,
                    21292910.0,
                    134365911.0,
                ],
            )
        }
        CodeRate::TwoThirds => {
            1.0 / 4.0
                * series(
                    6,
                    1,
                    &[
                        3.0, 70.0, 285.0, 1276.0, 6160.0, 27128.0, 117019.0, 498860.0, 2103891.0,
                        8784123.0,
                    ],
                )
        }
        CodeRate::ThreeQuarters => {
            1.0 / 6.0
                * series(
                    5,
                    1,
                    &[
                        42.0,
                        201.0,
                        1492.0,
                        10469.0,
                        62935.0,
                        379644.0,
                        2253373.0,
                        13073811.0,
                        75152755.0,
                        428005675.0,
                    ],
                )
        }
    }
}

/// The complementary error function (Numerical Recipes' Chebyshev fit, relative error below
/// 1.2e-7 everywhere), which the standard library lacks.
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let r = t * poly.exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

/// PER = 1 − (1 − BER)^bits, computed so that tiny BERs keep their precision.
pub fn packet_error_rate(ber: f64, bits: u64) -> f64 {
    if ber >= 1.0 {
        return 1.0;
    }
    -((bits as f64) * (-ber).ln_1p()).exp_m1()
}

/// Decibels to a linear power ratio.
pub fn snr_linear(db: f64) -> f64 {
    10f64.powf(db / 10.0)
}

/// Packet error rates of one modulation at one SNR, by frame length in bytes. Filled on demand,
/// so each frame length costs the formula once and a lookup afterwards.
#[derive(Clone, Debug)]
pub(crate) struct PerTable {
    ber: f64,
    per: Vec<f64>,
}

impl PerTable {
    pub(crate) fn new(modulation: Modulation, snr_db: f64) -> PerTable {
        PerTable {
            ber: modulation.ber(snr_linear(snr_db)),
            per: Vec::new(),
        }
    }

    /// The error probability of a frame of `bytes`.
    #[inline]
    pub(crate) fn get(&mut self, bytes: usize) -> f64 {
        if bytes >= self.per.len() {
            let ber = self.ber;
            let from = self.per.len();
            self.per
                .extend((from..=bytes).map(|b| packet_error_rate(ber, 8 * b as u64)));
        }
        self.per[bytes]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erfc_matches_known_values() {
        for (x, want) in [
            (0.0, 1.0),
            (0.5, 0.479_500_122_186_953_5),
            (1.0, 0.157_299_207_050_285_1),
            (2.0, 0.004_677_734_981_047_266),
            (3.0, 2.209_049_699_858_544e-5),
            (-1.0, 1.842_700_792_949_715),
        ] {
            let got = erfc(x);
            assert!(
                ((got - want) / want).abs() < 2e-7,
                "erfc({x}) = {got}, want {want}"
            );
        }
    }

    #[test]
    fn ber_falls_with_snr_and_rises_with_rate() {
        let rates = |s: Standard| {
            s.rates_bps()
                .iter()
                .map(move |&b| Modulation::of(s, Rate::bps(b)).unwrap())
        };
        for standard in [Standard::B, Standard::G] {
            for m in rates(standard) {
                let mut last = 1.0;
                for db in (-10..=30).map(f64::from) {
                    let b = m.ber(snr_linear(db));
                    assert!(b <= last + 1e-12, "{m:?} at {db} dB: {b} > {last}");
                    last = b;
                }
            }
        }
        // At 5 dB, a faster 802.11b rate errs more often.
        let at = |bps| {
            Modulation::of(Standard::B, Rate::bps(bps))
                .unwrap()
                .ber(snr_linear(5.0))
        };
        assert!(at(1_000_000) < at(2_000_000));
        assert!(at(2_000_000) < at(11_000_000));
    }

    #[test]
    fn dbpsk_matches_its_closed_form() {
        // 1 Mbit/s at 0 dB: Eb/N0 = 22, BER = exp(−22) / 2.
        let b = Modulation::Dbpsk.ber(1.0);
        assert!((b - 0.5 * (-22f64).exp()).abs() < 1e-20);
    }

    #[test]
    fn the_table_matches_the_formula() {
        let m = Modulation::of(Standard::G, Rate::bps(54_000_000)).unwrap();
        for db in [15.0, 18.0, 20.0, 25.0] {
            let mut table = PerTable::new(m, db);
            let ber = m.ber(snr_linear(db));
            for bytes in [40, 576, 1536, 2346] {
                let want = 1.0 - (1.0 - ber).powf(8.0 * bytes as f64);
                let got = table.get(bytes);
                assert!(
                    (got - want).abs() <= 1e-9 * want + 1e-12,
                    "{db} dB, {bytes} B: {got} vs {want}"
                );
            }
        }
    }
}
