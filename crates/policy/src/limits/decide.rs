//! Which limit a routed request is counted against, and under which key
//! ([`Policy::limit`]): the policy's side of the [`crate::limits`] types.

use std::net::IpAddr;

use super::{GroupLimit, Limit, LimitKey, LimitSettings, Network, PathLimit, Subject};
use crate::decision::GroupRef;
use crate::policy::Policy;
use crate::route::Route;
use crate::verification::Verification;

/// The bucket name of a `Host` that `server.hosts` does not list.
const OTHER_HOST: &str = "*";

impl Policy {
    /// The `[limits]` table.
    pub fn limit_settings(&self) -> &LimitSettings {
        &self.settings.limits
    }

    /// The limit a routed request is counted against, and its key; `None`
    /// when nothing limits it. Only a request forwarded to the origin is
    /// limited: the files crawlgate serves itself (`/robots.txt`,
    /// `/agents.txt`, the well-known documents) and refusals never are, so
    /// a crawler can always read the rules.
    ///
    /// - A named crawler whose group has a limit: with a verified identity
    ///   one bucket per token (Googlebot's many addresses are one crawler),
    ///   else per token and client network.
    /// - Everyone else, and a named crawler whose identity is not verified
    ///   and whose group sets no limit: the `*` group's limit per client
    ///   network (a claimed token must not escape it). A verified crawler
    ///   whose group sets no limit is not limited.
    ///
    /// `client` is the client address as decided by
    /// [`crate::client::client_address`]; `host` the request's `Host`
    /// (authority), used only when `server.hosts` names several sites.
    ///
    /// A group's limit for a request is its `[[group.rates]]` entry whose
    /// pattern matches the request's path and query longest, counted in a
    /// bucket of its own (the key's `path`), else its `rate`.
    pub fn limit<'p>(&'p self, route: &Route<'p, '_>, client: IpAddr, host: Option<&str>) -> Option<Limit<'p>> {
        let Route::Forward { decision, target, .. } = route else { return None };
        let target: &str = &target.canonical;
        let s = &self.settings.limits;
        let net = || Network::of(client, s.ipv4_prefix, s.ipv6_prefix);
        let host = self.limit_host(host);
        let named = match (decision.agent, decision.group) {
            (Some(token), Some(g)) if Some(g.index) != self.star_group => Some((token, g)),
            _ => None,
        };
        if let Some((token, g)) = named {
            let verified = matches!(decision.verification, Verification::Verified(_));
            match (self.groups[g.index].limit_for(target), verified) {
                (Some((limit, path)), true) => {
                    let mode = self.groups[g.index].rate_mode;
                    return Some(Limit {
                        group: g,
                        limit,
                        key: LimitKey { host, subject: Subject::Agent(token), path },
                        mode,
                    });
                }
                (Some((limit, path)), false) => {
                    let subject = Subject::AgentNetwork(token, net());
                    let mode = self.groups[g.index].rate_mode;
                    return Some(Limit { group: g, limit, key: LimitKey { host, subject, path }, mode });
                }
                (None, true) => return None,
                (None, false) => {}
            }
        }
        let star = self.star_group?;
        let g = &self.groups[star];
        let (limit, path) = g.limit_for(target)?;
        let group = GroupRef { index: star, name: &g.name, line: g.line, origin: g.origin };
        Some(Limit { group, limit, key: LimitKey { host, subject: Subject::Network(net()), path }, mode: g.rate_mode })
    }

    /// The bucket's site: `None` unless `server.hosts` names several; a
    /// `Host` it does not name (or none) is `*`, so a forged `Host` cannot
    /// open new buckets.
    fn limit_host(&self, host: Option<&str>) -> Option<&str> {
        let hosts = &self.settings.limits.hosts;
        if hosts.len() < 2 {
            return None;
        }
        let Some(host) = host else { return Some(OTHER_HOST) };
        let bare = host.rsplit_once(':').filter(|(h, p)| !h.ends_with(']') || p.is_empty()).map_or(host, |(h, _)| h);
        let found = hosts.iter().find(|h| h.eq_ignore_ascii_case(host)).or_else(|| {
            // `example.com` in the list matches `Example.com:8443`.
            hosts.iter().find(|h| !h.contains(':') && h.eq_ignore_ascii_case(bare))
        });
        Some(found.map_or(OTHER_HOST, String::as_str))
    }
}

