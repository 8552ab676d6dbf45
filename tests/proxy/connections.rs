//! Client connection limits: idle keep-alive connections and slow headers
//! are cut off, HTTP/2 connections idle out, and connections over
//! `max_connections` are refused while the admin listener still answers.

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::time::Duration;

use crawlgate_e2e::origin::Origin;
use crawlgate_e2e::proxy::{base_policy, free_port, wait_for, Proxy};
use crawlgate_testkit::http::{exchange, Conn};

use crate::support::{origin, POLICY};

/// What the proxy writes to a connection over the cap.
const SERVICE_UNAVAILABLE: &[u8] =
    b"HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\nRetry-After: 1\r\n\r\n";

/// What the proxy writes when a request header is too slow.
const REQUEST_TIMEOUT: &[u8] = b"HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";

/// Upper bound for any wait on the proxy in these tests.
const PATIENCE: Duration = Duration::from_secs(15);

fn addr() -> SocketAddr {
    format!("127.0.0.1:{}", free_port()).parse().unwrap()
}

/// The proxy on [`POLICY`] with `server_keys` added to `[server]`.
fn start(origin: &Origin, server_keys: &str) -> Proxy {
    let (listen, admin) = (addr(), addr());
    let policy =
        base_policy(listen, admin, origin.addr).replacen("[server]\n", &format!("[server]\n{server_keys}"), 1) + POLICY;
    Proxy::start_with(listen, admin, &policy)
}

/// A connection whose reads wait at most [`PATIENCE`].
fn connect(addr: SocketAddr) -> Conn {
    Conn::with_timeout(addr, PATIENCE)
}

const GET_ROBOTS: &[u8] = b"GET /robots.txt HTTP/1.1\r\nHost: test.example\r\n\r\n";

