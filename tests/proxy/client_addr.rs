//! The client address: forwarded headers and the PROXY protocol are
//! believed only from `trusted_proxies`, and what the origin is told
//! follows the same rule.

use std::net::{IpAddr, SocketAddr};

use crawlgate_e2e::origin::{Origin, Route};
use crawlgate_e2e::proxy::{base_policy, free_port, Proxy};
use crawlgate_testkit::http::Conn;

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
}

fn origin() -> Origin {
    Origin::start(vec![("/", Route::ok("text/plain", "home\n"))])
}

/// A proxy on 127.0.0.1 with `extra` appended to its policy.
fn start(origin: &Origin, server_extra: &str, extra: &str) -> Proxy {
    let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap_or_else(|e| panic!("{e}"));
    let admin: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap_or_else(|e| panic!("{e}"));
    let policy = base_policy(addr, admin, origin.addr).replacen("[server]\n", &format!("[server]\n{server_extra}"), 1);
    Proxy::start_with(addr, admin, &format!("{policy}{extra}\n[[group]]\nuser_agents = [\"*\"]\nallow = [\"/\"]\n"))
}

/// The X-Forwarded-For and Forwarded the origin saw on its last request.
fn forwarded_seen(origin: &Origin) -> (Option<String>, Option<String>) {
    let seen = origin.seen();
    let last = seen.last().unwrap_or_else(|| panic!("the origin saw nothing"));
    (last.header("x-forwarded-for").map(str::to_string), last.header("forwarded").map(str::to_string))
}

#[test]
fn an_untrusted_client_cannot_choose_the_address_the_origin_sees() {
    let origin = origin();
    let proxy = start(&origin, "", "");
    let mut c = Conn::from_source(ip("127.0.0.3"), proxy.addr);
    let r = c.request("GET", "/", &[("X-Forwarded-For", "66.249.66.1"), ("Forwarded", "for=66.249.66.1")]);
    assert_eq!(r.status, 200);
    assert_eq!(forwarded_seen(&origin), (Some("127.0.0.3".into()), None));
}

#[test]
fn a_trusted_proxy_chain_is_extended() {
    let origin = origin();
    let proxy = start(&origin, "trusted_proxies = [\"127.0.0.2\"]\n", "");
    let mut trusted = Conn::from_source(ip("127.0.0.2"), proxy.addr);
    let r = trusted.request("GET", "/", &[("X-Forwarded-For", "203.0.113.9"), ("Forwarded", "for=203.0.113.9")]);
    assert_eq!(r.status, 200);
    // The client's own Forwarded is not the chosen header: it is dropped.
    assert_eq!(forwarded_seen(&origin), (Some("203.0.113.9, 127.0.0.2".into()), None));
    // The same headers from a peer outside the list are dropped.
    let mut other = Conn::from_source(ip("127.0.0.4"), proxy.addr);
    let r = other.request("GET", "/", &[("X-Forwarded-For", "203.0.113.9"), ("Forwarded", "for=203.0.113.9")]);
    assert_eq!(r.status, 200);
    assert_eq!(forwarded_seen(&origin), (Some("127.0.0.4".into()), None));
}

/// The client address fields the origin saw on its last request, in the
/// order it got them (names lowercase).
fn address_fields_seen(origin: &Origin) -> Vec<(String, String)> {
    const ADDRESS_FIELDS: [&str; 8] = [
        "forwarded",
        "x-forwarded-for",
        "x-real-ip",
        "true-client-ip",
        "cf-connecting-ip",
        "x-client-ip",
        "fastly-client-ip",
        "x-cluster-client-ip",
    ];
    let seen = origin.seen();
    let last = seen.last().unwrap_or_else(|| panic!("the origin saw nothing"));
    last.headers.iter().filter(|(n, _)| ADDRESS_FIELDS.contains(&n.as_str())).cloned().collect()
}

fn fields(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter().map(|(n, v)| ((*n).to_owned(), (*v).to_owned())).collect()
}

/// Every address spelling a client can forge, in mixed case.
const FORGED: &[(&str, &str)] = &[
    ("X-Real-IP", "66.249.66.1"),
    ("true-client-ip", "66.249.66.1"),
    ("CF-Connecting-IP", "66.249.66.1"),
    ("X-CLIENT-IP", "66.249.66.1"),
    ("Fastly-Client-IP", "66.249.66.1"),
    ("X-Cluster-Client-IP", "66.249.66.1"),
    ("Forwarded", "for=66.249.66.1"),
    ("X-Forwarded-For", "66.249.66.1"),
];

