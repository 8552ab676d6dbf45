//! Robots-Tag (draft-illyes-repext, an RFC 9651 List: `*;noindex, GPTBot;noai`), the
//! legacy `X-Robots-Tag` lines, robots `<meta>` contents, and the merge of
//! an origin's values with the policy's (restrictive union).

use std::collections::BTreeMap;

use sfv::{BareItem, FieldType, Item, Key, List, ListEntry, Parameters, Parser, Token};

/// Parsing limit for a Robots-Tag field (draft-illyes-repext: at least 8 KiB).
pub const PARSE_LIMIT: usize = 8 * 1024;

/// Boolean rules (robots meta and Robots-Tag).
pub const FLAG_RULES: &[&str] = &[
    "all",
    "noindex",
    "nofollow",
    "none",
    "noarchive",
    "nosnippet",
    "noimageindex",
    "notranslate",
    "indexifembedded",
    "noai",
    "noimageai",
    "index",
    "follow",
];

/// Boolean rules that restrict what a crawler may do with a page: the
/// rules a page may add beyond a policy, and the ones [`contradicts`]
/// knows an opposite of.
pub const RESTRICTIVE_RULES: &[&str] =
    &["noindex", "nofollow", "none", "noarchive", "nosnippet", "noimageindex", "notranslate", "noai", "noimageai"];

/// `noindex` -> `("noindex", None)`, `max-snippet : 50` ->
/// `("max-snippet", Some("50"))`: a rule's name and value, split at the
/// first `:` or `=` (robots meta and `X-Robots-Tag` syntax), both trimmed,
/// case kept.
pub fn split_rule(rule: &str) -> (&str, Option<&str>) {
    match rule.split_once([':', '=']) {
        Some((name, value)) => (name.trim(), Some(value.trim())),
        None => (rule.trim(), None),
    }
}

/// Whether the page rule `page` allows what the policy rule `policy`
/// forbids: `index` against `noindex`, `all` ("no restrictions") against
/// any of [`RESTRICTIVE_RULES`], a snippet limit other than 0 against
/// `nosnippet`. Both rules lowercase.
pub fn contradicts(policy: &str, page: &str) -> bool {
    contradicts_split(split_rule(policy).0, split_rule(page))
}

/// [`contradicts`] on the policy rule's name and the page rule split by
/// [`split_rule`] already (a caller comparing many pairs splits each rule
/// once).
pub fn contradicts_split(p: &str, (q, value): (&str, Option<&str>)) -> bool {
    if q == "all" {
        return RESTRICTIVE_RULES.contains(&p);
    }
    match p {
        "noindex" => q == "index",
        "nofollow" => q == "follow",
        "none" => q == "index" || q == "follow",
        "nosnippet" => q == "snippet" || (q == "max-snippet" && value.unwrap_or("") != "0"),
        "noarchive" => q == "archive",
        "noimageindex" => q == "imageindex",
        "noai" => q == "ai",
        "noimageai" => q == "imageai",
        _ => false,
    }
}

/// Why a rule set is invalid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RobotsTagError {
    /// Unknown rule name.
    #[error("unknown rule `{0}` (known: {known}, max-snippet:N, max-image-preview:none|standard|large, max-video-preview:N, unavailable_after:DATE)", known = FLAG_RULES.join(", "))]
    UnknownRule(String),
    /// A rule with a bad value.
    #[error("rule `{rule}` needs {expected}")]
    BadValue {
        /// The rule as written.
        rule: String,
        /// What the value must be.
        expected: &'static str,
    },
    /// A token that can't be a structured-field token.
    #[error("agent `{0}` cannot appear in a Robots-Tag header (a token must start with a letter)")]
    BadToken(String),
    /// A rule holding a control character (shown escaped).
    #[error("rule `{0}` contains a control character")]
    Control(String),
}

/// One rule: a name and an optional value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// Lowercase name (`noindex`, `max-snippet`).
    pub name: String,
    /// Value of a valued rule.
    pub value: Option<RuleValue>,
}

/// The value of a valued rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RuleValue {
    /// `max-snippet`, `max-video-preview`.
    Int(i64),
    /// `max-image-preview` (`none`, `standard`, `large`).
    Token(String),
    /// `unavailable_after`.
    Text(String),
}

