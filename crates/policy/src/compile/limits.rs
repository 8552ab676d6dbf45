//! The rate-limit keys: a group's `rate`, `burst` and
//! `enforce_crawl_delay`, and the `[limits]` table.

use std::time::Duration;

use toml::Spanned;

use super::ctx::Ctx;
use super::hosts::validate_authority;
use crate::diag::Warning;
use crate::limits::{
    redact_store_url, GroupLimit, LimitSettings, LimitSource, PathLimit, Rate, RateMode, StoreSetting,
};
use crate::pattern::Pattern;
use crate::raw::{RawLimits, RawPathRate};

/// Largest `burst`: a burst is how many requests may arrive at once.
const MAX_BURST: i64 = 1_000_000;

/// Largest `[limits] max_keys` (at about 40 bytes a key, 400 MB).
const MAX_KEYS: i64 = 10_000_000;

/// A group's limit keys as written.
pub(super) struct GroupLimitKeys<'a> {
    pub rate: &'a Option<Spanned<String>>,
    pub burst: &'a Option<Spanned<i64>>,
    pub enforce_crawl_delay: &'a Option<Spanned<bool>>,
    pub crawl_delay: Option<&'a Spanned<toml::Value>>,
}

/// A group's limit: the stricter of `rate` and, with
/// `enforce_crawl_delay`, one request per `crawl_delay` (`delay`, as
/// robots.txt writes it). Warns when `enforce_crawl_delay` has no delay to
/// enforce, and when `rate` is stricter than the published Crawl-delay: a
/// crawler keeping to `Crawl-delay: d` sends one request every `d`
/// seconds, so a rate whose emission interval (interval / count) is longer
/// than `d` refuses a crawler that obeys the published file.
pub(super) fn compile_group_limit(
    cx: &mut Ctx<'_>,
    keys: GroupLimitKeys<'_>,
    delay: Option<&str>,
) -> Option<GroupLimit> {
    let GroupLimitKeys { rate, burst, enforce_crawl_delay, crawl_delay } = keys;
    let written_rate = rate;
    let rate = rate.as_ref().and_then(|r| match Rate::parse(r.get_ref()) {
        Ok(rate) => Some(rate),
        Err(e) => {
            cx.err(r, format!("group.rate: {e}"));
            None
        }
    });
    let burst_value = match burst {
        None => 1,
        Some(b) if (1..=MAX_BURST).contains(b.get_ref()) => *b.get_ref() as u32,
        Some(b) => {
            cx.err(b, format!("group.burst must be from 1 to {MAX_BURST}, found {}", b.get_ref()));
            1
        }
    };
    let delay_secs = delay.and_then(|d| d.parse::<f64>().ok()).filter(|d| d.is_finite() && *d > 0.0);
    let delay_rate = match (enforce_crawl_delay, delay_secs) {
        (Some(e), None) if *e.get_ref() => {
            cx.warn(e, Warning::EnforceCrawlDelayWithoutDelay, "group.enforce_crawl_delay: the group has no crawl_delay, so there is nothing to enforce; set crawl_delay or remove enforce_crawl_delay");
            None
        }
        (Some(e), Some(d)) if *e.get_ref() => {
            // Whole nanoseconds: a delay of up to about 584 years.
            Duration::try_from_secs_f64(d).ok().map(|per| Rate { count: 1, per })
        }
        _ => None,
    };
    if let (Some(r), Some(d), Some(written)) = (rate, delay_secs, written_rate) {
        if r.emission().as_secs_f64() > d {
            let shown = crawl_delay.map_or_else(|| d.to_string(), |v| v.get_ref().to_string());
            cx.warn(written, Warning::RateStricterThanCrawlDelay, format!("group.rate: `{r}` allows one request every {}s, less often than the published Crawl-delay of {shown}s: a crawler keeping to robots.txt would be refused with 429; publish a crawl_delay of at least {} or raise the rate", fmt_secs(r.emission()), fmt_secs(r.emission())));
        }
    }
    if burst.is_some() && rate.is_none() && delay_rate.is_none() {
        if let Some(b) = burst {
            cx.err(b, "group.burst: needs a rate (rate, or enforce_crawl_delay with crawl_delay)");
        }
    }
    match (rate, delay_rate) {
        (None, None) => None,
        (Some(r), None) => Some(GroupLimit { rate: r, burst: burst_value, source: LimitSource::Rate }),
        (None, Some(d)) => Some(GroupLimit { rate: d, burst: burst_value, source: LimitSource::CrawlDelay }),
        (Some(r), Some(d)) if d.emission() > r.emission() => {
            Some(GroupLimit { rate: d, burst: burst_value, source: LimitSource::CrawlDelay })
        }
        (Some(r), Some(_)) => Some(GroupLimit { rate: r, burst: burst_value, source: LimitSource::Rate }),
    }
}

