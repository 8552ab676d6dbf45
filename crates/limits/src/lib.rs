//! crawlgate-limits: rate limits (issue 24).
//!
//! Owns the GCRA step ([`gcra`]), the in-process store ([`local`]) and the
//! [`Limiter`] the proxy calls, which holds an optional shared store behind
//! the [`SharedGcra`] trait. It does not decide which limit or key applies
//! to a request (that is `crawlgate_policy::Policy::limit`, pure), nor
//! speak to Redis (the `crawlgate-store` crate implements [`SharedGcra`]).

pub mod gcra;
pub mod local;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use crawlgate_policy::limits::{GroupLimit, LimitKey};

pub use gcra::{retry_after_secs, Verdict};
pub use local::LocalStore;

/// Why a shared store could not answer.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SharedError {
    /// Not connected (down, or reconnecting).
    #[error("the shared store is not connected")]
    Down,
    /// The store answered with an error, or the connection failed during
    /// the call.
    #[error("the shared store failed: {0}")]
    Failed(String),
    /// The store did not answer within its budget.
    #[error("the shared store did not answer in time")]
    Timeout,
}

/// A store shared by several crawlgate instances that runs one GCRA step
/// atomically, exactly as [`gcra`] defines it, with the store's own clock.
#[async_trait]
pub trait SharedGcra: Send + Sync {
    /// One step on `key` (the full key, `[limits] key_prefix` included),
    /// with emission interval `emission` and `burst` (at least 1).
    async fn step(&self, key: &str, emission: Duration, burst: u32) -> Result<Verdict, SharedError>;

    /// Whether the store is connected now; while it is not, the limiter
    /// does not call [`SharedGcra::step`] and decides locally.
    fn is_up(&self) -> bool;
}

/// Which store decided a check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// The in-process store: no shared store is configured.
    Local,
    /// The shared store.
    Shared,
    /// The in-process store, because the shared store could not answer.
    Fallback(Fallback),
}

/// Why a check fell back to the in-process store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fallback {
    /// The store was down and was not called (it said so before the call,
    /// or when the call went to send).
    Down,
    /// The call returned an error.
    Error,
    /// The call took longer than `[limits] timeout`.
    Timeout,
}

impl Fallback {
    /// Every reason, in the order of [`Limiter::fallbacks`].
    pub const ALL: [Fallback; 3] = [Fallback::Down, Fallback::Error, Fallback::Timeout];

    /// The `reason` label of `crawlgate_limits_fallback_total`.
    pub fn as_str(self) -> &'static str {
        match self {
            Fallback::Down => "down",
            Fallback::Error => "error",
            Fallback::Timeout => "timeout",
        }
    }
}

/// The outcome of [`Limiter::check`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Checked {
    /// Admitted or not.
    pub verdict: Verdict,
    /// Which store decided.
    pub source: Source,
}

struct Shared {
    store: Arc<dyn SharedGcra>,
    /// The limiter's timer per step; `None` when the store keeps the
    /// budget itself.
    budget: Option<Duration>,
    prefix: String,
}

/// The front the proxy calls: one per process, kept across reloads (a
/// reload changes rates, never buckets).
pub struct Limiter {
    local: LocalStore,
    hasher: local::KeyHasher,
    epoch: Instant,
    shared: Option<Shared>,
    /// Checks decided locally because the shared store could not answer,
    /// by [`Fallback`] in the order of [`Fallback::ALL`].
    fallbacks: [AtomicU64; 3],
}

impl Limiter {
    /// A limiter over the in-process store alone, holding at most about
    /// `max_keys` keys.
    pub fn new(max_keys: usize) -> Limiter {
        Limiter {
            local: LocalStore::new(max_keys),
            hasher: Default::default(),
            epoch: Instant::now(),
            shared: None,
            fallbacks: Default::default(),
        }
    }

