//! Compressed bodies from an origin that ignores `Accept-Encoding:
//! identity`: only HTML the rewriter takes is decoded, in bounded pieces;
//! everything else passes as the origin sent it. A decompression bomb or
//! invalid data labelled HTML fails the response without the proxy's
//! memory following the decoded size.

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::process::Command;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use crawlgate_e2e::origin::{open_gate, Body, Origin, Route};
use crawlgate_e2e::proxy::{base_policy, free_port, Proxy};
use crawlgate_testkit::http::{connect, exchange, RawResponse};
use crawlgate_testkit::TempDir;
use flate2::{Compress, Compression, Crc, FlushCompress};

const RULES: &str = r#"
[[robots_tag]]
path = "/"
rules = ["noindex"]
html = "inject"
"#;

const PAGE: &str = "<!doctype html>\n<html>\n<head>\n<title>T</title>\n</head>\n<body><p>Hello</p></body>\n</html>\n";

/// What [`RULES`] make of [`PAGE`] when its length is not kept (a decoded
/// body is sent chunked, so no padding).
fn injected() -> String {
    PAGE.replacen("<head>", "<head><meta name=\"robots\" content=\"noindex\">", 1)
}

const HTML: &str = "text/html; charset=utf-8";

/// Size of the bomb that is not HTML.
const BOMB_MIB: usize = 64;
/// Size of the bomb labelled HTML: 1 GiB of zeros after a page head.
const HTML_BOMB_MIB: usize = 1024;

/// A gzip member of `prefix` followed by `mib` MiB of zeros, built without
/// compressing all the zeros: once the deflate window holds only zeros,
/// the blocks encoding one more MiB (ended by a sync flush, so byte
/// aligned) decode the same wherever they are repeated. The CRC-32 is
/// combined the same way.
fn gzip_bomb(prefix: &[u8], mib: usize) -> Vec<u8> {
    let zeros = vec![0u8; 1 << 20];
    let mut c = Compress::new(Compression::default(), false);
    let mut deflate = |input: &[u8], flush| {
        let mut out = Vec::with_capacity(input.len() + 1024);
        c.compress_vec(input, &mut out, flush).expect("deflate");
        out
    };
    let mut gz = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];
    gz.extend_from_slice(&deflate(prefix, FlushCompress::Sync));
    gz.extend_from_slice(&deflate(&zeros, FlushCompress::Sync));
    let next = deflate(&zeros, FlushCompress::Sync);
    for _ in 1..mib {
        gz.extend_from_slice(&next);
    }
    gz.extend_from_slice(&deflate(&[], FlushCompress::Finish));
    let mut crc = Crc::new();
    crc.update(prefix);
    let mut one = Crc::new();
    one.update(&zeros);
    for _ in 0..mib {
        crc.combine(&one);
    }
    gz.extend_from_slice(&crc.sum().to_le_bytes());
    gz.extend_from_slice(&crc.amount().to_le_bytes());
    gz
}

/// A page head and 1 MiB of random words: about 600 KiB gzipped, so well
/// over five 64 KiB reads of the origin's body arrive (and the response
/// header goes out) before the zeros after it.
fn bomb_prefix() -> Vec<u8> {
    let mut page = b"<!doctype html>\n<html>\n<head>\n<title>T</title>\n</head>\n<body><p>".to_vec();
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    while page.len() < 1 << 20 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        page.push(if x.is_multiple_of(7) { b' ' } else { b'a' + (x >> 8) as u8 % 26 });
    }
    page
}

/// The first `n` bytes of the decoded bomb (`prefix`, then zeros) after
/// the rewrite.
fn rewritten_bomb(prefix: &[u8], n: usize) -> Vec<u8> {
    let mut want = String::from_utf8_lossy(prefix)
        .replacen("<head>", "<head><meta name=\"robots\" content=\"noindex\">", 1)
        .into_bytes();
    want.resize(n.max(want.len()), 0);
    want.truncate(n);
    want
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), Compression::default());
    let _ = e.write_all(data);
    e.finish().unwrap_or_default()
}

