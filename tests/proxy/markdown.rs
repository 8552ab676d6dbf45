//! Markdown for agents through the proxy: Accept negotiation with
//! q-values, the Markdown response's headers and body, the AI-use guard,
//! a gzip origin body, and what is left alone (not HTML, not 2xx, paths
//! not converted, HEAD without a body).

use std::io::Write;
use std::net::SocketAddr;
use std::time::Duration;

use crawlgate_e2e::origin::{Body, Origin, Route};
use crawlgate_e2e::proxy::Proxy;
use crawlgate_testkit::http::{exchange, Conn, RawResponse};

const RULES: &str = r#"
[robots_txt]
content_signal = "search=yes, ai-train=no"

[[group]]
user_agents = ["*"]
allow = ["/"]
content_usage = ["train-ai=n", "/nouse/ train-ai=n, ai-use=n"]

[[group]]
user_agents = ["GPTBot"]
allow = ["/"]

[[group]]
user_agents = ["Googlebot"]
allow = ["/"]

[[robots_tag]]
path = "/"
rules = ["nosnippet"]

[[robots_tag]]
path = "/noai/"
rules = ["noai"]

[markdown]
paths = ["/page", "/noai/", "/nouse/", "/gz", "/missing", "/plain.txt", "/origin-noai", "/big", "/utf8", "/gated", "/forged", "/empty", "/blank"]
"#;

const PAGE: &str = "<!doctype html><html><head><title>Hello page</title><link rel=\"canonical\" href=\"/page\"></head>\n\
<body><nav><a href=\"/\">Home</a></nav><main><h1>Hello</h1>\n<p>See <a href=\"/docs/intro\">the intro</a> &amp; more.</p></main></body></html>\n";

/// [`PAGE`] as Markdown, requested at `http://test.example/page`.
const PAGE_MD: &str = "---\ntitle: \"Hello page\"\nurl: \"http://test.example/page\"\nrobots: \"nosnippet\"\ncontent-usage: \"train-ai=n\"\n---\n\n# Hello\n\nSee [the intro](http://test.example/docs/intro) & more.\n";

const HTML: &str = "text/html; charset=utf-8";

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let _ = e.write_all(data);
    e.finish().unwrap_or_default()
}

fn send(addr: SocketAddr, method: &str, path: &str, headers: &[(&str, &str)]) -> RawResponse {
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: test.example\r\nConnection: close\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    let raw = exchange(addr, req.as_bytes(), Duration::from_secs(20));
    RawResponse::parse(&raw, method == "HEAD")
        .unwrap_or_else(|| panic!("no response head in {:?}", String::from_utf8_lossy(&raw[..raw.len().min(500)])))
}

fn get(addr: SocketAddr, path: &str, headers: &[(&str, &str)]) -> RawResponse {
    send(addr, "GET", path, headers)
}

fn body(r: &RawResponse) -> String {
    String::from_utf8_lossy(&r.body).into_owned()
}

fn origin() -> Origin {
    Origin::start(vec![
        ("/page", Route::ok(HTML, PAGE).header("Vary", "Cookie").header("ETag", "\"p1\"")),
        ("/noai/page", Route::ok(HTML, PAGE)),
        ("/nouse/page", Route::ok(HTML, PAGE)),
        ("/origin-noai", Route::ok(HTML, PAGE).header("X-Robots-Tag", "gptbot: noai")),
        ("/gz", Route::ok(HTML, gzip(PAGE.as_bytes())).header("Content-Encoding", "gzip")),
        ("/missing", Route { status: 404, ..Route::ok(HTML, PAGE) }),
        ("/plain.txt", Route::ok("text/plain", "just <b>text</b>\n")),
        ("/other", Route::ok(HTML, PAGE)),
        ("/forged", Route::ok(HTML, PAGE).header("X-Markdown-Tokens", "1").header("X-Markdown-Refused", "ai-use=n")),
        ("/big", Route::ok(HTML, big_page())),
        ("/utf8", Route::ok(HTML, "<main><h1>Café ☕</h1><p>東京の地図</p></main>")),
        ("/empty", Route::ok(HTML, "")),
        ("/empty-chunked", Route::ok(HTML, "").body(Body::Chunked(Vec::new()))),
        ("/blank", Route::ok(HTML, "<html><body></body></html>")),
    ])
}