impl Rule {
    /// Parses `noindex`, `max-snippet:50`, `max-snippet=50`,
    /// `unavailable_after: 2026-12-31`.
    pub fn parse(raw: &str) -> Result<Rule, RobotsTagError> {
        // Name and value are trimmed below, so a control character at
        // either end or around the `:` would pass unseen.
        if raw.contains(char::is_control) {
            return Err(RobotsTagError::Control(crate::validate::shown(raw)));
        }
        let (name, value) = split_rule(raw);
        let name = name.to_ascii_lowercase();
        let bad = |expected| RobotsTagError::BadValue { rule: raw.escape_debug().to_string(), expected };
        let value = match (name.as_str(), value) {
            (n, None) if FLAG_RULES.contains(&n) => None,
            ("max-snippet" | "max-video-preview", Some(v)) => {
                Some(RuleValue::Int(v.parse().map_err(|_| bad("an integer (-1 for no limit)"))?))
            }
            ("max-image-preview", Some(v)) => {
                let v = v.to_ascii_lowercase();
                if !["none", "standard", "large"].contains(&v.as_str()) {
                    return Err(bad("none, standard or large"));
                }
                Some(RuleValue::Token(v))
            }
            // Visible ASCII and spaces only: the value is written into a
            // header field and a meta attribute as it is.
            ("unavailable_after", Some(v))
                if !v.is_empty() && v.bytes().all(|b| (0x20..0x7f).contains(&b)) && !v.contains('"') =>
            {
                Some(RuleValue::Text(v.to_string()))
            }
            ("unavailable_after", _) => return Err(bad("a date in visible ASCII characters")),
            ("max-snippet" | "max-video-preview" | "max-image-preview", None) => return Err(bad("a value")),
            _ => return Err(RobotsTagError::UnknownRule(raw.escape_debug().to_string())),
        };
        Ok(Rule { name, value })
    }

    /// `noindex`, `max-snippet:50` (robots meta / X-Robots-Tag syntax).
    pub fn legacy(&self) -> String {
        match &self.value {
            None => self.name.clone(),
            Some(RuleValue::Int(i)) => format!("{}:{i}", self.name),
            Some(RuleValue::Token(t)) => format!("{}:{t}", self.name),
            Some(RuleValue::Text(t)) => format!("{}: {t}", self.name),
        }
    }

    fn bare_item(&self) -> BareItem {
        match &self.value {
            None => BareItem::Boolean(true),
            Some(RuleValue::Int(i)) => {
                sfv::Integer::try_from(*i).map(BareItem::Integer).unwrap_or(BareItem::Boolean(true))
            }
            Some(RuleValue::Token(t)) => {
                Token::from_string(t.clone()).map(BareItem::Token).unwrap_or(BareItem::Boolean(true))
            }
            Some(RuleValue::Text(t)) => {
                sfv::String::from_string(t.clone()).map(BareItem::String).unwrap_or(BareItem::Boolean(true))
            }
        }
    }
}

/// Rules per product token (`*` or a token as written in the policy).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TagRules {
    entries: Vec<(String, Vec<Rule>)>,
}

impl TagRules {
    /// Validates rule names and tokens. Tokens keep their order; a token
    /// given twice has its rules combined.
    pub fn new(entries: Vec<(String, Vec<String>)>) -> Result<TagRules, RobotsTagError> {
        let mut out: Vec<(String, Vec<Rule>)> = Vec::new();
        for (token, rules) in entries {
            if token != "*" && Token::from_string(token.clone()).is_err() {
                return Err(RobotsTagError::BadToken(token));
            }
            let parsed = rules.iter().map(|r| Rule::parse(r)).collect::<Result<Vec<_>, _>>()?;
            match out.iter_mut().find(|(t, _)| t.eq_ignore_ascii_case(&token)) {
                Some((_, existing)) => {
                    for r in parsed {
                        if !existing.contains(&r) {
                            existing.push(r);
                        }
                    }
                }
                None => out.push((token, parsed)),
            }
        }
        out.retain(|(_, r)| !r.is_empty());
        Ok(TagRules { entries: out })
    }

    /// Whether there are no rules.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// `(token, rules)` in order.
    pub fn entries(&self) -> &[(String, Vec<Rule>)] {
        &self.entries
    }

