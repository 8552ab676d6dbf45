//! `robots-test --batch`'s decision rate: [`RobotsTxt::is_allowed`] on a
//! 25 KB robots.txt parsed once, as the batch mode parses each file once
//! and answers every stdin line with one call (stdin/stdout I/O is not
//! timed). Questions mix bare tokens, full User-Agent headers and unnamed
//! crawlers over paths that hit prefixes, wildcards and no rule.
//!
//! `--as google` is measured on the same file and questions
//! (`google_is_allowed_25kb_1000_questions`).
//!
//! Run: `cargo bench -p crawlgate-policy --bench batch`.

// `criterion_group!` defines an undocumented public function; a bench
// that cannot set up has nothing to measure, so it panics.
#![allow(missing_docs, clippy::panic)]

use std::fmt::Write as _;
use std::hint::black_box;

use crawlgate_policy::google::GoogleRobots;
use crawlgate_policy::robotstxt::RobotsTxt;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};

/// A deterministic robots.txt of about 25 KB: 40 named groups of 12 rules (6 Disallow, 6 Allow)
/// and a `*` group with the rest.
fn file() -> String {
    let mut out = String::new();
    for g in 0..40 {
        let _ = writeln!(out, "User-agent: Bot{g}Crawler\nUser-agent: Other{g}-bot");
        for r in 0..6 {
            let _ = writeln!(out, "Disallow: /g{g}/section{r}/*.php$\nAllow: /g{g}/section{r}/public/");
        }
        out.push('\n');
    }
    out.push_str("User-agent: *\n");
    let mut r = 0;
    while out.len() < 25 * 1024 {
        let _ = writeln!(out, "Disallow: /private/area{r}/\nAllow: /private/area{r}/open*");
        r += 1;
    }
    out
}

fn batch(c: &mut Criterion) {
    let text = file();
    assert!((24 * 1024..27 * 1024).contains(&text.len()), "{}", text.len());
    let robots = RobotsTxt::parse(text.as_bytes());
    let mut questions: Vec<(String, String)> = Vec::new();
    for i in 0..1000usize {
        let ua = match i % 4 {
            0 => format!("Bot{}Crawler", i % 40),
            1 => format!("Mozilla/5.0 (compatible; Other{}-bot/1.0; +https://example.com/bot)", i % 40),
            2 => "UnknownBot".to_string(),
            _ => "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0".to_string(),
        };
        let url = match i % 3 {
            0 => format!("https://example.com/g{}/section{}/page.php", i % 40, i % 6),
            1 => format!("/private/area{}/open/x?y=1", i % 200),
            _ => format!("/blog/post-{i}.html"),
        };
        questions.push((ua, url));
    }
    // Warm the lazily built matcher and compiled rules, as the first line
    // of a batch does.
    let _ = robots.is_allowed("Bot1Crawler", "/");
    let mut group = c.benchmark_group("robots_test_batch");
    group.throughput(Throughput::Elements(questions.len() as u64));
    group.bench_function("is_allowed_25kb_1000_questions", |b| {
        b.iter(|| {
            let mut allowed = 0usize;
            for (ua, url) in &questions {
                allowed += usize::from(robots.is_allowed(black_box(ua), black_box(url)));
            }
            allowed
        })
    });
    // `--as google`: the same file and questions, Google's reading
    // (`policy::google`, the whole file parsed once).
    let google = GoogleRobots::parse(text.as_bytes());
    group.bench_function("google_is_allowed_25kb_1000_questions", |b| {
        b.iter(|| {
            let mut allowed = 0usize;
            for (ua, url) in &questions {
                allowed += usize::from(google.is_allowed(black_box(ua), black_box(url)));
            }
            allowed
        })
    });
    group.finish();
}

criterion_group!(benches, batch);
criterion_main!(benches);
