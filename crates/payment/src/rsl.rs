//! RSL 1.0 license tokens (the Crawler Authorization Protocol): a crawler
//! presents `Authorization: License <token>`, a short-lived JWS (RFC 7515
//! compact form, RFC 7519 claims) that the license server signed, and the
//! edge verifies it locally against the server's published JWKS (RFC 7517)
//! or keys pinned in the policy.
//!
//! A token is accepted when its signature verifies with one of the
//! server's keys (`EdDSA`, `ES256` or `RS256`, each only with its own key
//! type: `crawlgate_outbound::jwk`), its `iss` is the
//! configured license server, its `aud` names this site, `exp` / `nbf` /
//! `iat` hold within the allowed skew, one of its `resource` entries covers
//! the request path (a path pattern with RFC 9309 wildcards, or an absolute
//! URL on this site) and its `scope` (RFC 8693 section 4.2, space-separated)
//! grants the usage the site requires, or `all`. A failure is answered as
//! RSL 1.0 says: `401` with `WWW-Authenticate: License error="invalid_request"`
//! (no or malformed credentials) or `error="invalid_token"`.
//!
//! The JWKS is fetched through `crawlgate_outbound::fetch` (https, no redirects,
//! no private addresses unless allowed, at most [`MAX_JWKS_BYTES`] and
//! [`MAX_JWKS_KEYS`] keys), cached for its `max-age` (clamped), refetched
//! when it expires or a token names a key it lacks (at most once a minute),
//! and kept when a refresh fails.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use crawlgate_outbound::fetch::{Outbound, Reach};
use crawlgate_outbound::jwk::{Alg, PublicKey};
use crawlgate_outbound::key_set::{self, Overflow};
use crawlgate_policy::pattern::Pattern;
use crawlgate_policy::payment::dialects::RslSettings;

/// The largest token read (a compact JWS); larger is `invalid_token`.
pub const MAX_TOKEN_BYTES: usize = 8 * 1024;
/// The largest JWKS body read.
pub const MAX_JWKS_BYTES: usize = 64 * 1024;
/// The most keys taken from one JWKS (the rest are ignored, logged).
pub const MAX_JWKS_KEYS: usize = 32;
/// The most keys a token without `kid` is tried against in one key set
/// (pinned keys, the JWKS): each try is a signature verification, and a
/// forged kid-less RS256 token would otherwise cost one RSA verification
/// per key. Only keys of the token's `alg` count.
pub const KIDLESS_KEYS: usize = 2;
/// How long a failed JWKS fetch waits before the next try.
const RETRY_AFTER_FAILURE: Duration = Duration::from_secs(30);
/// A token naming a key the cached JWKS lacks refetches it (rotation), at
/// most this often.
const REFETCH_ON_MISS: Duration = Duration::from_secs(60);
/// The usage that grants every usage.
pub const ALL_USAGES: &str = "all";

/// Why a request is refused; the `WWW-Authenticate` answer follows from it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LicenseError {
    /// No `License` credentials, or credentials that do not parse as one
    /// token (`error="invalid_request"`).
    #[error("invalid_request: {0}")]
    InvalidRequest(String),
    /// A token that is not valid here (`error="invalid_token"`).
    #[error("invalid_token: {0}")]
    InvalidToken(String),
    /// No key could be had to check the token (the JWKS unreachable and
    /// nothing cached): not the client's fault, answered 503.
    #[error("license keys unavailable: {0}")]
    KeysUnavailable(String),
}

impl LicenseError {
    /// The `error` parameter (RFC 6750 section 3.1 codes, as RSL 1.0 uses them).
    pub fn code(&self) -> &'static str {
        match self {
            LicenseError::InvalidRequest(_) => "invalid_request",
            LicenseError::InvalidToken(_) | LicenseError::KeysUnavailable(_) => "invalid_token",
        }
    }

    /// The human-readable reason.
    pub fn description(&self) -> &str {
        match self {
            LicenseError::InvalidRequest(d) | LicenseError::InvalidToken(d) | LicenseError::KeysUnavailable(d) => d,
        }
    }

    /// The status to answer: 401, or 503 when the keys are unavailable.
    pub fn status(&self) -> u16 {
        match self {
            LicenseError::KeysUnavailable(_) => 503,
            _ => 401,
        }
    }

    /// The `WWW-Authenticate` value: `License error="..", error_description=".."`
    /// (the description made a valid quoted-string, RFC 9110 section 5.6.4).
    pub fn www_authenticate(&self) -> String {
        format!("License error=\"{}\", error_description=\"{}\"", self.code(), quoted(self.description()))
    }
}

