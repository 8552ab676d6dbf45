//! Web Bot Auth verification: RFC 9421's ed25519 test vector, the
//! webbotauth drafts' examples, signatures made by the test signer (good,
//! expired, early, wrong key, uncovered components, tampered), malformed
//! headers, and key directories served on 127.0.0.1.

// Helpers outside #[test] functions panic to fail the test that called them.
#![allow(clippy::panic)]

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crawlgate_identity::keys::{Keys, KeysConfig, PinnedKey};
use crawlgate_identity::wba::{self, SignatureCheck, SignedRequest};
use crawlgate_testkit::wba::{
    directory_json, Agent, Component, DirectoryResponse, DirectoryServer, Request, SignOptions, Signer, DEFAULT_AGENT,
};
use http::{HeaderMap, HeaderName, HeaderValue};

#[path = "wba/draft01.rs"]
mod draft01;

const RFC_X: &str = "JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs";
const RFC_THUMBPRINT: &str = "poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U";
const NOW: i64 = 1_750_000_000;

fn at(secs: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(u64::try_from(secs).unwrap_or_else(|e| panic!("{e}")))
}

fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (n, v) in pairs {
        h.append(
            HeaderName::from_bytes(n.as_bytes()).unwrap_or_else(|e| panic!("{n}: {e}")),
            HeaderValue::from_bytes(v.as_bytes()).unwrap_or_else(|e| panic!("{v}: {e}")),
        );
    }
    h
}

/// The hosts these tests sign for, and only `@authority` required (most
/// cases here are about other things; the defaults have tests of their own).
fn base() -> KeysConfig {
    KeysConfig {
        authorities: ["example.com", "shop.example", "a.example", "site.example"].map(str::to_owned).to_vec(),
        required_components: vec!["@authority".to_owned()],
        ..KeysConfig::default()
    }
}

fn pinned(token: &str, jwk: String) -> Keys {
    Keys::new(KeysConfig { pinned: vec![PinnedKey { token: token.into(), jwk }], ..base() })
        .unwrap_or_else(|e| panic!("{e}"))
}

