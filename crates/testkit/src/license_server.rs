//! A test RSL license server (Open License Protocol, as far as crawlgate's
//! tests need it): issues short-lived license tokens (JWS compact form,
//! `alg` `EdDSA`, RFC 8037) from `issue` or `POST /token`, publishes its
//! keys as a JWKS at `/jwks.json` with a `Cache-Control: max-age`, rotates
//! keys, and can go away (connections closed unanswered). It signs with
//! ed25519-dalek directly and writes the JWS itself, independently of the
//! verifier in `crawlgate-payment`.

use std::sync::{Arc, Mutex, MutexGuard};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use ed25519_dalek::{Signer as _, SigningKey};

use crate::stub::{StubReply, StubRequest, StubServer};

/// The claims of a token to issue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenClaims {
    /// `iss`.
    pub issuer: String,
    /// `aud`.
    pub audience: String,
    /// `sub`.
    pub subject: String,
    /// `resource`: path patterns or URLs the license covers.
    pub resource: Vec<String>,
    /// `scope`: space-separated usages.
    pub scope: String,
    /// `iat`.
    pub issued_at: u64,
    /// `nbf`.
    pub not_before: u64,
    /// `exp`.
    pub expires_at: u64,
    /// `jti`.
    pub token_id: String,
}

impl TokenClaims {
    /// A token of `issuer` for `audience`, valid for five minutes from
    /// `now`, covering every path (`/`) for every usage (`all`).
    pub fn new(issuer: &str, audience: &str, now: u64) -> TokenClaims {
        TokenClaims {
            issuer: issuer.into(),
            audience: audience.into(),
            subject: "test-crawler".into(),
            resource: vec!["/".into()],
            scope: "all".into(),
            issued_at: now,
            not_before: now,
            expires_at: now + 300,
            token_id: "license-token-1".into(),
        }
    }

    /// The claims as JSON.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "iss": self.issuer, "aud": self.audience, "sub": self.subject, "resource": self.resource,
            "scope": self.scope, "iat": self.issued_at, "nbf": self.not_before, "exp": self.expires_at,
            "jti": self.token_id,
        })
    }
}

/// A JWS in compact form over `claims`, signed by `key` and naming `kid`.
pub fn sign_jws(key: &SigningKey, kid: &str, claims: &serde_json::Value) -> String {
    let header = serde_json::json!({"alg": "EdDSA", "typ": "JWT", "kid": kid});
    let input =
        format!("{}.{}", URL_SAFE_NO_PAD.encode(header.to_string()), URL_SAFE_NO_PAD.encode(claims.to_string()));
    let signature = key.sign(input.as_bytes());
    format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature.to_bytes()))
}

/// The public JWK of `key`, named `kid`.
pub fn public_jwk(key: &SigningKey, kid: &str) -> serde_json::Value {
    let x = URL_SAFE_NO_PAD.encode(key.verifying_key().as_bytes());
    serde_json::json!({"kty": "OKP", "crv": "Ed25519", "use": "sig", "alg": "EdDSA", "kid": kid, "x": x})
}

struct State {
    /// Published keys, the signing one last.
    keys: Vec<(String, SigningKey)>,
    next_seed: u8,
    available: bool,
    max_age: u64,
    jwks_hits: usize,
}

fn lock(m: &Mutex<State>) -> MutexGuard<'_, State> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The server; stopped on drop.
pub struct LicenseServer {
    stub: StubServer,
    state: Arc<Mutex<State>>,
}

impl LicenseServer {
    /// Starts with one key, `key-1`, and a JWKS `max-age` of 300 s.
    pub fn start() -> LicenseServer {
        let state = Arc::new(Mutex::new(State {
            keys: vec![("key-1".into(), SigningKey::from_bytes(&[1; 32]))],
            next_seed: 2,
            available: true,
            max_age: 300,
            jwks_hits: 0,
        }));
        let shared = state.clone();
        let stub = StubServer::start(move |req| answer(&shared, req));
        LicenseServer { stub, state }
    }

    /// The issuer name (`iss`): the server's base URL.
    pub fn issuer(&self) -> String {
        self.stub.url("")
    }

    /// The JWKS URL.
    pub fn jwks_url(&self) -> String {
        self.stub.url("/jwks.json")
    }

    /// A token over `claims`, signed with the current key.
    pub fn issue(&self, claims: &TokenClaims) -> String {
        self.issue_json(&claims.to_json())
    }

