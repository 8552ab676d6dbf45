//! The built-in catalog of known crawlers and agents (data in
//! `data/catalog.json`, compiled into the binary; see `data/README.md`).
//!
//! Used when a policy loads (`group.categories`, the robots-only warning),
//! by the CLI (`crawlgate agents list`, `crawlgate explain`) and by the
//! HTML rewriter, which asks [`is_crawler_meta_name`] which `<meta>` names
//! speak to a crawler. Requests are identified by the compiled policy's own
//! token matcher, not by the catalog.

use std::cmp::Ordering;
use std::sync::LazyLock;

/// The category vocabulary.
pub const CATEGORIES: &[&str] = &[
    "ai-training",
    "ai-search",
    "ai-assistant",
    "search-engine",
    "seo",
    "archiver",
    "scraper",
    "social-preview",
    "monitoring",
];

/// The catalog as compiled into the binary.
const EMBEDDED: &str = include_str!("../data/catalog.json");

/// One catalog entry.
#[derive(Debug, Clone, serde::Deserialize, serde::Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// Product token (`[A-Za-z0-9._-]+`: RFC 9309's characters plus the
    /// digits and dots real tokens such as `AI2Bot` have).
    pub token: String,
    /// Who runs it.
    pub operator: String,
    /// Categories from [`CATEGORIES`], the primary one first. A crawler
    /// whose crawl serves several purposes (Googlebot's feeds Search and
    /// Gemini's training unless `Google-Extended` is disallowed) lists each;
    /// `group.categories` and the default class (`[classes]`) take the
    /// first, `mixed_purpose = "strictest"` takes them all.
    pub categories: Vec<String>,
    /// Whether the token appears in User-Agent headers (false: robots.txt only).
    pub ua_visible: bool,
    /// Documentation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// A real User-Agent string.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub example_ua: Option<String>,
}

impl Entry {
    /// Whether the entry serves `category`, as its primary purpose or
    /// another.
    pub fn in_category(&self, category: &str) -> bool {
        self.categories.iter().any(|c| c == category)
    }

    /// Its primary category (the first one listed).
    pub fn primary_category(&self) -> &str {
        self.categories.first().map_or("", String::as_str)
    }
}

/// Parses catalog JSON and sorts it by token, ASCII case-insensitively (the
/// order [`lookup`]'s binary search relies on).
fn parse(json: &str) -> Result<Vec<Entry>, serde_json::Error> {
    let mut v: Vec<Entry> = serde_json::from_str(json)?;
    v.sort_by_key(|e| e.token.to_ascii_lowercase());
    Ok(v)
}

// The embedded file is validated by the unit tests below (and by
// `data/check_catalog.py`), so the fallback to an empty catalog can only be
// reached by a build whose tests fail; it keeps a policy load from panicking.
static ENTRIES: LazyLock<Vec<Entry>> = LazyLock::new(|| parse(EMBEDDED).unwrap_or_default());

/// Every entry, sorted by token (case-insensitively).
pub fn entries() -> &'static [Entry] {
    &ENTRIES
}

/// Whether `category` is in the vocabulary.
pub fn is_category(category: &str) -> bool {
    CATEGORIES.contains(&category)
}

/// Entries whose primary category is `category`, sorted by token; `None`
/// for an unknown category. Primary categories partition the catalog, so
/// `group.categories` brings each token to one group only.
pub fn entries_in_category(category: &str) -> Option<Vec<&'static Entry>> {
    if !is_category(category) {
        return None;
    }
    Some(ENTRIES.iter().filter(|e| e.primary_category() == category).collect())
}

/// Tokens whose primary category is `category`, sorted; `None` for an
/// unknown category.
pub fn tokens_in_category(category: &str) -> Option<Vec<&'static str>> {
    entries_in_category(category).map(|v| v.into_iter().map(|e| e.token.as_str()).collect())
}

fn cmp_ignore_ascii_case(a: &str, b: &str) -> Ordering {
    a.bytes().map(|c| c.to_ascii_lowercase()).cmp(b.bytes().map(|c| c.to_ascii_lowercase()))
}

