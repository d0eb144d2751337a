//! Keeping CPUs awake: one spinning thread per CPU at the lowest scheduling policy there is,
//! so that an idle CPU never halts.
//!
//! Why: on a virtual machine whose guest has no cpuidle driver (`current_driver` `none` in
//! /sys/devices/system/cpu/cpuidle), an idle vCPU executes HLT, an exit to the hypervisor, and
//! waking it again (an interrupt injected into a halted vCPU) costs tens of microseconds. A
//! program under test that waits a millisecond or more for a packet lets its vCPU halt, so the
//! emulator's write of that packet, on time to within a microsecond, reaches the program tens of
//! microseconds later. A thread that spins keeps the vCPU running, so the wake-up costs only a
//! reschedule.
//!
//! The spinner runs at SCHED_IDLE: when a task of any other policy is woken on its CPU, the
//! scheduler preempts the spinner at once (a SCHED_IDLE task never keeps a normal one waiting for
//! a wake-up). It is not free, though:
//! - the CPU and the host core behind the vCPU are always busy;
//! - SCHED_IDLE is a weight (3, against 1024 for nice 0), not a strict priority: on a CPU where a
//!   normal task never sleeps, the spinner still gets about 0.3 % of the time, in turns of up to
//!   a scheduler tick. That is why a spinner must not share a CPU with a busy-polling engine,
//!   whose deadlines such a turn would miss;
//! - a program that blocks and wakes very often on a spun CPU pays a reschedule interrupt and two
//!   context switches per wake-up where it used to find the CPU idle for a moment: TCP through
//!   netloom at tens of Gbit/s was measured 6–47 % slower with it.
//!
//! The loop executes PAUSE (`std::hint::spin_loop`) between checks of its stop flag, which
//! yields the core's shared resources to an SMT sibling; measured on the development machine's
//! guest, about 24 ns per PAUSE and no more gaps in the loop than without it (the hypervisor does
//! not take a pause-looping vCPU away). docs/live.md ("Keeping CPUs awake") and
//! docs/performance.md ("One-way delay error") have the measurements, and why neither a PM QoS
//! request (/dev/cpu_dma_latency) nor the haltpoll governor does the same on such a guest.

use crate::OsError;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;

/// Spinning threads that keep their CPUs from halting; dropping it stops and joins them.
#[derive(Debug)]
pub struct KeepAwake {
    stop: Arc<AtomicBool>,
    spinners: Vec<Spinner>,
}

#[derive(Debug)]
struct Spinner {
    cpu: usize,
    tid: libc::pid_t,
    thread: Option<JoinHandle<()>>,
}

impl KeepAwake {
    /// Starts one spinner on each of `cpus` (each pinned to its CPU, at SCHED_IDLE) and returns
    /// once all of them run. Fails, with none left running, if a CPU does not exist or is not in
    /// this process's CPU mask, or if a thread cannot be made.
    pub fn start(cpus: &[usize]) -> Result<KeepAwake, OsError> {
        let mut awake = KeepAwake {
            stop: Arc::new(AtomicBool::new(false)),
            spinners: Vec::with_capacity(cpus.len()),
        };
        let mut cpus = cpus.to_vec();
        cpus.sort_unstable();
        cpus.dedup();
        for cpu in cpus {
            // On error `awake` is dropped here, which stops the spinners already started.
            awake
                .spinners
                .push(Spinner::start(cpu, Arc::clone(&awake.stop))?);
        }
        Ok(awake)
    }

    /// The CPUs this process may run on except `engine`: where to keep CPUs awake beside an
    /// engine pinned there. Call it before pinning the calling thread (it reads the calling
    /// thread's CPU mask).
    pub fn cpus_except(engine: usize) -> Vec<usize> {
        crate::cpu::allowed_cpus()
            .unwrap_or_default()
            .into_iter()
            .filter(|&c| c != engine)
            .collect()
    }

    /// The CPUs kept awake, ascending.
    pub fn cpus(&self) -> Vec<usize> {
        self.spinners.iter().map(|s| s.cpu).collect()
    }

    /// Each spinner's CPU and kernel thread id (for inspection: `ps -L`, /proc/self/task).
    pub fn threads(&self) -> Vec<(usize, libc::pid_t)> {
        self.spinners.iter().map(|s| (s.cpu, s.tid)).collect()
    }
}

impl Drop for KeepAwake {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for s in &mut self.spinners {
            if let Some(thread) = s.thread.take() {
                // A spinner cannot panic after it has started (its loop only reads an atomic).
                let _ = thread.join();
            }
        }
    }
}

impl Spinner {
    /// Starts a thread that pins itself to `cpu`, lowers itself to SCHED_IDLE, reports, and
    /// spins until `stop`.
    fn start(cpu: usize, stop: Arc<AtomicBool>) -> Result<Spinner, OsError> {
        let (ready_tx, ready_rx) = mpsc::channel();
        let thread_stop = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name(format!("nl-awake-{cpu}"))
            .spawn(move || {
                let ready = crate::cpu::pin_current_thread(cpu)
                    .and_then(|()| set_idle_policy())
                    .map(|()| crate::cpu::thread_id());
                let ok = ready.is_ok();
                // The receiver waits for this message, so the send cannot fail.
                let _ = ready_tx.send(ready);
                if ok {
                    spin(&thread_stop);
                }
            })
            .map_err(|e| OsError::io(format!("start a thread to keep CPU {cpu} awake"), e))?;
        let mut spinner = Spinner {
            cpu,
            tid: 0,
            thread: Some(thread),
        };
        match ready_rx.recv() {
            Ok(Ok(tid)) => {
                spinner.tid = tid;
                Ok(spinner)
            }
            Ok(Err(e)) => {
                // The thread has returned without spinning; reap it.
                if let Some(t) = spinner.thread.take() {
                    let _ = t.join();
                }
                Err(e)
            }
            Err(_) => Err(OsError::io(
                format!("start a thread to keep CPU {cpu} awake"),
                std::io::Error::other("the thread ended before it started spinning"),
            )),
        }
    }
}

