//! Site-intent reading of a robots.txt a person wrote (`import`, the
//! origin merge, `check --origin`): lines that RFC 9309's grammar drops
//! but whose meaning is evident are rewritten in correct form, each repair
//! reported. Enforcement stays RFC 9309: the repaired text is read by the
//! strict [`RobotsTxt`] parser, so what is served and enforced is the
//! repaired lines.
//!
//! Repairs, as Google's open-source parser tolerates them: typo keys
//! (`Disalow`, `Dissallow`, `useragent`, `user agent`), keys with a suffix
//! (`User-agents`), `;` or no separator instead of the colon, and
//! user-agent values cut to their product token where the site evidently
//! named one: the token is followed by a version or a comment
//! (`Googlebot/2.1`, `bingbot (+http://...)`) or is a catalog crawler's
//! (`Sogou web spider/4.0`, `Mediapartners-Google*`). Unlike Google's cut,
//! digits and dots stay in the token (`MJ12bot`, `360Spider`), as those
//! crawlers read their whole name. Any other phrase (`Yahoo Pipes 1.0`),
//! and a cut to a word other clients' User-Agents carry (`Mozilla`, `Go`,
//! `Web`), is not made: the line is kept as written, names no crawler, and
//! is reported. `import` and the origin merge share this rule.

use std::fmt;

use crate::catalog;
use crate::robotstxt::RobotsTxt;
use crate::validate;

/// One repaired line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repair {
    /// 1-based line in the file.
    pub line: usize,
    /// The line as written (comment and outer whitespace removed).
    pub written: String,
    /// How it was read: the line in correct form, or why it was not.
    pub read: String,
    /// Whether the line is read otherwise than written (false: only a
    /// note on a value kept as written, such as a phrase not cut).
    pub changed: bool,
}

impl fmt::Display for Repair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: `{}` read as {}", self.line, self.written.escape_debug(), self.read.escape_debug())
    }
}

/// A file read for its site's intent.
#[derive(Debug, Clone)]
pub struct SiteIntent {
    /// The file with repaired lines in correct form, one line per source
    /// line (numbers unchanged); parse it with [`RobotsTxt::parse`].
    pub text: String,
    /// The repairs, in line order.
    pub repairs: Vec<Repair>,
    /// Lines whose user-agent value is kept as written and names no
    /// crawler (a phrase, or a cut not made).
    pub kept: Vec<usize>,
}

impl SiteIntent {
    /// The repaired file, parsed strictly, with the user-agent values kept
    /// as written matching nothing: the strict parser would compare a
    /// one-word value such as `foo*bot` whole with a crawler's name, but
    /// `import` and the origin merge make no group for it (it is no
    /// product token), and the reading must decide as what they emit.
    pub fn parsed(&self) -> RobotsTxt {
        RobotsTxt::parse(self.text.as_bytes()).without_user_agents_at(&self.kept)
    }
}

/// Known keys and the spellings read as them, longest first within a key
/// so a prefix never shadows a longer typo.
const KEYS: &[(&str, &[&str])] = &[
    ("User-agent", &["user-agent", "user_agent", "user agent", "useragent"]),
    ("Disallow", &["disallow", "dissallow", "dissalow", "disallaw", "diasllow", "disalow"]),
    ("Allow", &["allow"]),
    ("Sitemap", &["sitemap", "site-map"]),
];

/// Whitespace around keys and values (RFC 9309 section 2.2: space and
/// horizontal tab only).
fn is_ws(c: char) -> bool {
    c == ' ' || c == '\t'
}

/// Reads `bytes` for its site's intent. `base` (`https://host`) resolves a
/// relative `Sitemap` value; without it such a value is left as written.
pub fn read(bytes: &[u8], base: Option<&str>) -> SiteIntent {
    read_with(bytes, base, false)
}

/// Reads `bytes` as Google's open-source parser does (`robots-test --as
/// google`): the same key repairs, but user-agent values cut at the first
/// character outside `[A-Za-z_-]` (`MJ12bot` is `MJ`), browser words
/// included, and lines cut at Google's 16,664 bytes.
pub fn read_google(bytes: &[u8]) -> SiteIntent {
    read_with(bytes, None, true)
}

/// Google's line-length cap (robots.cc `kMaxLineLen`, 2083 * 8).
const GOOGLE_MAX_LINE: usize = 2083 * 8;

