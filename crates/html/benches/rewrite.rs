//! Throughput of the robots meta rewriter on realistic pages fed in 16 KiB
//! chunks, as the proxy feeds it, against a plain copy of the same chunks;
//! and one whole response as the proxy drives the rewriter (`response/`).
//!
//! `cargo bench -p crawlgate-html --bench rewrite`

// `criterion_group!` defines an undocumented public function.
#![allow(missing_docs)]

use bytes::Bytes;
use crawlgate_html::{Config, Mode, RewritePlan, Rewriter};
use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

const CHUNK: usize = 16 * 1024;

/// A page of about `size` bytes: a head like a CMS writes one (metas,
/// preloads, styles, analytics scripts, JSON-LD), a body of nested
/// sections with paragraphs, links, images and inline scripts.
fn page(size: usize) -> Vec<u8> {
    let mut s = String::with_capacity(size + 4096);
    s.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    s.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    s.push_str("<title>Example News — Markets rally as rates hold steady</title>\n");
    for (k, v) in [
        ("description", "Markets rallied on Tuesday after the central bank held rates."),
        ("author", "Jane Doe"),
        ("theme-color", "#ffffff"),
    ] {
        s.push_str(&format!("<meta name=\"{k}\" content=\"{v}\">\n"));
    }
    for p in ["og:title", "og:description", "og:image", "og:url", "twitter:card", "twitter:site"] {
        s.push_str(&format!("<meta property=\"{p}\" content=\"https://example.com/{p}\">\n"));
    }
    for i in 0..8 {
        s.push_str(&format!(
            "<link rel=\"preload\" href=\"/static/font-{i}.woff2\" as=\"font\" type=\"font/woff2\" crossorigin>\n"
        ));
    }
    s.push_str("<link rel=\"stylesheet\" href=\"/static/main.3f9a1c.css\">\n<link rel=\"canonical\" href=\"https://example.com/markets/rally\">\n");
    s.push_str("<style>body{margin:0;font-family:system-ui}.nav a{color:#333;text-decoration:none}.card{padding:1rem;border:1px solid #eee}</style>\n");
    s.push_str("<script>window.dataLayer=window.dataLayer||[];function gtag(){dataLayer.push(arguments)}gtag('js',new Date());gtag('config','G-XXXX');</script>\n");
    s.push_str(
        "<script src=\"/static/vendor.8c1d.js\" defer></script>\n<script src=\"/static/app.77e2.js\" defer></script>\n",
    );
    s.push_str("<script type=\"application/ld+json\">{\"@context\":\"https://schema.org\",\"@type\":\"NewsArticle\",\"headline\":\"Markets rally\",\"datePublished\":\"2024-05-01T08:00:00Z\"}</script>\n");
    s.push_str("</head>\n<body class=\"article\">\n<header><nav class=\"nav\"><ul>");
    for i in 0..12 {
        s.push_str(&format!("<li><a href=\"/section/{i}\">Section {i}</a></li>"));
    }
    s.push_str("</ul></nav></header>\n<main>\n");
    let mut n = 0;
    while s.len() < size.saturating_sub(400) {
        n += 1;
        s.push_str(&format!(
            "<section class=\"card\" id=\"s{n}\"><div class=\"row\"><div class=\"col\">\n\
             <h2><a href=\"/markets/story-{n}\">Story {n}: stocks climb as bond yields ease</a></h2>\n\
             <p>Shares in <a href=\"/company/{n}\">Company {n}</a> rose 3.2% in early trading, while the \
             <em>benchmark index</em> added 0.8% &amp; the dollar slipped against the euro.</p>\n\
             <p>Analysts said the move reflected <strong>easing inflation</strong> and steady demand.</p>\n\
             <img src=\"/img/{n}.jpg\" alt=\"Chart {n}\" width=\"640\" height=\"360\" loading=\"lazy\">\n\
             </div></div></section>\n"
        ));
        if n % 10 == 0 {
            s.push_str(&format!(
                "<script>window.__ads&&window.__ads.push({{slot:'mid-{n}',sizes:[[300,250]]}});</script>\n"
            ));
        }
    }
    s.push_str("</main>\n<footer><p>&copy; Example News</p></footer>\n</body>\n</html>\n");
    s.into_bytes()
}

/// The load test's small page (scripts/load-test builds the same bytes).
fn small_page() -> Vec<u8> {
    let head = "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>An article</title>\n\
                <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<link rel=\"stylesheet\" href=\"/site.css\">\n\
                <script src=\"/app.js\" defer></script>\n</head>\n<body>\n<article>\n";
    let para =
        "<p>Operators publish robots.txt; crawlers are expected to read it, and <a href=\"/more\">most do</a>.</p>\n";
    let mut s = head.to_string();
    while s.len() < 1500 {
        s.push_str(para);
    }
    s.push_str("</article>\n</body>\n</html>\n");
    s.into_bytes()
}

/// The small page with five robots metas in its head (conflicts, extras, a
/// crawler's meta), for audit and enforce: bench/origin.sh's metas5.html.
fn metas5_page() -> Vec<u8> {
    let metas = "<meta name=\"robots\" content=\"index, follow\">\n<meta name=\"robots\" content=\"noarchive\">\n\
                 <meta name=\"googlebot\" content=\"max-snippet:-1, max-image-preview:large\">\n\
                 <meta name=\"bingbot\" content=\"nosnippet\">\n<meta name=\"gptbot\" content=\"noai, noimageai\">\n";
    let small = String::from_utf8_lossy(&small_page()).into_owned();
    small.replacen("<title>", &format!("{metas}<title>"), 1).into_bytes()
}

