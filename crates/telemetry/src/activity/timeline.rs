//! Per-minute request counts over the last 24 hours in a ring of atomics.
//! Each 4-byte slot packs which lap of the ring (day since the Unix epoch,
//! modulo 1024) it counts, in its high 10 bits, with the count, in its low
//! 22 bits, so moving a slot to a new minute and counting in it is one
//! compare-and-swap. A count saturates at 4,194,303 per minute (70,000
//! requests per second of one agent); a slot left untouched for exactly
//! 1024 days would be read as current.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;

/// Minutes kept: 24 hours.
pub const MINUTES: usize = 24 * 60;

const COUNT_BITS: u32 = 22;
const COUNT_MASK: u32 = (1 << COUNT_BITS) - 1;
const LAP_MASK: u64 = (1 << (32 - COUNT_BITS)) - 1;

/// The slot of `minute` and the lap tag it carries there.
fn place(minute: u64) -> (usize, u32) {
    let index = (minute % MINUTES as u64) as usize;
    let lap = ((minute / MINUTES as u64) & LAP_MASK) as u32;
    (index, lap << COUNT_BITS)
}

/// One ring, allocated on its first count (an agent never seen costs a
/// pointer): 1,440 slots of 4 bytes.
#[derive(Default)]
pub struct Timeline {
    slots: OnceLock<Box<[AtomicU32]>>,
}

impl Timeline {
    /// Counts one request in `minute` (minutes since the Unix epoch).
    pub fn add(&self, minute: u64) {
        let slots = self.slots.get_or_init(|| (0..MINUTES).map(|_| AtomicU32::new(0)).collect());
        let (index, stamp) = place(minute);
        let Some(slot) = slots.get(index) else { return };
        let mut cur = slot.load(Ordering::Relaxed);
        loop {
            let next = if cur & COUNT_MASK == 0 || laps_behind(cur & !COUNT_MASK, stamp) {
                stamp | 1
            } else if cur & !COUNT_MASK == stamp {
                if cur & COUNT_MASK == COUNT_MASK {
                    return; // saturated
                }
                cur + 1
            } else {
                return; // the slot already counts a later minute
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
                let (index, stamp) = place(minute);
                let v = slots.get(index).map_or(0, |s| s.load(Ordering::Relaxed));
                if v & !COUNT_MASK == stamp {
                    u64::from(v & COUNT_MASK)
                } else {
                    0
                }
            })
            .collect()
    }
}

/// Whether the lap tag `slot` is behind `now` (within half the tag space,
/// so a wrapped tag still compares).
fn laps_behind(slot: u32, now: u32) -> bool {
    let diff = (now >> COUNT_BITS).wrapping_sub(slot >> COUNT_BITS) & LAP_MASK as u32;
    diff != 0 && u64::from(diff) <= LAP_MASK / 2
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
        // Laps wrap: the tag of day 1024 is day 0's, and day 1023's slot is
        // still behind it.
        let day = MINUTES as u64;
        let t = Timeline::default();
        t.add(1023 * day + 7);
        t.add(1024 * day + 7);
        t.add(1023 * day + 7);
        assert_eq!(t.window(1024 * day + 7, 1), vec![1]);
        assert_eq!(t.window(1023 * day + 7, 1), vec![0]);
    }

    /// A slot is four bytes, so a ring is 5.6 KiB.
    #[test]
    fn a_ring_is_four_bytes_a_minute() {
        let t = Timeline::default();
        t.add(1);
        assert_eq!(t.slots.get().map(|s| std::mem::size_of_val(&**s)), Some(MINUTES * 4));
    }

    #[test]
    fn counts_saturate() {
        let t = Timeline::default();
        if let Some(slots) = t.slots.get_or_init(|| (0..MINUTES).map(|_| AtomicU32::new(0)).collect()).get(9) {
            slots.store(place(9).1 | (COUNT_MASK - 1), Ordering::Relaxed);
        }
        t.add(9);
        t.add(9);
        assert_eq!(t.window(9, 1), vec![u64::from(COUNT_MASK)]);
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
