//! The verification family: outcomes per claimed token and method, signatures, list refreshes, untrusted forwarders.

use super::*;

/// The verification metrics: outcomes, the IP lists' state and the
/// resolver's latency and cache.
pub struct VerificationMetrics {
    pub(super) verifications: IntCounterVec,
    pub(super) signatures: IntCounterVec,
    pub(super) list_age: GaugeVec,
    pub(super) list_prefixes: IntGaugeVec,
    pub(super) list_failures: IntCounterVec,
    pub(super) dns_lookup: Histogram,
    pub(super) dns_cache: IntGauge,
    pub(super) untrusted_forwarded: IntCounter,
    /// Unix second of the last "untrusted forwarder" log line (0: never).
    pub(super) untrusted_logged: AtomicU64,
}

/// The bounded `verification` label of `crawlgate_requests_total`.
pub const VERIFICATION_LABELS: [&str; 4] = ["none", "verified", "unverified", "spoofed"];

impl VerificationMetrics {
    pub(super) fn new(r: &Registry) -> prometheus::Result<VerificationMetrics> {
        let list_age = GaugeVec::new(
            Opts::new(
                "crawlgate_verification_list_age_seconds",
                "Age of the IP list copy in use, by source (-1: never loaded).",
            ),
            &["source"],
        )?;
        r.register(Box::new(list_age.clone()))?;
        let list_prefixes = IntGaugeVec::new(
            Opts::new("crawlgate_verification_list_prefixes", "Prefixes in the IP list copy in use, by source."),
            &["source"],
        )?;
        r.register(Box::new(list_prefixes.clone()))?;
        let dns_lookup = Histogram::with_opts(
            HistogramOpts::new(
                "crawlgate_dns_lookup_seconds",
                "Time a request waited for a forward-confirmed reverse DNS check that was not cached.",
            )
            .buckets(exponential_buckets(0.0005, 2.0, 12)?),
        )?;
        r.register(Box::new(dns_lookup.clone()))?;
        let dns_cache = IntGauge::new("crawlgate_dns_cache_entries", "Addresses in the reverse DNS cache.")?;
        r.register(Box::new(dns_cache.clone()))?;
        let untrusted_forwarded = IntCounter::new(
            "crawlgate_untrusted_forwarded_total",
            "Identity claims from private or loopback peers that carry X-Forwarded-For or Forwarded but are not in server.trusted_proxies (a load balancer whose address is verified instead of the crawler's).",
        )?;
        r.register(Box::new(untrusted_forwarded.clone()))?;
        let signatures = counter(
            r,
            "crawlgate_signatures_total",
            "Requests with a Web Bot Auth signature, by outcome (verified, legacy, invalid, expired, unknown_bot, replayed).",
            &["outcome"],
        )?;
        // Every outcome from the start, so that a rate over a zero reads 0.
        for o in crawlgate_policy::verification::SignatureOutcome::ALL {
            signatures.with_label_values(&[o.as_str()]);
        }
        Ok(VerificationMetrics {
            verifications: counter(
                r,
                "crawlgate_verifications_total",
                "Verified identity claims by agent token, method (ip, rdns, signature, none) and result (verified, unverified, spoofed).",
                &["agent", "method", "result"],
            )?,
            signatures,
            list_age,
            list_prefixes,
            list_failures: counter(
                r,
                "crawlgate_verification_list_refresh_failures_total",
                "IP list refreshes that failed (the previous copy was kept), by source.",
                &["source"],
            )?,
            dns_lookup,
            dns_cache,
            untrusted_forwarded,
            untrusted_logged: AtomicU64::new(0),
        })
    }

    /// Counts one verification outcome.
    pub fn verification(&self, agent: &str, v: crawlgate_policy::verification::Verification) {
        use crawlgate_policy::verification::Verification;
        let method = match v {
            Verification::Verified(m) | Verification::Spoofed(m) => m.as_str(),
            Verification::Unverified | Verification::NotApplicable => "none",
        };
        self.verifications.with_label_values(&[agent, method, v.label()]).inc();
    }

    /// Counts one request's Web Bot Auth signature outcome.
    pub fn signature(&self, outcome: crawlgate_policy::verification::SignatureOutcome) {
        self.signatures.with_label_values(&[outcome.as_str()]).inc();
    }

    /// The signature outcome counts, in [`SignatureOutcome::ALL`] order
    /// (for the page).
    ///
    /// [`SignatureOutcome::ALL`]: crawlgate_policy::verification::SignatureOutcome::ALL
    pub fn signature_counts(&self) -> [u64; 6] {
        crawlgate_policy::verification::SignatureOutcome::ALL
            .map(|o| self.signatures.get_metric_with_label_values(&[o.as_str()]).map_or(0, |c| c.get()))
    }

    /// Records one list's state; `failures` is the list's running total.
    pub fn list_state(&self, source: &str, age_secs: Option<u64>, prefixes: usize, failures: u64) {
        self.list_age.with_label_values(&[source]).set(age_secs.map_or(-1.0, |a| a as f64));
        self.list_prefixes.with_label_values(&[source]).set(i64::try_from(prefixes).unwrap_or(i64::MAX));
        let c = self.list_failures.with_label_values(&[source]);
        let seen = c.get();
        if failures > seen {
            c.inc_by(failures - seen);
        }
    }

    /// Counts one claim through an untrusted forwarder; true when it is the
    /// first in a minute, so the caller logs at most one line a minute.
    pub fn untrusted_forwarded(&self, now: SystemTime) -> bool {
        self.untrusted_forwarded.inc();
        let now = unix_seconds(now);
        let last = self.untrusted_logged.load(Ordering::Relaxed);
        (last == 0 || now >= last.saturating_add(60))
            && self.untrusted_logged.compare_exchange(last, now.max(1), Ordering::Relaxed, Ordering::Relaxed).is_ok()
    }

    /// Observes one uncached reverse DNS check.
    pub fn dns_lookup(&self, elapsed: Duration) {
        self.dns_lookup.observe(elapsed.as_secs_f64());
    }

    /// Records the reverse DNS cache size.
    pub fn dns_cache(&self, entries: usize) {
        self.dns_cache.set(i64::try_from(entries).unwrap_or(i64::MAX));
    }
}
