//! x402 end to end: the real binary in a charge group that speaks the
//! "x402" dialect, the test facilitator of `crawlgate_testkit::facilitator`,
//! a real origin, and the ledger read back.

use std::time::Duration;

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use crawlgate_e2e::origin::{Origin, Route};
use crawlgate_e2e::proxy::Proxy;
use crawlgate_payment::ledger::{Reader, Record};
use crawlgate_testkit::facilitator::{self, Facilitator, Mode};
use crawlgate_testkit::temp::TempDir;

const UA: &str = "ExampleBot/1.0";
const NETWORK: &str = "eip155:84532";
const PAY_TO: &str = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C";
const ASSET: &str = "0x036CbD53842c5426634e7929541eC2318f3dCF7e";
const PAYER: &str = "0x857b06519E91e3A54538791bDbb0E22373e36b66";

fn rules(f: &Facilitator, ledger: &std::path::Path) -> String {
    format!(
        "[[group]]\nuser_agents = [\"*\"]\ndisallow = []\n\n\
         [[group]]\nuser_agents = [\"ExampleBot\"]\ndisallow = []\nenforce = \"charge\"\nprice = \"USD 0.01\"\n\n\
         [payment]\nledger = \"{}\"\ndialects = [\"x402\"]\ninstance_id = \"edge-1\"\n\n\
         [payment.x402]\nfacilitator = \"{}\"\npay_to = \"{PAY_TO}\"\nnetwork = \"{NETWORK}\"\nasset = \"{ASSET}\"\ndecimals = 6\ntimeout = \"500ms\"\nallow_http = true\nallow_private_addresses = true\n\n\
         [payment.x402.extra]\nname = \"USDC\"\nversion = \"2\"\n",
        ledger.display(),
        f.url()
    )
}

struct Setup {
    facilitator: Facilitator,
    origin: Origin,
    proxy: Proxy,
    dir: TempDir,
}

fn setup() -> Setup {
    let facilitator = Facilitator::start(NETWORK);
    let origin = Origin::start(vec![("/articles/1", Route::ok("text/plain", "article one\n"))]);
    let dir = TempDir::new("payment-x402");
    let proxy = Proxy::start(origin.addr, &rules(&facilitator, &dir.join("ledger.sqlite")));
    Setup { facilitator, origin, proxy, dir }
}

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

fn decoded(h: &reqwest::header::HeaderMap, name: &str) -> serde_json::Value {
    let v = h.get(name).unwrap_or_else(|| panic!("no {name}")).to_str().unwrap();
    serde_json::from_slice(&STANDARD.decode(v).unwrap_or_default()).unwrap_or_default()
}

fn ledger(s: &Setup) -> Vec<Record> {
    Reader::open(&s.dir.join("ledger.sqlite")).and_then(|r| r.export(0)).unwrap_or_else(|e| panic!("ledger: {e}"))
}

/// The 402's requirements and a payment for them.
fn pay(s: &Setup, nonce: &str) -> String {
    let (status, h, _) = get(s, "/articles/1", &[]);
    assert_eq!(status, 402);
    let accepted = decoded(&h, "payment-required")["accepts"][0].clone();
    facilitator::payment_signature(&accepted, PAYER, nonce)
}

/// With `[server] hosts`, the requirement's resource URL names the site:
/// the request's host when it is one of them, never a `Host` the client
/// made up.
#[test]
fn the_resource_url_names_the_site_whatever_host_the_client_sends() {
    let facilitator = Facilitator::start(NETWORK);
    let origin = Origin::start(vec![("/articles/1", Route::ok("text/plain", "article one\n"))]);
    let dir = TempDir::new("payment-x402-hosts");
    let port =
        || -> std::net::SocketAddr { format!("127.0.0.1:{}", crawlgate_e2e::proxy::free_port()).parse().unwrap() };
    let (addr, admin) = (port(), port());
    let policy = crawlgate_e2e::proxy::base_policy(addr, admin, origin.addr)
        .replace("[server]\n", "[server]\nhosts = [\"www.example.com\", \"news.example.com\"]\n")
        + &rules(&facilitator, &dir.join("ledger.sqlite"));
    let proxy = Proxy::start_with(addr, admin, &policy);
    let client = reqwest::blocking::Client::new();
    let url_for = |host: &str| {
        let resp = client.get(proxy.url("/articles/1")).header("User-Agent", UA).header("Host", host).send().unwrap();
        assert_eq!(resp.status(), 402, "Host {host}");
        decoded(resp.headers(), "payment-required")["resource"]["url"].as_str().unwrap_or_default().to_string()
    };
    assert_eq!(url_for("news.example.com"), "https://news.example.com/articles/1");
    assert_eq!(url_for("evil.example"), "https://www.example.com/articles/1");
    assert!(origin.seen().is_empty());
}

#[test]
fn first_contact_is_a_402_with_payment_required() {
    let s = setup();
    let (status, h, body) = get(&s, "/articles/1", &[]);
    assert_eq!(status, 402, "{body}");
    let host = s.proxy.url("").trim_start_matches("http://").to_string();
    assert_eq!(
        decoded(&h, "payment-required"),
        serde_json::json!({
            "x402Version": 2,
            "error": "PAYMENT-SIGNATURE header is required",
            "resource": {"url": format!("https://{host}/articles/1"), "description": "", "mimeType": ""},
            "accepts": [{"scheme": "exact", "network": NETWORK, "amount": "10000", "asset": ASSET, "payTo": PAY_TO,
                         "maxTimeoutSeconds": 60, "extra": {"name": "USDC", "version": "2"}}],
            "extensions": {}
        })
    );
    assert!(s.origin.seen().is_empty());
}

