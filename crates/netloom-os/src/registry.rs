//! The registry of experiments: `/run/netloom/<name>/experiment.json`, written by the process
//! that owns an experiment, read by `exec`, `stop` and `clean` to find it. The registry is what
//! marks a namespace as netloom's: nothing outside it is ever removed.

use crate::{netns, OsError};
use serde::{Deserialize, Serialize};
use std::io;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::{Path, PathBuf};

const RECORD_FILE: &str = "experiment.json";

/// `/run/netloom`, or `$NETLOOM_RUN_DIR` when set (tests point it at a temporary directory).
pub fn registry_dir() -> PathBuf {
    std::env::var_os("NETLOOM_RUN_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/run/netloom"))
}

/// One registered experiment.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// The experiment's name, also the name of its registry directory.
    pub name: String,
    /// The process that owns the experiment (holds its TUN devices).
    pub pid: u32,
    /// That process's start time in clock ticks since boot, so a reused pid is not mistaken for
    /// it; absent in hand-written records.
    #[serde(default)]
    pub pid_start: Option<u64>,
    /// Seconds since the Unix epoch.
    pub created_unix: u64,
    /// Every host of the experiment, in topology order: the namespaces `stop` and `clean` may
    /// remove.
    pub hosts: Vec<RecordHost>,
    /// Whether the owner is still running; computed when read, never stored.
    #[serde(skip)]
    pub alive: bool,
}

/// One host of a registered experiment.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordHost {
    /// The host's name in the topology (and in every host's `/etc/hosts`).
    pub name: String,
    /// Its network namespace (`/run/netns/<ns>`).
    pub ns: String,
    /// Its IPv4 address on `nl0`, in 198.18.0.0/15.
    pub ipv4: Ipv4Addr,
    /// Its IPv6 address on `nl0`, in fd6e:6c00::/64.
    pub ipv6: Ipv6Addr,
}

impl Record {
    /// Whether the recorded owner is still running (and is the same process).
    fn owner_alive(&self) -> bool {
        netns::is_running(self.pid)
            && self
                .pid_start
                .is_none_or(|start| netns::start_ticks(self.pid) == Some(start))
    }
}

/// Every registered experiment, by name, with `alive` set.
pub fn running() -> Result<Vec<Record>, OsError> {
    list(&registry_dir())
}

/// The experiment and host for `netloom exec HOST`: the named experiment, or the only running
/// one. Several running and none named is an error listing them, and so is a named experiment
/// whose process is gone.
pub fn find_host(experiment: Option<&str>, host: &str) -> Result<(Record, RecordHost), OsError> {
    let record = find(&registry_dir(), experiment)?;
    if !record.alive {
        return Err(OsError::NotRunning {
            name: record.name,
            pid: record.pid,
        });
    }
    match record.hosts.iter().find(|h| h.name == host) {
        Some(found) => {
            let found = found.clone();
            Ok((record, found))
        }
        None => Err(OsError::UnknownHost {
            experiment: record.name.clone(),
            host: host.to_string(),
            hosts: record.hosts.iter().map(|h| h.name.clone()).collect(),
        }),
    }
}

/// The named experiment, or the only live one.
pub(crate) fn find(dir: &Path, experiment: Option<&str>) -> Result<Record, OsError> {
    let records = list(dir)?;
    let live: Vec<String> = records
        .iter()
        .filter(|r| r.alive)
        .map(|r| r.name.clone())
        .collect();
    match experiment {
        Some(name) => {
            records
                .into_iter()
                .find(|r| r.name == name)
                .ok_or_else(|| OsError::UnknownExperiment {
                    name: name.to_string(),
                    running: live,
                })
        }
        None => match live.len() {
            0 => Err(OsError::NoExperiment),
            1 => Ok(records.into_iter().find(|r| r.alive).expect("one is live")),
            _ => Err(OsError::Ambiguous { running: live }),
        },
    }
}

pub(crate) fn list(dir: &Path) -> Result<Vec<Record>, OsError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(OsError::io(format!("list {}", dir.display()), e)),
    };
    let mut records = Vec::new();
    for entry in entries.flatten() {
        // A directory without a readable record is a creation in progress or a crash during
        // one; `clean` deals with those, listing skips them.
        if let Ok(Some(record)) = read(&entry.path()) {
            records.push(record);
        }
    }
    records.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(records)
}

