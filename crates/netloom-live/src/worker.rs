//! One worker's thread: made ready to drive (pinned if asked, fine timer slack, real-time
//! priority when it sleeps, given up during long spins as the driver asks), then stepping its
//! driver until the run halts or a step fails, in which case it halts the others too. The
//! driver comes back on `join` for the final report.

use crate::clock::Clock;
use crate::driver::Driver;
use crate::io::PacketIo;
use crate::run::plan::{NICE, REALTIME_PRIORITY};
use crate::run::report::PriorityReport;
use netloom_os::OsError;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::thread::JoinHandle;

/// Why a worker stopped before the run halted it.
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    /// Its thread could not be made ready (pinned to its CPU, given real-time priority).
    #[error(transparent)]
    Prepare(#[from] OsError),
    /// A step of its driver failed.
    #[error("moving packets: {0}")]
    Step(#[source] std::io::Error),
    /// No worker was started at all.
    #[error("no worker was started")]
    NoneStarted,
}

/// A worker's thread and what it ends with: its driver, and its error if it failed.
pub(crate) struct Worker<I: PacketIo, C: Clock> {
    thread: JoinHandle<(Driver<I, C>, Result<(), WorkerError>)>,
}

impl<I: PacketIo + Send + 'static, C: Clock> Worker<I, C> {
    /// Runs `driver` as worker `k` on a thread of its own, on `cpu` if given, at real-time
    /// priority if `realtime`, until `halt` is set; rings `ended` when it ends.
    pub fn spawn(
        k: usize,
        mut driver: Driver<I, C>,
        cpu: Option<usize>,
        realtime: bool,
        halt: Arc<AtomicBool>,
        ended: Sender<()>,
    ) -> std::io::Result<Worker<I, C>> {
        if realtime {
            // Called by `step`, on the worker's own thread. Taking real-time priority back
            // cannot fail once it was granted at the start; normal priority never fails.
            driver.on_priority(|realtime| {
                let _ = match realtime {
                    true => netloom_os::set_realtime_priority(REALTIME_PRIORITY),
                    false => netloom_os::set_normal_priority(),
                };
            });
        }
        let thread = std::thread::Builder::new()
            .name(format!("netloom-worker-{k}"))
            .spawn(move || {
                let result = prepare(cpu, realtime)
                    .map_err(WorkerError::from)
                    .and_then(|()| {
                        while !halt.load(Ordering::Relaxed) {
                            driver.step().map_err(WorkerError::Step)?;
                        }
                        Ok(())
                    });
                if result.is_err() {
                    halt.store(true, Ordering::Relaxed);
                }
                // Whoever waits on the run learns at once that this worker ended.
                let _ = ended.send(());
                (driver, result)
            })?;
        Ok(Worker { thread })
    }

    /// Whether the thread has ended (halted or failed).
    pub fn is_finished(&self) -> bool {
        self.thread.is_finished()
    }

    /// Waits for the thread to end and returns its driver and outcome.
    pub fn join(self) -> (Driver<I, C>, Result<(), WorkerError>) {
        self.thread
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    }
}

/// Whether the workers run at real-time priority, as the report says it: `asked` for, and
/// granted by `probe` (run on a thread of its own, which then ends). Refused by the kernel (no
/// CAP_SYS_NICE, a cgroup without real-time budget), the run goes on at normal priority and
/// the report says why; any other failure of `probe` is an error.
pub(crate) fn priority(
    asked: bool,
    probe: impl FnOnce() -> Result<(), OsError> + Send,
) -> Result<(bool, PriorityReport), OsError> {
    let report = |given: &str, refused: Option<String>| PriorityReport {
        given: given.to_string(),
        refused,
    };
    if !asked {
        return Ok((false, report("normal", None)));
    }
    let probed = std::thread::scope(|s| s.spawn(probe).join());
    match probed.unwrap_or_else(|panic| std::panic::resume_unwind(panic)) {
        Ok(()) => Ok((true, report("realtime", None))),
        Err(refused @ OsError::NoRealtime { .. }) => {
            Ok((false, report("normal", Some(refused.to_string()))))
        }
        Err(e) => Err(e),
    }
}

/// Gets the calling thread ready to drive.
pub(crate) fn prepare(cpu: Option<usize>, realtime: bool) -> Result<(), OsError> {
    if let Some(cpu) = cpu {
        netloom_os::pin_current_thread(cpu)?;
    }
    netloom_os::set_timer_slack_ns(1);
    if realtime {
        netloom_os::set_realtime_priority(REALTIME_PRIORITY)?;
        // For the spells it spins long at normal priority (`Waiter::wants_realtime`): at nice
        // 0, programs beside it on a loaded machine took whole time slices of its CPU.
        // Allowed wherever real-time priority was, and only a refinement of it.
        let _ = netloom_os::set_nice(NICE);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_real_time_priority_falls_back_to_normal_and_says_why() {
        let refused = || {
            Err(OsError::NoRealtime {
                priority: REALTIME_PRIORITY,
                cause: "no budget".into(),
            })
        };
        let (realtime, report) = priority(true, refused).unwrap();
        assert!(!realtime);
        assert_eq!(report.given, "normal");
        assert!(report.refused.unwrap().contains("no budget"));
        let (realtime, report) = priority(true, || Ok(())).unwrap();
        assert!(realtime);
        assert_eq!((report.given.as_str(), report.refused), ("realtime", None));
        assert!(!priority(false, refused).unwrap().0);
        // Anything but a refusal stops the run, as before.
        let broken = || Err(OsError::NoTun);
        assert!(priority(true, broken).is_err());
    }
}
