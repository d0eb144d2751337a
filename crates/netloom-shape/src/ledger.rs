//! What each owner's pipes hold against their quota (packets, bytes, and bytes of the copies
//! the daemon keeps), and all pipes together against the shaper's capacity, with what each
//! owner's limits turned away: the shaper's books, so that no owner fills the queue all share.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

/// What one held packet (or kept copy) counts against its owner's quota.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Cost {
    /// Packets in the kernel's queue: 1 for a packet, 0 for a copy the daemon keeps.
    pub(crate) packets: u64,
    /// Their bytes.
    pub(crate) bytes: u64,
    /// Bytes the daemon keeps a copy of: the packet's, when its pipe marks or duplicates (its
    /// queue copies it whole), or the duplicate's.
    pub(crate) memory: u64,
}

/// What an owner's pipes may hold at once (`limits::Limits`); an owner without one (root) is
/// held only to the shaper's capacity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Quota {
    /// Packets held (each one in the kernel's queue).
    pub packets: u64,
    /// Bytes of those packets.
    pub bytes: u64,
    /// Bytes of packets the daemon keeps copies of.
    pub memory: u64,
}

/// What an owner's pipes hold now, and the packets their limits turned away since the shaper
/// started, as `show` reports it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserReport {
    /// The owner.
    pub uid: u32,
    /// Packets held now.
    pub held_packets: u64,
    /// Their bytes.
    pub held_bytes: u64,
    /// Bytes of packets whose copies the daemon keeps now.
    pub memory: u64,
    /// Packets dropped at arrival because the owner's quota (packets, bytes or memory) was full.
    pub dropped_over_limit: u64,
    /// Packets let go unshaped at arrival because every pipe together held the shaper's
    /// capacity (the queue all owners share fails open rather than fill).
    pub passed_when_full: u64,
}

/// Every owner's quota and count, and the count of all pipes together.
pub(crate) struct Ledger {
    /// Each owner's quota, if they have one.
    quotas: HashMap<u32, Quota>,
    /// What each owner's pipes hold and what their limits turned away.
    users: BTreeMap<u32, UserReport>,
    /// Packets every pipe together may hold, and how many they hold.
    capacity: u64,
    held_packets: u64,
}

impl Ledger {
    /// No quota, no capacity.
    pub(crate) fn new() -> Ledger {
        Ledger {
            quotas: HashMap::new(),
            users: BTreeMap::new(),
            capacity: u64::MAX,
            held_packets: 0,
        }
    }

    /// Packets every pipe together may hold.
    pub(crate) fn set_capacity(&mut self, capacity: u64) {
        self.capacity = capacity;
    }

    /// Whether every pipe together holds the capacity.
    pub(crate) fn is_full(&self) -> bool {
        self.held_packets >= self.capacity
    }

    /// Everything held went (the shaper was drained): the counts of what is held go to zero,
    /// what the limits turned away stays.
    pub(crate) fn release_all(&mut self) {
        self.held_packets = 0;
        for u in self.users.values_mut() {
            (u.held_packets, u.held_bytes, u.memory) = (0, 0, 0);
        }
    }

    /// Holds `owner`'s pipes to `quota` from the next arrival on (`None`: no quota).
    pub(crate) fn set_quota(&mut self, owner: u32, quota: Option<Quota>) {
        match quota {
            Some(q) => self.quotas.insert(owner, q),
            None => self.quotas.remove(&owner),
        };
    }

    /// What the pipes of `owner` (of every owner with a link or a count, if `None`) hold, and
    /// what their limits turned away.
    pub(crate) fn users(&self, owner: Option<u32>) -> Vec<UserReport> {
        self.users
            .values()
            .filter(|u| owner.is_none_or(|o| o == u.uid))
            .copied()
            .collect()
    }

    pub(crate) fn user(&mut self, owner: u32) -> &mut UserReport {
        self.users.entry(owner).or_insert(UserReport {
            uid: owner,
            ..UserReport::default()
        })
    }

    /// Counts a held packet or copy against its owner.
    pub(crate) fn charge(&mut self, owner: u32, cost: Cost) {
        self.held_packets += cost.packets;
        let u = self.user(owner);
        u.held_packets += cost.packets;
        u.held_bytes += cost.bytes;
        u.memory += cost.memory;
    }

    /// Takes a held packet or copy off its owner's count.
    pub(crate) fn refund(&mut self, owner: u32, cost: Cost) {
        self.held_packets = self.held_packets.saturating_sub(cost.packets);
        if let Some(u) = self.users.get_mut(&owner) {
            u.held_packets = u.held_packets.saturating_sub(cost.packets);
            u.held_bytes = u.held_bytes.saturating_sub(cost.bytes);
            u.memory = u.memory.saturating_sub(cost.memory);
        }
    }

    /// Would holding `cost` (and `copy` more memory, for a duplicate) take `owner` past their
    /// quota?
    pub(crate) fn over_quota(&self, owner: u32, cost: Cost, copy: u64) -> bool {
        let Some(q) = self.quotas.get(&owner) else {
            return false;
        };
        let u = self.users.get(&owner).copied().unwrap_or_default();
        u.held_packets + cost.packets > q.packets
            || u.held_bytes + cost.bytes > q.bytes
            || u.memory + cost.memory + copy > q.memory
    }
}
