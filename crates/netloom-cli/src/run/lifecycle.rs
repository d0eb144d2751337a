//! The one lifecycle of `netloom run` once a run is up, whatever the run (one machine or
//! several, any `netloom_live::Run`): its warnings, the "is up" line, the web and metrics
//! servers, the ready file, the wait, the stop, the machines' clocks and drift, the report.
//! Starting the run is the caller's, and the only difference between the two.

use crate::stdout::say;
use anyhow::{bail, Context, Result};
use netloom_live::{Report, Run, RunInfo};
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// What the lifecycle needs besides the run: the flags that act once it is up.
pub(crate) struct Life<'a> {
    /// The experiment's name.
    pub name: String,
    /// Set by Ctrl-C or SIGTERM (installed before the start, so a signal during it counts).
    pub signal: &'a AtomicBool,
    /// When the start began, for the "is up" line.
    pub started: Instant,
    /// `--metrics` and `--web`, bound before the start.
    pub listeners: Vec<crate::web::Listener>,
    /// The CPUs the run's workers are pinned to, which the servers' threads keep off (none when
    /// the workers are other processes).
    pub worker_cpus: Vec<usize>,
    /// `--ready-file`: written once the run answers.
    pub ready_file: Option<&'a Path>,
    /// `--duration`.
    pub stop_after: Option<Duration>,
    /// `--json`, `--top`.
    pub json: bool,
    pub top: usize,
    /// `--strict`: the run's drift warnings are an error after the report, not warnings.
    pub strict: bool,
}

/// Where the lifecycle's lines go: news, and the final report.
pub(crate) trait Output {
    /// A line of news (standard error).
    fn say(&mut self, line: &str);
    /// The final report's text (standard output); an error when it cannot be written.
    fn report(&mut self, text: &str) -> Result<()>;
}

/// The terminal: news on standard error, the report on standard output.
pub(crate) struct Terminal;

impl Output for Terminal {
    fn say(&mut self, line: &str) {
        say(format_args!("{line}"));
    }

    fn report(&mut self, text: &str) -> Result<()> {
        // After the teardown: a reader gone (`| head -1`) ends it quietly, a full disk is an
        // error (stdout.rs's one rule).
        crate::stdout::write(text)
    }
}

/// Drives `run` from up to its report: says its warnings and that it is up, serves it on the
/// listeners, writes the ready file, waits for its end, stops it and prints what it reports.
/// On an error before the stop, dropping the run stops it.
pub(crate) fn drive(run: Box<dyn Run>, life: Life, out: &mut dyn Output) -> Result<()> {
    let name = &life.name;
    for warning in run.warnings() {
        out.say(&format!("netloom: warning: {warning}"));
    }
    let info = run.info()?;
    if let Some(warning) = priority_warning(&info) {
        out.say(&warning);
    }
    let seconds = life.started.elapsed().as_secs_f64();
    let hosts = info.hosts.len();
    // A run that reports machines' clocks spans machines.
    let place = match run.clocks().len() {
        0 => format!(
            "{hosts} hosts in {seconds:.2} s ({} precision)",
            info.precision
        ),
        machines => format!("{hosts} hosts on {machines} machines in {seconds:.2} s"),
    };
    out.say(&format!(
        "netloom: experiment {name} is up: {place}; Ctrl-C or `netloom stop --name {name}` ends it"
    ));
    let servers = crate::web::serve(life.listeners, run.view(), &life.worker_cpus)?;
    // Up means answering: the control socket listens and the workers run.
    if let Some(ready) = life.ready_file {
        netloom_os::write_output(ready, b"up\n").context("--ready-file")?;
    }
    let ending = run.wait(life.signal, life.stop_after.map(|d| Instant::now() + d));
    // Asked while the run still runs: the machines' last clocks.
    let clocks = run.clocks();
    let drifted = run.drift_warnings();
    crate::web::stop(servers);
    let report = run.stop(&ending)?;
    for clock in &clocks {
        out.say(&format!(
            "netloom: machine {}: clock offset {:+.1} us at the start, {:+.1} us at the end (round trip {:.1} us)",
            clock.machine,
            clock.start.offset_ns as f64 / 1e3,
            clock.last.offset_ns as f64 / 1e3,
            clock.last.round_trip_ns as f64 / 1e3,
        ));
    }
    if !life.strict {
        for warning in &drifted {
            out.say(&format!("netloom: warning: {warning}"));
        }
    }
    out.report(&report_text(&report, life.json, life.top)?)?;
    if life.strict && !drifted.is_empty() {
        bail!("--strict: {}", drifted.join("; "));
    }
    Ok(())
}

