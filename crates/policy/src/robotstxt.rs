//! A tolerant robots.txt parser and an RFC 9309 evaluator for any
//! robots.txt (used by `robots-test`, `import` and the round-trip tests).
//!
//! Accepts what is found in the wild: any line ending, a UTF-8 BOM,
//! invalid UTF-8 (lossy), comments, unknown lines (kept, they don't end a
//! group), any size. Lines without a colon are ignored, as RFC 9309's
//! grammar requires the colon. It never panics.
//!
//! Groups are read as RFC 9309 section 2.2.4 asks: records other than
//! user-agent, allow and disallow lines (`Sitemap`, `Crawl-delay`, unknown
//! keys, comments) do not interfere, so they never split consecutive
//! user-agent lines into two groups; only an Allow or Disallow line ends
//! the run of user-agent lines that starts a group.

use std::sync::OnceLock;

use crate::canonical::canonicalize;
use crate::identify::TokenMatcher;
use crate::pattern::Pattern;
use crate::ruleset::RuleSet;
use crate::validate::is_crawler_token;

/// One Allow or Disallow line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedRule {
    /// `allow:` (true) or `disallow:` (false).
    pub allow: bool,
    /// The value as written.
    pub pattern: String,
    /// 1-based line number.
    pub line: usize,
}

/// One group: its user-agent values and rules.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParsedGroup {
    /// The `user-agent:` values as written.
    pub user_agents: Vec<String>,
    /// 1-based line of each `user_agents` value.
    pub user_agent_lines: Vec<usize>,
    /// Allow/Disallow lines in order.
    pub rules: Vec<ParsedRule>,
    /// The last `crawl-delay:` value.
    pub crawl_delay: Option<String>,
    /// Every `crawl-delay:` line in order: `(value, line)`.
    pub crawl_delays: Vec<(String, usize)>,
    /// Other lines inside the group: `(key lowercase, value, line)`.
    pub other: Vec<(String, String, usize)>,
}

/// A parsed robots.txt.
#[derive(Debug, Clone, Default)]
pub struct RobotsTxt {
    groups: Vec<ParsedGroup>,
    sitemaps: Vec<String>,
    /// 1-based line of each sitemap.
    sitemap_lines: Vec<usize>,
    /// Lines outside any group or not understood: `(line, text)`.
    unknown: Vec<(usize, String)>,
    /// The file's product tokens and their matcher, built on the first
    /// question about a full User-Agent header.
    identify: OnceLock<(Vec<String>, TokenMatcher)>,
    /// Per group: its non-empty rules compiled, with their indices in
    /// [`ParsedGroup::rules`]; built on the first decision, so a batch of
    /// questions (`robots-test --batch`) compiles each pattern once.
    compiled: OnceLock<Vec<(RuleSet, Vec<usize>)>>,
}

/// The name a `user-agent:` value or a crawler string stands for: the
/// whole trimmed value, `*` for the wildcard. RFC 9309 compares the
/// crawler's product token with the value case-insensitively; a value
/// that is not a bare token (`Googlebot/2.1`, `FOO BAR`, `foobot*`) matches
/// no crawler, unlike Google's parser, which cuts it at the first
/// character outside `[A-Za-z_-]`. Tokens with digits or dots (`AI2Bot`,
/// `archive.org_bot`) are compared whole, as crawlers send them.
pub fn product_token(s: &str) -> &str {
    let s = s.trim();
    if s == "*" {
        return "*";
    }
    s
}

/// The token Google's parser reads in a user-agent value or a crawler
/// name (robots.cc `ExtractUserAgent`): up to the first character outside
/// `[A-Za-z_-]`, so `Googlebot/2.1` is `Googlebot` and `MJ12bot` is `MJ`.
pub fn google_token(s: &str) -> &str {
    let s = s.trim_matches(is_ws);
    let end = s.find(|c: char| !(c.is_ascii_alphabetic() || c == '_' || c == '-')).unwrap_or(s.len());
    &s[..end]
}

