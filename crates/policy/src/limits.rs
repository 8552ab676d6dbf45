//! Rate limits as data: the compiled `rate` / `burst` /
//! `enforce_crawl_delay` of a group, the `[limits]` table, and the pure
//! decision of which limit a request gets and under which key. The
//! counting (GCRA) and the stores are the `crawlgate-limits` crate's.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::Duration;

use crate::decision::GroupRef;

mod decide;

/// A request rate: `count` requests per `per`, written `"N/s"`, `"N/min"`
/// or `"N/h"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Rate {
    /// Requests per interval (at least 1).
    pub count: u32,
    /// The interval: one second, minute or hour (or a crawl delay).
    pub per: Duration,
}

impl Rate {
    /// The GCRA emission interval `T = per / count`: the spacing of
    /// requests the rate allows in the long run.
    pub fn emission(&self) -> Duration {
        self.per / self.count.max(1)
    }

    /// Parses `"N/s"`, `"N/min"` or `"N/h"` (N from 1 to 1,000,000,000, at
    /// most one request per microsecond).
    pub fn parse(s: &str) -> Result<Rate, String> {
        let bad = || format!("`{s}` is not a rate (use e.g. \"2/s\", \"30/min\", \"1000/h\")");
        // Its parts are trimmed: a control character there would pass unseen.
        crate::validate::no_control_char(s)?;
        let (n, unit) = s.trim().split_once('/').ok_or_else(bad)?;
        let count: u32 = n.trim().parse().map_err(|_| bad())?;
        if count == 0 || count > 1_000_000_000 {
            return Err(format!("`{s}`: the count must be from 1 to 1000000000"));
        }
        let per = match unit.trim() {
            "s" => Duration::from_secs(1),
            "min" => Duration::from_secs(60),
            "h" => Duration::from_secs(3600),
            _ => return Err(bad()),
        };
        // The shared store keeps times in microseconds (a Lua number is a
        // double): a finer emission interval would never advance there.
        if per / count < Duration::from_micros(1) {
            return Err(format!("`{s}`: at most one request per microsecond (1000000/s)"));
        }
        Ok(Rate { count, per })
    }
}

impl fmt::Display for Rate {
    /// `2/s`, `30/min`, `1000/h`; a crawl-delay rate as `1/1.5s`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.per.as_secs_f64() {
            1.0 => write!(f, "{}/s", self.count),
            60.0 => write!(f, "{}/min", self.count),
            3600.0 => write!(f, "{}/h", self.count),
            s => write!(f, "{}/{s}s", self.count),
        }
    }
}

/// Where a group's limit comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LimitSource {
    /// The group's `rate`.
    Rate,
    /// The group's `crawl_delay` under `enforce_crawl_delay = true` (one
    /// request per delay), stricter than its `rate` or alone.
    CrawlDelay,
}

/// A group's compiled limit: the stricter of `rate` and, with
/// `enforce_crawl_delay`, one request per `crawl_delay`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GroupLimit {
    /// The rate enforced.
    pub rate: Rate,
    /// How many requests may arrive at once (`burst`, default 1).
    pub burst: u32,
    /// Which key set it.
    pub source: LimitSource,
}

impl fmt::Display for GroupLimit {
    /// `2/s burst 1` or `1/2s burst 1 (crawl_delay)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} burst {}", self.rate, self.burst)?;
        if self.source == LimitSource::CrawlDelay {
            f.write_str(" (crawl_delay)")?;
        }
        Ok(())
    }
}

impl GroupLimit {
    /// The longest `Retry-After` a refusal may send: the limit's whole
    /// burst (`burst` emission intervals), at least a minute (a bucket
    /// kept across a reload to a faster rate may still be due later than
    /// the new interval), at most a day. A longer answer (a shared store's
    /// corrupted or foreign key, a clock jump) is clamped to it.
    pub fn max_retry_after(&self) -> Duration {
        self.rate
            .emission()
            .saturating_mul(self.burst.max(1))
            .clamp(Duration::from_secs(60), Duration::from_secs(86_400))
    }

    /// The limit for people: "2 requests per second, bursts of up to 3",
    /// "1 request every 10 s (its Crawl-delay), bursts of up to 5".
    pub fn describe(&self) -> String {
        let n = self.rate.count;
        let per = match self.rate.per.as_secs_f64() {
            1.0 => "per second".to_string(),
            60.0 => "per minute".to_string(),
            3600.0 => "per hour".to_string(),
            s => format!("every {s} s"),
        };
        let what = if n == 1 { "request" } else { "requests" };
        let from = if self.source == LimitSource::CrawlDelay { " (its Crawl-delay)" } else { "" };
        match self.burst {
            1 => format!("{n} {what} {per}{from}"),
            b => format!("{n} {what} {per}{from}, bursts of up to {b}"),
        }
    }
}

