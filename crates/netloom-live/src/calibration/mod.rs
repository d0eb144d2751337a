//! `netloom calibrate`: what this machine costs a live run, measured before an experiment as
//! eWAN calibrates its testbed (paper 003 §IV): timer lateness per precision mode, TUN read and
//! write rates with and without GSO, a packet-hop's cost in the engine, a hand-off's cost between
//! workers, and the CPUs; written as a versioned JSON file that the capacity prediction reads,
//! and refused on another machine or another netloom version.

mod handoff;
mod identity;
mod timer;
mod tun;

#[cfg(test)]
pub(crate) use handoff::handoff;
pub use identity::Identity;
pub use tun::{forward, Forwarded, BATCH, FRAME};

use netloom_engine::workload::{self, WorkloadError};
use netloom_os::OsError;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Instant;

/// The calibration file's format; bumped on any change a reader of the old one would misread.
pub const FORMAT: u32 = 2;

/// Where `netloom calibrate` writes by default and `netloom run` looks for a calibration.
pub const DEFAULT_PATH: &str = "/var/lib/netloom/calibration.json";

/// This build's version, recorded in the file and compared on reading.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Virtual seconds of the engine's timed run (tree-mesh h5: about 1.3 s of wall time in release).
const ENGINE_SECONDS: u64 = 10;

/// Everything `netloom calibrate` measures (docs/calibrate.md describes each field).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// `FORMAT` of the writer.
    pub format: u32,
    /// The netloom version that measured.
    pub netloom_version: String,
    /// The machine it was measured on.
    pub machine: Identity,
    /// When, RFC 3339 UTC.
    pub date: String,
    /// How long the measurement took, seconds.
    pub seconds: f64,
    /// The CPUs and their caches.
    pub cpus: Cpus,
    /// Timer lateness per precision mode: busy, hybrid, sleep.
    pub timer: Vec<TimerLateness>,
    /// TUN rates without GSO, then with.
    pub tun: Vec<TunRates>,
    /// One packet-hop's cost in the engine.
    pub engine: EngineCost,
    /// One hand-off's cost between two workers.
    pub handoff: HandoffCost,
}

/// This machine's CPUs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cpus {
    /// CPUs this process may run on.
    pub count: usize,
    /// `model name` of /proc/cpuinfo.
    pub model: String,
    /// The highest frequency cpufreq lists, else `cpu MHz` of /proc/cpuinfo; `null` if neither.
    pub mhz: Option<f64>,
    /// Data and unified caches, each once.
    pub caches: Vec<Cache>,
}

/// One cache and the CPUs sharing it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cache {
    /// 1, 2 or 3.
    pub level: u8,
    /// Bytes, if sysfs lists it.
    pub size_bytes: Option<u64>,
    /// The CPUs sharing it.
    pub cpus: Vec<usize>,
}

/// How late a driver in one precision mode finds a deadline has come, as `run --precision` does.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TimerLateness {
    /// `busy`, `hybrid` or `sleep`.
    pub precision: String,
    /// Deadlines measured.
    pub samples: usize,
    /// Median lateness, ns.
    pub p50_ns: u64,
    /// 99th percentile, ns.
    pub p99_ns: u64,
    /// Largest, ns.
    pub max_ns: u64,
    /// CPU time the waiting thread spent per sleep it took (the wait's syscall, the timer, the
    /// switch back in, the turn's cold path), ns: what a driver in this mode pays per wake-up.
    /// `null` for busy precision, which never sleeps.
    pub wake_up_ns: Option<f64>,
}

/// Rates of one direction of TUN I/O: per packet, from the time spent in the calls alone.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Rate {
    /// Packets per second one CPU could move at this cost.
    pub packets_per_second: f64,
    /// The same in bits of packets (virtio header excluded).
    pub gbit_per_second: f64,
    /// Mean time in one call, ns.
    pub ns_per_packet: f64,
}

