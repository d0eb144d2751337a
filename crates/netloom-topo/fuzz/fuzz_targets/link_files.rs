#![no_main]
//! Fuzz target: netloom-link's file parsers (MAC delay profiles, Mahimahi traces) on arbitrary
//! bytes, and the parsed trace's lookups.

use libfuzzer_sys::fuzz_target;
use netloom_link::{DelayProfile, Trace};
use netloom_time::Instant;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = DelayProfile::parse(text);
    if let Ok(trace) = Trace::parse(text) {
        let n = trace.first_at_or_after(Instant::from_nanos(u64::MAX / 2));
        let _ = (trace.mean_rate_bps(), trace.time_of(n));
    }
});
