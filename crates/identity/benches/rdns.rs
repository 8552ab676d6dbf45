//! What a request from an address whose reverse DNS outcome is cached pays:
//! `Fcrdns::cached` on a hit (PTR name matched against the operator's
//! domains) and on a miss, with the cache holding 10,000 addresses. The
//! entries come from real lookups against the test DNS server on 127.0.0.1.
//!
//! `cargo bench -p crawlgate-identity --bench rdns`

// `criterion_group!` defines an undocumented public function; a bench
// whose setup fails should stop.
#![allow(missing_docs, clippy::panic)]

use std::hint::black_box;
use std::net::IpAddr;
use std::time::Duration;

use crawlgate_identity::rdns::{Fcrdns, RdnsCheck, RdnsConfig};
use crawlgate_testkit::dns::DnsServer;
use criterion::{criterion_group, criterion_main, Criterion};

const ADDRESSES: u32 = 10_000;

fn address(n: u32) -> IpAddr {
    let [_, b, c, d] = n.to_be_bytes();
    IpAddr::from([10, b, c, d])
}

fn cached(c: &mut Criterion) {
    let dns = DnsServer::start();
    for n in 0..ADDRESSES {
        let name = format!("crawl-{n}.googlebot.com");
        dns.add_ptr(address(n), &name, 86_400);
        dns.add_addr(&name, address(n), 86_400);
    }
    let fcrdns = Fcrdns::new(RdnsConfig::new(vec![dns.addr()], Duration::from_secs(2), ADDRESSES as usize))
        .unwrap_or_else(|e| panic!("Fcrdns::new: {e}"));
    let google: Vec<String> =
        ["googlebot.com", "google.com", "googleusercontent.com"].iter().map(|s| s.to_string()).collect();
    let runtime =
        tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap_or_else(|e| panic!("runtime: {e}"));
    runtime.block_on(async {
        for n in 0..ADDRESSES {
            let outcome = fcrdns.check(address(n), &google).await;
            assert!(matches!(outcome, RdnsCheck::Confirmed { .. }), "{n}: {outcome:?}");
        }
    });
    assert_eq!(fcrdns.cache_len(), ADDRESSES as usize);

    let mut group = c.benchmark_group("rdns");
    let hit = address(4321);
    group.bench_function("cached/hit", |b| b.iter(|| fcrdns.cached(black_box(hit), black_box(&google))));
    let other = vec!["search.msn.com".to_string()];
    group.bench_function("cached/hit-other-operator", |b| b.iter(|| fcrdns.cached(black_box(hit), black_box(&other))));
    let miss = IpAddr::from([192, 0, 2, 1]);
    group.bench_function("cached/miss", |b| b.iter(|| fcrdns.cached(black_box(miss), black_box(&google))));
    group.finish();
}

criterion_group!(benches, cached);
criterion_main!(benches);
