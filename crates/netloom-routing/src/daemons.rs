//! A router's daemons, started in its network namespace and stopped with the run.
//!
//! Each router has a directory of its own (under the experiment's run directory) holding its
//! configuration, the daemons' pid files, control sockets and logs. Every daemon runs in a
//! private mount namespace where that directory is bind-mounted over `/run/frr` (BIRD:
//! `/run/bird`), the paths compiled into FRR and BIRD, so the daemons and a `vtysh` or `birdc`
//! started the same way (`socket_mount`, `netloom exec`) find each other with no option, and
//! routers never see each other's sockets or the machine's own FRR.

use crate::{bird_config, check_installation, frr_config, RouterSpec, RoutingError};
use netloom_topo::RoutingDaemon as Daemon;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Instant;

/// Where FRR's daemons live (Debian's `frr`).
pub(crate) const FRR_DIR: &str = "/usr/lib/frr";
/// FRR's shell.
pub(crate) const VTYSH: &str = "/usr/bin/vtysh";
/// BIRD's daemon (Debian's `bird2`).
pub(crate) const BIRD: &str = "/usr/sbin/bird";
/// The FRR daemons netloom may start, zebra first (the others connect to it).
pub(crate) const FRR_DAEMONS: [&str; 5] = ["zebra", "staticd", "ospfd", "ospf6d", "bgpd"];
/// Where FRR's daemons and vtysh look for each other's sockets (compiled into Debian's FRR).
pub const FRR_RUN_DIR: &str = "/run/frr";
/// Where birdc looks for BIRD's control socket (compiled into Debian's BIRD).
pub const BIRD_RUN_DIR: &str = "/run/bird";
/// How long a daemon may take to open its control socket.
const START_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
const FRR_CONFIG: &str = "frr.conf";
const BIRD_CONFIG: &str = "bird.conf";

