//! HTML rewriting through the proxy: only 2xx HTML to non-HEAD requests,
//! streamed, compressed origins decoded, the client's compression kept.

use std::io::{Read, Write};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use crawlgate_e2e::origin::{open_gate, Body, Origin, Route};
use crawlgate_e2e::proxy::Proxy;

use crate::support::{client, header, Conn, BROWSER_UA};

const RULES: &str = r#"
[[group]]
user_agents = ["*"]
disallow = ["/nothing-here/"]

[[robots_tag]]
path = "/"
rules = ["noindex", "nosnippet"]
html = "inject"

[[robots_tag]]
path = "/"
agents = ["GPTBot"]
rules = ["noai"]
html = "inject"

[[robots_tag]]
path = "/audit/"
rules = ["noindex"]
html = "audit"

[[robots_tag]]
path = "/enforce/"
rules = ["noindex"]
html = "enforce"
"#;

const PAGE: &str = "<!doctype html>\n<html>\n<head>\n<title>T</title>\n</head>\n<body><p>Hello</p></body>\n</html>\n";
const CONFLICTING: &str = "<!doctype html>\n<html>\n<head>\n<meta name=\"robots\" content=\"index, follow\">\n<title>T</title>\n</head>\n<body><p>Hello</p></body>\n</html>\n";

/// What the inject rules above make of [`PAGE`].
fn injected(page: &str) -> String {
    page.replacen("<head>", &format!("<head>{}", META), 1)
}

const META: &str = "<meta name=\"robots\" content=\"noindex, nosnippet\"><meta name=\"gptbot\" content=\"noai\">";

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let _ = e.write_all(data);
    e.finish().unwrap_or_default()
}

fn gunzip(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let _ = flate2::read::GzDecoder::new(data).read_to_end(&mut out);
    out
}

fn brotli(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    {
        let mut w = brotli::CompressorWriter::new(&mut out, 4096, 5, 22);
        let _ = w.write_all(data);
    }
    out
}

fn html_origin() -> Origin {
    let html = "text/html; charset=utf-8";
    Origin::start(vec![
        (
            "/page.html",
            Route::ok(html, PAGE)
                .header("ETag", "\"v1\"")
                .header("Accept-Ranges", "bytes")
                .header("Content-MD5", "Q2hlY2sgSW50ZWdyaXR5IQ==")
                .header("Repr-Digest", "sha-256=:AAAA:"),
        ),
        (
            "/range.html",
            Route { status: 206, ..Route::ok(html, &PAGE[..20]) }
                .header("Content-Range", format!("bytes 0-19/{}", PAGE.len()).as_str()),
        ),
        (
            "/chunked.html",
            Route::ok(html, "").body(Body::Chunked(vec![
                b"<!doctype html>\n<html>\n<he".to_vec(),
                b"ad>\n<title>T</title>\n</head>\n<body><p>Hel".to_vec(),
                b"lo</p></body>\n</html>\n".to_vec(),
            ])),
        ),
        ("/gzip.html", Route::ok(html, gzip(PAGE.as_bytes())).header("Content-Encoding", "gzip")),
        ("/br.html", Route::ok(html, brotli(PAGE.as_bytes())).header("Content-Encoding", "br")),
        ("/doc.pdf", Route::ok("application/pdf", b"%PDF-1.4 <head> not html".to_vec())),
        ("/missing.html", Route { status: 404, ..Route::ok(html, PAGE) }),
        ("/cached.html", Route { status: 304, ..Route::ok(html, "") }.header("ETag", "\"v1\"")),
        ("/audit/page.html", Route::ok(html, CONFLICTING)),
        ("/enforce/page.html", Route::ok(html, CONFLICTING)),
        ("/utf16.html", Route::ok("text/html; charset=utf-16", b"\xff\xfe<\0h\0".to_vec())),
    ])
}

/// Inject keeps a Content-Length response one: the length grows by
/// `<head>`, the metas and `</head>`, and what the page did not need of it
/// follows its last byte as spaces.
fn injected_sized(page: &str) -> String {
    format!("{}{}", injected(page), " ".repeat("<head></head>".len()))
}

