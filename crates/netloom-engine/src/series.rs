//! Per-interval figures of a virtual-time run (`netloom sim --series`, docs/json.md): each
//! flow's throughput and each pipe's utilization, drops and queue length, interval by interval,
//! taken from the engine's cumulative counters at each interval's end.

use crate::engine::Engine;
use crate::report::{rate_bps, total_drops};
use netloom_time::{Duration, Instant};
use netloom_topo::PipeId;
use serde::Serialize;

/// The series of a run: element i of every list covers [i × interval, (i + 1) × interval); the
/// last interval ends at the run's end, so it is shorter when the duration is not a multiple of
/// the interval (its rates are over its own length).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Series {
    /// The interval's length, ns.
    pub interval_ns: u64,
    /// One per flow, in the report's `flows` order.
    pub flows: Vec<FlowSeries>,
    /// One per pipe, in the report's `pipes` order.
    pub pipes: Vec<PipeSeries>,
}

/// One flow's series.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct FlowSeries {
    /// Distinct data bytes delivered in the interval × 8 / its length, bit/s.
    pub throughput_bps: Vec<u64>,
}

/// One pipe's series.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct PipeSeries {
    /// Bytes out in the interval × 8 / (the pipe's rate at its end × its length), to 6 places.
    pub utilization: Vec<f64>,
    /// Packets dropped in the interval, every cause.
    pub drops: Vec<u64>,
    /// Packets queued (waiting or being serialized) at the interval's end.
    pub queue_packets: Vec<u64>,
}

/// Takes the series of one engine as its run goes: `due` says when the next interval ends, and
/// `close` is called before the engine processes anything at or after that instant.
pub(crate) struct Recorder {
    interval: Duration,
    /// The start of the interval being recorded.
    start: Instant,
    /// The counters at `start`: per flow distinct bytes delivered, per pipe bytes out and drops.
    flow_bytes: Vec<u64>,
    pipe_bytes: Vec<u64>,
    pipe_drops: Vec<u64>,
    series: Series,
}

impl Recorder {
    /// A recorder of intervals of `interval` (not zero) from time zero.
    pub fn new(engine: &Engine, interval: Duration) -> Recorder {
        let flows = engine.flows().count();
        let pipes = engine.topology().pipes.len();
        Recorder {
            interval,
            start: Instant::ZERO,
            flow_bytes: vec![0; flows],
            pipe_bytes: vec![0; pipes],
            pipe_drops: vec![0; pipes],
            series: Series {
                interval_ns: interval.as_nanos(),
                flows: vec![FlowSeries::default(); flows],
                pipes: vec![PipeSeries::default(); pipes],
            },
        }
    }

    /// When the interval being recorded ends.
    pub fn due(&self) -> Instant {
        self.start + self.interval
    }

    /// Closes every interval that ends at or before `now` (and before `end`), then, if `now`
    /// is `end`, the last one, which ends there. Returns when the next one is due.
    pub fn close(&mut self, engine: &mut Engine, now: Instant, end: Instant) -> Instant {
        while self.due() <= now && self.due() < end {
            self.close_one(engine, self.due());
        }
        if now >= end && self.start < end {
            self.close_one(engine, end);
        }
        self.due()
    }

    /// The series, once the run's end is closed.
    pub fn finish(self) -> Series {
        self.series
    }

    fn close_one(&mut self, engine: &mut Engine, at: Instant) {
        let length = at.saturating_since(self.start);
        let flows = engine
            .flows()
            .map(|(_, _, receiver, _)| receiver.stats().bytes);
        for ((bytes, last), series) in flows.zip(&mut self.flow_bytes).zip(&mut self.series.flows) {
            series.throughput_bps.push(rate_bps(bytes - *last, length));
            *last = bytes;
        }
        for p in 0..self.pipe_bytes.len() {
            let (bytes, drops, rate) = {
                let pipe = engine.pipe(p as PipeId);
                let c = pipe.counters();
                (c.bytes_out, total_drops(c), pipe.config().rate)
            };
            let (queued, _) = engine.queue_len(p as PipeId, at);
            let capacity = rate.bytes_in(length);
            let utilization = match capacity {
                0 => 0.0,
                c => ((bytes - self.pipe_bytes[p]) as f64 / c as f64 * 1e6).round() / 1e6,
            };
            let series = &mut self.series.pipes[p];
            series.utilization.push(utilization);
            series.drops.push(drops - self.pipe_drops[p]);
            series.queue_packets.push(queued);
            self.pipe_bytes[p] = bytes;
            self.pipe_drops[p] = drops;
        }
        self.start = at;
    }
}