/// The daemons of one router, running until `stop` (or drop, which stops them too).
#[derive(Debug)]
pub struct RouterDaemons {
    router: String,
    dir: PathBuf,
    children: Vec<(&'static str, Child)>,
}

/// The bind mount under which programs see router directory `dir`'s sockets, if daemons were
/// started there: `(dir, "/run/frr")` for FRR, `(dir, "/run/bird")` for BIRD. `netloom exec`
/// runs a user's command under it, so a plain `vtysh` or `birdc` talks to that router.
pub fn socket_mount(dir: &Path) -> Option<(PathBuf, &'static Path)> {
    [(FRR_CONFIG, FRR_RUN_DIR), (BIRD_CONFIG, BIRD_RUN_DIR)]
        .into_iter()
        .find(|(config, _)| dir.join(config).is_file())
        .map(|(_, target)| (dir.to_path_buf(), Path::new(target)))
}

impl RouterDaemons {
    /// Starts `spec`'s daemons in its namespace, with `dir` (which must not exist; its parent
    /// may not either) as the router's directory: writes the configuration (the user's file,
    /// or one generated from `spec`), starts the daemons and, for FRR, loads the configuration
    /// through `vtysh -b` so a refusal is an error here. On error, whatever started is stopped.
    pub fn start(spec: &RouterSpec, dir: &Path) -> Result<RouterDaemons, RoutingError> {
        let daemon = spec.routing.daemon;
        check_installation(&spec.name, daemon)?;
        let mut daemons = RouterDaemons {
            router: spec.name.clone(),
            dir: dir.to_path_buf(),
            children: Vec::new(),
        };
        let config = match &spec.routing.config {
            Some(path) => std::fs::read_to_string(path)
                .map_err(|e| daemons.io(format!("read {}", path.display()), e))?,
            None => match daemon {
                Daemon::Frr => frr_config(spec)?,
                Daemon::Bird => bird_config(spec, &format!("{BIRD_RUN_DIR}/bird.log"))?,
            },
        };
        if let Some(parent) = dir.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| daemons.io(format!("create {}", parent.display()), e))?;
        }
        std::fs::create_dir(dir).map_err(|e| daemons.io(format!("create {}", dir.display()), e))?;
        match daemon {
            Daemon::Frr => daemons.start_frr(spec, &config)?,
            Daemon::Bird => daemons.start_bird(spec, &config)?,
        }
        Ok(daemons)
    }

    /// The router's directory: configuration, sockets, pid files and one log per daemon
    /// (`zebra.log`, `ospfd.log`, ..., `vtysh.log`; BIRD: `bird.log`).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The daemons running, by program name.
    pub fn programs(&self) -> Vec<&'static str> {
        self.children.iter().map(|(name, _)| *name).collect()
    }

    /// Stops every daemon: SIGTERM, then SIGKILL to those still running after `grace`. The
    /// router's directory and its logs stay.
    pub fn stop(&mut self, grace: netloom_time::Duration) {
        for (_, child) in &self.children {
            // A daemon already gone is nothing to stop.
            let _ = netloom_os::terminate(child.id());
        }
        let deadline = Instant::now() + std::time::Duration::from_nanos(grace.as_nanos());
        while Instant::now() < deadline
            && self
                .children
                .iter_mut()
                .any(|(_, c)| matches!(c.try_wait(), Ok(None)))
        {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        for (_, mut child) in self.children.drain(..) {
            if matches!(child.try_wait(), Ok(None)) {
                let _ = child.kill();
            }
            let _ = child.wait();
        }
    }

    fn start_frr(&mut self, spec: &RouterSpec, config: &str) -> Result<(), RoutingError> {
        // The daemons drop root for user frr: the directory is theirs, its parent (the
        // experiment's, root's alone) is never on their path, the bind mount is.
        let (uid, gid) = system_user("frr").ok_or_else(|| RoutingError::Spec {
            router: self.router.clone(),
            reason:
                "FRR's user \"frr\" is missing from /etc/passwd; reinstall Debian's package frr"
                    .into(),
        })?;
        self.write(FRR_CONFIG, config)?;
        self.write("vtysh.conf", "service integrated-vtysh-config\n")?;
        std::os::unix::fs::chown(&self.dir, Some(uid), Some(gid))
            .map_err(|e| self.io(format!("give {} to user frr", self.dir.display()), e))?;
        std::fs::create_dir_all(FRR_RUN_DIR)
            .map_err(|e| self.io(format!("create {FRR_RUN_DIR}"), e))?;
        for program in needed_frr_daemons(config) {
            let mut argv = vec![
                format!("{FRR_DIR}/{program}"),
                // No TCP vty: vtysh uses the sockets.
                "--vty_port".into(),
                "0".into(),
                // The configuration comes through vtysh -b, whole, once all daemons are up.
                "--config_file".into(),
                "/dev/null".into(),
                "--log".into(),
                format!("file:{FRR_RUN_DIR}/{program}.log"),
            ];
            if program == "zebra" {
                // Debian's default: a netlink buffer large enough for a full table at once.
                argv.extend(["--nl-bufsize".into(), "90000000".into()]);
            }
            self.spawn(spec, program, &argv, FRR_RUN_DIR)?;
            self.wait_for_socket(program, &format!("{program}.vty"))?;
        }
        let argv = [
            VTYSH.to_string(),
            "-b".into(),
            "--config_dir".into(),
            FRR_RUN_DIR.into(),
        ];
        let mut load = self.command(spec, &argv, FRR_RUN_DIR)?;
        let log = self.log_file("vtysh")?;
        let status = load
            .stdin(Stdio::null())
            .stdout(self.clone_file(&log)?)
            .stderr(log)
            .status()
            .map_err(|e| self.io("run vtysh -b".into(), e))?;
        if !status.success() {
            let said = std::fs::read_to_string(self.dir.join("vtysh.log")).unwrap_or_default();
            return Err(self.failed(format!(
                "FRR refused its configuration ({status}): {}",
                said.trim()
            )));
        }
        Ok(())
    }

    fn start_bird(&mut self, spec: &RouterSpec, config: &str) -> Result<(), RoutingError> {
        self.write(BIRD_CONFIG, config)?;
        std::fs::create_dir_all(BIRD_RUN_DIR)
            .map_err(|e| self.io(format!("create {BIRD_RUN_DIR}"), e))?;
        let argv = [
            BIRD.to_string(),
            "-f".into(),
            "-c".into(),
            format!("{BIRD_RUN_DIR}/{BIRD_CONFIG}"),
            "-s".into(),
            format!("{BIRD_RUN_DIR}/bird.ctl"),
            "-P".into(),
            format!("{BIRD_RUN_DIR}/bird.pid"),
        ];
        self.spawn(spec, "bird", &argv, BIRD_RUN_DIR)?;
        self.wait_for_socket("bird", "bird.ctl")
    }

    /// `argv` in the router's namespace with its directory at `target`.
    fn command(
        &self,
        spec: &RouterSpec,
        argv: &[String],
        target: &str,
    ) -> Result<Command, RoutingError> {
        netloom_os::command_with_bind(&spec.namespace, argv, &self.dir, Path::new(target)).map_err(
            |e| RoutingError::Spec {
                router: self.router.clone(),
                reason: e.to_string(),
            },
        )
    }

    fn spawn(
        &mut self,
        spec: &RouterSpec,
        program: &'static str,
        argv: &[String],
        target: &str,
    ) -> Result<(), RoutingError> {
        let log = self.log_file(program)?;
        let child = self
            .command(spec, argv, target)?
            .stdin(Stdio::null())
            .stdout(self.clone_file(&log)?)
            .stderr(log)
            .spawn()
            .map_err(|e| self.io(format!("start {program}"), e))?;
        self.children.push((program, child));
        Ok(())
    }

    /// Waits until `program` (the last started) has made `socket` in the router's directory.
    fn wait_for_socket(&mut self, program: &str, socket: &str) -> Result<(), RoutingError> {
        let path = self.dir.join(socket);
        let deadline = Instant::now() + START_TIMEOUT;
        while !path.exists() {
            let (_, child) = self.children.last_mut().expect("a daemon was just started");
            if let Ok(Some(status)) = child.try_wait() {
                return Err(self.failed(format!("{program} exited at start ({status})")));
            }
            if Instant::now() >= deadline {
                return Err(self.failed(format!(
                    "{program} did not open {socket} within {} s",
                    START_TIMEOUT.as_secs()
                )));
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        Ok(())
    }

    fn write(&self, name: &str, text: &str) -> Result<(), RoutingError> {
        let path = self.dir.join(name);
        std::fs::write(&path, text).map_err(|e| self.io(format!("write {}", path.display()), e))
    }

    /// `<dir>/<program>.log`, appended to, readable by root alone.
    fn log_file(&self, program: &str) -> Result<File, RoutingError> {
        let path = self.dir.join(format!("{program}.log"));
        OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o640)
            .open(&path)
            .map_err(|e| self.io(format!("open {}", path.display()), e))
    }

    fn clone_file(&self, file: &File) -> Result<File, RoutingError> {
        file.try_clone()
            .map_err(|e| self.io("duplicate a log descriptor".into(), e))
    }

    fn io(&self, what: String, source: std::io::Error) -> RoutingError {
        RoutingError::Io {
            router: self.router.clone(),
            what,
            source,
        }
    }

    fn failed(&self, what: String) -> RoutingError {
        RoutingError::Daemon {
            router: self.router.clone(),
            what,
            dir: self.dir.clone(),
        }
    }
}

impl Drop for RouterDaemons {
    fn drop(&mut self) {
        if !self.children.is_empty() {
            self.stop(netloom_time::Duration::from_secs(2));
        }
    }
}

/// The FRR daemons a configuration needs, in start order: zebra always; staticd for static
/// routes, ospfd, ospf6d and bgpd for their `router` blocks.
fn needed_frr_daemons(config: &str) -> Vec<&'static str> {
    let starts = |prefix: &str| {
        config.lines().any(|l| {
            let l = l.trim_start();
            l.strip_prefix(prefix)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with(' '))
        })
    };
    FRR_DAEMONS
        .into_iter()
        .filter(|d| match *d {
            "zebra" => true,
            "staticd" => starts("ip route") || starts("ipv6 route"),
            "ospfd" => starts("router ospf"),
            "ospf6d" => starts("router ospf6"),
            "bgpd" => starts("router bgp"),
            _ => false,
        })
        .collect()
}