fn zlib(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::ZlibEncoder::new(Vec::new(), Compression::default());
    let _ = e.write_all(data);
    e.finish().unwrap_or_default()
}

fn raw_deflate(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::DeflateEncoder::new(Vec::new(), Compression::default());
    let _ = e.write_all(data);
    e.finish().unwrap_or_default()
}

fn brotli(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    {
        let mut w = brotli::CompressorWriter::new(&mut out, 4096, 5, 22);
        let _ = w.write_all(data);
    }
    out
}

fn request(path: &str, headers: &[(&str, &str)]) -> String {
    let mut req = format!("GET {path} HTTP/1.1\r\nHost: test.example\r\nConnection: close\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req
}

/// One GET on a fresh connection (`Connection: close`), read until the
/// proxy closes it.
fn get(addr: SocketAddr, path: &str, headers: &[(&str, &str)]) -> RawResponse {
    let raw = exchange(addr, request(path, headers).as_bytes(), Duration::from_secs(20));
    RawResponse::parse(&raw, false)
        .unwrap_or_else(|| panic!("no response head in {:?}", String::from_utf8_lossy(&raw[..raw.len().min(500)])))
}

type Gate = Arc<(Mutex<bool>, Condvar)>;

/// A sized text/html route in `encoding` whose body waits for `gate`.
fn gated(encoding: &str, body: Vec<u8>, gate: &Gate) -> Route {
    compressed_route(HTML, encoding, Vec::new()).body(Body::Gated {
        first: Vec::new(),
        rest: body,
        gate: gate.clone(),
        sized: true,
    })
}

/// [`get`] on a [`gated`] route: the origin sends its body only after the
/// client has the response head, so the proxy handles the body after the
/// header went out, whatever the timing.
fn get_gated(addr: SocketAddr, path: &str, gate: &Gate) -> RawResponse {
    let mut s = connect(addr, Duration::from_secs(20));
    s.write_all(request(path, &[]).as_bytes()).expect("write");
    let mut raw = Vec::new();
    let mut buf = [0u8; 16384];
    let mut opened = false;
    loop {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => raw.extend_from_slice(&buf[..n]),
        }
        if !opened && raw.windows(4).any(|w| w == b"\r\n\r\n") {
            open_gate(gate);
            opened = true;
        }
    }
    assert!(opened, "{path}: no response head before the origin's body: {:?}", String::from_utf8_lossy(&raw));
    RawResponse::parse(&raw, false).unwrap_or_else(|| panic!("no response head in {:?}", String::from_utf8_lossy(&raw)))
}

fn compressed_route(content_type: &str, encoding: &str, body: Vec<u8>) -> Route {
    Route::ok(content_type, body).header("Content-Encoding", encoding)
}

