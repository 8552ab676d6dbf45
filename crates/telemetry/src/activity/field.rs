//! The numbers the field's leaders show (issue 35): per crawler operator,
//! its crawl requests against the visitors its AI products sent (the
//! crawl-to-referral ratio) over 24 hours, 7 days and 30 days, next to
//! the bytes its crawlers took; and Markdown requested against served.
//! `/api/referrals` (this instance), and the fleet's through the
//! referral minutes published beside the agents' counts.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crawlgate_policy::catalog;
use crawlgate_policy::referrers::{referrers, same_operator};
use serde_json::{json, Value};

use super::hours::Hours;
use super::{unix_now, Activity, AgentStats, Count, Timeline};

/// The windows of the ratio: name and hours.
pub const RATIO_WINDOWS: [(&str, usize); 3] = [("24h", 24), ("7d", 7 * 24), ("30d", 30 * 24)];

/// The fleet's name for a referrer's counts: `referrer:<product>` (no
/// agent name has a colon), with the counter [`REFERRALS`].
pub const REFERRER_PREFIX: &str = "referrer:";

/// The counter name of the referral minutes published to the fleet.
pub const REFERRALS: &str = "referrals";

/// One referrer's referrals over time.
#[derive(Default)]
pub(crate) struct ReferralTime {
    /// Per minute over 24 hours (published to the fleet).
    pub minutes: Timeline,
    /// Per hour over 30 days (the 7- and 30-day ratios).
    pub hours: Hours,
}

/// Crawls, referrals and bytes of one operator over one window.
fn window_json(crawls: u64, referrals: u64, bytes: u64) -> Value {
    json!({
        "crawl_requests": crawls,
        "referrals": referrals,
        "crawls_per_referral": (referrals > 0).then(|| crawls as f64 / referrals as f64),
        "bytes_sent": bytes,
    })
}

impl AgentStats {
    /// The operator of this agent's catalog entry, if it has one.
    fn operator(&self) -> Option<&'static str> {
        catalog::lookup(&self.name).map(|e| e.operator.as_str())
    }
}

impl Activity {
    /// `/api/referrals`: visitors sent by AI products, per product (since
    /// the start), and per operator its crawlers' requests and bytes beside
    /// them, since the start and over each of [`RATIO_WINDOWS`]; then
    /// Markdown requested and served, per agent and in total.
    pub fn referrals_json(&self) -> Value {
        self.referrals_json_at(unix_now())
    }