fn rfc_keys() -> Keys {
    pinned("ChatGPT-User", format!(r#"{{"kty":"OKP","crv":"Ed25519","kid":"test-key-ed25519","x":"{RFC_X}"}}"#))
}

/// The request's headers plus the signed ones.
fn signed_map(req: &Request, signer: &Signer, opts: &SignOptions) -> HeaderMap {
    let signed = signer.sign(req, opts);
    let mut pairs: Vec<(String, String)> = req.headers.clone();
    pairs.extend(signed.pairs().into_iter().map(|(n, v)| (n.to_owned(), v)));
    let refs: Vec<(&str, &str)> = pairs.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
    headers(&refs)
}

async fn check(keys: &Keys, req: &Request, h: &HeaderMap, now: i64) -> SignatureCheck {
    let sr = SignedRequest { method: &req.method, authority: &req.authority, target: &req.target, headers: h };
    wba::verify(keys, &sr, at(now)).await
}

fn expired(c: &SignatureCheck) -> &str {
    match c {
        SignatureCheck::Expired { reason } => reason,
        other => panic!("expected Expired, got {other:?}"),
    }
}

fn invalid(c: &SignatureCheck) -> &str {
    match c {
        SignatureCheck::Invalid { reason } => reason,
        other => panic!("expected Invalid, got {other:?}"),
    }
}

// RFC 9421 appendix B.2.6, over the test request of appendix B.2.
#[tokio::test]
async fn rfc9421_b26_ed25519_vector_verifies() {
    let h = headers(&[
        ("host", "example.com"),
        ("date", "Tue, 20 Apr 2021 02:07:55 GMT"),
        ("content-type", "application/json"),
        (
            "content-digest",
            "sha-512=:WZDPaVn/7XgHaAy8pmojAkGWoRx2UFChF41A2svX+TaPm+AbwAgBWnrIiYllu7BNNyealdVLvRwEmTHWXvJwew==:",
        ),
        ("content-length", "18"),
        (
            "signature-input",
            r#"sig-b26=("date" "@method" "@path" "@authority" "content-type" "content-length");created=1618884473;keyid="test-key-ed25519""#,
        ),
        (
            "signature",
            "sig-b26=:wqcAqbmYJ2ji2glfAMaRy4gruYYnx2nEFN2HN6jrnDnQCK1u02Gb04v9EDgwUPiu4A0w6vuQv5lIp5WPpBKRCw==:",
        ),
    ]);
    let req =
        SignedRequest { method: "POST", authority: "example.com", target: "/foo?param=Value&Pet=dog", headers: &h };
    let base = wba::signature_base(&req, "sig-b26").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        String::from_utf8_lossy(&base),
        concat!(
            "\"date\": Tue, 20 Apr 2021 02:07:55 GMT\n",
            "\"@method\": POST\n",
            "\"@path\": /foo\n",
            "\"@authority\": example.com\n",
            "\"content-type\": application/json\n",
            "\"content-length\": 18\n",
            "\"@signature-params\": (\"date\" \"@method\" \"@path\" \"@authority\" \"content-type\" \"content-length\")",
            ";created=1618884473;keyid=\"test-key-ed25519\""
        )
    );
    let key = Signer::rfc9421();
    let vk = ed25519_dalek::VerifyingKey::from_bytes(
        &base64::Engine::decode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, key.x())
            .unwrap_or_else(|e| panic!("{e}"))
            .try_into()
            .unwrap_or_else(|_| panic!("32 bytes")),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(key.x(), RFC_X);
    assert_eq!(wba::verify_label(&req, "sig-b26", &vk), Ok(()));
    // One changed byte of a covered header breaks it.
    let mut tampered = h.clone();
    tampered.insert("content-length", HeaderValue::from_static("19"));
    let req2 = SignedRequest { headers: &tampered, ..req };
    assert_eq!(wba::verify_label(&req2, "sig-b26", &vk), Err("signature sig-b26 does not verify".into()));
    // Without tag="web-bot-auth" it is not a Web Bot Auth signature.
    assert_eq!(wba::verify(&rfc_keys(), &req, at(1_618_884_473)).await, SignatureCheck::Absent);
}

/// The ed25519 examples of draft-meunier-web-bot-auth-architecture, as the
/// draft's authors publish them in cloudflare/web-bot-auth
/// (`packages/web-bot-auth/test/test_data/web_bot_auth_architecture_v1.json`
/// and `_v2.json`): GET https://example.com/path/to/resource.
#[tokio::test]
async fn webbotauth_draft_examples_verify() {
    struct Example {
        input: &'static str,
        signature: &'static str,
        agent: Option<&'static str>,
        expires: i64,
    }
    let examples = [
        Example {
            input: r#"sig1=("@authority");created=1735689600;keyid="poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U";alg="ed25519";expires=1735693200;nonce="mYotfW3CUjI68sbGw6oKd7kyXqPjZEtU8xFPGWFrqOAf5qC6MDe3pys3SWWCudB0MvwslHy32WXUpkR7u0lt/w==";tag="web-bot-auth""#,
            signature:
                "sig1=:+NA/cssf4Y2bQTMTkyvTGRCaVzp9quyUevdwwMtMOWhhOOZ2T1subBj0BtvdnrpDEuwSAbiTeElXDzHL3WWKCw==:",
            agent: None,
            expires: 1_735_693_200,
        },
        Example {
            input: r#"sig2=("@authority" "signature-agent");created=1735689600;keyid="poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U";alg="ed25519";expires=1735693200;nonce="e8N7S2MFd/qrd6T2R3tdfAuuANngKI7LFtKYI/vowzk4lAZYadIX6wW25MwG7DCT9RUKAJ0qVkU0mEeLElW1qg==";tag="web-bot-auth""#,
            signature:
                "sig2=:jdq0SqOwHdyHr9+r5jw3iYZH6aNGKijYp/EstF4RQTQdi5N5YYKrD+mCT1HA1nZDsi6nJKuHxUi/5Syp3rLWBA==:",
            agent: Some(r#""https://signature-agent.test""#),
            expires: 1_735_693_200,
        },
        Example {
            input: r#"sig1=("@authority");created=1735689600;keyid="poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U";alg="ed25519";expires=4889289600;nonce="zIW8+cdmA3vdYagbxojpONwa/l0EKJ/O3/wD486VvsQjO/RxPaSt6ZxvQaMcQzNnqKN/mQ6hpGiFro2L2qkz5A==";tag="web-bot-auth""#,
            signature:
                "sig1=:QKN4fTdIYfh82fvoZCQiQA1weuozfCS/Led2zTMbewMMqH8PI2Wsy/5c4ao6B6D09nraNQdBNOADg8aM1MqfCg==:",
            agent: None,
            expires: 4_889_289_600,
        },
        Example {
            input: r#"sig2=("@authority" "signature-agent";key="agent2");created=1735689600;keyid="poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U";alg="ed25519";expires=4889289600;nonce="n9p433xm+NJ3ph3upfBIGmsuwHw387YV7Q/F+6BSpGCVjYCqQw6rznNA8PVVLySrAWsv0hQtFioQb6E1YsauiA==";tag="web-bot-auth""#,
            signature:
                "sig2=:RdNFx5Bj6au3YgAMQL/RzmUlZE8QZLIaXGRpw985hWnwPfMxT228NMk6ehRS1PSl4e8PhbNZACSanGdhEwYCCg==:",
            agent: Some(r#"agent2="https://signature-agent.test""#),
            expires: 4_889_289_600,
        },
    ];
    // The v2 examples are valid for a century; allow that window here.
    let keys = Keys::new(KeysConfig {
        pinned: vec![PinnedKey {
            token: "ChatGPT-User".into(),
            jwk: format!(r#"{{"kty":"OKP","crv":"Ed25519","x":"{RFC_X}"}}"#),
        }],
        max_validity: Duration::from_secs(200 * 365 * 86400),
        ..base()
    })
    .unwrap_or_else(|e| panic!("{e}"));
    for (i, ex) in examples.iter().enumerate() {
        let mut pairs = vec![("signature-input", ex.input), ("signature", ex.signature)];
        if let Some(a) = ex.agent {
            pairs.push(("signature-agent", a));
        }
        let h = headers(&pairs);
        let req = SignedRequest { method: "GET", authority: "example.com", target: "/path/to/resource", headers: &h };
        let got = wba::verify(&keys, &req, at(1_735_689_610)).await;
        // draft-ietf-webbotauth-httpsig-protocol-01: a signed request
        // carries Signature-Agent; the older examples without one fail.
        if ex.agent.is_none() {
            assert!(
                invalid(&got)
                    .ends_with("has no Signature-Agent (draft-ietf-webbotauth-httpsig-protocol-01 requires one)"),
                "example {i}: {got:?}"
            );
            continue;
        }
        assert_eq!(
            got,
            SignatureCheck::Valid {
                keyid: RFC_THUMBPRINT.into(),
                token: Some("ChatGPT-User".into()),
                agent: Some("https://signature-agent.test".into()),
            },
            "example {i}"
        );
        // After expiry (beyond the default minute of skew) it is refused.
        let late = wba::verify(&keys, &req, at(ex.expires + 61)).await;
        assert!(expired(&late).contains("expired at"), "example {i}: {late:?}");
        // Another authority is not this site.
        let other = SignedRequest { authority: "example.org", ..req };
        let got = wba::verify(&keys, &other, at(1_735_689_610)).await;
        assert!(invalid(&got).contains("covered @authority \"example.org\" is not this site"), "example {i}: {got:?}");
    }
}

/// The Cloudflare crate's signer and this verifier agree.
#[tokio::test]
async fn web_bot_auth_crate_signatures_verify() {
    use web_bot_auth::components::{CoveredComponent, DerivedComponent};
    use web_bot_auth::keyring::Algorithm;
    use web_bot_auth::message_signatures::{MessageSigner, UnsignedMessage};

    struct Msg {
        input: String,
        signature: String,
    }
    impl UnsignedMessage for Msg {
        fn fetch_components_to_cover(&self) -> indexmap::IndexMap<CoveredComponent, String> {
            indexmap::IndexMap::from_iter([
                (CoveredComponent::Derived(DerivedComponent::Authority { req: false }), "example.com".to_string()),
                (CoveredComponent::Derived(DerivedComponent::Path { req: false }), "/a/b".to_string()),
            ])
        }
        fn register_header_contents(&mut self, input: String, signature: String) {
            self.input = format!("sig1={input}");
            self.signature = format!("sig1={signature}");
        }
    }
    let signer = MessageSigner { keyid: RFC_THUMBPRINT.into(), nonce: "n0nce".into(), tag: "web-bot-auth".into() };
    let mut msg = Msg { input: String::new(), signature: String::new() };
    signer
        .generate_signature_headers_content(
            &mut msg,
            Duration::from_secs(60),
            Algorithm::Ed25519,
            &crawlgate_testkit::wba::RFC9421_ED25519_SECRET,
        )
        .unwrap_or_else(|e| panic!("{e}"));
    let h = headers(&[("signature-input", &msg.input), ("signature", &msg.signature)]);
    let req = SignedRequest { method: "GET", authority: "example.com", target: "/a/b?x=1", headers: &h };
    // RFC 9421 alike; the Web Bot Auth profile of -01 also wants a
    // Signature-Agent, which this signer does not cover.
    let vk = ed25519_dalek::VerifyingKey::from_bytes(&Signer::rfc9421().public_key()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(wba::verify_label(&req, "sig1", &vk), Ok(()));
    let got = wba::verify(&rfc_keys(), &req, SystemTime::now()).await;
    assert_eq!(
        invalid(&got),
        "signature sig1: the request has no Signature-Agent (draft-ietf-webbotauth-httpsig-protocol-01 requires one)"
    );
}

#[tokio::test]
async fn signer_made_requests() {
    let signer = Signer::from_seed(1);
    let keys = pinned("ChatGPT-User", signer.jwk());
    let req = Request::get("shop.example", "/p/1?q=2");
    let opts = SignOptions::web_bot_auth(NOW - 5, 60);
    let valid = SignatureCheck::Valid {
        keyid: signer.keyid(),
        token: Some("ChatGPT-User".into()),
        agent: Some(DEFAULT_AGENT.into()),
    };

    // Good.
    let h = signed_map(&req, &signer, &opts);
    assert_eq!(check(&keys, &req, &h, NOW).await, valid);
    // Covering more of the request, with an agent in either form.
    for agent in [Agent::Dictionary("https://chatgpt.com".into()), Agent::String("https://chatgpt.com".into())] {
        let mut o = opts.clone();
        o.components = ["@method", "@authority", "@path", "@query", "@target-uri", "@scheme", "@request-target"]
            .into_iter()
            .map(Component::derived)
            .collect();
        o.agent = Some(agent);
        let h = signed_map(&req, &signer, &o);
        assert_eq!(
            check(&keys, &req, &h, NOW).await,
            SignatureCheck::Valid {
                keyid: signer.keyid(),
                token: Some("ChatGPT-User".into()),
                agent: Some("https://chatgpt.com".into())
            }
        );
    }
    // A plain-http request covering @target-uri also verifies.
    let mut plain = req.clone();
    plain.scheme = "http".into();
    let mut o = opts.clone();
    o.components.push(Component::derived("@target-uri"));
    assert_eq!(check(&keys, &plain, &signed_map(&plain, &signer, &o), NOW).await, valid);
    // A covered header.
    let mut with_ua = req.clone();
    with_ua.headers.push(("user-agent".into(), "ChatGPT-User/1.0".into()));
    let mut o = opts.clone();
    o.components.push(Component::Header("user-agent".into()));
    let h = signed_map(&with_ua, &signer, &o);
    assert_eq!(check(&keys, &with_ua, &h, NOW).await, valid);
    let mut changed = h.clone();
    changed.insert("user-agent", HeaderValue::from_static("ChatGPT-User/2.0"));
    assert!(invalid(&check(&keys, &with_ua, &changed, NOW).await).contains("does not verify"));
    changed.remove("user-agent");
    assert_eq!(
        invalid(&check(&keys, &with_ua, &changed, NOW).await),
        "signature sig1: covered header \"user-agent\" is missing"
    );

    // Expired, beyond the skew.
    let got = check(&keys, &req, &h_for(&req, &signer, NOW - 200, 60), NOW).await;
    assert_eq!(expired(&got), format!("signature sig1: expired at {} (140 s ago)", NOW - 140));
    // Expired but within the skew.
    assert_eq!(check(&keys, &req, &h_for(&req, &signer, NOW - 100, 60), NOW).await, valid);
    // Created in the future, beyond the skew.
    let got = check(&keys, &req, &h_for(&req, &signer, NOW + 120, 60), NOW).await;
    assert_eq!(invalid(&got), format!("signature sig1: created {} is 120 s in the future", NOW + 120));
    // expires before created; a window longer than a day.
    assert!(invalid(&check(&keys, &req, &h_for(&req, &signer, NOW, -1), NOW).await).contains("is not after created"));
    assert!(invalid(&check(&keys, &req, &h_for(&req, &signer, NOW, 2 * 86400), NOW).await).contains("longer than"));

    // Wrong key: signed by another key under this keyid.
    let mut o = opts.clone();
    o.keyid = Some(signer.keyid());
    let h = signed_map(&req, &Signer::from_seed(2), &o);
    assert_eq!(
        invalid(&check(&keys, &req, &h, NOW).await),
        format!("signature sig1 does not verify with key {}", signer.keyid())
    );
    // A key nobody pinned, with no Signature-Agent.
    let h = signed_map(&req, &Signer::from_seed(3), &opts);
    assert!(matches!(check(&keys, &req, &h, NOW).await, SignatureCheck::UnknownKey { .. }));

    // @authority not covered.
    let mut o = opts.clone();
    o.components = vec![Component::derived("@path")];
    let h = signed_map(&req, &signer, &o);
    assert_eq!(invalid(&check(&keys, &req, &h, NOW).await), "signature sig1: @authority is not covered");
    // Signature-Agent present but not covered.
    let mut o = opts.clone().with_agent("https://chatgpt.com");
    o.cover_agent = false;
    let h = signed_map(&req, &signer, &o);
    assert_eq!(
        invalid(&check(&keys, &req, &h, NOW).await),
        "signature sig1: the Signature-Agent header is present but not covered"
    );
    // Signature-Agent changed after signing.
    let h = signed_map(&req, &signer, &opts.clone().with_agent("https://chatgpt.com"));
    let mut swapped = h.clone();
    swapped.insert("signature-agent", HeaderValue::from_static(r#"sig1="https://evil.example""#));
    assert!(invalid(&check(&keys, &req, &swapped, NOW).await).contains("does not verify"));

    // Tampered path and authority.
    let mut o = opts.clone();
    o.components.push(Component::derived("@path"));
    let h = signed_map(&req, &signer, &o);
    let mut other_path = req.clone();
    other_path.target = "/p/2?q=2".into();
    assert!(invalid(&check(&keys, &other_path, &h, NOW).await).contains("does not verify"));
    let mut other_host = req.clone();
    other_host.authority = "evil.example".into();
    assert_eq!(
        invalid(&check(&keys, &other_host, &h, NOW).await),
        "signature sig1: covered @authority \"evil.example\" is not this site (example.com, shop.example, a.example, site.example)"
    );

    // Profile parameters.
    let mut o = opts.clone();
    o.tag = None;
    assert_eq!(check(&keys, &req, &signed_map(&req, &signer, &o), NOW).await, SignatureCheck::Absent);
    o.tag = Some("other".into());
    assert_eq!(check(&keys, &req, &signed_map(&req, &signer, &o), NOW).await, SignatureCheck::Absent);
    let mut o = opts.clone();
    o.alg = Some("rsa-pss-sha512".into());
    assert!(invalid(&check(&keys, &req, &signed_map(&req, &signer, &o), NOW).await).contains("is not supported"));
    let mut o = opts.clone();
    o.expires = None;
    assert_eq!(invalid(&check(&keys, &req, &signed_map(&req, &signer, &o), NOW).await), "signature sig1: no expires");
    let mut o = opts.clone();
    o.keyid = Some(String::new());
    assert_eq!(invalid(&check(&keys, &req, &signed_map(&req, &signer, &o), NOW).await), "signature sig1: no keyid");
    o.alg = None;
    o.keyid = None;
    assert_eq!(check(&keys, &req, &signed_map(&req, &signer, &o), NOW).await, valid, "alg is optional");

    // Several labels: another scheme's signature first, then ours.
    let ours = signer.sign(&req, &SignOptions { label: "wba".into(), ..opts.clone() });
    let h = headers(&[
        ("signature-input", &format!(r#"other=("@method");created={NOW};keyid="k""#)),
        ("signature-input", &ours.signature_input),
        ("signature", "other=:AAAA:"),
        ("signature", &ours.signature),
        ("signature-agent", ours.signature_agent.as_deref().unwrap_or_default()),
    ]);
    assert_eq!(check(&keys, &req, &h, NOW).await, valid);
    // Two web-bot-auth labels: a bad one, then a good one.
    let bad = Signer::from_seed(2)
        .sign(&req, &SignOptions { label: "a".into(), keyid: Some(signer.keyid()), ..opts.clone() });
    let good = signer.sign(&req, &SignOptions { label: "b".into(), ..opts.clone() });
    let h = headers(&[
        ("signature-input", &format!("{}, {}", bad.signature_input, good.signature_input)),
        ("signature", &format!("{}, {}", bad.signature, good.signature)),
        ("signature-agent", good.signature_agent.as_deref().unwrap_or_default()),
    ]);
    assert_eq!(check(&keys, &req, &h, NOW).await, valid);
}

fn s(v: &[u8]) -> &[u8] {
    v
}

fn h_for(req: &Request, signer: &Signer, created: i64, valid_for: i64) -> HeaderMap {
    signed_map(req, signer, &SignOptions::web_bot_auth(created, valid_for))
}

#[tokio::test]
async fn malformed_headers_are_invalid_or_absent_never_a_panic() {
    let signer = Signer::from_seed(1);
    let keys = pinned("ChatGPT-User", signer.jwk());
    let good = signer.sign(&Request::get("a.example", "/"), &SignOptions::web_bot_auth(NOW, 60));
    let huge = format!("sig1=(\"@authority\");tag=\"web-bot-auth\";x=\"{}\"", "a".repeat(20_000));
    // (header fields, the reason's expected text or None for Absent)
    type Case<'a> = (Vec<(&'a str, &'a [u8])>, Option<&'a str>);
    let cases: Vec<Case> = vec![
        (vec![("signature-input", s(b"garbage((("))], Some("Signature-Input is not a structured-field dictionary")),
        (vec![("signature-input", s(b"sig1=\xff\xfe"))], Some("Signature-Input is not a structured-field dictionary")),
        (vec![("signature-input", huge.as_bytes())], Some("signature-input is longer than 16384 bytes")),
        (vec![("signature-input", good.signature_input.as_bytes())], Some("there is no Signature header")),
        (
            vec![("signature-input", good.signature_input.as_bytes()), ("signature", s(b"sig1=:not base64!:"))],
            Some("Signature is not a structured-field dictionary"),
        ),
        (
            vec![("signature-input", good.signature_input.as_bytes()), ("signature", s(b"other=:AAAA:"))],
            Some("Signature has no member sig1"),
        ),
        (
            vec![("signature-input", good.signature_input.as_bytes()), ("signature", s(b"sig1=:AAAA:"))],
            Some("Signature sig1 is 3 bytes, an Ed25519 signature is 64"),
        ),
        (
            vec![("signature-input", good.signature_input.as_bytes()), ("signature", s(b"sig1=\"text\""))],
            Some("Signature sig1 is not a byte sequence"),
        ),
        (vec![("signature-input", s(br#"sig1=("@authority");tag="web-bot-auth";keyid=1;created=1;expires=2"#)), ("signature", good.signature.as_bytes())], Some("keyid is not a string")),
        (vec![("signature-input", s(br#"sig1=("@authority");tag="web-bot-auth";keyid="k";created="x";expires=2"#)), ("signature", good.signature.as_bytes())], Some("created is not an integer")),
        (vec![("signature-input", s(br#"sig1=("@authority" "@authority");tag="web-bot-auth";keyid="k";created=1750000000;expires=1750000060"#)), ("signature", good.signature.as_bytes())], Some("covered twice")),
        (vec![("signature-input", s(br#"sig1=("@authority" "@bogus");tag="web-bot-auth";keyid="k";created=1750000000;expires=1750000060"#)), ("signature", good.signature.as_bytes())], Some("unknown derived component @bogus")),
        (vec![("signature-input", s(br#"sig1=("@authority" "@status");tag="web-bot-auth";keyid="k";created=1750000000;expires=1750000060"#)), ("signature", good.signature.as_bytes())], Some("@status is a response component")),
        (vec![("signature-input", s(br#"sig1=("@authority" "Host");tag="web-bot-auth";keyid="k";created=1750000000;expires=1750000060"#)), ("signature", good.signature.as_bytes())], Some("is not a lower-case field name")),
        (vec![("signature-input", s(br#"sig1=("@authority" 1);tag="web-bot-auth";keyid="k";created=1750000000;expires=1750000060"#)), ("signature", good.signature.as_bytes())], Some("is not a string")),
        (vec![("signature-input", s(br#"sig1=("@authority";req);tag="web-bot-auth";keyid="k";created=1750000000;expires=1750000060"#)), ("signature", good.signature.as_bytes())], Some("has parameters this verifier does not support")),
        (vec![("signature-input", s(br#"sig1=("@authority" "x";tr);tag="web-bot-auth";keyid="k";created=1750000000;expires=1750000060"#)), ("signature", good.signature.as_bytes())], Some("unsupported on a request")),
        (vec![("signature-input", s(br#"sig1=("@authority" "@query-param";name="zz");tag="web-bot-auth";keyid="k";created=1750000000;expires=1750000060"#)), ("signature", good.signature.as_bytes())], Some("is not in the query")),
        (vec![("signature-input", s(br#"sig1=("@authority");tag="web-bot-auth";keyid="k";created=99999999999999999;expires=1"#)), ("signature", good.signature.as_bytes())], Some("Signature-Input is not a structured-field dictionary")),
        (vec![("signature-input", s(br#"sig1=("@authority");tag="web-bot-auth";keyid="k";created=-999999999999999;expires=999999999999999"#)), ("signature", good.signature.as_bytes())], Some("keyid \"k\" is not a JWK SHA-256 thumbprint")),
        (vec![("signature-input", s(b"sig1=\"@authority\";tag=\"web-bot-auth\""))], None),
        (vec![("signature-input", s(b""))], None),
        (vec![("signature", good.signature.as_bytes())], None),
        (vec![("signature-input", s(br#"sig1=();tag=web-bot-auth"#))], None),
    ];
    for (i, (pairs, want)) in cases.iter().enumerate() {
        let mut h = HeaderMap::new();
        for (n, v) in pairs {
            h.append(
                HeaderName::from_bytes(n.as_bytes()).unwrap_or_else(|e| panic!("{e}")),
                HeaderValue::from_bytes(v).unwrap_or_else(|e| panic!("case {i}: {e}")),
            );
        }
        let req = SignedRequest { method: "GET", authority: "a.example", target: "/", headers: &h };
        let got = wba::verify(&keys, &req, at(NOW)).await;
        match want {
            Some(w) => assert!(invalid(&got).contains(w), "case {i}: want {w:?}, got {got:?}"),
            None => assert_eq!(got, SignatureCheck::Absent, "case {i}"),
        }
        assert_eq!(wba::verify_cached(&keys, &req, at(NOW)), Some(got), "case {i}");
    }
}

mod props {
    use proptest::prelude::*;

    use super::*;

    /// Built once: a key store builds an HTTP client, which is not cheap.
    static KEYS: std::sync::LazyLock<Keys> = std::sync::LazyLock::new(rfc_keys);

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        #[test]
        fn random_signature_headers_never_panic_or_verify(
            input in "[ -~]{0,200}",
            sig in "[ -~]{0,120}",
            agent in proptest::option::of("[ -~]{0,80}"),
            target in "/[ -~]{0,40}",
        ) {
            let keys = &*KEYS;
            let mut h = HeaderMap::new();
            for (n, v) in [("signature-input", Some(input)), ("signature", Some(sig)), ("signature-agent", agent)] {
                if let Some(v) = v.and_then(|v| HeaderValue::from_str(&v).ok()) {
                    h.insert(n, v);
                }
            }
            let req = SignedRequest { method: "GET", authority: "example.com", target: &target, headers: &h };
            let got = wba::verify_cached(keys, &req, at(NOW));
            prop_assert!(!matches!(got, Some(SignatureCheck::Valid { .. })), "{got:?}");
        }

        #[test]
        fn mutated_signature_inputs_never_verify(pos in 0usize..400, byte in 0x20u8..0x7f) {
            let keys = &*KEYS;
            let signed = Signer::rfc9421().sign(&Request::get("example.com", "/"), &SignOptions::web_bot_auth(NOW, 60));
            let mut input = signed.signature_input.clone().into_bytes();
            let pos = pos % input.len();
            prop_assume!(input[pos] != byte);
            input[pos] = byte;
            let Ok(v) = HeaderValue::from_bytes(&input) else { return Ok(()) };
            let mut h = HeaderMap::new();
            h.insert("signature-input", v);
            h.insert("signature", HeaderValue::from_str(&signed.signature).unwrap_or_else(|e| panic!("{e}")));
            let req = SignedRequest { method: "GET", authority: "example.com", target: "/", headers: &h };
            let got = wba::verify_cached(keys, &req, at(NOW));
            // Only a change the parameters line does not see (spacing the
            // serialization normalises) may still verify.
            if let Some(SignatureCheck::Valid { .. }) = got {
                let normalised: String = String::from_utf8_lossy(&input).to_string();
                prop_assert!(normalised.replace(' ', "") == signed.signature_input.replace(' ', ""), "{normalised}");
            }
        }
    }
}

fn directory_keys() -> Keys {
    Keys::new(KeysConfig { allow_http: true, any_agent: true, allow_private: true, ..base() })
        .unwrap_or_else(|e| panic!("{e}"))
}

#[tokio::test]
async fn directory_keys_are_fetched_once_and_cached() {
    let signer = Signer::from_seed(7);
    let server = DirectoryServer::start(DirectoryResponse::ok(directory_json(&[&Signer::from_seed(8), &signer])));
    let keys = directory_keys();
    let req = Request::get("site.example", "/");
    let h = signed_map(&req, &signer, &SignOptions::web_bot_auth(NOW, 60).with_agent(&server.agent_url()));
    let sr = SignedRequest { method: "GET", authority: "site.example", target: "/", headers: &h };
    assert_eq!(wba::verify_cached(&keys, &sr, at(NOW)), None, "not fetched yet");
    // Concurrent first requests share one fetch.
    let results = futures_join(&keys, &sr, 8).await;
    let valid = SignatureCheck::Valid { keyid: signer.keyid(), token: None, agent: Some(server.agent_url()) };
    assert!(results.iter().all(|r| *r == valid), "{results:?}");
    assert_eq!(server.hits(), 1);
    assert_eq!(check(&keys, &req, &h, NOW).await, valid);
    assert_eq!(wba::verify_cached(&keys, &sr, at(NOW)), Some(valid.clone()));
    assert_eq!(server.hits(), 1);
    assert_eq!(keys.cached_directories(), 1);

    // A key the directory does not list: nothing can tell, and a miss just
    // after a fetch does not refetch.
    let stranger = Signer::from_seed(9);
    let h = signed_map(&req, &stranger, &SignOptions::web_bot_auth(NOW, 60).with_agent(&server.agent_url()));
    match check(&keys, &req, &h, NOW).await {
        SignatureCheck::UnknownKey { reason } => assert!(reason.contains("is not in http://127.0.0.1:"), "{reason}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(server.hits(), 1);
    // A listed key that did not make the signature.
    let mut o = SignOptions::web_bot_auth(NOW, 60).with_agent(&server.agent_url());
    o.keyid = Some(signer.keyid());
    let h = signed_map(&req, &stranger, &o);
    assert!(invalid(&check(&keys, &req, &h, NOW).await).contains("does not verify"));
}

async fn futures_join(keys: &Keys, sr: &SignedRequest<'_>, n: usize) -> Vec<SignatureCheck> {
    let mut set = Vec::new();
    for _ in 0..n {
        set.push(wba::verify(keys, sr, at(NOW)));
    }
    let mut out = Vec::new();
    let joined = futures_util_join_all(set).await;
    out.extend(joined);
    out
}

/// Polls the futures together on this task (no extra dependency).
async fn futures_util_join_all<F: std::future::Future>(futs: Vec<F>) -> Vec<F::Output> {
    let mut futs: Vec<std::pin::Pin<Box<F>>> = futs.into_iter().map(Box::pin).collect();
    let mut out: Vec<Option<F::Output>> = futs.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (f, slot) in futs.iter_mut().zip(out.iter_mut()) {
            if slot.is_none() {
                match f.as_mut().poll(cx) {
                    std::task::Poll::Ready(v) => *slot = Some(v),
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    out.into_iter().flatten().collect()
}

#[tokio::test]
async fn unreachable_or_bad_directories_leave_the_key_unknown() {
    let signer = Signer::from_seed(7);
    let req = Request::get("site.example", "/");
    // Nothing listens: take a free port and close it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap_or_else(|e| panic!("{e}"))
        .port();
    let down = format!("http://127.0.0.1:{port}");
    let keys = directory_keys();
    let h = signed_map(&req, &signer, &SignOptions::web_bot_auth(NOW, 60).with_agent(&down));
    match check(&keys, &req, &h, NOW).await {
        SignatureCheck::UnknownKey { reason } => assert!(reason.starts_with(&format!("fetching {down}")), "{reason}"),
        other => panic!("{other:?}"),
    }

    let bad = [
        (DirectoryResponse { status: 500, ..DirectoryResponse::ok(directory_json(&[&signer])) }, "status 500"),
        (
            DirectoryResponse { content_type: "text/html".into(), ..DirectoryResponse::ok(directory_json(&[&signer])) },
            "media type",
        ),
        (DirectoryResponse::ok("{not json".into()), "is not JSON"),
        (DirectoryResponse::ok(format!(r#"{{"keys":[],"pad":"{}"}}"#, "x".repeat(70_000))), "larger than 65536 bytes"),
    ];
    for (resp, want) in bad {
        let server = DirectoryServer::start(resp);
        let keys = directory_keys();
        let h = signed_map(&req, &signer, &SignOptions::web_bot_auth(NOW, 60).with_agent(&server.agent_url()));
        match check(&keys, &req, &h, NOW).await {
            SignatureCheck::UnknownKey { reason } => assert!(reason.contains(want), "{want}: {reason}"),
            other => panic!("{want}: {other:?}"),
        }
        // The failure is remembered briefly: no second fetch.
        let _ = check(&keys, &req, &h, NOW).await;
        assert_eq!(server.hits(), 1, "{want}");
    }

    // Without any_agent, a host the catalog does not list is not fetched,
    // and plain http is refused without allow_http.
    let server = DirectoryServer::start(DirectoryResponse::ok(directory_json(&[&signer])));
    let strict = Keys::new(KeysConfig { allow_http: true, ..base() }).unwrap_or_else(|e| panic!("{e}"));
    let h = signed_map(&req, &signer, &SignOptions::web_bot_auth(NOW, 60).with_agent(&server.agent_url()));
    match check(&strict, &req, &h, NOW).await {
        SignatureCheck::UnknownKey { reason } => assert!(reason.contains("is not a known agent"), "{reason}"),
        other => panic!("{other:?}"),
    }
    // -01: a member value that is not an https URI makes the signature
    // invalid.
    let https_only = Keys::new(KeysConfig { any_agent: true, ..base() }).unwrap_or_else(|e| panic!("{e}"));
    let got = check(&https_only, &req, &h, NOW).await;
    assert!(invalid(&got).contains("is not an https URI"), "{got:?}");
    assert_eq!(server.hits(), 0);
}

/// The defaults of `KeysConfig` (as the policy's): bound to this site's
/// authorities, `@authority`, `@method` and `@path` covered, at most five
/// minutes of validity.
fn site_keys(signer: &Signer, authorities: &[&str]) -> Keys {
    Keys::new(KeysConfig {
        pinned: vec![PinnedKey { token: "ChatGPT-User".into(), jwk: signer.jwk() }],
        authorities: authorities.iter().map(|a| (*a).to_owned()).collect(),
        ..KeysConfig::default()
    })
    .unwrap_or_else(|e| panic!("{e}"))
}

/// What the draft calls a complete request signature: authority, method
/// and path.
fn full_opts(created: i64, valid_for: i64) -> SignOptions {
    let mut o = SignOptions::web_bot_auth(created, valid_for);
    o.components = ["@authority", "@method", "@path"].into_iter().map(Component::derived).collect();
    o
}

#[tokio::test]
async fn a_signature_made_for_another_site_is_invalid() {
    let signer = Signer::from_seed(11);
    let keys = site_keys(&signer, &["www.example.com", "Shop.Example:8443"]);
    let valid = SignatureCheck::Valid {
        keyid: signer.keyid(),
        token: Some("ChatGPT-User".into()),
        agent: Some(DEFAULT_AGENT.into()),
    };
    // Signed for other.example and presented with its Host: a valid
    // signature, but not for this site.
    let other = Request::get("other.example", "/private/x");
    let h = signed_map(&other, &signer, &full_opts(NOW - 5, 60));
    assert_eq!(
        invalid(&check(&keys, &other, &h, NOW).await),
        "signature sig1: covered @authority \"other.example\" is not this site (www.example.com, shop.example:8443)"
    );
    // This site, in any case, with or without the default port.
    for authority in ["www.example.com", "WWW.EXAMPLE.COM", "www.example.com:443", "shop.example:8443"] {
        let req = Request::get(authority, "/private/x");
        assert_eq!(check(&keys, &req, &signed_map(&req, &signer, &full_opts(NOW - 5, 60)), NOW).await, valid);
    }
    // Another port of this host is another site.
    let req = Request::get("shop.example", "/private/x");
    let got = check(&keys, &req, &signed_map(&req, &signer, &full_opts(NOW - 5, 60)), NOW).await;
    assert!(invalid(&got).contains("covered @authority \"shop.example\" is not this site"), "{got:?}");
    // @target-uri's authority is bound too, from an absolute-form target.
    let mut o = SignOptions::web_bot_auth(NOW - 5, 60);
    o.components = vec![Component::derived("@target-uri"), Component::derived("@method")];
    let mut abs = Request::get("www.example.com", "https://other.example/private/x");
    let h = signed_map(&Request::get("other.example", "/private/x"), &signer, &o);
    let got = check(&keys, &abs, &h, NOW).await;
    assert!(invalid(&got).contains("covered @authority \"other.example\" is not this site"), "{got:?}");
    abs.target = "https://www.example.com/private/x".into();
    let h = signed_map(&Request::get("www.example.com", "/private/x"), &signer, &o);
    assert_eq!(check(&keys, &abs, &h, NOW).await, valid, "@target-uri covers @authority and @path");
    // No authority configured: nothing is valid.
    let unbound = site_keys(&signer, &[]);
    let req = Request::get("www.example.com", "/");
    let got = check(&unbound, &req, &signed_map(&req, &signer, &full_opts(NOW - 5, 60)), NOW).await;
    assert_eq!(
        invalid(&got),
        "signature sig1: covered @authority \"www.example.com\" cannot be checked: no authority is configured for this site"
    );
}

#[tokio::test]
async fn validity_is_at_most_five_minutes_by_default() {
    let signer = Signer::from_seed(12);
    let keys = site_keys(&signer, &["www.example.com"]);
    let req = Request::get("www.example.com", "/a");
    let valid = SignatureCheck::Valid {
        keyid: signer.keyid(),
        token: Some("ChatGPT-User".into()),
        agent: Some(DEFAULT_AGENT.into()),
    };
    assert_eq!(check(&keys, &req, &signed_map(&req, &signer, &full_opts(NOW - 5, 300)), NOW).await, valid);
    let got = check(&keys, &req, &signed_map(&req, &signer, &full_opts(NOW - 5, 301)), NOW).await;
    assert_eq!(invalid(&got), "signature sig1: valid for 301 s, longer than the 300 s allowed");
    // A day, which the draft allows at most and the old default accepted.
    let got = check(&keys, &req, &signed_map(&req, &signer, &full_opts(NOW - 5, 86_400)), NOW).await;
    assert_eq!(invalid(&got), "signature sig1: valid for 86400 s, longer than the 300 s allowed");
    // Expired (beyond the minute of skew).
    let got = check(&keys, &req, &signed_map(&req, &signer, &full_opts(NOW - 400, 300)), NOW).await;
    assert_eq!(expired(&got), format!("signature sig1: expired at {} (100 s ago)", NOW - 100));
}

#[tokio::test]
async fn method_and_path_must_be_covered_unless_configured() {
    let signer = Signer::from_seed(13);
    let keys = site_keys(&signer, &["www.example.com"]);
    let req = Request::get("www.example.com", "/private/x");
    let valid = SignatureCheck::Valid {
        keyid: signer.keyid(),
        token: Some("ChatGPT-User".into()),
        agent: Some(DEFAULT_AGENT.into()),
    };
    let only_authority = signed_map(&req, &signer, &SignOptions::web_bot_auth(NOW - 5, 60));
    assert_eq!(
        invalid(&check(&keys, &req, &only_authority, NOW).await),
        "signature sig1: @method is not covered (required by this site)"
    );
    let mut o = SignOptions::web_bot_auth(NOW - 5, 60);
    o.components.push(Component::derived("@method"));
    assert_eq!(
        invalid(&check(&keys, &req, &signed_map(&req, &signer, &o), NOW).await),
        "signature sig1: @path is not covered (required by this site)"
    );
    // `@request-target` holds the path.
    o.components.push(Component::derived("@request-target"));
    assert_eq!(check(&keys, &req, &signed_map(&req, &signer, &o), NOW).await, valid);
    // Configured to require `@authority` only.
    let lax = Keys::new(KeysConfig {
        pinned: vec![PinnedKey { token: "ChatGPT-User".into(), jwk: signer.jwk() }],
        authorities: vec!["www.example.com".into()],
        required_components: vec!["@authority".into()],
        ..KeysConfig::default()
    })
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(check(&lax, &req, &only_authority, NOW).await, valid);
}

#[tokio::test]
async fn a_replayed_signature_is_refused_and_a_forgery_cannot_poison_the_cache() {
    use crawlgate_identity::{Evidence, Verifier, VerifierConfig};
    use crawlgate_policy::verification::{Method, Verification};
    let signer = Signer::from_seed(14);
    let src = format!(
        "[upstream]\nservers = [\"127.0.0.1:8000\"]\n[verification]\n[verification.signatures]\nauthorities = [\"www.example.com\"]\nreplay_cache_size = 2\n[[verification.keys]]\ntoken = \"ExampleBot\"\njwk = '{}'\n[[group]]\nuser_agents = [\"ExampleBot\"]\n",
        signer.jwk()
    );
    let policy = crawlgate_policy::load(&src, "p.toml").unwrap_or_else(|e| panic!("{e}")).policy;
    let v = Verifier::new(VerifierConfig::for_policy(&policy)).unwrap_or_else(|e| panic!("{e}"));
    let ip: std::net::IpAddr = [192, 0, 2, 1].into();
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64);
    let req = Request::get("www.example.com", "/private/x");
    let h = signed_map(&req, &signer, &full_opts(now - 5, 60));
    let sr = SignedRequest { method: "GET", authority: "www.example.com", target: "/private/x", headers: &h };
    // A forger replays the genuine bytes on another path first: invalid,
    // and not recorded.
    let forged = SignedRequest { target: "/other", ..sr };
    let got = v.verify(None, ip, Some(&forged)).await;
    assert_eq!(got.verification, Verification::Spoofed(Method::Signature), "{got:?}");
    // The genuine request verifies once...
    let first = v.verify(None, ip, Some(&sr)).await;
    assert_eq!(first.verification, Verification::Verified(Method::Signature), "{first:?}");
    assert_eq!(first.signed_token.as_deref(), Some("ExampleBot"));
    // ...and the same signature again is a replay.
    let again = v.verify(None, ip, Some(&sr)).await;
    assert_eq!(again.verification, Verification::Spoofed(Method::Signature));
    assert_eq!(again.evidence, Evidence::Replayed { keyid: signer.keyid() });
    assert_eq!(again.evidence.to_string(), format!("replayed signature by keyid {}", signer.keyid()));
    assert_eq!(again.signed_token, None);
    // A fresh signature (another created) is fine; the cache then holds two
    // and a third, still-valid signature cannot be recorded: not proof.
    let h2 = signed_map(&req, &signer, &full_opts(now - 4, 60));
    let sr2 = SignedRequest { headers: &h2, ..sr };
    assert_eq!(v.verify(None, ip, Some(&sr2)).await.verification, Verification::Verified(Method::Signature));
    let h3 = signed_map(&req, &signer, &full_opts(now - 3, 60));
    let sr3 = SignedRequest { headers: &h3, ..sr };
    let full = v.verify(None, ip, Some(&sr3)).await;
    assert_eq!((full.verification, full.evidence), (Verification::Unverified, Evidence::ReplayCacheFull));
}

/// `allow_http_directories` allows plain http only for the hosts otherwise
/// allowed; fetching from any `Signature-Agent` host (a client's choice) is
/// `any_directory_host`, and from a loopback one `allow_private_directories`
/// too.
#[tokio::test]
async fn http_directories_do_not_open_every_host() {
    use crawlgate_identity::{Evidence, Verifier, VerifierConfig};
    let signer = Signer::from_seed(15);
    let server = DirectoryServer::start(DirectoryResponse::ok(directory_json(&[&signer])));
    let verifier = |extra: &str| {
        let src = format!(
            "[upstream]\nservers = [\"127.0.0.1:8000\"]\n[verification]\n[verification.signatures]\nauthorities = [\"site.example\"]\nallow_http_directories = true\n{extra}"
        );
        let policy = crawlgate_policy::load(&src, "p.toml").unwrap_or_else(|e| panic!("{e}")).policy;
        Verifier::new(VerifierConfig::for_policy(&policy)).unwrap_or_else(|e| panic!("{e}"))
    };
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64);
    let req = Request::get("site.example", "/");
    let h = signed_map(&req, &signer, &full_opts(now - 5, 60).with_agent(&server.agent_url()));
    let sr = SignedRequest { method: "GET", authority: "site.example", target: "/", headers: &h };
    let ip: std::net::IpAddr = [192, 0, 2, 1].into();
    let got = verifier("").verify(None, ip, Some(&sr)).await;
    match &got.evidence {
        Evidence::UnknownKey { reason } => assert!(reason.contains("is not a known agent"), "{reason}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(server.hits(), 0);
    // Any host, but a loopback one is refused before anything is sent.
    let got = verifier("any_directory_host = true\n").verify(None, ip, Some(&sr)).await;
    match &got.evidence {
        Evidence::UnknownKey { reason } => {
            assert!(reason.ends_with("is not a public address; directory not fetched"), "{reason}")
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(server.hits(), 0);
    let got =
        verifier("any_directory_host = true\nallow_private_directories = true\n").verify(None, ip, Some(&sr)).await;
    assert_eq!(got.evidence, Evidence::Key { keyid: signer.keyid() });
    assert_eq!(server.hits(), 1);
}

/// A directory that signs its response (draft-meunier-http-message-signatures-directory)
/// is trusted only when the signature verifies with a key it lists, over
/// its own authority; an unsigned one is read as before.
#[tokio::test]
async fn directory_response_signatures_are_verified() {
    let signer = Signer::from_seed(21);
    let stranger = Signer::from_seed(22);
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64);
    let req = Request::get("site.example", "/");
    let signed_by = |who: &Signer, authority: &str, created: i64, expires: i64| {
        let (input, signature) = who.sign_directory(authority, created, expires);
        vec![("Signature-Input".to_owned(), input), ("Signature".to_owned(), signature)]
    };
    /// Who signs, for which authority (None: the server's), created, expires, the outcome.
    type Row<'a> = (&'a Signer, Option<&'a str>, i64, i64, Result<(), &'a str>);
    let rows: [Row<'_>; 5] = [
        (&signer, None, now - 5, now + 300, Ok(())),
        (&stranger, None, now - 5, now + 300, Err("keyid \"")),
        (&signer, Some("other.example"), now - 5, now + 300, Err("does not verify with key")),
        (&signer, None, now - 600, now - 300, Err("expired")),
        (&signer, None, now + 600, now + 900, Err("created in the future")),
    ];
    for (who, authority, created, expires, want) in rows {
        let server = DirectoryServer::start(DirectoryResponse::ok(directory_json(&[&signer])));
        let own = server.addr().to_string();
        let headers = signed_by(who, authority.unwrap_or(&own), created, expires);
        server.set_response(DirectoryResponse { headers, ..DirectoryResponse::ok(directory_json(&[&signer])) });
        let keys = directory_keys();
        let h = signed_map(&req, &signer, &SignOptions::web_bot_auth(now - 5, 60).with_agent(&server.agent_url()));
        let got = check(&keys, &req, &h, now).await;
        match (want, &got) {
            (Ok(()), SignatureCheck::Valid { keyid, .. }) => assert_eq!(*keyid, signer.keyid()),
            (Err(w), SignatureCheck::UnknownKey { reason }) => {
                assert!(reason.contains("the directory's response signature is invalid, not trusted"), "{reason}");
                assert!(reason.contains(w), "{w}: {reason}");
            }
            _ => panic!("{want:?}: {got:?}"),
        }
    }
}

/// A Signature Agent Card's `rfc9309-product-token` binds its keys to that
/// token (with `any_agent`: a host the catalog does not list); a token that
/// is not an RFC 9309 product token binds nothing.
#[tokio::test]
async fn card_tokens_bind_directory_keys() {
    use crawlgate_testkit::wba::card_json;
    let signer = Signer::from_seed(23);
    let req = Request::get("site.example", "/");
    for (members, want) in [
        (r#""rfc9309-product-token":"GPTBot""#, Some("GPTBot")),
        (r#""rfc9309-product-token":"GPT Bot/1""#, None),
        (r#""purpose":"search""#, None),
    ] {
        let server = DirectoryServer::start(DirectoryResponse::ok(card_json(&[&signer], members)));
        let keys = directory_keys();
        let h = signed_map(&req, &signer, &SignOptions::web_bot_auth(NOW, 60).with_agent(&server.agent_url()));
        assert_eq!(
            check(&keys, &req, &h, NOW).await,
            SignatureCheck::Valid {
                keyid: signer.keyid(),
                token: want.map(str::to_owned),
                agent: Some(server.agent_url())
            },
            "{members}"
        );
    }
}

/// A directory that goes away after its keys were fetched: the cached keys
/// keep verifying (no refetch while they are fresh).
#[tokio::test]
async fn cached_keys_outlive_their_directory() {
    let signer = Signer::from_seed(24);
    let server = DirectoryServer::start(DirectoryResponse::ok(directory_json(&[&signer])));
    let agent = server.agent_url();
    let keys = directory_keys();
    let req = Request::get("site.example", "/");
    let h = signed_map(&req, &signer, &SignOptions::web_bot_auth(NOW, 60).with_agent(&agent));
    let valid = SignatureCheck::Valid { keyid: signer.keyid(), token: None, agent: Some(agent.clone()) };
    assert_eq!(check(&keys, &req, &h, NOW).await, valid);
    drop(server);
    let h = signed_map(&req, &signer, &SignOptions::web_bot_auth(NOW + 1, 60).with_agent(&agent));
    assert_eq!(check(&keys, &req, &h, NOW + 1).await, valid);
}

/// The replay seam: a verifier given another [`ReplayStore`] (a fleet's
/// shared store) asks it, not its own cache, and only about signatures
/// that verified.
#[tokio::test]
async fn a_replay_store_replaces_the_instance_cache() {
    use crawlgate_identity::replay::{Replay, ReplayStore};
    use crawlgate_identity::{Evidence, Verifier, VerifierConfig};
    use std::sync::atomic::{AtomicUsize, Ordering};
    /// Says every signature was seen, and counts the questions.
    #[derive(Debug, Default)]
    struct SeenEverything(AtomicUsize);
    impl ReplayStore for SeenEverything {
        fn seen_once<'a>(
            &'a self,
            _keyid: &'a str,
            _signature: &'a [u8],
            _forget_after: i64,
            _now: i64,
        ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Replay> + Send + 'a>> {
            self.0.fetch_add(1, Ordering::SeqCst);
            Box::pin(std::future::ready(Replay::Replayed))
        }
    }
    let signer = Signer::from_seed(25);
    let src = format!(
        "[upstream]\nservers = [\"127.0.0.1:8000\"]\n[verification]\n[verification.signatures]\nauthorities = [\"site.example\"]\n\
         [[verification.keys]]\ntoken = \"ExampleBot\"\njwk = '{}'\n",
        signer.jwk()
    );
    let policy = crawlgate_policy::load(&src, "p.toml").unwrap_or_else(|e| panic!("{e}")).policy;
    let store = std::sync::Arc::new(SeenEverything::default());
    let verifier = Verifier::new(VerifierConfig::for_policy(&policy))
        .unwrap_or_else(|e| panic!("{e}"))
        .with_replay_store(store.clone());
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64);
    let req = Request::get("site.example", "/");
    let ip: std::net::IpAddr = [192, 0, 2, 1].into();
    let h = signed_map(&req, &signer, &full_opts(now - 5, 60));
    let sr = SignedRequest { method: "GET", authority: "site.example", target: "/", headers: &h };
    let got = verifier.verify(None, ip, Some(&sr)).await;
    assert_eq!(got.evidence, Evidence::Replayed { keyid: signer.keyid() });
    assert_eq!(got.signature, Some(crawlgate_policy::verification::SignatureOutcome::Replayed));
    assert_eq!(store.0.load(Ordering::SeqCst), 1);
    // A signature that does not verify never reaches the store.
    let h = signed_map(&Request::get("site.example", "/other"), &signer, &full_opts(now - 5, 60));
    let sr = SignedRequest { method: "GET", authority: "site.example", target: "/", headers: &h };
    let got = verifier.verify(None, ip, Some(&sr)).await;
    assert!(matches!(got.evidence, Evidence::BadSignature { .. }), "{got:?}");
    assert_eq!(store.0.load(Ordering::SeqCst), 1);
}

/// A directory response signed by the Cloudflare crate's signer (`"@authority";req`,
/// `tag="http-message-signatures-directory"`) verifies here; for another
/// authority it does not.
#[test]
fn web_bot_auth_crate_directory_signatures_verify() {
    use crawlgate_identity::directory::{parse_directory_document, verify_directory_response, DirectorySignature};
    use web_bot_auth::components::{CoveredComponent, DerivedComponent};
    use web_bot_auth::keyring::Algorithm;
    use web_bot_auth::message_signatures::{MessageSigner, UnsignedMessage};

    struct Msg {
        input: String,
        signature: String,
    }
    impl UnsignedMessage for Msg {
        fn fetch_components_to_cover(&self) -> indexmap::IndexMap<CoveredComponent, String> {
            indexmap::IndexMap::from_iter([(
                CoveredComponent::Derived(DerivedComponent::Authority { req: true }),
                "directory.example".to_string(),
            )])
        }
        fn register_header_contents(&mut self, input: String, signature: String) {
            self.input = format!("binding0={input}");
            self.signature = format!("binding0={signature}");
        }
    }
    let signer = MessageSigner {
        keyid: RFC_THUMBPRINT.into(),
        nonce: "n0nce".into(),
        tag: "http-message-signatures-directory".into(),
    };
    let mut msg = Msg { input: String::new(), signature: String::new() };
    signer
        .generate_signature_headers_content(
            &mut msg,
            Duration::from_secs(300),
            Algorithm::Ed25519,
            &crawlgate_testkit::wba::RFC9421_ED25519_SECRET,
        )
        .unwrap_or_else(|e| panic!("{e}"));
    let h = headers(&[("signature-input", &msg.input), ("signature", &msg.signature)]);
    let body = format!(r#"{{"keys":[{{"kty":"OKP","crv":"Ed25519","x":"{RFC_X}"}}]}}"#);
    let keys = parse_directory_document(body.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64);
    assert_eq!(
        verify_directory_response(&h, "directory.example", &keys, now, 60),
        DirectorySignature::Valid { keyid: RFC_THUMBPRINT.into() }
    );
    assert!(matches!(
        verify_directory_response(&h, "other.example", &keys, now, 60),
        DirectorySignature::Invalid { reason } if reason.contains("does not verify")
    ));
    assert_eq!(
        verify_directory_response(&HeaderMap::new(), "directory.example", &keys, now, 60),
        DirectorySignature::Unsigned
    );
}

/// A directory that redirects is not followed: the key stays unknown and
/// the redirect's target is never contacted.
#[tokio::test]
async fn directory_redirects_are_not_followed() {
    let signer = Signer::from_seed(26);
    let target = DirectoryServer::start(DirectoryResponse::ok(directory_json(&[&signer])));
    let location = format!("{}/.well-known/http-message-signatures-directory", target.agent_url());
    let redirect = DirectoryServer::start(DirectoryResponse {
        status: 302,
        headers: vec![("Location".into(), location)],
        ..DirectoryResponse::ok(String::new())
    });
    let keys = directory_keys();
    let req = Request::get("site.example", "/");
    let h = signed_map(&req, &signer, &SignOptions::web_bot_auth(NOW, 60).with_agent(&redirect.agent_url()));
    match check(&keys, &req, &h, NOW).await {
        SignatureCheck::UnknownKey { reason } => assert!(reason.ends_with(": status 302"), "{reason}"),
        other => panic!("{other:?}"),
    }
    assert_eq!((redirect.hits(), target.hits()), (1, 0));
}

/// A Signature Agent Card that names its keys by `jwks_uri` instead of
/// listing them: the JWKS is fetched (once, then cached with the card) and
/// its keys carry the card's members (here the token it binds).
#[tokio::test]
async fn card_jwks_uri_is_followed_and_cached() {
    let signer = Signer::from_seed(27);
    let jwks = DirectoryServer::start(DirectoryResponse {
        content_type: "application/jwk-set+json".into(),
        ..DirectoryResponse::ok(directory_json(&[&signer]))
    });
    let card = DirectoryServer::start(DirectoryResponse::ok(format!(
        r#"{{"client_name":"Test agent","jwks_uri":"{}/jwks.json","web_bot_auth":{{"rfc9309-product-token":"GPTBot"}}}}"#,
        jwks.agent_url()
    )));
    let keys = directory_keys();
    let req = Request::get("site.example", "/");
    let h = signed_map(&req, &signer, &SignOptions::web_bot_auth(NOW, 60).with_agent(&card.agent_url()));
    let valid =
        SignatureCheck::Valid { keyid: signer.keyid(), token: Some("GPTBot".into()), agent: Some(card.agent_url()) };
    assert_eq!(check(&keys, &req, &h, NOW).await, valid);
    assert_eq!(check(&keys, &req, &h, NOW).await, valid);
    assert_eq!((card.hits(), jwks.hits()), (1, 1));
    // A key the JWKS does not list is not in the card's directory.
    let stranger = Signer::from_seed(28);
    let h = signed_map(&req, &stranger, &SignOptions::web_bot_auth(NOW, 60).with_agent(&card.agent_url()));
    match check(&keys, &req, &h, NOW).await {
        SignatureCheck::UnknownKey { reason } => assert!(reason.contains("is not in http://127.0.0.1:"), "{reason}"),
        other => panic!("{other:?}"),
    }
}

/// A key fetched through a card's `jwks_uri` speaks for the card's token:
/// one that names another token in the JWKS is refused, not taken for that
/// token, and one that names the card's token is kept.
#[tokio::test]
async fn card_jwks_uri_keys_cannot_name_another_token() {
    let (card_signer, other_signer) = (Signer::from_seed(29), Signer::from_seed(30));
    let with_token =
        |s: &Signer, token: &str| s.jwk().replacen('{', &format!(r#"{{"rfc9309-product-token":"{token}","#), 1);
    let jwks = DirectoryServer::start(DirectoryResponse {
        content_type: "application/jwk-set+json".into(),
        ..DirectoryResponse::ok(format!(
            r#"{{"keys":[{},{}]}}"#,
            with_token(&card_signer, "GPTBot"),
            with_token(&other_signer, "OAI-SearchBot")
        ))
    });
    let card = DirectoryServer::start(DirectoryResponse::ok(format!(
        r#"{{"jwks_uri":"{}/jwks.json","web_bot_auth":{{"rfc9309-product-token":"GPTBot"}}}}"#,
        jwks.agent_url()
    )));
    let keys = directory_keys();
    let req = Request::get("site.example", "/");
    let h = signed_map(&req, &card_signer, &SignOptions::web_bot_auth(NOW, 60).with_agent(&card.agent_url()));
    assert_eq!(
        check(&keys, &req, &h, NOW).await,
        SignatureCheck::Valid {
            keyid: card_signer.keyid(),
            token: Some("GPTBot".into()),
            agent: Some(card.agent_url())
        }
    );
    let h = signed_map(&req, &other_signer, &SignOptions::web_bot_auth(NOW, 60).with_agent(&card.agent_url()));
    match check(&keys, &req, &h, NOW).await {
        SignatureCheck::UnknownKey { reason } => assert!(reason.contains("is not in http://127.0.0.1:"), "{reason}"),
        other => panic!("{other:?}"),
    }
}

/// A Signature Agent Card whose `client_id` is not the directory URL it was
/// fetched from is refused (draft-meunier-webbotauth-registry section
/// 3.1.1, simple string comparison); one whose `client_id` is that URL, or
/// that has none, gives its keys.
#[tokio::test]
async fn a_card_whose_client_id_is_another_url_is_refused() {
    let signer = Signer::from_seed(31);
    let keys = directory_keys();
    let req = Request::get("site.example", "/");
    let jwks = format!(r#""jwks":{}"#, directory_json(&[&signer]));
    for (i, client_id) in
        [None, Some("{here}"), Some("https://example.com/bot"), Some("{here}/")].into_iter().enumerate()
    {
        let server = DirectoryServer::start(DirectoryResponse::ok(String::new()));
        let here = format!("{}/.well-known/http-message-signatures-directory", server.agent_url());
        let card = match client_id {
            None => format!(r#"{{"web_bot_auth":{{"rfc9309-product-token":"GPTBot"}},{jwks}}}"#),
            Some(id) => format!(
                r#"{{"client_id":"{}","web_bot_auth":{{"rfc9309-product-token":"GPTBot"}},{jwks}}}"#,
                id.replace("{here}", &here)
            ),
        };
        server.set_response(DirectoryResponse::ok(card));
        let h = signed_map(&req, &signer, &SignOptions::web_bot_auth(NOW, 60).with_agent(&server.agent_url()));
        let got = check(&keys, &req, &h, NOW).await;
        if i < 2 {
            let valid = SignatureCheck::Valid {
                keyid: signer.keyid(),
                token: Some("GPTBot".into()),
                agent: Some(server.agent_url()),
            };
            assert_eq!(got, valid, "row {i}");
        } else {
            let id = client_id.unwrap_or_default().replace("{here}", &here);
            match got {
                SignatureCheck::UnknownKey { reason } => assert!(
                    reason.ends_with(&format!(
                        "{here}: the card's client_id \"{id}\" is not the URL it was fetched from \
                         (draft-meunier-webbotauth-registry section 3.1.1)"
                    )),
                    "row {i}: {reason}"
                ),
                other => panic!("row {i}: {other:?}"),
            }
        }
    }
}

/// A card's `jwks_uri` is fetched with the directory's bounds: no
/// redirect, no other scheme, the size and key caps, one indirection only;
/// a failure leaves the key unknown and is remembered (no second fetch of
/// the card or the JWKS), and a refused address is never contacted.
#[tokio::test]
async fn card_jwks_uri_has_the_directory_bounds() {
    let signer = Signer::from_seed(29);
    let req = Request::get("site.example", "/");
    let one = r#"{"kty":"OKP","crv":"Ed25519","x":"JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs"}"#;
    let target = DirectoryServer::start(DirectoryResponse::ok(directory_json(&[&signer])));
    let down = {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .unwrap_or_else(|e| panic!("{e}"))
            .port();
        format!("http://127.0.0.1:{port}/jwks.json")
    };
    let cases: Vec<(Option<DirectoryResponse>, Option<String>, &str)> = vec![
        (
            Some(DirectoryResponse {
                status: 302,
                headers: vec![("Location".into(), format!("{}/jwks.json", target.agent_url()))],
                ..DirectoryResponse::ok(String::new())
            }),
            None,
            ": status 302",
        ),
        (
            Some(DirectoryResponse::ok(format!(r#"{{"keys":[],"pad":"{}"}}"#, "x".repeat(70_000)))),
            None,
            "larger than 65536 bytes",
        ),
        (
            Some(DirectoryResponse::ok(format!(r#"{{"keys":[{}]}}"#, vec![one; 65].join(",")))),
            None,
            "lists 65 keys, more than 64",
        ),
        (
            Some(DirectoryResponse::ok(r#"{"jwks_uri":"https://a.example/jwks.json"}"#.into())),
            None,
            "no \"keys\" array",
        ),
        (
            Some(DirectoryResponse {
                content_type: "text/html".into(),
                ..DirectoryResponse::ok(directory_json(&[&signer]))
            }),
            None,
            "media type \"text/html\"",
        ),
        (None, Some("ftp://127.0.0.1/jwks.json".into()), "the \"ftp\" scheme is not fetched"),
        (None, Some(down.clone()), &down),
    ];
    for (jwks_response, uri, want) in cases {
        let jwks = jwks_response.map(DirectoryServer::start);
        let uri =
            uri.unwrap_or_else(|| format!("{}/jwks.json", jwks.as_ref().map(|j| j.agent_url()).unwrap_or_default()));
        let card = DirectoryServer::start(DirectoryResponse::ok(format!(r#"{{"jwks_uri":"{uri}"}}"#)));
        let keys = directory_keys();
        let h = signed_map(&req, &signer, &SignOptions::web_bot_auth(NOW, 60).with_agent(&card.agent_url()));
        for _ in 0..2 {
            match check(&keys, &req, &h, NOW).await {
                SignatureCheck::UnknownKey { reason } => {
                    assert!(reason.contains("jwks_uri") || reason.contains("/jwks.json"), "{want}: {reason}");
                    assert!(reason.contains(want), "{want}: {reason}");
                }
                other => panic!("{want}: {other:?}"),
            }
        }
        assert_eq!(card.hits(), 1, "{want}");
        assert_eq!(jwks.map(|j| j.hits()).unwrap_or(1), 1, "{want}");
    }
    assert_eq!(target.hits(), 0, "a redirect was followed");
}

/// `wba::unparsable` tells signature fields that cannot be parsed (a
/// malformed request, 400 where a signature is required) from a signature
/// that parses and is wrong (invalid).
#[test]
fn unparsable_fields_are_told_from_wrong_signatures() {
    let signer = Signer::from_seed(1);
    let good = signer.sign(&Request::get("a.example", "/"), &SignOptions::web_bot_auth(NOW, 60));
    let gi = good.signature_input.as_str();
    let gs = good.signature.as_str();
    let huge = format!("sig1=(\"@authority\");tag=\"web-bot-auth\";x=\"{}\"", "a".repeat(20_000));
    // (header fields, the start of the reason or None when they parse)
    type Row<'a> = (Vec<(&'a str, &'a str)>, Option<&'a str>);
    let rows: Vec<Row> = vec![
        (vec![("signature-input", gi), ("signature", gs)], None),
        (vec![], None),
        (vec![("signature", "keyId=\"cavage\",signature=\"abc\"")], None),
        (vec![("signature-input", "sig1=(\"@authority\");tag=\"other\"")], None),
        (vec![("signature-input", gi), ("signature", "sig1=:AAAA:")], None),
        (vec![("signature-input", "garbage(((")], Some("Signature-Input is not a structured-field dictionary: ")),
        (vec![("signature-input", &huge)], Some("signature-input is longer than 16384 bytes")),
        (
            vec![("signature-input", gi)],
            Some("Signature-Input has a web-bot-auth signature but there is no Signature header"),
        ),
        (
            vec![("signature-input", gi), ("signature", "sig1=:not base64!:")],
            Some("Signature is not a structured-field dictionary: "),
        ),
        (vec![("signature-input", gi), ("signature", "other=:AAAA:")], Some("Signature has no member sig1")),
        (vec![("signature-input", gi), ("signature", "sig1=\"text\"")], Some("Signature sig1 is not a byte sequence")),
        (
            vec![
                ("signature-input", r#"sig1=("@authority");tag="web-bot-auth";keyid=1;created=1;expires=2"#),
                ("signature", gs),
            ],
            Some("Signature-Input sig1: keyid is not a string"),
        ),
        (
            vec![
                ("signature-input", r#"sig1=("@authority");tag="web-bot-auth";keyid="k";created="x";expires=2"#),
                ("signature", gs),
            ],
            Some("Signature-Input sig1: created is not an integer"),
        ),
        (
            vec![
                ("signature-input", r#"sig1=("@authority" 1);tag="web-bot-auth";keyid="k";created=1;expires=2"#),
                ("signature", gs),
            ],
            Some("Signature-Input sig1: a covered component is not a string"),
        ),
    ];
    for (i, (pairs, want)) in rows.iter().enumerate() {
        let got = wba::unparsable(&headers(pairs));
        match want {
            None => assert_eq!(got, None, "row {i}"),
            Some(w) => assert!(got.as_deref().is_some_and(|g| g.starts_with(w)), "row {i}: want {w:?}, got {got:?}"),
        }
    }
}

/// One signed request of `tests/data/web-bot-auth/web_bot_auth_architecture_v*.json`.
#[derive(serde::Deserialize)]
struct ArchitectureVector {
    key: serde_json::Value,
    target_url: String,
    created_ms: i64,
    expires_ms: i64,
    label: String,
    signature: String,
    signature_input: String,
    signature_agent: Option<String>,
    signature_agent_key: Option<String>,
}

fn vectors<T: serde::de::DeserializeOwned>(name: &str) -> T {
    let path = format!("{}/tests/data/web-bot-auth/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The vectors cloudflare/web-bot-auth publishes for
/// draft-meunier-web-bot-auth-architecture (copied in `tests/data`, see its
/// README): every Ed25519 one verifies here, bound to its Signature-Agent
/// when it names one, and is refused once expired, on another site or with
/// a changed byte; the RSA-PSS ones are refused (this verifier is Ed25519
/// only).
#[tokio::test]
async fn web_bot_auth_repository_vectors_verify() {
    let mut checked = (0, 0);
    for file in ["web_bot_auth_architecture_v1.json", "web_bot_auth_architecture_v2.json"] {
        let all: Vec<ArchitectureVector> = vectors(file);
        for (i, v) in all.iter().enumerate() {
            let at_ = |ms: i64| at(ms / 1000);
            assert!(v.signature_input.starts_with(&format!("{}=(", v.label)), "{file} {i}");
            let url = reqwest_free_split(&v.target_url);
            let mut pairs = vec![("signature-input", v.signature_input.as_str()), ("signature", v.signature.as_str())];
            if let Some(a) = &v.signature_agent {
                pairs.push(("signature-agent", a));
            }
            let h = headers(&pairs);
            let req = SignedRequest { method: "GET", authority: url.0, target: url.1, headers: &h };
            let x = v.key.get("x").and_then(serde_json::Value::as_str);
            let keys = Keys::new(KeysConfig {
                pinned: vec![PinnedKey {
                    token: "ChatGPT-User".into(),
                    jwk: format!(r#"{{"kty":"OKP","crv":"Ed25519","x":"{RFC_X}"}}"#),
                }],
                max_validity: Duration::from_secs(200 * 365 * 86400),
                ..base()
            })
            .unwrap_or_else(|e| panic!("{e}"));
            let got = wba::verify(&keys, &req, at_(v.created_ms + 10_000)).await;
            match v.key.get("kty").and_then(serde_json::Value::as_str) {
                Some("OKP") if v.signature_agent.is_none() => {
                    assert!(
                        invalid(&got).ends_with(
                            "has no Signature-Agent (draft-ietf-webbotauth-httpsig-protocol-01 requires one)"
                        ),
                        "{file} {i}: {got:?}"
                    );
                    checked.0 += 1;
                }
                Some("OKP") => {
                    assert_eq!(x, Some(RFC_X), "{file} {i}");
                    assert_eq!(
                        got,
                        SignatureCheck::Valid {
                            keyid: RFC_THUMBPRINT.into(),
                            token: Some("ChatGPT-User".into()),
                            agent: Some("https://signature-agent.test".into()),
                        },
                        "{file} {i} ({:?})",
                        v.signature_agent_key
                    );
                    let late = wba::verify(&keys, &req, at_(v.expires_ms + 61_000)).await;
                    assert!(expired(&late).contains("expired at"), "{file} {i}: {late:?}");
                    let other = SignedRequest { authority: "example.org", ..req };
                    let got = wba::verify(&keys, &other, at_(v.created_ms + 10_000)).await;
                    assert!(invalid(&got).contains("is not this site"), "{file} {i}: {got:?}");
                    // One changed byte of the signature breaks it.
                    let flipped = flip_first_b64(&v.signature);
                    let mut pairs2 = pairs.clone();
                    pairs2[1] = ("signature", &flipped);
                    let h2 = headers(&pairs2);
                    let got =
                        wba::verify(&keys, &SignedRequest { headers: &h2, ..req }, at_(v.created_ms + 10_000)).await;
                    assert!(invalid(&got).contains("does not verify"), "{file} {i}: {got:?}");
                    checked.0 += 1;
                }
                Some("RSA") => {
                    // A 256-byte RSA-PSS signature is not an Ed25519 one.
                    assert_eq!(
                        invalid(&got),
                        format!("Signature {} is 256 bytes, an Ed25519 signature is 64", v.label),
                        "{file} {i}"
                    );
                    checked.1 += 1;
                }
                other => panic!("{file} {i}: key type {other:?}"),
            }
        }
    }
    assert_eq!(checked, (4, 4));
}

/// `https://host/path` -> (`host`, `/path`).
fn reqwest_free_split(url: &str) -> (&str, &str) {
    let rest = url.strip_prefix("https://").unwrap_or_else(|| panic!("{url}"));
    rest.split_at(rest.find('/').unwrap_or(rest.len()))
}

/// The `Signature` field with the first base64 character of its byte
/// sequence changed.
fn flip_first_b64(field: &str) -> String {
    let start = field.find(':').unwrap_or_else(|| panic!("{field}")) + 1;
    let mut out = field.to_owned();
    let c = &field[start..=start];
    out.replace_range(start..=start, if c == "A" { "B" } else { "A" });
    out
}

/// The vectors in the `web-bot-auth` crate's own tests (crate 0.7.0,
/// `src/lib.rs`, Apache-2.0): its standard vector verifies, a signature
/// under another tag is not a Web Bot Auth one, and a Signature-Agent the
/// signature does not cover is refused (the crate refuses both at parse).
#[tokio::test]
async fn web_bot_auth_crate_vectors_verify() {
    const SIG: &str = "sig1=:uz2SAv+VIemw+Oo890bhYh6Xf5qZdLUgv6/PbiQfCFXcX/vt1A8Pf7OcgL2yUDUYXFtffNpkEr5W6dldqFrkDg==:";
    const INPUT: &str = r#"sig1=("@authority");created=1735689600;keyid="poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U";alg="ed25519";expires=1735693200;nonce="gubxywVx7hzbYKatLgzuKDllDAIXAkz41PydU7aOY7vT+Mb3GJNxW0qD4zJ+IOQ1NVtg+BNbTCRUMt1Ojr5BgA==";tag="web-bot-auth""#;
    let keys = Keys::new(KeysConfig {
        pinned: vec![PinnedKey {
            token: "ChatGPT-User".into(),
            jwk: format!(r#"{{"kty":"OKP","crv":"Ed25519","x":"{RFC_X}"}}"#),
        }],
        max_validity: Duration::from_secs(3600),
        ..base()
    })
    .unwrap_or_else(|e| panic!("{e}"));
    let when = at(1_735_689_610);
    let run = |pairs: Vec<(&'static str, String)>| {
        let keys = keys.clone();
        async move {
            let refs: Vec<(&str, &str)> = pairs.iter().map(|(n, v)| (*n, v.as_str())).collect();
            let h = headers(&refs);
            let req = SignedRequest { method: "GET", authority: "example.com", target: "/", headers: &h };
            wba::verify(&keys, &req, when).await
        }
    };
    // test_verifying_as_web_bot_auth: made before -01, it has no
    // Signature-Agent.
    assert_eq!(
        invalid(&run(vec![("signature-input", INPUT.into()), ("signature", SIG.into())]).await),
        "signature sig1: the request has no Signature-Agent (draft-ietf-webbotauth-httpsig-protocol-01 requires one)"
    );
    // test_missing_tags_break_web_bot_auth
    assert_eq!(
        run(vec![
            ("signature-input", INPUT.replace("tag=\"web-bot-auth\"", "tag=\"not-web-bot-auth\"")),
            ("signature", SIG.into())
        ])
        .await,
        SignatureCheck::Absent
    );
    // test_signature_agents_are_required_in_signature_input
    let got = run(vec![
        ("signature-input", INPUT.into()),
        ("signature", SIG.into()),
        ("signature-agent", "\"https://myexample.com\"".into()),
    ])
    .await;
    assert!(invalid(&got).contains("the Signature-Agent header is present but not covered"), "{got:?}");
    // test_signature_agents_are_parsed_with_fallback: its signature is made
    // over the legacy one-string Signature-Agent. The crate's tests reuse it
    // with a second field line and with a dictionary member (`key=`), to
    // test parsing only: over those bases it does not verify.
    const AGENT_SIG: &str =
        "sig1=:3q7S1TtbrFhQhpcZ1gZwHPCFHTvdKXNY1xngkp6lyaqqqv3QZupwpu/wQG5a7qybnrj2vZYMeVKuWepm+rNkDw==:";
    const AGENT_INPUT: &str = r#"sig1=("@authority" "signature-agent");alg="ed25519";keyid="poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U";nonce="ZO3/XMEZjrvSnLtAP9M7jK0WGQf3J+pbmQRUpKDhF9/jsNCWqUh2sq+TH4WTX3/GpNoSZUa8eNWMKqxWp2/c2g==";tag="web-bot-auth";created=1749331474;expires=1749331484"#;
    let agent_run = |input: &str, agents: &[&str]| {
        let mut pairs = vec![("signature-input", input.to_owned()), ("signature", AGENT_SIG.to_owned())];
        pairs.extend(agents.iter().map(|a| ("signature-agent", (*a).to_owned())));
        let keys = keys.clone();
        async move {
            let refs: Vec<(&str, &str)> = pairs.iter().map(|(n, v)| (*n, v.as_str())).collect();
            let h = headers(&refs);
            let req = SignedRequest { method: "GET", authority: "example.com", target: "/", headers: &h };
            wba::verify(&keys, &req, at(1_749_331_475)).await
        }
    };
    assert_eq!(
        agent_run(AGENT_INPUT, &["\"https://myexample.com\""]).await,
        SignatureCheck::Valid {
            keyid: RFC_THUMBPRINT.into(),
            token: Some("ChatGPT-User".into()),
            agent: Some("https://myexample.com".into())
        }
    );
    let two_lines = agent_run(AGENT_INPUT, &["\"https://myexample.com\"", "\"https://myexample2.com\""]).await;
    // Two String lines make a List, neither a dictionary nor one string.
    assert!(invalid(&two_lines).starts_with("Signature-Agent is not a structured-field dictionary"), "{two_lines:?}");
    let keyed = AGENT_INPUT.replace("\"signature-agent\")", "\"signature-agent\";key=\"agent1\")");
    let dict = agent_run(&keyed, &[r#"agent1="https://myexample.com", agent2="https://example2.com""#]).await;
    assert!(invalid(&dict).ends_with("does not verify with key poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U"));
}

/// The Signature Agent Card vectors of cloudflare/web-bot-auth (copied in
/// `tests/data`): a card naming its keys by `jwks_uri` carries its members
/// to them, a card listing `jwks` gives its keys, and one with both is
/// refused (RFC 7591 section 2: `jwks_uri` and `jwks` must not both be
/// present), and one whose `client_id` is not the URL it was fetched from
/// is refused (draft-meunier-webbotauth-registry section 3.1.1).
#[test]
fn signature_agent_card_vectors() {
    use crawlgate_identity::directory::{read_directory_document, Card, DirectoryDocument};
    #[derive(serde::Deserialize)]
    struct CardVector {
        name: String,
        url: String,
        valid: bool,
        error: Option<String>,
        card: serde_json::Value,
    }
    let all: Vec<CardVector> = vectors("web_bot_auth_signature_agent_card_v1.json");
    let mut seen = Vec::new();
    for v in &all {
        let body = serde_json::to_vec(&v.card).unwrap_or_else(|e| panic!("{e}"));
        let got = read_directory_document(&body, Some(&v.url));
        match v.name.as_str() {
            "jwks-uri-card" => assert_eq!(
                got,
                Ok(DirectoryDocument::JwksUri {
                    uri: "https://example.com/.well-known/http-message-signatures-directory".into(),
                    card: Card {
                        token: Some("ExampleBot".into()),
                        expected_user_agent: Some("Mozilla/5.0 ExampleBot".into()),
                        ips_uri: Some("https://example.com/ips.json".into()),
                    },
                })
            ),
            "jwks-card" => match &got {
                Ok(DirectoryDocument::Keys(keys)) => {
                    assert_eq!(keys.keys().collect::<Vec<_>>(), [RFC_THUMBPRINT]);
                }
                other => panic!("{}: {other:?}", v.name),
            },
            "jwks-and-jwks-uri" => {
                assert_eq!(got, Err("the card names both jwks and jwks_uri (RFC 7591 section 2 allows one)".into()));
                assert_eq!(v.error.as_deref(), Some("card must not contain both jwks and jwks_uri"));
            }
            "client-id-mismatch" => {
                assert_eq!(
                    got,
                    Err("the card's client_id \"https://example.com/other\" is not the URL it was fetched from \
                         (draft-meunier-webbotauth-registry section 3.1.1)"
                        .into())
                );
                assert_eq!(v.error.as_deref(), Some("client_id must match the card URL"));
                // Read without the URL it came from, it is not judged.
                assert!(read_directory_document(&body, None).is_ok());
            }
            other => panic!("a vector this test does not know: {other}"),
        }
        assert_eq!(v.valid, got.is_ok(), "{}", v.name);
        seen.push(v.name.clone());
    }
    assert_eq!(seen, ["jwks-uri-card", "jwks-card", "jwks-and-jwks-uri", "client-id-mismatch"]);
}

/// Whether the signature fields are unparsable (400 where a signature is
/// required), and the reason given, do not depend on which
/// `Signature-Input` member comes first: a member of an unknown key or an
/// expired one next to one that cannot be parsed is unparsable in either
/// order, for the unparsable member's reason; a valid member wins in
/// either order, and the unknown key alone stays unknown.
#[tokio::test]
async fn unparsable_members_are_found_in_any_order() {
    use crawlgate_identity::{Evidence, Verifier, VerifierConfig};
    use crawlgate_policy::verification::{Method, SignatureOutcome, Verification};
    let known = Signer::from_seed(27);
    let stranger = Signer::from_seed(28);
    let src = format!(
        "[upstream]\nservers = [\"127.0.0.1:8000\"]\n[verification]\n[verification.signatures]\nauthorities = [\"site.example\"]\n\
         [[verification.keys]]\ntoken = \"ExampleBot\"\njwk = '{}'\n",
        known.jwk()
    );
    let policy = crawlgate_policy::load(&src, "p.toml").unwrap_or_else(|e| panic!("{e}")).policy;
    let verifier = Verifier::new(VerifierConfig::for_policy(&policy)).unwrap_or_else(|e| panic!("{e}"));
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64);
    let req = Request::get("site.example", "/");
    let ip: std::net::IpAddr = [192, 0, 2, 1].into();
    let bad =
        (r#"bad=("@authority");tag="web-bot-auth";keyid=1;created=1;expires=2"#.to_owned(), "bad=:AAAA:".to_owned());
    // (members in order, verification, evidence kind, signature outcome)
    type Row = (&'static [&'static str], Verification, &'static str, Option<SignatureOutcome>);
    let sig = Verification::Spoofed(Method::Signature);
    let rows: Vec<Row> = vec![
        (&["stranger"], Verification::Unverified, "unknown key", Some(SignatureOutcome::UnknownBot)),
        (&["stranger", "bad"], sig, "unparsable", Some(SignatureOutcome::Invalid)),
        (&["bad", "stranger"], sig, "unparsable", Some(SignatureOutcome::Invalid)),
        (&["bad"], sig, "unparsable", Some(SignatureOutcome::Invalid)),
        (&["expired"], sig, "invalid", Some(SignatureOutcome::Expired)),
        (&["expired", "bad"], sig, "unparsable", Some(SignatureOutcome::Invalid)),
        (&["bad", "expired"], sig, "unparsable", Some(SignatureOutcome::Invalid)),
        (&["known", "bad"], Verification::Verified(Method::Signature), "key", Some(SignatureOutcome::Verified)),
        (&["bad", "known"], Verification::Verified(Method::Signature), "key", Some(SignatureOutcome::Verified)),
    ];
    for (i, (members, want_verification, want_kind, want_signature)) in rows.into_iter().enumerate() {
        let (mut inputs, mut signatures) = (Vec::new(), Vec::new());
        for (j, m) in members.iter().enumerate() {
            let (input, signature) = match *m {
                "bad" => bad.clone(),
                name => {
                    let signer = if name == "stranger" { &stranger } else { &known };
                    // A new `created` per row: the same signature twice would be a replay.
                    let mut opts = match name {
                        "expired" => full_opts(now - 600 - i as i64, 60),
                        _ => full_opts(now - 5 - i as i64, 60),
                    };
                    opts.label = format!("{name}{j}");
                    let s = signer.sign(&req, &opts);
                    (s.signature_input, s.signature)
                }
            };
            inputs.push(input);
            signatures.push(signature);
        }
        let (input, signature) = (inputs.join(", "), signatures.join(", "));
        let agent = format!("sig1=\"{}\"", crawlgate_testkit::wba::DEFAULT_AGENT);
        let h = headers(&[("signature-input", &input), ("signature", &signature), ("signature-agent", &agent)]);
        let sr = SignedRequest { method: "GET", authority: "site.example", target: "/", headers: &h };
        let got = verifier.verify(None, ip, Some(&sr)).await;
        if let Evidence::BadSignature { unparsable: true, reason } = &got.evidence {
            assert_eq!(reason, "Signature-Input bad: keyid is not a string", "row {i} {members:?}");
        }
        let kind = match &got.evidence {
            Evidence::BadSignature { unparsable: true, .. } => "unparsable",
            Evidence::BadSignature { unparsable: false, .. } => "invalid",
            Evidence::UnknownKey { .. } => "unknown key",
            Evidence::Key { .. } => "key",
            other => panic!("row {i} {members:?}: {other:?}"),
        };
        assert_eq!(
            (got.verification, kind, got.signature),
            (want_verification, want_kind, want_signature),
            "row {i} {members:?}: {:?}",
            got.evidence
        );
    }
    // The reason a 400 gives for the bad member.
    assert_eq!(
        wba::unparsable(&headers(&[("signature-input", &bad.0), ("signature", &bad.1)])).as_deref(),
        Some("Signature-Input bad: keyid is not a string")
    );
}