    /// Adds a shared store, its keys prefixed with `prefix`. `budget` is
    /// the time one step may take, timed here; `None` when the store keeps
    /// the budget itself and answers [`SharedError::Timeout`] past it (one
    /// timer per check, and the store, which knows whether its answer had
    /// arrived, decides what was late). On an error or past the budget, the
    /// in-process store decides that request: fail-open to local limits,
    /// never to no limit.
    pub fn with_shared(mut self, store: Arc<dyn SharedGcra>, budget: Option<Duration>, prefix: &str) -> Limiter {
        self.shared = Some(Shared { store, budget, prefix: prefix.to_string() });
        self
    }

    /// Whether a shared store is configured.
    pub fn has_shared(&self) -> bool {
        self.shared.is_some()
    }

    /// How many checks fell back to the in-process store, per reason:
    /// the values of `crawlgate_limits_fallback_total{reason}`.
    pub fn fallbacks(&self) -> [(Fallback, u64); 3] {
        Fallback::ALL.map(|why| (why, self.fallbacks[why as usize].load(Ordering::Relaxed)))
    }

    /// The in-process store.
    pub fn local(&self) -> &LocalStore {
        &self.local
    }

    /// Counts one request that arrived at `now` against `limit` under `key`
    /// in the in-process store. The caller passes the arrival time it
    /// already has: reading the clock can cost more than the check.
    pub fn check_local(&self, key: &LimitKey<'_>, limit: &GroupLimit, now: Instant) -> Verdict {
        let now = gcra::nanos(now.saturating_duration_since(self.epoch));
        self.local.check(self.hasher.hash(key), now, gcra::nanos(limit.rate.emission()), limit.burst)
    }

