//! Writing a command's result to standard output by one rule: a closed pipe (`| head`) ends it
//! quietly, any other failure (a full disk, `> /dev/full`) is an error, never a panic: `write`,
//! and the `out!` and `outln!` macros that every command prints with instead of `print!` and
//! `println!`; and `say`, a line of news on standard error that a closed stderr never turns into
//! an error.

use anyhow::{Context, Result};
use std::io::Write;

/// Writes `text` to standard output and flushes it. A reader that went away is no error: a
/// command with SIGPIPE's default action ends by it before this sees it, and one that ignores
/// SIGPIPE to finish a teardown first (`run`, `web`) then ends as quietly. Any other failure
/// is: the result asked for was not delivered.
pub fn write(text: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        written => written.context("writing to standard output"),
    }
}

/// Writes a line to stderr, ignoring a failure: while hosts are up, a closed stderr must not
/// end the run (eprintln! would panic) before its teardown.
pub fn say(line: std::fmt::Arguments) {
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// `print!` that returns the error of a standard output that cannot be written, for `?`.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::stdout::write(&format!($($arg)*))
    };
}

/// `println!` that returns the error of a standard output that cannot be written, for `?`.
macro_rules! outln {
    () => {
        $crate::stdout::write("\n")
    };
    ($($arg:tt)*) => {
        $crate::stdout::write(&(format!($($arg)*) + "\n"))
    };
}