/// One `[[group.rates]]` entry: a limit of its own, with a bucket of its
/// own, for the requests whose path (and query) one of its `paths`
/// matches; an RFC 9309 pattern each (`*`, `$`). Over all the group's
/// entries the longest matching pattern wins, as between Allow and
/// Disallow; a path none matches gets the group's `rate`, if any.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathLimit {
    /// The patterns.
    pub paths: Vec<crate::pattern::Pattern>,
    /// Its bucket's name beside the group's: its first path as written.
    pub id: String,
    /// The limit.
    pub limit: GroupLimit,
}

/// What a group does with a request over its rate (`rate_mode`), like
/// nginx `limit_req`: refuse it (429, with `nodelay`), only count and log it
/// (`limit_req_dry_run`), or hold it until it conforms, up to a bound (a
/// burst without `nodelay`), then refuse it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum RateMode {
    /// 429 with `Retry-After` (the default).
    #[default]
    Reject,
    /// Dry run: the request passes; it is counted and logged as
    /// `would_limit`.
    Log,
    /// Held until the rate admits it when that is within the bound
    /// (`rate_max_delay`), else 429.
    Delay(Duration),
}

impl RateMode {
    /// Default of `rate_max_delay`.
    pub const DEFAULT_MAX_DELAY: Duration = Duration::from_secs(5);
    /// Largest `rate_max_delay`: a held request holds a connection.
    pub const MAX_DELAY: Duration = Duration::from_secs(60);
}

/// `[limits] store`: where the buckets live.
#[derive(Clone, PartialEq, Eq)]
pub enum StoreSetting {
    /// In this process (the default).
    Local,
    /// A shared Redis (or Valkey) server: the URL as written, scheme
    /// `redis` or `rediss`.
    Redis(String),
}

/// The URL's password masked: a settings dump or a debug log line never
/// shows it.
impl fmt::Debug for StoreSetting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreSetting::Local => f.write_str("Local"),
            StoreSetting::Redis(url) => f.debug_tuple("Redis").field(&redact_store_url(url)).finish(),
        }
    }
}

/// `s` with a password replaced by `***`, for messages.
pub(crate) fn redact_store_url(s: &str) -> String {
    match (s.find("://"), s.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let userinfo = &s[scheme + 3..at];
            match userinfo.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &s[..scheme + 3], &s[at..]),
                None => s.to_string(),
            }
        }
        _ => s.to_string(),
    }
}

/// The `[limits]` table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LimitSettings {
    /// Where the buckets live.
    pub store: StoreSetting,
    /// Prefix of every key in a shared store.
    pub key_prefix: String,
    /// Time budget of one shared-store call; past it the local store
    /// decides.
    pub timeout: Duration,
    /// Prefix length of an IPv4 client network.
    pub ipv4_prefix: u8,
    /// Prefix length of an IPv6 client network.
    pub ipv6_prefix: u8,
    /// Most keys the in-process store holds.
    pub max_keys: usize,
    /// The sites limited apart (`server.hosts`, normalized), when it names
    /// more than one; empty otherwise.
    pub hosts: Vec<String>,
    /// Some group has a limit: without one, [`Policy::limit`](crate::Policy::limit) is never
    /// asked (the proxy skips reading the request's `Host` for it).
    pub any_group: bool,
}

/// Default of `[limits] max_keys`.
pub const DEFAULT_MAX_KEYS: usize = 1_000_000;

impl Default for LimitSettings {
    fn default() -> LimitSettings {
        LimitSettings {
            store: StoreSetting::Local,
            key_prefix: "crawlgate:".to_string(),
            timeout: Duration::from_millis(5),
            ipv4_prefix: 24,
            ipv6_prefix: 56,
            max_keys: DEFAULT_MAX_KEYS,
            hosts: Vec::new(),
            any_group: false,
        }
    }
}

/// A client network: an address with its host bits cleared, and the
/// prefix length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Network {
    addr: IpAddr,
    prefix: u8,
}

impl Network {
    /// The network of `ip` under the given prefix lengths; an IPv4-mapped
    /// IPv6 address counts as IPv4.
    pub fn of(ip: IpAddr, ipv4_prefix: u8, ipv6_prefix: u8) -> Network {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 => v4,
        };
        match ip {
            IpAddr::V4(v4) => {
                let p = ipv4_prefix.min(32);
                let mask = if p == 0 { 0 } else { u32::MAX << (32 - u32::from(p)) };
                Network { addr: IpAddr::V4(Ipv4Addr::from(u32::from(v4) & mask)), prefix: p }
            }
            IpAddr::V6(v6) => {
                let p = ipv6_prefix.min(128);
                let mask = if p == 0 { 0 } else { u128::MAX << (128 - u32::from(p)) };
                Network { addr: IpAddr::V6(Ipv6Addr::from(u128::from(v6) & mask)), prefix: p }
            }
        }
    }
}

impl Hash for Network {
    /// Two writes (the address as 128 bits, IPv4 mapped, and the prefix
    /// with the family): the in-process store hashes a key per request.
    fn hash<H: Hasher>(&self, state: &mut H) {
        let (bits, family) = match self.addr {
            IpAddr::V4(v4) => (u128::from(v4.to_ipv6_mapped()), 0u16),
            IpAddr::V6(v6) => (u128::from(v6), 1u16),
        };
        state.write_u128(bits);
        state.write_u16(family << 8 | u16::from(self.prefix));
    }
}