#[test]
fn html_gets_the_policy_metas_and_a_new_length() {
    let origin = html_origin();
    let proxy = Proxy::start(origin.addr, RULES);
    let mut conn = Conn::open(proxy.addr);
    let plain = conn.request("GET", "/page.html", &[("User-Agent", BROWSER_UA)]);
    assert_eq!(plain.status, 200);
    let want = injected_sized(PAGE);
    assert_eq!(plain.header("content-length"), Some(want.len().to_string().as_str()));
    assert_eq!(plain.header("transfer-encoding"), None);
    assert_eq!(plain.header("etag"), Some("W/\"v1\""));
    assert_eq!(plain.header("accept-ranges"), None);
    assert_eq!(plain.header("content-md5"), None);
    assert_eq!(plain.header("repr-digest"), None);
    assert_eq!(String::from_utf8_lossy(&plain.body), want);
    // The connection is still good for the next request.
    let again = conn.request("GET", "/page.html", &[]);
    assert_eq!(String::from_utf8_lossy(&again.body), want);
    // A byte range of the origin's body passes through untouched.
    let range = conn.request("GET", "/range.html", &[("Range", "bytes=0-19")]);
    assert_eq!(range.status, 206);
    assert_eq!(range.body, &PAGE.as_bytes()[..20]);
    drop(conn);
    let resp = client().get(proxy.url("/page.html")).send().unwrap();
    assert_eq!(resp.text().unwrap_or_default(), want);
    // Without a length from the origin the answer is chunked, unpadded.
    let chunked = client().get(proxy.url("/chunked.html")).send().unwrap();
    assert_eq!(header(&chunked, "transfer-encoding"), "chunked");
    assert_eq!(chunked.text().unwrap_or_default(), injected(PAGE));
    // The origin was asked for an identity body.
    assert!(origin.seen().iter().all(|s| s.header("accept-encoding") == Some("identity")));
}

#[test]
fn compressed_origins_are_decoded_and_the_client_gets_compression_back() {
    let origin = html_origin();
    let proxy = Proxy::start(origin.addr, RULES);
    for path in ["/gzip.html", "/br.html"] {
        let identity = client().get(proxy.url(path)).header("Accept-Encoding", "identity").send().unwrap();
        assert_eq!(header(&identity, "content-encoding"), "", "{path}");
        assert_eq!(identity.text().unwrap_or_default(), injected(PAGE), "{path}");
        let gz = client().get(proxy.url(path)).header("Accept-Encoding", "gzip").send().unwrap();
        assert_eq!(header(&gz, "content-encoding"), "gzip", "{path}");
        let body = gz.bytes().map(|b| b.to_vec()).unwrap_or_default();
        assert_eq!(String::from_utf8_lossy(&gunzip(&body)), injected(PAGE), "{path}");
    }
}

/// A rewritten page is compressed for a client that asks: every variant
/// says it was selected by Accept-Encoding, also for a client that asks
/// for no coding (Pingora's compression module is off for it).
#[test]
fn rewritten_pages_vary_on_accept_encoding_whatever_the_client_asks() {
    let origin = html_origin();
    let proxy = Proxy::start(origin.addr, RULES);
    let mut conn = Conn::open(proxy.addr);
    for asks in [None, Some("identity"), Some("gzip")] {
        let fields: Vec<(&str, &str)> = asks.map(|a| ("Accept-Encoding", a)).into_iter().collect();
        let page = conn.request("GET", "/page.html", &fields);
        assert_eq!(page.status, 200, "{asks:?}");
        // Pingora's module writes the name in lowercase.
        assert_eq!(page.header("vary").map(str::to_ascii_lowercase).as_deref(), Some("accept-encoding"), "{asks:?}");
        let coding = if asks == Some("gzip") { Some("gzip") } else { None };
        assert_eq!(page.header("content-encoding"), coding, "{asks:?}");
    }
    // Not rewritten: no Vary of crawlgate's.
    let pdf = conn.request("GET", "/doc.pdf", &[]);
    assert_eq!(pdf.header("vary"), None);
}

