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

use crawlgate_payment::rsl::LicenseVerifier;
use crawlgate_payment::x402::{check_accepted, parse_payment_signature, requirements};
use crawlgate_policy::payment::dialects::{RslSettings, X402Settings};
use crawlgate_testkit::license_server::{public_jwk, sign_jws, TokenClaims};
use criterion::{criterion_group, criterion_main, Criterion};

fn license(c: &mut Criterion) {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let key = ed25519_dalek::SigningKey::from_bytes(&[9; 32]);
    let mut claims = TokenClaims::new("https://license.example", "https://www.example.com", now);
    claims.resource = vec!["/articles/".into()];
    let token = sign_jws(&key, "k1", &claims.to_json());
    let verifier = LicenseVerifier::new(RslSettings {
        issuer: "https://license.example".into(),
        jwks: None,
        keys: vec![public_jwk(&key, "k1").to_string()],
        audience: vec!["https://www.example.com".into()],
        usage: "all".into(),
        skew: Duration::from_secs(30),
        fetch_timeout: Duration::from_secs(2),
        allow_http: false,
        allow_private_addresses: false,
    })
    .unwrap_or_else(|e| panic!("{e}"));
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap_or_else(|e| panic!("{e}"));
    c.bench_function("license_token_verify_eddsa", |b| {
        b.iter(|| rt.block_on(verifier.verify(&token, "/articles/1", now)).unwrap_or_else(|e| panic!("{e}")))
    });
}

fn x402(c: &mut Criterion) {
    let cfg = X402Settings {
        facilitator: "https://x402.example".into(),
        pay_to: "0x209693Bc6afc0C5328bA36FaF03C514EF312287C".into(),
        network: "eip155:8453".into(),
        asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913".into(),
        decimals: 6,
        currency: "USD".into(),
        extra: Vec::new(),
        max_timeout: Duration::from_secs(60),
        timeout: Duration::from_secs(3),
        allow_http: false,
        allow_private_addresses: false,
    };
    let ours = requirements(&cfg, "USD", "0.01").unwrap_or_else(|e| panic!("{e}"));
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