#[test]
fn a_bomb_that_is_not_html_passes_through_as_the_origin_sent_it() {
    let bomb = gzip_bomb(b"", BOMB_MIB);
    assert!(bomb.len() < BOMB_MIB * 1100, "{} bytes", bomb.len());
    let origin = Origin::start(vec![
        ("/bomb.bin", compressed_route("application/octet-stream", "gzip", bomb.clone())),
        // HTML in a coding that is not decoded, and HTML that is not 2xx.
        ("/stacked.html", compressed_route(HTML, "gzip, br", brotli(&gzip(PAGE.as_bytes())))),
        ("/missing.html", Route { status: 404, ..compressed_route(HTML, "gzip", gzip(PAGE.as_bytes())) }),
    ]);
    let proxy = Proxy::start(origin.addr, RULES);
    let before = proxy.memory_kb("VmHWM").unwrap_or(0);
    for accept in [None, Some("gzip"), Some("br, gzip"), Some("identity")] {
        let headers: Vec<(&str, &str)> = accept.map(|a| ("Accept-Encoding", a)).into_iter().collect();
        let resp = get(proxy.addr, "/bomb.bin", &headers);
        assert_eq!(resp.status, 200, "{accept:?}");
        assert_eq!(resp.all("content-encoding"), ["gzip"], "{accept:?}");
        assert_eq!(resp.header("content-length"), Some(bomb.len().to_string().as_str()), "{accept:?}");
        assert!(resp.complete && resp.body == bomb, "{accept:?}: {} bytes, not the origin's", resp.body.len());
    }
    let stacked_body = brotli(&gzip(PAGE.as_bytes()));
    let stacked = get(proxy.addr, "/stacked.html", &[]);
    assert_eq!((stacked.header("content-encoding"), &stacked.body), (Some("gzip, br"), &stacked_body));
    let missing = get(proxy.addr, "/missing.html", &[]);
    assert_eq!(missing.status, 404);
    assert_eq!((missing.header("content-encoding"), &missing.body), (Some("gzip"), &gzip(PAGE.as_bytes())));
    assert_eq!(proxy.metric("crawlgate_html_passthrough_total{reason=\"encoding\"}").unwrap_or_default(), "1");
    // The path has an HTML rule, so the origin was asked for identity.
    assert!(origin.seen().iter().all(|s| s.header("accept-encoding") == Some("identity")));
    // Nothing was decoded: memory grew by nowhere near the 64 MiB inside.
    let peak = proxy.memory_kb("VmHWM").unwrap_or(u64::MAX);
    assert!(peak < before + 32 * 1024, "peak RSS {peak} kB, {before} kB before");
}

#[test]
fn compressed_html_is_decoded_and_rewritten() {
    let page = PAGE.as_bytes();
    let origin = Origin::start(vec![
        ("/gzip.html", compressed_route(HTML, "gzip", gzip(page)).header("ETag", "\"e1\"")),
        ("/x-gzip.html", compressed_route(HTML, "x-gzip", gzip(page))),
        ("/zlib.html", compressed_route(HTML, "deflate", zlib(page))),
        ("/raw-deflate.html", compressed_route(HTML, "deflate", raw_deflate(page))),
        ("/br.html", compressed_route(HTML, "br", brotli(page)).header("Vary", "Cookie")),
        ("/vary.html", compressed_route(HTML, "br", brotli(page)).header("Vary", "accept-encoding")),
    ]);
    let proxy = Proxy::start(origin.addr, RULES);
    let want = injected();
    for path in ["/gzip.html", "/x-gzip.html", "/zlib.html", "/raw-deflate.html", "/br.html", "/vary.html"] {
        let resp = get(proxy.addr, path, &[("Accept-Encoding", "identity")]);
        assert_eq!(resp.status, 200, "{path}");
        assert_eq!(resp.header("content-encoding"), None, "{path}");
        assert_eq!(resp.header("content-length"), None, "{path}");
        assert_eq!(resp.header("transfer-encoding"), Some("chunked"), "{path}");
        assert!(resp.complete, "{path}");
        assert_eq!(String::from_utf8_lossy(&resp.body), want, "{path}");
        let vary = resp.all("vary");
        let expected: &[&str] = match path {
            "/br.html" => &["Cookie", "Accept-Encoding"],
            "/vary.html" => &["accept-encoding"],
            _ => &["Accept-Encoding"],
        };
        assert_eq!(vary, expected, "{path}");
    }
    let etag = get(proxy.addr, "/gzip.html", &[]);
    assert_eq!(etag.header("etag"), Some("W/\"e1\""));
    assert_eq!(proxy.metric("crawlgate_html_rewrites_total{mode=\"inject\"}").unwrap_or_default(), "7");
    assert_eq!(proxy.metric("crawlgate_decompression_aborted_total{reason=\"invalid\"}").unwrap_or_default(), "0");
}

