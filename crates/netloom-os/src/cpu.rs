//! CPU placement and timer precision for the driver's threads, and the machine's CPUs and the
//! caches they share (sysfs), as plain data for placing workers by cache. The placement decision
//! itself is not here: it is netloom-partition's, from traffic between partitions.

use crate::OsError;
use serde::Serialize;
use std::path::Path;

/// Sets the calling thread's timer slack (PR_SET_TIMERSLACK): how late the kernel may fire its
/// timers to batch wake-ups (default 50 µs). 0 would mean "back to the default", so it is raised
/// to 1 ns, the most precise setting.
pub fn set_timer_slack_ns(ns: u64) {
    // SAFETY: PR_SET_TIMERSLACK takes one integer argument and touches no memory of ours. It
    // cannot fail for a value that fits in an unsigned long, so the result is not checked.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns.max(1) as libc::c_ulong, 0, 0, 0) };
}

/// Pins the calling thread to CPU `cpu` (sched_setaffinity).
pub fn pin_current_thread(cpu: usize) -> Result<(), OsError> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(OsError::io(
            format!("pin a thread to CPU {cpu}"),
            std::io::Error::from_raw_os_error(libc::EINVAL),
        ));
    }
    // SAFETY: cpu_set_t is a plain bit array; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `cpu` is below CPU_SETSIZE, checked above.
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: `set` is a live cpu_set_t of the size passed; pid 0 means the calling thread.
    if unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) } != 0 {
        return Err(OsError::last(format!(
            "pin a thread to CPU {cpu} (does this machine have it?)"
        )));
    }
    Ok(())
}

/// Gives the calling thread real-time priority `priority` (SCHED_FIFO, 1–99): it then runs as
/// soon as it is woken, ahead of every normal process. A driver that sleeps between deadlines
/// needs this on a small machine, or the applications under test delay it by whole scheduler
/// time slices (milliseconds). A thread that never sleeps must not have it: the kernel's
/// real-time throttling would stop it for 50 ms of every second.
pub fn set_realtime_priority(priority: u8) -> Result<(), OsError> {
    let param = libc::sched_param {
        sched_priority: libc::c_int::from(priority.clamp(1, 99)),
    };
    // SAFETY: `param` is a live sched_param; pid 0 means the calling thread.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } != 0 {
        return Err(OsError::last(format!(
            "give the driver real-time priority {priority} (SCHED_FIFO needs root)"
        )));
    }
    Ok(())
}

/// The CPUs this process may run on, and which of them share a cache: what placing workers on
/// CPUs by cache (MX) needs to know of the machine. Plain data, so that placement can be tested
/// on made-up machines.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CacheTopology {
    /// The CPUs this process may run on, ascending; never empty when detected.
    pub cpus: Vec<usize>,
    /// Every data or unified cache that two or more of `cpus` share, once, by level then CPUs.
    /// Empty when the machine does not say (no sysfs cache directory): no sharing is known.
    pub shared: Vec<SharedCache>,
}

/// One cache and the CPUs that share it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct SharedCache {
    /// 1 for L1, 2 for L2, 3 for L3.
    pub level: u8,
    /// The CPUs of `CacheTopology::cpus` that share it, ascending.
    pub cpus: Vec<usize>,
}

/// The highest CPU number `parse_cpu_list` accepts: far above any kernel's NR_CPUS (8192 on
/// x86-64), low enough that a corrupt range cannot allocate gigabytes.
const MAX_CPU: usize = 1 << 16;

impl CacheTopology {
    /// This machine: the calling thread's affinity mask (the process's, if called before any
    /// thread is pinned) and the caches /sys/devices/system/cpu describes. Never fails: a
    /// missing or unreadable file means that cache's sharing is unknown, and if the mask cannot
    /// be read, every CPU `available_parallelism` counts is taken.
    pub fn detect() -> CacheTopology {
        let cpus = allowed_cpus().unwrap_or_else(|| {
            let n = std::thread::available_parallelism().map_or(1, |n| n.get());
            (0..n).collect()
        });
        CacheTopology::read(Path::new("/sys/devices/system/cpu"), cpus)
    }

