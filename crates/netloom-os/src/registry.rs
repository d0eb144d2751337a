//! The registry of experiments: `/run/netloom/<name>/experiment.json`, written by the process
//! that owns an experiment, read by `exec`, `stop` and `clean` to find it, with a mark per
//! namespace the owner made (`/run/netloom/<name>/netns/<ns>`) and the logs of detached runs.
//! A record is trusted only as far as it agrees with what netloom made: its owner holds the
//! experiment's directory open, and a namespace is removed only if it carries its mark.
//! Everything in it is root's alone (a 0700 directory, 0600 files, opened without following
//! symbolic links).

use crate::{netns, plan, OsError};
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

const RECORD_FILE: &str = "experiment.json";
/// The directory of an experiment's namespace marks.
const MARK_DIR: &str = "netns";

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
    /// Every kernel router of the experiment (a namespace each, with its plan addresses); absent
    /// in records of runs without.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub routers: Vec<RecordHost>,
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
    /// Its IPv4 address on `nl0`, in the run's address plan.
    pub ipv4: Ipv4Addr,
    /// Its IPv6 address on `nl0`, in fd6e:6c00::/64.
    pub ipv6: Ipv6Addr,
    /// The cgroup of its CPU limit, which programs started in it join; `None` without a limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cgroup: Option<std::path::PathBuf>,
}

impl Record {
    /// Every namespace of the experiment: its hosts', then its kernel routers'.
    pub fn namespaces(&self) -> impl Iterator<Item = &RecordHost> {
        self.hosts.iter().chain(&self.routers)
    }

    /// Whether the recorded owner is still running and is the process that made the experiment
    /// in `dir`: the same start time, and it holds `dir` open (as `hold` does), which no other
    /// process does. A record without a start time, or naming any other process, is not alive,
    /// so nothing signals that process.
    fn owner_alive(&self, dir: &Path) -> bool {
        self.pid_start
            .is_some_and(|start| netns::start_ticks(self.pid) == Some(start))
            && dir
                .canonicalize()
                .is_ok_and(|dir| netns::holds_open(self.pid, &dir))
    }

    /// Checks that the record is one netloom could have written in `dir`: its name is the
    /// directory's, and every namespace is `nl-<name>-<host>` of valid names, so nothing it
    /// lists leads outside `/run/netns` and `/etc/netns` or to another experiment's namespaces.
    fn check(&self, dir: &Path) -> Result<(), RecordError> {
        plan::check_experiment_name(&self.name)?;
        if dir.file_name() != Some(self.name.as_ref()) {
            return Err(RecordError::OtherDirectory {
                name: self.name.clone(),
            });
        }
        for host in self.namespaces() {
            plan::check_host_name(&host.name)?;
            let ns = plan::namespace_name(&self.name, &host.name);
            if host.ns != ns {
                return Err(RecordError::Namespace {
                    host: host.name.clone(),
                    ns: host.ns.clone(),
                    expected: ns,
                });
            }
        }
        Ok(())
    }
}

