//! /robots.txt and /agents.txt are answered by the proxy itself.

use std::process::Command;

use crawlgate_e2e::crawlgate_bin;
use crawlgate_e2e::proxy::Proxy;

use crate::support::{get, header, origin, proxy, Conn, BROWSER_UA, GPTBOT_UA};

fn render(proxy: &Proxy, what: &str) -> Vec<u8> {
    let out = Command::new(crawlgate_bin())
        .args(["render", what, "--config"])
        .arg(&proxy.policy_path)
        .output()
        .expect("render");
    assert!(out.status.success(), "render failed: {}", String::from_utf8_lossy(&out.stderr));
    out.stdout
}

#[test]
fn robots_txt_is_the_rendered_policy_with_caching_headers() {
    let origin = origin();
    let proxy = proxy(&origin);
    let expected = render(&proxy, "robots.txt");
    for ua in [BROWSER_UA, GPTBOT_UA, "ExampleBot/2.0", ""] {
        let resp = get(&proxy.url("/robots.txt"), ua);
        assert_eq!(resp.status(), 200, "ua {ua:?}");
        assert_eq!(header(&resp, "content-type"), "text/plain; charset=utf-8");
        assert_eq!(header(&resp, "cache-control"), "public, max-age=7200");
        assert_eq!(header(&resp, "content-length"), expected.len().to_string());
        assert!(header(&resp, "etag").starts_with('"'), "strong etag");
        assert_eq!(resp.bytes().map(|b| b.to_vec()).unwrap_or_default(), expected, "ua {ua:?}");
    }
    assert!(
        origin.seen().iter().all(|s| !s.target.starts_with("/robots.txt")),
        "origin must not be asked for robots.txt"
    );
}

#[test]
fn robots_txt_revalidates_heads_and_keeps_the_connection() {
    let origin = origin();
    let proxy = proxy(&origin);
    let mut conn = Conn::open(proxy.addr);
    let first = conn.request("GET", "/robots.txt", &[]);
    assert_eq!(first.status, 200);
    let etag = first.header("etag").unwrap_or_default().to_string();
    let not_modified = conn.request("GET", "/robots.txt", &[("If-None-Match", &etag)]);
    assert_eq!(not_modified.status, 304);
    assert_eq!(not_modified.header("etag"), Some(etag.as_str()));
    assert!(not_modified.body.is_empty());
    let weak = conn.request("GET", "/robots.txt", &[("If-None-Match", &format!("\"nope\", W/{etag}"))]);
    assert_eq!(weak.status, 304);
    let head = conn.request("HEAD", "/robots.txt", &[]);
    assert_eq!(head.status, 200);
    assert_eq!(head.header("content-length"), Some(first.body.len().to_string().as_str()));
    let changed = conn.request("GET", "/robots.txt", &[("If-None-Match", "\"other\"")]);
    assert_eq!(changed.status, 200);
    assert_eq!(changed.body, first.body);
    let post = conn.request("POST", "/robots.txt", &[("Content-Length", "0")]);
    assert_eq!(post.status, 405);
    assert_eq!(post.header("allow"), Some("GET, HEAD"));
}

#[test]
fn agents_txt_is_served_and_404_when_disabled() {
    let origin = origin();
    let proxy = proxy(&origin);
    let expected = render(&proxy, "agents.txt");
    let resp = get(&proxy.url("/agents.txt"), GPTBOT_UA);
    assert_eq!(resp.status(), 200);
    assert_eq!(header(&resp, "content-type"), "text/plain; charset=utf-8");
    assert_eq!(header(&resp, "cache-control"), "public, max-age=7200");
    assert_eq!(resp.bytes().map(|b| b.to_vec()).unwrap_or_default(), expected);

    let plain = Proxy::start(origin.addr, "[[group]]\nuser_agents = [\"*\"]\ndisallow = [\"/x\"]\n");
    let resp = get(&plain.url("/agents.txt"), BROWSER_UA);
    assert_eq!(resp.status(), 404);
    assert!(origin.seen().iter().all(|s| !s.target.starts_with("/agents.txt")));
}

#[test]
fn robots_txt_survives_an_origin_outage() {
    let origin = origin();
    let proxy = proxy(&origin);
    assert_eq!(get(&proxy.url("/"), BROWSER_UA).status(), 200);
    origin.stop();
    drop(origin);
    // Give the stopped origin's accept loop time to exit (it polls).
    std::thread::sleep(std::time::Duration::from_millis(100));
    let robots = get(&proxy.url("/robots.txt"), BROWSER_UA);
    assert_eq!(robots.status(), 200);
    let agents = get(&proxy.url("/agents.txt"), BROWSER_UA);
    assert_eq!(agents.status(), 200);
    let page = get(&proxy.url("/"), BROWSER_UA);
    assert_eq!(page.status(), 502);
    assert_eq!(page.text().unwrap_or_default(), "502 Bad Gateway: the origin server could not be reached\n");
}
