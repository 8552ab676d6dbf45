//! The per-request cost of the license and x402 dialects on the proxy's
//! side: a license token verified against a pinned key (cached keys cost
//! the same: no fetch), and a `PAYMENT-SIGNATURE` read and checked against
//! the site's requirements (before the facilitator is asked).
//!
//! `cargo bench -p crawlgate-payment --bench verify`

// criterion_group! generates undocumented public items; a setup that
// fails stops the benchmark.
#![allow(missing_docs, clippy::panic)]

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crawlgate_outbound::fetch::Reach;
use crawlgate_payment::rsl::{LicenseVerifier, RslConfig};
use crawlgate_payment::x402::{check_accepted, parse_payment_signature, X402Config};
use crawlgate_testkit::license_server::{public_jwk, sign_jws, TokenClaims};
use criterion::{criterion_group, criterion_main, Criterion};

fn license(c: &mut Criterion) {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let key = ed25519_dalek::SigningKey::from_bytes(&[9; 32]);
    let mut claims = TokenClaims::new("https://license.example", "https://www.example.com", now);
    claims.resource = vec!["/articles/".into()];
    let token = sign_jws(&key, "k1", &claims.to_json());
    let verifier = LicenseVerifier::new(RslConfig {
        issuer: "https://license.example".into(),
        audience: vec!["https://www.example.com".into()],
        jwks_url: None,
        pinned_keys: vec![public_jwk(&key, "k1").to_string()],
        skew: Duration::from_secs(30),
        usage: "all".into(),
        fetch_timeout: Duration::from_secs(2),
        reach: Reach { allow_http: false, allow_private: false },
    })
    .unwrap_or_else(|e| panic!("{e}"));
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap_or_else(|e| panic!("{e}"));
    c.bench_function("license_token_verify_eddsa", |b| {
        b.iter(|| rt.block_on(verifier.verify(&token, "/articles/1", now)).unwrap_or_else(|e| panic!("{e}")))
    });
}

fn x402(c: &mut Criterion) {
    let cfg = X402Config {
        facilitator: "https://x402.example".into(),
        pay_to: "0x209693Bc6afc0C5328bA36FaF03C514EF312287C".into(),
        network: "eip155:8453".into(),
        asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913".into(),
        currency: "USD".into(),
        decimals: 6,
        max_timeout_seconds: 60,
        extra: serde_json::Map::new(),
        timeout: Duration::from_secs(3),
        reach: Reach { allow_http: false, allow_private: false },
    };
    let ours = cfg.requirements("USD", "0.01").unwrap_or_else(|e| panic!("{e}"));
    let accepted = serde_json::to_value(&ours).unwrap_or_default();
    let header = crawlgate_testkit::facilitator::payment_signature(
        &accepted,
        "0x857b06519E91e3A54538791bDbb0E22373e36b66",
        "0x01",
    );
    c.bench_function("x402_payment_signature_parse_and_check", |b| {
        b.iter(|| {
            let p = parse_payment_signature(header.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
            check_accepted(&p, &ours).unwrap_or_else(|e| panic!("{e}"));
        })
    });
}

criterion_group!(benches, license, x402);
criterion_main!(benches);