/// One paragraph of [`big_page`]: 86 bytes of HTML, 81 characters of
/// Markdown.
fn para() -> String {
    format!("<p>{}</p>", "word ".repeat(16).trim_end())
}

/// A page whose Markdown (4,000 paragraphs, 324,000 characters) is past
/// the connection's 256 KiB hold.
fn big_page() -> String {
    format!("<main>{}</main>", para().repeat(4000))
}

/// The `x-markdown-tokens` a Markdown body should get: its characters / 4,
/// rounded up.
fn estimate(markdown: &str) -> String {
    markdown.chars().count().div_ceil(4).to_string()
}

fn gunzip(data: &[u8]) -> String {
    use std::io::Read;
    let mut out = String::new();
    let _ = flate2::read::GzDecoder::new(data).read_to_string(&mut out);
    out
}

#[test]
fn accept_negotiation_with_q_values() {
    let origin = origin();
    let proxy = Proxy::start(origin.addr, RULES);
    let cases: &[(Option<&str>, bool)] = &[
        (Some("text/markdown"), true),
        (Some("text/markdown, text/html;q=0.9"), true),
        (Some("text/html;q=0.5, text/markdown;q=0.6"), true),
        (Some("text/markdown, text/html"), true),
        (Some("text/html, text/markdown;q=0.9"), false),
        (Some("text/markdown;q=0"), false),
        (Some("*/*"), false),
        (None, false),
    ];
    for (accept, markdown) in cases {
        let headers: Vec<(&str, &str)> = accept.map(|a| ("Accept", a)).into_iter().collect();
        let r = get(proxy.addr, "/page", &headers);
        assert_eq!(r.status, 200, "{accept:?}");
        // Both representations vary by Accept (merged with the origin's
        // Vary); the converted one, a rewritten body, also by
        // Accept-Encoding (whether it is compressed depends on it).
        let vary: &[&str] = if *markdown { &["Cookie", "Accept", "Accept-Encoding"] } else { &["Cookie", "Accept"] };
        assert_eq!(r.all("vary"), vary, "{accept:?}");
        if *markdown {
            assert_eq!(r.header("content-type"), Some("text/markdown; charset=utf-8"), "{accept:?}");
            assert_eq!(body(&r), PAGE_MD, "{accept:?}");
        } else {
            assert_eq!(r.header("content-type"), Some(HTML), "{accept:?}");
            assert_eq!(body(&r), PAGE, "{accept:?}");
        }
    }
}

#[test]
fn markdown_response_headers() {
    let origin = origin();
    let proxy = Proxy::start(origin.addr, RULES);
    let r = get(proxy.addr, "/page", &[("Accept", "text/markdown")]);
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("text/markdown; charset=utf-8"));
    assert_eq!(r.header("content-length"), None);
    assert_eq!(r.header("transfer-encoding"), Some("chunked"));
    assert!(r.complete);
    // From the path's Content-Usage (train-ai=n), not the site's line.
    assert_eq!(r.header("content-signal"), Some("ai-train=no"));
    assert_eq!(r.header("x-robots-tag"), Some("nosnippet"));
    assert_eq!(r.header("content-usage"), Some("train-ai=n"));
    // Its own validator, made from the origin's (the HTML keeps "p1").
    assert_eq!(r.header("etag"), Some("W/\"p1-md\""));
    assert_eq!(r.header("x-markdown-refused"), None);
    // The Markdown's characters / 4, rounded up: 174 characters.
    assert_eq!(r.header("x-markdown-tokens"), Some("44"));
    // The origin was asked for an identity body.
    assert!(origin.seen().iter().all(|s| s.header("accept-encoding") == Some("identity")));
    // HEAD: the headers the GET gets, no body.
    let h = send(proxy.addr, "HEAD", "/page", &[("Accept", "text/markdown")]);
    assert_eq!(h.status, 200);
    assert_eq!(h.header("content-type"), Some("text/markdown; charset=utf-8"));
    assert_eq!(h.header("content-length"), None);
    assert_eq!(h.all("vary"), ["Cookie", "Accept"]);
    assert_eq!(h.header("content-signal"), Some("ai-train=no"));
    assert!(h.body.is_empty());
    assert_eq!(proxy.metric("crawlgate_html_rewrites_total{mode=\"markdown\"}").unwrap_or_default(), "1");
}

