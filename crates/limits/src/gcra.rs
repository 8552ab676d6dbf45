//! The generic cell rate algorithm (GCRA, ITU-T I.371 "virtual
//! scheduling"): one stored timestamp per key, exact, without the
//! boundary bursts of fixed windows.
//!
//! One step, with every time in nanoseconds (the shared store's Lua script
//! implements exactly the same):
//!
//! - `T = interval / count`, the emission interval;
//! - `tau = T * (burst - 1)`, the tolerance;
//! - `tat` = the stored theoretical arrival time, or `now` when absent;
//! - if `now < tat - tau`: deny, `retry_after = tat - tau - now`, nothing
//!   stored;
//! - else allow, store `new_tat = max(tat, now) + T`.
//!
//! A key may be dropped once `now >= tat`: an absent key then behaves the
//! same as the stored one. `Retry-After` is `retry_after` in whole seconds,
//! rounded up, at least 1 ([`retry_after_secs`]).

use std::time::Duration;

/// What a step decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Admitted.
    Allow,
    /// Over the limit: the next request would be admitted after this long.
    Deny {
        /// `tat - tau - now`.
        retry_after: Duration,
    },
}

impl Verdict {
    /// Whether the request is admitted.
    pub fn allowed(self) -> bool {
        self == Verdict::Allow
    }
}

/// The outcome of one step: the verdict and the key's new `tat` (`None`:
/// unchanged, for a denial).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    /// Admitted or not.
    pub verdict: Verdict,
    /// The `tat` to store after an admission.
    pub new_tat: Option<u64>,
}

/// One GCRA step for a key whose stored theoretical arrival time is `tat`
/// (`None`: absent), at `now`, with emission interval `emission_ns` (`T`)
/// and `burst` (at least 1; 0 counts as 1). Saturating arithmetic: no
/// input overflows.
#[inline]
pub fn step(tat: Option<u64>, now: u64, emission_ns: u64, burst: u32) -> Step {
    let tat = tat.unwrap_or(now);
    let tau = emission_ns.saturating_mul(u64::from(burst.max(1) - 1));
    let earliest = tat.saturating_sub(tau);
    if now < earliest {
        Step { verdict: Verdict::Deny { retry_after: Duration::from_nanos(earliest - now) }, new_tat: None }
    } else {
        Step { verdict: Verdict::Allow, new_tat: Some(tat.max(now).saturating_add(emission_ns)) }
    }
}

/// `Retry-After` in whole seconds (RFC 9110 section 10.2.3): `retry_after`
/// rounded up, at least 1.
pub fn retry_after_secs(retry_after: Duration) -> u64 {
    let secs = retry_after.as_secs() + u64::from(retry_after.subsec_nanos() > 0);
    secs.max(1)
}

/// A [`Duration`] in nanoseconds, saturating at `u64::MAX` (584 years).
pub fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const S: u64 = 1_000_000_000;

    #[test]
    fn two_per_second_burst_one() {
        let t = S / 2;
        let a = step(None, 0, t, 1);
        assert_eq!(a, Step { verdict: Verdict::Allow, new_tat: Some(t) });
        let b = step(a.new_tat, 1, t, 1);
        assert_eq!(b, Step { verdict: Verdict::Deny { retry_after: Duration::from_nanos(t - 1) }, new_tat: None });
        let c = step(a.new_tat, t, t, 1);
        assert_eq!(c, Step { verdict: Verdict::Allow, new_tat: Some(2 * t) });
    }

    #[test]
    fn burst_admits_that_many_at_once() {
        let t = S;
        let mut tat = None;
        let mut admitted = 0;
        for _ in 0..10 {
            let s = step(tat, 5 * S, t, 3);
            if s.verdict.allowed() {
                admitted += 1;
                tat = s.new_tat;
            }
        }
        assert_eq!(admitted, 3);
        assert_eq!(tat, Some(8 * S));
        // tat - tau - now = 8 - 2 - 5 seconds.
        assert_eq!(step(tat, 5 * S, t, 3).verdict, Verdict::Deny { retry_after: Duration::from_secs(1) });
    }

    #[test]
    fn retry_after_rounds_up_to_whole_seconds() {
        for (ns, secs) in [(0, 1), (1, 1), (S - 1, 1), (S, 1), (S + 1, 2), (59 * S + 7, 60)] {
            assert_eq!(retry_after_secs(Duration::from_nanos(ns)), secs, "{ns}");
        }
    }

    #[test]
    fn no_overflow_at_the_edges() {
        assert_eq!(step(Some(u64::MAX), 0, u64::MAX, u32::MAX).verdict, Verdict::Allow);
        assert_eq!(step(None, u64::MAX, u64::MAX, 1).new_tat, Some(u64::MAX));
    }

    /// The definition, written out with wide integers and a map.
    struct Reference {
        tat: Option<i128>,
    }

    impl Reference {
        fn step(&mut self, now: i128, t: i128, burst: i128) -> Option<i128> {
            let tat = self.tat.unwrap_or(now);
            let tau = t * (burst - 1);
            if now < tat - tau {
                Some(tat - tau - now)
            } else {
                self.tat = Some(tat.max(now) + t);
                None
            }
        }
    }

    proptest! {
        /// Over random arrival sequences, the step admits exactly the
        /// requests the definition admits, with the same retry_after; a key
        /// dropped once `now >= tat` changes nothing.
        #[test]
        fn matches_the_definition(
            emission in 1u64..5_000_000_000,
            burst in 1u32..20,
            gaps in proptest::collection::vec(0u64..3_000_000_000, 1..200),
            drop_idle in any::<bool>(),
        ) {
            let mut reference = Reference { tat: None };
            let mut tat: Option<u64> = None;
            let mut now = 0u64;
            for gap in gaps {
                now += gap;
                if drop_idle && tat.is_some_and(|t| now >= t) {
                    tat = None;
                }
                let want = reference.step(i128::from(now), i128::from(emission), i128::from(burst));
                let got = step(tat, now, emission, burst);
                match (want, got.verdict) {
                    (None, Verdict::Allow) => tat = got.new_tat,
                    (Some(r), Verdict::Deny { retry_after }) => prop_assert_eq!(r, retry_after.as_nanos() as i128),
                    (w, g) => prop_assert!(false, "at {now}: reference {w:?}, step {g:?}"),
                }
            }
        }

        /// In any window of length `w` starting at an admission, at most
        /// `burst + w / T` requests are admitted (the GCRA bound).
        #[test]
        fn never_more_than_burst_plus_rate(
            emission in 1_000u64..1_000_000,
            burst in 1u32..10,
            gaps in proptest::collection::vec(0u64..200_000, 1..300),
        ) {
            let mut tat = None;
            let mut now = 0u64;
            let mut admitted = Vec::new();
            for gap in gaps {
                now += gap;
                let s = step(tat, now, emission, burst);
                if s.verdict.allowed() {
                    tat = s.new_tat;
                    admitted.push(now);
                }
            }
            for (i, &start) in admitted.iter().enumerate() {
                for (j, &end) in admitted.iter().enumerate().skip(i) {
                    let n = (j - i + 1) as u64;
                    prop_assert!(n <= u64::from(burst) + (end - start) / emission);
                }
            }
        }
    }
}
