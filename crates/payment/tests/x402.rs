//! x402 payments through the test facilitator (crawlgate-testkit's
//! `facilitator`) over real HTTP: the requirements a 402 carries, the
//! client's payment built from them, `/verify`, `/settle` and
//! `/supported`, and each way a payment fails.

// A test reports a failure by panicking, also from its helpers.
#![allow(clippy::panic)]

use std::time::Duration;

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use crawlgate_payment::x402::{
    check_accepted, parse_payment_signature, payment_required, requirements, Facilitator, Kind, Requirements, X402Error,
};
use crawlgate_policy::payment::dialects::X402Settings;
use crawlgate_testkit::facilitator::{self, Mode};

const NETWORK: &str = "eip155:84532";
const PAYER: &str = "0x857b06519E91e3A54538791bDbb0E22373e36b66";

fn config(f: &facilitator::Facilitator) -> X402Settings {
    X402Settings {
        facilitator: f.url(),
        pay_to: "0x209693Bc6afc0C5328bA36FaF03C514EF312287C".into(),
        network: NETWORK.into(),
        asset: "0x036CbD53842c5426634e7929541eC2318f3dCF7e".into(),
        decimals: 6,
        currency: "USD".into(),
        extra: Vec::new(),
        max_timeout: Duration::from_secs(60),
        timeout: Duration::from_millis(500),
        allow_http: true,
        allow_private_addresses: true,
    }
}

/// The first `accepts` entry of a `PAYMENT-REQUIRED` value, as a client reads it.
fn accepted_of(header: &str) -> serde_json::Value {
    let doc: serde_json::Value =
        serde_json::from_slice(&STANDARD.decode(header).unwrap_or_default()).unwrap_or_default();
    doc["accepts"][0].clone()
}

/// The 402's requirements and a client's payment for them.
fn pay(cfg: &X402Settings, nonce: &str) -> (Requirements, crawlgate_payment::x402::PaymentPayload) {
    let ours = requirements(cfg, "USD", "0.01").unwrap_or_else(|e| panic!("{e}"));
    let header = payment_required(&ours, "https://www.example.com/articles/1", "payment required");
    let signature = facilitator::payment_signature(&accepted_of(&header), PAYER, nonce);
    let payment = parse_payment_signature(signature.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
    check_accepted(&payment, &ours).unwrap_or_else(|e| panic!("{e}"));
    (ours, payment)
}

#[tokio::test]
async fn a_valid_payment_verifies_and_settles_once() {
    let f = facilitator::Facilitator::start(NETWORK);
    let cfg = config(&f);
    let client = Facilitator::new(&cfg).unwrap_or_else(|e| panic!("{e}"));
    let (ours, payment) = pay(&cfg, "0x01");
    let verified = client.verify(&payment, &ours).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(verified.payer.as_deref(), Some(PAYER));
    let settled = client.settle(&payment, &ours).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(settled.transaction, facilitator::transaction_of("0x01"));
    assert_eq!(settled.network, NETWORK);
    assert_eq!(settled.payer.as_deref(), Some(PAYER));
    assert_eq!(f.settled(), [facilitator::transaction_of("0x01")]);
    // The same authorization cannot be spent twice.
    assert_eq!(
        client.verify(&payment, &ours).await,
        Err(X402Error::Rejected("invalid_exact_evm_payload_authorization_nonce_used".into()))
    );
    assert_eq!((f.verify_calls(), f.settle_calls()), (2, 1));
}

#[tokio::test]
async fn an_invalid_payload_is_rejected_with_the_facilitators_reason() {
    let f = facilitator::Facilitator::start(NETWORK);
    let cfg = config(&f);
    let client = Facilitator::new(&cfg).unwrap_or_else(|e| panic!("{e}"));
    let (ours, payment) = pay(&cfg, "0x02");
    f.set_mode(Mode::InvalidPayload);
    let err = client.verify(&payment, &ours).await.err().unwrap_or_else(|| panic!("verified"));
    assert_eq!(err, X402Error::Rejected("invalid_exact_evm_payload_signature".into()));
    assert_eq!(err.code(), "x402_rejected");
    // In valid mode too, a payload whose signature does not match is refused.
    f.set_mode(Mode::Valid);
    let mut raw = payment.raw.clone();
    raw["payload"]["authorization"]["from"] = "0x0000000000000000000000000000000000000bad".into();
    let forged = parse_payment_signature(STANDARD.encode(raw.to_string()).as_bytes()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        client.verify(&forged, &ours).await,
        Err(X402Error::Rejected("invalid_exact_evm_payload_signature".into()))
    );
    assert!(f.settled().is_empty());
}

#[tokio::test]
async fn a_slow_facilitator_is_a_timeout_within_the_budget() {
    let f = facilitator::Facilitator::start(NETWORK);
    let cfg = config(&f);
    let client = Facilitator::new(&cfg).unwrap_or_else(|e| panic!("{e}"));
    let (ours, payment) = pay(&cfg, "0x03");
    f.set_mode(Mode::Slow(Duration::from_secs(3)));
    let started = std::time::Instant::now();
    let err = client.verify(&payment, &ours).await.err().unwrap_or_else(|| panic!("verified"));
    assert!(matches!(err, X402Error::Timeout(_)), "{err:?}");
    assert_eq!(err.code(), "x402_timeout");
    // Bounded by the budget (500 ms), not by the facilitator (3 s).
    assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());
}

