//! The cache of converted Markdown (issue 37 item 2) against a real origin
//! that answers conditional requests (nginx serving static files): a page
//! is converted once per version, each reuse revalidated by the origin,
//! never across hosts, never for a request with credentials, never for a
//! page the origin marks private.

use std::net::SocketAddr;
use std::time::Duration;

use crawlgate_e2e::nginx::Nginx;
use crawlgate_e2e::proxy::Proxy;
use crawlgate_testkit::http::{exchange, RawResponse};

const V1: &str =
    "<html><head><title>One</title></head><body><main><p>First <a href=\"/x\">version</a>.</p></main></body></html>\n";
const V2: &str =
    "<html><head><title>Two</title></head><body><main><p>The second version, longer.</p></main></body></html>\n";

const RULES: &str = "[[group]]\nuser_agents = [\"*\"]\nallow = [\"/\"]\n\n[markdown]\n";

fn nginx() -> Nginx {
    let nginx = Nginx::start(|addr, dir| {
        let d = dir.display();
        format!(
            "    types {{ text/html html; }}\n    charset utf-8;\n\
             \x20   server {{\n        listen {addr};\n        root {d}/root;\n\
             \x20       location /private/ {{ add_header Cache-Control private; }}\n    }}\n"
        )
    });
    std::fs::create_dir_all(nginx.dir().join("root/private")).unwrap_or_else(|e| panic!("{e}"));
    nginx.dir().write("root/page.html", V1);
    nginx.dir().write("root/private/page.html", V1);
    nginx
}

fn get(addr: SocketAddr, path: &str, host: &str, extra: &[(&str, &str)]) -> RawResponse {
    let mut req = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nAccept: text/markdown\r\nConnection: close\r\n");
    for (k, v) in extra {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    let raw = exchange(addr, req.as_bytes(), Duration::from_secs(20));
    RawResponse::parse(&raw, false)
        .unwrap_or_else(|| panic!("no response head in {:?}", String::from_utf8_lossy(&raw[..raw.len().min(500)])))
}

fn body(r: &RawResponse) -> String {
    String::from_utf8_lossy(&r.body).into_owned()
}

/// The cache's counters: (hits, misses, entries).
fn counters(proxy: &Proxy) -> (String, String, String) {
    let m = |s: &str| proxy.metric(s).unwrap_or_default();
    (
        m("crawlgate_markdown_cache_hits_total"),
        m("crawlgate_markdown_cache_misses_total"),
        m("crawlgate_markdown_cache_entries"),
    )
}

fn wait_entries(proxy: &Proxy, n: &str) {
    crawlgate_e2e::proxy::wait_for("the cache entry", Duration::from_secs(10), || {
        (proxy.metric("crawlgate_markdown_cache_entries").as_deref() == Some(n)).then_some(())
    });
}

#[test]
fn a_page_is_converted_once_per_version_and_revalidated() {
    let nginx = nginx();
    let proxy = Proxy::start(nginx.addr, RULES);
    let first = get(proxy.addr, "/page.html", "www.example.com", &[]);
    assert_eq!(first.header("content-type"), Some("text/markdown; charset=utf-8"));
    let want = "---\ntitle: \"One\"\nurl: \"http://www.example.com/page.html\"\n---\n\nFirst [version](http://www.example.com/x).\n";
    assert_eq!(body(&first), want);
    wait_entries(&proxy, "1");
    assert_eq!(counters(&proxy), ("0".into(), "1".into(), "1".into()));

    // The same page again: the origin answers the conditional GET with
    // 304, the Markdown comes from the cache, framed by its length.
    let hit = get(proxy.addr, "/page.html", "www.example.com", &[]);
    assert_eq!(hit.status, 200);
    assert_eq!(body(&hit), want);
    assert_eq!(hit.header("content-type"), Some("text/markdown; charset=utf-8"));
    assert_eq!(hit.header("content-length"), Some(want.len().to_string().as_str()));
    assert_eq!(hit.header("x-markdown-tokens"), Some(want.chars().count().div_ceil(4).to_string().as_str()));
    assert_eq!(hit.header("etag"), first.header("etag"));
    assert_eq!(hit.all("vary"), first.all("vary"));
    assert_eq!(counters(&proxy), ("1".into(), "1".into(), "1".into()));

    // Another Host: another entry, its own links.
    let other = get(proxy.addr, "/page.html", "mirror.example", &[]);
    assert!(body(&other).ends_with("First [version](http://mirror.example/x).\n"), "{}", body(&other));
    wait_entries(&proxy, "2");
    assert_eq!(counters(&proxy), ("1".into(), "2".into(), "2".into()));

    // Credentials: neither answered from the cache nor counted.
    let cookie = get(proxy.addr, "/page.html", "www.example.com", &[("Cookie", "session=1")]);
    assert_eq!(body(&cookie), want);
    assert_eq!(counters(&proxy), ("1".into(), "2".into(), "2".into()));

    // A new version: the origin's 200 to the conditional GET drops the
    // entry; the page is converted anew, then served from the cache.
    std::thread::sleep(Duration::from_millis(1100));
    nginx.dir().write("root/page.html", V2);
    let changed = get(proxy.addr, "/page.html", "www.example.com", &[]);
    let want2 = "---\ntitle: \"Two\"\nurl: \"http://www.example.com/page.html\"\n---\n\nThe second version, longer.\n";
    assert_eq!(body(&changed), want2);
    assert_ne!(changed.header("etag"), first.header("etag"));
    wait_entries(&proxy, "2");
    let again = get(proxy.addr, "/page.html", "www.example.com", &[]);
    assert_eq!(body(&again), want2);
    assert_eq!(counters(&proxy), ("2".into(), "3".into(), "2".into()));
}

#[test]
fn a_private_page_is_never_kept() {
    let nginx = nginx();
    let proxy = Proxy::start(nginx.addr, RULES);
    for _ in 0..2 {
        let r = get(proxy.addr, "/private/page.html", "www.example.com", &[]);
        assert_eq!(r.header("content-type"), Some("text/markdown; charset=utf-8"));
        assert_eq!(r.header("cache-control"), Some("private"));
    }
    assert_eq!(counters(&proxy), ("0".into(), "2".into(), "0".into()));
}
