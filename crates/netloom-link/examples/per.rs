//! Prints the BER and the packet error rate of a 1500-byte IP packet (a 1536-byte 802.11 frame)
//! against the SNR for each 802.11b rate and three 802.11g rates: the data of the paper's
//! Figures 8 and 9 as netloom computes them (docs/wireless.md).
//!
//! cargo run -p netloom-link --example per

use netloom_link::per::{packet_error_rate, snr_linear, Modulation};
use netloom_link::{Standard, MAC_FRAMING_BYTES};
use netloom_time::Rate;

fn main() {
    let rates = [
        (Standard::B, 1_000_000),
        (Standard::B, 2_000_000),
        (Standard::B, 5_500_000),
        (Standard::B, 11_000_000),
        (Standard::G, 6_000_000),
        (Standard::G, 24_000_000),
        (Standard::G, 54_000_000),
    ];
    let bits = 8 * u64::from(1500 + MAC_FRAMING_BYTES);
    print!("{:>6}", "SNR dB");
    for (s, bps) in rates {
        print!(
            " {:>21}",
            format!("{} {} BER / PER", s.name(), Rate::bps(bps))
        );
    }
    println!();
    for db in (-6..=26).step_by(2) {
        print!("{db:>6}");
        for (s, bps) in rates {
            let m = Modulation::of(s, Rate::bps(bps)).expect("a rate of the standard");
            let ber = m.ber(snr_linear(f64::from(db)));
            print!(" {:>12.2e} / {:<6.4}", ber, packet_error_rate(ber, bits));
        }
        println!();
    }
}
