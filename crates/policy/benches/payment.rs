//! The `crawler-*` header checks a request in a charge group pays for:
//! the path's price (free list and `[[group.prices]]`) and Cloudflare's
//! dialect decision on the price headers. Target: under 1 us together.
//!
//! Run: `cargo bench -p crawlgate-policy --bench payment`.

// `criterion_group!` defines an undocumented public function; a bench
// that cannot set up has nothing to measure, so it panics.
#![allow(missing_docs, clippy::panic, clippy::expect_used)]

use std::hint::black_box;

use crawlgate_policy::payment::cloudflare::{decide, CrawlerRequest, Field, Signed};
use criterion::{criterion_group, criterion_main, Criterion};

const POLICY: &str = r#"
[upstream]
servers = ["127.0.0.1:8000"]

[robots_txt]
sitemaps = ["https://example.com/sitemap-news.xml", "https://example.com/sitemap-pages.xml"]

[[group]]
user_agents = ["*"]

[[group]]
user_agents = ["ExampleBot"]
disallow = ["/private/"]
enforce = "charge"
price = "USD 0.01"
prices = [
  { path = "/premium/", price = "USD 0.05" },
  { path = "/archive/*.pdf$", price = "USD 0.10" },
  { path = "/news/", price = "USD 0.02" },
]

[verification]
state_dir = "/var/lib/crawlgate"

[[verification.keys]]
token = "ExampleBot"
jwk = '{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}'

[payment]
free = ["/press/", "/about$"]
"#;

fn payment(c: &mut Criterion) {
    let policy = crawlgate_policy::load(POLICY, "bench.toml").expect("bench policy loads").policy;
    let group = policy.group_names().position(|n| n == "ExampleBot").expect("group");
    let signed = Signed::Verified { covers_exact: true, covers_max: true };
    c.bench_function("payment/price_and_decide_exact", |b| {
        b.iter(|| {
            let price = policy.price(group, black_box("/news/2026/11/25/story-about-things?page=2")).expect("charged");
            let req = CrawlerRequest {
                signed,
                exact: Field::One(black_box(b"USD 0.02")),
                max: Field::Absent,
                cloudflare: None,
            };
            decide(price, black_box(&req))
        })
    });
    c.bench_function("payment/price_and_decide_max", |b| {
        b.iter(|| {
            let price = policy.price(group, black_box("/archive/2019/report.pdf")).expect("charged");
            let req = CrawlerRequest {
                signed,
                exact: Field::Absent,
                max: Field::One(black_box(b"USD 1.50")),
                cloudflare: None,
            };
            decide(price, black_box(&req))
        })
    });
    c.bench_function("payment/free_path", |b| b.iter(|| policy.price(group, black_box("/sitemap-pages.xml"))));
}

criterion_group!(benches, payment);
criterion_main!(benches);
