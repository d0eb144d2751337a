//! `wait_in_foreground`: a signal another process sends the waiter reaches the program, whose
//! own exit status comes back, and the waiter's handlers are gone afterwards. No root needed.

use crate::common::SIGNAL_HANDLERS;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// The signals this process catches, from the `SigCgt` mask in /proc/self/status.
fn caught() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let mask = status
        .lines()
        .find_map(|line| line.strip_prefix("SigCgt:"))
        .unwrap();
    u64::from_str_radix(mask.trim(), 16).unwrap()
}

fn wait_for(path: &Path) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !path.exists() {
        assert!(
            Instant::now() < deadline,
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

// One test for both signals, and the other modules' waits kept out: the handlers and the process
// they pass signals on to are the whole process's, so two waits must not overlap.
#[test]
fn a_signal_sent_to_the_waiter_reaches_the_program_and_its_status_comes_back() {
    let _handlers = SIGNAL_HANDLERS.lock().unwrap_or_else(|e| e.into_inner());
    let before = caught();
    for (signal, number, code) in [("TERM", libc::SIGTERM, 7), ("INT", libc::SIGINT, 8)] {
        let ready = std::env::temp_dir().join(format!(
            "netloom-foreground-{}-{signal}",
            std::process::id()
        ));
        let _ = std::fs::remove_file(&ready);
        // The program ends with its own code when the signal reaches it, and would otherwise
        // run for 30 s; it says it is ready once its trap is set.
        let script = format!(
            "trap 'exit {code}' {signal}; touch {}; i=0; while [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done",
            ready.display()
        );
        let mut command = Command::new("sh");
        command.args(["-c", &script]);
        // A shell cannot trap a signal that was ignored when it started (POSIX), and a script
        // without job control starts its background jobs with SIGINT ignored: a CI run started
        // that way failed here, the program running its full 30 s and ending with 0. So the
        // program starts with the signal's default action, as from a terminal, whatever this
        // test inherited.
        // SAFETY: one async-signal-safe call between fork and exec.
        unsafe {
            command.pre_exec(move || {
                libc::signal(number, libc::SIG_DFL);
                Ok(())
            });
        }
        let child = command.spawn().unwrap();
        let sender = {
            let ready = ready.clone();
            std::thread::spawn(move || {
                wait_for(&ready);
                let sent = Command::new("kill")
                    .args([&format!("-{signal}"), &std::process::id().to_string()])
                    .status()
                    .unwrap();
                assert!(sent.success());
            })
        };
        let started = Instant::now();
        let status = netloom_os::wait_in_foreground(child, "sh").unwrap();
        sender.join().unwrap();
        let _ = std::fs::remove_file(&ready);
        assert_eq!(status.code(), Some(code), "SIG{signal}: {status:?}");
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "SIG{signal} took {:?} to end the program",
            started.elapsed()
        );
        assert_eq!(caught(), before, "SIG{signal}: the handlers stayed");
    }
}
