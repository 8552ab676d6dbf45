//! The in-process store: GCRA timestamps in sharded hash maps, bounded in
//! keys.
//!
//! A key is a 64-bit keyed hash of the limit key (foldhash's quality
//! variant, seeded at random per process, so a client cannot predict which
//! keys collide; a collision would only make two clients share a bucket). Each shard
//! holds at most `max_keys / SHARDS` keys; when a full shard needs a new
//! one it first drops every idle key (`now >= tat`, which changes no
//! decision), and when fewer than an eighth of its keys were idle it also
//! drops the eighth closest to idle (smallest `tat`), whose buckets restart
//! full. The eviction scan is amortized over at least an eighth of a
//! shard's inserts.

use std::collections::HashMap;
use std::hash::{BuildHasher, BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use crate::gcra::{self, Verdict};

/// Number of shards (a power of two): enough that proxy threads rarely
/// meet on one lock.
pub const SHARDS: usize = 64;

/// A hasher for keys that are already hashes: takes the `u64` as is.
#[derive(Default)]
pub struct PassThrough(u64);

impl Hasher for PassThrough {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // Only `write_u64` is used; fold anything else in.
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

type Shard = HashMap<u64, u64, BuildHasherDefault<PassThrough>>;

/// The in-process GCRA store.
pub struct LocalStore {
    shards: Box<[Mutex<Shard>]>,
    per_shard: usize,
    evicted: AtomicU64,
}

impl LocalStore {
    /// A store holding at most about `max_keys` keys (rounded up to a
    /// multiple of [`SHARDS`]). Nothing is allocated until keys arrive.
    pub fn new(max_keys: usize) -> LocalStore {
        let per_shard = max_keys.div_ceil(SHARDS).max(8);
        let shards = (0..SHARDS).map(|_| Mutex::new(Shard::default())).collect();
        LocalStore { shards, per_shard, evicted: AtomicU64::new(0) }
    }

    /// One GCRA step for the key hashed to `key` at `now` (nanoseconds of
    /// the caller's monotonic clock).
    pub fn check(&self, key: u64, now: u64, emission_ns: u64, burst: u32) -> Verdict {
        // Bits 32..38 pick the shard: the map takes its bucket from the low
        // bits and its tag from the top seven, so neither is constant
        // within a shard.
        let shard = &self.shards[(key >> 32) as usize & (SHARDS - 1)];
        let mut map = shard.lock().unwrap_or_else(PoisonError::into_inner);
        // One probe for a known key.
        if let Some(tat) = map.get_mut(&key) {
            let s = gcra::step(Some(*tat), now, emission_ns, burst);
            if let Some(new_tat) = s.new_tat {
                *tat = new_tat;
            }
            return s.verdict;
        }
        let s = gcra::step(None, now, emission_ns, burst);
        if let Some(new_tat) = s.new_tat {
            if map.len() >= self.per_shard {
                let dropped = evict(&mut map, now, self.per_shard);
                self.evicted.fetch_add(dropped, Ordering::Relaxed);
            }
            map.insert(key, new_tat);
        }
        s.verdict
    }

    /// Keys held now.
    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| s.lock().unwrap_or_else(PoisonError::into_inner).len()).sum()
    }

    /// Whether no key is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Keys dropped while still active (their buckets restarted full)
    /// since the store was made.
    pub fn evicted(&self) -> u64 {
        self.evicted.load(Ordering::Relaxed)
    }
}

/// Makes room in a full shard: drops the idle keys, and when fewer than an
/// eighth of `cap` were idle, the keys whose `tat` is among the eighth
/// smallest. Returns how many active keys were dropped.
fn evict(map: &mut Shard, now: u64, cap: usize) -> u64 {
    map.retain(|_, tat| *tat > now);
    let want = (cap / 8).max(1);
    if cap - map.len().min(cap) >= want {
        return 0;
    }
    let mut tats: Vec<u64> = map.values().copied().collect();
    let nth = want.min(tats.len()) - 1;
    let (_, &mut threshold, _) = tats.select_nth_unstable(nth);
    let before = map.len();
    map.retain(|_, tat| *tat > threshold);
    (before - map.len()) as u64
}

/// The keyed hash of limit keys: one per [`crate::Limiter`], random per
/// process.
#[derive(Clone, Default)]
pub struct KeyHasher(foldhash::quality::RandomState);

impl KeyHasher {
    /// The 64-bit hash of `key`.
    pub fn hash<K: std::hash::Hash + ?Sized>(&self, key: &K) -> u64 {
        self.0.hash_one(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    #[test]
    fn keys_are_counted_apart() {
        let store = LocalStore::new(1000);
        assert!(store.check(1, 0, S, 1).allowed());
        assert!(!store.check(1, 1, S, 1).allowed());
        assert!(store.check(2, 1, S, 1).allowed());
        assert_eq!(store.check(1, S / 2, S, 1), Verdict::Deny { retry_after: std::time::Duration::from_nanos(S / 2) });
        assert!(store.check(1, S, S, 1).allowed());
        assert_eq!(store.len(), 2);
    }

    #[test]
    fn a_full_shard_drops_idle_keys_first() {
        // 8 keys per shard; keys under 2^32 all fall in shard 0.
        let store = LocalStore::new(8 * SHARDS);
        for k in 0..8u64 {
            assert!(store.check(k, 0, S, 1).allowed());
        }
        // At 1 s every key is idle (tat = 1 s): a new key drops them all,
        // and no active key is counted as evicted.
        assert!(store.check(100, S, S, 1).allowed());
        assert_eq!((store.len(), store.evicted()), (1, 0));
    }

    #[test]
    fn a_full_shard_of_active_keys_drops_the_closest_to_idle() {
        let store = LocalStore::new(16 * SHARDS);
        // Key k has tat = (k + 1) s: key 0 is the closest to idle.
        for k in 0..16u64 {
            assert!(store.check(k, 0, (k + 1) * S, 1).allowed());
        }
        assert!(store.check(99, 0, S, 1).allowed());
        // An eighth of 16: the two smallest tats (keys 0 and 1) are dropped.
        assert_eq!((store.len(), store.evicted()), (15, 2));
        assert!(store.check(0, 1, S, 1).allowed(), "key 0 restarted full");
        assert!(!store.check(2, 1, S, 1).allowed(), "key 2 kept its bucket");
    }

    #[test]
    fn bounded_under_many_keys() {
        let store = LocalStore::new(10_000);
        let h = KeyHasher::default();
        for k in 0..100_000u64 {
            store.check(h.hash(&k), 0, S, 1);
        }
        assert!(store.len() <= 10_000usize.div_ceil(SHARDS) * SHARDS, "{}", store.len());
    }
}
