//! Space-saving top-k (Metwally, Agrawal, El Abbadi, "Efficient
//! Computation of Frequent and Top-k Elements in Data Streams", 2005): at
//! most `k` counters; a new key takes over the smallest counter and
//! inherits its count as its possible overestimate. Keys seen while fewer
//! than `k` distinct keys were tracked are counted exactly.

/// One tracked key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Counted<K> {
    /// The key.
    pub key: K,
    /// Its count (an upper bound).
    pub count: u64,
    /// How much of `count` may belong to keys it replaced.
    pub error: u64,
}

/// The top-k summary.
#[derive(Debug)]
pub struct SpaceSaving<K> {
    k: usize,
    entries: Vec<Counted<K>>,
}

impl<K> SpaceSaving<K> {
    /// A summary of at most `k` keys (at least one).
    pub fn new(k: usize) -> SpaceSaving<K> {
        SpaceSaving { k: k.max(1), entries: Vec::new() }
    }

    /// Counts the key `matches` selects, building it with `make` only when
    /// it is not tracked yet (so a repeated key costs no allocation).
    pub fn add_with(&mut self, matches: impl Fn(&K) -> bool, make: impl FnOnce() -> K) {
        if let Some(e) = self.entries.iter_mut().find(|e| matches(&e.key)) {
            e.count += 1;
            return;
        }
        if self.entries.len() < self.k {
            self.entries.push(Counted { key: make(), count: 1, error: 0 });
            return;
        }
        if let Some(min) = self.entries.iter_mut().min_by_key(|e| e.count) {
            let floor = min.count;
            *min = Counted { key: make(), count: floor + 1, error: floor };
        }
    }

    /// Number of tracked keys (never more than `k`).
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Tracked keys, highest count first.
    pub fn top(&self) -> Vec<&Counted<K>> {
        let mut v: Vec<&Counted<K>> = self.entries.iter().collect();
        v.sort_by_key(|e| std::cmp::Reverse(e.count));
        v
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    fn add(s: &mut SpaceSaving<String>, key: &str) {
        s.add_with(|k| k == key, || key.to_string());
    }

    #[test]
    fn exact_below_k_and_bounded_above() {
        let mut s = SpaceSaving::new(3);
        for key in ["a", "b", "a", "c", "a", "b"] {
            add(&mut s, key);
        }
        let top: Vec<(&str, u64, u64)> = s.top().iter().map(|e| (e.key.as_str(), e.count, e.error)).collect();
        assert_eq!(top, vec![("a", 3, 0), ("b", 2, 0), ("c", 1, 0)]);
        // A fourth key replaces the smallest (c, 1) and inherits its count.
        add(&mut s, "d");
        assert_eq!(s.len(), 3);
        let top: Vec<(&str, u64, u64)> = s.top().iter().map(|e| (e.key.as_str(), e.count, e.error)).collect();
        assert_eq!(top, vec![("a", 3, 0), ("b", 2, 0), ("d", 2, 1)]);
        for i in 0..10_000 {
            add(&mut s, &format!("k{i}"));
        }
        assert_eq!(s.len(), 3);
        // The total of the counts is the number of additions.
        assert_eq!(s.top().iter().map(|e| e.count).sum::<u64>(), 10_007);
    }

    #[test]
    fn a_frequent_key_survives_a_stream_of_rare_ones() {
        let mut s = SpaceSaving::new(20);
        for i in 0..100_000 {
            add(&mut s, &format!("rare{i}"));
            if i % 10 == 0 {
                add(&mut s, "hot");
            }
        }
        assert_eq!(s.len(), 20);
        let first = s.top()[0];
        assert_eq!(first.key, "hot");
        assert!(first.count - first.error <= 10_000 && first.count >= 10_000, "{first:?}");
    }

    #[test]
    fn exact_counts_under_concurrent_updates() {
        let s = Arc::new(Mutex::new(SpaceSaving::new(20)));
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let s = s.clone();
                std::thread::spawn(move || {
                    for i in 0..5_000u64 {
                        let key = format!("/path/{}", (i + t) % 20);
                        s.lock().unwrap().add_with(|k: &String| *k == key, || key.clone());
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let s = s.lock().unwrap();
        assert_eq!(s.len(), 20);
        for e in s.top() {
            assert_eq!((e.count, e.error), (2_000, 0), "{}", e.key);
        }
    }
}