/// TUN reads and writes while a TCP flow crosses a plain TUN-to-TUN forwarder.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TunRates {
    /// Whether the devices hand over GSO super-packets (IFF_VNET_HDR offloads on).
    pub gso: bool,
    /// Packets forwarded (each one read and one write).
    pub packets: u64,
    /// Mean packet size, bytes (up to 64 KB with GSO).
    pub mean_packet_bytes: f64,
    /// Reads.
    pub read: Rate,
    /// Writes.
    pub write: Rate,
    /// What the forwarder carried over the whole measurement, wall-clock time.
    pub forwarded_gbit_per_second: f64,
}

/// The engine's cost per packet-hop, from a virtual-time run of a known topology.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EngineCost {
    /// The workload run.
    pub workload: String,
    /// Packet-hops it made.
    pub packet_hops: u64,
    /// Wall time, seconds.
    pub wall_seconds: f64,
    /// Wall time per packet-hop, ns.
    pub ns_per_packet_hop: f64,
}

/// The cost of handing a packet from one worker to another through its mailbox.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HandoffCost {
    /// Hand-offs streamed.
    pub handoffs: u64,
    /// Wall time per hand-off with the two workers on two CPUs, ns.
    pub ns_per_handoff: f64,
}

/// Why a calibration could not be measured or read.
#[derive(Debug, thiserror::Error)]
pub enum CalibrationError {
    /// A figure of the file is negative: every one is a measured time, rate, size or count.
    #[error("{}: {field} is {value}: a measured figure is never negative", path.display())]
    Negative {
        /// The file.
        path: PathBuf,
        /// Where the figure is, as `tun[0].read.ns_per_packet`.
        field: String,
        /// What the file says.
        value: f64,
    },
    /// Namespaces, TUN devices or priorities.
    #[error(transparent)]
    Os(#[from] OsError),
    /// A socket or a thread.
    #[error("{what}: {error}")]
    Io {
        /// What was being done.
        what: String,
        /// Why it failed.
        error: std::io::Error,
    },
    /// The engine's workload could not be built (a bug).
    #[error(transparent)]
    Workload(#[from] WorkloadError),
    /// A stop signal came during the measurement; everything was cleaned up.
    #[error("interrupted; everything it set up was removed")]
    Interrupted,
    /// The file could not be read.
    #[error("{}: {error}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        error: netloom_topo::read::ReadError,
    },
    /// The file is not a calibration file of this format.
    #[error("{}:{line}:{column}: {message} (a calibration file as `netloom calibrate -o FILE` writes it, format {FORMAT})", path.display())]
    Malformed {
        /// The file.
        path: PathBuf,
        /// 1-based line and column.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What is wrong.
        message: String,
    },
    /// The file was written in another format.
    #[error("{}: calibration format {found}, this netloom reads format {FORMAT}: run `netloom calibrate` again", path.display())]
    Format {
        /// The file.
        path: PathBuf,
        /// Its format.
        found: u32,
    },
    /// The file was measured elsewhere or by another version.
    #[error("{}: measured on another machine or netloom version ({}): its figures do not hold here; run `netloom calibrate` on this machine, or pass --force to use it anyway", path.display(), differences.join("; "))]
    Foreign {
        /// The file.
        path: PathBuf,
        /// Each difference, "what: file's, here's".
        differences: Vec<String>,
    },
}

impl CalibrationError {
    fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> CalibrationError {
        let what = what.into();
        move |error| CalibrationError::Io { what, error }
    }
}

/// Measures this machine (root: the TUN step brings up a two-host experiment named `name`,
/// removed again however the measurement ends). `progress` hears one line per step as it ends;
/// `stop` (a signal's flag) ends the measurement early with `Interrupted`.
pub fn measure(
    name: &str,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(&str),
) -> Result<Calibration, CalibrationError> {
    let started = Instant::now();
    let interrupted = || stop.load(std::sync::atomic::Ordering::Relaxed);
    let cpus = identity::cpus();
    progress(&format!(
        "CPUs: {} x {}{}",
        cpus.count,
        cpus.model,
        cpus.mhz.map_or(String::new(), |m| format!(", {m:.0} MHz"))
    ));
    let mut timers = Vec::new();
    for precision in timer::MODES {
        let t = timer::lateness(precision)?;
        progress(&format!(
            "timer lateness, {} precision: p50 {} / p99 {} / max {} ({} deadlines)",
            t.precision,
            micros(t.p50_ns as f64),
            micros(t.p99_ns as f64),
            micros(t.max_ns as f64),
            t.samples
        ));
        timers.push(t);
        if interrupted() {
            return Err(CalibrationError::Interrupted);
        }
    }
    let tun = tun::rates(name, stop, &mut |r: &TunRates| {
        progress(&format!(
            "TUN, GSO {}: read {:.0} kpps ({:.2} Gbit/s), write {:.0} kpps ({:.2} Gbit/s), {:.0}-byte packets",
            if r.gso { "on" } else { "off" },
            r.read.packets_per_second / 1e3,
            r.read.gbit_per_second,
            r.write.packets_per_second / 1e3,
            r.write.gbit_per_second,
            r.mean_packet_bytes
        ))
    })?;
    let case = workload::tree_mesh()?;
    let mut engine = case.engine()?;
    let report = netloom_engine::sim::run(&mut engine, workload::timed(ENGINE_SECONDS));
    let wall = report.totals.wall_seconds.unwrap_or(0.0);
    let hops = report.totals.packet_hops;
    let engine = EngineCost {
        workload: format!(
            "{} ({}), {ENGINE_SECONDS} s virtual",
            case.name, case.traffic
        ),
        packet_hops: hops,
        wall_seconds: wall,
        ns_per_packet_hop: wall * 1e9 / hops.max(1) as f64,
    };
    progress(&format!(
        "engine: {:.0} ns per packet-hop ({:.1} M packet-hops/s, {})",
        engine.ns_per_packet_hop,
        1e3 / engine.ns_per_packet_hop,
        case.name
    ));
    if interrupted() {
        return Err(CalibrationError::Interrupted);
    }
    let handoff = handoff::cost()?;
    progress(&format!(
        "hand-off between two workers: {:.0} ns ({} streamed)",
        handoff.ns_per_handoff, handoff.handoffs
    ));
    Ok(Calibration {
        format: FORMAT,
        netloom_version: VERSION.to_string(),
        machine: Identity::here(),
        date: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        seconds: started.elapsed().as_secs_f64(),
        cpus,
        timer: timers,
        tun,
        engine,
        handoff,
    })
}

/// The first negative number in `value`, with where it is (below `at`).
fn negative(value: &serde_json::Value, at: String) -> Option<(String, f64)> {
    use serde_json::Value;
    match value {
        Value::Number(n) => n.as_f64().filter(|&v| v < 0.0).map(|v| (at, v)),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(k, v)| negative(v, format!("{at}[{k}]"))),
        Value::Object(fields) => fields.iter().find_map(|(name, v)| {
            let at = match at.is_empty() {
                true => name.clone(),
                false => format!("{at}.{name}"),
            };
            negative(v, at)
        }),
        _ => None,
    }
}