/// The spinner's loop: PAUSE, then look at the flag, until it is set.
fn spin(stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        std::hint::spin_loop();
    }
}

/// Puts the calling thread under SCHED_IDLE: it runs only when nothing else on its CPU wants to,
/// and any other task woken there preempts it at once. Lowering a policy needs no privilege.
fn set_idle_policy() -> Result<(), OsError> {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: `param` is a live sched_param; pid 0 means the calling thread.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) } != 0 {
        return Err(OsError::last("put a CPU-waking thread under SCHED_IDLE"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    /// The CPUs a thread may run on, from /proc (a spinner's mask, read from outside it).
    fn affinity(tid: libc::pid_t) -> Vec<usize> {
        let status = std::fs::read_to_string(format!("/proc/self/task/{tid}/status")).unwrap();
        let list = status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            .unwrap();
        crate::cpu::parse_cpu_list(list).unwrap()
    }

    /// Total CPU time of thread `tid` in ns (/proc/self/task/TID/schedstat, first field).
    fn cpu_time_ns(tid: libc::pid_t) -> u64 {
        std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat"))
            .unwrap()
            .split_whitespace()
            .next()
            .unwrap()
            .parse()
            .unwrap()
    }

    fn this_machines_cpus() -> Vec<usize> {
        crate::cpu::allowed_cpus().unwrap()
    }

    /// The tests count spinner threads by name, so they run one at a time.
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

    fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
        ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Threads of this process named like spinners, once there are `expected` of them or 5 s
    /// have passed. `join` returns when an exiting thread clears its tid, early in the kernel's
    /// exit path; its /proc entry goes only when the task is released, and a SCHED_IDLE thread
    /// on a busy CPU can wait a while in between. So a stopped spinner is gone soon after its
    /// join, not at the instant it returns (seen as one spinner too many on a loaded machine).
    fn spinner_threads_settled(expected: usize) -> usize {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let now = spinner_threads();
            if now == expected || Instant::now() >= deadline {
                return now;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Threads of this process named like spinners.
    fn spinner_threads() -> usize {
        std::fs::read_dir("/proc/self/task")
            .unwrap()
            .flatten()
            .filter(|t| {
                std::fs::read_to_string(t.path().join("comm"))
                    .is_ok_and(|c| c.starts_with("nl-awake-"))
            })
            .count()
    }

    #[test]
    fn spinners_run_pinned_at_sched_idle_and_stop_when_dropped() {
        let _serial = one_at_a_time();
        let cpus = this_machines_cpus();
        let awake = KeepAwake::start(&cpus).unwrap();
        assert_eq!(awake.cpus(), cpus);
        let threads = awake.threads();
        for &(cpu, tid) in &threads {
            assert!(tid > 0);
            assert_eq!(affinity(tid), [cpu], "spinner of CPU {cpu}");
            // SAFETY: sched_getscheduler has no memory preconditions; `tid` is a live thread.
            assert_eq!(unsafe { libc::sched_getscheduler(tid) }, libc::SCHED_IDLE);
        }
        // Each spinner gets CPU time: the test's own threads sleep, so every spinner's CPU is
        // idle most of the time, unless the machine is busy with other work; wait long enough
        // for a SCHED_IDLE thread to get some.
        let deadline = Instant::now() + Duration::from_secs(10);
        for &(cpu, tid) in &threads {
            let first = cpu_time_ns(tid);
            while cpu_time_ns(tid) == first {
                assert!(Instant::now() < deadline, "spinner of CPU {cpu} never ran");
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        assert_eq!(spinner_threads_settled(cpus.len()), cpus.len());
        drop(awake);
        assert_eq!(spinner_threads_settled(0), 0, "spinners 5 s after drop");
        for &(cpu, tid) in &threads {
            assert!(
                !std::path::Path::new(&format!("/proc/self/task/{tid}")).exists(),
                "spinner of CPU {cpu} still exists after drop"
            );
        }
    }

    #[test]
    fn cpus_are_deduplicated_and_sorted() {
        let _serial = one_at_a_time();
        let cpus = this_machines_cpus();
        let mut twice: Vec<usize> = cpus.iter().rev().chain(cpus.iter()).copied().collect();
        twice.push(cpus[0]);
        let awake = KeepAwake::start(&twice).unwrap();
        assert_eq!(awake.cpus(), cpus);
        assert_eq!(spinner_threads_settled(cpus.len()), cpus.len());
    }

    #[test]
    fn a_missing_cpu_is_an_error_and_leaves_no_spinner() {
        let _serial = one_at_a_time();
        let cpus = this_machines_cpus();
        let missing = cpus.last().unwrap() + 1000;
        // The first CPU's spinner starts, then the missing one fails: the first is stopped.
        let err = KeepAwake::start(&[cpus[0], missing]).unwrap_err();
        assert!(err.to_string().contains(&format!("CPU {missing}")), "{err}");
        assert_eq!(spinner_threads_settled(0), 0);
    }

    #[test]
    fn nothing_to_keep_awake_is_fine() {
        let awake = KeepAwake::start(&[]).unwrap();
        assert!(awake.cpus().is_empty());
    }

    #[test]
    fn the_engines_cpu_is_left_out() {
        let cpus = this_machines_cpus();
        let others = KeepAwake::cpus_except(cpus[0]);
        assert_eq!(others, cpus[1..]);
    }
}
