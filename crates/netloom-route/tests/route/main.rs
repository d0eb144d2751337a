//! netloom-route's integration tests: routes on hand-made and generated topologies.
//!
//! One test binary per crate: `tests/<crate without "netloom-">/main.rs`, a module per area and
//! shared set-up in `common`. Each file under `tests/` used to be a binary of its own, linked
//! against the crate and everything it depends on, and those links made most of a test build.
//!
//! The modules' tests run on parallel threads of one process, so none may change what the process
//! shares (environment, signal handlers, the current directory) or write a path another test
//! uses: temporary files are named after the test and the process.

mod generated;
mod routes;