/// RFC 9309 section 2.2 whitespace: space and horizontal tab.
fn is_ws(c: char) -> bool {
    c == ' ' || c == '\t'
}

fn same_token(a: &str, b: &str) -> bool {
    a.chars().flat_map(char::to_lowercase).eq(b.chars().flat_map(char::to_lowercase))
}

/// Lines with their 1-based numbers; `\r\n`, `\n` and a lone `\r` each
/// end one line.
fn lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut rest = text;
    let mut n = 0usize;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        n += 1;
        let end = rest.find(['\n', '\r']).unwrap_or(rest.len());
        let line = &rest[..end];
        let skip = if rest[end..].starts_with("\r\n") {
            2
        } else if end < rest.len() {
            1
        } else {
            0
        };
        rest = &rest[end + skip..];
        Some((n, line))
    })
}

/// The lines of a robots.txt body exactly as [`RobotsTxt::parse`] numbers
/// them (after the BOM, invalid UTF-8 replaced), blank ones included:
/// `(1-based line, text)`. For tools that quote the source.
pub fn source_lines(bytes: &[u8]) -> Vec<(usize, String)> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let text = String::from_utf8_lossy(bytes);
    lines(&text).map(|(n, l)| (n, l.to_string())).collect()
}

/// The path and query of a URL or path; a fragment is dropped and an
/// empty path is `/`.
pub fn path_of(url: &str) -> String {
    let mut rest = url;
    if let Some(i) = url.find("://") {
        let after = &url[i + 3..];
        rest = match after.find(['/', '?', '#']) {
            Some(j) => &after[j..],
            None => "",
        };
    }
    let rest = rest.split('#').next().unwrap_or("");
    if rest.is_empty() {
        "/".to_string()
    } else if rest.starts_with('?') {
        format!("/{rest}")
    } else {
        rest.to_string()
    }
}

impl RobotsTxt {
    /// Parses a robots.txt body.
    pub fn parse(bytes: &[u8]) -> RobotsTxt {
        let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
        let text = String::from_utf8_lossy(bytes);
        let mut out = RobotsTxt::default();
        let mut current: Option<ParsedGroup> = None;
        // Whether the current group has seen an Allow or Disallow line, so
        // the next user-agent line starts a new group. Other records do not
        // count (RFC 9309 section 2.2.4: they must not interfere).
        let mut in_rules = false;
        for (line_no, raw_line) in lines(&text) {
            // RFC 9309 section 2.2: whitespace is space and tab only.
            let line = raw_line.split('#').next().unwrap_or("").trim_matches(is_ws);
            if line.is_empty() {
                continue;
            }
            let Some((key, value)) = line.split_once(':') else {
                out.unknown.push((line_no, raw_line.to_string()));
                continue;
            };
            let key = key.trim_matches(is_ws).to_ascii_lowercase();
            let value = value.trim_matches(is_ws);
            // A value starting with another space character (U+00A0, ...)
            // is not one the grammar allows: the line is ignored, as Google
            // ignores it too.
            if value.starts_with(char::is_whitespace) {
                out.unknown.push((line_no, raw_line.to_string()));
                continue;
            }
            let value = value.to_string();
            match key.as_str() {
                "user-agent" => {
                    if in_rules || current.is_none() {
                        if let Some(g) = current.take() {
                            out.groups.push(g);
                        }
                        current = Some(ParsedGroup::default());
                        in_rules = false;
                    }
                    if let Some(g) = current.as_mut() {
                        g.user_agents.push(value);
                        g.user_agent_lines.push(line_no);
                    }
                }
                "sitemap" => {
                    out.sitemaps.push(value);
                    out.sitemap_lines.push(line_no);
                }
                "allow" | "disallow" => match current.as_mut() {
                    Some(g) => {
                        in_rules = true;
                        g.rules.push(ParsedRule { allow: key == "allow", pattern: value, line: line_no });
                    }
                    None => out.unknown.push((line_no, raw_line.to_string())),
                },
                _ => match current.as_mut() {
                    Some(g) => {
                        if key == "crawl-delay" {
                            g.crawl_delays.push((value.clone(), line_no));
                            g.crawl_delay = Some(value);
                        } else {
                            g.other.push((key, value, line_no));
                        }
                    }
                    None => out.unknown.push((line_no, raw_line.to_string())),
                },
            }
        }
        if let Some(g) = current.take() {
            out.groups.push(g);
        }
        out
    }

