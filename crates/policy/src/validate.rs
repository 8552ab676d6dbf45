//! One validator per kind of policy value, shared by [`load`](crate::load)
//! and by callers that check single values (`crawlgate import`).
//!
//! Each returns the value as compiled (with its warnings where it can have
//! some) or the error message that `crawlgate check` prints for it, both
//! without a location or the `warning: ` prefix. Checks that need the whole
//! policy (duplicate groups, the size of the generated robots.txt) are not
//! here: they stay in `load`.

use crate::pattern::Pattern;
use crate::sf;

/// `value` as an error message shows it: control characters escaped (`\r`,
/// `\0`, `\u{85}`) so that the message stays one readable line, the rest
/// as written.
pub(crate) fn shown(value: &str) -> String {
    value.chars().map(|c| if c.is_control() { c.escape_debug().to_string() } else { c.to_string() }).collect()
}

/// Refuses a value holding a control character (CR, LF, tab, NUL, DEL,
/// C1): a value the parsers trim or split would otherwise be accepted with
/// it, and one published as written would carry it. The caller names the
/// key, or [`no_control`] does.
pub(crate) fn no_control_char(value: &str) -> Result<(), String> {
    if value.contains(char::is_control) {
        Err(format!("`{}` contains a control character", shown(value)))
    } else {
        Ok(())
    }
}

/// [`no_control_char`] for the value of `key`, the error naming it.
pub(crate) fn no_control(key: &str, value: &str) -> Result<(), String> {
    no_control_char(value).map_err(|e| format!("{key}: {e}"))
}

/// Whether `t` is a product token as RFC 9309 section 2.2.1 defines it:
/// letters, `_` and `-` only.
pub(crate) fn valid_token(t: &str) -> bool {
    !t.is_empty() && t.bytes().all(|b| b.is_ascii_alphabetic() || b == b'_' || b == b'-')
}

/// Whether `t` is a product token as crawlers really send them: RFC 9309's
/// characters plus digits and `.` (`AI2Bot`, `MJ12bot`, `360Spider`,
/// `archive.org_bot`). Such a token is published and identified like any
/// other; [`rfc9309_warning`] says what strict parsers make of it.
pub fn is_crawler_token(t: &str) -> bool {
    !t.is_empty() && t.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.')
}

/// The longest product token a policy may name. Crawler tokens are short
/// (the catalog's longest is under 40); the bound keeps the identification
/// automaton, built from every token, small.
pub const MAX_TOKEN_LEN: usize = 128;

/// A product token or `*` under `key` (`group.user_agents`,
/// `robots_tag.agents`).
pub(crate) fn agent_token(key: &str, token: &str) -> Result<(), String> {
    if token.len() > MAX_TOKEN_LEN {
        let start: String = token.chars().take(16).collect();
        Err(format!(
            "{key}: `{start}...` is {} bytes long; a product token may have at most {MAX_TOKEN_LEN}",
            token.len()
        ))
    } else if token == "*" || valid_token(token) {
        Ok(())
    } else {
        Err(format!("{key}: `{token}` is not a product token (letters, '_' and '-' only, or \"*\")"))
    }
}

/// A `group.user_agents` entry: a product token or `*`. A token with digits
/// or dots is accepted with the warning of [`rfc9309_warning`] (returned,
/// without the `warning: ` prefix).
pub fn user_agent(token: &str) -> Result<Option<String>, String> {
    const KEY: &str = "group.user_agents";
    match agent_token(KEY, token) {
        Ok(()) => Ok(None),
        Err(_) if token.len() <= MAX_TOKEN_LEN && is_crawler_token(token) => Ok(Some(rfc9309_warning(KEY, token))),
        Err(e) if token.len() > MAX_TOKEN_LEN => Err(e),
        Err(_) => {
            Err(format!("{KEY}: `{token}` is not a product token (letters, digits, '_', '-' and '.' only, or \"*\")"))
        }
    }
}

/// The warning for a token outside RFC 9309's grammar (digits, dots).
pub(crate) fn rfc9309_warning(key: &str, token: &str) -> String {
    format!(
        "{key}: `{token}` has characters outside RFC 9309's product token (letters, '_' and '-'); it is published \
         and identified, but strict RFC 9309 parsers ignore such user-agent lines"
    )
}

