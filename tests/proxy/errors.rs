//! Origin failures become short 502/504 responses; the proxy stays up.

use crawlgate_e2e::origin::{Body, Origin, Route};
use crawlgate_e2e::proxy::{free_port, Proxy};

use crate::support::{get, header, BROWSER_UA};

#[test]
fn origin_timeout_is_a_504_and_refused_connection_a_502() {
    let origin = Origin::start(vec![
        ("/slow", Route::ok("text/plain", "").body(Body::Hang)),
        ("/ok", Route::ok("text/plain", "ok\n")),
    ]);
    let mut proxy = Proxy::start(origin.addr, "");
    let slow = get(&proxy.url("/slow"), BROWSER_UA);
    assert_eq!(slow.status(), 504);
    assert_eq!(header(&slow, "content-type"), "text/plain; charset=utf-8");
    assert_eq!(slow.text().unwrap_or_default(), "504 Gateway Timeout: the origin server did not answer in time\n");
    assert_eq!(get(&proxy.url("/ok"), BROWSER_UA).status(), 200);
    let log = proxy.log();
    assert!(
        log.lines().any(|l| l.contains(" path=/slow ") && l.contains(" status=504 ") && l.contains(" error=")),
        "{log}"
    );
    assert!(proxy.is_running());

    // A port nothing listens on: handed out to this test only, never bound
    // (a released `bind :0` port could go to another test's origin).
    let dead_addr: std::net::SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let proxy2 = Proxy::start(dead_addr, "");
    let resp = get(&proxy2.url("/"), BROWSER_UA);
    assert_eq!(resp.status(), 502);
    let body = resp.text().unwrap_or_default();
    assert_eq!(body, "502 Bad Gateway: the origin server could not be reached\n");
}

#[test]
fn hostile_requests_do_not_crash_the_proxy() {
    let origin = Origin::start(vec![("/", Route::ok("text/plain", "ok\n"))]);
    let mut proxy = Proxy::start(origin.addr, "[[group]]\nuser_agents = [\"*\"]\ndisallow = [\"/x\"]\n");
    let nasty: [&[u8]; 6] = [
        b"GET / HTTP/1.1\r\nHost: a\r\nUser-Agent: \xff\xfe\x00bot\r\n\r\n",
        b"GET /%00 HTTP/1.1\r\nHost: a\r\n\r\n",
        b"GET * HTTP/1.1\r\nHost: a\r\n\r\n",
        b"GET http://other.example/x HTTP/1.1\r\nHost: a\r\n\r\n",
        b"BREW /pot HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello",
        b"GET /\r\n\r\n",
    ];
    for req in nasty {
        let _ = crawlgate_testkit::http::exchange(proxy.addr, req, std::time::Duration::from_millis(500));
        assert!(proxy.is_running(), "proxy died on {:?}", String::from_utf8_lossy(req));
    }
    assert_eq!(get(&proxy.url("/"), BROWSER_UA).status(), 200);
}