    /// The file with the user-agent values at `lines` that would be
    /// compared whole with a crawler's name (no whitespace, no `/`) left
    /// out: for values read as naming no crawler
    /// ([`crate::siteintent::SiteIntent::parsed`]). Other values already
    /// match no name, and stay for the reports that list them. A group
    /// left with no value applies to no crawler.
    pub fn without_user_agents_at(mut self, lines: &[usize]) -> RobotsTxt {
        if lines.is_empty() {
            return self;
        }
        for g in &mut self.groups {
            let (values, at): (Vec<String>, Vec<usize>) = std::mem::take(&mut g.user_agents)
                .into_iter()
                .zip(std::mem::take(&mut g.user_agent_lines))
                .filter(|(v, l)| !lines.contains(l) || v.contains(|c: char| c.is_whitespace() || c == '/'))
                .unzip();
            g.user_agents = values;
            g.user_agent_lines = at;
        }
        self
    }

    /// The groups in file order.
    pub fn groups(&self) -> &[ParsedGroup] {
        &self.groups
    }

    /// `Sitemap:` values.
    pub fn sitemaps(&self) -> &[String] {
        &self.sitemaps
    }

    /// The 1-based line of each [`RobotsTxt::sitemaps`] value.
    pub fn sitemap_lines(&self) -> &[usize] {
        &self.sitemap_lines
    }

    /// Lines that are outside any group or have no colon.
    pub fn unknown_lines(&self) -> &[(usize, String)] {
        &self.unknown
    }

    /// The name a crawler goes by: `user_agent` itself, trimmed, when it is
    /// one word (`GPTBot`, `AI2Bot`: no whitespace and no `/`), compared
    /// with `user-agent:` values as a whole; in a full User-Agent header
    /// (`Mozilla/5.0 (compatible; GPTBot/1.2)`), the file's product token
    /// found there the way the proxy identifies requests ([`TokenMatcher`]:
    /// whole words, ASCII case-insensitive, the longest wins). `None` when
    /// the header holds none of the file's tokens, or for an empty name,
    /// which only `*` groups apply to.
    pub fn crawler_token<'a>(&'a self, user_agent: &'a str) -> Option<&'a str> {
        let ua = user_agent.trim();
        if ua.is_empty() || ua == "*" {
            return None;
        }
        if !ua.contains(|c: char| c.is_whitespace() || c == '/') {
            return Some(ua);
        }
        let (tokens, matcher) = self.identify.get_or_init(|| {
            let mut tokens: Vec<String> = Vec::new();
            for g in &self.groups {
                for v in &g.user_agents {
                    let t = product_token(v);
                    if is_crawler_token(t) && !tokens.iter().any(|x| same_token(x, t)) {
                        tokens.push(t.to_string());
                    }
                }
            }
            let matcher = TokenMatcher::new(&tokens);
            (tokens, matcher)
        });
        matcher.find(ua).and_then(|i| tokens.get(i)).map(String::as_str)
    }

    /// Indices of the groups that apply to a crawler (its product token,
    /// case-insensitive, found as [`RobotsTxt::crawler_token`] says; else
    /// the `*` groups; else none).
    pub fn select(&self, user_agent: &str) -> Vec<usize> {
        let named: Vec<usize> = match self.crawler_token(user_agent) {
            None => Vec::new(),
            Some(token) => (0..self.groups.len())
                .filter(|&i| self.groups[i].user_agents.iter().any(|ua| same_token(product_token(ua), token)))
                .collect(),
        };
        if !named.is_empty() {
            return named;
        }
        (0..self.groups.len())
            .filter(|&i| self.groups[i].user_agents.iter().any(|ua| product_token(ua) == "*"))
            .collect()
    }

