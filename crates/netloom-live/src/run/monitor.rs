//! The accuracy monitor: a thread that every `INTERVAL` asks the workers for their accuracy and
//! publishes an alarm when the interval's late releases pass the run's threshold, or when any
//! hand-off was late or any packet lost outside the model ("accuracy is binary": an overloaded
//! emulator must be noticed while it runs, not only in the final report). Parked in between,
//! it costs the workers one cheap order a second. Its intervals end on the run's clock's whole
//! seconds, so that the machines of a run over several, whose clocks of the run agree, judge
//! the same intervals and a subscriber can group their alarms by `interval`.

use crate::accuracy::{AccuracyReport, Thresholds};
use crate::run::event::Event;
use netloom_time::Instant;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// How often the monitor looks, and over what interval an alarm judges lateness.
pub const INTERVAL: Duration = Duration::from_secs(1);

/// The figures the monitor compares from one look to the next, summed over the workers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Counts {
    released: u64,
    late: u64,
    late_handoffs: u64,
    physical_drops: u64,
}

impl Counts {
    fn of(parts: &[AccuracyReport]) -> Counts {
        parts.iter().fold(Counts::default(), |t, a| Counts {
            released: t.released + a.released,
            late: t.late + a.late,
            late_handoffs: t.late_handoffs + a.late_handoffs,
            physical_drops: t.physical_drops + a.physical_drops,
        })
    }
}

/// The alarm for the interval from `(last_at, last)` to `(at, now)`, if its figures pass the
/// thresholds: more late releases than `max_late_fraction` of those released in it (at least
/// one), or any late hand-off, or any packet lost outside the model.
fn alarm(
    thresholds: &Thresholds,
    (last_at, last): (Instant, Counts),
    (at, now): (Instant, Counts),
) -> Option<Event> {
    let released = now.released - last.released;
    let late = now.late - last.late;
    let late_handoffs = now.late_handoffs - last.late_handoffs;
    let physical_drops = now.physical_drops - last.physical_drops;
    let late_beyond =
        late > 0 && late as f64 > thresholds.max_late_fraction * released.max(1) as f64;
    let interval = INTERVAL.as_nanos() as u64;
    (late_beyond || late_handoffs > 0 || physical_drops > 0).then(|| Event::AccuracyAlarm {
        at_ns: at.as_nanos(),
        interval: (at.as_nanos() + interval / 2) / interval,
        interval_ns: at.saturating_since(last_at).as_nanos(),
        released,
        late,
        late_handoffs,
        physical_drops,
        machine: None,
    })
}

/// The monitor's thread; `stop` ends it.
pub(crate) struct Monitor {
    thread: JoinHandle<()>,
    halt: Arc<AtomicBool>,
}

impl Monitor {
    /// Starts the monitor: `ask` returns every worker's accuracy (`None` when they did not
    /// answer), `publish` gives an alarm to the run's subscribers, `now` is the run's clock.
    pub fn start(
        thresholds: Thresholds,
        ask: impl Fn() -> Option<Vec<AccuracyReport>> + Send + 'static,
        publish: impl Fn(Event) + Send + 'static,
        now: impl Fn() -> Instant + Send + 'static,
    ) -> std::io::Result<Monitor> {
        let halt = Arc::new(AtomicBool::new(false));
        let stop = halt.clone();
        let thread = std::thread::Builder::new()
            .name("netloom-monitor".into())
            .spawn(move || {
                let mut last = (now(), Counts::default());
                loop {
                    let left =
                        INTERVAL.as_nanos() as u64 - now().as_nanos() % INTERVAL.as_nanos() as u64;
                    let until = std::time::Instant::now() + Duration::from_nanos(left);
                    while let Some(left) = until.checked_duration_since(std::time::Instant::now()) {
                        if stop.load(Ordering::SeqCst) {
                            return;
                        }
                        std::thread::park_timeout(left);
                    }
                    let Some(parts) = ask() else { continue };
                    let look = (now(), Counts::of(&parts));
                    if let Some(event) = alarm(&thresholds, last, look) {
                        publish(event);
                    }
                    last = look;
                }
            })?;
        Ok(Monitor { thread, halt })
    }