    /// The `Robots-Tag` value, `None` when there are no rules.
    pub fn robots_tag_value(&self) -> Option<String> {
        let mut list: List = Vec::new();
        for (token, rules) in &self.entries {
            let Ok(tok) = Token::from_string(token.clone()) else { continue };
            let mut params = Parameters::new();
            for r in rules {
                if let Ok(key) = Key::from_string(r.name.clone()) {
                    params.insert(key, r.bare_item());
                }
            }
            list.push(ListEntry::Item(Item::with_params(BareItem::Token(tok), params)));
        }
        list.serialize()
    }

    /// Legacy `X-Robots-Tag` lines: `noindex, nosnippet` for `*`,
    /// `gptbot: noai` for a token.
    pub fn x_robots_tag_values(&self) -> Vec<String> {
        self.entries
            .iter()
            .map(|(token, rules)| {
                let body = rules.iter().map(Rule::legacy).collect::<Vec<_>>().join(", ");
                if token == "*" {
                    body
                } else {
                    format!("{}: {body}", token.to_ascii_lowercase())
                }
            })
            .collect()
    }

    /// `(meta name, content)` pairs: `("robots", "noindex, nosnippet")`,
    /// `("gptbot", "noai")`.
    pub fn meta_elements(&self) -> Vec<(String, String)> {
        self.entries
            .iter()
            .map(|(token, rules)| {
                let name = if token == "*" { "robots".to_string() } else { token.to_ascii_lowercase() };
                (name, rules.iter().map(Rule::legacy).collect::<Vec<_>>().join(", "))
            })
            .collect()
    }
}

/// A robots `<meta>` element, `<meta name="robots" content="noindex">`,
/// with both attribute values escaped: `&`, `"` and `<` as character
/// references, and non-ASCII too, so the element stays valid when spliced
/// into a page in any ASCII-compatible charset.
pub fn meta_element(name: &str, content: &str) -> String {
    format!("<meta name=\"{}\" content=\"{}\">", escape_attr(name), escape_attr(content))
}

/// A `<link>` element, `<link rel="license" type="application/rsl+xml"
/// href="...">`, its attribute values escaped as in [`meta_element`].
pub fn link_element(rel: &str, media_type: &str, href: &str) -> String {
    format!("<link rel=\"{}\" type=\"{}\" href=\"{}\">", escape_attr(rel), escape_attr(media_type), escape_attr(href))
}

fn escape_attr(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '<' => out.push_str("&lt;"),
            c if !c.is_ascii() => out.push_str(&format!("&#x{:x};", u32::from(c))),
            c => out.push(c),
        }
    }
    out
}

/// Byte offsets of the top-level commas of a structured-field list.
fn member_ends(s: &str) -> Vec<usize> {
    let mut ends = Vec::new();
    let (mut quoted, mut escaped) = (false, false);
    for (i, b) in s.bytes().enumerate() {
        if quoted {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                quoted = false;
            }
        } else if b == b'"' {
            quoted = true;
        } else if b == b',' {
            ends.push(i);
        }
    }
    ends.push(s.len());
    ends
}

/// Restrictiveness order of `max-image-preview` values.
fn preview_rank(v: &str) -> u8 {
    match v {
        "none" => 0,
        "standard" => 1,
        _ => 2,
    }
}

/// Merges one parameter into `params` restrictively.
fn merge_param(params: &mut Parameters, key: &Key, value: &BareItem) {
    match params.get_mut(key) {
        None => {
            params.insert(key.clone(), value.clone());
        }
        Some(existing) => match (existing.as_integer(), value.as_integer()) {
            (Some(a), Some(b)) => {
                let (a, b) = (i64::from(a), i64::from(b));
                // -1 means "no limit": any limit is more restrictive.
                let pick = if a < 0 {
                    b
                } else if b < 0 {
                    a
                } else {
                    a.min(b)
                };
                if let Ok(i) = sfv::Integer::try_from(pick) {
                    *existing = BareItem::Integer(i);
                }
            }
            _ => {
                if let (Some(a), Some(b)) = (existing.as_token(), value.as_token()) {
                    if preview_rank(b.as_str()) < preview_rank(a.as_str()) {
                        *existing = value.clone();
                    }
                }
            }
        },
    }
}

