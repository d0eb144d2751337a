//! Other processes' experiments: `stop` a running one, `clean` the leftovers of dead ones. Only
//! what a registry entry lists, and what carries the mark netloom put on it, is ever removed;
//! only an owner proven alive by `registry` is ever signalled.

use crate::registry::{self, Record};
use crate::{netns, OsError};
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// What `clean` removed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CleanReport {
    /// Names of the dead experiments whose leftovers were removed.
    pub experiments: Vec<String>,
    /// Network namespaces unmounted and deleted from `/run/netns`; those already gone are not
    /// listed.
    pub namespaces: Vec<String>,
    /// `/etc/netns/<ns>` directories (the hosts' hosts files) deleted.
    pub etc_dirs: Vec<PathBuf>,
    /// The namespaces of hosts whose CPU limit's cgroup was removed.
    pub cgroups: Vec<String>,
    /// Processes killed because they were still inside a namespace being removed.
    pub processes: Vec<u32>,
    /// Registry directories deleted: one per cleaned experiment, plus those of creations that
    /// died before writing a record and are over a minute old.
    pub registry_dirs: Vec<PathBuf>,
    /// What was left alone because a record claims it but netloom did not make it: a namespace
    /// without netloom's mark, or a record that netloom could not have written (with why).
    pub refused: Vec<String>,
}

impl CleanReport {
    /// Whether there is nothing to say: no experiment cleaned, no registry directory deleted,
    /// nothing refused (the other lists can only be non-empty when an experiment was cleaned).
    pub fn is_empty(&self) -> bool {
        self.experiments.is_empty() && self.registry_dirs.is_empty() && self.refused.is_empty()
    }
}

impl fmt::Display for CleanReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            return writeln!(f, "nothing to clean");
        }
        let list = |items: &[String]| {
            if items.is_empty() {
                "none".to_string()
            } else {
                items.join(", ")
            }
        };
        writeln!(f, "experiments: {}", list(&self.experiments))?;
        writeln!(f, "namespaces removed: {}", list(&self.namespaces))?;
        let pids: Vec<String> = self.processes.iter().map(u32::to_string).collect();
        writeln!(f, "processes killed: {}", list(&pids))?;
        for refused in &self.refused {
            writeln!(f, "left alone: {refused}")?;
        }
        Ok(())
    }
}

/// Removes the leftovers of every dead experiment (its owner is gone), or of the named one:
/// processes inside its namespaces, the namespaces, their CPU limits' cgroups, `/etc/netns`
/// directories, the registry entry.
/// Only namespaces listed in a registry entry and marked as made by it are touched; a record
/// netloom could not have written, and a listed namespace without the mark, are reported in
/// `refused` and left alone. Cleaning a running experiment is an error (`stop` it instead); cleaning a name that
/// is not registered does nothing.
pub fn clean(experiment: Option<&str>) -> Result<CleanReport, OsError> {
    clean_in(&registry::registry_dir(), experiment)
}