#[test]
fn invalid_compressed_html_is_aborted_not_forwarded() {
    let gz = gzip(PAGE.as_bytes());
    let gates: Vec<Gate> = (0..3).map(|_| Arc::new((Mutex::new(false), Condvar::new()))).collect();
    let origin = Origin::start(vec![
        ("/not-gzip.html", gated("gzip", PAGE.as_bytes().to_vec(), &gates[0])),
        ("/not-br.html", gated("br", PAGE.as_bytes().to_vec(), &gates[1])),
        ("/cut.html", gated("gzip", gz[..gz.len() - 4].to_vec(), &gates[2])),
        ("/not-gzip-now.html", compressed_route(HTML, "gzip", PAGE.as_bytes().to_vec())),
        ("/page.html", Route::ok(HTML, PAGE)),
    ]);
    let proxy = Proxy::start(origin.addr, RULES);
    for (path, gate) in ["/not-gzip.html", "/not-br.html", "/cut.html"].into_iter().zip(&gates) {
        let resp = get_gated(proxy.addr, path, gate);
        // The header went out before the body was seen; then the
        // connection closes without the last chunk and without a byte of
        // the origin's body (the cut stream decodes but for its trailer,
        // in the read that ends it, so none of it is sent either).
        assert_eq!(resp.status, 200, "{path}");
        assert_eq!(resp.header("content-encoding"), None, "{path}");
        assert_eq!(resp.header("transfer-encoding"), Some("chunked"), "{path}");
        assert!(!resp.complete, "{path}: {resp:?}");
        assert_eq!(resp.body, b"", "{path}");
    }
    // Header and body in one read: the failure comes before the header is
    // written, and the client gets the proxy's 502 instead. Which of the
    // two happens depends on how the origin's bytes arrive; neither
    // forwards the origin's body.
    let now = get(proxy.addr, "/not-gzip-now.html", &[]);
    let bad_gateway = "502 Bad Gateway: the origin server's compressed response could not be decoded within limits\n";
    match now.status {
        502 => assert!(now.complete && now.body == bad_gateway.as_bytes(), "{now:?}"),
        _ => assert!(now.status == 200 && !now.complete && now.body.is_empty(), "{now:?}"),
    }
    assert_eq!(proxy.metric("crawlgate_decompression_aborted_total{reason=\"invalid\"}").unwrap_or_default(), "4");
    let log = proxy.log();
    assert_eq!(log.matches(" error=\"decompression aborted: HTML body from the origin: ").count(), 4, "{log}");
    // The access line carries the abort: no second line for it.
    assert!(!log.contains("Compressed HTML aborted"), "{log}");
    let page = get(proxy.addr, "/page.html", &[]);
    assert!(page.complete);
    assert_eq!(page.status, 200);
}

/// Three 1 GiB bombs labelled HTML at once: each response is cut short
/// after the page head, the proxy's peak memory stays far below one
/// decoded bomb, and it still answers afterwards.
#[test]
fn an_html_bomb_is_aborted_with_bounded_memory() {
    let prefix = bomb_prefix();
    let bomb = gzip_bomb(&prefix, HTML_BOMB_MIB);
    assert!(bomb.len() < 3 << 20, "{} bytes", bomb.len());
    let origin = Origin::start(vec![
        ("/bomb.html", compressed_route(HTML, "gzip", bomb)),
        ("/page.html", Route::ok(HTML, PAGE)),
    ]);
    let proxy = Proxy::start(origin.addr, RULES);
    let addr = proxy.addr;
    let clients: Vec<_> = (0..3)
        .map(|i| {
            std::thread::spawn(move || {
                let accept = if i == 0 { "gzip" } else { "identity" };
                get(addr, "/bomb.html", &[("Accept-Encoding", accept)])
            })
        })
        .collect();
    for (i, c) in clients.into_iter().enumerate() {
        let resp = c.join().expect("client thread panicked");
        assert_eq!(resp.status, 200);
        assert_eq!(resp.header("transfer-encoding"), Some("chunked"));
        assert!(!resp.complete, "a bomb response ended cleanly: {} bytes", resp.body.len());
        // The client that asked for gzip gets the rewrite compressed again.
        let body = if i == 0 {
            assert_eq!(resp.header("content-encoding"), Some("gzip"));
            let mut out = Vec::new();
            let _ = flate2::read::GzDecoder::new(&resp.body[..]).read_to_end(&mut out);
            out
        } else {
            assert_eq!(resp.header("content-encoding"), None);
            resp.body
        };
        // The head and part of the page arrived, rewritten; far less than
        // the bomb decodes to.
        assert!(body.len() > 100_000 && body.len() < 16 << 20, "client {i}: {} bytes", body.len());
        assert!(body == rewritten_bomb(&prefix, body.len()), "client {i}: not the rewritten page");
    }
    let peak = proxy.memory_kb("VmHWM").unwrap_or(u64::MAX);
    assert!(peak < 150 * 1024, "peak RSS {peak} kB");
    assert_eq!(proxy.metric("crawlgate_decompression_aborted_total{reason=\"ratio\"}").unwrap_or_default(), "3");
    let log = proxy.log();
    assert_eq!(log.matches(" error=\"decompression aborted: HTML body from the origin: ").count(), 3, "{log}");
    let next = get(proxy.addr, "/page.html", &[]);
    assert!(next.complete);
    assert_eq!(String::from_utf8_lossy(&next.body), injected() + &" ".repeat("<head></head>".len()));
}

