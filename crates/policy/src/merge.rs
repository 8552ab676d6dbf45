//! Merging the origin's own robots.txt into the policy's (`[robots_txt]
//! origin = "merge"`): the policy's groups win for every token it names
//! (categories expanded, `*` included), the origin's groups for other
//! crawlers and its `Sitemap` lines are kept. The result is one [`Policy`]:
//! its robots.txt is the file served and its groups are the ones `decide`
//! enforces, so the published file and the enforced decision are the same
//! thing. Pure: the caller fetches the file.

use std::collections::{HashMap, HashSet};
use std::fmt;

use crate::catalog;
use crate::compile::MAX_ROBOTS_TXT;
use crate::identify::TokenMatcher;
use crate::pattern::Pattern;
use crate::policy::{Enforce, Group, Policy};
use crate::render;
use crate::robotstxt::{product_token, RobotsTxt};
use crate::ruleset::RuleSet;
use crate::siteintent;
use crate::validate;

/// What happened to one line of the origin's robots.txt that is not kept
/// as written.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConflictKind {
    /// A user-agent the policy names too: the policy's group applies.
    PolicyToken {
        /// The origin's spelling.
        token: String,
        /// The policy group that names it.
        group: String,
        /// That group's line in the policy file.
        group_line: usize,
    },
    /// A user-agent value that is not a product token (left out).
    InvalidToken {
        /// The value as written.
        value: String,
    },
    /// A `Sitemap` value that cannot be published (left out).
    InvalidSitemap {
        /// Why.
        reason: String,
    },
    /// A line the parser does not read as a record (no colon, or a rule
    /// before any user-agent line): crawlers ignore it, so is it here.
    Rejected {
        /// The line as written.
        text: String,
    },
    /// A user-agent that browsers' User-Agents carry (`Mozilla`,
    /// `compatible`, `AppleWebKit`, ...; [`crate::catalog::in_browser_user_agents`]):
    /// its group would identify every browser, so it is left out.
    BrowserToken {
        /// The origin's spelling.
        token: String,
    },
    /// A line read for the site's intent ([`crate::siteintent`]): a typo
    /// key, a missing colon, a decorated user-agent value. The merged file
    /// carries it in correct form and enforcement follows it.
    Repaired {
        /// The line as written.
        written: String,
        /// How it was read.
        read: String,
    },
    /// Origin groups past `robots_txt.origin_max_groups`, left out (the
    /// line is the first one's).
    TooManyGroups {
        /// The limit.
        max: usize,
        /// Groups left out.
        dropped: usize,
    },
}

/// One conflict, at its line of the origin's robots.txt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    /// 1-based line in the origin's file.
    pub line: usize,
    /// What it is.
    pub kind: ConflictKind,
}

impl fmt::Display for Conflict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: ", self.line)?;
        match &self.kind {
            ConflictKind::PolicyToken { token, group, group_line } => write!(
                f,
                "user-agent `{token}` is named by the policy (group `{group}` at line {group_line}); the policy's group applies"
            ),
            ConflictKind::InvalidToken { value } => {
                write!(f, "user-agent `{}` is not a product token; left out", value.escape_debug())
            }
            ConflictKind::InvalidSitemap { reason } => write!(f, "{reason}; left out"),
            ConflictKind::Rejected { text } => {
                write!(f, "`{}` is not a record of any group; left out", text.escape_debug())
            }
            ConflictKind::BrowserToken { token } => write!(
                f,
                "origin group for `{token}` dropped: the token appears in browser User-Agents and would identify every browser"
            ),
            ConflictKind::Repaired { written, read } => {
                write!(f, "`{}` read as {}", written.escape_debug(), read.escape_debug())
            }
            ConflictKind::TooManyGroups { max, dropped } => write!(
                f,
                "{dropped} origin group(s) from here on dropped: over robots_txt.origin_max_groups ({max})"
            ),
        }
    }
}

/// Why a merge has no result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MergeError {
    /// The merged robots.txt would be over the 500 KiB crawlers must parse.
    #[error("merged robots.txt is {0} bytes, over the {MAX_ROBOTS_TXT} byte (500 KiB) limit crawlers must parse")]
    TooLarge(usize),
}

/// The policy merged with the origin's robots.txt.
#[derive(Debug, Clone)]
pub struct Merged {
    /// The merged policy: [`Policy::robots_txt`] is the file to serve,
    /// [`Policy::decide`] enforces it.
    pub policy: Policy,
    /// Origin lines not kept as written, in line order.
    pub conflicts: Vec<Conflict>,
    /// Groups taken from the origin.
    pub origin_groups: usize,
    /// Sitemaps taken from the origin (not already the policy's).
    pub origin_sitemaps: usize,
}

