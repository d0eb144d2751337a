#![no_main]
//! Fuzz target: netloom_topo::fuzzing::import_modelnet on arbitrary bytes.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| netloom_topo::fuzzing::import_modelnet(data));