/// Merges the origin's `Robots-Tag` field lines with the policy's value.
///
/// Structured lines are united per token (case-insensitive): flags are
/// unioned, numeric limits take the smaller, `max-image-preview` the most
/// restrictive. Only the first [`PARSE_LIMIT`] bytes of the field (lines
/// joined by `, `) are parsed: complete members before the limit are
/// honoured; a member cut by the limit and everything after it are
/// ignored, as draft-illyes-repext requires. Lines that are not structured fields are
/// passed on verbatim as their own lines (first), never dropped; so are
/// structured lines with a member that is not a token.
pub fn merge_robots_tag(upstream: &[&[u8]], policy: Option<&str>) -> Vec<Vec<u8>> {
    let mut verbatim: Vec<Vec<u8>> = Vec::new();
    let mut order: Vec<String> = Vec::new();
    let mut merged: BTreeMap<String, (Token, Parameters)> = BTreeMap::new();
    let mut absorb = |list: List, order: &mut Vec<String>| {
        for entry in list {
            let ListEntry::Item(item) = entry else { continue };
            let BareItem::Token(tok) = &item.bare_item else { continue };
            let key = tok.as_str().to_ascii_lowercase();
            let slot = merged.entry(key.clone()).or_insert_with(|| {
                order.push(key.clone());
                (tok.clone(), Parameters::new())
            });
            for (k, v) in &item.params {
                merge_param(&mut slot.1, k, v);
            }
        }
    };
    let mut budget = PARSE_LIMIT;
    let mut exhausted = false;
    for line in upstream {
        let Ok(text) = std::str::from_utf8(line) else {
            verbatim.push(line.to_vec());
            continue;
        };
        match Parser::new(text).parse::<List>() {
            Err(_) => verbatim.push(line.to_vec()),
            // A valid list with members that are not tokens (strings, inner
            // lists...): those are not ours to rewrite and pass on as they
            // came; its token members are merged, so that no token appears
            // twice in the field (a reader taking a token's first member
            // would miss the policy's rules).
            Ok(list) if !exhausted && text.len() <= budget && list.iter().any(|e| !is_token_item(e)) => {
                budget = budget.saturating_sub(text.len() + 2);
                let (tokens, others): (List, List) = list.into_iter().partition(is_token_item);
                if tokens.is_empty() {
                    verbatim.push(line.to_vec());
                } else {
                    absorb(tokens, &mut order);
                    if let Some(rest) = others.serialize() {
                        verbatim.push(rest.into_bytes());
                    }
                }
            }
            Ok(list) if !exhausted && text.len() <= budget => {
                budget = budget.saturating_sub(text.len() + 2);
                absorb(list, &mut order);
            }
            Ok(_) if exhausted => {}
            Ok(_) => {
                // The limit falls inside this line: keep its complete members.
                exhausted = true;
                let cut = member_ends(text).into_iter().filter(|&e| e <= budget).max();
                if let Some(cut) = cut {
                    if let Ok(partial) = Parser::new(&text[..cut]).parse::<List>() {
                        absorb(partial, &mut order);
                    }
                }
            }
        }
    }
    if let Some(policy) = policy {
        if let Ok(list) = Parser::new(policy).parse::<List>() {
            absorb(list, &mut order);
        }
    }
    let list: List = order
        .iter()
        .filter_map(|k| merged.remove(k))
        .map(|(tok, params)| ListEntry::Item(Item::with_params(BareItem::Token(tok), params)))
        .collect();
    if let Some(s) = list.serialize() {
        verbatim.push(s.into_bytes());
    }
    verbatim
}

/// Whether a field line parses as an RFC 9651 List. The proxy moves an
/// origin's `Robots-Tag` lines that do not to `X-Robots-Tag`: joined with
/// the policy's line they would make the whole field invalid, and a strict
/// parser would then drop the policy's directives too.
pub fn is_structured_list(line: &[u8]) -> bool {
    std::str::from_utf8(line).is_ok_and(|text| Parser::new(text).parse::<List>().is_ok())
}

fn is_token_item(entry: &ListEntry) -> bool {
    matches!(entry, ListEntry::Item(Item { bare_item: BareItem::Token(_), .. }))
}

fn normalise(v: &[u8]) -> String {
    String::from_utf8_lossy(v).split_whitespace().collect::<Vec<_>>().join(" ").to_ascii_lowercase()
}