/// `s` as the inside of a quoted-string: `"` and `\` escaped, anything
/// outside visible ASCII and space replaced by `?`.
fn quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            ' '..='~' => out.push(c),
            _ => out.push('?'),
        }
    }
    out
}

/// The token of a request's `Authorization` field lines: exactly one line,
/// scheme `License` (case-insensitive, RFC 9110 section 11.1), one token68.
pub fn license_token<'a>(authorization: &[&'a [u8]]) -> Result<&'a str, LicenseError> {
    let line = match authorization {
        [] => return Err(LicenseError::InvalidRequest("the request carries no License token".into())),
        [one] => *one,
        _ => return Err(LicenseError::InvalidRequest("the request carries more than one Authorization field".into())),
    };
    let line = std::str::from_utf8(line)
        .map_err(|_| LicenseError::InvalidRequest("the Authorization field is not ASCII".into()))?
        .trim_matches(|c| c == ' ' || c == '\t');
    let (scheme, rest) = line.split_once(' ').unwrap_or((line, ""));
    if !scheme.eq_ignore_ascii_case("License") {
        return Err(LicenseError::InvalidRequest("the Authorization scheme is not License".into()));
    }
    let token = rest.trim_start_matches(' ');
    if token.is_empty() {
        return Err(LicenseError::InvalidRequest("the License credentials are empty".into()));
    }
    let token68 = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'+' | b'/' | b'=');
    if !token.bytes().all(token68) {
        return Err(LicenseError::InvalidRequest("the License credentials are not one token".into()));
    }
    Ok(token)
}

/// Whether a request's `Authorization` field uses the `License` scheme
/// (the field the proxy removes before the origin).
pub fn is_license_authorization(value: &[u8]) -> bool {
    let scheme = value.split(|b| *b == b' ').find(|s| !s.is_empty()).unwrap_or(b"");
    scheme.eq_ignore_ascii_case(b"License")
}

/// A verified license token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct License {
    /// `sub`: who the license was issued to.
    pub subject: Option<String>,
    /// `jti`: the token's id (the ledger's settlement reference).
    pub token_id: Option<String>,
    /// The key that signed it (its `kid`, else its RFC 7638 thumbprint).
    pub key_id: String,
    /// `exp`, seconds since the epoch.
    pub expires_at: u64,
}

/// A compact JWS split and decoded, its signature not yet checked.
#[derive(Clone, Debug, PartialEq)]
struct Jws<'a> {
    kid: Option<String>,
    claims: serde_json::Map<String, serde_json::Value>,
    signing_input: &'a str,
    alg: Alg,
    signature: Vec<u8>,
}

/// `msg`, and for a token without `kid` that only some keys were tried.
fn no_key(msg: &str, kid: Option<&str>) -> String {
    match kid {
        Some(_) => msg.to_string(),
        None => format!("{msg} (it names no kid: only the first {KIDLESS_KEYS} keys of its alg are tried)"),
    }
}

fn invalid(msg: impl Into<String>) -> LicenseError {
    LicenseError::InvalidToken(msg.into())
}

