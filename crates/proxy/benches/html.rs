//! The whole per-response HTML path as the proxy runs it (issue 23: the
//! proxy spent ten times around the rewriter what the rewriter spends),
//! beside `crawlgate-html`'s own `response/1.5KB` group (the rewriter
//! alone): `crawlgate_proxy::html::start` on the origin's response header
//! (status, Content-Type and coding checks, the snapshot's prepared plan,
//! the header edits, the rewriter) and the body filter on the load test's
//! 1.5 KB page, for inject with and without a charset label (Content-Length
//! kept, or chunked), and audit and enforce on the page with five robots
//! metas.
//!
//! `cargo bench -p crawlgate-proxy --bench html`

// `criterion_group!` defines an undocumented public function; a bench
// that cannot set up has nothing to measure, so it panics.
#![allow(missing_docs, clippy::panic)]

use std::hint::black_box;

use bytes::Bytes;
use crawlgate_policy::{HtmlMode, HtmlPlan};
use crawlgate_proxy::bench::HtmlResponse;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use pingora::http::ResponseHeader;

/// scripts/load-test's 1.5 KB page.
fn small_page() -> String {
    let head = "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>An article</title>\n\
                <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<link rel=\"stylesheet\" href=\"/site.css\">\n\
                <script src=\"/app.js\" defer></script>\n</head>\n<body>\n<article>\n";
    let para =
        "<p>Operators publish robots.txt; crawlers are expected to read it, and <a href=\"/more\">most do</a>.</p>\n";
    let mut s = head.to_string();
    while s.len() < 1500 {
        s.push_str(para);
    }
    s + "</article>\n</body>\n</html>\n"
}

/// The small page with five robots metas in its head: bench/origin.sh's
/// metas5.html.
fn metas5_page() -> String {
    let metas = "<meta name=\"robots\" content=\"index, follow\">\n<meta name=\"robots\" content=\"noarchive\">\n\
                 <meta name=\"googlebot\" content=\"max-snippet:-1, max-image-preview:large\">\n\
                 <meta name=\"bingbot\" content=\"nosnippet\">\n<meta name=\"gptbot\" content=\"noai, noimageai\">\n";
    small_page().replacen("<title>", &format!("{metas}<title>"), 1)
}

fn plan(mode: HtmlMode) -> HtmlPlan {
    HtmlPlan {
        mode,
        directives: vec![
            ("*".into(), vec!["noindex".into(), "nosnippet".into()]),
            ("gptbot".into(), vec!["noai".into()]),
        ],
        metas: vec![],
        head: vec![],
    }
}

/// nginx's header for a static page of `len` bytes.
fn header(content_type: &str, len: usize) -> ResponseHeader {
    let mut h = ResponseHeader::build(200, Some(8)).unwrap_or_else(|e| panic!("{e}"));
    for (k, v) in [
        ("server", "nginx".to_string()),
        ("date", "Wed, 25 Nov 2026 19:00:00 GMT".to_string()),
        ("content-type", content_type.to_string()),
        ("content-length", len.to_string()),
        ("last-modified", "Wed, 25 Nov 2026 18:00:00 GMT".to_string()),
        ("connection", "keep-alive".to_string()),
        ("etag", "\"6745b3a0-5dc\"".to_string()),
        ("accept-ranges", "bytes".to_string()),
    ] {
        h.append_header(k, v).unwrap_or_else(|e| panic!("{e}"));
    }
    h
}

fn bench(c: &mut Criterion) {
    let small = Bytes::from(small_page());
    let metas5 = Bytes::from(metas5_page());
    let mut g = c.benchmark_group("proxy-response/1.5KB");
    let inject = HtmlResponse::new(plan(HtmlMode::Inject)).unwrap_or_else(|e| panic!("{e}"));
    for (label, ct) in [("inject/no-charset", "text/html"), ("inject/utf-8", "text/html; charset=utf-8")] {
        let h = header(ct, small.len());
        assert!(inject.run(&h, &small) > small.len(), "{label}: not rewritten");
        g.bench_with_input(BenchmarkId::from_parameter(label), &small, |b, body| {
            b.iter(|| inject.run(black_box(&h), black_box(body)))
        });
    }
    for (label, mode) in [
        ("5-metas/inject", HtmlMode::Inject),
        ("5-metas/audit", HtmlMode::Audit),
        ("5-metas/enforce", HtmlMode::Enforce),
    ] {
        let run = HtmlResponse::new(plan(mode)).unwrap_or_else(|e| panic!("{e}"));
        let h = header("text/html", metas5.len());
        assert!(run.run(&h, &metas5) > 0, "{label}: not taken");
        g.bench_with_input(BenchmarkId::from_parameter(label), &metas5, |b, body| {
            b.iter(|| run.run(black_box(&h), black_box(body)))
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