/// A group's `[[group.rates]]`: each entry's `paths` (RFC 9309 patterns;
/// a path in one entry only), `rate` and `burst` (default 1).
pub(super) fn compile_path_rates(cx: &mut Ctx<'_>, rates: &[Spanned<RawPathRate>]) -> Vec<PathLimit> {
    let mut out = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for entry in rates {
        let RawPathRate { paths, rate, burst } = entry.get_ref();
        if paths.is_empty() {
            cx.err(entry, "group.rates: needs paths, e.g. paths = [\"/search\"]");
        }
        let mut patterns = Vec::new();
        let mut id = None;
        for p in paths {
            let written = p.get_ref().as_str();
            match Pattern::new(written) {
                Ok(_) if seen.contains(&written) => {
                    cx.err(p, format!("group.rates.paths: `{written}` is in two entries (one rate per path)"));
                }
                Ok(pattern) => {
                    seen.push(written);
                    patterns.push(pattern);
                    id.get_or_insert(written);
                }
                Err(e) => cx.err(p, format!("group.rates.paths: {e}")),
            }
        }
        let rate = match Rate::parse(rate.get_ref()) {
            Ok(r) => Some(r),
            Err(e) => {
                cx.err(rate, format!("group.rates.rate: {e}"));
                None
            }
        };
        let burst = match burst {
            None => 1,
            Some(b) if (1..=MAX_BURST).contains(b.get_ref()) => *b.get_ref() as u32,
            Some(b) => {
                cx.err(b, format!("group.rates.burst must be from 1 to {MAX_BURST}, found {}", b.get_ref()));
                1
            }
        };
        if let (Some(rate), Some(id)) = (rate, id) {
            let limit = GroupLimit { rate, burst, source: LimitSource::Rate };
            out.push(PathLimit { paths: patterns, id: id.to_string(), limit });
        }
    }
    out
}

/// A group's `rate_mode` and `rate_max_delay`: either needs a limit
/// (`has_limit`), and the bound only goes with `"delay"`.
pub(super) fn compile_rate_mode(
    cx: &mut Ctx<'_>,
    mode: Option<&Spanned<String>>,
    max_delay: Option<&Spanned<String>>,
    has_limit: bool,
) -> RateMode {
    let Some(m) = mode else {
        if let Some(d) = max_delay {
            cx.err(d, "group.rate_max_delay applies only with rate_mode = \"delay\"");
        }
        return RateMode::Reject;
    };
    if !has_limit {
        cx.err(m, "group.rate_mode: needs a rate (rate, [[group.rates]], or enforce_crawl_delay with crawl_delay)");
    }
    let out = match m.get_ref().as_str() {
        "reject" => RateMode::Reject,
        "log" => RateMode::Log,
        "delay" => {
            let bound = cx.duration("group.rate_max_delay", max_delay, RateMode::DEFAULT_MAX_DELAY);
            if let Some(d) = max_delay.filter(|_| bound.is_zero() || bound > RateMode::MAX_DELAY) {
                cx.err(d, format!("group.rate_max_delay must be more than 0 and at most 60s, found `{}`", d.get_ref()));
            }
            return RateMode::Delay(bound.clamp(Duration::from_millis(1), RateMode::MAX_DELAY));
        }
        other => {
            let hint = crate::validate::closest(&other.to_ascii_lowercase(), ["reject", "log", "delay"], 2)
                .map_or(String::new(), |c| format!("; did you mean `{c}`?"));
            cx.err(m, format!("group.rate_mode: unknown mode `{other}` (reject, log or delay){hint}"));
            RateMode::Reject
        }
    };
    if let Some(d) = max_delay {
        cx.err(d, "group.rate_max_delay applies only with rate_mode = \"delay\"");
    }
    out
}

