#![no_main]
//! Fuzz target: a datagram as a machine's hand-off port receives it. The first byte says whether
//! it is sealed with the target's key (so that the fuzzer reaches the decoder behind the tag);
//! opening, decoding and checking each hand-off against a small topology's bounds must give an
//! error or a hand-off within them, never a panic.

use libfuzzer_sys::fuzz_target;
use netloom_engine::HandoffBounds;
use netloom_wire::{decode, Key, Payload};

const BOUNDS: HandoffBounds = HandoffBounds {
    pipes: 8,
    nodes: 5,
    hosts: 3,
    flows: 2,
    workers: 2,
};

fuzz_target!(|data: &[u8]| {
    let Some((&seal, rest)) = data.split_first() else {
        return;
    };
    let key = Key::from_hex(&"5a".repeat(32)).expect("a key");
    let mut sealed = rest.to_vec();
    if seal & 1 == 1 {
        key.seal(&mut sealed);
    }
    let Ok(opened) = key.open(&sealed) else {
        return;
    };
    let Ok(datagram) = decode(opened) else {
        return;
    };
    let handoffs = match datagram.payload {
        Payload::Descriptors(handoffs) => handoffs,
        Payload::Packet { handoff, .. } => vec![handoff],
    };
    for handoff in handoffs {
        if handoff.check(&BOUNDS).is_ok() {
            assert!(handoff.delivers_to().map_or(true, |h| h < BOUNDS.hosts));
        }
    }
});