#[tokio::test]
async fn a_settle_failure_is_reported_with_its_reason() {
    let f = facilitator::Facilitator::start(NETWORK);
    let cfg = config(&f);
    let client = Facilitator::new(&cfg).unwrap_or_else(|e| panic!("{e}"));
    let (ours, payment) = pay(&cfg, "0x04");
    f.set_mode(Mode::SettleFailure);
    assert!(client.verify(&payment, &ours).await.is_ok());
    let err = client.settle(&payment, &ours).await.err().unwrap_or_else(|| panic!("settled"));
    assert_eq!(err, X402Error::SettleFailed("insufficient_funds".into()));
    assert_eq!(err.code(), "x402_settle_failed");
    assert!(f.settled().is_empty());
}

/// A refusal status never grants, whatever its body says: a 400 saying
/// `isValid: true` / `success: true` is a refusal.
#[tokio::test]
async fn a_4xx_answer_that_claims_success_grants_nothing() {
    let f = facilitator::Facilitator::start(NETWORK);
    let cfg = config(&f);
    let client = Facilitator::new(&cfg).unwrap_or_else(|e| panic!("{e}"));
    let (ours, payment) = pay(&cfg, "0x06");
    f.set_mode(Mode::Contradictory);
    assert!(client.verify(&payment, &ours).await.is_err(), "a 400 verified the payment");
    assert!(client.settle(&payment, &ours).await.is_err(), "a 400 settled the payment");
}

#[tokio::test]
async fn a_facilitator_that_is_gone_is_a_facilitator_error() {
    let f = facilitator::Facilitator::start(NETWORK);
    let cfg = config(&f);
    drop(f);
    let client = Facilitator::new(&cfg).unwrap_or_else(|e| panic!("{e}"));
    let (ours, payment) = pay(&cfg, "0x05");
    let err = client.verify(&payment, &ours).await.err().unwrap_or_else(|| panic!("verified"));
    assert!(matches!(err, X402Error::Facilitator(_)), "{err:?}");
}

#[tokio::test]
async fn supported_lists_the_facilitators_kinds() {
    let f = facilitator::Facilitator::start(NETWORK);
    let client = Facilitator::new(&config(&f)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        client.supported().await,
        Ok(vec![Kind { x402_version: 2, scheme: "exact".into(), network: NETWORK.into() }])
    );
}

#[tokio::test]
async fn the_facilitator_is_never_reached_on_a_private_address_unless_allowed() {
    let f = facilitator::Facilitator::start(NETWORK);
    let mut cfg = config(&f);
    cfg.allow_private_addresses = false;
    let err = Facilitator::new(&cfg).err().unwrap_or_else(|| panic!("accepted"));
    assert!(err.ends_with("127.0.0.1 is not a public address"), "{err}");
}
