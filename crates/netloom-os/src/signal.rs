//! Stop signals (SIGINT, SIGTERM, SIGHUP) turned into a flag the real-time driver polls.

use crate::OsError;
use std::sync::atomic::{AtomicBool, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_stop(_signal: libc::c_int) {
    // An atomic store is async-signal-safe; all other work happens in the driver's loop.
    STOP.store(true, Ordering::SeqCst);
}

/// Installs handlers for SIGINT, SIGTERM and SIGHUP that set the returned flag. Without
/// SA_RESTART, so a blocking call (`Poller::wait`) returns early when one arrives.
pub fn install_stop_handler() -> Result<&'static AtomicBool, OsError> {
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: sigaction is plain old data; all-zero is a valid value (empty mask, no flags).
        let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
        action.sa_sigaction = on_stop as extern "C" fn(libc::c_int) as libc::sighandler_t;
        // SAFETY: `action` is live, and `on_stop` only does an async-signal-safe atomic store.
        if unsafe { libc::sigaction(signal, &action, std::ptr::null_mut()) } != 0 {
            return Err(OsError::last(format!(
                "install a handler for signal {signal}"
            )));
        }
    }
    Ok(&STOP)
}

/// Restores the default action of SIGPIPE (terminate quietly), which the Rust runtime sets to
/// "ignore": a command whose output is piped into `head` should end, not panic on a write error.
pub fn restore_default_sigpipe() {
    // SAFETY: setting a signal's disposition to SIG_DFL has no memory preconditions.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
}