    /// Ends the thread and waits for it.
    pub fn stop(self) {
        self.halt.store(true, Ordering::SeqCst);
        self.thread.thread().unpark();
        let _ = self.thread.join();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(released: u64, late: u64, late_handoffs: u64, physical_drops: u64) -> Counts {
        Counts {
            released,
            late,
            late_handoffs,
            physical_drops,
        }
    }

    #[test]
    fn an_alarm_judges_the_interval_not_the_whole_run() {
        let t = Thresholds::default(); // 0.1 % late at most
        let second = |s: u64| Instant(s * 1_000_000_000);
        // 1 late of 2000 in the interval is within 0.1 %; 3 of 2000 is not.
        assert_eq!(
            alarm(
                &t,
                (second(1), counts(1000, 0, 0, 0)),
                (second(2), counts(3000, 1, 0, 0))
            ),
            None
        );
        let a = alarm(
            &t,
            (second(1), counts(1000, 5, 0, 0)),
            (second(2), counts(3000, 8, 0, 0)),
        );
        assert_eq!(
            a,
            Some(Event::AccuracyAlarm {
                at_ns: 2_000_000_000,
                interval: 2,
                interval_ns: 1_000_000_000,
                released: 2000,
                late: 3,
                late_handoffs: 0,
                physical_drops: 0,
                machine: None,
            })
        );
        // Late packets in an idle interval, a late hand-off, a physical drop: each an alarm.
        assert!(alarm(
            &t,
            (second(0), counts(0, 0, 0, 0)),
            (second(1), counts(0, 1, 0, 0))
        )
        .is_some());
        assert!(alarm(
            &t,
            (second(0), counts(9, 0, 0, 0)),
            (second(1), counts(9, 0, 1, 0))
        )
        .is_some());
        assert!(alarm(
            &t,
            (second(0), counts(9, 0, 0, 0)),
            (second(1), counts(9, 0, 0, 1))
        )
        .is_some());
    }

    /// One worker's accuracy: 10 packets released, `late` of them late.
    fn report(late: u64) -> AccuracyReport {
        AccuracyReport {
            released: 10,
            lateness_ns_p50: 0,
            lateness_ns_p99: 0,
            lateness_ns_p999: 0,
            lateness_ns_max: 0,
            lateness_ns_sum: 0,
            lateness_buckets: Vec::new(),
            late_threshold_ns: 100_000,
            late,
            physical_drops: 0,
            tun_queue_drops: 0,
            lost_handoffs: 0,
            handoffs: 0,
            late_handoffs: 0,
            handoff_lateness_ns_max: 0,
            forwarded_handoffs: 0,
            late_forwarded_handoffs: 0,
            skipped_changes: 0,
            accurate: late == 0,
        }
    }

    #[test]
    fn the_monitor_publishes_what_it_finds_and_stops() {
        let (tx, rx) = std::sync::mpsc::channel();
        let monitor = Monitor::start(
            Thresholds::default(),
            move || Some(vec![report(0), report(4)]),
            move |e| tx.send(e).unwrap(),
            || Instant(5),
        )
        .unwrap();
        let event = rx
            .recv_timeout(INTERVAL * 3)
            .expect("an alarm within a few intervals");
        assert!(
            matches!(
                event,
                Event::AccuracyAlarm {
                    late: 4,
                    released: 20,
                    ..
                }
            ),
            "{event:?}"
        );
        monitor.stop();
    }

    #[test]
    fn the_monitors_intervals_end_on_the_runs_whole_seconds() {
        // A run's clock 0.3 s ahead of this test's start: the first interval ends 0.7 s in.
        let (tx, rx) = std::sync::mpsc::channel();
        let start = std::time::Instant::now();
        let run = move || Instant::from_nanos(start.elapsed().as_nanos() as u64 + 300_000_000);
        let looks = std::sync::atomic::AtomicU64::new(0);
        let monitor = Monitor::start(
            Thresholds::default(),
            move || Some(vec![report(looks.fetch_add(1, Ordering::SeqCst) + 1)]),
            move |e| tx.send(e).unwrap(),
            run,
        )
        .unwrap();
        let event = rx.recv_timeout(INTERVAL * 3).expect("an alarm");
        monitor.stop();
        let Event::AccuracyAlarm {
            at_ns, interval, ..
        } = event
        else {
            panic!("{event:?}")
        };
        assert_eq!(interval, 1, "{event:?}");
        assert!(
            (1_000_000_000..1_100_000_000).contains(&at_ns),
            "ended at {at_ns} ns of the run, not its first whole second"
        );
    }
}