/// The final report as `--json` or text.
fn report_text(report: &Report, json: bool, top: usize) -> Result<String> {
    Ok(match json {
        true => serde_json::to_string_pretty(report)? + "\n",
        false => crate::live::format_report(report, true, top),
    })
}

/// The warning for a kernel that refused the workers real-time priority (on one machine, or on
/// some machines of a cluster): the run goes on, at normal priority.
fn priority_warning(info: &RunInfo) -> Option<String> {
    let refused = info.priority.as_ref()?.refused.as_ref()?;
    Some(format!(
        "netloom: warning: {refused}; the workers run at normal priority instead, where the programs under test can delay them by whole time slices (docs/live.md)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use netloom_live::cluster::{ClockSample, MachineClock};
    use netloom_live::{
        Direction, Ending, LinkChange, RunError, RunView, SharedView, Subscription,
    };
    use serde_json::{Map, Value};
    use std::sync::{Arc, Mutex};

    /// A run in memory: what it reports is set by the test, and how it was stopped is kept.
    #[derive(Clone, Default)]
    struct Fake {
        warnings: Vec<String>,
        refused: Option<String>,
        clocks: Vec<MachineClock>,
        drift: Vec<String>,
        stopped: Arc<Mutex<Option<Ending>>>,
    }

    impl RunView for Fake {
        fn info(&self) -> Result<RunInfo, RunError> {
            Ok(serde_json::from_value(serde_json::json!({
                "experiment": "lab", "version": "0", "protocol": 1, "precision": "hybrid",
                "priority": {"given": "normal", "refused": self.refused},
                "hosts": [{"name": "h1", "ipv4": "198.18.0.1", "ipv6": "fd6e:6c00::1"},
                          {"name": "h2", "ipv4": "198.18.0.2", "ipv6": "fd6e:6c00::2"}],
                "links": ["h1-h2"]
            }))
            .unwrap())
        }

        fn stats(&self) -> Result<Report, RunError> {
            Ok(report())
        }

        fn link_set(
            &self,
            _: &str,
            _: &str,
            _: Direction,
            _: &Map<String, Value>,
        ) -> Result<LinkChange, RunError> {
            Err(RunError::NoRun)
        }

        fn link_state(&self, _: &str, _: &str, _: bool) -> Result<LinkChange, RunError> {
            Err(RunError::NoRun)
        }

        fn subscribe(&self) -> Result<Subscription, RunError> {
            Err(RunError::NoRun)
        }
    }

    impl Run for Fake {
        fn view(&self) -> SharedView {
            Arc::new(self.clone())
        }

        fn warnings(&self) -> Vec<String> {
            self.warnings.clone()
        }

        fn wait(&self, signal: &AtomicBool, _: Option<Instant>) -> Ending {
            assert!(signal.load(std::sync::atomic::Ordering::Relaxed));
            Ending::Signal
        }

        fn clocks(&self) -> Vec<MachineClock> {
            self.clocks.clone()
        }

        fn drift_warnings(&self) -> Vec<String> {
            self.drift.clone()
        }

        fn stop(self: Box<Self>, reason: &Ending) -> Result<Report, RunError> {
            *self.stopped.lock().unwrap() = Some(reason.clone());
            Ok(report())
        }
    }

    fn report() -> Report {
        serde_json::from_value(serde_json::json!({
            "experiment": "lab", "precision": "hybrid", "uptime_ns": 7, "in_flight": 0,
            "accuracy": {
                "released": 0, "lateness_ns_p50": 0, "lateness_ns_p99": 0, "lateness_ns_p999": 0,
                "lateness_ns_max": 0, "lateness_ns_sum": 0, "lateness_buckets": [],
                "late_threshold_ns": 100000, "late": 0, "physical_drops": 0, "handoffs": 0,
                "late_handoffs": 0, "handoff_lateness_ns_max": 0, "accurate": true
            },
            "hosts": [], "pipes": []
        }))
        .unwrap()
    }

    /// What the lifecycle said, in order; the report as one entry starting with `REPORT`.
    #[derive(Default)]
    struct Lines(Vec<String>);

    impl Output for Lines {
        fn say(&mut self, line: &str) {
            self.0.push(line.to_string());
        }

        fn report(&mut self, text: &str) -> Result<()> {
            self.0.push(format!("REPORT {text}"));
            Ok(())
        }
    }

    /// Drives `run` to its end (the signal already set), `strict` or not; what it said, and
    /// what it returned.
    fn drive_fake(run: Fake, strict: bool, ready: Option<&Path>) -> (Vec<String>, Result<()>) {
        let signal = AtomicBool::new(true);
        let life = Life {
            name: "lab".into(),
            signal: &signal,
            started: Instant::now(),
            listeners: Vec::new(),
            worker_cpus: Vec::new(),
            ready_file: ready,
            stop_after: None,
            json: true,
            top: 10,
            strict,
        };
        let mut lines = Lines::default();
        let result = drive(Box::new(run), life, &mut lines);
        (lines.0, result)
    }

    fn clock(machine: &str, start_ns: i64, last_ns: i64) -> MachineClock {
        let sample = |offset_ns| ClockSample {
            offset_ns,
            round_trip_ns: 80_000,
        };
        MachineClock {
            machine: machine.into(),
            start: sample(start_ns),
            last: sample(last_ns),
        }
    }

    #[test]
    fn a_run_on_one_machine_is_up_answers_and_is_stopped_for_the_signal() {
        let dir = std::env::temp_dir().join(format!("netloom-life-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let ready = dir.join("ready");
        let run = Fake {
            refused: Some("the kernel refused SCHED_FIFO".into()),
            ..Fake::default()
        };
        let stopped = run.stopped.clone();
        let (lines, result) = drive_fake(run, false, Some(&ready));
        result.unwrap();
        let written = std::fs::read_to_string(&ready);
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(written.unwrap(), "up\n");
        assert_eq!(*stopped.lock().unwrap(), Some(Ending::Signal));
        assert_eq!(lines.len(), 3, "{lines:?}");
        assert!(
            lines[0].starts_with("netloom: warning: the kernel refused SCHED_FIFO; the workers run at normal priority"),
            "{lines:?}"
        );
        let up = &lines[1];
        assert!(
            up.starts_with("netloom: experiment lab is up: 2 hosts in ")
                && up.ends_with(
                    " s (hybrid precision); Ctrl-C or `netloom stop --name lab` ends it"
                ),
            "{up}"
        );
        assert!(
            lines[2].starts_with("REPORT {\n  \"experiment\": \"lab\""),
            "{lines:?}"
        );
    }

    #[test]
    fn a_run_over_machines_says_its_warnings_machines_clocks_and_drift_around_the_report() {
        let run = Fake {
            warnings: vec!["the lookahead is short".into()],
            clocks: vec![clock("m1", 1_500, -2_000), clock("m2", 0, 300)],
            drift: vec!["machine m1 drifted".into()],
            ..Fake::default()
        };
        let (lines, result) = drive_fake(run, false, None);
        result.unwrap();
        assert_eq!(lines[0], "netloom: warning: the lookahead is short");
        assert!(
            lines[1].starts_with("netloom: experiment lab is up: 2 hosts on 2 machines in "),
            "{lines:?}"
        );
        assert_eq!(
            lines[2..5],
            [
                "netloom: machine m1: clock offset +1.5 us at the start, -2.0 us at the end (round trip 80.0 us)",
                "netloom: machine m2: clock offset +0.0 us at the start, +0.3 us at the end (round trip 80.0 us)",
                "netloom: warning: machine m1 drifted",
            ]
        );
        assert!(lines[5].starts_with("REPORT "), "{lines:?}");
        assert_eq!(lines.len(), 6);
    }

    #[test]
    fn with_strict_drift_is_an_error_after_the_report_not_a_warning() {
        let run = Fake {
            clocks: vec![clock("m1", 0, 9_000)],
            drift: vec!["machine m1 drifted".into(), "machine m2 drifted".into()],
            ..Fake::default()
        };
        let stopped = run.stopped.clone();
        let (lines, result) = drive_fake(run, true, None);
        let error = result.unwrap_err().to_string();
        assert_eq!(error, "--strict: machine m1 drifted; machine m2 drifted");
        assert!(!lines.iter().any(|l| l.contains("warning")), "{lines:?}");
        assert!(lines.last().unwrap().starts_with("REPORT "), "{lines:?}");
        assert_eq!(
            *stopped.lock().unwrap(),
            Some(Ending::Signal),
            "stopped first"
        );
    }
}
