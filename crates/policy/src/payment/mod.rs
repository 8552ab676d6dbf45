//! Charging verified crawlers: the `[payment]` settings, a charge group's
//! prices, the paths that are never charged, and what a request in a
//! charge group is answered in each payment dialect. Pure: the ledger and
//! the settlement are `crawlgate-payment`'s, the headers the proxy's.

mod charge;
pub mod cloudflare;
pub(crate) mod compile;
pub mod dialects;
pub mod price;
pub(crate) mod raw;

pub use price::{Currency, Offer, Price, PriceError};

use crate::pattern::Pattern;

/// A payment dialect crawlgate can speak.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// Cloudflare's pay per crawl headers (`crawler-price`,
    /// `crawler-exact-price`, `crawler-max-price`, `crawler-charged`),
    /// identity by Web Bot Auth.
    CrawlerPrice,
    /// RSL 1.0 license tokens (`Authorization: License`).
    License,
    /// x402 v2 payments settled through a facilitator.
    X402,
}

impl Dialect {
    /// Every dialect, in metric label order.
    pub const ALL: [Dialect; 3] = [Dialect::CrawlerPrice, Dialect::License, Dialect::X402];

    /// Its name in the policy file, the ledger and metrics.
    pub const fn as_str(self) -> &'static str {
        match self {
            Dialect::CrawlerPrice => "crawler-price",
            Dialect::License => "license",
            Dialect::X402 => "x402",
        }
    }

    /// The dialect named `name` in the policy file or the ledger.
    pub fn from_name(name: &str) -> Option<Dialect> {
        Dialect::ALL.into_iter().find(|d| d.as_str() == name)
    }
}

/// The compiled `[payment]` table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PaymentSettings {
    /// The terms URL, sent as `Link: <URL>; rel="terms-of-service"` on a
    /// 402 and on a charged response.
    pub terms: Option<String>,
    /// `free` as written (on top of the built-in free paths).
    pub free: Vec<String>,
    /// The ledger: an SQLite file (`ledger`, else `ledger.sqlite` in
    /// `[verification] state_dir`) or a `postgres://` URL; `None` when no
    /// group charges.
    pub ledger: Option<String>,
    /// The local spool of a PostgreSQL ledger (an SQLite file):
    /// `ledger_spool`, else `ledger-spool.sqlite` in `state_dir`.
    pub ledger_spool: Option<String>,
    /// A file holding the PostgreSQL password (first line).
    pub ledger_password_file: Option<String>,
    /// Where `ledger` is written in the policy file (a byte offset), for
    /// checks outside this crate (`crawlgate check`: its directory).
    pub ledger_at: Option<usize>,
    /// The dialects offered, in the order written.
    pub dialects: Vec<Dialect>,
    /// crawlgate is the origin of a Cloudflare zone with pay per crawl:
    /// a `cf-pay-per-crawl` field from a trusted proxy is obeyed.
    pub cloudflare_origin: bool,
    /// This instance's name in its ledger rows; `None`: the host name,
    /// found at start.
    pub instance_id: Option<String>,
    /// Whether some group has `enforce = "charge"`.
    pub charging: bool,
    /// `[payment.rsl]`: how license tokens are verified (the "license"
    /// dialect).
    pub rsl: Option<dialects::RslSettings>,
    /// `[payment.x402]`: the facilitator and what is paid (the "x402"
    /// dialect).
    pub x402: Option<dialects::X402Settings>,
    /// The site's hosts (`server.hosts`, else `upstream.sni` and
    /// `robots_txt.origin_host`), which an x402 resource URL names.
    pub site: Vec<String>,
}

impl Default for PaymentSettings {
    fn default() -> PaymentSettings {
        PaymentSettings {
            terms: None,
            free: Vec::new(),
            ledger: None,
            ledger_spool: None,
            ledger_password_file: None,
            ledger_at: None,
            dialects: vec![Dialect::CrawlerPrice],
            cloudflare_origin: false,
            instance_id: None,
            charging: false,
            rsl: None,
            x402: None,
            site: Vec::new(),
        }
    }
}

impl PaymentSettings {
    /// Whether the ledger is a PostgreSQL database.
    pub fn ledger_is_postgres(&self) -> bool {
        self.ledger.as_deref().is_some_and(is_postgres_url)
    }