/// Reads the record in the experiment directory `dir`; `None` when there is none.
pub(crate) fn read(dir: &Path) -> Result<Option<Record>, OsError> {
    let file = dir.join(RECORD_FILE);
    let text = match std::fs::read_to_string(&file) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(OsError::io(format!("read {}", file.display()), e)),
    };
    let mut record: Record = serde_json::from_str(&text).map_err(|e| OsError::Registry {
        path: file.clone(),
        reason: e.to_string(),
    })?;
    record.alive = record.owner_alive();
    Ok(Some(record))
}

/// The outcome of trying to claim an experiment name.
pub(crate) enum Claim {
    /// The directory is ours now.
    Claimed(PathBuf),
    /// Someone holds the name: their record, if it could be read.
    Taken(Option<Record>),
}

/// Claims `name` by creating its directory; `mkdir` is atomic, so two processes starting the
/// same experiment cannot both succeed.
pub(crate) fn claim(dir: &Path, name: &str) -> Result<Claim, OsError> {
    std::fs::create_dir_all(dir)
        .map_err(|e| OsError::io(format!("create {}", dir.display()), e))?;
    let path = dir.join(name);
    match std::fs::create_dir(&path) {
        Ok(()) => Ok(Claim::Claimed(path)),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(Claim::Taken(read(&path)?)),
        Err(e) => Err(OsError::io(format!("create {}", path.display()), e)),
    }
}

/// Writes `record` into its claimed directory, atomically (a reader never sees half a file).
pub(crate) fn write(path: &Path, record: &Record) -> Result<(), OsError> {
    let text = serde_json::to_string_pretty(record).expect("a record always serializes");
    let tmp = path.join(format!("{RECORD_FILE}.tmp"));
    std::fs::write(&tmp, text + "\n")
        .and_then(|()| std::fs::rename(&tmp, path.join(RECORD_FILE)))
        .map_err(|e| OsError::io(format!("write {}", path.join(RECORD_FILE).display()), e))
}

/// Removes an experiment's registry directory; returns whether it existed.
pub(crate) fn remove(path: &Path) -> Result<bool, OsError> {
    match std::fs::remove_dir_all(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(OsError::io(format!("remove {}", path.display()), e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(name: &str, pid: u32) -> Record {
        Record {
            name: name.to_string(),
            pid,
            pid_start: None,
            created_unix: 0,
            hosts: vec![RecordHost {
                name: "h1".to_string(),
                ns: format!("nl-{name}-h1"),
                ipv4: Ipv4Addr::new(198, 18, 0, 1),
                ipv6: "fd6e:6c00::1".parse().unwrap(),
            }],
            alive: false,
        }
    }

    fn temp_dir(tag: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("netloom-registry-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    fn register(dir: &Path, r: &Record) {
        let Claim::Claimed(path) = claim(dir, &r.name).unwrap() else {
            panic!("name taken")
        };
        write(&path, r).unwrap();
    }

    #[test]
    fn find_picks_the_only_live_experiment_and_lists_several() {
        let dir = temp_dir("find");
        assert!(matches!(find(&dir, None), Err(OsError::NoExperiment)));
        let own = std::process::id();
        // A dead owner: our pid with a start time that cannot be ours.
        let mut dead = record("old", own);
        dead.pid_start = Some(u64::MAX);
        register(&dir, &dead);
        register(&dir, &record("a", own));
        assert_eq!(find(&dir, None).unwrap().name, "a");
        assert!(!find(&dir, Some("old")).unwrap().alive);
        register(&dir, &record("b", own));
        let err = find(&dir, None).unwrap_err().to_string();
        assert_eq!(
            err,
            "2 experiments are running (a, b); choose one with --name"
        );
        let err = find(&dir, Some("c")).unwrap_err().to_string();
        assert!(err.contains("running: a, b"), "{err}");
        assert!(matches!(claim(&dir, "a").unwrap(), Claim::Taken(Some(r)) if r.alive));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn records_round_trip_without_the_alive_flag() {
        let mut r = record("x", 1);
        r.alive = true;
        let text = serde_json::to_string(&r).unwrap();
        assert!(!text.contains("alive"));
        let back: Record = serde_json::from_str(&text).unwrap();
        assert_eq!(back, Record { alive: false, ..r });
    }
}
