//! AI assistant and AI search products that send visitors to a site, by
//! the host they appear under in the `Referer` field (data in
//! `data/referrers.json`, see `data/README.md`).

use std::sync::LazyLock;

/// One product host.
#[derive(Debug, Clone, serde::Deserialize, serde::Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Referrer {
    /// Host name, lowercase, without `www.`.
    pub host: String,
    /// Product name.
    pub product: String,
    /// Operator, spelled as in the crawler catalog.
    pub operator: String,
    /// The product's public address.
    pub url: String,
}

const EMBEDDED: &str = include_str!("../data/referrers.json");

// Validated by the unit tests below; the empty fallback only keeps a broken
// build from panicking.
static ENTRIES: LazyLock<Vec<Referrer>> = LazyLock::new(|| serde_json::from_str(EMBEDDED).unwrap_or_default());

/// Every product host, in file order.
pub fn referrers() -> &'static [Referrer] {
    &ENTRIES
}

/// The index in [`referrers`] of the product a `Referer` field value
/// comes from: its host (ASCII case-insensitive, a leading `www.` and a
/// port ignored) is a listed host or a subdomain of one. No allocation.
pub fn referrer_of(referer: &str) -> Option<usize> {
    let rest = referer.split_once("://").map_or(referer, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = host.split(':').next().unwrap_or("");
    let host = host.strip_suffix('.').unwrap_or(host);
    if host.is_empty() {
        return None;
    }
    let host = host.as_bytes();
    ENTRIES.iter().position(|r| {
        let h = r.host.as_bytes();
        host.len() >= h.len()
            && host[host.len() - h.len()..].eq_ignore_ascii_case(h)
            && (host.len() == h.len() || host[host.len() - h.len() - 1] == b'.')
    })
}

/// Whether a catalog operator counts for a referrer's operator: the same
/// name, or the name followed by a parenthesised part (`Microsoft (Bing)`
/// for `Microsoft`).
pub fn same_operator(catalog_operator: &str, operator: &str) -> bool {
    catalog_operator == operator || catalog_operator.strip_prefix(operator).is_some_and(|rest| rest.starts_with(" ("))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    #[test]
    fn embedded_list_parses_and_is_lowercase() {
        let parsed: Vec<Referrer> = serde_json::from_str(EMBEDDED).unwrap();
        assert!(parsed.len() >= 5);
        assert_eq!(parsed, referrers());
        for r in &parsed {
            assert_eq!(r.host, r.host.to_ascii_lowercase(), "{}", r.host);
            assert!(!r.host.starts_with("www."), "{}", r.host);
            assert!(r.url.starts_with("https://"), "{}", r.url);
        }
    }

    #[test]
    fn operators_name_catalog_operators() {
        // Every operator but the few with no crawler in the catalog has one.
        let without_crawler = ["DeepSeek", "xAI", "Phind"];
        for r in referrers() {
            if without_crawler.contains(&r.operator.as_str()) {
                continue;
            }
            assert!(
                crate::catalog::entries().iter().any(|e| same_operator(&e.operator, &r.operator)),
                "{}: no catalog entry of operator {}",
                r.host,
                r.operator
            );
        }
    }

    #[test]
    fn hosts_are_found() {
        let product = |v: &str| referrer_of(v).map(|i| referrers()[i].product.as_str());
        assert_eq!(product("https://chatgpt.com/"), Some("ChatGPT"));
        assert_eq!(product("https://www.perplexity.ai/search?q=x"), Some("Perplexity"));
        assert_eq!(product("https://GEMINI.google.com:443/app"), Some("Gemini"));
        assert_eq!(product("https://user@claude.ai/chat"), Some("Claude"));
        assert_eq!(product("https://claude.ai./"), Some("Claude"));
        assert_eq!(product("https://google.com/"), None);
        assert_eq!(product("https://notclaude.ai/"), None);
        assert_eq!(product("https://claude.ai.example.com/"), None);
        assert_eq!(product(""), None);
        assert_eq!(product("https://"), None);
    }

    #[test]
    fn operator_names() {
        assert!(same_operator("Microsoft (Bing)", "Microsoft"));
        assert!(same_operator("OpenAI", "OpenAI"));
        assert!(!same_operator("Microsoftish", "Microsoft"));
    }
}
