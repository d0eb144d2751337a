//! CPU placement and timer precision for the driver's threads, and the machine's CPUs and the
//! caches sysfs lists for them, as plain data. Deciding placement from them is not here: it is
//! netloom-partition's, from traffic between partitions.

use crate::OsError;
use std::path::Path;

/// Sets the calling thread's timer slack (PR_SET_TIMERSLACK): how late the kernel may fire its
/// timers to batch wake-ups (default 50 µs). 0 would mean "back to the default", so it is raised
/// to 1 ns, the most precise setting.
pub fn set_timer_slack_ns(ns: u64) {
    // SAFETY: PR_SET_TIMERSLACK takes one integer argument and touches no memory of ours. It
    // cannot fail for a value that fits in an unsigned long, so the result is not checked.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns.max(1) as libc::c_ulong, 0, 0, 0) };
}

/// Asks the CPU to start loading the cache line that holds `item` (a hint: it changes no result
/// and cannot fault), so a loop can overlap the memory reads of the items it will look at next
/// with its work on the current ones. A no-op on CPUs other than x86-64.
#[inline(always)]
pub fn prefetch<T>(item: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: PREFETCHT0 only hints the cache: it neither reads memory architecturally nor
    // faults, whatever the address, and SSE (which has it) is part of every x86-64 CPU.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
            (item as *const T).cast(),
        )
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = item;
}

/// Pins the calling thread to CPU `cpu` (sched_setaffinity).
pub fn pin_current_thread(cpu: usize) -> Result<(), OsError> {
    pin_current_thread_to(&[cpu])
}

/// Lets the calling thread run only on `cpus` (sched_setaffinity): a helper thread kept off the
/// CPUs the workers are pinned to.
pub fn pin_current_thread_to(cpus: &[usize]) -> Result<(), OsError> {
    let what = || match cpus {
        [cpu] => format!("pin a thread to CPU {cpu}"),
        _ => format!("pin a thread to CPUs {}", format_cpu_list(cpus)),
    };
    if cpus.is_empty() || cpus.iter().any(|&c| c >= libc::CPU_SETSIZE as usize) {
        return Err(OsError::io(
            what(),
            std::io::Error::from_raw_os_error(libc::EINVAL),
        ));
    }
    // SAFETY: cpu_set_t is a plain bit array; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &cpu in cpus {
        // SAFETY: `cpu` is below CPU_SETSIZE, checked above.
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    // SAFETY: `set` is a live cpu_set_t of the size passed; pid 0 means the calling thread.
    if unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) } != 0 {
        return Err(OsError::last(format!(
            "{} (does this machine have {}?)",
            what(),
            if cpus.len() == 1 { "it" } else { "them" }
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
        let error = std::io::Error::last_os_error();
        // Root is refused too, and "needs root" would mislead: say what refused it.
        if error.raw_os_error() == Some(libc::EPERM) {
            return Err(OsError::NoRealtime {
                priority,
                cause: crate::realtime::refusal_cause(),
            });
        }
        return Err(OsError::io(
            format!("give the driver real-time priority {priority} (SCHED_FIFO)"),
            error,
        ));
    }
    Ok(())
}

/// Puts the calling thread back to normal scheduling (SCHED_OTHER, nice unchanged): what a
/// driver that has been spinning for long at real-time priority does, so the kernel shares its
/// CPU with the programs under test instead of stopping it for tens of milliseconds to give
/// them their turn (RT throttling, the fair server).
pub fn set_normal_priority() -> Result<(), OsError> {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: `param` is a live sched_param; pid 0 means the calling thread.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_OTHER, &param) } != 0 {
        return Err(OsError::last("give the driver normal priority".to_string()));
    }
    Ok(())
}