    /// [`Activity::referrals_json`] at `now` (Unix seconds).
    pub fn referrals_json_at(&self, now: u64) -> Value {
        let hour = now / 3600;
        let mut products: Vec<(&str, &str, u64)> = Vec::new();
        for (r, c) in referrers().iter().zip(self.referrals.iter()) {
            let n = c.load(Ordering::Relaxed);
            match products.iter_mut().find(|(p, _, _)| *p == r.product) {
                Some(e) => e.2 += n,
                None => products.push((&r.product, &r.operator, n)),
            }
        }
        let seen = self.seen();
        let mut operators: Vec<Value> = Vec::new();
        let mut done: Vec<&str> = Vec::new();
        for (_, operator, _) in &products {
            if done.contains(operator) {
                continue;
            }
            done.push(operator);
            let referrals: u64 = products.iter().filter(|p| p.1 == *operator).map(|p| p.2).sum();
            let crawlers: Vec<&Arc<AgentStats>> =
                seen.iter().filter(|s| s.operator().is_some_and(|o| same_operator(o, operator))).collect();
            let crawls: u64 = crawlers.iter().map(|s| s.requests.load(Ordering::Relaxed)).sum();
            if referrals == 0 && crawls == 0 {
                continue;
            }
            let bytes: u64 = crawlers.iter().map(|s| s.bytes.load(Ordering::Relaxed)).sum();
            let mut windows = serde_json::Map::new();
            for (name, hours) in RATIO_WINDOWS {
                let crawls: u64 = crawlers.iter().map(|s| s.hours[0].sum(hour, hours)).sum();
                let bytes: u64 = crawlers.iter().map(|s| s.hours[1].sum(hour, hours)).sum();
                let referrals: u64 = referrers()
                    .iter()
                    .zip(self.referral_time.iter())
                    .filter(|(r, _)| r.operator == *operator)
                    .map(|(_, t)| t.hours.sum(hour, hours))
                    .sum();
                windows.insert(name.into(), window_json(crawls, referrals, bytes));
            }
            operators.push(json!({
                "operator": operator,
                "crawl_requests": crawls,
                "referrals": referrals,
                "crawls_per_referral": (referrals > 0).then(|| crawls as f64 / referrals as f64),
                "bytes_sent": bytes,
                "windows": Value::Object(windows),
            }));
        }
        products.retain(|p| p.2 > 0);
        products.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(b.0)));
        let markdown: Vec<Value> = seen
            .iter()
            .filter(|s| s.total(Count::MarkdownRequested) > 0)
            .map(|s| {
                json!({
                    "agent": &*s.name,
                    "requested": s.total(Count::MarkdownRequested),
                    "served": s.total(Count::MarkdownServed),
                })
            })
            .collect();
        let sum = |c: Count| seen.iter().map(|s| s.total(c)).sum::<u64>();
        json!({
            "now": now,
            "products": products.iter().map(|(p, o, n)| json!({"product": p, "operator": o, "referrals": n})).collect::<Vec<_>>(),
            "operators": operators,
            "windows": RATIO_WINDOWS.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
            "markdown": {
                "requested": sum(Count::MarkdownRequested),
                "served": sum(Count::MarkdownServed),
                "agents": markdown,
            },
            "note": "Crawl requests are those of the operator's crawlers in the catalog; referrals are visits whose \
                     Referer is one of its AI products. Counts live in memory since the process started: a window \
                     longer than that counts since the start.",
        })
    }

    /// Each referrer's referrals per minute from `first` to `last`, for
    /// the fleet: `(referrer:<product>, referrals, minute, count)`.
    pub(crate) fn referral_minutes(&self, first: u64, last: u64) -> Vec<(Arc<str>, &'static str, u64, u64)> {
        let n = usize::try_from(last.saturating_sub(first) + 1).unwrap_or(usize::MAX);
        let mut out = Vec::new();
        for (r, t) in referrers().iter().zip(self.referral_time.iter()) {
            let counts = t.minutes.window(last, n);
            if counts.iter().all(|c| *c == 0) {
                continue;
            }
            let name: Arc<str> = Arc::from(format!("{REFERRER_PREFIX}{}", r.product));
            for (minute, count) in (first..=last).zip(counts) {
                if count > 0 {
                    out.push((name.clone(), REFERRALS, minute, count));
                }
            }
        }
        out
    }
}

/// The fleet's crawl-to-referral ratio per operator over a window, from
/// the fleet's summed counts per agent name (`referrer:<product>` rows
/// hold referrals).
pub fn fleet_referrals(counts: &std::collections::BTreeMap<&str, std::collections::BTreeMap<&str, u64>>) -> Vec<Value> {
    let mut out = Vec::new();
    let mut done: Vec<&str> = Vec::new();
    for r in referrers() {
        if done.contains(&r.operator.as_str()) {
            continue;
        }
        done.push(&r.operator);
        let referrals: u64 = referrers()
            .iter()
            .filter(|x| x.operator == r.operator)
            .filter_map(|x| counts.get(format!("{REFERRER_PREFIX}{}", x.product).as_str()))
            .filter_map(|c| c.get(REFERRALS))
            .sum();
        let crawls: u64 = counts
            .iter()
            .filter(|(agent, _)| catalog::lookup(agent).is_some_and(|e| same_operator(&e.operator, &r.operator)))
            .filter_map(|(_, c)| c.get(Count::Requests.key()))
            .sum();
        if crawls == 0 && referrals == 0 {
            continue;
        }
        out.push(json!({
            "operator": &r.operator,
            "crawl_requests": crawls,
            "referrals": referrals,
            "crawls_per_referral": (referrals > 0).then(|| crawls as f64 / referrals as f64),
        }));
    }
    out
}
