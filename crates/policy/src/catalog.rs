//! The built-in catalog of known crawlers and agents (data in
//! `data/catalog.json`, compiled into the binary; see `data/README.md`).

use std::sync::LazyLock;

/// The category vocabulary.
pub const CATEGORIES: &[&str] = &[
    "ai-training", "ai-search", "ai-assistant", "search-engine", "seo", "archiver", "scraper", "social-preview", "monitoring",
];

/// One catalog entry.
#[derive(Debug, Clone, serde::Deserialize, serde::Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// Product token (`[A-Za-z_-]+`).
    pub token: String,
    /// Who runs it.
    pub operator: String,
    /// Categories from [`CATEGORIES`].
    pub categories: Vec<String>,
    /// Whether the token appears in User-Agent headers (false: robots.txt only).
    pub ua_visible: bool,
    /// Documentation.
    #[serde(default)]
    pub url: Option<String>,
    /// A real User-Agent string.
    #[serde(default)]
    pub example_ua: Option<String>,
}

static ENTRIES: LazyLock<Vec<Entry>> = LazyLock::new(|| {
    let mut v: Vec<Entry> = serde_json::from_str(include_str!("../data/catalog.json")).unwrap_or_default();
    v.sort_by_key(|e| e.token.to_ascii_lowercase());
    v
});

/// Every entry, sorted by token.
pub fn entries() -> &'static [Entry] {
    &ENTRIES
}

/// The entry of a token (case-insensitive).
pub fn lookup(token: &str) -> Option<&'static Entry> {
    ENTRIES.iter().find(|e| e.token.eq_ignore_ascii_case(token))
}

/// Tokens of a category, sorted; `None` for an unknown category.
pub fn tokens_in_category(category: &str) -> Option<Vec<&'static str>> {
    if !CATEGORIES.contains(&category) {
        return None;
    }
    Some(ENTRIES.iter().filter(|e| e.categories.iter().any(|c| c == category)).map(|e| e.token.as_str()).collect())
}

/// Whether a token only ever appears in robots.txt (never in a request).
pub fn is_robots_only(token: &str) -> bool {
    lookup(token).is_some_and(|e| !e.ua_visible)
}
