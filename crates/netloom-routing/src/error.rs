//! What can go wrong, each message naming the router and, for a missing program, the Debian
//! package that installs it.

use std::path::PathBuf;

/// An error of routing daemons: bad input found before anything starts, or a daemon that
/// would not start or stop.
#[derive(Debug, thiserror::Error)]
pub enum RoutingError {
    /// A routing suite's programs are not on the machine.
    #[error("router {router}: {what} is not installed ({path} is missing); install Debian's package {package}: apt-get install {package}")]
    NotInstalled {
        /// The router that needs it.
        router: String,
        /// The suite ("FRR", "BIRD").
        what: &'static str,
        /// The program looked for.
        path: String,
        /// The Debian package that installs it.
        package: &'static str,
    },
    /// The router's description cannot be configured (e.g. BGP without an AS number).
    #[error("router {router}: {reason}")]
    Spec {
        /// The router.
        router: String,
        /// Why, and what would be valid.
        reason: String,
    },
    /// The user's configuration file is missing or the daemon's own checker refuses it.
    #[error("router {router}: configuration {}: {reason}", path.display())]
    Config {
        /// The router.
        router: String,
        /// The user's file.
        path: PathBuf,
        /// What the checker said, verbatim.
        reason: String,
    },
    /// A daemon did not start, or refused its configuration once started.
    #[error("router {router}: {what}; see the logs in {}", dir.display())]
    Daemon {
        /// The router.
        router: String,
        /// What failed.
        what: String,
        /// The router's directory, where its daemons' logs are.
        dir: PathBuf,
    },
    /// A file or directory of the router could not be made or read.
    #[error("router {router}: {what}: {source}")]
    Io {
        /// The router.
        router: String,
        /// What was being done.
        what: String,
        /// Why it failed.
        source: std::io::Error,
    },
}
