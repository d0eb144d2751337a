#![no_main]
//! Fuzz target: netloom_engine::traffic::parse_spec on arbitrary UTF-8. Bad input must give an
//! error, never a panic.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(spec) = std::str::from_utf8(data) {
        let _ = netloom_engine::traffic::parse_spec(spec);
    }
});