impl fmt::Display for Network {
    /// `203.0.113.0/24`, `2001:db8::/56`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

/// Whom a bucket counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Subject<'p> {
    /// A crawler whose identity is verified: one bucket per token across
    /// all its addresses.
    Agent(&'p str),
    /// A crawler named but not verified: its token from one network.
    AgentNetwork(&'p str, Network),
    /// Everyone else: one client network.
    Network(Network),
}

/// The key of one bucket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LimitKey<'p> {
    /// The site, when `server.hosts` names several (`None`: one site). A
    /// `Host` the list does not name shares the bucket of `*`.
    pub host: Option<&'p str>,
    /// Whom it counts.
    pub subject: Subject<'p>,
    /// The `[[group.rates]]` entry counted ([`PathLimit::id`]); `None`:
    /// the group's own `rate`.
    pub path: Option<&'p str>,
}

impl Hash for LimitKey<'_> {
    /// As few writes as tell the keys apart (a host and a token are
    /// written with their length, so no two keys write the same bytes).
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_usize(self.host.map_or(0, |h| h.len() + 1));
        if let Some(h) = self.host {
            state.write(h.as_bytes());
        }
        match self.subject {
            Subject::Agent(t) => {
                state.write_usize(t.len() << 2 | 1);
                state.write(t.as_bytes());
            }
            Subject::AgentNetwork(t, n) => {
                state.write_usize(t.len() << 2 | 2);
                state.write(t.as_bytes());
                n.hash(state);
            }
            Subject::Network(n) => {
                state.write_usize(3);
                n.hash(state);
            }
        }
        if let Some(p) = self.path {
            state.write_usize(p.len() + 1);
            state.write(p.as_bytes());
        }
    }
}

impl fmt::Display for LimitKey<'_> {
    /// The key as a shared store names it (before `key_prefix`):
    /// `host:<site>:` when several sites are fronted, then
    /// `agent:<token>`, `agent:<token>:net:<network>` or `net:<network>`,
    /// then `:path:<first path>` for a `[[group.rates]]` entry's bucket.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(h) = self.host {
            write!(f, "host:{h}:")?;
        }
        match self.subject {
            Subject::Agent(t) => write!(f, "agent:{t}"),
            Subject::AgentNetwork(t, n) => write!(f, "agent:{t}:net:{n}"),
            Subject::Network(n) => write!(f, "net:{n}"),
        }?;
        match self.path {
            Some(p) => write!(f, ":path:{p}"),
            None => Ok(()),
        }
    }
}

/// The limit one request is counted against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limit<'p> {
    /// The group whose limit it is.
    pub group: GroupRef<'p>,
    /// The limit.
    pub limit: GroupLimit,
    /// The bucket.
    pub key: LimitKey<'p>,
    /// What to do over it (the group's `rate_mode`).
    pub mode: RateMode,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_parse_and_print() {
        for (src, count, per, shown) in
            [("2/s", 2, 1, "2/s"), ("30/min", 30, 60, "30/min"), (" 1000 / h ", 1000, 3600, "1000/h")]
        {
            let r = Rate::parse(src).unwrap();
            assert_eq!((r.count, r.per), (count, Duration::from_secs(per)), "{src}");
            assert_eq!(r.to_string(), shown);
        }
        assert_eq!(Rate::parse("2/s").unwrap().emission(), Duration::from_millis(500));
        assert_eq!(Rate::parse("30/min").unwrap().emission(), Duration::from_secs(2));
        for bad in ["2", "2/d", "0/s", "-1/s", "x/s", "2/sec", "1000000001/s", ""] {
            assert!(Rate::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(
            Rate::parse("2/sec").unwrap_err(),
            "`2/sec` is not a rate (use e.g. \"2/s\", \"30/min\", \"1000/h\")"
        );
        assert_eq!(Rate::parse("2/s\r").unwrap_err(), "`2/s\\r` contains a control character");
        assert_eq!(Rate::parse("2\t/ s").unwrap_err(), "`2\\t/ s` contains a control character");
        assert_eq!(Rate { count: 1, per: Duration::from_millis(1500) }.to_string(), "1/1.5s");
    }

    #[test]
    fn networks_mask_host_bits() {
        let n = |ip: &str, v4, v6| Network::of(ip.parse().unwrap(), v4, v6).to_string();
        assert_eq!(n("203.0.113.77", 24, 56), "203.0.113.0/24");
        assert_eq!(n("203.0.113.77", 32, 56), "203.0.113.77/32");
        assert_eq!(n("127.0.0.3", 8, 56), "127.0.0.0/8");
        assert_eq!(n("203.0.113.77", 0, 56), "0.0.0.0/0");
        assert_eq!(n("2001:db8:1:2ff:1::1", 24, 56), "2001:db8:1:200::/56");
        assert_eq!(n("2001:db8::1", 24, 128), "2001:db8::1/128");
        assert_eq!(n("::ffff:203.0.113.77", 24, 56), "203.0.113.0/24");
    }
}
