//! The real-time driver: runs netloom's engine against the wall clock, reading hosts' packets,
//! moving their descriptors through the emulated network and writing each packet out at its
//! exit time, while measuring how late every release is. The OS side (namespaces, TUN) is behind
//! the `PacketIo` trait, so the loop is tested without root.

mod accuracy;
mod change;
mod clock;
pub mod control;
mod driver;
mod ip;
pub mod mailbox;
mod pool;
pub mod segment;
mod stats;
mod tun_io;

pub use accuracy::{Accuracy, AccuracyReport, Thresholds};
pub use clock::Clock;
pub use driver::{Driver, Framing, HostCounters, PacketIo, Precision};
pub use ip::{destination, Malformed};
pub use stats::Snapshot;
pub use tun_io::TunIo;
