//! robots.txt from the wild: the tolerant parser and the RFC 9309
//! evaluator must never panic, whatever the bytes. The input's first line
//! is also used as a crawler name and a URL, so selection and matching run
//! against strings the file itself contains.

#![no_main]

use crawlgate_policy::canonical::{canonicalize, normalize_request_target};
use crawlgate_policy::robotstxt::RobotsTxt;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let robots = RobotsTxt::parse(data);
    let text = String::from_utf8_lossy(data);
    let first = text.lines().next().unwrap_or("");
    for url in [first, "/", "/a/b?c=d", "https://example.com/robots.txt"] {
        let _ = robots.is_allowed("GPTBot", url);
        let _ = robots.is_allowed(first, url);
        for g in robots.groups().iter().take(4) {
            for ua in g.user_agents.iter().take(2) {
                let _ = robots.decide(ua, url);
            }
            for r in g.rules.iter().take(4) {
                let _ = robots.is_allowed(ua_of(g), &r.pattern);
            }
        }
    }
    // Request-target normalisation sees the same bytes.
    if let Ok(n) = normalize_request_target(first) {
        let again = normalize_request_target(&n);
        assert_eq!(again.as_deref(), Ok(&*n), "normalize is not idempotent on {first:?}");
        assert_eq!(canonicalize(&n), &*n, "normalized {first:?} is not canonical");
    }
});

fn ua_of(g: &crawlgate_policy::robotstxt::ParsedGroup) -> &str {
    g.user_agents.first().map_or("*", String::as_str)
}
