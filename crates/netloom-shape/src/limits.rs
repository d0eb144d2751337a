//! What each unprivileged user may ask of the shaping daemon (links, pipes, requests per second,
//! kernel rules, and the packets and memory it holds for them), read from a TOML file; root has
//! no limit (docs/shape.md, docs/limits.md).

use crate::shaper::Quota;
use netloom_time::{Duration, Instant};
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// One user's limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// Links (rules, in the paper's words) the user may have at once.
    pub rules: usize,
    /// Pipes over all of the user's links (IN and OUT count two, SHARED one).
    pub pipes: usize,
    /// Requests of any kind (set, delete, show) per second.
    pub requests_per_second: u32,
    /// iptables rules one link may make (`kernel::lines`: protocols × addresses × port ranges
    /// × directions), so no request makes the kernel's tables (and the daemon's copy of them)
    /// large.
    pub kernel_rules_per_request: usize,
    /// iptables rules over all of the user's links.
    pub kernel_rules: usize,
    /// Packets the user's pipes hold at once: each stays in the kernel's queue, which all
    /// users share, until its exit.
    pub held_packets: u64,
    /// Bytes of those packets (the kernel's memory).
    pub held_bytes: u64,
    /// Bytes of the user's packets the daemon keeps a copy of (the whole packets of pipes that
    /// mark CE or duplicate, and the duplicates until they are sent).
    pub memory: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            rules: 16,
            pipes: 32,
            requests_per_second: 20,
            kernel_rules_per_request: 256,
            kernel_rules: 1024,
            held_packets: 4096,
            held_bytes: 16 << 20,
            memory: 16 << 20,
        }
    }
}

impl Limits {
    /// What the user's pipes may hold at once.
    pub fn quota(&self) -> Quota {
        Quota {
            packets: self.held_packets,
            bytes: self.held_bytes,
            memory: self.memory,
        }
    }
}

/// The limits file: `[default]` for every user, `[users.UID]` for one.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    default: Limits,
    /// By uid (TOML's keys are strings; each is checked to be a number at load).
    #[serde(default)]
    users: BTreeMap<String, Limits>,
}

/// Why the limits file could not be read. Each message starts with the file's path.
#[derive(Debug, thiserror::Error)]
pub enum LimitsError {
    /// The file exists but could not be read.
    #[error("{}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: netloom_topo::read::ReadError,
    },
    /// The file is not TOML of the limits' tables and keys.
    #[error(
        "{}: {} (valid: [default] and [users.UID] with rules, pipes, requests_per_second, kernel_rules_per_request, kernel_rules, held_packets, held_bytes, memory)",
        path.display(),
        error.message()
    )]
    Parse {
        /// The file.
        path: PathBuf,
        /// The TOML parser's error; only its message is shown (not a source: its own
        /// `Display` quotes the file).
        error: toml::de::Error,
    },
    /// A `[users.KEY]` whose key is not a uid.
    #[error("{}: [users.{key}]: a user is named by their uid, a number", path.display())]
    UserKey {
        /// The file.
        path: PathBuf,
        /// The key as written.
        key: String,
    },
}

/// The limits file changed and its new version could not be read; the limits read before stay.
#[derive(Debug, thiserror::Error)]
#[error("{0}; the limits read before stay until the file is fixed")]
pub struct ReloadError(#[source] pub LimitsError);

/// A request a user's limits do not allow.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "limit: uid {uid} may have at most {limit} {what}; `{}` under [users.{uid}] or [default] in {} raises it",
    what.replace(' ', "_"),
    file.display()
)]
pub struct LimitExceeded {
    /// The user.
    pub uid: u32,
    /// What they have too much of: "rules", "pipes", "requests per second", "kernel rules per
    /// request" or "kernel rules" (its key is the same with underscores).
    pub what: &'static str,
    /// Their limit of it.
    pub limit: u64,
    /// The limits file, where it can be raised.
    pub file: PathBuf,
}

/// The limits of every user, where they came from, and each user's recent requests.
#[derive(Debug)]
pub struct Tenancy {
    file: File,
    path: PathBuf,
    /// The file's modification time when read (`None`: it did not exist), to notice a change.
    modified: Option<std::time::SystemTime>,
    /// Per user: the start of the current one-second window and the requests made in it.
    windows: HashMap<u32, (Instant, u32)>,
}

/// What a user would hold once a request is done, checked against their limits before anything
/// changes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    /// Links.
    pub rules: usize,
    /// Pipes over all links.
    pub pipes: usize,
    /// iptables rules the request's link makes.
    pub kernel_rules_per_request: usize,
    /// iptables rules over all links.
    pub kernel_rules: usize,
}