pub(crate) fn clean_in(dir: &Path, experiment: Option<&str>) -> Result<CleanReport, OsError> {
    if let Some(name) = experiment {
        crate::plan::check_experiment_name(name)?;
    }
    let mut report = CleanReport::default();
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(report),
        Err(e) => return Err(OsError::io(format!("list {}", dir.display()), e)),
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if experiment.is_some_and(|wanted| wanted != name) || !path.is_dir() {
            continue;
        }
        match registry::read(&path) {
            Ok(Some(record)) if record.alive => {
                if experiment.is_some() {
                    return Err(OsError::StillRunning {
                        name: record.name,
                        pid: record.pid,
                    });
                }
            }
            Ok(Some(record)) => {
                let (namespaces, unmarked): (Vec<String>, Vec<String>) = record
                    .namespaces()
                    .map(|h| h.ns.clone())
                    .partition(|ns| registry::is_marked(&path, ns));
                for ns in unmarked.into_iter().filter(|ns| netns::exists(ns)) {
                    report.refused.push(format!(
                        "namespace {ns} (listed by experiment {} but not made by it)",
                        record.name
                    ));
                }
                report.processes.extend(netns::kill_processes(&namespaces)?);
                for ns in &namespaces {
                    if netns::remove(ns)? {
                        report.namespaces.push(ns.clone());
                    }
                    if netns::remove_etc(ns)? {
                        report.etc_dirs.push(netns::etc_dir(ns));
                    }
                    // Found by the namespace's name, never by a path the record gives.
                    if crate::host_cpu::remove(ns)? {
                        report.cgroups.push(ns.clone());
                    }
                }
                registry::remove(&path)?;
                report.experiments.push(record.name);
                report.registry_dirs.push(path);
            }
            // No record: a creation that died before writing one, so nothing else was made; or
            // one that is starting right now, which a minute's grace leaves alone.
            Ok(None) => {
                let age = std::fs::metadata(&path)
                    .and_then(|m| m.modified())
                    .ok()
                    .and_then(|t| t.elapsed().ok());
                if age.is_some_and(|age| age > Duration::from_secs(60)) {
                    registry::remove(&path)?;
                    report.registry_dirs.push(path);
                }
            }
            // A record that netloom could not have written (or that does not parse) is trusted
            // for nothing: only the user can decide about it and what it lists. Cleaning it by
            // name is that error; cleaning everything reports it and goes on with the others.
            Err(err @ OsError::Registry { .. }) if experiment.is_none() => {
                report.refused.push(err.to_string());
            }
            Err(err) => return Err(err),
        }
    }
    Ok(report)
}

/// What tearing down one host may take, beyond `stop`'s fixed timeout: removing a namespace gets
/// slower as more exist (10,000 hosts took 12 s here: docs/performance.md, "10,000 hosts").
const STOP_PER_HOST: Duration = Duration::from_millis(5);

/// Stops a running experiment owned by another process (`netloom stop`): sends its owner SIGTERM
/// and waits up to `timeout`, plus `STOP_PER_HOST` for each of its hosts, for it to exit; then
/// removes whatever the owner left behind. With no name, the only running experiment. Returns
/// the experiment's record.
pub fn stop(experiment: Option<&str>, timeout: Duration) -> Result<Record, OsError> {
    let dir = registry::registry_dir();
    let record = registry::find(&dir, experiment)?;
    if record.alive {
        terminate(record.pid)?;
        let hosts = record.hosts.len() + record.routers.len();
        let timeout = timeout + STOP_PER_HOST * hosts as u32;
        let deadline = Instant::now() + timeout;
        // Until the owner has exited, not only removed its record: it writes its final report
        // after its teardown, and `stop` shows that report. Its record is alive only while it
        // runs, so the owner alone is watched: reading the record again (parsing every host and
        // listing every descriptor of the owner, a TUN device per host) took half a CPU at
        // 10,000 hosts, from the teardown it waits for (docs/performance.md, "10,000 hosts").
        let owner_running =
            || netns::is_running(record.pid) && netns::start_ticks(record.pid) == record.pid_start;
        while owner_running() {
            if Instant::now() >= deadline {
                return Err(OsError::StopTimeout {
                    name: record.name,
                    pid: record.pid,
                    seconds: timeout.as_secs(),
                });
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    clean_in(&dir, Some(&record.name))?;
    Ok(record)
}

/// Sends SIGTERM to `pid` (an experiment's owner, which then tears its experiment down). A
/// process that is already gone is not an error.
pub fn terminate(pid: u32) -> Result<(), OsError> {
    // SAFETY: kill has no memory preconditions.
    if unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) } != 0 {
        let err = std::io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::ESRCH) {
            return Err(OsError::io(format!("send SIGTERM to pid {pid}"), err));
        }
    }
    Ok(())
}