fn read_with(bytes: &[u8], base: Option<&str>, google: bool) -> SiteIntent {
    let lines = crate::robotstxt::source_lines(bytes);
    let mut text = String::with_capacity(bytes.len() + 16);
    let mut repairs = Vec::new();
    let mut kept = Vec::new();
    for (n, raw) in &lines {
        let mut raw = raw.as_str();
        if google && raw.len() > GOOGLE_MAX_LINE {
            let mut end = GOOGLE_MAX_LINE;
            while !raw.is_char_boundary(end) {
                end -= 1;
            }
            raw = &raw[..end];
        }
        match repair_line(raw, base, google) {
            Some((fixed, read, names_none)) => {
                if names_none {
                    kept.push(*n);
                }
                let written = raw.split('#').next().unwrap_or("").trim_matches(is_ws).to_string();
                let changed = written != fixed;
                repairs.push(Repair { line: *n, written, read, changed });
                text.push_str(&fixed);
            }
            None => text.push_str(raw),
        }
        text.push('\n');
    }
    SiteIntent { text, repairs, kept }
}

/// The repaired line, how it was read and whether it is a user-agent
/// value kept as written that names no crawler; `None` when the line is
/// left as written.
fn repair_line(raw: &str, base: Option<&str>, google: bool) -> Option<(String, String, bool)> {
    let content = raw.split('#').next().unwrap_or("").trim_matches(is_ws);
    let lower = content.to_ascii_lowercase();
    let (key, spelling) = KEYS
        .iter()
        .find_map(|(key, spellings)| spellings.iter().find(|s| lower.starts_with(**s)).map(|s| (*key, *s)))?;
    // A suffix of letters (`User-agents`, `Disallows`) is part of the key.
    let after_key = &content[spelling.len()..];
    let suffix_len = after_key.find(|c: char| !c.is_ascii_alphabetic()).unwrap_or(after_key.len());
    let rest = &after_key[suffix_len..];
    let trimmed = rest.trim_start_matches(is_ws);
    let (value, separator_ok) = if let Some(v) = trimmed.strip_prefix(':') {
        (v, true)
    } else if let Some(v) = trimmed.strip_prefix(';') {
        (v, false)
    } else if trimmed.len() < rest.len() && !trimmed.is_empty() {
        // `Disallow /x`: key, whitespace, value.
        (trimmed, false)
    } else {
        return None;
    };
    if value.trim_start_matches(is_ws).starts_with(|c: char| c.is_whitespace()) {
        // A value starting with U+00A0 and the like is ignored, as RFC 9309
        // and Google do: the strict parser drops it.
        return None;
    }
    let value = value.trim_matches(is_ws);
    let key_ok = separator_ok && suffix_len == 0 && content[..spelling.len()].eq_ignore_ascii_case(key);
    let mut value_out = value.to_string();
    let mut notes = Vec::new();
    let mut names_none = false;
    match key {
        "User-agent" => match if google { cut_google(value) } else { cut_token(value) } {
            Cut::Whole => {}
            Cut::Token(t) => {
                notes.push(format!("the product token `{t}`"));
                value_out = t;
            }
            Cut::Browser(t) => {
                names_none = true;
                notes.push(format!("not cut to `{t}`, a word of browser User-Agents: names no crawler"));
            }
            Cut::Client(t) => {
                names_none = true;
                notes
                    .push(format!("not cut to `{t}`, a word the User-Agents of other clients carry: names no crawler"));
            }
            Cut::Phrase(t) => {
                names_none = true;
                notes.push(format!(
                    "a phrase, kept as written: `{t}` is followed by no version or comment and names no catalog crawler; names no crawler"
                ));
            }
        },
        "Sitemap" => {
            if let Some(base) = base.filter(|_| !value.contains("://") && !value.is_empty()) {
                let base = base.trim_end_matches('/');
                value_out = if value.starts_with('/') { format!("{base}{value}") } else { format!("{base}/{value}") };
                notes.push("relative URL resolved against the origin".to_string());
            }
        }
        _ => {}
    }
    if key_ok && value_out == value && notes.is_empty() {
        return None;
    }
    let fixed = format!("{key}: {value_out}");
    let mut read = format!("`{fixed}`");
    if !notes.is_empty() {
        read.push_str(&format!(" ({})", notes.join("; ")));
    }
    Some((fixed, read, names_none))
}

/// Google's cut: at the first character outside `[A-Za-z_-]`.
fn cut_google(value: &str) -> Cut {
    let token = crate::robotstxt::google_token(value);
    if value == "*" || token.is_empty() || token == value {
        return Cut::Whole;
    }
    Cut::Token(token.to_string())
}

enum Cut {
    /// A product token as written, or a value nothing can be cut from.
    Whole,
    /// The token the value is cut to.
    Token(String),
    /// The cut token is a browser word: not made.
    Browser(String),
    /// The cut token is a word other clients' User-Agents carry: not made.
    Client(String),
    /// A phrase: its first word is followed by neither a version nor a
    /// comment and names no catalog crawler, so it is kept as written.
    Phrase(String),
}