#[test]
fn head_errors_304_and_non_html_pass_untouched() {
    let origin = html_origin();
    let proxy = Proxy::start(origin.addr, RULES);
    let mut conn = Conn::open(proxy.addr);
    // HEAD: the headers the GET gets, no body.
    let head = conn.request("HEAD", "/page.html", &[]);
    assert_eq!(head.status, 200);
    assert_eq!(head.header("content-length"), Some(injected_sized(PAGE).len().to_string().as_str()));
    assert_eq!(head.header("etag"), Some("W/\"v1\""));
    assert_eq!(head.header("accept-ranges"), None);
    assert!(head.body.is_empty());
    let pdf = conn.request("GET", "/doc.pdf", &[]);
    assert_eq!(pdf.body, b"%PDF-1.4 <head> not html");
    let missing = conn.request("GET", "/missing.html", &[]);
    assert_eq!(missing.status, 404);
    assert_eq!(missing.body, PAGE.as_bytes());
    let cached = conn.request("GET", "/cached.html", &[("If-None-Match", "\"v1\"")]);
    assert_eq!(cached.status, 304);
    let utf16 = conn.request("GET", "/utf16.html", &[]);
    assert_eq!(utf16.body, b"\xff\xfe<\0h\0");
}

#[test]
fn audit_reports_and_enforce_fixes_conflicting_metas() {
    let origin = html_origin();
    let proxy = Proxy::start(origin.addr, RULES);
    let audit = client().get(proxy.url("/audit/page.html")).send().unwrap();
    assert_eq!(header(&audit, "content-length"), CONFLICTING.len().to_string());
    assert_eq!(audit.text().unwrap_or_default(), CONFLICTING);
    let enforce = client().get(proxy.url("/enforce/page.html")).send().unwrap();
    // Enforce can shrink the page: its length is not known in advance.
    assert_eq!(header(&enforce, "transfer-encoding"), "chunked");
    let body = enforce.text().unwrap_or_default();
    assert!(!body.contains("index, follow"), "{body}");
    assert!(body.contains("<meta name=\"robots\" content=\"noindex\">"), "{body}");
    let metrics = client().get(proxy.admin_url("/metrics")).send().and_then(|r| r.text()).unwrap_or_default();
    assert!(metrics.contains("crawlgate_html_findings_total{kind=\"conflict\",mode=\"audit\"} 1"), "{metrics}");
    assert!(metrics.contains("crawlgate_html_rewrites_total{mode=\"enforce\"} 1"), "{metrics}");
}