/// The limits file: `$NETLOOM_SHAPE_CONFIG`, else `/etc/netloom/shape.toml`.
pub fn config_path() -> PathBuf {
    std::env::var_os("NETLOOM_SHAPE_CONFIG")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/etc/netloom/shape.toml"))
}

fn modified(path: &Path) -> Option<std::time::SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

impl Tenancy {
    /// Reads the limits at `path`; a file that does not exist means the defaults.
    pub fn load(path: &Path) -> Result<Tenancy, LimitsError> {
        let modified = modified(path);
        use netloom_topo::read::{read_text, ReadError, SHAPE_LIMITS};
        let file = match read_text(path, SHAPE_LIMITS) {
            Ok(text) => toml::from_str(&text).map_err(|error| LimitsError::Parse {
                path: path.to_path_buf(),
                error,
            })?,
            Err(ReadError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => File::default(),
            Err(source) => {
                return Err(LimitsError::Read {
                    path: path.to_path_buf(),
                    source,
                })
            }
        };
        if let Some(key) = file.users.keys().find(|k| k.parse::<u32>().is_err()) {
            return Err(LimitsError::UserKey {
                path: path.to_path_buf(),
                key: key.clone(),
            });
        }
        Ok(Tenancy {
            file,
            path: path.to_path_buf(),
            modified,
            windows: HashMap::new(),
        })
    }

    /// Reads the file again if its modification time changed since it was read (or it came or
    /// went): the daemon calls this on every request, so an edit applies from the next one,
    /// without a restart or a signal. A file that no longer parses changes nothing and its
    /// error is returned (the limits read before stay); request counts are kept.
    pub fn reload_if_changed(&mut self) -> Result<bool, ReloadError> {
        if modified(&self.path) == self.modified {
            return Ok(false);
        }
        let fresh = Tenancy::load(&self.path).map_err(ReloadError)?;
        (self.file, self.modified) = (fresh.file, fresh.modified);
        Ok(true)
    }

    /// What the pipes of `uid` may hold at once; root has no quota.
    pub fn quota(&self, uid: u32) -> Option<Quota> {
        (uid != crate::classifier::ROOT).then(|| self.limits(uid).quota())
    }

    fn limits(&self, uid: u32) -> Limits {
        *self
            .file
            .users
            .get(&uid.to_string())
            .unwrap_or(&self.file.default)
    }

    fn exceeded(&self, uid: u32, what: &'static str, limit: u64) -> LimitExceeded {
        LimitExceeded {
            uid,
            what,
            limit,
            file: self.path.clone(),
        }
    }

    /// Counts a request of `uid` at `now`; an error once the user is past their rate.
    pub fn admit(&mut self, uid: u32, now: Instant) -> Result<(), LimitExceeded> {
        if uid == crate::classifier::ROOT {
            return Ok(());
        }
        let limit = self.limits(uid).requests_per_second;
        let window = self.windows.entry(uid).or_insert((now, 0));
        if now.0.saturating_sub(window.0 .0) >= Duration::from_secs(1).0 {
            *window = (now, 0);
        }
        window.1 += 1;
        match window.1 > limit {
            true => Err(self.exceeded(uid, "requests per second", limit.into())),
            false => Ok(()),
        }
    }

    /// Whether `uid` may hold `rules` links with `pipes` pipes in all.
    pub fn allow(&self, uid: u32, rules: usize, pipes: usize) -> Result<(), LimitExceeded> {
        self.allow_all(
            uid,
            Usage {
                rules,
                pipes,
                ..Usage::default()
            },
        )
    }

    /// Whether `uid` may hold what `usage` counts.
    pub fn allow_all(&self, uid: u32, usage: Usage) -> Result<(), LimitExceeded> {
        if uid == crate::classifier::ROOT {
            return Ok(());
        }
        let limits = self.limits(uid);
        let checks = [
            ("rules", usage.rules, limits.rules),
            ("pipes", usage.pipes, limits.pipes),
            (
                "kernel rules per request",
                usage.kernel_rules_per_request,
                limits.kernel_rules_per_request,
            ),
            ("kernel rules", usage.kernel_rules, limits.kernel_rules),
        ];
        match checks.into_iter().find(|(_, have, limit)| have > limit) {
            Some((what, _, limit)) => Err(self.exceeded(uid, what, limit as u64)),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The limits of `text`, through a file of its own (tests run in parallel).
    fn tenancy(text: &str) -> Result<Tenancy, LimitsError> {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let name = format!("limits-{}-{n}.toml", std::process::id());
        let path = std::env::temp_dir().join(name);
        std::fs::write(&path, text).unwrap();
        let t = Tenancy::load(&path);
        let _ = std::fs::remove_file(&path);
        t
    }

    #[test]
    fn a_users_section_overrides_the_default_and_root_has_no_limit() {
        let t = tenancy("[default]\nrules = 2\n[users.1001]\nrules = 5\npipes = 6\n").unwrap();
        assert!(t.allow(1002, 2, 4).is_ok());
        let e = t.allow(1002, 3, 4).unwrap_err().to_string();
        assert!(
            e.contains("at most 2 rules") && e.contains("[users.1002]"),
            "{e}"
        );
        assert!(t.allow(1001, 5, 6).is_ok());
        assert!(t
            .allow(1001, 5, 7)
            .unwrap_err()
            .to_string()
            .contains("at most 6 pipes"));
        assert!(t.allow(0, 1000, 1000).is_ok());
    }

    #[test]
    fn kernel_rules_are_limited_per_request_and_in_all_and_the_quota_is_read() {
        let t = tenancy(
            "[default]\nkernel_rules_per_request = 10\nkernel_rules = 15\nheld_packets = 7\nheld_bytes = 8\nmemory = 9\n",
        )
        .unwrap();
        let usage = |request, all| Usage {
            rules: 1,
            pipes: 1,
            kernel_rules_per_request: request,
            kernel_rules: all,
        };
        assert!(t.allow_all(1001, usage(10, 15)).is_ok());
        let e = t.allow_all(1001, usage(11, 11)).unwrap_err().to_string();
        assert!(
            e.contains("at most 10 kernel rules per request")
                && e.contains("`kernel_rules_per_request`"),
            "{e}"
        );
        let e = t.allow_all(1001, usage(8, 16)).unwrap_err().to_string();
        assert!(e.contains("at most 15 kernel rules;"), "{e}");
        assert!(t.allow_all(0, usage(180_000, 180_000)).is_ok());
        assert_eq!(
            t.quota(1001),
            Some(Quota {
                packets: 7,
                bytes: 8,
                memory: 9
            })
        );
        assert_eq!(t.quota(0), None);
    }

    #[test]
    fn requests_past_the_rate_are_refused_until_the_next_second() {
        let mut t = tenancy("[default]\nrequests_per_second = 3\n").unwrap();
        let ms = |n: u64| Instant(n * 1_000_000);
        for i in 0..3 {
            assert!(t.admit(1001, ms(i)).is_ok());
        }
        let e = t.admit(1001, ms(500)).unwrap_err().to_string();
        assert!(
            e.contains("3 requests per second") && e.contains("requests_per_second"),
            "{e}"
        );
        assert!(
            t.admit(1002, ms(500)).is_ok(),
            "another user has their own count"
        );
        assert!(t.admit(1001, ms(1000)).is_ok());
    }

    #[test]
    fn a_missing_file_gives_the_defaults_and_a_bad_key_is_named() {
        let t = Tenancy::load(Path::new("/nonexistent/shape.toml")).unwrap();
        assert_eq!(t.limits(1001), Limits::default());
        let e = tenancy("[default]\nrule = 2\n").unwrap_err().to_string();
        assert!(e.contains("rule") && e.contains("valid:"), "{e}");
        let e = tenancy("[users.alice]\nrules = 2\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("[users.alice]") && e.contains("uid"), "{e}");
    }

    #[test]
    fn a_limits_file_that_is_a_device_is_refused_not_read_until_memory_runs_out() {
        let e = Tenancy::load(Path::new("/dev/zero"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("/dev/zero") && e.contains("a character device") && e.contains("1 MiB"),
            "{e}"
        );
    }

    #[test]
    fn an_edited_file_is_read_again_and_a_broken_edit_keeps_the_old_limits() {
        let path = std::env::temp_dir().join(format!("limits-reload-{}.toml", std::process::id()));
        std::fs::write(&path, "[default]\nrules = 1\n").unwrap();
        let mut t = Tenancy::load(&path).unwrap();
        assert!(!t.reload_if_changed().unwrap());
        assert!(t.allow(1001, 2, 2).is_err());
        // Same size, new time (a coarse clock could give the same second otherwise).
        let touch = |text: &str, secs: u64| {
            std::fs::write(&path, text).unwrap();
            let at = std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs);
            std::fs::File::options()
                .write(true)
                .open(&path)
                .unwrap()
                .set_modified(at)
                .unwrap();
        };
        touch("[default]\nrules = 3\n", 1_000_000);
        assert!(t.reload_if_changed().unwrap());
        assert!(t.allow(1001, 3, 3).is_ok());
        touch("[default]\nrulez = 9\n", 2_000_000);
        let e = t.reload_if_changed().unwrap_err().to_string();
        assert!(e.contains("rulez") && e.contains("read before stay"), "{e}");
        assert!(t.allow(1001, 3, 3).is_ok() && t.allow(1001, 4, 4).is_err());
        std::fs::remove_file(&path).unwrap();
        // Gone: the defaults.
        assert!(t.reload_if_changed().unwrap());
        assert_eq!(t.limits(1001), Limits::default());
    }
}