fn decode_jws(token: &str) -> Result<Jws<'_>, LicenseError> {
    if token.len() > MAX_TOKEN_BYTES {
        return Err(invalid(format!("the token is longer than {MAX_TOKEN_BYTES} bytes")));
    }
    let mut parts = token.split('.');
    let (Some(h), Some(p), Some(s), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
        return Err(invalid("the token is not a JWS in compact form (three base64url parts)"));
    };
    let b64 = |part: &str, what: &str| {
        URL_SAFE_NO_PAD.decode(part).map_err(|_| invalid(format!("the token's {what} is not base64url")))
    };
    let header: serde_json::Value =
        serde_json::from_slice(&b64(h, "header")?).map_err(|_| invalid("the token's header is not JSON"))?;
    let alg = match header.get("alg").and_then(serde_json::Value::as_str) {
        Some(name) => Alg::from_name(name)
            .ok_or_else(|| invalid(format!("the token's alg {name:?} is not accepted (EdDSA, ES256, RS256)")))?,
        None => return Err(invalid("the token's header has no alg")),
    };
    if header.get("crit").is_some() {
        return Err(invalid("the token's header has crit extensions, none of which are understood"));
    }
    let kid = header.get("kid").and_then(serde_json::Value::as_str).map(str::to_owned);
    let claims = match serde_json::from_slice(&b64(p, "payload")?) {
        Ok(serde_json::Value::Object(m)) => m,
        _ => return Err(invalid("the token's payload is not a JSON object")),
    };
    let signature = b64(s, "signature")?;
    if signature.is_empty() {
        return Err(invalid("the token is not signed"));
    }
    Ok(Jws { kid, claims, signing_input: &token[..h.len() + 1 + p.len()], alg, signature })
}

/// The claim checks, given a token whose signature verified.
#[derive(Clone, Debug)]
struct ClaimRules<'a> {
    issuer: &'a str,
    audience: &'a [String],
    skew: u64,
    usage: &'a str,
}

fn str_or_list(v: &serde_json::Value) -> Option<Vec<&str>> {
    match v {
        serde_json::Value::String(s) => Some(vec![s.as_str()]),
        serde_json::Value::Array(a) => a.iter().map(serde_json::Value::as_str).collect(),
        _ => None,
    }
}

/// The origin (`scheme://host[:port]`) or bare host an audience entry or a
/// resource URL names, lower-cased, for comparison.
fn site_of(s: &str) -> String {
    s.trim_end_matches('/').to_ascii_lowercase()
}

/// Whether the token's `aud` value `theirs` names the site `mine`: the same
/// origin, or, when `mine` is a bare host, any origin on that host.
fn names_site(mine: &str, theirs: &str) -> bool {
    let (mine, theirs) = (site_of(mine), site_of(theirs));
    if mine == theirs {
        return true;
    }
    let on_host = |authority: &str| {
        authority == mine || authority.strip_prefix(mine.as_str()).is_some_and(|port| port.starts_with(':'))
    };
    !mine.contains("://") && theirs.split_once("://").is_some_and(|(_, authority)| on_host(authority))
}

/// Whether `resource` covers `path` (canonical path and query): a path
/// pattern, or an absolute URL on one of `audience`'s origins whose path
/// is the pattern.
fn covers(resource: &str, path: &str, audience: &[String]) -> bool {
    let pattern = if resource.starts_with('/') {
        resource
    } else {
        let Some(after_scheme) = resource.find("://").map(|i| i + 3) else { return false };
        let path_at = resource[after_scheme..].find('/').map_or(resource.len(), |i| after_scheme + i);
        let origin = site_of(&resource[..path_at]);
        let host = &origin[after_scheme.min(origin.len())..];
        if !audience.iter().any(|a| names_site(a, &origin) || site_of(a) == host) {
            return false;
        }
        if path_at == resource.len() {
            "/"
        } else {
            &resource[path_at..]
        }
    };
    Pattern::new(pattern).is_ok_and(|p| p.matches(path))
}

