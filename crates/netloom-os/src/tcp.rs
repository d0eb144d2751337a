//! The hosts' TCP congestion control: the algorithm each host starts with, and the machine's list
//! of the algorithms that namespaces other than the machine's own may choose.

use crate::sysctl::Sysctls;
use crate::OsError;
use std::path::Path;

/// The algorithm a host starts with unless the experiment names another: Linux's own default
/// (cubic since 2.6.19), so that a result does not depend on what this machine's namespace
/// happens to use; a new namespace would otherwise inherit the machine's (BBR on some).
pub const DEFAULT_CONGESTION_CONTROL: &str = "cubic";

/// Where the IPv4 and TCP sysctls of the calling thread's network namespace are.
const SYSCTL_DIR: &str = "/proc/sys/net/ipv4";

/// A space-separated list sysctl of `SYSCTL_DIR`, as words.
fn read_list(name: &str) -> Result<Vec<String>, OsError> {
    let path = Path::new(SYSCTL_DIR).join(name);
    let text = std::fs::read_to_string(&path)
        .map_err(|e| OsError::io(format!("read {}", path.display()), e))?;
    Ok(text.split_whitespace().map(str::to_string).collect())
}

/// The algorithms this machine's kernel has, built in or loaded
/// (`net.ipv4.tcp_available_congestion_control`).
pub fn available_congestion_controls() -> Result<Vec<String>, OsError> {
    read_list("tcp_available_congestion_control")
}

/// Puts every available algorithm on the machine's allowed list. The kernel lets a namespace
/// other than the machine's own set `net.ipv4.tcp_congestion_control` only to an algorithm on
/// `net.ipv4.tcp_allowed_congestion_control`, and refuses any other with EPERM even to root;
/// that list holds the machine's default and reno until someone adds to it, which is why
/// `sysctl -w net.ipv4.tcp_congestion_control=cubic` failed inside a host. Call from a thread in
/// the machine's namespace (the list is the machine's). It only adds (other programs may rely on
/// what is there) and stays after the experiment, as another experiment may be using it.
pub(crate) fn allow_every_available() -> Result<(), OsError> {
    let mut allowed = read_list("tcp_allowed_congestion_control")?;
    let missing: Vec<String> = available_congestion_controls()?
        .into_iter()
        .filter(|name| !allowed.contains(name))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    allowed.extend(missing);
    let path = Path::new(SYSCTL_DIR).join("tcp_allowed_congestion_control");
    std::fs::write(&path, allowed.join(" ")).map_err(|e| {
        OsError::io(
            format!(
                "allow every TCP congestion control in hosts (write {:?} to {})",
                allowed.join(" "),
                path.display()
            ),
            e,
        )
    })
}

/// The congestion control of the calling thread's namespace (`net.ipv4.tcp_congestion_control`).
pub(crate) fn congestion_control() -> Result<String, OsError> {
    Ok(read_list("tcp_congestion_control")?.join(" "))
}

/// Sets the congestion control of the calling thread's namespace to `name`, through `sysctls`
/// (a host's write would otherwise cost a walk as long as the number of namespaces).
pub(crate) fn set_congestion_control(sysctls: &mut Sysctls, name: &str) -> Result<(), OsError> {
    sysctls
        .write("net/ipv4/tcp_congestion_control", name)
        .map_err(|e| {
            OsError::io(
                format!("set TCP congestion control {name} ({SYSCTL_DIR}/tcp_congestion_control)"),
                e,
            )
        })
}