/// One response the way the proxy's `crawlgate_proxy::html` drives it:
/// a rewriter on the snapshot's prepared plan for a `charset=utf-8`
/// response, its growth fixed for a Content-Length response (inject), the
/// body as one owned chunk (an origin's small page arrives in one read),
/// the end, and the findings and bail-out drained as the body filter
/// drains them.
fn response(plan: &RewritePlan, body: &Bytes) -> usize {
    let Ok(mut rw) = Rewriter::with_plan(plan, Some("utf-8")) else { return 0 };
    let growth = rw.fix_growth().unwrap_or(0);
    let mut n = rw.write_bytes(body.clone()).len();
    n += rw.finish().len();
    n += rw.take_findings().len();
    n += rw.take_dropped_findings().total() as usize + rw.dropped_findings().total() as usize;
    n + growth + usize::from(rw.bail().is_some())
}

fn config(mode: Mode) -> Config {
    Config {
        mode,
        directives: vec![
            ("*".into(), vec!["noindex".into(), "nosnippet".into()]),
            ("gptbot".into(), vec!["noai".into()]),
        ],
        max_memory: 4 << 20,
    }
}

/// One response through a rewriter, on a plan prepared beforehand (the
/// proxy prepares one per policy plan).
fn rewrite(plan: &RewritePlan, input: &[u8]) -> usize {
    // No charset given: construction cannot fail.
    let Ok(mut rw) = Rewriter::with_plan(plan, None) else { return 0 };
    let mut n = 0;
    for chunk in input.chunks(CHUNK) {
        n += rw.write(chunk).len();
        n += rw.take_findings().len();
    }
    n + rw.finish().len() + rw.take_findings().len()
}

/// The baseline: what forwarding the chunks costs without a rewriter.
fn copy(input: &[u8]) -> usize {
    let mut n = 0;
    for chunk in input.chunks(CHUNK) {
        let mut out = Vec::with_capacity(chunk.len());
        out.extend_from_slice(chunk);
        n += black_box(out).len();
    }
    n
}

fn bench(c: &mut Criterion) {
    // The fixed cost per response: building the rewriter (lol_html compiles
    // its selectors here) and ending it on an empty body.
    c.bench_function("rewriter/new+finish", |b| {
        b.iter(|| Rewriter::new(&config(Mode::Inject), None).map(|mut rw| rw.finish().len()).unwrap_or(0))
    });
    // What the proxy pays: the plan is prepared once per policy plan.
    let plan = RewritePlan::new(&config(Mode::Inject));
    c.bench_function("rewriter/prepared+finish", |b| {
        b.iter(|| Rewriter::with_plan(&plan, None).map(|mut rw| rw.finish().len()).unwrap_or(0))
    });
    let (inject, audit) = (RewritePlan::new(&config(Mode::Inject)), RewritePlan::new(&config(Mode::Audit)));
    // The 1.5 KB page of scripts/load-test: a short head (charset, title,
    // viewport, a stylesheet, a script), then paragraphs.
    let small = small_page();
    let mut g = c.benchmark_group("rewrite/1.5KB-short-head");
    g.throughput(Throughput::Bytes(small.len() as u64));
    g.bench_with_input(BenchmarkId::from_parameter("copy"), &small, |b, i| b.iter(|| copy(black_box(i))));
    g.bench_with_input(BenchmarkId::from_parameter("inject"), &small, |b, i| b.iter(|| rewrite(&inject, black_box(i))));
    g.finish();
    // The whole per-response setup and run as the proxy does it (issue 23:
    // what the proxy spent around the rewriter was ten times the rewriter):
    // the load test's page for inject, the page with five robots metas for
    // all three modes.
    let enforce = RewritePlan::new(&config(Mode::Enforce));
    let mut g = c.benchmark_group("response/1.5KB");
    let small_body = Bytes::from(small.clone());
    let metas5 = Bytes::from(metas5_page());
    g.bench_with_input(BenchmarkId::from_parameter("inject"), &small_body, |b, i| {
        b.iter(|| response(&inject, black_box(i)))
    });
    for (label, plan) in [("5-metas/inject", &inject), ("5-metas/audit", &audit), ("5-metas/enforce", &enforce)] {
        g.bench_with_input(BenchmarkId::from_parameter(label), &metas5, |b, i| b.iter(|| response(plan, black_box(i))));
    }
    g.finish();
    for (label, size) in [("20KB", 20 * 1024), ("500KB", 500 * 1024)] {
        let input = page(size);
        let mut g = c.benchmark_group(format!("rewrite/{label}"));
        g.throughput(Throughput::Bytes(input.len() as u64));
        g.bench_with_input(BenchmarkId::from_parameter("copy"), &input, |b, i| b.iter(|| copy(black_box(i))));
        g.bench_with_input(BenchmarkId::from_parameter("inject"), &input, |b, i| {
            b.iter(|| rewrite(&inject, black_box(i)))
        });
        g.bench_with_input(BenchmarkId::from_parameter("audit"), &input, |b, i| {
            b.iter(|| rewrite(&audit, black_box(i)))
        });
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
