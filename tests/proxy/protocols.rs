//! HTTP/2 over TLS (self-signed certificate made for the test) and h2c
//! answer exactly as HTTP/1.1 does. The client is curl, which speaks all
//! three; the certificate comes from the openssl command.

use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;

use crawlgate_e2e::proxy::{base_policy, free_port, Proxy};
use crawlgate_testkit::TempDir;

use crawlgate_e2e::origin::{Origin, Route};

use crate::support::{BROWSER_UA, GPTBOT_UA, POLICY};

/// One response as curl saw it: protocol version, status, lower-case
/// header lines (without the ones that differ by protocol) and body.
#[derive(Debug, PartialEq, Eq)]
struct Seen {
    version: String,
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

/// Headers that legitimately differ between HTTP/1.1 and HTTP/2 or between
/// two requests.
const VOLATILE: &[&str] = &["date", "connection", "transfer-encoding", "keep-alive"];

fn curl(args: &[&str], url: &str, ua: &str) -> Seen {
    let dir = TempDir::new("curl");
    let head = dir.join("head");
    let body = dir.join("body");
    let out = Command::new("curl")
        .args(["-s", "-k", "--max-time", "10", "-A", ua, "-D"])
        .arg(&head)
        .arg("-o")
        .arg(&body)
        .args(["-w", "%{http_version} %{http_code}"])
        .args(args)
        .arg(url)
        .output()
        .expect("cannot run curl");
    let summary = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "curl {args:?} {url} failed: {summary} {}", String::from_utf8_lossy(&out.stderr));
    let (version, status) = summary.split_once(' ').unwrap_or(("", ""));
    let head = std::fs::read_to_string(&head).unwrap_or_default();
    let mut headers: Vec<(String, String)> = head
        .lines()
        .skip(1)
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .filter(|(k, _)| !VOLATILE.contains(&k.as_str()))
        .collect();
    headers.sort();
    Seen {
        version: version.to_owned(),
        status: status.parse().unwrap_or(0),
        headers,
        body: std::fs::read(&body).unwrap_or_default(),
    }
}

fn self_signed(dir: &Path) -> (String, String) {
    let cert = dir.join("cert.pem");
    let key = dir.join("key.pem");
    let st = Command::new("openssl")
        .args(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost"])
        .args(["-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1", "-keyout"])
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .expect("cannot run openssl");
    assert!(st.status.success(), "openssl: {}", String::from_utf8_lossy(&st.stderr));
    (cert.display().to_string(), key.display().to_string())
}

fn addr() -> SocketAddr {
    format!("127.0.0.1:{}", free_port()).parse().unwrap()
}

/// Requests whose answers must not depend on the protocol: locally served
/// files, a block, a forwarded page with policy headers, a violation, an
/// HTML page with injected metas (its Content-Length grown to match).
const CASES: &[(&str, &str)] = &[
    ("/robots.txt", BROWSER_UA),
    ("/agents.txt", BROWSER_UA),
    ("/private/x", GPTBOT_UA),
    ("/public/page", GPTBOT_UA),
    ("/public/page", BROWSER_UA),
    ("/private/x", BROWSER_UA),
    ("/pages/a.html", BROWSER_UA),
];

const PAGE: &str = "<!doctype html><html><head><title>A</title></head><body><p>A</p></body></html>\n";

const INJECT: &str = "\n[[robots_tag]]\npath = \"/pages/\"\nrules = [\"noindex\"]\nhtml = \"inject\"\n";

#[test]
fn http2_over_tls_and_h2c_answer_as_http1() {
    let origin = Origin::start(vec![
        ("/public/page", Route::ok("text/plain", "public page\n")),
        ("/private/x", Route::ok("text/plain", "private x\n")),
        ("/pages/a.html", Route::ok("text/html; charset=utf-8", PAGE)),
    ]);
    let dir = TempDir::new("tls");
    let (cert, key) = self_signed(dir.path());
    let (plain, tls, admin) = (addr(), addr(), addr());
    let policy = base_policy(plain, admin, origin.addr).replace(
        "[server]\n",
        &format!("[server]\nh2c = true\ntls_listen = [\"{tls}\"]\ntls_cert = \"{cert}\"\ntls_key = \"{key}\"\n"),
    ) + POLICY
        + INJECT;
    let proxy = Proxy::start_with(plain, admin, &policy);
    for (path, ua) in CASES {
        let h1 = curl(&["--http1.1"], &format!("http://{plain}{path}"), ua);
        let h2c = curl(&["--http2-prior-knowledge"], &format!("http://{plain}{path}"), ua);
        let h2 = curl(&["--http2"], &format!("https://{tls}{path}"), ua);
        let h1_tls = curl(&["--http1.1"], &format!("https://{tls}{path}"), ua);
        assert_eq!(h1.version, "1.1");
        assert_eq!(h2c.version, "2", "h2c {path}: {}", proxy.log());
        assert_eq!(h2.version, "2", "TLS ALPN must offer h2 ({path})");
        assert_eq!(h1_tls.version, "1.1");
        for (name, other) in [("h2c", &h2c), ("h2 over TLS", &h2), ("HTTP/1.1 over TLS", &h1_tls)] {
            assert_eq!(
                (other.status, &other.headers, &other.body),
                (h1.status, &h1.headers, &h1.body),
                "{name} differs from HTTP/1.1 for {path} ({ua})"
            );
        }
    }
    // The cases really exercise different paths of the proxy.
    let statuses: Vec<u16> =
        CASES.iter().map(|(p, ua)| curl(&["--http1.1"], &format!("http://{plain}{p}"), ua).status).collect();
    assert_eq!(statuses, vec![200, 200, 403, 200, 200, 200, 200]);
    let page = curl(&["--http2"], &format!("https://{tls}/pages/a.html"), BROWSER_UA);
    let want = PAGE.replacen("<head>", "<head><meta name=\"robots\" content=\"noindex\">", 1)
        + &" ".repeat("<head></head>".len());
    assert_eq!(String::from_utf8_lossy(&page.body), want);
    assert!(page.headers.contains(&("content-length".to_string(), want.len().to_string())), "{:?}", page.headers);
    drop(proxy);
}