#[test]
fn an_untrusted_clients_real_ip_headers_do_not_reach_the_origin() {
    let origin = origin();
    let proxy = start(&origin, "trusted_proxies = [\"127.0.0.2\"]\n", "");
    let mut c = Conn::from_source(ip("127.0.0.3"), proxy.addr);
    assert_eq!(c.request("GET", "/", FORGED).status, 200);
    assert_eq!(address_fields_seen(&origin), fields(&[("x-forwarded-for", "127.0.0.3")]));
    // A trusted peer's are removed too: only its X-Forwarded-For is kept.
    let mut t = Conn::from_source(ip("127.0.0.2"), proxy.addr);
    assert_eq!(t.request("GET", "/", FORGED).status, 200);
    assert_eq!(address_fields_seen(&origin), fields(&[("x-forwarded-for", "66.249.66.1, 127.0.0.2")]));
}

#[test]
fn with_forwarded_chosen_only_forwarded_is_read_and_extended() {
    let origin = origin();
    let proxy = start(&origin, "trusted_proxies = [\"127.0.0.2\"]\nclient_address_header = \"forwarded\"\n", "");
    let mut t = Conn::from_source(ip("127.0.0.2"), proxy.addr);
    let r = t.request(
        "GET",
        "/",
        &[
            ("X-Forwarded-For", "66.249.66.1"),
            ("forwarded", "for=\"[2001:db8::1]\";proto=https"),
            ("X-Real-IP", "66.249.66.1"),
        ],
    );
    assert_eq!(r.status, 200);
    assert_eq!(
        address_fields_seen(&origin),
        fields(&[("forwarded", "for=\"[2001:db8::1]\";proto=https, for=127.0.0.2")])
    );
    let line = crawlgate_e2e::proxy::wait_for("the access line", std::time::Duration::from_secs(10), || {
        proxy.log().lines().find(|l| l.starts_with("time=")).map(str::to_owned)
    });
    assert!(line.contains(" client_ip=2001:db8::1 forwarded_for=127.0.0.2 "), "{line}");
    // An untrusted peer's Forwarded is replaced by its own address.
    let mut u = Conn::from_source(ip("127.0.0.3"), proxy.addr);
    assert_eq!(u.request("GET", "/", &[("Forwarded", "for=66.249.66.1")]).status, 200);
    assert_eq!(address_fields_seen(&origin), fields(&[("forwarded", "for=127.0.0.3")]));
}

const V2_SIGNATURE: &[u8; 12] = b"\r\n\r\n\0\r\nQUIT\n";

