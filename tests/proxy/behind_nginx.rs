//! crawlgate behind a real nginx (Debian's `nginx-light`, installed by
//! `scripts/prereqs`) in its usual configuration: `X-Forwarded-For
//! $proxy_add_x_forwarded_for`, every other client header passed through
//! unchanged. nginx is trusted (`trusted_proxies = ["127.0.0.1"]`); clients
//! connect to it from 127.0.0.2-4 with a Googlebot User-Agent and forge
//! every spelling of a client address header. Only X-Forwarded-For, as
//! nginx extended it, may move the address crawlgate verifies and logs, and
//! only it reaches the origin.

use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::time::Duration;

use crawlgate_e2e::nginx::Nginx;
use crawlgate_e2e::origin::{Origin, Route};
use crawlgate_e2e::proxy::{base_policy, free_port, wait_for, Proxy};
use crawlgate_testkit::http::Conn;
use crawlgate_testkit::temp::TempDir;

const GOOGLEBOT_UA: &str = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";

/// The client address fields an origin commonly reads (lowercase).
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

/// nginx proxying to `upstream`, as an operator puts it in front.
fn nginx(upstream: SocketAddr) -> Nginx {
    Nginx::start(|addr, _| {
        format!(
            "    server {{\n        listen {addr};\n        location / {{\n\
             \x20           proxy_pass http://{upstream};\n\
             \x20           proxy_http_version 1.1;\n\
             \x20           proxy_set_header Host $host;\n\
             \x20           proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;\n\
             \x20       }}\n    }}\n"
        )
    })
}

/// crawlgate trusting nginx (127.0.0.1), with Googlebot verified by IP
/// against a list holding the addresses the clients forge and 127.0.0.3.
fn crawlgate(origin: &Origin, list: &Path) -> Proxy {
    let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap_or_else(|e| panic!("{e}"));
    let admin: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap_or_else(|e| panic!("{e}"));
    let policy = base_policy(addr, admin, origin.addr).replacen(
        "[server]\n",
        "[server]\ntrusted_proxies = [\"127.0.0.1\"]\n",
        1,
    );
    let rules = format!(
        "[verification]\n\n[verification.lists]\nGooglebot = [\"{}\"]\n\n\
         [[group]]\nuser_agents = [\"*\"]\nallow = [\"/\"]\n\n\
         [[group]]\nuser_agents = [\"Googlebot\"]\nallow = [\"/\"]\nverify = \"ip\"\n",
        list.display()
    );
    Proxy::start_with(addr, admin, &format!("{policy}{rules}"))
}

/// The access line of the request for `path` (written after its response).
fn access_line(proxy: &Proxy, path: &str) -> String {
    let needle = format!(" path={path} ");
    wait_for(&format!("the access line for {path}"), Duration::from_secs(10), || {
        proxy.log().lines().find(|l| l.starts_with("time=") && l.contains(&needle)).map(str::to_owned)
    })
}

/// `key=value` of a logfmt line (up to the next space; values here are
/// never quoted).
fn field<'l>(line: &'l str, key: &str) -> Option<&'l str> {
    let start = line.find(&format!(" {key}="))? + key.len() + 2;
    line[start..].split(' ').next()
}

/// The client address fields the origin saw on its request for `path`.
fn address_fields_seen(origin: &Origin, path: &str) -> Vec<(String, String)> {
    let seen = origin.seen();
    let req = seen.iter().find(|s| s.target == path).unwrap_or_else(|| panic!("the origin never saw {path}"));
    req.headers.iter().filter(|(n, _)| ADDRESS_FIELDS.contains(&n.as_str())).cloned().collect()
}

/// Header lines as `(name, value)`.
type Lines = &'static [(&'static str, &'static str)];

