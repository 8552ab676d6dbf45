//! URL-level controls: which robots_tag entry decides the HTML mode.

#![cfg(test)]

use crawlgate_policy::{load, HtmlMode};

const POLICY: &str = r#"
[upstream]
servers = ["127.0.0.1:8000"]

[[robots_tag]]
path = "/"
rules = ["noindex"]
html = "inject"

[[robots_tag]]
path = "/translations/"
rules = ["nosnippet"]
html = "off"

[[robots_tag]]
path = "/translations/drafts/"
rules = ["noarchive"]
"#;

#[test]
fn an_explicit_html_off_on_a_longer_entry_stops_the_rewrite() {
    let policy = load(POLICY, "t.toml").map(|l| l.policy).unwrap();
    let mode = |p: &str| policy.url_controls(p).html.map(|h| h.mode);
    assert_eq!(mode("/articles/x"), Some(HtmlMode::Inject));
    assert_eq!(mode("/translations/x"), None, "html = \"off\" on the longer entry wins");
    // An entry without `html` does not change the mode of the entries it
    // extends: the longest entry that sets html is `/translations/` (off).
    assert_eq!(mode("/translations/drafts/x"), None);
    // Per token the longest matching entry gives the header rules.
    assert_eq!(policy.url_controls("/translations/x").robots_tag.as_deref(), Some("*;nosnippet"));
}

#[test]
fn memoised_controls_equal_freshly_built_ones() {
    let load_policy = || load(POLICY, "t.toml").map(|l| l.policy).unwrap();
    let warm = load_policy();
    let paths = ["/a", "/translations/x", "/translations/drafts/y", "/b", "/translations/z", "/a"];
    // Every path asked first of a fresh policy (built) and of one that has
    // already answered the others (memoised).
    for p in paths {
        let fresh = load_policy().url_controls(p);
        for q in paths {
            let _ = warm.url_controls(q);
        }
        assert_eq!(warm.url_controls(p), fresh, "{p}");
    }
    assert_eq!(warm.url_controls("/a").robots_tag.as_deref(), Some("*;noindex"));
    assert_eq!(warm.url_controls("/translations/x").robots_tag.as_deref(), Some("*;nosnippet"));
}