/// The uid and gid of system user `name`, from `/etc/passwd` (where Debian's packages put
/// their users).
fn system_user(name: &str) -> Option<(u32, u32)> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|line| {
        let fields: Vec<&str> = line.split(':').collect();
        (fields.len() >= 4 && fields[0] == name)
            .then(|| Some((fields[2].parse().ok()?, fields[3].parse().ok()?)))
            .flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn daemons_follow_the_configuration() {
        assert_eq!(needed_frr_daemons("hostname r1\n"), ["zebra"]);
        let both = "router ospf\n ospf router-id 1.1.1.1\nrouter ospf6\n";
        assert_eq!(needed_frr_daemons(both), ["zebra", "ospfd", "ospf6d"]);
        let bgp = "ip route 10.0.0.0/8 lo\nrouter bgp 65001\n";
        assert_eq!(needed_frr_daemons(bgp), ["zebra", "staticd", "bgpd"]);
        assert_eq!(needed_frr_daemons("router ospf6\n"), ["zebra", "ospf6d"]);
    }

    #[test]
    fn the_socket_mount_follows_the_configuration_file() {
        let dir =
            std::env::temp_dir().join(format!("netloom-routing-mount-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert_eq!(socket_mount(&dir), None);
        std::fs::write(dir.join(FRR_CONFIG), "").unwrap();
        assert_eq!(
            socket_mount(&dir),
            Some((dir.clone(), Path::new(FRR_RUN_DIR)))
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
