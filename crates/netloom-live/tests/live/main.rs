//! netloom-live's integration tests: the driver and its workers in memory, and experiments as root.
//!
//! One test binary per crate: `tests/<crate without "netloom-">/main.rs`, a module per area and
//! shared set-up in `common`. Each file under `tests/` used to be a binary of its own, linked
//! against the crate and everything it depends on, and those links made most of a test build.
//!
//! The modules' tests run on parallel threads of one process. An experiment points
//! `NETLOOM_RUN_DIR` at a registry of its own, which a process has only one of at a time: each
//! live test holds `common::live_registry` for its whole run, so they run one at a time.

mod common;
mod driver;
mod experiment;
mod hostile;
mod workers;