impl Policy {
    /// Merges the origin's robots.txt `origin` into this policy. Groups an
    /// earlier merge took from an origin are dropped first, so a merged
    /// policy can be merged again with a newer copy; an empty `origin` (the
    /// origin has none, RFC 9309 section 2.3.1.3) gives the policy's own
    /// robots.txt byte for byte.
    ///
    /// A crawler the origin names in several groups gets one group with
    /// all their rules (RFC 9309 section 2.2.1 combines them); origin
    /// groups are enforced with the mode and status of the policy's `*`
    /// group (`off` without one).
    pub fn merge_origin(&self, origin: &[u8]) -> Result<Merged, MergeError> {
        self.merge_origin_at(origin, None)
    }

    /// [`Policy::merge_origin`] for a file fetched from `base`
    /// (`scheme://host[:port]`): a relative `Sitemap` value is resolved
    /// against it (RFC 3986 section 5.2) and reported, as the site meant;
    /// without a base it is left out as not absolute.
    pub fn merge_origin_at(&self, origin: &[u8], base: Option<&str>) -> Result<Merged, MergeError> {
        // Read for the site's intent: repaired lines are merged, served and
        // enforced in correct form, each one reported.
        let intent = siteintent::read(origin, base);
        let parsed = intent.parsed();
        let base: Vec<Group> = self.groups.iter().filter(|g| !g.origin).cloned().collect();
        let mut named: HashMap<String, &Group> = HashMap::new();
        for g in &base {
            for t in &g.tokens {
                named.insert(t.to_ascii_lowercase(), g);
            }
        }
        let mut conflicts: Vec<Conflict> =
            parsed
                .unknown_lines()
                .iter()
                .map(|(line, text)| Conflict { line: *line, kind: ConflictKind::Rejected { text: text.clone() } })
                .chain(intent.repairs.into_iter().map(|r| Conflict {
                    line: r.line,
                    kind: ConflictKind::Repaired { written: r.written, read: r.read },
                }))
                .collect();

        // Origin tokens the policy does not name, in first-seen order, with
        // the origin groups that name each.
        let mut order: Vec<String> = Vec::new();
        let mut membership: HashMap<String, (String, Vec<usize>)> = HashMap::new();
        for (gi, g) in parsed.groups().iter().enumerate() {
            for (ua, &line) in g.user_agents.iter().zip(&g.user_agent_lines) {
                let token = product_token(ua);
                if token != "*" && validate::user_agent(token).is_err() {
                    conflicts.push(Conflict { line, kind: ConflictKind::InvalidToken { value: ua.clone() } });
                    continue;
                }
                let lower = token.to_ascii_lowercase();
                if let Some(pg) = named.get(&lower) {
                    conflicts.push(Conflict {
                        line,
                        kind: ConflictKind::PolicyToken {
                            token: token.to_string(),
                            group: pg.name.clone(),
                            group_line: pg.line,
                        },
                    });
                    continue;
                }
                if token != "*" && catalog::in_browser_user_agents(token) {
                    conflicts.push(Conflict { line, kind: ConflictKind::BrowserToken { token: token.to_string() } });
                    continue;
                }
                let entry = membership.entry(lower.clone()).or_insert_with(|| {
                    order.push(lower);
                    (token.to_string(), Vec::new())
                });
                if entry.1.last() != Some(&gi) {
                    entry.1.push(gi);
                }
            }
        }

        // Tokens named by the same origin groups share one merged group.
        let star = self.star_group.map(|i| &self.groups[i]).filter(|g| !g.origin);
        let (enforce, block_status) = star.map_or((Enforce::Off, 403), |g| (g.enforce, g.block_status));
        let mut sets: Vec<(&[usize], Vec<String>)> = Vec::new();
        let mut set_index: HashMap<&[usize], usize> = HashMap::new();
        for lower in &order {
            let Some((spelling, set)) = membership.get(lower) else { continue };
            match set_index.get(set.as_slice()) {
                Some(&i) => sets[i].1.push(spelling.clone()),
                None => {
                    set_index.insert(set, sets.len());
                    sets.push((set, vec![spelling.clone()]));
                }
            }
        }
        // Bounded: each origin group is a token the proxy identifies and
        // renders on every refresh.
        let max = self.settings.origin_robots.max_groups;
        if sets.len() > max {
            let line = sets[max]
                .0
                .first()
                .and_then(|&i| parsed.groups().get(i))
                .map_or(0, |g| g.user_agent_lines.first().copied().unwrap_or(0));
            conflicts.push(Conflict { line, kind: ConflictKind::TooManyGroups { max, dropped: sets.len() - max } });
            sets.truncate(max);
        }
        let mut groups = base;
        let origin_groups = sets.len();
        for (set, tokens) in sets {
            groups.push(origin_group(&parsed, set, tokens, enforce, block_status));
        }

        let mut extras = self.robots_extras.clone();
        let mut origin_sitemaps = 0;
        for (url, &line) in parsed.sitemaps().iter().zip(parsed.sitemap_lines()) {
            match validate::sitemap(url) {
                Ok(()) if extras.sitemaps.contains(url) => {}
                Ok(()) => {
                    extras.sitemaps.push(url.clone());
                    origin_sitemaps += 1;
                }
                Err(reason) => {
                    let reason = reason.replacen("robots_txt.sitemaps: ", "sitemap ", 1);
                    conflicts.push(Conflict { line, kind: ConflictKind::InvalidSitemap { reason } });
                }
            }
        }
        conflicts.sort_by_key(|c| c.line);

        let (tokens, token_group, star_group) = crate::compile::token_index(&groups);
        let robots_txt = render::robots_txt(&self.file_name, &groups, star_group, &extras, &self.tags);
        if robots_txt.len() > MAX_ROBOTS_TXT {
            return Err(MergeError::TooLarge(robots_txt.len()));
        }
        let mut policy = self.clone();
        policy.matcher = if groups.iter().any(|g| g.origin) {
            tiered_matcher(&tokens, &token_group, &groups)
        } else {
            TokenMatcher::new(&tokens)
        };
        policy.groups = groups;
        policy.star_group = star_group;
        policy.tokens = tokens;
        policy.token_group = token_group;
        policy.robots_txt = robots_txt;
        if policy.settings.server.origin_paths == crate::route::OriginPaths::Windows {
            policy.fold_paths();
        }
        Ok(Merged { policy, conflicts, origin_groups, origin_sitemaps })
    }

