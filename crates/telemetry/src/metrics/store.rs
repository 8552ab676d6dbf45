//! The shared store family: the Redis store's state and its failed calls.

use super::*;

/// The shared store's state (`[limits] store`), read from the store when
/// `/metrics` is scraped; 0 and 0 without one.
pub(super) struct StoreMetrics {
    pub(super) up: IntGauge,
    pub(super) errors: IntCounter,
    /// By [`crawlgate_limits::Fallback::ALL`].
    pub(super) fallbacks: Vec<IntCounter>,
}

impl StoreMetrics {
    pub(super) fn new(r: &Registry) -> prometheus::Result<StoreMetrics> {
        let up = IntGauge::new(
            "crawlgate_limits_store_up",
            "1 while the shared store of [limits] store answers, 0 while rate limits fall back to this instance's store (and without a shared store).",
        )?;
        r.register(Box::new(up.clone()))?;
        let errors = IntCounter::new(
            "crawlgate_limits_store_errors_total",
            "Shared-store calls that failed or ran past [limits] timeout; each such request was limited by this instance's store.",
        )?;
        r.register(Box::new(errors.clone()))?;
        let fallback = IntCounterVec::new(
            Opts::new(
                "crawlgate_limits_fallback_total",
                "Rate-limit checks decided by this instance's store because the shared store of [limits] store could not answer, by reason: down (not called), error, timeout (past [limits] timeout).",
            ),
            &["reason"],
        )?;
        r.register(Box::new(fallback.clone()))?;
        let fallbacks =
            crawlgate_limits::Fallback::ALL.iter().map(|why| fallback.with_label_values(&[why.as_str()])).collect();
        Ok(StoreMetrics { up, errors, fallbacks })
    }
}
