//! The Markdown converter on a 100 KB news article fed in 16 KiB chunks,
//! as the proxy feeds it, against the robots meta rewriter on the same
//! page: inject (what the proxy does to most pages; it stops parsing once
//! the head is over), audit (parses the whole page, like the converter)
//! and a plain copy of the chunks.
//!
//! The same rows on the load test's 1.5 KB and 20 KB pages
//! (`bench/origin.sh`: a short head, then one paragraph with a link
//! repeated inside an `<article>`).
//!
//! `cargo bench -p crawlgate-html --bench markdown`

// `criterion_group!` defines an undocumented public function.
#![allow(missing_docs)]

use std::sync::Arc;

use crawlgate_html::markdown::{MarkdownConfig, MarkdownConverter, PageInfo};
use crawlgate_html::{Config, Mode, RewritePlan, Rewriter};
use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

const CHUNK: usize = 16 * 1024;

/// A news article of about `size` bytes: a CMS head, a nav mega-menu, an
/// article of headings, paragraphs with links and emphasis, figures,
/// quotes, a list and a table every few sections, related links in an
/// aside, a footer.
fn article(size: usize) -> Vec<u8> {
    let mut s = String::with_capacity(size + 4096);
    s.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    s.push_str("<title>Markets rally as rates hold steady &ndash; Example News</title>\n");
    s.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    s.push_str("<link rel=\"canonical\" href=\"https://news.example.com/markets/rally\">\n");
    for i in 0..6 {
        s.push_str(&format!("<link rel=\"preload\" href=\"/static/font-{i}.woff2\" as=\"font\" crossorigin>\n"));
    }
    s.push_str("<style>body{margin:0;font-family:system-ui}.nav a{color:#333}</style>\n");
    s.push_str("<script>window.dataLayer=window.dataLayer||[];function gtag(){dataLayer.push(arguments)}</script>\n");
    s.push_str("</head>\n<body>\n<header><nav class=\"mega\"><ul>");
    for i in 0..8 {
        s.push_str(&format!("<li><a href=\"/section/{i}\">Section {i}</a><ul>"));
        for j in 0..6 {
            s.push_str(&format!("<li><a href=\"/section/{i}/{j}\">Topic {j}</a></li>"));
        }
        s.push_str("</ul></li>");
    }
    s.push_str("</ul></nav></header>\n<main><article>\n<h1>Markets rally as rates hold steady</h1>\n");
    let mut n = 0;
    while s.len() < size.saturating_sub(600) {
        n += 1;
        s.push_str(&format!(
            "<h2 id=\"s{n}\">Part {n}: stocks climb as bond yields ease</h2>\n\
             <p>Shares in <a href=\"/company/{n}\">Company {n}</a> rose 3.2% in early trading, while the \
             <em>benchmark index</em> added 0.8% &amp; the dollar slipped against the euro. Traders said \
             volumes were <strong>well above</strong> the monthly average.</p>\n\
             <p>Analysts at <a href=\"https://research.example.org/notes/{n}\">Example Research</a> said the move \
             reflected easing inflation, steady demand and a calmer outlook for <code>10Y</code> yields.</p>\n\
             <figure><img src=\"/img/{n}.jpg\" alt=\"Chart {n}\" width=\"640\" height=\"360\"><figcaption>Index level, \
             part {n}.</figcaption></figure>\n"
        ));
        if n % 3 == 0 {
            s.push_str("<blockquote><p>&ldquo;We expect the rally to continue into the new year,&rdquo; one strategist said.</p></blockquote>\n");
            s.push_str("<ul><li>Energy up 1.1%</li><li>Tech up 2.4%<ul><li>Chips up 3.0%</li></ul></li><li>Utilities flat</li></ul>\n");
        }
        if n % 5 == 0 {
            s.push_str("<table><thead><tr><th>Index</th><th>Close</th><th>Change</th></tr></thead><tbody>");
            for k in 0..6 {
                s.push_str(&format!("<tr><td>Index {k}</td><td>{}.{k}0</td><td>+0.{k}%</td></tr>", 1000 + k * 37));
            }
            s.push_str("</tbody></table>\n");
        }
    }
    s.push_str("</article></main>\n<aside><h3>Related</h3><ul><li><a href=\"/r/1\">Bonds</a></li></ul></aside>\n");
    s.push_str("<footer><p>&copy; Example News</p></footer>\n</body>\n</html>\n");
    s.into_bytes()
}

/// The load test's page of about `size` bytes, byte for byte as
/// `bench/origin.sh` writes `page.html` (1500) and `page20k.html` (20000).
fn load_test_page(size: usize) -> Vec<u8> {
    let mut s = String::from(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>An article</title>\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<link rel=\"stylesheet\" href=\"/site.css\">\n\
         <script src=\"/app.js\" defer></script>\n</head>\n<body>\n<article>\n",
    );
    while s.len() < size {
        s.push_str(
            "<p>Operators publish robots.txt; crawlers are expected to read it, and <a href=\"/more\">most do</a>.</p>\n",
        );
    }
    s.push_str("</article>\n</body>\n</html>\n");
    s.into_bytes()
}

fn markdown(config: &Arc<MarkdownConfig>, input: &[u8]) -> usize {
    let page = PageInfo {
        url: "https://news.example.com/markets/rally".into(),
        robots: Some("noai".into()),
        content_usage: Some("train-ai=n".into()),
        no_images: false,
    };
    let Ok(mut conv) = MarkdownConverter::new(config, page, Some("utf-8")) else { return 0 };
    let mut n = 0;
    for chunk in input.chunks(CHUNK) {
        n += conv.write(chunk).len();
    }
    n + conv.finish().len()
}

fn rewrite(plan: &RewritePlan, input: &[u8]) -> usize {
    let Ok(mut rw) = Rewriter::with_plan(plan, Some("utf-8")) else { return 0 };
    let mut n = 0;
    for chunk in input.chunks(CHUNK) {
        n += rw.write(chunk).len();
        n += rw.take_findings().len();
    }
    n + rw.finish().len() + rw.take_findings().len()
}

fn copy(input: &[u8]) -> usize {
    let mut n = 0;
    for chunk in input.chunks(CHUNK) {
        let mut out = Vec::with_capacity(chunk.len());
        out.extend_from_slice(chunk);
        n += black_box(out).len();
    }
    n
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

fn bench(c: &mut Criterion) {
    let md = Arc::new(MarkdownConfig::default());
    let (inject, audit) = (RewritePlan::new(&config(Mode::Inject)), RewritePlan::new(&config(Mode::Audit)));
    let pages = [
        ("markdown/1.5KB-page", load_test_page(1500)),
        ("markdown/20KB-page", load_test_page(20_000)),
        ("markdown/100KB-article", article(100 * 1024)),
    ];
    for (name, input) in &pages {
        let mut g = c.benchmark_group(*name);
        g.throughput(Throughput::Bytes(input.len() as u64));
        g.bench_with_input(BenchmarkId::from_parameter("copy"), input, |b, i| b.iter(|| copy(black_box(i))));
        g.bench_with_input(BenchmarkId::from_parameter("inject"), input, |b, i| {
            b.iter(|| rewrite(&inject, black_box(i)))
        });
        g.bench_with_input(BenchmarkId::from_parameter("audit"), input, |b, i| {
            b.iter(|| rewrite(&audit, black_box(i)))
        });
        g.bench_with_input(BenchmarkId::from_parameter("markdown"), input, |b, i| {
            b.iter(|| markdown(&md, black_box(i)))
        });
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