    /// Whether this policy carries groups taken from an origin.
    pub fn has_origin_groups(&self) -> bool {
        self.groups.iter().any(|g| g.origin)
    }

    /// The tokens a counter may carry as a label: those of the policy's own
    /// groups, and catalog crawlers the origin names (a bounded set however
    /// often the origin's file changes), in token order. Other origin
    /// tokens are counted as unidentified bots.
    pub fn agent_labels(&self) -> impl Iterator<Item = &str> {
        self.tokens.iter().zip(&self.token_group).filter_map(|(t, &g)| {
            let origin = self.groups.get(g).is_some_and(|g| g.origin);
            (!origin || crate::catalog::lookup(t).is_some()).then_some(t.as_str())
        })
    }

    /// The policy's own tokens (not the origin's), in token order.
    pub fn own_tokens(&self) -> impl Iterator<Item = &str> {
        self.tokens
            .iter()
            .zip(&self.token_group)
            .filter(|(_, &g)| self.groups.get(g).is_some_and(|g| !g.origin))
            .map(|(t, _)| t.as_str())
    }

    /// The names of the policy's own groups (not the origin's).
    pub fn own_group_names(&self) -> impl Iterator<Item = &str> {
        self.groups.iter().filter(|g| !g.origin).map(|g| g.name.as_str())
    }
}

/// The matcher of a merged policy, in three tiers: the policy's own tokens;
/// then the catalog's crawlers (the origin's group for one the origin
/// names, else none, so that it gets `*`); then the origin's other tokens.
/// An origin token thus identifies only a request that names neither a
/// policy token nor a catalog crawler: `User-agent: compatible` cannot take
/// GPTBot's `Mozilla/5.0 ... compatible; GPTBot/1.2` from the policy.
fn tiered_matcher(tokens: &[String], token_group: &[usize], groups: &[Group]) -> TokenMatcher {
    let mut all: Vec<&str> = tokens.iter().map(String::as_str).collect();
    let mut tiers: Vec<u8> = Vec::with_capacity(tokens.len() + catalog::entries().len());
    let mut named: HashSet<String> = HashSet::with_capacity(tokens.len());
    for (t, &g) in tokens.iter().zip(token_group) {
        let origin = groups.get(g).is_some_and(|g| g.origin);
        tiers.push(match (origin, catalog::lookup(t).is_some()) {
            (false, _) => 0,
            (true, true) => 1,
            (true, false) => 2,
        });
        named.insert(t.to_ascii_lowercase());
    }
    for e in catalog::entries().iter().filter(|e| e.ua_visible && !named.contains(&e.token.to_ascii_lowercase())) {
        all.push(&e.token);
        tiers.push(1);
    }
    TokenMatcher::tiered(&all, &tiers, tokens.len())
}