    /// `cpus` and the caches that `root` (a copy of /sys/devices/system/cpu) describes for them:
    /// `cpuN/cache/index*/{level,type,shared_cpu_list}`. Instruction caches are left out (packets
    /// are data), as is any entry with a missing or malformed file.
    pub fn read(root: &Path, cpus: Vec<usize>) -> CacheTopology {
        let mut caches = Vec::new();
        for &cpu in &cpus {
            let Ok(entries) = std::fs::read_dir(root.join(format!("cpu{cpu}/cache"))) else {
                continue;
            };
            for entry in entries.flatten() {
                if !entry.file_name().to_string_lossy().starts_with("index") {
                    continue;
                }
                let dir = entry.path();
                let read = |name: &str| std::fs::read_to_string(dir.join(name)).ok();
                let level = read("level").and_then(|l| l.trim().parse::<u8>().ok());
                let kind = read("type");
                let shared = read("shared_cpu_list").and_then(|l| parse_cpu_list(&l));
                if let (Some(level), Some(kind), Some(shared)) = (level, kind, shared) {
                    if kind.trim() != "Instruction" {
                        caches.push(SharedCache {
                            level,
                            cpus: shared,
                        });
                    }
                }
            }
        }
        CacheTopology::new(cpus, caches)
    }

    /// A topology from the caches each CPU reports: keeps only `cpus` in each (a cache may be
    /// shared with CPUs this process may not use), drops caches left with fewer than two, and
    /// removes repeats (every CPU of a cache reports it).
    pub fn new(
        mut cpus: Vec<usize>,
        caches: impl IntoIterator<Item = SharedCache>,
    ) -> CacheTopology {
        cpus.sort_unstable();
        cpus.dedup();
        let mut shared: Vec<SharedCache> = caches
            .into_iter()
            .map(|c| SharedCache {
                level: c.level,
                cpus: c
                    .cpus
                    .into_iter()
                    .filter(|x| cpus.binary_search(x).is_ok())
                    .collect(),
            })
            .filter(|c| c.cpus.len() >= 2)
            .map(|mut c| {
                c.cpus.sort_unstable();
                c.cpus.dedup();
                c
            })
            .collect();
        shared.sort();
        shared.dedup();
        CacheTopology { cpus, shared }
    }

    /// The level of the closest (lowest-level) cache that CPUs `a` and `b` share, if any.
    pub fn shared_level(&self, a: usize, b: usize) -> Option<u8> {
        // `shared` is sorted by level, so the first cache holding both is the closest.
        self.shared
            .iter()
            .find(|c| c.cpus.binary_search(&a).is_ok() && c.cpus.binary_search(&b).is_ok())
            .map(|c| c.level)
    }
}

/// The CPUs in the calling thread's affinity mask (sched_getaffinity), or `None` if it cannot
/// be read (more than CPU_SETSIZE CPUs).
pub(crate) fn allowed_cpus() -> Option<Vec<usize>> {
    // SAFETY: cpu_set_t is a plain bit array; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a live cpu_set_t of the size passed; pid 0 means the calling thread.
    if unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) } != 0
    {
        return None;
    }
    let cpus: Vec<usize> = (0..libc::CPU_SETSIZE as usize)
        // SAFETY: every index is below CPU_SETSIZE, the size of `set`.
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
        .collect();
    (!cpus.is_empty()).then_some(cpus)
}

/// Parses the kernel's CPU list format ("0-3,8-11", "5", "" for none; sysfs ends it with a
/// newline) into ascending CPU numbers. `None` if it is malformed: a number that is not one, a
/// range that runs backwards, or a CPU above 65535.
pub fn parse_cpu_list(text: &str) -> Option<Vec<usize>> {
    let mut cpus = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.trim().is_empty()) {
        let number = |s: &str| s.trim().parse::<usize>().ok().filter(|&n| n <= MAX_CPU);
        let (first, last) = match part.split_once('-') {
            Some((a, b)) => (number(a)?, number(b)?),
            None => (number(part)?, number(part)?),
        };
        if last < first {
            return None;
        }
        cpus.extend(first..=last);
    }
    cpus.sort_unstable();
    cpus.dedup();
    Some(cpus)
}

