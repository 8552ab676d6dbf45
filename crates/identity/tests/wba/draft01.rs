//! draft-ietf-webbotauth-httpsig-protocol-01: a signer written from the
//! draft (dictionary `Signature-Agent`, thumbprint `keyid`, `tag`, its own
//! member covered) verifies; each MUST has a failing input; the legacy
//! forms are read and named; JWKS discovery from the member URL (200 only,
//! identifier normalised, well-known media type and `kid`).

use crawlgate_identity::wba::agent::Legacy;

use super::*;

fn jwks_keys() -> Keys {
    Keys::new(KeysConfig { allow_http: true, any_agent: true, allow_private: true, ..base() })
        .unwrap_or_else(|e| panic!("{e}"))
}

/// `check` with what the replay cache would record (its legacy form).
async fn check_seen(keys: &Keys, req: &Request, h: &HeaderMap) -> (SignatureCheck, Option<Option<Legacy>>) {
    let sr = SignedRequest { method: &req.method, authority: &req.authority, target: &req.target, headers: h };
    let (c, seen) = wba::verify_seen(keys, &sr, at(NOW)).await;
    (c, seen.map(|s| s.legacy))
}

fn valid(signer: &Signer, agent: &str) -> SignatureCheck {
    SignatureCheck::Valid { keyid: signer.keyid(), token: None, agent: Some(agent.into()) }
}

fn unknown(c: &SignatureCheck) -> &str {
    match c {
        SignatureCheck::UnknownKey { reason } => reason,
        other => panic!("expected UnknownKey, got {other:?}"),
    }
}

#[tokio::test]
async fn a_draft01_signer_verifies_through_its_jwks_url() {
    let signer = Signer::from_seed(60);
    let server = DirectoryServer::start(DirectoryResponse::ok(directory_json(&[&signer])));
    let jwks = format!("{}/keys/jwks.json", server.agent_url());
    let keys = jwks_keys();
    let req = Request::get("site.example", "/p");
    let opts = SignOptions::draft01(NOW - 5, 60, &jwks);
    let signed = signer.sign(&req, &opts);
    assert_eq!(signed.signature_agent.as_deref(), Some(format!("sig1=\"{jwks}\"").as_str()));
    assert!(signed
        .signature_input
        .starts_with("sig1=(\"@authority\" \"@method\" \"@path\" \"signature-agent\";key=\"sig1\");created="));
    assert!(signed.signature_input.contains(&format!(";keyid=\"{}\"", signer.keyid())));
    assert!(signed.signature_input.ends_with(";tag=\"web-bot-auth\""));
    let h = signed_map(&req, &signer, &opts);
    assert_eq!(check_seen(&keys, &req, &h).await, (valid(&signer, &jwks), Some(None)));
    assert_eq!(server.hits(), 1);
    // Another spelling of the same URL (case, default-free port, dot
    // segments, a query) has the same identifier: no second fetch.
    let addr = server.addr();
    let other = format!("HTTP://127.0.0.1:{}/keys/./jwks.json?v=2", addr.port());
    let h = signed_map(&req, &signer, &SignOptions::draft01(NOW - 4, 60, &other));
    assert_eq!(check(&keys, &req, &h, NOW).await, valid(&signer, &other));
    assert_eq!(server.hits(), 1);
    // A member under another key, covered by that key.
    let mut o = SignOptions::draft01(NOW - 3, 60, &jwks);
    o.agent = Some(Agent::Member { key: "agent7".into(), url: jwks.clone() });
    assert_eq!(check(&keys, &req, &signed_map(&req, &signer, &o), NOW).await, valid(&signer, &jwks));
    // Several members: each signature uses the one it covers.
    let mut o = SignOptions::draft01(NOW - 2, 60, &jwks);
    o.agent = Some(Agent::Raw {
        value: format!("a=\"https://other.example/jwks\", b=\"{jwks}\""),
        covered_key: Some("b".into()),
    });
    assert_eq!(check(&keys, &req, &signed_map(&req, &signer, &o), NOW).await, valid(&signer, &jwks));
}

