//! Stop signals (SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2) turned into a flag the
//! real-time driver polls, and SIGPIPE kept from killing a process that has something to tear
//! down.

use crate::OsError;
use std::sync::atomic::{AtomicBool, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_stop(_signal: libc::c_int) {
    // An atomic store is async-signal-safe; all other work happens in the driver's loop.
    STOP.store(true, Ordering::SeqCst);
}

/// The signals whose default action would end the process without its teardown, and which
/// therefore stop a run the way SIGTERM does (SIGKILL and SIGSTOP cannot be caught).
const STOP_SIGNALS: [libc::c_int; 6] = [
    libc::SIGINT,
    libc::SIGTERM,
    libc::SIGHUP,
    libc::SIGQUIT,
    libc::SIGUSR1,
    libc::SIGUSR2,
];

/// Installs handlers for SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 that set the
/// returned flag, without SA_RESTART, so a blocking call (`Poller::wait`) returns early when one
/// arrives. SIGPIPE is ignored from then on: a write to a closed pipe (`netloom run | head -1`)
/// returns an error, which the caller ignores, instead of killing the process with its hosts up.
pub fn install_stop_handler() -> Result<&'static AtomicBool, OsError> {
    // SAFETY: setting a signal's disposition to SIG_IGN has no memory preconditions.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
    for signal in STOP_SIGNALS {
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