/// The entry of a token (ASCII case-insensitive); a binary search, no
/// allocation.
pub fn lookup(token: &str) -> Option<&'static Entry> {
    let i = ENTRIES.binary_search_by(|e| cmp_ignore_ascii_case(&e.token, token)).ok()?;
    ENTRIES.get(i)
}

/// Whether a token only ever appears in robots.txt (never in a request).
pub fn is_robots_only(token: &str) -> bool {
    lookup(token).is_some_and(|e| !e.ua_visible)
}

/// Robots `<meta>` names crawlers read that are not product tokens of the
/// catalog (Yandex documents `<meta name="yandex">`; its crawlers' tokens
/// are `YandexBot` and others).
const META_ONLY_NAMES: &[&str] = &["yandex"];

/// Whether a `<meta name>` addresses a known crawler, as
/// `<meta name="googlebot">` does: a catalog token or one of the few meta
/// names crawlers document apart from their tokens. ASCII
/// case-insensitive; no allocation.
pub fn is_crawler_meta_name(name: &str) -> bool {
    lookup(name).is_some() || META_ONLY_NAMES.iter().any(|n| n.eq_ignore_ascii_case(name))
}

/// The ordinary browser and library User-Agents the catalog is checked
/// against (no catalog token in any of them).
const BROWSER_UAS: &str = include_str!("../data/browser-uas.txt");

/// Words every browser-like User-Agent carries, whether or not a line of
/// `data/browser-uas.txt` has them today (the test below checks the corpus
/// still has most of them).
pub const GENERIC_UA_WORDS: &[&str] = &[
    "Mozilla",
    "compatible",
    "AppleWebKit",
    "KHTML",
    "like",
    "Gecko",
    "Chrome",
    "Chromium",
    "Safari",
    "Firefox",
    "Edg",
    "Edge",
    "OPR",
    "Opera",
    "Version",
    "Mobile",
    "Windows",
    "Win64",
    "WOW64",
    "x64",
    "NT",
    "Macintosh",
    "Intel",
    "Mac",
    "OS",
    "X",
    "Linux",
    "x86_64",
    "Android",
    "iPhone",
    "iPad",
    "CPU",
    "U",
    "rv",
    "Trident",
    "MSIE",
    "X11",
    "CrOS",
    "Ubuntu",
    "SamsungBrowser",
    "YaBrowser",
    "Vivaldi",
];

