//! Why the kernel refused real-time priority to a process running as root: no CAP_SYS_NICE (a
//! container started without it), or a cgroup without real-time budget (cgroup v1's
//! `cpu.rt_runtime_us` = 0, what a new cgroup gets), told from /proc and the cgroup's files.

use std::path::PathBuf;

/// CAP_SYS_NICE's bit in /proc's capability masks.
const CAP_SYS_NICE: u32 = 23;

/// The likeliest reason the calling thread was refused SCHED_FIFO with EPERM, as a sentence for
/// the user.
pub fn refusal_cause() -> String {
    let status = std::fs::read_to_string("/proc/thread-self/status").unwrap_or_default();
    if let Some(false) = has_capability(&status, CAP_SYS_NICE) {
        return "this process lacks CAP_SYS_NICE (a container started without it: give it \
                `--cap-add SYS_NICE`)"
            .to_string();
    }
    let cgroups = std::fs::read_to_string("/proc/thread-self/cgroup").unwrap_or_default();
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    if let Some(file) = rt_runtime_file(&cgroups, &mountinfo) {
        if let Ok(text) = std::fs::read_to_string(&file) {
            if text.trim() == "0" {
                return format!(
                    "this process's cgroup has no real-time CPU budget ({} is 0; give it one, \
                     below its parent's, or run netloom in a cgroup that has one)",
                    file.display()
                );
            }
        }
    }
    match cgroups.lines().all(|l| l.starts_with("0::")) {
        // cgroup v2 alone: a kernel with real-time group scheduling refuses real-time threads
        // outside the root cgroup, and says no more.
        true => "the kernel refused it (EPERM): under cgroup v2, a kernel built with real-time \
                 group scheduling refuses real-time threads in any cgroup but the root one"
            .to_string(),
        false => "the kernel refused it (EPERM), though this process has CAP_SYS_NICE and its \
                  cgroup a real-time budget"
            .to_string(),
    }
}

/// Whether the effective capability mask (`CapEff:` of a /proc status text) has bit `cap`;
/// `None` when the text has no such line.
fn has_capability(status: &str, cap: u32) -> Option<bool> {
    let mask = status.lines().find_map(|l| l.strip_prefix("CapEff:"))?;
    let mask = u64::from_str_radix(mask.trim(), 16).ok()?;
    Some(mask & (1 << cap) != 0)
}

/// The `cpu.rt_runtime_us` of the cgroup v1 `cpu` controller's group in a /proc cgroup text
/// (`N:cpu,cpuacct:/path`), under the controller's mount from a mountinfo text; `None` without
/// a v1 `cpu` controller.
fn rt_runtime_file(cgroups: &str, mountinfo: &str) -> Option<PathBuf> {
    let path = cgroups.lines().find_map(|l| {
        let mut fields = l.splitn(3, ':');
        let (_, controllers, path) = (fields.next()?, fields.next()?, fields.next()?);
        controllers.split(',').any(|c| c == "cpu").then_some(path)
    })?;
    let mount = mountinfo.lines().find_map(|line| {
        let (mount, fs) = line.split_once(" - ")?;
        let mut fs = fs.split_whitespace();
        let cpu = fs.next()? == "cgroup" && fs.nth(1)?.split(',').any(|o| o == "cpu");
        cpu.then(|| mount.split_whitespace().nth(4)).flatten()
    })?;
    Some(
        PathBuf::from(mount)
            .join(path.trim_start_matches('/'))
            .join("cpu.rt_runtime_us"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_capability_and_the_cgroup_v1_budget_file_are_found() {
        assert_eq!(
            has_capability("CapEff:\t000001fffeffffff\n", 23),
            Some(true)
        );
        assert_eq!(
            has_capability("CapEff:\t000001fffe7fffff\n", 23),
            Some(false)
        );
        assert_eq!(has_capability("Name: x\n", 23), None);
        let mountinfo =
            "30 25 0:26 / /sys/fs/cgroup/cpu rw,relatime shared:9 - cgroup cgroup rw,cpu\n\
                         31 25 0:27 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n";
        assert_eq!(
            rt_runtime_file("4:memory:/a\n1:cpu:/netloom/x\n0::/\n", mountinfo),
            Some(PathBuf::from(
                "/sys/fs/cgroup/cpu/netloom/x/cpu.rt_runtime_us"
            ))
        );
        let joint = "30 25 0:26 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n";
        assert_eq!(
            rt_runtime_file("2:cpu,cpuacct:/\n", joint),
            Some(PathBuf::from(
                "/sys/fs/cgroup/cpu,cpuacct/cpu.rt_runtime_us"
            ))
        );
        assert_eq!(rt_runtime_file("0::/user.slice\n", mountinfo), None);
    }
}