/// Each MUST of -01, one failing input each.
#[tokio::test]
async fn each_must_has_a_failing_input() {
    let signer = Signer::from_seed(61);
    let server = DirectoryServer::start(DirectoryResponse::ok(directory_json(&[&signer])));
    let jwks = format!("{}/jwks.json", server.agent_url());
    let keys = jwks_keys();
    let req = Request::get("site.example", "/p");
    let good = || SignOptions::draft01(NOW - 5, 60, &jwks);
    let run = |o: SignOptions| {
        let h = signed_map(&req, &signer, &o);
        let keys = keys.clone();
        let req = req.clone();
        async move { check(&keys, &req, &h, NOW).await }
    };

    // A signed request MUST carry Signature-Agent.
    let mut o = good();
    o.agent = None;
    assert_eq!(
        invalid(&run(o).await),
        "signature sig1: the request has no Signature-Agent (draft-ietf-webbotauth-httpsig-protocol-01 requires one)"
    );
    // Each signature MUST cover its own member.
    let mut o = good();
    o.cover_agent = false;
    assert_eq!(invalid(&run(o).await), "signature sig1: the Signature-Agent header is present but not covered");
    // ... the member it names must be there.
    let mut o = good();
    o.agent = Some(Agent::Raw { value: format!("sig1=\"{jwks}\""), covered_key: Some("sig1".into()) });
    let h = signed_map(&req, &signer, &o);
    let mut other_member = h.clone();
    other_member
        .insert("signature-agent", HeaderValue::from_str(&format!("zz=\"{jwks}\"")).unwrap_or_else(|e| panic!("{e}")));
    let got = check(&keys, &req, &other_member, NOW).await;
    assert_eq!(invalid(&got), "signature sig1: covered header \"signature-agent\" has no member \"sig1\"");
    // Members MUST NOT carry parameters; a verifier MUST ignore one that does.
    let mut o = good();
    o.agent = Some(Agent::Raw { value: format!("sig1=\"{jwks}\";type=jwks_uri"), covered_key: Some("sig1".into()) });
    assert!(invalid(&run(o).await).contains("Signature-Agent member \"sig1\" has parameters (type)"));
    // Member values are https URI Strings.
    let mut o = good();
    o.agent = Some(Agent::Raw { value: "sig1=:AAAA:".into(), covered_key: Some("sig1".into()) });
    assert!(invalid(&run(o).await).contains("is not a string"));
    let strict = Keys::new(KeysConfig { any_agent: true, ..base() }).unwrap_or_else(|e| panic!("{e}"));
    let h = signed_map(&req, &signer, &good());
    assert_eq!(
        invalid(&check(&strict, &req, &h, NOW).await),
        format!("signature sig1: Signature-Agent \"{jwks}\" is not an https URI")
    );
    // keyid is the JWK SHA-256 thumbprint.
    let mut o = good();
    o.keyid = Some("test-key-ed25519".into());
    assert_eq!(
        invalid(&run(o).await),
        "signature sig1: keyid \"test-key-ed25519\" is not a JWK SHA-256 thumbprint (RFC 7638; draft-ietf-webbotauth-httpsig-protocol-01)"
    );
    // created and expires are required.
    let mut o = good();
    o.expires = None;
    assert_eq!(invalid(&run(o).await), "signature sig1: no expires");
    // tag="web-bot-auth": without it the signature is not this profile's.
    let mut o = good();
    o.tag = None;
    assert_eq!(run(o).await, SignatureCheck::Absent);
    // @authority is covered and is this site.
    let mut o = good();
    o.components = vec![Component::derived("@path")];
    assert_eq!(invalid(&run(o).await), "signature sig1: @authority is not covered");
    // Expired: its own outcome.
    let got = run(SignOptions::draft01(NOW - 300, 60, &jwks)).await;
    assert_eq!(
        got,
        SignatureCheck::Expired { reason: format!("signature sig1: expired at {} (240 s ago)", NOW - 240) }
    );
    // The good one, for contrast.
    assert_eq!(run(good()).await, valid(&signer, &jwks));
}

/// Discovery: only a 200 counts; the key is looked up by (URL, key id).
#[tokio::test]
async fn jwks_discovery_is_200_only_and_keyed_by_url_and_key() {
    let signer = Signer::from_seed(62);
    let req = Request::get("site.example", "/");
    let keys = jwks_keys();
    let gone =
        DirectoryServer::start(DirectoryResponse { status: 404, ..DirectoryResponse::ok(directory_json(&[&signer])) });
    let url = format!("{}/jwks", gone.agent_url());
    let h = signed_map(&req, &signer, &SignOptions::draft01(NOW, 60, &url));
    assert_eq!(unknown(&check(&keys, &req, &h, NOW).await), format!("fetching {url}: status 404"));
    // A JWKS that lists other keys does not vouch for this one, even if
    // another URL does.
    let elsewhere = DirectoryServer::start(DirectoryResponse::ok(directory_json(&[&Signer::from_seed(63)])));
    let here = DirectoryServer::start(DirectoryResponse::ok(directory_json(&[&signer])));
    let (a, b) = (format!("{}/jwks", here.agent_url()), format!("{}/jwks", elsewhere.agent_url()));
    assert_eq!(
        check(&keys, &req, &signed_map(&req, &signer, &SignOptions::draft01(NOW, 60, &a)), NOW).await,
        valid(&signer, &a)
    );
    let got = check(&keys, &req, &signed_map(&req, &signer, &SignOptions::draft01(NOW + 1, 60, &b)), NOW).await;
    assert_eq!(unknown(&got), format!("keyid {:?} is not in {b}", signer.keyid()));
}