/// The kernel's CPU list format of `cpus` (ascending): runs become ranges ("0-3,8-11").
pub fn format_cpu_list(cpus: &[usize]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        parts.push(if j == i {
            cpus[i].to_string()
        } else {
            format!("{}-{}", cpus[i], cpus[j])
        });
        i = j + 1;
    }
    parts.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_parse_as_the_kernel_writes_them() {
        assert_eq!(
            parse_cpu_list("0-3,8-11\n"),
            Some(vec![0, 1, 2, 3, 8, 9, 10, 11])
        );
        assert_eq!(parse_cpu_list("5"), Some(vec![5]));
        assert_eq!(parse_cpu_list("0,2,4-5"), Some(vec![0, 2, 4, 5]));
        assert_eq!(parse_cpu_list(" 7 , 1-2 "), Some(vec![1, 2, 7]));
        assert_eq!(parse_cpu_list("3-3,3"), Some(vec![3]));
        assert_eq!(parse_cpu_list(""), Some(vec![]));
        assert_eq!(parse_cpu_list("\n"), Some(vec![]));
    }

    #[test]
    fn malformed_cpu_lists_are_refused() {
        for bad in [
            "x",
            "1-",
            "-3",
            "3-1",
            "0-3,a",
            "1-2-3",
            "0-99999999999",
            "70000",
            "0-3:2",
        ] {
            assert_eq!(parse_cpu_list(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn cpu_lists_format_back_to_ranges() {
        for text in ["0-3,8-11", "5", "0,2,4-5", ""] {
            assert_eq!(format_cpu_list(&parse_cpu_list(text).unwrap()), text);
        }
    }

    /// Writes one `cpuN/cache/indexI` entry of a fake sysfs tree.
    fn cache(root: &Path, cpu: usize, index: usize, level: &str, kind: &str, list: &str) {
        let dir = root.join(format!("cpu{cpu}/cache/index{index}"));
        std::fs::create_dir_all(&dir).unwrap();
        for (name, text) in [("level", level), ("type", kind), ("shared_cpu_list", list)] {
            if !text.is_empty() {
                std::fs::write(dir.join(name), format!("{text}\n")).unwrap();
            }
        }
    }

    #[test]
    fn sysfs_caches_are_read_deduplicated_and_cut_to_the_allowed_cpus() {
        let root = std::env::temp_dir().join(format!("netloom-cpu-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for cpu in 0..4 {
            let pair = if cpu < 2 { "0-1" } else { "2-3" };
            cache(&root, cpu, 0, "1", "Data", &cpu.to_string());
            cache(&root, cpu, 1, "1", "Instruction", pair);
            cache(&root, cpu, 2, "2", "Unified", pair);
            cache(&root, cpu, 3, "3", "Unified", "0-3,8-11");
        }
        // A malformed entry and one with a missing file are skipped, not errors.
        cache(&root, 0, 4, "4", "Unified", "0-x");
        cache(&root, 1, 4, "4", "Unified", "");
        std::fs::create_dir_all(root.join("cpu1/cache/uevent_dir_not_an_index")).unwrap();
        // CPU 3 is not allowed; CPU 5 has no cache directory at all.
        let t = CacheTopology::read(&root, vec![5, 0, 1, 2]);
        std::fs::remove_dir_all(&root).unwrap();
        let shared = |level, cpus: &[usize]| SharedCache {
            level,
            cpus: cpus.to_vec(),
        };
        assert_eq!(t.cpus, [0, 1, 2, 5]);
        assert_eq!(t.shared, [shared(2, &[0, 1]), shared(3, &[0, 1, 2])]);
        assert_eq!(t.shared_level(0, 1), Some(2));
        assert_eq!(t.shared_level(1, 2), Some(3));
        assert_eq!(t.shared_level(0, 5), None);
    }

    #[test]
    fn a_machine_without_cache_information_shares_nothing() {
        let root = std::env::temp_dir().join("netloom-cpu-test-no-such-sysfs");
        let t = CacheTopology::read(&root, vec![0, 1]);
        assert_eq!(t.cpus, [0, 1]);
        assert!(t.shared.is_empty());
    }

    #[test]
    fn this_machine_is_detected() {
        let t = CacheTopology::detect();
        assert!(!t.cpus.is_empty());
        assert!(t.shared.iter().all(|c| c.cpus.len() >= 2));
        eprintln!("CPUs {} caches {:?}", format_cpu_list(&t.cpus), t.shared);
    }

    #[test]
    fn pinning_to_cpu_zero_works_and_a_missing_cpu_is_an_error() {
        std::thread::spawn(|| {
            pin_current_thread(0).unwrap();
            assert!(pin_current_thread(100_000).is_err());
            set_timer_slack_ns(1000);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn realtime_priority_is_granted_to_root() {
        // SAFETY: geteuid has no preconditions and cannot fail.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("SKIPPED realtime_priority_is_granted_to_root: not root");
            return;
        }
        std::thread::spawn(|| {
            set_realtime_priority(10).unwrap();
            // SAFETY: sched_getscheduler has no memory preconditions.
            assert_eq!(unsafe { libc::sched_getscheduler(0) }, libc::SCHED_FIFO);
        })
        .join()
        .unwrap();
    }
}
