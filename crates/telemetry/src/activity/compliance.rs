//! Which agents request pages without having fetched `/robots.txt` in the
//! preceding 24 hours, per agent and client network (a /24 for IPv4, a /48
//! for IPv6: crawlers spread over addresses of one network, and a network
//! key keeps one crawler from filling the table). Bounded: a shard that
//! reaches its share of the capacity drops its least recently seen tenth.

use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::hash::BuildHasher;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

/// How long a robots.txt fetch covers later requests (RFC 9309 section
/// 2.4: crawlers should not use a cached robots.txt for more than 24 hours).
pub const WINDOW_SECS: u64 = 24 * 60 * 60;

const SHARDS: usize = 16;

/// A client network.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Net {
    /// The first three octets of an IPv4 address.
    V4([u8; 3]),
    /// The first six octets of an IPv6 address.
    V6([u8; 6]),
    /// No address known.
    Unknown,
}

impl Net {
    /// The network an address belongs to (an IPv4-mapped IPv6 address is
    /// its IPv4 address).
    pub fn of(addr: Option<IpAddr>) -> Net {
        match addr.map(|a| a.to_canonical()) {
            Some(IpAddr::V4(a)) => {
                let o = a.octets();
                Net::V4([o[0], o[1], o[2]])
            }
            Some(IpAddr::V6(a)) => {
                let o = a.octets();
                Net::V6([o[0], o[1], o[2], o[3], o[4], o[5]])
            }
            None => Net::Unknown,
        }
    }
}

impl std::fmt::Display for Net {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Net::V4([a, b, c]) => write!(f, "{a}.{b}.{c}.0/24"),
            Net::V6(o) => {
                let seg = |i: usize| u16::from_be_bytes([o[i], o[i + 1]]);
                write!(f, "{:x}:{:x}:{:x}::/48", seg(0), seg(2), seg(4))
            }
            Net::Unknown => f.write_str("unknown"),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Key {
    agent: Arc<str>,
    net: Net,
}

/// What is known of one agent on one network.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Client {
    /// Last robots.txt fetch (Unix seconds, 0: none seen).
    pub robots_at: u64,
    /// Page requests made with no robots.txt fetch in the preceding 24 h.
    pub without_robots: u64,
    /// Last request (Unix seconds).
    pub last_seen: u64,
}

/// The bounded table.
pub struct Compliance {
    shards: Box<[Mutex<HashMap<Key, Client>>]>,
    per_shard: usize,
    hasher: RandomState,
}

impl Compliance {
    /// A table of about `capacity` agent-network pairs.
    pub fn new(capacity: usize) -> Compliance {
        Compliance {
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
            per_shard: (capacity / SHARDS).max(10),
            hasher: RandomState::new(),
        }
    }

    fn with<T>(&self, agent: &Arc<str>, net: Net, f: impl FnOnce(&mut HashMap<Key, Client>, Key) -> T) -> T {
        let key = Key { agent: agent.clone(), net };
        let i = (self.hasher.hash_one(&key) as usize) % SHARDS;
        let shard = &self.shards[i % self.shards.len()];
        let mut map = match shard.lock() {
            Ok(m) => m,
            Err(poisoned) => poisoned.into_inner(),
        };
        if map.len() >= self.per_shard && !map.contains_key(&key) {
            evict(&mut map);
        }
        f(&mut map, key)
    }

    /// A robots.txt fetch.
    pub fn robots(&self, agent: &Arc<str>, net: Net, now: u64) {
        self.with(agent, net, |map, key| {
            let c = map.entry(key).or_default();
            c.robots_at = now;
            c.last_seen = now;
        });
    }

    /// A page request; true when no robots.txt fetch covers it.
    pub fn page(&self, agent: &Arc<str>, net: Net, now: u64) -> bool {
        self.with(agent, net, |map, key| {
            let c = map.entry(key).or_default();
            c.last_seen = now;
            let covered = c.robots_at != 0 && now.saturating_sub(c.robots_at) <= WINDOW_SECS;
            if !covered {
                c.without_robots += 1;
            }
            !covered
        })
    }

    /// Every pair with requests not covered by a robots.txt fetch.
    pub fn offenders(&self) -> Vec<(Arc<str>, Net, Client)> {
        let mut out = Vec::new();
        for shard in self.shards.iter() {
            let map = match shard.lock() {
                Ok(m) => m,
                Err(poisoned) => poisoned.into_inner(),
            };
            out.extend(map.iter().filter(|(_, c)| c.without_robots > 0).map(|(k, c)| (k.agent.clone(), k.net, *c)));
        }
        out
    }

    /// Pairs tracked.
    pub fn tracked(&self) -> usize {
        self.shards.iter().map(|s| s.lock().map_or(0, |m| m.len())).sum()
    }

    /// The most pairs tracked at once.
    pub fn capacity(&self) -> usize {
        self.per_shard * SHARDS
    }
}

/// Drops the least recently seen tenth of a full shard.
fn evict(map: &mut HashMap<Key, Client>) {
    let mut seen: Vec<u64> = map.values().map(|c| c.last_seen).collect();
    let nth = seen.len() / 10;
    let (_, cut, _) = seen.select_nth_unstable(nth);
    let cut = *cut;
    let mut to_drop = nth + 1;
    map.retain(|_, c| {
        if to_drop > 0 && c.last_seen <= cut {
            to_drop -= 1;
            false
        } else {
            true
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn networks() {
        let net = |s: &str| Net::of(Some(s.parse().unwrap())).to_string();
        assert_eq!(net("192.0.2.77"), "192.0.2.0/24");
        assert_eq!(net("::ffff:192.0.2.77"), "192.0.2.0/24");
        assert_eq!(net("2001:db8:abcd:12::1"), "2001:db8:abcd::/48");
        assert_eq!(Net::of(None).to_string(), "unknown");
    }

    #[test]
    fn robots_fetch_covers_a_day_per_agent_and_network() {
        let c = Compliance::new(1000);
        let a: Arc<str> = "GPTBot".into();
        let b: Arc<str> = "ClaudeBot".into();
        let n1 = Net::V4([192, 0, 2]);
        let n2 = Net::V4([198, 51, 100]);
        c.robots(&a, n1, 1_000);
        assert!(!c.page(&a, n1, 1_001));
        assert!(!c.page(&a, n1, 1_000 + WINDOW_SECS));
        assert!(c.page(&a, n1, 1_001 + WINDOW_SECS));
        assert!(c.page(&a, n2, 1_002));
        assert!(c.page(&b, n1, 1_002));
        let mut off: Vec<(String, String, u64)> =
            c.offenders().into_iter().map(|(a, n, c)| (a.to_string(), n.to_string(), c.without_robots)).collect();
        off.sort();
        assert_eq!(
            off,
            vec![
                ("ClaudeBot".into(), "192.0.2.0/24".into(), 1),
                ("GPTBot".into(), "192.0.2.0/24".into(), 1),
                ("GPTBot".into(), "198.51.100.0/24".into(), 1),
            ]
        );
    }

    #[test]
    fn bounded() {
        let c = Compliance::new(1_600);
        let a: Arc<str> = "x".into();
        for i in 0..100_000u32 {
            let o = i.to_be_bytes();
            c.page(&a, Net::V4([o[1], o[2], o[3]]), u64::from(i));
        }
        assert!(c.tracked() <= c.capacity(), "{} > {}", c.tracked(), c.capacity());
        assert!(c.tracked() >= c.capacity() / 2, "{}", c.tracked());
    }
}
