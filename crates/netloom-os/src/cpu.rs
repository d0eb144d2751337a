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
}
