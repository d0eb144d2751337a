//! The machine as placement sees it: the CPUs workers may run on and which of them share a data
//! cache. Plain data, given by the caller (who reads the real machine through netloom-os), so
//! placement is tested on made-up machines and this crate never touches the OS.

use serde::Serialize;

/// The CPUs this process may run on, and which of them share a cache: what placing workers on
/// CPUs by cache (MX) needs to know of the machine.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CacheTopology {
    /// The CPUs this process may run on, ascending.
    pub cpus: Vec<usize>,
    /// Every data or unified cache that two or more of `cpus` share, once, by level then CPUs.
    /// Empty when the machine does not say: no sharing is known.
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

impl CacheTopology {
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
            .map(|c| {
                let mut sharing: Vec<usize> = c
                    .cpus
                    .into_iter()
                    .filter(|x| cpus.binary_search(x).is_ok())
                    .collect();
                sharing.sort_unstable();
                sharing.dedup();
                SharedCache {
                    level: c.level,
                    cpus: sharing,
                }
            })
            .filter(|c| c.cpus.len() >= 2)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn cache(level: u8, cpus: &[usize]) -> SharedCache {
        SharedCache {
            level,
            cpus: cpus.to_vec(),
        }
    }

    #[test]
    fn caches_are_deduplicated_and_cut_to_the_allowed_cpus() {
        // Four CPUs report their L1 (private), L2 (pairs) and L3 (all, with CPUs 8-11 this
        // process may not use); CPU 3 is not allowed, CPU 5 reports nothing.
        let mut reported = Vec::new();
        for cpu in 0..4 {
            let pair = if cpu < 2 { [0, 1] } else { [2, 3] };
            reported.push(cache(1, &[cpu]));
            reported.push(cache(2, &pair));
            reported.push(cache(3, &[0, 1, 2, 3, 8, 9, 10, 11]));
        }
        let t = CacheTopology::new(vec![5, 0, 1, 2, 1], reported);
        assert_eq!(t.cpus, [0, 1, 2, 5]);
        assert_eq!(t.shared, [cache(2, &[0, 1]), cache(3, &[0, 1, 2])]);
        assert_eq!(t.shared_level(0, 1), Some(2));
        assert_eq!(t.shared_level(1, 2), Some(3));
        assert_eq!(t.shared_level(0, 5), None);
    }

    #[test]
    fn a_machine_without_cache_information_shares_nothing() {
        let t = CacheTopology::new(vec![1, 0], []);
        assert_eq!(t.cpus, [0, 1]);
        assert!(t.shared.is_empty());
        assert_eq!(t.shared_level(0, 1), None);
    }
}