    /// Counts one request that arrived at `now` against `limit` under
    /// `key`: in the shared store when one is configured and answers within
    /// its budget (with the store's clock), else in the in-process store.
    pub async fn check(&self, key: &LimitKey<'_>, limit: &GroupLimit, now: Instant) -> Checked {
        let Some(shared) = &self.shared else {
            return Checked { verdict: self.check_local(key, limit, now), source: Source::Local };
        };
        let fallback = if !shared.store.is_up() {
            Fallback::Down
        } else {
            let name = format!("{}{key}", shared.prefix);
            let step = shared.store.step(&name, limit.rate.emission(), limit.burst);
            let answer = match shared.budget {
                None => step.await,
                Some(budget) => tokio::time::timeout(budget, step).await.unwrap_or(Err(SharedError::Timeout)),
            };
            match answer {
                Ok(verdict) => return Checked { verdict, source: Source::Shared },
                Err(SharedError::Timeout) => Fallback::Timeout,
                // Down since `is_up` was read: not called either.
                Err(SharedError::Down) => Fallback::Down,
                Err(SharedError::Failed(_)) => Fallback::Error,
            }
        };
        self.fallbacks[fallback as usize].fetch_add(1, Ordering::Relaxed);
        // The arrival time, not the time the store gave up: a timeout must
        // not move the local clock on.
        Checked { verdict: self.check_local(key, limit, now), source: Source::Fallback(fallback) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crawlgate_policy::limits::{LimitSource, Network, Rate, Subject};
    use std::sync::atomic::AtomicUsize;

    /// A shared store that answers as told, counting its calls and
    /// recording the keys it was given.
    struct Scripted {
        up: bool,
        answer: Result<Verdict, SharedError>,
        delay: Duration,
        calls: AtomicUsize,
        keys: std::sync::Mutex<Vec<String>>,
    }

    #[async_trait]
    impl SharedGcra for Scripted {
        async fn step(&self, key: &str, _emission: Duration, _burst: u32) -> Result<Verdict, SharedError> {
            self.calls.fetch_add(1, Ordering::Relaxed);
            self.keys.lock().unwrap().push(key.to_string());
            tokio::time::sleep(self.delay).await;
            self.answer.clone()
        }
        fn is_up(&self) -> bool {
            self.up
        }
    }

    fn scripted(up: bool, answer: Result<Verdict, SharedError>, delay: Duration) -> Arc<Scripted> {
        Arc::new(Scripted { up, answer, delay, calls: AtomicUsize::new(0), keys: Default::default() })
    }

    const LIMIT: GroupLimit =
        GroupLimit { rate: Rate { count: 1, per: Duration::from_secs(3600) }, burst: 1, source: LimitSource::Rate };

    fn key() -> LimitKey<'static> {
        LimitKey { host: None, subject: Subject::Network(Network::of([192, 0, 2, 7].into(), 24, 56)), path: None }
    }

    #[tokio::test]
    async fn local_alone() {
        let l = Limiter::new(1000);
        assert_eq!(
            l.check(&key(), &LIMIT, Instant::now()).await,
            Checked { verdict: Verdict::Allow, source: Source::Local }
        );
        let second = l.check(&key(), &LIMIT, Instant::now()).await;
        assert_eq!(second.source, Source::Local);
        assert!(!second.verdict.allowed());
    }

    #[tokio::test]
    async fn the_shared_store_decides_when_it_answers() {
        let deny = Verdict::Deny { retry_after: Duration::from_secs(7) };
        let s = scripted(true, Ok(deny), Duration::ZERO);
        let l = Limiter::new(1000).with_shared(s.clone(), Some(Duration::from_millis(50)), "cg:");
        assert_eq!(l.check(&key(), &LIMIT, Instant::now()).await, Checked { verdict: deny, source: Source::Shared });
        assert_eq!(*s.keys.lock().unwrap(), ["cg:net:192.0.2.0/24"]);
        assert!(l.local().is_empty());
    }

    #[tokio::test]
    async fn failures_fall_back_to_local_limits() {
        for (store, why) in [
            (scripted(false, Ok(Verdict::Allow), Duration::ZERO), Fallback::Down),
            (scripted(true, Err(SharedError::Down), Duration::ZERO), Fallback::Down),
            (scripted(true, Err(SharedError::Failed("NOSCRIPT".into())), Duration::ZERO), Fallback::Error),
            (scripted(true, Ok(Verdict::Allow), Duration::from_secs(5)), Fallback::Timeout),
            // The store's own budget ran out first.
            (scripted(true, Err(SharedError::Timeout), Duration::ZERO), Fallback::Timeout),
        ] {
            let l = Limiter::new(1000).with_shared(store.clone(), Some(Duration::from_millis(20)), "cg:");
            assert_eq!(
                l.check(&key(), &LIMIT, Instant::now()).await,
                Checked { verdict: Verdict::Allow, source: Source::Fallback(why) }
            );
            // The local bucket counts: the second request is refused, not
            // let through as "no limit".
            let second = l.check(&key(), &LIMIT, Instant::now()).await;
            assert_eq!(second.source, Source::Fallback(why));
            assert!(!second.verdict.allowed(), "{why:?}");
            let calls = if store.up { 2 } else { 0 };
            assert_eq!(store.calls.load(Ordering::Relaxed), calls, "{why:?}");
            let counted: Vec<u64> = l.fallbacks().iter().map(|&(_, n)| n).collect();
            let want: Vec<u64> = Fallback::ALL.iter().map(|&r| if r == why { 2 } else { 0 }).collect();
            assert_eq!(counted, want, "{why:?}");
        }
    }

    #[tokio::test]
    async fn a_store_that_keeps_its_budget_is_not_timed_here() {
        // No timer of the limiter's: a slow answer still decides...
        let slow = scripted(true, Ok(Verdict::Allow), Duration::from_millis(30));
        let l = Limiter::new(1000).with_shared(slow.clone(), None, "cg:");
        assert_eq!(
            l.check(&key(), &LIMIT, Instant::now()).await,
            Checked { verdict: Verdict::Allow, source: Source::Shared }
        );
        // ...and the store's own timeout is a timeout.
        let late = scripted(true, Err(SharedError::Timeout), Duration::ZERO);
        let l = Limiter::new(1000).with_shared(late, None, "cg:");
        assert_eq!(
            l.check(&key(), &LIMIT, Instant::now()).await,
            Checked { verdict: Verdict::Allow, source: Source::Fallback(Fallback::Timeout) }
        );
        assert_eq!(l.fallbacks()[2], (Fallback::Timeout, 1));
    }
}