/// Sets the calling thread's nice value (−20, the heaviest share, to 19), which counts only
/// while it runs at normal priority: a driver that spins for long drops real-time priority
/// (`set_normal_priority`) but should still lose as little of its CPU as it can to other
/// programs. Needs what real-time priority needs (root or CAP_SYS_NICE, or RLIMIT_NICE).
pub fn set_nice(nice: i8) -> Result<(), OsError> {
    let tid = thread_id() as libc::id_t;
    // SAFETY: plain integers; `tid` is this thread (nice is per thread on Linux).
    if unsafe { libc::setpriority(libc::PRIO_PROCESS, tid, libc::c_int::from(nice)) } != 0 {
        return Err(OsError::last(format!("give the driver nice {nice}")));
    }
    Ok(())
}

/// The calling thread's kernel id (what `ps -L` lists, and what per-thread calls such as
/// `setpriority` and `sched_setattr` take).
pub(crate) fn thread_id() -> libc::pid_t {
    // SAFETY: gettid has no preconditions and cannot fail. The raw system call: glibc's wrapper
    // (2.30) is newer than the 2.17 the packages' binary links against (manylinux2014).
    unsafe { libc::syscall(libc::SYS_gettid) as libc::pid_t }
}

/// One data or unified cache as sysfs lists it for a CPU: its level and every CPU sharing it
/// (CPUs outside this process's mask included). Each CPU lists its own caches, so a cache shared
/// by several CPUs comes once per CPU; deciding what that means for placement is the caller's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuCache {
    /// 1 for L1, 2 for L2, 3 for L3.
    pub level: u8,
    /// The CPUs sharing it, ascending.
    pub cpus: Vec<usize>,
    /// Its size (`size`, as "32K" or "1M"), if listed.
    pub size_bytes: Option<u64>,
}

/// The highest CPU number `parse_cpu_list` accepts: far above any kernel's NR_CPUS (8192 on
/// x86-64), low enough that a corrupt range cannot allocate gigabytes.
const MAX_CPU: usize = 1 << 16;

/// This machine as placing workers by cache needs it: the CPUs the calling thread may run on
/// (the process's, if called before any thread is pinned), ascending, and the data caches
/// /sys/devices/system/cpu lists for them. Never fails: if the mask cannot be read, every CPU
/// `available_parallelism` counts is taken, and an unreadable cache entry is left out.
pub fn machine_cpus() -> (Vec<usize>, Vec<CpuCache>) {
    let cpus = allowed_cpus().unwrap_or_else(|| {
        let n = std::thread::available_parallelism().map_or(1, |n| n.get());
        (0..n).collect()
    });
    let caches = cpu_caches(Path::new("/sys/devices/system/cpu"), &cpus);
    (cpus, caches)
}

/// The caches that `root` (a copy of /sys/devices/system/cpu) lists for `cpus`:
/// `cpuN/cache/index*/{level,type,shared_cpu_list}`. Instruction caches are left out (packets
/// are data), as is any entry with a missing or malformed file.
pub fn cpu_caches(root: &Path, cpus: &[usize]) -> Vec<CpuCache> {
    let mut caches = Vec::new();
    for &cpu in cpus {
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
            if let (Some(level), Some(kind), Some(cpus)) = (level, kind, shared) {
                if kind.trim() != "Instruction" {
                    let size_bytes = read("size").and_then(|s| cache_size(s.trim()));
                    caches.push(CpuCache {
                        level,
                        cpus,
                        size_bytes,
                    });
                }
            }
        }
    }
    caches
}

/// A cache size as sysfs writes it: a number of bytes with an optional K, M or G (binary).
fn cache_size(text: &str) -> Option<u64> {
    let (digits, unit) = match text.char_indices().last()? {
        (i, 'K') => (&text[..i], 1 << 10),
        (i, 'M') => (&text[..i], 1 << 20),
        (i, 'G') => (&text[..i], 1 << 30),
        _ => (text, 1),
    };
    digits.parse::<u64>().ok()?.checked_mul(unit)
}