fn addr() -> SocketAddr {
    format!("127.0.0.1:{}", free_port()).parse().unwrap()
}

/// curl's exit code, its error text and the body it wrote.
fn curl_h2c(url: &str) -> (i32, String, Vec<u8>) {
    let dir = TempDir::new("curl");
    let body = dir.join("body");
    let out = Command::new("curl")
        .args(["-s", "-S", "--max-time", "20", "--http2-prior-knowledge", "-o"])
        .arg(&body)
        .args(["-w", "%{http_version} %{http_code}", url])
        .output()
        .expect("cannot run curl");
    let text = format!("{} | {}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr).trim());
    let got = std::fs::read(&body).unwrap_or_default();
    (out.status.code().unwrap_or(-1), text, got)
}

#[test]
fn http2_bombs_pass_through_or_reset_the_stream() {
    let bomb = gzip_bomb(b"", BOMB_MIB);
    let html_bomb = gzip_bomb(&bomb_prefix(), HTML_BOMB_MIB);
    let origin = Origin::start(vec![
        ("/bomb.bin", compressed_route("application/octet-stream", "gzip", bomb.clone())),
        ("/bomb.html", compressed_route(HTML, "gzip", html_bomb)),
        ("/page.html", Route::ok(HTML, PAGE)),
    ]);
    let (plain, admin) = (addr(), addr());
    let policy = base_policy(plain, admin, origin.addr).replace("[server]\n", "[server]\nh2c = true\n") + RULES;
    let proxy = Proxy::start_with(plain, admin, &policy);
    let (code, text, body) = curl_h2c(&format!("http://{plain}/bomb.bin"));
    assert_eq!((code, text.as_str()), (0, "2 200 | "));
    assert!(body == bomb, "{} bytes, not the origin's {}", body.len(), bomb.len());
    // The HTML bomb: the stream is reset; curl reports an HTTP/2 stream
    // error (exit code 92) after the 200 header.
    let (code, text, body) = curl_h2c(&format!("http://{plain}/bomb.html"));
    assert_eq!(code, 92, "{text}");
    assert!(text.starts_with("2 200 | "), "{text}");
    assert!(body.len() < 16 << 20, "{} bytes", body.len());
    let peak = proxy.memory_kb("VmHWM").unwrap_or(u64::MAX);
    assert!(peak < 150 * 1024, "peak RSS {peak} kB");
    assert_eq!(proxy.metric("crawlgate_decompression_aborted_total{reason=\"ratio\"}").unwrap_or_default(), "1");
    let (code, text, body) = curl_h2c(&format!("http://{plain}/page.html"));
    assert_eq!((code, text.as_str()), (0, "2 200 | "));
    assert_eq!(String::from_utf8_lossy(&body), injected() + &" ".repeat("<head></head>".len()));
}
