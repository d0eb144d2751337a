//! Stop signals (SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGALRM, and every other that would end the
//! process by default) turned into a flag the
//! real-time driver polls, or passed on to a program run in the foreground, and SIGPIPE kept
//! from killing a process that has something to tear down.

use crate::OsError;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_stop(_signal: libc::c_int) {
    // An atomic store is async-signal-safe; all other work happens in the driver's loop.
    STOP.store(true, Ordering::SeqCst);
}

/// The signals whose default action would end the process without its teardown, and which
/// therefore stop a run the way SIGTERM does (SIGKILL and SIGSTOP cannot be caught): every
/// catchable one that terminates by default (signal(7)) but SIGPIPE, which is ignored instead,
/// and the faults a program does not raise at will (SIGSEGV, SIGBUS, ...), whose handler could
/// not go on; the real-time signals, which terminate too, come from `stop_signals`.
const STOP_SIGNALS: [libc::c_int; 13] = [
    libc::SIGINT,
    libc::SIGTERM,
    libc::SIGHUP,
    libc::SIGQUIT,
    libc::SIGUSR1,
    libc::SIGUSR2,
    libc::SIGALRM,
    libc::SIGVTALRM,
    libc::SIGPROF,
    libc::SIGIO,
    libc::SIGPWR,
    libc::SIGXCPU,
    libc::SIGXFSZ,
];

/// `STOP_SIGNALS` and every real-time signal the C library leaves to programs.
fn stop_signals() -> impl Iterator<Item = libc::c_int> {
    STOP_SIGNALS
        .into_iter()
        .chain(libc::SIGRTMIN()..=libc::SIGRTMAX())
}

/// Installs handlers for the stop signals (SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1,
/// SIGUSR2, SIGALRM and every other that would end the process by default) that set the
/// returned flag, without SA_RESTART, so a blocking call (`Poller::wait`) returns early when one
/// arrives. SIGPIPE is ignored from then on: a write to a closed pipe (`netloom run | head -1`)
/// returns an error, which the caller ignores, instead of killing the process with its hosts up.
pub fn install_stop_handler() -> Result<&'static AtomicBool, OsError> {
    // SAFETY: setting a signal's disposition to SIG_IGN has no memory preconditions.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
    for signal in stop_signals() {
        // `on_stop` only does an async-signal-safe atomic store.
        let handler = on_stop as extern "C" fn(libc::c_int) as libc::sighandler_t;
        set_handler(signal, handler, 0)?;
    }
    Ok(&STOP)
}

/// Makes `handler` (with `flags`) handle `signal`, and returns the disposition it replaces.
/// `handler` must make only async-signal-safe calls and have the signature `flags` asks for.
fn set_handler(
    signal: libc::c_int,
    handler: libc::sighandler_t,
    flags: libc::c_int,
) -> Result<libc::sigaction, OsError> {
    // SAFETY: sigaction is plain old data; all-zero is a valid value (empty mask, no flags).
    let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
    action.sa_sigaction = handler;
    action.sa_flags = flags;
    // SAFETY: as above.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: both pointers are to live sigaction values; the caller vouches for `handler`.
    if unsafe { libc::sigaction(signal, &action, &mut old) } != 0 {
        return Err(OsError::last(format!(
            "install a handler for signal {signal}"
        )));
    }
    Ok(old)
}

/// Restores the default action of SIGPIPE (terminate quietly), which the Rust runtime sets to
/// "ignore": a command whose output is piped into `head` should end, not panic on a write error.
pub fn restore_default_sigpipe() {
    // SAFETY: setting a signal's disposition to SIG_DFL has no memory preconditions.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
}

/// The process that signals are passed on to (0: none), read by `pass_on`.
static FORWARD_TO: AtomicI32 = AtomicI32::new(0);

/// The signal handler: passes `signal` on to `FORWARD_TO` when a process sent it. The kernel
/// marks the signals it raises itself (a terminal's Ctrl-C or hang-up, sent to the whole
/// foreground process group) with a positive `si_code`, `SI_KERNEL`; `kill`, `sigqueue` and
/// `tgkill` with zero or less. Makes only async-signal-safe calls.
extern "C" fn pass_on(signal: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    // SAFETY: with SA_SIGINFO the kernel passes a valid siginfo_t.
    let sent_by_process = unsafe { (*info).si_code } <= 0;
    let child = FORWARD_TO.load(Ordering::Relaxed);
    if sent_by_process && child > 0 {
        // SAFETY: kill is async-signal-safe; `child` is a child not yet reaped.
        unsafe { libc::kill(child, signal) };
    }
}

/// `STOP_SIGNALS` passed on to a child by `pass_on` for its lifetime, the previous handlers
/// restored afterwards.
pub(crate) struct Forwarding {
    saved: Vec<(libc::c_int, libc::sigaction)>,
}

impl Forwarding {
    pub(crate) fn new(child: libc::pid_t) -> Result<Self, OsError> {
        FORWARD_TO.store(child, Ordering::Relaxed);
        // `pass_on` has the SA_SIGINFO handler's signature; restarted, the wait goes on after a
        // signal is passed on.
        let handler = pass_on as extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void)
            as libc::sighandler_t;
        let mut forwarding = Forwarding { saved: Vec::new() };
        for signal in stop_signals() {
            let old = set_handler(signal, handler, libc::SA_SIGINFO | libc::SA_RESTART)?;
            forwarding.saved.push((signal, old));
        }
        Ok(forwarding)
    }
}

impl Drop for Forwarding {
    fn drop(&mut self) {
        for (signal, old) in &self.saved {
            // SAFETY: `old` is the disposition sigaction returned for this signal.
            unsafe { libc::sigaction(*signal, old, std::ptr::null_mut()) };
        }
        FORWARD_TO.store(0, Ordering::Relaxed);
    }
}
