//! Writing a command's result to standard output as an error when it cannot be written (a full
//! disk, `> /dev/full`), where `print!` panics: `write`, and the `out!` and `outln!` macros that
//! every command prints with instead of `print!` and `println!`.

use anyhow::{Context, Result};
use std::io::Write;

/// Writes `text` to standard output and flushes it.
pub fn write(text: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .context("writing to standard output")
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