/// ns as µs with one decimal.
fn micros(ns: f64) -> String {
    format!("{:.1} us", ns / 1e3)
}

impl Calibration {
    /// The file as `netloom calibrate -o` writes it.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("plain data serializes") + "\n"
    }

    /// Reads a calibration file, checking its format (not its machine: see `check`).
    pub fn read(path: &Path) -> Result<Calibration, CalibrationError> {
        let text = netloom_topo::read::read_text(path, netloom_topo::read::CALIBRATION).map_err(
            |error| CalibrationError::Read {
                path: path.to_path_buf(),
                error,
            },
        )?;
        Calibration::parse(&text, path)
    }

    /// Parses `text`, the contents of `path`.
    pub fn parse(text: &str, path: &Path) -> Result<Calibration, CalibrationError> {
        let malformed = |e: serde_json::Error| CalibrationError::Malformed {
            path: path.to_path_buf(),
            line: e.line(),
            column: e.column(),
            message: e
                .to_string()
                .split(" at line ")
                .next()
                .unwrap_or("")
                .to_string(),
        };
        // The format first, so a file of another format says so instead of failing on a field.
        #[derive(Deserialize)]
        struct Head {
            format: u32,
        }
        let head: Head = serde_json::from_str(text).map_err(malformed)?;
        if head.format != FORMAT {
            return Err(CalibrationError::Format {
                path: path.to_path_buf(),
                found: head.format,
            });
        }
        let calibration = serde_json::from_str(text).map_err(malformed)?;
        let value: serde_json::Value = serde_json::from_str(text).map_err(malformed)?;
        match negative(&value, String::new()) {
            Some((field, value)) => Err(CalibrationError::Negative {
                path: path.to_path_buf(),
                field,
                value,
            }),
            None => Ok(calibration),
        }
    }

    /// Refuses a calibration measured on another machine than `here` or by another netloom
    /// version, naming every difference.
    pub fn check(&self, here: &Identity, path: &Path) -> Result<(), CalibrationError> {
        let mut differences = self.machine.differences(here);
        if self.netloom_version != VERSION {
            differences.insert(
                0,
                format!("netloom version {}, here {VERSION}", self.netloom_version),
            );
        }
        if differences.is_empty() {
            return Ok(());
        }
        Err(CalibrationError::Foreign {
            path: path.to_path_buf(),
            differences,
        })
    }

    /// The timer lateness of a precision mode (`busy`, `hybrid`, `sleep`).
    pub fn timer(&self, precision: &str) -> Option<&TimerLateness> {
        self.timer.iter().find(|t| t.precision == precision)
    }

    /// The TUN rates with or without GSO.
    pub fn tun(&self, gso: bool) -> Option<&TunRates> {
        self.tun.iter().find(|t| t.gso == gso)
    }

    /// A readable summary, one figure a line.
    pub fn summary(&self) -> String {
        let mut out = format!(
            "calibration of {} ({}, {} CPUs, kernel {}), netloom {}, {} ({:.1} s)\n",
            self.machine.hostname,
            self.cpus.model,
            self.cpus.count,
            self.machine.kernel,
            self.netloom_version,
            self.date,
            self.seconds
        );
        let caches: Vec<String> = self
            .cpus
            .caches
            .iter()
            .map(|c| {
                format!(
                    "L{} {} (CPUs {})",
                    c.level,
                    c.size_bytes
                        .map_or("?".to_string(), |b| format!("{} KiB", b >> 10)),
                    netloom_os::format_cpu_list(&c.cpus)
                )
            })
            .collect();
        out += &format!("  caches      {}\n", caches.join(", "));
        for t in &self.timer {
            out += &format!(
                "  timer       {:<6} lateness p50 {} / p99 {} / max {}{}\n",
                t.precision,
                micros(t.p50_ns as f64),
                micros(t.p99_ns as f64),
                micros(t.max_ns as f64),
                t.wake_up_ns.map_or(String::new(), |ns| format!(
                    "; {} of CPU per wake-up",
                    micros(ns)
                ))
            );
        }
        for t in &self.tun {
            out += &format!(
                "  TUN GSO {:<3} read {:.0} ns ({:.0} kpps, {:.2} Gbit/s), write {:.0} ns ({:.0} kpps, {:.2} Gbit/s); forwarded {:.2} Gbit/s\n",
                if t.gso { "on" } else { "off" },
                t.read.ns_per_packet,
                t.read.packets_per_second / 1e3,
                t.read.gbit_per_second,
                t.write.ns_per_packet,
                t.write.packets_per_second / 1e3,
                t.write.gbit_per_second,
                t.forwarded_gbit_per_second
            );
        }
        out += &format!(
            "  engine      {:.0} ns per packet-hop ({})\n",
            self.engine.ns_per_packet_hop, self.engine.workload
        );
        out += &format!(
            "  hand-off    {:.0} ns between two workers\n",
            self.handoff.ns_per_handoff
        );
        out
    }
}

