//! Markdown for agents, issue 35 item 5: the origin's `Robots-Tag`
//! honoured by the AI-use guard, one answer in a refused page's headers,
//! the guard believing only a verified identity, links resolved against
//! the page's canonical URL, and the Markdown metrics.

use std::net::SocketAddr;
use std::time::Duration;

use crawlgate_e2e::origin::{Origin, Route};
use crawlgate_e2e::proxy::Proxy;
use crawlgate_testkit::http::{exchange, RawResponse};
use crawlgate_testkit::temp::TempDir;

const HTML: &str = "text/html; charset=utf-8";
const MD: &str = "text/markdown; charset=utf-8";
const GPTBOT: &str = "Mozilla/5.0 (compatible; GPTBot/1.2; +https://openai.com/gptbot)";
const GOOGLEBOT: &str = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";

/// `*` says `ai-use=y` everywhere, `/noai/` is `noai` by the policy.
const RULES: &str = r#"
[[group]]
user_agents = ["*"]
allow = ["/"]
content_usage = ["train-ai=n, ai-use=y"]

[[group]]
user_agents = ["GPTBot"]
allow = ["/"]

[[group]]
user_agents = ["Googlebot"]
allow = ["/"]

[[robots_tag]]
path = "/noai/"
rules = ["noai"]

[markdown]
"#;

const PAGE: &str =
    "<html><head><title>T</title><link rel=\"canonical\" href=\"https://www.example.com/news/a\"></head>\
<body><main><p><a href=\"/authors/jane\">Jane</a> <img src=\"pic.png\" alt=\"P\"></p></main></body></html>";

fn origin() -> Origin {
    Origin::start(vec![
        ("/news/a", Route::ok(HTML, PAGE)),
        ("/noai/a", Route::ok(HTML, PAGE)),
        ("/origin-robots-tag", Route::ok(HTML, PAGE).header("Robots-Tag", "*;noai")),
        ("/origin-robots-tag-gpt", Route::ok(HTML, PAGE).header("Robots-Tag", "GPTBot;noai")),
        ("/origin-legacy-robots-tag", Route::ok(HTML, PAGE).header("Robots-Tag", "noai")),
        ("/noimageai", Route::ok(HTML, PAGE).header("Robots-Tag", "*;noimageai")),
        ("/utf16", Route::ok("text/html; charset=utf-16", PAGE)),
    ])
}

/// A GET of `path` with `Accept: text/markdown`, from 127.0.0.1, Host
/// `host`.
fn get(addr: SocketAddr, path: &str, ua: &str, host: &str) -> RawResponse {
    let req = format!(
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: {ua}\r\nAccept: text/markdown\r\nConnection: close\r\n\r\n"
    );
    let raw = exchange(addr, req.as_bytes(), Duration::from_secs(20));
    RawResponse::parse(&raw, false)
        .unwrap_or_else(|| panic!("no response head in {:?}", String::from_utf8_lossy(&raw[..raw.len().min(500)])))
}

fn body(r: &RawResponse) -> String {
    String::from_utf8_lossy(&r.body).into_owned()
}

/// The origin's `Robots-Tag` (structured, as crawlgate itself sends it,
/// or legacy) refuses the conversion for the agent it names; a refused
/// page says `ai-use=n` where the policy said `ai-use=y`, never both
/// answers; `noimageai` keeps the text and leaves the images out.
#[test]
fn the_origins_robots_tag_is_honoured_with_one_answer() {
    let origin = origin();
    let proxy = Proxy::start(origin.addr, RULES);
    let cases: &[(&str, &str, Option<&str>)] = &[
        ("/origin-robots-tag", GPTBOT, Some("noai")),
        ("/origin-robots-tag", "curl/8", Some("noai")),
        ("/origin-robots-tag-gpt", GPTBOT, Some("noai")),
        ("/origin-robots-tag-gpt", "curl/8", None),
        ("/origin-legacy-robots-tag", GPTBOT, Some("noai")),
        ("/noai/a", GPTBOT, Some("noai")),
        ("/news/a", GPTBOT, None),
    ];
    for (path, ua, refused) in cases {
        let r = get(proxy.addr, path, ua, "www.example.com");
        assert_eq!(r.status, 200, "{path} {ua}");
        assert_eq!(r.header("x-markdown-refused"), *refused, "{path} {ua}");
        match refused {
            Some(_) => {
                assert_eq!(r.header("content-type"), Some(HTML), "{path} {ua}");
                assert_eq!(r.all("content-usage"), ["train-ai=n, ai-use=n"], "{path} {ua}");
                assert_eq!(body(&r), PAGE, "{path} {ua}");
            }
            None => {
                assert_eq!(r.header("content-type"), Some(MD), "{path} {ua}");
                assert_eq!(r.all("content-usage"), ["train-ai=n, ai-use=y"], "{path} {ua}");
            }
        }
    }
    let r = get(proxy.addr, "/noimageai", GPTBOT, "www.example.com");
    assert_eq!(r.header("content-type"), Some(MD));
    assert!(body(&r).ends_with("---\n\n[Jane](https://www.example.com/authors/jane)\n"), "{}", body(&r));
    // Five refusals by noai, none by ai-use=n.
    assert_eq!(proxy.metric("crawlgate_markdown_refused_total{reason=\"noai\"}").as_deref(), Some("5"));
    assert_eq!(proxy.metric("crawlgate_markdown_refused_total{reason=\"ai-use=n\"}").as_deref(), Some("0"));
}