    /// The deciding rule for a crawler and URL, `None` when no rule
    /// matches.
    pub fn decide(&self, user_agent: &str, url: &str) -> Option<&ParsedRule> {
        let path = path_of(url);
        let path = canonicalize(&path);
        let selected = self.select(user_agent);
        if let [g] = selected.as_slice() {
            let compiled = self.compiled.get_or_init(|| {
                self.groups
                    .iter()
                    .map(|g| {
                        let idx: Vec<usize> = (0..g.rules.len()).filter(|&i| !g.rules[i].pattern.is_empty()).collect();
                        let set = RuleSet::new(
                            idx.iter()
                                .map(|&i| (Pattern::new_lenient(&g.rules[i].pattern), g.rules[i].allow))
                                .collect(),
                        );
                        (set, idx)
                    })
                    .collect()
            });
            let (set, idx) = compiled.get(*g)?;
            return set.evaluate(&path).and_then(|i| idx.get(i)).and_then(|&r| self.groups.get(*g)?.rules.get(r));
        }
        let rules: Vec<&ParsedRule> =
            selected.into_iter().flat_map(|g| self.groups[g].rules.iter()).filter(|r| !r.pattern.is_empty()).collect();
        let set = RuleSet::new(rules.iter().map(|r| (Pattern::new_lenient(&r.pattern), r.allow)).collect());
        set.evaluate(&path).map(|i| rules[i])
    }

    /// Google's verdict (`robots-test --as google`) on a file read with
    /// [`crate::siteintent::read_google`]: the crawler is its
    /// [`google_token`]; `/robots.txt` is decided like any path (RFC 9309
    /// section 2.3.1.2 allows it always); `Allow: /d/index.html` also
    /// allows `/d/` (RFC 9309 section 2.2.2 has no such rule); escapes of
    /// unreserved characters are not decoded, in rules or the URL (`%6C`
    /// is not `l`; RFC 9309 section 2.2.2 decodes them).
    pub fn is_allowed_google(&self, user_agent: &str, url: &str) -> bool {
        let token = google_token(user_agent);
        let mut selected: Vec<&ParsedGroup> = if token.is_empty() {
            Vec::new()
        } else {
            self.groups.iter().filter(|g| g.user_agents.iter().any(|v| same_token(google_token(v), token))).collect()
        };
        if selected.is_empty() {
            selected = self.groups.iter().filter(|g| g.user_agents.iter().any(|v| v.trim() == "*")).collect();
        }
        let mut rules: Vec<(Pattern, bool)> = Vec::new();
        for r in selected.iter().flat_map(|g| g.rules.iter()).filter(|r| !r.pattern.is_empty()) {
            rules.push((Pattern::new_google(&r.pattern), r.allow));
            if r.allow {
                if let Some(dir) = r.pattern.strip_suffix("index.html").or_else(|| r.pattern.strip_suffix("index.htm"))
                {
                    if dir.ends_with('/') {
                        rules.push((Pattern::new_google(&format!("{dir}$")), true));
                    }
                }
            }
        }
        let set = RuleSet::new(rules);
        let path = crate::pattern::google_path(&path_of(url));
        set.evaluate(&path).is_none_or(|i| set.is_allow(i))
    }

