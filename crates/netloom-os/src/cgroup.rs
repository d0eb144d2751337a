//! Where cgroup v2 lives on this machine: its mount (on a hybrid layout, such as this VM's,
//! `/sys/fs/cgroup/unified`; on a unified one, `/sys/fs/cgroup`) and a process's cgroup in it.

use std::path::PathBuf;

/// The mount point of the cgroup v2 hierarchy, from `/proc/self/mountinfo`; `None` if cgroup2
/// is not mounted.
pub fn cgroup2_mount() -> Option<PathBuf> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    mount_of(&text, "cgroup2")
}

/// The mount point of the first file system of type `fstype` in a mountinfo text: the fifth
/// field of a line whose type (the first word after ` - `) is `fstype`.
fn mount_of(mountinfo: &str, fstype: &str) -> Option<PathBuf> {
    mountinfo.lines().find_map(|line| {
        let (mount, fs) = line.split_once(" - ")?;
        (fs.split_whitespace().next()? == fstype)
            .then(|| mount.split_whitespace().nth(4).map(unescape))
            .flatten()
    })
}

/// mountinfo writes space, tab, newline and backslash as `\ooo`.
fn unescape(field: &str) -> PathBuf {
    let mut out = String::new();
    let mut rest = field;
    while let Some(i) = rest.find('\\') {
        out.push_str(&rest[..i]);
        match rest
            .get(i + 1..i + 4)
            .and_then(|o| u8::from_str_radix(o, 8).ok())
        {
            Some(b) => {
                out.push(char::from(b));
                rest = &rest[i + 4..];
            }
            None => {
                out.push('\\');
                rest = &rest[i + 1..];
            }
        }
    }
    out.push_str(rest);
    PathBuf::from(out)
}

/// The cgroup v2 path of process `pid` ("self" for this one), relative to the mount: the
/// `0::PATH` line of `/proc/PID/cgroup`.
pub fn cgroup_of(pid: &str) -> Option<String> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("0::"))
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cgroup2_mount_is_found_on_hybrid_and_unified_layouts() {
        let hybrid = "30 24 0:26 / /sys/fs/cgroup ro - tmpfs tmpfs ro,mode=755\n\
                      41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
        assert_eq!(
            mount_of(hybrid, "cgroup2"),
            Some(PathBuf::from("/sys/fs/cgroup/unified"))
        );
        let spaced = "41 31 0:38 / /mnt/cg\\040two rw - cgroup2 cgroup2 rw\n";
        assert_eq!(
            mount_of(spaced, "cgroup2"),
            Some(PathBuf::from("/mnt/cg two"))
        );
        assert_eq!(mount_of(hybrid, "cgroup3"), None);
    }
}