#[test]
fn a_payment_is_verified_forwarded_settled_and_recorded() {
    let s = setup();
    let signature = pay(&s, "0xa1");
    let (status, h, body) = get(&s, "/articles/1", &[("PAYMENT-SIGNATURE", &signature)]);
    assert_eq!((status, body.as_str()), (200, "article one\n"));
    let tx = facilitator::transaction_of("0xa1");
    assert_eq!(
        decoded(&h, "payment-response"),
        serde_json::json!({"success": true, "transaction": tx, "network": NETWORK, "payer": PAYER})
    );
    let seen = s.origin.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].header("payment-signature"), None, "the payment reached the origin");
    assert_eq!((s.facilitator.verify_calls(), s.facilitator.settle_calls()), (1, 1));
    let rows = ledger(&s);
    assert_eq!(rows.len(), 1, "{rows:?}");
    let r = &rows[0];
    assert_eq!((r.dialect.as_str(), r.settlement.as_deref(), r.subject.as_str()), ("x402", Some(tx.as_str()), PAYER));
    assert_eq!((r.amount_minor, r.currency.as_str(), r.status, r.agent.as_str()), (1, "USD", 200, "ExampleBot"));
    // The same payment again: the facilitator refuses the spent nonce.
    let (status, h, _) = get(&s, "/articles/1", &[("PAYMENT-SIGNATURE", &signature)]);
    assert_eq!(status, 402);
    assert_eq!(
        decoded(&h, "payment-required")["error"],
        "the facilitator rejected the payment: invalid_exact_evm_payload_authorization_nonce_used"
    );
    assert_eq!(s.origin.seen().len(), 1);
}

#[test]
fn an_invalid_payload_is_a_402_with_the_reason_and_no_page() {
    let s = setup();
    let signature = pay(&s, "0xb1");
    s.facilitator.set_mode(Mode::InvalidPayload);
    let (status, h, body) = get(&s, "/articles/1", &[("PAYMENT-SIGNATURE", &signature)]);
    assert_eq!(status, 402, "{body}");
    assert_eq!(
        decoded(&h, "payment-required")["error"],
        "the facilitator rejected the payment: invalid_exact_evm_payload_signature"
    );
    // A payment for another amount never reaches the facilitator.
    s.facilitator.set_mode(Mode::Valid);
    let mut doc: serde_json::Value = serde_json::from_slice(&STANDARD.decode(&signature).unwrap()).unwrap();
    doc["accepted"]["amount"] = "1".into();
    let cheap = STANDARD.encode(doc.to_string());
    let (status, h, _) = get(&s, "/articles/1", &[("PAYMENT-SIGNATURE", &cheap)]);
    assert_eq!(status, 402);
    assert_eq!(
        decoded(&h, "payment-required")["error"],
        "the payment does not match the requirements: amount is \"1\", this resource asks for \"10000\""
    );
    assert_eq!(s.facilitator.verify_calls(), 1);
    assert!(s.origin.seen().is_empty());
    assert!(s.proxy.metrics().contains("crawlgate_payment_errors_total{code=\"x402_rejected\"} 1"));
    assert!(s.proxy.metrics().contains("crawlgate_payment_errors_total{code=\"x402_mismatch\"} 1"));
}

#[test]
fn a_facilitator_timeout_is_a_402_never_a_free_page() {
    let s = setup();
    let signature = pay(&s, "0xc1");
    s.facilitator.set_mode(Mode::Slow(Duration::from_secs(3)));
    let (status, h, body) = get(&s, "/articles/1", &[("PAYMENT-SIGNATURE", &signature)]);
    assert_eq!(status, 402, "{body}");
    let error = decoded(&h, "payment-required")["error"].as_str().unwrap_or("").to_string();
    assert!(error.starts_with("the facilitator did not answer in time:"), "{error}");
    assert!(s.origin.seen().is_empty());
    assert!(ledger(&s).is_empty());
}

#[test]
fn a_settle_failure_after_the_origin_answered_is_a_402_without_the_page() {
    let s = setup();
    let signature = pay(&s, "0xd1");
    s.facilitator.set_mode(Mode::SettleFailure);
    let (status, h, body) = get(&s, "/articles/1", &[("PAYMENT-SIGNATURE", &signature)]);
    assert_eq!(status, 402);
    assert!(!body.contains("article one"), "the page was delivered unpaid: {body}");
    assert_eq!(
        decoded(&h, "payment-response"),
        serde_json::json!({"success": false, "errorReason": "insufficient_funds", "transaction": "", "network": NETWORK})
    );
    assert_eq!(decoded(&h, "payment-required")["error"], "settlement failed: insufficient_funds");
    // The origin was asked (the page existed), nothing was recorded.
    assert_eq!(s.origin.seen().len(), 1);
    assert!(ledger(&s).is_empty());
    assert!(s.proxy.metrics().contains("crawlgate_payment_errors_total{code=\"x402_settle_failed\"} 1"));
}