fn check_claims(
    claims: &serde_json::Map<String, serde_json::Value>,
    rules: &ClaimRules<'_>,
    path: &str,
    now: u64,
) -> Result<(), LicenseError> {
    let num = |name: &str| match claims.get(name) {
        None => Ok(None),
        Some(v) => v.as_u64().map(Some).ok_or_else(|| invalid(format!("the token's {name} is not a NumericDate"))),
    };
    match claims.get("iss").and_then(serde_json::Value::as_str) {
        Some(iss) if iss == rules.issuer => {}
        Some(_) => return Err(invalid("the token was issued by another license server")),
        None => return Err(invalid("the token has no iss")),
    }
    let exp = num("exp")?.ok_or_else(|| invalid("the token has no exp"))?;
    if now >= exp.saturating_add(rules.skew) {
        return Err(invalid("the token has expired"));
    }
    if num("nbf")?.is_some_and(|nbf| now.saturating_add(rules.skew) < nbf) {
        return Err(invalid("the token is not valid yet (nbf)"));
    }
    if num("iat")?.is_some_and(|iat| now.saturating_add(rules.skew) < iat) {
        return Err(invalid("the token was issued in the future (iat)"));
    }
    let aud = claims.get("aud").and_then(str_or_list).ok_or_else(|| invalid("the token has no aud"))?;
    if !aud.iter().any(|a| rules.audience.iter().any(|mine| names_site(mine, a))) {
        return Err(invalid("the token's audience is not this site"));
    }
    let resources =
        claims.get("resource").and_then(str_or_list).ok_or_else(|| invalid("the token names no resource"))?;
    if !resources.iter().any(|r| covers(r, path, rules.audience)) {
        return Err(invalid("the token's resource does not cover this path"));
    }
    let scope = claims.get("scope").and_then(serde_json::Value::as_str).unwrap_or("");
    if !scope.split(' ').any(|u| u == rules.usage || u == ALL_USAGES) {
        return Err(invalid(format!("the token's scope does not grant the usage {}", rules.usage)));
    }
    Ok(())
}

/// Verifies license tokens; cheap to clone, shared by every request.
#[derive(Clone, Debug)]
pub struct LicenseVerifier {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    settings: RslSettings,
    pinned: Vec<(String, PublicKey)>,
    outbound: Option<Outbound>,
    jwks: Mutex<Option<CachedJwks>>,
    fetching: tokio::sync::Mutex<()>,
    /// Fetches completed (changed under the `jwks` lock), so that requests
    /// waiting for one fetch do not each fetch again.
    attempts: std::sync::atomic::AtomicU64,
}