/// A `group.allow` (`allow` true) or `group.disallow` pattern, compiled.
pub fn rule(allow: bool, pattern: &str) -> Result<Pattern, String> {
    let key = if allow { "allow" } else { "disallow" };
    Pattern::new(pattern).map_err(|e| format!("group.{key}: {e}"))
}

/// A valid `"[path] value"` entry (Content-Usage, App-Directives).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathValue {
    /// The leading path, when there is one.
    pub path: Option<String>,
    /// The value in its canonical serialisation.
    pub value: String,
    /// Warnings about the entry (it is valid).
    pub warnings: Vec<String>,
}

/// Splits `"[path] value"`: a leading word starting with `/` is a path.
/// Readers of Content-Usage and App-Directives lines only recognise a path
/// that starts with `/` (a `*...` word would be read as part of the value),
/// so a leading `*` word is an error rather than a published broken line.
fn split_path(v: &str) -> Result<(Option<&str>, &str), String> {
    let v = v.trim();
    match v.split_once(char::is_whitespace) {
        Some((first, rest)) if first.starts_with('/') => Ok((Some(first), rest.trim())),
        Some((first, _)) if first.starts_with('*') => {
            Err(format!("path `{first}` must start with `/` (readers take a leading `*` word as part of the value)"))
        }
        _ => Ok((None, v)),
    }
}

/// Refuses a `key` entry whose published value holds `#`, which starts a
/// robots.txt comment (a reader would see a shorter value): RFC 9651
/// tokens, strings and parameters may hold one.
fn no_hash(key: &str, entry: &str, published: &str) -> Result<(), String> {
    if published.contains('#') {
        Err(format!("{key}: `{}` contains '#', which starts a comment in robots.txt", shown(entry)))
    } else {
        Ok(())
    }
}

/// The path and value of an entry under `key`, the path checked as a pattern.
/// A control character is refused first: the entry is trimmed and split at
/// whitespace, so one at either end or between path and value would vanish
/// from the published line.
fn path_and_value<'v>(key: &str, entry: &'v str) -> Result<(Option<&'v str>, &'v str), String> {
    no_control(key, entry)?;
    let (path, value) = split_path(entry).map_err(|e| format!("{key}: {e}"))?;
    if let Some(p) = path {
        Pattern::new(p).map_err(|e| format!("{key}: {e}"))?;
    }
    Ok((path, value))
}

/// A `group.content_usage` entry (`"[path] prefs"`); warns about keys
/// outside the AIPREF vocabulary.
pub fn content_usage(entry: &str) -> Result<PathValue, String> {
    const KEY: &str = "group.content_usage";
    let (path, prefs) = path_and_value(KEY, entry)?;
    let parsed = sf::parse_content_usage(prefs).map_err(|e| format!("{KEY}: {e}"))?;
    no_hash(KEY, entry, &parsed.canonical)?;
    let warnings = parsed
        .unknown_keys
        .iter()
        .map(|k| {
            if sf::DROPPED_CATEGORIES.contains(&k.as_str()) {
                format!(
                    "{KEY}: `{k}` was dropped from the AIPREF vocabulary by draft-ietf-aipref-vocab-08 ({}); receivers ignore it",
                    sf::KNOWN_CATEGORIES.join(", ")
                )
            } else {
                format!(
                    "{KEY}: `{k}` is not in the AIPREF vocabulary ({}); receivers ignore it",
                    sf::KNOWN_CATEGORIES.join(", ")
                )
            }
        })
        .collect();
    Ok(PathValue { path: path.map(str::to_string), value: parsed.canonical, warnings })
}