    /// A token over arbitrary claims, signed with the current key.
    pub fn issue_json(&self, claims: &serde_json::Value) -> String {
        let st = lock(&self.state);
        let Some((kid, key)) = st.keys.last() else { panic!("the license server has no key") };
        sign_jws(key, kid, claims)
    }

    /// A token signed by a key the server never published, naming the
    /// current key's `kid`.
    pub fn forge(&self, claims: &TokenClaims) -> String {
        let kid = self.current_kid();
        sign_jws(&SigningKey::from_bytes(&[0xee; 32]), &kid, &claims.to_json())
    }

    /// The `kid` of the signing key.
    pub fn current_kid(&self) -> String {
        lock(&self.state).keys.last().map(|(k, _)| k.clone()).unwrap_or_default()
    }

    /// The signing key's public JWK (JSON text), for pinning.
    pub fn current_jwk(&self) -> String {
        let st = lock(&self.state);
        st.keys.last().map(|(kid, k)| public_jwk(k, kid).to_string()).unwrap_or_default()
    }

    /// A new signing key; with `keep_old` the previous keys stay published,
    /// else they are withdrawn. Returns the new `kid`.
    pub fn rotate(&self, keep_old: bool) -> String {
        let mut st = lock(&self.state);
        let seed = st.next_seed;
        st.next_seed += 1;
        let kid = format!("key-{seed}");
        if !keep_old {
            st.keys.clear();
        }
        st.keys.push((kid.clone(), SigningKey::from_bytes(&[seed; 32])));
        kid
    }

    /// Whether the server answers; when not, every connection is closed
    /// unanswered.
    pub fn set_available(&self, available: bool) {
        lock(&self.state).available = available;
    }

    /// The JWKS `max-age` in seconds.
    pub fn set_max_age(&self, secs: u64) {
        lock(&self.state).max_age = secs;
    }

    /// How many JWKS requests were answered or refused.
    pub fn jwks_hits(&self) -> usize {
        lock(&self.state).jwks_hits
    }
}

fn answer(state: &Mutex<State>, req: &StubRequest) -> StubReply {
    let mut st = lock(state);
    let path = req.target.split('?').next().unwrap_or("");
    if path == "/jwks.json" {
        st.jwks_hits += 1;
    }
    if !st.available {
        return StubReply::Close;
    }
    match (req.method.as_str(), path) {
        ("GET", "/jwks.json") => {
            let keys: Vec<serde_json::Value> = st.keys.iter().map(|(kid, k)| public_jwk(k, kid)).collect();
            StubReply::Respond {
                status: 200,
                headers: vec![
                    ("Content-Type".into(), "application/jwk-set+json".into()),
                    ("Cache-Control".into(), format!("max-age={}", st.max_age)),
                ],
                body: serde_json::json!({ "keys": keys }).to_string().into_bytes(),
                delay: std::time::Duration::ZERO,
            }
        }
        // RFC 6749 section 4.4 with OLP's `resource` (RFC 8707): a token
        // for the resource URL's origin and path.
        ("POST", "/token") => {
            let form = String::from_utf8_lossy(&req.body).into_owned();
            let field = |name: &str| {
                form.split('&').find_map(|kv| kv.strip_prefix(name).and_then(|v| v.strip_prefix('='))).map(decode_form)
            };
            let Some(resource) = field("resource") else {
                return StubReply::json(400, &serde_json::json!({"error": "invalid_request"}));
            };
            let origin_end = resource.find("://").and_then(|i| resource[i + 3..].find('/').map(|j| i + 3 + j));
            let audience = origin_end.map_or(resource.clone(), |e| resource[..e].to_string());
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
            let issuer = format!("http://{}", req.headers.iter().find(|(n, _)| n == "host").map_or("", |(_, v)| v));
            let mut claims = TokenClaims::new(&issuer, &audience, now);
            claims.resource = vec![resource];
            if let Some(scope) = field("scope") {
                claims.scope = scope;
            }
            let Some((kid, key)) = st.keys.last() else { return StubReply::Close };
            let token = sign_jws(key, kid, &claims.to_json());
            StubReply::json(
                200,
                &serde_json::json!({"access_token": token, "token_type": "License", "expires_in": 300}),
            )
        }
        _ => StubReply::json(404, &serde_json::json!({"error": "not_found"})),
    }
}

/// `application/x-www-form-urlencoded` value decoding (`+` and `%XX`).
fn decode_form(v: &str) -> String {
    let b = v.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => {
                match std::str::from_utf8(&b[i + 1..i + 3]).ok().and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(x) => {
                        out.push(x);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}