/// The group enforced and published for `tokens`, which the origin groups
/// `set` name: their rules in file order (an empty pattern matches nothing
/// and is dropped), the last crawl-delay among them.
fn origin_group(parsed: &RobotsTxt, set: &[usize], tokens: Vec<String>, enforce: Enforce, block_status: u16) -> Group {
    let mut rules_src = Vec::new();
    let mut compiled = Vec::new();
    let mut crawl_delay: Option<(usize, &str)> = None;
    for g in set.iter().filter_map(|&i| parsed.groups().get(i)) {
        for r in g.rules.iter().filter(|r| !r.pattern.is_empty()) {
            rules_src.push((r.pattern.clone(), r.allow, r.line));
            compiled.push((Pattern::new_lenient(&r.pattern), r.allow));
        }
        for (value, line) in &g.crawl_delays {
            if !value.is_empty() && crawl_delay.is_none_or(|(l, _)| *line > l) {
                crawl_delay = Some((*line, value));
            }
        }
    }
    let first = set.first().and_then(|&i| parsed.groups().get(i));
    Group {
        name: tokens.first().cloned().unwrap_or_default(),
        line: first.and_then(|g| g.user_agent_lines.first().copied()).unwrap_or(0),
        tokens,
        rules_src,
        rules: RuleSet::new(compiled),
        crawl_delay: crawl_delay.map(|(_, v)| v.to_string()),
        content_usage: Vec::new(),
        content_usage_set: RuleSet::default(),
        content_usage_combined: Vec::new(),
        app_directives: Vec::new(),
        enforce,
        block_status,
        // The `*` group cannot charge, and origin groups copy its mode.
        charge: None,
        origin: true,
        // The origin's groups are not verified: verification is a policy
        // decision, made for the groups the policy writes.
        verify: crate::verification::VerifyMode::None,
        verify_written: None,
        on_spoofed: crate::verification::OnFailure::Anonymous,
        on_unverified: crate::verification::OnFailure::Log,
        on_unverified_written: false,
        // The origin's Crawl-delay is published, never enforced: limits
        // are the policy's.
        limit: None,
        accept_signature: None,
        rate_mode: Default::default(),
        class: None,
        path_limits: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{load, Action};

    const POLICY: &str = "[upstream]\nservers = [\"127.0.0.1:8000\"]\n\n[robots_txt]\nsitemaps = [\"https://e.com/a.xml\"]\n\n[[group]]\nname = \"ai\"\ncategories = [\"ai-training\"]\ndisallow = [\"/\"]\nenforce = \"block\"\n\n[[group]]\nuser_agents = [\"*\"]\ndisallow = [\"/private/\"]\nenforce = \"log\"\n";

    fn policy() -> Policy {
        load(POLICY, "p.toml").unwrap_or_else(|e| panic!("{e}")).policy
    }

    #[test]
    fn policy_wins_for_its_tokens_including_categories_and_star() {
        let p = policy();
        let origin =
            b"User-agent: GPTBot\nAllow: /\n\nUser-agent: *\nDisallow: /x\n\nUser-agent: Foo\nDisallow: /foo\n";
        let m = p.merge_origin(origin).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(m.origin_groups, 1);
        assert_eq!(m.conflicts.len(), 2);
        assert_eq!(m.conflicts[0].line, 1);
        assert!(
            matches!(&m.conflicts[0].kind, ConflictKind::PolicyToken { token, group, .. } if token == "GPTBot" && group == "ai")
        );
        assert_eq!(
            m.conflicts[1].to_string(),
            "line 4: user-agent `*` is named by the policy (group `*` at line 13); the policy's group applies"
        );
        // GPTBot keeps the policy's block; `*` keeps the policy's rules.
        let d = m.policy.decide("GPTBot/1.0", "/a");
        assert!(!d.allowed);
        assert_eq!(d.enforce, Enforce::Block);
        assert!(m.policy.decide("Other", "/x").allowed);
        // Foo is the origin's, enforced with the `*` group's mode.
        let d = m.policy.decide("Foo/2", "/foo/bar");
        assert!(!d.allowed);
        assert_eq!(d.enforce, Enforce::Log);
        assert_eq!(d.agent, Some("Foo"));
        assert!(m.policy.decide("Foo/2", "/private/").allowed);
    }

    #[test]
    fn origin_groups_and_sitemaps_kept_and_deduplicated() {
        let p = policy();
        let origin = b"Sitemap: https://e.com/a.xml\nUser-agent: Foo\nUser-agent: Bar\nDisallow: /fb\nCrawl-delay: 3\n\nUser-agent: foo\nDisallow: /only-foo\nSitemap: https://e.com/b.xml\nSitemap: https://e.com/b.xml\n";
        let m = p.merge_origin(origin).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(m.conflicts, vec![]);
        assert_eq!(m.origin_sitemaps, 1);
        assert_eq!(m.origin_groups, 2);
        let text = m.policy.robots_txt();
        assert!(text.ends_with(
            "\n# The origin's own groups, for crawlers this policy does not name.\n\nUser-agent: Foo\nDisallow: /fb\nDisallow: /only-foo\nCrawl-delay: 3\n\nUser-agent: Bar\nDisallow: /fb\nCrawl-delay: 3\n\nSitemap: https://e.com/a.xml\nSitemap: https://e.com/b.xml\n"
        ), "{text}");
        assert!(!m.policy.decide("foo", "/only-foo").allowed);
        assert!(m.policy.decide("Bar", "/only-foo").allowed);
        assert!(!m.policy.decide("Bar", "/fb").allowed);
    }

    #[test]
    fn conflicts_listed_in_line_order() {
        let p = policy();
        let origin = b"Disallow: /before-any-group\nUser-agent: Foo/2.0 (+https://foo.example)\nUser-agent: ClaudeBot\nDisallow: /\nno colon here\nSitemap: /relative.xml\n";
        let m = p.merge_origin(origin).unwrap_or_else(|e| panic!("{e}"));
        let lines: Vec<String> = m.conflicts.iter().map(ToString::to_string).collect();
        assert_eq!(
            lines,
            [
                "line 1: `Disallow: /before-any-group` is not a record of any group; left out",
                "line 2: `User-agent: Foo/2.0 (+https://foo.example)` read as `User-agent: Foo` (the product token `Foo`)",
                "line 3: user-agent `ClaudeBot` is named by the policy (group `ai` at line 7); the policy's group applies",
                "line 5: `no colon here` is not a record of any group; left out",
                "line 6: sitemap `/relative.xml` is not an absolute http(s) URL; left out",
            ]
        );
        // `Foo`, cut from `Foo/2.0 (...)`, is the one origin group.
        assert_eq!(m.origin_groups, 1);
    }

    #[test]
    fn no_origin_file_is_the_policy_alone_and_merging_again_replaces() {
        let p = policy();
        let empty = p.merge_origin(b"").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(empty.policy.robots_txt(), p.robots_txt());
        let first = p.merge_origin(b"User-agent: Foo\nDisallow: /\n").unwrap_or_else(|e| panic!("{e}"));
        assert!(first.policy.has_origin_groups());
        let again = first.policy.merge_origin(b"User-agent: Baz\nDisallow: /\n").unwrap_or_else(|e| panic!("{e}"));
        assert!(again.policy.decide("Foo", "/a").allowed);
        assert!(!again.policy.decide("Baz", "/a").allowed);
        let gone = again.policy.merge_origin(b"").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(gone.policy.robots_txt(), p.robots_txt());
        assert!(!gone.policy.has_origin_groups());
    }

    #[test]
    fn origin_star_applies_when_the_policy_has_none() {
        let src =
            "[upstream]\nservers = [\"127.0.0.1:8000\"]\n\n[[group]]\nuser_agents = [\"GPTBot\"]\ndisallow = [\"/\"]\n";
        let p = load(src, "p.toml").unwrap_or_else(|e| panic!("{e}")).policy;
        let m = p.merge_origin(b"User-agent: *\nDisallow: /tmp\n").unwrap_or_else(|e| panic!("{e}"));
        let d = m.policy.decide("Mozilla/5.0", "/tmp/x");
        assert!(!d.allowed);
        assert_eq!(d.enforce, Enforce::Off);
    }

    #[test]
    fn origin_keys_validated_with_positions() {
        let src = |keys: &str| format!("[upstream]\nservers = [\"127.0.0.1:8000\"]\n\n[robots_txt]\n{keys}\n");
        let ok = load(&src("origin = \"merge\"\norigin_refresh = \"1s\"\norigin_timeout = \"500ms\""), "p.toml")
            .unwrap_or_else(|e| panic!("{e}"));
        let o = &ok.policy.settings().origin_robots;
        assert_eq!(o.mode, crate::OriginRobotsMode::Merge);
        assert_eq!(o.refresh, std::time::Duration::from_secs(1));
        assert_eq!(o.timeout, std::time::Duration::from_millis(500));
        assert_eq!(o.host, None);
        assert!(ok.warnings.is_empty());
        let defaults = load(&src(""), "p.toml").unwrap_or_else(|e| panic!("{e}")).policy;
        let d = &defaults.settings().origin_robots;
        assert_eq!(
            (d.mode, d.refresh, d.timeout),
            (crate::OriginRobotsMode::Ignore, std::time::Duration::from_secs(600), std::time::Duration::from_secs(5))
        );
        let err = load(
            &src("origin = \"fetch\"\norigin_refresh = \"0s\"\norigin_timeout = \"soon\"\norigin_host = \"a b\""),
            "p.toml",
        )
        .map(|_| ())
        .unwrap_err()
        .to_string();
        assert_eq!(
            err,
            "p.toml:5:10: robots_txt.origin must be ignore or merge, found `fetch`\n\
             p.toml:6:18: robots_txt.origin_refresh must be greater than zero, found `0s`\n\
             p.toml:7:18: robots_txt.origin_timeout: `soon` is not a duration (use e.g. 500ms, 30s, 5m, 1h, 2d)\n\
             p.toml:8:15: robots_txt.origin_host must be a host or host:port, found `a b`"
        );
        let merged = load(&src("origin = \"merged\""), "p.toml").map(|_| ()).unwrap_err().to_string();
        assert_eq!(
            merged,
            "p.toml:5:10: robots_txt.origin must be ignore or merge, found `merged`; did you mean `merge`?"
        );
        let warned = load(&src("origin_refresh = \"1m\""), "p.toml").unwrap_or_else(|e| panic!("{e}"));
        let warnings: Vec<String> = warned.warnings.iter().map(ToString::to_string).collect();
        assert_eq!(
            warnings,
            ["p.toml:5:18: warning[origin-key-unused]: robots_txt.origin_refresh has no effect unless robots_txt.origin = \"merge\""]
        );
    }

    /// Issue 21 item 2: an origin group for a word every browser-like
    /// User-Agent carries took GPTBot's and ClaudeBot's requests from the
    /// policy's blocking group (the longest token found won).
    #[test]
    fn origin_browser_words_cannot_unblock_a_policy_crawler() {
        let p = policy();
        let gpt =
            "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)";
        let claude =
            "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ClaudeBot/1.0; +claudebot@anthropic.com)";
        let origin = b"User-agent: compatible\nAllow: /\n\nUser-agent: Mozilla\nUser-agent: AppleWebKit\nAllow: /\n\nUser-agent: KHTML\nUser-agent: FooBot\nDisallow: /foo\n";
        let m = p.merge_origin(origin).unwrap_or_else(|e| panic!("{e}"));
        let lines: Vec<String> = m.conflicts.iter().map(ToString::to_string).collect();
        assert_eq!(
            lines,
            [
                "line 1: origin group for `compatible` dropped: the token appears in browser User-Agents and would identify every browser",
                "line 4: origin group for `Mozilla` dropped: the token appears in browser User-Agents and would identify every browser",
                "line 5: origin group for `AppleWebKit` dropped: the token appears in browser User-Agents and would identify every browser",
                "line 8: origin group for `KHTML` dropped: the token appears in browser User-Agents and would identify every browser",
            ]
        );
        assert_eq!(m.origin_groups, 1);
        for ua in [gpt, claude] {
            let d = m.policy.decide(ua, "/a");
            assert_eq!((d.allowed, d.action(), d.group.map(|g| g.name)), (false, Action::Block, Some("ai")), "{ua}");
            assert_eq!(d, p.decide(ua, "/a"));
        }
        let browser =
            "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";
        assert_eq!(m.policy.decide(browser, "/foo").agent, None);
        assert_eq!(m.policy.decide("Mozilla/5.0 (compatible; FooBot/1.0)", "/foo").agent, Some("FooBot"));
        assert!(!m.policy.robots_txt().contains("compatible"), "{}", m.policy.robots_txt());
    }

    /// Even a generic token the browser list misses cannot take a request
    /// naming a policy token or a catalog crawler: origin tokens come last.
    #[test]
    fn origin_tokens_identify_only_what_nothing_else_names() {
        let p = policy();
        let origin = b"User-agent: SomePhoneModel\nAllow: /\n\nUser-agent: Googlebot\nDisallow: /g\n";
        let m = p.merge_origin(origin).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(m.conflicts, vec![]);
        // A policy token wins over the longer origin token.
        let d = m.policy.decide("Mozilla/5.0 (SomePhoneModel) GPTBot/1.2", "/a");
        assert_eq!((d.agent, d.allowed), (Some("GPTBot"), false));
        // A catalog crawler the origin names gets the origin's group for it,
        // not a generic origin token's.
        let d = m.policy.decide("Mozilla/5.0 (Linux; Android 6.0.1; SomePhoneModel) (compatible; Googlebot/2.1)", "/g");
        assert_eq!((d.agent, d.allowed), (Some("Googlebot"), false));
        // A catalog crawler neither names falls to `*`, not to `SomePhoneModel`.
        let d = m.policy.decide("Mozilla/5.0 (SomePhoneModel; compatible; bingbot/2.0)", "/private/x");
        assert_eq!((d.agent, d.allowed, d.group.map(|g| g.name)), (None, false, Some("*")));
        // Nothing else named: the origin token identifies.
        assert_eq!(m.policy.decide("Mozilla/5.0 (SomePhoneModel)", "/private/x").agent, Some("SomePhoneModel"));
    }

    #[test]
    fn origin_groups_capped() {
        let src = |max: &str| {
            format!("[upstream]\nservers = [\"127.0.0.1:8000\"]\n\n[robots_txt]\norigin = \"merge\"\n{max}\n")
        };
        let mut origin = String::new();
        for i in 0..600 {
            origin.push_str(&format!("User-agent: Bot{i}\nDisallow: /{i}\n\n"));
        }
        let p = load(&src(""), "p.toml").unwrap_or_else(|e| panic!("{e}")).policy;
        assert_eq!(p.settings().origin_robots.max_groups, 500);
        let m = p.merge_origin(origin.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(m.origin_groups, 500);
        let lines: Vec<String> = m.conflicts.iter().map(ToString::to_string).collect();
        assert_eq!(
            lines,
            ["line 1501: 100 origin group(s) from here on dropped: over robots_txt.origin_max_groups (500)"]
        );
        assert_eq!(m.policy.decide("Bot499", "/499").agent, Some("Bot499"));
        assert_eq!(m.policy.decide("Bot500", "/500").agent, None);
        let p = load(&src("origin_max_groups = 2"), "p.toml").unwrap_or_else(|e| panic!("{e}")).policy;
        assert_eq!(p.merge_origin(origin.as_bytes()).map(|m| m.origin_groups), Ok(2));
        let err = load(&src("origin_max_groups = -1"), "p.toml").map(|_| ()).unwrap_err().to_string();
        assert_eq!(err, "p.toml:6:21: robots_txt.origin_max_groups must be between 0 and 100000, found -1");
    }

    #[test]
    fn too_large_is_an_error() {
        let p = policy();
        let mut origin = String::from("User-agent: Foo\n");
        while origin.len() <= MAX_ROBOTS_TXT {
            origin.push_str("Disallow: /some/long/path/that/repeats\n");
        }
        assert!(matches!(p.merge_origin(origin.as_bytes()), Err(MergeError::TooLarge(_))));
    }

    /// Issue 27: a relative `Sitemap` in the origin's file is resolved
    /// against the origin it was fetched from, served absolute and
    /// reported; without a base it is left out as before.
    #[test]
    fn relative_sitemap_resolved_against_the_origin() {
        let p = policy();
        let origin = b"User-agent: FooBot\nDisallow: /f\nSitemap: /sitemap.xml\nSitemap: news.xml\nSitemap: https://e.com/c.xml\n";
        let m = p.merge_origin_at(origin, Some("https://www.example.org")).unwrap_or_else(|e| panic!("{e}"));
        let lines: Vec<String> = m.conflicts.iter().map(ToString::to_string).collect();
        assert_eq!(
            lines,
            [
                "line 3: `Sitemap: /sitemap.xml` read as `Sitemap: https://www.example.org/sitemap.xml` (relative URL resolved against the origin)",
                "line 4: `Sitemap: news.xml` read as `Sitemap: https://www.example.org/news.xml` (relative URL resolved against the origin)",
            ]
        );
        assert_eq!(m.origin_sitemaps, 3);
        let text = m.policy.robots_txt();
        assert!(
            text.ends_with("Sitemap: https://www.example.org/sitemap.xml\nSitemap: https://www.example.org/news.xml\nSitemap: https://e.com/c.xml\n"),
            "{text}"
        );
        let without = p.merge_origin(origin).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(without.origin_sitemaps, 1);
    }

    /// Issue 36: an origin's phrase is kept as written and matches
    /// nothing; before, `Go!Zilla` made a group `Go` that disallowed every
    /// Go program and `Yahoo Pipes 1.0` one that caught Yahoo's Slurp.
    #[test]
    fn origin_phrases_make_no_groups() {
        let src = "[upstream]\nservers = [\"127.0.0.1:8000\"]\n\n[[group]]\nuser_agents = [\"*\"]\nallow = [\"/\"]\nenforce = \"block\"\n";
        let p = load(src, "p.toml").unwrap_or_else(|e| panic!("{e}")).policy;
        let origin = b"User-agent: Go!Zilla (www.gozilla.com)\nDisallow: /\n\nUser-agent: Yahoo Pipes 1.0\nDisallow: /\n\nUser-agent: FooBot/1.0\nDisallow: /foo\n";
        let m = p.merge_origin(origin).unwrap_or_else(|e| panic!("{e}"));
        let lines: Vec<String> = m.conflicts.iter().map(ToString::to_string).collect();
        assert_eq!(
            lines,
            [
                "line 1: `User-agent: Go!Zilla (www.gozilla.com)` read as `User-agent: Go!Zilla (www.gozilla.com)` (not cut to `Go`, a word the User-Agents of other clients carry: names no crawler)",
                "line 1: user-agent `Go!Zilla (www.gozilla.com)` is not a product token; left out",
                "line 4: `User-agent: Yahoo Pipes 1.0` read as `User-agent: Yahoo Pipes 1.0` (not cut to `Yahoo`, a word the User-Agents of other clients carry: names no crawler)",
                "line 4: user-agent `Yahoo Pipes 1.0` is not a product token; left out",
                "line 7: `User-agent: FooBot/1.0` read as `User-agent: FooBot` (the product token `FooBot`)",
            ]
        );
        assert_eq!(m.origin_groups, 1);
        for ua in [
            "Go-http-client/1.1",
            "Go-http-client/2.0",
            "Mozilla/5.0 (compatible; Yahoo! Slurp; http://help.yahoo.com/help/us/ysearch/slurp)",
        ] {
            let d = m.policy.decide(ua, "/a");
            assert_eq!((d.allowed, d.agent), (true, None), "{ua}");
        }
        assert!(!m.policy.decide("FooBot/1.0", "/foo/x").allowed);
        let text = m.policy.robots_txt();
        assert!(!text.contains("User-agent: Go\n") && !text.contains("User-agent: Yahoo\n"), "{text}");
    }

    /// Lines a site evidently meant are merged in correct form, served,
    /// enforced and reported; a browser word is not cut out of a value.
    #[test]
    fn origin_read_for_the_sites_intent() {
        let p = policy();
        let origin = "User-agent: Googlebot/2.1\nDisalow: /private/\nDisallow /nocolon/\n\nUser-agent: Mozilla/5.0\nDisallow: /m/\n\nUser-agent: FooBot\nDisallow:\u{a0}/nbsp/\n";
        let m = p.merge_origin(origin.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
        let lines: Vec<String> = m.conflicts.iter().map(ToString::to_string).collect();
        assert_eq!(
            lines,
            [
                "line 1: `User-agent: Googlebot/2.1` read as `User-agent: Googlebot` (the product token `Googlebot`)",
                "line 2: `Disalow: /private/` read as `Disallow: /private/`",
                "line 3: `Disallow /nocolon/` read as `Disallow: /nocolon/`",
                "line 5: `User-agent: Mozilla/5.0` read as `User-agent: Mozilla/5.0` (not cut to `Mozilla`, a word of browser User-Agents: names no crawler)",
                "line 5: user-agent `Mozilla/5.0` is not a product token; left out",
                "line 9: `Disallow:\\u{a0}/nbsp/` is not a record of any group; left out",
            ]
        );
        assert!(
            m.policy.robots_txt().contains("User-agent: Googlebot\nDisallow: /private/\nDisallow: /nocolon/\n"),
            "{}",
            m.policy.robots_txt()
        );
        assert!(!m.policy.robots_txt().contains("/nbsp/"));
        assert_eq!(m.policy.decide("Mozilla/5.0 (compatible; Googlebot/2.1)", "/private/a").agent, Some("Googlebot"));
        assert_eq!(m.policy.decide("FooBot/1.0", "/nbsp/a").agent, Some("FooBot"));
    }
}