/// A 50 MB page streams: the first rewritten bytes arrive while the origin
/// is still holding the rest back, and the proxy's memory stays bounded.
#[test]
fn large_pages_stream_with_bounded_memory() {
    let head = b"<!doctype html>\n<html>\n<head>\n<title>Big</title>\n</head>\n<body>\n".to_vec();
    let filler = b"<p>The quick brown fox jumps over the lazy dog, again and again.</p>\n".to_vec();
    // Chunked and Content-Length origins; the head is a few hundred bytes
    // and comes alone, then the origin waits.
    let gates: Vec<_> = (0..2).map(|_| Arc::new((Mutex::new(false), Condvar::new()))).collect();
    let gated = |sized: bool, gate: &Arc<(Mutex<bool>, Condvar)>| {
        Route::ok("text/html", "").body(Body::Gated {
            first: head.clone(),
            rest: b"</body></html>\n".to_vec(),
            gate: gate.clone(),
            sized,
        })
    };
    let origin = Origin::start(vec![
        ("/gated.html", gated(false, &gates[0])),
        ("/gated-sized.html", gated(true, &gates[1])),
        (
            "/big.html",
            Route::ok("text/html", "").body(Body::Generated {
                head: head.clone(),
                filler,
                tail: b"</body>\n</html>\n".to_vec(),
                total: 50 << 20,
                sized: true,
            }),
        ),
    ]);
    let proxy = Proxy::start(origin.addr, RULES);

    // Streaming: read the injected head while the origin waits on the gate.
    for (path, gate) in ["/gated.html", "/gated-sized.html"].into_iter().zip(&gates) {
        let mut stream = std::net::TcpStream::connect(proxy.addr).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        stream.write_all(format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes()).unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        while !String::from_utf8_lossy(&got).contains("<title>Big</title>") {
            let n =
                stream.read(&mut buf).unwrap_or_else(|e| panic!("{path}: no bytes before the origin finished: {e}"));
            assert!(n > 0, "{path}: connection closed early");
            got.extend_from_slice(&buf[..n]);
        }
        assert!(String::from_utf8_lossy(&got).contains(META), "{path}");
        open_gate(gate);
    }

    // Memory: stream 50 MB through the rewriter and compare peak RSS.
    let before = proxy.memory_kb("VmRSS").unwrap_or(0);
    let mut resp = client().get(proxy.url("/big.html")).send().unwrap();
    let mut total = 0usize;
    let mut first = Vec::new();
    let mut chunk = vec![0u8; 1 << 16];
    loop {
        let n = resp.read(&mut chunk).expect("read");
        if n == 0 {
            break;
        }
        if first.len() < 200 {
            first.extend_from_slice(&chunk[..n.min(200)]);
        }
        total += n;
    }
    assert!(String::from_utf8_lossy(&first).contains(META));
    // No charset label: the body might be UTF-16, so the proxy promises no
    // length and pads nothing; the metas are all that is added.
    assert_eq!(total, (50 << 20) + META.len());
    let peak = proxy.memory_kb("VmHWM").unwrap_or(0);
    assert!(
        peak < before + 40 * 1024,
        "peak RSS {peak} kB grew more than 40 MB over {before} kB while streaming 50 MB"
    );
}

/// `text` as UTF-16 with its byte order mark.
fn utf16(text: &str, big_endian: bool) -> Vec<u8> {
    let mut out = if big_endian { vec![0xFE, 0xFF] } else { vec![0xFF, 0xFE] };
    for unit in text.encode_utf16() {
        out.extend_from_slice(&if big_endian { unit.to_be_bytes() } else { unit.to_le_bytes() });
    }
    out
}

/// A body that starts with a UTF-16 byte order mark is UTF-16 to a
/// browser whatever its Content-Type label says (WHATWG Encoding, "BOM
/// sniff"): it reaches the client byte for byte, with or without a label,
/// framed by length or chunked (the first chunk cut inside the mark), and
/// counts as a `utf-16` pass-through.
#[test]
fn utf16_bodies_pass_through_byte_for_byte() {
    let le = utf16(PAGE, false);
    let be = utf16(PAGE, true);
    let origin = Origin::start(vec![
        ("/utf16-le.html", Route::ok("text/html", le.clone())),
        (
            "/utf16-be.html",
            Route::ok("text/html", "").body(Body::Chunked(vec![be[..1].to_vec(), be[1..5].to_vec(), be[5..].to_vec()])),
        ),
        ("/enforce/utf16-labeled.html", Route::ok("text/html; charset=utf-8", le.clone())),
    ]);
    let proxy = Proxy::start(origin.addr, RULES);
    for (path, want) in [("/utf16-le.html", &le), ("/utf16-be.html", &be), ("/enforce/utf16-labeled.html", &le)] {
        let resp = client().get(proxy.url(path)).send().unwrap_or_else(|e| panic!("{path}: {e}"));
        assert_eq!(resp.status().as_u16(), 200, "{path}");
        let body = resp.bytes().map(|b| b.to_vec()).unwrap_or_default();
        assert!(body == *want, "{path}: got {body:?}");
    }
    let metrics = client().get(proxy.admin_url("/metrics")).send().and_then(|r| r.text()).unwrap_or_default();
    assert!(metrics.contains("crawlgate_html_passthrough_total{reason=\"utf-16\"} 3"), "{metrics}");
}