/// A `group.app_directives` entry (`"[path] list"`) of a group that is
/// (`in_star_group`) or is not the `*` group; warns when it is not.
pub fn app_directives(entry: &str, in_star_group: bool) -> Result<PathValue, String> {
    const KEY: &str = "group.app_directives";
    let (path, list) = path_and_value(KEY, entry)?;
    let value = sf::parse_app_directives(list).map_err(|e| format!("{KEY}: {e}"))?;
    no_hash(KEY, entry, &value)?;
    let mut warnings = Vec::new();
    if !in_star_group {
        warnings.push(format!(
            "{KEY}: App-Directives belong in the `*` group (draft-nottingham-plan-b); other groups may be ignored"
        ));
    }
    Ok(PathValue { path: path.map(str::to_string), value, warnings })
}

/// A number of seconds as TOML holds it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Seconds {
    /// A TOML integer.
    Integer(i64),
    /// A TOML float.
    Float(f64),
}

/// A `group.crawl_delay`; returns it as robots.txt publishes it.
pub fn crawl_delay(seconds: Seconds) -> Result<String, String> {
    let v = match seconds {
        Seconds::Integer(i) => toml::Value::Integer(i),
        Seconds::Float(f) => toml::Value::Float(f),
    };
    crawl_delay_value(&v)
}

/// [`crawl_delay`] for any TOML value (a wrong type is reported as found).
pub(crate) fn crawl_delay_value(v: &toml::Value) -> Result<String, String> {
    match v {
        toml::Value::Integer(i) if *i > 0 => Ok(i.to_string()),
        toml::Value::Float(f) if *f > 0.0 && f.is_finite() => Ok(f.to_string()),
        toml::Value::Integer(_) | toml::Value::Float(_) => {
            Err(format!("group.crawl_delay must be a positive number of seconds, found {v}"))
        }
        other => Err(format!(
            "group.crawl_delay: expected a number of seconds, e.g. crawl_delay = 2, found {}",
            match other {
                toml::Value::String(_) => "a string",
                toml::Value::Boolean(_) => "a boolean",
                toml::Value::Datetime(_) => "a date-time",
                toml::Value::Array(_) => "an array",
                _ => "a table",
            }
        )),
    }
}

/// A `robots_txt.sitemaps` entry: an absolute http(s) URL without
/// whitespace, control characters or `#` (which starts a robots.txt
/// comment, so a reader would see a shorter URL).
pub fn sitemap(url: &str) -> Result<(), String> {
    http_url("robots_txt.sitemaps", url, true, None)
}

/// An absolute http(s) URL under `key`, without whitespace or control
/// characters; `in_robots_txt` also refuses `#`, which starts a robots.txt
/// comment (a reader would see a shorter URL), and `header` (the field the
/// URL is sent in) non-ASCII characters, which a header value cannot carry.
fn http_url(key: &str, url: &str, in_robots_txt: bool, header: Option<&str>) -> Result<(), String> {
    let has_host = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
        .is_some_and(|rest| !rest.is_empty() && !rest.starts_with('/'));
    no_control(key, url)?;
    if !has_host || url.contains(char::is_whitespace) {
        Err(format!("{key}: `{}` is not an absolute http(s) URL", url.escape_debug()))
    } else if in_robots_txt && url.contains('#') {
        Err(format!("{key}: `{url}` contains '#', which starts a comment in robots.txt (write %23 for a literal '#')"))
    } else if let (Some(field), false) = (header, url.is_ascii()) {
        Err(format!(
            "{key}: `{url}` contains a non-ASCII character, which the {field} header cannot carry (percent-encode the path; write an internationalized host as xn--...)"
        ))
    } else if url.contains(['"', '<', '>', '\\']) {
        Err(format!("{key}: `{url}` contains a character a URL cannot hold unescaped ('\"', '<', '>' or '\\')"))
    } else {
        Ok(())
    }
}

/// `robots_txt.license`: the URL of the site's RSL 1.0 license document,
/// published as a robots.txt `License:` line and in the `Link` header of a
/// response a license token paid for.
pub fn license(url: &str) -> Result<(), String> {
    http_url("robots_txt.license", url, true, Some("Link"))
}

/// A `tdmrep.rules.policy`: the URL of a TDM policy (W3C TDM Reservation
/// Protocol), sent in a `tdm-policy` header and meta.
pub fn tdm_policy(url: &str) -> Result<(), String> {
    http_url("tdmrep.rules.policy", url, false, Some("tdm-policy"))
}

