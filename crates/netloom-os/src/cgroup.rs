//! Where cgroups live on this machine: v2's mount (on a hybrid layout, such as this VM's,
//! `/sys/fs/cgroup/unified`; on a unified one, `/sys/fs/cgroup`), v1's `cpu` controller's, and
//! a process's cgroup in v2.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The mount point of the cgroup v2 hierarchy, from `/proc/self/mountinfo`; `None` if cgroup2
/// is not mounted.
pub fn cgroup2_mount() -> Option<PathBuf> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    mount_of(&text, "cgroup2")
}

/// The mount point of cgroup v1's `cpu` controller (alone or with others, as `cpu,cpuacct`);
/// `None` where it is not mounted.
pub(crate) fn cgroup1_cpu_mount() -> Option<PathBuf> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    mount_with(&text, "cgroup", Some("cpu"))
}

/// The mount point of the first file system of type `fstype` in a mountinfo text: the fifth
/// field of a line whose type (the first word after ` - `) is `fstype`.
fn mount_of(mountinfo: &str, fstype: &str) -> Option<PathBuf> {
    mount_with(mountinfo, fstype, None)
}

/// `mount_of`, of a mount whose super options (the third word after ` - `) include `option`
/// when one is given.
fn mount_with(mountinfo: &str, fstype: &str, option: Option<&str>) -> Option<PathBuf> {
    mountinfo.lines().find_map(|line| {
        let (mount, fs) = line.split_once(" - ")?;
        let mut words = fs.split_whitespace();
        let matches = words.next()? == fstype
            && option.is_none_or(|o| words.nth(1).is_some_and(|s| s.split(',').any(|w| w == o)));
        matches
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

/// The ids of the cgroup v2 at `dir` and of every cgroup below it: the inodes of the directory
/// and of each directory under it (a cgroup's id is its directory's inode). A directory that
/// goes while the tree is read is skipped.
pub fn cgroup_tree(dir: &Path) -> Vec<u64> {
    let mut ids = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(meta) = std::fs::metadata(&dir) else {
            continue;
        };
        ids.push(meta.ino());
        let below = std::fs::read_dir(&dir).into_iter().flatten().flatten();
        stack.extend(
            below
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .map(|e| e.path()),
        );
    }
    ids
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tree_has_the_ids_of_its_directory_and_of_every_one_below() {
        let top = std::env::temp_dir().join(format!("netloom-cgroup-tree-{}", std::process::id()));
        std::fs::create_dir_all(top.join("a/b")).unwrap();
        std::fs::create_dir_all(top.join("c")).unwrap();
        std::fs::write(top.join("a/file"), "not a cgroup").unwrap();
        let ino = |p: &str| std::fs::metadata(top.join(p)).unwrap().ino();
        let mut ids = cgroup_tree(&top);
        ids.sort();
        let mut want = vec![ino(""), ino("a"), ino("a/b"), ino("c")];
        want.sort();
        assert_eq!(ids, want);
        assert!(cgroup_tree(&top.join("gone")).is_empty());
        std::fs::remove_dir_all(&top).unwrap();
    }

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

    #[test]
    fn cgroup1_s_cpu_controller_is_found_alone_or_with_cpuacct() {
        let v1 = "33 30 0:29 / /sys/fs/cgroup/cpuset rw - cgroup cgroup rw,cpuset\n\
                  34 30 0:30 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n";
        assert_eq!(
            mount_with(v1, "cgroup", Some("cpu")),
            Some(PathBuf::from("/sys/fs/cgroup/cpu,cpuacct"))
        );
        let alone = "35 30 0:31 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n";
        assert_eq!(
            mount_with(alone, "cgroup", Some("cpu")),
            Some(PathBuf::from("/sys/fs/cgroup/cpu"))
        );
        assert_eq!(mount_with(v1, "cgroup", Some("memory")), None);
    }
}
