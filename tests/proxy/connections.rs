//! Client connection limits: idle keep-alive connections and slow headers
//! are cut off, HTTP/2 connections idle out, and connections over
//! `max_connections` are refused while the admin listener still answers.

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::process::Command;
use std::time::Duration;

use crawlgate_e2e::origin::Origin;
use crawlgate_e2e::proxy::{base_policy, free_port, wait_for, Proxy};
use crawlgate_testkit::http::{exchange, Conn};
use crawlgate_testkit::TempDir;

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
/// one client connection is open at the end. (For curl 7.88 with
/// `--http2-prior-knowledge` and several URLs, see
/// [`curl_h2c_with_two_urls`].)
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

/// curl 7.88.1's first bytes with `--http2-prior-knowledge` (captured on
/// the wire): the preface, SETTINGS (max concurrent streams 100, initial
/// window 32 MiB, no push) and a WINDOW_UPDATE of the connection window.
const CURL_OPENING: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\
    \x00\x00\x12\x04\x00\x00\x00\x00\x00\x00\x03\x00\x00\x00\x64\x00\x04\x02\x00\x00\x00\x00\x02\x00\x00\x00\x00\
    \x00\x00\x04\x08\x00\x00\x00\x00\x00\x01\xff\x00\x01";

/// One HTTP/2 frame (RFC 9113 section 4.1).
fn h2_frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = u32::try_from(payload.len()).unwrap().to_be_bytes();
    let mut f = vec![len[1], len[2], len[3], kind, flags];
    f.extend(stream.to_be_bytes());
    f.extend(payload);
    f
}

/// A GET request's HEADERS frame (END_STREAM | END_HEADERS), its fields
/// in HPACK (RFC 7541) without Huffman coding or indexing.
fn h2_get(stream: u32, path: &str) -> Vec<u8> {
    // :method GET and :scheme http are static table entries 2 and 6.
    let mut block = vec![0x82, 0x86];
    let literal = |block: &mut Vec<u8>, s: &str| {
        block.push(u8::try_from(s.len()).unwrap());
        block.extend(s.as_bytes());
    };
    // :path (entry 4) and :authority (entry 1) by name index.
    block.push(0x04);
    literal(&mut block, path);
    block.push(0x01);
    literal(&mut block, "test.example");
    block.push(0x00);
    literal(&mut block, "user-agent");
    literal(&mut block, "curl/7.88.1");
    h2_frame(0x01, 0x05, stream, &block)
}

/// Reads frames until `stream` ends; returns its header block and body.
/// Acknowledges the server's SETTINGS as curl does; a GOAWAY or a
/// RST_STREAM fails the test.
fn h2_response(conn: &mut Conn, stream: u32) -> (Vec<u8>, Vec<u8>) {
    let (mut block, mut body) = (Vec::new(), Vec::new());
    loop {
        let mut head = [0u8; 9];
        conn.stream().read_exact(&mut head).unwrap_or_else(|e| panic!("stream {stream}: {e}"));
        let len = usize::from(head[0]) << 16 | usize::from(head[1]) << 8 | usize::from(head[2]);
        let (kind, flags, id) =
            (head[3], head[4], u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff);
        let mut payload = vec![0u8; len];
        conn.stream().read_exact(&mut payload).unwrap();
        match kind {
            0x07 | 0x03 => panic!("stream {stream}: frame type {kind} (GOAWAY or RST_STREAM) {payload:?}"),
            0x04 if flags & 0x01 == 0 => conn.send(&h2_frame(0x04, 0x01, 0, &[])),
            0x01 if id == stream => block.extend(&payload),
            0x00 if id == stream => body.extend(&payload),
            _ => {}
        }
        if id == stream && matches!(kind, 0x00 | 0x01) && flags & 0x01 != 0 {
            return (block, body);
        }
    }
}

/// A second request on an h2c connection opened with curl's exact bytes
/// is answered, for a locally served file and a proxied path alike: the
/// proxy's connection wrapper neither loses nor reorders the frames that
/// come after the first response (curl's SETTINGS ACK).
#[test]
fn h2c_second_stream_on_curls_connection_is_answered() {
    let origin = origin();
    let proxy = start(&origin, "h2c = true\n");
    let robots = crate::support::get(&proxy.url("/robots.txt"), "curl/7.88.1").text().unwrap();
    let mut conn = connect(proxy.addr);
    conn.send(&[CURL_OPENING, &h2_get(1, "/robots.txt")].concat());
    let (block, body) = h2_response(&mut conn, 1);
    // 0x88: the static table's `:status: 200` (RFC 7541 appendix A).
    assert_eq!(block.first(), Some(&0x88), "{block:?}");
    assert_eq!(String::from_utf8_lossy(&body), robots);
    for (stream, path, want) in [(3, "/", "home\n"), (5, "/robots.txt", robots.as_str())] {
        conn.send(&h2_get(stream, path));
        let (block, body) = h2_response(&mut conn, stream);
        assert_eq!(block.first(), Some(&0x88), "{path}: {block:?}");
        assert_eq!(String::from_utf8_lossy(&body), want, "{path}");
    }
    assert_eq!(origin.seen().len(), 1);
}