#[test]
fn the_ai_guard_serves_html_and_says_why() {
    let origin = origin();
    let proxy = Proxy::start(origin.addr, RULES);
    let md = ("Accept", "text/markdown");
    let gpt = ("User-Agent", "Mozilla/5.0 (compatible; GPTBot/1.2; +https://openai.com/gptbot)");
    let google = ("User-Agent", "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)");
    let cases: &[(&str, (&str, &str), Option<&str>)] = &[
        // noai in the policy's X-Robots-Tag: an AI agent gets HTML.
        ("/noai/page", gpt, Some("noai")),
        // A client naming no policy token counts as AI.
        ("/noai/page", ("User-Agent", "curl/8"), Some("noai")),
        // A search crawler is not an AI agent, but without [verification]
        // a User-Agent naming one is not believed (markdown_guard.rs has
        // the verified one).
        ("/noai/page", google, Some("noai")),
        // ai-use=n in the path's Content-Usage.
        ("/nouse/page", gpt, Some("ai-use=n")),
        // The origin's own X-Robots-Tag, scoped to GPTBot.
        ("/origin-noai", gpt, Some("noai")),
        ("/origin-noai", google, None),
    ];
    for (path, ua, refused) in cases {
        let r = get(proxy.addr, path, &[md, *ua]);
        assert_eq!(r.status, 200, "{path} {ua:?}");
        assert_eq!(r.header("x-markdown-refused"), *refused, "{path} {ua:?}");
        // A converted body is rewritten: it varies by Accept-Encoding too.
        let vary: &[&str] = if refused.is_some() { &["Accept"] } else { &["Accept", "Accept-Encoding"] };
        assert_eq!(r.all("vary"), vary, "{path} {ua:?}");
        match refused {
            Some(_) => {
                assert_eq!(r.header("content-type"), Some(HTML), "{path} {ua:?}");
                assert_eq!(body(&r), PAGE, "{path} {ua:?}");
            }
            None => {
                assert_eq!(r.header("content-type"), Some("text/markdown; charset=utf-8"), "{path} {ua:?}");
                assert!(body(&r).ends_with("# Hello\n\nSee [the intro](http://test.example/docs/intro) & more.\n"));
            }
        }
    }
}

#[test]
fn gzip_origin_body_is_decoded_then_converted() {
    let origin = origin();
    let proxy = Proxy::start(origin.addr, RULES);
    let r = get(proxy.addr, "/gz", &[("Accept", "text/markdown"), ("Accept-Encoding", "identity")]);
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-encoding"), None);
    assert_eq!(r.header("content-type"), Some("text/markdown; charset=utf-8"));
    assert_eq!(r.all("vary"), ["Accept", "Accept-Encoding"]);
    assert_eq!(body(&r), PAGE_MD);
}

#[test]
fn non_html_non_2xx_and_other_paths_pass_untouched() {
    let origin = origin();
    let proxy = Proxy::start(origin.addr, RULES);
    let md = [("Accept", "text/markdown")];
    let missing = get(proxy.addr, "/missing", &md);
    assert_eq!((missing.status, missing.header("content-type")), (404, Some(HTML)));
    assert_eq!(body(&missing), PAGE);
    assert_eq!(missing.all("vary"), Vec::<&str>::new());
    let plain = get(proxy.addr, "/plain.txt", &md);
    assert_eq!((plain.header("content-type"), body(&plain).as_str()), (Some("text/plain"), "just <b>text</b>\n"));
    assert_eq!(plain.all("vary"), Vec::<&str>::new());
    let other = get(proxy.addr, "/other", &md);
    assert_eq!((other.header("content-type"), body(&other).as_str()), (Some(HTML), PAGE));
    assert_eq!(other.all("vary"), Vec::<&str>::new());
    // robots.txt is crawlgate's own: never converted.
    let robots = get(proxy.addr, "/robots.txt", &md);
    assert_eq!(robots.header("content-type"), Some("text/plain; charset=utf-8"));
    assert!(body(&robots).contains("User-agent: *"));
}

