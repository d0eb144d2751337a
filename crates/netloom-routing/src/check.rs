//! Checks made before anything starts: that the routing suite is installed, and that a user's
//! own configuration file exists and passes the suite's own checker.

use crate::daemons::{BIRD, FRR_DAEMONS, FRR_DIR, VTYSH};
use crate::RoutingError;
use netloom_topo::RoutingDaemon as Daemon;
use std::path::Path;
use std::process::{Command, Stdio};

/// Whether `daemon`'s programs are installed, for `router`; the error names the Debian package.
pub fn check_installation(router: &str, daemon: Daemon) -> Result<(), RoutingError> {
    let frr_programs = FRR_DAEMONS
        .iter()
        .map(|d| Path::new(FRR_DIR).join(d))
        .chain([Path::new(VTYSH).to_path_buf()]);
    let (what, missing) = match daemon {
        Daemon::Frr => ("FRR", frr_programs.into_iter().find(|p| !p.exists())),
        Daemon::Bird => (
            "BIRD",
            Some(Path::new(BIRD).to_path_buf()).filter(|p| !p.exists()),
        ),
    };
    match missing {
        None => Ok(()),
        Some(path) => Err(RoutingError::NotInstalled {
            router: router.to_string(),
            what,
            path: path.display().to_string(),
            package: package(daemon),
        }),
    }
}

/// Whether the user's configuration `path` for `router` exists and the suite accepts it: FRR's
/// `vtysh --dryrun -f`, BIRD's `bird -p`. The error carries the checker's own words.
pub fn check_user_config(router: &str, daemon: Daemon, path: &Path) -> Result<(), RoutingError> {
    let refused = |reason: String| RoutingError::Config {
        router: router.to_string(),
        path: path.to_path_buf(),
        reason,
    };
    if !path.is_file() {
        return Err(refused("no such file".into()));
    }
    check_installation(router, daemon)?;
    let mut command = match daemon {
        Daemon::Frr => {
            let mut c = Command::new(VTYSH);
            c.arg("--dryrun").arg("-f").arg(path);
            c
        }
        Daemon::Bird => {
            let mut c = Command::new(BIRD);
            c.arg("-p").arg("-c").arg(path);
            c
        }
    };
    let output = command
        .stdin(Stdio::null())
        .output()
        .map_err(|e| RoutingError::Io {
            router: router.to_string(),
            what: format!("run the configuration checker {:?}", command.get_program()),
            source: e,
        })?;
    if output.status.success() {
        return Ok(());
    }
    let said = [output.stderr, output.stdout]
        .iter()
        .map(|text| String::from_utf8_lossy(text).trim().to_string())
        .filter(|text| !text.is_empty())
        .collect::<Vec<_>>()
        .join("; ");
    Err(refused(format!(
        "{} refuses it: {}",
        match daemon {
            Daemon::Frr => "FRR (vtysh --dryrun)",
            Daemon::Bird => "BIRD (bird -p)",
        },
        if said.is_empty() {
            output.status.to_string()
        } else {
            said
        }
    )))
}

/// The Debian package that installs `daemon`.
fn package(daemon: Daemon) -> &'static str {
    match daemon {
        Daemon::Frr => "frr",
        Daemon::Bird => "bird2",
    }
}