/// A client source, the header lines it forges, the `client_ip` and
/// `verification` crawlgate logs, and the address fields the origin gets.
type Case = (&'static str, Lines, &'static str, &'static str, Lines);

#[test]
fn behind_nginx_only_its_x_forwarded_for_is_believed_and_forwarded() {
    let dir = TempDir::new("behind-nginx");
    let list = dir.write("google.txt", "66.249.66.1/32\n66.249.66.2/32\n2001:db8::1/128\n127.0.0.3/32\n");
    #[rustfmt::skip]
    let cases: &[Case] = &[
        ("127.0.0.2", &[("Forwarded", "for=66.249.66.1")], "127.0.0.2", "spoofed(ip)",
            &[("x-forwarded-for", "127.0.0.2, 127.0.0.1")]),
        ("127.0.0.2", &[("Forwarded", "for=\"[2001:db8::1]\"")], "127.0.0.2", "spoofed(ip)",
            &[("x-forwarded-for", "127.0.0.2, 127.0.0.1")]),
        ("127.0.0.2", &[("fOrWaRdEd", "For=66.249.66.1;proto=https")], "127.0.0.2", "spoofed(ip)",
            &[("x-forwarded-for", "127.0.0.2, 127.0.0.1")]),
        ("127.0.0.4", &[("Forwarded", "for=66.249.66.1"), ("Forwarded", "for=66.249.66.2")], "127.0.0.4", "spoofed(ip)",
            &[("x-forwarded-for", "127.0.0.4, 127.0.0.1")]),
        // nginx appends the real peer: the forged entry is left of it.
        ("127.0.0.2", &[("X-Forwarded-For", "66.249.66.1")], "127.0.0.2", "spoofed(ip)",
            &[("x-forwarded-for", "66.249.66.1, 127.0.0.2, 127.0.0.1")]),
        ("127.0.0.4", &[("x-forwarded-for", "66.249.66.1"), ("X-FORWARDED-FOR", "66.249.66.2")], "127.0.0.4", "spoofed(ip)",
            &[("x-forwarded-for", "66.249.66.1, 66.249.66.2, 127.0.0.4, 127.0.0.1")]),
        ("127.0.0.2", &[("X-Real-IP", "66.249.66.1")], "127.0.0.2", "spoofed(ip)",
            &[("x-forwarded-for", "127.0.0.2, 127.0.0.1")]),
        ("127.0.0.2", &[("x-REAL-ip", "66.249.66.1"), ("True-Client-IP", "66.249.66.1")], "127.0.0.2", "spoofed(ip)",
            &[("x-forwarded-for", "127.0.0.2, 127.0.0.1")]),
        ("127.0.0.4", &[("CF-Connecting-IP", "66.249.66.1"), ("X-Client-IP", "66.249.66.1"),
            ("Fastly-Client-IP", "66.249.66.1"), ("X-Cluster-Client-IP", "66.249.66.1")], "127.0.0.4", "spoofed(ip)",
            &[("x-forwarded-for", "127.0.0.4, 127.0.0.1")]),
        // A listed client is verified through nginx's X-Forwarded-For.
        ("127.0.0.3", &[("Forwarded", "for=192.0.2.1")], "127.0.0.3", "verified(ip)",
            &[("x-forwarded-for", "127.0.0.3, 127.0.0.1")]),
    ];
    let routes = (0..cases.len()).map(|i| format!("/case/{i}")).collect::<Vec<_>>();
    let origin = Origin::start(routes.iter().map(|p| (p.as_str(), Route::ok("text/plain", "ok\n"))).collect());
    let proxy = crawlgate(&origin, &list);
    let nginx = nginx(proxy.addr);
    for (i, &(from, forged, client_ip, verification, fields)) in cases.iter().enumerate() {
        let path = &routes[i];
        let source: IpAddr = from.parse().unwrap_or_else(|e| panic!("{from}: {e}"));
        let mut headers = vec![("User-Agent", GOOGLEBOT_UA)];
        headers.extend_from_slice(forged);
        let r = Conn::from_source(source, nginx.addr).request("GET", path, &headers);
        assert_eq!(r.status, 200, "{path} {forged:?}; nginx:\n{}", nginx.error_log());
        let line = access_line(&proxy, path);
        assert_eq!(field(&line, "client_ip"), Some(client_ip), "{forged:?}: {line}");
        assert_eq!(field(&line, "verification"), Some(verification), "{forged:?}: {line}");
        let want: Vec<(String, String)> = fields.iter().map(|(n, v)| ((*n).to_owned(), (*v).to_owned())).collect();
        assert_eq!(address_fields_seen(&origin, path), want, "{forged:?}");
    }
}

/// A self-signed certificate for localhost in `dir`, as paths
/// (certificate, key).
fn self_signed(dir: &TempDir) -> (std::path::PathBuf, std::path::PathBuf) {
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    let out = std::process::Command::new("openssl")
        .args(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2"])
        .args(["-subj", "/CN=localhost", "-keyout"])
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .unwrap_or_else(|e| panic!("cannot run openssl: {e}"));
    assert!(out.status.success(), "openssl: {}", String::from_utf8_lossy(&out.stderr));
    (cert, key)
}

/// The `X-Forwarded-Proto` lines the origin saw on its request for `path`.
fn proto_seen(origin: &Origin, path: &str) -> Vec<String> {
    let seen = origin.seen();
    let req = seen.iter().find(|s| s.target == path).unwrap_or_else(|| panic!("the origin never saw {path}"));
    req.headers.iter().filter(|(n, _)| n == "x-forwarded-proto").map(|(_, v)| v.clone()).collect()
}

const PAGE: &str = "<!doctype html><html><head><title>Front</title></head>\n\
<body><main><h1>Front</h1>\n<p>See <a href=\"/authors/jane\">Jane</a>.</p></main></body></html>\n";

/// nginx terminates TLS in front (the layout `docs/behind-a-web-server.md`
/// advises) and states the scheme with `proxy_set_header X-Forwarded-Proto
/// $scheme`: crawlgate, trusting it, keeps `https` for the origin and
/// writes `https://` in Markdown's `url:` and links. A client that is not
/// a trusted proxy cannot set the scheme (its `https` becomes `http`),
/// nor can a client of nginx (nginx overwrites the field).
#[test]
fn behind_nginx_terminating_tls_the_origin_and_markdown_get_https() {
    let dir = TempDir::new("behind-nginx-tls");
    let (cert, key) = self_signed(&dir);
    let origin = Origin::start(vec![
        ("/page", Route::ok("text/html; charset=utf-8", PAGE)),
        ("/via-nginx", Route::ok("text/plain", "ok\n")),
        ("/direct", Route::ok("text/plain", "ok\n")),
    ]);
    let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap_or_else(|e| panic!("{e}"));
    let admin: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap_or_else(|e| panic!("{e}"));
    let policy = base_policy(addr, admin, origin.addr).replacen(
        "[server]\n",
        "[server]\ntrusted_proxies = [\"127.0.0.1\"]\n",
        1,
    );
    let rules = "[[group]]\nuser_agents = [\"*\"]\nallow = [\"/\"]\n\n[markdown]\npaths = [\"/page\"]\n";
    let proxy = Proxy::start_with(addr, admin, &format!("{policy}{rules}"));
    let upstream = proxy.addr;
    let nginx = Nginx::start(|listen, _| {
        format!(
            "    server {{\n        listen {listen} ssl;\n\
             \x20       ssl_certificate {};\n        ssl_certificate_key {};\n\
             \x20       location / {{\n\
             \x20           proxy_pass http://{upstream};\n\
             \x20           proxy_http_version 1.1;\n\
             \x20           proxy_set_header Host $host;\n\
             \x20           proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;\n\
             \x20           proxy_set_header X-Forwarded-Proto $scheme;\n\
             \x20       }}\n    }}\n",
            cert.display(),
            key.display()
        )
    });
    let curl = |path: &str, extra: &[&str]| {
        let out = std::process::Command::new("curl")
            .args([
                "-sSk",
                "--http1.1",
                "--max-time",
                "20",
                "-H",
                "Host: news.example",
                "-H",
                "X-Forwarded-Proto: http",
            ])
            .args(extra)
            .arg(format!("https://{}{path}", nginx.addr))
            .output()
            .unwrap_or_else(|e| panic!("cannot run curl: {e}"));
        assert!(
            out.status.success(),
            "curl {path}: {}; nginx:\n{}",
            String::from_utf8_lossy(&out.stderr),
            nginx.error_log()
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert_eq!(curl("/via-nginx", &[]), "ok\n");
    assert_eq!(proto_seen(&origin, "/via-nginx"), ["https"]);
    let md = curl("/page", &["-H", "Accept: text/markdown"]);
    assert_eq!(
        md,
        "---\ntitle: \"Front\"\nurl: \"https://news.example/page\"\n---\n\n# Front\n\nSee [Jane](https://news.example/authors/jane).\n"
    );
    assert_eq!(proto_seen(&origin, "/page"), ["https"]);
    // Straight to crawlgate from an address it does not trust: the
    // connection's scheme, whatever the client says.
    let r = Conn::from_source("127.0.0.2".parse().unwrap_or_else(|e| panic!("{e}")), proxy.addr).request(
        "GET",
        "/direct",
        &[("X-Forwarded-Proto", "https"), ("Forwarded", "for=192.0.2.1;proto=https")],
    );
    assert_eq!(r.status, 200);
    assert_eq!(proto_seen(&origin, "/direct"), ["http"]);
}