/// Percentiles of `samples` (ns), sorted here: p50, p99, max.
fn percentiles(samples: &mut [u64]) -> (u64, u64, u64) {
    samples.sort_unstable();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    (at(0.5), at(0.99), samples[samples.len() - 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Calibration {
        let rate = Rate {
            packets_per_second: 1e6,
            gbit_per_second: 12.0,
            ns_per_packet: 1000.0,
        };
        Calibration {
            format: FORMAT,
            netloom_version: VERSION.to_string(),
            machine: Identity::here(),
            date: "2026-11-24T05:00:00Z".to_string(),
            seconds: 20.0,
            cpus: identity::cpus(),
            timer: vec![TimerLateness {
                precision: "busy".to_string(),
                samples: 10,
                p50_ns: 100,
                p99_ns: 200,
                max_ns: 300,
                wake_up_ns: None,
            }],
            tun: vec![TunRates {
                gso: false,
                packets: 10,
                mean_packet_bytes: 1500.0,
                read: rate.clone(),
                write: rate,
                forwarded_gbit_per_second: 1.0,
            }],
            engine: EngineCost {
                workload: "w".to_string(),
                packet_hops: 1,
                wall_seconds: 1.0,
                ns_per_packet_hop: 100.0,
            },
            handoff: HandoffCost {
                handoffs: 1,
                ns_per_handoff: 200.0,
            },
        }
    }

    #[test]
    fn a_calibration_reads_back_as_written_and_holds_here() {
        let c = sample();
        let back = Calibration::parse(&c.to_json(), Path::new("c.json")).unwrap();
        assert_eq!(back, c);
        back.check(&Identity::here(), Path::new("c.json")).unwrap();
    }

    #[test]
    fn another_machine_or_version_is_refused_naming_each_difference() {
        let mut c = sample();
        c.machine.hostname = "elsewhere".to_string();
        c.machine.kernel = "2.6.32".to_string();
        c.netloom_version = "0.0.1".to_string();
        let err = c
            .check(&Identity::here(), Path::new("c.json"))
            .unwrap_err()
            .to_string();
        for needle in [
            "c.json: measured on another machine",
            "netloom version 0.0.1",
            "hostname elsewhere",
            "kernel 2.6.32",
            "--force",
        ] {
            assert!(err.contains(needle), "{needle:?} in {err}");
        }
        assert!(
            !err.contains("cpu model"),
            "the same CPU is not a difference: {err}"
        );
    }

    #[test]
    fn malformed_and_other_format_files_say_where_and_what() {
        let err = Calibration::parse(
            "{\n  \"format\": 1,\n  \"timer\": 3\n}",
            Path::new("c.json"),
        )
        .unwrap_err()
        .to_string();
        assert!(err.starts_with("c.json:"), "{err}");
        let err = Calibration::parse("{\n\"format\": [}", Path::new("c.json"))
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("c.json:2:"), "{err}");
        let err = Calibration::parse("{\"format\": 99}", Path::new("c.json"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("calibration format 99"), "{err}");
    }

    #[test]
    fn a_negative_cost_is_refused_naming_the_figure() {
        let text = sample()
            .to_json()
            .replace("\"ns_per_handoff\": 200.0", "\"ns_per_handoff\": -200.0");
        let err = Calibration::parse(&text, Path::new("c.json"))
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "c.json: handoff.ns_per_handoff is -200: a measured figure is never negative"
        );
    }

    #[test]
    fn percentiles_are_read_from_the_sorted_sample() {
        let mut v: Vec<u64> = (1..=100).rev().collect();
        assert_eq!(percentiles(&mut v), (51, 99, 100));
    }
}