/// The CPUs in the calling thread's affinity mask (sched_getaffinity), or `None` if it cannot
/// be read (more than CPU_SETSIZE CPUs).
pub fn allowed_cpus() -> Option<Vec<usize>> {
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

    /// The calling thread's nice value, from the kernel.
    fn own_nice() -> i32 {
        // SAFETY: getpriority reads plain integers.
        unsafe { libc::getpriority(libc::PRIO_PROCESS, thread_id() as libc::id_t) }
    }

    /// A driver's nice is its thread's alone: the run's other threads, and the programs they
    /// start, keep theirs. (A higher nice, a lighter share, is allowed without privileges.)
    #[test]
    fn nice_is_the_calling_threads_alone() {
        let before = own_nice();
        let inside = std::thread::spawn(|| set_nice(7).map(|()| own_nice()))
            .join()
            .unwrap();
        assert_eq!(inside.unwrap(), 7);
        assert_eq!(own_nice(), before);
    }

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
        // L1 caches list a size (as sysfs writes it); the others leave it out.
        let size = if level == "1" { "48K" } else { "" };
        for (name, text) in [
            ("level", level),
            ("type", kind),
            ("shared_cpu_list", list),
            ("size", size),
        ] {
            if !text.is_empty() {
                std::fs::write(dir.join(name), format!("{text}\n")).unwrap();
            }
        }
    }

    #[test]
    fn cache_sizes_are_read_with_their_binary_units() {
        assert_eq!(cache_size("48K"), Some(48 << 10));
        assert_eq!(cache_size("2M"), Some(2 << 20));
        assert_eq!(cache_size("512"), Some(512));
        assert_eq!(cache_size("K"), None);
        assert_eq!(cache_size("x"), None);
    }

    #[test]
    fn sysfs_caches_are_read_for_the_cpus_asked_and_bad_entries_skipped() {
        let root = std::env::temp_dir().join(format!("netloom-cpu-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for cpu in 0..4 {
            let pair = if cpu < 2 { "0-1" } else { "2-3" };
            cache(&root, cpu, 0, "1", "Data", &cpu.to_string());
            cache(&root, cpu, 1, "1", "Instruction", pair);
            cache(&root, cpu, 2, "2", "Unified", pair);
        }
        // A malformed entry and one with a missing file are skipped, not errors.
        cache(&root, 0, 4, "4", "Unified", "0-x");
        cache(&root, 1, 4, "4", "Unified", "");
        std::fs::create_dir_all(root.join("cpu1/cache/uevent_dir_not_an_index")).unwrap();
        // CPU 3 is not asked for; CPU 5 has no cache directory at all.
        let mut caches = cpu_caches(&root, &[5, 0, 2]);
        std::fs::remove_dir_all(&root).unwrap();
        caches.sort_by_key(|c| (c.level, c.cpus.clone()));
        let cache = |level, cpus: &[usize]| CpuCache {
            level,
            cpus: cpus.to_vec(),
            size_bytes: (level == 1).then_some(48 << 10),
        };
        assert_eq!(
            caches,
            [
                cache(1, &[0]),
                cache(1, &[2]),
                cache(2, &[0, 1]),
                cache(2, &[2, 3])
            ]
        );
        assert!(cpu_caches(&root, &[0, 1]).is_empty(), "no sysfs: no caches");
    }

    #[test]
    fn this_machine_is_read() {
        let (cpus, caches) = machine_cpus();
        assert!(!cpus.is_empty());
        assert!(caches.iter().all(|c| !c.cpus.is_empty()));
        eprintln!("CPUs {} caches {caches:?}", format_cpu_list(&cpus));
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
    fn a_thread_kept_to_a_set_of_cpus_runs_only_there() {
        std::thread::spawn(|| {
            let cpus = allowed_cpus().unwrap();
            let rest = match cpus.len() {
                1 => cpus.clone(),
                _ => cpus[1..].to_vec(),
            };
            pin_current_thread_to(&rest).unwrap();
            assert_eq!(allowed_cpus().unwrap(), rest);
            assert!(pin_current_thread_to(&[]).is_err());
            assert!(pin_current_thread_to(&[100_000]).is_err());
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
