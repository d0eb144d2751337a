//! CPU placement and timer precision for the real-time driver's threads.

use crate::OsError;

/// Sets the calling thread's timer slack (PR_SET_TIMERSLACK): how late the kernel may fire its
/// timers to batch wake-ups (default 50 µs). 0 would mean "back to the default", so it is raised
/// to 1 ns, the most precise setting.
pub fn set_timer_slack_ns(ns: u64) {
    // SAFETY: PR_SET_TIMERSLACK takes one integer argument and touches no memory of ours. It
    // cannot fail for a value that fits in an unsigned long, so the result is not checked.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns.max(1) as libc::c_ulong, 0, 0, 0) };
}

/// Pins the calling thread to CPU `cpu` (sched_setaffinity).
pub fn pin_current_thread(cpu: usize) -> Result<(), OsError> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(OsError::io(
            format!("pin a thread to CPU {cpu}"),
            std::io::Error::from_raw_os_error(libc::EINVAL),
        ));
    }
    // SAFETY: cpu_set_t is a plain bit array; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `cpu` is below CPU_SETSIZE, checked above.
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: `set` is a live cpu_set_t of the size passed; pid 0 means the calling thread.
    if unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) } != 0 {
        return Err(OsError::last(format!(
            "pin a thread to CPU {cpu} (does this machine have it?)"
        )));
    }
    Ok(())
}

/// Gives the calling thread real-time priority `priority` (SCHED_FIFO, 1–99): it then runs as
/// soon as it is woken, ahead of every normal process. A driver that sleeps between deadlines
/// needs this on a small machine, or the applications under test delay it by whole scheduler
/// time slices (milliseconds). A thread that never sleeps must not have it: the kernel's
/// real-time throttling would stop it for 50 ms of every second.
pub fn set_realtime_priority(priority: u8) -> Result<(), OsError> {
    let param = libc::sched_param {
        sched_priority: libc::c_int::from(priority.clamp(1, 99)),
    };
    // SAFETY: `param` is a live sched_param; pid 0 means the calling thread.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } != 0 {
        return Err(OsError::last(format!(
            "give the driver real-time priority {priority} (SCHED_FIFO needs root)"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pinning_to_cpu_zero_works_and_a_missing_cpu_is_an_error() {
        std::thread::spawn(|| {
            pin_current_thread(0).unwrap();
            assert!(pin_current_thread(100_000).is_err());
            set_timer_slack_ns(1000);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn realtime_priority_is_granted_to_root() {
        // SAFETY: geteuid has no preconditions and cannot fail.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("SKIPPED realtime_priority_is_granted_to_root: not root");
            return;
        }
        std::thread::spawn(|| {
            set_realtime_priority(10).unwrap();
            // SAFETY: sched_getscheduler has no memory preconditions.
            assert_eq!(unsafe { libc::sched_getscheduler(0) }, libc::SCHED_FIFO);
        })
        .join()
        .unwrap();
    }
}