/// A Host that is not a plain host[:port] cannot point the converted
/// page's links at another site: they stay relative.
#[test]
fn a_hostile_host_leaves_the_links_relative() {
    let origin = origin();
    let proxy = Proxy::start(origin.addr, RULES);
    for host in ["test.example@evil.example", "evil.example/x?"] {
        let req = format!("GET /page HTTP/1.1\r\nHost: {host}\r\nAccept: text/markdown\r\nConnection: close\r\n\r\n");
        let raw = exchange(proxy.addr, req.as_bytes(), Duration::from_secs(20));
        let r = RawResponse::parse(&raw, false).unwrap_or_else(|| panic!("no response to Host {host}"));
        if r.status != 200 {
            continue;
        }
        let text = body(&r);
        assert!(!text.contains("evil.example"), "{host}: {text}");
        assert!(text.ends_with("See [the intro](/docs/intro) & more.\n"), "{host}: {text}");
    }
}

/// A converted response says `x-markdown-tokens`, the estimate of the body
/// it carries (compressed for a client that asks or not, multi-byte
/// characters counted once), on a kept-alive connection where the HTML,
/// a HEAD and a Markdown body past the connection's hold carry none.
#[test]
fn x_markdown_tokens_is_the_estimate_of_the_body_sent() {
    let origin = origin();
    let proxy = Proxy::start(origin.addr, RULES);
    let md = ("Accept", "text/markdown");
    let mut conn = Conn::open(proxy.addr);
    let r = conn.request("GET", "/page", &[md]);
    assert_eq!((r.status, body(&r).as_str()), (200, PAGE_MD));
    assert_eq!(r.header("x-markdown-tokens"), Some(estimate(PAGE_MD).as_str()));
    assert_eq!(estimate(PAGE_MD), "44");
    let gz = conn.request("GET", "/page", &[md, ("Accept-Encoding", "gzip")]);
    assert_eq!(gz.header("content-encoding"), Some("gzip"));
    assert_eq!(gunzip(&gz.body), PAGE_MD);
    assert_eq!(gz.header("x-markdown-tokens"), Some("44"));
    let utf8 = conn.request("GET", "/utf8", &[md]);
    let text = body(&utf8);
    assert!(text.ends_with("# Café ☕\n\n東京の地図\n"), "{text}");
    assert!(text.chars().count() < text.len());
    assert_eq!(utf8.header("x-markdown-tokens"), Some(estimate(&text).as_str()));
    let html = conn.request("GET", "/page", &[("Accept", "text/html")]);
    assert_eq!((body(&html).as_str(), html.header("x-markdown-tokens")), (PAGE, None));
    let head = conn.request("HEAD", "/page", &[md]);
    assert_eq!(head.header("content-type"), Some("text/markdown; charset=utf-8"));
    assert_eq!(head.header("x-markdown-tokens"), None);
    // Compressed, 324,000 characters of Markdown fit the hold: the estimate
    // is of the Markdown, the bound of the bytes sent.
    let gz = conn.request("GET", "/big", &[md, ("Accept-Encoding", "gzip")]);
    let text = gunzip(&gz.body);
    assert_eq!(text.matches("word word").count(), 4000 * 8);
    assert_eq!(gz.header("x-markdown-tokens"), Some(estimate(&text).as_str()));
    // And the connection goes on: the next response is whole.
    let again = conn.request("GET", "/page", &[md]);
    assert_eq!((body(&again).as_str(), again.header("x-markdown-tokens")), (PAGE_MD, Some("44")));
}

