//! The payment family: charges, amounts, errors and the ledger's health.

use super::*;

/// The payment metrics.
pub struct PaymentMetrics {
    pub(super) charges: IntCounterVec,
    pub(super) amount: IntCounterVec,
    pub(super) errors: IntCounterVec,
    pub(super) ledger_healthy: IntGauge,
    pub(super) postgres_up: IntGauge,
    pub(super) spool_rows: IntGauge,
    /// Where the PostgreSQL series go when a PostgreSQL ledger is open.
    registry: Registry,
    postgres_registered: std::sync::Once,
}

/// A `crawler-error` code as a metric label: snake_case, as the license
/// and x402 codes are (`InternalError` -> `internal_error`).
pub fn error_label(code: crawlgate_policy::payment::cloudflare::CrawlerError) -> &'static str {
    use crawlgate_policy::payment::cloudflare::CrawlerError as E;
    match code {
        E::CrawlerForbidden => "crawler_forbidden",
        E::StrongAuthRequired => "strong_auth_required",
        E::InvalidSignature => "invalid_signature",
        E::InvalidCrawlerPriceValue => "invalid_crawler_price_value",
        E::MissingCrawlerPrice => "missing_crawler_price",
        E::InvalidCrawlerExactPrice => "invalid_crawler_exact_price",
        E::InvalidCrawlerMaxPrice => "invalid_crawler_max_price",
        E::ConflictingPriceHeaders => "conflicting_price_headers",
        E::InternalError => "internal_error",
    }
}

impl PaymentMetrics {
    /// Creates and registers them.
    pub fn new(r: &Registry) -> prometheus::Result<PaymentMetrics> {
        let counter = |name: &str, help: &str, labels: &[&str]| -> prometheus::Result<IntCounterVec> {
            let c = IntCounterVec::new(Opts::new(name, help), labels)?;
            r.register(Box::new(c.clone()))?;
            Ok(c)
        };
        let m = PaymentMetrics {
            charges: counter(
                "crawlgate_charges_total",
                "Charges recorded in the ledger, by agent token and dialect.",
                &["agent", "dialect"],
            )?,
            amount: counter(
                "crawlgate_charged_amount_minor_units_total",
                "Amount charged, in minor units of the currency (cents for USD, yen for JPY), by agent token and currency.",
                &["agent", "currency"],
            )?,
            errors: counter(
                "crawlgate_payment_errors_total",
                "Payment refusals and failures, by code in snake_case: a crawler-error of Cloudflare's dialect (internal_error, missing_crawler_price...), license_*, x402_*, ledger_unavailable.",
                &["code"],
            )?,
            ledger_healthy: IntGauge::new(
                "crawlgate_ledger_healthy",
                "1 while the ledger takes charges and its last commit succeeded, 0 when charges cannot be recorded (charging answers 500, or 503 when the ledger file was removed or replaced or the spool is past its bound).",
            )?,
            postgres_up: IntGauge::new(
                "crawlgate_ledger_postgres_up",
                "1 while the PostgreSQL ledger answers, 0 while charges go to the local spool; absent without a PostgreSQL ledger.",
            )?,
            spool_rows: IntGauge::new(
                "crawlgate_ledger_spool_rows",
                "Rows in the PostgreSQL ledger's local spool, waiting to drain into PostgreSQL.",
            )?,
            registry: r.clone(),
            postgres_registered: std::sync::Once::new(),
        };
        r.register(Box::new(m.ledger_healthy.clone()))?;
        m.ledger_healthy.set(1);
        for code in crawlgate_policy::payment::cloudflare::CrawlerError::ALL {
            m.errors.with_label_values(&[error_label(code)]);
        }
        m.errors.with_label_values(&["ledger_unavailable"]);
        Ok(m)
    }

    /// Creates the error series of the license and x402 dialects' codes
    /// (the proxy's list), so they read 0 from the start.
    pub fn error_codes(&self, codes: &[&str]) {
        for code in codes {
            self.errors.with_label_values(&[code]);
        }
    }

