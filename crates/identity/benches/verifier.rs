//! The cached verification path: what a request whose outcome is known
//! adds (an IP list hit, a list miss), with and without finding the claim
//! in the User-Agent.
//!
//! `cargo bench -p crawlgate-identity --bench verifier`

// `criterion_group!` defines an undocumented public function.
#![allow(missing_docs)]

use std::hint::black_box;
use std::net::IpAddr;

use crawlgate_identity::{Verifier, VerifierConfig};
use crawlgate_testkit::temp::TempDir;
use criterion::{criterion_group, criterion_main, Criterion};

fn bench(c: &mut Criterion) {
    let dir = TempDir::new("verifier-bench");
    // A Google-sized list: a few hundred prefixes.
    let mut text = String::new();
    for i in 0..400u32 {
        text.push_str(&format!("{}.{}.0.0/16\n", 20 + i / 256, i % 256));
    }
    text.push_str("66.249.64.0/19\n");
    let list = dir.write("googlebot.txt", text);
    let src = format!(
        "[upstream]\nservers = [\"127.0.0.1:8000\"]\n[verification]\n[verification.lists]\nGooglebot = [\"{}\"]\n[verification.dns]\nnameservers = [\"127.0.0.1:9\"]\n[[group]]\nuser_agents = [\"Googlebot\"]\nverify = \"ip\"\n",
        list.display()
    );
    let Ok(policy) = crawlgate_policy::load(&src, "p.toml").map(|l| l.policy) else { return };
    let Ok(rt) = tokio::runtime::Runtime::new() else { return };
    let _guard = rt.enter();
    let Ok(verifier) = Verifier::new(VerifierConfig::for_policy(&policy)) else { return };
    let ua = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Googlebot/2.1; +http://www.google.com/bot.html) Chrome/120.0.0.0 Safari/537.36";
    let listed = IpAddr::from([66, 249, 66, 1]);
    let other = IpAddr::from([192, 0, 2, 1]);
    let Some(claim) = policy.claim(ua) else { return };
    // The bench measures the path it names: a listed address verifies.
    assert!(verifier.verify_cached(&claim, listed).is_some_and(|v| v.verification.label() == "verified"));
    c.bench_function("verify_cached listed", |b| {
        b.iter(|| verifier.verify_cached(black_box(&claim), black_box(listed)))
    });
    c.bench_function("verify_cached not listed", |b| {
        b.iter(|| verifier.verify_cached(black_box(&claim), black_box(other)))
    });
    c.bench_function("claim + verify_cached listed", |b| {
        b.iter(|| policy.claim(black_box(ua)).and_then(|c| verifier.verify_cached(&c, black_box(listed))))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