#[test]
fn idle_connections_are_closed_new_or_kept_alive() {
    let origin = origin();
    let proxy = start(&origin, "client_idle_timeout = \"1s\"\nclient_header_timeout = \"2s\"\n");

    // Kept alive after a response: served, then closed with nothing more.
    let mut kept = connect(proxy.addr);
    kept.send(GET_ROBOTS);
    let resp = kept.read_response(false).text();
    assert!(resp.starts_with("HTTP/1.1 200 OK\r\n"), "{resp}");
    assert!(!resp.to_ascii_lowercase().contains("connection: close"), "{resp}");
    assert_eq!(kept.read_to_close(), b"");

    // Requests closer together than the timeout keep one connection open.
    let mut busy = connect(proxy.addr);
    for _ in 0..4 {
        busy.send(GET_ROBOTS);
        let resp = busy.read_response(false).text();
        assert!(resp.starts_with("HTTP/1.1 200 OK\r\n"), "{resp}");
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(busy.read_to_close(), b"");

    // A new connection that never sends a byte.
    let mut silent = connect(proxy.addr);
    assert_eq!(silent.read_to_close(), b"");

    // Two pipelined requests, then silence: both answered, then closed.
    let mut piped = connect(proxy.addr);
    piped.send(&[GET_ROBOTS, GET_ROBOTS].concat());
    for _ in 0..2 {
        let resp = piped.read_response(false).text();
        assert!(resp.starts_with("HTTP/1.1 200 OK\r\n"), "{resp}");
    }
    assert_eq!(piped.read_to_close(), b"");

    let metrics = crate::support::get(&proxy.admin_url("/metrics"), "test").text().unwrap_or_default();
    assert!(metrics.contains("crawlgate_client_timeouts_total{listener=\"proxy\",phase=\"idle\"} 4"), "{metrics}");
}

#[test]
fn slow_header_is_cut_off_with_408() {
    let origin = origin();
    let proxy = start(&origin, "client_idle_timeout = \"1s\"\nclient_header_timeout = \"2s\"\n");
    let mut conn = connect(proxy.addr);
    let s = conn.stream();
    // One header line every 300 ms, each well inside the idle timeout; 40
    // lines would take 12 s.
    s.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
    s.write_all(b"GET /robots.txt HTTP/1.1\r\nHost: test.example\r\n").expect("write");
    let mut received = Vec::new();
    let mut closed = false;
    let mut lines = 0;
    while lines < 40 {
        if s.write_all(format!("X-Slow-{lines}: a\r\n").as_bytes()).is_err() {
            break;
        }
        lines += 1;
        let mut buf = [0u8; 1024];
        match s.read(&mut buf) {
            Ok(0) => {
                closed = true;
                break;
            }
            Ok(n) => received.extend_from_slice(&buf[..n]),
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
            Err(_) => break,
        }
    }
    assert!(lines < 40, "a header trickled for 12 s was not cut off; log:\n{}", proxy.log());
    assert!(closed, "the connection was reset instead of closed after {lines} lines; got {received:?}");
    assert_eq!(String::from_utf8_lossy(&received), String::from_utf8_lossy(REQUEST_TIMEOUT));
    let metrics = crate::support::get(&proxy.admin_url("/metrics"), "test").text().unwrap_or_default();
    assert!(metrics.contains("crawlgate_client_timeouts_total{listener=\"proxy\",phase=\"header\"} 1"), "{metrics}");
}

#[test]
fn connections_over_the_cap_are_refused_and_admin_still_answers() {
    let origin = origin();
    let proxy =
        start(&origin, "client_idle_timeout = \"30s\"\nclient_header_timeout = \"30s\"\nmax_connections = 50\n");
    let open = "crawlgate_client_connections{listener=\"proxy\"}";
    // The readiness probes' connections (the test's and the proxy's own,
    // which connects until `/readyz` turns 200) are gone first. They may
    // still wait in the listen backlog while the gauge reads 0; connections
    // are accepted in order, so once a request on a new connection is
    // answered and that connection is the only one open, they have come
    // and gone.
    let ready = || crate::support::get(&proxy.admin_url("/readyz"), "test").status().as_u16() == 200;
    wait_for("the proxy to be ready", PATIENCE, || ready().then_some(()));
    let mut marker = connect(proxy.addr);
    marker.send(GET_ROBOTS);
    assert!(marker.read_response(false).text().starts_with("HTTP/1.1 200"));
    wait_for("only the marker connection open", PATIENCE, || {
        (proxy.metric(open).as_deref() == Some("1")).then_some(())
    });
    drop(marker);
    wait_for("no open proxy connection", PATIENCE, || (proxy.metric(open).as_deref() == Some("0")).then_some(()));
    let mut idle: Vec<Conn> = (0..50).map(|_| connect(proxy.addr)).collect();
    wait_for("50 open proxy connections", PATIENCE, || (proxy.metric(open).as_deref() == Some("50")).then_some(()));

    let refused = exchange(proxy.addr, GET_ROBOTS, PATIENCE);
    assert_eq!(String::from_utf8_lossy(&refused), String::from_utf8_lossy(SERVICE_UNAVAILABLE));
    assert_eq!(proxy.metric("crawlgate_connections_refused_total{listener=\"proxy\"}").as_deref(), Some("1"));

    let health = exchange(proxy.admin, b"GET /healthz HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n", PATIENCE);
    let health = String::from_utf8_lossy(&health);
    assert!(health.starts_with("HTTP/1.1 200 OK\r\n") && health.ends_with("\r\n\r\nok\n"), "{health}");

    idle.truncate(40);
    wait_for("40 open proxy connections", PATIENCE, || (proxy.metric(open).as_deref() == Some("40")).then_some(()));
    let served =
        exchange(proxy.addr, b"GET /robots.txt HTTP/1.1\r\nHost: test.example\r\nConnection: close\r\n\r\n", PATIENCE);
    let served = String::from_utf8_lossy(&served);
    assert!(served.starts_with("HTTP/1.1 200 OK\r\n") && served.contains("User-agent: GPTBot"), "{served}");
    drop(idle);
}

#[test]
fn idle_h2c_connection_is_closed() {
    let origin = origin();
    let proxy = start(&origin, "h2c = true\nclient_idle_timeout = \"1s\"\nclient_header_timeout = \"2s\"\n");
    let mut s = connect(proxy.addr);
    // The connection preface and an empty SETTINGS frame (RFC 9113
    // sections 3.4 and 6.5), then nothing.
    s.send(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00");
    let frames = s.read_to_close();
    // The server's own SETTINGS frame came first: this was HTTP/2.
    assert!(frames.len() >= 9 && frames[3] == 0x04 && frames[4] == 0x00, "{frames:?}");

    // A client that never sends its preface on an h2c listener.
    let mut silent = connect(proxy.addr);
    assert_eq!(silent.read_to_close(), b"");
}

/// An HTTP/2 client (hyper, through reqwest) sends several requests on its
/// connection (RFC 9113 section 5): every one is answered over HTTP/2, and
/// one client connection is open at the end. (curl 7.88 with
/// `--http2-prior-knowledge` and several URLs closes its own connection
/// after the first stream, which looked like a server fault.)
#[test]
fn h2c_answers_several_requests_from_one_client() {
    let origin = origin();
    let proxy = start(&origin, "h2c = true\n");
    let client = reqwest::blocking::Client::builder().http2_prior_knowledge().build().unwrap();
    for path in ["/robots.txt", "/", "/robots.txt"] {
        let resp = client.get(format!("http://{}{path}", proxy.addr)).send().unwrap();
        assert_eq!(resp.version(), reqwest::Version::HTTP_2, "{path}");
        assert_eq!(resp.status(), 200, "{path}");
        assert!(!resp.text().unwrap().is_empty(), "{path}");
    }
    let open = "crawlgate_client_connections{listener=\"proxy\"}";
    assert_eq!(proxy.metric(open).as_deref(), Some("1"));
}

#[test]
fn changed_limits_need_a_restart_and_keep_applying() {
    let origin = origin();
    let proxy = start(&origin, "client_idle_timeout = \"1s\"\nmax_connections = 50\n");
    let policy = std::fs::read_to_string(&proxy.policy_path).unwrap();
    let changed = policy.replacen("client_idle_timeout = \"1s\"", "client_idle_timeout = \"1m\"", 1).replacen(
        "max_connections = 50",
        "max_connections = 60",
        1,
    ) + "\n[[group]]\nuser_agents = [\"ReloadBot\"]\ndisallow = [\"/\"]\n";
    // Written beside it and renamed over it: the watcher never reads half a file.
    let tmp = proxy.dir.join("next.toml");
    std::fs::write(&tmp, changed).unwrap();
    std::fs::rename(&tmp, &proxy.policy_path).unwrap();
    let deadline = std::time::Instant::now() + PATIENCE;
    let status = loop {
        let status: serde_json::Value = reqwest::blocking::get(proxy.admin_url("/status"))
            .and_then(|r| r.text())
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default();
        if status["generation"].as_u64().is_some_and(|g| g >= 2) {
            break status;
        }
        assert!(std::time::Instant::now() < deadline, "no reload; status {status}; log:\n{}", proxy.log());
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(
        status["restart_required"],
        serde_json::json!(["server.client_idle_timeout", "server.max_connections"]),
        "{status}"
    );
    // The running limits are the ones read at start.
    let mut kept = connect(proxy.addr);
    kept.send(GET_ROBOTS);
    let resp = kept.read_response(false).text();
    assert!(resp.contains("User-agent: ReloadBot"), "{resp}");
    assert_eq!(kept.read_to_close(), b"");
}

/// Resident memory per idle connection: opens 2,000 connections that send
/// nothing and prints the growth of the proxy's VmRSS. Run with
/// `ulimit -n 8192; cargo test -p crawlgate-e2e --test proxy idle_connection_memory -- --ignored --nocapture`.
#[test]
#[ignore]
fn idle_connection_memory() {
    const N: u64 = 2000;
    let origin = origin();
    let proxy = start(&origin, "client_idle_timeout = \"5m\"\nmax_connections = 4096\n");
    std::thread::sleep(Duration::from_millis(500));
    let before = proxy.memory_kb("VmRSS:").unwrap_or(0);
    let open = "crawlgate_client_connections{listener=\"proxy\"}";
    let conns: Vec<Conn> = (0..N).map(|_| connect(proxy.addr)).collect();
    wait_for("all connections open", PATIENCE, || (proxy.metric(open) == Some(N.to_string())).then_some(()));
    std::thread::sleep(Duration::from_millis(500));
    let after = proxy.memory_kb("VmRSS:").unwrap_or(0);
    println!("VmRSS {before} kB -> {after} kB: {} bytes per idle connection", (after - before) * 1024 / N);
    // The same after one request on each (buffers of a kept-alive connection).
    let mut conns = conns;
    for c in &mut conns {
        c.send(GET_ROBOTS);
    }
    for c in &mut conns {
        let resp = c.read_response(false).text();
        assert!(resp.starts_with("HTTP/1.1 200 OK\r\n"), "{resp}");
    }
    std::thread::sleep(Duration::from_millis(500));
    let kept = proxy.memory_kb("VmRSS:").unwrap_or(0);
    println!("VmRSS {before} kB -> {kept} kB: {} bytes per kept-alive connection", (kept - before) * 1024 / N);
    drop(conns);
}
