//! The payment questions the proxy asks the policy: the `[payment]`
//! settings, what a request in a charge group costs, which paths are
//! free, and the license link a paid response carries.

use super::{Currency, PaymentSettings, Price, PriceSource};
use crate::policy::Policy;

impl Policy {
    /// The `[payment]` settings.
    pub fn payment(&self) -> &PaymentSettings {
        &self.settings.payment
    }

    /// Every token of a charge group (policy spelling) with the currencies
    /// of its group's prices.
    pub fn charge_tokens(&self) -> Vec<(&str, Vec<Currency>)> {
        let mut out = Vec::new();
        for g in &self.groups {
            let Some(charge) = &g.charge else { continue };
            let mut currencies = vec![charge.price.currency];
            for p in &charge.prices {
                if !currencies.contains(&p.price.currency) {
                    currencies.push(p.price.currency);
                }
            }
            for t in g.tokens.iter().filter(|t| *t != "*") {
                out.push((t.as_str(), currencies.clone()));
            }
        }
        out
    }

    /// Whether the canonical `path_and_query` is never charged: a file
    /// crawlgate serves itself, a built-in free path, a sitemap of the
    /// policy, or a `[payment] free` pattern.
    pub fn is_free(&self, path_and_query: &str) -> bool {
        if self.local_file(path_and_query).is_some() {
            return true;
        }
        let path = path_and_query.split_once('?').map_or(path_and_query, |(p, _)| p);
        self.free_paths.exact.iter().any(|e| e == path)
            || self.free_paths.patterns.iter().any(|p| p.matches(path_and_query))
    }

    /// The price of a request that group `group` decides on the canonical
    /// `path_and_query`: `None` when the group does not charge or the path
    /// is free. The most specific `[[group.prices]]` entry wins, else the
    /// group's `price`.
    pub fn price(&self, group: usize, path_and_query: &str) -> Option<Price> {
        let charge = self.groups.get(group)?.charge.as_ref()?;
        if self.is_free(path_and_query) {
            return None;
        }
        let hit = charge.prices.iter().find(|p| p.pattern.matches(path_and_query));
        Some(hit.map_or(charge.price, |p| p.price))
    }

    /// [`Policy::price`] and where it is written: the line of the
    /// `price` value, and the `[[group.prices]]` path when one matched.
    pub fn price_source(&self, group: usize, path_and_query: &str) -> Option<PriceSource> {
        let charge = self.groups.get(group)?.charge.as_ref()?;
        if self.is_free(path_and_query) {
            return None;
        }
        Some(match charge.prices.iter().find(|p| p.pattern.matches(path_and_query)) {
            Some(p) => PriceSource { price: p.price, line: p.line, path: Some(p.pattern.as_str().to_string()) },
            None => PriceSource { price: charge.price, line: charge.line, path: None },
        })
    }

    /// The `Link` of the site's RSL license (`robots_txt.license`, else the
    /// served `[rsl]` document), sent on a response a license token paid
    /// for (RSL 1.0: a 200 carries the license link).
    pub fn license_link(&self) -> Option<String> {
        self.license_href.as_ref().map(|h| format!("<{h}>; rel=\"license\"; type=\"application/rsl+xml\""))
    }
}
