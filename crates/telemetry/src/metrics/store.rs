//! The limits family: the shared (Redis) store's state and its failed calls,
//! and the requests over a rate that were logged or delayed, not refused.

use super::*;

/// The shared store's state (`[limits] store`), read from the store when
/// `/metrics` is scraped. Without a store `crawlgate_limits_store_up` is
/// absent (so an alert on it never fires for an instance that has none)
/// and `crawlgate_limits_store_configured` is 0.
pub(super) struct StoreMetrics {
    /// No labels: a child exists (and is exposed) once a store reports.
    pub(super) up: IntGaugeVec,
    pub(super) configured: IntGauge,
    pub(super) errors: IntCounter,
    /// By [`crawlgate_limits::Fallback::ALL`].
    pub(super) fallbacks: Vec<IntCounter>,
    /// Requests over their group's rate that were not refused.
    pub(super) exceeded: IntCounterVec,
}

impl StoreMetrics {
    pub(super) fn new(r: &Registry) -> prometheus::Result<StoreMetrics> {
        let up = IntGaugeVec::new(
            Opts::new(
                "crawlgate_limits_store_up",
                "1 while the shared store of [limits] store answers, 0 while rate limits fall back to this instance's store; absent without a shared store.",
            ),
            &[],
        )?;
        r.register(Box::new(up.clone()))?;
        let configured = IntGauge::new(
            "crawlgate_limits_store_configured",
            "1 when [limits] store names a shared store (crawlgate_limits_store_up is then exposed), 0 without one.",
        )?;
        r.register(Box::new(configured.clone()))?;
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
        let exceeded = IntCounterVec::new(
            Opts::new(
                "crawlgate_rate_exceeded_total",
                "Requests over their group's rate that were not refused, by agent token, group and action: would_limit (rate_mode = \"log\", passed) or delayed (rate_mode = \"delay\", held, then passed).",
            ),
            &["agent", "group", "action"],
        )?;
        r.register(Box::new(exceeded.clone()))?;
        Ok(StoreMetrics { up, configured, errors, fallbacks, exceeded })
    }
}

impl StoreMetrics {
    /// Creates the `crawlgate_rate_exceeded_total` series of an (agent,
    /// group) pair, as the other per-group series are, at 0.
    pub(super) fn pre_create_exceeded(&self, series: [&str; 2]) {
        for action in ["would_limit", "delayed"] {
            self.exceeded.with_label_values(&[series[0], series[1], action]);
        }
    }
}

impl Metrics {
    /// Counts a request over the rate of `group` that passed: `action` is
    /// `would_limit` or `delayed`.
    pub fn rate_exceeded(&self, agent: &str, group: &str, action: &'static str) {
        let labels = self.labels.load();
        self.store.exceeded.with_label_values(&[labels.agent(agent), labels.group(group), action]).inc();
    }
}

#[cfg(test)]
mod tests {
    use super::super::Metrics;

    fn text(m: &Metrics) -> String {
        String::from_utf8(m.encode().0).unwrap()
    }

    /// Without a store the up gauge is absent (an alert on it cannot fire
    /// forever) and `configured` says 0; with one both are exposed.
    #[test]
    fn the_up_gauge_exists_only_with_a_store() {
        let m = Metrics::with_verification(false).unwrap();
        m.limits_store(None);
        let t = text(&m);
        assert!(t.contains("\ncrawlgate_limits_store_configured 0\n"), "{t}");
        assert!(!t.contains("\ncrawlgate_limits_store_up") && !t.contains("TYPE crawlgate_limits_store_up"), "{t}");
        m.limits_store(Some((false, 2)));
        let t = text(&m);
        assert!(t.contains("\ncrawlgate_limits_store_configured 1\n"), "{t}");
        assert!(t.contains("\ncrawlgate_limits_store_up 0\n"), "{t}");
        assert!(t.contains("\ncrawlgate_limits_store_errors_total 2\n"), "{t}");
    }
}
