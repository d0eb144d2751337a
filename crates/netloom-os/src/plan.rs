//! The naming of namespaces and the limits of a host's interface: which names are valid, which
//! MTUs. The addresses hosts get are `AddressPlan`'s.

use crate::OsError;
use std::net::Ipv4Addr;

/// The MTU of `nl0` unless the experiment says otherwise.
pub const DEFAULT_MTU: u32 = 1500;
/// The smallest MTU allowed: IPv6 needs 1280 on every link.
pub const MIN_MTU: u32 = 1280;
/// The largest MTU allowed: an IPv4 or IPv6 packet without jumbogram options.
pub const MAX_MTU: u32 = 65535;

const NAME_MAX_LEN: usize = 63;

/// The network namespace of `host` in `experiment`: `nl-<experiment>-<host>`. The names are
/// not checked here; `check_experiment_name` and `check_host_name` do that.
pub fn namespace_name(experiment: &str, host: &str) -> String {
    format!("nl-{experiment}-{host}")
}

/// Checks an experiment name: 1 to 63 characters of `[A-Za-z0-9_.-]`, starting with a letter or
/// digit (it becomes part of namespace and directory names and of command lines).
pub fn check_experiment_name(name: &str) -> Result<(), OsError> {
    check_name("experiment", name)
}

/// Checks a host name like an experiment name; it must also not look like an IPv4 address, since
/// it is written into `/etc/hosts`.
pub fn check_host_name(name: &str) -> Result<(), OsError> {
    check_name("host", name)?;
    if name.parse::<Ipv4Addr>().is_ok() || name.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return Err(invalid("host", name, "a host name must not be a number or an address, because it is resolved through /etc/hosts"));
    }
    Ok(())
}

fn check_name(kind: &'static str, name: &str) -> Result<(), OsError> {
    if name.is_empty() || name.len() > NAME_MAX_LEN {
        return Err(invalid(
            kind,
            name,
            &format!("it must have 1 to {NAME_MAX_LEN} characters"),
        ));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')))
    {
        return Err(invalid(
            kind,
            name,
            &format!("{c:?} is not allowed; use letters, digits, '_', '.' and '-'"),
        ));
    }
    if !name.starts_with(|c: char| c.is_ascii_alphanumeric()) {
        return Err(invalid(
            kind,
            name,
            "it must start with a letter or a digit",
        ));
    }
    Ok(())
}

fn invalid(kind: &'static str, name: &str, reason: &str) -> OsError {
    OsError::InvalidName {
        kind,
        name: name.to_string(),
        reason: reason.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked() {
        assert_eq!(namespace_name("lab", "h1"), "nl-lab-h1");
        for good in ["h1", "core.r-2", "A_b", "1x"] {
            assert!(check_host_name(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "-x",
            ".",
            "..",
            "a b",
            "a/b",
            "héllo",
            "12",
            "1.2.3.4",
            &"x".repeat(64),
        ] {
            let err = check_host_name(bad).unwrap_err().to_string();
            assert!(err.starts_with("invalid host name"), "{bad}: {err}");
        }
        assert!(check_experiment_name("dumbbell-2").is_ok());
        assert!(check_experiment_name("a;rm").is_err());
    }
}
