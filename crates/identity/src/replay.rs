//! The Web Bot Auth replay cache: the signatures that verified, kept until
//! they expire, so that the same signature presented again is refused
//! (draft-meunier-web-bot-auth-architecture: "a replay gets 429"; a
//! crawler that retries makes a fresh signature, with its own `created` and
//! `nonce`).
//!
//! Only signatures that verified are recorded: a forger cannot fill the
//! cache with signatures it made up, nor evict a genuine one. A client
//! that holds a key the verifier accepts can fill it with its own valid
//! signatures; with the default settings only pinned keys and the
//! catalog's directories are accepted, but with `any_directory_host` any
//! client can host a key (docs/security.md, "Replay cache"). An entry is
//! keyed by a SHA-256 of the keyid and the signature bytes (32 bytes) and
//! costs about 100 bytes with the map and the expiry index: 100,000 entries
//! take about 10 MB.

use std::collections::{BTreeSet, HashMap};
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;

use sha2::{Digest, Sha256};

/// What the cache says about one verified signature.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Replay {
    /// Not seen before; now recorded until it expires.
    Fresh,
    /// Seen before within its validity window.
    Replayed,
    /// The cache is full of unexpired signatures: this one cannot be
    /// recorded, so a replay of it could not be told; it must not count as
    /// proof.
    Full,
}

/// Where verified signatures are remembered: this instance's
/// [`ReplayCache`] by default; a store shared by several instances (so a
/// signature replayed to another instance is refused too) implements it
/// with a set-if-absent that expires at `forget_after`. The verifier asks it
/// only about signatures that verified.
pub trait ReplayStore: Send + Sync + std::fmt::Debug {
    /// Records `signature` by `keyid`, remembered until the Unix second
    /// `forget_after`, at Unix second `now`: [`Replay::Fresh`] the first
    /// time, [`Replay::Replayed`] after; [`Replay::Full`] when it cannot be
    /// recorded (a store that cannot answer must say so, never `Fresh`).
    fn seen_once<'a>(
        &'a self,
        keyid: &'a str,
        signature: &'a [u8],
        forget_after: i64,
        now: i64,
    ) -> Pin<Box<dyn Future<Output = Replay> + Send + 'a>>;
}

impl ReplayStore for ReplayCache {
    fn seen_once<'a>(
        &'a self,
        keyid: &'a str,
        signature: &'a [u8],
        forget_after: i64,
        now: i64,
    ) -> Pin<Box<dyn Future<Output = Replay> + Send + 'a>> {
        let answer = self.check(keyid, signature, forget_after, now);
        Box::pin(std::future::ready(answer))
    }
}

/// Verified signatures by (keyid, signature bytes) until they expire.
#[derive(Debug)]
pub struct ReplayCache {
    capacity: usize,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Entry key to the Unix second after which it is forgotten.
    seen: HashMap<[u8; 32], i64>,
    /// `(forget_after, key)`, oldest first, to drop expired entries.
    by_expiry: BTreeSet<(i64, [u8; 32])>,
}

impl ReplayCache {
    /// A cache of at most `capacity` signatures (at least one).
    pub fn new(capacity: usize) -> ReplayCache {
        ReplayCache { capacity: capacity.max(1), state: Mutex::new(State::default()) }
    }

    /// Records the verified signature `signature` by `keyid`, valid until
    /// the Unix second `forget_after`, at Unix second `now`: [`Replay::Fresh`]
    /// the first time, [`Replay::Replayed`] after. Expired entries go first;
    /// a cache still full refuses ([`Replay::Full`]) rather than forget a
    /// signature that is still valid.
    pub fn check(&self, keyid: &str, signature: &[u8], forget_after: i64, now: i64) -> Replay {
        let key = entry_key(keyid, signature);
        let mut s = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        while let Some(&(at, k)) = s.by_expiry.first() {
            if at >= now {
                break;
            }
            s.by_expiry.pop_first();
            s.seen.remove(&k);
        }
        if s.seen.contains_key(&key) {
            return Replay::Replayed;
        }
        if s.seen.len() >= self.capacity {
            return Replay::Full;
        }
        s.seen.insert(key, forget_after);
        s.by_expiry.insert((forget_after, key));
        Replay::Fresh
    }

    /// The number of signatures held.
    pub fn len(&self) -> usize {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner).seen.len()
    }

    /// Whether no signature is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn entry_key(keyid: &str, signature: &[u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(keyid.as_bytes());
    h.update([0]);
    h.update(signature);
    h.finalize().into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_is_fresh_once_then_replayed_until_it_expires() {
        let c = ReplayCache::new(10);
        assert_eq!(c.check("k", b"sig-a", 100, 50), Replay::Fresh);
        assert_eq!(c.check("k", b"sig-a", 100, 60), Replay::Replayed);
        assert_eq!(c.check("k", b"sig-a", 100, 100), Replay::Replayed);
        // Another key with the same bytes is another entry.
        assert_eq!(c.check("k2", b"sig-a", 100, 60), Replay::Fresh);
        // Past its window it is forgotten (and then refused by the time
        // check before it ever gets here).
        assert_eq!(c.check("k", b"sig-b", 200, 101), Replay::Fresh);
        assert_eq!(c.len(), 1);
    }

    #[test]
    fn a_full_cache_evicts_expired_entries_first_then_refuses() {
        let c = ReplayCache::new(2);
        assert_eq!(c.check("k", b"1", 100, 0), Replay::Fresh);
        assert_eq!(c.check("k", b"2", 300, 0), Replay::Fresh);
        assert_eq!(c.check("k", b"3", 300, 50), Replay::Full);
        // Still remembered: a full cache forgets nothing unexpired.
        assert_eq!(c.check("k", b"1", 100, 50), Replay::Replayed);
        // Once `1` expired there is room again.
        assert_eq!(c.check("k", b"3", 300, 150), Replay::Fresh);
        assert_eq!(c.check("k", b"2", 300, 150), Replay::Replayed);
        assert_eq!(c.len(), 2);
    }
}
