//! The in-process check (hash, shard lock, GCRA step) and the key
//! derivation (`Policy::limit`), the two costs a limited request adds.
//!
//! `cargo bench -p crawlgate-limits --bench check`

// `criterion_group!` defines an undocumented public function; a bench set
// up wrongly stops at once.
#![allow(missing_docs, clippy::panic)]

use std::hint::black_box;
use std::net::IpAddr;
use std::time::Duration;

use crawlgate_limits::Limiter;
use crawlgate_policy::limits::{GroupLimit, LimitKey, LimitSource, Network, Rate, Subject};
use crawlgate_policy::{Identity, UserAgentField};
use criterion::{criterion_group, criterion_main, Criterion};

const POLICY: &str = r#"
[upstream]
servers = ["127.0.0.1:9"]

[[group]]
user_agents = ["ExampleBot"]
rate = "10/s"

[[group]]
user_agents = ["*"]
rate = "1000/s"
burst = 100
"#;

fn check(c: &mut Criterion) {
    let limiter = Limiter::new(1_000_000);
    // Never trips: a key per call among 10,000 networks.
    let limit = GroupLimit {
        rate: Rate { count: 1_000_000, per: Duration::from_secs(1) },
        burst: 1000,
        source: LimitSource::Rate,
    };
    let keys: Vec<LimitKey<'static>> = (0..10_000u32)
        .map(|i| LimitKey {
            host: None,
            subject: Subject::Network(Network::of(IpAddr::from((0x0a00_0000 + (i << 8)).to_be_bytes()), 24, 56)),
            path: None,
        })
        .collect();
    let epoch = std::time::Instant::now();
    let mut t = 0u64;
    let mut i = 0;
    c.bench_function("limits/check_local", |b| {
        b.iter(|| {
            i = (i + 1) % keys.len();
            // The arrival time moves 1 us a call: no key ever trips.
            t += 1000;
            black_box(limiter.check_local(black_box(&keys[i]), &limit, epoch + Duration::from_nanos(t)))
        })
    });
    let hasher = foldhash::quality::RandomState::default();
    c.bench_function("limits/parts/hash_key", |b| {
        b.iter(|| {
            i = (i + 1) % keys.len();
            std::hash::BuildHasher::hash_one(&hasher, black_box(&keys[i]))
        })
    });
    c.bench_function("limits/parts/clock", |b| b.iter(|| black_box(epoch.elapsed())));
    let net = Network::of([203, 0, 113, 9].into(), 24, 56);
    let agent = LimitKey { host: None, subject: Subject::AgentNetwork("ExampleBot", net), path: None };
    c.bench_function("limits/check_local_agent", |b| {
        b.iter(|| {
            t += 1000;
            black_box(limiter.check_local(black_box(&agent), &limit, epoch + Duration::from_nanos(t)))
        })
    });
}

fn derive(c: &mut Criterion) {
    let policy = match crawlgate_policy::load(POLICY, "bench.toml") {
        Ok(l) => l.policy,
        Err(e) => panic!("{e}"),
    };
    let client: IpAddr = [203, 0, 113, 9].into();
    let ua = UserAgentField::One("Mozilla/5.0 (compatible; ExampleBot/1.0)");
    let browser = UserAgentField::One("Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0");
    let route = policy.route_with(false, b"/some/page?x=1", ua, Identity::default());
    let route_b = policy.route_with(false, b"/some/page?x=1", browser, Identity::default());
    c.bench_function("limits/key_crawler", |b| {
        b.iter(|| black_box(policy.limit(black_box(&route), client, Some("example.com"))))
    });
    c.bench_function("limits/key_browser", |b| {
        b.iter(|| black_box(policy.limit(black_box(&route_b), client, Some("example.com"))))
    });
}

criterion_group!(benches, check, derive);
criterion_main!(benches);
