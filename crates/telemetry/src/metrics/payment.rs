//! The payment family: charges, amounts, errors and the ledger's health.

use super::*;

/// The payment metrics.
pub struct PaymentMetrics {
    pub(super) charges: IntCounterVec,
    pub(super) amount: IntCounterVec,
    pub(super) errors: IntCounterVec,
    pub(super) ledger_healthy: IntGauge,
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
                "crawlgate_charged_amount_total",
                "Amount charged, in minor units of the currency (cents for USD), by agent token and currency.",
                &["agent", "currency"],
            )?,
            errors: counter(
                "crawlgate_payment_errors_total",
                "Payment refusals and failures, by crawler-error code (Cloudflare's dialect) or license_* / x402_* code.",
                &["code"],
            )?,
            ledger_healthy: IntGauge::new(
                "crawlgate_ledger_healthy",
                "1 while the ledger's last commit succeeded, 0 when charges cannot be recorded (charging answers 500).",
            )?,
        };
        r.register(Box::new(m.ledger_healthy.clone()))?;
        m.ledger_healthy.set(1);
        for code in crawlgate_policy::payment::cloudflare::CrawlerError::ALL {
            m.errors.with_label_values(&[code.as_str()]);
        }
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
        self.errors.with_label_values(&[code.as_str()]).inc();
    }

    /// Records whether the ledger's last commit succeeded.
    pub fn ledger_healthy(&self, ok: bool) {
        self.ledger_healthy.set(i64::from(ok));
    }

    /// Counts a refusal or failure of the license and x402 dialects, by its
    /// code (one of those given to [`PaymentMetrics::error_codes`]).
    pub fn error_code(&self, code: &'static str) {
        self.errors.with_label_values(&[code]).inc();
    }
}
