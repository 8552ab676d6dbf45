//! Per-minute request counts over the last 24 hours in a ring of atomics.
//! Each slot packs the minute it counts (high 32 bits, minutes since the
//! Unix epoch) with the count (low 32 bits), so moving a slot to a new
//! minute and counting in it is one compare-and-swap.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// Minutes kept: 24 hours.
pub const MINUTES: usize = 24 * 60;

const COUNT_MASK: u64 = 0xffff_ffff;

/// One ring, allocated on its first count (an agent never seen costs a
/// pointer).
#[derive(Default)]
pub struct Timeline {
    slots: OnceLock<Box<[AtomicU64]>>,
}

impl Timeline {
    /// Counts one request in `minute` (minutes since the Unix epoch).
    pub fn add(&self, minute: u64) {
        let slots = self.slots.get_or_init(|| (0..MINUTES).map(|_| AtomicU64::new(0)).collect());
        let Some(slot) = slots.get((minute % MINUTES as u64) as usize) else { return };
        let stamp = (minute & COUNT_MASK) << 32;
        let mut cur = slot.load(Ordering::Relaxed);
        loop {
            let next = if cur & !COUNT_MASK == stamp {
                if cur & COUNT_MASK == COUNT_MASK {
                    return; // saturated
                }
                cur + 1
            } else if (cur >> 32) > (minute & COUNT_MASK) {
                return; // the slot already counts a later minute
            } else {
                stamp | 1
            };
            match slot.compare_exchange_weak(cur, next, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return,
                Err(actual) => cur = actual,
            }
        }
    }

    /// Counts of the `n` minutes ending with `end` (inclusive), oldest
    /// first; minutes with no request are 0.
    pub fn window(&self, end: u64, n: usize) -> Vec<u64> {
        let n = n.min(MINUTES);
        let Some(slots) = self.slots.get() else { return vec![0; n] };
        (0..n as u64)
            .rev()
            .map(|back| {
                let Some(minute) = end.checked_sub(back) else { return 0 };
                let v = slots.get((minute % MINUTES as u64) as usize).map_or(0, |s| s.load(Ordering::Relaxed));
                if v >> 32 == minute & COUNT_MASK {
                    v & COUNT_MASK
                } else {
                    0
                }
            })
            .collect()
    }
}

impl Timeline {
    /// The sum of the `n` minutes ending with `end` (inclusive).
    pub fn sum(&self, end: u64, n: usize) -> u64 {
        if self.slots.get().is_none() {
            return 0;
        }
        self.window(end, n).iter().sum()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn counts_per_minute_and_forgets_after_a_day() {
        let t = Timeline::default();
        assert_eq!(t.window(100, 3), vec![0, 0, 0]);
        t.add(100);
        t.add(100);
        t.add(99);
        assert_eq!(t.window(100, 3), vec![0, 1, 2]);
        // The same slot a day later starts again from 1.
        t.add(100 + MINUTES as u64);
        assert_eq!(t.window(100 + MINUTES as u64, 2), vec![0, 1]);
        // A late count for the old minute does not overwrite the new one.
        t.add(100);
        assert_eq!(t.window(100 + MINUTES as u64, 1), vec![1]);
        assert_eq!(t.window(5, MINUTES + 10).len(), MINUTES);
    }

    #[test]
    fn exact_counts_under_concurrent_updates() {
        let t = Arc::new(Timeline::default());
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let t = t.clone();
                std::thread::spawn(move || {
                    for i in 0..10_000u64 {
                        t.add(1_000 + i % 3);
                    }
                })
            })
            .collect();
        for th in threads {
            th.join().unwrap();
        }
        let w = t.window(1_002, 3);
        assert_eq!(w.iter().sum::<u64>(), 80_000);
        assert_eq!(w, vec![26_672, 26_664, 26_664]);
    }
}
