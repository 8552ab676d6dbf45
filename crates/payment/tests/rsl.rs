//! License tokens issued by the test license server (crawlgate-testkit's
//! `license_server`) and verified by `crawlgate_payment::rsl` over real
//! HTTP: the JWKS fetched, cached, refetched on rotation and kept when the
//! server goes away.

// A test reports a failure by panicking, also from its helpers.
#![allow(clippy::panic)]

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crawlgate_payment::rsl::{LicenseError, LicenseVerifier};
use crawlgate_policy::payment::dialects::RslSettings;
use crawlgate_testkit::license_server::{LicenseServer, TokenClaims};

const SITE: &str = "https://www.example.com";

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

fn config(server: &LicenseServer) -> RslSettings {
    RslSettings {
        issuer: server.issuer(),
        jwks: Some(server.jwks_url()),
        keys: Vec::new(),
        audience: vec![SITE.into()],
        usage: "ai-use".into(),
        skew: Duration::from_secs(30),
        fetch_timeout: Duration::from_secs(2),
        allow_http: true,
        allow_private_addresses: true,
    }
}

fn verifier(server: &LicenseServer) -> LicenseVerifier {
    LicenseVerifier::new(config(server)).unwrap_or_else(|e| panic!("{e}"))
}

fn claims(server: &LicenseServer) -> TokenClaims {
    let mut c = TokenClaims::new(&server.issuer(), SITE, now());
    c.resource = vec!["/articles/".into()];
    c.scope = "search ai-use".into();
    c
}

fn invalid_token(r: Result<crawlgate_payment::rsl::License, LicenseError>) -> String {
    match r {
        Err(LicenseError::InvalidToken(d)) => d,
        other => panic!("want invalid_token, got {other:?}"),
    }
}

#[tokio::test]
async fn a_valid_token_is_accepted_and_names_its_subject_and_id() {
    let server = LicenseServer::start();
    let v = verifier(&server);
    let token = server.issue(&claims(&server));
    let license = v.verify(&token, "/articles/1", now()).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(license.subject.as_deref(), Some("test-crawler"));
    assert_eq!(license.token_id.as_deref(), Some("license-token-1"));
    assert_eq!(license.key_id, "key-1");
    assert_eq!(v.cached_keys(), 1);
    // Cached: a second token costs no fetch.
    v.verify(&token, "/articles/2", now()).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(server.jwks_hits(), 1);
}

#[tokio::test]
async fn an_expired_token_is_refused() {
    let server = LicenseServer::start();
    let v = verifier(&server);
    let mut c = claims(&server);
    c.issued_at = now() - 600;
    c.not_before = now() - 600;
    c.expires_at = now() - 31;
    let token = server.issue(&c);
    assert_eq!(invalid_token(v.verify(&token, "/articles/1", now()).await), "the token has expired");
    // Within the skew it still passes.
    c.expires_at = now() - 5;
    let token = server.issue(&c);
    assert!(v.verify(&token, "/articles/1", now()).await.is_ok());
}

#[tokio::test]
async fn a_token_for_another_site_is_refused() {
    let server = LicenseServer::start();
    let v = verifier(&server);
    let mut c = claims(&server);
    c.audience = "https://other.example".into();
    let token = server.issue(&c);
    assert_eq!(invalid_token(v.verify(&token, "/articles/1", now()).await), "the token's audience is not this site");
}

#[tokio::test]
async fn a_token_for_another_path_or_usage_is_refused() {
    let server = LicenseServer::start();
    let v = verifier(&server);
    let token = server.issue(&claims(&server));
    assert_eq!(
        invalid_token(v.verify(&token, "/private/1", now()).await),
        "the token's resource does not cover this path"
    );
    let mut c = claims(&server);
    c.scope = "search".into();
    let token = server.issue(&c);
    assert_eq!(
        invalid_token(v.verify(&token, "/articles/1", now()).await),
        "the token's scope does not grant the usage ai-use"
    );
}