/// A `tdmrep.rules.path`: a path pattern as for the other path rules,
/// without a `$` anchor, which tdmrep.json locations cannot express.
pub fn tdm_path(path: &str) -> Result<Pattern, String> {
    let pattern = Pattern::new(path).map_err(|e| format!("tdmrep.rules.path: {e}"))?;
    if path.contains('$') {
        return Err(format!(
            "tdmrep.rules.path: `{path}` ends with `$`, which a tdmrep.json location cannot express (TDMRep locations match whole paths with `*` wildcards)"
        ));
    }
    Ok(pattern)
}

/// `rsl.path`: where the RSL document is served: an absolute path in
/// canonical form, no query, no pattern characters.
pub fn rsl_path(path: &str) -> Result<(), String> {
    const KEY: &str = "rsl.path";
    if !path.starts_with('/')
        || path.contains(['?', '#', '*', '$'])
        || path.contains(|c: char| c.is_whitespace() || c.is_control())
    {
        return Err(format!(
            "{KEY} must be an absolute path without '?', '#', '*', '$' or whitespace, found `{}`",
            path.escape_debug()
        ));
    }
    if crate::canonical::canonicalize(path) != path {
        return Err(format!(
            "{KEY}: `{path}` is not in canonical form (write it as `{}`)",
            crate::canonical::canonicalize(path)
        ));
    }
    Ok(())
}

/// `rsl.document`: the RSL 1.0 XML document, checked for the start of an
/// XML document (`<?xml` or the `<rsl` root element) and for control
/// characters other than tab, CR and LF, which an XML document cannot hold
/// (XML 1.0 section 2.2) or should not (DEL, C1). Returns it without leading
/// whitespace, since an XML declaration must come first.
pub fn rsl_document(doc: &str) -> Result<&str, String> {
    let control = |c: char| c.is_control() && !matches!(c, '\t' | '\n' | '\r');
    if let Some((i, line)) = doc.lines().enumerate().find(|(_, l)| l.contains(control)) {
        let c = line.chars().find(|c| control(*c)).unwrap_or_default();
        return Err(format!(
            "rsl.document: line {} of the document contains a control character (`{}`); only tab, CR and LF may appear in the document",
            i + 1,
            c.escape_debug()
        ));
    }
    let doc = doc.trim_start();
    if doc.is_empty() {
        Err("rsl.document is empty".to_string())
    } else if !(doc.starts_with("<?xml") || doc.starts_with("<rsl")) {
        // Control characters (a newline) escaped, quotes as written.
        let start = shown(&doc.chars().take(16).collect::<String>());
        Err(format!("rsl.document must be an RSL XML document starting with `<?xml` or `<rsl`, found `{start}...`"))
    } else {
        Ok(doc)
    }
}

/// The `key=yes|no` pairs of a `content_signal` value that
/// [`content_signal`] accepted (not its `use=`).
pub(crate) fn content_signal_pairs(value: &str) -> Vec<(&str, bool)> {
    value
        .split(',')
        .filter_map(|kv| kv.split_once('=').map(|(k, v)| (k.trim(), v.trim())))
        .filter(|(k, _)| *k != "use")
        .map(|(k, v)| (k, v == "yes"))
        .collect()
}

/// The `use=` level of a `content_signal` value that [`content_signal`]
/// accepted.
pub(crate) fn content_signal_use(value: &str) -> Option<crate::sf::SignalUse> {
    value.split(',').find_map(|kv| match kv.split_once('=') {
        Some((k, v)) if k.trim() == "use" => crate::sf::SignalUse::parse(v.trim()),
        _ => None,
    })
}