/// Inserts into `out`, ASCII-lowercased, every word sequence of `ua` that
/// the token matcher would find: a substring of product token characters
/// (`[A-Za-z0-9._-]`) that starts and ends at a word boundary (next to a
/// character outside `[A-Za-z0-9]`). With `whole_runs` false, a whole run of
/// token characters is left out: only the words inside a longer token.
fn insert_words(ua: &str, whole_runs: bool, out: &mut std::collections::HashSet<String>) {
    let token_char = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-');
    let b = ua.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if !token_char(b[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && token_char(b[i]) {
            i += 1;
        }
        // One run of token characters, `start..i`.
        let word_start = |s: usize| s == start || !b[s - 1].is_ascii_alphanumeric();
        let word_end = |e: usize| e == i || !b[e].is_ascii_alphanumeric();
        for s in (start..i).filter(|&s| word_start(s)) {
            for e in (s + 1..=i).filter(|&e| word_end(e) && (whole_runs || (s, e) != (start, i))) {
                out.insert(ua[s..e].to_ascii_lowercase());
            }
        }
    }
}

/// Every whole word sequence of the corpus's browser User-Agents (lines
/// starting `Mozilla/`), ASCII-lowercased: each substring made of product
/// token characters that starts and ends at a word boundary as
/// [`crate::identify::TokenMatcher`] reads one (next to a character outside
/// `[A-Za-z0-9]`), so exactly the tokens the matcher would find in one of
/// them; plus [`GENERIC_UA_WORDS`].
static BROWSER_WORDS: LazyLock<std::collections::HashSet<String>> = LazyLock::new(|| {
    let mut out: std::collections::HashSet<String> = GENERIC_UA_WORDS.iter().map(|w| w.to_ascii_lowercase()).collect();
    for ua in BROWSER_UAS.lines().filter(|l| l.starts_with("Mozilla/")) {
        insert_words(ua, true, &mut out);
    }
    out
});

/// Whether `token` appears, as the token matcher would find it, in a
/// browser's User-Agent (`data/browser-uas.txt`, [`GENERIC_UA_WORDS`]):
/// such a token would identify every browser. ASCII case-insensitive.
pub fn in_browser_user_agents(token: &str) -> bool {
    BROWSER_WORDS.contains(&token.to_ascii_lowercase())
}

/// Words many clients' User-Agents or names carry, that a site's phrase
/// (`Go!Zilla`, `Yahoo Pipes 1.0`, `The Web Spider`) starts with: a
/// robots.txt user-agent value is never cut to one of them
/// ([`crate::siteintent`]), as a group for the word would catch other
/// clients (`Go` catches every `Go-http-client`).
pub const GENERIC_PHRASE_WORDS: &[&str] = &[
    "Go",
    "Web",
    "The",
    "Internet",
    "Yahoo",
    "Download",
    "Image",
    "Images",
    "Net",
    "Open",
    "Google",
    "Microsoft",
    "MSN",
    "Bing",
    "Apple",
    "Amazon",
    "Facebook",
    "Meta",
    "Java",
    "Python",
    "Perl",
    "PHP",
    "Ruby",
    "Node",
    "Apache",
    "Http",
    "HTTP",
    "Client",
    "Library",
    "Search",
    "Spider",
    "Crawler",
    "Robot",
    "Bot",
    "Agent",
    "Fetcher",
    "Mail",
    "Site",
    "Link",
    "Page",
    "Free",
    "New",
    "My",
    "Offline",
    "Mobile",
    "Desktop",
    "Tool",
    "Reader",
    "News",
    "Media",
    "Video",
    "Data",
    "Cloud",
    "Teleport",
    "Express",
    "Pro",
    "Super",
    "Smart",
    "Fast",
    "Easy",
    "Quick",
    "Power",
];

/// [`BROWSER_WORDS`], [`GENERIC_PHRASE_WORDS`], and every word of the
/// corpus's library User-Agents and the catalog's example User-Agents that
/// is part of a longer token there (`Go` of `Go-http-client`, `Image` of
/// `Googlebot-Image`), less the catalog's own tokens, ASCII-lowercased.
static CLIENT_WORDS: LazyLock<std::collections::HashSet<String>> = LazyLock::new(|| {
    let mut out: std::collections::HashSet<String> =
        GENERIC_PHRASE_WORDS.iter().map(|w| w.to_ascii_lowercase()).collect();
    let uas = BROWSER_UAS
        .lines()
        .filter(|l| !l.starts_with("Mozilla/"))
        .chain(ENTRIES.iter().filter_map(|e| e.example_ua.as_deref()))
        .chain(ENTRIES.iter().map(|e| e.token.as_str()));
    for ua in uas {
        insert_words(ua, false, &mut out);
    }
    for e in ENTRIES.iter() {
        out.remove(&e.token.to_ascii_lowercase());
    }
    out
});

/// Whether `token` is a word other clients' User-Agents carry: a browser
/// word ([`in_browser_user_agents`]), a generic word of phrases
/// ([`GENERIC_PHRASE_WORDS`]), or part of a longer token of a library's or
/// a catalog crawler's User-Agent. A catalog token never is (unless a
/// browser carries it). ASCII case-insensitive.
pub fn in_client_user_agents(token: &str) -> bool {
    in_browser_user_agents(token) || CLIENT_WORDS.contains(&token.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    #[test]
    fn embedded_catalog_parses() {
        // Parsed explicitly: `entries()` would hide an error as an empty list.
        let parsed = parse(EMBEDDED);
        assert!(parsed.is_ok(), "data/catalog.json does not parse: {:?}", parsed.err());
        let parsed = parsed.unwrap();
        assert!(parsed.len() >= 150, "only {} entries", parsed.len());
        assert_eq!(parsed, entries(), "entries() is not the embedded catalog");
    }

    #[test]
    fn tokens_are_product_tokens() {
        let bad: Vec<&str> =
            entries().iter().map(|e| e.token.as_str()).filter(|t| !crate::validate::is_crawler_token(t)).collect();
        assert!(bad.is_empty(), "tokens outside ^[A-Za-z0-9._-]+$: {bad:?}");
        for t in
            ["AI2Bot", "AI2Bot-DeepResearchEval", "Ai2Bot-Dolma", "bigsur.ai", "Channel3Bot", "Crawl4AI", "img2dataset"]
        {
            assert_eq!(lookup(t).map(|e| e.token.as_str()), Some(t));
        }
        assert_eq!(lookup("ai2bot-dolma").map(|e| e.operator.as_str()), Some("Ai2"));
    }

    #[test]
    fn categories_are_known_and_present() {
        for e in entries() {
            assert!(!e.categories.is_empty(), "{}: no category", e.token);
            for c in &e.categories {
                assert!(is_category(c), "{}: unknown category `{c}` (known: {})", e.token, CATEGORIES.join(", "));
            }
        }
        for c in CATEGORIES {
            assert!(entries_in_category(c).is_some_and(|v| !v.is_empty()), "category `{c}` has no entry");
        }
    }

    #[test]
    fn no_duplicate_tokens_case_insensitively() {
        let mut seen: Vec<String> = entries().iter().map(|e| e.token.to_ascii_lowercase()).collect();
        let n = seen.len();
        seen.dedup(); // sorted by lowercase token
        assert_eq!(seen.len(), n, "duplicate tokens (case-insensitive)");
    }

    #[test]
    fn lookup_every_token_in_any_case() {
        for e in entries() {
            assert_eq!(lookup(&e.token).map(|x| &x.token), Some(&e.token));
            assert_eq!(lookup(&e.token.to_ascii_uppercase()).map(|x| &x.token), Some(&e.token));
            assert_eq!(lookup(&e.token.to_ascii_lowercase()).map(|x| &x.token), Some(&e.token));
        }
        assert!(lookup("NoSuchBot").is_none());
        assert!(lookup("").is_none());
        assert!(lookup("GPTBo").is_none());
        assert!(lookup("gptbot ").is_none());
    }

    #[test]
    fn crawler_meta_names() {
        for name in ["googlebot", "Googlebot-News", "bingbot", "YANDEX", "gptbot", "CCBot", "slurp"] {
            assert!(is_crawler_meta_name(name), "{name}");
        }
        for name in ["robots", "description", "viewport", "", "googlebot "] {
            assert!(!is_crawler_meta_name(name), "{name}");
        }
    }

    #[test]
    fn robots_only_tokens() {
        assert!(is_robots_only("Google-Extended"));
        assert!(is_robots_only("applebot-extended"));
        assert!(!is_robots_only("GPTBot"));
        assert!(!is_robots_only("NoSuchBot"));
        for e in entries().iter().filter(|e| !e.ua_visible) {
            assert!(e.example_ua.is_none(), "{}: robots-only entry with an example_ua", e.token);
        }
    }

    #[test]
    fn categories_partition_the_catalog() {
        let total: usize = CATEGORIES.iter().map(|c| tokens_in_category(c).map_or(0, |v| v.len())).sum();
        // One primary category per entry (data/README.md): a token in two
        // category groups would make them collide.
        assert_eq!(total, entries().len());
        // Mixed-purpose crawlers list their other purposes after it.
        for t in ["Googlebot", "Applebot", "bingbot"] {
            let e = lookup(t).unwrap();
            assert_eq!(e.categories, ["search-engine", "ai-training"], "{t}");
            assert!(e.in_category("ai-training") && e.primary_category() == "search-engine");
            assert!(!tokens_in_category("ai-training").unwrap().contains(&t), "{t}");
        }
        assert_eq!(tokens_in_category("no-such-category"), None);
        assert!(tokens_in_category("ai-training").unwrap().contains(&"GPTBot"));
    }

    /// The set holds exactly the tokens the matcher finds in a browser's
    /// User-Agent: each one is found, and a sample of near misses is not.
    #[test]
    fn browser_words_are_what_the_matcher_finds() {
        let words: Vec<&String> = BROWSER_WORDS.iter().collect();
        let matcher = crate::identify::TokenMatcher::new(&words);
        let browsers: Vec<&str> = BROWSER_UAS.lines().filter(|l| l.starts_with("Mozilla/")).collect();
        assert!(browsers.len() >= 30, "{}", browsers.len());
        for w in &words {
            let single = crate::identify::TokenMatcher::new(&[w.as_str()]);
            let listed = GENERIC_UA_WORDS.iter().any(|g| g.eq_ignore_ascii_case(w));
            assert!(listed || browsers.iter().any(|ua| single.find(ua).is_some()), "`{w}` is in no browser UA");
        }
        for ua in &browsers {
            assert!(matcher.find(ua).is_some(), "{ua}");
        }
        for t in ["Mozilla", "compatible", "AppleWebKit", "KHTML", "Gecko", "Chrome", "Safari", "like", "Windows"] {
            assert!(in_browser_user_agents(t) && in_browser_user_agents(&t.to_ascii_uppercase()), "{t}");
        }
        for t in ["Win64", "537.36", "x86_64", "Mozilla/5.0", "rv", "Firefox", "Version"] {
            assert!(in_browser_user_agents(t) || t.contains('/'), "{t}");
        }
        // Most of the fixed words are in the corpus (it is the evidence).
        let in_corpus = GENERIC_UA_WORDS
            .iter()
            .filter(|g| browsers.iter().any(|ua| crate::identify::TokenMatcher::new(&[**g]).find(ua).is_some()))
            .count();
        assert!(in_corpus * 2 > GENERIC_UA_WORDS.len(), "{in_corpus} of {}", GENERIC_UA_WORDS.len());
        for t in ["GPTBot", "ClaudeBot", "Googlebot", "Foo", "curl", "AppleWebKi", "ompatible", "Gecko-", "-Gecko"] {
            assert!(!in_browser_user_agents(t), "{t}");
        }
        // No catalog token is one (data/check_catalog.py checks the same).
        let hits: Vec<&str> =
            entries().iter().map(|e| e.token.as_str()).filter(|t| in_browser_user_agents(t)).collect();
        assert!(hits.is_empty(), "{hits:?}");
    }

    /// Issue 36: the words a site's phrase starts with are other clients'
    /// words; catalog tokens and client names that are whole tokens are not.
    #[test]
    fn client_words() {
        for t in [
            "Go",
            "go",
            "Web",
            "The",
            "Internet",
            "Yahoo",
            "Download",
            "Image",
            "Net",
            "Open",
            "http",
            "client",
            "Java",
            "Mozilla",
            "compatible",
            "Google",
            "AdsBot",
            "Extended",
        ] {
            assert!(in_client_user_agents(t), "{t}");
        }
        for t in
            ["Googlebot", "Googlebot-Image", "Slurp", "Sogou", "GPTBot", "curl", "Wget", "FooBot", "Go-http-client"]
        {
            assert!(!in_client_user_agents(t), "{t}");
        }
        let hits: Vec<&str> = GENERIC_PHRASE_WORDS.iter().copied().filter(|w| lookup(w).is_some()).collect();
        assert!(hits.is_empty(), "catalog tokens listed as generic: {hits:?}");
    }

    #[test]
    fn broken_json_is_an_error_not_a_panic() {
        assert!(parse("[{\"token\": \"X\"}]").is_err());
        assert!(parse("not json").is_err());
        assert!(parse(
            "[{\"token\":\"X\",\"operator\":\"o\",\"categories\":[\"seo\"],\"ua_visible\":true,\"extra\":1}]"
        )
        .is_err());
    }

    #[test]
    fn serializes_like_the_data_file() {
        // `agents list --json` prints entries with serde; absent optional
        // fields stay absent, as in catalog.json.
        let e = lookup("AgentTimes").unwrap();
        let v = serde_json::to_value(e).unwrap();
        assert!(v.get("url").is_none() && v.get("example_ua").is_none(), "{v}");
        let raw: Vec<serde_json::Value> = serde_json::from_str(EMBEDDED).unwrap();
        let ours: Vec<serde_json::Value> = entries().iter().map(|e| serde_json::to_value(e).unwrap()).collect();
        assert_eq!(raw, ours, "catalog.json is not sorted case-insensitively or does not round-trip");
    }
}
