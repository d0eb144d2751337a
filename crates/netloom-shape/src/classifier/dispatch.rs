//! Where each tenant's compiled entries are: one read of a dense table indexed by the tenant's
//! id when the ids are dense enough (uids are), else a hash map.
//!
//! With 65,536 tenants drawn at random, the hash map's probe was a cache miss of its own before
//! the entries' (a megabyte of buckets and control bytes); the dense table is 4 bytes a tenant
//! (256 KiB for 65,536), which stays in the L2 cache (docs/performance.md, "The classifier").

use rustc_hash::FxHashMap;

/// Most slots of a dense table: above, ids go to the hash map (4 MiB of table at most).
const DENSE_MAX: usize = 1 << 20;

/// A dense table may have this many slots per tenant (and `DENSE_SLACK` more): sparser ids
/// (say uids in the millions for a few tenants) go to the hash map instead.
const DENSE_PER_TENANT: usize = 16;
const DENSE_SLACK: usize = 4096;

/// Each tenant's range of entries.
#[derive(Clone, Debug, Default)]
pub(super) struct Dispatch {
    /// When dense: tenant `t`'s entries are `starts[t]..starts[t + 1]`; ids past the end have
    /// none. Empty when sparse.
    starts: Vec<u32>,
    /// When sparse: each tenant's `(start, end)`.
    ranges: FxHashMap<u32, (u32, u32)>,
    /// Was a tenant other than `ROOT` given (with rules or without)?
    users: bool,
}

impl Dispatch {
    /// The dispatch of `ranges`: each tenant's `(tenant, start, end)`, in tenant order, the
    /// ranges following each other from 0 (a tenant may come more than once, its ranges
    /// adjacent).
    pub(super) fn new(ranges: &[(u32, u32, u32)]) -> Dispatch {
        let users = ranges.iter().any(|&(t, _, _)| t != super::ROOT);
        let slots = ranges.last().map_or(0, |&(t, _, _)| t as usize + 2);
        let dense = slots <= DENSE_MAX && slots <= ranges.len() * DENSE_PER_TENANT + DENSE_SLACK;
        if !dense {
            let mut map = FxHashMap::default();
            for &(tenant, start, end) in ranges {
                map.entry(tenant).or_insert((start, end)).1 = end;
            }
            return Dispatch {
                starts: Vec::new(),
                ranges: map,
                users,
            };
        }
        let mut starts = vec![0; slots];
        for &(tenant, start, end) in ranges {
            debug_assert!(starts[tenant as usize] <= start, "ranges in tenant order");
            starts[tenant as usize + 1] += end - start;
        }
        for t in 1..slots {
            starts[t] += starts[t - 1];
        }
        Dispatch {
            starts,
            ranges: FxHashMap::default(),
            users,
        }
    }

    /// The range of entries that is `tenant`'s (empty if it has none).
    #[inline]
    pub(super) fn get(&self, tenant: u32) -> (u32, u32) {
        if self.starts.is_empty() {
            return self.ranges.get(&tenant).copied().unwrap_or_default();
        }
        let t = tenant as usize;
        match (self.starts.get(t), self.starts.get(t + 1)) {
            (Some(&start), Some(&end)) => (start, end),
            _ => (0, 0),
        }
    }

    /// Was any tenant other than `ROOT` given?
    pub(super) fn has_users(&self) -> bool {
        self.users
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ranges of tenants `ids`, tenant `t` with `t % 3` entries, laid out one after the other.
    fn ranges(ids: &[u32]) -> Vec<(u32, u32, u32)> {
        let mut at = 0;
        ids.iter()
            .map(|&t| {
                let start = at;
                at += t % 3;
                (t, start, at)
            })
            .collect()
    }

    #[test]
    fn dense_and_sparse_tables_give_every_tenant_its_range_and_others_none() {
        let dense: Vec<u32> = (0..5000).filter(|t| t % 7 != 3).collect();
        let sparse = [0, 5, 1_000_000, 4_000_000_000];
        for ids in [&dense[..], &sparse[..]] {
            let given = ranges(ids);
            let d = Dispatch::new(&given);
            assert_eq!(d.starts.is_empty(), ids.len() == sparse.len());
            for &(t, s, e) in &given {
                assert_eq!(d.get(t), (s, e));
            }
            for absent in [3, 10, 5003, 999_999, u32::MAX] {
                let (s, e) = d.get(absent);
                assert_eq!(s, e, "tenant {absent} has no entries");
            }
        }
    }

    #[test]
    fn a_tenant_given_twice_keeps_both_ranges_and_only_root_is_no_user() {
        let d = Dispatch::new(&[(0, 0, 2), (4, 2, 3), (4, 3, 5)]);
        assert_eq!((d.get(0), d.get(4), d.get(2)), ((0, 2), (2, 5), (2, 2)));
        assert!(d.has_users());
        assert!(!Dispatch::new(&[(0, 0, 2)]).has_users());
        assert!(!Dispatch::new(&[]).has_users());
    }
}