/// A user-agent value cut to its product token, only where the site
/// evidently named one (issue 36): the token (up to the first character
/// that is not a letter, digit, `_`, `-` or `.`) is followed by a version
/// (`Googlebot/2.1`) or a comment (`bingbot (+http://...)`), or the
/// catalog knows a crawler by it (`Sogou web spider/4.0` is Sogou's,
/// `Mediapartners-Google*`). Never to the first word of any other phrase
/// (`Yahoo Pipes 1.0`), nor to a word other clients' User-Agents carry
/// (`Go`, cut from `Go!Zilla`, would catch every `Go-http-client`).
fn cut_token(value: &str) -> Cut {
    if value == "*" || value.is_empty() || validate::user_agent(value).is_ok() {
        return Cut::Whole;
    }
    let end = value.find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))).unwrap_or(value.len());
    let token = value[..end].trim_end_matches(['.', '-']);
    if token.is_empty() || validate::user_agent(token).is_err() {
        return Cut::Whole;
    }
    if catalog::in_browser_user_agents(token) {
        return Cut::Browser(token.to_string());
    }
    if catalog::in_client_user_agents(token) {
        return Cut::Client(token.to_string());
    }
    let after = &value[token.len()..];
    let version = after.strip_prefix('/').is_some_and(|v| v.starts_with(|c: char| c.is_ascii_alphanumeric()));
    let comment = after.trim_start_matches(is_ws).starts_with('(');
    if version || comment || catalog::lookup(token).is_some() {
        Cut::Token(token.to_string())
    } else {
        Cut::Phrase(token.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reads(line: &str) -> Option<String> {
        repair_line(line, Some("https://e.example"), false).map(|(fixed, _, _)| fixed)
    }

    #[test]
    fn real_world_line_shapes() {
        let table: &[(&str, Option<&str>)] = &[
            ("Disalow: /", Some("Disallow: /")),
            ("Dissallow: /x", Some("Disallow: /x")),
            ("useragent: Bingbot", Some("User-agent: Bingbot")),
            ("user agent: Bingbot", Some("User-agent: Bingbot")),
            ("User-agents: Bingbot", Some("User-agent: Bingbot")),
            ("Disallow; /pubblicazioni/x", Some("Disallow: /pubblicazioni/x")),
            ("Disallow /file.php/*", Some("Disallow: /file.php/*")),
            ("User-agent: Googlebot/2.1", Some("User-agent: Googlebot")),
            ("User-agent: Sogou web spider/4.0", Some("User-agent: Sogou")),
            ("User-agent: Mediapartners-Google*", Some("User-agent: Mediapartners-Google")),
            ("Sitemap: /sitemap.xml", Some("Sitemap: https://e.example/sitemap.xml")),
            ("Sitemap: https://e.example/s.xml", None),
            ("User-agent: MJ12bot", None),
            ("User-agent: 360Spider", None),
            ("User-agent: archive.org_bot", None),
            ("User-agent: *", None),
            ("Disallow: /x # c", None),
            ("disallow:/x", None),
            ("Disallow:\u{a0}/x", None),
            ("Disallow \u{a0}/x", None),
            ("User-agent: Mozilla/5.0", Some("User-agent: Mozilla/5.0")),
            ("Crawl-delay: 5", None),
            ("Disallow", None),
            ("No colon here", None),
        ];
        for (line, want) in table {
            assert_eq!(reads(line).as_deref(), *want, "{line}");
        }
        assert_eq!(
            reads("useragent: Mozilla/5.0").as_deref(),
            Some("User-agent: Mozilla/5.0"),
            "key repaired, browser word not cut"
        );
    }

    /// Issue 36: a value is cut to a token only where the site evidently
    /// named one; other phrases are kept as written and name no crawler.
    #[test]
    fn cuts_keep_to_what_the_site_wrote() {
        let table: &[(&str, &str)] = &[
            // Cut: a version, a comment, a catalog crawler's name.
            ("Googlebot/2.1", "User-agent: Googlebot"),
            ("bingbot (+http://www.bing.com/bingbot.htm)", "User-agent: bingbot"),
            ("FooBot/1.0 (+https://foo.example)", "User-agent: FooBot"),
            ("FooBot(compatible)", "User-agent: FooBot"),
            ("Sogou web spider/4.0", "User-agent: Sogou"),
            ("Mediapartners-Google*", "User-agent: Mediapartners-Google"),
            ("Slurp China", "User-agent: Slurp"),
            // Kept as written: phrases, and words other clients carry.
            ("Go!Zilla (www.gozilla.com)", "User-agent: Go!Zilla (www.gozilla.com)"),
            ("Go/1.0", "User-agent: Go/1.0"),
            ("Yahoo Pipes 1.0", "User-agent: Yahoo Pipes 1.0"),
            ("Yahoo! Slurp", "User-agent: Yahoo! Slurp"),
            ("The Web Spider", "User-agent: The Web Spider"),
            ("Web Downloader/6.9", "User-agent: Web Downloader/6.9"),
            ("Internet Ninja 5.0", "User-agent: Internet Ninja 5.0"),
            ("Download Ninja", "User-agent: Download Ninja"),
            ("Image Stripper", "User-agent: Image Stripper"),
            ("Net Vampire/1.0", "User-agent: Net Vampire/1.0"),
            ("Open Text Site Crawler", "User-agent: Open Text Site Crawler"),
            ("Foo Bar", "User-agent: Foo Bar"),
            ("FooBot*", "User-agent: FooBot*"),
            ("Java/1.6.0", "User-agent: Java/1.6.0"),
            ("Mozilla/4.0 (compatible; MSIE 6.0)", "User-agent: Mozilla/4.0 (compatible; MSIE 6.0)"),
        ];
        for (value, want) in table {
            let si = read(format!("User-agent: {value}\nDisallow: /\n").as_bytes(), None);
            assert_eq!(si.text.lines().next(), Some(*want), "{value}");
            assert_eq!(si.repairs.len(), 1, "{value}: reported");
        }
        let notes: Vec<String> = ["Go!Zilla (www.gozilla.com)", "Foo Bar"]
            .iter()
            .map(|v| read(format!("User-agent: {v}\n").as_bytes(), None).repairs[0].to_string())
            .collect();
        assert_eq!(
            notes,
            [
                "line 1: `User-agent: Go!Zilla (www.gozilla.com)` read as `User-agent: Go!Zilla (www.gozilla.com)` (not cut to `Go`, a word the User-Agents of other clients carry: names no crawler)",
                "line 1: `User-agent: Foo Bar` read as `User-agent: Foo Bar` (a phrase, kept as written: `Foo` is followed by no version or comment and names no catalog crawler; names no crawler)",
            ]
        );
        // Enforced as written: the phrases' groups catch nothing.
        let r =
            read(b"User-agent: Go!Zilla (www.gozilla.com)\nUser-agent: Yahoo Pipes 1.0\nDisallow: /\n", None).parsed();
        for ua in [
            "Go-http-client/1.1",
            "Mozilla/5.0 (compatible; Yahoo! Slurp; http://help.yahoo.com/help/us/ysearch/slurp)",
            "Go",
            "Yahoo",
        ] {
            assert!(r.is_allowed(ua, "/a"), "{ua}");
        }
        // A one-word phrase matches nothing either, not even its own
        // spelling, as import and the merge make no group for it.
        let si = read(
            b"user-agent: foo*bot\ndisallow: /myprofile\n\nUser-agent: Go!Zilla\nUser-agent: FooBot/1.0\nDisallow: /\n",
            None,
        );
        assert_eq!(si.kept, [1, 4]);
        let r = si.parsed();
        for ua in ["foo*bot", "foo", "Go!Zilla", "Go", "Go-http-client/1.1"] {
            assert!(r.is_allowed(ua, "/myprofile"), "{ua}");
        }
        assert!(!r.is_allowed("FooBot", "/myprofile"));
        assert_eq!(r.groups()[0].user_agents, Vec::<String>::new());
        assert_eq!(
            (r.groups()[1].user_agents.clone(), r.groups()[1].user_agent_lines.clone()),
            (vec!["FooBot".to_string()], vec![5])
        );
    }

    #[test]
    fn repairs_reported_and_enforced() {
        let si = read(
            b"User-agent: Googlebot/2.1\nDisalow: /private/\n\nUser-agent: *\nDisallow:\xC2\xA0/nbsp\nDisallow; /semi\n",
            None,
        );
        let lines: Vec<String> = si.repairs.iter().map(ToString::to_string).collect();
        assert_eq!(
            lines,
            [
                "line 1: `User-agent: Googlebot/2.1` read as `User-agent: Googlebot` (the product token `Googlebot`)",
                "line 2: `Disalow: /private/` read as `Disallow: /private/`",
                "line 6: `Disallow; /semi` read as `Disallow: /semi`",
            ]
        );
        let r = si.parsed();
        assert!(!r.is_allowed("Googlebot", "/private/a"));
        assert!(r.is_allowed("other", "/nbsp"));
        assert!(!r.is_allowed("other", "/semi"));
        assert_eq!(r.unknown_lines(), [(5, "Disallow:\u{a0}/nbsp".to_string())]);
    }
}