#[tokio::test]
async fn a_token_signed_by_an_unpublished_key_is_refused() {
    let server = LicenseServer::start();
    let v = verifier(&server);
    let token = server.forge(&claims(&server));
    assert_eq!(
        invalid_token(v.verify(&token, "/articles/1", now()).await),
        "no key of the license server verifies the token"
    );
    // A tampered payload fails too.
    let good = server.issue(&claims(&server));
    let mut parts: Vec<&str> = good.split('.').collect();
    let other = server.issue(&TokenClaims::new(&server.issuer(), SITE, now()));
    parts[1] = other.split('.').nth(1).unwrap_or("");
    assert_eq!(
        invalid_token(v.verify(&parts.join("."), "/articles/1", now()).await),
        "no key of the license server verifies the token"
    );
}

#[tokio::test]
async fn a_rotated_key_is_fetched_when_a_token_names_it() {
    let server = LicenseServer::start();
    let v = verifier(&server);
    v.verify(&server.issue(&claims(&server)), "/articles/1", now()).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(server.jwks_hits(), 1);
    let kid = server.rotate(false);
    assert_eq!(kid, "key-2");
    let license = v.verify(&server.issue(&claims(&server)), "/articles/1", now()).await;
    // The cached JWKS is younger than a minute: the unknown kid is not
    // refetched yet (a client cannot make the proxy fetch per request).
    assert_eq!(invalid_token(license), "no key of the license server verifies the token");
    assert_eq!(server.jwks_hits(), 1);
    // Once the JWKS is due (max-age 0 is clamped to the 60 s minimum, so
    // the test refreshes explicitly, as the background refresh does).
    assert_eq!(v.refresh().await, Ok(1));
    let license = v.verify(&server.issue(&claims(&server)), "/articles/1", now()).await;
    assert_eq!(license.map(|l| l.key_id), Ok("key-2".to_string()));
    assert_eq!(server.jwks_hits(), 2);
}

#[tokio::test]
async fn the_cached_keys_are_kept_when_the_license_server_is_unreachable() {
    let server = LicenseServer::start();
    let v = verifier(&server);
    let token = server.issue(&claims(&server));
    v.verify(&token, "/articles/1", now()).await.unwrap_or_else(|e| panic!("{e}"));
    server.set_available(false);
    assert_eq!(v.refresh().await, Ok(1), "the failed refresh keeps the key");
    assert_eq!(server.jwks_hits(), 2);
    let license = v.verify(&token, "/articles/1", now()).await;
    assert_eq!(license.map(|l| l.key_id), Ok("key-1".to_string()));
}

#[tokio::test]
async fn no_keys_at_all_is_a_503_not_the_clients_fault() {
    let server = LicenseServer::start();
    server.set_available(false);
    let v = verifier(&server);
    let token = server.issue(&claims(&server));
    let err = v.verify(&token, "/articles/1", now()).await.err().unwrap_or_else(|| panic!("accepted"));
    assert_eq!(err, LicenseError::KeysUnavailable("the license server's keys could not be fetched".into()));
    assert_eq!(err.status(), 503);
    // A failed fetch is not retried per request.
    let _ = v.verify(&token, "/articles/1", now()).await;
    assert_eq!(server.jwks_hits(), 1);
}

#[tokio::test]
async fn pinned_keys_verify_without_any_fetch() {
    let server = LicenseServer::start();
    let mut cfg = config(&server);
    cfg.jwks = None;
    cfg.keys = vec![server.current_jwk()];
    let v = LicenseVerifier::new(cfg).unwrap_or_else(|e| panic!("{e}"));
    let license = v.verify(&server.issue(&claims(&server)), "/articles/1", now()).await;
    assert_eq!(license.map(|l| l.key_id), Ok("key-1".to_string()));
    assert_eq!(server.jwks_hits(), 0);
    server.rotate(false);
    assert_eq!(
        invalid_token(v.verify(&server.issue(&claims(&server)), "/articles/1", now()).await),
        "no pinned key of the license server verifies the token"
    );
}

