//! Prefix lookup in a published IP range table the size of Google's
//! googlebot.json and Bing's bingbot.json together.
//!
//! `cargo bench -p crawlgate-identity --bench ranges`
//!
//! The table is synthesized (no copy of the operators' lists is at hand):
//! 256 IPv4 /27 blocks spaced 64 addresses apart from 66.249.64.0 (the
//! shape of Googlebot's list), 44 IPv4 /24 blocks in 40.77.0.0/16 and
//! 157.55.0.0/16 (the shape of Bing's), and 150 IPv6 /64 blocks every
//! other /64 from 2001:4860:4801:10:: (Googlebot's IPv6 part): 450 prefixes.

// `criterion_group!` defines an undocumented public function.
#![allow(missing_docs)]
// A bench set up wrongly stops at once.
#![allow(clippy::panic)]

use std::net::IpAddr;

use crawlgate_identity::ranges::RangeTable;
use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The synthesized list in the operators' JSON format.
fn list_json() -> String {
    let mut entries = Vec::new();
    for i in 0..256u32 {
        let a = u32::from_be_bytes([66, 249, 64, 0]) + i * 64;
        entries.push(format!(r#"{{"ipv4Prefix": "{}/27"}}"#, std::net::Ipv4Addr::from(a)));
    }
    for i in 0..24 {
        entries.push(format!(r#"{{"ipv4Prefix": "40.77.{}.0/24"}}"#, 160 + i));
    }
    for i in 0..20 {
        entries.push(format!(r#"{{"ipv4Prefix": "157.55.{}.0/24"}}"#, i * 2));
    }
    for i in 0..150u32 {
        entries.push(format!(r#"{{"ipv6Prefix": "2001:4860:4801:{:x}::/64"}}"#, 0x10 + 2 * i));
    }
    format!(r#"{{"creationTime": "2026-11-20T15:46:14.000000", "prefixes": [{}]}}"#, entries.join(", "))
}

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
}

fn bench(c: &mut Criterion) {
    let json = list_json();
    let table = RangeTable::parse(&json).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(table.len(), 450);

    let mut g = c.benchmark_group("lookup");
    for (name, addr, hit) in [
        ("v4 hit", "66.249.79.200", true),
        ("v4 miss (gap)", "66.249.79.230", false),
        ("v4 miss (outside)", "203.0.113.9", false),
        ("v6 hit", "2001:4860:4801:9e::1", true),
        ("v6 miss", "2001:4860:4801:9f::1", false),
        ("v4-mapped hit", "::ffff:157.55.38.7", true),
    ] {
        let a = ip(addr);
        assert_eq!(table.lookup(a).is_some(), hit, "{addr}");
        g.bench_function(name, |b| b.iter(|| table.lookup(black_box(a))));
    }

    // A mix, so the branch predictor cannot learn one path: half drawn from
    // the listed blocks' neighbourhood, half anywhere.
    let mut rng = StdRng::seed_from_u64(11);
    let mix: Vec<IpAddr> = (0..1024)
        .map(|i| match i % 4 {
            0 => IpAddr::from((u32::from_be_bytes([66, 249, 64, 0]) + rng.gen_range(0..16384u32)).to_be_bytes()),
            1 => IpAddr::from(((0x2001_4860_4801u128 << 80) | (rng.gen_range(0..0x200u128) << 64) | 1).to_be_bytes()),
            2 => IpAddr::from(rng.gen::<u32>().to_be_bytes()),
            _ => IpAddr::from(rng.gen::<u128>().to_be_bytes()),
        })
        .collect();
    g.throughput(Throughput::Elements(mix.len() as u64));
    g.bench_function("mixed x1024", |b| {
        b.iter(|| mix.iter().filter(|a| table.lookup(black_box(**a)).is_some()).count())
    });
    g.finish();

    c.bench_function("parse googlebot+bingbot json", |b| b.iter(|| RangeTable::parse(black_box(&json))));
}

criterion_group!(benches, bench);
criterion_main!(benches);