#[derive(Clone, Debug)]
struct CachedJwks {
    /// Keys by `kid`, else thumbprint; `None` until a fetch succeeds.
    keys: Option<Arc<Vec<(String, PublicKey)>>>,
    fetched: Instant,
    expires: Instant,
    /// No fetch before this (after a failure).
    next_try: Instant,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Reads the signing keys of a JWKS, named by `kid` (an Ed25519 key
/// without one by its thumbprint); keys that cannot be used are skipped.
fn parse_jwks(body: &[u8]) -> Result<Vec<(String, PublicKey)>, String> {
    let doc: serde_json::Value = serde_json::from_slice(body).map_err(|e| format!("the JWKS is not JSON: {e}"))?;
    let keys =
        key_set::members(doc.get("keys"), MAX_JWKS_KEYS, Overflow::Truncate).map_err(|e| format!("the JWKS {e}"))?;
    if keys.ignored > 0 {
        let all = MAX_JWKS_KEYS + keys.ignored;
        tracing::warn!(keys = all, max = MAX_JWKS_KEYS, "License server JWKS has more keys than are read");
    }
    Ok(keys
        .read
        .iter()
        .filter(|k| k.get("use").and_then(serde_json::Value::as_str).is_none_or(|u| u == "sig"))
        .filter_map(|k| crawlgate_outbound::jwk::parse(k).ok())
        .map(|(kid, key)| (kid.unwrap_or_default(), key))
        .collect())
}

impl LicenseVerifier {
    /// Builds the verifier from the policy's `[payment.rsl]`; fails on a
    /// pinned key that does not parse.
    pub fn new(settings: RslSettings) -> Result<LicenseVerifier, String> {
        let mut pinned = Vec::new();
        for (i, jwk) in settings.keys.iter().enumerate() {
            let v: serde_json::Value =
                serde_json::from_str(jwk).map_err(|e| format!("pinned key {}: the JWK is not JSON: {e}", i + 1))?;
            let (kid, key) = crawlgate_outbound::jwk::parse(&v).map_err(|e| format!("pinned key {}: {e}", i + 1))?;
            pinned.push((kid.unwrap_or_default(), key));
        }
        let outbound = match &settings.jwks {
            Some(url) => {
                let reach = Reach { allow_http: settings.allow_http, allow_private: settings.allow_private_addresses };
                let o = Outbound::new(reach, settings.fetch_timeout).map_err(|e| e.to_string())?;
                o.check_url(url).map_err(|e| e.to_string())?;
                Some(o)
            }
            None => None,
        };
        Ok(LicenseVerifier {
            inner: Arc::new(Inner {
                settings,
                pinned,
                outbound,
                jwks: Mutex::new(None),
                fetching: tokio::sync::Mutex::new(()),
                attempts: std::sync::atomic::AtomicU64::new(0),
            }),
        })
    }

    /// The number of keys the cached JWKS holds (0 before the first fetch).
    pub fn cached_keys(&self) -> usize {
        lock(&self.inner.jwks).as_ref().and_then(|j| j.keys.as_ref()).map_or(0, |k| k.len())
    }

    /// Verifies `token` for `path` (canonical path and query) at `now`
    /// (seconds since the epoch).
    pub async fn verify(&self, token: &str, path: &str, now: u64) -> Result<License, LicenseError> {
        let jws = decode_jws(token)?;
        let key_id = self.key_for(jws.kid.as_deref(), &jws).await?;
        let cfg = &self.inner.settings;
        let rules =
            ClaimRules { issuer: &cfg.issuer, audience: &cfg.audience, skew: cfg.skew.as_secs(), usage: &cfg.usage };
        check_claims(&jws.claims, &rules, path, now)?;
        let text = |name: &str| jws.claims.get(name).and_then(serde_json::Value::as_str).map(str::to_owned);
        Ok(License {
            subject: text("sub"),
            token_id: text("jti"),
            key_id,
            expires_at: jws.claims.get("exp").and_then(serde_json::Value::as_u64).unwrap_or(0),
        })
    }

    /// The key whose signature over the token verifies: pinned keys, then
    /// the JWKS (fetched when missing, expired, or lacking the `kid`).
    async fn key_for(&self, kid: Option<&str>, jws: &Jws<'_>) -> Result<String, LicenseError> {
        if let Some(found) = self.try_keys(&self.inner.pinned, kid, jws) {
            return Ok(found);
        }
        let Some(url) = self.inner.settings.jwks.as_deref() else {
            return Err(invalid(no_key("no pinned key of the license server verifies the token", kid)));
        };
        let (cached, generation) = self.snapshot();
        let now = Instant::now();
        // The cached keys' verdict, kept so that the same keys are not
        // tried twice when no refetch replaces them.
        let mut tried = None;
        if let Some(c) = &cached {
            if let Some(keys) = &c.keys {
                let found = self.try_keys(keys, kid, jws);
                if found.is_some() && (c.expires > now || c.next_try > now) {
                    return Ok(found.unwrap_or_default());
                }
                tried = Some((Arc::clone(keys), found));
            }
        }
        let stale = match &cached {
            None => true,
            Some(c) => c.next_try <= now && (c.expires <= now || now.duration_since(c.fetched) >= REFETCH_ON_MISS),
        };
        if stale {
            self.refresh_from(url, generation).await;
        }
        let keys = lock(&self.inner.jwks).as_ref().and_then(|c| c.keys.clone());
        match keys {
            Some(k) => {
                let found = match tried {
                    Some((old, found)) if Arc::ptr_eq(&old, &k) => found,
                    _ => self.try_keys(&k, kid, jws),
                };
                found.ok_or_else(|| invalid(no_key("no key of the license server verifies the token", kid)))
            }
            None => Err(LicenseError::KeysUnavailable("the license server's keys could not be fetched".into())),
        }
    }

    /// The first of `keys` (those named `kid` when the token names one,
    /// else the first [`KIDLESS_KEYS`] of its `alg`) that verifies the
    /// signature.
    fn try_keys(&self, keys: &[(String, PublicKey)], kid: Option<&str>, jws: &Jws<'_>) -> Option<String> {
        let limit = if kid.is_some() { usize::MAX } else { KIDLESS_KEYS };
        keys.iter()
            .filter(|(id, key)| kid.is_none_or(|k| k == id) && key.alg() == jws.alg)
            .take(limit)
            .find(|(_, key)| key.verifies(jws.alg, jws.signing_input.as_bytes(), &jws.signature))
            .map(|(id, _)| id.clone())
    }

    /// Fetches the JWKS now (coalesced with a fetch under way); a failure
    /// keeps the cached keys and waits before the next try.
    pub async fn refresh(&self) -> Result<usize, String> {
        let Some(url) = self.inner.settings.jwks.clone() else { return Ok(0) };
        let (_, generation) = self.snapshot();
        self.refresh_from(&url, generation).await;
        Ok(self.cached_keys())
    }

    /// The cached JWKS and the number of fetches completed, read together.
    fn snapshot(&self) -> (Option<CachedJwks>, u64) {
        let slot = lock(&self.inner.jwks);
        (slot.clone(), self.inner.attempts.load(std::sync::atomic::Ordering::SeqCst))
    }

    /// Fetches the JWKS unless a fetch completed since `generation` was
    /// read (the requests that waited for it use its result).
    async fn refresh_from(&self, url: &str, generation: u64) {
        use std::sync::atomic::Ordering;
        let _turn = self.inner.fetching.lock().await;
        if self.inner.attempts.load(Ordering::SeqCst) != generation {
            return;
        }
        let Some(outbound) = &self.inner.outbound else { return };
        let fetched = Instant::now();
        let result = async {
            let r = outbound
                .get(url, "application/jwk-set+json, application/json;q=0.9", MAX_JWKS_BYTES)
                .await
                .map_err(|e| e.to_string())?;
            if r.status != 200 {
                return Err(format!("{url}: status {}", r.status));
            }
            let keys = parse_jwks(&r.body).map_err(|e| format!("{url}: {e}"))?;
            Ok((keys, crawlgate_outbound::fetch::cache_ttl(r.header("cache-control"))))
        }
        .await;
        let mut slot = lock(&self.inner.jwks);
        self.inner.attempts.fetch_add(1, Ordering::SeqCst);
        match result {
            Ok((keys, ttl)) => {
                tracing::debug!(jwks = url, keys = keys.len(), ttl_s = ttl.as_secs(), "Fetched license server keys");
                *slot =
                    Some(CachedJwks { keys: Some(Arc::new(keys)), fetched, expires: fetched + ttl, next_try: fetched });
            }
            Err(reason) => {
                tracing::warn!(jwks = url, error = %reason, "License server keys fetch failed; keeping the cached keys");
                let next_try = fetched + RETRY_AFTER_FAILURE;
                match slot.as_mut() {
                    Some(c) => c.next_try = next_try,
                    None => *slot = Some(CachedJwks { keys: None, fetched, expires: fetched, next_try }),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authorization_fields_give_one_license_token() {
        assert_eq!(license_token(&[b"License abc.def.ghi"]), Ok("abc.def.ghi"));
        assert_eq!(license_token(&[b"license   abc.def.ghi "]), Ok("abc.def.ghi"));
        let req = |v: &[&[u8]]| match license_token(v) {
            Err(LicenseError::InvalidRequest(d)) => d,
            other => panic!("{other:?}"),
        };
        assert_eq!(req(&[]), "the request carries no License token");
        assert_eq!(req(&[b"Bearer x"]), "the Authorization scheme is not License");
        assert_eq!(req(&[b"License"]), "the License credentials are empty");
        assert_eq!(req(&[b"License a b"]), "the License credentials are not one token");
        assert_eq!(req(&[b"License a", b"License b"]), "the request carries more than one Authorization field");
        assert!(is_license_authorization(b"LICENSE x"));
        assert!(!is_license_authorization(b"Basic x"));
    }

    #[test]
    fn www_authenticate_follows_rsl() {
        let e = LicenseError::InvalidToken("the token has expired".into());
        assert_eq!(e.www_authenticate(), r#"License error="invalid_token", error_description="the token has expired""#);
        assert_eq!(e.status(), 401);
        let e = LicenseError::InvalidRequest("a \"quoted\" \\ thing\n\u{e9}".into());
        assert_eq!(
            e.www_authenticate(),
            r#"License error="invalid_request", error_description="a \"quoted\" \\ thing??""#
        );
        assert_eq!(LicenseError::KeysUnavailable("x".into()).status(), 503);
    }

    #[test]
    fn malformed_tokens_are_invalid_tokens() {
        let cases = [
            ("a.b", "not a JWS in compact form"),
            ("a.b.c.d", "not a JWS in compact form"),
            ("!!.e30.AA", "header is not base64url"),
            ("e30.e30.AA", "header has no alg"),
            // {"alg":"none"}
            ("eyJhbGciOiJub25lIn0.e30.", "alg \"none\" is not accepted"),
            // {"alg":"EdDSA"} . {} . no signature
            ("eyJhbGciOiJFZERTQSJ9.e30.", "the token is not signed"),
            // {"alg":"HS256"}
            ("eyJhbGciOiJIUzI1NiJ9.e30.AA", "alg \"HS256\" is not accepted"),
            // {"alg":"EdDSA"} . [] . short signature
            ("eyJhbGciOiJFZERTQSJ9.W10.AA", "payload is not a JSON object"),
            // {"alg":"EdDSA","crit":["x"]}
            ("eyJhbGciOiJFZERTQSIsImNyaXQiOlsieCJdfQ.e30.AA", "crit extensions"),
        ];
        for (token, want) in cases {
            match decode_jws(token) {
                Err(LicenseError::InvalidToken(d)) => assert!(d.contains(want), "{token}: {d}"),
                other => panic!("{token}: {other:?}"),
            }
        }
        let long = "a".repeat(MAX_TOKEN_BYTES + 1);
        assert!(matches!(decode_jws(&long), Err(LicenseError::InvalidToken(d)) if d.contains("longer than")));
    }

    proptest::proptest! {
        /// Any bytes as an `Authorization` field, and any text as a token:
        /// an error value or a token, never a panic.
        #[test]
        fn outside_input_never_panics(field in proptest::collection::vec(proptest::num::u8::ANY, 0..300), token in ".{0,300}") {
            let _ = license_token(&[&field]);
            let _ = is_license_authorization(&field);
            let _ = decode_jws(&token);
            let parts: Vec<String> = token.split('.').map(|p| URL_SAFE_NO_PAD.encode(p)).collect();
            let _ = decode_jws(&parts.join("."));
        }

        /// A header and payload of arbitrary JSON in a well-formed JWS.
        #[test]
        fn arbitrary_json_in_a_jws_never_panics(header in "\\{.{0,80}\\}", payload in ".{0,120}") {
            let token = format!("{}.{}.{}", URL_SAFE_NO_PAD.encode(header), URL_SAFE_NO_PAD.encode(payload), URL_SAFE_NO_PAD.encode([7u8; 64]));
            if let Ok(jws) = decode_jws(&token) {
                let audience = vec!["example.com".to_string()];
                let rules = ClaimRules { issuer: "i", audience: &audience, skew: 60, usage: "all" };
                let _ = check_claims(&jws.claims, &rules, "/", 1000);
            }
        }
    }

    fn claims(v: serde_json::Value) -> serde_json::Map<String, serde_json::Value> {
        match v {
            serde_json::Value::Object(m) => m,
            _ => panic!("not an object"),
        }
    }

    #[test]
    fn claims_are_checked_in_a_table() {
        let audience = vec!["https://www.example.com".to_string(), "example.org".to_string()];
        let rules = ClaimRules { issuer: "https://license.example", audience: &audience, skew: 60, usage: "ai-use" };
        let base = serde_json::json!({
            "iss": "https://license.example", "aud": "https://www.example.com", "exp": 2000, "nbf": 1000,
            "iat": 1000, "resource": ["/articles/*"], "scope": "search ai-use", "sub": "crawler-1"
        });
        let with = |k: &str, v: serde_json::Value| {
            let mut c = claims(base.clone());
            c.insert(k.into(), v);
            c
        };
        let without = |k: &str| {
            let mut c = claims(base.clone());
            c.remove(k);
            c
        };
        let ok =
            |c: &serde_json::Map<String, serde_json::Value>, path: &str, now: u64| check_claims(c, &rules, path, now);
        let fails = |c: &serde_json::Map<String, serde_json::Value>, path: &str, now: u64| match ok(c, path, now) {
            Err(LicenseError::InvalidToken(d)) => d,
            other => panic!("{c:?} {path} {now}: {other:?}"),
        };
        let c = claims(base.clone());
        assert_eq!(ok(&c, "/articles/a?x=1", 1500), Ok(()));
        assert_eq!(ok(&c, "/articles/a", 2059), Ok(()), "within the skew after exp");
        assert_eq!(ok(&c, "/articles/a", 941), Ok(()), "within the skew before nbf");
        assert_eq!(fails(&c, "/articles/a", 2060), "the token has expired");
        assert_eq!(fails(&c, "/articles/a", 939), "the token is not valid yet (nbf)");
        assert_eq!(fails(&c, "/other", 1500), "the token's resource does not cover this path");
        assert_eq!(
            fails(&with("iss", "https://evil.example".into()), "/articles/a", 1500),
            "the token was issued by another license server"
        );
        assert_eq!(fails(&without("iss"), "/articles/a", 1500), "the token has no iss");
        assert_eq!(fails(&without("exp"), "/articles/a", 1500), "the token has no exp");
        assert_eq!(fails(&with("exp", "2000".into()), "/articles/a", 1500), "the token's exp is not a NumericDate");
        assert_eq!(fails(&with("iat", 5000.into()), "/articles/a", 1500), "the token was issued in the future (iat)");
        assert_eq!(
            fails(&with("aud", "https://other.example".into()), "/articles/a", 1500),
            "the token's audience is not this site"
        );
        assert_eq!(fails(&without("aud"), "/articles/a", 1500), "the token has no aud");
        assert_eq!(ok(&with("aud", serde_json::json!(["x", "EXAMPLE.org"])), "/articles/a", 1500), Ok(()));
        assert_eq!(ok(&with("aud", "https://www.example.com/".into()), "/articles/a", 1500), Ok(()));
        assert_eq!(
            ok(&with("aud", "https://example.org:8443".into()), "/articles/a", 1500),
            Ok(()),
            "a bare host names every origin on it"
        );
        assert_eq!(
            fails(&with("aud", "http://www.example.com".into()), "/articles/a", 1500),
            "the token's audience is not this site",
            "an origin names its scheme"
        );
        assert_eq!(fails(&without("resource"), "/articles/a", 1500), "the token names no resource");
        assert_eq!(
            fails(&with("scope", "search".into()), "/articles/a", 1500),
            "the token's scope does not grant the usage ai-use"
        );
        assert_eq!(fails(&without("scope"), "/articles/a", 1500), "the token's scope does not grant the usage ai-use");
        assert_eq!(ok(&with("scope", "all".into()), "/articles/a", 1500), Ok(()));
        // Absolute URLs: only on this site's origins.
        assert_eq!(ok(&with("resource", "https://www.example.com/articles/".into()), "/articles/a", 1500), Ok(()));
        assert_eq!(ok(&with("resource", "https://www.example.com".into()), "/anything", 1500), Ok(()));
        assert_eq!(ok(&with("resource", "https://example.org/articles/$".into()), "/articles/", 1500), Ok(()));
        assert_eq!(
            fails(&with("resource", "https://example.org/articles/$".into()), "/articles/a", 1500),
            "the token's resource does not cover this path"
        );
        assert_eq!(
            fails(&with("resource", "https://evil.example/".into()), "/articles/a", 1500),
            "the token's resource does not cover this path"
        );
        assert_eq!(
            fails(&with("resource", "articles".into()), "/articles/a", 1500),
            "the token's resource does not cover this path"
        );
    }
}
