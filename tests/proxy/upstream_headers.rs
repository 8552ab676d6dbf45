//! What the proxy does with an origin's response headers beyond the policy
//! headers: hop-by-hop fields are not forwarded (RFC 9110 section 7.6.1),
//! a 204 carries no Content-Length, and a legacy `Robots-Tag` value is
//! moved where it cannot spoil the structured field.

use std::net::SocketAddr;
use std::process::Command;

use crawlgate_e2e::origin::{Body, Origin, Route};
use crawlgate_e2e::proxy::{base_policy, free_port, Proxy};

use crate::support::{Conn, BROWSER_UA, POLICY};

fn hop_origin() -> Origin {
    Origin::start(vec![
        (
            "/hop",
            Route::ok("text/plain", "hop\n")
                .header("Connection", "X-Secret, X-Other")
                .header("X-Secret", "internal token")
                .header("X-Other", "o")
                .header("X-Kept", "k")
                .header("Keep-Alive", "timeout=5, max=100")
                .header("Proxy-Connection", "keep-alive")
                .header("Upgrade", "h2c")
                .header("TE", "trailers")
                .header("Trailer", "X-Checksum")
                .header("Proxy-Authenticate", "Basic realm=\"origin\""),
        ),
        (
            "/many",
            (0..500)
                .fold(Route::ok("text/plain", "many\n"), |r, i| r.header("X-Robots-Tag", &format!("bot{i}: noindex"))),
        ),
        ("/empty", Route { status: 204, headers: vec![], body: Body::Fixed(Vec::new()) }),
        ("/drafts/legacy", Route::ok("text/plain", "legacy\n").header("Robots-Tag", "googlebot: nosnippet")),
    ])
}

/// A proxy on the shared test policy with h2c on.
fn h2c_proxy(origin: &Origin) -> Proxy {
    let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let admin: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let policy = base_policy(addr, admin, origin.addr).replace("threads = 2\n", "threads = 2\nh2c = true\n") + POLICY;
    Proxy::start_with(addr, admin, &policy)
}

const HOP: [&str; 8] =
    ["x-secret", "x-other", "keep-alive", "proxy-connection", "upgrade", "te", "trailer", "proxy-authenticate"];

#[test]
fn hop_by_hop_headers_are_not_forwarded_over_http1_or_h2() {
    let origin = hop_origin();
    let proxy = h2c_proxy(&origin);
    let mut conn = Conn::open(proxy.addr);
    let resp = conn.request("GET", "/hop", &[("User-Agent", BROWSER_UA)]);
    assert_eq!(resp.status, 200);
    assert_eq!(resp.body, b"hop\n");
    assert_eq!(resp.header("x-kept"), Some("k"));
    assert_eq!(resp.header("connection"), Some("keep-alive"));
    for name in HOP {
        assert_eq!(resp.header(name), None, "{name} forwarded over HTTP/1.1: {:?}", resp.headers);
    }
    // The connection is still usable.
    assert_eq!(conn.request("GET", "/hop", &[("User-Agent", BROWSER_UA)]).status, 200);

    let out = Command::new("curl")
        .args(["-s", "--http2-prior-knowledge", "--max-time", "10", "-D", "-", "-o", "/dev/null", "-A", BROWSER_UA])
        .arg(proxy.url("/hop"))
        .output()
        .expect("cannot run curl");
    let head = String::from_utf8_lossy(&out.stdout).to_ascii_lowercase();
    assert!(head.starts_with("http/2 200"), "{head}");
    assert!(head.contains("\r\nx-kept: k\r\n"), "{head}");
    for name in HOP {
        assert!(!head.contains(&format!("\r\n{name}:")), "{name} forwarded over h2:\n{head}");
    }
}

#[test]
fn a_204_has_no_content_length() {
    let origin = hop_origin();
    let proxy = h2c_proxy(&origin);
    let mut conn = Conn::open(proxy.addr);
    let resp = conn.request("GET", "/empty", &[("User-Agent", BROWSER_UA)]);
    assert_eq!(resp.status, 204);
    assert_eq!(resp.header("content-length"), None, "{:?}", resp.headers);
    assert_eq!(conn.request("GET", "/hop", &[("User-Agent", BROWSER_UA)]).status, 200);
}

#[test]
fn a_legacy_robots_tag_from_the_origin_moves_to_x_robots_tag() {
    let origin = hop_origin();
    let proxy = h2c_proxy(&origin);
    let mut conn = Conn::open(proxy.addr);
    let resp = conn.request("GET", "/drafts/legacy", &[("User-Agent", BROWSER_UA)]);
    assert_eq!(resp.status, 200);
    let values =
        |name: &str| -> Vec<&str> { resp.headers.iter().filter(|(k, _)| k == name).map(|(_, v)| v.as_str()).collect() };
    // Robots-Tag is one structured List a strict parser reads whole.
    assert_eq!(values("robots-tag"), ["*;noindex;nosnippet, GPTBot;noai"]);
    // The origin's value is kept, where its syntax is the expected one.
    assert_eq!(values("x-robots-tag"), ["googlebot: nosnippet", "noindex, nosnippet", "gptbot: noai"]);
}

#[test]
fn a_response_pingora_cannot_parse_is_blamed_on_the_response_not_on_reachability() {
    let origin = hop_origin();
    let proxy = h2c_proxy(&origin);
    let mut conn = Conn::open(proxy.addr);
    let resp = conn.request("GET", "/many", &[("User-Agent", BROWSER_UA)]);
    assert_eq!(resp.status, 502);
    assert_eq!(resp.body, b"502 Bad Gateway: the origin server sent a response that cannot be forwarded\n");
}

#[test]
fn two_proxies_pointing_at_each_other_stop_the_loop() {
    // A's upstream is B and B's is A: `check` cannot see it (different
    // ports); each request carries A's Via entry back to A, which refuses it.
    let a: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let b: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let admin_a: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let admin_b: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let proxy_a = Proxy::start_with(a, admin_a, &(base_policy(a, admin_a, b) + POLICY));
    let _proxy_b = Proxy::start_with(b, admin_b, &(base_policy(b, admin_b, a) + POLICY));
    let mut conn = Conn::open(proxy_a.addr);
    let resp = conn.request("GET", "/public/page", &[("User-Agent", BROWSER_UA)]);
    assert_eq!(resp.status, 508);
    assert_eq!(
        resp.body,
        b"508 Loop Detected: this request already passed through this proxy; check upstream.servers\n"
    );
}