/// A JWKS at the well-known path has the directory media type, and a key
/// whose kid is not its thumbprint is not used.
#[tokio::test]
async fn well_known_directories_keep_their_media_type_and_kid() {
    let signer = Signer::from_seed(64);
    let req = Request::get("site.example", "/");
    let keys = jwks_keys();
    let plain_json = DirectoryServer::start(DirectoryResponse {
        content_type: "application/json".into(),
        ..DirectoryResponse::ok(directory_json(&[&signer]))
    });
    // The legacy origin-only value reads the well-known directory.
    let h = signed_map(&req, &signer, &SignOptions::draft01(NOW, 60, &plain_json.agent_url()));
    assert_eq!(
        unknown(&check(&keys, &req, &h, NOW).await),
        format!(
            "fetching {}/.well-known/http-message-signatures-directory: a well-known key directory must be application/http-message-signatures-directory+json, not \"application/json\"",
            plain_json.agent_url()
        )
    );
    // The same JSON at another path is a JWKS, read whatever JSON type.
    let jwks = format!("{}/jwks", plain_json.agent_url());
    let h = signed_map(&req, &signer, &SignOptions::draft01(NOW + 1, 60, &jwks));
    assert_eq!(check(&keys, &req, &h, NOW).await, valid(&signer, &jwks));
    // kid != thumbprint: left out of a well-known directory.
    let wrong_kid = format!(r#"{{"keys":[{{"kty":"OKP","crv":"Ed25519","kid":"k1","x":"{}"}}]}}"#, signer.x());
    let server = DirectoryServer::start(DirectoryResponse::ok(wrong_kid.clone()));
    let h = signed_map(&req, &signer, &SignOptions::draft01(NOW, 60, &server.agent_url()));
    let dir = format!("{}/.well-known/http-message-signatures-directory", server.agent_url());
    assert_eq!(unknown(&check(&keys, &req, &h, NOW).await), format!("keyid {:?} is not in {dir}", signer.keyid()));
    let right_kid = wrong_kid.replace("\"k1\"", &format!("{:?}", signer.keyid()));
    let server = DirectoryServer::start(DirectoryResponse::ok(right_kid));
    let h = signed_map(&req, &signer, &SignOptions::draft01(NOW, 60, &server.agent_url()));
    assert_eq!(check(&keys, &req, &h, NOW).await, valid(&signer, &server.agent_url()));
}

/// The legacy forms stay readable, and say which they are.
#[tokio::test]
async fn legacy_forms_are_read_and_named() {
    let signer = Signer::from_seed(65);
    let server = DirectoryServer::start(DirectoryResponse::ok(directory_json(&[&signer])));
    let keys = jwks_keys();
    let req = Request::get("site.example", "/");
    let jwks = format!("{}/jwks", server.agent_url());
    let rows: Vec<(Agent, &str, Legacy)> = vec![
        (Agent::String(jwks.clone()), jwks.as_str(), Legacy::BareString),
        (Agent::Raw { value: format!("sig1=\"{jwks}\""), covered_key: None }, jwks.as_str(), Legacy::WholeField),
        (Agent::Member { key: "sig1".into(), url: server.agent_url() }, "", Legacy::OriginOnly),
        (Agent::Dictionary(server.agent_url()), "", Legacy::OriginOnly),
    ];
    for (i, (agent, url, form)) in rows.into_iter().enumerate() {
        let url = if url.is_empty() { server.agent_url() } else { url.to_owned() };
        let mut o = SignOptions::draft01(NOW - 5 - i as i64, 60, &jwks);
        o.agent = Some(agent);
        let h = signed_map(&req, &signer, &o);
        assert_eq!(check_seen(&keys, &req, &h).await, (valid(&signer, &url), Some(Some(form))), "row {i}");
    }
}

/// Headers that do not parse are named (the proxy answers 400).
#[test]
fn an_unparsable_signature_agent_is_a_malformed_request() {
    let signer = Signer::from_seed(66);
    let s = signer.sign(&Request::get("site.example", "/"), &SignOptions::draft01(NOW, 60, "https://a.example/jwks"));
    let h = |agent: &str| {
        headers(&[("signature-input", &s.signature_input), ("signature", &s.signature), ("signature-agent", agent)])
    };
    assert_eq!(wba::unparsable(&h(r#"sig1="https://a.example/jwks""#)), None);
    assert_eq!(
        wba::unparsable(&h("https://a.example/jwks")).as_deref(),
        Some("Signature-Agent is neither a dictionary nor a string (found a token)")
    );
    assert!(wba::unparsable(&h("7")).is_some_and(|e| e.contains("neither a dictionary nor a string")));
}