/// Merges legacy `X-Robots-Tag` lines: the origin's lines verbatim, then
/// the policy's lines the origin does not already carry.
pub fn merge_x_robots_tag(upstream: &[&[u8]], policy: &[String]) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = upstream.iter().map(|l| l.to_vec()).collect();
    let seen: Vec<String> = upstream.iter().map(|l| normalise(l)).collect();
    for p in policy {
        if !seen.contains(&normalise(p.as_bytes())) {
            out.push(p.clone().into_bytes());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(entries: &[(&str, &[&str])]) -> TagRules {
        TagRules::new(entries.iter().map(|(t, r)| (t.to_string(), r.iter().map(|s| s.to_string()).collect())).collect())
            .unwrap()
    }

    fn lines(v: Vec<Vec<u8>>) -> Vec<String> {
        v.into_iter().map(|l| String::from_utf8_lossy(&l).into_owned()).collect()
    }

    #[test]
    fn renders_every_form() {
        let r = rules(&[("*", &["noindex", "NoSnippet", "max-snippet:50"]), ("GPTBot", &["noai"])]);
        assert_eq!(r.robots_tag_value().as_deref(), Some("*;noindex;nosnippet;max-snippet=50, GPTBot;noai"));
        assert_eq!(r.x_robots_tag_values(), vec!["noindex, nosnippet, max-snippet:50", "gptbot: noai"]);
        assert_eq!(
            r.meta_elements(),
            vec![
                ("robots".to_string(), "noindex, nosnippet, max-snippet:50".to_string()),
                ("gptbot".to_string(), "noai".to_string())
            ]
        );
        assert_eq!(rules(&[]).robots_tag_value(), None);
        let dated = rules(&[("*", &["unavailable_after: 2026-12-31", "max-image-preview:large"])]);
        assert_eq!(
            dated.robots_tag_value().as_deref(),
            Some("*;unavailable_after=\"2026-12-31\";max-image-preview=large")
        );
    }

    #[test]
    fn restrictive_rules_are_flag_rules() {
        for r in RESTRICTIVE_RULES {
            assert!(FLAG_RULES.contains(r), "{r}");
            assert_eq!(Rule::parse(r), Ok(Rule { name: r.to_string(), value: None }));
        }
        assert_eq!(split_rule(" max-snippet : 50 "), ("max-snippet", Some("50")));
        assert_eq!(
            split_rule("unavailable_after: 25 Jun 2010 15:00"),
            ("unavailable_after", Some("25 Jun 2010 15:00"))
        );
        assert_eq!(split_rule(" NoIndex "), ("NoIndex", None));
        assert!(contradicts("noindex", "all") && contradicts("none", "follow") && contradicts("noai", "ai"));
        assert!(contradicts("nosnippet", "max-snippet:-1") && !contradicts("nosnippet", "max-snippet : 0"));
        assert!(!contradicts("notranslate", "index") && !contradicts("max-snippet:5", "all"));
    }

    #[test]
    fn meta_elements_are_escaped() {
        assert_eq!(
            meta_element("robots", "noindex, nosnippet"),
            "<meta name=\"robots\" content=\"noindex, nosnippet\">"
        );
        assert_eq!(meta_element("gptbot", "a\"<&é"), "<meta name=\"gptbot\" content=\"a&quot;&lt;&amp;&#xe9;\">");
    }

    #[test]
    fn bad_rules_are_named() {
        let err = TagRules::new(vec![("*".into(), vec!["noindx".into()])]).map_err(|e| e.to_string());
        assert!(err.as_ref().is_err_and(|e| e.starts_with("unknown rule `noindx`")), "{err:?}");
        assert!(matches!(
            TagRules::new(vec![("*".into(), vec!["max-snippet:lots".into()])]),
            Err(RobotsTagError::BadValue { .. })
        ));
        assert!(matches!(TagRules::new(vec![("_bot".into(), vec!["noai".into()])]), Err(RobotsTagError::BadToken(_))));
        for date in ["2026\r\nX: y", "20\n26", "a\0b", "2026\t12", "\u{7f}"] {
            let rule = format!("unavailable_after: {date}");
            assert!(matches!(Rule::parse(&rule), Err(RobotsTagError::Control(_))), "{rule:?}");
        }
        let control = |r: &str| Rule::parse(r).map_err(|e| e.to_string());
        assert_eq!(control("noindex\r"), Err("rule `noindex\\r` contains a control character".into()));
        assert_eq!(
            control("unavailable_after: 2026\r\n-12-31"),
            Err("rule `unavailable_after: 2026\\r\\n-12-31` contains a control character".into())
        );
        assert_eq!(control("\nnoindex"), Err("rule `\\nnoindex` contains a control character".into()));
        assert_eq!(control("max-snippet:\t50"), Err("rule `max-snippet:\\t50` contains a control character".into()));
        assert_eq!(
            control("unavailable_after: 2026-12-31\u{85}"),
            Err("rule `unavailable_after: 2026-12-31\\u{85}` contains a control character".into())
        );
    }

    #[test]
    fn structured_lines_with_non_token_members_pass_verbatim() {
        let up: [&[u8]; 2] = [b"\"quoted\";noindex, (inner list)", b"*;noarchive"];
        let merged = lines(merge_robots_tag(&up, Some("*;noindex")));
        assert_eq!(merged, vec!["\"quoted\";noindex, (inner list)", "*;noarchive;noindex"]);
        // Token members of such a line are merged: `*` appears once.
        let mixed: [&[u8]; 1] = [b"\"s\", *;nosnippet"];
        let merged = lines(merge_robots_tag(&mixed, Some("*;noindex")));
        assert_eq!(merged, vec!["\"s\"", "*;nosnippet;noindex"]);
    }

    #[test]
    fn merge_is_a_restrictive_union() {
        let up: [&[u8]; 2] = [b"*;noarchive;max-snippet=20, otherbot;nofollow", b"googlebot: nosnippet"];
        let merged = lines(merge_robots_tag(&up, Some("*;noindex;max-snippet=50, GPTBot;noai, OtherBot;noindex")));
        assert_eq!(
            merged,
            vec!["googlebot: nosnippet", "*;noarchive;max-snippet=20;noindex, otherbot;nofollow;noindex, GPTBot;noai"]
        );
        assert_eq!(lines(merge_robots_tag(&[], Some("*;noindex"))), vec!["*;noindex"]);
        assert_eq!(lines(merge_robots_tag(&[b"*;noai"], None)), vec!["*;noai"]);
        let preview: [&[u8]; 1] = [b"*;max-image-preview=large;max-snippet=-1"];
        assert_eq!(
            lines(merge_robots_tag(&preview, Some("*;max-image-preview=none;max-snippet=10"))),
            vec!["*;max-image-preview=none;max-snippet=10"]
        );
    }

    #[test]
    fn parsing_stops_at_8_kib() {
        // Members end exactly at the limit: all honoured.
        let filler = format!("a;{}", "x".repeat(PARSE_LIMIT - 10));
        let exact = format!("{filler}, b;noai");
        assert_eq!(exact.len(), PARSE_LIMIT);
        let got = lines(merge_robots_tag(&[exact.as_bytes()], None));
        assert!(got[0].ends_with(", b;noai"), "{}", &got[0][got[0].len() - 20..]);
        // A member straddling the limit and everything after it are ignored.
        let straddle = format!("{filler}, bbbbb;noai, c;noindex");
        let got = lines(merge_robots_tag(&[straddle.as_bytes()], Some("*;nosnippet")));
        assert!(!got[0].contains("bbbbb") && !got[0].contains("c;noindex"), "{}", &got[0][got[0].len() - 40..]);
        assert!(got[0].ends_with(", *;nosnippet"));
        // A later line past the limit is ignored too, a non-SF line kept.
        let got = lines(merge_robots_tag(&[straddle.as_bytes(), b"d;noai", b"unavailable_after: 25 Jun 2010"], None));
        assert!(!got.iter().any(|l| l.contains("d;noai")));
        assert_eq!(got[0], "unavailable_after: 25 Jun 2010");
    }

    #[test]
    fn x_robots_tag_keeps_the_origin_and_adds_ours() {
        let up: [&[u8]; 1] = [b"googlebot:  NOSNIPPET"];
        let got = lines(merge_x_robots_tag(&up, &["googlebot: nosnippet".into(), "noindex".into()]));
        assert_eq!(got, vec!["googlebot:  NOSNIPPET", "noindex"]);
    }
}
