//! Per-minute counts read back for the fleet counters ([`crate::fleet`]).

use std::sync::Arc;

use super::{Activity, Count};

impl Activity {
    /// Every seen agent's non-zero per-minute [`Count`]s (by key) for the
    /// minutes `first..=last` (minutes since the Unix epoch), `last` at
    /// most 24 h after `first`, then each referrer's referrals
    /// (`referrer:<product>`, `referrals`).
    pub fn minute_counts(&self, first: u64, last: u64) -> Vec<(Arc<str>, &'static str, u64, u64)> {
        let n = usize::try_from(last.saturating_sub(first) + 1).unwrap_or(usize::MAX);
        let mut out = Vec::new();
        for agent in self.seen() {
            for c in Count::ALL {
                let counts = agent.timelines[c.index()].window(last, n);
                for (minute, count) in (first..=last).zip(counts) {
                    if count > 0 {
                        out.push((agent.name.clone(), c.key(), minute, count));
                    }
                }
            }
        }
        out.extend(self.referral_minutes(first, last));
        out
    }
}
