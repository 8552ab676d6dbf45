//! A tolerant robots.txt parser and an RFC 9309 evaluator for any
//! robots.txt (used by `robots-test`, `import` and the round-trip tests).
//!
//! Accepts what is found in the wild: any line ending, a UTF-8 BOM,
//! invalid UTF-8 (lossy), comments, unknown lines (kept, they don't end a
//! group), any size. Lines without a colon are ignored, as RFC 9309's
//! grammar requires the colon. It never panics.

use crate::canonical::canonicalize;
use crate::pattern::Pattern;
use crate::ruleset::RuleSet;

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
}

/// The name a `user-agent:` value or a crawler string stands for: the
/// whole trimmed value, `*` for the wildcard. RFC 9309 compares the
/// crawler's product token with the value case-insensitively; a value
/// that is not a bare token (`Googlebot/2.1`, `FOO BAR`, `foobot*`) matches
/// no crawler, unlike Google's parser, which cuts it at the first
/// character outside `[A-Za-z_-]`.
pub fn product_token(s: &str) -> &str {
    let s = s.trim();
    if s == "*" {
        return "*";
    }
    s
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
        // Whether the current group has seen a non-user-agent line, so the
        // next user-agent line starts a new group.
        let mut in_rules = false;
        for (line_no, raw_line) in lines(&text) {
            let line = raw_line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let Some((key, value)) = line.split_once(':') else {
                out.unknown.push((line_no, raw_line.to_string()));
                continue;
            };
            let key = key.trim().to_ascii_lowercase();
            let value = value.trim().to_string();
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
                        in_rules = true;
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

    /// Indices of the groups that apply to a crawler (its product token,
    /// case-insensitive; else the `*` groups; else none).
    pub fn select(&self, user_agent: &str) -> Vec<usize> {
        // A full User-Agent string names its crawler by its first product
        // (`FigTree Robot libwww-perl/5.04` is `FigTree`).
        let token = user_agent.trim();
        let token = token.split(|c: char| c.is_whitespace() || c == '/').next().unwrap_or("");
        let named: Vec<usize> = if token.is_empty() || token == "*" {
            Vec::new()
        } else {
            (0..self.groups.len())
                .filter(|&i| self.groups[i].user_agents.iter().any(|ua| same_token(product_token(ua), token)))
                .collect()
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
        let rules: Vec<&ParsedRule> = self
            .select(user_agent)
            .into_iter()
            .flat_map(|g| self.groups[g].rules.iter())
            .filter(|r| !r.pattern.is_empty())
            .collect();
        let set = RuleSet::new(rules.iter().map(|r| (Pattern::new_lenient(&r.pattern), r.allow)).collect());
        set.evaluate(&path).map(|i| rules[i])
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
    fn star_fallback_and_robots_txt() {
        let r = RobotsTxt::parse(b"User-agent: *\nDisallow: /\n\nUser-agent: good\nAllow: /\n");
        assert!(!r.is_allowed("other", "/a"));
        assert!(r.is_allowed("other", "/robots.txt"));
        assert!(r.is_allowed("Good", "/a"));
        assert!(RobotsTxt::parse(b"User-agent: x\nDisallow: /\n").is_allowed("y", "/a"));
        assert!(RobotsTxt::parse(b"User-agent: *\nDisallow:\n").is_allowed("y", "/a"));
    }

    #[test]
    fn paths_of_urls() {
        assert_eq!(path_of("http://e.com"), "/");
        assert_eq!(path_of("http://e.com?x"), "/?x");
        assert_eq!(path_of("http://e.com/a?b#c"), "/a?b");
        assert_eq!(path_of("/a"), "/a");
    }
}
