//! RSL license tokens end to end: the real binary in a charge group that
//! speaks the "license" dialect, the test license server of
//! `crawlgate_testkit::license_server` issuing tokens and serving its
//! JWKS, a real origin, and the ledger read back.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crawlgate_e2e::origin::{Origin, Route};
use crawlgate_e2e::proxy::Proxy;
use crawlgate_payment::ledger::{Reader, Record};
use crawlgate_testkit::license_server::{LicenseServer, TokenClaims};
use crawlgate_testkit::temp::TempDir;

const SITE: &str = "https://www.example.com";
const UA: &str = "ExampleBot/1.0";

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

fn origin() -> Origin {
    Origin::start(vec![
        ("/articles/1", Route::ok("text/plain", "article one\n")),
        ("/private/1", Route::ok("text/plain", "private one\n")),
    ])
}

/// A charge group for ExampleBot (USD 0.01) speaking only the license
/// dialect, keys from `server`'s JWKS.
fn rules(server: &LicenseServer, ledger: &std::path::Path) -> String {
    format!(
        "[robots_txt]\nlicense = \"{SITE}/license.xml\"\n\n\
         [[group]]\nuser_agents = [\"*\"]\ndisallow = []\n\n\
         [[group]]\nuser_agents = [\"ExampleBot\"]\ndisallow = []\nenforce = \"charge\"\nprice = \"USD 0.01\"\n\n\
         [payment]\nledger = \"{}\"\ndialects = [\"license\"]\ninstance_id = \"edge-1\"\n\n\
         [payment.rsl]\nissuer = \"{}\"\njwks = \"{}\"\naudience = [\"{SITE}\"]\nusage = \"ai-use\"\nallow_http = true\nallow_private_addresses = true\n",
        ledger.display(),
        server.issuer(),
        server.jwks_url()
    )
}

struct Setup {
    server: LicenseServer,
    origin: Origin,
    proxy: Proxy,
    dir: TempDir,
}

fn setup() -> Setup {
    let server = LicenseServer::start();
    let origin = origin();
    let dir = TempDir::new("payment-rsl");
    let proxy = Proxy::start(origin.addr, &rules(&server, &dir.join("ledger.sqlite")));
    Setup { server, origin, proxy, dir }
}

fn claims(s: &Setup) -> TokenClaims {
    let mut c = TokenClaims::new(&s.server.issuer(), SITE, now());
    c.resource = vec!["/articles/".into()];
    c.scope = "ai-use".into();
    c
}

/// `(status, headers, body)` of a GET with these extra headers.
fn get(s: &Setup, path: &str, headers: &[(&str, &str)]) -> (u16, reqwest::header::HeaderMap, String) {
    let client = reqwest::blocking::Client::builder().timeout(Duration::from_secs(20)).build().unwrap();
    let mut req = client.get(s.proxy.url(path)).header("User-Agent", UA);
    for (n, v) in headers {
        req = req.header(*n, *v);
    }
    let resp = req.send().unwrap_or_else(|e| panic!("GET {path}: {e}"));
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    (status, headers, resp.text().unwrap_or_default())
}

fn header<'h>(h: &'h reqwest::header::HeaderMap, name: &str) -> Vec<&'h str> {
    h.get_all(name).iter().map(|v| v.to_str().unwrap_or("?")).collect()
}

fn ledger(s: &Setup) -> Vec<Record> {
    Reader::open(&s.dir.join("ledger.sqlite")).and_then(|r| r.export(0)).unwrap_or_else(|e| panic!("ledger: {e}"))
}