/// An empty page (Content-Length 0, or chunked with no data) and a page
/// with no text are converted and answered at once on a kept-alive
/// connection (the 15 s read timeout would fail a response held until the
/// next request), and the connection goes on.
#[test]
fn an_empty_page_is_not_held() {
    let origin = origin();
    let proxy = Proxy::start(origin.addr, RULES);
    let md = ("Accept", "text/markdown");
    for path in ["/empty", "/empty-chunked", "/blank"] {
        let mut conn = Conn::with_timeout(proxy.addr, Duration::from_secs(15));
        let r = conn.request("GET", path, &[md]);
        assert_eq!((r.status, r.complete), (200, true), "{path}: {}", r.text());
        assert_eq!(r.header("content-type"), Some("text/markdown; charset=utf-8"), "{path}");
        let again = conn.request("GET", "/page", &[md]);
        assert_eq!(body(&again), PAGE_MD, "{path}");
    }
}

/// Past the connection's 256 KiB hold, a converted page streams before
/// its origin has finished (the page is never held whole), without
/// `x-markdown-tokens`, and arrives whole and in order.
#[test]
fn markdown_past_the_hold_streams_without_the_estimate() {
    let gate = std::sync::Arc::new((std::sync::Mutex::new(false), std::sync::Condvar::new()));
    let first = format!("<main>{}", para().repeat(4000)).into_bytes();
    let origin = Origin::start(vec![(
        "/gated",
        Route::ok(HTML, "").body(Body::Gated {
            first,
            rest: b"<p>the end</p></main>".to_vec(),
            gate: gate.clone(),
            sized: false,
        }),
    )]);
    let proxy = Proxy::start(origin.addr, RULES);
    let mut stream = std::net::TcpStream::connect(proxy.addr).unwrap_or_else(|e| panic!("connect: {e}"));
    let _ = stream.set_read_timeout(Some(Duration::from_secs(20)));
    let req = "GET /gated HTTP/1.1\r\nHost: test.example\r\nAccept: text/markdown\r\nConnection: close\r\n\r\n";
    let _ = stream.write_all(req.as_bytes());
    let mut got = Vec::new();
    let mut buf = [0u8; 65536];
    // More than the hold arrives while the origin waits.
    while got.len() <= 256 * 1024 {
        use std::io::Read;
        let n = stream.read(&mut buf).unwrap_or_else(|e| panic!("no Markdown before the origin finished: {e}"));
        assert!(n > 0, "closed early");
        got.extend_from_slice(&buf[..n]);
    }
    {
        let (lock, cvar) = &*gate;
        *lock.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = true;
        cvar.notify_all();
    }
    got.extend(crawlgate_testkit::http::read_to_close(&mut stream));
    let r = RawResponse::parse(&got, false).unwrap_or_else(|| panic!("no response"));
    assert!(r.complete);
    assert_eq!(r.header("content-type"), Some("text/markdown; charset=utf-8"));
    assert_eq!(r.header("x-markdown-tokens"), None);
    let want = format!("{}\n\nthe end\n", vec!["word ".repeat(16).trim_end().to_string(); 4000].join("\n\n"));
    let text = body(&r);
    assert!(text.ends_with(&want), "{} characters", text.len());
    assert_eq!(text.matches("word").count(), 4000 * 16);
}

/// An origin's own `x-markdown-tokens` and `x-markdown-refused` on a page
/// crawlgate converts are dropped: the client gets crawlgate's estimate
/// alone (the page is `/page`'s, so 44 as there).
#[test]
fn markdown_fields_are_crawlgates_own() {
    let origin = origin();
    let proxy = Proxy::start(origin.addr, RULES);
    let r = get(proxy.addr, "/forged", &[("Accept", "text/markdown")]);
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("text/markdown; charset=utf-8"));
    assert_eq!(r.header("x-markdown-tokens"), Some("44"));
    assert_eq!(r.header("x-markdown-refused"), None);
}