    /// The `resource.url` of an x402 payment requirement for `path`,
    /// requested with `Host` `host`: the request's host when it is one of
    /// the site's, else the site's first; the request's own only when
    /// nothing names the site. The client's `Host` never names another
    /// site.
    pub fn resource_url(&self, host: Option<&str>, path: &str) -> String {
        let host = host.map(str::trim).unwrap_or("");
        let host = match self.site.first() {
            None => host,
            Some(first) => self.site.iter().find(|s| s.eq_ignore_ascii_case(host)).unwrap_or(first),
        };
        format!("https://{host}{path}")
    }

    /// Whether `dialect` is offered.
    pub fn offers(&self, dialect: Dialect) -> bool {
        self.dialects.contains(&dialect)
    }

    /// The `Link` value of the terms (RFC 8288), if any.
    pub fn terms_link(&self) -> Option<String> {
        self.terms.as_ref().map(|t| format!("<{t}>; rel=\"terms-of-service\""))
    }
}

/// A charge group's prices.
#[derive(Clone, Debug)]
pub(crate) struct GroupCharge {
    /// The group's `price`.
    pub price: Price,
    /// The line of its `price` value (`explain` names it).
    pub line: usize,
    /// `[[group.prices]]`, most specific first.
    pub prices: Vec<PathPrice>,
    /// Offset of the group's `enforce` value, for the checks that need the
    /// whole policy.
    pub at: usize,
}

/// One `[[group.prices]]` entry.
#[derive(Clone, Debug)]
pub(crate) struct PathPrice {
    pub pattern: Pattern,
    pub price: Price,
    /// The line of its `price` value.
    pub line: usize,
}

/// Where the price of a charged request comes from, as `explain` shows
/// it: the group's `price` or the `[[group.prices]]` entry that matched.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PriceSource {
    /// The price.
    pub price: Price,
    /// The line of the `price` value in the policy file.
    pub line: usize,
    /// The `[[group.prices]]` path that matched; `None` for the group's
    /// own `price`.
    pub path: Option<String>,
}

/// Paths always free, whatever the policy: the files crawlers read to
/// learn the rules (RFC 9309 robots.txt, agents.txt, sitemaps, RFC 9116
/// security.txt in both places, Cloudflare's `/crawlers.json`).
pub const BUILTIN_FREE: [&str; 6] =
    ["/robots.txt", "/agents.txt", "/sitemap.xml", "/security.txt", "/.well-known/security.txt", "/crawlers.json"];

/// The compiled free list: the built-in paths, the policy's sitemaps and
/// the `free` patterns.
#[derive(Clone, Debug, Default)]
pub(crate) struct FreePaths {
    /// Exact paths (no query), compared whole.
    pub exact: Vec<String>,
    /// `free` patterns (RFC 9309 matching on path and query).
    pub patterns: Vec<Pattern>,
}

#[cfg(test)]
mod tests;

/// Whether `s` names a PostgreSQL database rather than a file.
pub fn is_postgres_url(s: &str) -> bool {
    s.starts_with("postgres://") || s.starts_with("postgresql://")
}

/// Checks the shape of a PostgreSQL URL
/// (`postgres://[user[:password]@]host[:port][/database][?key=value&...]`,
/// libpq's "Connection URIs"): a host, a port of 1 to 65535, no spaces.
/// The client library reads it again at start; this finds the mistakes
/// a policy check can name.
pub fn check_postgres_url(s: &str) -> Result<(), String> {
    let rest = s.split_once("://").map(|(_, r)| r).unwrap_or_default();
    if s.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("holds a space or a control character".into());
    }
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let authority = &rest[..end];
    let hostport = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    for one in hostport.split(',') {
        let (host, port) = match one.strip_prefix('[') {
            Some(v6) => match v6.split_once(']') {
                Some((h, p)) => (h, p.strip_prefix(':')),
                None => return Err(format!("the IPv6 address `{one}` lacks its `]`")),
            },
            None => match one.split_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (one, None),
            },
        };
        if host.is_empty() {
            return Err("names no host".into());
        }
        if let Some(p) = port {
            if !p.parse::<u16>().is_ok_and(|n| n > 0) {
                return Err(format!("the port `{p}` is not a number from 1 to 65535"));
            }
        }
    }
    if let Some((_, query)) = rest[end..].split_once('?') {
        if let Some(kv) = query.split('&').find(|kv| !kv.contains('=')) {
            return Err(format!("the parameter `{kv}` is not key=value"));
        }
    }
    let bytes = s.as_bytes();
    for (i, b) in bytes.iter().enumerate() {
        if *b == b'%'
            && !(bytes.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
                && bytes.get(i + 2).is_some_and(u8::is_ascii_hexdigit))
        {
            return Err("has a `%` not followed by two hex digits".into());
        }
    }
    Ok(())
}
