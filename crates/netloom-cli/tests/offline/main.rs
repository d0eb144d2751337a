//! netloom's (the CLI's) integration tests that need no root and time nothing: the binary run as
//! a user runs it, on files, in virtual time. A module per area; they run on parallel threads.
//!
//! The CLI's tests are two binaries (and `sim_mpi`, which needs `--features mpi`): this one, and
//! `live` (tests/live/), whose tests need root and run one at a time. Each file under `tests/`
//! used to be a binary of its own, linked against every crate of the workspace, and those links
//! made most of a test build. `cargo test -p netloom --test offline cli::` runs one module.
//!
//! `sim_processes` belongs here though one of its tests makes a network namespace as root: an
//! unnamed one of its own (`unshare --net`), which nothing else sees, for a run in virtual
//! time whose report must not change.

#[path = "../common/mod.rs"]
mod common;

mod bad_mtu;
mod capacity;
mod cli;
mod cluster_from_pods;
mod docs;
mod hostile_input;
mod hostile_scale;
mod import_sim;
mod partition;
mod sim_capture;
mod sim_processes;
mod traffic_spec_fuzz;