#[test]
fn no_token_is_a_401_invalid_request_and_the_origin_is_not_asked() {
    let s = setup();
    let (status, h, body) = get(&s, "/articles/1", &[]);
    assert_eq!(status, 401, "{body}");
    assert_eq!(
        header(&h, "www-authenticate"),
        [r#"License error="invalid_request", error_description="the request carries no License token""#]
    );
    assert!(body.starts_with("401 Unauthorized: the request carries no License token;"), "{body}");
    let (status, h, _) = get(&s, "/articles/1", &[("Authorization", "Bearer abc")]);
    assert_eq!(status, 401);
    assert_eq!(
        header(&h, "www-authenticate"),
        [r#"License error="invalid_request", error_description="the request carries no License token""#]
    );
    assert!(s.origin.seen().is_empty());
    assert!(s.proxy.metrics().contains("crawlgate_payment_errors_total{code=\"license_invalid_request\"} 2"));
}

#[test]
fn a_valid_token_is_forwarded_without_it_and_recorded() {
    let s = setup();
    let token = s.server.issue(&claims(&s));
    let auth = format!("License {token}");
    let (status, h, body) = get(&s, "/articles/1", &[("Authorization", &auth)]);
    assert_eq!((status, body.as_str()), (200, "article one\n"));
    assert_eq!(header(&h, "link"), [format!("<{SITE}/license.xml>; rel=\"license\"; type=\"application/rsl+xml\"")]);
    let seen = s.origin.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].header("authorization"), None, "the License credentials reached the origin");
    let rows = ledger(&s);
    assert_eq!(rows.len(), 1, "{rows:?}");
    let r = &rows[0];
    assert_eq!(
        (r.agent.as_str(), r.subject.as_str(), r.path.as_str(), r.amount_minor, r.currency.as_str()),
        ("ExampleBot", "test-crawler", "/articles/1", 1, "USD")
    );
    assert_eq!((r.dialect.as_str(), r.settlement.as_deref(), r.status), ("license", Some("license-token-1"), 200));
    assert_eq!(r.instance, "edge-1");
    assert!(s.proxy.metrics().contains("crawlgate_charges_total{agent=\"ExampleBot\",dialect=\"license\"} 1"));
}

#[test]
fn bad_tokens_are_401_invalid_token_with_the_reason() {
    let s = setup();
    let mut expired = claims(&s);
    expired.issued_at = now() - 900;
    expired.not_before = now() - 900;
    expired.expires_at = now() - 300;
    let mut other_site = claims(&s);
    other_site.audience = "https://other.example".into();
    let cases = [
        (s.server.issue(&expired), "/articles/1", "the token has expired"),
        (s.server.issue(&other_site), "/articles/1", "the token's audience is not this site"),
        (s.server.issue(&claims(&s)), "/private/1", "the token's resource does not cover this path"),
        (s.server.forge(&claims(&s)), "/articles/1", "no key of the license server verifies the token"),
    ];
    for (token, path, why) in cases {
        let (status, h, _) = get(&s, path, &[("Authorization", &format!("License {token}"))]);
        assert_eq!(status, 401, "{why}");
        assert_eq!(
            header(&h, "www-authenticate"),
            [format!("License error=\"invalid_token\", error_description=\"{why}\"")]
        );
    }
    assert!(s.origin.seen().is_empty());
    assert!(ledger(&s).is_empty());
}

#[test]
fn a_cached_key_keeps_verifying_when_the_license_server_is_gone() {
    let s = setup();
    let token = s.server.issue(&claims(&s));
    let auth = format!("License {token}");
    assert_eq!(get(&s, "/articles/1", &[("Authorization", &auth)]).0, 200);
    s.server.set_available(false);
    assert_eq!(get(&s, "/articles/1", &[("Authorization", &auth)]).0, 200);
    assert_eq!(s.server.jwks_hits(), 1);
}

#[test]
fn free_paths_and_failed_responses_are_not_charged() {
    let s = setup();
    // robots.txt is free: no token needed.
    assert_eq!(get(&s, "/robots.txt", &[]).0, 200);
    // A 404 from the origin is forwarded but not charged.
    let mut c = claims(&s);
    c.resource = vec!["/".into()];
    let auth = format!("License {}", s.server.issue(&c));
    assert_eq!(get(&s, "/missing", &[("Authorization", &auth)]).0, 404);
    assert!(ledger(&s).is_empty());
}
