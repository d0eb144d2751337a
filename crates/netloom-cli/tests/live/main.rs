//! netloom's (the CLI's) live tests: runs, namespaces, daemons and the machine's own traffic, as
//! root, measured with real programs. A module per area; each test skips, saying why, where it
//! cannot run.
//!
//! Every test takes the turn (`live_common::turn`) for its whole run, so they run one at a time
//! although they share one process: through `Lab::new`, or with `let _turn =
//! live_common::turn();` where it makes no `Lab` of its own. The turn is re-entrant on its
//! thread, so taking it twice does not deadlock, and `every_test_takes_the_turn` reads this
//! binary's modules for a test that takes it neither way. Labs are named after a tag of their
//! module's (`live_common::names`). `cargo test -p netloom --test live live_cluster::` runs one
//! module.

#[macro_use]
mod live_common;
mod slurm_lab;
mod ssh_lab;
mod web_common;

mod hostile_run;
mod hostile_shape;
mod live;
mod live_addresses;
mod live_calibrate;
mod live_cluster;
mod live_cpu;
mod live_hosts;
mod live_kernel;
mod live_programs;
mod live_repartition;
mod live_routers;
mod live_routing;
mod live_shape;
mod live_slurm;
mod live_stream;
mod web;
mod web_zoo;