#[test]
fn the_proxy_protocol_is_read_from_trusted_peers_only() {
    let origin = origin();
    let proxy = start(&origin, "proxy_protocol = true\ntrusted_proxies = [\"127.0.0.2\"]\n", "");
    // Version 1, then two requests on the one connection: both are the
    // header's client.
    let mut v1 = Conn::from_source(ip("127.0.0.2"), proxy.addr);
    v1.send(b"PROXY TCP4 192.0.2.1 127.0.0.1 56324 80\r\n");
    assert_eq!(v1.request("GET", "/", &[]).status, 200);
    assert_eq!(forwarded_seen(&origin).0.as_deref(), Some("192.0.2.1"));
    assert_eq!(v1.request("GET", "/", &[("X-Forwarded-For", "198.51.100.1")]).status, 200);
    assert_eq!(forwarded_seen(&origin).0.as_deref(), Some("192.0.2.1"));
    // Version 2, IPv6 source.
    let mut v2 = Conn::from_source(ip("127.0.0.2"), proxy.addr);
    let mut header = V2_SIGNATURE.to_vec();
    header.extend([0x21, 0x21, 0, 36]);
    let src: std::net::Ipv6Addr = "2001:db8::7".parse().unwrap_or_else(|e| panic!("{e}"));
    header.extend(src.octets());
    header.extend([0u8; 16]);
    header.extend([0x1f, 0x90, 0, 80]);
    v2.send(&header);
    assert_eq!(v2.request("GET", "/", &[]).status, 200);
    assert_eq!(forwarded_seen(&origin).0.as_deref(), Some("2001:db8::7"));
    // A LOCAL header (a balancer's health check): the peer itself.
    let mut local = Conn::from_source(ip("127.0.0.2"), proxy.addr);
    local.send(b"PROXY UNKNOWN\r\n");
    assert_eq!(local.request("GET", "/", &[]).status, 200);
    assert_eq!(forwarded_seen(&origin).0.as_deref(), Some("127.0.0.2"));
    // From an untrusted peer the header is not read: it is a bad request.
    let mut untrusted = Conn::from_source(ip("127.0.0.3"), proxy.addr);
    untrusted.send(b"PROXY TCP4 192.0.2.1 127.0.0.1 56324 80\r\n");
    assert_eq!(untrusted.request("GET", "/", &[]).status, 400);
    // A trusted peer that sends no header is closed without an answer.
    let mut missing = Conn::from_source(ip("127.0.0.2"), proxy.addr);
    missing.send(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n");
    assert_eq!(missing.read_to_close(), b"");
    let requests = origin.seen().len();
    assert_eq!(requests, 4);
}

#[test]
fn with_proxy_protocol_chosen_no_header_is_read() {
    let origin = origin();
    // The PROXY source is itself in trusted_proxies: under the default
    // choice its X-Forwarded-For would be read.
    let server = "proxy_protocol = true\ntrusted_proxies = [\"127.0.0.2\", \"192.0.2.0/24\"]\nclient_address_header = \"proxy-protocol\"\n";
    let proxy = start(&origin, server, "");
    let mut c = Conn::from_source(ip("127.0.0.2"), proxy.addr);
    c.send(b"PROXY TCP4 192.0.2.1 127.0.0.1 56324 80\r\n");
    let r = c.request("GET", "/", &[("X-Forwarded-For", "66.249.66.1"), ("Forwarded", "for=66.249.66.1")]);
    assert_eq!(r.status, 200);
    assert_eq!(address_fields_seen(&origin), fields(&[("x-forwarded-for", "192.0.2.1")]));
    let line = crawlgate_e2e::proxy::wait_for("the access line", std::time::Duration::from_secs(10), || {
        proxy.log().lines().find(|l| l.starts_with("time=")).map(str::to_owned)
    });
    assert!(line.contains(" client_ip=192.0.2.1 method="), "{line}");
}

/// Behind a balancer that `trusted_proxies` does not list, every claim is
/// verified against the balancer's address: claims from a private or
/// loopback peer carrying `X-Forwarded-For` or `Forwarded` are counted in
/// `crawlgate_untrusted_forwarded_total` and logged once a minute.
#[test]
fn claims_through_an_untrusted_balancer_are_counted_and_logged_once() {
    const UA: &str = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";
    let dir = crawlgate_testkit::temp::TempDir::new("untrusted-forwarder");
    let list = dir.write("google.txt", "66.249.66.0/24\n");
    let origin = origin();
    let verification = format!(
        "[verification]\n\n[verification.lists]\nGooglebot = [\"{}\"]\n\n[[group]]\nuser_agents = [\"Googlebot\"]\nallow = [\"/\"]\n",
        list.display()
    );
    let proxy = start(&origin, "", &verification);
    let mut balancer = Conn::from_source(ip("127.0.0.5"), proxy.addr);
    for fields in [
        [("User-Agent", UA), ("X-Forwarded-For", "66.249.66.1")],
        [("User-Agent", UA), ("Forwarded", "for=66.249.66.1")],
    ] {
        assert_eq!(balancer.request("GET", "/", &fields).status, 200);
    }
    // Not counted: a claim without a forwarded header, a forwarded request
    // that claims nothing.
    assert_eq!(balancer.request("GET", "/", &[("User-Agent", UA)]).status, 200);
    assert_eq!(
        balancer.request("GET", "/", &[("User-Agent", "curl/8"), ("X-Forwarded-For", "66.249.66.1")]).status,
        200
    );
    assert_eq!(proxy.metric("crawlgate_untrusted_forwarded_total"), Some("2".into()));
    let warned: Vec<String> = proxy
        .log()
        .lines()
        .filter(|l| l.contains("Identity claims arrive from 127.0.0.5 with X-Forwarded-For or Forwarded"))
        .map(str::to_owned)
        .collect();
    assert_eq!(warned.len(), 1, "{warned:?}");
    assert!(warned[0].contains("list the proxy in server.trusted_proxies"), "{}", warned[0]);
}