/// Seconds as a short decimal: `2`, `0.5`.
fn fmt_secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    let mut out = format!("{s:.3}");
    while out.ends_with('0') {
        out.pop();
    }
    if out.ends_with('.') {
        out.pop();
    }
    out
}

/// The `[limits]` table. `hosts` is `server.hosts` as written (its errors
/// are reported with the server table): several hosts are limited apart.
pub(super) fn compile_limits(
    cx: &mut Ctx<'_>,
    raw: Option<&Spanned<RawLimits>>,
    hosts: Option<&[Spanned<String>]>,
) -> LimitSettings {
    let mut out = LimitSettings::default();
    let mut site: Vec<String> = Vec::new();
    for h in hosts.unwrap_or_default() {
        if let Ok(norm) = validate_authority(h.get_ref()) {
            if !site.contains(&norm) {
                site.push(norm);
            }
        }
    }
    if site.len() > 1 {
        out.hosts = site;
    }
    let Some(raw) = raw else { return out };
    let RawLimits { store, key_prefix, timeout, ipv4_prefix, ipv6_prefix, max_keys } = raw.get_ref();
    if let Some(s) = store {
        match store_setting(s.get_ref()) {
            Ok(v) => out.store = v,
            Err(e) => cx.err(s, format!("limits.store: {e}")),
        }
    }
    if let Some(p) = key_prefix {
        let v = p.get_ref();
        if v.len() > 64 || v.chars().any(|c| c.is_control() || c.is_whitespace()) {
            cx.err(
                p,
                format!(
                    "limits.key_prefix: `{}` must be at most 64 characters without spaces or control characters",
                    v.escape_debug()
                ),
            );
        } else {
            out.key_prefix = v.clone();
        }
    }
    out.timeout = cx.duration("limits.timeout", timeout.as_ref(), out.timeout);
    if let Some(t) = timeout {
        if out.timeout.is_zero() || out.timeout > Duration::from_secs(1) {
            cx.err(
                t,
                format!(
                    "limits.timeout must be from 1ms to 1s (it is spent on every request), found `{}`",
                    t.get_ref()
                ),
            );
            out.timeout = Duration::from_millis(5);
        }
    }
    out.ipv4_prefix = prefix(cx, "limits.ipv4_prefix", ipv4_prefix.as_ref(), 32, out.ipv4_prefix);
    out.ipv6_prefix = prefix(cx, "limits.ipv6_prefix", ipv6_prefix.as_ref(), 128, out.ipv6_prefix);
    if let Some(m) = max_keys {
        match usize::try_from(*m.get_ref()) {
            Ok(n) if (1000..=MAX_KEYS).contains(m.get_ref()) => out.max_keys = n,
            _ => cx.err(m, format!("limits.max_keys must be from 1000 to {MAX_KEYS}, found {}", m.get_ref())),
        }
    }
    out
}

