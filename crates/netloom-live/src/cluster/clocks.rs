//! What the coordinator knows of each machine's clock (`ClockSample`, `MachineClock`), and the
//! warnings it gives when a clock is known, or kept, less well than the lookahead needs.

use serde::Serialize;

/// One machine's clock as last measured: its wall clock less the coordinator's, and the round
/// trip of the exchange that measured it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ClockSample {
    /// ns; positive when the machine's clock is ahead.
    pub offset_ns: i64,
    /// ns.
    pub round_trip_ns: u64,
}

/// What the run knows of one machine's clock.
#[derive(Clone, Debug, Serialize)]
pub struct MachineClock {
    /// The machine.
    pub machine: String,
    /// At the start (the offset its worker's clock was set with).
    pub start: ClockSample,
    /// The last measurement.
    pub last: ClockSample,
}

/// When clocks are judged against the lookahead.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Moment {
    /// At the start: how well each offset is known, half the round trip of the exchange that
    /// measured it (its error at most), against the lookahead.
    Start,
    /// As last measured: how far each offset moved since the start, less both measurements'
    /// error, against the lookahead.
    Now,
}

/// One line with the numbers for each machine whose clock, at `moment`, is further from the
/// coordinator's than `lookahead_ns` allows: a hand-off leaves a pipe's delay before its exit
/// time by the sender's clock and is judged by the receiver's.
pub(super) fn clock_warnings(
    clocks: &[MachineClock],
    lookahead_ns: u64,
    moment: Moment,
) -> Vec<String> {
    let ms = |ns: u64| ns as f64 / 1e6;
    let signed_ms = |ns: i64| ns as f64 / 1e6;
    clocks
        .iter()
        .filter_map(|c| {
            let (start, last) = (c.start, c.last);
            match moment {
                Moment::Start => {
                    let error = start.round_trip_ns / 2;
                    (error > lookahead_ns).then(|| format!(
                        "machine {}'s clock is known to within {:.3} ms only (half the least round trip of the clock exchanges with it), more than the least delay of a pipe between machines ({:.3} ms): hand-offs may arrive late by as much; give those pipes more delay or reach the machine by a quicker way",
                        c.machine, ms(error), ms(lookahead_ns)
                    ))
                }
                Moment::Now => {
                    let moved = last.offset_ns.abs_diff(start.offset_ns);
                    let error = start.round_trip_ns / 2 + last.round_trip_ns / 2;
                    (moved.saturating_sub(error) > lookahead_ns).then(|| format!(
                        "machine {}'s clock moved {:.3} ms against the coordinator's during the run (offset {:+.3} ms at the start, {:+.3} ms at the end, each within {:.3} ms), more than the least delay of a pipe between machines ({:.3} ms): hand-offs to and from it were late by as much; keep the machines' clocks synchronised (chrony, PTP)",
                        c.machine, ms(moved), signed_ms(start.offset_ns), signed_ms(last.offset_ns), ms(error), ms(lookahead_ns)
                    ))
                }
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clock(start: (i64, u64), last: (i64, u64)) -> MachineClock {
        let sample = |(offset_ns, round_trip_ns)| ClockSample {
            offset_ns,
            round_trip_ns,
        };
        MachineClock {
            machine: "m2".into(),
            start: sample(start),
            last: sample(last),
        }
    }

    #[test]
    fn clocks_known_less_well_than_the_lookahead_are_warned_about_with_the_numbers() {
        // Offset known to 0.05 ms (a 0.1 ms round trip): fine at 1 ms, not at 0.01 ms.
        let clocks = [clock((3_000_000, 100_000), (3_000_000, 100_000))];
        assert!(clock_warnings(&clocks, 1_000_000, Moment::Start).is_empty());
        let warned = clock_warnings(&clocks, 10_000, Moment::Start);
        assert_eq!(warned.len(), 1);
        assert!(
            warned[0].starts_with("machine m2's clock is known to within 0.050 ms only")
                && warned[0].contains("(0.010 ms)"),
            "{}",
            warned[0]
        );
        // A large offset alone is no fault: each worker's clock is set with it.
        let far = [clock((-9_000_000_000, 100_000), (-9_000_000_000, 100_000))];
        assert!(clock_warnings(&far, 1_000_000, Moment::Now).is_empty());
    }

    #[test]
    fn a_clock_that_drifted_more_than_the_lookahead_is_warned_about_with_the_numbers() {
        // Moved 2 ms, measured within 0.1 ms each time: more than a 1 ms lookahead.
        let drifted = [clock((500_000, 200_000), (2_500_000, 200_000))];
        let warned = clock_warnings(&drifted, 1_000_000, Moment::Now);
        assert_eq!(warned.len(), 1);
        assert!(
            warned[0].starts_with("machine m2's clock moved 2.000 ms against the coordinator's during the run (offset +0.500 ms at the start, +2.500 ms at the end, each within 0.200 ms)"),
            "{}",
            warned[0]
        );
        // Not when the lookahead covers it, nor when the measurements' error could explain it.
        assert!(clock_warnings(&drifted, 2_000_000, Moment::Now).is_empty());
        let unsure = [clock((0, 3_000_000), (2_000_000, 3_000_000))];
        assert!(clock_warnings(&unsure, 1_000_000, Moment::Now).is_empty());
    }
}