/// Why a record is not one netloom could have written in its directory (`Record::check`).
#[derive(Debug, thiserror::Error)]
enum RecordError {
    /// An experiment or host name that breaks the naming rules.
    #[error(transparent)]
    Name(#[from] OsError),
    /// The record's name is not its directory's.
    #[error("it names experiment {name:?}, not its directory's")]
    OtherDirectory {
        /// The name the record gives.
        name: String,
    },
    /// A host's namespace is not the one netloom gives it.
    #[error("host {host:?} has namespace {ns:?}; netloom names it {expected:?}")]
    Namespace {
        /// The host.
        host: String,
        /// The namespace the record gives it.
        ns: String,
        /// `nl-<experiment>-<host>`.
        expected: String,
    },
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
    let found = record.namespaces().find(|h| h.name == host).cloned();
    match found {
        Some(found) => Ok((record, found)),
        None => Err(OsError::UnknownHost {
            experiment: record.name.clone(),
            host: host.to_string(),
            hosts: record.namespaces().map(|h| h.name.clone()).collect(),
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
            plan::check_experiment_name(name)?;
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

/// Reads the record in the experiment directory `dir`; `None` when there is none. A record that
/// does not pass `Record::check` is an error, like one that does not parse.
pub(crate) fn read(dir: &Path) -> Result<Option<Record>, OsError> {
    let file = dir.join(RECORD_FILE);
    let text = match open_private(&file, Open::Read).and_then(io::read_to_string) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(OsError::io(format!("read {}", file.display()), e)),
    };
    let registry = |reason: String| OsError::Registry {
        path: file.clone(),
        reason,
    };
    let mut record: Record = serde_json::from_str(&text).map_err(|e| registry(e.to_string()))?;
    record.check(dir).map_err(|e| registry(e.to_string()))?;
    record.alive = record.owner_alive(dir);
    Ok(Some(record))
}

/// How `open_private` opens a file.
pub(crate) enum Open {
    /// Read an existing file.
    Read,
    /// Create a new file (0600); an existing one is an error (`AlreadyExists`), never truncated.
    CreateNew,
}

/// Opens a file of the registry without following a symbolic link in its last component, so a
/// link planted there cannot redirect a read or a write elsewhere.
pub(crate) fn open_private(path: &Path, how: Open) -> io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC);
    match how {
        Open::Read => options.read(true),
        Open::CreateNew => options.write(true).create_new(true).mode(0o600),
    };
    options.open(path)
}

/// Creates the registry directory `dir` if needed, and makes it root's alone (0700) if it is not
/// already: the records, marks and logs inside are for netloom's commands only.
fn prepare(dir: &Path) -> Result<(), OsError> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| OsError::io(format!("create {}", dir.display()), e))?;
    let meta = std::fs::symlink_metadata(dir)
        .map_err(|e| OsError::io(format!("inspect {}", dir.display()), e))?;
    if meta.permissions().mode() & 0o077 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| OsError::io(format!("make {} private (0700)", dir.display()), e))?;
    }
    Ok(())
}

/// The log of the detached run `name`: `<registry dir>/<name>.log`. The name is checked first,
/// so the path never leads out of the registry.
pub fn log_path(name: &str) -> Result<PathBuf, OsError> {
    plan::check_experiment_name(name)?;
    Ok(registry_dir().join(format!("{name}.log")))
}

/// Creates the log of a detached run `name`, new and readable by root only. A log left by a run
/// that ended is replaced; the log of a running experiment `name` is never touched: that is
/// `InUse`, found before any file is opened.
pub fn create_log(name: &str) -> Result<(PathBuf, File), OsError> {
    let path = log_path(name)?;
    let dir = registry_dir();
    if let Ok(record) = find(&dir, Some(name)) {
        if record.alive {
            return Err(OsError::InUse {
                name: record.name,
                pid: record.pid,
            });
        }
    }
    prepare(&dir)?;
    // Removing does not follow a link either: a planted one goes, not what it points to.
    match std::fs::remove_file(&path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => {
            return Err(OsError::io(format!("remove the old {}", path.display()), e))
        }
        _ => {}
    }
    // Two detaches of one name racing: the second finds the file and fails here, leaving the
    // first's log alone.
    let file = open_private(&path, Open::CreateNew).map_err(|e| match e.kind() {
        io::ErrorKind::AlreadyExists => OsError::InUse {
            name: name.to_string(),
            pid: 0,
        },
        _ => OsError::io(format!("create {}", path.display()), e),
    })?;
    Ok((path, file))
}

/// Opens an experiment's directory and keeps it open for the owner's life: the proof, checked
/// by `Record::owner_alive`, that a process is the experiment's owner and not some other
/// process whose pid a record names.
pub(crate) fn hold(path: &Path) -> Result<File, OsError> {
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| OsError::io(format!("open {}", path.display()), e))
}

/// Marks namespace `ns`, just made by the experiment in `path`, as netloom's: a file naming the
/// namespace's identity (device and inode of `/run/netns/<ns>`), which `clean` compares before
/// it removes anything.
pub(crate) fn mark_namespace(path: &Path, ns: &str) -> Result<(), OsError> {
    let dir = path.join(MARK_DIR);
    let file = dir.join(ns);
    let id = netns::identity(ns).ok_or_else(|| OsError::NoNamespace { ns: ns.to_string() })?;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)
        .and_then(|()| open_private(&file, Open::CreateNew))
        .and_then(|mut f| io::Write::write_all(&mut f, format!("{}:{}\n", id.0, id.1).as_bytes()))
        .map_err(|e| OsError::io(format!("write {}", file.display()), e))
}