/// Links resolve against the page's `<link rel=canonical>` when it names
/// the site, not against the Host and scheme of the request (an address
/// of the proxy here, plain http); the metrics count what was served.
#[test]
fn links_follow_the_canonical_and_the_metrics_count() {
    let origin = origin();
    let proxy = Proxy::start(origin.addr, RULES);
    let host = proxy.addr.to_string();
    let r = get(proxy.addr, "/news/a", GPTBOT, &host);
    assert_eq!(r.header("content-type"), Some(MD));
    let want =
        "---\ntitle: \"T\"\nurl: \"https://www.example.com/news/a\"\ncontent-usage: \"train-ai=n, ai-use=y\"\n---\n\n\
                [Jane](https://www.example.com/authors/jane) ![P](https://www.example.com/news/pic.png)\n";
    assert_eq!(body(&r), want);
    // A syndicated copy's canonical names another site: this site's links.
    let r = get(proxy.addr, "/news/a", GPTBOT, "mirror.example");
    assert!(body(&r).ends_with("[Jane](http://mirror.example/authors/jane) ![P](http://mirror.example/news/pic.png)\n"));
    let tokens = (want.chars().count().div_ceil(4) + body(&r).chars().count().div_ceil(4)).to_string();
    let bytes = (want.len() + r.body.len()).to_string();
    // A charset the converter cannot read: served as HTML, counted.
    let r = get(proxy.addr, "/utf16", GPTBOT, &host);
    assert_eq!(r.header("content-type"), Some("text/html; charset=utf-16"));
    let metric = |s: &str| proxy.metric(s).unwrap_or_default();
    // The counters follow the response; wait for the last one.
    crawlgate_e2e::proxy::wait_for("the Markdown counters", Duration::from_secs(10), || {
        (metric("crawlgate_markdown_converted_total") == "2").then_some(())
    });
    assert_eq!(metric("crawlgate_markdown_tokens_total"), tokens);
    assert_eq!(metric("crawlgate_markdown_bytes_total"), bytes);
    assert_eq!(metric("crawlgate_markdown_failed_total{reason=\"charset\"}"), "1");
    assert_eq!(metric("crawlgate_markdown_failed_total{reason=\"bail-out\"}"), "0");
}

/// With no `[verification]`, a User-Agent naming Googlebot is not believed:
/// the `noai` page GPTBot is refused is refused to it too. A Googlebot the
/// policy verified (its address on the group's list) gets the Markdown.
#[test]
fn the_guard_exempts_only_a_verified_search_crawler() {
    let origin = origin();
    let unverified = Proxy::start(origin.addr, RULES);
    for ua in [GPTBOT, GOOGLEBOT] {
        let r = get(unverified.addr, "/noai/a", ua, "www.example.com");
        assert_eq!(r.header("x-markdown-refused"), Some("noai"), "{ua}");
        assert_eq!(r.header("content-type"), Some(HTML), "{ua}");
    }
    let dir = TempDir::new("markdown-guard");
    let list = dir.write("google.txt", "127.0.0.1/32\n");
    let verified = RULES.replace(
        "user_agents = [\"Googlebot\"]\nallow = [\"/\"]\n",
        "user_agents = [\"Googlebot\"]\nallow = [\"/\"]\nverify = \"ip\"\n",
    );
    let rules = format!("[verification]\n\n[verification.lists]\nGooglebot = [\"{}\"]\n{verified}", list.display());
    let proxy = Proxy::start(origin.addr, &rules);
    let r = get(proxy.addr, "/noai/a", GOOGLEBOT, "www.example.com");
    assert_eq!(r.header("x-markdown-refused"), None);
    assert_eq!(r.header("content-type"), Some(MD));
    let r = get(proxy.addr, "/noai/a", GPTBOT, "www.example.com");
    assert_eq!(r.header("x-markdown-refused"), Some("noai"));
}