fn prefix(cx: &mut Ctx<'_>, key: &str, v: Option<&Spanned<i64>>, max: u8, default: u8) -> u8 {
    match v {
        None => default,
        Some(p) => match u8::try_from(*p.get_ref()) {
            Ok(n) if (1..=max).contains(&n) => n,
            _ => {
                cx.err(p, format!("{key} must be from 1 to {max}, found {}", p.get_ref()));
                default
            }
        },
    }
}

/// `"local"`, or a `redis://` / `rediss://` URL:
/// `redis[s]://[[user]:password@]host[:port][/db]`, host a name, an IPv4
/// address or a bracketed IPv6 address, db a number.
fn store_setting(s: &str) -> Result<StoreSetting, String> {
    if s == "local" {
        return Ok(StoreSetting::Local);
    }
    let bad = |why: &str| {
        format!("`{}` {why} (use \"local\" or redis://host:port/db, rediss:// for TLS)", redact_store_url(s))
    };
    let rest = s
        .strip_prefix("redis://")
        .or_else(|| s.strip_prefix("rediss://"))
        .ok_or_else(|| bad("is not \"local\" nor a redis:// or rediss:// URL"))?;
    if s.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err(bad("has spaces or control characters"));
    }
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    if rest.contains(['?', '#']) {
        return Err(bad("has a query or fragment, which crawlgate does not read"));
    }
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, hp)| hp);
    let (host, port) = match host_port.strip_prefix('[') {
        Some(v6) => {
            let (h, after) = v6.split_once(']').ok_or_else(|| bad("has an unclosed `[`"))?;
            h.parse::<std::net::Ipv6Addr>().map_err(|_| bad("has an invalid IPv6 address"))?;
            (h, after.strip_prefix(':'))
        }
        None => match host_port.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (host_port, None),
        },
    };
    let host_ok = !host.is_empty()
        && (host.contains(':')
            || host.split('.').all(|l| !l.is_empty() && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')));
    if !host_ok {
        return Err(bad("has no valid host"));
    }
    if let Some(p) = port {
        if !p.parse::<u16>().is_ok_and(|p| p > 0) {
            return Err(bad("has an invalid port"));
        }
    }
    if !path.is_empty() && path.parse::<u32>().is_err() {
        return Err(bad("names a database that is not a number"));
    }
    Ok(StoreSetting::Redis(s.to_string()))
}

#[cfg(test)]
mod tests {
    use crate::limits::{LimitSource, StoreSetting};
    use crate::load;
    use std::time::Duration;

    const UP: &str = "[upstream]\nservers = [\"127.0.0.1:9\"]\n";

    fn group(keys: &str) -> Result<(Option<String>, Vec<String>), String> {
        let src = format!("{UP}[[group]]\nuser_agents = [\"ExampleBot\"]\n{keys}\n");
        load(&src, "l.toml").map_err(|e| e.to_string()).map(|l| {
            (l.policy.groups[0].limit.map(|g| g.to_string()), l.warnings.iter().map(ToString::to_string).collect())
        })
    }

    #[test]
    fn group_limits_compile() {
        let none: Vec<String> = Vec::new();
        for (keys, want) in [
            ("", None),
            ("rate = \"2/s\"", Some("2/s burst 1")),
            ("rate = \"30/min\"\nburst = 5", Some("30/min burst 5")),
            ("crawl_delay = 2\nenforce_crawl_delay = true", Some("1/2s burst 1 (crawl_delay)")),
            ("crawl_delay = 1\nenforce_crawl_delay = true", Some("1/s burst 1 (crawl_delay)")),
            ("crawl_delay = 0.5\nenforce_crawl_delay = true\nburst = 3", Some("1/0.5s burst 3 (crawl_delay)")),
            ("crawl_delay = 2\nenforce_crawl_delay = false", None),
            // The stricter of the two applies.
            ("crawl_delay = 2\nenforce_crawl_delay = true\nrate = \"1/s\"", Some("1/2s burst 1 (crawl_delay)")),
            ("crawl_delay = 1\nenforce_crawl_delay = true\nrate = \"1/min\"", None),
        ] {
            let got = group(keys);
            if keys.ends_with("1/min\"") {
                // Stricter than the crawl delay: the rate applies, with a warning.
                let (limit, warnings) = got.unwrap();
                assert_eq!(limit.as_deref(), Some("1/min burst 1"));
                assert_eq!(warnings, ["l.toml:7:8: warning[rate-stricter-than-crawl-delay]: group.rate: `1/min` allows one request every 60s, less often than the published Crawl-delay of 1s: a crawler keeping to robots.txt would be refused with 429; publish a crawl_delay of at least 60 or raise the rate"]);
                continue;
            }
            assert_eq!(got, Ok((want.map(str::to_string), none.clone())), "{keys}");
        }
        let g =
            load(&format!("{UP}[[group]]\nuser_agents = [\"a\"]\ncrawl_delay = 3\nenforce_crawl_delay = true\n"), "l")
                .unwrap()
                .policy;
        assert_eq!(
            g.groups[0].limit.map(|l| (l.source, l.rate.emission())),
            Some((LimitSource::CrawlDelay, Duration::from_secs(3)))
        );
    }

    #[test]
    fn group_limit_warnings_and_errors() {
        assert_eq!(
            group("enforce_crawl_delay = true").unwrap().1,
            ["l.toml:5:23: warning[enforce-crawl-delay-without-delay]: group.enforce_crawl_delay: the group has no crawl_delay, so there is nothing to enforce; set crawl_delay or remove enforce_crawl_delay"]
        );
        assert_eq!(group("crawl_delay = 10\nrate = \"1/s\"").unwrap().1, Vec::<String>::new());
        assert_eq!(
            group("crawl_delay = 1\nrate = \"1/h\"").unwrap().1,
            ["l.toml:6:8: warning[rate-stricter-than-crawl-delay]: group.rate: `1/h` allows one request every 3600s, less often than the published Crawl-delay of 1s: a crawler keeping to robots.txt would be refused with 429; publish a crawl_delay of at least 3600 or raise the rate"]
        );
        for (keys, err) in [
            (
                "rate = \"2/d\"",
                "l.toml:5:8: group.rate: `2/d` is not a rate (use e.g. \"2/s\", \"30/min\", \"1000/h\")",
            ),
            ("rate = \"0/s\"", "l.toml:5:8: group.rate: `0/s`: the count must be from 1 to 1000000000"),
            (
                "rate = \"2000000/s\"",
                "l.toml:5:8: group.rate: `2000000/s`: at most one request per microsecond (1000000/s)",
            ),
            ("rate = 2", "l.toml:5:8: group.rate: expected a string, found an integer"),
            ("rate = \"1/s\"\nburst = 0", "l.toml:6:9: group.burst must be from 1 to 1000000, found 0"),
            ("burst = 4", "l.toml:5:9: group.burst: needs a rate (rate, or enforce_crawl_delay with crawl_delay)"),
            (
                "enforce_crawl_delay = \"yes\"",
                "l.toml:5:23: group.enforce_crawl_delay: expected a boolean, found a string",
            ),
        ] {
            assert_eq!(group(keys).map(|_| ()), Err(err.to_string()), "{keys}");
        }
    }

    fn limits(table: &str) -> Result<crate::limits::LimitSettings, String> {
        let src = format!("{UP}[limits]\n{table}\n");
        load(&src, "l.toml").map_err(|e| e.to_string()).map(|l| l.policy.settings.limits.clone())
    }

    #[test]
    fn limits_table_defaults_and_parse() {
        let d = limits("").unwrap();
        assert_eq!(d, crate::limits::LimitSettings::default());
        assert_eq!(
            (d.store.clone(), d.key_prefix.as_str(), d.timeout, d.ipv4_prefix, d.ipv6_prefix, d.max_keys),
            (StoreSetting::Local, "crawlgate:", Duration::from_millis(5), 24, 56, 1_000_000)
        );
        let s = limits("store = \"rediss://:pw@redis.example:6380/2\"\nkey_prefix = \"cg:\"\ntimeout = \"20ms\"\nipv4_prefix = 32\nipv6_prefix = 64\nmax_keys = 5000").unwrap();
        assert_eq!(s.store, StoreSetting::Redis("rediss://:pw@redis.example:6380/2".into()));
        // A settings dump never shows the password.
        assert_eq!(format!("{:?}", s.store), r#"Redis("rediss://:***@redis.example:6380/2")"#);
        assert_eq!(format!("{:?}", d.store), "Local");
        assert_eq!(
            (s.key_prefix.as_str(), s.timeout, s.ipv4_prefix, s.ipv6_prefix, s.max_keys),
            ("cg:", Duration::from_millis(20), 32, 64, 5000)
        );
        for ok in ["redis://127.0.0.1", "redis://[::1]:6379/0", "redis://user:pw@h:1/15", "local"] {
            assert!(limits(&format!("store = \"{ok}\"")).is_ok(), "{ok}");
        }
    }

    #[test]
    fn limits_table_rejected_with_position() {
        for (table, err) in [
            ("store = \"memcached://h\"", "l.toml:4:9: limits.store: `memcached://h` is not \"local\" nor a redis:// or rediss:// URL (use \"local\" or redis://host:port/db, rediss:// for TLS)"),
            ("store = \"redis://:secret@h:99999\"", "l.toml:4:9: limits.store: `redis://:***@h:99999` has an invalid port (use \"local\" or redis://host:port/db, rediss:// for TLS)"),
            ("store = \"redis://h/x\"", "l.toml:4:9: limits.store: `redis://h/x` names a database that is not a number (use \"local\" or redis://host:port/db, rediss:// for TLS)"),
            ("store = \"redis:///0\"", "l.toml:4:9: limits.store: `redis:///0` has no valid host (use \"local\" or redis://host:port/db, rediss:// for TLS)"),
            ("store = \"redis://h?x=1\"", "l.toml:4:9: limits.store: `redis://h?x=1` has a query or fragment, which crawlgate does not read (use \"local\" or redis://host:port/db, rediss:// for TLS)"),
            ("timeout = \"0ms\"", "l.toml:4:11: limits.timeout must be from 1ms to 1s (it is spent on every request), found `0ms`"),
            ("timeout = \"5\"", "l.toml:4:11: limits.timeout: `5` is not a duration (use e.g. 500ms, 30s, 5m, 1h, 2d)"),
            ("ipv4_prefix = 33", "l.toml:4:15: limits.ipv4_prefix must be from 1 to 32, found 33"),
            ("ipv6_prefix = 0", "l.toml:4:15: limits.ipv6_prefix must be from 1 to 128, found 0"),
            ("max_keys = 10", "l.toml:4:12: limits.max_keys must be from 1000 to 10000000, found 10"),
            ("key_prefix = \"a b\"", "l.toml:4:14: limits.key_prefix: `a b` must be at most 64 characters without spaces or control characters"),
            ("stores = \"local\"", "l.toml:4:1: limits.stores: unknown key; did you mean `store`? (valid here: store, key_prefix, timeout, ipv4_prefix, ipv6_prefix, max_keys)"),
        ] {
            assert_eq!(limits(table).map(|_| ()), Err(err.to_string()), "{table}");
        }
    }

    #[test]
    fn several_hosts_are_limited_apart() {
        let one = load(&format!("[server]\nhosts = [\"a.example\"]\n{UP}"), "l").unwrap().policy;
        assert!(one.settings.limits.hosts.is_empty());
        let two = load(&format!("[server]\nhosts = [\"A.example\", \"b.example:8443\"]\n{UP}"), "l").unwrap().policy;
        assert_eq!(two.settings.limits.hosts, ["a.example", "b.example:8443"]);
    }
}