/// curl with two URLs (`-w` prints the HTTP version, new connections and
/// status of each): its exit code, what `-w` printed, and both bodies.
fn curl_two(args: &[&str], first: &str, second: &str) -> (Option<i32>, String, String, String) {
    let dir = TempDir::new("curl");
    let (a, b) = (dir.join("a"), dir.join("b"));
    let out = Command::new("curl")
        .args(["-s", "-k", "--max-time", "10", "-w", "%{http_version} %{num_connects} %{http_code}\\n"])
        .args(args)
        .arg(first)
        .arg("-o")
        .arg(&a)
        .arg(second)
        .arg("-o")
        .arg(&b)
        .output()
        .expect("cannot run curl");
    let read = |p: &std::path::Path| std::fs::read_to_string(p).unwrap_or_default();
    (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned(), read(&a), read(&b))
}

/// The installed curl's version, e.g. (7, 88).
fn curl_version() -> (u32, u32) {
    let out = Command::new("curl").arg("--version").output().expect("cannot run curl");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let v = text.split_whitespace().nth(1).unwrap_or_default();
    let mut parts = v.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0))
}

/// curl reuses one HTTP/2 connection for two URLs over TLS (ALPN h2): the
/// second request is answered on the first connection (`num_connects` 0),
/// a proxied path after a locally served file.
#[test]
fn curl_reuses_one_http2_connection_over_tls() {
    let origin = origin();
    let dir = TempDir::new("tls");
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    let st = Command::new("openssl")
        .args(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost", "-keyout"])
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .expect("cannot run openssl");
    assert!(st.status.success(), "openssl: {}", String::from_utf8_lossy(&st.stderr));
    let tls = addr();
    let proxy = start(
        &origin,
        &format!("tls_listen = [\"{tls}\"]\ntls_cert = \"{}\"\ntls_key = \"{}\"\n", cert.display(), key.display()),
    );
    let robots = crate::support::get(&proxy.url("/robots.txt"), "curl").text().unwrap();
    let (code, summary, a, b) =
        curl_two(&["--http2"], &format!("https://{tls}/robots.txt"), &format!("https://{tls}/"));
    assert_eq!((code, summary.as_str()), (Some(0), "2 1 200\n2 0 200\n"), "{}", proxy.log());
    assert_eq!((a.as_str(), b.as_str()), (robots.as_str(), "home\n"));
}

/// `curl --http2-prior-knowledge URL URL`. curl before 8.0 fails the
/// second URL with exit 16 ("Error in the HTTP2 framing layer") against
/// any h2c server (nginx 1.22 too): on reuse it stacks a second HTTP/2
/// layer on the connection (curl issue 10634, fixed by pull request 10643
/// in curl 8.0.0), sends no second request and closes. With such a curl
/// this test checks that the proxy received exactly one request; with a
/// fixed curl, that both are answered on one connection.
#[test]
fn curl_h2c_with_two_urls() {
    let origin = origin();
    let proxy = start(&origin, "h2c = true\n");
    let robots = crate::support::get(&proxy.url("/robots.txt"), "curl").text().unwrap();
    let (code, summary, a, b) = curl_two(
        &["--http2-prior-knowledge"],
        &format!("http://{}/", proxy.addr),
        &format!("http://{}/robots.txt", proxy.addr),
    );
    if curl_version() >= (8, 0) {
        assert_eq!((code, summary.as_str()), (Some(0), "2 1 200\n2 0 200\n"), "{}", proxy.log());
        assert_eq!((a.as_str(), b.as_str()), ("home\n", robots.as_str()));
    } else {
        assert_eq!((code, summary.as_str(), a.as_str()), (Some(16), "2 1 200\n0 0 000\n", "home\n"));
        assert_eq!(origin.seen().len(), 1);
        let h2_requests = || proxy.log().lines().filter(|l| l.contains("protocol=HTTP/2")).count();
        wait_for("the first request's access log line", PATIENCE, || (h2_requests() == 1).then_some(()));
        std::thread::sleep(Duration::from_millis(200));
        assert_eq!(h2_requests(), 1, "{}", proxy.log());
    }
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