/// `robots_txt.content_signal`: a list of `key=yes|no`, and at most one
/// `use=immediate|reference|full`; returns it as robots.txt publishes it
/// (entries joined by `, `).
pub fn content_signal(value: &str) -> Result<String, String> {
    no_control("robots_txt.content_signal", value)?;
    let mut uses = 0;
    let mut pairs = Vec::new();
    for kv in value.split(',') {
        let Some((k, val)) = kv.split_once('=') else {
            return Err(format!(
                "robots_txt.content_signal: `{value}` is not a list of key=yes|no (e.g. \"search=yes, ai-train=no\")"
            ));
        };
        let (k, val) = (k.trim(), val.trim());
        if k == "use" {
            uses += 1;
            if crate::sf::SignalUse::parse(val).is_none() {
                return Err(format!(
                    "robots_txt.content_signal: use must be immediate, reference or full, found `{val}`"
                ));
            }
            if uses > 1 {
                return Err(format!("robots_txt.content_signal: `{value}` states use more than once"));
            }
        } else if k.is_empty()
            || !k.bytes().all(|b| b.is_ascii_lowercase() || b == b'-')
            || !(val == "yes" || val == "no")
        {
            return Err(format!(
                "robots_txt.content_signal: `{value}` is not a list of key=yes|no (e.g. \"search=yes, ai-train=no\")"
            ));
        }
        pairs.push(format!("{k}={val}"));
    }
    Ok(pairs.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_and_rules() {
        assert_eq!(user_agent("*"), Ok(None));
        assert_eq!(user_agent("Googlebot-Image"), Ok(None));
        for t in ["AI2Bot", "Ai2Bot-Dolma", "MJ12bot", "360Spider", "archive.org_bot", "Crawl4AI", "img2dataset"] {
            assert_eq!(
                user_agent(t),
                Ok(Some(format!(
                    "group.user_agents: `{t}` has characters outside RFC 9309's product token (letters, '_' and '-'); \
                     it is published and identified, but strict RFC 9309 parsers ignore such user-agent lines"
                )))
            );
        }
        assert_eq!(
            user_agent("Bot/2").unwrap_err(),
            "group.user_agents: `Bot/2` is not a product token (letters, digits, '_', '-' and '.' only, or \"*\")"
        );
        assert!(user_agent("a b").is_err());
        assert!(user_agent("a*").is_err());
        assert!(user_agent("").is_err());
        assert!(rule(true, "/a*b$").is_ok());
        assert_eq!(rule(false, "a").unwrap_err(), "group.disallow: pattern `a` must start with '/' or '*'");
        assert_eq!(rule(true, "").unwrap_err(), "group.allow: pattern is empty");
    }

    #[test]
    fn content_usage_and_app_directives() {
        let cu = content_usage(" /docs  train-ai=n, foo=y ").unwrap();
        assert_eq!(cu.path.as_deref(), Some("/docs"));
        assert_eq!(
            cu.warnings,
            ["group.content_usage: `foo` is not in the AIPREF vocabulary (train-ai, ai-use, search); receivers ignore it"]
        );
        assert!(content_usage("train-ai=n, ai-use=y, search=y").unwrap().warnings.is_empty());
        assert_eq!(
            content_usage("train-genai=n, tdm=n").unwrap().warnings,
            [
                "group.content_usage: `train-genai` was dropped from the AIPREF vocabulary by draft-ietf-aipref-vocab-08 (train-ai, ai-use, search); receivers ignore it",
                "group.content_usage: `tdm` was dropped from the AIPREF vocabulary by draft-ietf-aipref-vocab-08 (train-ai, ai-use, search); receivers ignore it",
            ]
        );
        assert_eq!(
            content_usage("*x train-ai=n").unwrap_err(),
            "group.content_usage: path `*x` must start with `/` (readers take a leading `*` word as part of the value)"
        );
        assert!(content_usage("/a#b train-ai=n").unwrap_err().starts_with("group.content_usage: pattern `/a#b`"));
        assert!(app_directives("/x foo", true).unwrap().warnings.is_empty());
        assert_eq!(app_directives("foo", false).unwrap().warnings.len(), 1);
        assert!(app_directives("a=b", true).unwrap_err().starts_with("group.app_directives: "));
        // Tokens, strings and parameters may hold `#`; robots.txt may not.
        assert_eq!(
            app_directives("*#", true).unwrap_err(),
            "group.app_directives: `*#` contains '#', which starts a comment in robots.txt"
        );
        assert_eq!(
            app_directives("/x foo;a=\"x#y\"", true).unwrap_err(),
            "group.app_directives: `/x foo;a=\"x#y\"` contains '#', which starts a comment in robots.txt"
        );
        assert_eq!(
            content_usage("train-ai=n;x=\"#\"").unwrap_err(),
            "group.content_usage: `train-ai=n;x=\"#\"` contains '#', which starts a comment in robots.txt"
        );
        // Trimmed or split at whitespace, these would lose the character.
        assert_eq!(
            content_usage("train-ai=n\r").unwrap_err(),
            "group.content_usage: `train-ai=n\\r` contains a control character"
        );
        assert_eq!(
            content_usage("/docs\ttrain-ai=n").unwrap_err(),
            "group.content_usage: `/docs\\ttrain-ai=n` contains a control character"
        );
        assert_eq!(
            app_directives("\u{85}/x foo", true).unwrap_err(),
            "group.app_directives: `\\u{85}/x foo` contains a control character"
        );
        assert_eq!(
            app_directives("foo\n", true).unwrap_err(),
            "group.app_directives: `foo\\n` contains a control character"
        );
    }

    #[test]
    fn numbers_urls_signals() {
        assert_eq!(crawl_delay(Seconds::Integer(5)), Ok("5".into()));
        assert_eq!(crawl_delay(Seconds::Float(0.5)), Ok("0.5".into()));
        assert_eq!(
            crawl_delay(Seconds::Integer(0)).unwrap_err(),
            "group.crawl_delay must be a positive number of seconds, found 0"
        );
        assert_eq!(
            crawl_delay(Seconds::Float(-0.0)).unwrap_err(),
            "group.crawl_delay must be a positive number of seconds, found -0.0"
        );
        assert_eq!(sitemap("https://e.example/s.xml"), Ok(()));
        assert_eq!(
            user_agent(&"A".repeat(100_000)).unwrap_err(),
            "group.user_agents: `AAAAAAAAAAAAAAAA...` is 100000 bytes long; a product token may have at most 128"
        );
        assert_eq!(user_agent(&"A".repeat(128)), Ok(None));
        assert!(user_agent(&"7".repeat(129))
            .unwrap_err()
            .ends_with("is 129 bytes long; a product token may have at most 128"));
        assert_eq!(sitemap("/s.xml").unwrap_err(), "robots_txt.sitemaps: `/s.xml` is not an absolute http(s) URL");
        assert_eq!(
            sitemap("https://e.example/\0").unwrap_err(),
            "robots_txt.sitemaps: `https://e.example/\\0` contains a control character"
        );
        assert!(sitemap("https://e.example/#top").is_err());
        assert_eq!(content_signal("search=yes,ai-train=no"), Ok("search=yes, ai-train=no".into()));
        assert!(content_signal("x").is_err());
        assert_eq!(
            content_signal("y=\ryes").unwrap_err(),
            "robots_txt.content_signal: `y=\\ryes` contains a control character"
        );
        assert!(content_signal("search=yes,\tai-train=no").is_err());
        assert_eq!(content_signal(" search = yes ,ai-train= no"), Ok("search=yes, ai-train=no".into()));
        assert_eq!(
            content_signal("search=yes,ai-train=no,use=reference"),
            Ok("search=yes, ai-train=no, use=reference".into())
        );
        assert_eq!(
            content_signal("use=later"),
            Err("robots_txt.content_signal: use must be immediate, reference or full, found `later`".into())
        );
        assert_eq!(
            content_signal("use=full, use=immediate"),
            Err("robots_txt.content_signal: `use=full, use=immediate` states use more than once".into())
        );
        assert_eq!(content_signal_use("search=yes, use=immediate"), Some(crate::sf::SignalUse::Immediate));
        assert_eq!(content_signal_pairs("search=yes, use=full, ai-train=no"), [("search", true), ("ai-train", false)]);
        assert_eq!(license("https://e.example/license.xml"), Ok(()));
        assert_eq!(
            license("https:///x").unwrap_err(),
            "robots_txt.license: `https:///x` is not an absolute http(s) URL"
        );
        assert_eq!(tdm_policy("https://e.example/p.json#v1"), Ok(()));
        // robots.txt is UTF-8; a header value is not.
        assert_eq!(sitemap("https://e.example/café.xml"), Ok(()));
        assert_eq!(
            license("https://e.example/licencé.xml").unwrap_err(),
            "robots_txt.license: `https://e.example/licencé.xml` contains a non-ASCII character, which the Link header cannot carry (percent-encode the path; write an internationalized host as xn--...)"
        );
        assert_eq!(
            tdm_policy("https://e.example/é").unwrap_err(),
            "tdmrep.rules.policy: `https://e.example/é` contains a non-ASCII character, which the tdm-policy header cannot carry (percent-encode the path; write an internationalized host as xn--...)"
        );
        assert_eq!(
            tdm_policy("https://e.example/p\r").unwrap_err(),
            "tdmrep.rules.policy: `https://e.example/p\\r` contains a control character"
        );
        assert_eq!(
            tdm_policy("ftp://e.example/p").unwrap_err(),
            "tdmrep.rules.policy: `ftp://e.example/p` is not an absolute http(s) URL"
        );
        assert!(tdm_path("/a/*").is_ok());
        assert!(tdm_path("/a$").unwrap_err().starts_with("tdmrep.rules.path: `/a$` ends with `$`"));
        assert_eq!(rsl_path("/license.xml"), Ok(()));
        assert_eq!(
            rsl_path("license.xml").unwrap_err(),
            "rsl.path must be an absolute path without '?', '#', '*', '$' or whitespace, found `license.xml`"
        );
        assert_eq!(rsl_document("\n <rsl/>"), Ok("<rsl/>"));
        assert_eq!(
            rsl_document("{\"a\": 1}").unwrap_err(),
            "rsl.document must be an RSL XML document starting with `<?xml` or `<rsl`, found `{\"a\": 1}...`"
        );
        assert_eq!(rsl_document("  ").unwrap_err(), "rsl.document is empty");
        assert_eq!(rsl_document("<rsl>\r\n\t<a/>\r\n</rsl>\n"), Ok("<rsl>\r\n\t<a/>\r\n</rsl>\n"));
        assert_eq!(
            rsl_document("<rsl>\n<a>x\0</a>\n</rsl>").unwrap_err(),
            "rsl.document: line 2 of the document contains a control character (`\\0`); only tab, CR and LF may appear in the document"
        );
        assert_eq!(
            rsl_document("<rsl/>\u{1b}").unwrap_err(),
            "rsl.document: line 1 of the document contains a control character (`\\u{1b}`); only tab, CR and LF may appear in the document"
        );
    }
}

/// The Levenshtein distance between `a` and `b`, ASCII case-insensitive,
/// counting characters; used to suggest the key or token meant.
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().map(|c| c.to_ascii_lowercase()).collect();
    let b: Vec<char> = b.chars().map(|c| c.to_ascii_lowercase()).collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let swap = usize::from(ca != cb);
            cur[j + 1] = (prev[j] + swap).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The candidate closest to `word` within `max` edits (the first of equals),
/// `None` when none is that close or `word` is one of them.
pub(crate) fn closest<'c>(word: &str, candidates: impl IntoIterator<Item = &'c str>, max: usize) -> Option<&'c str> {
    let mut best: Option<(usize, &str)> = None;
    for c in candidates {
        let d = edit_distance(word, c);
        if d == 0 {
            return None;
        }
        if d <= max && best.is_none_or(|(b, _)| d < b) {
            best = Some((d, c));
        }
    }
    best.map(|(_, c)| c)
}

#[cfg(test)]
mod distance_tests {
    use super::*;

    #[test]
    fn distances_and_suggestions() {
        assert_eq!(edit_distance("dissallow", "disallow"), 1);
        assert_eq!(edit_distance("Googlebott", "Googlebot"), 1);
        assert_eq!(edit_distance("GoogleBot", "Googlebot"), 0);
        assert_eq!(edit_distance("Gogglebt", "Googlebot"), 2);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(closest("dissallow", ["allow", "disallow"], 2), Some("disallow"));
        assert_eq!(closest("disallow", ["allow", "disallow"], 2), None);
        assert_eq!(closest("zzz", ["allow", "disallow"], 2), None);
    }
}
