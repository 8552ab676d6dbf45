//! Request targets: what the origin receives is the target the decision was
//! made on, or a form every origin resolves to the same resource; anything
//! else is a 400. Proven against a path-resolving origin (Python's
//! `http.server` serving a directory), which serves `private/x` for a target
//! that does not start with `/`.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crawlgate_e2e::origin::{Body, Origin, Route};
use crawlgate_e2e::proxy::{base_policy, free_port, wait_for, Proxy};
use crawlgate_testkit::http::{exchange, RawResponse};
use crawlgate_testkit::TempDir;

const SECRET: &str = "TOP SECRET private file";
const PUBLIC: &str = "public file";

/// Python's `http.server` serving a directory with `private/x` and
/// `public/y`; killed on drop.
struct FileOrigin {
    addr: SocketAddr,
    child: Child,
    /// Served by the child; removed after it is stopped.
    _dir: TempDir,
}

impl FileOrigin {
    fn start() -> FileOrigin {
        let dir = TempDir::new("files");
        for (file, body) in [("private/x", SECRET), ("public/y", PUBLIC)] {
            let path = dir.join(file);
            std::fs::create_dir_all(path.parent().unwrap_or(dir.path())).unwrap();
            std::fs::write(&path, body).unwrap();
        }
        let port = free_port();
        let child = Command::new("python3")
            .args(["-m", "http.server", &port.to_string(), "--bind", "127.0.0.1", "--directory"])
            .arg(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("cannot start python3 -m http.server");
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        wait_for("python3 http.server to listen", Duration::from_secs(20), || TcpStream::connect(addr).ok());
        FileOrigin { addr, child, _dir: dir }
    }
}

impl Drop for FileOrigin {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const RULES: &str = r#"
[[group]]
user_agents = ["GPTBot"]
disallow = ["/private/"]
enforce = "block"
"#;

/// Status code and body of one raw HTTP/1.1 request.
fn send(proxy: &Proxy, method: &str, target: &str, headers: &str) -> (u16, String) {
    let request = format!("{method} {target} HTTP/1.1\r\nHost: site.test\r\n{headers}Connection: close\r\n\r\n");
    let raw = exchange(proxy.addr, request.as_bytes(), Duration::from_secs(5));
    let status = RawResponse::parse(&raw, method == "HEAD").map_or(0, |r| r.status);
    (status, String::from_utf8_lossy(&raw).into_owned())
}

#[test]
fn no_spelling_of_a_target_fetches_a_blocked_file() {
    let origin = FileOrigin::start();
    let proxy = Proxy::start(origin.addr, RULES);
    let gptbot = "User-Agent: GPTBot/1.2\r\n";
    // The origin serves both files to anyone who reaches it.
    let (status, text) = send(&proxy, "GET", "/public/y", gptbot);
    assert_eq!(status, 200, "{text}");
    assert!(text.ends_with(PUBLIC), "{text}");
    let (status, text) = send(&proxy, "GET", "/private/x", "User-Agent: Mozilla/5.0\r\n");
    assert_eq!(status, 200, "{text}");
    assert!(text.ends_with(SECRET), "{text}");

    let corpus: &[(&str, u16)] = &[
        // Not origin-form, absolute-form or asterisk-form: 400.
        ("private/x", 400),
        ("%2Fprivate/x", 400),
        ("x:/private/x", 400),
        ("./private/x", 400),
        ("../private/x", 400),
        ("private%2Fx", 400),
        ("ftp://site.test/private/x", 400),
        ("site.test:80", 400),
        ("*", 400),
        ("http:///private/x", 400),
        // A fragment: no request target has one (RFC 9112 section 3.2).
        ("#/private/x", 400),
        ("/private/x#f", 400),
        ("/public/y#/private/x", 400),
        ("http://site.test/public/y#f", 400),
        // Decided on the resource they name: blocked.
        ("/private/x", 403),
        ("/./private/x", 403),
        ("/public/../private/x", 403),
        ("/public/..%2Fprivate/x", 403),
        ("/%70rivate/x", 403),
        ("//private/x", 403),
        ("/private;p/x", 403),
        ("/public/%2E%2E/private/x", 403),
        ("http://site.test/private/x", 403),
        ("HTTP://site.test//private/x", 403),
        ("http://site.test/public/../private/x", 403),
        ("https://site.test/private/x?q=1", 403),
        // An authority that disagrees with Host: the authority wins (RFC
        // 9112 section 3.2.2) and the path is decided.
        ("https://other.test:1/private/x?q=1", 403),
    ];
    let mut wrong = Vec::new();
    for (target, want) in corpus {
        let (status, text) = send(&proxy, "GET", target, gptbot);
        if status != *want || text.contains(SECRET) {
            wrong.push(format!("{target:?}: want {want}, got {status}:\n{text}"));
        }
    }
    assert!(wrong.is_empty(), "targets that were not refused as expected:\n{}", wrong.join("\n"));

    // An allowed absolute-form target reaches the file: the origin got the
    // origin-form target, which every server resolves the same way.
    let (status, text) = send(&proxy, "GET", "http://site.test/public/y", gptbot);
    assert_eq!(status, 200, "{text}");
    assert!(text.ends_with(PUBLIC), "{text}");
    // The 400 for a fragment says why (Pingora drops the fragment from the
    // target it parses: `#/private/x` used to be decided and forwarded as `/`).
    let (status, text) = send(&proxy, "GET", "#/private/x", gptbot);
    assert_eq!(status, 400, "{text}");
    assert!(
        text.ends_with("400 Bad Request: request target contains '#' (a fragment is not part of a request target)\n"),
        "{text}"
    );
    // Its access line names the target as sent, fragment included.
    let line = wait_for("the fragment's access line", Duration::from_secs(10), || {
        proxy.log().lines().find(|l| l.starts_with("time=") && l.contains("#/private/x")).map(str::to_owned)
    });
    assert!(line.contains("status=400"), "{line}");
    // OPTIONS * is forwarded as `*` (http.server implements no OPTIONS: 501).
    let (status, text) = send(&proxy, "OPTIONS", "*", gptbot);
    assert_eq!(status, 501, "{text}");
}

#[test]
fn two_user_agent_fields_are_refused() {
    let origin = FileOrigin::start();
    let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let admin: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let policy = base_policy(addr, admin, origin.addr).replace("threads = 2\n", "threads = 2\nh2c = true\n") + RULES;
    let proxy = Proxy::start_with(addr, admin, &policy);
    for headers in [
        "User-Agent: Mozilla/5.0\r\nUser-Agent: GPTBot/1.2\r\n",
        "User-Agent: GPTBot/1.2\r\nUser-Agent: Mozilla/5.0\r\n",
    ] {
        let (status, text) = send(&proxy, "GET", "/private/x", headers);
        assert_eq!(status, 400, "{text}");
        assert!(text.ends_with("400 Bad Request: more than one User-Agent header field\n"), "{text}");
    }
    // HTTP/2 (h2c) as well: curl sends both header fields.
    let out = Command::new("curl")
        .args(["-s", "--http2-prior-knowledge", "--max-time", "10", "-o", "/dev/null", "-w", "%{http_code}"])
        .args(["-H", "User-Agent: Mozilla/5.0", "-H", "User-Agent: GPTBot/1.2"])
        .arg(proxy.url("/private/x"))
        .output()
        .expect("cannot run curl");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "400");
}

#[test]
fn pipelined_requests_are_each_decided_and_answered_in_order() {
    let origin = FileOrigin::start();
    let proxy = Proxy::start(origin.addr, RULES);
    let one = |target: &str| format!("GET {target} HTTP/1.1\r\nHost: site.test\r\nUser-Agent: GPTBot/1.2\r\n\r\n");
    let mut batch = one("/public/y") + &one("/private/x") + &one("/robots.txt") + &one("/public/y");
    batch.push_str("GET /public/y HTTP/1.1\r\nHost: site.test\r\nUser-Agent: GPTBot/1.2\r\nConnection: close\r\n\r\n");
    let raw = exchange(proxy.addr, batch.as_bytes(), Duration::from_secs(5));
    let text = String::from_utf8_lossy(&raw);
    let statuses: Vec<&str> =
        text.match_indices("HTTP/1.").map(|(i, _)| &text[i + 9..i + 12]).filter(|s| s.parse::<u16>().is_ok()).collect();
    assert_eq!(statuses, ["200", "403", "200", "200", "200"], "{text}");
    assert!(!text.contains(SECRET), "{text}");
}

/// A request Pingora sends again (its pooled origin connection was closed
/// under it) goes out with the target the decision was made on, not the
/// client's spelling of it.
#[test]
fn a_retried_request_keeps_the_decided_target() {
    let dropped = Arc::new(AtomicBool::new(false));
    let origin = Origin::start(vec![
        ("/a", Route::ok("text/plain", "ok\n")),
        (
            "/b",
            Route::ok("text/plain", "ok\n")
                .body(Body::DropOnceOnReuse { body: b"ok\n".to_vec(), dropped: dropped.clone() }),
        ),
    ]);
    let proxy = Proxy::start(origin.addr, RULES);
    let keep = "GET /a HTTP/1.1\r\nHost: site.test\r\nUser-Agent: GPTBot/1.2\r\n\r\n";
    let last =
        "GET http://site.test/b HTTP/1.1\r\nHost: site.test\r\nUser-Agent: GPTBot/1.2\r\nConnection: close\r\n\r\n";
    // One client connection, two requests in turn: the second finds the
    // first's origin connection in Pingora's pool.
    let mut client = TcpStream::connect(proxy.addr).unwrap();
    client.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    client.write_all(keep.as_bytes()).unwrap();
    let mut first = [0u8; 256];
    let n = client.read(&mut first).unwrap();
    assert!(first[..n].starts_with(b"HTTP/1.1 200"), "{}", String::from_utf8_lossy(&first[..n]));
    client.write_all(last.as_bytes()).unwrap();
    let mut rest = Vec::new();
    let _ = client.read_to_end(&mut rest);
    let text = String::from_utf8_lossy(&rest);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(dropped.load(Ordering::SeqCst), "the origin connection was not reused");
    let targets: Vec<String> = origin.seen().into_iter().map(|s| s.target).collect();
    assert_eq!(targets, ["/a", "/b", "/b"]);
}

/// With `origin_paths = "windows"` (an IIS origin, case-insensitive and
/// taking `\` and `%5C` as `/`), no spelling of a blocked path reaches it;
/// an allowed one goes out as the client spelled it.
#[test]
fn a_windows_origin_gets_no_spelling_of_a_blocked_path() {
    let origin = Origin::start(vec![
        ("/private/x", Route::ok("text/plain", "private\n")),
        ("/Public/Y", Route::ok("text/plain", "public\n")),
    ]);
    let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let admin: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let policy =
        base_policy(addr, admin, origin.addr).replace("threads = 2\n", "threads = 2\norigin_paths = \"windows\"\n");
    let proxy = Proxy::start_with(addr, admin, &(policy + RULES));
    let gptbot = "User-Agent: GPTBot/1.2\r\n";
    for target in ["/PRIVATE/x", "/private%5cx", "/Private%5CX", "/public%5C..%5Cprivate/x", "/private\\x"] {
        let (status, text) = send(&proxy, "GET", target, gptbot);
        assert_eq!(status, 403, "{target}: {text}");
    }
    assert_eq!(origin.seen().len(), 0, "{:?}", origin.seen());
    let (status, text) = send(&proxy, "GET", "/Public/Y", gptbot);
    assert_eq!(status, 200, "{text}");
    let targets: Vec<String> = origin.seen().into_iter().map(|s| s.target).collect();
    assert_eq!(targets, ["/Public/Y"]);
}

/// An absolute-form request whose Host names another authority is decided
/// on its target, with the target's authority as Host (RFC 9112 section
/// 3.2.2), and gets exactly one access log line (Pingora used to refuse it
/// with a 400 of its own, before any hook, and nothing was logged).
#[test]
fn an_absolute_form_target_overrides_host_and_is_logged_once() {
    let origin = Origin::start(vec![("/b", Route::ok("text/plain", "ok\n"))]);
    let proxy = Proxy::start(origin.addr, RULES);
    let gptbot = "User-Agent: GPTBot/1.2\r\n";
    let (status, text) = send(&proxy, "GET", "http://other.test:1/private/x", gptbot);
    assert_eq!(status, 403, "{text}");
    let (status, text) = send(&proxy, "GET", "http://other.test:1/b", gptbot);
    assert_eq!(status, 200, "{text}");
    let seen = origin.seen();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!((seen[0].target.as_str(), seen[0].header("host")), ("/b", Some("other.test:1")));
    let lines = wait_for("two access lines", Duration::from_secs(10), || {
        let lines: Vec<String> = proxy.log().lines().filter(|l| l.starts_with("time=")).map(str::to_owned).collect();
        (lines.len() >= 2).then_some(lines)
    });
    assert_eq!(lines.len(), 2, "{lines:?}");
    for (line, status, path) in [(&lines[0], "status=403", "path=/private/x"), (&lines[1], "status=200", "path=/b")] {
        assert!(line.contains(status) && line.contains(path) && line.contains("host=other.test:1"), "{line}");
    }
}

/// The same for an absolute-form request whose header is longer than a
/// read and arrives in pieces: its whole header is read before Pingora
/// parses it.
#[test]
fn a_long_absolute_form_header_in_pieces_is_decided_and_logged_once() {
    let origin = Origin::start(vec![("/b", Route::ok("text/plain", "ok\n"))]);
    let proxy = Proxy::start(origin.addr, RULES);
    let pad = "x".repeat(3000);
    for (target, want) in [("http://other.test:1/private/x", "403"), ("http://other.test:1/b", "200")] {
        let mut client = TcpStream::connect(proxy.addr).unwrap();
        client.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        client.write_all(format!("GET {target} HTTP/1.1\r\nHost: site.test\r\n").as_bytes()).unwrap();
        std::thread::sleep(Duration::from_millis(100));
        let rest = format!("User-Agent: GPTBot/1.2\r\nX-Pad: {pad}\r\nConnection: close\r\n\r\n");
        client.write_all(rest.as_bytes()).unwrap();
        let mut response = Vec::new();
        let _ = client.read_to_end(&mut response);
        let text = String::from_utf8_lossy(&response);
        assert!(text.starts_with(&format!("HTTP/1.1 {want}")), "{target}: {text}");
    }
    let seen = origin.seen();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!((seen[0].target.as_str(), seen[0].header("host")), ("/b", Some("other.test:1")));
    let lines = wait_for("two access lines", Duration::from_secs(10), || {
        let lines: Vec<String> = proxy.log().lines().filter(|l| l.starts_with("time=")).map(str::to_owned).collect();
        (lines.len() >= 2).then_some(lines)
    });
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(lines[0].contains("status=403") && lines[1].contains("status=200"), "{lines:?}");
}

/// Reading an absolute-form header whole keeps the header timeout: one
/// trickled a line at a time is cut off with the usual 408.
#[test]
fn a_slow_absolute_form_header_is_still_cut_off_with_408() {
    let origin = Origin::start(vec![("/b", Route::ok("text/plain", "ok\n"))]);
    let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let admin: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let keys = "threads = 2\nclient_idle_timeout = \"1s\"\nclient_header_timeout = \"2s\"\n";
    let proxy =
        Proxy::start_with(addr, admin, &(base_policy(addr, admin, origin.addr).replace("threads = 2\n", keys) + RULES));
    let mut s = TcpStream::connect(proxy.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
    s.write_all(b"GET http://other.test/b HTTP/1.1\r\nHost: site.test\r\n").unwrap();
    let (mut received, mut lines, mut closed) = (Vec::new(), 0, false);
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
    assert!(closed, "closed after {lines} lines? got {received:?}");
    assert_eq!(
        String::from_utf8_lossy(&received),
        "HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
    );
    assert_eq!(origin.seen().len(), 0);
}
