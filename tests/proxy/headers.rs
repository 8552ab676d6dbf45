//! Robots-Tag, X-Robots-Tag and Content-Usage on proxied responses, and
//! the forwarding headers the origin sees.

use crate::support::{get, header, header_values, origin, proxy, BROWSER_UA, GPTBOT_UA};

#[test]
fn policy_headers_are_added_and_do_not_vary_by_user_agent() {
    let origin = origin();
    let proxy = proxy(&origin);
    let mut seen = Vec::new();
    for ua in [BROWSER_UA, "Googlebot/2.1"] {
        let resp = get(&proxy.url("/drafts/a"), ua);
        assert_eq!(resp.status(), 200);
        assert_eq!(header_values(&resp, "robots-tag"), vec!["*;noindex;nosnippet, GPTBot;noai".to_string()]);
        assert_eq!(
            header_values(&resp, "x-robots-tag"),
            vec!["noindex, nosnippet".to_string(), "gptbot: noai".to_string()]
        );
        assert_eq!(header(&resp, "content-usage"), "train-ai=n");
        assert!(header_values(&resp, "vary").iter().all(|v| !v.to_ascii_lowercase().contains("user-agent")));
        seen.push(format!("{:?}", resp.headers().get_all("robots-tag").iter().collect::<Vec<_>>()));
    }
    assert_eq!(seen[0], seen[1]);
    // Outside /drafts/ there is no Robots-Tag, but Content-Usage still applies.
    let home = get(&proxy.url("/"), BROWSER_UA);
    assert!(home.headers().get("robots-tag").is_none());
    assert!(home.headers().get("x-robots-tag").is_none());
    assert_eq!(header(&home, "content-usage"), "train-ai=n");
    // No preference for paths the `*` group disallows.
    let private = get(&proxy.url("/private/x"), BROWSER_UA);
    assert!(private.headers().get("content-usage").is_none());
    let _ = GPTBOT_UA;
}

#[test]
fn origin_headers_are_merged_not_overwritten() {
    let origin = origin();
    let proxy = proxy(&origin);
    let resp = get(&proxy.url("/drafts/tagged"), BROWSER_UA);
    assert_eq!(resp.status(), 200);
    assert_eq!(
        header_values(&resp, "robots-tag"),
        vec!["*;noarchive;noindex;nosnippet, otherbot;nofollow, GPTBot;noai".to_string()]
    );
    assert_eq!(
        header_values(&resp, "x-robots-tag"),
        vec!["googlebot: nosnippet".to_string(), "noindex, nosnippet".to_string(), "gptbot: noai".to_string()]
    );
    // The origin's own Content-Usage is kept (upstream.content_usage = "keep").
    let tagged = get(&proxy.url("/tagged"), BROWSER_UA);
    assert_eq!(header(&tagged, "content-usage"), "train-ai=y");
    assert_eq!(header_values(&tagged, "x-robots-tag"), vec!["unavailable_after: 25 Jun 2010 15:00:00 PST".to_string()]);
    assert_eq!(header_values(&tagged, "robots-tag"), vec!["*;noarchive".to_string()]);
}

#[test]
fn origin_sees_host_and_forwarding_headers() {
    let origin = origin();
    let proxy = proxy(&origin);
    let resp = crate::support::client()
        .get(proxy.url("/public/page"))
        .header("Host", "www.example.org")
        .header("X-Forwarded-For", "203.0.113.9")
        .send()
        .unwrap();
    assert_eq!(resp.status(), 200);
    let seen = origin.seen();
    let req = seen.last().unwrap_or_else(|| panic!("origin saw nothing"));
    assert_eq!(req.target, "/public/page");
    assert_eq!(req.header("host"), Some("www.example.org"));
    // The client is not a trusted proxy: its own X-Forwarded-For is dropped.
    assert_eq!(req.header("x-forwarded-for"), Some("127.0.0.1"));
    assert_eq!(req.header("x-forwarded-proto"), Some("http"));
}