#[tokio::test]
async fn the_jwks_is_never_fetched_from_a_private_address_unless_allowed() {
    let server = LicenseServer::start();
    let mut cfg = config(&server);
    cfg.allow_private_addresses = false;
    let err = LicenseVerifier::new(cfg).err().unwrap_or_else(|| panic!("accepted a loopback JWKS URL"));
    assert!(err.ends_with("127.0.0.1 is not a public address"), "{err}");
}

#[tokio::test]
async fn the_token_endpoint_issues_tokens_the_verifier_accepts() {
    let server = LicenseServer::start();
    let v = verifier(&server);
    let client = reqwest::Client::new();
    let resp = client
        .post(format!("{}/token", server.issuer()))
        .header("content-type", "application/x-www-form-urlencoded")
        .body("grant_type=client_credentials&resource=https%3A%2F%2Fwww.example.com%2Farticles%2F&scope=ai-use")
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let body: serde_json::Value = serde_json::from_slice(&resp.bytes().await.unwrap_or_default()).unwrap_or_default();
    assert_eq!(body["token_type"], "License");
    let token = body["access_token"].as_str().unwrap_or_default();
    assert!(v.verify(token, "/articles/9", now()).await.is_ok());
    assert_eq!(invalid_token(v.verify(token, "/other", now()).await), "the token's resource does not cover this path");
}

/// A JWKS server answering `reply` for every request.
fn jwks_stub(reply: crawlgate_testkit::stub::StubReply) -> crawlgate_testkit::stub::StubServer {
    crawlgate_testkit::stub::StubServer::start(move |_| reply.clone())
}

fn config_for(server: &LicenseServer, jwks: String) -> RslSettings {
    RslSettings { jwks: Some(jwks), ..config(server) }
}

#[tokio::test]
async fn an_oversized_or_redirecting_jwks_is_not_used() {
    let server = LicenseServer::start();
    let token = server.issue(&claims(&server));
    let jwk: serde_json::Value = serde_json::from_str(&server.current_jwk()).unwrap_or_default();
    let padding = "x".repeat(crawlgate_payment::rsl::MAX_JWKS_BYTES);
    let big = serde_json::json!({"keys": [jwk], "padding": padding});
    let stub = jwks_stub(crawlgate_testkit::stub::StubReply::json(200, &big));
    let v = LicenseVerifier::new(config_for(&server, stub.url("/jwks.json"))).unwrap_or_else(|e| panic!("{e}"));
    assert!(matches!(v.verify(&token, "/articles/1", now()).await, Err(LicenseError::KeysUnavailable(_))));
    // A redirect to the real JWKS is not followed.
    let redirect = jwks_stub(crawlgate_testkit::stub::StubReply::Respond {
        status: 302,
        headers: vec![("Location".into(), server.jwks_url())],
        body: Vec::new(),
        delay: Duration::ZERO,
    });
    let v = LicenseVerifier::new(config_for(&server, redirect.url("/jwks.json"))).unwrap_or_else(|e| panic!("{e}"));
    assert!(matches!(v.verify(&token, "/articles/1", now()).await, Err(LicenseError::KeysUnavailable(_))));
    assert_eq!(server.jwks_hits(), 0);
}