    /// RFC 9309's verdict: may `user_agent` fetch `url`?
    pub fn is_allowed(&self, user_agent: &str, url: &str) -> bool {
        let path = path_of(url);
        // Compared in canonical form, as rules are: `/robots%2Etxt` is it too.
        let path = canonicalize(&path);
        if path == "/robots.txt" || path.starts_with("/robots.txt?") {
            return true;
        }
        self.decide(user_agent, url).is_none_or(|r| r.allow)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_rules_and_line_endings() {
        let r = RobotsTxt::parse(b"\xEF\xBB\xBFUser-agent: a\r\nUser-agent: b\rDisallow: /x # c\nSitemap: https://e/s.xml\nAllow: /x/y\nuser-agent: c\nfoo: bar\nDisallow /nocolon\n");
        assert_eq!(r.groups().len(), 2);
        assert_eq!(r.groups()[0].user_agents, vec!["a", "b"]);
        assert_eq!(r.groups()[0].rules.len(), 2);
        assert_eq!(r.sitemaps(), ["https://e/s.xml"]);
        assert_eq!(r.groups()[1].other, vec![("foo".to_string(), "bar".to_string(), 7)]);
        assert_eq!(r.groups()[0].rules[0].line, 3);
        assert_eq!(r.groups()[0].user_agent_lines, vec![1, 2]);
        assert_eq!(r.sitemap_lines(), [4]);
        assert_eq!(source_lines(b"\xEF\xBB\xBFa\r\n\nb")[2], (3, "b".to_string()));
        assert_eq!(r.unknown_lines(), [(8, "Disallow /nocolon".to_string())]);
        assert!(!r.is_allowed("b", "https://e/x"));
        assert!(r.is_allowed("B/2.0", "/x/y"));
        assert!(r.is_allowed("c", "/nocolon"));
    }

    #[test]
    fn only_space_and_tab_are_whitespace() {
        // `Disallow:` then U+00A0: ignored (RFC 9309 section 2.2), not trimmed.
        let r = RobotsTxt::parse("User-agent: *\nDisallow:\u{a0}/nbsp\nDisallow: \t/tab\t\n".as_bytes());
        assert_eq!(r.groups()[0].rules.len(), 1);
        assert_eq!(r.groups()[0].rules[0].pattern, "/tab");
        assert_eq!(r.unknown_lines(), [(2, "Disallow:\u{a0}/nbsp".to_string())]);
        assert!(r.is_allowed("x", "/nbsp"));
        assert!(!r.is_allowed("x", "/tab"));
    }

    #[test]
    fn star_fallback_and_robots_txt() {
        let r = RobotsTxt::parse(b"User-agent: *\nDisallow: /\n\nUser-agent: good\nAllow: /\n");
        assert!(!r.is_allowed("other", "/a"));
        assert!(r.is_allowed("other", "/robots.txt"));
        assert!(r.is_allowed("Good", "/a"));
        assert!(RobotsTxt::parse(b"User-agent: x\nDisallow: /\n").is_allowed("y", "/a"));
        assert!(RobotsTxt::parse(b"User-agent: *\nDisallow:\n").is_allowed("y", "/a"));
    }

    #[test]
    fn other_records_do_not_split_user_agent_lines() {
        // RFC 9309 section 2.2.4: Sitemap, comments, unknown keys and
        // Crawl-delay between user-agent lines leave them one group.
        let r = RobotsTxt::parse(
            b"User-agent: a\nSitemap: https://e/s.xml\nUser-agent: b\n# note\nUser-agent: c\nFoo: bar\n\
              User-agent: d\nCrawl-delay: 5\nUser-agent: e\nNo colon here\nUser-agent: f\nDisallow: /x\n\
              User-agent: g\nDisallow: /y\n",
        );
        assert_eq!(r.groups().len(), 2);
        assert_eq!(r.groups()[0].user_agents, ["a", "b", "c", "d", "e", "f"]);
        assert_eq!(r.groups()[0].user_agent_lines, [1, 3, 5, 7, 9, 11]);
        assert_eq!(r.groups()[0].other, vec![("foo".to_string(), "bar".to_string(), 6)]);
        assert_eq!(r.groups()[0].crawl_delays, vec![("5".to_string(), 8)]);
        assert_eq!(r.groups()[0].rules.len(), 1);
        assert_eq!(r.groups()[1].user_agents, ["g"]);
        assert_eq!(r.sitemaps(), ["https://e/s.xml"]);
        assert_eq!(r.unknown_lines(), [(10, "No colon here".to_string())]);
        for ua in ["a", "b", "c", "d", "e", "f"] {
            assert!(!r.is_allowed(ua, "/x"), "{ua}");
            assert!(r.is_allowed(ua, "/y"), "{ua}");
        }
        // An Allow or Disallow line ends the run; other records after it
        // stay in the group.
        let r = RobotsTxt::parse(b"User-agent: a\nDisallow: /x\nCrawl-delay: 1\nUser-agent: b\nDisallow: /y\n");
        assert_eq!(r.groups().len(), 2);
        assert!(r.is_allowed("b", "/x"));
    }

    #[test]
    fn tokens_with_digits_and_dots_and_full_user_agents() {
        let r = RobotsTxt::parse(
            b"User-agent: *\nDisallow: /star\n\nUser-agent: AI2Bot\nDisallow: /ai2\n\n\
              User-agent: Ai2Bot-Dolma\nDisallow: /dolma\n\nUser-agent: archive.org_bot\nDisallow: /arch\n\n\
              User-agent: GPTBot\nDisallow: /gpt\n\nUser-agent: Googlebot/2.1\nDisallow: /never\n",
        );
        assert_eq!(r.crawler_token("ai2bot"), Some("ai2bot"));
        assert!(!r.is_allowed("ai2bot", "/ai2"));
        assert!(r.is_allowed("AI2Bot", "/dolma"));
        assert!(!r.is_allowed("Ai2Bot-Dolma", "/dolma"));
        assert!(!r.is_allowed("ARCHIVE.ORG_BOT", "/arch"));
        // A full header: the file's token found as a whole word, the
        // longest one winning, as the proxy identifies requests.
        let gpt =
            "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)";
        assert_eq!(r.crawler_token(gpt), Some("GPTBot"));
        assert!(!r.is_allowed(gpt, "/gpt"));
        assert!(r.is_allowed(gpt, "/star"));
        let dolma = "Mozilla/5.0 (compatible) Ai2Bot-Dolma (+https://www.allenai.org/crawler)";
        assert_eq!(r.crawler_token(dolma), Some("Ai2Bot-Dolma"));
        assert!(!r.is_allowed(dolma, "/dolma"));
        let arch = "Mozilla/5.0 (compatible; archive.org_bot +http://archive.org/details/archive.org_bot)";
        assert_eq!(r.crawler_token(arch), Some("archive.org_bot"));
        assert_eq!(r.crawler_token("MyGPTBotX/1.0"), None);
        assert!(!r.is_allowed("MyGPTBotX/1.0", "/star"));
        // `Googlebot/2.1` as a user-agent value names no crawler.
        assert_eq!(r.crawler_token("Googlebot/2.1 (+http://www.google.com/bot.html)"), None);
        assert!(r.is_allowed("Googlebot/2.1", "/never"));
        // An empty name is a crawler without a token: the `*` group.
        assert_eq!(r.crawler_token(""), None);
        assert!(!r.is_allowed("", "/star"));
        assert!(!r.is_allowed("  ", "/star/x"));
        assert!(r.is_allowed("", "/gpt"));
        // An empty URL is the path `/`.
        let root = RobotsTxt::parse(b"User-agent: *\nDisallow: /$\n\nUser-agent: a\nDisallow: /b\n");
        assert!(!root.is_allowed("", ""));
        assert!(root.is_allowed("a", ""));
        assert!(root.is_allowed("", "/x"));
    }

    #[test]
    fn paths_of_urls() {
        assert_eq!(path_of("http://e.com"), "/");
        assert_eq!(path_of("http://e.com?x"), "/?x");
        assert_eq!(path_of("http://e.com/a?b#c"), "/a?b");
        assert_eq!(path_of("/a"), "/a");
    }
}
