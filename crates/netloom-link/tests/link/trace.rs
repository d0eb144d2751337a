//! A trace-driven pipe delivers exactly the trace's opportunities: under saturation, one
//! 1500-byte packet at each opportunity, looping, plus the propagation delay.

use netloom_link::{Admission, PacketMeta, Pipe, PipeConfig, PipeData, QueueLimit, Trace};
use netloom_time::{Duration, Instant, Rate};
use std::sync::Arc;

/// An irregular trace: bursts (repeated timestamps) and gaps, 1000 lines over about 2 s.
fn irregular_trace() -> String {
    let mut ms = 0u64;
    let mut x = 12345u64;
    let mut out = String::new();
    for _ in 0..1000 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ms += (x >> 61) % 5; // 0 to 4 ms apart
        out.push_str(&format!("{}\n", ms.max(1)));
    }
    out
}

#[test]
fn saturated_trace_pipe_uses_every_opportunity_once() {
    let trace = Arc::new(Trace::parse(&irregular_trace()).unwrap());
    let delay = Duration::from_millis(20);
    let cfg = PipeConfig {
        queue: QueueLimit::Packets(100_000),
        ..PipeConfig::new(Rate::bps(trace.mean_rate_bps()), delay)
    };
    let data = PipeData {
        profile: None,
        trace: Some(trace.clone()),
    };
    let mut pipe = Pipe::with_data(cfg, 1, data);
    let n = 2 * trace.len() as u64 + 17; // more than two loops
    for k in 0..n {
        let Admission::Scheduled { first, .. } =
            pipe.offer(Instant::ZERO, 1500, PacketMeta::default())
        else {
            panic!("packet {k} dropped");
        };
        assert_eq!(first.exit, trace.time_of(k) + delay, "packet {k}");
    }
}

#[test]
fn an_idle_trace_pipe_waits_for_the_next_opportunity() {
    let trace = Arc::new(Trace::parse("5\n5\n12\n30\n").unwrap());
    let cfg = PipeConfig::new(Rate::bps(trace.mean_rate_bps()), Duration::ZERO);
    let data = PipeData {
        profile: None,
        trace: Some(trace),
    };
    let mut pipe = Pipe::with_data(cfg, 1, data);
    let ms = |v: u64| Instant::from_nanos(v * 1_000_000);
    let exit = |a: Admission| match a {
        Admission::Scheduled { first, .. } => first.exit,
        Admission::Dropped(c) => panic!("{c:?}"),
    };
    assert_eq!(
        exit(pipe.offer(ms(13), 1500, PacketMeta::default())),
        ms(30)
    );
    // The next loop starts at 30 ms: its opportunities are at 35, 35, 42 and 60 ms.
    assert_eq!(
        exit(pipe.offer(ms(31), 1500, PacketMeta::default())),
        ms(35)
    );
    assert_eq!(
        exit(pipe.offer(ms(31), 1500, PacketMeta::default())),
        ms(35)
    );
    assert_eq!(
        exit(pipe.offer(ms(31), 1500, PacketMeta::default())),
        ms(42)
    );
}

#[test]
fn going_down_frees_the_opportunities_queued_packets_had_taken() {
    let trace = Arc::new(Trace::parse("10\n20\n30\n40\n").unwrap());
    let cfg = PipeConfig::new(Rate::bps(trace.mean_rate_bps()), Duration::ZERO);
    let data = PipeData {
        profile: None,
        trace: Some(trace),
    };
    let mut pipe = Pipe::with_data(cfg, 1, data);
    let ms = |v: u64| Instant::from_nanos(v * 1_000_000);
    for _ in 0..3 {
        pipe.offer(ms(0), 1500, PacketMeta::default()); // take 10, 20 and 30 ms
    }
    pipe.set_config(ms(5), PipeConfig { up: false, ..cfg });
    pipe.set_config(ms(6), cfg);
    // The three packets were lost with the link; the next one takes the 10 ms opportunity.
    let Admission::Scheduled { first, .. } = pipe.offer(ms(7), 1500, PacketMeta::default()) else {
        panic!("dropped");
    };
    assert_eq!(first.exit, ms(10));
}
