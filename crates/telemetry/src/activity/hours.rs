//! Per-hour sums over the last 30 days in a ring of atomics, for the
//! crawl-to-referral ratios over 24 hours, 7 days and 30 days. Each
//! 8-byte slot packs which lap of the ring (30-day period since the Unix
//! epoch, modulo 65,536) it counts, in its high 16 bits, with the sum, in
//! its low 48 bits (saturating at 2^48 - 1: 281 TB of bytes in one hour),
//! so moving a slot to a new hour and adding to it is one compare-and-swap,
//! as in the minute ring of `timeline`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// Hours kept: 30 days.
pub const HOURS: usize = 30 * 24;

const SUM_BITS: u32 = 48;
const SUM_MASK: u64 = (1 << SUM_BITS) - 1;
const LAP_MASK: u64 = (1 << (64 - SUM_BITS)) - 1;

/// The slot of `hour` and the lap tag it carries there.
fn place(hour: u64) -> (usize, u64) {
    let index = (hour % HOURS as u64) as usize;
    let lap = (hour / HOURS as u64) & LAP_MASK;
    (index, lap << SUM_BITS)
}

/// Whether the lap tag `slot` is behind `now` (within half the tag space).
fn laps_behind(slot: u64, now: u64) -> bool {
    let diff = (now >> SUM_BITS).wrapping_sub(slot >> SUM_BITS) & LAP_MASK;
    diff != 0 && diff <= LAP_MASK / 2
}

/// One ring, allocated on its first addition (5.6 KiB).
#[derive(Default)]
pub struct Hours {
    slots: OnceLock<Box<[AtomicU64]>>,
}

impl Hours {
    /// Adds `n` in `hour` (hours since the Unix epoch).
    pub fn add(&self, hour: u64, n: u64) {
        if n == 0 {
            return;
        }
        let slots = self.slots.get_or_init(|| (0..HOURS).map(|_| AtomicU64::new(0)).collect());
        let (index, stamp) = place(hour);
        let Some(slot) = slots.get(index) else { return };
        let mut cur = slot.load(Ordering::Relaxed);
        loop {
            let next = if cur & SUM_MASK == 0 || laps_behind(cur & !SUM_MASK, stamp) {
                stamp | n.min(SUM_MASK)
            } else if cur & !SUM_MASK == stamp {
                stamp | (cur & SUM_MASK).saturating_add(n).min(SUM_MASK)
            } else {
                return; // the slot already counts a later hour
            };
            match slot.compare_exchange_weak(cur, next, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return,
                Err(actual) => cur = actual,
            }
        }
    }

    /// The sum of the `n` hours ending with `end` (inclusive; at most
    /// [`HOURS`]).
    pub fn sum(&self, end: u64, n: usize) -> u64 {
        let Some(slots) = self.slots.get() else { return 0 };
        (0..n.min(HOURS) as u64)
            .filter_map(|back| end.checked_sub(back))
            .map(|hour| {
                let (index, stamp) = place(hour);
                let v = slots.get(index).map_or(0, |s| s.load(Ordering::Relaxed));
                if v & !SUM_MASK == stamp {
                    v & SUM_MASK
                } else {
                    0
                }
            })
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_per_hour_and_forgets_after_thirty_days() {
        let h = Hours::default();
        assert_eq!(h.sum(100, 24), 0);
        h.add(100, 5);
        h.add(100, 7);
        h.add(99, 1);
        h.add(76, 100);
        assert_eq!((h.sum(100, 1), h.sum(100, 2), h.sum(100, 24), h.sum(100, 25)), (12, 13, 13, 113));
        // The same slot thirty days later starts again.
        let later = 100 + HOURS as u64;
        h.add(later, 2);
        assert_eq!((h.sum(later, 1), h.sum(later, HOURS)), (2, 2));
        // A late addition for the old hour does not overwrite the new one.
        h.add(100, 9);
        assert_eq!(h.sum(later, 1), 2);
        assert_eq!(h.sum(5, HOURS + 10), 0);
        // Sums saturate.
        h.add(later, u64::MAX);
        assert_eq!(h.sum(later, 1), SUM_MASK);
    }
}