#[tokio::test]
async fn only_the_first_keys_of_a_long_jwks_are_read() {
    let server = LicenseServer::start();
    let token = server.issue(&claims(&server));
    let jwk: serde_json::Value = serde_json::from_str(&server.current_jwk()).unwrap_or_default();
    // The signing key after MAX_JWKS_KEYS others: not read.
    let mut keys: Vec<serde_json::Value> = (0..crawlgate_payment::rsl::MAX_JWKS_KEYS)
        .map(|i| {
            let mut k = jwk.clone();
            k["kid"] = format!("filler-{i}").into();
            k["x"] = "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo".into();
            k
        })
        .collect();
    keys.push(jwk);
    let stub = jwks_stub(crawlgate_testkit::stub::StubReply::json(200, &serde_json::json!({ "keys": keys })));
    let v = LicenseVerifier::new(config_for(&server, stub.url("/jwks.json"))).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        invalid_token(v.verify(&token, "/articles/1", now()).await),
        "no key of the license server verifies the token"
    );
    assert_eq!(v.cached_keys(), crawlgate_payment::rsl::MAX_JWKS_KEYS);
}

#[tokio::test]
async fn concurrent_first_requests_fetch_the_jwks_once() {
    let server = LicenseServer::start();
    let v = verifier(&server);
    let token = server.issue(&claims(&server));
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let (v, token) = (v.clone(), token.clone());
            tokio::spawn(async move { v.verify(&token, "/articles/1", now()).await.is_ok() })
        })
        .collect();
    for t in tasks {
        assert!(t.await.unwrap_or(false));
    }
    assert_eq!(server.jwks_hits(), 1);
}

/// A compact JWS over `claims` with `alg`, signed by `sign`.
fn jws(alg: &str, kid: &str, claims: &serde_json::Value, sign: impl Fn(&[u8]) -> Vec<u8>) -> String {
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use base64::Engine as _;
    let header = serde_json::json!({"alg": alg, "kid": kid});
    let input =
        format!("{}.{}", URL_SAFE_NO_PAD.encode(header.to_string()), URL_SAFE_NO_PAD.encode(claims.to_string()));
    let sig = sign(input.as_bytes());
    format!("{input}.{}", URL_SAFE_NO_PAD.encode(sig))
}

#[tokio::test]
async fn es256_and_rs256_tokens_verify_with_their_own_keys_only() {
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use base64::Engine as _;
    use openssl::ec::{EcGroup, EcKey};
    use openssl::hash::MessageDigest;
    use openssl::nid::Nid;
    use openssl::pkey::PKey;
    use openssl::sign::Signer;

    let server = LicenseServer::start();
    let group = EcGroup::from_curve_name(Nid::X9_62_PRIME256V1).unwrap_or_else(|e| panic!("{e}"));
    let ec = EcKey::generate(&group).unwrap_or_else(|e| panic!("{e}"));
    let mut ctx = openssl::bn::BigNumContext::new().unwrap_or_else(|e| panic!("{e}"));
    let mut x = openssl::bn::BigNum::new().unwrap_or_else(|e| panic!("{e}"));
    let mut y = openssl::bn::BigNum::new().unwrap_or_else(|e| panic!("{e}"));
    ec.public_key().affine_coordinates(&group, &mut x, &mut y, &mut ctx).unwrap_or_else(|e| panic!("{e}"));
    let ec_jwk = serde_json::json!({"kty": "EC", "crv": "P-256", "kid": "ec",
        "x": URL_SAFE_NO_PAD.encode(x.to_vec_padded(32).unwrap_or_default()),
        "y": URL_SAFE_NO_PAD.encode(y.to_vec_padded(32).unwrap_or_default())});
    let ec_key = PKey::from_ec_key(ec).unwrap_or_else(|e| panic!("{e}"));
    let rsa = openssl::rsa::Rsa::generate(2048).unwrap_or_else(|e| panic!("{e}"));
    let rsa_jwk = serde_json::json!({"kty": "RSA", "kid": "rsa",
        "n": URL_SAFE_NO_PAD.encode(rsa.n().to_vec()), "e": URL_SAFE_NO_PAD.encode(rsa.e().to_vec())});
    let rsa_key = PKey::from_rsa(rsa).unwrap_or_else(|e| panic!("{e}"));

    let mut cfg = config(&server);
    cfg.jwks = None;
    cfg.keys = vec![ec_jwk.to_string(), rsa_jwk.to_string()];
    let v = LicenseVerifier::new(cfg).unwrap_or_else(|e| panic!("{e}"));
    let claims = claims(&server).to_json();

    let es256 = jws("ES256", "ec", &claims, |input| {
        let mut s = Signer::new(MessageDigest::sha256(), &ec_key).unwrap_or_else(|e| panic!("{e}"));
        let der = s.sign_oneshot_to_vec(input).unwrap_or_else(|e| panic!("{e}"));
        let sig = openssl::ecdsa::EcdsaSig::from_der(&der).unwrap_or_else(|e| panic!("{e}"));
        let mut raw = sig.r().to_vec_padded(32).unwrap_or_default();
        raw.extend(sig.s().to_vec_padded(32).unwrap_or_default());
        raw
    });
    assert_eq!(v.verify(&es256, "/articles/1", now()).await.map(|l| l.key_id), Ok("ec".to_string()));
    let rs256 = jws("RS256", "rsa", &claims, |input| {
        let mut s = Signer::new(MessageDigest::sha256(), &rsa_key).unwrap_or_else(|e| panic!("{e}"));
        s.sign_oneshot_to_vec(input).unwrap_or_else(|e| panic!("{e}"))
    });
    assert_eq!(v.verify(&rs256, "/articles/1", now()).await.map(|l| l.key_id), Ok("rsa".to_string()));
    // The RSA signature presented as ES256 under the EC key's kid, or with
    // no kid at all, is checked only by keys of the algorithm named.
    let parts: Vec<&str> = rs256.split('.').collect();
    let relabeled = jws("ES256", "rsa", &claims, |_| URL_SAFE_NO_PAD.decode(parts[2]).unwrap_or_default());
    assert_eq!(
        invalid_token(v.verify(&relabeled, "/articles/1", now()).await),
        "no pinned key of the license server verifies the token"
    );
}

