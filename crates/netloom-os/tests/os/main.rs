//! netloom-os's integration tests: testbeds, clean and exec as root, and the foreground wait.
//!
//! One test binary per crate: `tests/<crate without "netloom-">/main.rs`, a module per area and
//! shared set-up in `common`. Each file under `tests/` used to be a binary of its own, linked
//! against the crate and everything it depends on, and those links made most of a test build.
//!
//! The modules' tests run on parallel threads of one process. The root tests share one registry
//! directory, set once (`common::run_dir`); a wait in the foreground installs the process's
//! signal handlers, which one wait may hold at a time: each test that waits so holds
//! `common::SIGNAL_HANDLERS`.

mod clean;
mod common;
mod foreground;
mod testbed;