/// Whether namespace `ns` of the experiment in `path` is netloom's to remove: it carries the
/// mark written when it was made, and, if it still exists, it is the same namespace (a
/// namespace made by hand under that name, or a record listing a namespace it did not make,
/// is not).
pub(crate) fn is_marked(path: &Path, ns: &str) -> bool {
    let Ok(text) =
        open_private(&path.join(MARK_DIR).join(ns), Open::Read).and_then(io::read_to_string)
    else {
        return false;
    };
    let mark = text
        .trim()
        .split_once(':')
        .and_then(|(dev, ino)| Some((dev.parse().ok()?, ino.parse().ok()?)));
    mark.is_some() && netns::identity(ns).is_none_or(|id| Some(id) == mark)
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
    plan::check_experiment_name(name)?;
    prepare(dir)?;
    let path = dir.join(name);
    match std::fs::DirBuilder::new().mode(0o700).create(&path) {
        Ok(()) => Ok(Claim::Claimed(path)),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(Claim::Taken(read(&path)?)),
        Err(e) => Err(OsError::io(format!("create {}", path.display()), e)),
    }
}

/// Writes `record` into its claimed directory, atomically (a reader never sees half a file).
pub(crate) fn write(path: &Path, record: &Record) -> Result<(), OsError> {
    let text = serde_json::to_string_pretty(record).expect("a record always serializes");
    let tmp = path.join(format!("{RECORD_FILE}.tmp"));
    let _ = std::fs::remove_file(&tmp);
    open_private(&tmp, Open::CreateNew)
        .and_then(|mut f| io::Write::write_all(&mut f, (text + "\n").as_bytes()))
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
                cgroup: None,
            }],
            routers: Vec::new(),
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
        let ours = |name: &str| Record {
            pid_start: netns::start_ticks(own),
            ..record(name, own)
        };
        // A dead owner: our pid with a start time that cannot be ours.
        let mut dead = record("old", own);
        dead.pid_start = Some(u64::MAX);
        register(&dir, &dead);
        register(&dir, &ours("a"));
        // Registered but not held open by us: a record naming a process that is not its owner.
        assert!(matches!(find(&dir, None), Err(OsError::NoExperiment)));
        let _a = hold(&dir.join("a")).unwrap();
        assert_eq!(find(&dir, None).unwrap().name, "a");
        assert!(!find(&dir, Some("old")).unwrap().alive);
        register(&dir, &ours("b"));
        let _b = hold(&dir.join("b")).unwrap();
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
    fn records_that_netloom_could_not_have_written_are_refused() {
        let dir = temp_dir("forged");
        let mut outside = record("x", 1);
        outside.hosts[0].ns = "../../etc".to_string();
        register(&dir, &outside);
        let err = read(&dir.join("x")).unwrap_err().to_string();
        assert!(
            err.contains(r#"namespace "../../etc"; netloom names it "nl-x-h1""#),
            "{err}"
        );
        // A kernel router's namespace is checked like a host's.
        let mut router = record("w", 1);
        router.routers = vec![RecordHost {
            ns: "nl-v-r1".to_string(),
            ..router.hosts[0].clone()
        }];
        router.routers[0].name = "r1".to_string();
        register(&dir, &router);
        let err = read(&dir.join("w")).unwrap_err().to_string();
        assert!(err.contains(r#"netloom names it "nl-w-r1""#), "{err}");
        // A record copied into another experiment's directory.
        let Claim::Claimed(other) = claim(&dir, "y").unwrap() else {
            panic!("name taken")
        };
        write(&other, &record("x", 1)).unwrap();
        let err = read(&other).unwrap_err().to_string();
        assert!(err.contains("not its directory's"), "{err}");
        assert!(claim(&dir, "../z").is_err());
        assert!(!dir.join("../z").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn registry_files_are_root_only_and_never_followed() {
        use std::os::unix::fs::PermissionsExt;
        let dir = temp_dir("private");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        register(&dir, &record("p", 1));
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&dir.join("p")), 0o700);
        assert_eq!(mode(&dir.join("p").join(RECORD_FILE)), 0o600);
        let target = dir.join("target");
        std::fs::write(&target, "precious").unwrap();
        let link = dir.join("p.log");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(open_private(&link, Open::CreateNew).is_err());
        assert!(open_private(&link, Open::Read).is_err());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "precious");
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