#[tokio::test]
async fn a_token_without_kid_is_tried_against_two_keys_of_its_alg_only() {
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use base64::Engine as _;
    use crawlgate_testkit::license_server::public_jwk;
    use ed25519_dalek::Signer as _;
    let server = LicenseServer::start();
    let keys: Vec<ed25519_dalek::SigningKey> =
        (1..=3).map(|i| ed25519_dalek::SigningKey::from_bytes(&[40 + i; 32])).collect();
    let mut cfg = config(&server);
    cfg.jwks = None;
    cfg.keys = keys.iter().enumerate().map(|(i, k)| public_jwk(k, &format!("k{}", i + 1)).to_string()).collect();
    let v = LicenseVerifier::new(cfg).unwrap_or_else(|e| panic!("{e}"));
    let claims = claims(&server).to_json();
    let kidless = |key: &ed25519_dalek::SigningKey| {
        let header = serde_json::json!({"alg": "EdDSA", "typ": "JWT"});
        let input =
            format!("{}.{}", URL_SAFE_NO_PAD.encode(header.to_string()), URL_SAFE_NO_PAD.encode(claims.to_string()));
        format!("{input}.{}", URL_SAFE_NO_PAD.encode(key.sign(input.as_bytes()).to_bytes()))
    };
    assert_eq!(v.verify(&kidless(&keys[1]), "/articles/1", now()).await.map(|l| l.key_id), Ok("k2".to_string()));
    // The third key is never tried for a token that does not name it (a
    // forged kid-less token costs two verifications, not one per key).
    assert_eq!(
        invalid_token(v.verify(&kidless(&keys[2]), "/articles/1", now()).await),
        "no pinned key of the license server verifies the token (it names no kid: only the first 2 keys of its alg are tried)"
    );
    let named = jws("EdDSA", "k3", &claims, |input| keys[2].sign(input).to_bytes().to_vec());
    assert_eq!(v.verify(&named, "/articles/1", now()).await.map(|l| l.key_id), Ok("k3".to_string()));
}