impl crate::policy::Group {
    /// The limit for a request to `target` (path and query, canonical) and
    /// the `[[group.rates]]` entry that sets it: the entry whose pattern
    /// matches longest (the first entry on a tie), else the group's
    /// `rate` (no entry).
    pub(crate) fn limit_for(&self, target: &str) -> Option<(GroupLimit, Option<&str>)> {
        let mut best: Option<(usize, &PathLimit)> = None;
        for entry in &self.path_limits {
            for p in &entry.paths {
                if best.is_none_or(|(len, _)| p.specificity() > len) && p.matches(target) {
                    best = Some((p.specificity(), entry));
                }
            }
        }
        match best {
            Some((_, entry)) => Some((entry.limit, Some(entry.id.as_str()))),
            None => self.limit.map(|l| (l, None)),
        }
    }
}

#[cfg(test)]
mod tests_support {
    use super::*;
    use crate::route::{Identity, UserAgentField};
    use crate::verification::Method;

    /// `(group, limit, key)` of a request, or `-`.
    pub(super) fn limit(
        policy: &Policy,
        target: &str,
        ua: &str,
        verified: bool,
        client: &str,
        host: Option<&str>,
    ) -> String {
        let identity = Identity {
            verification: if verified { Verification::Verified(Method::Ip) } else { Verification::Unverified },
            ..Identity::default()
        };
        let route = policy.route_with(false, target.as_bytes(), UserAgentField::One(ua), identity);
        match policy.limit(&route, client.parse().unwrap(), host) {
            None => "-".to_string(),
            Some(l) => format!("{} | {} | {}", l.group.name, l.limit, l.key),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::tests_support::limit;

    const POLICY: &str = r#"
[server]
hosts = ["a.example", "b.example:8443"]
[upstream]
servers = ["127.0.0.1:9"]
[limits]
ipv4_prefix = 24
ipv6_prefix = 48
[[group]]
user_agents = ["RatedBot"]
rate = "2/s"
burst = 3
[[group]]
user_agents = ["FreeBot"]
[[group]]
user_agents = ["PoliteBot"]
crawl_delay = 5
enforce_crawl_delay = true
[[group]]
user_agents = ["*"]
rate = "10/s"
"#;

    #[test]
    fn which_limit_and_key_a_request_gets() {
        let p = crate::load(POLICY, "l.toml").unwrap().policy;
        let a = Some("a.example");
        for (target, ua, verified, client, host, want) in [
            // A verified crawler: one bucket per token across addresses.
            ("/x", "RatedBot/1.0", true, "192.0.2.7", a, "RatedBot | 2/s burst 3 | host:a.example:agent:RatedBot"),
            ("/x", "RatedBot/1.0", true, "198.51.100.1", a, "RatedBot | 2/s burst 3 | host:a.example:agent:RatedBot"),
            // Named, not verified: token and client network.
            (
                "/x",
                "RatedBot/1.0",
                false,
                "192.0.2.7",
                a,
                "RatedBot | 2/s burst 3 | host:a.example:agent:RatedBot:net:192.0.2.0/24",
            ),
            // Crawl-delay enforced.
            (
                "/x",
                "PoliteBot",
                true,
                "192.0.2.7",
                a,
                "PoliteBot | 1/5s burst 1 (crawl_delay) | host:a.example:agent:PoliteBot",
            ),
            // A verified crawler whose group sets no limit is not limited.
            ("/x", "FreeBot", true, "192.0.2.7", a, "-"),
            // An unverified claim of it does not escape the `*` limit.
            ("/x", "FreeBot", false, "192.0.2.7", a, "* | 10/s burst 1 | host:a.example:net:192.0.2.0/24"),
            // Everyone else: `*` per network, IPv6 at /48 here.
            ("/x", "Mozilla/5.0", false, "2001:db8:7:8::1", a, "* | 10/s burst 1 | host:a.example:net:2001:db8:7::/48"),
            // The sites are limited apart; an unknown or absent Host shares one bucket.
            (
                "/x",
                "Mozilla/5.0",
                false,
                "192.0.2.7",
                Some("B.example:8443"),
                "* | 10/s burst 1 | host:b.example:8443:net:192.0.2.0/24",
            ),
            (
                "/x",
                "Mozilla/5.0",
                false,
                "192.0.2.7",
                Some("a.example:80"),
                "* | 10/s burst 1 | host:a.example:net:192.0.2.0/24",
            ),
            (
                "/x",
                "Mozilla/5.0",
                false,
                "192.0.2.7",
                Some("evil.example"),
                "* | 10/s burst 1 | host:*:net:192.0.2.0/24",
            ),
            ("/x", "Mozilla/5.0", false, "192.0.2.7", None, "* | 10/s burst 1 | host:*:net:192.0.2.0/24"),
            // The files crawlgate serves itself are never limited.
            ("/robots.txt", "RatedBot", true, "192.0.2.7", a, "-"),
            ("/robots.txt?x", "Mozilla/5.0", false, "192.0.2.7", a, "-"),
            ("/agents.txt", "Mozilla/5.0", false, "192.0.2.7", a, "-"),
            ("/.well-known/tdmrep.json", "Mozilla/5.0", false, "192.0.2.7", a, "-"),
        ] {
            assert_eq!(
                limit(&p, target, ua, verified, client, host),
                want,
                "{target} {ua} {verified} {client} {host:?}"
            );
        }
    }

    #[test]
    fn one_site_has_no_host_in_its_keys_and_no_star_rate_no_limit() {
        let one = POLICY.replace("hosts = [\"a.example\", \"b.example:8443\"]", "hosts = [\"a.example\"]");
        let p = crate::load(&one, "l.toml").unwrap().policy;
        assert_eq!(limit(&p, "/x", "Mozilla", false, "192.0.2.7", Some("x")), "* | 10/s burst 1 | net:192.0.2.0/24");
        let no_star = one.replace("user_agents = [\"*\"]\nrate = \"10/s\"", "user_agents = [\"*\"]");
        let p = crate::load(&no_star, "l.toml").unwrap().policy;
        assert_eq!(limit(&p, "/x", "Mozilla", false, "192.0.2.7", None), "-");
        assert_eq!(limit(&p, "/x", "FreeBot", false, "192.0.2.7", None), "-");
        assert_eq!(
            limit(&p, "/x", "RatedBot", false, "192.0.2.7", None),
            "RatedBot | 2/s burst 3 | agent:RatedBot:net:192.0.2.0/24"
        );
    }
}

#[cfg(test)]
mod path_tests {
    use super::tests_support::limit;

    const POLICY: &str = r#"
[upstream]
servers = ["127.0.0.1:9"]
[[group]]
user_agents = ["SearchBot"]
rate = "5/s"
[[group.rates]]
paths = ["/search", "/find$"]
rate = "1/s"
[[group.rates]]
paths = ["/articles/"]
rate = "10/s"
burst = 4
[[group.rates]]
paths = ["/articles/live/*.json"]
rate = "2/min"
[[group]]
user_agents = ["PathOnlyBot"]
rate_mode = "log"
[[group.rates]]
paths = ["/search"]
rate = "1/s"
[[group]]
user_agents = ["*"]
[[group.rates]]
paths = ["/search"]
rate = "1/s"
"#;

    /// Several rates in one group, by path: the longest matching pattern
    /// of the group's `[[group.rates]]` sets the limit and names a bucket
    /// of its own; a path none matches gets the group's `rate`.
    #[test]
    fn per_path_rates_inside_a_group() {
        let p = crate::load(POLICY, "r.toml").unwrap_or_else(|e| panic!("{e}")).policy;
        for (target, ua, verified, want) in [
            ("/search?q=a", "SearchBot", true, "SearchBot | 1/s burst 1 | agent:SearchBot:path:/search"),
            ("/find", "SearchBot", true, "SearchBot | 1/s burst 1 | agent:SearchBot:path:/search"),
            ("/find/x", "SearchBot", true, "SearchBot | 5/s burst 1 | agent:SearchBot"),
            ("/articles/a", "SearchBot", true, "SearchBot | 10/s burst 4 | agent:SearchBot:path:/articles/"),
            (
                "/articles/live/a.json",
                "SearchBot",
                true,
                "SearchBot | 2/min burst 1 | agent:SearchBot:path:/articles/live/*.json",
            ),
            ("/articles/live/a.html", "SearchBot", true, "SearchBot | 10/s burst 4 | agent:SearchBot:path:/articles/"),
            ("/", "SearchBot", true, "SearchBot | 5/s burst 1 | agent:SearchBot"),
            ("/search", "SearchBot", false, "SearchBot | 1/s burst 1 | agent:SearchBot:net:192.0.2.0/24:path:/search"),
            // A group with path rates only: other paths are not limited
            // for a verified claim, and fall to `*` for an unverified one.
            ("/search", "PathOnlyBot", true, "PathOnlyBot | 1/s burst 1 | agent:PathOnlyBot:path:/search"),
            ("/other", "PathOnlyBot", true, "-"),
            ("/other", "PathOnlyBot", false, "-"),
            ("/search", "Mozilla/5.0", false, "* | 1/s burst 1 | net:192.0.2.0/24:path:/search"),
            ("/searching", "Mozilla/5.0", false, "* | 1/s burst 1 | net:192.0.2.0/24:path:/search"),
            ("/other", "Mozilla/5.0", false, "-"),
            ("/robots.txt", "SearchBot", true, "-"),
        ] {
            assert_eq!(limit(&p, target, ua, verified, "192.0.2.7", None), want, "{target} {ua} {verified}");
        }
    }

    /// What `check` says of bad `[[group.rates]]` entries, at their
    /// positions; `rate_mode` applies to a group with path rates only.
    #[test]
    fn bad_path_rates() {
        let group = |entries: &str| {
            format!("[upstream]\nservers = [\"127.0.0.1:9\"]\n[[group]]\nuser_agents = [\"B\"]\n{entries}")
        };
        for (entries, want) in [
            (
                "[[group.rates]]\npaths = [\"/a\", \"a\"]\nrate = \"1/s\"\n",
                "r.toml:6:16: group.rates.paths: pattern `a` must start with '/' or '*'",
            ),
            (
                "[[group.rates]]\npaths = [\"/a\"]\nrate = \"1/s\"\n[[group.rates]]\npaths = [\"/a\"]\nrate = \"2/s\"\n",
                "r.toml:9:10: group.rates.paths: `/a` is in two entries (one rate per path)",
            ),
            (
                "[[group.rates]]\npaths = [\"/a\"]\nrate = \"1/sec\"\n",
                "r.toml:7:8: group.rates.rate: `1/sec` is not a rate (use e.g. \"2/s\", \"30/min\", \"1000/h\")",
            ),
            (
                "[[group.rates]]\npaths = [\"/a\"]\nrate = \"1/s\"\nburst = 0\n",
                "r.toml:8:9: group.rates.burst must be from 1 to 1000000, found 0",
            ),
            ("[[group.rates]]\npaths = []\nrate = \"1/s\"\n", "r.toml:5:1: group.rates: needs paths, e.g. paths = [\"/search\"]"),
        ] {
            let got = crate::load(&group(entries), "r.toml").map(|_| ()).map_err(|e| e.to_string());
            assert_eq!(got.unwrap_err().lines().next(), Some(want), "{entries}");
        }
        let logged = group("rate_mode = \"log\"\n[[group.rates]]\npaths = [\"/a\"]\nrate = \"1/s\"\n");
        assert!(crate::load(&logged, "r.toml").is_ok());
    }
}

#[cfg(test)]
mod mode_tests {
    use crate::limits::{GroupLimit, LimitSource, Rate, RateMode};
    use crate::route::{Identity, UserAgentField};
    use std::time::Duration;

    fn mode(policy: &str, ua: &str) -> Result<Option<RateMode>, String> {
        let p = crate::load(policy, "m.toml").map_err(|e| e.to_string())?.policy;
        let route = p.route_with(false, b"/x", UserAgentField::One(ua), Identity::default());
        Ok(p.limit(&route, "192.0.2.7".parse().unwrap(), None).map(|l| l.mode))
    }

    /// Each `rate_mode` as a group writes it, and what `check` says of a
    /// bad one, at its position.
    #[test]
    fn rate_modes_as_written() {
        let group = |keys: &str| {
            format!("[upstream]\nservers = [\"127.0.0.1:9\"]\n[[group]]\nuser_agents = [\"RatedBot\"]\n{keys}\n")
        };
        for (keys, want) in [
            ("rate = \"1/s\"", Ok(Some(RateMode::Reject))),
            ("rate = \"1/s\"\nrate_mode = \"reject\"", Ok(Some(RateMode::Reject))),
            ("rate = \"1/s\"\nrate_mode = \"log\"", Ok(Some(RateMode::Log))),
            ("rate = \"1/s\"\nrate_mode = \"delay\"", Ok(Some(RateMode::Delay(Duration::from_secs(5))))),
            (
                "rate = \"1/s\"\nrate_mode = \"delay\"\nrate_max_delay = \"750ms\"",
                Ok(Some(RateMode::Delay(Duration::from_millis(750)))),
            ),
            ("crawl_delay = 2\nenforce_crawl_delay = true\nrate_mode = \"log\"", Ok(Some(RateMode::Log))),
            (
                "rate = \"1/s\"\nrate_mode = \"dealy\"",
                Err("m.toml:6:13: group.rate_mode: unknown mode `dealy` (reject, log or delay); did you mean `delay`?"),
            ),
            (
                "rate_mode = \"log\"",
                Err("m.toml:5:13: group.rate_mode: needs a rate (rate, [[group.rates]], or enforce_crawl_delay with crawl_delay)"),
            ),
            (
                "rate = \"1/s\"\nrate_mode = \"log\"\nrate_max_delay = \"1s\"",
                Err("m.toml:7:18: group.rate_max_delay applies only with rate_mode = \"delay\""),
            ),
            (
                "rate = \"1/s\"\nrate_mode = \"delay\"\nrate_max_delay = \"2m\"",
                Err("m.toml:7:18: group.rate_max_delay must be more than 0 and at most 60s, found `2m`"),
            ),
        ] {
            let got = mode(&group(keys), "RatedBot/1.0");
            match want {
                Ok(w) => assert_eq!(got, Ok(w), "{keys}"),
                Err(e) => assert_eq!(got.unwrap_err().lines().next(), Some(e), "{keys}"),
            }
        }
    }

    #[test]
    fn retry_after_bound_and_words() {
        let limit = |count, per, burst, source| GroupLimit {
            rate: Rate { count, per: Duration::from_secs(per) },
            burst,
            source,
        };
        for (l, bound, words) in [
            (limit(2, 1, 1, LimitSource::Rate), 60_000, "2 requests per second"),
            (limit(1, 60, 5, LimitSource::Rate), 300_000, "1 request per minute, bursts of up to 5"),
            (
                limit(1, 10, 5, LimitSource::CrawlDelay),
                60_000,
                "1 request every 10 s (its Crawl-delay), bursts of up to 5",
            ),
            (limit(1000, 3600, 1, LimitSource::Rate), 60_000, "1000 requests per hour"),
            (limit(1, 3600 * 48, 1, LimitSource::CrawlDelay), 86_400_000, "1 request every 172800 s (its Crawl-delay)"),
        ] {
            assert_eq!(l.max_retry_after(), Duration::from_millis(bound), "{l}");
            assert_eq!(l.describe(), words);
        }
    }
}