    /// Creates the charge series of every charge group's tokens (each
    /// offered dialect, each currency of its prices), so they read 0 from
    /// the start.
    pub fn init(&self, policy: &Policy) {
        for (token, currencies) in policy.charge_tokens() {
            for d in policy.payment().dialects.iter() {
                self.charges.with_label_values(&[token, d.as_str()]);
            }
            for c in currencies {
                self.amount.with_label_values(&[token, c.code()]);
            }
        }
    }

    /// Charges per agent since the start, for the page and
    /// `/api/charges`: `{"charging", "agents": [{"agent", "charges",
    /// "amounts": ["USD 0.06", ...]}]}`, agents by name.
    pub fn charges_json(&self, charging: bool) -> serde_json::Value {
        use std::collections::BTreeMap;
        let mut agents: BTreeMap<String, (u64, Vec<String>)> = BTreeMap::new();
        let label = |m: &prometheus::proto::Metric, name: &str| {
            m.get_label().iter().find(|l| l.name() == name).map(|l| l.value().to_string()).unwrap_or_default()
        };
        for family in prometheus::core::Collector::collect(&self.charges) {
            for m in family.get_metric() {
                agents.entry(label(m, "agent")).or_default().0 += m.get_counter().get_value() as u64;
            }
        }
        for family in prometheus::core::Collector::collect(&self.amount) {
            for m in family.get_metric() {
                let code = label(m, "currency");
                let exponent = crawlgate_policy::payment::Currency::from_code(&code).map_or(0, |c| c.exponent());
                let minor = m.get_counter().get_value() as u64;
                let text = format!("{code} {}", crawlgate_payment::ledger::decimal(minor, exponent));
                agents.entry(label(m, "agent")).or_default().1.push(text);
            }
        }
        let rows: Vec<serde_json::Value> = agents
            .into_iter()
            .map(|(agent, (charges, amounts))| serde_json::json!({"agent": agent, "charges": charges, "amounts": amounts}))
            .collect();
        serde_json::json!({"charging": charging, "agents": rows})
    }

    /// Counts one charge recorded in the ledger: its dialect and amount.
    pub fn charge(
        &self,
        agent: &str,
        dialect: crawlgate_policy::payment::Dialect,
        price: crawlgate_policy::payment::Price,
    ) {
        self.charges.with_label_values(&[agent, dialect.as_str()]).inc();
        self.amount.with_label_values(&[agent, price.currency.code()]).inc_by(price.minor);
    }

    /// Counts a refusal or failure of Cloudflare's dialect, by its
    /// `crawler-error` code.
    pub fn error(&self, code: crawlgate_policy::payment::cloudflare::CrawlerError) {
        self.errors.with_label_values(&[error_label(code)]).inc();
    }

    /// Records whether the ledger's last commit succeeded.
    pub fn ledger_healthy(&self, ok: bool) {
        self.ledger_healthy.set(i64::from(ok));
    }

    /// The ledger's state at a scrape: healthy, whether PostgreSQL answers
    /// (`None`: an SQLite ledger), the spool's rows. The PostgreSQL series
    /// are registered on the first call with one.
    pub fn ledger_state(&self, healthy: bool, postgres_up: Option<bool>, spool_rows: u64) {
        self.ledger_healthy.set(i64::from(healthy));
        if let Some(up) = postgres_up {
            self.postgres_registered.call_once(|| {
                for g in [&self.postgres_up, &self.spool_rows] {
                    if let Err(e) = self.registry.register(Box::new(g.clone())) {
                        tracing::warn!(error = %e, "A ledger metric could not be registered");
                    }
                }
            });
            self.postgres_up.set(i64::from(up));
            self.spool_rows.set(i64::try_from(spool_rows).unwrap_or(i64::MAX));
        }
    }

    /// Counts a refusal or failure of the license and x402 dialects, by its
    /// code (one of those given to [`PaymentMetrics::error_codes`]).
    pub fn error_code(&self, code: &'static str) {
        self.errors.with_label_values(&[code]).inc();
    }
}
